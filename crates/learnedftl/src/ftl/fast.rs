//! FAST (Lee et al., "A log buffer-based flash translation layer using fully-associative sector
//! translation", ACM TECS 2007; SPEC §5.8, the lecture deck): a hybrid log-block FTL.
//!
//! * **Units.** A *unit* is one plane of one LUN; FAST runs in every unit independently, over
//!   erase blocks of that unit. Logical pages are striped over the units page by page, in the
//!   device's VPPN order (channel fastest), so that consecutive LPNs land on different LUNs as
//!   they do under the page-level FTLs' striped write pointers: every request size gets the same
//!   parallelism as theirs. Within a unit, the unit's LPNs in order form its *logical blocks* of
//!   `pages_per_block` pages each.
//! * **Data blocks** are block-mapped (DRAM: one entry per logical block): page offset `k` of a
//!   logical block lives at page `k` of its data block, or in a log block.
//! * **Sequential log block** (one per unit): a write to offset 0 of a logical block opens it;
//!   writes continuing at the next offset append. Full, it replaces the data block (**switch
//!   merge**: no copy). Needed by another logical block (or offset 0 again) before it is full,
//!   it is completed from the latest versions of its remaining offsets and replaces the data
//!   block (**partial merge**).
//! * **Random log blocks**: every other write appends to the unit's active random log block;
//!   the pool of `log_blocks` blocks is shared by all the unit's data blocks (fully
//!   associative) and page-mapped (DRAM: one entry per log page). When the pool is full, the
//!   oldest log block is reclaimed (FIFO, as FAST does): every logical block with a valid page
//!   in it is rebuilt into a fresh block from its latest versions, the old data block (and the
//!   sequential log block, if it holds that logical block) erased, then the victim erased
//!   (**full merge**).
//! * **Trims** unmap at once and are logged like updates: a trim record in the random log of
//!   every unit the trim touches, applied by the full merge that reclaims its log block (the
//!   logical blocks still holding a page it trimmed are merged too) and erased with it.
//!
//! A merge holds up the write that needs it: the write's program is issued when the merge's
//! last operation completes. Copies read each page and program it when the read completes;
//! erases are issued with the merge. A merged block is programmed in page order, so an offset
//! with no data below the last one that has data is filled with a padding page, invalidated at
//! once (counted as `pad_pages`; none on a device written in full). Reads are single reads (both
//! maps are in DRAM). No background or idle work: FAST merges only when a write needs room. See
//! `docs/ftls/fast.md` for every choice.

use super::{read_from_dram_map, DramUsage, Ftl, ReadSink};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::{DeviceConfig, Geometry};
use crate::device::{Cause, Device, Oob, Src, TrimRecord};
use crate::error::{ConfigError, FtlError};
use crate::mapping::{blocks, check_page_map, prefetch_page_map, BlockPool, FtlStats};
use crate::params::Params;
use crate::request::{Op, Request, Upcoming};
use serde::Serialize;
use std::collections::VecDeque;

const NONE: u32 = u32::MAX;
/// DRAM of a block-map entry (a physical block number).
const BLOCK_ENTRY_BYTES: u64 = 4;
/// DRAM of a log page-map entry (LPN and PPN, as SPEC §5.0 charges mapping entries).
const LOG_ENTRY_BYTES: u64 = 8;
/// DRAM of a sequential log block's state (its logical block, physical block, next offset).
const SEQ_STATE_BYTES: u64 = 12;
/// Blocks of a unit that are never log blocks: one for a merge's destination, one so that a
/// new sequential log block can be opened while the random pool is full.
const MERGE_RESERVE: u32 = 2;

/// What a physical block holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Role {
    Free,
    /// The data block of this (global) logical block.
    Data(u32),
    /// The unit's sequential log block.
    Seq,
    /// A random log block of the unit's pool.
    Log,
}

