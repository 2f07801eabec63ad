//! HP-FTL (Ni et al., "A Hash-based Space-efficient Page-level FTL for Large-capacity SSDs";
//! SPEC §5.7): the whole page-level mapping stays in DRAM, compactly.
//!
//! * **Primary table** ([`Codec`]): one `h + m`-bit entry per LPN, bit-packed. HID `1 ..= 2^h−2`
//!   names the hash function `H_HID` whose block holds the page; the PPID gives the page offset
//!   (with the LPN's low `p − m` bits when `m < p`). HID 0 = unmapped, `2^h − 1` = secondary.
//! * **Secondary table** ([`Secondary`]): 8-byte `(lpn, ppa)` slots for the writes no hash
//!   candidate could take; the primary entry's PPID keeps the slot's segment.
//! * **Write** (paper Algorithm 1): try `H_hid(lpn)` for `hid` from the LPN's current HID
//!   (`probe=current`, the algorithm as printed; `probe=first` restarts at `H_1`) up to
//!   `H_{2^h−2}`, taking the first block whose next free page (sequential programming) is
//!   representable for this LPN; else program the page anywhere through the secondary writer and
//!   record it in the secondary table (reusing the LPN's slot if it has one).
//! * **Secondary writer**: LUNs in turn, so secondary (and GC) pages spread over the LUNs; in a
//!   LUN, the block with the most free pages (`sec_pick=emptiest`, which keeps as many blocks
//!   as possible non-full and so open to hash candidates; `fullest` is the other choice). Every
//!   block stays a hash target.
//! * **Read**: primary entry → PPA, or a scan of one secondary segment; one flash read, never a
//!   translation read.
//! * **GC** (paper §II-D): runs when the secondary's free slots fall below the low watermark or
//!   free pages below `gc_free_low`, until free slots reach the high watermark and free pages
//!   `gc_free_high`. A round takes up to `gc_batch` full blocks with the fewest valid pages,
//!   relocates their valid pages (`gc_relocate=secondary`: into the secondary table, as the
//!   paper does, while it has room; `primary-first`: hash candidates first), erases them, then
//!   moves secondary entries back into primary positions in the erased blocks.
//!
//! Internal work is issued at the arrival time of the request being served; GC reads, programs
//! and erases carry cause `GcData`. See `docs/ftls/hpftl.md` for every choice.

mod candidates;
mod codec;
mod config;
mod gc;
mod levels;
mod secondary;

use candidates::CandidateIndex;
pub use codec::Codec;
pub use config::{CandPick, Design, HpConfig, Probe, Relocate, SecPick, Victims, HPFTL_KEYS};
use levels::FreeLevels;
pub use secondary::Secondary;

use super::{read_from_dram_map, DramUsage, Ftl, ReadSink};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Cause, Device, Oob, Src, TrimRecord};
use crate::error::{FtlError, RecoverError};
use crate::mapping::{
    check_page_map, recovery, Bits, Credit, FtlStats, HashFamily, HashKind, PackedVec,
};
use crate::params::Params;
use crate::request::{Op, Request, Upcoming};
use serde::Serialize;

const NONE: u32 = u32::MAX;

/// GC runs a host write may wait for before it gives up on finding a place.
const HOST_GC_TRIES: u32 = 8;

/// How many pages ahead of a request's write its candidate block's state is hinted into cache
/// ([`HpFtl::prefetch_write`]).
const WRITE_AHEAD: u32 = 4;

/// Why a write or a GC move found no place.
const SEC_FULL: &str = "HP-FTL secondary table full and no hash candidate fits \
                        (raise secondary_ratio, h or m, or let the table grow: secondary_growth > 0)";

/// Scheme counters beyond [`FtlStats`].
#[derive(Clone, Debug, Default, Serialize)]
struct Counters {
    host_pages_primary: u64,
    host_pages_secondary: u64,
    reads_primary: u64,
    reads_secondary: u64,
    gc_runs: u64,
    gc_rounds: u64,
    gc_relocated_primary: u64,
    gc_relocated_secondary: u64,
    gc_moved_back: u64,
    secondary_grown: u64,
}

