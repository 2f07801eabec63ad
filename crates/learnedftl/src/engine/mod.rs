//! The engine: owns simulated time, turns workloads into host requests handed to the FTL in
//! non-decreasing arrival order, checks reads against the oracle, and collects statistics per
//! phase (SPEC §2, §4).

pub mod bytes;
mod oracle;
mod phases;
mod power;
mod shadow;

pub use oracle::Oracle;
pub use phases::{JobsState, STALLED_REQUESTS};
pub use power::PowerCutPlan;

use crate::addr::{Lpn, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Device, PowerCut};
use crate::error::{ConfigError, DeviceError, FtlError};
use crate::ftl::{self, Ftl, ReadSink, Served};
use crate::params::Params;
use crate::request::{Op, Request};
use crate::stats::{Collector, Metrics, PartsNs, VerifySummary};
use crate::workload::HostIo;
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
    /// A saved device state that cannot be loaded or saved (`serve --state`).
    #[error("state: {0}")]
    State(#[from] crate::error::StateError),
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
    /// The machine's memory fell below [`SimOptions::memory_floor`] while the run grew.
    #[error("memory: {0}")]
    Memory(String),
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
    /// Stop a phase of jobs or a replay with [`EngineError::Memory`] when the machine's
    /// available memory falls below this many bytes (looked at about once a second; 0: never).
    /// Default [`crate::host::MEMORY_FLOOR_BYTES`].
    pub memory_floor: u64,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            verify: Verify::Off,
            check_invariants: false,
            memory_floor: crate::host::MEMORY_FLOOR_BYTES,
        }
    }
}

