//! The experiments, as data: one [`Def`] per experiment in [`EXPERIMENTS`] — its runs, its
//! report section and why our numbers differ from the paper's. Adding an experiment means adding
//! one entry here (and its section renderer in `sections/`).

use super::def::THREADS;
use super::def::{paper_design, Ctx, Def, Scale};
use super::sections;
use super::spec::{RunSpec, WorkloadSpec};
use super::sweeps::{ablation_label, ABLATIONS, CMT_RATIOS, HP_RATIOS, HP_WORKLOADS};
use super::theory::{THEORY_SPARE, THEORY_UNITS};
use super::validation::{self, validation_label, VALIDATION_CAPACITY};
use super::{Config, ReproduceError};
use crate::config::DeviceConfig;
use crate::ftl::FTLS;
use crate::params::Params;

/// How many runs `def` adds under `config` with `--paper-design` (LearnedFTL's paper design).
pub fn paper_design_runs(def: &Def, config: &Config) -> Result<usize, ReproduceError> {
    let scale = Scale::for_config(config)?;
    let count = |paper_design| {
        let config = Config {
            paper_design,
            ..config.clone()
        };
        (def.runs)(&Ctx {
            config: &config,
            scale: &scale,
        })
        .len()
    };
    Ok(count(true) - count(false))
}

const RAND6: &str = "randwrite:512k:6";
const SEQ1: &str = "write:512k:1";

fn opts(rw: &'static str, numjobs: u32, number_ios: u64) -> WorkloadSpec {
    WorkloadSpec::Options {
        rw,
        bs: "4k",
        numjobs,
        number_ios,
        iodepth: 1,
        dist: None,
    }
}

fn randread(c: &Ctx) -> Vec<RunSpec> {
    let mut runs =
        vec![RunSpec::new("randread", &c.paper_ftls(), WorkloadSpec::Job("randread")).pre(RAND6)];
    // The paper's LearnedFTL (whole-group GC and training): its model hits are the experiment.
    runs.extend(
        c.learned_paper(
            RunSpec::new(
                "learnedftl design=paper",
                &["learnedftl"],
                WorkloadSpec::Job("randread"),
            )
            .pre(RAND6),
        ),
    );
    runs
}

fn seqread(c: &Ctx) -> Vec<RunSpec> {
    vec![RunSpec::new("seqread", &c.paper_ftls(), WorkloadSpec::Job("seqread")).pre(SEQ1)]
}

fn seqread_shared(c: &Ctx) -> Vec<RunSpec> {
    vec![RunSpec::new(
        "seqread-shared",
        &c.paper_ftls(),
        WorkloadSpec::Job("seqread-shared"),
    )
    .pre(SEQ1)]
}

/// The writes' LearnedFTL variants: the paper's design (collapses), and its line-level GC with
/// any group lending room, the only paper-design setting that sustains small writes.
fn write_variants(label: &str, pre: &'static str, w: WorkloadSpec, c: &Ctx) -> Vec<RunSpec> {
    let mut runs = vec![RunSpec::new(label, &c.paper_ftls(), w.clone()).pre(pre)];
    runs.extend(c.learned_paper(
        RunSpec::new("learnedftl design=paper", &["learnedftl"], w.clone()).pre(pre),
    ));
    runs.extend(
        c.learned_paper(
            RunSpec::new(
                "learnedftl design=paper group_gc=line lender=any",
                &["learnedftl"],
                w,
            )
            .pre(pre),
        )
        .map(|r| r.set("group_gc", "line").set("lender", "any")),
    );
    runs
}

fn randwrite(c: &Ctx) -> Vec<RunSpec> {
    write_variants("randwrite", RAND6, opts("randwrite", 64, c.scale.rw_ios), c)
}

fn seqwrite(c: &Ctx) -> Vec<RunSpec> {
    write_variants("seqwrite", "write:512k:6", WorkloadSpec::Job("seqwrite"), c)
}

fn tpftl_threads(_: &Ctx) -> Vec<RunSpec> {
    let seq =
        |label| RunSpec::new(label, &["tpftl"], WorkloadSpec::Job("tpftl-threads-seq")).pre(SEQ1);
    vec![
        RunSpec::new(
            "random",
            &["tpftl"],
            WorkloadSpec::Job("tpftl-threads-rand"),
        )
        .pre(RAND6),
        seq("sequential"),
        // TPFTL's ±3 counter switches selective prefetch off under 64 streams for good
        // (docs/ftls/tpftl.md); the paper's FEMU TPFTL evidently kept prefetching.
        seq("sequential, prefetch_threshold=0").set("prefetch_threshold", 0),
    ]
}

