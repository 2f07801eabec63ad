use super::*;
use crate::engine::{NoProgress, SimOptions, Simulator};
use crate::ftl::NullSink;
use crate::workload::{JobSpec, RwKind};

fn setup(kv: &[&str]) -> (Device, HpFtl) {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut p = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let ftl = HpFtl::new(&cfg, &mut p).unwrap();
    p.finish().unwrap();
    (Device::new(&cfg), ftl)
}

fn req(op: Op, lpn: u32, pages: u32, t: u64, stamp: u32) -> Request {
    Request::new(op, lpn, pages, t, stamp)
}

/// Serves a request, then the background work, as the engine does.
fn serve(f: &mut HpFtl, d: &mut Device, r: Request) -> SimTime {
    let done = f.submit(d, &r, &mut NullSink).unwrap();
    f.background(d, r.arrival).unwrap();
    done
}

#[test]
fn writes_take_the_first_hash_candidate_and_reads_are_single() {
    let (mut d, mut f) = setup(&["h=2"]);
    let g = d.geo().clone();
    let done = serve(&mut f, &mut d, req(Op::Write, 10, 4, 0, 1));
    // Four programs at time 0, on (usually) different LUNs: 200 µs unless two share one.
    assert!(done >= SimTime(200_000));
    for lpn in 10..14u32 {
        let b = f.hashes.hash(0, lpn);
        let loc = f.locate(lpn).unwrap();
        assert_eq!(loc.ppa().map(|p| g.block_of(p)), Some(b), "LPN {lpn}");
        assert!(matches!(loc, Loc::Primary { hid: 1, .. }));
    }
    let c = d.counters().clone();
    assert_eq!(
        (c.total_programs(), c.total_reads(), c.total_erases()),
        (4, 0, 0)
    );
    serve(&mut f, &mut d, req(Op::Read, 8, 8, 1_000_000, 0));
    let c = d.counters();
    assert_eq!(
        c.reads[Cause::User as usize],
        4,
        "4 mapped pages, one read each"
    );
    assert_eq!(c.total_reads(), 4);
    assert_eq!(f.stats().lookups, [4, 4, 0, 0]);
    // Trim unmaps.
    serve(&mut f, &mut d, req(Op::Trim, 10, 2, 2_000_000, 0));
    assert_eq!(f.locate(10).unwrap(), Loc::Unmapped);
    f.check_invariants(&d).unwrap();
}

#[test]
fn sequential_programming_decides_the_candidate() {
    // m = p − 1: an LPN reaches only the pages whose lowest bit equals its own.
    let (mut d, mut f) = setup(&["m=5"]);
    let ppb = f.ppb;
    // Fresh device: every block's next page is 0, so an odd LPN fits nowhere.
    serve(&mut f, &mut d, req(Op::Write, 1, 1, 0, 1));
    assert!(matches!(f.locate(1).unwrap(), Loc::Secondary { .. }));
    assert_eq!(f.ctr.host_pages_secondary, 1);
    // An even LPN takes page 0 of H_1.
    serve(&mut f, &mut d, req(Op::Write, 0, 1, 0, 2));
    let b0 = f.hashes.hash(0, 0);
    assert_eq!(f.locate(0).unwrap().ppa(), Some(Ppa(b0 * ppb)));
    // That block now waits for an odd LPN: find one whose H_1 is b0 and whose other
    // candidates cannot take it.
    let odd = (1..1_000_000u32)
        .step_by(2)
        .find(|&l| f.hashes.hash(0, l) == b0)
        .unwrap();
    serve(&mut f, &mut d, req(Op::Write, odd, 1, 0, 3));
    assert_eq!(
        f.locate(odd).unwrap(),
        Loc::Primary {
            hid: 1,
            ppa: Ppa(b0 * ppb + 1)
        }
    );
    // An even LPN hashing to b0 first must go elsewhere (page 2 would be representable, but
    // page 2 is the next page only after page 1 — it is, so it fits: take one more odd step).
    let even = (2..1_000_000u32)
        .step_by(2)
        .find(|&l| f.hashes.hash(0, l) == b0)
        .unwrap();
    serve(&mut f, &mut d, req(Op::Write, even, 1, 0, 4));
    assert_eq!(f.locate(even).unwrap().ppa(), Some(Ppa(b0 * ppb + 2)));
    let odd2 = (odd + 2..1_000_000u32)
        .step_by(2)
        .find(|&l| f.hashes.hash(0, l) == b0)
        .unwrap();
    let other: Vec<u32> = (1..f.codec.functions())
        .map(|i| f.hashes.hash(i, odd2))
        .collect();
    serve(&mut f, &mut d, req(Op::Write, odd2, 1, 0, 5));
    // b0's next page is 3 (odd): odd2 fits there through H_1.
    assert_eq!(f.locate(odd2).unwrap().ppa(), Some(Ppa(b0 * ppb + 3)));
    assert!(!other.is_empty());
    f.check_invariants(&d).unwrap();
}

