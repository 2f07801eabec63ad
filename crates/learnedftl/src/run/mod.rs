//! Experiments: a device, FTL parameters, optional preconditioning and a workload, run on one FTL
//! into a [`RunReport`]. The CLI's `run` and `compare` and the Python binding are thin layers
//! over this: [`RunOptions`] turns options as a user writes them into an [`Experiment`].

pub mod closed;
mod options;

pub use closed::{AppPhase, ClosedLoopSummary, PhaseResult};
pub use options::{
    parallel_jobs, OptionsError, RunOptions, DEFAULT_PRECONDITION, DEFAULT_READ_IOS_PER_JOB,
    DEFAULT_READ_NUMJOBS,
};

use crate::config::DeviceConfig;
use crate::engine::{
    EngineError, JobsState, PowerCutPlan, Progress, SimOptions, Simulator, Verify,
};
use crate::error::{quote, ConfigError};
use crate::ftl;
use crate::host::{AvailableMemory, MemoryEstimate};
use crate::mapping::tpcache::ENTRY_BYTES;
use crate::mapping::Budget;
use crate::params::{parse_size, Params};
use crate::stats::Metrics;
use crate::trace::{self, Format, ParseOptions, ReplayOptions};
use crate::workload::{HostIo, JobSpec, Phase, RwKind, Settle};
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Preconditioning: write `multiple` × the logical capacity with `bs` writes (`RW:BS:MULTIPLE`,
/// e.g. `randwrite:512k:6`), as one job of depth 64 with fio's random map, before measuring.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Precondition {
    /// `write` (sequential) or `randwrite`.
    pub rw: RwKind,
    /// Block size, bytes.
    pub bs: u64,
    /// Multiple of the logical capacity to write.
    pub multiple: f64,
}

impl FromStr for Precondition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let [rw, bs, mult] = parts[..] else {
            return Err(format!(
                "{}: expected RW:BS:MULTIPLE, e.g. randwrite:512k:6",
                quote(s)
            ));
        };
        let rw: RwKind = rw.parse()?;
        if !matches!(rw, RwKind::Write | RwKind::RandWrite) {
            return Err(format!(
                "{}: preconditioning writes: use write or randwrite",
                quote(s)
            ));
        }
        let bs = parse_size(bs)
            .filter(|&b| b > 0)
            .ok_or_else(|| format!("{}: {} is not a block size", quote(s), quote(bs)))?;
        let multiple: f64 = mult
            .parse()
            .ok()
            .filter(|m: &f64| m.is_finite() && *m > 0.0)
            .ok_or_else(|| format!("{}: {} is not a positive multiple", quote(s), quote(mult)))?;
        Ok(Precondition { rw, bs, multiple })
    }
}

impl fmt::Display for Precondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}k:{}", self.rw, self.bs / 1024, self.multiple)
    }
}

impl Precondition {
    /// The preconditioning job for a logical space of `logical_bytes`.
    pub fn job(&self, logical_bytes: u64) -> JobSpec {
        let mut j = JobSpec::new("precondition", self.rw);
        j.bs = self.bs;
        j.iodepth = 64;
        j.io_size = Some((logical_bytes as f64 * self.multiple) as u64);
        j
    }
}

/// Open-loop replay of a block trace (SPEC §4.2).
#[derive(Clone, Debug)]
pub struct TraceWorkload {
    /// The trace file (`.gz` and `.zst` are decompressed).
    pub path: PathBuf,
    /// Its format (`None`: detected from the content).
    pub format: Option<Format>,
    /// Parsing options.
    pub parse: ParseOptions,
    /// Replay options: speed, address policy, request limit, device filter.
    pub replay: ReplayOptions,
    /// Before replaying, write every page the trace reads before it writes it, as a phase of
    /// its own.
    pub fill_unwritten: bool,
    /// Replay closed-loop (a learnedftl recording): each request after what it waited for.
    pub closed_loop: bool,
    /// The recorded application's phases (closed-loop replay).
    pub phases: Vec<AppPhase>,
}

/// What an experiment runs after preconditioning.
#[derive(Clone, Debug)]
pub enum Workload {
    /// Closed-loop job phases (the last is the measured one).
    Jobs(Vec<Phase>),
    /// A trace replayed open-loop (the measured phase).
    Trace(TraceWorkload),
}

