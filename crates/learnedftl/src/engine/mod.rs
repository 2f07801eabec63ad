//! The engine: owns simulated time, turns workloads into host requests handed to the FTL in
//! non-decreasing arrival order, checks reads against the oracle, and collects statistics per
//! phase (SPEC §2, §4).

pub mod bytes;
mod oracle;
mod power;
mod shadow;

pub use oracle::Oracle;
pub use power::PowerCutPlan;

use crate::addr::{Lpn, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Device, PowerCut};
use crate::error::{ConfigError, DeviceError, FtlError};
use crate::ftl::{self, Ftl, ReadSink, Served};
use crate::params::Params;
use crate::request::{Op, Request, Upcoming};
use crate::stats::{Collector, Metrics, VerifySummary};
use crate::workload::{HostIo, JobGen, JobSpec, Settle};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use thiserror::Error;

/// An engine failure.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The FTL failed (an FTL bug, or the device is full).
    #[error("at simulated time {at} ns, {op:?} of LPN {lpn}+{pages}: {source}")]
    Ftl {
        /// The request's operation.
        op: Op,
        /// Its first page.
        lpn: u32,
        /// Its pages.
        pages: u32,
        /// Its arrival.
        at: u64,
        /// The failure.
        source: FtlError,
    },
    /// The FTL failed, or broke an invariant, while the device settled.
    #[error("settling from simulated time {at} ns: {message}")]
    Settle {
        /// When the settle phase started.
        at: u64,
        /// What failed.
        message: String,
    },
    /// A request that cannot move host data ([`Simulator::submit_data`]).
    #[error("payload: {0}")]
    Payload(String),
    /// A read returned the wrong version (fail-fast verification).
    #[error("verification failed: {0}")]
    Verify(String),
    /// An FTL invariant check failed after a request.
    #[error("after request {request} ({op:?} of LPN {lpn}+{pages}): invariant broken: {message}")]
    Invariant {
        /// Requests completed so far in the phase.
        request: u64,
        /// The request's operation.
        op: Op,
        /// Its first page.
        lpn: u32,
        /// Its pages.
        pages: u32,
        /// What broke.
        message: String,
    },
    /// Recovery after a power cut failed, or its check found lost data.
    #[error("recovery after the power cut at simulated time {at} ns: {message}")]
    Recover {
        /// When the cut struck.
        at: u64,
        /// What failed.
        message: String,
    },
    /// Power cuts cannot be injected into this run.
    #[error("power cuts: {0}")]
    PowerCuts(String),
    /// A request outside the logical space.
    #[error(
        "request at byte {offset} (+{len}) lies beyond the logical space of {logical_bytes} B"
    )]
    OutOfRange {
        /// Byte offset.
        offset: u64,
        /// Length.
        len: u64,
        /// Logical bytes.
        logical_bytes: u64,
    },
    /// Requests out of arrival order.
    #[error("request arrives at {arrival} ns, before the previous one at {previous} ns")]
    OutOfOrder {
        /// This arrival.
        arrival: u64,
        /// The previous arrival.
        previous: u64,
    },
    /// A job that cannot run on this device.
    #[error("job {}: {message}", crate::error::quote(.job))]
    Job {
        /// Job name.
        job: String,
        /// Why.
        message: String,
    },
    /// The workload source failed (a bad trace line, say).
    #[error("{0}")]
    Input(String),
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// How reads are checked.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Not at all (no oracle memory either).
    Off,
    /// Every read checked; failures counted and reported.
    Count,
    /// Every read checked; the first failure stops the run with an error.
    FailFast,
}

/// Engine options.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SimOptions {
    /// Read verification.
    pub verify: Verify,
    /// Run the FTL's invariant check after every request (slow: for tests).
    pub check_invariants: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            verify: Verify::Off,
            check_invariants: false,
        }
    }
}

impl SimOptions {
    /// What tests use: fail-fast oracle and invariant checks after every request.
    pub fn checked() -> SimOptions {
        SimOptions {
            verify: Verify::FailFast,
            check_invariants: true,
        }
    }
}

/// Progress of a phase, for a progress bar.
pub trait Progress {
    /// A phase starts; `total` requests if known.
    fn start(&mut self, phase: &str, total: Option<u64>);
    /// `n` more requests completed.
    fn advance(&mut self, n: u64);
    /// The phase ended.
    fn finish(&mut self);
}

/// No progress display.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&mut self, _: &str, _: Option<u64>) {}
    fn advance(&mut self, _: u64) {}
    fn finish(&mut self) {}
}

/// Where the engine sends the pages a read returns: counts unmapped reads and forwards every
/// page to the oracle when reads are verified.
struct Delivery<'a> {
    oracle: Option<&'a mut Oracle>,
    unmapped: u64,
    /// Every page served, when the request moves data.
    served: Option<&'a mut Vec<(Lpn, Served)>>,
}

impl ReadSink for Delivery<'_> {
    #[inline]
    fn deliver(&mut self, lpn: Lpn, from: Served) {
        self.unmapped += (from == Served::Unmapped) as u64;
        if let Some(s) = self.served.as_deref_mut() {
            s.push((lpn, from));
        }
        if let Some(o) = self.oracle.as_deref_mut() {
            o.deliver(lpn, from);
        }
    }
}

/// Host data moved by a request ([`Simulator::submit_data`]).
#[derive(Debug)]
pub enum Payload<'a> {
    /// None (simulation only).
    None,
    /// A write's data, as long as the request.
    Write(&'a [u8]),
    /// Where a read's data goes, as long as the request.
    Read(&'a mut [u8]),
}

/// Reports progress in batches, so a progress bar costs nothing per request.
struct Ticker<'a> {
    progress: &'a mut dyn Progress,
    since: u64,
}

impl<'a> Ticker<'a> {
    /// How many requests between progress updates.
    const EVERY: u64 = 4096;

    fn start(progress: &'a mut dyn Progress, phase: &str, total: Option<u64>) -> Self {
        progress.start(phase, total);
        Ticker { progress, since: 0 }
    }

    #[inline]
    fn tick(&mut self) {
        self.since += 1;
        if self.since == Self::EVERY {
            self.progress.advance(self.since);
            self.since = 0;
        }
    }

    fn finish(self) {
        self.progress.advance(self.since);
        self.progress.finish();
    }
}

