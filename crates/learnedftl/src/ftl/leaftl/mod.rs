//! LeaFTL (Sun et al., ASPLOS'23; SPEC §5.6): learned index segments in a log-structured mapping
//! table per 256-LPN group, a DRAM write buffer flushed sorted by LPN, translation pages holding
//! one group each behind a byte-budgeted LRU cache, OOB-verified approximate predictions, and GC
//! that sorts the moved pages and learns them as new segments.
//!
//! * `segment`: the 8-byte segment and the greedy PLR bounded by γ.
//! * `table`: one group's levels, merge/demotion, lookup, compaction and CRB.
//! * this module: buffer, flush, read/write/trim paths, the group cache and its translation
//!   pages, misprediction handling, GC hooks, statistics and invariants.
//!
//! The exact LPN → PPA table is kept beside the segments as the truth the segments are checked
//! against (and to find the old copy a write invalidates, which the paper takes from its page
//! validity table); every lookup the FTL serves goes through the segments.

mod cache;
mod segment;
mod table;

pub use cache::GroupCache;
pub use segment::{learn, Point, Segment, GROUP_LPNS, SEGMENT_BYTES};
pub use table::{GroupTable, Level, Offsets};

use super::{DramUsage, Ftl, ReadSink, Served, Unflushed};
use crate::addr::{Lpn, Ppa, SimTime, Tpn, Vppn};
use crate::config::{DeviceConfig, Geometry};
use crate::device::{Cause, Device, Oob, Src, Unit};
use crate::error::{ConfigError, FtlError, RecoverError};
use crate::mapping::keyed::{KeyedSlots, NIL};
use crate::mapping::{
    check_page_map, gc, persist_trim, prefetch_page_map, radix, recovery, Allocator, Bits, Budget,
    FtlStats, GcHooks, GcOrder, GcPolicy, Gtd, Stream,
};
use crate::params::Params;
use crate::request::{Op, Request, Upcoming};
use serde::Serialize;
use std::collections::VecDeque;

const UNMAPPED: u32 = u32::MAX;

/// How many pages apart a flush's prefetch stages run (each stage a cache miss ahead of the
/// next).
const PREFETCH_AHEAD: usize = 4;
/// Lookup-depth histogram buckets: 1..=15 levels, then 16 or more.
const LEVEL_BUCKETS: usize = 16;
/// Bytes of one reverse-mapping entry in the OOB (an LPN).
const OOB_ENTRY_BYTES: u32 = 4;

/// LeaFTL's parameters (all `--set` keys).
#[derive(Clone, Debug, Serialize)]
pub struct LeaftlParams {
    /// Error bound of learned segments, in pages (`gamma`, default 0: every segment accurate).
    pub gamma: u32,
    /// DRAM write buffer in pages (`write_buffer_pages`, default 2048 = the paper's 8 MB).
    pub write_buffer_pages: u32,
    /// Host page writes between compactions of the cached groups (`compaction_interval`,
    /// default 1,000,000 as in the paper).
    pub compaction_interval: u64,
    /// Mapping DRAM: the GTD (fixed) plus the group cache (`cmt_ratio` of the full page map,
    /// default 3 %, or `mapping_dram_bytes` in total).
    pub budget: Budget,
    /// GC thresholds.
    pub gc: GcPolicy,
}

/// Counters of one phase beyond [`FtlStats`].
#[derive(Clone, Debug, Default, Serialize)]
struct Counters {
    /// Page reads served from the write buffer.
    buffer_read_hits: u64,
    /// Approximate predictions that named the wrong page (one extra read each).
    mispredictions: u64,
    /// Mispredictions whose first page's OOB window did not list the LPN (another read).
    oob_window_misses: u64,
    /// Levels visited per lookup: index `n - 1` counts lookups that visited `n` levels.
    lookup_levels: [u64; LEVEL_BUCKETS],
    /// Buffer flushes and the pages they programmed.
    flushes: u64,
    flushed_pages: u64,
    /// Periodic compactions (each compacts every cached group).
    compactions: u64,
    /// Groups compacted because their table outgrew a translation page.
    tp_overflow_compactions: u64,
    /// Translation pages read and re-programmed by GC for groups not in the cache.
    gc_tp_updates: u64,
}

/// The mapping: truth, the group tables (the TPs' content), the cache and the GTD. It is what
/// GC updates, so it implements [`GcHooks`].
#[derive(Clone)]
struct Mapping {
    geo: Geometry,
    gamma: u32,
    l2p: Vec<u32>,
    groups: Vec<GroupTable>,
    /// Per group, whether its table may have changed since its last periodic compaction (all
    /// at first): the groups that compaction visits.
    changed: Bits,
    bytes: Vec<u32>,
    total_bytes: u64,
    cache: GroupCache,
    /// When a group's TP read (if one is in flight) completes.
    ready_at: Vec<u64>,
    gtd: Gtd,
    /// Data pages moved by the current GC victim, in LPN order: (lpn, new page).
    gc_moves: Vec<(u32, Ppa)>,
    points: Vec<Point>,
    segs: Vec<Segment>,
    c: Counters,
}

impl Mapping {
    #[inline]
    fn group(lpn: u32) -> u32 {
        lpn / GROUP_LPNS
    }

    /// The write stamp of `lpn`'s page on flash, as its OOB says (0: unmapped).
    fn flash_stamp(&self, dev: &Device, lpn: u32) -> u32 {
        match self.l2p[lpn as usize] {
            UNMAPPED => 0,
            p => dev.peek_oob(Ppa(p)).map_or(0, |o| o.stamp),
        }
    }

    /// Records that `lpn` now lives at `ppa` (or nowhere: [`UNMAPPED`]), invalidating the copy
    /// it replaces.
    fn set_truth(&mut self, dev: &mut Device, lpn: u32, ppa: u32) -> Result<(), FtlError> {
        let old = std::mem::replace(&mut self.l2p[lpn as usize], ppa);
        if old != UNMAPPED {
            dev.invalidate(Ppa(old))?;
        }
        Ok(())
    }

