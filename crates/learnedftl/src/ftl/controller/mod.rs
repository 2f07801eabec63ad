//! The controller between the host and every FTL (SPEC §12; docs/device.md "The controller"):
//! a firmware cost per host command and a write buffer in the controller's own DRAM, apart
//! from the FTL's mapping DRAM. [`super::build`] and [`super::recover`] put it around any FTL
//! when the device configuration turns a part on; no FTL knows it is there.
//!
//! The write buffer holds whole pages, each the newest acknowledged version of its LPN:
//!
//! * A **write** is acknowledged once its pages are in the buffer. A page whose LPN is already
//!   buffered replaces that version in place (`buffer_absorbed`: it is never programmed); a
//!   write of more pages than the buffer holds goes straight to the FTL. A write that
//!   finds too little room first drains the oldest pages, then waits until enough drained
//!   pages' programs have completed (`stalls`, `stall_ns`): the FTL's foreground GC shows up
//!   as write latency, as on a drive.
//! * **Draining** hands the oldest pages to the FTL as write requests, one per run of
//!   consecutive LPNs of one host write (so the FTL still sees the host's request sizes), at
//!   the arrival of the request that caused it: above `write_buffer_watermark` after a write
//!   (`drain=watermark`), whenever a request finds every LUN idle (`drain=idle`), only for
//!   room (`drain=full`); and always at a FLUSH, at a power cut with protection, and while the
//!   device settles ([`Ftl::idle`]). A page's slot is free again when its program completes.
//! * A **read** is served from the buffer for the pages it holds (no flash read, counted as a
//!   lookup that needed none) and from the FTL for the rest.
//! * A **trim** drops the buffered versions of its pages and goes to the FTL at once.
//! * A **FLUSH** drains everything, passes the flush to the FTL, and completes when the FTL's
//!   flush and every drained page's program have.
//!
//! Without `power_loss_protection` a power cut loses what the buffer held: every buffered LPN
//! is [`Ftl::unflushed`], and may read back any version from the last one handed to the FTL
//! (its durable one) to the acknowledged one. With protection, the buffer goes to a power-loss
//! area on capacitor energy ([`Ftl::flush_on_power_loss`]) and is written to the FTL once it
//! has recovered: nothing acknowledged is lost.

use super::{DramUsage, Ftl, NullSink, ReadSink, Served, Unflushed};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::{Controller as Config, DeviceConfig, DrainPolicy, FlushMode};
use crate::device::Device;
use crate::error::FtlError;
use crate::mapping::FtlStats;
use crate::request::{Op, Request, Upcoming};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// What the controller counted in a phase (docs/metrics.md "controller").
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ControllerCounters {
    /// Host page writes acknowledged from the write buffer.
    pub buffered_pages: u64,
    /// Of which replaced a version still in the buffer (that version is never programmed).
    pub buffer_absorbed: u64,
    /// Host page writes passed straight to the FTL (a write larger than the buffer).
    pub bypassed_pages: u64,
    /// Host page reads served from the write buffer.
    pub buffer_read_hits: u64,
    /// Pages the buffer handed to the FTL.
    pub drained_pages: u64,
    /// Host writes that waited for room in the buffer.
    pub stalls: u64,
    /// The time they waited, ns in total.
    pub stall_ns: u64,
    /// FLUSH commands served.
    pub flushes: u64,
    /// Time host requests spent in the controller on their way to completion: the command
    /// cost and a buffered write's wait for room, ns in total (`latency_parts_us`).
    pub controller_ns: u64,
    /// Time host requests' data spent on the host link on their way to completion (waiting
    /// for it and crossing it), ns in total.
    pub transfer_ns: u64,
}

impl ControllerCounters {
    /// Adds `other`'s counts (a phase's totals across a power cut's recovery).
    pub fn add(&mut self, other: &ControllerCounters) {
        self.buffered_pages += other.buffered_pages;
        self.buffer_absorbed += other.buffer_absorbed;
        self.bypassed_pages += other.bypassed_pages;
        self.buffer_read_hits += other.buffer_read_hits;
        self.drained_pages += other.drained_pages;
        self.stalls += other.stalls;
        self.stall_ns += other.stall_ns;
        self.flushes += other.flushes;
        self.controller_ns += other.controller_ns;
        self.transfer_ns += other.transfer_ns;
    }
}