/// A device, an FTL on it, the oracle, and simulated time. A clone is a snapshot: it goes on
/// exactly as the original would (every random choice lives in the workload, seeded per phase).
#[derive(Clone)]
pub struct Simulator {
    dev: Device,
    ftl: Box<dyn Ftl>,
    oracle: Option<Oracle>,
    opts: SimOptions,
    stamp: u32,
    clock: SimTime,
    last_arrival: SimTime,
    phase: Collector,
    requests: u64,
    /// Pages served by the current request, when it moves data (reused).
    served: Vec<(Lpn, Served)>,
    /// The FTL's name and parameters, to rebuild it after a power cut.
    recipe: Option<(String, Params)>,
    /// Planned power cuts, and host requests served since they were planned.
    cuts: Option<(PowerCutPlan, u64)>,
    /// Host page writes since the last mapping checkpoint (`checkpoint_every`).
    ckpt_due: u64,
    /// Power cuts recovered from so far.
    recoveries: u64,
    /// Whether the latest cut struck after every request was acknowledged (in the background
    /// work after one, or between two) rather than in a request's service.
    cut_after_ack: bool,
}

impl Simulator {
    /// Builds the FTL `ftl_name` on a fresh device. FTL parameters are taken from `params`;
    /// keys nobody understood are an error.
    pub fn new(
        dev_cfg: &DeviceConfig,
        ftl_name: &str,
        mut params: Params,
        opts: SimOptions,
    ) -> Result<Simulator, ConfigError> {
        let recipe = (ftl_name.to_string(), params.clone());
        let ftl = ftl::build(ftl_name, dev_cfg, &mut params)?;
        params.finish()?;
        let mut s = Self::with_ftl(dev_cfg, ftl, opts);
        s.recipe = Some(recipe);
        Ok(s)
    }

    /// Builds the FTL `ftl_name` on a fresh device from a copy of `params`, leaving keys it
    /// does not take alone (`compare` passes one set of parameters to several FTLs, which
    /// [`crate::run::Experiment::check_params`] checks); it can recover from power cuts.
    pub fn by_name(
        dev_cfg: &DeviceConfig,
        ftl_name: &str,
        params: &Params,
        opts: SimOptions,
    ) -> Result<Simulator, ConfigError> {
        let ftl = ftl::build(ftl_name, dev_cfg, &mut params.clone())?;
        let mut s = Self::with_ftl(dev_cfg, ftl, opts);
        s.recipe = Some((ftl_name.to_string(), params.clone()));
        Ok(s)
    }

    /// Runs a given FTL on a fresh device (it cannot recover from power cuts: nothing says how
    /// to build it again).
    pub fn with_ftl(dev_cfg: &DeviceConfig, ftl: Box<dyn Ftl>, opts: SimOptions) -> Simulator {
        let lp = dev_cfg.geometry.logical_pages;
        Simulator {
            dev: Device::new(dev_cfg),
            ftl,
            oracle: (opts.verify != Verify::Off).then(|| Oracle::new(lp)),
            opts,
            stamp: 0,
            clock: SimTime::ZERO,
            last_arrival: SimTime::ZERO,
            phase: Collector::new("initial", SimTime::ZERO),
            requests: 0,
            served: Vec::new(),
            recipe: None,
            cuts: None,
            ckpt_due: 0,
            recoveries: 0,
            cut_after_ack: false,
        }
    }

    /// Why power cuts cannot strike this simulator, if they cannot: its FTL is not in
    /// [`ftl::RECOVERABLE`], it was not built by FTL name, or its parameters persist too
    /// little ([`Ftl::power_cut_refusal`]).
    pub fn power_cut_refusal(&self) -> Option<String> {
        let name = self.ftl.name();
        if !ftl::RECOVERABLE.contains(&name) {
            Some(format!(
                "{name} cannot recover from a power cut yet (recoverable: {})",
                ftl::RECOVERABLE.join(", ")
            ))
        } else if self.recipe.is_none() {
            Some("the simulator was not built by FTL name (Simulator::new)".into())
        } else {
            self.ftl.power_cut_refusal()
        }
    }

    /// Injects power cuts from now on (docs/power.md): one in every window of `plan.every`
    /// host requests, each followed by a recovery of the FTL from flash and, when reads are
    /// verified, a check of every LPN. Refused for FTLs that cannot recover yet.
    pub fn plan_power_cuts(&mut self, plan: PowerCutPlan) -> Result<(), EngineError> {
        if plan.every == 0 {
            return Err(EngineError::PowerCuts(
                "a power cut every 0 requests (need at least 1)".into(),
            ));
        }
        if let Some(why) = self.power_cut_refusal() {
            return Err(EngineError::PowerCuts(why));
        }
        self.cuts = Some((plan, 0));
        self.phase.track_power_cuts();
        Ok(())
    }

    /// Arms one power cut (deterministic tests): it strikes inside whichever request reaches it
    /// ([`PowerCut`]), and the engine recovers as for a planned cut. Cuts are injected into
    /// requests only: one still armed when the device settles makes the settle phase fail.
    pub fn arm_power_cut(&mut self, cut: PowerCut) -> Result<(), EngineError> {
        if let Some(why) = self.power_cut_refusal() {
            return Err(EngineError::PowerCuts(why));
        }
        self.phase.track_power_cuts();
        self.dev.arm_power_cut(cut);
        Ok(())
    }

    /// Cuts the power now, between two requests (none in flight: every request so far was
    /// acknowledged), and recovers the FTL from flash at `t` (no earlier than the latest
    /// arrival) as for a planned cut: checked when reads are verified, counted in the phase's
    /// `power_cuts`. Returns when recovery completed. Refused, with the reason, where
    /// [`Simulator::power_cut_refusal`] says so; the simulator is then unchanged.
    pub fn cut_power_now(&mut self, t: SimTime) -> Result<SimTime, EngineError> {
        if let Some(why) = self.power_cut_refusal() {
            return Err(EngineError::PowerCuts(why));
        }
        self.phase.track_power_cuts();
        self.dev.cut_power();
        self.recover(None, t.max(self.last_arrival))
    }

    /// Reports the `power_cuts` block in the current phase even before any cut (a server
    /// that cuts on demand reports zero cuts rather than no block).
    pub fn track_power_cuts(&mut self) {
        self.phase.track_power_cuts();
    }

    /// Changes verification and invariant checking from now on (the oracle keeps tracking
    /// writes only while verification is on from the start).
    pub fn set_check_invariants(&mut self, on: bool) {
        self.opts.check_invariants = on;
    }

