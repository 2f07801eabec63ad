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
use crate::server::{Backend, Cmd};
use learnedftl::addr::SimTime;
use learnedftl::engine::bytes::HostBytes;
use learnedftl::engine::{EngineError, Simulator};
use learnedftl::error::FtlError;
use learnedftl::run::RunReport;
use learnedftl::stats::{LatencyHistogram, LatencySummary, Metrics};
use learnedftl::trace::{Format, TraceError, TraceRecord, TraceWriter};
use serde::Serialize;
use std::fmt;
use std::io::Write;
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};
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

/// What `serve --json` writes: the keys of `run --json`, and `lateness_us` and
/// `reply_write_us` with [`Timing::Realtime`] (docs/metrics.md).
#[derive(Clone, Debug, Serialize)]
pub struct ServeReport {
    /// The run's report.
    #[serde(flatten)]
    pub run: RunReport,
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
        if sim.power_cut_refusal().is_none() {
            sim.track_power_cuts();
        }
        let start = sim.clock();
        let anchor = Instant::now();
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
            lateness_us,
            reply_write_us,
        }
    }

    /// Cuts the power between two requests and recovers the FTL from flash (docs/nbd.md):
    /// taking the simulator's lock waits for the request being served, whose reply then is
    /// the last acknowledgement before the cut, and requests arriving meanwhile wait for the
    /// recovery. Connections go on. Returns a line saying what the recovery cost, or one
    /// saying why the cut was refused (`no power cut: ...`, the FTL cannot recover; nothing
    /// changed) or failed (`power cut failed: ...`; later requests then fail).
    pub fn cut_power(&self) -> Result<String, String> {
        let now = self.start.after(self.anchor.elapsed().as_nanos() as u64);
        let mut s = self.lock();
        let before = s.sim.live_metrics();
        let at = now.max(s.last_arrival);
        let done = s.sim.cut_power_now(at).map_err(|e| match e {
            EngineError::PowerCuts(why) => format!("no power cut: {why}"),
            e => format!("power cut failed: {e}"),
        })?;
        // Later requests arrive no earlier than the cut; the recovery's flash work keeps the
        // LUNs busy until it is done.
        s.last_arrival = at;
        let after = s.sim.live_metrics();
        let (b, a) = (
            before.power_cuts.unwrap_or_default(),
            after.power_cuts.unwrap_or_default(),
        );
        Ok(format!(
            "power cut {} at simulated {:.6} s: recovered in {:.6} simulated s, {} flash reads; {} unflushed pages lost, {} pages read back wrong",
            a.count,
            at.since(self.start) as f64 / 1e9,
            done.since(at) as f64 / 1e9,
            a.recovery_flash_reads - b.recovery_flash_reads,
            a.lost_unflushed_pages - b.lost_unflushed_pages,
            after.verify.failures - before.verify.failures,
        ))
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
        let mut s = self.lock();
        let arrival = now.max(s.last_arrival);
        s.last_arrival = arrival;
        let r = s.execute(cmd, arrival);
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

impl State {
    /// Records the page-level requests the last command issued, when recording: a
    /// learnedftl recording gets the command's connection, issue and reply times (ns since the
    /// server started); other formats each request's simulated arrival.
    fn record(&mut self, conn: u64, issue_ns: u64, reply_ns: u64) {
        let Some(rec) = self.record.as_mut() else {
            return;
        };
        let recording = rec.format() == Format::Recording;
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