/// The write buffer's state: flat arrays over the logical pages (8 B each, 10 under FDP) and
/// a FIFO of the buffered pages.
#[derive(Clone)]
struct WriteBuffer {
    /// Pages it holds at most.
    cap: u32,
    /// Pages above which `drain=watermark` drains.
    mark: u32,
    policy: DrainPolicy,
    /// Per LPN, the stamp of its buffered version (0: not buffered).
    held: Vec<u32>,
    /// Per LPN, the placement ID its buffered version was written with (FDP, docs/fdp.md);
    /// empty without FDP. A drained run is one host write's pages, so it has one.
    placement: Vec<u16>,
    /// Per LPN, the stamp of the newest version handed to the FTL, or found on flash at
    /// power-on (0: none, or trimmed since): what a lost buffered version falls back to.
    durable: Vec<u32>,
    /// Buffered pages as `(lpn, stamp, acknowledged ns)` in arrival order; an entry whose
    /// stamp is no longer `held` was replaced or trimmed and is skipped.
    fifo: VecDeque<(u32, u32, u64)>,
    /// Pages drain newest first (`flush=reorder`).
    newest_first: bool,
    /// `write_buffer_max_age_ns` (0: none).
    max_age_ns: u64,
    /// Pages held.
    live: u32,
    /// Drained runs whose programs have not completed, as `(completion ns, pages)`, earliest
    /// first: their slots are not free yet.
    draining: BinaryHeap<Reverse<(u64, u32)>>,
    /// Pages in `draining`.
    draining_pages: u32,
}

impl WriteBuffer {
    fn new(cfg: &DeviceConfig) -> WriteBuffer {
        let c = &cfg.controller;
        let cap = c.buffer_pages(cfg.geometry.page_size) as u32;
        let lp = cfg.geometry.logical_pages as usize;
        WriteBuffer {
            cap,
            mark: (cap as f64 * c.watermark) as u32,
            policy: c.drain,
            held: vec![0; lp],
            placement: if cfg.fdp.is_on() {
                vec![0; lp]
            } else {
                Vec::new()
            },
            durable: vec![0; lp],
            fifo: VecDeque::new(),
            newest_first: c.flush == FlushMode::Reorder,
            max_age_ns: c.max_age_ns,
            live: 0,
            draining: BinaryHeap::new(),
            draining_pages: 0,
        }
    }

    /// Frees the slots of drained pages programmed by `t`.
    fn release(&mut self, t: SimTime) {
        while let Some(&Reverse((at, n))) = self.draining.peek() {
            if at > t.0 {
                break;
            }
            self.draining.pop();
            self.draining_pages -= n;
        }
    }

    /// Pages of `req` not buffered yet (each needs a slot).
    fn new_pages(&self, req: &Request) -> u32 {
        req.lpns().filter(|l| self.held[l.idx()] == 0).count() as u32
    }

    /// Drops stale entries from the FIFO's front; returns the oldest run of buffered pages of
    /// one host write with consecutive LPNs, as `(first lpn, pages, stamp)`, and when it was
    /// acknowledged.
    fn oldest_run(&mut self) -> Option<((u32, u32, u32), u64)> {
        while let Some(&(lpn, stamp, _)) = self.fifo.front() {
            if self.held[lpn as usize] == stamp {
                break;
            }
            self.fifo.pop_front();
        }
        let &(first, stamp, at) = self.fifo.front()?;
        let mut n = 1u32;
        while let Some(&(l, s, _)) = self.fifo.get(n as usize) {
            if l != first.wrapping_add(n) || s != stamp || self.held[l as usize] != s {
                break;
            }
            n += 1;
        }
        Some(((first, n, stamp), at))
    }

