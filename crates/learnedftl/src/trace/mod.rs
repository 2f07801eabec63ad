//! Block-trace input: streaming parsers for the formats of SPEC §4.3, format detection,
//! transparent decompression, replay adaptation into [`HostIo`](crate::workload::HostIo),
//! one-pass statistics and conversion writers.
//!
//! Everything streams: a reader holds one line at a time in a reused buffer (lines are bounded
//! at [`MAX_LINE`] bytes), so a 10 GiB trace (or an endless generated one) is parsed in constant
//! memory. `docs/traces.md` lists every format's columns, units and what becomes of each.
//!
//! ```no_run
//! use learnedftl::trace::{self, ParseOptions, ReplayOptions};
//!
//! let reader = trace::open("msr/src1_0.csv.gz", None, &ParseOptions::default())?;
//! eprintln!("format: {} ({})", reader.format(), reader.compression());
//! for io in reader.into_replay(64 << 30, ReplayOptions::default())? {
//!     let io = io?; // a HostIo, arrival rebased to 0
//!     # let _ = io;
//! }
//! # Ok::<(), trace::TraceError>(())
//! ```

mod blkparse;
mod disksim;
mod error;
mod fields;
mod fio_iolog;
mod fiu;
mod msr;
mod reader;
mod recording;
mod replay;
mod stats;
mod systor;
mod umass;
mod write;

pub use error::{LineErrorKind, NoRequest, TraceError};
pub use reader::{open, Compression, TraceReader, MAX_LINE};
pub use recording::{start_unix_ns, HEADER as RECORDING_HEADER};
pub use replay::{AddressPolicy, PlacementBy, Replay, ReplayCounters, ReplayOptions};
pub use stats::{InterArrival, SizeBucket, StatsBuilder, TraceStats, FOOTPRINT_MAX_SPAN};
pub use write::{write_header, write_record, TraceWriter};

use crate::request::Op;
use error::FieldError;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// One request of a trace, in the units every format converts to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceRecord {
    /// 1-based line number in the (decompressed) file, for error messages.
    pub line: u64,
    /// Timestamp in nanoseconds as the trace gives it (not rebased: MSR's are since 1601).
    pub time_ns: u64,
    /// Operation.
    pub op: Op,
    /// First byte.
    pub offset: u64,
    /// Length in bytes (0 for flushes).
    pub len: u64,
    /// Device, disk, LUN or ASU number as the format defines it (0 where it has none; a
    /// recording's connection).
    pub device: u32,
    /// When the request completed on the traced host, on the clock of `time_ns`, where the
    /// format records it (learnedftl recordings): what closed-loop replay needs.
    pub done_ns: Option<u64>,
    /// A write's FDP placement ID, where the format records one (a learnedftl recording's
    /// optional `placement` column; docs/fdp.md).
    pub placement: Option<u16>,
}

/// The trace formats we read (SPEC §4.3).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// DiskSim / MQSim ASCII: `time_ns dev lba_sectors size_sectors type`.
    DiskSim,
    /// MSR Cambridge CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
    Msr,
    /// UMass / SPC CSV: `ASU,LBA,Size,Opcode,Timestamp[,…]`.
    Umass,
    /// SYSTOR '17 CSV: `Timestamp,Response,IOType,LUN,Offset,Size`.
    Systor,
    /// FIU: `ts pid process lba size op major minor md5`.
    Fiu,
    /// `blkparse` default text output.
    Blkparse,
    /// fio `write_iolog` output, version 2 or 3.
    FioIolog,
    /// learnedftl recordings (`serve --record-format learnedftl`):
    /// `issue_ns,done_ns,conn,op,offset,len`, with completion times for closed-loop replay.
    Recording,
}

impl Format {
    /// Every format, in detection order.
    pub const ALL: [Format; 8] = [
        Format::DiskSim,
        Format::Msr,
        Format::Umass,
        Format::Systor,
        Format::Fiu,
        Format::Blkparse,
        Format::FioIolog,
        Format::Recording,
    ];

    /// The names `FromStr` accepts (and `Display` prints), in [`Format::ALL`] order.
    pub const NAMES: [&'static str; 8] = [
        "disksim",
        "msr",
        "umass",
        "systor",
        "fiu",
        "blkparse",
        "fio-iolog",
        "learnedftl",
    ];

