//! `learnedftl check`: conformance checks of FTLs (a thin layer over `learnedftl::check` and
//! `learnedftl_nbd::check`).

use crate::output::{self, Target};
use crate::progress::Bar;
use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::MultiProgress;
use learnedftl::check::{self, CheckReport, CheckSpec, ReplayFile, RunOptions, Through};
use learnedftl::config::DeviceConfig;
use learnedftl::ftl::FTLS;
use learnedftl::host::AvailableMemory;
use learnedftl::params::Params;
use learnedftl::report::table::Table;
use learnedftl_nbd::check::NbdDriver;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Options of `check`.
#[derive(Args)]
pub struct CheckOpts {
    /// FTLs to check, comma-separated, or `all` (every registered FTL).
    #[arg(long, value_delimiter = ',', default_value = "all")]
    ftl: Vec<String>,
    /// Device preset: paper, quick, tiny or 980pro (docs/device.md "Drive presets"), or a drive preset file (PATH.preset).
    #[arg(long, default_value = "tiny")]
    preset: String,
    /// Scale the preset to this logical capacity (as `run --capacity`; docs/device.md
    /// "Capacity"): every page's data is kept, so keep it small.
    #[arg(long, value_name = "SIZE")]
    capacity: Option<String>,
    /// Override a device or FTL parameter (repeatable), e.g. --set cmt_ratio=0.05.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Host operations per FTL after the preconditioning.
    #[arg(long, default_value_t = 100_000)]
    ops: u64,
    /// Seed of the preconditioning, the stream and the power cuts.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Cut the power about once every N operations (default 2000), at any flash operation,
    /// and check what recovery brings back.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "2000")]
    power_cuts: Option<u64>,
    /// engine: straight into the simulator; nbd: through the NBD server over sockets.
    #[arg(long, default_value = "engine", value_name = "engine|nbd")]
    through: String,
    /// NBD connections at once (with --through nbd).
    #[arg(long, default_value_t = 4)]
    connections: u32,
    /// FTLs checked at once, each on a thread of its own (default: the machine's cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Replay a failing stream saved by an earlier check (its settings come from the file).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["ftl", "preset", "capacity", "set", "ops", "seed", "power_cuts", "through"])]
    replay: Option<PathBuf>,
    /// Wall-clock seconds shrinking a failing stream may take.
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS")]
    shrink_time: f64,
    /// Where failing streams are saved.
    #[arg(long, default_value = "check-failures", value_name = "DIR")]
    failures: PathBuf,
    /// Write one JSON object per FTL (an array) to PATH (`-`: standard output, the table then
    /// goes to standard error).
    #[arg(long, value_name = "PATH")]
    json: Option<String>,
    /// Print no progress bar and no line per FTL as it finishes.
    #[arg(long)]
    quiet: bool,
}

/// Runs the checks; `Ok(false)` when any failed.
pub fn check(o: CheckOpts) -> Result<bool> {
    if !(o.shrink_time >= 0.0 && o.shrink_time.is_finite()) {
        bail!(
            "--shrink-time: {} is not a number of seconds",
            o.shrink_time
        );
    }
    let run_opts = RunOptions {
        shrink_time: Duration::from_secs_f64(o.shrink_time),
        failures_dir: o.failures.clone(),
    };
    let (specs, replay) = match &o.replay {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--replay: cannot read {}", path.display()))?;
            let file: ReplayFile = serde_json::from_str(&text).with_context(|| {
                format!("--replay: {} is not a saved check stream", path.display())
            })?;
            (vec![file.spec], Some(file.ops))
        }
        None => (specs(&o)?, None),
    };
    if let Some(p) = o.json.as_deref().filter(|&p| p != "-") {
        Target::File(Path::new(p)).refuse_over(&[])?;
    }
    let mut device = specs[0].device()?.0;
    device.payloads = true;
    let jobs = o
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, specs.len());
    // Each check holds its prepared simulator and the one running (they share the pages
    // programmed before the stream).
    device.check_memory(true, 2 * jobs, &AvailableMemory::now())?;
    let reports = run_all(&specs, replay, &run_opts, jobs, o.quiet)?;
    let json = serde_json::to_string_pretty(&reports)? + "\n";
    // The tables go to stderr when the JSON takes stdout, as for `run`.
    match o.json.as_deref() {
        Some("-") => {
            output::note(&render(&reports));
            output::print(&json)?;
        }
        Some(p) => {
            output::print(&render(&reports))?;
            output::write_all(Target::File(Path::new(p)), &json)?;
        }
        None => output::print(&render(&reports))?,
    }
    Ok(reports.iter().all(|r| r.failures.is_empty()))
}

