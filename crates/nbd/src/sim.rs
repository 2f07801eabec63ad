//! The backend that runs NBD commands on a simulated SSD: one [`Simulator`] behind a mutex,
//! shared by every connection, its simulated clock anchored to the wall clock.
//!
//! A request arrives at the simulated time elapsed since the server started (never earlier
//! than the previous one, so arrivals from every connection stay in order) and completes when
//! the FTL says. With [`Timing::Realtime`] its reply is held until that completion on the wall
//! clock, as FEMU does; with [`Timing::None`] it is sent at once and the simulated latency is
//! only recorded. Commands run through the library's byte path ([`HostBytes`]): a request that
//! covers part of a page reads the covering pages first (a write then writes them back merged:
//! read-modify-write, as SSD firmware does), and a trim discards only the pages it covers
//! entirely. With [`SimBackend::verify`] (`serve --verify`) a command whose data fails the
//! byte path's checks is answered `NBD_EIO`, never with its data, and logged.

use crate::handshake::Export;
use crate::proto::*;
use crate::server::{Backend, Cmd, Connections};
use learnedftl::addr::SimTime;
use learnedftl::device::PowerCut;
use learnedftl::engine::bytes::HostBytes;
use learnedftl::engine::PowerCutPlan;
use learnedftl::engine::{EngineError, Simulator};
use learnedftl::error::FtlError;
use learnedftl::request::Op;
use learnedftl::run::RunReport;
use learnedftl::stats::{LatencyHistogram, LatencySummary, Metrics, PowerCutSummary};
use learnedftl::trace::{Format, TraceError, TraceRecord, TraceWriter};
use serde::Serialize;
use std::fmt;
use std::io::Write;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How replies are timed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Each reply is held until the request's simulated completion (wall-clock anchored).
    Realtime,
    /// Replies leave at once; simulated latency is recorded only.
    None,
}

impl FromStr for Timing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "realtime" => Ok(Timing::Realtime),
            "none" => Ok(Timing::None),
            _ => Err(format!("'{s}': timing is realtime or none")),
        }
    }
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Timing::Realtime => "realtime",
            Timing::None => "none",
        })
    }
}

/// Largest read or write payload accepted (the protocol's interoperable maximum).
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// Smallest request alignment accepted; smaller-than-page writes are read-modify-write.
pub const MIN_BLOCK: u32 = 512;

/// Where requests are recorded as a trace.
pub type Recorder = TraceWriter<Box<dyn Write + Send>>;

/// Where a server's messages go.
type Log = Box<dyn Fn(String) + Send + Sync>;

/// What made a live power cut (docs/nbd.md "Power cuts").
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CutTrigger {
    /// A signal (`kill -USR1`), or [`SimBackend::arm_cut`] called on demand.
    Signal,
    /// `--power-cut-every N`: one in every window of N page-level requests.
    EveryRequests,
    /// `--power-cut-every DURATION`: one at a seeded instant of every window of wall time.
    EveryDuration,
}

impl fmt::Display for CutTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CutTrigger::Signal => "signal",
            CutTrigger::EveryRequests => "every N requests",
            CutTrigger::EveryDuration => "every DURATION",
        })
    }
}

/// One power cut a server took while serving: `live_power_cuts` in its report
/// (docs/metrics.md).
#[derive(Clone, Debug, Serialize)]
pub struct LiveCut {
    /// Which cut of the server this is (from 1).
    pub n: u64,
    /// Wall-clock seconds since the server started when the power was lost.
    pub wall_seconds: f64,
    /// Simulated seconds since the server started when the power was lost.
    pub sim_seconds: f64,
    /// What made it.
    pub trigger: CutTrigger,
    /// The flash operation in flight that it tore (`Cause` key: `user`, `gc_data`,
    /// `translation_writeback`, ...), or `between_operations`.
    pub struck_in: &'static str,
    /// The NBD command being served when it struck (answered with an error, never
    /// acknowledged), e.g. `write 8192+4096`; `None` between commands.
    pub command: Option<String>,
    /// Acknowledged page writes a volatile buffer lost.
    pub lost_unflushed_pages: u64,
    /// Of which a completed FLUSH or FUA had covered (0 unless `flush=ignore|reorder`).
    pub lost_flushed_pages: u64,
    /// Pages recovery returned in a version other than the last acknowledged one or one a
    /// lost buffer allows (0 unless the FTL's recovery is wrong).
    pub pages_read_back_wrong: u64,
    /// Simulated time of the recovery (OOB scan, translation pages), seconds.
    pub recovery_sim_seconds: f64,
    /// Flash page reads of the recovery.
    pub recovery_flash_reads: u64,
    /// Wall-clock time from the cut until the server could serve again, ms.
    pub recovery_wall_ms: f64,
    /// Client connections the cut closed.
    pub connections_closed: usize,
}

