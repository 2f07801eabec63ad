//! `learnedftl`: the command-line front end. Parses options into an
//! [`Experiment`](learnedftl::run::Experiment), runs it on one FTL (`run`) or several
//! (`compare`), and prints aligned tables (and JSON with `--json`).

mod progress;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use learnedftl::config::{DeviceConfig, PRESETS};
use learnedftl::engine::Verify;
use learnedftl::ftl::FTLS;
use learnedftl::params::{parse_duration_ns, parse_size, Params};
use learnedftl::report;
use learnedftl::run::{Experiment, Precondition, RunReport};
use learnedftl::workload::{fio, Dist, JobSpec, Phase, RwKind};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// A fast, checked SSD workbench: LearnedFTL and its rivals on one device model.
#[derive(Parser)]
#[command(name = "learnedftl", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a workload on one FTL.
    Run {
        /// FTL to run.
        #[arg(long, default_value = "ideal")]
        ftl: String,
        #[command(flatten)]
        opts: Opts,
    },
    /// Run the same workload on several FTLs and print one table.
    Compare {
        /// FTLs to compare, comma-separated (default: every implemented FTL).
        #[arg(long, value_delimiter = ',')]
        ftl: Vec<String>,
        #[command(flatten)]
        opts: Opts,
    },
    /// List the implemented FTLs and the device presets.
    List,
}

/// Options shared by `run` and `compare`.
#[derive(Args)]
struct Opts {
    /// Device preset: paper, quick or tiny.
    #[arg(long, default_value = "quick")]
    preset: String,
    /// Override a device or FTL parameter (repeatable), e.g. --set cmt_ratio=0.05.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write before measuring: RW:BS:MULTIPLE of the logical capacity, e.g. randwrite:512k:6.
    #[arg(long, value_name = "RW:BS:MULTIPLE")]
    precondition: Option<String>,
    /// fio job file; sections separated by `stonewall` run as consecutive phases.
    #[arg(long, conflicts_with = "rw")]
    job: Option<PathBuf>,
    /// Access pattern: read, write, trim, randread, randwrite, randtrim, rw, randrw.
    #[arg(long)]
    rw: Option<String>,
    /// Block size (fio syntax: 4k, 512k, ...).
    #[arg(long, requires = "rw")]
    bs: Option<String>,
    /// Job clones.
    #[arg(long, requires = "rw")]
    numjobs: Option<u32>,
    /// Requests in flight per clone.
    #[arg(long, requires = "rw")]
    iodepth: Option<u32>,
    /// Bytes each clone issues.
    #[arg(long, requires = "rw")]
    io_size: Option<String>,
    /// Requests each clone issues.
    #[arg(long, requires = "rw")]
    number_ios: Option<u64>,
    /// Simulated time limit (10s, 500ms, ...); runs until then (fio's time_based).
    #[arg(long, requires = "rw")]
    runtime: Option<String>,
    /// Region start (bytes, fio syntax).
    #[arg(long, requires = "rw")]
    offset: Option<String>,
    /// Region size (bytes, fio syntax; default: the rest of the logical space).
    #[arg(long, requires = "rw")]
    size: Option<String>,
    /// Percentage of reads in mixed jobs.
    #[arg(long, requires = "rw")]
    rwmixread: Option<u32>,
    /// random, zipf:THETA, pareto:H or normal:DEV.
    #[arg(long, requires = "rw")]
    random_distribution: Option<String>,
    /// Draw uniform offsets independently instead of fio's once-per-pass random map.
    #[arg(long, requires = "rw")]
    norandommap: bool,
    /// Seed for every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Check every read against the oracle; stop at the first wrong one.
    #[arg(long)]
    verify: bool,
    /// Write the report as JSON to PATH, or to stdout with '-' (the table then goes to stderr).
    #[arg(long, value_name = "PATH|-")]
    json: Option<String>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// The built-in default workload: 4 KiB random reads with 64 jobs, after random 512 KiB
/// preconditioning of twice the capacity.
const DEFAULT_PRECONDITION: &str = "randwrite:512k:2";
const DEFAULT_READ_IOS_PER_JOB: u64 = 4096;

impl Opts {
    fn job_from_flags(&self, rw: &str) -> Result<JobSpec> {
        let rw: RwKind = rw.parse().map_err(anyhow::Error::msg).context("--rw")?;
        let mut j = JobSpec::new("measure", rw);
        let size = |flag: &str, v: &Option<String>| -> Result<Option<u64>> {
            v.as_deref()
                .map(|s| {
                    parse_size(s)
                        .with_context(|| format!("{flag}: '{s}' is not a size (e.g. 4k, 512k, 1g)"))
                })
                .transpose()
        };
        if let Some(bs) = size("--bs", &self.bs)? {
            j.bs = bs;
        }
        j.numjobs = self.numjobs.unwrap_or(1);
        j.iodepth = self.iodepth.unwrap_or(1);
        j.io_size = size("--io-size", &self.io_size)?;
        j.number_ios = self.number_ios;
        if let Some(off) = size("--offset", &self.offset)? {
            j.offset = off;
        }
        j.size = size("--size", &self.size)?;
        if let Some(r) = &self.runtime {
            j.runtime_ns = Some(parse_duration_ns(r).with_context(|| {
                format!("--runtime: '{r}' is not a duration (e.g. 10s, 500ms)")
            })?);
            j.time_based = j.io_size.is_none() && j.number_ios.is_none();
        }
        if let Some(m) = self.rwmixread {
            j.rwmixread = m;
        }
        if let Some(d) = &self.random_distribution {
            j.dist = d
                .parse::<Dist>()
                .map_err(anyhow::Error::msg)
                .context("--random-distribution")?;
        }
        j.random_map = !self.norandommap;
        Ok(j)
    }