/// TPFTL's own CMT size (`cmt_ratio`'s default).
const DEFAULT_CMT_RATIO: &str = "0.03";

fn cmt_sweep(_: &Ctx) -> Vec<RunSpec> {
    CMT_RATIOS
        .iter()
        .map(|&r| {
            let run = RunSpec::new(
                format!("cmt_ratio={r}"),
                &["tpftl"],
                WorkloadSpec::Job("randread"),
            )
            .pre(RAND6);
            // The default is left unset, so that the run is random reads' TPFTL run and shares
            // its preconditioned state (and cached result).
            match r {
                DEFAULT_CMT_RATIO => run,
                _ => run.set("cmt_ratio", r),
            }
        })
        .collect()
}

/// The sample traces replayed (`<name>.disksim` in the traces directory).
pub const TRACES: [&str; 2] = ["websearch-small", "tpcc-small"];

fn traces(c: &Ctx) -> Vec<RunSpec> {
    let mut runs = vec![];
    for t in TRACES {
        let path = c.config.traces_dir.join(format!("{t}.disksim"));
        if !path.is_file() {
            continue;
        }
        for speed in [1.0, 4.0] {
            let w = WorkloadSpec::Trace {
                path: path.clone(),
                speed,
            };
            let label = format!("{t} speed={speed}");
            runs.push(RunSpec::new(&label, &c.paper_ftls(), w.clone()).pre("randwrite:512k:2"));
            // The paper's LearnedFTL, whose tail latencies Fig. 21 reports.
            runs.extend(
                c.learned_paper(
                    RunSpec::new(
                        format!("{label} learnedftl design=paper"),
                        &["learnedftl"],
                        w,
                    )
                    .pre("randwrite:512k:2"),
                ),
            );
        }
    }
    runs
}

/// The presets an application's recording ships at (`recordings/<app>-<preset>/`), largest
/// first.
const RECORDED_AT: [&str; 2] = ["quick", "tiny"];

/// A shipped recording of `app` replayed (`recordings/<app>-<preset>/tpftl.rec.zst` and its
/// phases, `label` naming the run, the preset added): the one made at the largest preset whose
/// logical space this device holds (a recording's addresses must lie on it: `quick`'s on
/// `quick` and `paper`, `tiny`'s on `tiny`), made once on TPFTL, replayed on every paper FTL
/// from a fresh device, as the live run started; no run when none is shipped.
fn recording(c: &Ctx, app: &str, label: &str) -> Vec<RunSpec> {
    let logical = |preset: &str, capacity| {
        DeviceConfig::from_params_sized(preset, capacity, &mut Params::new())
            .map_or(0, |d| d.geometry.logical_bytes())
    };
    let device = logical(&c.config.preset, c.config.capacity.as_ref());
    RECORDED_AT
        .iter()
        .filter(|&&at| logical(at, None) <= device)
        .map(|at| (at, c.config.recordings_dir.join(format!("{app}-{at}"))))
        .map(|(at, dir)| (at, dir.join("tpftl.rec.zst"), dir.join("tpftl.phases")))
        .find(|(_, path, phases)| path.is_file() && phases.is_file())
        .map(|(at, path, phases)| {
            let w = WorkloadSpec::Recording { path, phases };
            RunSpec::new(format!("{label}, {at}"), &c.paper_ftls(), w)
        })
        .into_iter()
        .collect()
}

/// The RocksDB recording (`rocksdb-<preset>`: db_bench's fillseq + overwrite, readrandom,
/// readseq).
fn rocksdb(c: &Ctx) -> Vec<RunSpec> {
    recording(c, "rocksdb", "db_bench on ext4, recorded on TPFTL")
}

/// The Filebench recording (`filebench-<preset>`: fio's fileserver, webserver and varmail).
fn filebench(c: &Ctx) -> Vec<RunSpec> {
    recording(
        c,
        "filebench",
        "fio's Filebench personalities on ext4, recorded on TPFTL",
    )
}

/// One HP-FTL point: a run labelled with the workload, of these FTLs, at this iodepth.
type HpRun<'a> = dyn Fn(&str, &[&str], u32) -> RunSpec + 'a;

