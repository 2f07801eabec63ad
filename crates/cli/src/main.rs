//! `learnedftl`: the command-line front end. Parses options into an
//! [`Experiment`], runs it on one FTL (`run`) or several
//! (`compare`), and prints aligned tables (and JSON with `--json`).

mod check;
mod output;
mod progress;
mod reproduce;
mod serve;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Arg, Args, Command, CommandFactory, FromArgMatches, Parser, Subcommand};
use indicatif::MultiProgress;
use learnedftl::config::PRESETS;
use learnedftl::error::ConfigError;
use learnedftl::ftl::FTLS;
use learnedftl::host::AvailableMemory;
use learnedftl::params::Params;
use learnedftl::report;
use learnedftl::run::{parallel_jobs, Experiment, OptionsError, RunOptions, RunReport, Workload};
use learnedftl::trace;
use output::Target;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The simulator's large tables on huge pages (learnedftl::host::huge_pages: less CPU time for
/// the same results).
#[global_allocator]
static ALLOC: learnedftl::host::huge_pages::HugePages = learnedftl::host::huge_pages::HugePages;

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
        /// Also draw the measured phase as an SVG of bar charts (IOPS, p99 latency, WAF per FTL).
        #[arg(long, value_name = "PATH")]
        svg: Option<PathBuf>,
        #[command(flatten)]
        opts: Opts,
    },
    /// Serve a simulated SSD over NBD to real clients (fio, qemu-io, nbdcopy, nbdfuse) until
    /// SIGINT or SIGTERM.
    Serve(serve::ServeOpts),
    /// Run the papers' experiments (SPEC §7) and write a report: report.html with plots,
    /// report.md, the JSON of every run; shared preconditioning, parallel runs, cached results.
    Reproduce(reproduce::ReproduceOpts),
    /// Conformance checks: seeded streams of every host operation (reads, writes, trims,
    /// flushes, FUA, write-zeroes; 512 B to MiBs; queue depths 1-64) on a full device, every
    /// read compared byte for byte with what was acknowledged, optional power cuts; a failure is
    /// shrunk and saved with a command that replays it. Exit status 1 on any failure.
    Check(check::CheckOpts),
    /// List the implemented FTLs and the device presets.
    List,
    /// List every --set key of the device and the FTLs: its default (on --preset), unit and
    /// meaning, grouped by what takes it.
    Params {
        /// Only the keys of this FTL and the device (default: every FTL's).
        #[arg(long)]
        ftl: Option<String>,
        /// Device preset whose defaults to show: paper, quick, tiny, 980pro or a PATH.preset file.
        #[arg(long, default_value = "quick")]
        preset: String,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
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
        /// Target format: disksim, fio-iolog (v3), msr or learnedftl.
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
    /// Trace format: disksim, msr, umass, systor, fiu, blkparse, fio-iolog, learnedftl (default: detected).
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
        if let Some(note) = r.detection_note() {
            output::note(&format!("{note}\n"));
        }
        Ok(r)
    }
}