    /// As [`WriteBuffer::oldest_run`] from the FIFO's back: the newest run (`flush=reorder`).
    fn newest_run(&mut self) -> Option<(u32, u32, u32)> {
        while let Some(&(lpn, stamp, _)) = self.fifo.back() {
            if self.held[lpn as usize] == stamp {
                break;
            }
            self.fifo.pop_back();
        }
        let &(last, stamp, _) = self.fifo.back()?;
        let len = self.fifo.len();
        let mut n = 1u32;
        while let Some(&(l, s, _)) = len
            .checked_sub(n as usize + 1)
            .and_then(|i| self.fifo.get(i))
        {
            if l.wrapping_add(n) != last || s != stamp || self.held[l as usize] != s {
                break;
            }
            n += 1;
        }
        Some((last + 1 - n, n, stamp))
    }

    /// Drops the FIFO's stale entries once they outnumber the buffered pages (a workload that
    /// rewrites the same pages would otherwise grow it without bound).
    fn compact(&mut self) {
        if self.fifo.len() > 2 * self.cap as usize + 1024 {
            let held = &self.held;
            self.fifo.retain(|&(l, s, _)| held[l as usize] == s);
        }
    }
}

/// The FTL acknowledged `req`, a write the buffer handed it: its versions are now the durable
/// ones, and the versions they supersede at the FTL (handed over earlier, possibly still in
/// the FTL's own buffer) are programmed or replaced there, so their staged data goes.
fn handed_over(b: &mut WriteBuffer, dev: &mut Device, req: &Request) {
    for l in req.lpns() {
        let before = std::mem::replace(&mut b.durable[l.idx()], req.stamp);
        if let (Some(store), true) = (dev.payloads_mut(), before != 0) {
            store.discard(l, before);
        }
    }
}

/// Drops the buffered versions of `req`'s pages, which the FTL has just superseded (a write
/// larger than the buffer, a trim), with their staged data.
fn drop_held(b: &mut WriteBuffer, dev: &mut Device, req: &Request) {
    for l in req.lpns() {
        let stamp = std::mem::take(&mut b.held[l.idx()]);
        if stamp != 0 {
            b.live -= 1;
            if let Some(store) = dev.payloads_mut() {
                store.discard(l, stamp);
            }
        }
    }
}

/// The controller around an FTL.
#[derive(Clone)]
pub struct Controller {
    inner: Box<dyn Ftl>,
    overhead_ns: u64,
    /// What a FLUSH does.
    flush: FlushMode,
    buf: Option<WriteBuffer>,
    counters: ControllerCounters,
    /// The FTL's counters plus the buffer's read hits (lookups that needed no flash read).
    stats: FtlStats,
}

impl Controller {
    /// `inner` behind the controller `cfg` describes (which must turn a part on).
    pub fn new(inner: Box<dyn Ftl>, cfg: &DeviceConfig) -> Controller {
        let c: &Config = &cfg.controller;
        let mut ctl = Controller {
            inner,
            overhead_ns: c.cmd_overhead_ns,
            flush: c.flush,
            buf: (c.write_buffer > 0).then(|| WriteBuffer::new(cfg)),
            counters: ControllerCounters::default(),
            stats: FtlStats::default(),
        };
        ctl.sync_stats();
        ctl
    }

