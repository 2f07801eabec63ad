//! Property tests for every implemented FTL: random reads, writes, trims and flushes on the
//! `tiny` preset after preconditioning that leaves the device full and fragmented (so GC runs
//! throughout), with the oracle checking every read and the FTL's invariants checked after every
//! request.

use learnedftl::engine::{NoProgress, SimOptions, Simulator};
use learnedftl::ftl::FTLS;
use learnedftl::stats::Metrics;
use learnedftl::workload::{HostIo, JobSpec, RwKind, Settle};
use learnedftl::{DeviceConfig, Op, Params};
use proptest::prelude::*;

/// Parameter variants per FTL beyond its defaults (`key=value` lists; device keys too).
const VARIANTS: &[(&str, &[&str])] = &[
    // A cache of ~100 entries: evictions and write-backs on almost every request.
    ("dftl", &["mapping_dram_bytes=1k"]),
    // Gap-filling timelines: operations overtake others on their LUN (never on their block),
    // with dependent translation reads, write-backs and GC copies booked in the future; one
    // with a single remembered gap per LUN, so the bound drops gaps all the time.
    ("dftl", &["timing=backfill", "mapping_dram_bytes=1k"]),
    ("dftl", &["timing=backfill", "backfill_gaps=1"]),
    (
        "tpftl",
        &["timing=backfill", "mapping_dram_bytes=1k", "node_bytes=16"],
    ),
    ("sftl", &["timing=backfill"]),
    ("tpftl", &["mapping_dram_bytes=1k", "node_bytes=16"]),
    ("tpftl", &["request_prefetch=off", "selective_prefetch=off"]),
    ("tpftl", &["cmt_ratio=0.5", "prefetch_threshold=1"]),
    ("tpftl", &["prefetch_threshold=0"]),
    ("sftl", &["sftl_runs=ppa"]),
    // Approximate segments, frequent compaction, a small buffer (many flushes) and a cache of
    // two groups (evictions and TP write-backs all the time).
    (
        "leaftl",
        &[
            "gamma=2",
            "compaction_interval=300",
            "write_buffer_pages=96",
            "mapping_dram_bytes=12k",
        ],
    ),
    (
        "leaftl",
        &["gamma=0", "compaction_interval=500", "write_buffer_pages=1"],
    ),
    // The default (log) design: merges whenever GC picks a group line, within a budget, and
    // with the switches that apply to both designs.
    ("learnedftl", &["merge_budget=inf"]),
    ("learnedftl", &["merge_budget=8", "gc_reserve_lines=1"]),
    // A reserve of 3 with 5 spare lines, the fewest it may have: the log lives on the
    // reserve's edge.
    ("learnedftl", &["gc_reserve_lines=3", "logical_ratio=0.92"]),
    (
        "learnedftl",
        &["sequential_init=off", "training=equal-count-ls"],
    ),
    ("learnedftl", &["tp_write_cost=free", "refresh_period=1ms"]),
    // The paper design (design=paper) and its allocation switches.
    ("learnedftl", &["design=paper"]),
    ("learnedftl", &["design=paper", "cross_group=off"]),
    (
        "learnedftl",
        &["design=paper", "tp_write_cost=free", "lender=any"],
    ),
    ("learnedftl", &["design=paper", "refresh_period=1ms"]),
    // Single-line collections: with the paper's lenders, and unpaired borrowing from any group
    // under a tight quota (pages of many groups share lines).
    ("learnedftl", &["design=paper", "group_gc=line"]),
    (
        "learnedftl",
        &[
            "design=paper",
            "group_gc=line",
            "lender=any",
            "group_line_quota=1",
        ],
    ),
    (
        "learnedftl",
        &[
            "design=paper",
            "dram=equal-dram",
            "group_line_quota=1",
            "encroach_threshold=16",
        ],
    ),
    // Fewer hash functions and a page offset that borrows LPN bits: most writes go to the
    // secondary table.
    // The paper's design: slot watermarks drive GC, moves back without a budget.
    (
        "hpftl",
        &["design=paper", "h=2", "m=3", "secondary_ratio=0.5"],
    ),
    // A fixed table that can hold every LPN.
    (
        "hpftl",
        &[
            "design=paper",
            "m=3",
            "secondary_growth=0",
            "secondary_ratio=1",
        ],
    ),
    // Ours with a small table that must grow, and moves back under a budget.
    (
        "hpftl",
        &[
            "secondary_ratio=0.05",
            "move_back_budget=0.5",
            "probe=current",
        ],
    ),
    // The paper's MD5 hashes restarting at H_1, relocating to candidates first (once a
    // TableFull before the table could grow).
    (
        "hpftl",
        &[
            "hash=md5",
            "probe=first",
            "gc_relocate=primary-first",
            "secondary_ratio=0.5",
        ],
    ),
    // Once a deadlock: no LUN's single best victim fitted the free slots. With LUN-aware
    // candidate choice.
    (
        "hpftl",
        &[
            "design=paper",
            "sec_pick=fullest",
            "gc_victims=per-lun",
            "merge_any=off",
            "cand_pick=idle-lun",
        ],
    ),
    // A pool of one log block per LUN plane: full merges on every 64th random page of a unit.
    ("fast", &["log_blocks=1"]),
    // Spare room for 14 log blocks per plane: merges rarer, logs older.
    ("fast", &["logical_ratio=0.75"]),
    // Merges on their old block's plane (the pool's other planes only when it has none free).
    ("blockmap", &["place=plane"]),
    // A node cache of one leaf and its parent: node reads and path write-backs on every
    // request, one partition.
    ("mu-ftl", &["mapping_dram_bytes=8k", "partitions=1"]),
    (
        "mu-ftl",
        &["cmt_ratio=0.2", "logical_ratio=0.75", "partitions=3"],
    ),
];