/// Options shared by `run` and `compare`.
#[derive(Args)]
struct Opts {
    /// Device preset: paper, quick, tiny or 980pro (docs/device.md "Drive presets"), or a drive preset file (PATH.preset).
    #[arg(long, default_value = "quick")]
    preset: String,
    /// Scale the preset to this logical capacity (binary units: 512MiB, 32GiB, 1TiB, 1.5TiB;
    /// or bytes) by its blocks per plane, rounded up (docs/device.md "Capacity").
    #[arg(long, value_name = "SIZE")]
    capacity: Option<String>,
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
    /// Trace replay: placement IDs for writes the trace gives none (NVMe FDP, docs/fdp.md):
    /// lba:N (N equal ranges of the logical space) or size:BYTES,... (by request size).
    #[arg(long, requires = "trace", value_name = "lba:N|size:BYTES,...")]
    placement_by: Option<String>,
    #[arg(long, requires = "trace")]
    device_filter: Option<u32>,
    /// Trace replay: first write every page the trace reads before writing it (a phase of its
    /// own, not counted in the result).
    #[arg(long, requires = "trace")]
    fill_unwritten: bool,
    /// Trace replay: `open` (each request at its recorded arrival) or `closed` (a learnedftl
    /// recording: each request its recorded think time after what it waited for completed on
    /// the simulated device; docs/traces.md).
    #[arg(long, requires = "trace", default_value = "open")]
    replay: String,
    /// Closed-loop replay: the recorded application's phases, `name,start_unix_ns,end_unix_ns[,ops]`
    /// a line; each gets its simulated duration and operations per second.
    #[arg(long, requires = "trace")]
    phases: Option<PathBuf>,
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
    /// A FLUSH after every N writes of each clone (fio's fsync; makes a write buffer's data
    /// durable).
    #[arg(long, requires = "rw", value_name = "N")]
    fsync: Option<u64>,
    /// Tag writes with FDP placement IDs (fio's fdp=1; the device needs fdp_ruhs, docs/fdp.md).
    #[arg(long, requires = "rw")]
    fdp: bool,
    /// The placement ID indices writes use, e.g. 0,2,5-7 (fio's fdp_pli; default: every
    /// handle).
    #[arg(long, requires = "fdp", value_name = "LIST")]
    fdp_pli: Option<String>,
    /// How each write picks its placement ID: roundrobin or random (fio's fdp_pli_select).
    #[arg(long, requires = "fdp", value_name = "roundrobin|random")]
    fdp_pli_select: Option<String>,
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
    /// Cut the power once in every N host requests of the workload (at a request and operation
    /// drawn from the seed); the FTL recovers from flash each time (docs/power.md).
    #[arg(long, value_name = "N")]
    power_cut_every: Option<u64>,
    /// Write the report as JSON to PATH, or to stdout with '-' (the table then goes to stderr).
    #[arg(long, value_name = "PATH|-")]
    json: Option<String>,
    /// No progress bars (warnings about the result are still printed, on stderr).
    #[arg(long)]
    quiet: bool,
    /// Under the table, every column's heading, JSON key and definition instead of the
    /// one-line legend.
    #[arg(long)]
    explain: bool,
}

impl Opts {
    /// The experiment these flags ask for: the library's [`RunOptions`] build it, so the CLI
    /// and the Python binding make the same experiment from the same options.
    fn experiment(&self) -> Result<Experiment> {
        let mut params = Params::new();
        for s in &self.set {
            params.insert_assignment(s, "--set")?;
        }
        let options = RunOptions {
            preset: self.preset.clone(),
            capacity: self.capacity.clone(),
            params,
            precondition: self.precondition.clone(),
            job: self.job.clone(),
            trace: self.trace.clone(),
            format: self.trace_input.format.clone(),
            skip_bad_lines: self.trace_input.skip_bad_lines,
            blkparse_action: self.trace_input.blkparse_action,
            speed: self.speed,
            address_policy: self.address_policy.clone(),
            max_requests: self.max_requests,
            device_filter: self.device_filter,
            placement_by: self.placement_by.clone(),
            fill_unwritten: self.fill_unwritten,
            replay: self.replay.clone(),
            phases: self.phases.clone(),
            rw: self.rw.clone(),
            bs: self.bs.clone(),
            numjobs: self.numjobs,
            iodepth: self.iodepth,
            io_size: self.io_size.clone(),
            number_ios: self.number_ios,
            runtime: self.runtime.clone(),
            offset: self.offset.clone(),
            size: self.size.clone(),
            rwmixread: self.rwmixread,
            random_distribution: self.random_distribution.clone(),
            norandommap: self.norandommap,
            fsync: self.fsync,
            fdp: self.fdp,
            fdp_pli: self.fdp_pli.clone(),
            fdp_pli_select: self.fdp_pli_select.clone(),
            settle: self.settle.clone(),
            seed: self.seed,
            verify: self.verify,
            power_cut_every: self.power_cut_every,
        };
        options
            .experiment(&mut |note| output::note(&format!("{note}\n")))
            .map_err(flag_error)
    }

    /// What to print under a table of `layout`: the definition of every column with
    /// `--explain`, else its one-line legend.
    fn legend(&self, layout: &report::columns::Layout) -> String {
        if self.explain {
            format!("\n{}", layout.explain())
        } else {
            format!("{} (--explain: every column)\n", layout.legend)
        }
    }

    /// The files the run reads.
    fn inputs(&self) -> Vec<&Path> {
        self.trace
            .iter()
            .chain(&self.job)
            .map(PathBuf::as_path)
            .collect()
    }