/// The sequential log block of a unit.
#[derive(Copy, Clone, Debug)]
struct SeqLog {
    /// Global logical block it holds.
    lb: u32,
    /// Global physical block.
    block: u32,
    /// Next offset to write (offsets below are written).
    next: u32,
}

/// One unit's log blocks (its erased blocks are in the FTL's [`BlockPool`]).
#[derive(Clone, Debug, Default)]
struct Unit {
    /// Full random log blocks, oldest first.
    pool: VecDeque<u32>,
    /// The random log block being appended to, and its next page.
    active: Option<(u32, u32)>,
    seq: Option<SeqLog>,
}

/// Merge counters, by kind (the deck's comparison).
#[derive(Clone, Debug, Default, Serialize)]
struct MergeStats {
    switch_merges: u64,
    switch_erases: u64,
    partial_merges: u64,
    partial_copies: u64,
    partial_erases: u64,
    /// Random log blocks reclaimed by full merges.
    full_merges: u64,
    /// Logical blocks rebuilt by those full merges (the deck's "data blocks per full merge").
    full_merge_data_blocks: u64,
    /// Most logical blocks one full merge rebuilt.
    full_merge_max_data_blocks: u64,
    full_copies: u64,
    full_erases: u64,
    /// Random log blocks reclaimed with no valid page (erased, nothing merged).
    empty_log_erases: u64,
    /// Padding pages programmed into merged blocks below their last written offset.
    pad_pages: u64,
    /// Host page writes by where they went.
    seq_log_writes: u64,
    random_log_writes: u64,
}

/// The FAST FTL.
#[derive(Clone)]
pub struct Fast {
    geo: Geometry,
    /// Units (= blocks per line).
    units: u32,
    ppb: u32,
    /// Logical blocks per unit.
    lbs_per_unit: u32,
    /// Random log blocks per unit.
    log_blocks: u32,
    /// Erased blocks per unit, and the units' stripe order (LPN mod units → unit).
    free: BlockPool,
    /// LPN → PPA of its current version (the data block or a log block; what the block map and
    /// the log page map together say).
    loc: Vec<u32>,
    /// Global logical block → its data block.
    data: Vec<u32>,
    role: Vec<Role>,
    unit: Vec<Unit>,
    /// Logical blocks of the victim of a full merge (reused).
    scratch: Vec<u32>,
    stats: FtlStats,
    merges: MergeStats,
}

crate::params::keys! {
    /// FAST's own key ([`Fast::new`]).
    pub static FAST_KEYS = "fast", "FAST's log blocks";
    LOG_BLOCKS = "log_blocks" ["blocks per unit"] "random log blocks per unit (LUN plane): every spare block but the 2 merges need unless given";
}

impl Fast {
    /// Builds FAST; parameter `log_blocks` (random log blocks per unit; default: every spare
    /// block of a unit but the two merges need).
    pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<Fast, ConfigError> {
        super::refuse_fdp(
            dev,
            "fast",
            "a page goes to its logical block's data block or the shared log blocks, chosen by its \
             LPN (block mapping), and merges rebuild data blocks by LPN",
        )?;
        let geo = dev.geometry.clone();
        let units = geo.blocks_per_line();
        let ppb = geo.pages_per_block;
        let bpu = geo.blocks_per_plane;
        let lbs_per_unit = geo.logical_pages.div_ceil(units as u64 * ppb as u64) as u32;
        let spare = bpu.saturating_sub(lbs_per_unit);
        let max_log = spare.saturating_sub(MERGE_RESERVE);
        let log_blocks = params.take_or(&LOG_BLOCKS, max_log)?;
        if log_blocks == 0 || log_blocks > max_log {
            return Err(ConfigError::invalid(
                "log_blocks",
                format!(
                    "{log_blocks}: each LUN plane has {bpu} blocks for {lbs_per_unit} logical \
                     blocks, leaving {spare} spare, of which {MERGE_RESERVE} stay free for merges; \
                     need 1 to {max_log} (lower logical_ratio for more)"
                ),
            ));
        }
        // LPN mod units is a stripe position of the pool's order (channel fastest, then LUN,
        // then plane: VPPN order).
        let free = BlockPool::new(&geo);
        let unit = vec![Unit::default(); units as usize];
        Ok(Fast {
            units,
            ppb,
            lbs_per_unit,
            log_blocks,
            free,
            loc: vec![NONE; geo.logical_pages as usize],
            data: vec![NONE; (units * lbs_per_unit) as usize],
            role: vec![Role::Free; geo.blocks() as usize],
            unit,
            scratch: Vec::new(),
            stats: FtlStats::default(),
            merges: MergeStats::default(),
            geo,
        })
    }

