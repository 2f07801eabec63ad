//! A host's byte-addressed commands on a simulator that keeps payloads: what the NBD server
//! executes for its clients and what `learnedftl check` drives through the engine, so both
//! exercise one data path.
//!
//! The FTL works on whole pages. A read that covers part of a page reads the covering pages; a
//! write reads the partial pages at its ends first and writes them back merged with the rest
//! (read-modify-write, as SSD firmware does), a
//! trim discards only the pages it covers entirely, and write-zeroes writes zeroes over partial
//! pages and discards (or, with `no_hole`, writes zeroes over) the whole ones. FUA and flush
//! complete only once every write so far is durable.
//!
//! With [`HostBytes::verify`] every page-level request is checked (`serve --verify`): a read
//! whose pages the oracle finds in the wrong version, or whose bytes differ from what was last
//! written there, fails its command with [`EngineError::Verify`] (a read-modify-write then
//! writes nothing back).

use super::shadow::Shadow;
use super::{EngineError, Payload, Simulator};
use crate::addr::SimTime;
use crate::request::Op;
use crate::stats::ByteChecks;
use crate::workload::HostIo;

/// A host command over bytes (the NBD commands).
#[derive(Debug)]
pub enum Cmd<'a> {
    /// Fill `buf` from `offset`.
    Read {
        /// First byte.
        offset: u64,
        /// Where the data goes (its length is the request's).
        buf: &'a mut [u8],
    },
    /// Write `data` at `offset`.
    Write {
        /// First byte.
        offset: u64,
        /// The data.
        data: &'a [u8],
        /// Complete only once durable.
        fua: bool,
        /// Its FDP placement ID (docs/fdp.md; 0: the default handle).
        placement: u16,
    },
    /// Make every write completed so far durable.
    Flush,
    /// Discard a range: its whole pages read as zeroes afterwards, partial pages are kept.
    Trim {
        /// First byte.
        offset: u64,
        /// Bytes.
        len: u64,
        /// Complete only once durable.
        fua: bool,
    },
    /// Make a range read as zeroes.
    WriteZeroes {
        /// First byte.
        offset: u64,
        /// Bytes.
        len: u64,
        /// Complete only once durable.
        fua: bool,
        /// Write zeroes over whole pages rather than discard them.
        no_hole: bool,
    },
}

/// One page-level request a command issued to the simulator, and the write stamp it got.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    /// The request (whole pages, except a flush).
    pub io: HostIo,
    /// The stamp of a write or trim that was served (0 otherwise, or when it failed).
    pub stamp: u32,
}

/// Zeroes written per request by write-zeroes with `no_hole`.
const ZERO_CHUNK: usize = 1 << 20;

/// Executes byte-addressed commands on a [`Simulator`] whose device keeps payloads; reused
/// buffers, and optionally a journal of every page-level request issued.
#[derive(Clone, Debug, Default)]
pub struct HostBytes {
    /// Latest completion of any write so far: a flush completes after it.
    writes_done: SimTime,
    /// Covering pages of a partial-page command (reused).
    scratch: Vec<u8>,
    /// A page's worth or more of zeroes.
    zeroes: Vec<u8>,
    journal: Option<Vec<Issued>>,
    /// The simulator's power cuts recovered from when the latest page-level request was
    /// submitted.
    recoveries_before_last: u64,
    /// The checks, when on.
    checks: Option<Shadow>,
    /// The placement ID of the write command being executed (0 between commands).
    placement: u16,
}

impl HostBytes {
    /// An executor; `journal` keeps every page-level request issued until
    /// [`HostBytes::drain_journal`] takes them (the NBD server's recording, `check`'s model).
    pub fn new(journal: bool) -> HostBytes {
        HostBytes {
            journal: journal.then(Vec::new),
            ..HostBytes::default()
        }
    }