/// Where an LPN's data is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Loc {
    Unmapped,
    Primary { hid: u32, ppa: Ppa },
    Secondary { pos: u32, ppa: Ppa },
}

impl Loc {
    fn ppa(self) -> Option<Ppa> {
        match self {
            Loc::Unmapped => None,
            Loc::Primary { ppa, .. } | Loc::Secondary { ppa, .. } => Some(ppa),
        }
    }
}

/// Where a page is being written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Dest {
    Primary { hid: u32, ppid: u32 },
    Secondary,
}

/// A secondary entry that could move into erased victim `key / r` at a page with low bits
/// `key % r`, through hash function `hid`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct MoveBack {
    key: u32,
    hid: u32,
    pos: u32,
    lpn: u32,
}

/// A page GC has read: from where, its OOB, and when the read completes (its copy is
/// programmed then).
#[derive(Copy, Clone, Debug)]
struct GcCopy {
    from: Ppa,
    oob: Oob,
    read: SimTime,
}

/// The HP-FTL.
#[derive(Clone)]
pub struct HpFtl {
    cfg: HpConfig,
    codec: Codec,
    hashes: HashFamily,
    primary: PackedVec,
    sec: Secondary,
    ppb: u32,
    blocks: u32,
    blocks_per_lun: u32,
    free_pages: u64,
    sec_lun: u32,
    lun_programs: Vec<u64>,
    stats: FtlStats,
    ctr: Counters,
    /// Per block, its valid pages mapped through the primary table (what relocating it may
    /// add to the secondary table).
    blk_primary: Vec<u16>,
    victims: Vec<(u32, u32)>,
    victim_idx: Vec<u32>,
    /// Per block, a bit set iff it has a free page and is not a GC victim: a write probes its
    /// candidates here (2 KiB on `quick`) and reads a write pointer only for open ones.
    open: Bits,
    /// Per block, the secondary entries hashing there (for move-back).
    cands: CandidateIndex,
    /// Blocks by LUN and free pages (for the secondary writer).
    levels: FreeLevels,
    /// Per block, its invalid pages, and per count the blocks with that many: victim choice
    /// reads these (16 KiB on `quick`) instead of the device's per-block counts.
    blk_invalid: Vec<u16>,
    invalid_blocks: Vec<u32>,
    /// Victim candidates of a round, `(rank, block)`.
    victim_cands: Vec<(u32, u32)>,
    /// Move-back candidates of a round, ordered by key, function and slot.
    moves: Vec<MoveBack>,
    /// The same, as generated (bucketed by key into `moves`).
    moves_raw: Vec<MoveBack>,
    move_start: Vec<u32>,
    /// Per secondary slot, whether this round's move-back plan already takes its entry.
    slot_taken: Vec<bool>,
    /// Secondary entries to move into primary positions: `(lpn, page, destination)`.
    plan: Vec<(u32, Ppa, Dest)>,
    /// Pages GC has read, to program when each read completes.
    copies: Vec<GcCopy>,
    /// `(invalidations, free pages, free slots)` after a background run that freed nothing:
    /// until one of them changes, another run would choose the same (no) victims.
    bg_idle_at: Option<(u64, u64, u32)>,
    /// Pages moves back may take per host page written (`move_back_budget`), and what is
    /// unspent.
    move_credit: Credit,
}