    /// `(unit, global logical block, offset)` of an LPN.
    #[inline]
    fn place(&self, lpn: Lpn) -> (u32, u32, u32) {
        let (q, s) = (lpn.0 / self.units, lpn.0 % self.units);
        let u = self.free.unit_at(s);
        (u, u * self.lbs_per_unit + q / self.ppb, q % self.ppb)
    }

    /// The LPN at offset `off` of global logical block `lb`, if inside the logical space.
    #[inline]
    fn lpn_at(&self, lb: u32, off: u32) -> Option<Lpn> {
        let (u, i) = (lb / self.lbs_per_unit, lb % self.lbs_per_unit);
        let l = (i as u64 * self.ppb as u64 + off as u64) * self.units as u64
            + self.free.pos_of(u) as u64;
        (l < self.loc.len() as u64).then_some(Lpn(l as u32))
    }

    #[inline]
    fn ppa(&self, block: u32, page: u32) -> Ppa {
        Ppa(block * self.ppb + page)
    }

    fn take_free(&mut self, u: u32, role: Role) -> Result<u32, FtlError> {
        let b = self.free.take(u).ok_or(FtlError::NoSpace)?;
        self.role[b as usize] = role;
        Ok(b)
    }

    fn erase(&mut self, dev: &mut Device, block: u32, t: SimTime) -> Result<SimTime, FtlError> {
        let done = self.free.erase(dev, block, Cause::GcData, t)?;
        self.role[block as usize] = Role::Free;
        Ok(done)
    }

    /// Programs `lpn`'s current version (if any) into `block` at page `off` by a copy (read at
    /// `t`, program when read), or a padding page; returns when done and whether it copied.
    fn copy_into(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        block: u32,
        off: u32,
        t: SimTime,
    ) -> Result<(SimTime, bool), FtlError> {
        let dst = self.ppa(block, off);
        let cur = self.loc[lpn.idx()];
        if cur == NONE {
            let done = blocks::pad(dev, lpn, dst, Cause::GcData, t)?;
            self.merges.pad_pages += 1;
            return Ok((done, false));
        }
        let done = blocks::copy(dev, Ppa(cur), dst, Cause::GcData, t)?;
        dev.invalidate(Ppa(cur))?;
        self.loc[lpn.idx()] = dst.0;
        self.stats.gc_pages_moved += 1;
        Ok((done, true))
    }

    /// The last offset from `from` on of logical block `lb` that holds data.
    fn last_with_data(&self, lb: u32, from: u32) -> Option<u32> {
        (from..self.ppb).rev().find(|&o| {
            self.lpn_at(lb, o)
                .is_some_and(|l| self.loc[l.idx()] != NONE)
        })
    }

