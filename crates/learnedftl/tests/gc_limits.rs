//! GC at the edges of its room, on every registered FTL:
//!
//! * random trims on a full device (docs/power.md, "Trim records"): trimmed LPNs read unmapped,
//!   also after a power cut. The built-in FTLs persist every trim as a record page, invalid at
//!   once if every LPN it trims was unmapped already, and GC keeps a record only while an
//!   unmapped LPN it trimmed still has a data page on flash. Before those
//!   rules, 4 KiB random trims after random writes aborted every FTL but FAST ("device full: no
//!   line can be reclaimed"): a trim of an LPN already trimmed added a record no collection
//!   could drop;
//! * GC's batched translation-page rewrites on a device with many TPs per line
//!   (`mapping::gc::collect_line`): a victim's moved pages can map to more TPs than the
//!   translation stream's room and the free lines hold. DFTL ran out of lines that way at
//!   1 TiB after random writes (~27 k TPs per victim); 512 B pages on `tiny` (64 LPNs per TP)
//!   do the same at small scale;
//! * a collection starts only if it fits (`mapping::gc::fits`): what keeps whole-space 4 KiB
//!   random writes alive at size. No small device ran out of lines without the rule (its unit
//!   test is in `mapping::gc`), but 512 B pages on a larger `tiny` make GC pass over greedy
//!   victims that would not fit, which `gc.passed_over` counts.

mod common;

use common::sim;
use learnedftl::engine::{NoProgress, Simulator};
use learnedftl::ftl::FTLS;
use learnedftl::stats::Metrics;
use learnedftl::workload::{JobSpec, RwKind};

/// `times` the logical space in `bs` random writes; their phase's metrics.
fn random_writes(s: &mut Simulator, bs: u64, times: u64) -> Metrics {
    let ftl = s.ftl().name();
    let mut w = JobSpec::new("write", RwKind::RandWrite);
    w.bs = bs;
    w.io_size = Some(times * s.device().geo().logical_bytes());
    s.run_jobs("write", &[w], 1, &mut NoProgress)
        .unwrap_or_else(|e| panic!("{ftl}: {e}"))
}

/// Checks the FTL's invariants, then reads the whole logical space back against the oracle.
fn reads_back(s: &mut Simulator) {
    let ftl = s.ftl().name();
    s.ftl().check_invariants(s.device()).unwrap();
    let mut read = JobSpec::new("read", RwKind::Read);
    read.bs = 512 << 10;
    read.io_size = Some(s.device().geo().logical_bytes());
    let r = s.run_jobs("read", &[read], 3, &mut NoProgress).unwrap();
    assert_eq!(r.verify.failures, 0, "{ftl}");
    assert!(
        r.verify.checked >= s.device().geo().logical_pages,
        "{ftl}: {:?}",
        r.verify
    );
}

#[test]
fn random_trims_of_a_full_device_four_times_over_stay_trimmed_with_only_the_needed_records() {
    for &ftl in FTLS {
        let mut s = sim(ftl, &[]);
        let lp = s.device().geo().logical_pages;
        random_writes(&mut s, 512 << 10, 1);
        let mut trims = JobSpec::new("trim", RwKind::RandTrim);
        trims.number_ios = Some(4 * lp);
        let m = s
            .run_jobs("trim", &[trims], 2, &mut NoProgress)
            .unwrap_or_else(|e| panic!("{ftl}: {e}"));
        // ~98 % of the LPNs are trimmed, most of them several times. Where trims are made
        // durable by records (every built-in FTL; FAST: one per unit a trim touches), a record
        // of LPNs all trimmed already is invalid at once, and GC drops those whose LPNs' old
        // data it erased: at most one live record per LPN (the old rule kept every one).
        if m.flash.programs["trim_record"] > 0 {
            let records = s.device().valid_records();
            assert!(records < lp, "{ftl}: {records} valid records");
        }
        reads_back(&mut s);
        // The contract, whatever makes it hold: a trimmed LPN reads unmapped after a power cut
        // and the FTL's recovery too (the oracle checks every LPN after it).
        if s.power_cut_refusal().is_none() {
            let t = s.clock();
            s.cut_power_now(t).unwrap_or_else(|e| panic!("{ftl}: {e}"));
            reads_back(&mut s);
        }
    }
}

#[test]
fn random_writes_with_a_tp_per_few_pages_collect_without_running_out_of_lines() {
    for &ftl in FTLS {
        let mut s = sim(ftl, &["page_size=512"]);
        let m = random_writes(&mut s, 64 << 10, 2);
        assert!(m.gc.events > 0, "{ftl}: no GC");
        reads_back(&mut s);
    }
}

#[test]
fn gc_passes_over_greedy_victims_whose_tp_rewrites_would_not_fit() {
    // 512 blocks per plane: ~3,800 TPs of 64 LPNs against lines of 512 pages, so a data
    // victim's TP rewrites can exceed what the free lines hold.
    let mut s = sim("dftl", &["page_size=512", "blocks_per_plane=512"]);
    let m = random_writes(&mut s, 4 << 10, 3);
    assert!(m.gc.passed_over > 0, "{:?}", m.gc);
    assert!(m.gc.passed_over < m.gc.events / 100, "{:?}", m.gc);
    reads_back(&mut s);
}
