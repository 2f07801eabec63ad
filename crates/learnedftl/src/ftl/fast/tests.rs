//! Exact merge counts on `tiny`: 8 units (LUN planes) of 64 blocks of 64 pages, 60 logical
//! blocks per unit. LPN `(i·64 + k)·8` is offset `k` of logical block `i` of the first unit.

use super::*;
use crate::device::PowerCut;
use crate::ftl::NullSink;

fn setup(kv: &[&str]) -> (Device, Fast) {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut p = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let f = Fast::new(&cfg, &mut p).unwrap();
    p.finish().unwrap();
    (Device::new(&cfg), f)
}

/// Writes `pages` pages from `lpn`, checking the invariants after.
fn write(f: &mut Fast, d: &mut Device, lpn: u32, pages: u32) {
    let r = Request::new(Op::Write, lpn, pages, 0, 1);
    f.submit(d, &r, &mut NullSink).unwrap();
    f.check_invariants(d).unwrap();
}

/// LPN of offset `k` of logical block `i` in the first unit.
fn lpn(i: u32, k: u32) -> u32 {
    (i * 64 + k) * 8
}

fn counters(f: &Fast) -> MergeStats {
    f.merges.clone()
}

#[test]
fn a_sequential_block_is_switched_in() {
    let (mut d, mut f) = setup(&[]);
    assert_eq!((f.units, f.lbs_per_unit, f.log_blocks), (8, 60, 2));
    assert_eq!(f.place(Lpn(lpn(3, 5))), (0, 3, 5));
    assert_eq!(f.lpn_at(3, 5), Some(Lpn(lpn(3, 5))));
    // One logical block per unit, written in order: eight switch merges, nothing to erase.
    write(&mut f, &mut d, 0, 512);
    let m = counters(&f);
    assert_eq!(
        (m.switch_merges, m.switch_erases, m.seq_log_writes),
        (8, 0, 512)
    );
    assert_eq!(
        (m.partial_merges, m.full_merges, m.random_log_writes),
        (0, 0, 0)
    );
    // Again: each old data block is erased; no page is copied.
    write(&mut f, &mut d, 0, 512);
    let m = counters(&f);
    assert_eq!((m.switch_merges, m.switch_erases), (16, 8));
    let c = d.counters();
    assert_eq!(
        (c.total_erases(), c.programs[Cause::GcData as usize]),
        (8, 0)
    );
}

#[test]
fn scattered_updates_end_in_a_full_merge() {
    let (mut d, mut f) = setup(&["log_blocks=1"]);
    // Four logical blocks per unit, switched in.
    write(&mut f, &mut d, 0, 4 * 512);
    assert_eq!(counters(&f).switch_merges, 32);
    // 16 updates to each of the first unit's four blocks fill its only log block ...
    for i in 0..4 {
        for k in 1..=16 {
            write(&mut f, &mut d, lpn(i, k), 1);
        }
    }
    let m = counters(&f);
    assert_eq!((m.random_log_writes, m.full_merges), (64, 0));
    // ... so the next one reclaims it: four data blocks rebuilt from their 64 latest pages
    // each, four old data blocks and the log block erased.
    write(&mut f, &mut d, lpn(0, 17), 1);
    let m = counters(&f);
    assert_eq!(
        (
            m.full_merges,
            m.full_merge_data_blocks,
            m.full_copies,
            m.full_erases
        ),
        (1, 4, 256, 5)
    );
    assert_eq!(m.full_merge_max_data_blocks, 4);
    let c = d.counters();
    assert_eq!(
        (c.programs[Cause::GcData as usize], c.total_erases()),
        (256, 5)
    );
    assert_eq!(f.stats().gc_pages_moved, 256);
}

#[test]
fn a_sequential_log_taken_early_is_completed_by_a_partial_merge() {
    let (mut d, mut f) = setup(&[]);
    write(&mut f, &mut d, 0, 512);
    // Offsets 0..10 of the first unit's block 0 rewritten in order: its sequential log.
    for k in 0..10 {
        write(&mut f, &mut d, lpn(0, k), 1);
    }
    assert_eq!(counters(&f).seq_log_writes, 512 + 10);
    // Offset 0 of block 1 needs the sequential log: offsets 10..64 are copied from the old
    // data block, which is erased.
    write(&mut f, &mut d, lpn(1, 0), 1);
    let m = counters(&f);
    assert_eq!(
        (m.partial_merges, m.partial_copies, m.partial_erases),
        (1, 54, 1)
    );
    assert_eq!(m.pad_pages, 0);
}