    fn experiment(&self) -> Result<Experiment> {
        let mut params = Params::new();
        for s in &self.set {
            params.insert_assignment(s, "--set")?;
        }
        let device = DeviceConfig::from_params(&self.preset, &mut params)?;
        let logical = device.geometry.logical_bytes();
        let mut precondition = self.precondition.as_deref();
        let phases = match (&self.job, &self.rw) {
            (Some(path), _) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read job file {}", path.display()))?;
                fio::parse(&text, &path.display().to_string(), logical)?
            }
            (None, Some(rw)) => {
                let job = self.job_from_flags(rw)?;
                job.validate(logical).map_err(anyhow::Error::msg)?;
                vec![Phase {
                    name: "measure".into(),
                    jobs: vec![job],
                }]
            }
            (None, None) => {
                precondition = precondition.or(Some(DEFAULT_PRECONDITION));
                let mut job = JobSpec::new("measure", RwKind::RandRead);
                job.numjobs = 64;
                job.number_ios = Some(DEFAULT_READ_IOS_PER_JOB);
                vec![Phase {
                    name: "measure".into(),
                    jobs: vec![job],
                }]
            }
        };
        let precondition = precondition
            .map(|p| {
                p.parse::<Precondition>()
                    .map_err(anyhow::Error::msg)
                    .context("--precondition")
            })
            .transpose()?;
        Ok(Experiment {
            device,
            params,
            precondition,
            phases,
            seed: self.seed,
            verify: if self.verify {
                Verify::FailFast
            } else {
                Verify::Off
            },
        })
    }

    /// Prints the tables (to stdout, or stderr when JSON goes to stdout) and writes the JSON.
    fn output(&self, tables: &str, json: serde_json::Value) -> Result<()> {
        match self.json.as_deref() {
            Some("-") => {
                eprint!("{tables}");
                let mut out = std::io::stdout().lock();
                serde_json::to_writer_pretty(&mut out, &json)?;
                writeln!(out)?;
            }
            Some(path) => {
                print!("{tables}");
                let f =
                    std::fs::File::create(path).with_context(|| format!("cannot create {path}"))?;
                serde_json::to_writer_pretty(std::io::BufWriter::new(f), &json)
                    .with_context(|| format!("cannot write {path}"))?;
            }
            None => print!("{tables}"),
        }
        Ok(())
    }
}

fn describe(e: &Experiment) -> String {
    let g = &e.device.geometry;
    let mut s = format!(
        "device: {} preset, {} ch x {} LUN x {} pl x {} blk x {} pg x {} B = {} physical, {} logical; seed {}\n",
        e.device.preset,
        g.channels,
        g.luns_per_channel,
        g.planes_per_lun,
        g.blocks_per_plane,
        g.pages_per_block,
        g.page_size,
        report::human_bytes(g.physical_bytes()),
        report::human_bytes(g.logical_bytes()),
        e.seed
    );
    if let Some(p) = &e.precondition {
        s += &format!(
            "precondition: {} ({}x capacity in {} KiB writes)\n",
            p.rw,
            p.multiple,
            p.bs / 1024
        );
    }
    for p in &e.phases {
        for j in &p.jobs {
            s += &format!(
                "phase {}: job {}: rw={} bs={} numjobs={} iodepth={} dist={}\n",
                p.name, j.name, j.rw, j.bs, j.numjobs, j.iodepth, j.dist
            );
        }
    }
    s
}

fn run_one(e: &Experiment, ftl: &str, quiet: bool) -> Result<RunReport> {
    let mut bar = progress::Bar::new(ftl, quiet);
    e.run(ftl, &mut bar)
        .with_context(|| format!("{ftl}: run failed"))
}

fn main_inner() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::List => {
            println!("FTLs: {}", FTLS.join(", "));
            println!("presets: {}", PRESETS.join(", "));
        }
        Cmd::Run { ftl, opts } => {
            let e = opts.experiment()?;
            e.check_params(&[ftl.as_str()])?;
            let r = run_one(&e, &ftl, opts.quiet)?;
            let tables = format!(
                "{}\n{}\n{}",
                describe(&e),
                report::phases_table(&r.phases),
                report::detail_table(&r)
            );
            opts.output(&tables, serde_json::to_value(&r)?)?;
        }
        Cmd::Compare { ftl, opts } => {
            let ftls: Vec<&str> = if ftl.is_empty() {
                FTLS.to_vec()
            } else {
                ftl.iter().map(String::as_str).collect()
            };
            if ftls.is_empty() {
                bail!("--ftl: no FTL given");
            }
            let e = opts.experiment()?;
            e.check_params(&ftls)?;
            let mut runs = Vec::new();
            for f in &ftls {
                runs.push(run_one(&e, f, opts.quiet)?);
            }
            let tables = format!("{}\n{}", describe(&e), report::compare_table(&runs));
            opts.output(&tables, serde_json::to_value(&runs)?)?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match main_inner() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