    /// Refuses, before anything runs, outputs that would overwrite an input.
    fn check_outputs(&self) -> Result<()> {
        let inputs = self.inputs();
        Target::Stdout.refuse_over(&inputs)?;
        match self.json.as_deref() {
            Some("-") | None => Ok(()),
            Some(path) => Target::File(Path::new(path)).refuse_over(&inputs),
        }
    }

    /// Writes the JSON (to stdout with `--json -`, else to its file, replaced only when whole)
    /// and prints the tables (to stdout, or stderr when JSON goes to stdout).
    fn output(&self, tables: &str, json: serde_json::Value) -> Result<()> {
        let json = serde_json::to_string_pretty(&json)? + "\n";
        match self.json.as_deref() {
            Some("-") => {
                output::note(tables);
                output::print(&json)
            }
            Some(path) => {
                output::write_all(Target::File(Path::new(path)), &json)?;
                output::print(tables)
            }
            None => output::print(tables),
        }
    }
}

/// A library error about options, with each option named as the flag that gave it.
fn flag_error(e: OptionsError) -> anyhow::Error {
    match e {
        OptionsError::Option { option, message } => {
            anyhow!("--{}: {message}", option.replace('_', "-"))
        }
        e => e.into(),
    }
}

/// A library configuration error; an unknown `--set` key's points at `learnedftl params`, which
/// explains every key of `ftls`.
pub(crate) fn params_error(e: ConfigError, ftls: &[&str]) -> anyhow::Error {
    if !matches!(e, ConfigError::UnknownKeys { .. }) {
        return e.into();
    }
    let command = match ftls {
        [one] => format!("learnedftl params --ftl {one}"),
        _ => "learnedftl params".to_string(),
    };
    anyhow!("{e} (`{command}` explains each key)")
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
    if let Some(note) = e.device.capacity_note() {
        s += &format!("{note}\n");
    }
    if let Some(c) = e.device.controller.describe(e.device.power_loss_protection) {
        s += &format!("{c}\n");
    }
    if let Some(h) = e.device.host.describe() {
        s += &format!("{h}\n");
    }
    if let Some(f) = e.device.fdp.describe() {
        s += &format!("{f}\n");
    }
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
                    // A sequential job draws no offsets: its distribution would mislead.
                    let dist = if j.rw.is_random() {
                        format!(" dist={}", j.dist)
                    } else {
                        String::new()
                    };
                    s += &format!(
                        "phase {}: job {}: rw={} bs={} numjobs={} iodepth={}{dist}\n",
                        p.name, j.name, j.rw, j.bs, j.numjobs, j.iodepth
                    );
                }
            }
        }
        Workload::Trace(t) => {
            s += &format!(
                "trace {} ({}), {}, speed {}x, address policy {}{}\n",
                t.path.display(),
                t.format.map_or("detected".into(), |f| f.to_string()),
                if t.closed_loop {
                    "closed-loop"
                } else {
                    "open-loop"
                },
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

/// `learnedftl list`: the FTLs, and each preset with the largest `--capacity` whose device
/// state fits `available` (with and without the oracle of `--verify`).
fn list(available: &AvailableMemory) -> Result<String> {
    let mut t = report::table::Table::new(&[
        "preset",
        "geometry (ch x LUN x pl x blk x pg x page)",
        "logical",
        "physical",
        "largest --capacity",
        "with --verify",
    ])
    .left_aligned();
    let mut bound = false;
    for p in PRESETS {
        let c = learnedftl::config::DeviceConfig::preset(p)?;
        let g = &c.geometry;
        let mut largest = |verify| -> Result<String> {
            Ok(
                match learnedftl::config::largest_capacity(p, verify, available.bytes)? {
                    None => "none fits".into(),
                    Some(l) => {
                        bound |= l.address_bound;
                        format!(
                            "{}{}",
                            learnedftl::config::format_capacity(l.logical_bytes),
                            if l.address_bound { " *" } else { "" }
                        )
                    }
                },
            )
        };
        let (plain, verify) = (largest(false)?, largest(true)?);
        t.row(vec![
            p.to_string(),
            format!(
                "{} x {} x {} x {} x {} x {} B",
                g.channels,
                g.luns_per_channel,
                g.planes_per_lun,
                g.blocks_per_plane,
                g.pages_per_block,
                g.page_size
            ),
            learnedftl::config::format_capacity(g.logical_bytes()),
            learnedftl::config::format_capacity(g.physical_bytes()),
            plain,
            verify,
        ]);
    }
    Ok(format!(
        "FTLs: {}\n\npresets:\n{}largest --capacity: the largest logical capacity whose device \
         state fits the {} available now ({}), one run at a time; jobs, caches and page data \
         (serve) come on top (docs/device.md \"Capacity\"){}\n\
         (`learnedftl params` lists the --set keys)\n",
        FTLS.join(", "),
        t.render(),
        report::human_bytes(available.bytes),
        available.origin,
        if bound {
            "\n* the largest any machine can run: page addresses are 32-bit"
        } else {
            ""
        }
    ))
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
            report_skipped(&reader);
            if json {
                output::print(&(serde_json::to_string_pretty(&stats)? + "\n"))?;
            } else {
                output::print(&stats.to_string())?;
            }
        }
        TraceCmd::Convert {
            file,
            input,
            to,
            output,
        } => {
            let to: trace::Format = to.parse().context("--to")?;
            let target = output.as_deref().map_or(Target::Stdout, Target::File);
            target.refuse_over(&[&file])?;
            let mut reader = input.open(&file)?;
            let mut file_out = output
                .as_deref()
                .map(output::OutputFile::create)
                .transpose()?;
            let out: Box<dyn Write + '_> = match &mut file_out {
                Some(f) => Box::new(f),
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
            w.finish()?.flush().context("cannot write the trace")?;
            if let Some(f) = file_out {
                f.commit()?;
            }
            output::note(&format!(
                "{written} records written as {to}; {unrepresentable} skipped ({to} cannot \
                 express them)\n"
            ));
            report_skipped(&reader);
        }
    }
    Ok(())
}