impl fmt::Display for LiveCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "power cut {} ({}) at simulated {:.6} s in {}{}: recovered in {:.6} simulated s ({:.1} ms wall), {} flash reads; {} unflushed pages lost ({} of them flushed), {} pages read back wrong; {} connections closed",
            self.n,
            self.trigger,
            self.sim_seconds,
            self.struck_in,
            self.command
                .as_ref()
                .map_or(String::new(), |c| format!(" (serving {c})")),
            self.recovery_sim_seconds,
            self.recovery_wall_ms,
            self.recovery_flash_reads,
            self.lost_unflushed_pages,
            self.lost_flushed_pages,
            self.pages_read_back_wrong,
            self.connections_closed,
        )
    }
}

/// What `serve --json` writes: the keys of `run --json`, `live_power_cuts` when the FTL can
/// recover, and `lateness_us` and `reply_write_us` with [`Timing::Realtime`]
/// (docs/metrics.md).
#[derive(Clone, Debug, Serialize)]
pub struct ServeReport {
    /// The run's report.
    #[serde(flatten)]
    pub run: RunReport,
    /// Every power cut taken, in order (absent when the FTL cannot recover from one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_power_cuts: Option<Vec<LiveCut>>,
    /// How late replies were sent ([`SimBackend::lateness`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lateness_us: Option<LatencySummary>,
    /// How long the socket writes that sent them took ([`SimBackend::reply_writes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_write_us: Option<LatencySummary>,
}

/// A simulated SSD as an NBD export.
pub struct SimBackend {
    export: Export,
    timing: Timing,
    /// The wall-clock instant of simulated time `start`.
    anchor: Instant,
    start: SimTime,
    state: Mutex<State>,
    /// With [`Timing::Realtime`]: how late each held reply was sent, and how long the write
    /// that sent it took, in ns (a lock of its own, so that replies being sent do not wait
    /// for requests being served).
    sent: Option<Mutex<Sent>>,
}

/// Histograms of the held replies sent.
#[derive(Default)]
struct Sent {
    late: LatencyHistogram,
    write: LatencyHistogram,
}

struct State {
    sim: Simulator,
    /// Arrival of the latest request.
    last_arrival: SimTime,
    /// The byte path (journaling the page-level requests when they are recorded).
    bytes: HostBytes,
    record: Option<Recorder>,
    /// Requests the simulator failed, and the last failure.
    failures: u64,
    last_failure: Option<String>,
    /// Where failed checks are logged (with [`SimBackend::verify`]).
    log: Option<Log>,
    /// Live power cuts: those taken (`None` when the FTL cannot recover), the one armed and
    /// not struck yet (what made it, when), the connections a cut closes.
    cuts: Option<Vec<LiveCut>>,
    armed: Option<(CutTrigger, Instant)>,
    connections: Option<Arc<Connections>>,
    /// Connections numbered below this one were closed by a cut: their commands fail.
    dead_below: u64,
    /// The power-cut counters after the last cut (the next one's are the difference).
    cut_counts: PowerCutSummary,
}