/// One FTL's run: configuration, every phase in order, and the measured (last) phase.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// FTL name.
    pub ftl: String,
    /// Device preset the configuration started from.
    pub preset: String,
    /// The run's seed.
    pub seed: u64,
    /// Effective configuration: device, FTL parameters, workload.
    pub config: serde_json::Value,
    /// Every phase, preconditioning first.
    pub phases: Vec<Metrics>,
    /// The measured phase (the last).
    pub result: Metrics,
    /// For trace replay: the trace, its format and what replay did to its records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSummary>,
}

/// What reading and adapting a replayed trace did (a run report's `trace`).
#[derive(Clone, Debug, Serialize)]
pub struct TraceSummary {
    /// The trace file.
    pub path: String,
    /// Its format.
    pub format: Format,
    /// Whether the format was detected (rather than given).
    pub format_detected: bool,
    /// Its compression.
    pub compression: String,
    /// Lines read.
    pub lines: u64,
    /// Malformed lines skipped (`skip_bad_lines`).
    pub skipped_bad_lines: u64,
    /// Lines carrying no request (headers, comments, other blkparse actions, ...).
    pub ignored_lines: u64,
    /// The first skipped lines' messages.
    pub warnings: Vec<String>,
    /// What the adaptation did: filtered, clipped, wrapped, ... requests.
    pub replay: trace::ReplayCounters,
    /// Closed-loop replay: the span and the application's phases on this device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<ClosedLoopSummary>,
}

/// `estimate` (a device's) with the largest mapping cache the budget in `params` allows, at
/// the costliest cache's simulator bytes per entry (DFTL's): the FTL is not known where the
/// estimate is made (`compare` runs several), and a cache costs the simulator several times
/// the 8 B per entry the model charges (docs/device.md "Memory").
pub fn with_largest_cache(
    estimate: MemoryEstimate,
    device: &DeviceConfig,
    params: &Params,
) -> MemoryEstimate {
    let entries = Budget::largest_cache(&device.geometry, params) / ENTRY_BYTES;
    if entries == 0 {
        return estimate;
    }
    estimate.with(
        format!(
            "the largest mapping cache its budget allows ({entries} entries x {} B, DFTL's \
             simulator state per entry)",
            ftl::dftl::STATE_BYTES_PER_ENTRY
        ),
        entries.saturating_mul(ftl::dftl::STATE_BYTES_PER_ENTRY),
        "lower cmt_ratio or mapping_dram_bytes",
    )
}

/// What to run on each FTL.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The device.
    pub device: DeviceConfig,
    /// FTL parameters (device keys already taken out).
    pub params: Params,
    /// Preconditioning, if any.
    pub precondition: Option<Precondition>,
    /// The workload.
    pub workload: Workload,
    /// Idle time after preconditioning (and after a trace's fill-unwritten phase) before the
    /// workload: a `settle` phase (SPEC §3.5). Job phases may ask for their own
    /// ([`Phase::settle`]).
    pub settle: Settle,
    /// Seed for everything random.
    pub seed: u64,
    /// Read verification.
    pub verify: Verify,
    /// Power cuts: one in every window of this many host requests after preconditioning
    /// (docs/power.md).
    pub power_cut_every: Option<u64>,
}

impl Experiment {
    /// Checks that every FTL parameter is understood by at least one of `ftls` (each FTL ignores
    /// keys meant for others), and that each of them accepts the values it takes.
    pub fn check_params(&self, ftls: &[&str]) -> Result<(), ConfigError> {
        ftl::build_each(ftls, &self.device, &self.params, |_, built| {
            match self.power_cut_every.and(built.power_cut_refusal()) {
                Some(why) => Err(ConfigError::invalid("--power-cut-every", why)),
                None => Ok(()),
            }
        })
        .map(drop)
    }

