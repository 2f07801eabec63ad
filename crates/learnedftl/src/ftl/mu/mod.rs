//! μ-FTL (Lee et al., "μ-FTL: A Memory-Efficient Flash Translation Layer Supporting Multiple
//! Mapping Granularities", EMSOFT'08; SPEC §5.8, the lecture deck): extent mapping in a μ-tree
//! stored in flash.
//!
//! * **Extents.** A mapping entry covers a run of LPNs written to consecutive VPPNs, however
//!   long: a large sequential write is one entry, a 4 KiB random write one entry of one page.
//!   Writing a page inside an extent splits it (up to three pieces); a page continuing an
//!   extent (next LPN at the next VPPN) extends it. Extents live in a B+-tree ([`tree`]).
//! * **μ-tree on flash.** Tree nodes are stored in translation pages. As in the μ-tree, a
//!   leaf takes half a page and an inner node a quarter, and writing a node writes one page
//!   holding it *and its ancestors* (the whole path from a leaf to a height-3 root fits one
//!   page; higher ancestors take further pages, four to a page). Pages are found through a
//!   directory (4 B each, in DRAM, like DFTL's GTD) so that GC moves a tree page without
//!   rewriting its parent; a page stays valid while it holds the current version of a node.
//! * **Node cache** (DRAM, LRU, bounded in bytes). A lookup walks from the root; every node on
//!   the path that is not cached costs the read of its page (one read per page, however many
//!   path nodes it holds), each read waiting for the one above it. Updates make the leaf (and
//!   the nodes a split creates or changes) dirty; evicting a dirty node writes its path.
//! * **Per-block invalid counters** (DRAM, 2 B per block) drive greedy GC; the shared line GC
//!   picks the line whose blocks hold the most invalid pages (SPEC §3.5's fairness rule).
//! * **Bitmap cache.** The valid-page bitmaps are stored in flash (in dedicated translation
//!   pages, lines in order, so one page covers whole lines); the cache holds whole bitmap pages
//!   (LRU). Every program and invalidation touches its block's bitmap: a miss reads the page,
//!   evicting a dirty one programs it.
//! * **Logical-space partitioning.** The logical space is cut into `partitions` equal parts,
//!   each with its own update (write) pointer, so hot and cold regions do not share lines; GC
//!   copies go to a pointer of their own.
//!
//! The mapping budget is taken as every cached-mapping FTL takes it ([`Budget`]): the invalid
//! counters and the bitmap cache are its fixed part, the node cache its cache, and the tree-page
//! directory counts inside the node cache's share. See `docs/ftls/mu-ftl.md` for every choice.

pub mod tree;

super::registered!(MuFtl, "mu-ftl");

#[cfg(test)]
mod tests;

use super::{DramUsage, Ftl, ReadSink, Served};
use crate::addr::{Lpn, Ppa, SimTime, Tpn, Vppn};
use crate::config::{DeviceConfig, Geometry};
use crate::device::{Cause, Device, Oob, Src};
use crate::error::{ConfigError, FtlError, RecoverError};
use crate::mapping::lru::{Links, List};
use crate::mapping::{
    check_page_map, gc, persist_trim, recovery, Allocator, Budget, FtlStats, GcHooks, GcOrder,
    GcPolicy, Stream,
};
use crate::params::Params;
use crate::request::{Op, Request, Upcoming};
use serde::Serialize;
use tree::{Change, Ext, Tree, NIL};

const NONE: u32 = u32::MAX;
/// Bytes of a leaf record: key, length, VPPN.
const EXTENT_BYTES: u32 = 12;
/// Bytes of an inner record: key, child.
const INNER_BYTES: u32 = 8;
/// DRAM per block of the invalid-page counters.
const COUNTER_BYTES: u64 = 2;
/// DRAM per tree-page directory entry.
const DIR_BYTES: u64 = 4;
/// Default logical partition size (the deck's standard configuration).
const PARTITION_BYTES: u64 = 256 << 20;
/// Stream of the first partition's update pointer (data GC copies use [`Stream::DATA`]).
const FIRST_PARTITION: u16 = 2;

/// Counters of μ-FTL's translation (SPEC §6 adds flash operations by cause).
#[derive(Clone, Debug, Default, Serialize)]
struct MuStats {
    /// Tree lookups of host reads and writes.
    lookups: u64,
    /// Node page reads those lookups needed.
    node_reads: u64,
    /// Lookups that found every node cached.
    lookup_hits: u64,
    /// Tree pages programmed (a path write may take more than one).
    node_page_writes: u64,
    /// Dirty nodes written (evicted, or written back while idle).
    node_write_backs: u64,
    /// Node page reads to complete a path being written (ancestors not cached).
    path_reads: u64,
    /// Bitmap page reads (cache misses) and programs (dirty evictions).
    bitmap_reads: u64,
    bitmap_writes: u64,
    /// Extents split by an overwrite or trim of a page inside them.
    extent_splits: u64,
    /// Node reads GC's mapping updates needed.
    gc_node_reads: u64,
}