impl SimBackend {
    /// Exports `sim` (whose device must keep payloads) as `name`; requests are recorded to
    /// `record` if given. The simulator's phase `serve` starts now.
    pub fn new(
        mut sim: Simulator,
        name: &str,
        timing: Timing,
        mut record: Option<Recorder>,
    ) -> Result<SimBackend, String> {
        if sim.device().payloads().is_none() {
            return Err("the device keeps no payloads (payloads=true)".into());
        }
        let geo = sim.device().geo();
        let ps = geo.page_size;
        if !ps.is_power_of_two() || !(MIN_BLOCK..=1 << 16).contains(&ps) {
            return Err(format!(
                "page size {ps} B: NBD needs a power of two from {MIN_BLOCK} B to 64 KiB"
            ));
        }
        let export = Export {
            name: name.to_string(),
            description: format!(
                "learnedftl: the {} FTL on {} logical bytes in {} B pages",
                sim.ftl().name(),
                geo.logical_bytes(),
                ps
            ),
            size: geo.logical_bytes(),
            flags: FLAG_HAS_FLAGS
                | FLAG_SEND_FLUSH
                | FLAG_SEND_FUA
                | FLAG_SEND_TRIM
                | FLAG_SEND_WRITE_ZEROES
                | FLAG_CAN_MULTI_CONN,
            block: BlockSize {
                min: MIN_BLOCK,
                preferred: ps,
                max_payload: MAX_PAYLOAD,
            },
        };
        sim.begin_phase("serve");
        // The report carries the power_cuts block whenever cuts on demand can strike.
        let recovers = sim.power_cut_refusal().is_none();
        if recovers {
            sim.track_power_cuts();
        }
        let start = sim.clock();
        let anchor = Instant::now();
        if sim.device().config().fdp.is_on() {
            // A learnedftl recording carries each write's placement ID, so that a replay
            // without `fdp_ranges` places it the same way; other formats cannot.
            record = record
                .map(|r| match r.format() {
                    Format::Recording => r.with_placement(),
                    _ => Ok(r),
                })
                .transpose()
                .map_err(|e| format!("--record: {e}"))?;
        }
        if let Some(rec) = record.as_mut().filter(|r| r.format() == Format::Recording) {
            // Time 0 of the recording on the wall clock, for phase marks taken outside.
            let unix = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            rec.comment(&format!("start_unix_ns={unix}"))
                .map_err(|e| format!("--record: {e}"))?;
        }
        Ok(SimBackend {
            export,
            timing,
            anchor,
            start,
            state: Mutex::new(State {
                sim,
                last_arrival: start,
                bytes: HostBytes::new(record.is_some()),
                record,
                failures: 0,
                last_failure: None,
                log: None,
                cuts: recovers.then(Vec::new),
                armed: None,
                connections: None,
                dead_below: 0,
                cut_counts: PowerCutSummary::default(),
            }),
            sent: (timing == Timing::Realtime).then(Mutex::default),
        })
    }