    /// What one run of this experiment holds at most (docs/device.md "Memory"): the device's
    /// state ([`DeviceConfig::state_bytes`]) and that of the phase whose jobs hold the most
    /// ([`JobsState`]; phases run one after another, and trace replay streams).
    pub fn memory_estimate(&self) -> MemoryEstimate {
        let device = with_largest_cache(
            self.device.memory_estimate(self.verify != Verify::Off),
            &self.device,
            &self.params,
        );
        let pre = self
            .precondition
            .as_ref()
            .map(|p| p.job(self.device.geometry.logical_bytes()));
        let phases: &[Phase] = match &self.workload {
            Workload::Jobs(phases) => phases,
            Workload::Trace(_) => &[],
        };
        let largest = pre
            .as_ref()
            .map(|j| ("precondition", std::slice::from_ref(j)))
            .into_iter()
            .chain(phases.iter().map(|p| (p.name.as_str(), p.jobs.as_slice())))
            .max_by_key(|(_, jobs)| JobsState::of(jobs).bytes());
        let Some((phase, jobs)) = largest else {
            return device;
        };
        let state = JobsState::of(jobs);
        let widest = jobs
            .iter()
            .max_by_key(|j| j.slots())
            .map_or_else(String::new, |j| quote(&j.name));
        device.with(
            format!(
                "the jobs of phase {} ({} clones x {} B, numjobs x iodepth = {} slots x {} B)",
                quote(phase),
                state.clones,
                JobsState::CLONE_BYTES,
                state.slots,
                JobsState::SLOT_BYTES
            ),
            state.bytes(),
            &format!("lower numjobs or iodepth of job {widest}"),
        )
    }

    /// Checks that `runs` simulators of this experiment at once fit in `available` memory,
    /// from [`Experiment::memory_estimate`], before any is built.
    pub fn check_memory(
        &self,
        runs: usize,
        available: &AvailableMemory,
    ) -> Result<(), ConfigError> {
        self.memory_estimate().check(runs, available)
    }

    /// Runs the experiment on FTL `name`.
    pub fn run(&self, name: &str, progress: &mut dyn Progress) -> Result<RunReport, EngineError> {
        let prepared = self.prepare(name, progress)?;
        self.run_prepared(name, prepared, progress)
    }

    /// Builds FTL `name` on the device and runs the preconditioning and its settle phase: the
    /// state every experiment with the same device, FTL, parameters, preconditioning, settle
    /// rule, seed and verification starts its workload from. [`Prepared`] is `Clone`; a clone
    /// goes on bit-identically (`tests/snapshot.rs`), so several workloads can start from one
    /// preparation ([`crate::reproduce`] does).
    pub fn prepare(
        &self,
        name: &str,
        progress: &mut dyn Progress,
    ) -> Result<Prepared, EngineError> {
        let opts = SimOptions {
            verify: self.verify,
            check_invariants: false,
            ..SimOptions::default()
        };
        let mut sim = Simulator::by_name(&self.device, name, &self.params, opts)?;
        let logical = self.device.geometry.logical_bytes();
        let mut phases = Vec::new();
        if let Some(pre) = &self.precondition {
            phases.push(sim.run_jobs("precondition", &[pre.job(logical)], self.seed, progress)?);
            phases.extend(sim.settle(SETTLE, self.settle, progress)?);
        }
        Ok(Prepared { sim, phases })
    }

    /// Runs the workload on `prepared` (from [`Experiment::prepare`] of an experiment that
    /// differs from this one at most in its workload) and reports every phase.
    pub fn run_prepared(
        &self,
        name: &str,
        prepared: Prepared,
        progress: &mut dyn Progress,
    ) -> Result<RunReport, EngineError> {
        let Prepared {
            mut sim,
            mut phases,
        } = prepared;
        if let Some(every) = self.power_cut_every {
            let seed = crate::seed::mix(self.seed, POWER_CUT_STREAM, 0);
            sim.plan_power_cuts(PowerCutPlan { every, seed })?;
        }
        let trace = match &self.workload {
            Workload::Jobs(jobs) => {
                for (i, phase) in jobs.iter().enumerate() {
                    if let Some(s) = phase.settle {
                        phases.extend(sim.settle(SETTLE, s, progress)?);
                    }
                    let seed = crate::seed::mix(self.seed, 1 + i as u64, 0);
                    phases.push(sim.run_jobs(&phase.name, &phase.jobs, seed, progress)?);
                }
                None
            }
            Workload::Trace(t) => Some(replay_trace(
                &mut sim,
                t,
                self.settle,
                &mut phases,
                progress,
            )?),
        };
        let result = phases.last().cloned().unwrap_or_default();
        let mut config = self.describe();
        config["ftl"] = sim.ftl().params();
        Ok(RunReport {
            ftl: name.to_string(),
            preset: self.device.preset.clone(),
            seed: self.seed,
            config,
            phases,
            result,
            trace,
        })
    }

