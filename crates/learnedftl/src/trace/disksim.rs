//! DiskSim / MQSim ASCII traces: `time_ns device lba_sectors size_sectors type`.
//!
//! Whitespace separated, exactly five columns. `type` is DiskSim's request-flag bit field, of
//! which only bit 0 matters here: set = read, clear = write (MQSim writes 1 and 0).

use super::error::{FieldError, LineErrorKind, TraceError};
use super::fields::{parse_u64, sectors, Fields, Sep};
use super::{Format, Parsed, TraceRecord};
use crate::request::Op;
use std::io::Write;

const FIELDS: &[&str] = &["time", "device", "lba", "size", "type"];

/// Parse one line.
pub(crate) fn parse(line: &[u8]) -> Result<Parsed, FieldError> {
    let mut f = Fields::new(line, Sep::Whitespace, FIELDS);
    let time_ns = f.u64()?;
    let device = f.u32()?;
    let lba = f.u64()?;
    let size = f.u64()?;
    let flags = f.next()?;
    // The flag column is an operation code: anything but a bit field is an unknown op.
    let flags = parse_u64("type", flags)
        .map_err(|_| FieldError::new("type", LineErrorKind::UnknownOp, flags))?;
    f.end()?;
    Ok(Parsed::Record(TraceRecord {
        placement: None,
        line: 0,
        time_ns,
        op: if flags & 1 == 1 { Op::Read } else { Op::Write },
        offset: sectors("lba", lba)?,
        len: sectors("size", size)?,
        device,
        done_ns: None,
    }))
}

/// Write one record; a byte range that is not sector aligned is widened to the sectors it
/// touches. Only reads and writes exist in this format.
pub(crate) fn write<W: Write + ?Sized>(rec: &TraceRecord, w: &mut W) -> Result<(), TraceError> {
    let flag = match rec.op {
        Op::Read => 1,
        Op::Write => 0,
        _ => return Err(TraceError::unrepresentable(Format::DiskSim, rec)),
    };
    let first = rec.offset / 512;
    let end = rec.offset.saturating_add(rec.len).div_ceil(512);
    writeln!(
        w,
        "{} {} {} {} {}",
        rec.time_ns,
        rec.device,
        first,
        end - first,
        flag
    )
    .map_err(TraceError::Write)
}