    /// The device.
    pub fn device(&self) -> &Device {
        &self.dev
    }
    /// The device, mutably (to stage payloads).
    pub fn device_mut(&mut self) -> &mut Device {
        &mut self.dev
    }
    /// The FTL.
    pub fn ftl(&self) -> &dyn Ftl {
        self.ftl.as_ref()
    }
    /// The oracle, if reads are verified.
    pub fn oracle(&self) -> Option<&Oracle> {
        self.oracle.as_ref()
    }
    /// Where the next phase starts: the latest completion so far.
    pub fn clock(&self) -> SimTime {
        self.clock.max(self.phase.end())
    }

    /// Starts a phase: counters reset, device and mapping state stay. The phase starts once the
    /// previous one's requests have completed and the device is idle (the background work they
    /// left, such as GC, is done), as between two fio runs, so leftover internal work of a
    /// warm-up never counts against the measured phase.
    pub fn begin_phase(&mut self, name: &str) {
        self.clock = self.clock().max(self.dev.drained_at());
        self.last_arrival = self.clock;
        self.dev.reset_counters();
        self.ftl.reset_stats();
        if let Some(o) = self.oracle.as_mut() {
            o.reset_counts();
        }
        self.phase = Collector::new(name, self.clock);
        if self.cuts.is_some() {
            self.phase.track_power_cuts();
        }
        self.requests = 0;
    }

    /// Ends the phase and returns its metrics.
    pub fn end_phase(&mut self) -> Metrics {
        let m = self.live_metrics();
        self.clock = self.clock.max(self.phase.end());
        self.phase = Collector::new("idle", self.clock);
        m
    }

    /// The current phase's metrics so far; the phase goes on (live statistics).
    pub fn live_metrics(&self) -> Metrics {
        let verify = match &self.oracle {
            Some(o) => VerifySummary {
                enabled: true,
                checked: o.checked(),
                failures: o.failures(),
                bytes: None,
            },
            None => VerifySummary::default(),
        };
        self.phase.metrics(&self.dev, self.ftl.as_ref(), verify)
    }

    /// The stamp of the latest write or trim served (0 before any).
    pub fn last_stamp(&self) -> u32 {
        self.stamp
    }

    /// Power cuts recovered from since the simulator was built (planned, armed or on
    /// demand).
    pub fn recoveries(&self) -> u64 {
        self.recoveries
    }

    /// Whether the latest power cut struck after every request served so far was
    /// acknowledged — in the background work after one, or between two — rather than in a
    /// request's service (which then completed only after the recovery: a read was served
    /// again from what recovery rebuilt). False before any cut.
    pub fn last_cut_after_ack(&self) -> bool {
        self.cut_after_ack
    }

    fn next_stamp(&mut self) -> u32 {
        // Stamps identify versions; 0 means "never written". After 2^32 - 1 write requests they
        // wrap, which could only confuse the oracle for a page left unwritten for that long.
        self.stamp = self.stamp.checked_add(1).unwrap_or(1);
        self.stamp
    }

    /// Serves one host I/O arriving at `io.arrival`; returns its completion time. Reads are
    /// checked against the oracle; background work runs after the request.
    pub fn submit(&mut self, io: HostIo) -> Result<SimTime, EngineError> {
        self.submit_data(io, Payload::None)
    }

    /// [`Simulator::submit`] moving host data (emulator mode; the device must keep payloads):
    /// a write's data is staged page by page before the FTL sees it, so it lands at whatever
    /// PPA the FTL programs; a read's pages are copied from where the FTL served them (flash
    /// page, write buffer, or zeroes when unmapped) before background work can move them.
    /// The request must cover whole pages and the buffer must be as long as the request.
    pub fn submit_data(&mut self, io: HostIo, data: Payload<'_>) -> Result<SimTime, EngineError> {
        let geo = self.dev.geo();
        let ps = geo.page_size as u64;
        let logical_bytes = geo.logical_bytes();
        if io.arrival < self.last_arrival {
            return Err(EngineError::OutOfOrder {
                arrival: io.arrival.0,
                previous: self.last_arrival.0,
            });
        }
        self.last_arrival = io.arrival;
        // Requests are served in arrival order and no FTL issues work before its request
        // arrived, so idle LUN time before this arrival can never be used again.
        self.dev.advance_floor(io.arrival);
        let (lpn, pages) = if io.op == Op::Flush {
            (0, 0)
        } else {
            let end = io
                .offset
                .checked_add(io.len)
                .filter(|&e| e <= logical_bytes && io.len > 0);
            let Some(end) = end else {
                return Err(EngineError::OutOfRange {
                    offset: io.offset,
                    len: io.len,
                    logical_bytes,
                });
            };
            let first = io.offset / ps;
            (first as u32, (end.div_ceil(ps) - first) as u32)
        };
        // Trims are stamped too: a recovery orders them against writes (docs/power.md).
        let stamp = if matches!(io.op, Op::Write | Op::Trim) {
            self.next_stamp()
        } else {
            0
        };
        let req = Request {
            op: io.op,
            lpn: Lpn(lpn),
            pages,
            arrival: io.arrival,
            stamp,
        };
        let moves_data = !matches!(data, Payload::None);
        if moves_data {
            self.check_payload(&io, &data)?;
        }
        if let Payload::Write(bytes) = data {
            let store = self.dev.payloads_mut().expect("checked: payloads kept");
            for (lpn, page) in req.lpns().zip(bytes.chunks(ps as usize)) {
                store.stage(lpn, stamp, page);
            }
        }
        let ftl_error = |source| EngineError::Ftl {
            op: io.op,
            lpn,
            pages,
            at: io.arrival.0,
            source,
        };
        let planned = self.cuts.as_mut().and_then(|(plan, served)| {
            *served += 1;
            plan.cut_for(*served - 1, pages)
        });
        if let Some(cut) = planned {
            self.dev.arm_power_cut(cut);
        }
        let (result, mut unmapped) = self.serve(&req, moves_data)?;
        let done = match result {
            Ok(done) => done,
            Err(e) if e.is_power_lost() => {
                // Not acknowledged: each of its pages may hold the old or the new version.
                let recovered = self.recover(Some(&req), io.arrival)?;
                if io.op != Op::Read {
                    self.requests += 1;
                    self.phase
                        .record(io.op, pages, io.len, io.arrival, recovered);
                    return Ok(recovered);
                }
                // The host sees the read fail and issues it again once the device is back: it
                // returns what recovery rebuilt, its latency including the recovery.
                let retry = Request {
                    arrival: recovered,
                    ..req
                };
                let (result, n) = self.serve(&retry, moves_data)?;
                unmapped = n;
                result.map_err(ftl_error)?
            }
            Err(e) => return Err(ftl_error(e)),
        };
        if let Payload::Read(buf) = data {
            self.copy_out(req.lpn, buf)
                .map_err(|e| EngineError::Payload(format!("reading back {lpn}+{pages}: {e}")))?;
        }
        if let Some(store) = self.dev.payloads_mut() {
            match io.op {
                // Acknowledged: the versions this write superseded are programmed or replaced.
                Op::Write => store.settle(),
                Op::Trim => req.lpns().for_each(|l| store.unstage(l)),
                _ => {}
            }
        }
        // Acknowledged: a cut in the background work after it leaves it durable.
        if let Some(o) = self.oracle.as_mut() {
            match io.op {
                Op::Write => req.lpns().for_each(|l| o.set(l, stamp)),
                Op::Trim => req.lpns().for_each(|l| o.set(l, 0)),
                _ => {}
            }
        }
        match self.ftl.background(&mut self.dev, io.arrival) {
            Err(e) if !e.is_power_lost() => return Err(ftl_error(e)),
            _ => {}
        }
        if io.op == Op::Write {
            self.checkpoint_if_due(pages, io.arrival)
                .map_err(|e| ftl_error(e.into()))?;
        }
        if planned.is_some() && self.dev.power_cut_armed() {
            // The cut's offset lay beyond this request's work: it strikes after it.
            self.dev.cut_power();
        }
        if self.dev.power_lost() {
            self.recover(None, io.arrival)?;
        }
        self.requests += 1;
        if self.opts.check_invariants {
            self.ftl
                .check_invariants(&self.dev)
                .map_err(|message| EngineError::Invariant {
                    request: self.requests,
                    op: io.op,
                    lpn,
                    pages,
                    message,
                })?;
        }
        self.phase.record(io.op, pages, io.len, io.arrival, done);
        self.phase.note_unmapped_reads(unmapped);
        self.phase.note_dram(self.ftl.dram_total());
        Ok(done)
    }