fn report_skipped(reader: &trace::TraceReader) {
    if reader.skipped() > 0 {
        warn(&[format!(
            "{} malformed lines skipped; first: {}",
            reader.skipped(),
            reader.warnings().join("; ")
        )]);
    }
}

/// Prints `warnings` on standard error, whatever `--quiet` and wherever the tables go: they say
/// what a result means, unlike the progress bars `--quiet` silences.
fn warn(warnings: &[String]) {
    for w in warnings {
        output::note(&format!("warning: {w}\n"));
    }
}

/// The command line: [`Cli`] with every option that takes a value accepting a negative number
/// as its value (`--seed -1` is a bad seed, not an unknown flag `-1`), and every unsigned option
/// saying which numbers it takes, in every subcommand.
fn command() -> Command {
    fn numbers_are_values(cmd: Command) -> Command {
        cmd.mut_args(|a| {
            if a.get_action().takes_values() {
                unsigned_parser(a.allow_negative_numbers(true))
            } else {
                a
            }
        })
        .mut_subcommands(numbers_are_values)
    }
    numbers_are_values(Cli::command())
}

/// `a` with a parser that names the accepted range when its value is of an unsigned integer
/// type (clap's own says "invalid digit found in string" for `-1`); other options unchanged.
fn unsigned_parser(a: Arg) -> Arg {
    let ty = a.get_value_parser().type_id();
    macro_rules! unsigned {
        ($($t:ty),+) => {$(
            if ty == std::any::TypeId::of::<$t>() {
                return a.value_parser(|s: &str| {
                    s.parse::<$t>().map_err(|_| {
                        format!("must be a whole number from 0 to {}", <$t>::MAX)
                    })
                });
            }
        )+};
    }
    unsigned!(u8, u16, u32, u64, usize);
    a
}

