//! blockmap: the classic block-mapping FTL, the scheme the seed deck's hybrid FTLs (FAST, SPEC
//! §5.8) start from, and the reference for per-block allocation and its recovery
//! (`mapping::blocks`, docs/power.md). See `docs/ftls/blockmap.md` for every choice.
//!
//! * **Mapping.** Logical block `lbn = lpn / pages_per_block` maps to one physical block, an
//!   erase block of one LUN plane (DRAM: one entry per logical block, charged 8 B as SPEC §5.0
//!   charges mapping entries); page `lpn % pages_per_block` of the logical block lives at that
//!   page offset of its block, and holds data when that page is valid (the per-block valid
//!   bitmap of SPEC §3.4). A read is one flash read, or none for an unmapped page.
//! * **Writes in place.** A request's pages in one logical block form one run of offsets
//!   `k0..k1`, served together. A logical block with no block gets a free one; a run at or above
//!   its block's write pointer is programmed there in place, after padding pages at the offsets
//!   between the write pointer and `k0` (NAND programs a block's pages in order, SPEC §3.4: an
//!   offset skipped now could never be programmed).
//! * **Merges.** Any other run (an overwrite, or an offset below the write pointer) rebuilds the
//!   logical block in a free block: the run's new data and every other valid page copied to its
//!   offset, in offset order, with a padding page at each offset below the last one that has no
//!   data; then the old block, left without a valid page, is erased at once and returns to the
//!   pool. One merge per run, however many pages the run has. There is no GC: each merge frees
//!   the block it replaces.
//! * **Trims** rewrite the logical block without the trimmed pages (a merge with no new data;
//!   an erase alone when no page is left); trimming pages that hold no data costs nothing. The
//!   trim is durable once the old block is erased: no other copy of a page exists.
//! * **Free blocks** come from the shared per-plane pool ([`BlockPool`]): a block is taken from
//!   the next LUN plane in stripe order (channel fastest) that has one (`place=rotate`, so
//!   blocks taken one after another work in parallel), or for a merge from its old block's
//!   plane (`place=plane`, as copyback would need). Physical blocks = logical blocks + spare
//!   blocks; at rest every mapped logical block holds exactly one block and the rest are free.
//!
//! A merge holds up the run that needs it: copies are read at the request's arrival and
//! programmed when each read completes, new data is programmed at the arrival (after the
//! block's earlier pages: the device orders a block's programs), and the old block's erase is
//! issued with them (after its reads). A write completes with its last program (the erase
//! only frees a block; its LUN still pays for it), a trim with the erase (what makes it
//! durable). Copies, padding and erases carry cause `gc_data`, host data `user`. No background
//! or idle work.
//!
//! Persistence (docs/power.md): nothing but the pages — each page's OOB holds its LPN and write
//! stamp (padding: stamp 0, never a version). Recovery (`recovery.rs`) orders copies by block
//! sequence number and offset, keeps per logical block the block holding every newest version
//! (completing or rebuilding it after a merge the cut interrupted) and erases the rest.

use super::{read_from_dram_map, DramUsage, Ftl, ReadSink};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Cause, Device, Oob, Src};
use crate::error::{ConfigError, FtlError};
use crate::mapping::{blocks, check_page_map, BlockPool, FtlStats};
use crate::params::Params;
use crate::request::{Op, Request, Upcoming};
use serde::Serialize;

mod recovery;

/// No block.
const NONE: u32 = u32::MAX;
/// DRAM of a block-map entry (SPEC §5.0 charges mapping entries 8 B).
const ENTRY_BYTES: u64 = 8;
/// Spare blocks needed: one for a merge's destination, one more for recovery to rebuild the
/// logical block a merge left split between two blocks (its destination is not free then).
const MIN_SPARE: u32 = 2;

crate::params::keys! {
    /// blockmap's own key ([`Blockmap::new`]).
    pub static BLOCKMAP_KEYS = "blockmap", "the block-mapping FTL's block placement";
    PLACE = "place" ["rotate|plane"] "where a new block is taken: the next LUN plane in stripe order (channel fastest) with a free block, or for a merge its old block's plane (then in turn if that plane has none)";
}

/// Where new blocks are taken ([`PLACE`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Place {
    /// The next LUN plane in stripe order with a free block.
    Rotate,
    /// A merge's old block's plane if it has a free block (copies stay on one plane).
    Plane,
}

impl Place {
    fn key(self) -> &'static str {
        match self {
            Place::Rotate => "rotate",
            Place::Plane => "plane",
        }
    }
}