    /// The experiment's configuration as the report's `config` has it, with the FTL
    /// parameters as given (`ftl`: the `key=value` pairs not taken by the device; a report
    /// replaces them by the FTL's effective parameters).
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "device": self.device,
            "ftl": self.params.iter().collect::<std::collections::BTreeMap<_, _>>(),
            "precondition": self.precondition,
            "settle": self.settle,
            "workload": match &self.workload {
                Workload::Jobs(jobs) => serde_json::json!({
                    "phases": jobs.iter().map(|p| serde_json::json!({
                        "name": p.name,
                        "settle": p.settle,
                        "jobs": p.jobs,
                    })).collect::<Vec<_>>(),
                }),
                Workload::Trace(t) => {
                    let mut w = serde_json::json!({
                        "trace": t.path.display().to_string(),
                        "format": t.format,
                        "speed": t.replay.speed,
                        "address_policy": t.replay.address_policy.to_string(),
                        "max_requests": t.replay.max_requests,
                        "device_filter": t.replay.device_filter,
                        "fill_unwritten": t.fill_unwritten,
                        "skip_bad_lines": t.parse.skip_bad_lines,
                    });
                    // Only a replay that places writes says how (so the others' descriptions,
                    // and cached results, stay as before).
                    if !t.replay.placement_by.is_none() {
                        w["placement_by"] = serde_json::json!(t.replay.placement_by);
                    }
                    // Only closed-loop replays carry these: open-loop ones describe themselves
                    // (and key their cached results) as before.
                    if t.closed_loop {
                        w["replay"] = "closed".into();
                        w["phases"] = serde_json::json!(t.phases);
                    }
                    w
                }
            },
            "verify": self.verify != Verify::Off,
            "power_cut_every": self.power_cut_every,
        })
    }
}

/// A simulator after an experiment's preconditioning and settle phase, with their metrics
/// ([`Experiment::prepare`]). A clone is a snapshot that goes on as the original would.
#[derive(Clone)]
pub struct Prepared {
    sim: Simulator,
    phases: Vec<Metrics>,
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("phases", &self.phases.len())
            .finish_non_exhaustive()
    }
}

impl Experiment {
    /// Runs the experiment on each of `ftls`, up to `jobs` at a time on threads of their own
    /// (each FTL on its own simulator, so no run sees another's state; `jobs` ≤ 1 runs them one
    /// after another on this thread). FTLs are started in the order given; `progress` makes
    /// each run's progress display. Reports come back in the order of `ftls`. After a failure
    /// no further FTL is started, and the first failing FTL in that order is returned with
    /// its error.
    pub fn run_all<P: Progress>(
        &self,
        ftls: &[&str],
        jobs: usize,
        progress: impl Fn(&str) -> P + Sync,
    ) -> Result<Vec<RunReport>, (String, EngineError)> {
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let slots: Vec<Mutex<Option<Result<RunReport, EngineError>>>> =
            ftls.iter().map(|_| Mutex::new(None)).collect();
        let worker = || {
            while !failed.load(Ordering::Relaxed) {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(name) = ftls.get(i) else { break };
                let r = self.run(name, &mut progress(name));
                failed.fetch_or(r.is_err(), Ordering::Relaxed);
                *slots[i].lock().expect("no worker panics holding a slot") = Some(r);
            }
        };
        std::thread::scope(|s| {
            for _ in 1..jobs.clamp(1, ftls.len().max(1)) {
                s.spawn(worker);
            }
            worker();
        });
        // FTLs start in order, so every FTL left unstarted comes after the one that failed.
        let mut reports = Vec::with_capacity(ftls.len());
        for (name, slot) in ftls.iter().zip(slots) {
            match slot.into_inner().expect("no worker panics holding a slot") {
                Some(Ok(r)) => reports.push(r),
                Some(Err(e)) => return Err((name.to_string(), e)),
                None => break,
            }
        }
        Ok(reports)
    }
}