/// HP-FTL's fresh device (twice the physical pages of the logical space), 64 jobs × 4 KiB
/// writes of 1.4 × the logical space (0.7 of the physical pages: no FTL reaches its GC
/// threshold), one run per point, per workload, with the ideal FTL first.
fn hp_runs(c: &Ctx, points: fn(&Ctx, &str, &HpRun) -> Vec<RunSpec>) -> Vec<RunSpec> {
    let mut runs = vec![];
    for (w, dist) in HP_WORKLOADS {
        let run = |label: &str, ftls: &[&str], iodepth: u32| {
            RunSpec::new(
                format!("{w} {label}"),
                ftls,
                WorkloadSpec::Options {
                    rw: "randwrite",
                    bs: "4k",
                    numjobs: 64,
                    number_ios: c.scale.hp_ios,
                    iodepth,
                    dist: Some(dist),
                },
            )
            .set("logical_ratio", 0.5)
        };
        runs.push(run("ideal", &["ideal"], 1));
        runs.extend(points(c, w, &run));
    }
    runs
}

fn hpftl_fig2(c: &Ctx) -> Vec<RunSpec> {
    hp_runs(c, |_, _, run| {
        let mut r = vec![];
        for ratio in HP_RATIOS {
            r.push(run(&format!("dftl ratio={ratio}"), &["dftl"], 1).set("cmt_ratio", ratio));
            // Below the primary table's share of the budget HP-FTL refuses the configuration.
            r.push(
                paper_design(run(&format!("hpftl ratio={ratio}"), &["hpftl"], 1))
                    .set("dram_ratio", ratio)
                    .may_refuse(),
            );
        }
        // Four requests in flight per job, at 40 %: how much of each gap is LUN collisions.
        r.push(run("ideal iodepth=4", &["ideal"], 4));
        r.push(run("dftl iodepth=4", &["dftl"], 4).set("cmt_ratio", 0.4));
        r.push(paper_design(run("hpftl iodepth=4", &["hpftl"], 4)).set("dram_ratio", 0.4));
        r
    })
}

fn hpftl_secondary(c: &Ctx) -> Vec<RunSpec> {
    hp_runs(c, |c, _, run| {
        // The paper's table is "large enough to avoid overflowing": one slot per logical page.
        let hp = |label: String| paper_design(run(&label, &["hpftl"], 1)).set("secondary_ratio", 1);
        let mut r: Vec<RunSpec> = (2..=5)
            .map(|h| hp(format!("hpftl h={h}")).set("h", h))
            .collect();
        for m in c.scale.hp_ms {
            r.push(hp(format!("hpftl h=3 m={m}")).set("h", 3).set("m", m));
        }
        r
    })
}

fn fast_merges(c: &Ctx) -> Vec<RunSpec> {
    let n = c.scale.deck_ios;
    let w = |label: &str, bs, rw, jobs, ios| {
        RunSpec::new(
            label,
            &["fast"],
            WorkloadSpec::Options {
                rw,
                bs,
                numjobs: jobs,
                number_ios: ios,
                iodepth: 1,
                dist: None,
            },
        )
        .pre(SEQ1)
    };
    vec![
        w("sequential", "512k", "write", 1, n),
        w("random", "4k", "randwrite", 64, n),
        RunSpec::new("mixed", &["fast"], WorkloadSpec::Job("fast-mixed")).pre(SEQ1),
        w(
            &format!("random, log_blocks={} (3 %)", c.scale.deck_log_blocks),
            "4k",
            "randwrite",
            64,
            n,
        )
        .set("log_blocks", c.scale.deck_log_blocks),
    ]
}

fn mu_translation(c: &Ctx) -> Vec<RunSpec> {
    // The same total mapping DRAM for both. Fine extents (4 KiB random fill) and coarse ones
    // (512 KiB random fill), then 4 KiB random reads; then 4 KiB random writes.
    let run = |label: &str, pre, w| {
        RunSpec::new(label, &["dftl", "mu-ftl"], w)
            .set("mapping_dram_bytes", &c.scale.deck_dram)
            .pre(pre)
    };
    vec![
        run(
            "randread after randwrite:4k:1",
            "randwrite:4k:1",
            opts("randread", 64, c.scale.rr_ios),
        ),
        run(
            "randread after randwrite:512k:1",
            "randwrite:512k:1",
            opts("randread", 64, c.scale.rr_ios),
        ),
        run(
            "randwrite after write:512k:1",
            SEQ1,
            opts("randwrite", 64, c.scale.deck_ios),
        ),
    ]
}

fn dram(c: &Ctx) -> Vec<RunSpec> {
    vec![RunSpec::new("dram", FTLS, opts("randwrite", 64, c.scale.few_ios)).pre(SEQ1)]
}

