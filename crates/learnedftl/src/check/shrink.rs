//! Shrinking a failing stream to a short one (and saving it for `check --replay`).

use super::stream::{HostOp, Kind};
use super::verify::Run;
use super::{stream, CheckSpec, Failure, MakeDriver, Prepared, ReplayFile, RunOptions};
use std::time::{Duration, Instant};

/// Shrinks the stream that failed with `f` (delta debugging: ever smaller subsets that still
/// fail, for at most `opts.shrink_time`), saves it and names the command that replays it. When
/// the preconditioning takes part in the failure, it is shrunk too ([`from_blank`]), so that
/// the replay holds the writes that caused the failure; the failure names the operations that
/// wrote the data expected and found.
pub(super) fn shrink_and_save(
    spec: &CheckSpec,
    prepared: &Prepared,
    ops: &[HostOp],
    f: Failure,
    opts: &RunOptions,
    make: &mut MakeDriver<'_>,
) -> Failure {
    let deadline = Instant::now() + opts.shrink_time;
    // As many operations after the failure as before stay until the end: removing an earlier
    // one may need a later one to fail again (a fault on the n-th page read needs n reads).
    // Candidates are only ever subsets, each tested as it is.
    let around = ops[..(2 * (f.op_index as usize + 1)).min(ops.len())].to_vec();
    let (small, failure) = shrink(prepared, around, f, deadline, make);
    // The blank replay holds what the preconditioning contributed; it is kept unless it is much
    // longer than the prepared one (a failure whose cause the stream holds already, a power
    // cut's recovery, shrinks shorter from the prepared state).
    let blank = from_blank(spec, &small, opts, make)
        .filter(|(_, (ops, _))| ops.len() <= (2 * small.len()).max(16));
    let (spec, small, mut failure, setup_ids) = match blank {
        Some((spec, (small, failure))) => (spec, small, failure, 0),
        None => (spec.clone(), small, failure, prepared.last_id),
    };
    failure.stream_ops = Some(small.len() as u64);
    failure.writers = writers(&failure, &small, setup_ids);
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

/// Runs `candidate` on a driver for a copy of `prepared`; its failure, if it fails.
fn trial(
    prepared: &Prepared,
    candidate: &[HostOp],
    deadline: Instant,
    make: &mut MakeDriver<'_>,
) -> Option<Failure> {
    let mut driver = make(prepared.sim.clone()).ok()?;
    let mut run = Run::new(prepared.model.clone());
    run.ops(
        driver.as_mut(),
        candidate,
        0,
        Some(deadline + Duration::from_secs(60)),
    )
}

/// The smallest stream found, until `deadline`, that still fails on `prepared` as `ops` did
/// with `f`: coarse cuts, delta debugging, then what follows the failing operation dropped.
fn shrink(
    prepared: &Prepared,
    ops: Vec<HostOp>,
    f: Failure,
    deadline: Instant,
    make: &mut MakeDriver<'_>,
) -> (Vec<HostOp>, Failure) {
    let mut test = |candidate: &[HostOp]| trial(prepared, candidate, deadline, make);
    let (short, f) = coarse(ops, f, &mut test, deadline);
    let (mut small, mut failure) = ddmin(short, f, &mut test, deadline);
    // What follows the failing operation, if the failure needs none of it.
    let end = failure.op_index as usize + 1;
    if end < small.len() {
        if let Some(f) = test(&small[..end]) {
            small.truncate(end);
            failure = f;
        }
    }
    (small, failure)
}

/// A failure the preconditioning takes part in (the shrunk stream passes on a blank device),
/// shrunk again from a blank device with the preconditioning's writes at the head of the
/// stream (given another `opts.shrink_time`): the spec to replay it (`blank`), the stream and
/// its failure. `None` when the stream fails without the preconditioning too, or the failure
/// does not come back from a blank device.
fn from_blank(
    spec: &CheckSpec,
    small: &[HostOp],
    opts: &RunOptions,
    make: &mut MakeDriver<'_>,
) -> Option<(CheckSpec, (Vec<HostOp>, Failure))> {
    let spec = CheckSpec {
        blank: true,
        ..spec.clone()
    };
    let blank = super::prepare(&spec).ok()?;
    let deadline = Instant::now() + opts.shrink_time;
    if trial(&blank, small, deadline, make).is_some() {
        return None;
    }
    let g = blank.sim.device().geo();
    let mut ops = stream::precondition(spec.seed, g.logical_bytes(), g.page_size as u64);
    ops.extend_from_slice(small);
    let f = trial(&blank, &ops, deadline, make)?;
    let shrunk = shrink(&blank, ops, f, deadline, make);
    Some((spec, shrunk))
}

/// Names the operations that wrote the data a failure expected and found: their index in
/// `ops` (the stream that reproduces it), or the preconditioning's (data identities up to
/// `setup_ids`).
fn writers(f: &Failure, ops: &[HostOp], setup_ids: u32) -> Option<String> {
    let name = |id: u32| match ops.iter().position(|o| o.id == id) {
        Some(i) => {
            let o = &ops[i];
            format!(
                "operation {i} ({:?} of {} B at byte {})",
                o.kind, o.len, o.offset
            )
        }
        None if id <= setup_ids => format!("the preconditioning (its write {id})"),
        None => format!("write {id}, outside this stream"),
    };
    let parts: Vec<String> = [("expected", f.expected_id), ("found", f.found_id)]
        .into_iter()
        .filter_map(|(what, id)| {
            id.map(|id| format!("the data {what} was written by {}", name(id)))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::stream::Kind;

    /// A failure names the stream operation that wrote the data expected and the
    /// preconditioning's write that left the data found.
    #[test]
    fn writers_are_named_by_their_operation_or_the_preconditioning() {
        let op = |kind, id| HostOp {
            placement: 0,
            kind,
            offset: 8192,
            len: 4096,
            fua: false,
            id,
            new_batch: true,
            cut: None,
        };
        let ops = [op(Kind::Write, 41), op(Kind::Read, 0)];
        let f = Failure {
            expected_id: Some(41),
            found_id: Some(7),
            ..Failure::new(1, ops[1], "read returned wrong bytes".into())
        };
        assert_eq!(
            writers(&f, &ops, 40).unwrap(),
            "the data expected was written by operation 0 (Write of 4096 B at byte 8192); \
             the data found was written by the preconditioning (its write 7)"
        );
        let zeroes = Failure {
            found_id: None,
            ..f.clone()
        };
        assert!(!writers(&zeroes, &ops, 40).unwrap().contains("found"));
        assert_eq!(
            writers(&Failure::new(1, ops[1], String::new()), &ops, 40),
            None
        );
    }
}
