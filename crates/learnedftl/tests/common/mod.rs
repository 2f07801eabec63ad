//! What several integration tests share.

use learnedftl::engine::{SimOptions, Simulator, Verify};
use learnedftl::{DeviceConfig, Params};

/// Builds `ftl` on `tiny` with `kv` (device and FTL keys), reads verified (fail fast).
pub fn sim(ftl: &str, kv: &[&str]) -> Simulator {
    let mut p = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
    let opts = SimOptions {
        verify: Verify::FailFast,
        check_invariants: false,
        ..SimOptions::default()
    };
    Simulator::new(&cfg, ftl, p, opts).unwrap()
}