    /// Copies the latest versions of logical block `lb`'s offsets from `from` into `block`
    /// (whose next free page is `from`), up to its last offset holding data. Returns
    /// `(completion, copies)`.
    fn fill(
        &mut self,
        dev: &mut Device,
        lb: u32,
        block: u32,
        from: u32,
        t: SimTime,
    ) -> Result<(SimTime, u64), FtlError> {
        let (mut done, mut copies) = (t, 0);
        if let Some(last) = self.last_with_data(lb, from) {
            for off in from..=last {
                let lpn = self.lpn_at(lb, off).ok_or_else(|| {
                    FtlError::Invariant(format!("FAST: block {lb} offset {off} outside"))
                })?;
                let (d, copied) = self.copy_into(dev, lpn, block, off, t)?;
                done = done.max(d);
                copies += copied as u64;
            }
        }
        Ok((done, copies))
    }

    /// `block` now holds every current page of `lb` it will: it becomes the data block, the old
    /// one (now without valid pages) is erased. Returns `(completion, erases)`.
    fn install(
        &mut self,
        dev: &mut Device,
        lb: u32,
        block: u32,
        t: SimTime,
    ) -> Result<(SimTime, u64), FtlError> {
        let old = std::mem::replace(&mut self.data[lb as usize], block);
        self.role[block as usize] = Role::Data(lb);
        if old == NONE {
            return Ok((t, 0));
        }
        Ok((self.erase(dev, old, t)?, 1))
    }

    /// Retires unit `u`'s sequential log block: a switch merge when it is full, else a partial
    /// merge. Returns the completion.
    fn merge_seq(&mut self, dev: &mut Device, u: u32, t: SimTime) -> Result<SimTime, FtlError> {
        let Some(seq) = self.unit[u as usize].seq.take() else {
            return Ok(t);
        };
        self.stats.gc_events += 1;
        if seq.next == self.ppb {
            let (done, erases) = self.install(dev, seq.lb, seq.block, t)?;
            self.merges.switch_merges += 1;
            self.merges.switch_erases += erases;
            return Ok(done);
        }
        let (copied, copies) = self.fill(dev, seq.lb, seq.block, seq.next, t)?;
        let (erased, erases) = self.install(dev, seq.lb, seq.block, t)?;
        self.merges.partial_merges += 1;
        self.merges.partial_copies += copies;
        self.merges.partial_erases += erases;
        Ok(copied.max(erased))
    }

    /// Reclaims unit `u`'s oldest random log block by full merges: every logical block with a
    /// valid page in it, or with a page still on flash that a valid trim record in it trimmed,
    /// is merged; then the records, applied, die with the block. Returns the completion.
    fn merge_full(&mut self, dev: &mut Device, u: u32, t: SimTime) -> Result<SimTime, FtlError> {
        let victim = self.unit[u as usize]
            .pool
            .pop_front()
            .ok_or_else(|| FtlError::Invariant("FAST: full merge with an empty pool".into()))?;
        let mut lbs = std::mem::take(&mut self.scratch);
        lbs.clear();
        for pg in 0..dev.block_written(victim) {
            let p = self.ppa(victim, pg);
            if !dev.is_valid(p) {
                continue;
            }
            let oob = dev.peek_oob(p).unwrap_or_default();
            if oob.is_record() {
                let rec = dev.record(p).ok_or_else(|| {
                    FtlError::Invariant(format!("FAST: trim record at {p:?} without contents"))
                })?;
                lbs.extend(self.trimmed_on_flash(dev, u, rec, oob.stamp));
                dev.invalidate(p)?;
                continue;
            }
            let lpn = oob.lpn().ok_or_else(|| {
                FtlError::Invariant(format!("FAST: log page {p:?} without an LPN"))
            })?;
            lbs.push(self.place(lpn).1);
        }
        lbs.sort_unstable();
        lbs.dedup();
        let mut done = t;
        for &lb in &lbs {
            let (d, copies, erases) = self.merge_lb(dev, u, lb, t)?;
            done = done.max(d);
            self.merges.full_copies += copies;
            self.merges.full_erases += erases;
        }
        done = done.max(self.erase(dev, victim, t)?);
        if lbs.is_empty() {
            self.merges.empty_log_erases += 1;
        } else {
            self.stats.gc_events += 1;
            self.merges.full_merges += 1;
            self.merges.full_erases += 1;
            self.merges.full_merge_data_blocks += lbs.len() as u64;
            self.merges.full_merge_max_data_blocks =
                self.merges.full_merge_max_data_blocks.max(lbs.len() as u64);
        }
        self.scratch = lbs;
        Ok(done)
    }

