//! Durable trims (docs/power.md): an acknowledged trim must never let older data come back
//! after a power cut, yet the old pages stay on flash until GC erases them and a recovery scan
//! finds them. So every trim request is persisted before it is acknowledged, as one trim record
//! page ([`TrimRecord`], OOB tagged [`Oob::RECORD`](crate::device::Oob::RECORD) with the trim's
//! write stamp): recovery unmaps every LPN of a record whose newest data is older than the
//! record.
//!
//! A record is a valid page until GC meets it; GC then moves it on like a data page while one
//! of its LPNs is unmapped ([`GcHooks::unmapped`]) and still has a data page on flash (an
//! older version a scan could bring back), and drops it otherwise ([`Device::record_needed`],
//! which counts the pages).
//!
//! [`Device::record_needed`]: crate::device::Device::record_needed

use super::alloc::{Allocator, Stream};
use super::gc::{self, GcHooks};
use super::stats::FtlStats;
use crate::addr::{Ppa, SimTime};
use crate::device::{Cause, Device, TrimRecord};
use crate::error::FtlError;
use crate::request::Request;

/// Persists the trim request `req` (issued at its arrival) as a record page of `stream`,
/// running foreground GC first if a new line is needed; returns when the record is programmed
/// (the trim's acknowledgement). Call before changing the mapping: a trim is acknowledged only
/// once durable.
pub fn persist_trim(
    dev: &mut Device,
    alloc: &mut Allocator,
    stream: Stream,
    hooks: &mut impl GcHooks,
    stats: &mut FtlStats,
    req: &Request,
) -> Result<SimTime, FtlError> {
    let ppa = gc::alloc_page(dev, alloc, stream, req.arrival, hooks, stats)?;
    program_record(dev, ppa, req, |l| hooks.unmapped(l))
}

/// Programs the trim request `req`'s record at `ppa`, a page the caller allocated (for an FTL
/// whose own allocation or GC cannot go through [`persist_trim`]); returns when it is durable.
/// Call before changing the mapping: if every LPN it trims is already `unmapped`, the record
/// changes nothing a recovery would see (an older record, or no data, already says so), so it
/// is invalid at once (whether to write it at all is the FTL's to know only after translating;
/// the program keeps a trim's cost the same): records of LPNs trimmed again and again would
/// otherwise pile up as valid pages while the old data stays on flash.
pub fn program_record(
    dev: &mut Device,
    ppa: Ppa,
    req: &Request,
    unmapped: impl Fn(u32) -> bool,
) -> Result<SimTime, FtlError> {
    let rec = TrimRecord {
        first: req.lpn,
        pages: req.pages,
    };
    let done = dev.program_record(ppa, req.stamp, rec, Cause::TrimRecord, req.arrival)?;
    if rec.range().all(unmapped) {
        dev.invalidate(ppa)?;
    }
    Ok(done)
}