    /// Has the FTL serve `req`, its pages delivered to the oracle (when reads are verified) and,
    /// when the request moves data, to `self.served`; returns the FTL's result and how
    /// many pages it read unmapped. A wrong read under fail-fast verification is the error.
    fn serve(
        &mut self,
        req: &Request,
        moves_data: bool,
    ) -> Result<(Result<SimTime, FtlError>, u64), EngineError> {
        let failures_before = self.oracle.as_ref().map_or(0, |o| o.failures());
        self.served.clear();
        let mut sink = Delivery {
            oracle: self.oracle.as_mut(),
            unmapped: 0,
            served: moves_data.then_some(&mut self.served),
        };
        let result = self.ftl.submit(&mut self.dev, req, &mut sink);
        let unmapped = sink.unmapped;
        if let Some(o) = self.oracle.as_ref() {
            if self.opts.verify == Verify::FailFast && o.failures() > failures_before {
                return Err(EngineError::Verify(
                    o.messages().last().cloned().unwrap_or_default(),
                ));
            }
        }
        Ok((result, unmapped))
    }

    /// Counts `pages` host page writes towards the next mapping checkpoint and writes it at `t`
    /// when `checkpoint_every` of them have been written since the last (docs/power.md
    /// "Checkpoints"): the FTL's whole mapping DRAM, the list of live trim records (4 B each)
    /// and every block's write pointer (4 B each), in pages. A power cut during it is not an
    /// error: the caller recovers, from the previous checkpoint.
    fn checkpoint_if_due(&mut self, pages: u32, t: SimTime) -> Result<(), DeviceError> {
        let every = self.dev.config().checkpoint_every;
        if every == 0 || self.dev.power_lost() {
            return Ok(());
        }
        self.ckpt_due += pages as u64;
        if self.ckpt_due < every {
            return Ok(());
        }
        self.ckpt_due = 0;
        let geo = self.dev.geo();
        let bytes = self.ftl.dram_total() + 4 * self.dev.valid_records() + 4 * geo.blocks() as u64;
        match self.dev.checkpoint(bytes.div_ceil(geo.page_size as u64), t) {
            Err(e) if e != DeviceError::PowerLost => Err(e),
            _ => Ok(()),
        }
    }

    /// Checks that `io` can move `data`: payloads kept, whole pages, a buffer of its length.
    fn check_payload(&self, io: &HostIo, data: &Payload<'_>) -> Result<(), EngineError> {
        let ps = self.dev.geo().page_size as u64;
        let (len, op) = match data {
            Payload::None => return Ok(()),
            Payload::Write(b) => (b.len(), Op::Write),
            Payload::Read(b) => (b.len(), Op::Read),
        };
        let problem = if io.op != op {
            Some(format!("{op:?} data"))
        } else if self.dev.payloads().is_none() {
            Some("the device keeps no payloads (payloads=true)".to_string())
        } else if io.offset % ps != 0 || io.len % ps != 0 {
            Some(format!("not whole {ps}-byte pages"))
        } else if len as u64 != io.len {
            Some(format!("a buffer of {len} B"))
        } else {
            None
        };
        match problem {
            Some(p) => Err(EngineError::Payload(format!(
                "{:?} at byte {} (+{}): {p}",
                io.op, io.offset, io.len
            ))),
            None => Ok(()),
        }
    }

    /// Copies the pages a read from `first` was served (in `self.served`) into `buf`.
    fn copy_out(&self, first: Lpn, buf: &mut [u8]) -> std::io::Result<()> {
        let ps = self.dev.geo().page_size as usize;
        let store = self.dev.payloads().expect("checked: payloads kept");
        for &(lpn, from) in &self.served {
            let at = lpn.0.wrapping_sub(first.0) as usize * ps;
            let Some(dst) = buf.get_mut(at..at + ps) else {
                continue;
            };
            let found = match from {
                Served::Flash { ppa, .. } => store.read(ppa, dst)?,
                Served::Buffer { stamp } => match store.staged(lpn, stamp) {
                    Some(page) => {
                        dst.copy_from_slice(page);
                        true
                    }
                    None => false,
                },
                Served::Unmapped => false,
            };
            if !found {
                dst.fill(0);
            }
        }
        Ok(())
    }