    /// The logical blocks of unit `u` in which trim record `rec` (stamp `stamp`) still has
    /// work: an LPN of the unit it trimmed is unmapped and an older version of it is at its
    /// offset in the data block or the sequential log block. (A controller knows this from the
    /// log page map and the data block's page states; the simulator reads the OOB it holds, at
    /// no cost.) The unit's random log holds no such version once the record's block is the
    /// oldest: records are never moved, so every older log page was in that block or an older
    /// one.
    fn trimmed_on_flash<'a>(
        &'a self,
        dev: &'a Device,
        u: u32,
        rec: TrimRecord,
        stamp: u32,
    ) -> impl Iterator<Item = u32> + 'a {
        let (n, pos) = (self.units, self.free.pos_of(u));
        let first = rec.first.0 + (pos + n - rec.first.0 % n) % n;
        let unit = &self.unit[u as usize];
        (first..rec.range().end)
            .step_by(n as usize)
            .map(Lpn)
            .filter(|l| self.loc[l.idx()] == NONE)
            .filter_map(move |lpn| {
                let (_, lb, off) = self.place(lpn);
                let data = Some(self.data[lb as usize]).filter(|&b| b != NONE);
                let seq = unit.seq.filter(|s| s.lb == lb).map(|s| s.block);
                let older = |b: u32| {
                    off < dev.block_written(b)
                        && dev.peek_oob(self.ppa(b, off)).is_some_and(|o| {
                            o.lpn() == Some(lpn) && o.stamp != 0 && o.stamp < stamp
                        })
                };
                [data, seq].into_iter().flatten().any(older).then_some(lb)
            })
    }

    /// Full merge of logical block `lb` of unit `u`: its latest versions rebuilt into a free
    /// block that becomes its data block (none if every page was trimmed), its old data block
    /// and the sequential log block holding it (its pages were the latest versions of their
    /// offsets: copied with the rest) erased. Returns `(completion, copies, erases)`.
    fn merge_lb(
        &mut self,
        dev: &mut Device,
        u: u32,
        lb: u32,
        t: SimTime,
    ) -> Result<(SimTime, u64, u64), FtlError> {
        let (mut done, copies, mut erases) = if self.last_with_data(lb, 0).is_some() {
            let block = self.take_free(u, Role::Data(lb))?;
            let (d, copies) = self.fill(dev, lb, block, 0, t)?;
            let (e, erases) = self.install(dev, lb, block, t)?;
            (d.max(e), copies, erases)
        } else {
            match std::mem::replace(&mut self.data[lb as usize], NONE) {
                NONE => (t, 0, 0),
                old => (self.erase(dev, old, t)?, 0, 1),
            }
        };
        if let Some(seq) = self.unit[u as usize].seq.filter(|s| s.lb == lb) {
            self.unit[u as usize].seq = None;
            done = done.max(self.erase(dev, seq.block, t)?);
            erases += 1;
        }
        Ok((done, copies, erases))
    }

    /// Where the next page of `lpn` goes, merging first if needed: `(page, earliest start)`.
    fn place_write(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        t: SimTime,
    ) -> Result<(Ppa, SimTime), FtlError> {
        let (u, lb, off) = self.place(lpn);
        let ui = u as usize;
        if off == 0 {
            let start = self.merge_seq(dev, u, t)?;
            let block = self.take_free(u, Role::Seq)?;
            self.unit[ui].seq = Some(SeqLog { lb, block, next: 1 });
            self.merges.seq_log_writes += 1;
            return Ok((self.ppa(block, 0), start));
        }
        if let Some(seq) = self.unit[ui]
            .seq
            .as_mut()
            .filter(|s| s.lb == lb && s.next == off)
        {
            seq.next += 1;
            let block = seq.block;
            self.merges.seq_log_writes += 1;
            return Ok((self.ppa(block, off), t));
        }
        self.merges.random_log_writes += 1;
        self.next_log_page(dev, u, t)
    }

    /// The next page of unit `u`'s random log, reclaiming the oldest log block by a full merge
    /// first if the pool is full: `(page, earliest start)`.
    fn next_log_page(
        &mut self,
        dev: &mut Device,
        u: u32,
        t: SimTime,
    ) -> Result<(Ppa, SimTime), FtlError> {
        let ui = u as usize;
        let mut start = t;
        let (block, page) = match self.unit[ui].active {
            Some(a) => a,
            None => {
                if self.unit[ui].pool.len() as u32 == self.log_blocks {
                    start = self.merge_full(dev, u, t)?;
                }
                (self.take_free(u, Role::Log)?, 0)
            }
        };
        self.advance_log(u, block, page);
        Ok((self.ppa(block, page), start))
    }

    /// Page `page` of active log block `block` of unit `u` was taken.
    fn advance_log(&mut self, u: u32, block: u32, page: u32) {
        let unit = &mut self.unit[u as usize];
        unit.active = if page + 1 == self.ppb {
            unit.pool.push_back(block);
            None
        } else {
            Some((block, page + 1))
        };
    }

    /// Persists trim request `req` as a trim record (docs/power.md) in the random log of every
    /// unit it touches, each unit's record standing for the unit's LPNs (units merge
    /// independently); returns when the last is programmed.
    fn persist_trim(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        let rec = TrimRecord {
            first: req.lpn,
            pages: req.pages,
        };
        let mut done = req.arrival;
        for l in rec.range().take(self.units as usize) {
            let u = self.place(Lpn(l)).0;
            let (ppa, start) = self.next_log_page(dev, u, req.arrival)?;
            let programmed = dev.program_record(ppa, req.stamp, rec, Cause::TrimRecord, start)?;
            done = done.max(programmed);
        }
        Ok(done)
    }

    fn write(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        stamp: u32,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let (ppa, start) = self.place_write(dev, lpn, t)?;
        let old = std::mem::replace(&mut self.loc[lpn.idx()], ppa.0);
        if old != NONE {
            dev.invalidate(Ppa(old))?;
        }
        let mut done = dev.program(ppa, Oob::data(lpn, stamp), Src::Host, Cause::User, start)?;
        let u = self.place(lpn).0;
        if self.unit[u as usize]
            .seq
            .is_some_and(|s| s.next == self.ppb)
        {
            done = done.max(self.merge_seq(dev, u, t)?);
        }
        Ok(done)
    }

    /// Mapping DRAM by part: fixed by the geometry and `log_blocks` (the log page map is sized
    /// for every page of the pool, as a controller would allocate it).
    fn dram_parts(&self) -> [(&'static str, u64); 3] {
        [
            ("block_map", self.data.len() as u64 * BLOCK_ENTRY_BYTES),
            (
                "log_page_map",
                (self.units * self.log_blocks * self.ppb) as u64 * LOG_ENTRY_BYTES,
            ),
            ("seq_log", self.units as u64 * SEQ_STATE_BYTES),
        ]
    }

    /// Checks the block roles and every mapping's place against the unit structures.
    fn check_structure(&self, dev: &Device) -> Result<(), String> {
        for (i, &cur) in self.loc.iter().enumerate() {
            if cur == NONE {
                continue;
            }
            let lpn = Lpn(i as u32);
            let (u, lb, off) = self.place(lpn);
            let (block, page) = (cur / self.ppb, cur % self.ppb);
            if block / self.geo.blocks_per_plane != u {
                return Err(format!("{lpn:?} at {cur} outside its unit {u}"));
            }
            let ok = match self.role[block as usize] {
                Role::Data(b) => b == lb && page == off && self.data[lb as usize] == block,
                Role::Seq => self.unit[u as usize]
                    .seq
                    .is_some_and(|s| s.lb == lb && s.block == block && page == off),
                Role::Log => true,
                Role::Free => false,
            };
            if !ok {
                return Err(format!(
                    "{lpn:?} (logical block {lb}, offset {off}) at page {page} of block {block}, \
                     a {:?} block",
                    self.role[block as usize]
                ));
            }
        }
        for (u, unit) in self.unit.iter().enumerate() {
            let mut counts = [0u32; 4];
            let base = u as u32 * self.geo.blocks_per_plane;
            for b in base..base + self.geo.blocks_per_plane {
                counts[match self.role[b as usize] {
                    Role::Free => 0,
                    Role::Data(_) => 1,
                    Role::Seq => 2,
                    Role::Log => 3,
                }] += 1;
            }
            let logs = unit.pool.len() as u32 + unit.active.is_some() as u32;
            if counts[0] != self.free.free_in(u as u32) as u32
                || counts[2] != unit.seq.is_some() as u32
                || counts[3] != logs
                || logs > self.log_blocks
            {
                return Err(format!(
                    "unit {u}: blocks free/data/seq/log {counts:?}, lists {} free, {logs} log of \
                     {}",
                    self.free.free_in(u as u32),
                    self.log_blocks
                ));
            }
        }
        self.free.check(dev)
    }
}

