//! `learnedftl`: the command-line front end. Parses options into an
//! [`Experiment`], runs it on one FTL (`run`) or several
//! (`compare`), and prints aligned tables (and JSON with `--json`).

mod progress;
mod serve;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::MultiProgress;
use learnedftl::config::{DeviceConfig, PRESETS};
use learnedftl::engine::Verify;
use learnedftl::ftl::FTLS;
use learnedftl::params::{parse_duration_ns, parse_size, Params};
use learnedftl::report;
use learnedftl::run::{Experiment, Precondition, RunReport, TraceWorkload, Workload};
use learnedftl::trace;
use learnedftl::workload::{fio, Dist, JobSpec, Phase, RwKind, Settle};
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
        /// FTLs simulated at once, each on a thread of its own (default: the machine's cores);
        /// 1 runs them one after another. Results do not depend on it.
        #[arg(long)]
        jobs: Option<usize>,
        #[command(flatten)]
        opts: Opts,
    },
    /// Serve a simulated SSD over NBD to real clients (fio, qemu-io, nbdcopy, nbdfuse) until
    /// SIGINT or SIGTERM.
    Serve(serve::ServeOpts),
    /// List the implemented FTLs and the device presets.
    List,
    /// Trace tools: statistics and format conversion.
    Trace {
        #[command(subcommand)]
        cmd: TraceCmd,
    },
}