/// Variants that idle (a `settle` phase) between the preconditioning and the random phase, for
/// FTLs whose idle work changes more than write-backs.
const IDLING: &[(&str, &[&str])] = &[
    // Idle merges sort the fragmented groups (the default budget; a lower logical ratio than
    // tiny's leaves them room), and a budget that runs out part way, with merges by GC on top;
    // on tiny itself no group without a line can be merged.
    ("learnedftl", &["logical_ratio=0.85"]),
    // Idle collections rewriting every TP they touch at once (issue 29's way).
    (
        "learnedftl",
        &["logical_ratio=0.85", "idle_gc_updates=rewrite"],
    ),
    (
        "learnedftl",
        &[
            "logical_ratio=0.85",
            "idle_merge_budget=0.5",
            "merge_budget=2",
        ],
    ),
    ("learnedftl", &[]),
];

/// Every FTL on a drive as built (docs/device.md): a controller with a write buffer of 16
/// pages that drains only for room (reads hit it, writes absorb and stall, requests larger
/// than it pass by) and a command cost, TLC page types with an SLC cache that fills and folds,
/// reads that suspend programs, and two planes per LUN working together.
const DRIVE: &[&str] = &[
    "planes_per_lun=2",
    "multi_plane=on",
    "independent_plane_reads=on",
    "write_buffer=64KiB",
    "write_buffer_drain=full",
    "cmd_overhead_ns=1500",
    "host_mb_s=2000",
    "cell=tlc",
    "slc_cache=256KiB",
    "slc_cache_dynamic=on",
    "suspend=on",
    "suspend_program_ns=20000",
];

/// The variants of `ftl`: its defaults, on [`DRIVE`], then [`VARIANTS`] (without idling),
/// then [`IDLING`].
fn variants(ftl: &str) -> Vec<(Vec<&'static str>, bool)> {
    let mut v = vec![(vec![], false), (DRIVE.to_vec(), false)];
    for (list, idle) in [(VARIANTS, false), (IDLING, true)] {
        for (name, kv) in list {
            if *name == ftl {
                v.push((kv.to_vec(), idle));
            }
        }
    }
    v
}

#[derive(Clone, Debug)]
struct Step {
    op: Op,
    page: u64,
    pages: u64,
    gap_ns: u64,
}

fn step() -> impl Strategy<Value = Step> {
    (
        0u8..100,
        0u64..1_000_000,
        prop_oneof![Just(1u64), 1u64..8, 1u64..128],
        0u64..300_000,
    )
        .prop_map(|(k, page, pages, gap_ns)| Step {
            op: match k {
                0..=44 => Op::Read,
                45..=89 => Op::Write,
                90..=97 => Op::Trim,
                _ => Op::Flush,
            },
            page,
            pages,
            gap_ns,
        })
}