#[test]
fn probing_starts_at_the_current_hid_or_the_first() {
    for (probe, expect_first) in [("current", false), ("first", true)] {
        let (mut d, mut f) = setup(&["h=2", &format!("probe={probe}")]);
        let ppb = f.ppb;
        // Put LPN 7 into the secondary table by hand-filling both its candidates.
        let cands = [f.hashes.hash(0, 7), f.hashes.hash(1, 7)];
        let mut stamp = 1;
        let mut lpn = 1000;
        for &b in &cands {
            while d.block_written(b) < ppb {
                let p = Ppa(b * ppb + d.block_written(b));
                f.program(
                    &mut d,
                    p,
                    Oob::data(Lpn(lpn), stamp),
                    Src::Host,
                    Cause::User,
                    SimTime(0),
                )
                .unwrap();
                f.invalidate(&mut d, p).unwrap();
                lpn += 1;
                stamp += 1;
            }
        }
        serve(&mut f, &mut d, req(Op::Write, 7, 1, 0, 99));
        assert!(matches!(f.locate(7).unwrap(), Loc::Secondary { .. }));
        // Erase H_1's block: a rewrite with probe=first goes back to the primary table; with
        // probe=current (Algorithm 1) it stays in its secondary slot.
        f.erase(&mut d, cands[0], SimTime(0)).unwrap();
        let used = f.sec.used();
        serve(&mut f, &mut d, req(Op::Write, 7, 1, 0, 100));
        let loc = f.locate(7).unwrap();
        assert_eq!(
            matches!(loc, Loc::Primary { hid: 1, .. }),
            expect_first,
            "{probe}"
        );
        assert_eq!(f.sec.used(), if expect_first { used - 1 } else { used });
        f.check_invariants(&d).unwrap();
    }
}

/// Fills the device sequentially, then writes `n` random single pages (an LCG seeded by
/// `seed`), 100 µs apart, handing each request to `step` to serve and check.
fn fill_then_overwrite(
    f: &mut HpFtl,
    d: &mut Device,
    n: u64,
    seed: u64,
    mut step: impl FnMut(&mut HpFtl, &mut Device, Request),
) {
    let lp = d.geo().logical_pages as u32;
    let (mut t, mut stamp) = (0u64, 0u32);
    for lpn in (0..lp).step_by(64) {
        stamp += 1;
        serve(f, d, req(Op::Write, lpn, 64.min(lp - lpn), t, stamp));
        t += 1_000_000;
    }
    let mut x = seed;
    for _ in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        stamp += 1;
        step(
            f,
            d,
            req(Op::Write, ((x >> 33) % lp as u64) as u32, 1, t, stamp),
        );
        t += 100_000;
    }
}

#[test]
fn gc_follows_the_secondary_watermarks() {
    // Two hash functions and a small secondary table: random overwrites of a full device
    // push mappings into the secondary table until GC must clean. HP-FTL's own page
    // thresholds (gc=femu): on tiny the shared 2-line reserve is half of the 4 spare lines, so
    // free pages rarely exceed what moving entries back needs and the slots cannot recover.
    let (mut d, mut f) = setup(&["design=paper", "gc=femu"]);
    let (low, high) = (f.cfg.sec_low_slots, f.cfg.sec_high_slots);
    let mut triggered = 0;
    fill_then_overwrite(&mut f, &mut d, 20_000, 12345, |f, d, r| {
        f.submit(d, &r, &mut NullSink).unwrap();
        let needed = f.gc_needed();
        let runs = f.ctr.gc_runs;
        f.background(d, r.arrival).unwrap();
        if needed {
            triggered += 1;
            assert!(f.ctr.gc_runs > runs);
            // A run ends at the high watermarks (unless a round stopped making progress).
            assert!(f.sec.free_slots() >= high || f.free_pages < f.cfg.gc_free_high_pages);
        } else {
            assert_eq!(f.ctr.gc_runs, runs, "GC ran above the low watermarks");
        }
        assert!(f.sec.free_slots() >= low.min(f.cfg.slot_reserve));
    });
    assert!(triggered > 0, "the watermark never triggered");
    assert!(f.ctr.gc_moved_back > 0, "GC never moved an entry back");
    assert!(f.stats.gc_events > 0);
    f.check_invariants(&d).unwrap();
}

