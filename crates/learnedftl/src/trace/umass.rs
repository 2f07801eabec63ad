//! UMass Trace Repository / SPC traces (Financial, WebSearch): `ASU,LBA,Size,Opcode,Timestamp[,…]`.
//!
//! LBA in 512-byte blocks, size in bytes, opcode `r`/`R`/`w`/`W`, timestamp in seconds (decimal).
//! Columns after the fifth are allowed (some releases add them) and ignored. The ASU
//! (application storage unit) becomes the device number.

use super::error::FieldError;
use super::fields::{sectors, Fields, Sep};
use super::{Parsed, TraceRecord};

const FIELDS: &[&str] = &["asu", "lba", "size", "opcode", "timestamp"];

/// Parse one line.
pub(crate) fn parse(line: &[u8]) -> Result<Parsed, FieldError> {
    let mut f = Fields::new(line, Sep::Comma, FIELDS);
    let device = f.u32()?;
    let lba = f.u64()?;
    let len = f.u64()?;
    let op = f.rw()?;
    let time_ns = f.decimal(9)?;
    Ok(Parsed::Record(TraceRecord {
        placement: None,
        line: 0,
        time_ns,
        op,
        offset: sectors("lba", lba)?,
        len,
        device,
        done_ns: None,
    }))
}