/// The property tests' preconditioning: a sequential fill, then random 16 KiB writes of half
/// the logical space (8 in flight), so the device is full and fragmented and GC runs; returns
/// the fragmenting phase's metrics.
fn fill_and_fragment(
    sim: &mut Simulator,
    cfg: &DeviceConfig,
    seed: u64,
) -> Result<Metrics, String> {
    let mut fill = JobSpec::new("fill", RwKind::Write);
    fill.bs = 512 << 10;
    sim.run_jobs("fill", &[fill], seed, &mut NoProgress)
        .map_err(|e| e.to_string())?;
    let mut frag = JobSpec::new("fragment", RwKind::RandWrite);
    frag.bs = 16 << 10;
    frag.io_size = Some(cfg.geometry.logical_bytes() / 2);
    frag.iodepth = 8;
    sim.run_jobs("fragment", &[frag], seed, &mut NoProgress)
        .map_err(|e| e.to_string())
}

/// Fills the device, fragments it, lets it idle if `idle`, then runs `steps` with every check
/// on.
fn run(ftl: &str, kv: &[&str], idle: bool, steps: &[Step], seed: u64) -> Result<(), String> {
    let mut params = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut params).map_err(|e| e.to_string())?;
    let opts = SimOptions {
        check_invariants: false,
        ..SimOptions::checked()
    };
    let mut sim = Simulator::new(&cfg, ftl, params, opts).map_err(|e| e.to_string())?;
    fill_and_fragment(&mut sim, &cfg, seed)?;
    if idle {
        sim.settle("settle", Settle::Auto, &mut NoProgress)
            .map_err(|e| format!("{ftl} {kv:?}: {e}"))?;
    }
    sim.ftl()
        .check_invariants(sim.device())
        .map_err(|e| format!("{ftl} {kv:?}: {e}"))?;
    sim.set_check_invariants(true);
    sim.begin_phase("random");
    let pages = cfg.geometry.logical_pages;
    let mut t = sim.clock();
    for s in steps {
        t = t.after(s.gap_ns);
        let first = s.page % pages;
        let n = s.pages.min(pages - first);
        let io = HostIo {
            placement: 0,
            arrival: t,
            op: s.op,
            offset: first * 4096,
            len: if s.op == Op::Flush { 0 } else { n * 4096 },
        };
        sim.submit(io).map_err(|e| format!("{ftl} {kv:?}: {e}"))?;
    }
    let m = sim.end_phase();
    if m.verify.failures != 0 {
        return Err(format!(
            "{ftl} {kv:?}: {} verification failures",
            m.verify.failures
        ));
    }
    // Everything written must still read back after the random phase.
    let mut check = JobSpec::new("readback", RwKind::Read);
    check.bs = 256 << 10;
    check.iodepth = 4;
    sim.set_check_invariants(false);
    let m = sim
        .run_jobs("readback", &[check], seed, &mut NoProgress)
        .map_err(|e| format!("{ftl} {kv:?}: {e}"))?;
    assert_eq!(m.verify.failures, 0);
    Ok(())
}

/// Property tests run on every registered FTL ([`FTLS`]: registering one enrols it), in
/// [`SHARDS`] tests so that the harness runs them in parallel: shard `n` takes the FTLs at
/// positions `n`, `n + SHARDS`, ... Each case runs every variant of each of its FTLs; a failure
/// names the FTL and variant.
const SHARDS: usize = 4;

fn shard(n: usize, steps: &[Step], seed: u64) -> Result<(), TestCaseError> {
    for ftl in FTLS.iter().skip(n).step_by(SHARDS) {
        for (kv, idle) in variants(ftl) {
            run(ftl, &kv, idle, steps, seed).map_err(TestCaseError::fail)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]
    #[test]
    fn ftls_shard_0(steps in prop::collection::vec(step(), 50..250), seed in 0u64..1000) {
        shard(0, &steps, seed)?;
    }

    #[test]
    fn ftls_shard_1(steps in prop::collection::vec(step(), 50..250), seed in 0u64..1000) {
        shard(1, &steps, seed)?;
    }

    #[test]
    fn ftls_shard_2(steps in prop::collection::vec(step(), 50..250), seed in 0u64..1000) {
        shard(2, &steps, seed)?;
    }

    #[test]
    fn ftls_shard_3(steps in prop::collection::vec(step(), 50..250), seed in 0u64..1000) {
        shard(3, &steps, seed)?;
    }
}

#[test]
fn gc_really_runs_in_the_property_setup() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    for ftl in FTLS {
        let mut sim = Simulator::new(&cfg, ftl, Params::new(), SimOptions::default()).unwrap();
        let m = fill_and_fragment(&mut sim, &cfg, 1).unwrap();
        assert!(m.gc.events > 0, "{ftl}: no GC during fragmentation");
    }
}