#[test]
fn holes_below_the_last_written_offset_are_padded() {
    let (mut d, mut f) = setup(&[]);
    for k in 0..3 {
        write(&mut f, &mut d, lpn(0, k), 1);
    }
    write(&mut f, &mut d, lpn(0, 5), 1);
    assert_eq!(counters(&f).random_log_writes, 1);
    write(&mut f, &mut d, lpn(1, 0), 1);
    let m = counters(&f);
    // Offsets 3 and 4 were never written: padded; offset 5 copied from the log.
    assert_eq!(
        (
            m.partial_merges,
            m.partial_copies,
            m.pad_pages,
            m.partial_erases
        ),
        (1, 1, 2, 0)
    );
    // Reads find every page where the maps say.
    let r = Request::new(Op::Read, 0, 48, 0, 0);
    f.submit(&mut d, &r, &mut NullSink).unwrap();
    assert_eq!(f.stats().lookups[1], 4);
}

#[test]
fn the_log_pool_must_fit_the_spare_blocks() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    for bad in ["log_blocks=0", "log_blocks=3"] {
        let mut p = Params::from_assignments([bad], "test").unwrap();
        let e = Fast::new(&cfg, &mut p).err().unwrap().to_string();
        assert!(e.contains("log_blocks"), "{bad}: {e}");
    }
    let mut p = Params::from_assignments(["logical_ratio=0.75"], "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
    let f = Fast::new(&cfg, &mut p).unwrap();
    assert_eq!((f.lbs_per_unit, f.log_blocks), (48, 14));
    // Block map 8 × 48 × 4 B, log page map 8 × 14 × 64 × 8 B, sequential logs 8 × 12 B.
    assert_eq!(f.dram_total(), 1536 + 57_344 + 96);
}

/// Issue 26 item 2: after a random fill, four zipf:1.1 4 KiB writers (3,000 requests each,
/// depth 2) beside `trimmers` random trimmers of `trim_bs` (`trims` requests each), in one
/// phase, with the oracle on and the invariants checked after every request; then every LPN
/// read back. Returns FAST's merge counters of the mixed phase.
fn writes_beside_trims(seed: u64, trim_bs: u64, trims: u64, trimmers: u32) -> serde_json::Value {
    use crate::engine::{NoProgress, SimOptions, Simulator};
    use crate::workload::{Dist, JobSpec, RwKind};
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut sim = Simulator::new(&cfg, "fast", Params::default(), SimOptions::checked()).unwrap();
    let mut fill = JobSpec::new("fill", RwKind::RandWrite);
    (fill.bs, fill.iodepth) = (512 << 10, 64);
    sim.run_jobs("fill", &[fill], seed, &mut NoProgress)
        .unwrap();
    let mut w = JobSpec::new("w", RwKind::RandWrite);
    w.dist = Dist::Zipf { theta: 1.1 };
    (w.number_ios, w.iodepth, w.numjobs) = (Some(3000), 2, 4);
    let mut t = JobSpec::new("t", RwKind::RandTrim);
    (t.bs, t.number_ios, t.numjobs) = (trim_bs, Some(trims), trimmers);
    let m = sim
        .run_jobs("mixed", &[w, t], seed, &mut NoProgress)
        .unwrap_or_else(|e| panic!("seed {seed}, {trim_bs} B trims: {e}"));
    assert!(m.flash.programs["trim_record"] > 0);
    let merges = sim.ftl().extra_counters();
    let mut read = JobSpec::new("read", RwKind::Read);
    read.bs = 512 << 10;
    let m = sim
        .run_jobs("read", &[read], seed, &mut NoProgress)
        .unwrap();
    assert_eq!(
        (m.verify.checked, m.verify.failures),
        (cfg.geometry.logical_pages, 0)
    );
    merges
}

#[test]
fn trim_records_do_not_fill_the_log() {
    // Records used to stay until every LPN they trimmed was written again or its logical block
    // merged for another reason: they filled every log block of the trims' units.
    for (seed, trim_bs, trims, trimmers) in [(7, 16 << 10, 500, 1), (1, 64 << 10, 500, 1)] {
        let m = writes_beside_trims(seed, trim_bs, trims, trimmers);
        assert!(m["full_merges"].as_u64() > Some(0), "{m}");
    }
}

