//! Closed-loop replay of a learnedftl recording (`--replay closed`, docs/traces.md
//! "Closed-loop replay"): each request is issued when what it waited for has completed on the
//! simulated device ([`ClosedLoop`]), and the application's phases (`--phases`) get their
//! duration and operations per second as this device would give them.

use super::TraceWorkload;
use crate::engine::{EngineError, Progress, Simulator};
use crate::mapping::FtlStats;
use crate::stats::Metrics;
use crate::trace::{self, Format, Replay, TraceError, TraceReader};
use crate::workload::closed_loop::ClosedLoop;
use serde::Serialize;
use std::path::Path;

/// A phase of the recorded application, on the recording's clock (ns since it began).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AppPhase {
    /// Its name (e.g. db_bench's `readrandom`).
    pub name: String,
    /// When it began.
    pub start_ns: u64,
    /// When it ended.
    pub end_ns: u64,
    /// The application's own operations in it, if known.
    pub ops: Option<u64>,
}

/// What a closed-loop replay gave one application phase (a run report's
/// `trace.closed_loop.phases`).
#[derive(Clone, Debug, Serialize)]
pub struct PhaseResult {
    /// The phase's name.
    pub name: String,
    /// The application's operations in it, if known.
    pub ops: Option<u64>,
    /// Requests the recording issued in it.
    pub requests: u64,
    /// Its duration in the recording (wall-clock s of the live run).
    pub recorded_s: f64,
    /// Its duration on the simulated device (simulated s).
    pub simulated_s: f64,
    /// `ops / recorded_s`.
    pub recorded_ops_per_sec: Option<f64>,
    /// `ops / simulated_s`: the application's throughput on this FTL and device.
    pub simulated_ops_per_sec: Option<f64>,
    /// Host page reads the FTL served for the requests issued in it.
    pub page_reads: u64,
    /// Of those, the share whose mapping came from a cache entry (0 without page reads), as
    /// the run's `cmt_hit_ratio`.
    pub cmt_hit_ratio: f64,
    /// Of those, the share served by a learned prediction with one flash read (0 without page
    /// reads), as the run's `model_hit_ratio`.
    pub model_hit_ratio: f64,
}

/// What a closed-loop replay did (a run report's `trace.closed_loop`).
#[derive(Clone, Debug, Serialize)]
pub struct ClosedLoopSummary {
    /// From the first request's issue to the last one's completion, in the recording (s).
    pub recorded_s: f64,
    /// The same span on the simulated device (s).
    pub simulated_s: f64,
    /// The application's phases, in the order given.
    pub phases: Vec<PhaseResult>,
}

/// Reads a phases file: one phase a line, `name,start_unix_ns,end_unix_ns[,ops]` (wall-clock
/// ns, as `date +%s%N` prints them), `#` comments and blank lines ignored; placed on the
/// clock of the recording at `recording`, whose `# start_unix_ns=N` comment says when it
/// began.
pub fn read_phases(
    path: &Path,
    recording: &Path,
    parse: &trace::ParseOptions,
) -> Result<Vec<AppPhase>, TraceError> {
    let bad = |line: usize, what: String| {
        TraceError::InvalidOption(format!("{}:{line}: {what}", path.display()))
    };
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
        file: path.display().to_string(),
        source,
    })?;
    let mut reader = trace::open(recording, Some(Format::Recording), parse)?;
    // The start comment precedes the first request.
    if let Some(Err(e)) = reader.next() {
        return Err(e);
    }
    let start = reader.start_unix_ns().ok_or_else(|| {
        TraceError::InvalidOption(format!(
            "{}: no `# start_unix_ns=N` line before its first request, so the phases of {} \
             cannot be placed on its clock",
            recording.display(),
            path.display()
        ))
    })?;
    let mut phases = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if !(3..=4).contains(&f.len()) {
            return Err(bad(
                i + 1,
                format!("{line:?}: expected name,start_unix_ns,end_unix_ns[,ops]"),
            ));
        }
        let num = |k: usize, what: &str| {
            f[k].parse::<u128>()
                .map_err(|_| bad(i + 1, format!("{what} {:?} is not a whole number", f[k])))
        };
        let (a, b) = (num(1, "start_unix_ns")?, num(2, "end_unix_ns")?);
        if a < start || b < a {
            return Err(bad(
                i + 1,
                format!(
                    "phase {:?} from {a} to {b} does not lie after the recording's start ({start}) \
                     with its end after its start",
                    f[0]
                ),
            ));
        }
        let ops = if f.len() == 4 {
            Some(num(3, "ops")? as u64)
        } else {
            None
        };
        phases.push(AppPhase {
            name: f[0].to_string(),
            start_ns: (a - start) as u64,
            end_ns: (b - start) as u64,
            ops,
        });
    }
    if phases.is_empty() {
        return Err(bad(0, "no phase".into()));
    }
    Ok(phases)
}

