//! fio I/O logs (`write_iolog` / `read_iolog`), versions 2 and 3.
//!
//! The first line is `fio version 2 iolog` or `fio version 3 iolog`. Then, whitespace separated:
//!
//! * v2: `filename action [offset length]`;
//! * v3: `timestamp filename action [offset length]`, the timestamp in **microseconds** since the
//!   start of the run. (fio's `log_io_u` writes `utime_since_now(&td->io_log_start_time)` and
//!   `read_iolog` feeds the differences to `iolog_delay`, which counts microseconds; fio's HOWTO
//!   gives no unit.)
//!
//! Actions: `read`, `write`, `trim` are requests; `sync`, `datasync` (and `sync_file_range`)
//! are flushes; `add`, `open`, `close`, `unlink` manage files and `wait` (v2 delays) are
//! ignored. Offsets and lengths are bytes. v2 has no timestamps: every record has time 0.
//! Devices are numbered 0, 1, … in the order file names first appear.

use super::error::{FieldError, LineErrorKind, TraceError};
use super::fields::{op_word, scaled, word_op, Fields, Sep};
use super::{Parsed, TraceRecord};
use crate::request::Op;
use std::io::Write;

const V2: &[&str] = &["filename", "action", "offset", "length"];
const V3: &[&str] = &["timestamp", "filename", "action", "offset", "length"];
const HEADER_V2: &[u8] = b"fio version 2 iolog";
/// The header [`write_header`] writes.
pub(crate) const HEADER_V3: &str = "fio version 3 iolog";

/// Distinct file names a log may use: bounds the name table (fio jobs use a handful).
const MAX_FILES: usize = 4096;

/// Parser state: the version from the header and the file-name table.
#[derive(Clone, Debug, Default)]
pub(crate) struct Parser {
    version: Option<u8>,
    files: Vec<Box<[u8]>>,
    /// Index of the last file used, checked first (logs rarely switch files).
    last: usize,
}

impl Parser {
    /// Parse one line.
    pub(crate) fn parse(&mut self, line: &[u8]) -> Result<Parsed, FieldError> {
        let version = match self.version {
            Some(v) => v,
            None => return self.header(line),
        };
        let mut f = Fields::new(line, Sep::Whitespace, if version == 3 { V3 } else { V2 });
        let time_ns = match version {
            3 => scaled("timestamp", f.u64()?, 1000)?,
            _ => 0,
        };
        let file = f.next()?;
        let action = f.next()?;
        let op = match word_op(action, &[b"sync", b"datasync", b"sync_file_range"]) {
            Some(op) => op,
            None if matches!(action, b"add" | b"open" | b"close" | b"unlink") => {
                self.device(file)?; // number files in the order the log adds them
                return Ok(Parsed::Ignored);
            }
            None if action == b"wait" => return Ok(Parsed::Ignored),
            None => return Err(FieldError::new("action", LineErrorKind::UnknownOp, action)),
        };
        let device = self.device(file)?;
        let (mut offset, mut len) = (0, 0);
        // fio logs offset and length for syncs too; they mean nothing for a flush.
        if op != Op::Flush || f.remaining() > 0 {
            offset = f.u64()?;
            len = f.u64()?;
        }
        f.end()?;
        if op == Op::Flush {
            (offset, len) = (0, 0);
        }
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

    /// The first content line must be the version header.
    fn header(&mut self, line: &[u8]) -> Result<Parsed, FieldError> {
        if line.starts_with(HEADER_V2) {
            self.version = Some(2);
            return Ok(Parsed::Ignored);
        }
        if line.starts_with(HEADER_V3.as_bytes()) {
            self.version = Some(3);
            return Ok(Parsed::Ignored);
        }
        // Guess the version from this line, so that with skip_bad_lines the rest still parses.
        let numeric_first = line
            .split(u8::is_ascii_whitespace)
            .find(|t| !t.is_empty())
            .is_some_and(|t| t.iter().all(u8::is_ascii_digit));
        self.version = Some(if numeric_first { 3 } else { 2 });
        Err(FieldError::new(
            "header",
            LineErrorKind::MissingHeader(HEADER_V3),
            line,
        ))
    }

    /// Device number of a file name (order of first appearance).
    fn device(&mut self, name: &[u8]) -> Result<u32, FieldError> {
        if self.files.get(self.last).is_some_and(|f| **f == *name) {
            return Ok(self.last as u32);
        }
        if let Some(i) = self.files.iter().position(|f| **f == *name) {
            self.last = i;
            return Ok(i as u32);
        }
        if self.files.len() >= MAX_FILES {
            return Err(FieldError::new(
                "filename",
                LineErrorKind::Invalid("more than 4096 distinct file names"),
                name,
            ));
        }
        self.files.push(name.into());
        self.last = self.files.len() - 1;
        Ok(self.last as u32)
    }
}

/// The file name written for a device: fio replays it with `--replay_redirect=/dev/…`.
fn file_name(device: u32) -> String {
    format!("dev{device}")
}

/// The v3 header line.
pub(crate) fn write_header<W: Write + ?Sized>(w: &mut W) -> Result<(), TraceError> {
    writeln!(w, "{HEADER_V3}").map_err(TraceError::Write)
}

/// The `add` and `open` lines fio needs before a file's first request.
pub(crate) fn write_open<W: Write + ?Sized>(
    device: u32,
    time_ns: u64,
    w: &mut W,
) -> Result<(), TraceError> {
    let (us, name) = (time_ns / 1000, file_name(device));
    writeln!(w, "{us} {name} add\n{us} {name} open").map_err(TraceError::Write)
}

/// One v3 request line (time truncated to microseconds; a flush is written as `sync`).
pub(crate) fn write<W: Write + ?Sized>(rec: &TraceRecord, w: &mut W) -> Result<(), TraceError> {
    let action = op_word(rec.op, "sync");
    writeln!(
        w,
        "{} {} {} {} {}",
        rec.time_ns / 1000,
        file_name(rec.device),
        action,
        rec.offset,
        rec.len
    )
    .map_err(TraceError::Write)
}
