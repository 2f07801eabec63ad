//! Opening traces (decompression, format detection) and the streaming record iterator.

use super::error::{FieldError, LineErrorKind, NoRequest, TraceError};
use super::replay::{Replay, ReplayOptions};
use super::TraceRecord;
use super::{detect_lines, is_blank_or_comment, trim_eol, Format, ParseOptions, Parsed, Parser};
use crate::error::quote;
use flate2::read::MultiGzDecoder;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

/// Longest line accepted, in bytes. Longer lines are errors (and are skipped without being
/// held in memory), so no input can make the line buffer grow past about twice this.
pub const MAX_LINE: usize = 64 * 1024;

/// Buffered bytes between the decompressor and the line splitter.
const READ_BUFFER: usize = 64 * 1024;

/// Bytes of decompressed text looked at for format detection.
const SNIFF_BYTES: usize = 16 * 1024;

/// Messages of skipped lines kept for the user (the count goes on).
const KEPT_WARNINGS: usize = 10;

/// Compression of a trace file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip (`.gz`), possibly several members back to back.
    Gzip,
    /// Zstandard (`.zst`).
    Zstd,
}

impl Compression {
    /// What the first bytes of a file say.
    pub fn from_magic(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// What a file name's extension claims (`.gz`, `.zst`/`.zstd`); `None` when it claims
    /// nothing.
    pub fn from_extension(path: &Path) -> Option<Compression> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "gz" | "gzip" => Some(Compression::Gzip),
            "zst" | "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::None => "uncompressed",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        })
    }
}

/// Open a trace file: decompress it if its magic bytes say gzip or zstd (a `.gz`/`.zst` name
/// whose content is not is an error), then detect the format from the first lines unless
/// `format` names it. [`TraceReader::format`] and [`TraceReader::detected`] tell what was
/// chosen, for the CLI to report.
pub fn open(
    path: impl AsRef<Path>,
    format: Option<Format>,
    options: &ParseOptions,
) -> Result<TraceReader, TraceError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let file = File::open(path).map_err(|source| TraceError::Io {
        file: name.clone(),
        source,
    })?;
    TraceReader::build(
        name,
        Box::new(file),
        Compression::from_extension(path),
        format,
        options,
    )
}

/// A streaming trace parser: an iterator of records, one line at a time.
///
/// Memory is constant: one reused line buffer (at most about 2 × [`MAX_LINE`]), a fixed read
/// buffer, the decompressor's window and the first few warning messages.
///
/// Without [`ParseOptions::skip_bad_lines`] a malformed line yields an `Err` (iteration may go
/// on past it); with it, the line is counted in [`skipped`](Self::skipped) and its message kept
/// among [`warnings`](Self::warnings). An I/O or decompression error ends the iteration after
/// yielding it. Lines that carry no request (blank, `#` comments, headers, blkparse summaries
/// and other actions, fio file actions) are counted in [`ignored`](Self::ignored).
pub struct TraceReader {
    name: String,
    format: Format,
    detected: bool,
    compression: Compression,
    src: BufReader<Box<dyn Read + Send>>,
    /// The current line, reused. Bytes rather than a `String`: no UTF-8 validation per line,
    /// and stray non-UTF-8 bytes become a field error naming the line instead of an I/O error.
    buf: Vec<u8>,
    parser: Parser,
    skip_bad_lines: bool,
    line: u64,
    skipped: u64,
    ignored: u64,
    warnings: Vec<String>,
    done: bool,
    /// A recording's `start_unix_ns` comment, once read.
    start_unix_ns: Option<u128>,
    /// Records yielded.
    records: u64,
    /// Malformed lines (skipped or yielded as errors), and the first one's message.
    malformed: (u64, Option<String>),
    /// Lines the parser passed over (blank lines and comments aside), and the first one.
    not_requests: (u64, Option<(u64, String)>),
}

impl fmt::Debug for TraceReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceReader")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("compression", &self.compression)
            .field("line", &self.line)
            .finish_non_exhaustive()
    }
}

/// Read up to `n` bytes (fewer only at end of input).
fn read_head(src: &mut dyn Read, n: usize) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    src.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