    /// Re-reads a group's size after a change (every change to a group's table comes here);
    /// compacts it if it outgrew a translation page.
    fn refresh(&mut self, g: u32) {
        self.changed.set(g as usize, true);
        let mut b = self.groups[g as usize].bytes();
        if b > self.geo.page_size as u64 {
            self.groups[g as usize].compact();
            self.c.tp_overflow_compactions += 1;
            b = self.groups[g as usize].bytes();
        }
        let old = std::mem::replace(&mut self.bytes[g as usize], b as u32) as u64;
        self.total_bytes = self.total_bytes - old + b;
        if self.cache.contains(g) {
            self.cache.resize(g, old, b);
        }
    }

    /// Makes group `g` cached, reading its TP at `t` if it is not; returns when its table is
    /// available and whether a flash read was needed.
    fn load(
        &mut self,
        dev: &mut Device,
        g: u32,
        cause: Cause,
        t: SimTime,
    ) -> Result<(SimTime, bool), FtlError> {
        if self.cache.contains(g) {
            self.cache.touch(g);
            return Ok((t.max(SimTime(self.ready_at[g as usize])), false));
        }
        let read = self.gtd.location(Tpn(g)).is_some();
        let ready = self.gtd.read(dev, Tpn(g), cause, t)?;
        self.cache.insert(g, self.bytes[g as usize] as u64);
        self.ready_at[g as usize] = ready.0;
        Ok((ready, read))
    }

    /// Hints into cache what loading group `g` and learning into its table will read, in three
    /// stages a few groups apart (each reads only what the one before hinted): 2, its table's
    /// header and its cache, GTD and size entries; 1, its TP's page (when not cached) and its
    /// table's levels; 0, its top level's segments. Groups of a flush are scattered.
    #[inline]
    fn prefetch_group(&self, dev: &Device, g: u32, stage: u8) {
        let gi = g as usize;
        match stage {
            2 => {
                crate::host::prefetch(&self.groups[gi]);
                self.cache.prefetch(g);
                self.gtd.prefetch(Tpn(g));
                crate::host::prefetch(&self.bytes[gi]);
                crate::host::prefetch(&self.ready_at[gi]);
            }
            1 => {
                if !self.cache.contains(g) {
                    if let Some(ppa) = self.gtd.location(Tpn(g)) {
                        dev.prefetch_read(ppa);
                    }
                }
                self.groups[gi].prefetch(false);
            }
            _ => self.groups[gi].prefetch(true),
        }
    }

    /// Hints the groups [`Self::learn_group`] will learn next, `pages` (sorted by LPN) being
    /// learned group by group and `at` the first page not learned yet: each stage of
    /// [`Self::prefetch_group`] a few pages further ahead. By pages rather than by groups: under
    /// random writes a group gets a page or two (a flush's or a victim's), and hinting a group
    /// twice costs little.
    #[inline]
    fn prefetch_ahead(&self, dev: &Device, pages: &[(u32, Ppa)], at: usize) {
        for stage in 0..3u8 {
            if let Some(&(ahead, _)) = pages.get(at + (stage as usize + 1) * PREFETCH_AHEAD) {
                self.prefetch_group(dev, Self::group(ahead), stage);
            }
        }
    }

    /// Learns segments from `moves` (one group's pages, sorted by LPN, each `(lpn, page)`) that
    /// still hold their LPN's latest copy, and inserts them into the group's table on top.
    fn learn_group(&mut self, g: u32, moves: &[(u32, Ppa)]) {
        self.points.clear();
        for &(lpn, ppa) in moves {
            if self.l2p[lpn as usize] == ppa.0 {
                let v = self.geo.ppa_to_vppn(ppa).0;
                self.points.push(((lpn % GROUP_LPNS) as u8, v));
            }
        }
        self.segs.clear();
        learn(&self.points, self.gamma, &mut self.segs);
        let table = &mut self.groups[g as usize];
        for seg in &self.segs {
            let members: Offsets = self
                .points
                .iter()
                .map(|p| p.0)
                .filter(|&x| seg.in_range(x))
                .collect();
            table.insert(*seg, members);
        }
        self.refresh(g);
    }

