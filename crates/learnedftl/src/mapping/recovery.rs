//! The flash scan every FTL's recovery starts from after a power cut (docs/power.md).
//!
//! The scan reads the OOB of every programmed page (cause [`Cause::Recovery`], issued at once
//! on every LUN) and keeps, per LPN, its newest version by write stamp — a data page, or a trim
//! record that unmapped it — per translation page its newest copy, and the trim records that
//! are the newest word on some LPN. Torn pages (a program cut by the power loss) are skipped.
//! Copies with equal stamps — GC copied a page and the cut struck before the victim was erased,
//! or a TP written back twice between two host writes — are ordered by when they were
//! programmed ([`CopyOrder`]): for line-striped allocation ([`scan`]), lines by the newest block
//! sequence number of their blocks ([`Device::block_seq`]), pages within a line by VPPN (a
//! write pointer's order); for per-block allocation ([`scan_in`] with [`CopyOrder::Blocks`]),
//! blocks by their own sequence number, pages within a block by offset. The later copy wins, so
//! an interrupted collection's victim is left with nothing valid.
//!
//! With a committed mapping checkpoint (`checkpoint_every`, [`Device::checkpoint`]) the scan
//! first reads the checkpoint, then only the pages programmed after it, plus the newest copy
//! of every translation page that the checkpoint covers: what the checkpoint covers is in it
//! (the FTL's DRAM mapping, the live trim records) and in the translation pages it points at.
//! The simulator still derives the covered pages' part of the result from their OOB, which
//! gives what the checkpoint and those translation pages hold (docs/power.md "Checkpoints"
//! says why), but charges no read for them. Without a checkpoint every programmed page is
//! read.

use super::alloc::{Allocator, GcPolicy, LineState, Pointer, Stream};
use crate::addr::{Lpn, Ppa, SimTime, Tpn};
use crate::config::{Geometry, Stripe};
use crate::device::{Cause, Device, Oob};
use crate::error::FtlError;

/// No page.
pub const NONE: u32 = u32::MAX;

/// What a recovery cost, in simulated flash operations and time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryCost {
    /// Page reads (the scan's and any the FTL added).
    pub flash_reads: u64,
    /// Page programs (translation pages rewritten because they were stale).
    pub flash_programs: u64,
    /// When recovery started (power on).
    pub start: SimTime,
    /// When its last operation completed.
    pub done: SimTime,
}

impl RecoveryCost {
    /// Simulated time the recovery took, ns.
    pub fn sim_ns(&self) -> u64 {
        self.done.since(self.start)
    }
}

/// What the scan found.
#[derive(Clone, Debug)]
pub struct Scan {
    ppa: Vec<u32>,
    stamp: Vec<u32>,
    tp_ppa: Vec<u32>,
    tp_stamp: Vec<u32>,
    records: Vec<Ppa>,
    max_stamp: u32,
    /// Page reads the scan made.
    pub reads: u64,
    /// When its last read completed.
    pub done: SimTime,
}

/// How a scan orders copies of equal stamp: by when they were programmed, as the FTL's
/// allocation decides it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CopyOrder {
    /// Line-striped allocation (the shared [`Allocator`]'s write pointers fill a line's blocks
    /// together): lines by the newest block sequence number of their blocks, pages within a
    /// line by VPPN.
    Lines,
    /// Per-block allocation (blocks of a line fill independently: block-mapped and hybrid
    /// FTLs, `mapping::blocks`): blocks by their own sequence number ([`Device::block_seq`],
    /// set at the block's first program), pages within a block by offset. A line's VPPN order
    /// is not program order there: a merge's destination may sit in a line, and at a lower
    /// VPPN, than the block it copies from.
    Blocks,
}

/// Scans every programmed page's OOB at `t` (the device must be powered on), ordering copies
/// of equal stamp for line-striped allocation ([`CopyOrder::Lines`]).
pub fn scan(dev: &mut Device, t: SimTime) -> Result<Scan, FtlError> {
    scan_in(dev, t, CopyOrder::Lines)
}