impl TraceReader {
    /// A reader over any byte stream (decompressed by magic bytes like [`open`]); `name`
    /// stands for the file in messages.
    pub fn from_read(
        name: impl Into<String>,
        src: impl Read + Send + 'static,
        format: Option<Format>,
        options: &ParseOptions,
    ) -> Result<TraceReader, TraceError> {
        TraceReader::build(name.into(), Box::new(src), None, format, options)
    }

    fn build(
        name: String,
        mut raw: Box<dyn Read + Send>,
        claimed: Option<Compression>,
        format: Option<Format>,
        options: &ParseOptions,
    ) -> Result<TraceReader, TraceError> {
        let io_err = |source| TraceError::Io {
            file: name.clone(),
            source,
        };
        let action = u8::try_from(options.blkparse_action)
            .ok()
            .filter(u8::is_ascii_alphabetic)
            .ok_or_else(|| {
                TraceError::InvalidOption(format!(
                    "blkparse action `{}` is not one ASCII letter",
                    options.blkparse_action
                ))
            })?;

        let magic = read_head(&mut raw, 4).map_err(io_err)?;
        let compression = Compression::from_magic(&magic);
        if let Some(claimed) = claimed.filter(|&c| c != compression) {
            return Err(TraceError::CompressionMismatch {
                file: name,
                extension: if claimed == Compression::Gzip {
                    "gz"
                } else {
                    "zst"
                },
                expected: if claimed == Compression::Gzip {
                    "gzip"
                } else {
                    "zstd"
                },
            });
        }
        // Put the peeked bytes back in front of the stream.
        let raw = Cursor::new(magic).chain(raw);
        let mut text: Box<dyn Read + Send> = match compression {
            Compression::None => Box::new(raw),
            Compression::Gzip => Box::new(MultiGzDecoder::new(raw)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(raw).map_err(io_err)?),
        };

        let head = read_head(&mut text, SNIFF_BYTES).map_err(io_err)?;
        let (format, detected) = match format {
            Some(f) => (f, false),
            None => {
                // Only complete lines, unless the head is the whole input.
                let complete = if head.len() < SNIFF_BYTES {
                    &head[..]
                } else {
                    let end = head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                    &head[..end]
                };
                let lines = complete.split(|&b| b == b'\n');
                match detect_lines(lines) {
                    Some(f) => (f, true),
                    None => return Err(TraceError::UndetectedFormat { file: name }),
                }
            }
        };
        Ok(TraceReader {
            format,
            detected,
            compression,
            src: BufReader::with_capacity(READ_BUFFER, Box::new(Cursor::new(head).chain(text))),
            buf: Vec::with_capacity(256),
            parser: Parser::new(format, action),
            skip_bad_lines: options.skip_bad_lines,
            line: 0,
            skipped: 0,
            ignored: 0,
            warnings: Vec::new(),
            done: false,
            start_unix_ns: None,
            records: 0,
            malformed: (0, None),
            not_requests: (0, None),
            name,
        })
    }

    /// A learnedftl recording's wall-clock instant of time 0 (its `# start_unix_ns=N`
    /// comment), once the lines before its first request have been read.
    pub fn start_unix_ns(&self) -> Option<u128> {
        self.start_unix_ns
    }

    /// The file (or stream) name used in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The format being parsed.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the format was detected from content (rather than given).
    pub fn detected(&self) -> bool {
        self.detected
    }

    /// The compression found by magic bytes.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// What to tell the user when the format was detected from the content (`None` when it
    /// was given).
    pub fn detection_note(&self) -> Option<String> {
        self.detected.then(|| {
            format!(
                "{}: detected format {} ({})",
                self.name, self.format, self.compression
            )
        })
    }

    /// Lines read so far.
    pub fn lines(&self) -> u64 {
        self.line
    }

