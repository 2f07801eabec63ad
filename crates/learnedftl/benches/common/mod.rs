//! Setup shared by the benchmarks.

use learnedftl::engine::{NoProgress, SimOptions, Simulator};
use learnedftl::workload::{JobSpec, RwKind};
use learnedftl::{DeviceConfig, Params};

/// FTL `ftl` on a `quick` device whose logical space was written once sequentially.
pub fn filled(ftl: &str) -> Simulator {
    let cfg = DeviceConfig::preset("quick").unwrap();
    let mut sim = Simulator::new(&cfg, ftl, Params::new(), SimOptions::default()).unwrap();
    let mut fill = JobSpec::new("fill", RwKind::Write);
    fill.bs = 512 << 10;
    fill.iodepth = 64;
    sim.run_jobs("fill", &[fill], 1, &mut NoProgress).unwrap();
    sim
}