#[test]
fn grow_design_lets_only_free_pages_drive_gc_and_budgets_moves_back() {
    // A small table on a full device under random overwrites: under design=paper its slot
    // watermarks would drive GC; under design=grow the table grows instead, GC runs by the
    // free-page rule alone, and moves back take at most `move_back_budget` pages per host page
    // (plus the one round's worth of credit that may be banked).
    for budget in [0.0, 0.25] {
        let (mut d, mut f) = setup(&[
            "secondary_ratio=0.05",
            &format!("move_back_budget={budget}"),
        ]);
        let host = 20_000u64;
        fill_then_overwrite(&mut f, &mut d, host, 99, |f, d, r| {
            f.submit(d, &r, &mut NullSink).unwrap();
            let runs = f.ctr.gc_runs;
            let pages_short = f.free_pages < f.cfg.gc_free_low_pages;
            f.background(d, r.arrival).unwrap();
            if !pages_short {
                assert_eq!(
                    f.ctr.gc_runs, runs,
                    "GC ran with free pages above the threshold"
                );
            }
        });
        assert!(f.ctr.secondary_grown > 0, "the table never had to grow");
        assert!(f.stats.gc_events > 0);
        let banked = (f.cfg.gc_batch * f.ppb) as f64;
        let moved = f.ctr.gc_moved_back as f64;
        let earned = budget * (host + d.geo().logical_pages) as f64;
        assert!(
            moved <= earned + banked,
            "{moved} moved back, {earned} earned"
        );
        if budget > 0.0 {
            assert!(moved > 0.0, "no entry ever moved back");
        }
        f.check_invariants(&d).unwrap();
    }
}

#[test]
fn writes_spread_over_the_luns() {
    let (mut d, mut f) = setup(&[]);
    let mut x = 99u64;
    for i in 0..4096u32 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let lpn = ((x >> 33) % 30_000) as u32;
        serve(
            &mut f,
            &mut d,
            req(Op::Write, lpn, 1, i as u64 * 1000, i + 1),
        );
    }
    let e = f.extra_counters();
    let max = e["lun_programs_max_over_mean"].as_f64().unwrap();
    let min = e["lun_programs_min_over_mean"].as_f64().unwrap();
    assert!(max < 1.15 && min > 0.85, "max/mean {max}, min/mean {min}");
}