impl HpFtl {
    /// Rebuilds HP-FTL from flash after a power cut (docs/power.md), recovery issued at `t`.
    /// Both tables were in DRAM and nothing else is persisted: the OOB scan gives every LPN's
    /// newest page; a page in one of its LPN's hash candidates at an offset the LPN's PPID can
    /// express goes back into the primary table (the lowest such HID), any other into the
    /// secondary table (grown as a write would grow it). Free pages come from the write
    /// pointers. Returns the FTL and when the scan completed (the rest is DRAM work).
    pub fn recover(
        cfg: &DeviceConfig,
        params: &mut Params,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(Self, SimTime), RecoverError> {
        let mut f = HpFtl::new(cfg, params)?;
        let scan = recovery::scan(dev, t)?;
        scan.revalidate(dev)?;
        let ppb = f.ppb;
        for b in 0..f.blocks {
            let w = dev.block_written(b);
            if w > 0 {
                f.set_open(b, w < ppb);
                f.levels.moved(b, ppb, ppb - w);
                f.free_pages -= w as u64;
                f.set_invalid(b, w - dev.block_valid(b));
            }
        }
        let mut buf = [0u32; 256];
        let cand = &mut buf[..f.codec.functions() as usize];
        for lpn in 0..f.primary.len() as u32 {
            let Some(ppa) = scan.mapped(Lpn(lpn)) else {
                continue;
            };
            f.hashes.all(lpn, cand);
            let (block, off) = (ppa.0 / ppb, ppa.0 % ppb);
            let dest = (1..=cand.len() as u32)
                .filter(|&hid| cand[hid as usize - 1] == block)
                .find_map(|hid| {
                    let ppid = f.codec.ppid_for(lpn, off)?;
                    Some(Dest::Primary { hid, ppid })
                })
                .unwrap_or(Dest::Secondary);
            f.remap(dev, lpn, Loc::Unmapped, ppa, dest)?;
        }
        Ok((f, scan.done))
    }

    /// The effective parameters.
    pub fn config(&self) -> &HpConfig {
        &self.cfg
    }

    /// The secondary table.
    pub fn secondary(&self) -> &Secondary {
        &self.sec
    }

    /// Free (erased, unprogrammed) pages on the device.
    pub fn free_pages(&self) -> u64 {
        self.free_pages
    }

    /// Where `lpn`'s data is, from the DRAM tables alone.
    fn locate(&self, lpn: u32) -> Result<Loc, FtlError> {
        let e = self.primary.get(lpn as usize);
        let hid = self.codec.hid(e);
        if hid == 0 {
            Ok(Loc::Unmapped)
        } else if hid == self.codec.sec_hid() {
            let seg = self.codec.ppid(e);
            let pos = self.sec.find(lpn, seg).ok_or_else(|| {
                FtlError::Invariant(format!(
                    "LPN {lpn} marked secondary but not in segment {seg}"
                ))
            })?;
            let (_, ppa) = self.sec.get(pos).unwrap_or((lpn, 0));
            Ok(Loc::Secondary { pos, ppa: Ppa(ppa) })
        } else {
            Ok(Loc::Primary {
                hid,
                ppa: self.primary_page(lpn, hid, e),
            })
        }
    }

    /// The page primary entry `e` of `lpn`, naming hash function `hid`, points at.
    #[inline]
    fn primary_page(&self, lpn: u32, hid: u32, e: u32) -> Ppa {
        let block = self.hashes.hash(hid - 1, lpn);
        Ppa(block * self.ppb + self.codec.offset(lpn, self.codec.ppid(e)))
    }

    /// Hints the table entries [`HpFtl::locate`] will read for the LPNs a loop at step `i`
    /// handles a few steps later (`lpn_at(j)`: step `j`'s LPN). GC looks up every page it moves,
    /// random entries of tables sized by the logical space: overlapping those cache misses
    /// instead of paying them one at a time.
    #[inline]
    fn prefetch_locate(&self, i: usize, lpn_at: impl Fn(usize) -> Option<u32>) {
        /// Steps ahead for the entries indexed by LPN, and for the slot those lead to.
        const FAR: usize = 16;
        const NEAR: usize = 8;
        if let Some(lpn) = lpn_at(i + FAR) {
            self.primary.prefetch(lpn as usize);
            self.sec.prefetch_slot(lpn);
        }
        if let Some(lpn) = lpn_at(i + NEAR) {
            self.sec.prefetch_entry(lpn);
        }
    }

    /// The hash candidate `H_f(lpn)`, `f ≥ first`, whose next free page is representable for
    /// `lpn` (the first such, or with `cand_pick=idle-lun` the one whose LUN is free soonest):
    /// its page and primary destination.
    fn primary_slot(&self, dev: &Device, lpn: u32, first: u32) -> Option<(Ppa, Dest)> {
        // Two walks so that the `mix` one compiles to a plain loop (the general iterator was
        // not inlined and its digest option tested per function).
        match self.hashes.kind() {
            HashKind::Mix => {
                // A half-open range: an inclusive one's iterator was not inlined.
                let n = self.codec.functions();
                let hids = (first..n + 1).map(|hid| (hid, self.hashes.hash(hid - 1, lpn)));
                self.first_fit(dev, lpn, hids)
            }
            HashKind::Md5Shift => {
                let hids = (1..).zip(self.hashes.each(lpn)).skip(first as usize - 1);
                self.first_fit(dev, lpn, hids)
            }
        }
    }

    /// Hints into cache the state a write of `lpn` reads and updates in its first hash
    /// candidate's block (the one a write takes unless that block is full): hash placement
    /// sends consecutive LPNs to random blocks, whose state misses every cache on a large
    /// device. Only for the `mix` hash (MD5 costs more than the misses). `page`: the page it
    /// would take ([`Device::prefetch_program`]).
    fn prefetch_write(&self, dev: &Device, lpn: u32, page: bool) {
        if self.hashes.kind() != HashKind::Mix {
            return;
        }
        let hid = match (
            self.cfg.probe,
            self.codec.hid(self.primary.get(lpn as usize)),
        ) {
            (Probe::First, _) | (Probe::Current, 0) => 1,
            (Probe::Current, hid) if hid != self.codec.sec_hid() => hid,
            _ => return,
        };
        let block = self.hashes.hash(hid - 1, lpn);
        dev.prefetch_program(block, page);
        if page {
            let free = self.ppb.saturating_sub(dev.block_written(block));
            self.levels.prefetch_moved(block, free);
            return;
        }
        self.open.prefetch(block as usize);
        if let Some(n) = self.blk_primary.get(block as usize) {
            crate::host::prefetch(n);
        }
    }

    /// [`Self::primary_slot`] over candidates `(hid, block)` in probing order.
    #[inline(always)]
    fn first_fit(
        &self,
        dev: &Device,
        lpn: u32,
        hids: impl Iterator<Item = (u32, u32)>,
    ) -> Option<(Ppa, Dest)> {
        let mut fits = hids.filter_map(|(hid, block)| {
            // Not open: full, or a GC victim about to be (or just) erased.
            if !self.is_open(block) {
                return None;
            }
            let w = dev.block_written(block);
            let ppid = self.codec.ppid_for(lpn, w)?;
            Some((Ppa(block * self.ppb + w), Dest::Primary { hid, ppid }))
        });
        match self.cfg.cand_pick {
            CandPick::First => fits.next(),
            CandPick::IdleLun => fits.min_by_key(|&(ppa, _)| dev.lun_free_at(ppa)),
        }
    }

    /// Whether `lpn` is unmapped (HID 0: trimmed or never written).
    fn unmapped(&self, lpn: u32) -> bool {
        self.codec.hid(self.primary.get(lpn as usize)) == 0
    }

    /// Whether block `b` has a free page and is not a GC victim.
    #[inline]
    fn is_open(&self, b: u32) -> bool {
        self.open.get(b as usize)
    }

    #[inline]
    fn set_open(&mut self, b: u32, open: bool) {
        self.open.set(b as usize, open);
    }

    /// The next page of the secondary writer: LUNs in turn; in a LUN, the block chosen by
    /// `sec_pick` among those with a free page.
    fn sec_page(&mut self, dev: &Device) -> Option<Ppa> {
        let luns = self.lun_programs.len() as u32;
        let emptiest = self.cfg.sec_pick == SecPick::Emptiest;
        for _ in 0..luns {
            let lun = self.sec_lun;
            self.sec_lun = if lun + 1 == luns { 0 } else { lun + 1 };
            // Levels list blocks with a free page, which are open unless GC victims: the
            // bitset answers from 2 KiB instead of the victim index's 64 KiB.
            let victim = |b: u32| !self.is_open(b);
            if let Some(b) = self.levels.pick(lun, emptiest, victim) {
                return Some(Ppa(b * self.ppb + dev.block_written(b)));
            }
        }
        None
    }

    /// Programs a page, keeping the free-page and per-LUN counts.
    fn program(
        &mut self,
        dev: &mut Device,
        ppa: Ppa,
        oob: Oob,
        src: Src,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let done = dev.program(ppa, oob, src, cause, t)?;
        self.programmed(dev, ppa);
        Ok(done)
    }

    /// Keeps the free-page and per-LUN counts after `ppa` was programmed.
    fn programmed(&mut self, dev: &Device, ppa: Ppa) {
        let block = ppa.0 / self.ppb;
        let free = self.ppb - dev.block_written(block) + 1;
        self.levels.moved(block, free, free - 1);
        if free == 1 {
            self.set_open(block, false);
        }
        self.free_pages -= 1;
        self.lun_programs[dev.geo().lun_of(ppa) as usize] += 1;
    }

    /// Persists trim request `req` as a trim record (docs/power.md) through the secondary
    /// writer, after GC if free pages are short; returns when it is programmed.
    fn persist_trim(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        if self.free_pages <= self.cfg.page_reserve {
            self.gc_run(dev, t, false)?;
        }
        let ppa = self.sec_page(dev).ok_or(FtlError::NoSpace)?;
        let rec = TrimRecord {
            first: req.lpn,
            pages: req.pages,
        };
        let done = dev.program_record(ppa, req.stamp, rec, Cause::TrimRecord, t)?;
        self.programmed(dev, ppa);
        // Nothing it trims is mapped: an older record already says what it says
        // (`trims::program_record`).
        if rec.range().all(|l| self.unmapped(l)) {
            self.invalidate(dev, ppa)?;
        }
        Ok(done)
    }

    /// A valid trim record in a GC victim, read as `c`: moved through the secondary writer
    /// while some LPN it trimmed is still unmapped and has a page on flash
    /// ([`Device::record_needed`]), dropped otherwise.
    fn relocate_record(&mut self, dev: &mut Device, c: GcCopy) -> Result<(), FtlError> {
        let rec = dev.record(c.from).ok_or_else(|| {
            FtlError::Invariant(format!("trim record at {:?} without contents", c.from))
        })?;
        if dev.record_needed(rec, |l| self.unmapped(l)) {
            let new = self.sec_page(dev).ok_or(FtlError::NoSpace)?;
            self.program(dev, new, c.oob, Src::Page(c.from), Cause::GcData, c.read)?;
            self.stats.gc_pages_moved += 1;
        }
        self.invalidate(dev, c.from)
    }

    /// Invalidates `ppa`, keeping the per-block invalid counts.
    fn invalidate(&mut self, dev: &mut Device, ppa: Ppa) -> Result<(), FtlError> {
        dev.invalidate(ppa)?;
        let b = ppa.0 / self.ppb;
        self.set_invalid(b, self.blk_invalid[b as usize] as u32 + 1);
        Ok(())
    }

    /// Block `b` now has `invalid` invalid pages.
    #[inline]
    fn set_invalid(&mut self, b: u32, invalid: u32) {
        let old = std::mem::replace(&mut self.blk_invalid[b as usize], invalid as u16);
        self.invalid_blocks[old as usize] -= 1;
        self.invalid_blocks[invalid as usize] += 1;
    }

    /// Erases block `b` (cause `GcData`), keeping the free-page counts.
    fn erase(&mut self, dev: &mut Device, b: u32, t: SimTime) -> Result<(), FtlError> {
        let written = dev.block_written(b);
        dev.erase(b, Cause::GcData, t)?;
        self.set_invalid(b, 0);
        // GC erases its victims, which reopen when the round ends.
        self.set_open(b, self.victim_idx[b as usize] == NONE);
        self.free_pages += written as u64;
        self.levels.moved(b, self.ppb - written, self.ppb);
        Ok(())
    }

    /// Records that `lpn`, found at `old`, now lives at `new` through `dest`; invalidates the old
    /// page and keeps the secondary table in step.
    fn remap(
        &mut self,
        dev: &mut Device,
        lpn: u32,
        old: Loc,
        new: Ppa,
        dest: Dest,
    ) -> Result<(), FtlError> {
        if let Some(p) = old.ppa() {
            self.invalidate(dev, p)?;
        }
        if let Loc::Primary { ppa, .. } = old {
            self.blk_primary[(ppa.0 / self.ppb) as usize] -= 1;
        }
        if let Dest::Primary { .. } = dest {
            self.blk_primary[(new.0 / self.ppb) as usize] += 1;
        }
        let entry = match (dest, old) {
            (Dest::Primary { hid, ppid }, _) => {
                if let Loc::Secondary { pos, .. } = old {
                    self.sec.remove(pos);
                }
                self.codec.encode(hid, ppid)
            }
            (Dest::Secondary, Loc::Secondary { pos, .. }) => {
                // Algorithm 1: an LPN already in the secondary table keeps its slot.
                self.sec.set_ppa(pos, new.0);
                self.codec
                    .encode(self.codec.sec_hid(), self.sec.segment(pos))
            }
            (Dest::Secondary, _) => {
                self.ensure_slot()?;
                let seg = self
                    .sec
                    .insert(lpn, new.0)
                    .ok_or_else(|| FtlError::TableFull(SEC_FULL.into()))?;
                // Only moves back read the index: without their budget it is not kept.
                if self.move_credit.rate() > 0.0 {
                    self.cands.add(lpn, &self.hashes, &self.sec);
                }
                self.codec.encode(self.codec.sec_hid(), seg)
            }
        };
        self.primary.set(lpn as usize, entry);
        Ok(())
    }

    /// Writes one host page at `t` (Algorithm 1); returns its completion.
    fn write_page(
        &mut self,
        dev: &mut Device,
        lpn: u32,
        stamp: u32,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        if self.free_pages <= self.cfg.page_reserve {
            self.gc_run(dev, t, false)?;
        }
        let oob = Oob::data(Lpn(lpn), stamp);
        // Unspent credit is capped at one round's worth of erased blocks.
        self.move_credit.earn((self.cfg.gc_batch * self.ppb) as f64);
        for attempt in 0..HOST_GC_TRIES {
            let old = self.locate(lpn)?;
            let first = match (self.cfg.probe, old) {
                (Probe::First, _) | (Probe::Current, Loc::Unmapped) => Some(1),
                (Probe::Current, Loc::Primary { hid, .. }) => Some(hid),
                (Probe::Current, Loc::Secondary { .. }) => None,
            };
            if let Some((ppa, dest)) = first.and_then(|f| self.primary_slot(dev, lpn, f)) {
                let done = self.program(dev, ppa, oob, Src::Host, Cause::User, t)?;
                self.remap(dev, lpn, old, ppa, dest)?;
                self.ctr.host_pages_primary += 1;
                return Ok(done);
            }
            // Host writes leave `slot_reserve` slots to GC relocation, so a GC round can always
            // relocate at least its best victim; only when GC cannot free slots does the host
            // take them (GC then picks victims whose valid pages fit the slots left).
            let reserve = if attempt + 1 < HOST_GC_TRIES {
                self.cfg.slot_reserve
            } else {
                0
            };
            if matches!(old, Loc::Secondary { .. })
                || self.sec.free_slots() > reserve
                || self.cfg.design == Design::Grow
            {
                let ppa = self.sec_page(dev).ok_or(FtlError::NoSpace)?;
                let done = self.program(dev, ppa, oob, Src::Host, Cause::User, t)?;
                self.remap(dev, lpn, old, ppa, Dest::Secondary)?;
                self.ctr.host_pages_secondary += 1;
                return Ok(done);
            }
            self.gc_run(dev, t, false)?;
        }
        // GC could not free a slot: the table grows (or, fixed, the write fails).
        self.ensure_slot()?;
        let old = self.locate(lpn)?;
        let ppa = self.sec_page(dev).ok_or(FtlError::NoSpace)?;
        let done = self.program(dev, ppa, oob, Src::Host, Cause::User, t)?;
        self.remap(dev, lpn, old, ppa, Dest::Secondary)?;
        self.ctr.host_pages_secondary += 1;
        Ok(done)
    }

    /// LPNs whose entry is in the primary table (HID `1 ..= 2^h − 2`).
    fn primary_mapped(&self) -> u64 {
        let sec = self.codec.sec_hid();
        self.primary
            .iter()
            .filter(|&e| {
                let hid = self.codec.hid(e);
                hid != 0 && hid != sec
            })
            .count() as u64
    }
}

impl Ftl for HpFtl {
    fn name(&self) -> &'static str {
        "hpftl"
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        let lpn = lpn.0;
        if lpn >= self.primary.len() as u32 {
            return;
        }
        match when {
            Upcoming::Later => {
                self.primary.prefetch(lpn as usize);
                self.sec.prefetch_slot(lpn);
            }
            Upcoming::Next => {
                self.sec.prefetch_entry(lpn);
                // A primary entry gives the page by arithmetic; a secondary one only through the
                // slot just hinted, which would stall here.
                let e = self.primary.get(lpn as usize);
                let hid = self.codec.hid(e);
                if op == Op::Read && hid != 0 && hid != self.codec.sec_hid() {
                    dev.prefetch_read(self.primary_page(lpn, hid, e));
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
        let mut done = t;
        match req.op {
            Op::Read => {
                for lpn in req.lpns() {
                    let loc = self.locate(lpn.0)?;
                    match loc {
                        Loc::Unmapped => {}
                        Loc::Primary { .. } => self.ctr.reads_primary += 1,
                        Loc::Secondary { .. } => self.ctr.reads_secondary += 1,
                    }
                    let d = read_from_dram_map(dev, &mut self.stats, sink, lpn, loc.ppa(), t)?;
                    done = done.max(d);
                }
            }
            Op::Write => {
                let last = req.last_lpn().0;
                for lpn in req.lpns() {
                    // The block's state first, its next page once that state is in cache.
                    for (ahead, page) in [(2 * WRITE_AHEAD, false), (WRITE_AHEAD, true)] {
                        if lpn.0 + ahead <= last {
                            self.prefetch_write(dev, lpn.0 + ahead, page);
                        }
                    }
                    done = done.max(self.write_page(dev, lpn.0, req.stamp, t)?);
                }
            }
            Op::Trim => {
                // Durable before the tables change.
                done = self.persist_trim(dev, req)?;
                for lpn in req.lpns() {
                    let old = self.locate(lpn.0)?;
                    match old {
                        Loc::Unmapped => {}
                        Loc::Primary { ppa, .. } => {
                            self.invalidate(dev, ppa)?;
                            self.blk_primary[(ppa.0 / self.ppb) as usize] -= 1;
                        }
                        Loc::Secondary { pos, ppa } => {
                            self.invalidate(dev, ppa)?;
                            self.sec.remove(pos);
                        }
                    }
                    self.primary.set(lpn.idx(), 0);
                }
            }
            Op::Flush => {}
        }
        Ok(done)
    }

    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        self.background_gc(dev, now).map(drop)
    }

    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        // The whole mapping is in DRAM and there is no buffer: an idle HP-FTL owes only the GC
        // its thresholds ask for. A run spreads over every LUN: it completes when the device
        // drains.
        Ok(self
            .background_gc(dev, now)?
            .then(|| dev.drained_at().max(now)))
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.ctr = Counters::default();
        self.lun_programs.fill(0);
        self.sec.reset_peak();
    }