/// A bounded LRU of ids with byte sizes and dirty flags (node cache, bitmap cache): an
/// intrusive list over the ids, so nothing allocates unless the ids grow.
#[derive(Clone, Debug, Default)]
struct Lru {
    links: Links,
    list: List,
    /// Per id: cached, dirty, bytes charged.
    cached: Vec<bool>,
    dirty: Vec<bool>,
    size: Vec<u64>,
    bytes: u64,
    capacity: u64,
    dirty_count: u32,
}

impl Lru {
    fn with_capacity(capacity: u64) -> Lru {
        Lru {
            capacity,
            ..Lru::default()
        }
    }
    #[inline]
    fn cached(&self, id: u32) -> bool {
        self.cached.get(id as usize).copied().unwrap_or(false)
    }
    /// Caches `id` (of `bytes`) at the most recent end, or moves it there.
    fn touch(&mut self, id: u32, bytes: u64) {
        let i = id as usize;
        if self.cached.len() <= i {
            self.links.grow(i + 1);
            self.cached.resize(i + 1, false);
            self.dirty.resize(i + 1, false);
            self.size.resize(i + 1, 0);
        }
        if self.cached[i] {
            self.list.touch(&mut self.links, id);
        } else {
            self.cached[i] = true;
            self.size[i] = bytes;
            self.bytes += bytes;
            self.list.push_front(&mut self.links, id);
        }
    }
    fn set_dirty(&mut self, id: u32, dirty: bool) {
        let d = &mut self.dirty[id as usize];
        if *d != dirty {
            *d = dirty;
            if dirty {
                self.dirty_count += 1;
            } else {
                self.dirty_count -= 1;
            }
        }
    }
    fn drop_id(&mut self, id: u32) {
        if !self.cached(id) {
            return;
        }
        self.set_dirty(id, false);
        self.list.remove(&mut self.links, id);
        self.cached[id as usize] = false;
        self.bytes -= self.size[id as usize];
    }
    /// The least recently used id.
    fn lru(&self) -> Option<u32> {
        let t = self.list.tail();
        (t != NIL).then_some(t)
    }
    /// The least recently used id for which `pred` holds.
    fn lru_where(&self, pred: impl FnMut(u32) -> bool) -> Option<u32> {
        self.list.rfind(&self.links, pred)
    }
}

/// Tree pages: where each lives and how many current node versions it holds.
#[derive(Clone, Debug, Default)]
struct Pages {
    ppa: Vec<u32>,
    refs: Vec<u32>,
    free: Vec<u32>,
}

impl Pages {
    fn take(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.ppa.push(NONE);
                self.refs.push(0);
                (self.ppa.len() - 1) as u32
            }
        }
    }
    fn release(&mut self, dev: &mut Device, slot: u32) -> Result<(), FtlError> {
        let r = &mut self.refs[slot as usize];
        *r -= 1;
        if *r == 0 {
            let p = std::mem::replace(&mut self.ppa[slot as usize], NONE);
            dev.invalidate(Ppa(p))?;
            self.free.push(slot);
        }
        Ok(())
    }
    fn in_use(&self) -> u64 {
        (self.ppa.len() - self.free.len()) as u64
    }
}

/// What GC's hooks update: the tree, its caches and pages.
#[derive(Clone)]
struct Core {
    geo: Geometry,
    tree: Tree,
    /// Per node: the tree page (slot) holding its current version, NIL if never written.
    slot: Vec<u32>,
    nodes: Lru,
    pages: Pages,
    leaf_bytes: u64,
    inner_bytes: u64,
    /// Bitmap pages: location (NONE until written), the cache, pages per line.
    bitmap_ppa: Vec<u32>,
    bitmaps: Lru,
    lines_per_bitmap: u32,
    path: Vec<u32>,
    /// Key range routed to the leaf at the end of `path`, and the tree's shape it was found
    /// in (`None`: `path` holds something else): a page of the same range while the shape
    /// holds has the same path, so consecutive pages walk the tree once.
    lo: u32,
    hi: u32,
    path_shape: Option<u64>,
    read_slots: Vec<u32>,
    change: Change,
    stats: MuStats,
}

impl Core {
    /// The OOB tag of tree page slot `s`: numbered after the bitmap pages, which are tagged
    /// with their index (dense, as the recovery scan indexes TPs).
    #[inline]
    fn slot_tag(&self, s: u32) -> Tpn {
        Tpn(self.bitmap_ppa.len() as u32 + s)
    }