    /// Turns the checks of `serve --verify` on (docs/nbd.md "Verification"): a command whose
    /// pages a read returned in the wrong version (the oracle's stamp check) or with other
    /// bytes than were last written there (the byte check) is answered `NBD_EIO` rather than
    /// with its data, and a line naming it and the failed check goes to `log`. The counts are
    /// reported in `verify.bytes`. The simulator must verify reads (`Verify::Count`).
    pub fn verify(mut self, log: impl Fn(String) + Send + Sync + 'static) -> Result<Self, String> {
        let s = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        s.bytes.verify(&s.sim)?;
        s.log = Some(Box::new(log));
        Ok(self)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while serving one request must not stop the others: the state is only
        // changed through the simulator, which stays usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The metrics of everything served so far.
    pub fn live_metrics(&self) -> Metrics {
        self.lock().metrics()
    }

    /// Calls `f` with the simulator, between two requests.
    pub fn with_sim<R>(&self, f: impl FnOnce(&mut Simulator) -> R) -> R {
        f(&mut self.lock().sim)
    }

    /// With [`Timing::Realtime`], how late the replies sent so far left: the wall time the
    /// socket write that sent each was issued minus the wall time its simulated completion
    /// maps to, in µs. `None` with [`Timing::None`], which holds no reply.
    pub fn lateness(&self) -> Option<LatencySummary> {
        self.sent_summary(|s| &s.late)
    }

    /// With [`Timing::Realtime`], how long the socket write that sent each reply took, in µs
    /// (the kernel's part of the host path: copying the reply and waking the client).
    pub fn reply_writes(&self) -> Option<LatencySummary> {
        self.sent_summary(|s| &s.write)
    }

    fn sent_summary(&self, h: impl Fn(&Sent) -> &LatencyHistogram) -> Option<LatencySummary> {
        let s = self.sent.as_ref()?;
        Some(h(&s.lock().unwrap_or_else(|p| p.into_inner())).summary())
    }

    /// Requests the simulator failed so far (answered `NBD_EIO` or `NBD_ENOSPC`), and the last
    /// failure's message.
    pub fn failures(&self) -> (u64, Option<String>) {
        let s = self.lock();
        (s.failures, s.last_failure.clone())
    }

    /// The server's report: the run's, as `run --json` writes it (`config` gets the FTL's
    /// parameters added under `ftl`), and the replies' lateness.
    pub fn report(&self, preset: &str, seed: u64, mut config: serde_json::Value) -> ServeReport {
        let (lateness_us, reply_write_us) = (self.lateness(), self.reply_writes());
        let s = self.lock();
        let m = s.metrics();
        config["ftl"] = s.sim.ftl().params();
        let run = RunReport {
            ftl: s.sim.ftl().name().to_string(),
            preset: preset.to_string(),
            seed,
            config,
            phases: vec![m.clone()],
            result: m,
            trace: None,
        };
        ServeReport {
            run,
            live_power_cuts: s.cuts.clone(),
            lateness_us,
            reply_write_us,
        }
    }

    /// Has every power cut close the connections `connections` holds (the server's:
    /// [`crate::serve`]): clients see a disconnect and connect again; commands still arriving
    /// on a closed connection fail.
    pub fn close_on_cut(self, connections: Arc<Connections>) -> Self {
        self.lock().connections = Some(connections);
        self
    }

    /// Cuts the power inside one in every window of `every` page-level requests, at a seeded
    /// request and operation (`serve --power-cut-every N`; [`PowerCutPlan`]).
    pub fn plan_cuts(&self, every: u64, seed: u64) -> Result<(), String> {
        let mut s = self.lock();
        s.sim
            .plan_power_cuts(PowerCutPlan { every, seed })
            .map_err(|e| e.to_string())
    }

    /// Arms a power cut that strikes after `after_ops` more flash programs and erases (those
    /// of host writes, garbage collection, mapping write-back alike), inside whichever
    /// request issues it; [`SimBackend::strike_armed`] cuts an armed cut that found no such
    /// work between requests. Replaces a cut armed before.
    pub fn arm_cut(&self, trigger: CutTrigger, after_ops: u64) -> Result<(), String> {
        let mut s = self.lock();
        s.sim
            .arm_power_cut(PowerCut::AfterOps(after_ops))
            .map_err(|e| e.to_string())?;
        s.armed = Some((trigger, Instant::now()));
        Ok(())
    }

    /// If a cut armed at least `after` ago has not struck (the device issued too little flash
    /// work since), cuts the power now, between two requests.
    pub fn strike_armed(&self, after: Duration) -> Option<Result<LiveCut, String>> {
        let mut s = self.lock();
        // Under the lock: a cut that struck inside a request meanwhile has disarmed it.
        let (trigger, at) = s.armed?;
        (at.elapsed() >= after).then(|| self.cut_now(&mut s, trigger))
    }

    /// The cuts taken since the first `from` (which then counts them too), for logging.
    pub fn cuts_since(&self, from: &mut usize) -> Vec<LiveCut> {
        let s = self.lock();
        let new = s
            .cuts
            .as_deref()
            .unwrap_or_default()
            .get(*from..)
            .unwrap_or_default();
        *from += new.len();
        new.to_vec()
    }

    /// Cuts the power now, between two requests, and recovers the FTL from flash
    /// (docs/nbd.md "Power cuts"): taking the simulator's lock waits for the request being
    /// served, and requests arriving meanwhile wait for the recovery. With
    /// [`SimBackend::close_on_cut`] every connection is closed. Returns what the cut cost, or
    /// why it was refused (`no power cut: ...`, the FTL cannot recover; nothing changed) or
    /// failed (`power cut failed: ...`; later requests then fail).
    pub fn cut_power(&self, trigger: CutTrigger) -> Result<LiveCut, String> {
        self.cut_now(&mut self.lock(), trigger)
    }

    /// [`SimBackend::cut_power`] with the simulator's lock held.
    fn cut_now(&self, s: &mut State, trigger: CutTrigger) -> Result<LiveCut, String> {
        let now = self.start.after(self.anchor.elapsed().as_nanos() as u64);
        let wall = Instant::now();
        let at = now.max(s.last_arrival);
        let failures = s.verify_failures();
        s.sim.cut_power_now(at).map_err(|e| match e {
            EngineError::PowerCuts(why) => format!("no power cut: {why}"),
            e => format!("power cut failed: {e}"),
        })?;
        // Later requests arrive no earlier than the cut; the recovery's flash work keeps the
        // LUNs busy until it is done.
        s.last_arrival = at;
        let cut = Noticed {
            trigger,
            at,
            command: None,
            wall,
            failures_before: failures,
        };
        Ok(s.took_cut(self.start, self.anchor, cut))
    }

    /// Turns the device's power off now (`orderly`: write buffers flushed first, as at a
    /// host's shutdown; else as a power cut, which only power-loss protection survives
    /// whole): nothing is served after it.
    pub fn power_off(&self, orderly: bool) -> Result<(), String> {
        let now = self.start.after(self.anchor.elapsed().as_nanos() as u64);
        let mut s = self.lock();
        let at = now.max(s.last_arrival);
        s.sim.power_off(orderly, at).map_err(|e| e.to_string())
    }

    /// Flushes the recorded trace (call before exiting; recording goes on).
    pub fn flush_record(&self) -> Result<(), TraceError> {
        match self.lock().record.as_mut() {
            Some(r) => r.flush(),
            None => Ok(()),
        }
    }

    fn due(&self, done: SimTime) -> Option<Instant> {
        match self.timing {
            Timing::Realtime => Some(self.anchor + Duration::from_nanos(done.since(self.start))),
            Timing::None => None,
        }
    }
}

impl Backend for SimBackend {
    fn export(&self) -> Export {
        self.export.clone()
    }

