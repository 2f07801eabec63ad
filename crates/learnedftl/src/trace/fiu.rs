//! FIU traces (SNIA IOTTA: homes, mail, web-vm):
//! `ts pid process lba size op major minor md5`.
//!
//! Whitespace separated; timestamp in nanoseconds, LBA and size in 512-byte sectors, op `R` or
//! `W`. The device number is `major << 20 | minor`. A process name containing spaces is
//! accepted: the first two and the last six columns are fixed, whatever lies between is the
//! name. The MD5 column is required but not checked.

use super::error::FieldError;
use super::fields::{dev_id, sectors, Fields, Sep};
use super::{Parsed, TraceRecord};

const FIELDS: &[&str] = &[
    "ts", "pid", "process", "lba", "size", "op", "major", "minor", "md5",
];

/// Parse one line.
pub(crate) fn parse(line: &[u8]) -> Result<Parsed, FieldError> {
    let mut f = Fields::new(line, Sep::Whitespace, FIELDS);
    let tokens = f.remaining();
    let time_ns = f.u64()?;
    f.skip()?; // pid
               // All tokens beyond the nine columns belong to the process name.
    f.skip_joined(tokens.saturating_sub(FIELDS.len() - 1).max(1))?;
    let lba = f.u64()?;
    let size = f.u64()?;
    let op = f.rw()?;
    let major = f.u64()?;
    let minor = f.u64()?;
    f.skip()?; // md5 of the data
    f.end()?;
    Ok(Parsed::Record(TraceRecord {
        placement: None,
        line: 0,
        time_ns,
        op,
        offset: sectors("lba", lba)?,
        len: sectors("size", size)?,
        device: dev_id("major", major, minor)?,
        done_ns: None,
    }))
}
