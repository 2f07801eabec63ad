use learnedftl::engine::{NoProgress, SimOptions, Simulator};
use learnedftl::workload::{JobSpec, RwKind};
use learnedftl::{DeviceConfig, Params};

#[test]
fn debug_fill_fragment() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut sim = Simulator::new(&cfg, "leaftl", Params::new(), SimOptions::checked()).unwrap();
    let mut fill = JobSpec::new("fill", RwKind::Write);
    fill.bs = 512 << 10;
    let m = sim.run_jobs("fill", &[fill], 1, &mut NoProgress).unwrap();
    println!("{}", serde_json::to_string_pretty(&m.ftl_counters).unwrap());
    let mut frag = JobSpec::new("fragment", RwKind::RandWrite);
    frag.bs = 16 << 10;
    frag.io_size = Some(cfg.geometry.logical_bytes() / 2);
    match sim.run_jobs("fragment", &[frag], 1, &mut NoProgress) {
        Ok(m) => println!("ok gc {:?}", m.gc),
        Err(e) => println!("ERR {e}"),
    }
    println!("{}", serde_json::to_string_pretty(&sim.ftl().extra_counters()).unwrap());
    let lv = sim.device().lines_valid();
    println!("lines valid {:?}", lv);
}
