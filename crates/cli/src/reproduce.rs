//! `learnedftl reproduce`: the library's suite ([`learnedftl::reproduce`]) with progress lines
//! and the report written to the output directory.

use crate::output;
use crate::progress;
use anyhow::{Context, Result};
use clap::Args;
use indicatif::MultiProgress;
use learnedftl::config::Capacity;
use learnedftl::error::ConfigError;
use learnedftl::host::AvailableMemory;
use learnedftl::reproduce::{self, Cache, Config, Plan, Setup};
use learnedftl::run::parallel_jobs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Options of `learnedftl reproduce`.
#[derive(Args)]
pub struct ReproduceOpts {
    /// Experiments to run (default: all). `learnedftl reproduce --list` names them.
    experiments: Vec<String>,
    /// Device preset: paper, quick, tiny or 980pro (docs/device.md "Drive presets"), or a drive preset file (PATH.preset).
    #[arg(long, default_value = "quick")]
    preset: String,
    /// Scale the preset to this logical capacity (binary units: 32GiB, 1TiB; or bytes) by its
    /// blocks per plane, rounded up, in every run; slices, HP-FTL's writes, FAST's log blocks
    /// and the deck's DRAM follow it (docs/reproduction.md).
    #[arg(long, value_name = "SIZE")]
    capacity: Option<String>,
    /// default (the simulator's defaults) or femu (the paper's FEMU setup: timing=femu gc=femu,
    /// no settle phase).
    #[arg(long, default_value = "default")]
    setup: String,
    /// Output directory: report.html, report.md, plots/, one JSON per experiment, jobs/,
    /// cache/ (default: results/PRESET, results/PRESET-CAPACITY with --capacity, -femu added
    /// with --setup femu).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Runs simulated at once (default: the machine's cores). Results do not depend on it.
    #[arg(long)]
    jobs: Option<usize>,
    /// Seed of every run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the sample traces are (websearch-small.disksim, tpcc-small.disksim).
    #[arg(long, default_value = "../shared/traces", value_name = "DIR")]
    traces: PathBuf,
    /// Where the shipped learnedftl recordings are (the repository's recordings/: the rocksdb
    /// and filebench experiments replay APP-PRESET/tpftl.rec.zst, of the largest preset the
    /// device holds: quick's on quick and paper, tiny's on tiny).
    #[arg(long, default_value = "recordings", value_name = "DIR")]
    recordings: PathBuf,
    /// Also run LearnedFTL's paper-literal design (design=paper) where an experiment is about
    /// its mechanism, and the ablations of its switches: its preconditionings simulate its
    /// collapse under writes, several times the rest of the suite's time.
    #[arg(long)]
    paper_design: bool,
    /// Ignore the cache: simulate every run again (the cache is still refreshed).
    #[arg(long)]
    fresh: bool,
    /// List the experiments and exit.
    #[arg(long)]
    list: bool,
    /// No progress bars or per-run lines (failed runs and checks are still printed).
    #[arg(long)]
    quiet: bool,
}

/// Runs the suite; `Ok(false)` when a sanity check or an unexpected run failed (exit 1).
pub fn reproduce(o: ReproduceOpts) -> Result<bool> {
    if o.list {
        let mut s = String::new();
        for d in reproduce::EXPERIMENTS {
            s += &format!("{:<22} {}\n", d.name, d.title);
        }
        output::print(&s)?;
        return Ok(true);
    }
    let t0 = Instant::now();
    let defs = reproduce::select(&o.experiments)?;
    let setup: Setup = o
        .setup
        .parse()
        .map_err(anyhow::Error::msg)
        .context("--setup")?;
    let capacity = o
        .capacity
        .as_deref()
        .map(str::parse::<Capacity>)
        .transpose()
        .map_err(|e| match e {
            ConfigError::Capacity(m) => anyhow::anyhow!("--capacity: {m}"),
            e => e.into(),
        })?;
    let config = Config {
        preset: o.preset.clone(),
        capacity,
        setup,
        seed: o.seed,
        traces_dir: o.traces.clone(),
        recordings_dir: o.recordings.clone(),
        paper_design: o.paper_design,
    };
    // The capacity's errors before anything is written, named as the option.
    reproduce::Scale::for_config(&config).map_err(|e| match e {
        reproduce::ReproduceError::Capacity(m) => anyhow::anyhow!("--capacity: {m}"),
        e => e.into(),
    })?;
    let out = o.out.clone().unwrap_or_else(|| config.default_out());
    let jobs = parallel_jobs(o.jobs).map_err(|e| anyhow::anyhow!("--{e}"))?;
    let build = Cache::build_identity(env!("CARGO_PKG_VERSION"))?;
    let mut cache = Cache::new(Some(&out.join("cache")), &build);
    if o.fresh {
        cache = cache.refreshing();
    }
    let mut plan = Plan::new(&config, &defs, &cache)?;
    let jobs = plan.workers(jobs);
    let shared = plan.fit_memory(jobs, &AvailableMemory::now())?;
    let work = plan.work(&cache);
    let total = plan.units().len();
    output::note(&format!(
        "{} experiments, {total} runs ({} cached, {} shared between experiments) from {} {}, \
         {jobs} at a time; output in {}\n",
        defs.len(),
        work.cached,
        work.shared,
        work.starts,
        if shared {
            "shared starts"
        } else {
            "starts (each run prepares its own: a prepared state and its copy do not fit in \
             memory)"
        },
        out.display()
    ));
    reproduce::write_jobs(&out, &plan)?;

    let lines = MultiProgress::new();
    if o.quiet {
        lines.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let finished = AtomicUsize::new(0);
    let results = plan.execute(
        &cache,
        jobs,
        |label| progress::Bar::new(label, &lines, o.quiet),
        |unit, outcome| {
            if outcome.cached {
                finished.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let n = finished.fetch_add(1, Ordering::Relaxed) + 1;
            let status = match &outcome.report {
                Ok(_) => format!("{:.1} s", outcome.wall_seconds),
                Err(e) => format!("error: {e}"),
            };
            if o.quiet {
                return;
            }
            let line = format!("[{n}/{total}] {}: {status}", plan.name(unit));
            // Without a terminal the bars are hidden and so is their println.
            if lines.is_hidden() {
                output::note(&format!("{line}\n"));
            } else {
                let _ = lines.println(line);
            }
        },
    );
    reproduce::write_report(&out, &config, &defs, &results)?;
    let checks = reproduce::checks(&results);
    let failures = results.failures();
    for c in &checks {
        match c.known {
            Some(cause) => output::note(&format!("check (known): {} — {cause}\n", c.what)),
            None => output::note(&format!("check failed: {}\n", c.what)),
        }
    }
    let checks: Vec<_> = checks.iter().filter(|c| c.known.is_none()).collect();
    for f in &failures {
        output::note(&format!("run failed: {f}\n"));
    }
    output::note(&format!(
        "done in {:.1} s: {}/report.html, report.md, one JSON per experiment\n",
        t0.elapsed().as_secs_f64(),
        out.display()
    ));
    Ok(checks.is_empty() && failures.is_empty())
}
