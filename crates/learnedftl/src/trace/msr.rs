//! MSR Cambridge block traces (SNIA IOTTA):
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
//!
//! Timestamps are Windows FILETIME ticks (100 ns since 1601); offsets and sizes are bytes; Type
//! is `Read` or `Write`. A line whose first field is `Timestamp` is a header and is ignored.

use super::error::{FieldError, TraceError};
use super::fields::{is_csv_header, parse_u64, scaled, Fields, Sep};
use super::{Format, Parsed, TraceRecord};
use crate::request::Op;
use std::io::Write;

const FIELDS: &[&str] = &[
    "timestamp",
    "hostname",
    "disk",
    "type",
    "offset",
    "size",
    "response_time",
];

/// Nanoseconds per FILETIME tick.
const TICK_NS: u64 = 100;

/// Parse one line.
pub(crate) fn parse(line: &[u8]) -> Result<Parsed, FieldError> {
    let mut f = Fields::new(line, Sep::Comma, FIELDS);
    let ticks = f.next()?;
    if is_csv_header(ticks) {
        return Ok(Parsed::Ignored);
    }
    let ticks = parse_u64("timestamp", ticks)?;
    f.skip()?; // hostname
    let device = f.u32()?;
    let op = f.rw()?;
    let offset = f.u64()?;
    let len = f.u64()?;
    f.skip()?; // response time: the traced device's, meaningless for ours
    f.end()?;
    Ok(Parsed::Record(TraceRecord {
        placement: None,
        line: 0,
        time_ns: scaled("timestamp", ticks, TICK_NS)?,
        op,
        offset,
        len,
        device,
        done_ns: None,
    }))
}

/// Write one record (hostname `learnedftl`, response time 0). Time is truncated to ticks.
pub(crate) fn write<W: Write + ?Sized>(rec: &TraceRecord, w: &mut W) -> Result<(), TraceError> {
    let op = match rec.op {
        Op::Read => "Read",
        Op::Write => "Write",
        _ => return Err(TraceError::unrepresentable(Format::Msr, rec)),
    };
    writeln!(
        w,
        "{},learnedftl,{},{},{},{},0",
        rec.time_ns / TICK_NS,
        rec.device,
        op,
        rec.offset,
        rec.len
    )
    .map_err(TraceError::Write)
}
