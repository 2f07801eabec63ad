//! SYSTOR '17 traces (SNIA IOTTA): `Timestamp,Response,IOType,LUN,Offset,Size`.
//!
//! The files start with that header line (ignored, also when absent). Timestamp in seconds
//! (decimal), IOType `R` or `W`, offset and size in bytes; the LUN becomes the device number.
//! Response is the traced system's latency: required to be present, not parsed (it may be empty).

use super::error::FieldError;
use super::fields::{is_csv_header, parse_decimal, Fields, Sep};
use super::{Parsed, TraceRecord};

const FIELDS: &[&str] = &["timestamp", "response", "iotype", "lun", "offset", "size"];

/// Parse one line.
pub(crate) fn parse(line: &[u8]) -> Result<Parsed, FieldError> {
    let mut f = Fields::new(line, Sep::Comma, FIELDS);
    let time = f.next()?;
    if is_csv_header(time) {
        return Ok(Parsed::Ignored);
    }
    let time_ns = parse_decimal("timestamp", time, 9)?;
    f.skip()?; // response time
    let op = f.rw()?;
    let device = f.u32()?;
    let offset = f.u64()?;
    let len = f.u64()?;
    f.end()?;
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