    /// Passes a prefetch hint for the request `op` at byte `offset` to the FTL.
    #[inline]
    fn prefetch(&self, (op, offset): (Op, u64), when: Upcoming) {
        let lpn = Lpn((offset / self.dev.geo().page_size as u64) as u32);
        self.ftl.prefetch(&self.dev, op, lpn, when);
    }

    /// Runs closed-loop jobs as one phase: every clone's `iodepth` slots start at the phase
    /// start and each issues its next request when its previous one completes. `seed` seeds
    /// jobs that have no `randseed` of their own.
    pub fn run_jobs(
        &mut self,
        name: &str,
        jobs: &[JobSpec],
        seed: u64,
        progress: &mut dyn Progress,
    ) -> Result<Metrics, EngineError> {
        let logical = self.dev.geo().logical_bytes();
        for j in jobs {
            j.validate(logical).map_err(|message| EngineError::Job {
                job: j.name.clone(),
                message,
            })?;
        }
        // Sized once: the memory estimate is what is used, and a phase too large for the
        // machine is an error rather than an abort half-way through growing its tables.
        let state = JobsState::of(jobs);
        let mut gens: Vec<JobGen> = Vec::new();
        let mut heap: BinaryHeap<Slot> = BinaryHeap::new();
        // (Slots name their clone by a u32.)
        let reserved = state.clones <= 1 << 32
            && usize::try_from(state.slots).is_ok_and(|n| heap.try_reserve_exact(n).is_ok())
            && usize::try_from(state.clones).is_ok_and(|n| gens.try_reserve_exact(n).is_ok());
        if !reserved {
            let job = jobs.iter().max_by_key(|j| j.slots());
            return Err(EngineError::Job {
                job: job.map_or_else(String::new, |j| j.name.clone()),
                message: format!(
                    "cannot allocate the state of {} clones and numjobs x iodepth = {} slots \
                     (about {} MiB): lower numjobs or iodepth",
                    state.clones,
                    state.slots,
                    state.bytes() >> 20
                ),
            });
        }
        self.begin_phase(name);
        let start = self.clock;
        let mut total = Some(0u64);
        for (ji, j) in jobs.iter().enumerate() {
            for c in 0..j.numjobs {
                let s = j.seed.unwrap_or(seed);
                let g = JobGen::new(j, c, logical, mix(s, ji as u64, c as u64), start);
                total = total.zip(g.remaining()).map(|(a, b)| a + b);
                let gi = gens.len() as u32;
                gens.push(g);
                for _ in 0..j.iodepth {
                    heap.push(Reverse((start.0, gi)));
                }
            }
        }
        let mut ticker = Ticker::start(progress, name, total);
        // Requests of time-based clones in a row that completed the instant they were issued.
        let mut stalled = 0u64;
        while let Some(Reverse((t, gi))) = heap.pop() {
            let g = &mut gens[gi as usize];
            let Some(io) = g.next(SimTime(t)) else {
                continue;
            };
            let time_based = g.remaining().is_none();
            // The FTL state and device pages of random requests miss the cache. This clone's
            // next request comes after every other clone's: hint its table entries now; the
            // request at the top of the heap is normally served next, and its entries were
            // hinted a round ago, so the device state they lead to can be hinted too.
            if let Some(up) = gens[gi as usize].upcoming() {
                self.prefetch(up, Upcoming::Later);
            }
            if let Some(Reverse((_, next))) = heap.peek() {
                if let Some(up) = gens[*next as usize].upcoming() {
                    self.prefetch(up, Upcoming::Next);
                }
            }
            let done = self.submit(io)?;
            // A time-based job ends only when simulated time reaches its runtime: if its
            // requests stop taking any, it would spin forever. Bounded jobs end anyway.
            if done.0 > t {
                stalled = 0;
            } else if time_based {
                stalled += 1;
                if stalled == STALLED_REQUESTS {
                    return Err(stalled_error(jobs, gi, t - start.0));
                }
            }
            heap.push(Reverse((done.0, gi)));
            ticker.tick();
        }
        ticker.finish();
        Ok(self.end_phase())
    }

    /// Lets the device idle as a phase of its own (`name`, normally `settle`; SPEC §3.5): the
    /// FTL does the work it owes an idle device ([`Ftl::idle`]) with as many units in flight as
    /// the device has LUNs, each slot issuing its next unit when its previous one completes,
    /// until the FTL owes nothing or (with [`Settle::For`]) the next unit would be issued after
    /// the idle time. The phase ends when its last operation completes (at its start if the
    /// FTL owed nothing); the next phase starts then, on an idle device. `Settle::Off` runs no
    /// phase and returns `None`.
    pub fn settle(
        &mut self,
        name: &str,
        settle: Settle,
        progress: &mut dyn Progress,
    ) -> Result<Option<Metrics>, EngineError> {
        let limit = match settle {
            Settle::Off => return Ok(None),
            Settle::Auto => None,
            Settle::For(ns) => Some(ns),
        };
        self.begin_phase(name);
        let start = self.clock;
        let deadline = limit.map(|ns| SimTime(start.0.saturating_add(ns)));
        let fail = |message: String| EngineError::Settle {
            at: start.0,
            message,
        };
        progress.start(name, None);
        let mut slots: BinaryHeap<Reverse<u64>> = (0..self.dev.geo().luns())
            .map(|_| Reverse(start.0))
            .collect();
        while let Some(Reverse(t)) = slots.pop() {
            let t = SimTime(t);
            if deadline.is_some_and(|d| t >= d) {
                break;
            }
            // Units are issued in time order, like requests.
            self.dev.advance_floor(t);
            match self
                .ftl
                .idle(&mut self.dev, t)
                .map_err(|e| match e.is_power_lost() {
                    true => fail(
                        "a power cut armed with arm_power_cut struck while the device settled \
                         (cuts are injected into requests only)"
                            .into(),
                    ),
                    false => fail(e.to_string()),
                })? {
                Some(done) => slots.push(Reverse(done.0.max(t.0))),
                None => break,
            }
        }
        progress.finish();
        if self.opts.check_invariants {
            self.ftl.check_invariants(&self.dev).map_err(fail)?;
        }
        self.phase.note_end(self.dev.drained_at());
        self.phase.note_dram(self.ftl.dram_total());
        Ok(Some(self.end_phase()))
    }