    /// The format's name (`disksim`, `msr`, …).
    pub fn name(self) -> &'static str {
        Format::NAMES[Format::ALL
            .iter()
            .position(|&f| f == self)
            .unwrap_or_default()]
    }

    /// Whether [`write_record`] can produce this format (`convert --to`).
    pub fn can_write(self) -> bool {
        matches!(
            self,
            Format::DiskSim | Format::Msr | Format::FioIolog | Format::Recording
        )
    }

    /// Recognise a format from the first lines of a file (decompressed text).
    ///
    /// Blank lines and `#` comments are passed over, and up to 16 lines are examined. Each
    /// format's own parser judges each line: a line it turns into a request is evidence for it,
    /// a line it rejects is evidence against, a line it ignores (a CSV header, a blkparse
    /// summary, a fio `add`) is neutral. blkparse counts any event line as evidence, whatever
    /// its action; fio logs need their `fio version N iolog` header first. A format fits when
    /// the evidence for it outweighs the evidence against (so one malformed early line does not
    /// hide a valid file's format: the reader then names that line, or skips it under
    /// `skip_bad_lines`). The answer is the fitting format with the most lines for it, fewest
    /// against breaking ties; `None` when no format fits or two fit equally well.
    pub fn detect<S: AsRef<str>>(first_lines: &[S]) -> Option<Format> {
        detect_lines(first_lines.iter().map(|l| l.as_ref().as_bytes()))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl FromStr for Format {
    type Err = TraceError;

    /// A name of [`Format::NAMES`], any case; also `mqsim` (= disksim), `spc` (= umass) and
    /// `fio` (= fio-iolog).
    fn from_str(s: &str) -> Result<Self, TraceError> {
        let name = s.trim().to_ascii_lowercase();
        let alias = match name.as_str() {
            "mqsim" => Some(Format::DiskSim),
            "spc" => Some(Format::Umass),
            "fio" => Some(Format::FioIolog),
            _ => None,
        };
        alias
            .or_else(|| {
                Format::NAMES
                    .iter()
                    .position(|&n| n == name)
                    .map(|i| Format::ALL[i])
            })
            .ok_or_else(|| TraceError::UnknownFormat(s.to_owned()))
    }
}

/// How lines are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// Turn malformed lines into counted warnings ([`TraceReader::skipped`]) instead of errors.
    pub skip_bad_lines: bool,
    /// The blkparse action whose events become requests (default `Q`, queued).
    pub blkparse_action: char,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            skip_bad_lines: false,
            blkparse_action: 'Q',
        }
    }
}

/// What one line turned out to be.
pub(crate) enum Parsed {
    /// A request (its `line` is filled in by the reader).
    Record(TraceRecord),
    /// Not a request: a header, a summary line, a file action, another blkparse action.
    Ignored,
}

/// A format's line parser with its state.
#[derive(Clone, Debug)]
pub(crate) enum Parser {
    DiskSim,
    Msr,
    Umass,
    Systor,
    Fiu,
    Blkparse(blkparse::Parser),
    FioIolog(fio_iolog::Parser),
    Recording,
}

/// How a line bears on detection.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Sniff {
    Match,
    Neutral,
    Mismatch,
}

impl Parser {
    /// A fresh parser; `action` is the blkparse action byte to keep.
    pub(crate) fn new(format: Format, action: u8) -> Self {
        match format {
            Format::DiskSim => Parser::DiskSim,
            Format::Msr => Parser::Msr,
            Format::Umass => Parser::Umass,
            Format::Systor => Parser::Systor,
            Format::Fiu => Parser::Fiu,
            Format::Blkparse => Parser::Blkparse(blkparse::Parser::new(action)),
            Format::FioIolog => Parser::FioIolog(fio_iolog::Parser::default()),
            Format::Recording => Parser::Recording,
        }
    }

    /// Parse one line (end-of-line bytes removed, not blank, not a comment).
    #[inline]
    pub(crate) fn parse(&mut self, line: &[u8]) -> Result<Parsed, FieldError> {
        match self {
            Parser::DiskSim => disksim::parse(line),
            Parser::Msr => msr::parse(line),
            Parser::Umass => umass::parse(line),
            Parser::Systor => systor::parse(line),
            Parser::Fiu => fiu::parse(line),
            Parser::Blkparse(p) => p.parse(line),
            Parser::FioIolog(p) => p.parse(line),
            Parser::Recording => recording::parse(line),
        }
    }

    fn sniff(&mut self, line: &[u8]) -> Sniff {
        if matches!(self, Parser::Blkparse(_)) && blkparse::Parser::is_event(line) {
            return Sniff::Match;
        }
        match self.parse(line) {
            Ok(Parsed::Record(_)) => Sniff::Match,
            Ok(Parsed::Ignored) => Sniff::Neutral,
            Err(_) => Sniff::Mismatch,
        }
    }
}