    /// A controller around `inner` just recovered from flash after a power cut, at `t`: the
    /// buffer is empty (it was DRAM), each LPN's durable version is the one on flash, and the
    /// pages a power-loss-protected buffer dumped ([`Device::take_capacitor_dump`]) are
    /// written to the FTL again, oldest first, but for those recovery found a newer version
    /// of on flash. Returns when the last of those completes.
    ///
    /// A dumped version is the newest acknowledged one of its LPN, but the request the cut
    /// struck in (a write larger than the buffer, which goes around it, or a trim: either
    /// drops the buffered versions only once the FTL has acknowledged it) may have programmed
    /// a newer version, or a trim record, before the cut. That request may leave its version;
    /// writing the dumped one back would hide it only until the next cut, whose scan orders
    /// versions by stamp and brings the newer one back: a page changing with no write.
    pub fn recovered(
        inner: Box<dyn Ftl>,
        cfg: &DeviceConfig,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(Controller, SimTime), FtlError> {
        let mut ctl = Controller::new(inner, cfg);
        // The trim records recovery kept (the newest word on some LPN), as `(first LPN, end,
        // stamp)`.
        let mut trims = Vec::new();
        if let Some(b) = ctl.buf.as_mut() {
            for ppa in (0..dev.geo().pages() as u32).map(Ppa) {
                let Some(oob) = dev.peek_oob(ppa).filter(|_| dev.is_valid(ppa)) else {
                    continue;
                };
                if let Some(d) = oob.lpn().and_then(|l| b.durable.get_mut(l.idx())) {
                    *d = oob.stamp;
                } else if let Some(r) = dev.record(ppa).filter(|_| oob.is_record()) {
                    let range = r.range();
                    trims.push((range.start, range.end, oob.stamp));
                }
            }
        }
        let durable = ctl.buf.as_ref().map(|b| &b.durable);
        let newer_on_flash = |lpn: Lpn, stamp: u32| {
            durable.is_some_and(|d| d[lpn.idx()] > stamp)
                || trims
                    .iter()
                    .any(|&(a, e, s)| s > stamp && (a..e).contains(&lpn.0))
        };
        let dump = dev.take_capacitor_dump(|lpn, stamp| !newer_on_flash(lpn, stamp));
        let mut done = t;
        for (lpn, stamp, placement) in dump {
            let req = Request::new(Op::Write, lpn.0, 1, t.0, stamp).placed(placement);
            done = done.max(ctl.inner.submit(dev, &req, &mut NullSink)?);
            if let Some(b) = ctl.buf.as_mut() {
                handed_over(b, dev, &req);
            }
        }
        ctl.sync_stats();
        Ok((ctl, done))
    }

    fn sync_stats(&mut self) {
        self.stats = self.inner.stats().clone();
        self.stats.lookups[0] += self.counters.buffer_read_hits;
    }

    /// Hands the oldest run of buffered pages (the newest with `flush=reorder`) to the FTL at
    /// `t`; returns its completion, or `None` when the buffer is empty. The pages leave the
    /// buffer only once the FTL acknowledged them: a power cut inside leaves them buffered
    /// (unflushed).
    fn drain_run(&mut self, dev: &mut Device, t: SimTime) -> Result<Option<SimTime>, FtlError> {
        let b = self.buf.as_mut().expect("a write buffer");
        let newest = b.newest_first;
        let run = match newest {
            true => b.newest_run(),
            false => b.oldest_run().map(|r| r.0),
        };
        let Some((first, n, stamp)) = run else {
            return Ok(None);
        };
        self.hand_over(dev, t, (first, n, stamp), newest).map(Some)
    }

    /// Hands buffered run `(first, n, stamp)` at the FIFO's front (its back if `from_back`)
    /// to the FTL at `t`; returns its completion.
    fn hand_over(
        &mut self,
        dev: &mut Device,
        t: SimTime,
        (first, n, stamp): (u32, u32, u32),
        from_back: bool,
    ) -> Result<SimTime, FtlError> {
        let b = self.buf.as_mut().expect("a write buffer");
        let placement = b.placement.get(first as usize).copied().unwrap_or(0);
        let req = Request::new(Op::Write, first, n, t.0, stamp).placed(placement);
        let done = self.inner.submit(dev, &req, &mut NullSink)?;
        let b = self.buf.as_mut().expect("a write buffer");
        for l in first..first + n {
            b.held[l as usize] = 0;
            match from_back {
                true => b.fifo.pop_back(),
                false => b.fifo.pop_front(),
            };
        }
        handed_over(b, dev, &req);
        b.live -= n;
        b.draining.push(Reverse((done.0, n)));
        b.draining_pages += n;
        self.counters.drained_pages += n as u64;
        Ok(done)
    }

    /// Drains every buffered page at `t`; returns when the last drained program (of these and
    /// of earlier drains) completes.
    fn drain_all(&mut self, dev: &mut Device, t: SimTime) -> Result<SimTime, FtlError> {
        while self.drain_run(dev, t)?.is_some() {}
        let b = self.buf.as_ref().expect("a write buffer");
        Ok(b.draining
            .iter()
            .map(|r| SimTime(r.0 .0))
            .fold(t, SimTime::max))
    }

    fn read(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let b = self.buf.as_ref().expect("a write buffer");
        if b.live == 0 {
            return self.inner.submit(dev, req, sink);
        }
        let mut done = req.arrival;
        // The run of pages not buffered, read from the FTL as one request when it ends.
        let mut run: Option<(u32, u32)> = None;
        for lpn in req.lpns() {
            let stamp = self.buf.as_ref().expect("a write buffer").held[lpn.idx()];
            if stamp == 0 {
                run = Some(run.map_or((lpn.0, 1), |(f, n)| (f, n + 1)));
                continue;
            }
            if let Some((f, n)) = run.take() {
                let r = Request::new(Op::Read, f, n, req.arrival.0, 0);
                done = done.max(self.inner.submit(dev, &r, sink)?);
            }
            self.counters.buffer_read_hits += 1;
            sink.deliver(dev, lpn, Served::Buffer { stamp });
        }
        if let Some((f, n)) = run {
            let r = Request::new(Op::Read, f, n, req.arrival.0, 0);
            done = done.max(self.inner.submit(dev, &r, sink)?);
        }
        Ok(done)
    }

    fn write(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        if req.stamp == 0 {
            return Err(FtlError::Invariant(
                "controller: a write without a stamp cannot be buffered".into(),
            ));
        }
        let t = req.arrival;
        let b = self.buf.as_mut().expect("a write buffer");
        b.release(t);
        if req.pages > b.cap {
            // Larger than the buffer: straight to the FTL. Once it has acknowledged the write,
            // the versions the buffer held of those pages are stale (until then a power cut
            // may leave them the newest acknowledged ones).
            let done = self.inner.submit(dev, req, &mut NullSink)?;
            let b = self.buf.as_mut().expect("a write buffer");
            drop_held(b, dev, req);
            handed_over(b, dev, req);
            self.counters.bypassed_pages += req.pages as u64;
            return Ok(done);
        }
        // Room: drain the oldest pages until the buffered ones and the write fit, then wait
        // for as many drained programs (the earliest first) as the write needs slots.
        let idle = b.policy == DrainPolicy::Idle && dev.drained_at() <= t;
        loop {
            let b = self.buf.as_ref().expect("a write buffer");
            if b.live == 0 || b.live + b.new_pages(req) <= b.cap {
                break;
            }
            self.drain_run(dev, t)?;
        }
        let b = self.buf.as_mut().expect("a write buffer");
        let new = b.new_pages(req);
        let mut start = t;
        while b.live + b.draining_pages + new > b.cap {
            let Reverse((at, n)) = b.draining.pop().expect("drained pages hold the rest");
            start = start.max(SimTime(at));
            b.draining_pages -= n;
        }
        if start > t {
            self.counters.stalls += 1;
            self.counters.stall_ns += start.0 - t.0;
        }
        for l in req.lpns() {
            match b.held[l.idx()] {
                0 => b.live += 1,
                replaced => {
                    self.counters.buffer_absorbed += 1;
                    if let Some(store) = dev.payloads_mut() {
                        store.discard(l, replaced);
                    }
                }
            }
            b.held[l.idx()] = req.stamp;
            if let Some(p) = b.placement.get_mut(l.idx()) {
                *p = req.placement;
            }
            b.fifo.push_back((l.0, req.stamp, t.0));
        }
        self.counters.buffered_pages += req.pages as u64;
        b.compact();
        match b.policy {
            DrainPolicy::Watermark => {
                let mark = b.mark;
                while self.buf.as_ref().expect("a write buffer").live > mark {
                    self.drain_run(dev, t)?;
                }
            }
            DrainPolicy::Idle if idle => {
                self.drain_all(dev, t)?;
            }
            DrainPolicy::Idle | DrainPolicy::Full => {}
        }
        Ok(start)
    }

    fn trim(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        // The buffered versions go once the FTL has acknowledged the trim (before, a power cut
        // may leave them the newest acknowledged ones).
        let done = self.inner.submit(dev, req, &mut NullSink)?;
        let b = self.buf.as_mut().expect("a write buffer");
        drop_held(b, dev, req);
        req.lpns().for_each(|l| b.durable[l.idx()] = 0);
        Ok(done)
    }

    fn flush(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        self.counters.flushes += 1;
        if !self.flush.is_honor() {
            // Acknowledged at once, nothing made durable (docs/power.md "Misbehaving drives").
            return Ok(req.arrival);
        }
        let drained = match self.buf {
            Some(_) => self.drain_all(dev, req.arrival)?,
            None => req.arrival,
        };
        let flushed = self.inner.submit(dev, req, &mut NullSink)?;
        Ok(drained.max(flushed))
    }

    /// Hands the pages acknowledged `write_buffer_max_age_ns` or longer before `t` to the FTL
    /// (oldest first, whatever the drain order).
    fn drain_aged(&mut self, dev: &mut Device, t: SimTime) -> Result<(), FtlError> {
        loop {
            let b = self.buf.as_mut().expect("a write buffer");
            match b.oldest_run() {
                Some((run, at)) if at.saturating_add(b.max_age_ns) <= t.0 => {
                    self.hand_over(dev, t, run, false)?;
                }
                _ => return Ok(()),
            }
        }
    }
}

impl Ftl for Controller {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let req = Request {
            arrival: SimTime(req.arrival.0 + self.overhead_ns),
            ..*req
        };
        let lp = dev.geo().logical_pages;
        if req.op != Op::Flush && req.lpn.0 as u64 + req.pages as u64 > lp {
            return Err(FtlError::OutOfRange {
                lpn: req.lpn,
                len: req.pages,
                logical_pages: lp,
            });
        }
        let stalled = self.counters.stall_ns;
        if let Some(b) = self.buf.as_mut().filter(|b| b.max_age_ns > 0) {
            b.release(req.arrival);
            self.drain_aged(dev, req.arrival)?;
        }
        let done = match (self.buf.is_some(), req.op) {
            (_, Op::Flush) => self.flush(dev, &req),
            (false, _) => self.inner.submit(dev, &req, sink),
            (true, Op::Read) => self.read(dev, &req, sink),
            (true, Op::Write) => self.write(dev, &req),
            (true, Op::Trim) => self.trim(dev, &req),
        };
        self.sync_stats();
        let done = done?;
        // The data crosses the host link: a write's before it is taken (its completion waits
        // for it; the FTL's work was issued at the arrival), a read's once it is served.
        let bytes = dev.geo().page_size as u64 * req.pages as u64;
        let (done, transfer, waited) = match req.op {
            Op::Write => {
                let landed = dev.host_transfer(req.arrival, bytes);
                // Beyond its transfer, a buffered write waited for room (controller time); a
                // write the FTL took (no wait counted) for the FTL (flash time).
                let waited = self.counters.stall_ns - stalled;
                let after = done.since(landed);
                (
                    done.max(landed),
                    landed.since(req.arrival),
                    after.min(waited),
                )
            }
            Op::Read => {
                let sent = dev.host_transfer(done, bytes);
                (sent, sent.since(done), 0)
            }
            Op::Trim | Op::Flush => (done, 0, 0),
        };
        self.counters.controller_ns += self.overhead_ns + waited;
        self.counters.transfer_ns += transfer;
        Ok(done)
    }

    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        let r = self
            .inner
            .background(dev, SimTime(now.0 + self.overhead_ns));
        self.sync_stats();
        r
    }

    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        let r = match self.buf.as_ref() {
            Some(b) if b.live > 0 => self.drain_run(dev, now),
            _ => self.inner.idle(dev, now),
        };
        self.sync_stats();
        r
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        self.inner.prefetch(dev, op, lpn, when)
    }

    fn unflushed(&self, dev: &Device, out: &mut Vec<Unflushed>) {
        let start = out.len();
        self.inner.unflushed(dev, out);
        let Some(b) = self.buf.as_ref() else {
            return;
        };
        // One entry per LPN: where the FTL buffers an older version too, the LPN may fall
        // back to what the FTL had durable.
        out[start..].sort_unstable_by_key(|u| u.lpn.0);
        let from_ftl = out.len();
        for &(lpn, stamp, _) in &b.fifo {
            if b.held[lpn as usize] != stamp {
                continue;
            }
            let placement = b.placement.get(lpn as usize).copied().unwrap_or(0);
            match out[start..from_ftl].binary_search_by_key(&lpn, |u| u.lpn.0) {
                Ok(i) => {
                    out[start + i].acked = stamp;
                    out[start + i].placement = placement;
                }
                Err(_) => out.push(Unflushed {
                    lpn: Lpn(lpn),
                    durable: b.durable[lpn as usize],
                    acked: stamp,
                    placement,
                }),
            }
        }
    }

    /// The buffer goes to the device's power-loss area, and so does the buffer of an FTL
    /// beneath that keeps one (LeaFTL's, also in the controller's DRAM): a cut may have struck
    /// in the middle of the FTL's work, so nothing is handed to it now, and programming its
    /// buffer through its allocator on capacitor energy could leave recovery no free line.
    /// [`Controller::recovered`] writes both to the recovered FTL. Without a write buffer the
    /// FTL flushes its own.
    fn flush_on_power_loss(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        let Some(b) = self.buf.as_ref() else {
            return self.inner.flush_on_power_loss(dev, now);
        };
        let mut below = Vec::new();
        self.inner.unflushed(dev, &mut below);
        // The FTL's versions first (the buffer's are newer where it holds the LPN too).
        let placement = |l: u32| b.placement.get(l as usize).copied().unwrap_or(0);
        let pages: Vec<(Lpn, u32, u16)> = below
            .iter()
            .filter(|u| b.held[u.lpn.idx()] == 0)
            .map(|u| (u.lpn, u.acked, u.placement))
            .chain(
                b.fifo
                    .iter()
                    .filter(|&&(l, s, _)| b.held[l as usize] == s)
                    .map(|&(l, s, _)| (Lpn(l), s, placement(l))),
            )
            .collect();
        dev.dump_on_capacitors(&pages);
        Ok(())
    }

    fn power_cut_refusal(&self) -> Option<String> {
        self.inner.power_cut_refusal()
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.inner.reset_stats();
        self.counters = ControllerCounters::default();
        self.sync_stats();
    }

    fn dram(&self) -> DramUsage {
        self.inner.dram()
    }

    fn dram_total(&self) -> u64 {
        self.inner.dram_total()
    }

    fn params(&self) -> serde_json::Value {
        self.inner.params()
    }

    fn extra_counters(&self) -> serde_json::Value {
        self.inner.extra_counters()
    }

    fn controller(&self) -> Option<ControllerCounters> {
        Some(self.counters)
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        self.inner.check_invariants(dev)?;
        let Some(b) = self.buf.as_ref() else {
            return Ok(());
        };
        let held = b.held.iter().filter(|&&s| s != 0).count();
        let listed = b
            .fifo
            .iter()
            .filter(|&&(l, s, _)| b.held[l as usize] == s)
            .count();
        if held != b.live as usize || listed != held {
            return Err(format!(
                "write buffer: {} pages counted, {held} held, {listed} listed",
                b.live
            ));
        }
        if b.live + b.draining_pages > b.cap {
            return Err(format!(
                "write buffer: {} held + {} draining > {} pages",
                b.live, b.draining_pages, b.cap
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
