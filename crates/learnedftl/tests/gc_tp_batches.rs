//! GC's batched translation-page rewrites on a device with many TPs per line (mapping/gc.rs,
//! `collect_line`): a victim's moved pages can map to more TPs than the translation stream's
//! room and the free lines hold. DFTL ran out of lines that way at 1 TiB after random writes
//! (~27 k TPs per victim); 512 B pages on `tiny` (128 LPNs per TP) do the same at small scale.

use learnedftl::engine::{NoProgress, SimOptions, Simulator, Verify};
use learnedftl::ftl::FTLS;
use learnedftl::workload::{JobSpec, RwKind};
use learnedftl::{DeviceConfig, Params};

#[test]
fn random_writes_with_a_tp_per_few_pages_collect_without_running_out_of_lines() {
    for &ftl in FTLS {
        let mut p = Params::from_assignments(["page_size=512"], "test").unwrap();
        let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
        let opts = SimOptions {
            verify: Verify::FailFast,
            check_invariants: false,
        };
        let mut s = Simulator::new(&cfg, ftl, p, opts).unwrap();
        let mut w = JobSpec::new("write", RwKind::RandWrite);
        w.bs = 64 << 10;
        w.io_size = Some(2 * cfg.geometry.logical_bytes());
        let m = s
            .run_jobs("write", &[w], 1, &mut NoProgress)
            .unwrap_or_else(|e| panic!("{ftl}: {e}"));
        assert!(m.gc.events > 0, "{ftl}: no GC");
        s.ftl().check_invariants(s.device()).unwrap();
        let mut r = JobSpec::new("read", RwKind::Read);
        r.bs = 64 << 10;
        r.io_size = Some(cfg.geometry.logical_bytes());
        let r = s.run_jobs("read", &[r], 2, &mut NoProgress).unwrap();
        assert_eq!(r.verify.failures, 0, "{ftl}");
    }
}
