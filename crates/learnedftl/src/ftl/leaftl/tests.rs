//! Scripted LeaFTL scenarios with exact flash-operation counts, and a run that checks every
//! mechanism (flushes, GC learning, compaction, mispredictions, evictions) really happens.

use super::*;
use crate::engine::{NoProgress, SimOptions, Simulator};
use crate::ftl::NullSink;
use crate::workload::{JobSpec, RwKind};

fn tiny(kv: &[&str]) -> (Device, Leaftl) {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut p = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let ftl = Leaftl::new(&cfg, &mut p).unwrap();
    p.finish().unwrap();
    (Device::new(&cfg), ftl)
}

fn req(op: Op, lpn: u32, pages: u32, t: u64, stamp: u32) -> Request {
    Request::new(op, lpn, pages, t, stamp)
}

/// Collects what a read returned.
#[derive(Default)]
struct Got(Vec<(Lpn, Served)>);

impl ReadSink for Got {
    fn deliver(&mut self, _: &Device, lpn: Lpn, from: Served) {
        self.0.push((lpn, from));
    }
}

/// Flash reads and programs by cause since `before`.
fn delta(dev: &Device, before: &crate::device::FlashCounters) -> ([u64; 7], [u64; 7]) {
    let c = dev.counters();
    (
        std::array::from_fn(|i| c.reads[i] - before.reads[i]),
        std::array::from_fn(|i| c.programs[i] - before.programs[i]),
    )
}

const USER: usize = Cause::User as usize;
const TREAD: usize = Cause::TransRead as usize;
const TWRITE: usize = Cause::TransWrite as usize;
const MISS: usize = Cause::Mispredict as usize;

/// Evicts every cached group (writing dirty ones back), as memory pressure would.
fn drop_cache(ftl: &mut Leaftl, dev: &mut Device, t: u64) {
    let keep = ftl.params.budget.cache;
    ftl.params.budget.cache = 0;
    ftl.enforce_budget(dev, SimTime(t)).unwrap();
    ftl.params.budget.cache = keep;
}

fn read_one(ftl: &mut Leaftl, dev: &mut Device, lpn: u32, t: u64) -> Served {
    let mut got = Got::default();
    ftl.submit(dev, &req(Op::Read, lpn, 1, t, 0), &mut got)
        .unwrap();
    assert_eq!(got.0.len(), 1);
    got.0[0].1
}

#[test]
fn cached_hit_miss_buffer_and_flush_cost_exactly() {
    let (mut dev, mut ftl) = tiny(&["write_buffer_pages=8"]);
    // Seven pages stay in the buffer: the write completes at once, nothing reaches flash.
    let done = ftl
        .submit(&mut dev, &req(Op::Write, 0, 7, 0, 1), &mut NullSink)
        .unwrap();
    assert_eq!(done, SimTime(0));
    assert_eq!(dev.counters().total_programs(), 0);
    // A buffered page is read from DRAM.
    assert_eq!(
        read_one(&mut ftl, &mut dev, 3, 10),
        Served::Buffer { stamp: 1 }
    );
    assert_eq!(dev.counters().total_reads(), 0);
    assert_eq!(ftl.stats.lookups, [1, 0, 0, 0]);
    // The eighth page fills the buffer: 8 user programs, sorted, one accurate segment learned;
    // group 0 has no TP yet, so nothing is read.
    ftl.submit(&mut dev, &req(Op::Write, 7, 1, 20, 2), &mut NullSink)
        .unwrap();
    let (r, p) = delta(&dev, &Default::default());
    assert_eq!((r, p[USER], p.iter().sum::<u64>()), ([0; 7], 8, 8));
    let t = &ftl.map.groups[0];
    assert_eq!((t.segments(), t.levels().len()), (1, 1));
    assert!(t.levels()[0].segs()[0].is_accurate());
    assert!(ftl.map.cache.contains(0) && ftl.map.cache.is_dirty(0));
    // Cached accurate segment: one flash read, a model hit.
    let before = dev.counters().clone();
    let Served::Flash { oob, .. } = read_one(&mut ftl, &mut dev, 5, 10_000_000) else {
        panic!("not from flash")
    };
    assert_eq!(oob, Oob::data(Lpn(5), 1));
    let (r, p) = delta(&dev, &before);
    assert_eq!(
        (r[USER], r.iter().sum::<u64>(), p.iter().sum::<u64>()),
        (1, 1, 0)
    );
    assert_eq!(ftl.stats.model_hits, 1);
    // Eviction of the dirty group: one TP program, no read (the whole group is in DRAM).
    let before = dev.counters().clone();
    drop_cache(&mut ftl, &mut dev, 20_000_000);
    let (r, p) = delta(&dev, &before);
    assert_eq!(
        (r.iter().sum::<u64>(), p[TWRITE], p.iter().sum::<u64>()),
        (0, 1, 1)
    );
    // Cache miss: the TP read, then the data read when it completes (a double read).
    let before = dev.counters().clone();
    let t0 = 30_000_000;
    let mut got = Got::default();
    let done = ftl
        .submit(&mut dev, &req(Op::Read, 7, 1, t0, 0), &mut got)
        .unwrap();
    let (r, p) = delta(&dev, &before);
    assert_eq!((r[TREAD], r[USER], r.iter().sum::<u64>()), (1, 1, 2));
    assert_eq!(p.iter().sum::<u64>(), 0);
    assert_eq!(done, SimTime(t0 + 2 * 40_000));
    assert_eq!(ftl.stats.lookups, [1, 1, 1, 0]);
    // FLUSH with an empty buffer: nothing to do, durable at once.
    let before = dev.counters().clone();
    let d = ftl
        .submit(&mut dev, &req(Op::Flush, 0, 0, t0 + 1, 0), &mut NullSink)
        .unwrap();
    assert_eq!(d, SimTime(t0 + 1));
    assert_eq!(delta(&dev, &before), ([0; 7], [0; 7]));
    ftl.check_invariants(&dev).unwrap();
}