    /// The page holding `lpn` according to the segments, reading it as LeaFTL does: one read if
    /// the prediction is right; otherwise the predicted page's OOB (which lists the LPNs of its
    /// ±γ neighbours) names the right page, read next. Returns the page, its OOB, the completion
    /// and the flash reads made.
    fn read_predicted(
        &mut self,
        dev: &mut Device,
        lpn: u32,
        seg: &Segment,
        t: SimTime,
    ) -> Result<(Ppa, Oob, SimTime, usize), FtlError> {
        let truth = self.l2p[lpn as usize];
        if truth == UNMAPPED {
            return Err(FtlError::Invariant(format!(
                "LeaFTL: LPN {lpn} is unmapped but {seg:?} encodes it"
            )));
        }
        let pages = self.geo.pages() as i64;
        let pred = seg.predict((lpn % GROUP_LPNS) as u8).clamp(0, pages - 1);
        if seg.is_accurate() {
            let ppa = self.geo.vppn_to_ppa(Vppn(pred as u32));
            if ppa.0 != truth {
                return Err(FtlError::Invariant(format!(
                    "LeaFTL: accurate {seg:?} maps LPN {lpn} to {ppa:?}, truth {truth}"
                )));
            }
            let (oob, done) = dev.read(ppa, Cause::User, t)?;
            return Ok((ppa, oob, done, 1));
        }
        // The FTL knows which pages are programmed (block write pointers are in DRAM): an
        // unprogrammed prediction is moved to the nearest programmed page, below first.
        let g = self.gamma as i64;
        let geo = &self.geo;
        let page = |v: i64| geo.vppn_to_ppa(Vppn(v as u32));
        let programmed = |v: i64| (0..pages).contains(&v) && dev.is_programmed(page(v));
        let first = (0..=2 * g)
            .map(|d| pred - d)
            .chain((1..=2 * g).map(|d| pred + d))
            .find(|&v| programmed(v))
            .unwrap_or(pred);
        // The OOB of `first` lists the LPNs of `first - γ ..= first + γ`; the valid page among
        // them holding `lpn` is the one (stale copies are told apart by the validity bitmap).
        let found = (first - g..=first + g).find(|&v| {
            programmed(v)
                && dev.is_valid(page(v))
                && dev.peek_oob(page(v)).and_then(|o| o.lpn()) == Some(Lpn(lpn))
        });
        let first_ppa = page(first);
        if first_ppa.0 == truth {
            let (oob, done) = dev.read(first_ppa, Cause::User, t)?;
            return Ok((first_ppa, oob, done, 1));
        }
        self.c.mispredictions += 1;
        let (_, mut at) = dev.read(first_ppa, Cause::Mispredict, t)?;
        let mut reads = 1;
        let ppa = match found {
            Some(v) => self.geo.vppn_to_ppa(Vppn(v as u32)),
            None if first == pred => {
                return Err(FtlError::Invariant(format!(
                    "LeaFTL: LPN {lpn} is not within ±γ of its prediction {pred} ({seg:?})"
                )))
            }
            None => {
                // Only when the prediction had to move off an unprogrammed page: read the
                // page on the other side of the prediction, whose OOB covers the rest.
                self.c.oob_window_misses += 1;
                let other = self.geo.vppn_to_ppa(Vppn((2 * pred - first) as u32));
                at = dev.read(other, Cause::Mispredict, at)?.1;
                reads += 1;
                Ppa(truth)
            }
        };
        if ppa.0 != truth {
            return Err(FtlError::Invariant(format!(
                "LeaFTL: OOB search for LPN {lpn} near VPPN {pred} found {ppa:?}, truth {truth}"
            )));
        }
        let (oob, done) = dev.read(ppa, Cause::User, at)?;
        Ok((ppa, oob, done, reads + 1))
    }
}

impl GcHooks for Mapping {
    #[inline]
    fn prefetch_moved(&self, oob: Oob) {
        match oob.tpn() {
            Some(tpn) => self.gtd.prefetch(tpn),
            None => {
                if let Some(lpn) = oob.lpn() {
                    crate::host::prefetch(&self.l2p[lpn.idx()]);
                }
            }
        }
    }

    fn moved(
        &mut self,
        dev: &mut Device,
        _: &mut Allocator,
        oob: Oob,
        old: Ppa,
        new: Ppa,
        _: SimTime,
    ) -> Result<(), FtlError> {
        if let Some(tpn) = oob.tpn() {
            return self.gtd.relocate(dev, tpn, new);
        }
        let lpn = oob.lpn().map_or(0, |l| l.0);
        if self.l2p[lpn as usize] != old.0 {
            return Err(FtlError::Invariant(format!(
                "LeaFTL GC moved {old:?} holding LPN {lpn}, which maps elsewhere"
            )));
        }
        self.l2p[lpn as usize] = new.0;
        self.gc_moves.push((lpn, new));
        Ok(())
    }

    fn pending_tp_pages(&self) -> u32 {
        let moves = &self.gc_moves;
        moves
            .chunk_by(|a, b| Self::group(a.0) == Self::group(b.0))
            .filter(|c| !self.cache.contains(Self::group(c[0].0)))
            .count() as u32
    }

    /// One group's TP per moved page at most, and no more than there are groups.
    fn tp_pages_bound(&self, valid: u32) -> u32 {
        valid.min(self.gtd.tps())
    }

    /// The victim's data pages were programmed sorted by LPN: learn them as new segments. A
    /// cached group is updated in DRAM (dirty); any other group's TP is read and re-programmed
    /// once per victim.
    fn victim_moved(
        &mut self,
        dev: &mut Device,
        alloc: &mut Allocator,
        t: SimTime,
    ) -> Result<(), FtlError> {
        let moves = std::mem::take(&mut self.gc_moves);
        let mut at = 0;
        for chunk in moves.chunk_by(|a, b| Self::group(a.0) == Self::group(b.0)) {
            // A victim's pages are scattered over the groups as a flush's are.
            self.prefetch_ahead(dev, &moves, at);
            at += chunk.len();
            let g = Self::group(chunk[0].0);
            if self.cache.contains(g) {
                self.learn_group(g, chunk);
                self.cache.mark_dirty(g);
            } else {
                let read = self.gtd.read(dev, Tpn(g), Cause::GcTrans, t)?;
                self.learn_group(g, chunk);
                let ppa = alloc.next_page(Stream::TRANS)?;
                self.gtd.program(dev, Tpn(g), ppa, Cause::GcTrans, read)?;
                self.c.gc_tp_updates += 1;
            }
        }
        self.gc_moves = moves;
        self.gc_moves.clear();
        Ok(())
    }

    fn order(&self) -> GcOrder {
        GcOrder::ByLpn
    }

    /// A trim record is needed while some LPN it trimmed is not mapped on flash again (a
    /// buffered rewrite does not count: the buffer may be lost).
    fn unmapped(&self, lpn: u32) -> bool {
        self.l2p[lpn as usize] == UNMAPPED
    }
}

/// A buffered page: its LPN, write stamp and FDP handle (docs/fdp.md; 0 without FDP).
type Entry = (u32, u32, u8);

