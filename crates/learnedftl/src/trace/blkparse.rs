//! `blkparse` default text output (blktrace), e.g.
//! `8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [kworker/3:1H]`.
//!
//! Columns: `device cpu sequence time pid action rwbs sector + sectors process`. Time in seconds
//! (decimal), sector and count in 512-byte units. Only events of one action are kept (default
//! `Q`, queued: what the file system asked for, before merging and splitting).
//!
//! Which lines are events: a line whose first column is a `major,minor` device number. Every
//! other line (the per-CPU and total summary `blkparse` prints at the end, "Throughput" and
//! "Events" lines, `CPU0 (8,0):` headings) is not a request and is ignored. Events of other
//! actions are ignored too, as are events whose RWBS has no data direction (`N` without flush).
//!
//! RWBS gives the operation: a leading `F` is a pre-flush; then `D` = discard (trim), `W` =
//! write, `R` = read, `N` = no data. `F`/`FN` alone is a flush; `FWS` (pre-flush then write) is
//! kept as the write. `E` (secure erase) is treated as a trim.

use super::error::{FieldError, LineErrorKind};
use super::fields::{dev_id, parse_u64, sectors, Fields, Sep};
use super::{Parsed, TraceRecord};
use crate::request::Op;

const FIELDS: &[&str] = &[
    "device", "cpu", "sequence", "time", "pid", "action", "rwbs", "sector", "+", "sectors",
    "process",
];

/// Parser state: which action to keep.
#[derive(Clone, Debug)]
pub(crate) struct Parser {
    action: u8,
}

impl Parser {
    /// Keep events of `action` (one ASCII letter, e.g. `b'Q'`, `b'D'`, `b'C'`).
    pub(crate) fn new(action: u8) -> Self {
        Parser { action }
    }

    /// Parse one line.
    pub(crate) fn parse(&self, line: &[u8]) -> Result<Parsed, FieldError> {
        let mut f = Fields::new(line, Sep::Whitespace, FIELDS);
        let Some((major, minor)) = device(f.next()?) else {
            return Ok(Parsed::Ignored);
        };
        f.skip()?; // cpu
        f.skip()?; // sequence
        let time_ns = f.decimal(9)?;
        f.skip()?; // pid
        if f.next()? != [self.action] {
            return Ok(Parsed::Ignored);
        }
        let op = match rwbs_op(f.next()?)? {
            Some(op) => op,
            None => return Ok(Parsed::Ignored),
        };
        let device = dev_id("device", major, minor)?;
        let (offset, len) = if op == Op::Flush {
            (0, 0) // a flush has no sector range (the process name follows)
        } else {
            let sector = f.u64()?;
            let plus = f.next()?;
            if plus != b"+" {
                return Err(FieldError::new(
                    "+",
                    LineErrorKind::Invalid("expected `+` between sector and count"),
                    plus,
                ));
            }
            (sectors("sector", sector)?, sectors("sectors", f.u64()?)?)
        };
        Ok(Parsed::Record(TraceRecord {
            placement: None,
            line: 0,
            time_ns,
            op,
            offset,
            len,
            device,
            done_ns: None,
        }))
    }

    /// Detection: a line is evidence of blkparse when it is an event line (device number, a
    /// decimal time and a one- or two-letter action), whatever the action.
    pub(crate) fn is_event(line: &[u8]) -> bool {
        let mut f = Fields::new(line, Sep::Whitespace, FIELDS);
        let mut event = || -> Result<bool, FieldError> {
            if device(f.next()?).is_none() {
                return Ok(false);
            }
            f.skip()?;
            f.skip()?;
            f.decimal(9)?;
            f.skip()?;
            let action = f.next()?;
            Ok((1..=2).contains(&action.len()) && action.iter().all(u8::is_ascii_alphabetic))
        };
        event().unwrap_or(false)
    }
}

/// `major,minor`, or `None` when the column is not a device number (a non-event line).
fn device(t: &[u8]) -> Option<(u64, u64)> {
    let comma = t.iter().position(|&b| b == b',')?;
    let major = parse_u64("device", &t[..comma]).ok()?;
    let minor = parse_u64("device", &t[comma + 1..]).ok()?;
    Some((major, minor))
}

/// The operation an RWBS string describes; `None` for no data and no flush.
fn rwbs_op(t: &[u8]) -> Result<Option<Op>, FieldError> {
    let (flush, rest) = match t.split_first() {
        Some((b'F', rest)) => (true, rest),
        _ => (false, t),
    };
    match rest.first() {
        Some(b'D') | Some(b'E') => Ok(Some(Op::Trim)),
        Some(b'W') => Ok(Some(Op::Write)),
        Some(b'R') => Ok(Some(Op::Read)),
        Some(b'N') | None if flush => Ok(Some(Op::Flush)),
        Some(b'N') => Ok(None),
        _ => Err(FieldError::new("rwbs", LineErrorKind::UnknownOp, t)),
    }
}