/// Scans every programmed page's OOB at `t` (the device must be powered on), ordering copies
/// of equal stamp by `order`.
pub fn scan_in(dev: &mut Device, t: SimTime, order: CopyOrder) -> Result<Scan, FtlError> {
    let geo = dev.geo().clone();
    let lp = geo.logical_pages as usize;
    let mut s = Scan {
        ppa: vec![NONE; lp],
        stamp: vec![0; lp],
        tp_ppa: Vec::new(),
        tp_stamp: Vec::new(),
        records: Vec::new(),
        max_stamp: 0,
        reads: 0,
        done: t,
    };
    let mut records: Vec<(u32, Ppa)> = Vec::new();
    let ppb = geo.pages_per_block;
    let line_seq: Vec<u32> = match order {
        CopyOrder::Lines => (0..geo.lines())
            .map(|line| {
                (0..geo.blocks_per_line())
                    .map(|i| geo.block_in_line(line, i))
                    .filter(|&b| dev.block_written(b) > 0)
                    .map(|b| dev.block_seq(b))
                    .max()
                    .unwrap_or(0)
            })
            .collect(),
        CopyOrder::Blocks => Vec::new(),
    };
    // When a page was programmed, for copies of equal stamp.
    let order = |dev: &Device, p: u32| match order {
        CopyOrder::Lines => (
            line_seq[geo.line_of(Ppa(p)) as usize],
            geo.ppa_to_vppn(Ppa(p)).0,
        ),
        CopyOrder::Blocks => (dev.block_seq(p / ppb), p % ppb),
    };
    // The checkpoint first: it says what the rest of the scan must read.
    let (ckpt_reads, t) = dev.read_checkpoint(t)?;
    s.reads += ckpt_reads;
    s.done = t;
    let covered = |dev: &Device, p: u32| p % ppb < dev.checkpoint_covers(p / ppb);
    for block in 0..geo.blocks() {
        let covers = dev.checkpoint_covers(block);
        for pg in 0..dev.block_written(block) {
            let ppa = Ppa(block * ppb + pg);
            let oob = if pg < covers {
                dev.peek_oob(ppa).ok_or_else(|| {
                    FtlError::Invariant(format!(
                        "recovery scan: {ppa:?} below its block's write pointer is not programmed"
                    ))
                })?
            } else {
                let (oob, done) = dev.read(ppa, Cause::Recovery, t)?;
                s.reads += 1;
                s.done = s.done.max(done);
                oob
            };
            if oob.is_torn() {
                continue;
            }
            s.max_stamp = s.max_stamp.max(oob.stamp);
            if oob.is_record() {
                records.push((oob.stamp, ppa));
            } else if let Some(tpn) = oob.tpn() {
                let i = tpn.idx();
                if i >= s.tp_ppa.len() {
                    s.tp_ppa.resize(i + 1, NONE);
                    s.tp_stamp.resize(i + 1, 0);
                }
                let cur = s.tp_ppa[i];
                if cur == NONE
                    || oob.stamp > s.tp_stamp[i]
                    || oob.stamp == s.tp_stamp[i] && order(dev, ppa.0) > order(dev, cur)
                {
                    s.tp_ppa[i] = ppa.0;
                    s.tp_stamp[i] = oob.stamp;
                }
            } else if let Some(lpn) = oob.lpn() {
                let i = lpn.idx();
                if i >= lp {
                    return Err(FtlError::Invariant(format!(
                        "recovery scan: {ppa:?} holds LPN {} beyond the logical space",
                        lpn.0
                    )));
                }
                let cur = s.ppa[i];
                if oob.stamp > s.stamp[i]
                    || oob.stamp == s.stamp[i] && cur != NONE && order(dev, ppa.0) > order(dev, cur)
                {
                    s.ppa[i] = ppa.0;
                    s.stamp[i] = oob.stamp;
                }
            }
        }
    }
    // The translation pages whose newest copy the checkpoint covers were not read above, and
    // recovery needs their contents.
    for &p in &s.tp_ppa {
        if p != NONE && covered(dev, p) {
            let (_, done) = dev.read(Ppa(p), Cause::Recovery, t)?;
            s.reads += 1;
            s.done = s.done.max(done);
        }
    }
    // Newest record first: an LPN belongs to the newest record newer than its data, and a
    // record is live if it is that for at least one LPN (copies share a stamp: one is kept).
    records.sort_unstable_by_key(|&(stamp, ppa)| (std::cmp::Reverse(stamp), ppa.0));
    records.dedup_by_key(|r| r.0);
    for (stamp, ppa) in records {
        let rec = dev.record(ppa).ok_or_else(|| {
            FtlError::Invariant(format!("recovery scan: record {ppa:?} without contents"))
        })?;
        let mut live = false;
        for l in rec.range() {
            let i = l as usize;
            if i < lp && stamp > s.stamp[i] {
                s.stamp[i] = stamp;
                s.ppa[i] = NONE;
                live = true;
            }
        }
        if live {
            s.records.push(ppa);
        }
    }
    Ok(s)
}