impl SimOptions {
    /// What tests use: fail-fast oracle and invariant checks after every request.
    pub fn checked() -> SimOptions {
        SimOptions {
            verify: Verify::FailFast,
            check_invariants: true,
            ..SimOptions::default()
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

/// Where the engine sends the pages a read returns: counts unmapped reads, forwards every
/// page to the oracle when reads are verified, and copies its data into the read's buffer
/// when the request moves data.
struct Delivery<'a> {
    oracle: Option<&'a mut Oracle>,
    unmapped: u64,
    /// The read's buffer and its first LPN, when the request moves data.
    out: Option<(Lpn, &'a mut [u8])>,
    /// The first error reading a payload back.
    error: Option<std::io::Error>,
}

impl ReadSink for Delivery<'_> {
    #[inline]
    fn deliver(&mut self, dev: &Device, lpn: Lpn, from: Served) {
        self.unmapped += (from == Served::Unmapped) as u64;
        if let Some((first, buf)) = self.out.as_mut() {
            // Copied now, as the data leaves the flash: work later in the same request (a
            // write-back's GC) may erase the page it was served from.
            let ps = dev.geo().page_size as usize;
            let at = lpn.0.wrapping_sub(first.0) as usize * ps;
            if let Some(dst) = buf.get_mut(at..at + ps) {
                let store = dev.payloads().expect("checked: payloads kept");
                let found = match from {
                    Served::Flash { ppa, .. } => store.read(ppa, dst).unwrap_or_else(|e| {
                        self.error.get_or_insert(e);
                        false
                    }),
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
        }
        if let Some(o) = self.oracle.as_deref_mut() {
            let handle = match from {
                Served::Flash { ppa, .. } => dev.page_handle(ppa),
                _ => 0,
            };
            o.deliver(lpn, from, handle);
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

/// A device, an FTL on it, the oracle, and simulated time. A clone is a snapshot: it goes on
/// exactly as the original would (every random choice lives in the workload, seeded per phase).
#[derive(Clone)]
pub struct Simulator {
    dev: Device,
    ftl: Box<dyn Ftl>,
    oracle: Option<Oracle>,
    opts: SimOptions,
    stamp: u32,
    /// The stamp of the latest write or trim before the latest completed FLUSH: every version
    /// up to it was acknowledged as durable.
    flushed: u32,
    clock: SimTime,
    last_arrival: SimTime,
    phase: Collector,
    requests: u64,
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
    /// The cause of the flash operation the latest cut tore (`None`: between operations),
    /// kept before recovery (power-loss protection's capacitor flush ends with a cut of its
    /// own, which the device then reports).
    cut_in: Option<crate::device::Cause>,
    /// For the next request only: when its job issued it and the host's completion cost, so
    /// that its latency is the job's ([`crate::config::HostCost`]); `None`: the request's
    /// arrival and no cost.
    host_origin: Option<(SimTime, u64)>,
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
            oracle: (opts.verify != Verify::Off).then(|| Oracle::new(lp, dev_cfg.fdp.is_on())),
            opts,
            stamp: 0,
            flushed: 0,
            clock: SimTime::ZERO,
            last_arrival: SimTime::ZERO,
            phase: Collector::new("initial", SimTime::ZERO),
            requests: 0,
            recipe: None,
            cuts: None,
            ckpt_due: 0,
            recoveries: 0,
            cut_after_ack: false,
            cut_in: None,
            host_origin: None,
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

    /// The FTL's counters for the current phase so far (lookups, cache and model hits, GC).
    pub fn ftl_stats(&self) -> crate::mapping::FtlStats {
        self.phase.ftl_stats(self.ftl.as_ref())
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

    /// The cause of the flash operation the latest power cut tore, `None` if it struck
    /// between operations or none struck yet.
    pub fn last_cut_in(&self) -> Option<crate::device::Cause> {
        self.cut_in
    }

    /// The current phase's power cuts so far, without building its metrics (`None` when cuts
    /// are not tracked).
    pub fn power_cuts(&self) -> Option<&crate::stats::PowerCutSummary> {
        self.phase.power_cuts()
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
    /// page, write buffer, or zeroes when unmapped) as it serves them, before any later work
    /// (its own write-backs' GC in the same request, background work) can move them.
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
        // The job's view of the request's time, when its host's cost counts.
        let (origin, host_ns) = self.host_origin.take().unwrap_or((io.arrival, 0));
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
            // A write without a placement ID is placed by `fdp_ranges`, if any (docs/fdp.md).
            placement: match io.op {
                Op::Write => self
                    .dev
                    .config()
                    .fdp
                    .write_placement(io.placement, lpn as u64),
                _ => io.placement,
            },
        };
        if !matches!(data, Payload::None) {
            self.check_payload(&io, &data)?;
        }
        let mut out = None;
        match data {
            Payload::Write(bytes) => {
                let store = self.dev.payloads_mut().expect("checked: payloads kept");
                for (lpn, page) in req.lpns().zip(bytes.chunks(ps as usize)) {
                    store.stage(lpn, stamp, page);
                }
            }
            Payload::Read(buf) => out = Some(buf),
            Payload::None => {}
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
        // Where the request's time goes is noted when the host or the controller costs
        // anything (without either, all of it is the device's).
        let cfg = self.dev.config();
        let parts_before = (cfg.host.is_on() || cfg.controller.is_on())
            .then(|| self.ftl.controller().unwrap_or_default());
        let (result, mut unmapped) = self.serve(&req, out.as_deref_mut())?;
        let mut parts = parts_before.map(|before| {
            let after = self.ftl.controller().unwrap_or_default();
            PartsNs {
                host: io.arrival.since(origin) + host_ns,
                controller: after.controller_ns.saturating_sub(before.controller_ns),
                transfer: after.transfer_ns.saturating_sub(before.transfer_ns),
                flash: 0,
            }
        });
        let done = match result {
            Ok(done) => done,
            Err(e) if e.is_power_lost() => {
                // Not acknowledged: each of its pages may hold the old or the new version.
                let recovered = self.recover(Some(&req), io.arrival)?;
                if io.op != Op::Read {
                    self.requests += 1;
                    self.record(&io, pages, origin, recovered.after(host_ns), parts);
                    return Ok(recovered);
                }
                // The recovery is the device's time (its rebuilt controller counts anew).
                parts = parts.map(|p| PartsNs {
                    host: p.host,
                    ..PartsNs::default()
                });
                // The host sees the read fail and issues it again once the device is back: it
                // returns what recovery rebuilt, its latency including the recovery.
                let retry = Request {
                    arrival: recovered,
                    ..req
                };
                let (result, n) = self.serve(&retry, out)?;
                unmapped = n;
                result.map_err(ftl_error)?
            }
            Err(e) => return Err(ftl_error(e)),
        };
        let buffered = self.dev.config().controller.write_buffer > 0;
        if let Some(store) = self.dev.payloads_mut() {
            match io.op {
                // Acknowledged: the versions this write superseded are programmed or replaced
                // in the FTL's buffer — unless a controller's write buffer acknowledged it,
                // which drops superseded versions itself as they die (`ftl::controller`).
                Op::Write if !buffered => store.settle(),
                Op::Trim => req.lpns().for_each(|l| store.unstage(l)),
                _ => {}
            }
        }
        if io.op == Op::Flush {
            self.flushed = self.stamp;
        }
        // Acknowledged: a cut in the background work after it leaves it durable.
        if let Some(o) = self.oracle.as_mut() {
            match io.op {
                Op::Write => {
                    // Where the FTL placed it: the write's handle, handle 0 for an ID naming
                    // none (docs/fdp.md).
                    let ruhs = self.dev.config().fdp.ruhs;
                    let h = if req.placement < ruhs {
                        req.placement as u8
                    } else {
                        0
                    };
                    req.lpns().for_each(|l| o.set_written(l, stamp, h))
                }
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
        self.record(&io, pages, origin, done.after(host_ns), parts);
        self.phase.note_unmapped_reads(unmapped);
        self.phase.note_dram(self.ftl.dram_total());
        Ok(done)
    }

    /// Records a completed request of the job's `origin` to `seen` in the phase, with its
    /// latency's `parts` when noted (the device's rest of it is flash time).
    fn record(
        &mut self,
        io: &HostIo,
        pages: u32,
        origin: SimTime,
        seen: SimTime,
        parts: Option<PartsNs>,
    ) {
        self.phase.record(io.op, pages, io.len, origin, seen);
        if let Some(p) = parts {
            let rest = seen
                .since(origin)
                .saturating_sub(p.host + p.controller + p.transfer);
            self.phase.note_parts(io.op, PartsNs { flash: rest, ..p });
        }
    }

    /// Has the FTL serve `req`, its pages delivered to the oracle (when reads are verified) and
    /// their data into `out` (a read that moves data); returns the FTL's result and how many
    /// pages it read unmapped. A wrong read under fail-fast verification is the error.
    fn serve(
        &mut self,
        req: &Request,
        out: Option<&mut [u8]>,
    ) -> Result<(Result<SimTime, FtlError>, u64), EngineError> {
        let failures_before = self.oracle.as_ref().map_or(0, |o| o.failures());
        let mut sink = Delivery {
            oracle: self.oracle.as_mut(),
            unmapped: 0,
            out: out.map(|buf| (req.lpn, buf)),
            error: None,
        };
        let result = self.ftl.submit(&mut self.dev, req, &mut sink);
        let unmapped = sink.unmapped;
        if let Some(e) = sink.error {
            return Err(EngineError::Payload(format!(
                "reading back {}+{}: {e}",
                req.lpn, req.pages
            )));
        }
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
}

#[cfg(test)]
mod tests;