    fn holds_replies(&self) -> bool {
        self.timing == Timing::Realtime
    }

    fn sent(&self, late: Duration, write: Duration) {
        if let Some(s) = &self.sent {
            let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            let mut s = s.lock().unwrap_or_else(|p| p.into_inner());
            s.late.record(ns(late));
            s.write.record(ns(write));
        }
    }

    fn execute(&self, conn: u64, cmd: Cmd<'_>) -> Result<Option<Instant>, NbdError> {
        let now = self.start.after(self.anchor.elapsed().as_nanos() as u64);
        let wall = Instant::now();
        let mut s = self.lock();
        if conn < s.dead_below {
            // Sent on a connection a power cut closed: the device never saw it.
            return Err(NbdError::EIO);
        }
        let arrival = now.max(s.last_arrival);
        s.last_arrival = arrival;
        let (recoveries, failures) = (s.sim.recoveries(), s.verify_failures());
        let what = s.cuts.is_some().then(|| describe(&cmd));
        let mut r = s.execute(cmd, arrival);
        if s.sim.recoveries() != recoveries {
            // A cut struck while serving it (its flash work, or the background work after
            // it): never acknowledged, whatever its pages now hold.
            let trigger = s.armed.map_or(CutTrigger::EveryRequests, |a| a.0);
            let cut = Noticed {
                trigger,
                at: arrival,
                command: what,
                wall,
                failures_before: failures,
            };
            s.took_cut(self.start, self.anchor, cut);
            r = Err(NbdError::EIO);
        }
        if s.record.is_some() {
            // When the reply leaves: held until the simulated completion, or at once (the
            // lateness of either is not counted: a few µs, docs/nbd.md "Timing").
            let reply = match (&r, self.timing) {
                (Ok(done), Timing::Realtime) => done.since(self.start),
                _ => self.anchor.elapsed().as_nanos() as u64,
            };
            s.record(conn, arrival.since(self.start), reply);
        }
        Ok(self.due(r?))
    }
}

/// A power cut the simulator just recovered from, as the server noticed it.
struct Noticed {
    trigger: CutTrigger,
    /// When the power was lost, simulated.
    at: SimTime,
    /// The NBD command it struck in.
    command: Option<String>,
    /// When the server took it (the recovery's wall time counts from here).
    wall: Instant,
    /// Reads the oracle had found wrong before.
    failures_before: u64,
}

/// A command as a cut's report names it: `write 8192+4096`.
fn describe(cmd: &Cmd<'_>) -> String {
    match cmd {
        Cmd::Read { offset, buf } => format!("read {offset}+{}", buf.len()),
        Cmd::Write {
            offset, data, fua, ..
        } => {
            format!(
                "write {offset}+{}{}",
                data.len(),
                if *fua { " fua" } else { "" }
            )
        }
        Cmd::Flush => "flush".into(),
        Cmd::Trim { offset, len, .. } => format!("trim {offset}+{len}"),
        Cmd::WriteZeroes { offset, len, .. } => format!("write-zeroes {offset}+{len}"),
    }
}

impl State {
    /// Notes a cut the simulator just recovered from and closes the connections; returns its
    /// report.
    fn took_cut(&mut self, start: SimTime, anchor: Instant, cut: Noticed) -> LiveCut {
        let Noticed {
            trigger,
            at,
            command,
            wall,
            failures_before,
        } = cut;
        self.armed = None;
        let now = self.sim.power_cuts().cloned().unwrap_or_default();
        let was = std::mem::replace(&mut self.cut_counts, now.clone());
        let connections_closed = match &self.connections {
            Some(c) => {
                let (open, next) = c.close_all();
                self.dead_below = next;
                open
            }
            None => 0,
        };
        let cut = LiveCut {
            n: now.count,
            wall_seconds: wall.duration_since(anchor).as_secs_f64(),
            sim_seconds: at.since(start) as f64 / 1e9,
            trigger,
            struck_in: self
                .sim
                .last_cut_in()
                .map_or("between_operations", |c| c.key()),
            command,
            lost_unflushed_pages: now.lost_unflushed_pages - was.lost_unflushed_pages,
            lost_flushed_pages: now.lost_flushed_pages - was.lost_flushed_pages,
            pages_read_back_wrong: self.verify_failures() - failures_before,
            recovery_sim_seconds: now.recovery_sim_seconds - was.recovery_sim_seconds,
            recovery_flash_reads: now.recovery_flash_reads - was.recovery_flash_reads,
            recovery_wall_ms: wall.elapsed().as_secs_f64() * 1e3,
            connections_closed,
        };
        self.cuts.get_or_insert_with(Vec::new).push(cut.clone());
        cut
    }