    /// The page-level requests issued since the last call, in order.
    pub fn drain_journal(&mut self) -> std::vec::Drain<'_, Issued> {
        self.journal.get_or_insert_with(Vec::new).drain(..)
    }

    /// Checks every command from now on (docs/nbd.md "Verification"): each page-level request
    /// must leave the oracle's failure count unchanged, and each page a read returns must hash
    /// to what was last written there (12 B per logical page). A command failing a check fails
    /// with [`EngineError::Verify`] naming it. `sim` must verify reads (its oracle is on), and
    /// every later command must run on it.
    pub fn verify(&mut self, sim: &Simulator) -> Result<(), String> {
        self.checks = Some(Shadow::new(sim)?);
        Ok(())
    }

    /// Whether the latest power cut struck after the last command completed — in the
    /// background work after its last page-level request, or later — rather than inside the
    /// command (which then finished after the recovery: a read returns what recovery
    /// rebuilt, a read-modify-write merged bytes from before the cut). `sim` is the simulator
    /// the commands ran on.
    pub fn cut_after_last_command(&self, sim: &Simulator) -> bool {
        sim.recoveries() > self.recoveries_before_last && sim.last_cut_after_ack()
    }

    /// What the checks counted, when on.
    pub fn byte_checks(&self) -> Option<ByteChecks> {
        self.checks.as_ref().map(Shadow::counts)
    }

    /// Executes `cmd` arriving at `t` (no earlier than the previous command); returns its
    /// completion.
    pub fn execute(
        &mut self,
        sim: &mut Simulator,
        cmd: Cmd<'_>,
        t: SimTime,
    ) -> Result<SimTime, EngineError> {
        if self.checks.is_none() {
            return self.run(sim, cmd, t);
        }
        let (what, offset, len) = extent(&cmd);
        self.run(sim, cmd, t).map_err(|e| match e {
            EngineError::Verify(m) => {
                if let Some(c) = self.checks.as_mut() {
                    c.note_failed_command();
                }
                EngineError::Verify(format!("{what} at byte {offset} (+{len} B): {m}"))
            }
            e => e,
        })
    }

    fn run(
        &mut self,
        sim: &mut Simulator,
        cmd: Cmd<'_>,
        t: SimTime,
    ) -> Result<SimTime, EngineError> {
        match cmd {
            Cmd::Read { offset, buf } => self.read(sim, offset, buf, t),
            Cmd::Write {
                offset,
                data,
                fua,
                placement,
            } => {
                // Every page-level write of this command carries its placement ID.
                self.placement = placement;
                let done = self.write(sim, offset, data, t);
                self.placement = 0;
                self.durable(sim, done?, fua, t)
            }
            Cmd::Flush => self.durable(sim, t, true, t),
            Cmd::Trim { offset, len, fua } => {
                let done = match inner(sim, offset, len) {
                    Some((a, n)) => self.submit(sim, Op::Trim, a, n, Payload::None, t)?,
                    None => t,
                };
                self.durable(sim, done, fua, t)
            }
            Cmd::WriteZeroes {
                offset,
                len,
                fua,
                no_hole,
            } => {
                let zeroes = std::mem::take(&mut self.zeroes);
                let r = self.zero_range(sim, offset, len, no_hole, zeroes, t);
                let done = r?;
                self.durable(sim, done, fua, t)
            }
        }
    }

    /// One page-level request to the simulator, journaled.
    fn submit(
        &mut self,
        sim: &mut Simulator,
        op: Op,
        offset: u64,
        len: u64,
        data: Payload<'_>,
        arrival: SimTime,
    ) -> Result<SimTime, EngineError> {
        let io = HostIo {
            placement: if op == Op::Write { self.placement } else { 0 },
            arrival,
            op,
            offset,
            len,
        };
        let failures = sim.oracle().map_or(0, |o| o.failures());
        self.recoveries_before_last = sim.recoveries();
        let (r, bytes): (_, &[u8]) = match data {
            Payload::Read(buf) => (sim.submit_data(io, Payload::Read(&mut *buf)), buf),
            Payload::Write(d) => (sim.submit_data(io, Payload::Write(d)), d),
            Payload::None => (sim.submit_data(io, Payload::None), &[]),
        };
        if let Some(j) = self.journal.as_mut() {
            let stamp = match (&r, op) {
                (Ok(_), Op::Write | Op::Trim) => sim.last_stamp(),
                _ => 0,
            };
            j.push(Issued { io, stamp });
        }
        let done = r?;
        if let Some(c) = self.checks.as_mut() {
            c.served(sim, &io, bytes, failures)?;
        }
        if op == Op::Write {
            self.writes_done = self.writes_done.max(done);
        }
        Ok(done)
    }

    /// With `flush`, completes `done` only once every write so far is durable (the FTL's write
    /// buffer drained).
    fn durable(
        &mut self,
        sim: &mut Simulator,
        done: SimTime,
        flush: bool,
        t: SimTime,
    ) -> Result<SimTime, EngineError> {
        if !flush {
            return Ok(done);
        }
        let flushed = self.submit(sim, Op::Flush, 0, 0, Payload::None, t)?;
        Ok(done.max(flushed).max(self.writes_done))
    }

    fn read(
        &mut self,
        sim: &mut Simulator,
        offset: u64,
        buf: &mut [u8],
        t: SimTime,
    ) -> Result<SimTime, EngineError> {
        let (c0, clen) = cover(sim, offset, buf.len() as u64);
        if (c0, clen) == (offset, buf.len() as u64) {
            return self.submit(sim, Op::Read, offset, clen, Payload::Read(buf), t);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize(clen as usize, 0);
        let r = self.submit(sim, Op::Read, c0, clen, Payload::Read(&mut scratch), t);
        let at = (offset - c0) as usize;
        buf.copy_from_slice(&scratch[at..at + buf.len()]);
        self.scratch = scratch;
        r
    }

    fn write(
        &mut self,
        sim: &mut Simulator,
        offset: u64,
        data: &[u8],
        t: SimTime,
    ) -> Result<SimTime, EngineError> {
        let (c0, clen) = cover(sim, offset, data.len() as u64);
        if (c0, clen) == (offset, data.len() as u64) {
            return self.submit(sim, Op::Write, offset, clen, Payload::Write(data), t);
        }
        // Read-modify-write: the partial pages at the ends are read (the whole pages between
        // are overwritten, so firmware does not read them), patched and written back with the
        // rest. The reads are issued with the write (the engine serves requests in arrival
        // order), and the command completes after all of them.
        let ps = sim.device().geo().page_size as u64;
        // The ranges read, relative to `c0`: the head page, the tail page, or both in one
        // request when they are one page or adjacent.
        let (mut reads, mut n) = ([(0, 0); 2], 0);
        if offset != c0 {
            (reads[0], n) = ((0, ps), 1);
        }
        if offset + data.len() as u64 != c0 + clen {
            if n == 1 && clen <= 2 * ps {
                reads[0].1 = clen;
            } else {
                (reads[n], n) = ((clen - ps, ps), n + 1);
            }
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize(clen as usize, 0);
        let r = (|| {
            let mut done = t;
            for &(at, len) in &reads[..n] {
                let buf = Payload::Read(&mut scratch[at as usize..(at + len) as usize]);
                done = done.max(self.submit(sim, Op::Read, c0 + at, len, buf, t)?);
            }
            let at = (offset - c0) as usize;
            scratch[at..at + data.len()].copy_from_slice(data);
            let written = self.submit(sim, Op::Write, c0, clen, Payload::Write(&scratch), t)?;
            Ok(done.max(written))
        })();
        self.scratch = scratch;
        r
    }

    /// Write-zeroes with `zeroes` (the reused buffer, put back here).
    fn zero_range(
        &mut self,
        sim: &mut Simulator,
        offset: u64,
        len: u64,
        no_hole: bool,
        mut zeroes: Vec<u8>,
        t: SimTime,
    ) -> Result<SimTime, EngineError> {
        let ps = sim.device().geo().page_size as usize;
        // At least two pages: a range without a whole page inside is shorter.
        if zeroes.len() < ZERO_CHUNK.max(2 * ps) {
            zeroes = vec![0; ZERO_CHUNK.max(2 * ps)];
        }
        let r = self.zero_with(sim, offset, len, no_hole, &zeroes, t);
        self.zeroes = zeroes;
        r
    }

    fn zero_with(
        &mut self,
        sim: &mut Simulator,
        offset: u64,
        len: u64,
        no_hole: bool,
        zeroes: &[u8],
        t: SimTime,
    ) -> Result<SimTime, EngineError> {
        let end = offset + len;
        let Some((a, n)) = inner(sim, offset, len) else {
            // Within one or two partial pages: less than two pages long.
            return self.write(sim, offset, &zeroes[..len as usize], t);
        };
        let mut done = t;
        if offset < a {
            done = done.max(self.write(sim, offset, &zeroes[..(a - offset) as usize], t)?);
        }
        if a + n < end {
            done = done.max(self.write(sim, a + n, &zeroes[..(end - a - n) as usize], t)?);
        }
        if !no_hole {
            return Ok(done.max(self.submit(sim, Op::Trim, a, n, Payload::None, t)?));
        }
        let mut at = a;
        while at < a + n {
            let k = (a + n - at).min(zeroes.len() as u64);
            let w = self.submit(
                sim,
                Op::Write,
                at,
                k,
                Payload::Write(&zeroes[..k as usize]),
                t,
            )?;
            done = done.max(w);
            at += k;
        }
        Ok(done)
    }
}

/// A command's name, first byte and length, for messages.
fn extent(cmd: &Cmd<'_>) -> (&'static str, u64, u64) {
    match cmd {
        Cmd::Read { offset, buf } => ("read", *offset, buf.len() as u64),
        Cmd::Write { offset, data, .. } => ("write", *offset, data.len() as u64),
        Cmd::Flush => ("flush", 0, 0),
        Cmd::Trim { offset, len, .. } => ("trim", *offset, *len),
        Cmd::WriteZeroes { offset, len, .. } => ("write-zeroes", *offset, *len),
    }
}

/// The whole pages covering `[offset, offset + len)`: first byte and length.
fn cover(sim: &Simulator, offset: u64, len: u64) -> (u64, u64) {
    let ps = sim.device().geo().page_size as u64;
    let first = offset / ps * ps;
    (first, (offset + len).div_ceil(ps) * ps - first)
}

/// The whole pages inside `[offset, offset + len)`, if any: first byte and length.
fn inner(sim: &Simulator, offset: u64, len: u64) -> Option<(u64, u64)> {
    inner_pages(sim.device().geo().page_size as u64, offset, len)
}

/// The whole pages of `ps` bytes inside `[offset, offset + len)`, if any: first byte and
/// length.
pub fn inner_pages(ps: u64, offset: u64, len: u64) -> Option<(u64, u64)> {
    let a = offset.div_ceil(ps) * ps;
    let b = (offset + len) / ps * ps;
    (a < b).then(|| (a, b - a))
}
