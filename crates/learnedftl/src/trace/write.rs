//! Conversion writers (`convert --to disksim|msr|fio-iolog`).

use super::error::TraceError;
use super::{disksim, fio_iolog, msr, recording, Format, TraceRecord};
use std::io::Write;

/// Write one record as a line of `format` (fio-iolog is written as version 3).
///
/// Stateless: it writes neither the header ([`write_header`]) nor the `add`/`open` lines fio
/// needs before a file's first request; [`TraceWriter`] does both. Precision kept: DiskSim
/// ns and 512-byte sectors (an unaligned range is widened to the sectors it touches); MSR
/// 100 ns ticks; fio µs. DiskSim and MSR have no trim or flush: those records are
/// [`TraceError::Unrepresentable`], which a converter may count and skip.
pub fn write_record<W: Write + ?Sized>(
    format: Format,
    rec: &TraceRecord,
    w: &mut W,
) -> Result<(), TraceError> {
    match format {
        Format::DiskSim => disksim::write(rec, w),
        Format::Msr => msr::write(rec, w),
        Format::FioIolog => fio_iolog::write(rec, w),
        Format::Recording => recording::write(rec, w, false),
        other => Err(TraceError::NoWriter(other)),
    }
}

/// Write what must precede the records of `format`: `fio version 3 iolog` for fio-iolog,
/// nothing for DiskSim and MSR (their files have no header).
pub fn write_header<W: Write + ?Sized>(format: Format, w: &mut W) -> Result<(), TraceError> {
    match format {
        Format::FioIolog => fio_iolog::write_header(w),
        Format::Recording => recording::write_header(w, false),
        f if f.can_write() => Ok(()),
        other => Err(TraceError::NoWriter(other)),
    }
}

/// A converter's output: writes the header first, and for fio the `add`/`open` lines of each
/// device before its first request (file `dev<N>`; replay with fio's `--replay_redirect`).
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    format: Format,
    out: W,
    header_written: bool,
    /// fio: devices already opened (a handful; a linear scan is fastest).
    opened: Vec<u32>,
    /// A learnedftl recording's `placement` column is written ([`TraceWriter::with_placement`]).
    placement: bool,
}

impl<W: Write> TraceWriter<W> {
    /// A writer of `format` to `out` (buffer `out` yourself for files).
    pub fn new(format: Format, out: W) -> Result<Self, TraceError> {
        if !format.can_write() {
            return Err(TraceError::NoWriter(format));
        }
        Ok(TraceWriter {
            format,
            out,
            header_written: false,
            opened: Vec::new(),
            placement: false,
        })
    }

    /// The same writer with a `placement` column: each record's FDP placement ID, empty for a
    /// record without one (docs/traces.md). Only learnedftl recordings have the column; it is
    /// chosen before anything is written, as the header names it.
    pub fn with_placement(mut self) -> Result<Self, TraceError> {
        if self.format != Format::Recording {
            return Err(TraceError::InvalidOption(format!(
                "{} traces carry no placement IDs (only learnedftl recordings do)",
                self.format
            )));
        }
        if self.header_written {
            return Err(TraceError::InvalidOption(
                "the placement column must be chosen before the header is written".into(),
            ));
        }
        self.placement = true;
        Ok(self)
    }

    /// The format written.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether records are written with their placement ID ([`TraceWriter::with_placement`]).
    pub fn placement(&self) -> bool {
        self.placement
    }

    /// Write one record.
    pub fn write(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        self.header()?;
        if self.format == Format::FioIolog && !self.opened.contains(&rec.device) {
            fio_iolog::write_open(rec.device, rec.time_ns, &mut self.out)?;
            self.opened.push(rec.device);
        }
        match self.format {
            Format::Recording => recording::write(rec, &mut self.out, self.placement),
            format => write_record(format, rec, &mut self.out),
        }
    }

    /// Writes `# text` as a line of its own (learnedftl recordings only: other formats'
    /// readers need not skip comments): e.g. the recording's `start_unix_ns`.
    pub fn comment(&mut self, text: &str) -> Result<(), TraceError> {
        if self.format != Format::Recording {
            return Err(TraceError::InvalidOption(format!(
                "{} traces carry no comments",
                self.format
            )));
        }
        self.header()?;
        writeln!(self.out, "# {text}").map_err(TraceError::Write)
    }

    /// Flush the output so far (the header is written even for an empty trace).
    pub fn flush(&mut self) -> Result<(), TraceError> {
        self.header()?;
        self.out.flush().map_err(TraceError::Write)
    }

    /// Flush and return the output.
    pub fn finish(mut self) -> Result<W, TraceError> {
        self.flush()?;
        Ok(self.out)
    }

    fn header(&mut self) -> Result<(), TraceError> {
        if !self.header_written {
            match self.format {
                Format::Recording => recording::write_header(&mut self.out, self.placement)?,
                format => write_header(format, &mut self.out)?,
            }
            self.header_written = true;
        }
        Ok(())
    }
}
