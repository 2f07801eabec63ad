//! Snapshots: a cloned [`Simulator`] goes on exactly as the original would have, for every
//! registered FTL — the base for starting several experiments from one preconditioned state.

use learnedftl::engine::{NoProgress, SimOptions, Simulator, Verify};
use learnedftl::ftl::FTLS;
use learnedftl::stats::Metrics;
use learnedftl::workload::{JobSpec, RwKind, Settle};
use learnedftl::{DeviceConfig, Params};

fn sim(ftl: &str) -> Simulator {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let opts = SimOptions {
        verify: Verify::FailFast,
        check_invariants: false,
        ..SimOptions::default()
    };
    Simulator::new(&cfg, ftl, Params::new(), opts).unwrap()
}

fn phase(s: &mut Simulator, name: &str, rw: RwKind, bs: u64, ios: u64, seed: u64) -> Metrics {
    let mut j = JobSpec::new(name, rw);
    j.bs = bs;
    j.numjobs = 8;
    j.number_ios = Some(ios);
    s.run_jobs(name, &[j], seed, &mut NoProgress).unwrap()
}

/// The metrics without what the host's clock measures (wall time, simulator speed,
/// LearnedFTL's CPU time spent sorting and training).
fn simulated(m: &Metrics) -> serde_json::Value {
    let mut v = serde_json::to_value(m).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("wall_seconds");
    o.remove("sim_page_ops_per_sec");
    if let Some(c) = o["ftl_counters"].as_object_mut() {
        c.retain(|k, _| !k.ends_with("_ns") && !k.ends_with("_us_per_gc"));
    }
    v
}

/// After preconditioning: settle, then random 4 KiB reads and writes (GC runs).
fn measure(s: &mut Simulator) -> Vec<serde_json::Value> {
    let settle = s.settle("settle", Settle::Auto, &mut NoProgress).unwrap();
    let rw = phase(s, "measure", RwKind::RandRw, 4096, 600, 7);
    settle.iter().chain([&rw]).map(simulated).collect()
}

#[test]
fn a_snapshot_goes_on_as_the_original_would() {
    for ftl in FTLS {
        let mut straight = sim(ftl);
        phase(&mut straight, "pre", RwKind::RandWrite, 512 << 10, 40, 3);
        let mut original = sim(ftl);
        phase(&mut original, "pre", RwKind::RandWrite, 512 << 10, 40, 3);
        let mut snap = original.clone();
        // The original goes elsewhere; the snapshot must not notice.
        phase(&mut original, "other", RwKind::RandWrite, 4096, 400, 11);
        let expected = measure(&mut straight);
        assert_eq!(measure(&mut snap), expected, "{ftl}");
        assert!(
            measure(&mut original) != expected,
            "{ftl}: the disturbance changed nothing"
        );
        snap.ftl().check_invariants(snap.device()).unwrap();
    }
}

/// The measured phases of a report, without what the host's clock measures.
fn phases(r: &learnedftl::run::RunReport) -> Vec<serde_json::Value> {
    r.phases.iter().map(simulated).collect()
}

/// `reproduce`'s sharing path: one [`Experiment::prepare`], cloned, each clone running another
/// workload, gives what uninterrupted runs give, for every FTL.
#[test]
fn a_shared_preparation_runs_as_uninterrupted_runs_do() {
    use learnedftl::run::RunOptions;
    let experiment = |rw: &str| {
        RunOptions {
            preset: "tiny".into(),
            precondition: Some("randwrite:512k:1".into()),
            rw: Some(rw.into()),
            bs: Some("4k".into()),
            numjobs: Some(8),
            number_ios: Some(300),
            verify: true,
            ..RunOptions::default()
        }
        .experiment(&mut |_| {})
        .unwrap()
    };
    let (reads, writes) = (experiment("randread"), experiment("randwrite"));
    for ftl in FTLS {
        let shared = reads.prepare(ftl, &mut NoProgress).unwrap();
        // The writes run first, on a copy; the reads then take the original.
        let w = writes
            .run_prepared(ftl, shared.clone(), &mut NoProgress)
            .unwrap();
        let r = reads.run_prepared(ftl, shared, &mut NoProgress).unwrap();
        assert_eq!(
            phases(&w),
            phases(&writes.run(ftl, &mut NoProgress).unwrap()),
            "{ftl} writes"
        );
        assert_eq!(
            phases(&r),
            phases(&reads.run(ftl, &mut NoProgress).unwrap()),
            "{ftl} reads"
        );
        assert_eq!(r.phases[0].phase, "precondition");
    }
}