fn ablations(c: &Ctx) -> Vec<RunSpec> {
    ABLATIONS
        .iter()
        .filter_map(|switches| {
            let label = ablation_label(switches);
            let r = RunSpec::new(label, &["learnedftl"], WorkloadSpec::Job("randread")).pre(RAND6);
            let mut r = c.learned_paper(r)?;
            for (k, v) in *switches {
                r = r.set(k, v);
            }
            Some(r)
        })
        .collect()
}

fn leaftl_mapping(c: &Ctx) -> Vec<RunSpec> {
    let ftls = ["ideal", "dftl", "sftl", "leaftl"];
    let reads = opts("randread", 64, c.scale.few_ios);
    let mut runs = vec![
        RunSpec::new("write:512k:2", &ftls, reads.clone()).pre("write:512k:2"),
        RunSpec::new("randwrite:512k:2", &ftls, reads.clone()).pre("randwrite:512k:2"),
        RunSpec::new("randwrite:4k:1", &["dftl", "sftl"], reads.clone()).pre("randwrite:4k:1"),
    ];
    for gamma in [0, 4, 16] {
        runs.push(
            RunSpec::new(
                format!("randwrite:4k:1 leaftl gamma={gamma}"),
                &["leaftl"],
                reads.clone(),
            )
            .set("oob_size", 256)
            .set("gamma", gamma)
            .pre("randwrite:4k:1"),
        );
    }
    runs
}