/// Replays `replay` closed-loop as the phase `trace`; returns its metrics and the summary.
pub(super) fn replay(
    sim: &mut Simulator,
    t: &TraceWorkload,
    replay: &mut Replay<TraceReader>,
    progress: &mut dyn Progress,
) -> Result<(Metrics, ClosedLoopSummary), EngineError> {
    let mut cl = ClosedLoop::new();
    // Phase marks on the recording's clock, in time order: (instant, phase, is its end).
    let mut marks: Vec<(u64, usize, bool)> = t
        .phases
        .iter()
        .enumerate()
        .flat_map(|(i, p)| [(p.start_ns, i, false), (p.end_ns, i, true)])
        .collect();
    marks.sort_unstable();
    let mut marked = vec![[0i64; 2]; t.phases.len()];
    // The FTL's counters at each mark, and after the last request.
    let mut counted = vec![[FtlStats::default(), FtlStats::default()]; t.phases.len()];
    let mut at_end = FtlStats::default();
    let mut next_mark = 0;
    let mut requests = vec![0u64; t.phases.len()];
    // (first issue, last completion) on both clocks.
    let (mut first, mut last, mut sim_last) = (None, 0, 0);
    let mut waiting: Option<u64> = None;
    let metrics = sim.run_feedback("trace", t.replay.max_requests, progress, |sim, done| {
        if let (Some(d), Some(rec_done)) = (done, waiting.take()) {
            cl.complete(rec_done, d);
            sim_last = sim_last.max(d);
        }
        let mut io = match replay.next() {
            Some(Ok(io)) => io,
            Some(Err(e)) => return Some(Err(e)),
            None => {
                at_end = sim.ftl_stats();
                return None;
            }
        };
        let Some(rec_done) = replay.recorded_done() else {
            return Some(Err(TraceError::InvalidOption(
                "closed-loop replay needs each request's completion time".into(),
            )));
        };
        let issued = io.arrival.0;
        while let Some(&(at, i, end)) = marks.get(next_mark) {
            let at = replay.replay_time(at).unwrap_or(0);
            if at > issued as i64 {
                break;
            }
            marked[i][end as usize] = place(&mut cl, at);
            counted[i][end as usize] = sim.ftl_stats();
            next_mark += 1;
        }
        for (p, n) in t.phases.iter().zip(&mut requests) {
            let rec = replay.replay_time(p.start_ns).unwrap_or(0)
                ..replay.replay_time(p.end_ns).unwrap_or(0);
            *n += rec.contains(&(issued as i64)) as u64;
        }
        first.get_or_insert(issued);
        last = last.max(rec_done.0);
        io.arrival = crate::addr::SimTime(cl.issue(issued));
        waiting = Some(rec_done.0);
        Some(Ok(io))
    })?;
    for &(at, i, end) in &marks[next_mark..] {
        let at = replay.replay_time(at).unwrap_or(0);
        marked[i][end as usize] = place(&mut cl, at);
        counted[i][end as usize] = at_end.clone();
    }
    let secs = |ns: u64| ns as f64 / 1e9;
    let per_sec = |ops: Option<u64>, s: f64| ops.filter(|_| s > 0.0).map(|o| o as f64 / s);
    let phases = t
        .phases
        .iter()
        .zip(marked)
        .zip(requests)
        .zip(counted)
        .map(|(((p, [a, b]), requests), [from, to])| {
            let recorded_s = secs(p.end_ns - p.start_ns) / t.replay.speed;
            let simulated_s = secs(b.saturating_sub(a).max(0) as u64);
            let page_reads = to.page_reads().saturating_sub(from.page_reads());
            let share = |to: u64, from: u64| match page_reads {
                0 => 0.0,
                n => to.saturating_sub(from) as f64 / n as f64,
            };
            PhaseResult {
                name: p.name.clone(),
                ops: p.ops,
                requests,
                recorded_s,
                simulated_s,
                recorded_ops_per_sec: per_sec(p.ops, recorded_s),
                simulated_ops_per_sec: per_sec(p.ops, simulated_s),
                page_reads,
                cmt_hit_ratio: share(to.cmt_hits, from.cmt_hits),
                model_hit_ratio: share(to.model_hits, from.model_hits),
            }
        })
        .collect();
    let first = first.unwrap_or(0);
    let summary = ClosedLoopSummary {
        recorded_s: secs(last.saturating_sub(first)),
        simulated_s: secs(sim_last.saturating_sub(first)),
        phases,
    };
    Ok((metrics, summary))
}

/// A phase mark at `at` on the replay's clock: before the first request (negative) it waits
/// for nothing, so it keeps its recorded offset; later, it is placed as a request would be.
fn place(cl: &mut ClosedLoop, at: i64) -> i64 {
    match u64::try_from(at) {
        Ok(t) => i64::try_from(cl.at(t)).unwrap_or(i64::MAX),
        Err(_) => at,
    }
}