#[test]
fn dram_is_accounted_by_part_and_within_budget() {
    let (d, f) = setup(&["h=3", "m=5", "secondary_ratio=0.05"]);
    let lp = d.geo().logical_pages;
    let u = f.dram();
    assert_eq!(u.parts[0], ("primary", (lp * 8).div_ceil(8)));
    assert_eq!(u.parts[1], ("secondary_used", 0));
    assert_eq!(u.parts[2].1, (lp as f64 * 0.05) as u64 * 8);
    assert_eq!(u.total(), u.budget.unwrap());
    assert_eq!(f.dram_total(), u.total());
    // dram_ratio: the secondary gets what the primary leaves of the budget.
    let (_, f) = setup(&["dram_ratio=0.4"]);
    let budget = (0.4 * lp as f64 * 8.0) as u64;
    let primary = (lp * 9).div_ceil(8);
    assert_eq!(f.cfg.secondary_slots as u64, (budget - primary) / 8);
    assert!(f.dram_total() <= budget);
    for bad in [
        "dram_ratio=0.1",
        "h=1",
        "m=7",
        "hash=sha",
        "sec_high=1.5",
        "gc_batch=0",
        "secondary_growth=0",
        "design=cuckoo",
        "move_back_budget=-1",
        "sec_low=0.1",
    ] {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let mut p = Params::new();
        p.insert_assignment(bad, "test").unwrap();
        let e = HpFtl::new(&cfg, &mut p).err().unwrap().to_string();
        let key = bad.split('=').next().unwrap();
        assert!(e.contains(key), "{bad}: {e}");
    }
    // Too small a budget names the smallest one accepted, and that one is accepted.
    for (bad, key) in [
        ("dram_ratio=0.1", "dram_ratio"),
        ("secondary_ratio=0.001", "secondary_ratio"),
    ] {
        let mut p = Params::from_assignments([bad], "test").unwrap();
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let e = HpFtl::new(&cfg, &mut p).err().unwrap().to_string();
        let min = e
            .rsplit_once(&format!("{key} ≥ "))
            .and_then(|(_, m)| m.trim_end_matches(')').parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{bad}: no minimum in {e}"));
        setup(&[&format!("{key}={min}")]);
        let below = format!("{key}={}", min - 1e-4);
        let mut p = Params::from_assignments([below.as_str()], "test").unwrap();
        assert!(HpFtl::new(&cfg, &mut p).is_err(), "{below}");
    }
}

#[test]
fn a_read_never_needs_more_than_one_flash_read() {
    for kv in [vec![], vec!["m=3", "h=2", "secondary_ratio=1"]] {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let mut p = Params::new();
        for a in &kv {
            p.insert_assignment(a, "test").unwrap();
        }
        let opts = SimOptions {
            check_invariants: false,
            ..SimOptions::checked()
        };
        let mut sim = Simulator::new(&cfg, "hpftl", p, opts).unwrap();
        let mut w = JobSpec::new("w", RwKind::RandWrite);
        w.bs = 16 << 10;
        w.io_size = Some(cfg.geometry.logical_bytes());
        w.iodepth = 8;
        sim.run_jobs("w", &[w], 3, &mut NoProgress).unwrap();
        let mut r = JobSpec::new("r", RwKind::RandRead);
        r.number_ios = Some(3000);
        r.numjobs = 4;
        let m = sim.run_jobs("r", &[r], 3, &mut NoProgress).unwrap();
        assert_eq!(m.verify.failures, 0);
        assert_eq!(m.lookups.double + m.lookups.triple, 0, "{kv:?}");
        assert_eq!(m.flash.reads["total"], m.lookups.single, "{kv:?}");
        assert_eq!(m.flash.reads["user"], m.lookups.single);
        let e = &m.ftl_counters;
        assert!(
            e["reads_secondary"].as_u64().unwrap() > 0,
            "{kv:?}: no secondary reads"
        );
        assert!(e["reads_primary"].as_u64().unwrap() > 0);
        sim.ftl().check_invariants(sim.device()).unwrap();
    }
}

#[test]
fn idle_lun_pick_takes_the_candidate_whose_lun_frees_first() {
    for (pick, expect_hid) in [("first", 1), ("idle-lun", 2)] {
        let (mut d, mut f) = setup(&["h=2", &format!("cand_pick={pick}")]);
        let g = d.geo().clone();
        // An LPN whose two candidates lie on different LUNs.
        let lpn = (0..10_000u32)
            .find(|&l| {
                let lun = |i| g.lun_of(Ppa(f.hashes.hash(i, l) * f.ppb));
                lun(0) != lun(1)
            })
            .unwrap();
        // Make H_1's LUN busy until 200 µs: another LPN whose H_1 is the same block goes there
        // first (both LUNs idle: the first candidate either way).
        let busy_block = f.hashes.hash(0, lpn);
        let other = (0..10_000u32)
            .find(|&l| l != lpn && f.hashes.hash(0, l) == busy_block)
            .unwrap();
        serve(&mut f, &mut d, req(Op::Write, other, 1, 0, 1));
        serve(&mut f, &mut d, req(Op::Write, lpn, 1, 0, 2));
        let Loc::Primary { hid, .. } = f.locate(lpn).unwrap() else {
            panic!("{pick}: not in the primary table");
        };
        assert_eq!(hid, expect_hid, "{pick}");
        f.check_invariants(&d).unwrap();
    }
}