    #[inline]
    fn node_bytes(&self, id: u32) -> u64 {
        if self.tree.node(id).leaf {
            self.leaf_bytes
        } else {
            self.inner_bytes
        }
    }

    /// Brings the path to `lpn`'s leaf into the cache, reading (cause `cause`, from `t`) each
    /// uncached node's page once. Returns `(when the leaf is known, node page reads)`; the
    /// path is left in `self.path`, the leaf's upper key bound in `self.hi`.
    fn load_path(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        cause: Cause,
        t: SimTime,
    ) -> Result<(SimTime, u32), FtlError> {
        let shape = self.tree.shape();
        if self.path_shape != Some(shape) || !(self.lo..self.hi).contains(&lpn.0) {
            (self.lo, self.hi) = self.tree.path(lpn.0, &mut self.path);
            self.path_shape = Some(shape);
        }
        self.slot.resize(self.tree.arena(), NIL);
        self.read_slots.clear();
        let (mut ready, mut reads) = (t, 0);
        for i in 0..self.path.len() {
            let n = self.path[i];
            if !self.nodes.cached(n) {
                let s = self.slot[n as usize];
                if s != NIL && !self.read_slots.contains(&s) {
                    ready = dev.read(Ppa(self.pages.ppa[s as usize]), cause, ready)?.1;
                    self.read_slots.push(s);
                    reads += 1;
                }
            }
            let b = self.node_bytes(n);
            self.nodes.touch(n, b);
        }
        Ok((ready, reads))
    }

    /// Maps (or unmaps) `lpn` in the tree, loaded from `t` with `cause`: the leaf and any node a
    /// split creates become dirty, removed nodes leave the cache. Returns the old VPPN.
    fn update(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        vppn: Option<Vppn>,
        cause: Cause,
        t: SimTime,
    ) -> Result<(Option<Vppn>, u32), FtlError> {
        let (_, reads) = self.load_path(dev, lpn, cause, t)?;
        let leaf = *self.path.last().unwrap_or(&NIL);
        self.tree
            .set(lpn.0, vppn.map(|v| v.0), leaf, self.hi, &mut self.change);
        self.stats.extent_splits += self.change.split as u64;
        self.slot.resize(self.tree.arena(), NIL);
        for i in 0..self.change.freed.len() {
            let n = self.change.freed[i];
            self.nodes.drop_id(n);
            let s = std::mem::replace(&mut self.slot[n as usize], NIL);
            if s != NIL {
                self.pages.release(dev, s)?;
            }
        }
        for i in 0..self.change.dirty.len() {
            let n = self.change.dirty[i];
            let b = self.node_bytes(n);
            self.nodes.touch(n, b);
            self.nodes.set_dirty(n, true);
        }
        Ok((self.change.old.map(Vppn), reads))
    }

    /// Bytes the node cache may hold now: its share of the budget less the tree-page
    /// directory, which grows with the tree.
    fn node_room(&self) -> u64 {
        self.nodes
            .capacity
            .saturating_sub(self.pages.in_use() * DIR_BYTES)
    }

    /// The validity of a page of `block` changed: its bitmap page must be cached (read on a
    /// miss, from `t` with `cause`) and becomes dirty.
    fn touch_bitmap(
        &mut self,
        dev: &mut Device,
        block: u32,
        cause: Cause,
        t: SimTime,
    ) -> Result<(), FtlError> {
        let line = self.geo.line_of_block(block);
        let bp = line / self.lines_per_bitmap;
        if !self.bitmaps.cached(bp) {
            let p = self.bitmap_ppa[bp as usize];
            if p != NONE {
                dev.read(Ppa(p), cause, t)?;
                self.stats.bitmap_reads += 1;
            }
        }
        self.bitmaps.touch(bp, self.geo.page_size as u64);
        self.bitmaps.set_dirty(bp, true);
        Ok(())
    }

    /// Invalidates a data page (and touches its bitmap).
    fn invalidate(&mut self, dev: &mut Device, ppa: Ppa, t: SimTime) -> Result<(), FtlError> {
        dev.invalidate(ppa)?;
        self.touch_bitmap(dev, self.geo.block_of(ppa), Cause::TransRead, t)
    }
}

