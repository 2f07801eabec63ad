//! The values experiments sweep that both their runs (the registry) and their sections (which
//! walk them in the same order) use.

/// The CMT sizes of the sweep, as shares of the mappings.
pub const CMT_RATIOS: [&str; 6] = ["0.01", "0.03", "0.05", "0.10", "0.25", "0.50"];

/// HP-FTL's workloads: name and random distribution.
pub const HP_WORKLOADS: [(&str, &str); 2] = [("uniform", "random"), ("zipf0.99", "zipf:0.99")];
/// HP-FTL Fig. 2's DRAM ratios (shares of the 8 B/LPN table).
pub const HP_RATIOS: [&str; 7] = ["0.1", "0.2", "0.3", "0.4", "0.5", "0.7", "1.0"];

/// LearnedFTL's switches, one changed at a time from the paper design (docs/ftls/learnedftl.md
/// "Ablations").
pub const ABLATIONS: [&[(&str, &str)]; 9] = [
    &[],
    &[("cross_group", "off")],
    &[("lender", "any")],
    &[("sequential_init", "off")],
    &[("training", "equal-count-ls")],
    &[("tp_write_cost", "free")],
    &[("dram", "equal-dram")],
    &[("group_gc", "line")],
    &[("group_gc", "line"), ("lender", "any")],
];

/// The label of the ablation run with `switches` changed from the paper design.
pub fn ablation_label(switches: &[(&str, &str)]) -> String {
    if switches.is_empty() {
        "design=paper".to_string()
    } else {
        switches
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}