/// One spec per FTL asked for.
fn specs(o: &CheckOpts) -> Result<Vec<CheckSpec>> {
    let through: Through = o
        .through
        .parse()
        .map_err(anyhow::Error::msg)
        .context("--through")?;
    if o.ops == 0 {
        bail!("--ops: at least 1 operation");
    }
    if o.power_cuts == Some(0) {
        bail!("--power-cuts: one cut every 0 operations (need at least 1)");
    }
    if o.connections == 0 || o.connections > 64 {
        bail!("--connections: {} (1 to 64)", o.connections);
    }
    let names: Vec<&str> = if o.ftl.iter().any(|f| f == "all") {
        FTLS.to_vec()
    } else {
        o.ftl.iter().map(String::as_str).collect()
    };
    // Unknown parameters and FTL names are refused before anything runs. As with `compare`,
    // a key need only be taken by one of the FTLs; each check gets the keys its FTL (or the
    // device) takes, so its replay command names only those.
    let mut p = Params::from_assignments(o.set.iter().map(String::as_str), "--set")?;
    let capacity = o
        .capacity
        .as_deref()
        .map(str::parse::<learnedftl::config::Capacity>)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--capacity: {e}"))?;
    let device = DeviceConfig::from_params_sized(&o.preset, capacity.as_ref(), &mut p)?;
    let left = learnedftl::ftl::build_each(&names, &device, &p, |_, _| Ok(()))
        .map_err(|e| crate::params_error(e, &names))?;
    Ok(names
        .iter()
        .zip(left)
        .map(|(name, left)| CheckSpec {
            ftl: name.to_string(),
            preset: o.preset.clone(),
            capacity: o.capacity.clone(),
            set: o
                .set
                .iter()
                .filter(|a| {
                    !a.split_once('=')
                        .is_some_and(|(k, _)| left.contains(k.trim()))
                })
                .cloned()
                .collect(),
            seed: o.seed,
            ops: o.ops,
            cut_every: o.power_cuts.unwrap_or(0),
            through,
            connections: o.connections,
            blank: false,
        })
        .collect())
}

/// Runs every spec, `jobs` at once; reports in the specs' order.
fn run_all(
    specs: &[CheckSpec],
    replay: Option<Vec<learnedftl::check::stream::HostOp>>,
    opts: &RunOptions,
    jobs: usize,
    quiet: bool,
) -> Result<Vec<CheckReport>> {
    let lines = MultiProgress::new();
    let next = Mutex::new(0usize);
    let results: Vec<Mutex<Option<Result<CheckReport>>>> =
        specs.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let i = {
                    let mut n = next.lock().expect("no panic holding it");
                    let i = *n;
                    *n += 1;
                    i
                };
                let Some(spec) = specs.get(i) else { break };
                let mut bar = Bar::new(&spec.ftl, &lines, quiet);
                let r = run_one(spec, replay.clone(), opts, &mut bar);
                if !quiet {
                    output::note(&match &r {
                        Ok(rep) => format!("{}\n", summary(rep)),
                        Err(e) => format!("check {}: {e:#}\n", spec.ftl),
                    });
                }
                *results[i].lock().expect("no panic holding it") = Some(r);
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().expect("no panic").expect("every spec ran"))
        .collect()
}

fn run_one(
    spec: &CheckSpec,
    replay: Option<Vec<learnedftl::check::stream::HostOp>>,
    opts: &RunOptions,
    bar: &mut Bar,
) -> Result<CheckReport> {
    let through = spec.through;
    let connections = spec.connections;
    let mut make = |sim| -> Result<Box<dyn check::Driver>, String> {
        Ok(match through {
            Through::Engine => Box::new(check::EngineDriver::new(sim)),
            Through::Nbd => Box::new(NbdDriver::new(sim, connections)?),
        })
    };
    check::run(spec, replay, opts, &mut make, bar).with_context(|| format!("check {}", spec.ftl))
}

/// One line per finished FTL.
fn summary(r: &CheckReport) -> String {
    let verdict = match r.failures.first() {
        None => "ok".to_string(),
        Some(f) => format!("FAILED at {f}"),
    };
    format!(
        "check {} through {}: {} operations, {} reads compared ({:.1} MiB), {} power cuts, {:.1} s: {verdict}",
        r.ftl,
        r.through,
        r.ops,
        r.reads_checked,
        r.bytes_checked as f64 / (1 << 20) as f64,
        r.power_cuts,
        r.seconds
    )
}

/// The table, then every failure with its replay commands.
fn render(reports: &[CheckReport]) -> String {
    let header = [
        "ftl",
        "through",
        "ops",
        "reads",
        "MiB checked",
        "cuts",
        "failures",
        "s",
        "ops/s",
    ];
    let mut t = Table::new(&header);
    for r in reports {
        t.row(vec![
            r.ftl.clone(),
            r.through.to_string(),
            r.ops.to_string(),
            r.reads_checked.to_string(),
            format!("{:.1}", r.bytes_checked as f64 / (1 << 20) as f64),
            r.power_cuts.to_string(),
            r.failures.len().to_string(),
            format!("{:.1}", r.seconds),
            format!("{:.0}", r.ops_per_sec),
        ]);
    }
    let mut out = t.render();
    for r in reports {
        for f in &r.failures {
            out += &format!("\nFAILED: {} (seed {}): {f}\n", r.ftl, r.seed);
            if let Some(n) = f.stream_ops {
                out += &format!("  shrunk to a stream of {n} operations\n");
            }
            if let Some(c) = &f.replay {
                out += &format!("  replay: {c}\n");
            }
            out += &format!("  the whole stream: {}\n", r.command);
        }
    }
    out
}