fn main_inner() -> Result<bool> {
    let cli = Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit());
    match cli.cmd {
        Cmd::Reproduce(o) => return reproduce::reproduce(o),
        Cmd::Trace { cmd } => trace_cmd(cmd)?,
        Cmd::Serve(o) => serve::serve(o)?,
        Cmd::Check(o) => return check::check(o),
        Cmd::List => output::print(&list(&AvailableMemory::now())?)?,
        Cmd::Params { ftl, preset, json } => {
            let listing = learnedftl::ftl::keys::listing(ftl.as_deref(), &preset)?;
            output::print(&if json {
                serde_json::to_string_pretty(&listing)? + "\n"
            } else {
                learnedftl::report::params_table(&listing)
            })?;
        }
        Cmd::Run { ftl, opts } => {
            opts.check_outputs()?;
            let e = opts.experiment()?;
            e.check_memory(1, &AvailableMemory::now())?;
            e.check_params(&[ftl.as_str()])
                .map_err(|err| params_error(err, &[ftl.as_str()]))?;
            let r = run_all(&e, &[ftl.as_str()], 1, opts.quiet)?.remove(0);
            let notes = report::notes(std::slice::from_ref(&r));
            let tables = format!(
                "{}\n{}{}{}\n{}{}",
                describe(&e),
                report::phases_table(&r.phases),
                opts.legend(&report::columns::PHASES),
                notes.footer,
                report::detail_table(&r),
                report::closed_loop_table(std::slice::from_ref(&r))
            );
            let written = opts.output(&tables, serde_json::to_value(&r)?);
            warn(&notes.warnings);
            written?;
        }
        Cmd::Compare {
            ftl,
            jobs,
            svg,
            opts,
        } => {
            let ftls: Vec<&str> = if ftl.is_empty() {
                FTLS.to_vec()
            } else {
                ftl.iter().map(String::as_str).collect()
            };
            if ftls.is_empty() {
                bail!("--ftl: no FTL given");
            }
            opts.check_outputs()?;
            if let Some(path) = &svg {
                Target::File(path).refuse_over(&opts.inputs())?;
            }
            let e = opts.experiment()?;
            let jobs = parallel_jobs(jobs).map_err(flag_error)?;
            // Memory first: checking the parameters builds every FTL.
            e.check_memory(jobs.min(ftls.len()), &AvailableMemory::now())?;
            e.check_params(&ftls)
                .map_err(|err| params_error(err, &ftls))?;
            let runs = run_all(&e, &ftls, jobs, opts.quiet)?;
            let notes = report::notes(&runs);
            let tables = format!(
                "{}\n{}{}{}{}",
                describe(&e),
                report::compare_table(&runs),
                opts.legend(&report::columns::COMPARE),
                notes.footer,
                report::closed_loop_table(&runs)
            );
            if let Some(path) = &svg {
                output::write_all(Target::File(path), &report::plot::compare_svg(&runs)?)?;
            }
            let written = opts.output(&tables, serde_json::to_value(&runs)?);
            warn(&notes.warnings);
            written?;
        }
    }
    Ok(true)
}

fn main() -> ExitCode {
    match main_inner() {
        Ok(true) => ExitCode::SUCCESS,
        // Reported already (a failed check of `reproduce`).
        Ok(false) => ExitCode::FAILURE,
        // `| head` closed the pipe: stop quietly, as Unix tools do.
        Err(e) if output::is_broken_pipe(&e) => ExitCode::from(output::BROKEN_PIPE_EXIT),
        Err(e) => {
            output::note(&format!("error: {}\n", output::render_error(&e)));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    /// The subcommand path and long name of every option of every subcommand that takes a value.
    fn options(cmd: &Command, path: &[&str], out: &mut Vec<(Vec<String>, String)>) {
        for a in cmd.get_arguments() {
            if let (true, Some(long)) = (a.get_action().takes_values(), a.get_long()) {
                out.push((
                    path.iter().map(|s| s.to_string()).collect(),
                    long.to_string(),
                ));
            }
        }
        for sub in cmd.get_subcommands() {
            options(sub, &[path, &[sub.get_name()]].concat(), out);
        }
    }

    #[test]
    fn negative_numbers_are_values_and_unsigned_options_say_what_they_take() {
        let mut all = Vec::new();
        options(&command(), &["learnedftl"], &mut all);
        assert!(all.len() > 40, "{}", all.len());
        let mut unsigned = Vec::new();
        for (path, long) in &all {
            let mut line = path.clone();
            line.extend([format!("--{long}"), "-1".to_string()]);
            let e = command().try_get_matches_from(&line).err();
            // Whatever else is wrong with the line, "-1" was taken as the value.
            let kind = e.as_ref().map(|e| e.kind());
            assert_ne!(kind, Some(ErrorKind::UnknownArgument), "{line:?}");
            if kind == Some(ErrorKind::ValueValidation) {
                let msg = e.unwrap().to_string();
                assert!(!msg.contains("invalid digit"), "{line:?}: {msg}");
                if msg.contains("must be a whole number from 0 to") {
                    unsigned.push(long.clone());
                }
            }
        }
        for long in ["seed", "jobs", "numjobs", "iodepth", "ops", "max-requests"] {
            assert!(unsigned.iter().any(|u| u == long), "--{long}: {unsigned:?}");
        }
    }
}