/// Counters (`ftl_counters` in the report; docs/ftls/blockmap.md).
#[derive(Clone, Debug, Default, Serialize)]
struct Counters {
    /// Host pages programmed in place: at or above their block's write pointer (a logical
    /// block's first block included).
    in_place_pages: u64,
    /// Host pages written by merges.
    merged_pages: u64,
    /// Merges a write needed.
    write_merges: u64,
    /// Merges a trim needed (the logical block rewritten without the trimmed pages).
    trim_merges: u64,
    /// Logical blocks a trim left without data: erased, no block taken.
    trim_erases: u64,
    /// Pages merges copied.
    merge_copies: u64,
    /// Padding pages programmed (below a run in place, or in a merged block).
    pad_pages: u64,
}

/// The block-mapping FTL.
#[derive(Clone)]
pub struct Blockmap {
    ppb: u32,
    /// Logical pages.
    lp: u32,
    /// Physical blocks less logical blocks.
    spare: u32,
    /// Logical block → its block (`NONE`: no data).
    map: Vec<u32>,
    /// Erased blocks per LUN plane.
    pool: BlockPool,
    place: Place,
    stats: FtlStats,
    counters: Counters,
}

impl Blockmap {
    /// Builds the FTL; parameter `place` (`rotate`, the default, or `plane`).
    pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<Self, ConfigError> {
        super::refuse_fdp(
            dev,
            "blockmap",
            "a page lives at its LPN's offset in the physical block its logical block maps to",
        )?;
        let geo = &dev.geometry;
        let place = match params.take_str_or(&PLACE, Place::Rotate.key()).as_str() {
            "rotate" => Place::Rotate,
            "plane" => Place::Plane,
            o => {
                return Err(ConfigError::invalid(
                    "place",
                    format!("'{o}' is not rotate or plane"),
                ))
            }
        };
        let ppb = geo.pages_per_block;
        let lbns = geo.logical_pages.div_ceil(ppb as u64);
        let spare = (geo.blocks() as u64).saturating_sub(lbns);
        if spare < MIN_SPARE as u64 {
            return Err(ConfigError::invalid(
                "logical_pages",
                format!(
                    "{} logical pages make {lbns} logical blocks of {ppb} pages for {} blocks; \
                     blockmap needs {MIN_SPARE} spare blocks",
                    geo.logical_pages,
                    geo.blocks()
                ),
            ));
        }
        Ok(Blockmap {
            ppb,
            lp: geo.logical_pages as u32,
            spare: spare as u32,
            map: vec![NONE; lbns as usize],
            pool: BlockPool::new(geo),
            place,
            stats: FtlStats::default(),
            counters: Counters::default(),
        })
    }

    /// Page `off` of block `block`.
    #[inline]
    fn ppa(&self, block: u32, off: u32) -> Ppa {
        Ppa(block * self.ppb + off)
    }

    /// Where `lpn`'s data is, if it has any.
    #[inline]
    fn lookup(&self, dev: &Device, lpn: Lpn) -> Option<Ppa> {
        let b = self.map[(lpn.0 / self.ppb) as usize];
        if b == NONE {
            return None;
        }
        let p = self.ppa(b, lpn.0 % self.ppb);
        dev.is_valid(p).then_some(p)
    }

    /// The runs of a write or trim request: `(logical block, first offset, end offset)` of the
    /// pages it touches in each logical block.
    fn runs(&self, req: &Request) -> impl Iterator<Item = (u32, u32, u32)> {
        let ppb = self.ppb;
        let (first, end) = (req.lpn.0, req.lpn.0 + req.pages);
        let lbns = if req.pages == 0 {
            0..0
        } else {
            first / ppb..(end - 1) / ppb + 1
        };
        lbns.map(move |lbn| {
            let base = lbn * ppb;
            (lbn, first.max(base) - base, end.min(base + ppb) - base)
        })
    }

    /// A free block for a new block of a logical block whose block is `old`, if any.
    fn take(&mut self, old: Option<u32>) -> Result<u32, FtlError> {
        if let (Place::Plane, Some(old)) = (self.place, old) {
            if let Some(b) = self.pool.take(self.pool.unit_of(old)) {
                return Ok(b);
            }
        }
        self.pool.take_next().ok_or(FtlError::NoSpace)
    }