    /// Runs an open-loop stream as one phase: each I/O arrives at the phase start plus its
    /// `arrival` (which must not decrease) and is served then; latency includes queueing.
    pub fn run_stream<E: std::fmt::Display>(
        &mut self,
        name: &str,
        stream: impl IntoIterator<Item = Result<HostIo, E>>,
        total: Option<u64>,
        progress: &mut dyn Progress,
    ) -> Result<Metrics, EngineError> {
        let mut stream = stream.into_iter();
        self.run_feedback(name, total, progress, |_| stream.next())
    }

    /// Runs a phase of requests that `next` gives one by one, telling it when the request
    /// before completed (ns since the phase start; `None` before the first): closed-loop replay
    /// issues each request after what it waited for. Arrivals are ns since the phase start and
    /// must not decrease.
    pub fn run_feedback<E: std::fmt::Display>(
        &mut self,
        name: &str,
        total: Option<u64>,
        progress: &mut dyn Progress,
        mut next: impl FnMut(Option<u64>) -> Option<Result<HostIo, E>>,
    ) -> Result<Metrics, EngineError> {
        self.begin_phase(name);
        let start = self.clock;
        let mut ticker = Ticker::start(progress, name, total);
        let mut done = None;
        while let Some(io) = next(done) {
            let mut io = io.map_err(|e| EngineError::Input(e.to_string()))?;
            io.arrival = start.after(io.arrival.0);
            done = Some(self.submit(io)?.since(start));
            ticker.tick();
        }
        ticker.finish();
        Ok(self.end_phase())
    }
}

/// The error for a phase of `jobs` whose time-based clone `clone` (numbered across the jobs in
/// order) completed [`STALLED_REQUESTS`] requests in a row in no simulated time, `elapsed` ns
/// into the phase.
fn stalled_error(jobs: &[JobSpec], clone: u32, elapsed: u64) -> EngineError {
    let mut clones = 0u64;
    let job = jobs
        .iter()
        .find(|j| {
            clones += j.numjobs as u64;
            (clone as u64) < clones
        })
        .expect("every clone belongs to a job");
    EngineError::Job {
        job: job.name.clone(),
        message: format!(
            "{STALLED_REQUESTS} requests in a row completed the instant they were issued, {elapsed} \
             ns into the phase: no simulated time passes, so its runtime of {} ns would never \
             come. Reads of pages never written (or trimmed) take no flash time: write the \
             pages first (precondition) or bound the job (number_ios, io_size)",
            job.runtime_ns.unwrap_or_default()
        ),
    }
}

/// Requests in a row that a time-based job may complete in no simulated time before its phase
/// is stopped with an error: past that many, no simulated time passes and its runtime would
/// never come.
pub const STALLED_REQUESTS: u64 = 1 << 20;

/// A slot of [`Simulator::run_jobs`]: when it issues its next request, and its clone.
type Slot = Reverse<(u64, u32)>;

/// What [`Simulator::run_jobs`] holds for a phase's jobs besides the simulator: a request
/// generator per clone and a place in its queue per slot (docs/device.md "Memory").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct JobsState {
    /// Clones: the jobs' `numjobs` summed.
    pub clones: u64,
    /// Slots: the jobs' `numjobs` × `iodepth` summed.
    pub slots: u64,
}

impl JobsState {
    /// Bytes per clone: its request generator.
    pub const CLONE_BYTES: u64 = std::mem::size_of::<JobGen>() as u64;
    /// Bytes per slot: its entry in the queue of slots.
    pub const SLOT_BYTES: u64 = std::mem::size_of::<Slot>() as u64;

    /// The state of `jobs` run as one phase.
    pub fn of(jobs: &[JobSpec]) -> JobsState {
        jobs.iter().fold(
            JobsState {
                clones: 0,
                slots: 0,
            },
            |s, j| JobsState {
                clones: s.clones.saturating_add(j.numjobs as u64),
                slots: s.slots.saturating_add(j.slots()),
            },
        )
    }

    /// Its bytes (saturating).
    pub fn bytes(&self) -> u64 {
        let clones = self.clones as u128 * Self::CLONE_BYTES as u128;
        let slots = self.slots as u128 * Self::SLOT_BYTES as u128;
        u64::try_from(clones + slots).unwrap_or(u64::MAX)
    }
}