impl Ftl for Fast {
    fn name(&self) -> &'static str {
        "fast"
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
                    let p = self.loc[lpn.idx()];
                    let ppa = (p != NONE).then_some(Ppa(p));
                    done = done.max(read_from_dram_map(dev, &mut self.stats, sink, lpn, ppa, t)?);
                }
            }
            Op::Write => {
                for lpn in req.lpns() {
                    done = done.max(self.write(dev, lpn, req.stamp, t)?);
                }
            }
            Op::Trim => {
                // Durable before the maps change.
                done = self.persist_trim(dev, req)?;
                for lpn in req.lpns() {
                    let old = std::mem::replace(&mut self.loc[lpn.idx()], NONE);
                    if old != NONE {
                        dev.invalidate(Ppa(old))?;
                    }
                }
            }
            Op::Flush => {}
        }
        Ok(done)
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        // `loc` is what the block map and the log page map say together: a page map by LPN.
        prefetch_page_map(dev, &self.loc, NONE, op, lpn, when);
    }

    fn background(&mut self, _: &mut Device, _: SimTime) -> Result<(), FtlError> {
        Ok(())
    }

    fn idle(&mut self, _: &mut Device, _: SimTime) -> Result<Option<SimTime>, FtlError> {
        // Both maps are in DRAM and merges run only when a write needs room: nothing is owed.
        Ok(None)
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.merges = MergeStats::default();
    }

    fn dram(&self) -> DramUsage {
        DramUsage {
            parts: self.dram_parts().to_vec(),
            budget: None,
        }
    }

    fn dram_total(&self) -> u64 {
        self.dram_parts().iter().map(|p| p.1).sum()
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "log_blocks": self.log_blocks,
            "units": self.units,
            "logical_blocks_per_unit": self.lbs_per_unit,
            "pages_per_block": self.ppb,
        })
    }

    fn extra_counters(&self) -> serde_json::Value {
        serde_json::to_value(&self.merges).unwrap_or_default()
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        let map = self
            .loc
            .iter()
            .enumerate()
            .map(|(i, &p)| (Lpn(i as u32), (p != NONE).then_some(Ppa(p))));
        check_page_map(dev, map, dev.valid_records())?;
        self.check_structure(dev)
    }
}

mod recovery;

super::registered!(Fast, "fast");

#[cfg(test)]
mod tests;
