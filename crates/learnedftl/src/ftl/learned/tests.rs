//! LearnedFTL mechanism tests on small devices: a scripted scenario with exact flash-operation
//! counts, VPPN contiguity of a group's write-back, sequential initialisation through the write
//! path, and the switches.

use super::*;
use crate::device::FlashCounters;
use crate::ftl::NullSink;

/// A device of 8 lines of 512 pages (4 ch × 2 LUN, 64 pages per block), half of it logical:
/// 2,048 LPNs = 4 TPs = 4 groups of one TP.
fn small(kv: &[&str]) -> (Device, LearnedFtl) {
    let mut p =
        Params::from_assignments(["blocks_per_plane=8", "logical_ratio=0.5"], "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
    let mut p = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let ftl = LearnedFtl::new(&cfg, &mut p).unwrap();
    p.finish().unwrap();
    (Device::new(&cfg), ftl)
}

fn req(op: Op, lpn: u32, pages: u32, t: u64) -> Request {
    Request::new(op, lpn, pages, t, 1)
}

/// Submits and checks every invariant; returns the flash operations it took.
fn step(dev: &mut Device, ftl: &mut LearnedFtl, r: Request) -> FlashCounters {
    let before = dev.counters().clone();
    ftl.submit(dev, &r, &mut NullSink).unwrap();
    ftl.check_invariants(dev).unwrap();
    let after = dev.counters();
    FlashCounters {
        reads: std::array::from_fn(|i| after.reads[i] - before.reads[i]),
        programs: std::array::from_fn(|i| after.programs[i] - before.programs[i]),
        erases: std::array::from_fn(|i| after.erases[i] - before.erases[i]),
    }
}

fn ops(c: &FlashCounters, cause: Cause) -> (u64, u64, u64) {
    let i = cause as usize;
    (c.reads[i], c.programs[i], c.erases[i])
}

fn vppn(ftl: &LearnedFtl, lpn: u32) -> u32 {
    ftl.geo.ppa_to_vppn(ftl.table.get(Lpn(lpn)).unwrap()).0
}

#[test]
fn scripted_scenario_counts_every_flash_operation() {
    // A CMT of two entries (fixed DRAM: 4 × 128 B models + 16 B GTD + 4 × 20 B groups), one
    // line per group, no borrowing: every step's operations are predictable.
    let (mut dev, mut ftl) = small(&[
        "design=paper",
        "mapping_dram_bytes=624",
        "group_line_quota=1",
        "cross_group=off",
    ]);
    assert_eq!(ftl.cfg.budget.cache, 16);
    // 1. Write LPNs 0..4: 4 user programs. The miss of 0 loads [0, 2) (capped at two entries;
    //    TP 0 was never written: free); the miss of 2 evicts dirty 0, whose batch write-back
    //    programs TP 0 (no old copy to read) and cleans 1, evicts 1, then reads TP 0.
    let c = step(&mut dev, &mut ftl, req(Op::Write, 0, 4, 0));
    assert_eq!(ops(&c, Cause::User), (0, 4, 0));
    assert_eq!(ops(&c, Cause::TransWrite), (0, 1, 0));
    assert_eq!(ops(&c, Cause::TransRead), (1, 0, 0));
    assert_eq!(c.total_reads() + c.total_programs(), 6);
    // Sequential initialisation verified exactly the run.
    assert_eq!(
        ftl.models.set_offsets(Tpn(0)).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    // 2. LPN 0 is not cached but its bit is set: a model hit, one read.
    let c = step(&mut dev, &mut ftl, req(Op::Read, 0, 1, 1_000_000));
    assert_eq!((c.total_reads(), c.total_programs()), (1, 0));
    assert_eq!(ops(&c, Cause::User), (1, 0, 0));
    assert_eq!((ftl.stats.model_hits, ftl.stats.cmt_hits), (1, 0));
    // 3. LPN 2 is cached: a CMT hit, one read.
    let c = step(&mut dev, &mut ftl, req(Op::Read, 2, 1, 2_000_000));
    assert_eq!((c.total_reads(), c.total_programs()), (1, 0));
    assert_eq!(ftl.stats.cmt_hits, 1);
    // 4. Write LPN 10 alone (no run: its bit stays clear). Miss: room for one entry is made by
    //    evicting the least recent entry, dirty 3 (batch write-back of TP 0, now on flash: read
    //    + program; 2 becomes clean); then TP 0 is read.
    let c = step(&mut dev, &mut ftl, req(Op::Write, 10, 1, 3_000_000));
    assert_eq!(ops(&c, Cause::User), (0, 1, 0));
    assert_eq!(ops(&c, Cause::TransWrite), (1, 1, 0));
    assert_eq!(ops(&c, Cause::TransRead), (1, 0, 0));
    assert!(!ftl.models.bit(Tpn(0), 10));
    // 5. Read LPN 1: not cached, bit set: a model hit.
    let c = step(&mut dev, &mut ftl, req(Op::Read, 1, 1, 4_000_000));
    assert_eq!((c.total_reads(), ftl.stats.model_hits), (1, 2));
    // 6. Reading two unmapped LPNs of TP 1 (never written: its read is free) loads both,
    //    evicting clean 2 (free) and dirty 10 (write-back of TP 0: read + program). Then LPN 10
    //    misses with its bit clear: TP read, then the data (a double read).
    let c = step(&mut dev, &mut ftl, req(Op::Read, 600, 2, 5_000_000));
    assert_eq!(ops(&c, Cause::TransWrite), (1, 1, 0));
    assert_eq!(c.total_reads(), 1);
    let c = step(&mut dev, &mut ftl, req(Op::Read, 10, 1, 6_000_000));
    assert_eq!(ops(&c, Cause::TransRead), (1, 0, 0));
    assert_eq!(ops(&c, Cause::User), (1, 0, 0));
    assert_eq!(ftl.stats.lookups[2], 1, "one double read");
    // 7. Group GC: overwrite LPNs 0..8 until group 0's only line is full.
    let written = 5; // LPNs 0..4 and 10
    let mut t = 7_000_000;
    for i in 0..(512 - written) / 4 {
        step(&mut dev, &mut ftl, req(Op::Write, 4 * (i % 2), 4, t));
        t += 1_000_000;
    }
    // Top it up to exactly full.
    let room = ftl.alloc.room(ftl.groups.stream(0));
    if room > 0 {
        step(&mut dev, &mut ftl, req(Op::Write, 20, room, t));
        t += 1_000_000;
    }
    assert_eq!(ftl.alloc.room(ftl.groups.stream(0)), 0);
    let valid_before = ftl.groups.mapped[0];
    let gcs = ftl.stats.gc_events;
    // The next write of group 0 has no room, cannot take a line (quota 1): GC of group 0.
    let c = step(&mut dev, &mut ftl, req(Op::Write, 30, 1, t));
    assert_eq!(ftl.stats.gc_events, gcs + 1);
    // GC: TP 0 read (it exists), every valid page read and programmed, TP 0 programmed, the
    // 8 blocks of the line erased; then the host page.
    assert_eq!(
        ops(&c, Cause::GcData),
        (valid_before as u64, valid_before as u64, 8)
    );
    assert_eq!(ops(&c, Cause::GcTrans), (1, 1, 0));
    assert_eq!(ops(&c, Cause::User), (0, 1, 0));
    // Written back in LPN order, VPPN-contiguously, and trained: every moved LPN verified.
    let lpns: Vec<u32> = (0..512)
        .filter(|&l| l != 30 && ftl.table.get(Lpn(l)).is_some())
        .collect();
    assert_eq!(lpns.len() as u32, valid_before);
    for w in lpns.windows(2) {
        assert_eq!(vppn(&ftl, w[1]), vppn(&ftl, w[0]) + 1, "LPNs {w:?}");
    }
    for &l in &lpns {
        assert!(
            ftl.models.bit(Tpn(0), l),
            "LPN {l} not verified after training"
        );
    }
    assert!(
        !ftl.models.bit(Tpn(0), 30),
        "the new write's bit stays clear"
    );
}

#[test]
fn sequential_init_through_the_write_path_and_its_switch() {
    for on in [true, false] {
        let (mut dev, mut ftl) = small(&[if on {
            "sequential_init=on"
        } else {
            "sequential_init=off"
        }]);
        step(&mut dev, &mut ftl, req(Op::Write, 512 + 100, 16, 0));
        let bits: Vec<u32> = ftl.models.set_offsets(Tpn(1)).collect();
        let want: Vec<u32> = if on { (100..116).collect() } else { vec![] };
        assert_eq!(bits, want);
        // Overwriting the middle clears those bits and, being shorter than the piece's
        // verified run, leaves the model alone.
        step(&mut dev, &mut ftl, req(Op::Write, 512 + 104, 4, 1_000_000));
        let bits: Vec<u32> = ftl.models.set_offsets(Tpn(1)).collect();
        let want: Vec<u32> = if on {
            (100..104).chain(108..116).collect()
        } else {
            vec![]
        };
        assert_eq!(bits, want);
        // A trim clears bits too.
        step(&mut dev, &mut ftl, req(Op::Trim, 512 + 100, 1, 2_000_000));
        assert!(!ftl.models.bit(Tpn(1), 100));
    }
}

#[test]
fn cross_group_borrowing_pairs_and_collects_both_groups() {
    // Quota 1 and a small encroachment threshold: group 0 fills its line, borrows from the
    // untrained group 1, and once it placed 8 pages there both are collected and trained.
    let (mut dev, mut ftl) = small(&["design=paper", "group_line_quota=1", "encroach_threshold=8"]);
    step(&mut dev, &mut ftl, req(Op::Write, 512, 16, 0)); // group 1 opens a line
    let mut t = 1_000_000;
    for _ in 0..4 {
        step(&mut dev, &mut ftl, req(Op::Write, 0, 128, t)); // 512 pages: group 0's line
        t += 10_000_000;
    }
    assert_eq!(ftl.alloc.room(ftl.groups.stream(0)), 0);
    step(&mut dev, &mut ftl, req(Op::Write, 0, 8, t));
    assert_eq!(ftl.groups.host[0], 1);
    assert_eq!(ftl.extra.borrowed_pages, 8);
    assert_eq!(ftl.stats.gc_events, 0, "borrowing instead of collecting");
    step(&mut dev, &mut ftl, req(Op::Write, 8, 1, t + 1_000_000));
    assert_eq!(ftl.extra.paired_gcs, 1);
    assert_eq!(ftl.groups.host[0], NONE_GROUP);
    assert!(ftl.groups.trained_at[0].is_some() && ftl.groups.trained_at[1].is_some());
    // Both groups' pages are home and verified (group 0 holds LPNs 0..128; LPN 8 was written
    // again after the collection).
    assert_eq!(ftl.models.bits_in(Tpn(1), 0, 512), 16);
    assert_eq!(ftl.models.bits_in(Tpn(0), 0, 512), 127);
    let g0: Vec<u32> = (0..128).filter(|&l| l != 8).collect();
    for w in g0.windows(2) {
        assert_eq!(ftl.groups.of(Lpn(w[0])), 0);
        let (a, b) = (vppn(&ftl, w[0]), vppn(&ftl, w[1]));
        assert_eq!(b, a + 1 + (w[1] - w[0] - 1), "LPNs {w:?}");
    }
}

const NONE_GROUP: u32 = groups::NONE;

#[test]
fn refresh_rewrites_and_trains_without_gc() {
    let (mut dev, mut ftl) = small(&["refresh_period=1ms", "sequential_init=off"]);
    // Scattered single-page writes: no runs, no model.
    for (i, l) in [5u32, 1, 9, 3, 7].iter().enumerate() {
        step(&mut dev, &mut ftl, req(Op::Write, *l, 1, i as u64 * 10));
    }
    assert_eq!(ftl.models.set_bits_total(), 0);
    ftl.background(&mut dev, SimTime(2_000_000)).unwrap();
    ftl.check_invariants(&dev).unwrap();
    assert_eq!(ftl.extra.refresh_rewrites, 1);
    assert_eq!(ftl.stats.gc_events, 0);
    // LPNs 1, 3, 5, 7, 9 rewritten contiguously: slope 1/2, one piece, all verified.
    assert_eq!(
        ftl.models.set_offsets(Tpn(0)).collect::<Vec<_>>(),
        vec![1, 3, 5, 7, 9]
    );
    assert_eq!(vppn(&ftl, 9), vppn(&ftl, 1) + 4);
}

#[test]
fn switches_are_parsed_and_bad_values_refused() {
    let (_, ftl) = small(&[
        "design=paper",
        "training=equal-count-ls",
        "tp_write_cost=free",
        "lender=any",
        "dram=equal-dram",
    ]);
    let p = ftl.params();
    assert_eq!(p["training"], "equal-count-ls");
    assert_eq!(p["tp_write_cost"], "free");
    assert_eq!(p["dram"], "equal-dram");
    let cfg = DeviceConfig::preset("tiny").unwrap();
    for bad in [
        "training=sgd",
        "tp_write_cost=cheap",
        "group_tps=2",
        "gc_reserve_lines=0",
        "design=lsm",
        "merge_budget=-1",
        "idle_merge_budget=nan",
        "idle_merge_reads=maybe",
        "lender=warm",
        "group_gc=sideways",
        "refresh_period=soon",
        "dram=lots",
    ] {
        let mut p = Params::new();
        p.insert_assignment(bad, "--set").unwrap();
        let key = bad.split('=').next().unwrap();
        let e = LearnedFtl::new(&cfg, &mut p).err().unwrap().to_string();
        assert!(e.contains(key), "{bad}: {e}");
    }
    // A refresh rewrites whole groups: not with line collections.
    let mut p = Params::from_assignments(
        ["design=paper", "group_gc=line", "refresh_period=1ms"],
        "--set",
    )
    .unwrap();
    let e = LearnedFtl::new(&cfg, &mut p).err().unwrap().to_string();
    assert!(e.contains("refresh_period"), "{e}");
    // The paper design does no idle work.
    for key in LOG_ONLY_KEYS.map(|k| k.name()) {
        let mut p = Params::new();
        p.insert_assignment("design=paper", "--set").unwrap();
        p.insert_assignment(&format!("{key}=1"), "--set").unwrap();
        let e = LearnedFtl::new(&cfg, &mut p).err().unwrap().to_string();
        assert!(e.contains(key) && e.contains("design=log"), "{key}: {e}");
    }
    // dram=paper: CMT 1.5 % of the mappings plus the models; the models are 128 B per TP and
    // 4 B for a rank piece's base.
    let ftl = LearnedFtl::new(&cfg, &mut Params::new()).unwrap();
    let d = ftl.dram();
    assert_eq!(d.parts[1], ("models", 60 * 128 + 60 * 4));
    assert_eq!(ftl.cfg.budget.cache, (0.015 * 30_720.0 * 8.0) as u64);
}

#[test]
fn a_line_collection_sends_pages_home_in_lpn_order_rewrites_tps_and_retrains() {
    let (mut dev, mut ftl) = small(&[
        "design=paper",
        "group_gc=line",
        "cross_group=off",
        "group_line_quota=2",
    ]);
    for i in 0..4 {
        step(
            &mut dev,
            &mut ftl,
            req(Op::Write, 128 * i, 128, i as u64 * 10_000_000),
        );
    }
    // Overwrite LPNs 0..100: group 0 takes a second line; its first holds 412 valid pages.
    step(&mut dev, &mut ftl, req(Op::Write, 0, 100, 50_000_000));
    let first = ftl.geo.line_of(ftl.table.get(Lpn(100)).unwrap());
    assert_ne!(first, ftl.geo.line_of(ftl.table.get(Lpn(0)).unwrap()));
    assert_eq!(dev.line_valid(first), 412);
    assert!(ftl.cache.dirty_entries() > 0);
    let tp_read = ftl.table.gtd.location(Tpn(0)).is_some() as u64;
    let before = dev.counters().clone();
    ftl.collect_one_line(&mut dev, first, SimTime(60_000_000))
        .unwrap();
    ftl.check_invariants(&dev).unwrap();
    let after = dev.counters();
    let c = FlashCounters {
        reads: std::array::from_fn(|i| after.reads[i] - before.reads[i]),
        programs: std::array::from_fn(|i| after.programs[i] - before.programs[i]),
        erases: std::array::from_fn(|i| after.erases[i] - before.erases[i]),
    };
    // Every valid page read and programmed once, the line's 8 blocks erased, TP 0 rewritten.
    assert_eq!(ops(&c, Cause::GcData), (412, 412, 8));
    assert_eq!(ops(&c, Cause::GcTrans), (tp_read, 1, 0));
    assert_eq!(c.total_reads() + c.total_programs(), 824 + tp_read + 1);
    assert_eq!((ftl.extra.line_gcs, ftl.stats.gc_events), (1, 1));
    // Home, in LPN order right after LPN 99: the whole TP is one run, retrained exactly.
    for l in 100..512 {
        assert_eq!(vppn(&ftl, l), vppn(&ftl, 99) + l - 99, "LPN {l}");
    }
    assert_eq!(ftl.models.bits_in(Tpn(0), 0, 512), 512);
    // TP 0 was rewritten with every current value: no cached entry of it is dirty any more.
    assert_eq!(ftl.cache.dirty_entries(), 0);
}

#[test]
fn a_mostly_stale_translation_line_is_the_greedy_victim_under_the_log_design() {
    // design=log: translation and data lines compete in one greedy heap (SPEC §3.5).
    let (mut dev, mut ftl) = small(&[]);
    // Groups 0 and 1 fill a line each, every page valid: no data line frees anything.
    for i in 0..8 {
        step(
            &mut dev,
            &mut ftl,
            req(Op::Write, 128 * i, 128, i as u64 * 10_000_000),
        );
    }
    let t = SimTime(100_000_000);
    let tp = |ftl: &mut LearnedFtl, dev: &mut Device, tpn| {
        let new = ftl.trans_page(dev, t).unwrap();
        ftl.table
            .gtd
            .program(dev, Tpn(tpn), new, Cause::TransWrite, t)
            .unwrap();
    };
    // TPs 1..4 once, then TP 0 until the stream leaves the line: it closes holding 3 valid TPs.
    tp(&mut ftl, &mut dev, 1);
    let line = ftl.alloc.open_line(Stream::TRANS).unwrap();
    tp(&mut ftl, &mut dev, 2);
    tp(&mut ftl, &mut dev, 3);
    while ftl.alloc.open_line(Stream::TRANS) == Some(line) {
        tp(&mut ftl, &mut dev, 0);
    }
    assert_eq!(ftl.alloc.state(line), LineState::Closed(Stream::TRANS));
    assert_eq!(dev.line_valid(line), 3);
    ftl.reclaim(&mut dev, SimTime(200_000_000), 0).unwrap();
    assert_eq!(ftl.alloc.state(line), LineState::Free);
    assert_eq!((ftl.extra.trans_gcs, ftl.extra.line_gcs), (1, 0));
    ftl.check_invariants(&dev).unwrap();
    for tpn in 0..4 {
        let at = ftl.table.gtd.location(Tpn(tpn)).unwrap();
        assert_ne!(ftl.geo.line_of(at), line, "TP {tpn}");
    }
}

#[test]
fn a_collection_cleans_the_cached_entries_of_the_tps_it_rewrote() {
    for mode in ["group_gc=group", "group_gc=line"] {
        // A CMT of two entries (see the scripted scenario): writing LPNs 0..4 leaves 2 and 3
        // cached and dirty.
        let (mut dev, mut ftl) = small(&[
            "design=paper",
            "mapping_dram_bytes=624",
            "group_line_quota=1",
            "cross_group=off",
            mode,
        ]);
        step(&mut dev, &mut ftl, req(Op::Write, 0, 4, 0));
        assert_eq!(ftl.cache.dirty_entries(), 2, "{mode}");
        if mode == "group_gc=line" {
            let line = ftl.alloc.open_line(ftl.groups.stream(0)).unwrap();
            ftl.collect_one_line(&mut dev, line, SimTime(1_000_000))
                .unwrap();
        } else {
            ftl.collect(&mut dev, &[0], SimTime(1_000_000), false)
                .unwrap();
        }
        ftl.check_invariants(&dev).unwrap();
        assert_eq!(ftl.cache.dirty_entries(), 0, "{mode}");
        assert_eq!(ftl.extra.gc_cleaned_entries, 2, "{mode}");
        // Reading two LPNs of TP 1 (never written: free) evicts both entries: nothing is owed
        // (uncleaned, TP 0 would be read and programmed once more).
        let clean = ftl.cache.stats().evicted_clean;
        let c = step(&mut dev, &mut ftl, req(Op::Read, 600, 2, 2_000_000));
        assert_eq!(ftl.cache.stats().evicted_clean, clean + 2, "{mode}");
        assert_eq!(ops(&c, Cause::TransWrite), (0, 0, 0), "{mode}");
        assert_eq!(c.total_reads() + c.total_programs(), 0, "{mode}");
    }
}

/// Fills `tiny` (device keys in `kv` apply) with 512 KiB writes, then 16 KiB random writes
/// over half the logical space.
fn fill_and_fragment(kv: &[&str]) -> crate::engine::Simulator {
    use crate::engine::{NoProgress, SimOptions, Simulator};
    use crate::workload::{JobSpec, RwKind};
    let mut p = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
    let mut sim = Simulator::new(&cfg, "learnedftl", p, SimOptions::default()).unwrap();
    let mut fill = JobSpec::new("fill", RwKind::Write);
    fill.bs = 512 << 10;
    let mut frag = JobSpec::new("fragment", RwKind::RandWrite);
    frag.bs = 16 << 10;
    frag.io_size = Some(cfg.geometry.logical_bytes() / 2);
    frag.iodepth = 8;
    sim.run_jobs("fill", &[fill], 3, &mut NoProgress).unwrap();
    sim.run_jobs("fragment", &[frag], 3, &mut NoProgress)
        .unwrap();
    sim
}

/// Random reads on `sim`; returns the model hits.
fn random_reads(sim: &mut crate::engine::Simulator) -> u64 {
    use crate::engine::NoProgress;
    use crate::workload::{JobSpec, RwKind};
    let mut r = JobSpec::new("r", RwKind::RandRead);
    r.number_ios = Some(2000);
    sim.run_jobs("r", &[r], 3, &mut NoProgress).unwrap();
    sim.ftl().check_invariants(sim.device()).unwrap();
    sim.ftl().stats().model_hits
}

#[test]
fn line_collections_with_any_lender_share_room_and_still_predict() {
    let mut sim = fill_and_fragment(&["design=paper", "group_gc=line", "lender=any"]);
    let x = sim.ftl().extra_counters();
    assert_eq!(x["group_gcs"], 0, "{x}");
    assert!(x["line_gcs"].as_u64().unwrap() > 0, "{x}");
    assert!(x["borrowed_pages"].as_u64().unwrap() > 0, "{x}");
    assert!(random_reads(&mut sim) > 0);
}

#[test]
fn the_property_setup_borrows_collects_pairs_and_predicts() {
    let mut sim = fill_and_fragment(&["design=paper"]);
    let x = sim.ftl().extra_counters();
    assert!(sim.ftl().stats().gc_events > 0);
    assert!(x["borrowed_pages"].as_u64().unwrap() > 0, "{x}");
    assert!(x["paired_gcs"].as_u64().unwrap() > 0, "{x}");
    assert!(random_reads(&mut sim) > 0);
}

#[test]
fn the_property_setup_merges_groups_and_collects_log_lines() {
    // The default never merges; its line collections install rank pieces.
    let mut sim = fill_and_fragment(&[]);
    let x = sim.ftl().extra_counters();
    assert_eq!(x["merges"], 0, "{x}");
    assert!(x["rank_installs"].as_u64().unwrap() > 0, "{x}");
    assert!(random_reads(&mut sim) > 0);
    let mut sim = fill_and_fragment(&["merge_budget=inf"]);
    let x = sim.ftl().extra_counters();
    assert!(x["merges"].as_u64().unwrap() > 0, "{x}");
    assert!(x["line_gcs"].as_u64().unwrap() > 0, "{x}");
    assert!(x["log_lines"].as_u64().unwrap() > 0, "{x}");
    assert!(random_reads(&mut sim) > 0);
}

#[test]
fn hits_are_told_by_the_pieces_that_served_them_and_runs_bound_the_models() {
    // The default's line collections install rank pieces, its 16 KiB writes linear ones
    // (sequential initialisation): both serve reads.
    let mut sim = fill_and_fragment(&[]);
    let hits = random_reads(&mut sim);
    let x = sim.ftl().extra_counters();
    let rank = x["model_hits_rank"].as_u64().unwrap();
    assert!(rank > 0 && rank < hits, "{rank} of {hits}: {x}");
    // The verified LPNs of a rank piece or a piece of slope at most 1 lie in one run, so the 8
    // largest runs of each TP hold at least the set bits of models made of those (the
    // collections' runs and the sequential writes here); the bound grows with the parts and
    // stops at the mapped LPNs.
    let l = &x["layout"];
    let n = |i: usize| l["in_largest"][i].as_u64().unwrap();
    assert_eq!(l["mapped"], x["mapped_lpns"], "{x}");
    assert!(n(1) >= x["bits_set"].as_u64().unwrap(), "{x}");
    assert!(n(0) <= n(1) && n(1) <= n(2) && n(2) <= l["mapped"].as_u64().unwrap());
    assert!(
        l["runs"].as_u64().unwrap() > x["modelled_tps"].as_u64().unwrap(),
        "{x}"
    );
}

#[test]
fn the_property_setup_idles_into_merges_whose_reads_pay_off() {
    use crate::engine::NoProgress;
    use crate::workload::Settle;
    // The property tests' idling variant with room (a lower logical ratio than `tiny`'s, whose
    // 2 spare data lines are GC's reserve: there no group without a line can be merged):
    // the fragmented groups are merged while idle.
    let mut sim = fill_and_fragment(&["logical_ratio=0.85"]);
    let before = random_reads(&mut sim);
    let m = sim
        .settle("settle", Settle::Auto, &mut NoProgress)
        .unwrap()
        .unwrap();
    let x = &m.ftl_counters;
    assert!(x["idle_merges"].as_u64().unwrap() > 0, "{x}");
    assert!(x["idle_merges_read"].as_u64().unwrap() > 0, "{x}");
    sim.ftl().check_invariants(sim.device()).unwrap();
    // Later reads hit the models the merges trained.
    assert!(random_reads(&mut sim) > before);
    let x = sim.ftl().extra_counters();
    assert!(x["idle_paid_reads"].as_u64().unwrap() > 0, "{x}");
}

#[test]
fn idle_collections_keep_moved_mappings_in_the_cmt_and_write_fewer_tps() {
    use crate::engine::NoProgress;
    use crate::workload::Settle;
    // The idling setup of the test above, once per way of updating the TPs of the pages idle
    // collections move: the same merges, fewer translation programs when the CMT holds the
    // new mappings until a TP is written back once for many.
    let settle = |kv: &str| {
        let mut sim = fill_and_fragment(&["logical_ratio=0.85", kv]);
        let m = sim
            .settle("settle", Settle::Auto, &mut NoProgress)
            .unwrap()
            .unwrap();
        sim.ftl().check_invariants(sim.device()).unwrap();
        let hits = random_reads(&mut sim);
        let p = &m.flash.programs;
        let tps = p[Cause::GcTrans.key()] + p[Cause::TransWrite.key()];
        (m.ftl_counters, tps, hits)
    };
    let (cached, cached_tps, cached_hits) = settle("idle_gc_updates=cache");
    let (rewritten, rewritten_tps, rewritten_hits) = settle("idle_gc_updates=rewrite");
    assert!(
        cached["idle_cached_moves"].as_u64().unwrap() > 0,
        "{cached}"
    );
    assert_eq!(rewritten["idle_cached_moves"], 0, "{rewritten}");
    assert!(cached["idle_merges"].as_u64().unwrap() > 0, "{cached}");
    assert!(
        cached_tps < rewritten_tps,
        "{cached_tps} vs {rewritten_tps}"
    );
    assert!(cached_hits > 0 && rewritten_hits > 0);
}

#[test]
fn idle_merges_that_no_reclaim_can_make_room_for_move_nothing() {
    use crate::engine::NoProgress;
    use crate::workload::Settle;
    // On `tiny` every spare data line is GC's reserve: a merge needing a line of its own can
    // never have one, so idling collects nothing for it.
    let mut sim = fill_and_fragment(&[]);
    let m = sim
        .settle("settle", Settle::Auto, &mut NoProgress)
        .unwrap()
        .unwrap();
    let x = &m.ftl_counters;
    assert_eq!(x["idle_merges"], 0, "{x}");
    assert_eq!(x["idle_room_pages"], 0, "{x}");
}

#[test]
fn paper_only_keys_are_refused_under_the_log_design() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    for key in PAPER_ONLY_KEYS.map(|k| k.name()) {
        let mut p = Params::new();
        p.insert_assignment(&format!("{key}=1"), "--set").unwrap();
        let e = LearnedFtl::new(&cfg, &mut p).err().unwrap().to_string();
        assert!(e.contains(key) && e.contains("design=paper"), "{key}: {e}");
    }
}

/// WAF of 4 KiB random writes over the whole logical space of a fully mapped `tiny` (filled
/// with 512 KiB sequential writes first), 64 jobs.
fn sustained_random_waf(ftl: &str, kv: &[&str]) -> f64 {
    use crate::engine::{NoProgress, SimOptions, Simulator};
    use crate::workload::{JobSpec, RwKind};
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let p = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let mut sim = Simulator::new(&cfg, ftl, p, SimOptions::default()).unwrap();
    let mut fill = JobSpec::new("fill", RwKind::Write);
    fill.bs = 512 << 10;
    sim.run_jobs("fill", &[fill], 1, &mut NoProgress).unwrap();
    let mut w = JobSpec::new("randwrite", RwKind::RandWrite);
    w.bs = 4 << 10;
    w.numjobs = 64;
    w.io_size = Some(cfg.geometry.logical_bytes() / 64);
    let m = sim.run_jobs("randwrite", &[w], 1, &mut NoProgress).unwrap();
    m.waf
}

#[test]
fn sustained_random_writes_on_a_full_device_keep_waf_near_the_baselines() {
    // Every FTL keeps the same 2-line reserve.
    let same = ["gc_fg_ratio=0", "gc_bg_ratio=0"];
    let tpftl = sustained_random_waf("tpftl", &same);
    // The default design, translation writes charged as TPFTL's are (measured 38.4 against
    // TPFTL's 32.1; the paper design collapses here: WAF ~500). Against the ideal FTL (15.1)
    // no demand-based FTL comes within 1.5x on this device: TPFTL is at 2.1x.
    let learned = sustained_random_waf("learnedftl", &[]);
    assert!(
        learned <= 1.5 * tpftl,
        "LearnedFTL WAF {learned:.2} against TPFTL's {tpftl:.2}"
    );
    // Its data placement alone (free translation writes, merges off) against the ideal FTL's.
    let ideal = sustained_random_waf("ideal", &same);
    let placement = sustained_random_waf("learnedftl", &["merge_budget=0", "tp_write_cost=free"]);
    assert!(
        placement <= 1.5 * ideal,
        "LearnedFTL data WAF {placement:.2} against the ideal FTL's {ideal:.2}"
    );
}

/// Writes every LPN of groups 1 and 2 of `small` one page at a time in a scattered order (no
/// two consecutive offsets in a row: no run, no bit), reads `reads` LPNs of group 2, then
/// idles until nothing is owed; returns the FTL (parameters `kv` on top of a budget for one
/// merge).
fn scatter_read_idle(reads: u32, kv: &[&str]) -> LearnedFtl {
    // Credit for one merge: 1,024 pages written at half a page each.
    let kv: Vec<&str> = ["idle_merge_budget=0.5"]
        .iter()
        .chain(kv)
        .copied()
        .collect();
    let (mut dev, mut ftl) = small(&kv);
    let mut t = 0;
    for g in [1, 2] {
        for i in 0..512 {
            step(
                &mut dev,
                &mut ftl,
                req(Op::Write, 512 * g + i * 37 % 512, 1, t),
            );
            t += 100_000;
        }
    }
    assert_eq!(
        ftl.models.bits_in(Tpn(1), 0, 512) + ftl.models.bits_in(Tpn(2), 0, 512),
        0
    );
    for i in 0..reads {
        step(
            &mut dev,
            &mut ftl,
            req(Op::Read, 1024 + i * 101 % 512, 1, t),
        );
        t += 100_000;
    }
    while let Some(done) = ftl.idle(&mut dev, SimTime(t)).unwrap() {
        t = t.max(done.0);
        ftl.check_invariants(&dev).unwrap();
    }
    ftl
}

#[test]
fn idle_merges_train_a_read_hot_group_before_a_read_cold_one() {
    // Unread, the two groups miss alike and the lower one is merged.
    let ftl = scatter_read_idle(0, &[]);
    assert_eq!(ftl.extra.idle_merges, 1);
    assert_eq!(ftl.extra.idle_merges_read, 0);
    assert_eq!(ftl.models.bits_in(Tpn(1), 0, 512), 512);
    assert_eq!(ftl.models.bits_in(Tpn(2), 0, 512), 0);
    // Reads of group 2 (double reads: its model misses) make it the one worth training...
    let ftl = scatter_read_idle(64, &[]);
    assert!(ftl.groups.heat[2] > 0 && ftl.groups.heat[1] == 0);
    assert_eq!(ftl.extra.idle_merges, 1);
    assert_eq!(ftl.extra.idle_merges_read, 1);
    assert_eq!(ftl.extra.idle_merge_pages, 512);
    assert_eq!(ftl.extra.idle_merge_gained, 512);
    assert_eq!(ftl.models.bits_in(Tpn(2), 0, 512), 512);
    assert_eq!(ftl.models.bits_in(Tpn(1), 0, 512), 0);
    assert!(ftl.groups.idle_trained[2]);
    // ... unless idle merges rank by misses alone.
    let ftl = scatter_read_idle(64, &["idle_merge_reads=off"]);
    assert_eq!(ftl.models.bits_in(Tpn(1), 0, 512), 512);
    assert_eq!(ftl.models.bits_in(Tpn(2), 0, 512), 0);
}

#[test]
fn idle_merges_off_restore_the_old_default_and_the_credit_bounds_them() {
    // TP 1's 512 LPNs written in a scattered order.
    let scattered = |set: &[&str]| {
        let (mut dev, mut ftl) = small(set);
        for i in 0..512 {
            step(
                &mut dev,
                &mut ftl,
                req(Op::Write, 512 + i * 37 % 512, 1, i as u64 * 100_000),
            );
        }
        (dev, ftl)
    };
    // idle_merge_budget=0: idling only collects by the background rule and writes back.
    let (mut dev, mut ftl) = scattered(&["idle_merge_budget=0"]);
    while ftl.idle(&mut dev, SimTime(60_000_000)).unwrap().is_some() {}
    assert_eq!(ftl.extra.idle_merges, 0);
    assert_eq!(ftl.models.bits_in(Tpn(1), 0, 512), 0);
    // With credit for 256 pages, a 512-page merge is not covered.
    let (mut dev, mut ftl) = scattered(&["idle_merge_budget=0.5"]);
    assert!(!ftl.idle_credit.covers(513));
    while ftl.idle(&mut dev, SimTime(60_000_000)).unwrap().is_some() {}
    assert_eq!(ftl.extra.idle_merges, 0);
}