/// The name of the phases in which the device settles.
pub const SETTLE: &str = "settle";

/// Where the power-cut plan's seed comes from in the run seed ([`crate::seed::mix`]'s
/// stream; the job phases use 1, 2, …).
const POWER_CUT_STREAM: u64 = u64::MAX;

/// Writes every page a trace reads before it writes it: one pass over the trace marks those
/// pages, then they are written in runs of up to 512 KiB as a phase of their own.
fn fill_unwritten(
    sim: &mut Simulator,
    t: &TraceWorkload,
    progress: &mut dyn Progress,
) -> Result<Metrics, EngineError> {
    let geo = sim.device().geo().clone();
    let ps = geo.page_size as u64;
    let pages = geo.logical_pages as usize;
    let mut written = vec![0u64; pages.div_ceil(64)];
    let mut fill = vec![0u64; pages.div_ceil(64)];
    let bit = |v: &[u64], p: usize| v[p >> 6] >> (p & 63) & 1 == 1;
    let reader = trace::open(&t.path, t.format, &t.parse).map_err(input)?;
    for io in reader
        .into_replay(geo.logical_bytes(), t.replay.clone())
        .map_err(input)?
    {
        let io = io.map_err(input)?;
        let first = (io.offset / ps) as usize;
        let end = (io.offset + io.len).div_ceil(ps) as usize;
        for p in first..end.min(pages) {
            match io.op {
                crate::request::Op::Read if !bit(&written, p) => fill[p >> 6] |= 1 << (p & 63),
                crate::request::Op::Write => written[p >> 6] |= 1 << (p & 63),
                _ => {}
            }
        }
    }
    drop(written);
    // Runs of consecutive pages to fill, each at most 512 KiB, found as they are written: a
    // list of them could take 16 B per two logical pages, beyond the memory estimate.
    let max_run = ((512 << 10) / ps as usize).max(1);
    let mut next = 0;
    let ios = std::iter::from_fn(|| {
        let start = (next..pages).find(|&p| bit(&fill, p))?;
        let limit = pages.min(start + max_run);
        next = (start..limit).find(|&p| !bit(&fill, p)).unwrap_or(limit);
        Some(Ok::<_, std::convert::Infallible>(HostIo {
            placement: 0,
            arrival: crate::addr::SimTime::ZERO,
            op: crate::request::Op::Write,
            offset: start as u64 * ps,
            len: (next - start) as u64 * ps,
        }))
    });
    sim.run_stream("fill-unwritten", ios, None, progress)
}

/// Requests a parsing thread hands over at once.
const READ_AHEAD_BATCH: usize = 4096;

/// Runs `f` on the items of `items`, drawn on a thread of their own (a trace's parsing is
/// most of its replay's time otherwise) and handed over in batches of [`READ_AHEAD_BATCH`],
/// at most four batches ahead. The order is kept; if `f` stops early, the thread stops at its
/// next batch.
fn read_ahead<T: Send, R>(
    items: impl Iterator<Item = T> + Send,
    f: impl FnOnce(&mut dyn Iterator<Item = T>) -> R,
) -> R {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<T>>(4);
        s.spawn(move || {
            let mut items = items;
            loop {
                let batch: Vec<T> = items.by_ref().take(READ_AHEAD_BATCH).collect();
                let last = batch.len() < READ_AHEAD_BATCH;
                if batch.is_empty() || tx.send(batch).is_err() || last {
                    break;
                }
            }
        });
        f(&mut rx.into_iter().flatten())
    })
}

fn input(e: trace::TraceError) -> EngineError {
    EngineError::Input(e.to_string())
}