/// The DRAM write buffer: one entry per buffered LPN (an overwrite replaces it in place).
#[derive(Clone)]
struct WriteBuffer {
    entries: Vec<Entry>,
    /// Each buffered LPN's index in `entries`.
    index: KeyedSlots,
    /// When each slot not holding an entry becomes free (its flushed page is programmed),
    /// earliest first; an entry takes the earliest. Times freed since the last entry wait in
    /// `freed` and are merged in, sorted, when the next entry comes: a flush frees many slots
    /// at once, mostly later than every slot already free (appended at no cost), where a heap
    /// paid a sift per page.
    free_at: VecDeque<u64>,
    /// Slots freed since the last entry took one, unsorted.
    freed: Vec<u64>,
    capacity: u32,
    /// When every page flushed so far is programmed.
    durable_at: SimTime,
}

impl WriteBuffer {
    fn new(capacity: u32) -> WriteBuffer {
        WriteBuffer {
            entries: Vec::with_capacity(capacity as usize),
            index: KeyedSlots::new(capacity as usize),
            free_at: vec![0; capacity as usize].into(),
            freed: Vec::new(),
            capacity,
            durable_at: SimTime::ZERO,
        }
    }

    /// `lpn`'s index in `entries`, or [`NIL`].
    #[inline]
    fn slot(&self, lpn: u32) -> u32 {
        self.index.find(lpn)
    }

    #[inline]
    fn stamp(&self, lpn: u32) -> Option<u32> {
        let s = self.slot(lpn);
        (s != NIL).then(|| self.entries[s as usize].1)
    }

    /// Buffers a page of handle `h` written at `t`; returns when it is in the buffer (it
    /// waits for a slot).
    fn admit(&mut self, lpn: u32, stamp: u32, h: u8, t: SimTime) -> SimTime {
        let s = self.slot(lpn);
        if s != NIL {
            self.entries[s as usize] = (lpn, stamp, h);
            return t;
        }
        self.merge_freed();
        let free = self.free_at.pop_front().unwrap_or(0);
        self.entries.push((lpn, stamp, h));
        self.index.insert(lpn, self.entries.len() as u32 - 1);
        t.max(SimTime(free))
    }

    /// Drops a buffered page (trimmed); its slot is free at `t`.
    fn remove(&mut self, lpn: u32, t: SimTime) {
        let s = self.slot(lpn);
        if s == NIL {
            return;
        }
        self.index.remove(lpn);
        let last = self.entries.len() as u32 - 1;
        if s != last {
            self.index.relocate(self.entries[last as usize].0, s);
        }
        self.entries.swap_remove(s as usize);
        self.freed(t);
    }

    /// Empties the buffer into `batch` (empty), as a flush takes it.
    fn take_all(&mut self, batch: &mut Vec<Entry>) {
        self.index.clear();
        std::mem::swap(batch, &mut self.entries);
    }

    /// A slot becomes free at `t`.
    #[inline]
    fn freed(&mut self, t: SimTime) {
        self.freed.push(t.0);
    }

    /// Merges the slots freed since the last entry into `free_at`, keeping it sorted: from the
    /// back, so times later than every free slot (the common case) are only appended.
    fn merge_freed(&mut self) {
        if self.freed.is_empty() {
            return;
        }
        self.freed.sort_unstable();
        let (n, k) = (self.free_at.len(), self.freed.len());
        self.free_at.resize(n + k, 0);
        let (mut i, mut j) = (n, k);
        for w in (0..n + k).rev() {
            if j == 0 {
                break;
            }
            if i > 0 && self.free_at[i - 1] > self.freed[j - 1] {
                self.free_at[w] = self.free_at[i - 1];
                i -= 1;
            } else {
                self.free_at[w] = self.freed[j - 1];
                j -= 1;
            }
        }
        self.freed.clear();
    }

    /// Free slots.
    fn free_slots(&self) -> usize {
        self.free_at.len() + self.freed.len()
    }

    fn is_full(&self) -> bool {
        self.entries.len() as u32 == self.capacity
    }
}

/// The LeaFTL flash translation layer.
#[derive(Clone)]
pub struct Leaftl {
    map: Mapping,
    alloc: Allocator,
    buf: WriteBuffer,
    stats: FtlStats,
    params: LeaftlParams,
    writes_since_compaction: u64,
    /// Scratch for a flush: the batch and where its pages went.
    batch: Vec<Entry>,
    /// The second buffer of the batch's radix sort.
    batch_scratch: Vec<Entry>,
    placed: Vec<(u32, Ppa)>,
    /// The groups a periodic compaction visits (kept to reuse its allocation).
    todo: Vec<u32>,
}

crate::params::keys! {
    /// LeaFTL's own keys ([`Leaftl::new`]).
    pub static LEAFTL_KEYS = "leaftl", "LeaFTL's learned segments and write buffer";
    GAMMA = "gamma" ["LPNs"] "error bound γ of the learned segments (0: exact); needs (2γ+1)·4 B of OOB";
    WRITE_BUFFER_PAGES = "write_buffer_pages" ["pages"] "DRAM write buffer, sorted and learned from when full";
    COMPACTION_INTERVAL = "compaction_interval" ["page writes"] "segments are compacted every N page writes";
}