#[derive(Subcommand)]
enum TraceCmd {
    /// Requests, read ratio, sizes, address span, footprint, sequentiality, timing.
    Stats {
        /// The trace (.gz and .zst are decompressed).
        file: PathBuf,
        #[command(flatten)]
        input: TraceInput,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite a trace in another format (records the target cannot express are counted and
    /// skipped).
    Convert {
        /// The trace (.gz and .zst are decompressed).
        file: PathBuf,
        #[command(flatten)]
        input: TraceInput,
        /// Target format: disksim, fio-iolog (v3) or msr.
        #[arg(long)]
        to: String,
        /// Output file (default: stdout).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

/// How to read a trace.
#[derive(Args)]
struct TraceInput {
    /// Trace format: disksim, msr, umass, systor, fiu, blkparse, fio-iolog (default: detected).
    #[arg(long)]
    format: Option<String>,
    /// Count malformed lines as warnings instead of stopping at the first.
    #[arg(long)]
    skip_bad_lines: bool,
    /// blkparse: the action to keep.
    #[arg(long, default_value_t = 'Q')]
    blkparse_action: char,
}

impl TraceInput {
    fn open(&self, file: &std::path::Path) -> Result<trace::TraceReader> {
        let format = self
            .format
            .as_deref()
            .map(|f| f.parse::<trace::Format>())
            .transpose()
            .context("--format")?;
        let opts = trace::ParseOptions {
            skip_bad_lines: self.skip_bad_lines,
            blkparse_action: self.blkparse_action,
        };
        let r = trace::open(file, format, &opts)?;
        if r.detected() {
            eprintln!(
                "{}: detected format {} ({})",
                r.name(),
                r.format(),
                r.compression()
            );
        }
        Ok(r)
    }
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
    /// Replay a block trace open-loop (formats: see `--format`).
    #[arg(long, conflicts_with_all = ["job", "rw"])]
    trace: Option<PathBuf>,
    #[command(flatten)]
    trace_input: TraceInput,
    /// Trace replay: divide inter-arrival times by this factor.
    #[arg(long, requires = "trace", default_value_t = 1.0)]
    speed: f64,
    /// Trace replay: requests beyond the logical space are refused (naming the line), wrapped
    /// or clipped.
    #[arg(long, requires = "trace", default_value = "refuse")]
    address_policy: String,
    /// Trace replay: stop after this many requests.
    #[arg(long, requires = "trace")]
    max_requests: Option<u64>,
    /// Trace replay: keep only this device number.
    #[arg(long, requires = "trace")]
    device_filter: Option<u32>,
    /// Trace replay: first write every page the trace reads before writing it (a phase of its
    /// own, not counted in the result).
    #[arg(long, requires = "trace")]
    fill_unwritten: bool,
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
    /// Idle time after preconditioning, in which each FTL does the work it owes an idle device
    /// (background GC, dirty mapping write-back, buffer flush), reported as phase `settle`:
    /// auto (until it owes nothing), off, or a cap in simulated time (e.g. 100ms).
    #[arg(long, default_value = "auto", value_name = "auto|off|DURATION")]
    settle: String,
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
        let workload = match (&self.trace, &self.job, &self.rw) {
            (Some(path), _, _) => Workload::Trace(self.trace_workload(path)?),
            (None, Some(path), _) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read job file {}", path.display()))?;
                Workload::Jobs(fio::parse(&text, &path.display().to_string(), logical)?)
            }
            (None, None, Some(rw)) => {
                let job = self.job_from_flags(rw)?;
                job.validate(logical).map_err(anyhow::Error::msg)?;
                Workload::Jobs(vec![Phase {
                    name: "measure".into(),
                    jobs: vec![job],
                    settle: None,
                }])
            }
            (None, None, None) => {
                precondition = precondition.or(Some(DEFAULT_PRECONDITION));
                let mut job = JobSpec::new("measure", RwKind::RandRead);
                job.numjobs = 64;
                job.number_ios = Some(DEFAULT_READ_IOS_PER_JOB);
                Workload::Jobs(vec![Phase {
                    name: "measure".into(),
                    jobs: vec![job],
                    settle: None,
                }])
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
            workload,
            settle: self
                .settle
                .parse::<Settle>()
                .map_err(anyhow::Error::msg)
                .context("--settle")?,
            seed: self.seed,
            verify: if self.verify {
                Verify::FailFast
            } else {
                Verify::Off
            },
        })
    }

    fn trace_workload(&self, path: &std::path::Path) -> Result<TraceWorkload> {
        if !(self.speed.is_finite() && self.speed > 0.0) {
            bail!("--speed: {} is not a positive factor", self.speed);
        }
        // Open once now so that a missing file or an undetectable format fails before any run,
        // and the detected format is said once.
        let reader = self.trace_input.open(path)?;
        Ok(TraceWorkload {
            path: path.to_path_buf(),
            format: Some(reader.format()),
            parse: trace::ParseOptions {
                skip_bad_lines: self.trace_input.skip_bad_lines,
                blkparse_action: self.trace_input.blkparse_action,
            },
            replay: trace::ReplayOptions {
                speed: self.speed,
                address_policy: self.address_policy.parse().context("--address-policy")?,
                max_requests: self.max_requests,
                device_filter: self.device_filter,
            },
            fill_unwritten: self.fill_unwritten,
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
        "device: {} preset, {} ch x {} LUN x {} pl x {} blk x {} pg x {} B = {} physical, {} logical; timing={}; seed {}\n",
        e.device.preset,
        g.channels,
        g.luns_per_channel,
        g.planes_per_lun,
        g.blocks_per_plane,
        g.pages_per_block,
        g.page_size,
        report::human_bytes(g.physical_bytes()),
        report::human_bytes(g.logical_bytes()),
        e.device.timing.mode.key(),
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
    match &e.workload {
        Workload::Jobs(phases) => {
            for p in phases {
                for j in &p.jobs {
                    s += &format!(
                        "phase {}: job {}: rw={} bs={} numjobs={} iodepth={} dist={}\n",
                        p.name, j.name, j.rw, j.bs, j.numjobs, j.iodepth, j.dist
                    );
                }
            }
        }
        Workload::Trace(t) => {
            s += &format!(
                "trace {} ({}), speed {}x, address policy {}{}\n",
                t.path.display(),
                t.format.map_or("detected".into(), |f| f.to_string()),
                t.replay.speed,
                t.replay.address_policy,
                if t.fill_unwritten {
                    ", unwritten pages filled first"
                } else {
                    ""
                }
            );
        }
    }
    s
}

/// Runs `e` on `ftls`, `jobs` at a time, with progress bars unless `quiet`.
fn run_all(e: &Experiment, ftls: &[&str], jobs: usize, quiet: bool) -> Result<Vec<RunReport>> {
    let lines = MultiProgress::new();
    e.run_all(ftls, jobs, |ftl| progress::Bar::new(ftl, &lines, quiet))
        .map_err(|(ftl, err)| anyhow::Error::new(err).context(format!("{ftl}: run failed")))
}

fn trace_cmd(cmd: TraceCmd) -> Result<()> {
    match cmd {
        TraceCmd::Stats { file, input, json } => {
            let mut reader = input.open(&file)?;
            let stats = trace::TraceStats::from_records(reader.by_ref())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&stats)?);
            } else {
                print!("{stats}");
            }
            report_skipped(&reader);
        }
        TraceCmd::Convert {
            file,
            input,
            to,
            output,
        } => {
            let to: trace::Format = to.parse().context("--to")?;
            let mut reader = input.open(&file)?;
            let out: Box<dyn Write> = match &output {
                Some(p) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(p)
                        .with_context(|| format!("cannot create {}", p.display()))?,
                )),
                None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            };
            let mut w = trace::TraceWriter::new(to, out)?;
            let (mut written, mut unrepresentable) = (0u64, 0u64);
            for rec in reader.by_ref() {
                match w.write(&rec?) {
                    Ok(()) => written += 1,
                    Err(trace::TraceError::Unrepresentable { .. }) => unrepresentable += 1,
                    Err(e) => return Err(e.into()),
                }
            }
            w.finish()?.flush()?;
            eprintln!("{written} records written as {to}; {unrepresentable} skipped ({to} cannot express them)");
            report_skipped(&reader);
        }
    }
    Ok(())
}

fn report_skipped(reader: &trace::TraceReader) {
    if reader.skipped() > 0 {
        eprintln!(
            "{} malformed lines skipped; first: {}",
            reader.skipped(),
            reader.warnings().join("; ")
        );
    }
}

fn main_inner() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Trace { cmd } => trace_cmd(cmd)?,
        Cmd::Serve(o) => serve::serve(o)?,
        Cmd::List => {
            println!("FTLs: {}", FTLS.join(", "));
            println!("presets: {}", PRESETS.join(", "));
        }
        Cmd::Run { ftl, opts } => {
            let e = opts.experiment()?;
            e.check_params(&[ftl.as_str()])?;
            let r = run_all(&e, &[ftl.as_str()], 1, opts.quiet)?.remove(0);
            let tables = format!(
                "{}\n{}\n{}",
                describe(&e),
                report::phases_table(&r.phases),
                report::detail_table(&r)
            );
            opts.output(&tables, serde_json::to_value(&r)?)?;
        }
        Cmd::Compare { ftl, jobs, opts } => {
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
            let jobs = match jobs {
                Some(0) => bail!("--jobs: must be at least 1"),
                Some(n) => n,
                None => std::thread::available_parallelism().map_or(1, |n| n.get()),
            };
            let runs = run_all(&e, &ftls, jobs, opts.quiet)?;
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