/// Replays a trace (after filling what it reads unwritten and settling, if asked); returns
/// what the report says about the trace. A trace that yields no request at all (every line
/// malformed and skipped, or of another device, ...) is an error: its all-zero phase would
/// look like a result.
fn replay_trace(
    sim: &mut Simulator,
    t: &TraceWorkload,
    settle: Settle,
    phases: &mut Vec<Metrics>,
    progress: &mut dyn Progress,
) -> Result<TraceSummary, EngineError> {
    if t.fill_unwritten {
        phases.push(fill_unwritten(sim, t, progress)?);
        phases.extend(sim.settle(SETTLE, settle, progress)?);
    }
    let reader = trace::open(&t.path, t.format, &t.parse).map_err(input)?;
    let logical = sim.device().geo().logical_bytes();
    let mut replay = reader
        .into_replay(logical, t.replay.clone())
        .map_err(input)?;
    let closed_loop = if t.closed_loop {
        let (m, summary) = closed::replay(sim, t, &mut replay, progress)?;
        phases.push(m);
        Some(summary)
    } else {
        let ios = replay.by_ref();
        phases.push(read_ahead(ios, |ios| {
            sim.run_stream("trace", ios, t.replay.max_requests, progress)
        })?);
        None
    };
    let r = replay.inner();
    let summary = TraceSummary {
        path: t.path.display().to_string(),
        format: r.format(),
        format_detected: r.detected(),
        compression: r.compression().to_string(),
        lines: r.lines(),
        skipped_bad_lines: r.skipped(),
        ignored_lines: r.ignored(),
        warnings: r.warnings().to_vec(),
        replay: replay.counters().clone(),
        closed_loop,
    };
    if summary.replay.requests == 0 {
        let c = &summary.replay;
        let reasons: Vec<String> = [
            (summary.skipped_bad_lines, "malformed (skipped)".to_string()),
            (summary.ignored_lines, "without a request".to_string()),
            (
                c.filtered,
                format!(
                    "of devices other than {} (device filter)",
                    t.replay.device_filter.unwrap_or_default()
                ),
            ),
            (c.zero_length, "of length 0".to_string()),
            (c.dropped, "beyond the logical space (clip)".to_string()),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        return Err(EngineError::Input(format!(
            "{}: no request to replay: of {} lines, {}",
            summary.path,
            summary.lines,
            if reasons.is_empty() {
                "none is a request".to_string()
            } else {
                reasons.join(", ")
            }
        )));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_ahead_keeps_the_order_and_stops_soon_after_its_consumer() {
        let all: Vec<u64> = read_ahead(0..20_000u64, |it| it.collect());
        assert_eq!(all, (0..20_000).collect::<Vec<_>>());
        // A consumer that stops early: the thread draws at most the batches that fit in the
        // channel, the one it is filling and the one being read beyond what was taken.
        let drawn = std::sync::atomic::AtomicUsize::new(0);
        let items = (0..u64::MAX).inspect(|_| {
            drawn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        let first: Vec<u64> = read_ahead(items, |it| it.take(10).collect());
        assert_eq!(first, (0..10).collect::<Vec<_>>());
        assert!(drawn.into_inner() <= 6 * READ_AHEAD_BATCH);
    }

    #[test]
    fn precondition_syntax() {
        let p: Precondition = "randwrite:512k:6".parse().unwrap();
        assert_eq!(
            (p.rw, p.bs, p.multiple),
            (RwKind::RandWrite, 512 << 10, 6.0)
        );
        assert_eq!(p.job(1 << 30).io_size, Some(6 << 30));
        for bad in [
            "randread:4k:1",
            "write:0:1",
            "write:4k",
            "write:4k:-1",
            "write:4x:1",
        ] {
            assert!(bad.parse::<Precondition>().is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_parameters_are_refused_by_name() {
        let mut params = Params::new();
        params.insert_assignment("not_a_knob=1", "--set").unwrap();
        let e = Experiment {
            device: DeviceConfig::preset("tiny").unwrap(),
            params,
            precondition: None,
            workload: Workload::Jobs(vec![]),
            settle: Settle::Auto,
            seed: 1,
            verify: Verify::Off,
            power_cut_every: None,
        };
        let err = e.check_params(&["ideal"]).unwrap_err().to_string();
        assert!(err.contains("not_a_knob"), "{err}");
    }

    #[test]
    fn a_state_larger_than_memory_is_refused_with_the_estimate() {
        let mut params = Params::new();
        params.insert_assignment("channels=1000", "--set").unwrap();
        let e = Experiment {
            device: DeviceConfig::from_params("tiny", &mut params).unwrap(),
            params,
            precondition: None,
            workload: Workload::Jobs(vec![]),
            settle: Settle::Off,
            seed: 1,
            verify: Verify::Off,
            power_cut_every: None,
        };
        let small = AvailableMemory {
            bytes: 1 << 30,
            origin: "test".into(),
        };
        // 1000 x 2 x 64 x 64 pages: 67 MB of page state and valid bits, 6 MB per block, 38 MB
        // of tables, and a 3 % cache of 230,400 entries at 104 B: 135 MB a run.
        let err = e.check_memory(12, &small).unwrap_err().to_string();
        assert!(
            err.contains("about 1545 MiB, more than the 1024 MiB available (test), for 12 run(s)"),
            "{err}"
        );
        assert!(
            err.contains(
                "22.9 MiB for the largest mapping cache its budget allows (230400 entries x 104 B"
            ),
            "{err}"
        );
        assert!(e.check_memory(1, &small).is_ok());
    }

    #[test]
    fn jobs_count_in_the_memory_estimate() {
        let experiment = |numjobs, iodepth| {
            let mut j = JobSpec::new("many", RwKind::RandRead);
            j.numjobs = numjobs;
            j.iodepth = iodepth;
            j.number_ios = Some(1);
            Experiment {
                device: DeviceConfig::preset("tiny").unwrap(),
                params: Params::new(),
                precondition: Some("write:512k:1".parse().unwrap()),
                workload: Workload::Jobs(vec![Phase {
                    name: "measure".into(),
                    jobs: vec![j],
                    settle: None,
                }]),
                settle: Settle::Auto,
                seed: 1,
                verify: Verify::Off,
                power_cut_every: None,
            }
        };
        let available = AvailableMemory {
            bytes: 8 << 30,
            origin: "test".into(),
        };
        // The reported commands: a clone each of 10^8 jobs, and 10^10 slots.
        for (numjobs, iodepth) in [(100_000_000, 1), (100_000, 100_000)] {
            let err = experiment(numjobs, iodepth)
                .check_memory(1, &available)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("the jobs of phase \"measure\"")
                    && err.contains(&format!("{numjobs} clones"))
                    && err.contains("numjobs or iodepth of job \"many\"")
                    && err.contains("8192 MiB available (test)"),
                "{err}"
            );
        }
        // 64 jobs of depth 64 (the paper's) cost next to nothing beside the device.
        experiment(64, 64).check_memory(1, &available).unwrap();
    }

    /// Preconditioning `pre`, then `ios` random reads from each of 4 jobs, verified, on tiny.
    fn random_reads(pre: &str, ios: u64, seed: u64) -> Experiment {
        let mut r = JobSpec::new("measure", RwKind::RandRead);
        r.number_ios = Some(ios);
        r.numjobs = 4;
        Experiment {
            device: DeviceConfig::preset("tiny").unwrap(),
            params: Params::new(),
            precondition: Some(pre.parse().unwrap()),
            workload: Workload::Jobs(vec![Phase {
                name: "measure".into(),
                jobs: vec![r],
                settle: None,
            }]),
            settle: Settle::Auto,
            seed,
            verify: Verify::FailFast,
            power_cut_every: None,
        }
    }

    #[test]
    fn runs_report_every_phase() {
        let e = random_reads("write:512k:1", 500, 3);
        let rep = e.run("ideal", &mut crate::engine::NoProgress).unwrap();
        assert_eq!(rep.phases.len(), 3);
        assert_eq!(rep.phases[0].phase, "precondition");
        // A sequential fill leaves the ideal FTL nothing to do: it settles in zero time.
        assert_eq!(rep.phases[1].phase, SETTLE);
        assert_eq!(rep.phases[1].sim_seconds, 0.0);
        assert_eq!(rep.phases[1].flash.programs["total"], 0);
        assert_eq!(rep.result.requests.read, 2000);
        assert_eq!(rep.result.verify.checked, 2000);
        assert!(
            rep.phases[0].page_writes
                >= DeviceConfig::preset("tiny").unwrap().geometry.logical_pages
        );
    }

    #[test]
    fn parallel_runs_report_what_sequential_runs_do() {
        let e = random_reads("randwrite:512k:1", 300, 5);
        let ftls = ["ideal", "dftl", "sftl"];
        // Everything but the wall-clock measurements.
        let results = |jobs| {
            let runs = e
                .run_all(&ftls, jobs, |_| crate::engine::NoProgress)
                .unwrap();
            runs.into_iter()
                .map(|r| {
                    let mut v = serde_json::to_value(&r).unwrap();
                    for p in v["phases"].as_array_mut().unwrap() {
                        p["wall_seconds"] = 0.into();
                        p["sim_page_ops_per_sec"] = 0.into();
                    }
                    (r.ftl, v["phases"].take())
                })
                .collect::<Vec<_>>()
        };
        let sequential = results(1);
        assert_eq!(
            sequential.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
            ftls
        );
        assert_eq!(results(3), sequential);
    }

    #[test]
    fn a_failing_run_is_reported_by_name() {
        let e = Experiment {
            device: DeviceConfig::preset("tiny").unwrap(),
            params: Params::new(),
            precondition: None,
            workload: Workload::Jobs(vec![]),
            settle: Settle::Off,
            seed: 1,
            verify: Verify::Off,
            power_cut_every: None,
        };
        let (name, _) = e
            .run_all(&["ideal", "no-such-ftl", "dftl"], 2, |_| {
                crate::engine::NoProgress
            })
            .unwrap_err();
        assert_eq!(name, "no-such-ftl");
    }

    fn trace_experiment(fill: bool) -> Experiment {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/disksim.trace");
        Experiment {
            device: DeviceConfig::preset("tiny").unwrap(),
            params: Params::new(),
            precondition: None,
            workload: Workload::Trace(TraceWorkload {
                path,
                format: None,
                parse: ParseOptions::default(),
                replay: ReplayOptions::default(),
                fill_unwritten: fill,
                closed_loop: false,
                phases: Vec::new(),
            }),
            settle: Settle::Off,
            seed: 1,
            verify: Verify::FailFast,
            power_cut_every: None,
        }
    }

    #[test]
    fn trace_replay_with_and_without_filling_unwritten_pages() {
        let rep = trace_experiment(false)
            .run("ideal", &mut crate::engine::NoProgress)
            .unwrap();
        assert_eq!(rep.phases.len(), 1);
        let m = &rep.result;
        // The fixture: 9 records, 4 reads (type bit 0 set), of which 2 touch a page never
        // written (LBA 0 on device 1, LBA 100); the others read pages written before them.
        assert_eq!((m.requests.read, m.requests.write), (4, 5));
        assert_eq!(m.unmapped_reads, 2);
        assert_eq!(m.verify.failures, 0);
        let t = rep.trace.unwrap();
        assert_eq!((t.format, t.format_detected), (Format::DiskSim, true));

        let rep = trace_experiment(true)
            .run("ideal", &mut crate::engine::NoProgress)
            .unwrap();
        assert_eq!(rep.phases.len(), 2);
        assert_eq!(rep.phases[0].phase, "fill-unwritten");
        assert_eq!(rep.phases[0].page_writes, 2);
        assert_eq!(rep.result.unmapped_reads, 0);
        assert_eq!(rep.result.latency_us.read.count, 4);
    }

    #[test]
    fn unwritten_pages_are_filled_in_runs_of_at_most_512_kib() {
        let path = std::env::temp_dir().join(format!("fill-runs-{}.disksim", std::process::id()));
        // Reads of pages 0..256 (1 MiB) and of page 257, none written.
        std::fs::write(&path, "0 0 0 2048 1\n1000 0 2056 8 1\n").unwrap();
        let mut e = trace_experiment(true);
        let Workload::Trace(t) = &mut e.workload else {
            unreachable!()
        };
        t.path = path.clone();
        let rep = e.run("ideal", &mut crate::engine::NoProgress);
        std::fs::remove_file(&path).unwrap();
        let fill = &rep.unwrap().phases[0];
        assert_eq!((fill.requests.write, fill.page_writes), (3, 257));
    }

    #[test]
    fn a_trace_with_no_request_left_is_an_error() {
        let mut e = trace_experiment(false);
        let Workload::Trace(t) = &mut e.workload else {
            unreachable!()
        };
        t.replay.device_filter = Some(99);
        let err = e
            .run("ideal", &mut crate::engine::NoProgress)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no request to replay") && err.contains("9 of devices other than 99"),
            "{err}"
        );
    }
}
