//! Shrinking a failing stream to a short one (and saving it for `check --replay`).

use super::stream::{HostOp, Kind};
use super::verify::Run;
use super::{CheckSpec, Failure, MakeDriver, Prepared, ReplayFile, RunOptions};
use std::time::{Duration, Instant};

/// Shrinks the stream that failed with `f` (delta debugging: ever smaller subsets that still
/// fail, for at most `opts.shrink_time`), saves it and names the command that replays it.
pub(super) fn shrink_and_save(
    spec: &CheckSpec,
    prepared: &Prepared,
    ops: &[HostOp],
    f: Failure,
    opts: &RunOptions,
    make: &mut MakeDriver<'_>,
) -> Failure {
    let deadline = Instant::now() + opts.shrink_time;
    let mut trial = |candidate: &[HostOp]| -> Option<Failure> {
        let mut driver = make(prepared.sim.clone()).ok()?;
        let mut run = Run::new(prepared.model.clone());
        run.ops(
            driver.as_mut(),
            candidate,
            0,
            Some(deadline + Duration::from_secs(60)),
        )
    };
    // As many operations after the failure as before stay until the end: removing an earlier
    // one may need a later one to fail again (a fault on the n-th page read needs n reads).
    // Candidates are only ever subsets, each tested as it is.
    let around = ops[..(2 * (f.op_index as usize + 1)).min(ops.len())].to_vec();
    let (short, f) = coarse(around, f, &mut trial, deadline);
    let (mut small, mut failure) = ddmin(short, f, &mut trial, deadline);
    let end = failure.op_index as usize + 1;
    if end < small.len() {
        if let Some(f) = trial(&small[..end]) {
            small.truncate(end);
            failure = f;
        }
    }
    failure.stream_ops = Some(small.len() as u64);
    let file = ReplayFile {
        spec: spec.clone(),
        failure: failure.to_string(),
        ops: small,
    };
    let name = format!("{}-{}-seed{}.json", spec.ftl, spec.through, spec.seed);
    let path = opts.failures_dir.join(name);
    let saved = std::fs::create_dir_all(&opts.failures_dir)
        .and_then(|_| {
            let text = serde_json::to_string_pretty(&file).expect("serialisable");
            std::fs::write(&path, text)
        })
        // Absolute, so that the replay command works from any directory.
        .map(|_| {
            std::path::absolute(&path)
                .unwrap_or(path)
                .display()
                .to_string()
        });
    match saved {
        Ok(p) => {
            failure.replay = Some(format!("learnedftl check --replay {p}"));
            failure.replay_file = Some(p);
        }
        // The unshrunk stream replays from the seed alone.
        Err(_) => failure.replay = Some(spec.command()),
    }
    failure
}

/// Cheap cuts before delta debugging: the shortest failing stream that starts 8, 16, 32, ...
/// operations before the failing one (most failures need only the last few), then the stream
/// without every operation of one kind but the failing one (reads, trims, write-zeroes,
/// flushes).
fn coarse(
    mut ops: Vec<HostOp>,
    mut failure: Failure,
    test: &mut dyn FnMut(&[HostOp]) -> Option<Failure>,
    deadline: Instant,
) -> (Vec<HostOp>, Failure) {
    let mut keep = |ops: &mut Vec<HostOp>, failure: &mut Failure, candidate: Vec<HostOp>| {
        if Instant::now() >= deadline || candidate.len() >= ops.len() {
            return;
        }
        if let Some(f) = test(&candidate) {
            *ops = candidate;
            *failure = f;
        }
    };
    let mut n = 8;
    while n <= failure.op_index as usize && Instant::now() < deadline {
        let before = ops.len();
        let suffix = ops[failure.op_index as usize + 1 - n..].to_vec();
        keep(&mut ops, &mut failure, suffix);
        if ops.len() < before {
            break;
        }
        n *= 2;
    }
    for kind in [
        Kind::Read,
        Kind::Trim,
        Kind::WriteZeroes,
        Kind::WriteZeroesNoHole,
        Kind::Flush,
    ] {
        let failing = failure.op_index as usize;
        let candidate = ops
            .iter()
            .enumerate()
            .filter(|&(i, o)| o.kind != kind || i == failing)
            .map(|(_, o)| *o)
            .collect();
        keep(&mut ops, &mut failure, candidate);
    }
    (ops, failure)
}

/// Delta debugging (Zeller's ddmin) over a failing stream: tries removing ever smaller chunks
/// and keeps any smaller stream that still fails; stops at 1-minimality or the deadline.
/// Returns the smallest failing stream and its failure.
fn ddmin(
    mut ops: Vec<HostOp>,
    mut failure: Failure,
    test: &mut dyn FnMut(&[HostOp]) -> Option<Failure>,
    deadline: Instant,
) -> (Vec<HostOp>, Failure) {
    let mut n = 2usize;
    while ops.len() >= 2 && Instant::now() < deadline {
        let chunk = ops.len().div_ceil(n);
        let mut smaller = None;
        for i in 0..n {
            if Instant::now() >= deadline {
                break;
            }
            let (a, b) = (i * chunk, ((i + 1) * chunk).min(ops.len()));
            if a >= b {
                continue;
            }
            let complement: Vec<HostOp> = ops[..a].iter().chain(&ops[b..]).copied().collect();
            if let Some(f) = test(&complement) {
                smaller = Some((complement, f));
                break;
            }
        }
        match smaller {
            Some((o, f)) => {
                ops = o;
                failure = f;
                n = (n - 1).max(2);
            }
            None if n >= ops.len() => break,
            None => n = (2 * n).min(ops.len()),
        }
    }
    (ops, failure)
}