impl Scan {
    /// Where `lpn`'s newest data lives (`None`: never written, or trimmed after).
    #[inline]
    pub fn mapped(&self, lpn: Lpn) -> Option<Ppa> {
        let p = self.ppa[lpn.idx()];
        (p != NONE).then_some(Ppa(p))
    }
    /// The stamp of `lpn`'s newest version (data or trim; 0 if none).
    #[inline]
    pub fn stamp(&self, lpn: Lpn) -> u32 {
        self.stamp[lpn.idx()]
    }
    /// The PPA of every LPN's newest data (`NONE` for none), indexed by LPN.
    pub fn page_map(&self) -> &[u32] {
        &self.ppa
    }
    /// The newest copy of TP `tpn` and the stamp in its OOB, if one was found.
    pub fn tp(&self, tpn: Tpn) -> Option<(Ppa, u32)> {
        match self.tp_ppa.get(tpn.idx()) {
            Some(&p) if p != NONE => Some((Ppa(p), self.tp_stamp[tpn.idx()])),
            _ => None,
        }
    }
    /// The newest stamp on flash (data, trim records, translation pages).
    pub fn max_stamp(&self) -> u32 {
        self.max_stamp
    }
    /// The live trim records: the newest version of some LPN.
    pub fn records(&self) -> &[Ppa] {
        &self.records
    }

    /// Marks every LPN's newest data page and every live trim record valid again.
    pub fn revalidate(&self, dev: &mut Device) -> Result<(), FtlError> {
        for &p in self.ppa.iter().filter(|&&p| p != NONE) {
            dev.revalidate(Ppa(p))?;
        }
        for &p in &self.records {
            dev.revalidate(p)?;
        }
        Ok(())
    }
}

