//! Errors of trace reading, writing and replay.

use super::Format;
use crate::error::quote;
use crate::request::Op;
use std::fmt;
use std::io;

/// Everything that can go wrong reading, converting or replaying a trace.
///
/// Line-level problems ([`TraceError::Line`]) always name the file, the 1-based line number, the
/// field and the offending text, so a user can open the file at the right place.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be opened, read or decompressed.
    #[error("{file}: {source}")]
    Io {
        /// File (or stream) name.
        file: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A malformed line.
    #[error("{file}:{line}: field `{field}`: {kind}{}", found(.text))]
    Line {
        /// File (or stream) name.
        file: String,
        /// 1-based line number (of the decompressed text).
        line: u64,
        /// Name of the offending field, as [`crate::trace`]'s docs list the columns.
        field: &'static str,
        /// What is wrong with it.
        kind: LineErrorKind,
        /// The offending text (cut to 80 bytes; empty when the field is missing).
        text: String,
    },
    /// No format was given and the first lines match none (or more than one) of them.
    #[error(
        "{file}: cannot tell the trace format from its first lines; name it explicitly \
         (one of: {})",
        Format::NAMES.join(", ")
    )]
    UndetectedFormat {
        /// File (or stream) name.
        file: String,
    },
    /// A format name that [`Format`]'s `FromStr` does not know.
    #[error("unknown trace format {} (expected one of: {names})", quote(.0), names = Format::NAMES.join(", "))]
    UnknownFormat(String),
    /// The file name says compressed but the content is not (or the other way round).
    #[error("{file}: the name ends in `.{extension}` but the content is not {expected} data")]
    CompressionMismatch {
        /// File name.
        file: String,
        /// The extension found (`gz` or `zst`).
        extension: &'static str,
        /// What the extension promises.
        expected: &'static str,
    },
    /// A request outside the logical space under [`super::AddressPolicy::Refuse`].
    #[error(
        "{file}:{line}: request at bytes {offset}..{end} is outside the logical space of {logical} \
         bytes (address policy `refuse`; `wrap` or `clip` accept it)",
        end = .offset.saturating_add(*.len)
    )]
    OutOfRange {
        /// File (or stream) name.
        file: String,
        /// 1-based line number.
        line: u64,
        /// First byte of the request.
        offset: u64,
        /// Length in bytes.
        len: u64,
        /// Size of the logical space in bytes.
        logical: u64,
    },
    /// The output format has no way to express this operation (e.g. trim in MSR CSV).
    #[error("line {line}: the {format} format cannot express a {op:?} request")]
    Unrepresentable {
        /// Target format.
        format: Format,
        /// The operation.
        op: Op,
        /// Line of the record in its source.
        line: u64,
    },
    /// The format is read-only here (no writer).
    #[error("cannot write the {0} format (writers exist for disksim, msr and fio-iolog)")]
    NoWriter(Format),
    /// Writing converted output failed.
    #[error("cannot write the trace: {0}")]
    Write(#[source] io::Error),
    /// The whole trace was read and not one line is a request of its format: a result from
    /// it would be all zeros (the format is wrong, or the file is not a trace).
    #[error("{0}")]
    NoRequest(NoRequest),
    /// An option value makes no sense (e.g. a speed of zero).
    #[error("invalid option: {0}")]
    InvalidOption(String),
}

impl TraceError {
    /// `format` has no way to express `rec`'s operation.
    pub(crate) fn unrepresentable(format: Format, rec: &super::TraceRecord) -> Self {
        TraceError::Unrepresentable {
            format,
            op: rec.op,
            line: rec.line,
        }
    }
}

/// What the lines of a trace without a single request were instead
/// ([`TraceError::NoRequest`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoRequest {
    /// File (or stream) name.
    pub file: String,
    /// The format it was read as.
    pub format: Format,
    /// Lines read.
    pub lines: u64,
    /// Malformed lines: skipped (`skip_bad_lines`), else yielded as errors before this one.
    pub malformed: u64,
    /// Whether they were skipped.
    pub skipped: bool,
    /// The first malformed line's message.
    pub first_malformed: Option<String>,
    /// Lines the format's parser passed over as carrying no request (headers, blkparse
    /// summaries and other actions, fio file actions), blank lines and comments aside.
    pub not_requests: u64,
    /// The first of those: its line number and its text, quoted.
    pub first_not_request: Option<(u64, String)>,
}