    fn dram(&self) -> DramUsage {
        let used = self.sec.used() as u64 * 8;
        DramUsage {
            parts: vec![
                ("primary", self.primary.bytes()),
                ("secondary_used", used),
                ("secondary_free", self.sec.capacity() as u64 * 8 - used),
            ],
            budget: Some(self.cfg.budget),
        }
    }

    fn dram_total(&self) -> u64 {
        self.primary.bytes() + self.sec.capacity() as u64 * 8
    }

    fn params(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.cfg).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("move_back_budget".into(), self.move_credit.rate_json());
        }
        v
    }

    fn extra_counters(&self) -> serde_json::Value {
        let n = self.lun_programs.len() as f64;
        let mean = self.lun_programs.iter().sum::<u64>() as f64 / n;
        let ratio = |x: u64| if mean > 0.0 { x as f64 / mean } else { 0.0 };
        let max = self.lun_programs.iter().copied().max().unwrap_or(0);
        let min = self.lun_programs.iter().copied().min().unwrap_or(0);
        let mut v = serde_json::to_value(&self.ctr).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            for (k, x) in [
                ("secondary_entries", serde_json::json!(self.sec.used())),
                ("secondary_peak_entries", serde_json::json!(self.sec.peak())),
                (
                    "secondary_used_bytes",
                    serde_json::json!(self.sec.used() as u64 * 8),
                ),
                (
                    "secondary_peak_bytes",
                    serde_json::json!(self.sec.peak() as u64 * 8),
                ),
                (
                    "secondary_allocated_bytes",
                    serde_json::json!(self.sec.capacity() as u64 * 8),
                ),
                ("primary_bytes", serde_json::json!(self.primary.bytes())),
                (
                    "primary_mapped_lpns",
                    serde_json::json!(self.primary_mapped()),
                ),
                ("lun_programs_max_over_mean", serde_json::json!(ratio(max))),
                ("lun_programs_min_over_mean", serde_json::json!(ratio(min))),
            ] {
                o.insert(k.to_string(), x);
            }
        }
        v
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        let mut sec_marked = 0u32;
        let mut blk_primary = vec![0u16; self.blocks as usize];
        let mut err = None;
        let map = (0..self.primary.len() as u32).map(|lpn| {
            let loc = self.locate(lpn).unwrap_or_else(|e| {
                err.get_or_insert(e.to_string());
                Loc::Unmapped
            });
            match loc {
                Loc::Secondary { .. } => sec_marked += 1,
                Loc::Primary { ppa, .. } => blk_primary[(ppa.0 / self.ppb) as usize] += 1,
                Loc::Unmapped => {}
            }
            (Lpn(lpn), loc.ppa())
        });
        check_page_map(dev, map, dev.valid_records())?;
        if let Some(e) = err {
            return Err(e);
        }
        self.sec.check()?;
        self.levels.check(|b| self.ppb - dev.block_written(b))?;
        let mut invalid_blocks = vec![0; self.ppb as usize + 1];
        for b in 0..self.blocks {
            let open = self.victim_idx[b as usize] == NONE && dev.block_written(b) < self.ppb;
            if self.is_open(b) != open {
                return Err(format!(
                    "block {b}: open bit {} but open {open}",
                    self.is_open(b)
                ));
            }
            let invalid = dev.block_written(b) - dev.block_valid(b);
            if self.blk_invalid[b as usize] as u32 != invalid {
                return Err(format!(
                    "block {b}: {invalid} invalid pages, {} counted",
                    self.blk_invalid[b as usize]
                ));
            }
            invalid_blocks[invalid as usize] += 1;
        }
        if invalid_blocks != self.invalid_blocks {
            return Err("blocks per invalid-page count disagree with the blocks".into());
        }
        if blk_primary != self.blk_primary {
            return Err("per-block primary-mapped counts disagree with the tables".into());
        }
        if sec_marked != self.sec.used() {
            return Err(format!(
                "{sec_marked} LPNs marked secondary but {} secondary entries",
                self.sec.used()
            ));
        }
        let free: u64 = (0..self.blocks)
            .map(|b| (self.ppb - dev.block_written(b)) as u64)
            .sum();
        if free != self.free_pages {
            return Err(format!(
                "{free} free pages on the device, {} counted",
                self.free_pages
            ));
        }
        if self.dram_total() > self.cfg.budget {
            return Err(format!(
                "DRAM {} B over the budget {} B",
                self.dram_total(),
                self.cfg.budget
            ));
        }
        Ok(())
    }
}

super::registered!(HpFtl, "hpftl");

#[cfg(test)]
mod tests;