/// LPN offsets written together with irregular gaps: with γ = 2 they learn approximate
/// segments, some of whose predictions are off by a page or two.
const IRREGULAR: [u32; 8] = [0, 1, 4, 5, 6, 9, 13, 14];

#[test]
fn misprediction_costs_one_read_and_a_miss_makes_it_triple() {
    let (mut dev, mut ftl) = tiny(&["write_buffer_pages=8", "gamma=2"]);
    for (i, &lpn) in IRREGULAR.iter().enumerate() {
        ftl.submit(
            &mut dev,
            &req(Op::Write, lpn, 1, i as u64, 10 + i as u32),
            &mut NullSink,
        )
        .unwrap();
    }
    let table = &ftl.map.groups[0];
    assert!(table.approximate_segments() > 0, "{:?}", table.levels());
    ftl.check_invariants(&dev).unwrap();
    // Which LPNs does the learned table mispredict?
    let wrong: Vec<u32> = IRREGULAR
        .iter()
        .copied()
        .filter(|&l| {
            let s = table.lookup(l as u8).0.unwrap();
            let truth = ftl.geo_vppn(l);
            s.predict(l as u8) != truth
        })
        .collect();
    let right = IRREGULAR
        .iter()
        .copied()
        .find(|l| !wrong.contains(l))
        .unwrap();
    let wrong = *wrong
        .first()
        .expect("γ = 2 over irregular gaps mispredicts somewhere");
    // Cached, predicted right: one read.
    let before = dev.counters().clone();
    read_one(&mut ftl, &mut dev, right, 10_000_000);
    let (r, _) = delta(&dev, &before);
    assert_eq!((r[USER], r.iter().sum::<u64>()), (1, 1));
    // Cached, mispredicted: the predicted page (misprediction), then the right one.
    let before = dev.counters().clone();
    let Served::Flash { oob, .. } = read_one(&mut ftl, &mut dev, wrong, 20_000_000) else {
        panic!("not from flash")
    };
    assert_eq!(oob.lpn(), Some(Lpn(wrong)));
    let (r, _) = delta(&dev, &before);
    assert_eq!((r[MISS], r[USER], r.iter().sum::<u64>()), (1, 1, 2));
    assert_eq!(
        (ftl.map.c.mispredictions, ftl.map.c.oob_window_misses),
        (1, 0)
    );
    // Not cached and mispredicted: TP read, wrong page, right page: a triple read.
    drop_cache(&mut ftl, &mut dev, 30_000_000);
    let before = dev.counters().clone();
    read_one(&mut ftl, &mut dev, wrong, 40_000_000);
    let (r, _) = delta(&dev, &before);
    assert_eq!(
        (r[TREAD], r[MISS], r[USER], r.iter().sum::<u64>()),
        (1, 1, 1, 3)
    );
    assert_eq!(ftl.stats.lookups[3], 1);
    assert_eq!(ftl.stats.lookups, [0, 1, 1, 1]);
    assert_eq!(ftl.stats.model_hits, 0);
    assert_eq!(ftl.stats.cmt_hits, 2);
}

impl Leaftl {
    /// The VPPN `lpn` truly lives at (tests only).
    fn geo_vppn(&self, lpn: u32) -> i64 {
        self.map.geo.ppa_to_vppn(Ppa(self.map.l2p[lpn as usize])).0 as i64
    }
}

