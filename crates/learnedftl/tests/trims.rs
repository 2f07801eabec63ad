//! Random trims on a full device (docs/power.md, "Trim records"): every trim is persisted as a
//! record page, invalid at once if every LPN it trims was unmapped already, and GC keeps a
//! record only while an unmapped LPN it trimmed still has a data page on flash. Before those
//! rules, 4 KiB random trims after random writes aborted every FTL but FAST ("device full: no
//! line can be reclaimed"): a trim of an LPN already trimmed added a record no collection
//! could drop.

use learnedftl::engine::{NoProgress, SimOptions, Simulator, Verify};
use learnedftl::ftl::FTLS;
use learnedftl::workload::{JobSpec, RwKind};
use learnedftl::{DeviceConfig, Params};

#[test]
fn random_trims_of_a_full_device_four_times_over_leave_only_the_needed_records() {
    for &ftl in FTLS {
        let mut p = Params::from_assignments(std::iter::empty::<&str>(), "test").unwrap();
        let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
        let opts = SimOptions {
            verify: Verify::FailFast,
            check_invariants: false,
        };
        let mut s = Simulator::new(&cfg, ftl, p, opts).unwrap();
        let lp = cfg.geometry.logical_pages as u64;
        let mut fill = JobSpec::new("fill", RwKind::RandWrite);
        fill.bs = 512 << 10;
        fill.io_size = Some(cfg.geometry.logical_bytes());
        s.run_jobs("fill", &[fill], 1, &mut NoProgress).unwrap();
        let mut trims = JobSpec::new("trim", RwKind::RandTrim);
        trims.number_ios = Some(4 * lp);
        let m = s
            .run_jobs("trim", &[trims], 2, &mut NoProgress)
            .unwrap_or_else(|e| panic!("{ftl}: {e}"));
        // Each trim is durable through a record (FAST: one per unit it touches).
        assert!(m.flash.programs["trim_record"] >= 4 * lp, "{ftl}: {m:?}");
        // ~98 % of the LPNs are trimmed, most of them several times. A record of LPNs all
        // trimmed already is invalid at once, and GC drops those whose LPNs' old data it
        // erased: at most one live record per LPN (the old rule kept every one).
        let records = s.device().valid_records();
        assert!(
            records > 0 && records < lp,
            "{ftl}: {records} valid records"
        );
        s.ftl().check_invariants(s.device()).unwrap();
        // Everything reads back as the oracle says: trimmed or written.
        let mut read = JobSpec::new("read", RwKind::Read);
        read.bs = 512 << 10;
        read.io_size = Some(cfg.geometry.logical_bytes());
        let r = s.run_jobs("read", &[read], 3, &mut NoProgress).unwrap();
        assert_eq!(r.verify.failures, 0, "{ftl}");
        assert!(r.verify.checked >= lp, "{ftl}: {:?}", r.verify);
    }
}