    /// Writes offsets `k0..k1` of logical block `lbn` (write stamp `stamp`) at `t`: in place
    /// when the run is at or above its block's write pointer (or the logical block has no
    /// block), else by a merge. Returns the completion.
    fn write_run(
        &mut self,
        dev: &mut Device,
        lbn: u32,
        (k0, k1): (u32, u32),
        stamp: u32,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let old = self.map[lbn as usize];
        if old == NONE {
            let b = self.take(None)?;
            self.map[lbn as usize] = b;
            return self.in_place(dev, lbn, b, 0, (k0, k1), stamp, t);
        }
        let wp = dev.block_written(old);
        if k0 >= wp {
            return self.in_place(dev, lbn, old, wp, (k0, k1), stamp, t);
        }
        // The run is durable once programmed: the old block's erase only frees it (a cut
        // before the erase leaves the destination holding every newest version, which
        // recovery keeps), so the write does not wait for it; its LUN does.
        Ok(self.merge(dev, lbn, old, (k0, k1), Some(stamp), t)?.0)
    }

    /// Programs offsets `k0..k1` of logical block `lbn` into its block `block`, whose write
    /// pointer is `wp <= k0`, after padding `wp..k0`. Returns the completion.
    #[allow(clippy::too_many_arguments)]
    fn in_place(
        &mut self,
        dev: &mut Device,
        lbn: u32,
        block: u32,
        wp: u32,
        (k0, k1): (u32, u32),
        stamp: u32,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let base = lbn * self.ppb;
        let mut done = t;
        for off in wp..k0 {
            let d = blocks::pad(dev, Lpn(base + off), self.ppa(block, off), Cause::GcData, t)?;
            done = done.max(d);
        }
        for off in k0..k1 {
            let oob = Oob::data(Lpn(base + off), stamp);
            let d = dev.program(self.ppa(block, off), oob, Src::Host, Cause::User, t)?;
            done = done.max(d);
        }
        self.counters.pad_pages += (k0 - wp) as u64;
        self.counters.in_place_pages += (k1 - k0) as u64;
        Ok(done)
    }

    /// Merges logical block `lbn`, in block `old`, into a free block at `t`: offsets `k0..k1`
    /// get new data of stamp `stamp` (a write) or are dropped (`None`: a trim); every other
    /// valid page is copied to its offset; offsets below the last one with data and without
    /// any get padding. Then `old` is erased. A trim that leaves no page erases `old` and
    /// unmaps the logical block. Returns when the last program and when the erase complete.
    fn merge(
        &mut self,
        dev: &mut Device,
        lbn: u32,
        old: u32,
        (k0, k1): (u32, u32),
        stamp: Option<u32>,
        t: SimTime,
    ) -> Result<(SimTime, SimTime), FtlError> {
        let base = lbn * self.ppb;
        let wp = dev.block_written(old);
        // The run's old versions are superseded (or trimmed).
        for off in k0..k1.min(wp) {
            let p = self.ppa(old, off);
            if dev.is_valid(p) {
                dev.invalidate(p)?;
            }
        }
        let last_kept = (0..wp).rev().find(|&o| dev.is_valid(self.ppa(old, o)));
        let end = last_kept.map_or(0, |o| o + 1);
        let end = if stamp.is_some() { end.max(k1) } else { end };
        if end == 0 {
            self.map[lbn as usize] = NONE;
            self.counters.trim_erases += 1;
            return Ok((t, self.pool.erase(dev, old, Cause::GcData, t)?));
        }
        let new = self.take(Some(old))?;
        let (mut done, mut copies, mut pads) = (t, 0, 0);
        for off in 0..end {
            let (src, dst, lpn) = (self.ppa(old, off), self.ppa(new, off), Lpn(base + off));
            let d = match stamp {
                Some(s) if (k0..k1).contains(&off) => {
                    dev.program(dst, Oob::data(lpn, s), Src::Host, Cause::User, t)?
                }
                _ if off < wp && dev.is_valid(src) => {
                    copies += 1;
                    let d = blocks::copy(dev, src, dst, Cause::GcData, t)?;
                    dev.invalidate(src)?;
                    d
                }
                _ => {
                    pads += 1;
                    blocks::pad(dev, lpn, dst, Cause::GcData, t)?
                }
            };
            done = done.max(d);
        }
        let erased = self.pool.erase(dev, old, Cause::GcData, t)?;
        self.map[lbn as usize] = new;
        self.stats.gc_events += 1;
        self.stats.gc_pages_moved += copies;
        let c = &mut self.counters;
        c.merge_copies += copies;
        c.pad_pages += pads;
        match stamp {
            Some(_) => {
                c.write_merges += 1;
                c.merged_pages += (k1 - k0) as u64;
            }
            None => c.trim_merges += 1,
        }
        Ok((done, erased))
    }