/// Lines examined by detection.
const SNIFF_LINES: usize = 16;

/// `line` without its end-of-line bytes.
pub(crate) fn trim_eol(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// Blank lines and `#` comments carry no request in any format.
pub(crate) fn is_blank_or_comment(line: &[u8]) -> bool {
    match line.iter().find(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(&b) => b == b'#',
    }
}

/// [`Format::detect`] on raw lines.
pub(crate) fn detect_lines<'a>(lines: impl Iterator<Item = &'a [u8]>) -> Option<Format> {
    let content: Vec<&[u8]> = lines
        .map(trim_eol)
        .filter(|l| !is_blank_or_comment(l))
        .take(SNIFF_LINES)
        .collect();
    // The best fit so far, its (lines for, lines against), and whether another fits as well.
    let mut best: Option<(Format, (usize, usize))> = None;
    let mut tied = false;
    for format in Format::ALL {
        let mut parser = Parser::new(format, b'Q');
        let (mut matches, mut mismatches) = (0, 0);
        for line in &content {
            match parser.sniff(line) {
                Sniff::Match => matches += 1,
                Sniff::Neutral => {}
                Sniff::Mismatch => mismatches += 1,
            }
        }
        if matches <= mismatches {
            continue;
        }
        let better = |(m, x): (usize, usize)| matches > m || (matches == m && mismatches < x);
        match best {
            Some((_, score)) if score == (matches, mismatches) => tied = true,
            Some((_, score)) if !better(score) => {}
            _ => {
                best = Some((format, (matches, mismatches)));
                tied = false;
            }
        }
    }
    // Two formats that read the sample equally well: let the user say.
    best.filter(|_| !tied).map(|(f, _)| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_format_names_round_trip() {
        for (f, name) in Format::ALL.iter().zip(Format::NAMES) {
            assert_eq!(f.name(), name);
            assert_eq!(name.parse::<Format>().ok(), Some(*f));
            assert_eq!(f.to_string(), name);
        }
        assert_eq!("MQSim".parse::<Format>().ok(), Some(Format::DiskSim));
        let e = "csv".parse::<Format>().unwrap_err().to_string();
        assert!(e.contains("\"csv\"") && e.contains("fio-iolog"), "{e}");
    }

    #[test]
    fn trace_detect_each_format() {
        let cases: [(&[&str], Format); 9] = [
            (&["0 0 100 8 1", "1000 0 200 8 0"], Format::DiskSim),
            (&["128166372003061629,wdev,2,Write,3817840640,4096,2770"], Format::Msr),
            (&["0,303567,3584,w,0.000000", "1,4,512,R,0.01"], Format::Umass),
            (
                &["Timestamp,Response,IOType,LUN,Offset,Size", "1486945561.033093,0.000363,R,3,2466361344,4096"],
                Format::Systor,
            ),
            (
                &["89966549261364 4226 syslogd 904265560 8 W 6 0 531e779dbb0c34ad3b4bbcd4afcc8ad0"],
                Format::Fiu,
            ),
            (
                &["  8,0    3        1     0.000000000   697  A  WS 223490 + 8 <- (8,1) 221442"],
                Format::Blkparse,
            ),
            (&["fio version 3 iolog", "0 /dev/sdb add", "5 /dev/sdb write 0 4096"], Format::FioIolog),
            (&["fio version 2 iolog", "/dev/sdb add", "/dev/sdb read 0 4096"], Format::FioIolog),
            (
                &["# learnedftl recording", RECORDING_HEADER, "10,90,0,write,0,4096", "95,99,1,read,0,4096"],
                Format::Recording,
            ),
        ];
        for (lines, want) in cases {
            assert_eq!(Format::detect(lines), Some(want), "{lines:?}");
        }
        assert_eq!(Format::detect(&["hello world"]), None);
        assert_eq!(Format::detect::<&str>(&[]), None);
        assert_eq!(Format::detect(&["# only a comment", ""]), None);
        // A fio log without its header is not recognised (fio would refuse it too).
        assert_eq!(Format::detect(&["/dev/sdb read 0 4096"]), None);
    }

    #[test]
    fn trace_detect_by_majority() {
        // One malformed early line does not hide the format of the lines around it.
        let lines = [
            "0 0 100 8 1",
            "1000 0 x 8 0",
            "2000 0 300 8 0",
            "3000 0 400 8 1",
        ];
        assert_eq!(Format::detect(&lines), Some(Format::DiskSim));
        // Half bad is not a majority.
        assert_eq!(Format::detect(&["0 0 100 8 1", "garbage here"]), None);
    }
}