#[test]
fn recovery_completes_a_trim_cut_between_its_records() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let (mut d, mut f) = setup(&[]);
    write(&mut f, &mut d, 0, 512);
    // 16 pages over all 8 units: the fourth record is torn, three are on flash.
    d.arm_power_cut(PowerCut::AtCause {
        cause: Cause::TrimRecord,
        nth: 4,
    });
    let trim = Request::new(Op::Trim, 0, 16, 0, 2);
    assert!(f.submit(&mut d, &trim, &mut NullSink).is_err());
    d.power_on();
    let (f, _) = Fast::recover(&cfg, &mut Params::default(), &mut d, SimTime(0)).unwrap();
    // Those three unmap every LPN of the range; each unit now holds a record of its own.
    assert!((0..16).all(|l| f.loc[l] == NONE));
    assert!((0..8).all(|u| f.log_holds_record(&d, u, 2)));
    f.check_invariants(&d).unwrap();
}

#[test]
fn a_partial_merge_cut_at_a_padding_page_recovers_into_its_sequential_log() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let (mut d, mut f) = setup(&[]);
    let submit = |f: &mut Fast, d: &mut Device, op, lpn, stamp| {
        f.submit(d, &Request::new(op, lpn, 1, 0, stamp), &mut NullSink)
    };
    for k in 0..64 {
        submit(&mut f, &mut d, Op::Write, lpn(0, k), 1 + k).unwrap();
    }
    // Offset 2 trimmed, offset 0 rewritten: a sequential log block at next offset 1.
    submit(&mut f, &mut d, Op::Trim, lpn(0, 2), 65).unwrap();
    submit(&mut f, &mut d, Op::Write, lpn(0, 0), 66).unwrap();
    // Block 1's offset 0 needs it: the partial merge copies offset 1 (its first gc_data
    // program) and pads offset 2 (its second), where the cut strikes.
    d.arm_power_cut(PowerCut::AtCause {
        cause: Cause::GcData,
        nth: 2,
    });
    assert!(submit(&mut f, &mut d, Op::Write, lpn(1, 0), 67).is_err());
    d.power_on();
    let (mut f, _) = Fast::recover(&cfg, &mut Params::default(), &mut d, SimTime(0)).unwrap();
    // Offset 1 is in both blocks; the data block goes when the sequential log is completed.
    let seq = f.unit[0].seq.unwrap();
    assert_eq!((seq.lb, seq.next), (0, 3));
    assert_eq!(f.loc[lpn(0, 1) as usize], f.ppa(seq.block, 1).0);
    submit(&mut f, &mut d, Op::Write, lpn(1, 0), 68).unwrap();
    f.check_invariants(&d).unwrap();
}

#[test]
fn a_partial_merge_torn_at_a_copy_also_in_the_log_recovers_it_from_the_log() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let (mut d, mut f) = setup(&[]);
    let mut stamp = 0;
    let mut submit = |f: &mut Fast, d: &mut Device, lpn| {
        stamp += 1;
        f.submit(d, &Request::new(Op::Write, lpn, 1, 0, stamp), &mut NullSink)
    };
    for k in 0..64 {
        submit(&mut f, &mut d, lpn(0, k)).unwrap();
    }
    // Log block 1: offset 3 again and again; log block 2: offset 5 once, then offset 6.
    for _ in 0..64 {
        submit(&mut f, &mut d, lpn(0, 3)).unwrap();
    }
    submit(&mut f, &mut d, lpn(0, 5)).unwrap();
    for _ in 0..63 {
        submit(&mut f, &mut d, lpn(0, 6)).unwrap();
    }
    // The pool is full: a full merge rebuilds block 0, copying offset 5 from log block 2,
    // which keeps its (now invalid) page of the same version.
    submit(&mut f, &mut d, lpn(0, 7)).unwrap();
    assert_eq!(counters(&f).full_merges, 1);
    let data = f.data[0];
    // Offset 0 rewritten: a sequential log block. Block 1's offset 0 needs it: the partial
    // merge copies offsets 1 to 4 and the cut tears its copy of offset 5 (its fifth program).
    submit(&mut f, &mut d, lpn(0, 0)).unwrap();
    d.arm_power_cut(PowerCut::AtCause {
        cause: Cause::GcData,
        nth: 5,
    });
    assert!(submit(&mut f, &mut d, lpn(1, 0)).is_err());
    d.power_on();
    let (mut f, _) = Fast::recover(&cfg, &mut Params::default(), &mut d, SimTime(0)).unwrap();
    let seq = f.unit[0].seq.unwrap();
    assert_eq!((seq.lb, seq.next, f.data[0]), (0, 6, data));
    // Offset 5 is below the sequential log's next page but torn there: it maps to the log
    // copy, not the data block that completing the sequential log erases.
    assert_ne!(f.loc[lpn(0, 5) as usize] / 64, data);
    f.check_invariants(&d).unwrap();
    submit(&mut f, &mut d, lpn(1, 0)).unwrap();
    f.check_invariants(&d).unwrap();
}