impl fmt::Display for NoRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (file, format, lines) = (&self.file, self.format, self.lines);
        if lines == 0 {
            return write!(
                f,
                "{file}: no request: the trace is empty (read as {format})"
            );
        }
        let mut parts = Vec::new();
        if let Some(first) = &self.first_malformed {
            let skipped = if self.skipped { "skipped; " } else { "" };
            parts.push(format!(
                "{} malformed ({skipped}the first: {first})",
                self.malformed
            ));
        }
        if let Some((line, text)) = &self.first_not_request {
            parts.push(format!(
                "{} without a request, the first at line {line}: {text}",
                self.not_requests
            ));
        }
        let blank = lines - self.malformed - self.not_requests;
        if blank > 0 {
            parts.push(format!("{blank} blank or comments"));
        }
        write!(
            f,
            "{file}: no request in {lines} lines read as {format}: {}",
            parts.join("; ")
        )
    }
}

fn found(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(" (found {})", quote(text))
    }
}

/// What is wrong with one field of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineErrorKind {
    /// The line ends before this field.
    Missing {
        /// Fields the format has.
        expected: usize,
        /// Fields the line has.
        found: usize,
    },
    /// The line has more fields than the format has.
    Extra {
        /// Fields the format has.
        expected: usize,
    },
    /// Not a number at all.
    NotNumber,
    /// A number with a fraction where an integer is required.
    NotInteger,
    /// A negative number where only non-negative ones make sense (sizes, offsets, times).
    Negative,
    /// Too large for 64 bits (after unit conversion).
    Overflow,
    /// An operation code the format does not define.
    UnknownOp,
    /// The line is longer than the reader's bound (so no line can exhaust memory).
    TooLong {
        /// The bound in bytes.
        max: usize,
    },
    /// A mandatory header line is absent.
    MissingHeader(&'static str),
    /// Any other violation, described.
    Invalid(&'static str),
}

impl fmt::Display for LineErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineErrorKind::Missing { expected, found } => {
                write!(
                    f,
                    "missing (the format has {expected} fields, the line {found})"
                )
            }
            LineErrorKind::Extra { expected } => {
                write!(f, "unexpected (the format has {expected} fields)")
            }
            LineErrorKind::NotNumber => f.write_str("not a number"),
            LineErrorKind::NotInteger => f.write_str("not an integer"),
            LineErrorKind::Negative => f.write_str("negative"),
            LineErrorKind::Overflow => f.write_str("too large"),
            LineErrorKind::UnknownOp => f.write_str("unknown operation"),
            LineErrorKind::TooLong { max } => write!(f, "line longer than {max} bytes"),
            LineErrorKind::MissingHeader(h) => write!(f, "missing header line `{h}`"),
            LineErrorKind::Invalid(what) => f.write_str(what),
        }
    }
}

/// A field problem before the reader adds file name and line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldError {
    pub field: &'static str,
    pub kind: LineErrorKind,
    pub text: String,
}

/// Longest excerpt of offending text kept in an error.
const EXCERPT: usize = 80;

impl FieldError {
    /// Error on `field`, quoting (at most 80 bytes of) `text`.
    pub(crate) fn new(field: &'static str, kind: LineErrorKind, text: &[u8]) -> Self {
        let cut = &text[..text.len().min(EXCERPT)];
        FieldError {
            field,
            kind,
            text: String::from_utf8_lossy(cut).into_owned(),
        }
    }

    /// Attach the file and line.
    pub(crate) fn at(self, file: &str, line: u64) -> TraceError {
        TraceError::Line {
            file: file.to_owned(),
            line,
            field: self.field,
            kind: self.kind,
            text: self.text,
        }
    }
}