#[test]
fn trim_unmaps_buffered_and_flushed_pages() {
    let (mut dev, mut ftl) = tiny(&["write_buffer_pages=4"]);
    ftl.submit(&mut dev, &req(Op::Write, 100, 4, 0, 1), &mut NullSink)
        .unwrap();
    ftl.submit(&mut dev, &req(Op::Write, 200, 2, 1, 2), &mut NullSink)
        .unwrap();
    ftl.submit(&mut dev, &req(Op::Trim, 101, 1, 2, 0), &mut NullSink)
        .unwrap();
    ftl.submit(&mut dev, &req(Op::Trim, 201, 1, 3, 0), &mut NullSink)
        .unwrap();
    ftl.check_invariants(&dev).unwrap();
    assert_eq!(read_one(&mut ftl, &mut dev, 101, 10), Served::Unmapped);
    assert_eq!(read_one(&mut ftl, &mut dev, 201, 10), Served::Unmapped);
    assert_eq!(
        read_one(&mut ftl, &mut dev, 200, 10),
        Served::Buffer { stamp: 2 }
    );
    assert!(matches!(
        read_one(&mut ftl, &mut dev, 102, 10),
        Served::Flash { .. }
    ));
    // The flushed run was split around the trimmed page.
    assert_eq!(ftl.map.groups[0].segments(), 2);
}

#[test]
fn a_full_buffer_makes_writes_wait_for_programs() {
    // One-page buffer: each write flushes, the next waits until that program frees the slot.
    let (mut dev, mut ftl) = tiny(&["write_buffer_pages=1"]);
    let a = ftl
        .submit(&mut dev, &req(Op::Write, 0, 1, 0, 1), &mut NullSink)
        .unwrap();
    let b = ftl
        .submit(&mut dev, &req(Op::Write, 1, 1, 0, 2), &mut NullSink)
        .unwrap();
    assert_eq!(a, SimTime(0));
    assert_eq!(b, SimTime(200_000));
    let f = ftl
        .submit(&mut dev, &req(Op::Flush, 0, 0, 0, 0), &mut NullSink)
        .unwrap();
    // The second page's program was issued when it entered the buffer, at 200 µs.
    assert_eq!(f, SimTime(400_000));
}

#[test]
fn invalid_parameters_are_refused() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    for (kv, field) in [
        ("gamma=16", "gamma"),
        ("write_buffer_pages=0", "write_buffer_pages"),
        ("compaction_interval=0", "compaction_interval"),
        ("mapping_dram_bytes=2k", "mapping_dram_bytes"),
    ] {
        let mut p = Params::new();
        p.insert_assignment(kv, "t").unwrap();
        let e = Leaftl::new(&cfg, &mut p).err().expect(kv).to_string();
        assert!(e.contains(field), "{kv}: {e}");
    }
    let mut p = Params::new();
    p.insert_assignment("oob_size=256", "t").unwrap();
    let big = DeviceConfig::from_params("tiny", &mut p).unwrap();
    p.insert_assignment("gamma=16", "t").unwrap();
    assert!(Leaftl::new(&big, &mut p).is_ok());
}

/// Fill, fragment and read with γ = 2, a small cache and frequent compaction: every mechanism
/// must run, and every read must return the right data.
#[test]
fn every_mechanism_runs_under_gc_pressure() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut p = Params::new();
    for kv in [
        "gamma=2",
        "compaction_interval=2000",
        "mapping_dram_bytes=8k",
    ] {
        p.insert_assignment(kv, "t").unwrap();
    }
    let opts = SimOptions {
        check_invariants: false,
        ..SimOptions::checked()
    };
    let mut sim = Simulator::new(&cfg, "leaftl", p, opts).unwrap();
    let mut fill = JobSpec::new("fill", RwKind::Write);
    fill.bs = 512 << 10;
    sim.run_jobs("fill", &[fill], 1, &mut NoProgress).unwrap();
    let mut frag = JobSpec::new("fragment", RwKind::RandWrite);
    frag.bs = 16 << 10;
    frag.io_size = Some(cfg.geometry.logical_bytes() / 2);
    let w = sim
        .run_jobs("fragment", &[frag], 1, &mut NoProgress)
        .unwrap();
    assert!(w.gc.events > 0);
    let c = &w.ftl_counters;
    assert!(c["counters"]["compactions"].as_u64().unwrap() > 0, "{c}");
    assert!(c["approximate_segments"].as_u64().unwrap() > 0, "{c}");
    assert!(w.flash.programs["translation_writeback"] > 0);
    assert!(w.flash.programs["gc_translation"] > 0);
    sim.ftl().check_invariants(sim.device()).unwrap();
    let mut r = JobSpec::new("r", RwKind::RandRead);
    r.number_ios = Some(3000);
    r.numjobs = 4;
    let m = sim.run_jobs("r", &[r], 1, &mut NoProgress).unwrap();
    assert_eq!((m.verify.failures, m.verify.checked), (0, 12_000));
    assert!(
        m.lookups.double > 0 && m.lookups.triple > 0,
        "{:?}",
        m.lookups
    );
    assert!(m.flash.reads["misprediction"] > 0);
    assert!(m.ftl_counters["mean_levels_per_lookup"].as_f64().unwrap() >= 1.0);
}