impl GcHooks for Core {
    fn moved(
        &mut self,
        dev: &mut Device,
        _: &mut Allocator,
        oob: Oob,
        old: Ppa,
        new: Ppa,
        t: SimTime,
    ) -> Result<(), FtlError> {
        if let Some(tpn) = oob.tpn() {
            // A bitmap page (its index) or a tree page (its slot, numbered after them).
            let (id, bitmaps) = (tpn.0, self.bitmap_ppa.len() as u32);
            if id < bitmaps {
                self.bitmap_ppa[id as usize] = new.0;
            } else {
                self.pages.ppa[(id - bitmaps) as usize] = new.0;
            }
            return Ok(());
        }
        let lpn = oob
            .lpn()
            .ok_or_else(|| FtlError::Invariant(format!("μ-FTL: page {old:?} has no tag")))?;
        for b in [self.geo.block_of(old), self.geo.block_of(new)] {
            self.touch_bitmap(dev, b, Cause::GcTrans, t)?;
        }
        let v = dev.math().ppa_to_vppn(new);
        let (prev, reads) = self.update(dev, lpn, Some(v), Cause::GcTrans, t)?;
        self.stats.gc_node_reads += reads as u64;
        if prev.map(|p| dev.math().vppn_to_ppa(p)) != Some(old) {
            return Err(FtlError::Invariant(format!(
                "μ-FTL: GC moved {lpn:?} from {old:?}, mapped to {prev:?}"
            )));
        }
        Ok(())
    }

    fn order(&self) -> GcOrder {
        // Moved pages programmed in LPN order land at consecutive VPPNs: runs stay extents.
        GcOrder::ByLpn
    }

    /// A trim record is needed while some LPN it trimmed is still unmapped. The tree is
    /// consulted without charging node reads (a GC decision the hooks cannot cost; rare: only
    /// for records in a victim).
    fn unmapped(&self, lpn: u32) -> bool {
        self.tree.lookup(lpn).is_none()
    }
}

/// The μ-FTL.
#[derive(Clone)]
pub struct MuFtl {
    core: Core,
    alloc: Allocator,
    budget: Budget,
    partitions: u32,
    partition_pages: u32,
    stats: FtlStats,
}

crate::params::keys! {
    /// μ-FTL's own keys ([`MuFtl::new`]).
    pub static MU_KEYS = "mu-ftl", "μ-FTL's bitmap cache and partitions";
    BITMAP_CACHE_BYTES = "bitmap_cache_bytes" ["B (4k, 1m, ...)"] "DRAM cache of the blocks' page-validity bitmaps, in whole pages (an eighth of the default budget unless given)";
    PARTITIONS = "partitions" [""] "logical-space partitions, each with a line open (one per 256 MiB, at most a quarter of the spare lines, unless given)";
}

impl MuFtl {
    /// Builds μ-FTL: the GC thresholds, the budget (`cmt_ratio` or `mapping_dram_bytes`),
    /// `bitmap_cache_bytes` (default an eighth of the budget, at least one page) and
    /// `partitions` (default one per 256 MiB of logical space, at most a quarter of the spare
    /// lines).
    pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<MuFtl, ConfigError> {
        super::refuse_fdp(
            dev,
            "mu",
            "each logical partition writes through its own update pointer, so the LPN's \
             partition, not a handle, chooses the line (a pointer per partition and handle is \
             left out)",
        )?;
        let geo = dev.geometry.clone();
        let policy = GcPolicy::from_params(&geo, params, 2)?;
        let page = geo.page_size as u64;
        let (leaf_bytes, inner_bytes) = (page / 2, page / 4);
        let counters = geo.blocks() as u64 * COUNTER_BYTES;
        let default_total = (0.03 * geo.logical_pages as f64 * 8.0) as u64;
        let default_bitmap = (default_total / 8).max(page).to_string();
        let t = params.take_str_or(&BITMAP_CACHE_BYTES, &default_bitmap);
        let bitmap_bytes = crate::params::parse_size(&t).ok_or_else(|| {
            ConfigError::invalid("bitmap_cache_bytes", format!("'{t}' is not a size"))
        })?;
        let bitmap_pages = (bitmap_bytes / page).max(1);
        let budget = Budget::from_params(
            &geo,
            params,
            0.03,
            counters + bitmap_pages * page,
            leaf_bytes + inner_bytes,
        )?;
        // Per bitmap page: lines whose blocks' bitmaps it holds.
        let line_bits = geo.pages_per_line() as u64;
        let lines_per_bitmap = ((page * 8) / line_bits).max(1) as u32;
        let spare_lines =
            geo.lines() - geo.logical_pages.div_ceil(geo.pages_per_line() as u64) as u32;
        let max_parts = (spare_lines / 4).max(1);
        let by_size = (geo.logical_bytes().div_ceil(PARTITION_BYTES) as u32).clamp(1, max_parts);
        let partitions = params.take_or(&PARTITIONS, by_size)?;
        if partitions == 0 || partitions > max_parts {
            return Err(ConfigError::invalid(
                "partitions",
                format!("{partitions}: need 1 to {max_parts} (a quarter of the {spare_lines} spare lines: each partition keeps a line open)"),
            ));
        }
        let partition_pages = geo.logical_pages.div_ceil(partitions as u64) as u32;
        let leaf_cap = (leaf_bytes / EXTENT_BYTES as u64) as usize;
        let inner_cap = (inner_bytes / INNER_BYTES as u64) as usize;
        let nbitmaps = geo.lines().div_ceil(lines_per_bitmap);
        Ok(MuFtl {
            core: Core {
                tree: Tree::new(leaf_cap, inner_cap),
                slot: vec![NIL],
                nodes: Lru::with_capacity(budget.cache),
                pages: Pages::default(),
                leaf_bytes,
                inner_bytes,
                bitmap_ppa: vec![NONE; nbitmaps as usize],
                bitmaps: Lru::with_capacity(bitmap_pages * page),
                lines_per_bitmap,
                path: Vec::new(),
                lo: 0,
                hi: u32::MAX,
                path_shape: None,
                read_slots: Vec::new(),
                change: Change::default(),
                stats: MuStats::default(),
                geo: geo.clone(),
            },
            alloc: Allocator::new(&geo, FIRST_PARTITION + partitions as u16, policy),
            budget,
            partitions,
            partition_pages,
            stats: FtlStats::default(),
        })
    }