    /// Malformed lines skipped under [`ParseOptions::skip_bad_lines`].
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Lines that carry no request (see the type's docs).
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// Messages of the first skipped lines (at most 10).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Capacity of the line buffer: stays bounded whatever the input (tests check it).
    pub fn line_buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Turn the records into host I/Os for a logical space of `logical_bytes` (see [`Replay`]).
    pub fn into_replay(
        self,
        logical_bytes: u64,
        options: ReplayOptions,
    ) -> Result<Replay<TraceReader>, TraceError> {
        let name = self.name.clone();
        Replay::new(self, name, logical_bytes, options)
    }

    /// Read the next line into `buf`; `Ok(false)` at end of input. A line longer than
    /// [`MAX_LINE`] is consumed to its end without being stored and reported as an error.
    fn next_line(&mut self) -> io::Result<Option<Result<(), FieldError>>> {
        self.buf.clear();
        let n = (&mut self.src)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        if n == MAX_LINE && self.buf.last() != Some(&b'\n') {
            self.discard_rest_of_line()?;
            let err = FieldError::new(
                "line",
                LineErrorKind::TooLong { max: MAX_LINE },
                &self.buf[..32.min(self.buf.len())],
            );
            return Ok(Some(Err(err)));
        }
        Ok(Some(Ok(())))
    }

    fn discard_rest_of_line(&mut self) -> io::Result<()> {
        loop {
            let chunk = self.src.fill_buf()?;
            if chunk.is_empty() {
                return Ok(());
            }
            if let Some(i) = chunk.iter().position(|&b| b == b'\n') {
                self.src.consume(i + 1);
                return Ok(());
            }
            let n = chunk.len();
            self.src.consume(n);
        }
    }

    /// Deal with a malformed line: an error to return, or a counted warning.
    fn bad_line(&mut self, err: FieldError) -> Option<TraceError> {
        let err = err.at(&self.name, self.line);
        self.malformed.0 += 1;
        self.malformed.1.get_or_insert_with(|| err.to_string());
        if !self.skip_bad_lines {
            return Some(err);
        }
        self.skipped += 1;
        if self.warnings.len() < KEPT_WARNINGS {
            self.warnings.push(err.to_string());
        }
        None
    }

    /// The error for a trace read to its end without a single request.
    fn no_request(&mut self) -> TraceError {
        TraceError::NoRequest(NoRequest {
            file: self.name.clone(),
            format: self.format,
            lines: self.line,
            malformed: self.malformed.0,
            skipped: self.skip_bad_lines,
            first_malformed: self.malformed.1.take(),
            not_requests: self.not_requests.0,
            first_not_request: self.not_requests.1.take(),
        })
    }
}

impl Iterator for TraceReader {
    type Item = Result<TraceRecord, TraceError>;

    /// The next record. A trace that ends without one is not an empty result but
    /// [`TraceError::NoRequest`], yielded last: statistics, a conversion or a replay of it
    /// would be all zeros whatever the file held.
    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let read = match self.next_line() {
                Ok(read) => read,
                Err(source) => {
                    self.done = true;
                    return Some(Err(TraceError::Io {
                        file: self.name.clone(),
                        source,
                    }));
                }
            };
            self.line += 1;
            let parsed = match read {
                None => {
                    self.line -= 1;
                    self.done = true;
                    return (self.records == 0).then(|| Err(self.no_request()));
                }
                Some(Err(too_long)) => Err(too_long),
                Some(Ok(())) => {
                    let line = trim_eol(&self.buf);
                    if is_blank_or_comment(line) {
                        if self.format == Format::Recording && self.start_unix_ns.is_none() {
                            self.start_unix_ns = std::str::from_utf8(line)
                                .ok()
                                .and_then(super::start_unix_ns);
                        }
                        self.ignored += 1;
                        continue;
                    }
                    let parsed = self.parser.parse(line);
                    if let Ok(Parsed::Ignored) = parsed {
                        self.not_requests.0 += 1;
                        if self.not_requests.1.is_none() {
                            self.not_requests.1 = Some((self.line, quote(line)));
                        }
                    }
                    parsed
                }
            };
            match parsed {
                Ok(Parsed::Record(mut rec)) => {
                    rec.line = self.line;
                    self.records += 1;
                    return Some(Ok(rec));
                }
                Ok(Parsed::Ignored) => self.ignored += 1,
                Err(e) => {
                    if let Some(err) = self.bad_line(e) {
                        return Some(Err(err));
                    }
                }
            }
        }
        None
    }
}