impl Allocator {
    /// The allocator after a power cut, from the device's write pointers. A line none of whose
    /// blocks holds a programmed (or torn) page is free (free list in line order). A line
    /// written in part, exactly its first pages in the write pointer's VPPN order (the open
    /// line of a stream at the cut), is open again for the stream `stream_of` names for its
    /// first page, its pointer after the last page written (a torn one included), unless that
    /// stream already has one; every other written line is closed — full lines, and the rare
    /// partly written lines that cannot be continued (their unwritten pages stay unused until
    /// GC erases the line) — and belongs to the stream of its first readable page
    /// (`Stream::DATA` if none).
    pub fn recovered(
        geo: &Geometry,
        streams: u16,
        policy: GcPolicy,
        dev: &Device,
        stream_of: impl Fn(Oob) -> Stream,
    ) -> Allocator {
        let mut a = Allocator::new(geo, streams, policy).with_fdp(&dev.config().fdp);
        a.free.clear();
        for line in 0..geo.lines() {
            let blocks = (0..geo.blocks_per_line()).map(|i| geo.block_in_line(line, i));
            let written: u32 = blocks.clone().map(|b| dev.block_written(b)).sum();
            if written == 0 {
                a.free.push_back(line);
                continue;
            }
            let first = blocks
                .flat_map(|b| {
                    (0..dev.block_written(b)).map(move |pg| Ppa(b * geo.pages_per_block + pg))
                })
                .filter_map(|p| dev.peek_oob(p))
                .find(|o| !o.is_torn());
            // A reclaim unit goes back to its handle's stream (the device's unit table survives
            // the cut, docs/fdp.md).
            let placed = dev.fdp().and_then(|f| a.fdp_stream(f.owner(line)));
            let stream = placed.unwrap_or_else(|| first.map_or(Stream::DATA, &stream_of));
            let s = stream.0 as usize;
            a.owned[s] += 1;
            if written < a.ppl && a.ptrs[s].line == Pointer::NONE {
                let mut stripe = Stripe::new(geo, line);
                if (0..written).all(|_| dev.is_programmed(stripe.next_ppa())) {
                    a.state[line as usize] = LineState::Open(stream);
                    a.ptrs[s] = Pointer {
                        line,
                        next: written,
                        stripe,
                    };
                    continue;
                }
            }
            a.set_closed(line, stream);
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DeviceConfig;
    use crate::device::{PowerCut, Src, TrimRecord};
    use crate::error::DeviceError;

    #[test]
    fn newest_stamp_wins_records_unmap_and_later_copies_win_ties() {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let geo = cfg.geometry.clone();
        let mut dev = Device::new(&cfg);
        let t = SimTime(0);
        // Line 0 (first pages in VPPN order): LPN 1 at stamps 1 and 3, LPN 2 at 2, a trim of
        // LPNs 1–2 at stamp 4 (after LPN 2's data but before LPN 2's rewrite at 5 below), and
        // LPN 9 at 6.
        let mut stripe = Stripe::new(&geo, 0);
        let put = |dev: &mut Device, stripe: &mut Stripe, oob: Oob| {
            let p = stripe.next_ppa();
            dev.program(p, oob, Src::None, Cause::User, t).unwrap();
            p
        };
        put(&mut dev, &mut stripe, Oob::data(Lpn(1), 1));
        put(&mut dev, &mut stripe, Oob::data(Lpn(2), 2));
        let l1 = put(&mut dev, &mut stripe, Oob::data(Lpn(1), 3));
        let old9 = put(&mut dev, &mut stripe, Oob::data(Lpn(9), 6));
        let tp_old = put(&mut dev, &mut stripe, Oob::tp_at(Tpn(0), 6));
        let rec = TrimRecord {
            first: Lpn(1),
            pages: 2,
        };
        let p = stripe.next_ppa();
        dev.program_record(p, 4, rec, Cause::TrimRecord, t).unwrap();
        let l2 = put(&mut dev, &mut stripe, Oob::data(Lpn(2), 5));
        // Line 1, opened later: a GC copy of LPN 9 and a second write-back of TP 0, same stamps.
        let mut later = Stripe::new(&geo, 1);
        let copy9 = later.next_ppa();
        dev.program(
            copy9,
            Oob::data(Lpn(9), 6),
            Src::Page(old9),
            Cause::GcData,
            t,
        )
        .unwrap();
        let tp_new = later.next_ppa();
        dev.program(tp_new, Oob::tp_at(Tpn(0), 6), Src::None, Cause::GcTrans, t)
            .unwrap();
        dev.cut_power();
        dev.power_on();
        let s = scan(&mut dev, t).unwrap();
        assert_eq!(s.reads, 9);
        // LPN 1: the trim (4) is newer than its data (3): unmapped, the record live.
        assert_eq!((s.mapped(Lpn(1)), s.stamp(Lpn(1))), (None, 4));
        assert_ne!(Some(l1), s.mapped(Lpn(1)));
        // LPN 2: rewritten after the trim.
        assert_eq!((s.mapped(Lpn(2)), s.stamp(Lpn(2))), (Some(l2), 5));
        assert_eq!(s.records(), &[p]);
        assert_eq!(s.mapped(Lpn(9)), Some(copy9));
        assert_eq!(s.tp(Tpn(0)), Some((tp_new, 6)));
        assert_ne!(s.tp(Tpn(0)).map(|x| x.0), Some(tp_old));
        assert_eq!(s.max_stamp(), 6);
        s.revalidate(&mut dev).unwrap();
        assert_eq!(dev.valid_records(), 1);
        dev.check_consistency().unwrap();
    }

    #[test]
    fn per_block_allocation_orders_equal_stamps_by_block_sequence_then_offset() {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let geo = cfg.geometry.clone();
        let mut dev = Device::new(&cfg);
        let t = SimTime(0);
        // Two blocks of line 0: the second (LUN 1 of channel 0, VPPNs above the first's) is
        // opened first and holds LPN 3 at stamp 5; then a merge copies it into the first.
        let (first, second) = (geo.block_in_line(0, 0), geo.block_in_line(0, 1));
        let at = |b: u32| Ppa(b * geo.pages_per_block);
        let old = at(second);
        dev.program(old, Oob::data(Lpn(3), 5), Src::None, Cause::User, t)
            .unwrap();
        let copy = at(first);
        dev.program(copy, Oob::data(Lpn(3), 5), Src::Page(old), Cause::GcData, t)
            .unwrap();
        assert!(dev.block_seq(first) > dev.block_seq(second));
        assert!(geo.ppa_to_vppn(old).0 > geo.ppa_to_vppn(copy).0);
        dev.cut_power();
        dev.power_on();
        // The line order takes the higher VPPN, the original; the block order the copy.
        assert_eq!(scan(&mut dev, t).unwrap().mapped(Lpn(3)), Some(old));
        let s = scan_in(&mut dev, t, CopyOrder::Blocks).unwrap();
        assert_eq!(s.mapped(Lpn(3)), Some(copy));
    }

    /// The same flash history with and without a checkpoint in its middle: data and a TP in
    /// line 0, then (the checkpoint) more pages in line 0, a newer TP 1 in line 1, and a block
    /// of line 2 whose covered page was erased and whose first page was written again.
    fn history(checkpoint: bool) -> (Device, Vec<Ppa>) {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let geo = cfg.geometry.clone();
        let mut dev = Device::new(&cfg);
        let t = SimTime(0);
        let mut at = vec![];
        let mut put = |dev: &mut Device, stripe: &mut Stripe, oob: Oob| {
            let p = stripe.next_ppa();
            dev.program(p, oob, Src::None, Cause::User, t).unwrap();
            at.push(p);
            p
        };
        let (mut l0, mut l1) = (Stripe::new(&geo, 0), Stripe::new(&geo, 1));
        for l in 1..=4 {
            put(&mut dev, &mut l0, Oob::data(Lpn(l), l));
        }
        put(&mut dev, &mut l0, Oob::tp_at(Tpn(0), 4));
        put(&mut dev, &mut l0, Oob::tp_at(Tpn(1), 4));
        let gone = put(&mut dev, &mut Stripe::new(&geo, 2), Oob::data(Lpn(7), 5));
        if checkpoint {
            dev.checkpoint(3, t).unwrap();
        }
        dev.invalidate(gone).unwrap();
        dev.erase(geo.block_in_line(2, 0), Cause::GcData, t)
            .unwrap();
        put(&mut dev, &mut Stripe::new(&geo, 2), Oob::data(Lpn(8), 6));
        put(&mut dev, &mut l0, Oob::data(Lpn(2), 7));
        put(&mut dev, &mut l1, Oob::data(Lpn(3), 8));
        put(&mut dev, &mut l1, Oob::tp_at(Tpn(1), 8));
        dev.cut_power();
        dev.power_on();
        (dev, at)
    }

    #[test]
    fn a_checkpoint_bounds_the_scan_to_what_was_programmed_after_it() {
        let t = SimTime(0);
        let (mut full_dev, at) = history(false);
        let full = scan(&mut full_dev, t).unwrap();
        assert_eq!(full.reads, 10);
        let (mut dev, _) = history(true);
        // Seven pages were covered; one of them was erased since.
        let (ckpt, covered) = (dev.checkpoint_pages(), 6);
        assert_eq!(ckpt, 3);
        let s = scan(&mut dev, t).unwrap();
        // The checkpoint, the four pages after it (line 2's rewritten block among them) and TP
        // 0, whose newest copy the checkpoint covers; not the other five covered pages.
        assert_eq!(s.reads, ckpt + 4 + 1);
        assert_eq!(s.reads, ckpt + full.reads - covered + 1);
        // What it finds is what the full scan finds.
        assert_eq!(s.page_map(), full.page_map());
        for tp in 0..2 {
            assert_eq!(s.tp(Tpn(tp)), full.tp(Tpn(tp)));
        }
        assert_eq!(s.mapped(Lpn(8)), Some(at[7]));
        assert_eq!(s.mapped(Lpn(2)), Some(at[8]));
        assert_eq!(s.tp(Tpn(1)).map(|x| x.0), Some(at[10]));
        assert_eq!(dev.counters().reads[Cause::Recovery as usize], s.reads);
    }

    #[test]
    fn a_cut_while_a_checkpoint_is_written_leaves_the_previous_one_committed() {
        let (mut dev, _) = history(true);
        let l1 = Stripe::new(dev.geo(), 1).next_ppa();
        let covers = dev.checkpoint_covers(l1.0 / dev.geo().pages_per_block);
        dev.arm_power_cut(PowerCut::AfterOps(4));
        assert_eq!(dev.checkpoint(9, SimTime(0)), Err(DeviceError::PowerLost));
        assert!(dev.power_lost());
        assert_eq!(dev.checkpoint_pages(), 3);
        assert_eq!(
            dev.checkpoint_covers(l1.0 / dev.geo().pages_per_block),
            covers
        );
        assert_eq!(dev.counters().programs[Cause::Checkpoint as usize], 3 + 5);
        dev.power_on();
        dev.checkpoint(2, SimTime(0)).unwrap();
        assert_eq!(dev.checkpoint_pages(), 2);
        assert!(dev.checkpoint_covers(l1.0 / dev.geo().pages_per_block) > covers);
    }
}