/// Derives a clone's seed from the run seed and its position (SplitMix64 finaliser), so every
/// clone has its own stream and the whole run depends on one seed.
pub fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut z =
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::RwKind;

    fn sim(ftl: &str) -> Simulator {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        Simulator::new(&cfg, ftl, Params::new(), SimOptions::checked()).unwrap()
    }

    #[test]
    fn bytes_cover_every_touched_page() {
        let mut s = sim("ideal");
        s.begin_phase("t");
        s.submit(HostIo {
            arrival: SimTime(0),
            op: Op::Write,
            offset: 4000,
            len: 200,
        })
        .unwrap();
        let m = s.end_phase();
        assert_eq!(m.page_writes, 2);
        assert_eq!(s.oracle().unwrap().expected(Lpn(0)), 1);
        assert_eq!(s.oracle().unwrap().expected(Lpn(1)), 1);
        assert_eq!(s.oracle().unwrap().expected(Lpn(2)), 0);
    }

    #[test]
    fn bad_requests_are_refused() {
        let mut s = sim("ideal");
        let lb = s.device().geo().logical_bytes();
        let e = s.submit(HostIo {
            arrival: SimTime(5),
            op: Op::Read,
            offset: lb - 4096,
            len: 8192,
        });
        assert!(matches!(e, Err(EngineError::OutOfRange { .. })));
        let e = s.submit(HostIo {
            arrival: SimTime(5),
            op: Op::Read,
            offset: 0,
            len: 0,
        });
        assert!(matches!(e, Err(EngineError::OutOfRange { .. })));
        s.submit(HostIo {
            arrival: SimTime(5),
            op: Op::Flush,
            offset: 0,
            len: 0,
        })
        .unwrap();
        let e = s.submit(HostIo {
            arrival: SimTime(4),
            op: Op::Flush,
            offset: 0,
            len: 0,
        });
        assert!(matches!(e, Err(EngineError::OutOfOrder { .. })));
    }

    #[test]
    fn closed_loop_psync_read_latency_is_one_flash_read() {
        let mut s = sim("ideal");
        let mut w = JobSpec::new("fill", RwKind::Write);
        w.bs = 512 << 10;
        s.run_jobs("fill", &[w], 1, &mut NoProgress).unwrap();
        let mut r = JobSpec::new("r", RwKind::RandRead);
        r.number_ios = Some(1000);
        let m = s.run_jobs("r", &[r], 1, &mut NoProgress).unwrap();
        assert_eq!(m.requests.read, 1000);
        assert_eq!(m.lookups.single, 1000);
        assert_eq!(m.verify.checked, 1000);
        // One job, depth 1: each read waits only for its own flash read (the fill drained first
        // unless a LUN is still busy with background work).
        assert!(
            m.latency_us.read.p50 >= 40.0 && m.latency_us.read.p50 < 41.0,
            "{:?}",
            m.latency_us.read
        );
        assert!((m.iops - 25_000.0).abs() < 1000.0, "{}", m.iops);
        assert_eq!(m.flash.reads["user"], 1000);
    }

    #[test]
    fn parallel_jobs_use_parallel_luns() {
        let mut s = sim("ideal");
        let mut w = JobSpec::new("fill", RwKind::Write);
        w.bs = 512 << 10;
        s.run_jobs("fill", &[w], 1, &mut NoProgress).unwrap();
        let mut r = JobSpec::new("r", RwKind::RandRead);
        r.number_ios = Some(2000);
        r.numjobs = 8;
        let m = s.run_jobs("r", &[r], 1, &mut NoProgress).unwrap();
        // 8 LUNs on tiny: well above one LUN's 25 k IOPS.
        assert!(m.iops > 100_000.0, "{}", m.iops);
    }

    /// Counts a phase's requests and fails the test once they pass `limit`, so that a phase
    /// which would never end fails instead of hanging.
    struct Bounded {
        done: u64,
        limit: u64,
    }

    impl Progress for Bounded {
        fn start(&mut self, _: &str, _: Option<u64>) {}
        fn advance(&mut self, n: u64) {
            self.done += n;
            assert!(
                self.done <= self.limit,
                "still running after {} requests",
                self.done
            );
        }
        fn finish(&mut self) {}
    }

    #[test]
    fn a_time_based_phase_in_which_no_time_passes_ends_with_an_error() {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        // Reads of a fresh device take no simulated time; trims do (each persists a record).
        // Whatever the FTL, a runtime-limited phase ends: at its runtime, or with the error.
        for &ftl in ftl::FTLS {
            for rw in [
                RwKind::RandRead,
                RwKind::Read,
                RwKind::Trim,
                RwKind::RandTrim,
            ] {
                let mut s =
                    Simulator::new(&cfg, ftl, Params::new(), SimOptions::default()).unwrap();
                let mut j = JobSpec::new("stuck", rw);
                j.runtime_ns = Some(1_000_000);
                j.time_based = true;
                j.numjobs = 2;
                j.iodepth = 4;
                let mut progress = Bounded {
                    done: 0,
                    limit: 4 * STALLED_REQUESTS,
                };
                match s.run_jobs("t", &[j], 1, &mut progress) {
                    Ok(m) => assert!(m.sim_seconds >= 1e-3 && rw.to_string().ends_with("trim")),
                    Err(e) => {
                        let msg = e.to_string();
                        assert!(
                            matches!(e, EngineError::Job { ref job, .. } if job == "stuck")
                                && msg.contains("no simulated time passes")
                                && msg.contains("runtime of 1000000 ns"),
                            "{ftl} {rw}: {msg}"
                        );
                        assert!(
                            progress.done <= STALLED_REQUESTS + 4096,
                            "{ftl} {rw}: {}",
                            progress.done
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn time_based_phases_with_some_timed_requests_run_to_their_runtime() {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let mut s = Simulator::new(&cfg, "ideal", Params::new(), SimOptions::default()).unwrap();
        // Mostly reads of unwritten pages, but every write takes flash time; and a bounded job
        // of zero-time reads beside a time-based one does not count against it.
        let mut mixed = JobSpec::new("mixed", RwKind::RandRw);
        mixed.rwmixread = 99;
        mixed.runtime_ns = Some(2_000_000);
        mixed.time_based = true;
        let mut reads = JobSpec::new("reads", RwKind::RandRead);
        reads.number_ios = Some(2 * STALLED_REQUESTS);
        let m = s
            .run_jobs("t", &[mixed, reads], 1, &mut NoProgress)
            .unwrap();
        assert!(m.requests.write > 0 && m.requests.read > 2 * STALLED_REQUESTS);
        // The mixed job ran to its runtime (the reads that found its pages took flash time too).
        assert!(m.sim_seconds >= 2e-3, "{}", m.sim_seconds);
    }

    #[test]
    fn a_phase_too_large_to_allocate_is_an_error() {
        let mut s = sim("ideal");
        let mut j = JobSpec::new("wide", RwKind::RandRead);
        j.numjobs = u32::MAX;
        j.iodepth = u32::MAX;
        j.number_ios = Some(1);
        let e = s.run_jobs("t", &[j], 1, &mut NoProgress).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("job \"wide\": cannot allocate the state of 4294967295 clones")
                && msg.contains("lower numjobs or iodepth"),
            "{msg}"
        );
        // Nothing ran: the simulator goes on as before.
        let mut r = JobSpec::new("r", RwKind::RandRead);
        r.number_ios = Some(10);
        assert_eq!(
            s.run_jobs("r", &[r], 1, &mut NoProgress)
                .unwrap()
                .requests
                .read,
            10
        );
    }

    /// A page's content: its LPN and version in every 8-byte word.
    fn pattern(lpn: u64, version: u64, page: &mut [u8]) {
        for w in page.chunks_exact_mut(8) {
            w.copy_from_slice(&(lpn << 32 | version).to_le_bytes());
        }
    }

    #[test]
    fn payloads_follow_their_pages_through_gc_on_every_ftl() {
        let mut cfg = DeviceConfig::preset("tiny").unwrap();
        cfg.payloads = true;
        let lp = cfg.geometry.logical_pages;
        let ps = cfg.geometry.page_size as usize;
        let file = std::env::temp_dir().join(format!("engine-pages-{}.img", std::process::id()));
        // Every FTL with pages in memory, and LearnedFTL with pages in a sparse file.
        let runs = ftl::FTLS.iter().map(|&f| (f, false));
        for (name, in_file) in runs.chain([("learnedftl", true)]) {
            let mut s = Simulator::new(&cfg, name, Params::new(), SimOptions::default()).unwrap();
            if in_file {
                let store = s.device_mut().payloads_mut().unwrap();
                store.use_file(&file).unwrap();
            }
            s.begin_phase("w");
            let mut version = vec![0u64; lp as usize];
            let mut rng = 0x1234_5678u64;
            let mut buf = vec![0u8; 8 * ps];
            let mut t = 0;
            // Twice the logical space in 8-page writes at random 8-page slots, then a flush.
            for _ in 0..2 * lp / 8 {
                rng = mix(rng, 1, 2);
                let first = rng % (lp / 8) * 8;
                for (i, page) in buf.chunks_exact_mut(ps).enumerate() {
                    let l = first + i as u64;
                    version[l as usize] += 1;
                    pattern(l, version[l as usize], page);
                }
                let io = HostIo {
                    arrival: SimTime(t),
                    op: Op::Write,
                    offset: first * ps as u64,
                    len: buf.len() as u64,
                };
                t = s.submit_data(io, Payload::Write(&buf)).unwrap().0;
            }
            let io = HostIo {
                arrival: SimTime(t),
                op: Op::Flush,
                offset: 0,
                len: 0,
            };
            t = s.submit(io).unwrap().0;
            let m = s.end_phase();
            assert!(m.gc.events > 0, "{name}: no GC");
            let mut want = vec![0u8; ps];
            for first in (0..lp).step_by(8) {
                let io = HostIo {
                    arrival: SimTime(t),
                    op: Op::Read,
                    offset: first * ps as u64,
                    len: buf.len() as u64,
                };
                s.submit_data(io, Payload::Read(&mut buf)).unwrap();
                for (i, page) in buf.chunks_exact(ps).enumerate() {
                    let l = first + i as u64;
                    match version[l as usize] {
                        0 => want.fill(0),
                        v => pattern(l, v, &mut want),
                    }
                    assert!(
                        page == want,
                        "{name}: LPN {l} version {}",
                        version[l as usize]
                    );
                }
            }
        }
        std::fs::remove_file(&file).unwrap();
    }

    /// LeaFTL's buffer fills in the middle of a write whose later pages it still holds in an
    /// older version: the flush must program those pages' older bytes, and the write's own
    /// bytes must stay for its buffered pages (issue 26: ext4 on LeaFTL read back wrong files).
    #[test]
    fn a_flush_inside_a_write_keeps_each_versions_bytes() {
        let mut cfg = DeviceConfig::preset("tiny").unwrap();
        cfg.payloads = true;
        let ps = cfg.geometry.page_size as usize;
        let mut params = Params::new();
        params.insert("write_buffer_pages", "4", "test");
        let mut s = Simulator::new(&cfg, "leaftl", params, SimOptions::checked()).unwrap();
        s.begin_phase("t");
        let mut t = SimTime(0);
        let mut write = |s: &mut Simulator, first: u64, pages: u64, version: u64| {
            let mut buf = vec![0u8; pages as usize * ps];
            for (i, page) in buf.chunks_exact_mut(ps).enumerate() {
                pattern(first + i as u64, version, page);
            }
            let io = HostIo {
                arrival: t,
                op: Op::Write,
                offset: first * ps as u64,
                len: buf.len() as u64,
            };
            t = s.submit_data(io, Payload::Write(&buf)).unwrap();
        };
        // LPN 3 buffered; then LPNs 0..5: the buffer fills at LPN 2 and its flush programs LPN
        // 3's first version while LPN 3's second is already staged.
        write(&mut s, 3, 1, 1);
        write(&mut s, 0, 5, 2);
        let mut want = vec![0u8; ps];
        let mut got = vec![0u8; 5 * ps];
        let io = HostIo {
            arrival: t,
            op: Op::Read,
            offset: 0,
            len: got.len() as u64,
        };
        s.submit_data(io, Payload::Read(&mut got)).unwrap();
        for (l, page) in got.chunks_exact(ps).enumerate() {
            pattern(l as u64, 2, &mut want);
            assert!(page == want, "LPN {l}: not the second version's bytes");
        }
        // And once flushed to flash, from there.
        let flush = HostIo {
            arrival: t,
            op: Op::Flush,
            offset: 0,
            len: 0,
        };
        let t = s.submit(flush).unwrap();
        s.submit_data(HostIo { arrival: t, ..io }, Payload::Read(&mut got))
            .unwrap();
        for (l, page) in got.chunks_exact(ps).enumerate() {
            pattern(l as u64, 2, &mut want);
            assert!(page == want, "LPN {l} after a flush");
        }
    }

    #[test]
    fn payload_requests_must_be_whole_pages_on_a_payload_device() {
        let mut s = sim("ideal");
        let io = HostIo {
            arrival: SimTime(0),
            op: Op::Write,
            offset: 0,
            len: 4096,
        };
        let e = s.submit_data(io, Payload::Write(&[0; 4096])).unwrap_err();
        assert!(e.to_string().contains("payloads=true"), "{e}");
        let mut cfg = DeviceConfig::preset("tiny").unwrap();
        cfg.payloads = true;
        let mut s = Simulator::new(&cfg, "ideal", Params::new(), SimOptions::checked()).unwrap();
        let e = s
            .submit_data(HostIo { len: 512, ..io }, Payload::Write(&[0; 512]))
            .unwrap_err();
        assert!(e.to_string().contains("whole"), "{e}");
        let e = s.submit_data(io, Payload::Write(&[0; 512])).unwrap_err();
        assert!(e.to_string().contains("buffer of 512"), "{e}");
        let e = s
            .submit_data(io, Payload::Read(&mut [0; 4096]))
            .unwrap_err();
        assert!(e.to_string().contains("Read data"), "{e}");
    }

    #[test]
    fn gc_keeps_data_correct_under_overwrites() {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let opts = SimOptions {
            verify: Verify::FailFast,
            check_invariants: false,
        };
        let mut s = Simulator::new(&cfg, "ideal", Params::new(), opts).unwrap();
        let mut w = JobSpec::new("w", RwKind::RandWrite);
        w.io_size = Some(3 * s.device().geo().logical_bytes());
        w.iodepth = 4;
        let m = s.run_jobs("w", &[w], 7, &mut NoProgress).unwrap();
        assert!(m.gc.events > 0);
        assert!(m.waf > 1.0, "{}", m.waf);
        let mut r = JobSpec::new("r", RwKind::RandRead);
        r.number_ios = Some(5000);
        let m = s.run_jobs("r", &[r], 7, &mut NoProgress).unwrap();
        assert_eq!(m.verify.failures, 0);
        assert_eq!(m.verify.checked, 5000);
        s.ftl().check_invariants(s.device()).unwrap();
    }
}