    /// Rebuilds μ-FTL from flash after a power cut (docs/power.md), recovery issued at `t`.
    /// The node directory and every dirty node were in DRAM, so the μ-tree on flash is neither
    /// findable nor current: the OOB scan gives every LPN's newest page, the tree is rebuilt by
    /// inserting them in LPN order (runs at consecutive VPPNs become extents again), then every
    /// node is written (leaves first, each with its path) and every bitmap page (validity is
    /// rebuilt from the scan) — a new on-flash tree, the old tree pages left invalid. The node
    /// cache may exceed its budget while the tree is rebuilt; it is shrunk at the end. Returns
    /// the FTL and when its last operation completes.
    pub fn recover(
        cfg: &DeviceConfig,
        params: &mut Params,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(MuFtl, SimTime), RecoverError> {
        let mut ftl = MuFtl::new(cfg, params)?;
        let scan = recovery::scan(dev, t)?;
        scan.revalidate(dev)?;
        let geo = &cfg.geometry;
        let streams = FIRST_PARTITION + ftl.partitions as u16;
        let policy = ftl.alloc.policy.clone();
        // Data lines are reopened as GC's: a GC destination line's first page names a
        // partition's LPN like a host line's does, so labelling by partition could reopen a GC
        // line for a partition and leave GC to open one more line on a device with none to
        // spare. The partitions open fresh lines at their next writes.
        ftl.alloc = Allocator::recovered(geo, streams, policy, dev, |o| match o.tpn() {
            Some(_) => Stream::TRANS,
            None => Stream::DATA,
        });
        let t = scan.done;
        let mut done = t;
        // The whole tree first: GC (which the node writes below may run) updates a complete one.
        for (l, &p) in scan.page_map().iter().enumerate() {
            if p != recovery::NONE {
                let v = dev.math().ppa_to_vppn(Ppa(p));
                let (_, _) = ftl
                    .core
                    .update(dev, Lpn(l as u32), Some(v), Cause::Recovery, t)?;
            }
        }
        // A collection the cut interrupted may have left fewer free lines than GC relies on.
        done = done.max(gc::finish_interrupted(
            dev,
            &mut ftl.alloc,
            t,
            &mut ftl.core,
            &mut ftl.stats,
        )?);
        while let Some(d) = ftl.write_back_one(dev, Cause::Recovery, t)? {
            done = done.max(d);
        }
        for bp in 0..ftl.core.bitmap_ppa.len() as u32 {
            done = done.max(ftl.write_bitmap(dev, bp, Cause::Recovery, t)?);
        }
        ftl.shrink(dev, Cause::Recovery, t)?;
        Ok((ftl, done))
    }

    /// Writes back the least recently used dirty node (leaves first: their paths clean their
    /// ancestors), or else dirty bitmap page, with `cause` at `t`; `None` if nothing is dirty.
    fn write_back_one(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        t: SimTime,
    ) -> Result<Option<SimTime>, FtlError> {
        let (n, tree) = (&self.core.nodes, &self.core.tree);
        let node = n
            .lru_where(|v| n.dirty[v as usize] && tree.node(v).leaf)
            .or_else(|| n.lru_where(|v| n.dirty[v as usize]));
        if let Some(v) = node {
            return self.write_path(dev, v, cause, t).map(Some);
        }
        let b = &self.core.bitmaps;
        match b.lru_where(|v| b.dirty[v as usize]) {
            Some(bp) => self.write_bitmap(dev, bp, cause, t).map(Some),
            None => Ok(None),
        }
    }

    /// Runs foreground GC if `pages` translation pages may need a new line (before deciding
    /// what to write: GC changes the tree).
    fn make_room(&mut self, dev: &mut Device, pages: u32, t: SimTime) -> Result<(), FtlError> {
        gc::make_room(
            dev,
            &mut self.alloc,
            Stream::TRANS,
            pages,
            t,
            &mut self.core,
            &mut self.stats,
        )
    }

    /// Writes node `n` and its ancestors (reading uncached ancestors first): the first page
    /// holds `n` and as many ancestors as fit (a leaf is two quarters, an inner node one), the
    /// rest four to a page. Every node written is clean after.
    fn write_path(
        &mut self,
        dev: &mut Device,
        n: u32,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        // Room for a path from a leaf to the root a level taller than the tree (GC's updates
        // may split nodes): the leaf's two quarters and an inner node's one per level, four
        // quarters to a page.
        let pages = (self.core.tree.height() + 2).div_ceil(4);
        self.make_room(dev, pages, t)?;
        let c = &mut self.core;
        c.path.clear();
        c.path_shape = None; // `path` now holds `n`'s ancestors
        let mut x = n;
        while x != NIL {
            c.path.push(x);
            x = c.tree.node(x).parent;
        }
        c.slot.resize(c.tree.arena(), NIL);
        let mut ready = t;
        c.read_slots.clear();
        for &a in &c.path[1..] {
            let s = c.slot[a as usize];
            if !c.nodes.cached(a) && s != NIL && !c.read_slots.contains(&s) {
                ready = ready.max(dev.read(Ppa(c.pages.ppa[s as usize]), cause, t)?.1);
                c.read_slots.push(s);
                c.stats.path_reads += 1;
            }
        }
        let mut done = ready;
        let mut i = 0;
        while i < c.path.len() {
            let mut room = 4u32;
            let first = i;
            while i < c.path.len() {
                let q = if c.tree.node(c.path[i]).leaf { 2 } else { 1 };
                if q > room {
                    break;
                }
                room -= q;
                i += 1;
            }
            let s = c.pages.take();
            let ppa = self.alloc.next_page(Stream::TRANS)?;
            let oob = Oob::tp(c.slot_tag(s));
            done = done.max(dev.program(ppa, oob, Src::None, cause, ready)?);
            c.pages.ppa[s as usize] = ppa.0;
            c.stats.node_page_writes += 1;
            for j in first..i {
                let node = c.path[j];
                let old = std::mem::replace(&mut c.slot[node as usize], s);
                c.pages.refs[s as usize] += 1;
                if old != NIL {
                    c.pages.release(dev, old)?;
                }
                if c.nodes.cached(node) {
                    c.nodes.set_dirty(node, false);
                }
            }
        }
        c.stats.node_write_backs += 1;
        Ok(done)
    }

    /// Programs bitmap page `bp` (the cache holds all of it: no read first).
    fn write_bitmap(
        &mut self,
        dev: &mut Device,
        bp: u32,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        self.make_room(dev, 1, t)?;
        let ppa = self.alloc.next_page(Stream::TRANS)?;
        let done = dev.program(ppa, Oob::tp(Tpn(bp)), Src::None, cause, t)?;
        let old = std::mem::replace(&mut self.core.bitmap_ppa[bp as usize], ppa.0);
        if old != NONE {
            dev.invalidate(Ppa(old))?;
        }
        if self.core.bitmaps.cached(bp) {
            self.core.bitmaps.set_dirty(bp, false);
        }
        self.core.stats.bitmap_writes += 1;
        Ok(done)
    }

    /// Evicts least recently used nodes and bitmap pages until both caches fit, writing back
    /// the dirty ones (programs of `cause`).
    fn shrink(&mut self, dev: &mut Device, cause: Cause, t: SimTime) -> Result<(), FtlError> {
        loop {
            let c = &self.core;
            if let Some(v) = c.nodes.lru().filter(|_| c.nodes.bytes > c.node_room()) {
                if c.nodes.dirty[v as usize] {
                    self.write_path(dev, v, cause, t)?;
                    continue; // GC may have changed the cache: look again
                }
                self.core.nodes.drop_id(v);
            } else if let Some(v) = c
                .bitmaps
                .lru()
                .filter(|_| c.bitmaps.bytes > c.bitmaps.capacity)
            {
                if c.bitmaps.dirty[v as usize] {
                    self.write_bitmap(dev, v, cause, t)?;
                    continue;
                }
                self.core.bitmaps.drop_id(v);
            } else {
                return Ok(());
            }
        }
    }

    fn write(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        stamp: u32,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let stream = Stream(FIRST_PARTITION + (lpn.0 / self.partition_pages) as u16);
        let ppa = gc::alloc_page(
            dev,
            &mut self.alloc,
            stream,
            t,
            &mut self.core,
            &mut self.stats,
        )?;
        let done = dev.program(ppa, Oob::data(lpn, stamp), Src::Host, Cause::User, t)?;
        let c = &mut self.core;
        c.touch_bitmap(dev, c.geo.block_of(ppa), Cause::TransRead, t)?;
        let v = dev.math().ppa_to_vppn(ppa);
        let (old, reads) = c.update(dev, lpn, Some(v), Cause::TransRead, t)?;
        c.stats.lookups += 1;
        c.stats.node_reads += reads as u64;
        c.stats.lookup_hits += (reads == 0) as u64;
        if let Some(old) = old {
            let p = dev.math().vppn_to_ppa(old);
            c.invalidate(dev, p, t)?;
        }
        Ok(done)
    }

    fn trim(&mut self, dev: &mut Device, lpn: Lpn, t: SimTime) -> Result<(), FtlError> {
        let c = &mut self.core;
        let (old, _) = c.update(dev, lpn, None, Cause::TransRead, t)?;
        if let Some(old) = old {
            let p = dev.math().vppn_to_ppa(old);
            c.invalidate(dev, p, t)?;
        }
        Ok(())
    }

    /// Reads `req`'s pages: a tree lookup for each page no earlier lookup's extent covers.
    fn read(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        let mut done = t;
        let mut known: Option<(Ext, SimTime)> = None;
        for lpn in req.lpns() {
            let hit = known.filter(|(e, _)| e.lpn <= lpn.0 && lpn.0 < e.lpn + e.len);
            let (ext, ready, reads) = match hit {
                Some((e, ready)) => (Some(e), ready, 0),
                None => {
                    let c = &mut self.core;
                    let (ready, reads) = c.load_path(dev, lpn, Cause::TransRead, t)?;
                    let leaf = *c.path.last().unwrap_or(&NIL);
                    let e = c.tree.find(leaf, lpn.0);
                    c.stats.lookups += 1;
                    c.stats.node_reads += reads as u64;
                    c.stats.lookup_hits += (reads == 0) as u64;
                    if let Some(e) = e {
                        known = Some((e, ready));
                    }
                    (e, ready, reads)
                }
            };
            let Some(e) = ext else {
                self.stats.lookup(reads as usize);
                sink.deliver(dev, lpn, Served::Unmapped);
                done = done.max(ready);
                continue;
            };
            let ppa = dev.math().vppn_to_ppa(Vppn(e.vppn + (lpn.0 - e.lpn)));
            let (oob, d) = dev.read(ppa, Cause::User, ready)?;
            self.stats.lookup(1 + reads as usize);
            self.stats.cmt_hits += (reads == 0) as u64;
            sink.deliver(dev, lpn, Served::Flash { ppa, oob });
            done = done.max(d);
        }
        Ok(done)
    }

    fn dram_parts(&self) -> [(&'static str, u64); 4] {
        let c = &self.core;
        [
            ("invalid_counters", c.geo.blocks() as u64 * COUNTER_BYTES),
            ("node_cache", c.nodes.bytes),
            ("bitmap_cache", c.bitmaps.capacity),
            ("tree_directory", c.pages.in_use() * DIR_BYTES),
        ]
    }
}

impl Ftl for MuFtl {
    fn name(&self) -> &'static str {
        "mu-ftl"
    }

    /// A round ahead, the leaf the LPN routes to; next, the page the extent found there maps it
    /// to (what a read fetches, or the state a write's or trim's invalidation updates). The
    /// tree's inner nodes are few and stay cached; its leaves and the pages' state do not.
    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        let tree = &self.core.tree;
        match when {
            Upcoming::Later => tree.prefetch_leaf(lpn.0),
            Upcoming::Next => {
                let Some(e) = tree.lookup(lpn.0) else {
                    return;
                };
                let ppa = dev.math().vppn_to_ppa(Vppn(e.vppn + (lpn.0 - e.lpn)));
                match op {
                    Op::Read => dev.prefetch_read(ppa),
                    Op::Write | Op::Trim => dev.prefetch_invalidate(ppa),
                    Op::Flush => {}
                }
            }
        }
    }

    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        let done = match req.op {
            Op::Read => self.read(dev, req, sink)?,
            Op::Write => {
                let mut done = t;
                for lpn in req.lpns() {
                    done = done.max(self.write(dev, lpn, req.stamp, t)?);
                }
                done
            }
            Op::Trim => {
                // Durable before the tree changes (docs/power.md).
                let done = persist_trim(
                    dev,
                    &mut self.alloc,
                    Stream::DATA,
                    &mut self.core,
                    &mut self.stats,
                    req,
                )?;
                for lpn in req.lpns() {
                    self.trim(dev, lpn, t)?;
                }
                done
            }
            Op::Flush => t,
        };
        self.shrink(dev, Cause::TransWrite, t)?;
        Ok(done)
    }

    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        gc::background(dev, &mut self.alloc, now, &mut self.core, &mut self.stats)?;
        self.shrink(dev, Cause::TransWrite, now)
    }

    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        if let Some(done) =
            gc::background_one(dev, &mut self.alloc, now, &mut self.core, &mut self.stats)?
        {
            self.shrink(dev, Cause::TransWrite, now)?;
            return Ok(Some(done));
        }
        // Dirty nodes (leaves first: their paths clean their ancestors), then bitmap pages.
        let Some(done) = self.write_back_one(dev, Cause::TransWrite, now)? else {
            return Ok(None);
        };
        self.shrink(dev, Cause::TransWrite, now)?;
        Ok(Some(done))
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.core.stats = MuStats::default();
    }

    fn dram(&self) -> DramUsage {
        DramUsage {
            parts: self.dram_parts().to_vec(),
            budget: Some(self.budget.total),
        }
    }

    fn dram_total(&self) -> u64 {
        self.dram_parts().iter().map(|p| p.1).sum()
    }

    fn params(&self) -> serde_json::Value {
        let c = &self.core;
        serde_json::json!({
            "gc": self.alloc.policy,
            "budget": self.budget,
            "node_cache_bytes": c.nodes.capacity,
            "bitmap_cache_bytes": c.bitmaps.capacity,
            "partitions": self.partitions,
            "leaf_bytes": c.leaf_bytes,
            "inner_bytes": c.inner_bytes,
        })
    }

    fn extra_counters(&self) -> serde_json::Value {
        let c = &self.core;
        let s = &c.stats;
        let mut v = serde_json::to_value(s).unwrap_or_default();
        let per = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        v["node_reads_per_lookup"] = per(s.node_reads, s.lookups).into();
        v["tree_height"] = c.tree.height().into();
        v["tree_nodes"] = c.tree.nodes().into();
        v["tree_leaves"] = c.tree.leaves().into();
        v["extents"] = c.tree.extents().into();
        v["tree_pages"] = c.pages.in_use().into();
        v["dirty_nodes"] = c.nodes.dirty_count.into();
        v
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        let c = &self.core;
        c.tree.check()?;
        let geo = &c.geo;
        let map = c.tree.extents_iter().flat_map(|e| {
            (0..e.len).map(move |i| (Lpn(e.lpn + i), Some(geo.vppn_to_ppa(Vppn(e.vppn + i)))))
        });
        // Tree pages: every slot in use is a valid page tagged with it, holding as many
        // current node versions as it counts.
        let mut refs = vec![0u32; c.pages.ppa.len()];
        let mut stack = vec![c.tree.root()];
        while let Some(n) = stack.pop() {
            stack.extend(c.tree.node(n).kids.iter().copied());
            let s = c.slot.get(n as usize).copied().unwrap_or(NIL);
            if s != NIL {
                refs[s as usize] += 1;
            }
        }
        let mut tps = 0;
        for (s, &p) in c.pages.ppa.iter().enumerate() {
            if p == NONE {
                continue;
            }
            tps += 1;
            if refs[s] != c.pages.refs[s] || refs[s] == 0 {
                return Err(format!(
                    "μ-FTL tree page {s}: {} node versions, counted {}",
                    refs[s], c.pages.refs[s]
                ));
            }
            if !dev.is_valid(Ppa(p))
                || dev.peek_oob(Ppa(p)).and_then(|o| o.tpn()) != Some(c.slot_tag(s as u32))
            {
                return Err(format!(
                    "μ-FTL tree page {s} at {p} is not a valid page of it"
                ));
            }
        }
        for (i, &p) in c.bitmap_ppa.iter().enumerate() {
            if p == NONE {
                continue;
            }
            tps += 1;
            if !dev.is_valid(Ppa(p))
                || dev.peek_oob(Ppa(p)).and_then(|o| o.tpn()) != Some(Tpn(i as u32))
            {
                return Err(format!(
                    "μ-FTL bitmap page {i} at {p} is not a valid page of it"
                ));
            }
        }
        for (name, used, room) in [
            ("node", c.nodes.bytes, c.node_room()),
            ("bitmap", c.bitmaps.bytes, c.bitmaps.capacity),
        ] {
            if used > room {
                return Err(format!("μ-FTL {name} cache holds {used} B, over {room} B"));
            }
        }
        check_page_map(dev, map, tps + dev.valid_records())
    }
}