impl Leaftl {
    /// Builds LeaFTL. Parameters: `gamma`, `write_buffer_pages`, `compaction_interval`,
    /// `cmt_ratio` and the GC thresholds of [`GcPolicy`].
    pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<Self, ConfigError> {
        let geo = &dev.geometry;
        let gamma = params.take_or(&GAMMA, 0u32)?;
        let need = (2 * gamma as u64 + 1) * OOB_ENTRY_BYTES as u64;
        if need > geo.oob_size as u64 {
            return Err(ConfigError::invalid(
                "gamma",
                format!(
                    "γ = {gamma} needs {need} B of OOB for the LPNs of the ±γ neighbours, the \
                     device has oob_size = {} (raise oob_size)",
                    geo.oob_size
                ),
            ));
        }
        let write_buffer_pages = params.take_or(&WRITE_BUFFER_PAGES, 2048u32)?;
        if write_buffer_pages == 0 {
            return Err(ConfigError::invalid(
                "write_buffer_pages",
                "LeaFTL learns from buffered writes: at least 1 page",
            ));
        }
        let compaction_interval = params.take_or(&COMPACTION_INTERVAL, 1_000_000u64)?;
        if compaction_interval == 0 {
            return Err(ConfigError::invalid(
                "compaction_interval",
                "must be at least 1 page write",
            ));
        }
        let gtd = Gtd::with_span(geo, GROUP_LPNS);
        // The cache must hold at least one group's translation page.
        let budget =
            Budget::from_params(geo, params, 0.03, gtd.dram_bytes(), geo.page_size as u64)?;
        // A victim may hold data and translation pages: its moves may open a line on each stream.
        let gc_policy = GcPolicy::from_params(geo, params, 2)?;
        let groups = geo.logical_pages.div_ceil(GROUP_LPNS as u64) as u32;
        Ok(Leaftl {
            map: Mapping {
                geo: geo.clone(),
                gamma,
                l2p: vec![UNMAPPED; geo.logical_pages as usize],
                groups: vec![GroupTable::default(); groups as usize],
                changed: Bits::new(groups as usize, true),
                bytes: vec![0; groups as usize],
                total_bytes: 0,
                cache: GroupCache::new(groups),
                ready_at: vec![0; groups as usize],
                gtd,
                gc_moves: Vec::new(),
                points: Vec::new(),
                segs: Vec::new(),
                c: Counters::default(),
            },
            alloc: Allocator::new(geo, 2, gc_policy.clone()).with_fdp(&dev.fdp),
            buf: WriteBuffer::new(write_buffer_pages),
            stats: FtlStats::default(),
            params: LeaftlParams {
                gamma,
                write_buffer_pages,
                compaction_interval,
                budget,
                gc: gc_policy,
            },
            writes_since_compaction: 0,
            batch: Vec::new(),
            batch_scratch: Vec::new(),
            placed: Vec::new(),
            todo: Vec::new(),
        })
    }