/// The drive features compared (docs/device.md), each a label and its `--set` keys: the write
/// buffer is a 256th of the logical space and the SLC cache a 64th (a job's slice), so both
/// follow the device (15 and 60 MiB on `quick`).
fn drive_settings(c: &Ctx) -> Vec<(String, Vec<(&'static str, String)>)> {
    let slice = c.scale.slice_kib;
    let buffer = format!("{}k", slice / 4);
    let slc = format!("{slice}k");
    let size = |kib: u64| crate::units::human_bytes(kib << 10);
    let tlc = ("cell", "tlc".to_string());
    let suspend = ("suspend", "on".to_string());
    vec![
        ("FEMU model".into(), vec![]),
        (
            format!("write buffer {}", size(slice / 4)),
            vec![("write_buffer", buffer.clone())],
        ),
        ("suspend=on".into(), vec![suspend.clone()]),
        ("cell=tlc".into(), vec![tlc.clone()]),
        (
            "cell=tlc suspend=on".into(),
            vec![tlc.clone(), suspend.clone()],
        ),
        (
            format!("cell=tlc, SLC cache {}", size(slice)),
            vec![tlc.clone(), ("slc_cache", slc.clone())],
        ),
        ("2 planes, multi_plane=off".into(), two_planes(c, false)),
        ("2 planes, multi_plane=on".into(), two_planes(c, true)),
        (
            "all (tlc, slc, suspend, buffer, 2 µs/cmd)".into(),
            vec![
                tlc,
                ("slc_cache", slc),
                suspend,
                ("write_buffer", buffer),
                ("cmd_overhead_ns", "2000".into()),
            ],
        ),
    ]
}

/// Two planes per LUN, working together or not (`multi_plane`), on the same capacity: half the
/// blocks per plane (`--capacity` picks them itself), so lines twice as large and half as many.
fn two_planes(c: &Ctx, together: bool) -> Vec<(&'static str, String)> {
    let on = if together { "on" } else { "off" };
    let mut sets = vec![
        ("planes_per_lun", "2".to_string()),
        ("multi_plane", on.to_string()),
    ];
    if c.config.capacity.is_none() {
        let bpp = DeviceConfig::preset(&c.config.preset).map_or(2, |d| d.geometry.blocks_per_plane);
        sets.push(("blocks_per_plane", (bpp / 2).to_string()));
    }
    sets
}

fn drive_features(c: &Ctx) -> Vec<RunSpec> {
    // Half the blocks per plane leave `tiny` too few lines for GC: a setting whose device does
    // not build on the suite's preset has no row.
    let builds = |sets: &Vec<(&str, String)>| {
        let mut p = Params::new();
        sets.iter()
            .for_each(|(k, v)| p.insert(k, v, "drive-features"));
        DeviceConfig::from_params_sized(&c.config.preset, c.config.capacity.as_ref(), &mut p)
            .is_ok()
    };
    drive_settings(c)
        .into_iter()
        .filter(|(_, sets)| builds(sets))
        .map(|(label, sets)| {
            sets.into_iter().fold(
                RunSpec::new(
                    label,
                    &["ideal", "tpftl", "learnedftl"],
                    WorkloadSpec::Job("drive-features"),
                )
                .pre("randwrite:512k:1"),
                |run, (k, v)| run.set(k, v),
            )
        })
        .collect()
}

/// The ideal FTL under FIFO and greedy GC at each of [`THEORY_SPARE`], on its own device: a
/// sequential fill, then independent random 4 KiB writes (job `theory`).
fn theory(_: &Ctx) -> Vec<RunSpec> {
    ["greedy", "fifo"]
        .into_iter()
        .flat_map(|victim| {
            THEORY_SPARE.into_iter().map(move |sf| {
                RunSpec::new(
                    format!("{victim}, spare {sf}"),
                    &["ideal"],
                    WorkloadSpec::Job(if sf < 0.2 { "theory" } else { "theory-long" }),
                )
                .pre("write:512k:1")
                .set("channels", 1)
                .set("luns_per_channel", 1)
                .set("planes_per_lun", 1)
                .set("pages_per_block", 64)
                .set("blocks_per_plane", THEORY_UNITS)
                .set("logical_ratio", format!("{:.2}", 1.0 - sf))
                .set("gc", "reserve")
                .set("gc_victim", victim)
                .on_device("tiny", None)
            })
        })
        .collect()
}

/// The 980 PRO preset at [`VALIDATION_CAPACITY`] running `w` on the ideal FTL (the drive's
/// DRAM holds the whole page map).
fn on_980pro(label: String, w: WorkloadSpec) -> RunSpec {
    RunSpec::new(label, &["ideal"], w).on_device("980pro", Some(VALIDATION_CAPACITY))
}

/// Every measured point of the 980 PRO on its preset, through its host path, after a
/// sequential fill (the SLC cache off: the measured drive was full, its data folded to TLC);
/// and the datasheet's points, reads after the fill and writes on a fresh drive into its SLC
/// cache (the preset's static share of the capacity, and the dynamic part).
fn validation_runs(_: &Ctx) -> Vec<RunSpec> {
    let read = |r: RunSpec| {
        r.pre("write:512k:1")
            .set("slc_cache", 0)
            .set("slc_cache_dynamic", "off")
    };
    let measured = validation::samsung_980pro().into_iter().map(|p| {
        let w = WorkloadSpec::Options {
            rw: "randread",
            bs: "4k",
            numjobs: p.numjobs,
            number_ios: (100 * p.iodepth as u64).max(3000),
            iodepth: p.iodepth,
            dist: None,
        };
        read(on_980pro(validation_label(&p), w)).set("host_path", &p.path)
    });
    let datasheet = validation::DATASHEET_980PRO.iter().map(|d| {
        let w = WorkloadSpec::Options {
            rw: d.rw,
            bs: d.bs,
            numjobs: d.numjobs,
            number_ios: 2000,
            iodepth: d.iodepth,
            dist: None,
        };
        let r = on_980pro(d.name.to_string(), w).set("host_path", "spdk");
        if d.rw.contains("read") {
            read(r)
        } else {
            r
        }
    });
    measured.chain(datasheet).collect()
}

/// Every experiment, in report order.
pub const EXPERIMENTS: &[Def] = &[
    Def {
        name: "randread",
        title: "Random reads (LearnedFTL Fig. 14a/b)",
        runs: randread,
        reads: &["randread"],
        section: sections::reads,
        differences: sections::RANDREAD_DIFF,
    },
    Def {
        name: "seqread",
        title: "Sequential reads, one region per job (LearnedFTL Fig. 14a/b)",
        runs: seqread,
        reads: &["seqread"],
        section: sections::reads,
        differences: sections::SEQREAD_DIFF,
    },
    Def {
        name: "seqread-shared",
        title: "Sequential reads, all jobs over the same pages",
        runs: seqread_shared,
        reads: &["seqread-shared"],
        section: sections::reads,
        differences: sections::SEQREAD_DIFF,
    },
    Def {
        name: "randwrite",
        title: "Random writes (LearnedFTL Fig. 14a/c, Fig. 16)",
        runs: randwrite,
        reads: &["randwrite"],
        section: sections::writes,
        differences: sections::WRITES_DIFF,
    },
    Def {
        name: "seqwrite",
        title: "Sequential writes, one region per job (LearnedFTL Fig. 14a/c, Fig. 16)",
        runs: seqwrite,
        reads: &["seqwrite"],
        section: sections::writes,
        differences: sections::WRITES_DIFF,
    },
    Def {
        name: "training",
        title: "LearnedFTL training + sorting share of GC time (LearnedFTL Fig. 17: ≤ 3.2 %)",
        runs: |_| vec![],
        reads: &["randwrite", "seqwrite", "randread", "seqread"],
        section: sections::training,
        differences: sections::TRAINING_DIFF,
    },
    Def {
        name: "tpftl-threads",
        title: "TPFTL motivation: random vs sequential reads by thread count (LearnedFTL Fig. 2)",
        runs: tpftl_threads,
        reads: &["tpftl-threads"],
        section: sections::tpftl_threads,
        differences: sections::THREADS_DIFF,
    },
    Def {
        name: "cmt-sweep",
        title: "TPFTL CMT-size sweep, random reads (LearnedFTL Fig. 3)",
        runs: cmt_sweep,
        reads: &["cmt-sweep"],
        section: sections::cmt_sweep,
        differences: sections::CMT_DIFF,
    },
    Def {
        name: "traces",
        title: "Trace replay: P99 / P99.9 read latency (LearnedFTL Fig. 21)",
        runs: traces,
        reads: &["traces"],
        section: sections::traces,
        differences: sections::TRACES_DIFF,
    },
    Def {
        name: "rocksdb",
        title: "RocksDB db_bench, a recording replayed closed-loop (LearnedFTL Fig. 19)",
        runs: rocksdb,
        reads: &["rocksdb"],
        section: sections::rocksdb,
        differences: sections::ROCKSDB_DIFF,
    },
    Def {
        name: "filebench",
        title: "Filebench's fileserver, webserver and varmail (as fio jobs), a recording replayed \
                closed-loop (LearnedFTL Fig. 20)",
        runs: filebench,
        reads: &["filebench"],
        section: sections::filebench,
        differences: sections::FILEBENCH_DIFF,
    },
    Def {
        name: "learnedftl-ablations",
        title: "LearnedFTL's switches, one at a time (paper design, random-read experiment)",
        runs: ablations,
        reads: &["learnedftl-ablations"],
        section: sections::ablations,
        differences: sections::ABLATIONS_DIFF,
    },
    Def {
        name: "hpftl-fig2",
        title: "HP-FTL Fig. 2: IOPS against the DRAM given to the mapping table, fresh device",
        runs: hpftl_fig2,
        reads: &["hpftl-fig2"],
        section: sections::hpftl_fig2,
        differences: sections::HP_DIFF,
    },
    Def {
        name: "hpftl-secondary",
        title: "HP-FTL Figs. 4–7: secondary table peak and IOPS for h and m, fresh device",
        runs: hpftl_secondary,
        reads: &["hpftl-secondary"],
        section: sections::hpftl_secondary,
        differences: sections::HP_DIFF,
    },
    Def {
        name: "leaftl-mapping",
        title: "LeaFTL's mapping-table size against DFTL's and SFTL's",
        runs: leaftl_mapping,
        reads: &["leaftl-mapping"],
        section: sections::leaftl_mapping,
        differences: sections::LEAFTL_DIFF,
    },
    Def {
        name: "fast-merges",
        title: "FAST merges by kind (lecture deck)",
        runs: fast_merges,
        reads: &["fast-merges"],
        section: sections::fast_merges,
        differences: sections::FAST_DIFF,
    },
    Def {
        name: "mu-translation",
        title: "μ-FTL address-translation overhead against DFTL (lecture deck)",
        runs: mu_translation,
        reads: &["mu-translation"],
        section: sections::mu_translation,
        differences: sections::MU_DIFF,
    },
    Def {
        name: "drive-features",
        title: "Drive features: write buffer, suspend, TLC page types (SPEC §12)",
        runs: drive_features,
        reads: &["drive-features"],
        section: sections::drive_features,
        differences: sections::DRIVE_DIFF,
    },
    Def {
        name: "validation",
        title: "Validation: the Samsung 980 PRO preset against the real drive",
        runs: validation_runs,
        reads: &["validation"],
        section: sections::validation,
        differences: sections::VALIDATION_DIFF,
    },
    Def {
        name: "theory",
        title: "Theory as an oracle: GC write amplification against Desnoyers' models",
        runs: theory,
        reads: &["theory"],
        section: sections::theory,
        differences: sections::THEORY_DIFF,
    },
    Def {
        name: "dram",
        title: "Mapping DRAM of every FTL (lecture deck's RAM-usage table)",
        runs: dram,
        reads: &["dram"],
        section: sections::dram,
        differences: sections::DRAM_DIFF,
    },
    Def {
        name: "fdp",
        title: "NVMe Flexible Data Placement: lifetimes, stream mixes, isolation, mappings",
        runs: super::fdp::runs,
        reads: &["fdp"],
        section: sections::fdp,
        differences: sections::FDP_DIFF,
    },
];

/// The job files the experiments use, by name, for `scale`.
pub fn job_text(name: &str, s: &Scale) -> Option<String> {
    let slice = s.slice_kib;
    Some(match name {
        "randread" => format!(
            "; 4 KiB random reads, 64 jobs. The drain phase empties the dirty cache entries the\n\
             ; precondition leaves; the measured phase follows.\n\
             [global]\nrw=randread\nbs=4k\nnumjobs=64\n\n[drain]\nnumber_ios={}\n\n\
             [measure]\nstonewall\nnumber_ios={}\n",
            s.rr_drain, s.rr_ios
        ),
        "seqread" => format!(
            "; 4 KiB sequential reads, 64 jobs, each in its own {slice} KiB slice; the measured\n\
             ; phase continues each job's stream where the drain phase stopped.\n\
             [global]\nrw=read\nbs=4k\nnumjobs=64\noffset_increment={slice}k\n\n\
             [drain]\nsize={slice}k\nnumber_ios={d}\n\n\
             [measure]\nstonewall\noffset={off}k\nsize={rest}k\nnumber_ios={n}\n",
            d = s.sr_drain,
            off = s.sr_drain * 4,
            rest = slice - s.sr_drain * 4,
            n = s.sr_ios
        ),
        "seqread-shared" => format!(
            "; 4 KiB sequential reads, 64 jobs all from the same offset (fio's default without\n\
             ; offset_increment): the clones read the same pages at nearly the same time.\n\
             [global]\nrw=read\nbs=4k\nnumjobs=64\n\n[drain]\nnumber_ios={d}\n\n\
             [measure]\nstonewall\noffset={off}k\nnumber_ios={n}\n",
            d = s.sr_drain,
            off = s.sr_drain * 4,
            n = s.sr_ios
        ),
        "seqwrite" => format!(
            "; 4 KiB sequential writes, 64 jobs, each in its own {slice} KiB slice.\n\
             [global]\nrw=write\nbs=4k\nnumjobs=64\noffset_increment={slice}k\nsize={slice}k\n\n\
             [measure]\nnumber_ios={}\n",
            s.sw_ios
        ),
        "tpftl-threads-rand" => {
            let mut t = format!(
                "; TPFTL random reads for 1..64 jobs, {n} reads per job per phase\n\
                 [global]\nrw=randread\nbs=4k\nnumber_ios={n}\n\n\
                 [drain]\nnumjobs=64\nnumber_ios={d}\n",
                n = s.th_ios,
                d = s.rr_drain
            );
            for j in THREADS {
                t += &format!("\n[jobs-{j}]\nstonewall\nnumjobs={j}\n");
            }
            t
        }
        "tpftl-threads-seq" => {
            // Each phase reads fresh pages of each slice (a later phase must not hit what an
            // earlier one loaded).
            let mut t = format!(
                "; TPFTL sequential reads for 1..64 jobs, each job in its own slice, {n} reads\n\
                 ; per job\n\
                 [global]\nrw=read\nbs=4k\noffset_increment={slice}k\nnumber_ios={n}\n\n\
                 [drain]\nnumjobs=64\nsize={slice}k\nnumber_ios={d}\n",
                n = s.th_ios,
                d = s.sr_drain
            );
            let mut start = s.sr_drain;
            for j in THREADS {
                t += &format!(
                    "\n[jobs-{j}]\nstonewall\nnumjobs={j}\noffset={}k\nsize={}k\n",
                    start * 4,
                    s.th_ios * 4
                );
                start += s.th_ios;
            }
            t
        }
        "drive-features" => format!(
            "; 4 KiB random writes, then 70 % random reads among random writes, 16 jobs each.\n\
             [global]\nbs=4k\nnumjobs=16\nnumber_ios={n}\n\n\
             [write]\nrw=randwrite\n\n\
             [mixed]\nstonewall\nrw=randrw\nrwmixread=70\n",
            n = s.rw_ios / 4
        ),
        "theory" | "theory-long" => {
            // With more spare the fill leaves more of the device free: twice the logical
            // space is then what reaches the steady state.
            let warm = if name == "theory" { 1 } else { 2 };
            format!(
                "; Independent random 4 KiB writes (no random map) after the sequential fill: the\n\
                 ; logical space {warm} time(s) to reach the steady state, then once measured.\n\
                 [global]\nrw=randwrite\nbs=4k\nnorandommap=1\nio_size=100%\n\n{}\
                 [measure]\nstonewall\n",
                (1..=warm)
                    .map(|i| format!("[warm{i}]\nstonewall\n\n"))
                    .collect::<String>()
            )
        }
        "fast-mixed" => format!(
            "; one sequential 512 KiB writer and 16 random 4 KiB writers at once\n\
             [seq]\nrw=write\nbs=512k\nnumber_ios={}\n\n\
             [rand]\nrw=randwrite\nbs=4k\nnumjobs=16\nnumber_ios={}\n",
            s.deck_ios / 4,
            s.deck_ios * 4
        ),
        fdp if fdp.starts_with("fdp-") => return super::fdp::job_text(fdp, s),
        _ => return None,
    })
}

/// Every job file name the experiments may use.
pub const JOB_FILES: [&str; 10] = [
    "randread",
    "seqread",
    "seqread-shared",
    "seqwrite",
    "tpftl-threads-rand",
    "tpftl-threads-seq",
    "fast-mixed",
    "drive-features",
    "theory",
    "theory-long",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweeps_unset_cmt_ratio_is_tpftls_default() {
        let dev = crate::DeviceConfig::preset("quick").unwrap();
        let build = |kv: &[&str]| {
            let mut p = crate::Params::from_assignments(kv.iter().copied(), "test").unwrap();
            let f = crate::ftl::build("tpftl", &dev, &mut p).unwrap();
            (f.params(), f.dram().budget)
        };
        let ratio = format!("cmt_ratio={DEFAULT_CMT_RATIO}");
        assert_eq!(build(&[]), build(&[ratio.as_str()]));
        assert_ne!(build(&[]), build(&["cmt_ratio=0.05"]));
    }

    #[test]
    fn every_preset_has_a_scale_whose_sequential_phases_fit_a_slice() {
        for p in ["tiny", "quick", "paper"] {
            let s = Scale::of(p).unwrap();
            let pages = s.slice_kib / 4;
            assert!(s.sr_drain + THREADS.len() as u64 * s.th_ios <= pages, "{p}");
            assert!(s.sw_ios <= pages && s.sr_drain + s.sr_ios <= pages, "{p}");
            let logical = DeviceConfig::preset(p).unwrap().geometry.logical_pages;
            assert_eq!(
                s.rw_ios * 64,
                logical,
                "{p}: randwrite writes the space once"
            );
            assert!(s.longest_sequential_job() <= pages, "{p}");
            for j in JOB_FILES.iter().chain(&super::super::fdp::JOBS) {
                assert!(job_text(j, &s).is_some(), "{p} {j}");
            }
        }
        assert!(Scale::of("huge").is_err());
    }

    #[test]
    fn a_capacity_scales_the_sizes_that_follow_the_device() {
        let config = |preset: &str, capacity: &str| Config {
            preset: preset.into(),
            capacity: Some(capacity.parse().unwrap()),
            setup: crate::reproduce::Setup::Default,
            seed: 1,
            traces_dir: "no/traces".into(),
            recordings_dir: "no/recordings".into(),
            paper_design: false,
        };
        // A preset's own capacity: its own scale, so its runs are the preset's.
        for (p, capacity) in [("tiny", "120MiB"), ("quick", "3.75GiB"), ("paper", "30GiB")] {
            assert_eq!(
                Scale::for_config(&config(p, capacity)).unwrap(),
                Scale::of(p).unwrap(),
                "{p}"
            );
        }
        // quick at 1 TiB: 69,906 blocks per plane of 3,840 logical pages each.
        let s = Scale::for_config(&config("quick", "1TiB")).unwrap();
        let q = Scale::of("quick").unwrap();
        assert_eq!(s.slice_kib, 69906 * 3840 * 4 / 64);
        assert_eq!(s.hp_ios, (69906.0 * 4096.0 * 0.5 * 1.4 / 64.0) as u64);
        assert_eq!(s.deck_log_blocks, 2185, "8 of 256 blocks per plane: 3 %");
        assert_eq!(s.deck_dram, "65537k", "240k x 69906 / 256");
        assert_eq!((s.rr_ios, s.sw_ios, s.hp_ms), (q.rr_ios, q.sw_ios, q.hp_ms));
        assert_eq!(s.rw_ios, 69906 * 3840 / 64, "the 1 TiB space written once");
        for j in JOB_FILES {
            assert!(job_text(j, &s).is_some(), "{j}");
        }
        let e = Scale::for_config(&config("quick", "1GiB"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("capacity: \"1GiB\" is too small for the quick suite"),
            "{e}"
        );
        let e = Scale::for_config(&config("paper", "1MiB"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("below the smallest paper device"), "{e}");
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = EXPERIMENTS.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EXPERIMENTS.len());
    }
}