    /// Trims offsets `k0..k1` of logical block `lbn` at `t`: a merge without them if one holds
    /// data, else nothing. Returns the completion (`t` when nothing was done).
    fn trim_run(
        &mut self,
        dev: &mut Device,
        lbn: u32,
        (k0, k1): (u32, u32),
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let old = self.map[lbn as usize];
        if old == NONE {
            return Ok(t);
        }
        let wp = dev.block_written(old);
        if !(k0..k1.min(wp)).any(|o| dev.is_valid(self.ppa(old, o))) {
            return Ok(t);
        }
        // The trim is durable only once the old block, holding the trimmed pages, is erased.
        let (programmed, erased) = self.merge(dev, lbn, old, (k0, k1), None, t)?;
        Ok(programmed.max(erased))
    }

    /// Checks the blocks: every mapped block is mapped once, is not free, holds a valid page,
    /// and every page it holds names the LPN of its offset (or is torn); every other block is
    /// in the pool, erased.
    fn check_blocks(&self, dev: &Device) -> Result<(), String> {
        let blocks = dev.geo().blocks() as usize;
        let mut owner = vec![NONE; blocks];
        for (lbn, &b) in self.map.iter().enumerate() {
            if b == NONE {
                continue;
            }
            if owner[b as usize] != NONE {
                return Err(format!(
                    "block {b} mapped by logical blocks {} and {lbn}",
                    owner[b as usize]
                ));
            }
            owner[b as usize] = lbn as u32;
            if dev.block_valid(b) == 0 {
                return Err(format!(
                    "logical block {lbn}'s block {b} holds no valid page"
                ));
            }
            for off in 0..dev.block_written(b) {
                let oob = dev.peek_oob(self.ppa(b, off)).unwrap_or_default();
                let want = Lpn(lbn as u32 * self.ppb + off);
                if !oob.is_torn() && oob.lpn() != Some(want) {
                    return Err(format!(
                        "logical block {lbn}'s block {b} holds {oob:?} at offset {off}"
                    ));
                }
            }
        }
        self.pool.check(dev)?;
        if let Some(b) = self.pool.free_blocks().find(|&b| owner[b as usize] != NONE) {
            return Err(format!("block {b} is mapped and free"));
        }
        let mapped = owner.iter().filter(|&&o| o != NONE).count();
        if mapped + self.pool.free() != blocks {
            return Err(format!(
                "{mapped} mapped and {} free blocks of {blocks}",
                self.pool.free()
            ));
        }
        Ok(())
    }
}

impl Ftl for Blockmap {
    fn name(&self) -> &'static str {
        "blockmap"
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        let Some(e) = self.map.get((lpn.0 / self.ppb) as usize) else {
            return;
        };
        match when {
            Upcoming::Later => crate::host::prefetch(e),
            Upcoming::Next if *e != NONE && op == Op::Read => {
                dev.prefetch_read(self.ppa(*e, lpn.0 % self.ppb));
            }
            Upcoming::Next => {}
        }
    }

    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        let mut done = t;
        match req.op {
            Op::Read => {
                for lpn in req.lpns() {
                    let ppa = self.lookup(dev, lpn);
                    done = done.max(read_from_dram_map(dev, &mut self.stats, sink, lpn, ppa, t)?);
                }
            }
            Op::Write => {
                for (lbn, k0, k1) in self.runs(req) {
                    done = done.max(self.write_run(dev, lbn, (k0, k1), req.stamp, t)?);
                }
            }
            Op::Trim => {
                for (lbn, k0, k1) in self.runs(req) {
                    done = done.max(self.trim_run(dev, lbn, (k0, k1), t)?);
                }
            }
            Op::Flush => {}
        }
        Ok(done)
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.counters = Counters::default();
    }

    fn dram(&self) -> DramUsage {
        DramUsage {
            parts: vec![("block_map", self.dram_total())],
            budget: None,
        }
    }

    fn dram_total(&self) -> u64 {
        self.map.len() as u64 * ENTRY_BYTES
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "place": self.place.key(),
            "logical_blocks": self.map.len(),
            "spare_blocks": self.spare,
            "units": self.pool.units(),
            "pages_per_block": self.ppb,
        })
    }

    fn extra_counters(&self) -> serde_json::Value {
        serde_json::to_value(&self.counters).unwrap_or_default()
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        let map = (0..self.lp).map(|l| (Lpn(l), self.lookup(dev, Lpn(l))));
        check_page_map(dev, map, 0)?;
        self.check_blocks(dev)
    }
}

super::registered!(Blockmap, "blockmap");

#[cfg(test)]
mod tests;