    /// Rebuilds LeaFTL from flash after a power cut (docs/power.md; the paper's §3.8), recovery
    /// issued at `t`: the OOB scan gives every LPN's newest page (the reverse mappings every
    /// page carries, trims from their records), each group's segments are learned again from
    /// its pages sorted by LPN, and every non-empty group's TP is programmed as a fresh
    /// checkpoint (the scan gives every LPN's page; the TPs on flash are only read when a
    /// checkpoint covers them). The write buffer
    /// and the group cache start empty. Returns the FTL and when its last operation completes.
    pub fn recover(
        cfg: &DeviceConfig,
        params: &mut Params,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(Self, SimTime), RecoverError> {
        let mut ftl = Leaftl::new(cfg, params)?;
        let scan = recovery::scan(dev, t)?;
        scan.revalidate(dev)?;
        let geo = &cfg.geometry;
        ftl.map.l2p.copy_from_slice(scan.page_map());
        let policy = ftl.params.gc.clone();
        ftl.alloc = Allocator::recovered(geo, 2, policy, dev, |o| {
            if o.tpn().is_some() {
                Stream::TRANS
            } else {
                Stream::DATA
            }
        });
        let mut done = scan.done;
        let mut pages = std::mem::take(&mut ftl.placed);
        for g in 0..ftl.map.groups.len() as u32 {
            let base = g * GROUP_LPNS;
            let end = (base + GROUP_LPNS).min(geo.logical_pages as u32);
            pages.clear();
            pages.extend(
                (base..end)
                    .filter(|&l| ftl.map.l2p[l as usize] != UNMAPPED)
                    .map(|l| (l, Ppa(ftl.map.l2p[l as usize]))),
            );
            if pages.is_empty() {
                continue;
            }
            ftl.map.learn_group(g, &pages);
            let ppa = gc::alloc_page(
                dev,
                &mut ftl.alloc,
                Stream::TRANS,
                scan.done,
                &mut ftl.map,
                &mut ftl.stats,
            )?;
            let d = ftl
                .map
                .gtd
                .program(dev, Tpn(g), ppa, Cause::Recovery, scan.done)?;
            done = done.max(d);
        }
        pages.clear();
        ftl.placed = pages;
        // A collection the cut interrupted may have left fewer free lines than GC relies on.
        let gc_done =
            gc::finish_interrupted(dev, &mut ftl.alloc, done, &mut ftl.map, &mut ftl.stats)?;
        Ok((ftl, done.max(gc_done)))
    }

    /// The acknowledged writes only the DRAM buffer holds — buffered, or in a flush batch a
    /// power cut interrupted and not programmed yet.
    fn pending<'a>(&'a self, dev: &'a Device) -> impl Iterator<Item = Entry> + 'a {
        self.buf
            .entries
            .iter()
            .chain(&self.batch)
            .copied()
            .filter(move |&(lpn, stamp, _)| self.map.flash_stamp(dev, lpn) != stamp)
    }

    /// Evicts least recently used groups until the cache fits its budget; a dirty one's TP is
    /// programmed (the whole group is in DRAM, so nothing needs reading first).
    fn enforce_budget(&mut self, dev: &mut Device, t: SimTime) -> Result<(), FtlError> {
        while self.map.cache.total() > self.params.budget.cache {
            let Some(g) = self.map.cache.lru() else { break };
            if !self.map.cache.is_dirty(g) {
                self.map.cache.remove(g, self.map.bytes[g as usize] as u64);
                continue;
            }
            self.write_back_group(dev, g, t, true)?;
        }
        Ok(())
    }

    /// Programs dirty cached group `g`'s TP at `t` (the whole group is in DRAM, so nothing is
    /// read first), then drops it from the cache (`evict`) or keeps it cached and clean (an
    /// idle write-back); returns when the program completes.
    fn write_back_group(
        &mut self,
        dev: &mut Device,
        g: u32,
        t: SimTime,
        evict: bool,
    ) -> Result<SimTime, FtlError> {
        let ppa = gc::alloc_page(
            dev,
            &mut self.alloc,
            Stream::TRANS,
            t,
            &mut self.map,
            &mut self.stats,
        )?;
        if evict {
            self.map.cache.remove(g, self.map.bytes[g as usize] as u64);
        } else {
            self.map.cache.clean(g);
        }
        self.map.gtd.program(dev, Tpn(g), ppa, Cause::TransWrite, t)
    }

    /// Programs the buffer at `t`, sorted by LPN, through the data write pointer (so the pages
    /// are VPPN-contiguous in LPN order), then learns each group's new segments.
    fn flush(&mut self, dev: &mut Device, t: SimTime) -> Result<(), FtlError> {
        if self.buf.entries.is_empty() {
            return Ok(());
        }
        // The batch stays in `self.batch` while it is programmed: a power cut in the middle
        // leaves what was not programmed yet for `unflushed` and `flush_on_power_loss`.
        self.buf.take_all(&mut self.batch);
        radix::sort_by_u32_key(&mut self.batch, &mut self.batch_scratch, |e| e.0);
        let fdp = dev.fdp().is_some();
        if fdp {
            // Each handle's pages in LPN order through its own stream (a stable sort by
            // handle), so that they are VPPN-contiguous within their reclaim unit.
            radix::sort_by_u32_key(&mut self.batch, &mut self.batch_scratch, |e| e.2 as u32);
        }
        let mut placed = std::mem::take(&mut self.placed);
        placed.clear();
        for i in 0..self.batch.len() {
            // The LPNs are scattered: hint each one's entry, then the page it replaces.
            if let Some(&(ahead, _, _)) = self.batch.get(i + 2 * PREFETCH_AHEAD) {
                crate::host::prefetch(&self.map.l2p[ahead as usize]);
            }
            if let Some(&(ahead, _, _)) = self.batch.get(i + PREFETCH_AHEAD) {
                match self.map.l2p[ahead as usize] {
                    UNMAPPED => {}
                    old => dev.prefetch_invalidate(Ppa(old)),
                }
            }
            let (lpn, stamp, h) = self.batch[i];
            let (stream, _) = self.alloc.host_stream(dev, h as u16);
            let ppa = gc::alloc_page(
                dev,
                &mut self.alloc,
                stream,
                t,
                &mut self.map,
                &mut self.stats,
            )?;
            let done = dev.program(ppa, Oob::data(Lpn(lpn), stamp), Src::Host, Cause::User, t)?;
            dev.place(ppa, Unit::Host, h);
            self.buf.freed(done);
            self.buf.durable_at = self.buf.durable_at.max(done);
            self.map.set_truth(dev, lpn, ppa.0)?;
            placed.push((lpn, ppa));
        }
        self.map.c.flushes += 1;
        self.map.c.flushed_pages += self.batch.len() as u64;
        self.batch.clear();
        if fdp {
            // Groups are learned in LPN order (a batch's LPNs are distinct).
            placed.sort_unstable_by_key(|e| e.0);
        }
        let mut at = 0;
        for chunk in placed.chunk_by(|a, b| Mapping::group(a.0) == Mapping::group(b.0)) {
            self.map.prefetch_ahead(dev, &placed, at);
            at += chunk.len();
            let g = Mapping::group(chunk[0].0);
            self.map.load(dev, g, Cause::TransRead, t)?;
            self.map.learn_group(g, chunk);
            self.map.cache.mark_dirty(g);
            self.enforce_budget(dev, t)?;
        }
        self.placed = placed;
        if self.writes_since_compaction >= self.params.compaction_interval {
            self.writes_since_compaction = 0;
            self.compact_cached();
            self.enforce_budget(dev, t)?;
        }
        Ok(())
    }

    /// Periodic compaction of every group in DRAM (groups on flash are left as they are: their
    /// compaction would cost TP reads the paper does not account for).
    ///
    /// Only groups whose table changed since their last compaction are visited: compaction is
    /// idempotent (debug builds check it on the others), so it would change nothing there.
    /// Compacting every cached group each time made the work per interval grow with the cache,
    /// and so with the device: 10x the time for 4x the capacity at 1–4 TiB. They are visited
    /// in group order, found from the `changed` bits rather than by walking the LRU list (a
    /// miss per cached group on a large device), with each group's table hinted a few groups
    /// ahead. The order does not matter: each group's compaction touches only its own state,
    /// and the dirty queue answers by recency, not by the order groups turned dirty.
    fn compact_cached(&mut self) {
        self.map.c.compactions += 1;
        let mut todo = std::mem::take(&mut self.todo);
        todo.clear();
        let map = &self.map;
        todo.extend(
            map.changed
                .ones()
                .map(|g| g as u32)
                .filter(|&g| map.cache.contains(g)),
        );
        #[cfg(debug_assertions)]
        for g in self.map.cache.iter() {
            let t = &self.map.groups[g as usize];
            debug_assert!(self.map.changed.get(g as usize) || !t.clone().compact());
        }
        for (i, &g) in todo.iter().enumerate() {
            // The table's header, then its level lists, then its top level.
            if let Some(&ahead) = todo.get(i + 2 * PREFETCH_AHEAD) {
                crate::host::prefetch(&self.map.groups[ahead as usize]);
            }
            for (top, lead) in [(false, PREFETCH_AHEAD), (true, PREFETCH_AHEAD / 2)] {
                if let Some(&ahead) = todo.get(i + lead) {
                    self.map.groups[ahead as usize].prefetch(top);
                }
            }
            // Interior CRB offsets can go without any segment changing its range.
            if self.map.groups[g as usize].compact() {
                self.map.cache.mark_dirty(g);
                self.map.refresh(g);
            }
            self.map.changed.set(g as usize, false);
        }
        self.todo = todo;
    }

    fn read(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        let mut done = t;
        for lpn in req.lpns() {
            if let Some(stamp) = self.buf.stamp(lpn.0) {
                self.map.c.buffer_read_hits += 1;
                self.stats.lookup(0);
                sink.deliver(dev, lpn, Served::Buffer { stamp });
                continue;
            }
            let g = Mapping::group(lpn.0);
            let (ready, missed) = self.map.load(dev, g, Cause::TransRead, t)?;
            let (seg, levels) = self.map.groups[g as usize].lookup((lpn.0 % GROUP_LPNS) as u8);
            self.map.c.lookup_levels[levels.clamp(1, LEVEL_BUCKETS) - 1] += 1;
            let tp_reads = missed as usize;
            match seg {
                None => {
                    if self.map.l2p[lpn.idx()] != UNMAPPED {
                        return Err(FtlError::Invariant(format!(
                            "LeaFTL: no segment encodes mapped {lpn:?}"
                        )));
                    }
                    self.stats.lookup(tp_reads);
                    sink.deliver(dev, lpn, Served::Unmapped);
                    done = done.max(ready);
                }
                Some(seg) => {
                    let (ppa, oob, d, reads) = self.map.read_predicted(dev, lpn.0, &seg, ready)?;
                    if !missed {
                        if seg.is_accurate() {
                            self.stats.model_hits += 1;
                        } else {
                            self.stats.cmt_hits += 1;
                        }
                    }
                    self.stats.lookup(tp_reads + reads);
                    sink.deliver(dev, lpn, Served::Flash { ppa, oob });
                    done = done.max(d);
                }
            }
            self.enforce_budget(dev, t)?;
        }
        Ok(done)
    }

    fn write(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        let mut done = req.arrival;
        // The handle is checked (and an invalid placement ID counted) as the write arrives.
        let (_, h) = self.alloc.host_stream(dev, req.placement);
        for lpn in req.lpns() {
            let at = self.buf.admit(lpn.0, req.stamp, h, req.arrival);
            self.writes_since_compaction += 1;
            done = done.max(at);
            if self.buf.is_full() {
                self.flush(dev, at)?;
            }
        }
        Ok(done)
    }

    fn trim(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        // Durable before the mapping changes (docs/power.md).
        let mut done = persist_trim(
            dev,
            &mut self.alloc,
            Stream::DATA,
            &mut self.map,
            &mut self.stats,
            req,
        )?;
        let mut lpns = req.lpns().map(|l| l.0).peekable();
        while let Some(first) = lpns.next() {
            let g = Mapping::group(first);
            let mut gone = Offsets::default();
            let mut lpn = Some(first);
            while let Some(l) = lpn {
                self.buf.remove(l, t);
                if self.map.l2p[l as usize] != UNMAPPED {
                    self.map.set_truth(dev, l, UNMAPPED)?;
                    gone.insert((l % GROUP_LPNS) as u8);
                }
                lpn = lpns.next_if(|&n| Mapping::group(n) == g);
            }
            if gone.is_empty() {
                continue;
            }
            let (ready, _) = self.map.load(dev, g, Cause::TransRead, t)?;
            done = done.max(ready);
            self.map.groups[g as usize].remove(&gone);
            self.map.cache.mark_dirty(g);
            self.map.refresh(g);
            self.enforce_budget(dev, t)?;
        }
        Ok(done)
    }
}

impl Ftl for Leaftl {
    fn name(&self) -> &'static str {
        "leaftl"
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        // A read first asks the write buffer (hinted again when next: a hint a round of jobs
        // ahead is still cached then, but its page translation may not be), then loads the
        // LPN's group: the flush's stages of the same hint, the header when the request comes
        // later, what it points at when it comes next, and the cache links a use rewrites.
        self.buf.index.prefetch(lpn.0);
        // A write reaches only the buffer: the flush that programs it, thousands of requests
        // later, hints its entry, the page it replaces and its group itself.
        if op == Op::Write {
            return;
        }
        let g = Mapping::group(lpn.0);
        if (g as usize) < self.map.groups.len() {
            match when {
                Upcoming::Later => self.map.prefetch_group(dev, g, 2),
                Upcoming::Next => {
                    self.map.prefetch_group(dev, g, 1);
                    self.map.cache.prefetch_neighbours(g);
                }
            }
        }
        prefetch_page_map(dev, &self.map.l2p, UNMAPPED, op, lpn, when);
    }

    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        match req.op {
            Op::Read => self.read(dev, req, sink),
            Op::Write => self.write(dev, req),
            Op::Trim => self.trim(dev, req),
            Op::Flush => {
                self.flush(dev, req.arrival)?;
                Ok(req.arrival.max(self.buf.durable_at))
            }
        }
    }

    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        gc::background(dev, &mut self.alloc, now, &mut self.map, &mut self.stats)?;
        self.enforce_budget(dev, now)
    }

    fn unflushed(&self, dev: &Device, out: &mut Vec<Unflushed>) {
        out.extend(self.pending(dev).map(|(lpn, acked, h)| Unflushed {
            lpn: Lpn(lpn),
            durable: self.map.flash_stamp(dev, lpn),
            acked,
            placement: h as u16,
        }));
    }

    /// Programs every pending buffered page through the data write pointer, unsorted and
    /// unlearned: recovery rebuilds the segments from the pages' OOB.
    fn flush_on_power_loss(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        let pending: Vec<Entry> = self.pending(dev).collect();
        for (lpn, stamp, h) in pending {
            let (stream, _) = self.alloc.host_stream(dev, h as u16);
            let ppa = gc::alloc_page(
                dev,
                &mut self.alloc,
                stream,
                now,
                &mut self.map,
                &mut self.stats,
            )?;
            dev.program(ppa, Oob::data(Lpn(lpn), stamp), Src::Host, Cause::User, now)?;
            dev.place(ppa, Unit::Host, h);
            self.map.set_truth(dev, lpn, ppa.0)?;
        }
        Ok(())
    }

    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        // The write buffer first (its flush learns segments and dirties groups), then
        // background GC, then the dirty groups' TPs.
        if !self.buf.entries.is_empty() {
            self.flush(dev, now)?;
            return Ok(Some(self.buf.durable_at.max(now)));
        }
        if let Some(done) =
            gc::background_one(dev, &mut self.alloc, now, &mut self.map, &mut self.stats)?
        {
            self.enforce_budget(dev, now)?;
            return Ok(Some(done));
        }
        let Some(g) = self.map.cache.first_dirty() else {
            return Ok(None);
        };
        self.write_back_group(dev, g, now, false).map(Some)
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.map.c = Counters::default();
    }

    fn dram(&self) -> DramUsage {
        let (mut segs, mut crb) = (0, 0);
        for g in self.map.cache.iter() {
            let t = &self.map.groups[g as usize];
            segs += t.segments() as u64 * SEGMENT_BYTES;
            crb += t.crb_bytes();
        }
        DramUsage {
            parts: vec![
                ("segments", segs),
                ("crb", crb),
                ("gtd", self.map.gtd.dram_bytes()),
            ],
            budget: Some(self.params.budget.total),
        }
    }

    fn dram_total(&self) -> u64 {
        self.map.cache.total() + self.map.gtd.dram_bytes()
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.params).unwrap_or_default()
    }

    fn extra_counters(&self) -> serde_json::Value {
        let m = &self.map;
        let (mut segs, mut approx, mut crb, mut max_levels) = (0u64, 0u64, 0u64, 0usize);
        for t in &m.groups {
            segs += t.segments() as u64;
            approx += t.approximate_segments() as u64;
            crb += t.crb_bytes();
            max_levels = max_levels.max(t.levels().len());
        }
        let lookups: u64 = m.c.lookup_levels.iter().sum();
        let weighted: u64 = (1..).zip(m.c.lookup_levels).map(|(n, c)| n * c).sum();
        let mapped = m.l2p.iter().filter(|&&p| p != UNMAPPED).count() as u64;
        let full = m.geo.logical_pages * 8;
        serde_json::json!({
            "segments": segs,
            "accurate_segments": segs - approx,
            "approximate_segments": approx,
            "crb_bytes": crb,
            "table_bytes": m.total_bytes,
            "mapped_lpns": mapped,
            "full_page_map_bytes": full,
            "reduction_vs_page_map": if m.total_bytes > 0 { full as f64 / m.total_bytes as f64 } else { 0.0 },
            "cached_groups": m.cache.len(),
            "cached_bytes": m.cache.total(),
            "max_levels": max_levels,
            "lookup_levels": m.c.lookup_levels,
            "mean_levels_per_lookup": if lookups > 0 { weighted as f64 / lookups as f64 } else { 0.0 },
            "counters": m.c,
        })
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        let m = &self.map;
        let tps = m.gtd.check(dev)?;
        let map = m
            .l2p
            .iter()
            .enumerate()
            .map(|(i, &p)| (Lpn(i as u32), (p != UNMAPPED).then_some(Ppa(p))));
        check_page_map(dev, map, tps + dev.valid_records())?;
        let mut total = 0;
        for (g, t) in m.groups.iter().enumerate() {
            t.check().map_err(|e| format!("group {g}: {e}"))?;
            if t.bytes() != m.bytes[g] as u64 {
                return Err(format!(
                    "group {g}: {} B recorded as {}",
                    t.bytes(),
                    m.bytes[g]
                ));
            }
            total += t.bytes();
            let base = g as u32 * GROUP_LPNS;
            let end = (base + GROUP_LPNS).min(m.l2p.len() as u32);
            for lpn in base..end {
                let truth = m.l2p[lpn as usize];
                let (seg, _) = t.lookup((lpn - base) as u8);
                match (seg, truth) {
                    (None, UNMAPPED) => {}
                    (Some(s), UNMAPPED) => {
                        return Err(format!("unmapped LPN {lpn} is encoded by {s:?}"))
                    }
                    (None, _) => return Err(format!("no segment encodes mapped LPN {lpn}")),
                    (Some(s), p) => {
                        let v = m.geo.ppa_to_vppn(Ppa(p)).0 as i64;
                        let err = (s.predict((lpn - base) as u8) - v).unsigned_abs();
                        let bound = if s.is_accurate() { 0 } else { m.gamma as u64 };
                        if err > bound {
                            return Err(format!(
                                "LPN {lpn}: {s:?} predicts {} for VPPN {v} (γ = {})",
                                s.predict((lpn - base) as u8),
                                m.gamma
                            ));
                        }
                    }
                }
            }
        }
        if total != m.total_bytes {
            return Err(format!("table bytes {total}, recorded {}", m.total_bytes));
        }
        m.cache.check(|g| m.groups[g as usize].bytes())?;
        if m.cache.total() > self.params.budget.cache {
            return Err(format!(
                "cache holds {} B over its budget of {} B",
                m.cache.total(),
                self.params.budget.cache
            ));
        }
        let b = &self.buf;
        if b.entries.len() + b.free_slots() != b.capacity as usize {
            return Err(format!(
                "write buffer: {} entries + {} free slots != {}",
                b.entries.len(),
                b.free_slots(),
                b.capacity
            ));
        }
        if !b.free_at.iter().is_sorted() {
            return Err("write buffer: free slots out of order".into());
        }
        for (i, &(lpn, _, _)) in b.entries.iter().enumerate() {
            if b.slot(lpn) != i as u32 {
                return Err(format!("write buffer: LPN {lpn} not indexed at slot {i}"));
            }
        }
        let indexed = b.index.len();
        if indexed != b.entries.len() {
            return Err(format!(
                "write buffer: {indexed} LPNs indexed, {} buffered",
                b.entries.len()
            ));
        }
        Ok(())
    }
}

super::registered!(Leaftl, "leaftl");

#[cfg(test)]
mod tests;