    /// Reads the oracle found wrong so far.
    fn verify_failures(&self) -> u64 {
        self.sim.oracle().map_or(0, |o| o.failures())
    }

    /// Records the page-level requests the last command issued, when recording: a
    /// learnedftl recording gets the command's connection, issue and reply times (ns since the
    /// server started), and with FDP each write's placement ID as the engine placed it; other
    /// formats each request's simulated arrival.
    fn record(&mut self, conn: u64, issue_ns: u64, reply_ns: u64) {
        let Some(rec) = self.record.as_mut() else {
            return;
        };
        let recording = rec.format() == Format::Recording;
        let placement = rec.placement().then(|| &self.sim.device().config().fdp);
        let ps = self.sim.device().geo().page_size as u64;
        for issued in self.bytes.drain_journal() {
            let io = issued.io;
            let mut line = TraceRecord {
                placement: None,
                line: 0,
                time_ns: io.arrival.0,
                op: io.op,
                offset: io.offset,
                len: io.len,
                device: 0,
                done_ns: None,
            };
            if recording {
                line.time_ns = issue_ns;
                line.done_ns = Some(reply_ns.max(issue_ns));
                line.device = u32::try_from(conn).unwrap_or(u32::MAX);
            }
            if let Some(fdp) = placement.filter(|_| io.op == Op::Write) {
                line.placement = Some(fdp.write_placement(io.placement, io.offset / ps));
            }
            if let Err(e) = rec.write(&line) {
                self.last_failure = Some(format!("recording stopped: {e}"));
                self.record = None;
                break;
            }
        }
    }

    /// The simulator's metrics so far, with what the byte path's checks counted.
    fn metrics(&self) -> Metrics {
        let mut m = self.sim.live_metrics();
        m.verify.bytes = self.bytes.byte_checks();
        m
    }

    /// Executes `cmd` at `t` through the byte path and maps a failure to its NBD error.
    fn execute(&mut self, cmd: Cmd<'_>, t: SimTime) -> Result<SimTime, NbdError> {
        let r = self.bytes.execute(&mut self.sim, cmd, t);
        r.map_err(|e| {
            self.failures += 1;
            let code = match &e {
                EngineError::Ftl {
                    source: FtlError::NoSpace | FtlError::TableFull(_),
                    ..
                } => NbdError::ENOSPC,
                _ => NbdError::EIO,
            };
            let message = e.to_string();
            if let (EngineError::Verify(_), Some(log)) = (&e, &self.log) {
                log(format!("answered NBD_EIO: {message}"));
            }
            self.last_failure = Some(message);
            code
        })
    }
}
