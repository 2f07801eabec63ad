//! Conformance checking (`learnedftl check`, SPEC §9): seeded host operation streams driven
//! through the engine or the NBD server, every read compared byte for byte with what the host
//! last acknowledged (and with the oracle's stamp), power cuts anywhere, and a failing stream
//! shrunk to a short one with a command that replays it.
//!
//! * [`stream`]: the generator and the preconditioning (a full, fragmented device).
//! * [`model`]: the expected content of every sector, and the versions a recovery may bring
//!   back.
//! * this module: the [`Driver`] a stream runs on ([`EngineDriver`] here; the NBD crate has
//!   one that goes through `serve` over sockets), the loop that checks each batch, shrinking,
//!   and the per-FTL report.
//!
//! An FTL is conformant when `learnedftl check --ftl NAME` passes (docs/check.md).

pub mod model;
pub mod stream;

use crate::addr::{Lpn, SimTime};
use crate::config::DeviceConfig;
use crate::device::PowerCut;
use crate::engine::bytes::{Cmd, HostBytes};
use crate::engine::{Progress, SimOptions, Simulator, Verify};
use crate::params::Params;
use model::Model;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use stream::{HostOp, Kind, StreamSpec, SECTOR};

/// Where a stream is driven.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Through {
    /// Straight into the simulator, through the byte path the NBD server uses.
    Engine,
    /// Through the NBD server (`serve`) over sockets, several connections at once.
    Nbd,
}

impl std::str::FromStr for Through {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "engine" => Ok(Through::Engine),
            "nbd" => Ok(Through::Nbd),
            _ => Err(format!("'{s}': check goes through engine or nbd")),
        }
    }
}

impl std::fmt::Display for Through {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Through::Engine => "engine",
            Through::Nbd => "nbd",
        })
    }
}

/// What one check runs: enough to run it again exactly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSpec {
    /// FTL name (in [`crate::ftl::FTLS`]).
    pub ftl: String,
    /// Device preset.
    pub preset: String,
    /// `key=value` device and FTL parameters.
    #[serde(default)]
    pub set: Vec<String>,
    /// Seed of the preconditioning, the stream and the cuts.
    pub seed: u64,
    /// Operations in the stream.
    pub ops: u64,
    /// One power cut per this many operations on average (0: none).
    #[serde(default)]
    pub cut_every: u64,
    /// Where the stream is driven.
    pub through: Through,
    /// NBD connections used at once (with `through = nbd`).
    #[serde(default = "default_connections")]
    pub connections: u32,
}

fn default_connections() -> u32 {
    4
}

/// Mapping checkpoints written under power cuts unless `checkpoint_every` is set: cuts then
/// land inside checkpoints too, and recoveries read less.
pub const CUT_CHECKPOINT_EVERY: u64 = 2048;

impl CheckSpec {
    /// The device and the FTL's parameters (payloads on).
    pub fn device(&self) -> Result<(DeviceConfig, Params), CheckError> {
        let mut params = Params::from_assignments(self.set.iter().map(String::as_str), "--set")?;
        if self.cut_every > 0 && !params.keys().any(|k| k == "checkpoint_every") {
            params.insert(
                "checkpoint_every",
                &CUT_CHECKPOINT_EVERY.to_string(),
                "check --power-cuts",
            );
        }
        let mut cfg = DeviceConfig::from_params(&self.preset, &mut params)?;
        cfg.payloads = true;
        cfg.validate()?;
        if cfg.geometry.page_size as u64 % SECTOR != 0 {
            return Err(CheckError::Setup(format!(
                "page size {} B is not a whole number of {SECTOR}-byte sectors",
                cfg.geometry.page_size
            )));
        }
        Ok((cfg, params))
    }

    /// The command line that runs this check again.
    pub fn command(&self) -> String {
        let mut c = format!(
            "learnedftl check --ftl {} --preset {} --seed {} --ops {} --through {}",
            self.ftl, self.preset, self.seed, self.ops, self.through
        );
        if self.cut_every > 0 {
            c += &format!(" --power-cuts {}", self.cut_every);
        }
        if self.through == Through::Nbd && self.connections != default_connections() {
            c += &format!(" --connections {}", self.connections);
        }
        for s in &self.set {
            c += &format!(" --set {s}");
        }
        c
    }
}

/// A check that could not run (not a failure of the FTL).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] crate::error::ConfigError),
    /// Anything else that keeps the check from starting.
    #[error("{0}")]
    Setup(String),
}

/// How much of a batch a [`Driver`] ran.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    /// Operations that ran (the first ones of the batch).
    pub ops: usize,
    /// A power cut struck after the last of them completed, not inside it.
    pub cut_after: bool,
}

/// What a [`Driver`] reports when an operation fails: its index in the batch and why.
pub type DriverError = (usize, String);

/// Runs batches of a stream on a simulated device.
pub trait Driver {
    /// A power cut before the batch's first operation: through the engine, armed to strike
    /// after `after_ops` more flash programs and erases, or right after that operation if it
    /// issues fewer; through NBD, now, between two batches.
    fn cut(&mut self, after_ops: u32) -> Result<(), String>;
    /// Executes one batch of operations in flight together, none conflicting with another
    /// ([`HostOp::conflicts`]); `bufs[i]` holds write `i`'s data or receives read `i`'s.
    /// Returns how many ran: all, or up to the one a power cut struck in or right after (the
    /// rest are submitted again as a batch of their own) or the oracle failed in.
    fn run_batch(&mut self, ops: &[HostOp], bufs: &mut [Vec<u8>]) -> Result<Ran, DriverError>;
    /// Calls `f` with the simulator, between batches.
    fn with_sim(&mut self, f: &mut dyn FnMut(&mut Simulator));
}

/// The byte-path command of `op` with `buf` as its data.
pub fn command<'a>(op: &HostOp, buf: &'a mut [u8]) -> Cmd<'a> {
    let (offset, len, fua) = (op.offset, op.len, op.fua);
    match op.kind {
        Kind::Read => Cmd::Read { offset, buf },
        Kind::Write => Cmd::Write {
            offset,
            data: buf,
            fua,
        },
        Kind::Trim => Cmd::Trim { offset, len, fua },
        Kind::Flush => Cmd::Flush,
        Kind::WriteZeroes | Kind::WriteZeroesNoHole => Cmd::WriteZeroes {
            offset,
            len,
            fua,
            no_hole: op.kind == Kind::WriteZeroesNoHole,
        },
    }
}

/// Drives a stream straight into a simulator: every operation of a batch arrives when the
/// previous batch has completed (a closed loop at the batch's queue depth).
pub struct EngineDriver {
    sim: Simulator,
    bytes: HostBytes,
    t: SimTime,
}

impl EngineDriver {
    /// A driver of `sim` from its clock on.
    pub fn new(sim: Simulator) -> EngineDriver {
        let t = sim.clock();
        EngineDriver {
            sim,
            bytes: HostBytes::new(false),
            t,
        }
    }

    /// The simulator.
    pub fn into_sim(self) -> Simulator {
        self.sim
    }
}

impl Driver for EngineDriver {
    fn cut(&mut self, after_ops: u32) -> Result<(), String> {
        self.sim
            .arm_power_cut(PowerCut::AfterOps(after_ops as u64))
            .map_err(|e| e.to_string())
    }

    fn run_batch(&mut self, ops: &[HostOp], bufs: &mut [Vec<u8>]) -> Result<Ran, DriverError> {
        let mut done = self.t;
        let mut cut_after = false;
        let recoveries = self.sim.recoveries();
        let failures = |s: &Simulator| s.oracle().map_or(0, |o| o.failures());
        let failed = failures(&self.sim);
        let mut ran = 0;
        for (i, (op, buf)) in ops.iter().zip(bufs.iter_mut()).enumerate() {
            let d = self
                .bytes
                .execute(&mut self.sim, command(op, buf), self.t)
                .map_err(|e| (i, e.to_string()))?;
            done = done.max(d);
            ran = i + 1;
            // A cut its operation did not reach strikes right after it.
            if i == 0 && op.cut.is_some() && self.sim.device().power_cut_armed() {
                self.sim.cut_power_now(d).map_err(|e| (i, e.to_string()))?;
                cut_after = true;
            }
            // Stop at a cut (what follows is a batch of its own) or at a wrong version (the
            // failure is this operation's).
            if self.sim.recoveries() != recoveries || failures(&self.sim) != failed {
                break;
            }
        }
        self.t = done;
        Ok(Ran {
            ops: ran,
            cut_after,
        })
    }

    fn with_sim(&mut self, f: &mut dyn FnMut(&mut Simulator)) {
        f(&mut self.sim)
    }
}

/// A failure the check found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Index of the operation in the stream (0-based; of the shrunk stream once shrunk).
    pub op_index: u64,
    /// The operation.
    pub op: HostOp,
    /// What went wrong.
    pub what: String,
    /// The first wrong page, if a read returned wrong bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lpn: Option<u32>,
    /// What it should have held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// What it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
    /// Operations in the stream that reproduces it (after shrinking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_ops: Option<u64>,
    /// The shrunk stream, saved for `learnedftl check --replay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_file: Option<String>,
    /// The command that replays it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let o = &self.op;
        write!(
            f,
            "operation {} ({:?} of {} B at byte {}{}): {}",
            self.op_index,
            o.kind,
            o.len,
            o.offset,
            if o.fua { ", FUA" } else { "" },
            self.what
        )?;
        if let Some(l) = self.lpn {
            write!(f, "; LPN {l}")?;
        }
        if let (Some(e), Some(x)) = (&self.expected, &self.found) {
            write!(f, ": expected {e}, found {x}")?;
        }
        Ok(())
    }
}

/// Counters of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Operations executed.
    pub ops: u64,
    /// Read operations compared.
    pub reads_checked: u64,
    /// Bytes compared.
    pub bytes_checked: u64,
    /// Power cuts recovered from.
    pub power_cuts: u64,
}

/// The report of one FTL's check (JSON: one object per FTL).
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// FTL.
    pub ftl: String,
    /// Preset.
    pub preset: String,
    /// Seed.
    pub seed: u64,
    /// Where it was driven.
    pub through: Through,
    /// Operations executed (preconditioning not counted).
    pub ops: u64,
    /// Read operations compared byte for byte.
    pub reads_checked: u64,
    /// Bytes compared.
    pub bytes_checked: u64,
    /// Power cuts recovered from.
    pub power_cuts: u64,
    /// Failures found (at most one per run: the first, shrunk).
    pub failures: Vec<Failure>,
    /// Wall-clock seconds of the stream (preconditioning and shrinking not counted).
    pub seconds: f64,
    /// Operations per wall-clock second.
    pub ops_per_sec: f64,
    /// Wall-clock seconds of the preconditioning.
    pub precondition_seconds: f64,
    /// The command that runs this check again.
    pub command: String,
}

/// A saved failing stream (`learnedftl check --replay FILE`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplayFile {
    /// The check it came from (its `ops` is the original stream's length).
    pub spec: CheckSpec,
    /// The failure as found.
    pub failure: String,
    /// The stream to replay after the preconditioning.
    pub ops: Vec<HostOp>,
}

/// A simulator preconditioned for a check, and the model of its content.
#[derive(Clone)]
pub struct Prepared {
    /// The simulator (clone it per run).
    pub sim: Simulator,
    /// What every sector holds.
    pub model: Model,
    /// The last data identity the preconditioning used.
    pub last_id: u32,
}

/// Builds the device and FTL of `spec` and preconditions them through the engine: the whole
/// logical space written, then as much again at random (a full, fragmented device).
pub fn prepare(spec: &CheckSpec) -> Result<Prepared, CheckError> {
    let (cfg, params) = spec.device()?;
    let opts = SimOptions {
        verify: Verify::Count,
        check_invariants: false,
    };
    let sim = Simulator::new(&cfg, &spec.ftl, params, opts)?;
    if spec.cut_every > 0 {
        if let Some(why) = sim.power_cut_refusal() {
            return Err(CheckError::Setup(format!("--power-cuts: {why}")));
        }
    }
    let g = cfg.geometry;
    let ps = g.page_size as u64;
    let ops = stream::precondition(spec.seed, g.logical_bytes(), ps);
    let last_id = ops.iter().map(|o| o.id).max().unwrap_or(0);
    let mut driver = EngineDriver::new(sim);
    let mut run = Run::new(Model::new(g.logical_bytes(), ps, spec.cut_every > 0));
    if let Some(f) = run.ops(&mut driver, &ops, 0, None) {
        return Err(CheckError::Setup(format!(
            "the preconditioning failed: {f} (replay: {})",
            spec.command()
        )));
    }
    let mut sim = driver.into_sim();
    sim.begin_phase("check");
    Ok(Prepared {
        sim,
        model: run.model,
        last_id,
    })
}

/// The state of a run: the model and counters.
struct Run {
    model: Model,
    counts: Counts,
    bufs: Vec<Vec<u8>>,
    recoveries: u64,
    oracle_failures: u64,
    /// Batches run.
    batches: u64,
}

/// Batches between two checks of the FTL's invariants.
const INVARIANTS_EVERY: u64 = 1024;

impl Run {
    fn new(model: Model) -> Run {
        Run {
            model,
            counts: Counts::default(),
            bufs: Vec::new(),
            recoveries: 0,
            oracle_failures: 0,
            batches: 0,
        }
    }

    /// Runs `ops` (from stream index `base`) on `driver`, checking each batch and the FTL's
    /// invariants every [`INVARIANTS_EVERY`] batches and at the end; returns the first
    /// failure. `deadline` stops early (shrinking's trials), as a pass.
    fn ops(
        &mut self,
        driver: &mut dyn Driver,
        ops: &[HostOp],
        base: u64,
        deadline: Option<Instant>,
    ) -> Option<Failure> {
        driver.with_sim(&mut |s| {
            self.recoveries = s.recoveries();
            self.oracle_failures = s.oracle().map_or(0, |o| o.failures());
        });
        let ps = self.model.page_bytes();
        for range in stream::batches(ops, ps) {
            if deadline.is_some_and(|d| Instant::now() > d) {
                return None;
            }
            let first = range.start;
            let mut at = first;
            while at < range.end {
                match self.batch(driver, &ops[at..range.end], base + at as u64) {
                    Ok(ran) => at += ran,
                    Err(f) => return Some(*f),
                }
            }
            self.batches += 1;
            if self.batches % INVARIANTS_EVERY == 0 {
                if let Err(f) = invariants(driver, &ops[first], base + first as u64) {
                    return Some(*f);
                }
            }
        }
        let last = ops.len().saturating_sub(1);
        ops.last()
            .and_then(|op| invariants(driver, op, base + last as u64).err())
            .map(|f| *f)
    }

    /// One batch starting at stream index `first`; returns how many of its operations ran
    /// (all, unless a power cut struck inside one: the rest are a batch of their own).
    fn batch(
        &mut self,
        driver: &mut dyn Driver,
        ops: &[HostOp],
        first: u64,
    ) -> Result<usize, Box<Failure>> {
        let fail = |i: usize, what: String| Box::new(Failure::new(first + i as u64, ops[i], what));
        if let Some(k) = ops[0].cut {
            driver
                .cut(k)
                .map_err(|e| fail(0, format!("power cut: {e}")))?;
            // Through NBD the cut is done: adopt what recovery brought back before going on.
            self.after_cuts(driver, &ops[..1], first)?;
        }
        for op in ops.iter().filter(|o| o.kind.writes()) {
            self.model.remember(op.offset, op.len);
        }
        self.bufs
            .resize_with(self.bufs.len().max(ops.len()), Vec::new);
        for (op, buf) in ops.iter().zip(&mut self.bufs) {
            if matches!(op.kind, Kind::Read | Kind::Write) {
                buf.resize(op.len as usize, 0);
                if op.kind == Kind::Write {
                    model::fill(op.id, op.offset / SECTOR, buf);
                }
            } else {
                buf.clear();
            }
        }
        let mut floor = 0;
        driver.with_sim(&mut |s| floor = s.last_stamp());
        let Ran {
            ops: ran,
            cut_after,
        } = driver
            .run_batch(ops, &mut self.bufs[..ops.len()])
            .map_err(|(i, e)| fail(i, e))?;
        let ops = &ops[..ran];
        self.counts.ops += ran as u64;
        // The new versions' stamps, and whether a cut struck (in or after the last operation
        // that ran).
        let mut stamps = Vec::new();
        let mut recoveries = 0;
        driver.with_sim(&mut |s| {
            recoveries = s.recoveries();
            let o = s.oracle().expect("checks verify");
            for op in ops.iter().filter(|o| o.kind.writes()) {
                for lpn in self.touched(op) {
                    stamps.push(o.expected(Lpn(lpn)));
                }
            }
        });
        let cut = recoveries != self.recoveries;
        let interrupted = cut && !cut_after;
        let mut stamps = stamps.into_iter();
        for (i, op) in ops.iter().enumerate().filter(|(_, o)| o.kind.writes()) {
            for lpn in self.touched(op) {
                let s = stamps.next().expect("one per touched page");
                if !self.apply(op, lpn, s, floor, cut, interrupted) {
                    return Err(Box::new(Failure {
                        lpn: Some(lpn),
                        expected: Some(format!("a stamp above {floor}")),
                        found: Some(format!("stamp {s}")),
                        ..*fail(i, "acknowledged, but the page holds no new version".into())
                    }));
                }
            }
        }
        // Reads before the cut saw the state before it; a read the cut struck in was served
        // again after the recovery.
        let before_cut = if interrupted { ran - 1 } else { ran };
        for i in 0..before_cut {
            self.finish(ops, i, first)?;
        }
        if cut {
            self.after_cuts(driver, ops, first)?;
        }
        if interrupted {
            self.finish(ops, ran - 1, first)?;
        }
        self.oracle(driver, ops, first)?;
        Ok(ran)
    }

    /// Compares read `i` of the batch with the model, or notes what a flush or FUA made
    /// durable.
    fn finish(&mut self, ops: &[HostOp], i: usize, first: u64) -> Result<(), Box<Failure>> {
        let op = &ops[i];
        match op.kind {
            Kind::Read => {
                let (sectors, bad) = self.model.compare(op.offset, &self.bufs[i]);
                self.counts.reads_checked += 1;
                self.counts.bytes_checked += sectors * SECTOR;
                if let Some(m) = bad {
                    let page_sectors = self.model.page_bytes() / SECTOR;
                    let what = format!(
                        "read returned wrong bytes in {} of its {} sectors (first: sector {})",
                        m.sectors,
                        op.len / SECTOR,
                        m.sector
                    );
                    return Err(Box::new(Failure {
                        lpn: Some((m.sector / page_sectors) as u32),
                        expected: Some(expected_text(m.expected, m.sector)),
                        found: Some(m.found),
                        ..Failure::new(first + i as u64, *op, what)
                    }));
                }
            }
            Kind::Flush => self.model.durable(),
            _ if op.fua => self.model.durable_range(op.offset, op.len),
            _ => {}
        }
        Ok(())
    }

    /// The pages an operation changes: a trim only the whole pages inside its range.
    fn touched(&self, op: &HostOp) -> std::ops::Range<u32> {
        let ps = self.model.page_bytes();
        match op.kind {
            Kind::Trim => match crate::engine::bytes::inner_pages(ps, op.offset, op.len) {
                Some((a, n)) => (a / ps) as u32..((a + n) / ps) as u32,
                None => 0..0,
            },
            _ => self.model.pages(op.offset, op.len),
        }
    }

    /// Page `lpn`, which `op` changes, now holds version `stamp`: the operation's if it is
    /// new (a stamp above `floor`, the last one before the batch, or a discard of the whole
    /// page), else (after a `cut`) an older one a recovery brought back, which
    /// [`Run::after_cuts`] adopts. Returns false when, without a cut, the page holds no new
    /// version. `interrupted`: the cut struck inside the batch's last operation.
    fn apply(
        &mut self,
        op: &HostOp,
        lpn: u32,
        stamp: u32,
        floor: u32,
        cut: bool,
        interrupted: bool,
    ) -> bool {
        let ps = self.model.page_bytes();
        let (p0, p1) = (lpn as u64 * ps, (lpn as u64 + 1) * ps);
        let (a, b) = (op.offset.max(p0), (op.offset + op.len).min(p1));
        let whole = (a, b) == (p0, p1);
        let discarded = stamp == 0 && whole && op.kind != Kind::Write;
        if stamp <= floor && !discarded {
            return cut || stamp == self.model.stamp(lpn);
        }
        self.model
            .set(a, b - a, if op.kind == Kind::Write { op.id } else { 0 });
        // A read-modify-write a cut interrupted may have merged bytes recovery chose.
        if interrupted && !whole {
            self.model.forget_outside(lpn, a, b - a);
        }
        self.model.set_stamp(lpn, stamp);
        true
    }

    /// After a recovery: every page must hold a version the model knows may come back. `ops`
    /// (from stream index `first`) ran; the cut struck in the last.
    fn after_cuts(
        &mut self,
        driver: &mut dyn Driver,
        ops: &[HostOp],
        first: u64,
    ) -> Result<(), Box<Failure>> {
        let mut unknown = None;
        let model = &mut self.model;
        let mut recoveries = 0;
        driver.with_sim(&mut |s| {
            recoveries = s.recoveries();
            let o = s.oracle().expect("checks verify");
            for lpn in 0..s.device().geo().logical_pages as u32 {
                let stamp = o.expected(Lpn(lpn));
                if !model.adopt(lpn, stamp) && unknown.is_none() {
                    unknown = Some((lpn, stamp, model.stamp(lpn)));
                }
            }
        });
        self.counts.power_cuts += recoveries - self.recoveries;
        self.recoveries = recoveries;
        match unknown {
            None => Ok(()),
            Some((lpn, got, want)) => Err(Box::new(Failure {
                lpn: Some(lpn),
                expected: Some(format!(
                    "stamp {want} or a version since the last flush"
                )),
                found: Some(format!("stamp {got}")),
                ..Failure::new(
                    first + ops.len() as u64 - 1,
                    ops[ops.len() - 1],
                    "after a power cut a page came back as a version no acknowledged, unflushed write left (a flushed write was lost)".into(),
                )
            })),
        }
    }

    /// Stamp-level failures the engine's oracle counted during the batch `ops` (those that
    /// ran), reported at its last operation (through the engine, the one that failed).
    fn oracle(
        &mut self,
        driver: &mut dyn Driver,
        ops: &[HostOp],
        first: u64,
    ) -> Result<(), Box<Failure>> {
        let mut msg = None;
        let before = self.oracle_failures;
        driver.with_sim(&mut |s| {
            let o = s.oracle().expect("checks verify");
            if o.failures() > before {
                msg = Some(o.messages().last().cloned().unwrap_or_default());
            }
            self.oracle_failures = o.failures();
        });
        match msg {
            None => Ok(()),
            Some(m) => {
                let last = ops.len() - 1;
                let what = if last == 0 {
                    format!("the oracle's stamp check failed: {m}")
                } else {
                    format!("the oracle's stamp check failed in this operation or one of the {last} in flight before it: {m}")
                };
                Err(Box::new(Failure::new(first + last as u64, ops[last], what)))
            }
        }
    }
}

/// Checks the FTL's invariants against the device.
fn invariants(driver: &mut dyn Driver, op: &HostOp, index: u64) -> Result<(), Box<Failure>> {
    let mut r = Ok(());
    driver.with_sim(&mut |s| r = s.ftl().check_invariants(s.device()));
    r.map_err(|e| {
        Box::new(Failure::new(
            index,
            *op,
            format!("FTL invariant broken: {e}"),
        ))
    })
}

fn expected_text(id: u32, sector: u64) -> String {
    match id {
        0 => "zeroes".into(),
        id => format!("write {id}'s data for sector {sector}"),
    }
}

impl Failure {
    fn new(op_index: u64, op: HostOp, what: String) -> Failure {
        Failure {
            op_index,
            op,
            what,
            lpn: None,
            expected: None,
            found: None,
            stream_ops: None,
            replay_file: None,
            replay: None,
        }
    }
}

/// How a check runs beyond its spec.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Wall-clock time shrinking a failure may take.
    pub shrink_time: Duration,
    /// Where failing streams are saved (created if missing).
    pub failures_dir: std::path::PathBuf,
}

/// Makes a driver for a simulator (a fresh one per shrinking trial).
pub type MakeDriver<'a> = dyn FnMut(Simulator) -> Result<Box<dyn Driver>, String> + 'a;

/// Runs `spec`'s stream (or `ops`, a replayed one) on drivers `make` builds from the prepared
/// simulator, reporting operations done to `progress`; a failure is shrunk and saved with its
/// replay command.
pub fn run(
    spec: &CheckSpec,
    ops: Option<Vec<HostOp>>,
    opts: &RunOptions,
    make: &mut MakeDriver<'_>,
    progress: &mut dyn Progress,
) -> Result<CheckReport, CheckError> {
    let t0 = Instant::now();
    let prepared = prepare(spec)?;
    let precondition_seconds = t0.elapsed().as_secs_f64();
    let g = prepared.sim.device().geo();
    let stream = StreamSpec {
        ops: spec.ops,
        seed: spec.seed,
        cut_every: spec.cut_every,
    };
    let (lb, ps) = (g.logical_bytes(), g.page_size as u64);
    let t1 = Instant::now();
    let mut run = Run::new(prepared.model.clone());
    let mut driver = make(prepared.sim.clone()).map_err(CheckError::Setup)?;
    progress.start(
        "check",
        Some(ops.as_ref().map_or(spec.ops, |o| o.len() as u64)),
    );
    let failure = match &ops {
        Some(ops) => run.ops(driver.as_mut(), ops, 0, None),
        // Chunk by chunk: a long stream is never held whole.
        None => {
            let mut gen = stream::Generator::new(&stream, lb, ps, prepared.last_id);
            let mut chunk = Vec::new();
            let mut failure = None;
            loop {
                let base = gen.position();
                chunk.clear();
                if !gen.fill(&mut chunk) {
                    break;
                }
                failure = run.ops(driver.as_mut(), &chunk, base, None);
                if failure.is_some() {
                    break;
                }
                progress.advance(chunk.len() as u64);
            }
            failure
        }
    };
    progress.finish();
    drop(driver);
    let seconds = t1.elapsed().as_secs_f64();
    let counts = run.counts;
    let failures = match failure {
        None => Vec::new(),
        Some(f) => {
            // The stream up to twice the failure's index, generated again (shrinking may use
            // what follows the failure).
            let ops = ops.unwrap_or_else(|| {
                let n = (2 * (f.op_index + 1)).min(spec.ops);
                let s = StreamSpec { ops: n, ..stream };
                stream::generate(&s, lb, ps, prepared.last_id)
            });
            vec![shrink_and_save(spec, &prepared, &ops, f, opts, make)]
        }
    };
    Ok(CheckReport {
        ftl: spec.ftl.clone(),
        preset: spec.preset.clone(),
        seed: spec.seed,
        through: spec.through,
        ops: counts.ops,
        reads_checked: counts.reads_checked,
        bytes_checked: counts.bytes_checked,
        power_cuts: counts.power_cuts,
        failures,
        seconds,
        ops_per_sec: counts.ops as f64 / seconds.max(1e-9),
        precondition_seconds,
        command: spec.command(),
    })
}

/// Shrinks the stream that failed with `f` (delta debugging: ever smaller subsets that still
/// fail, for at most `opts.shrink_time`), saves it and names the command that replays it.
fn shrink_and_save(
    spec: &CheckSpec,
    prepared: &Prepared,
    ops: &[HostOp],
    f: Failure,
    opts: &RunOptions,
    make: &mut MakeDriver<'_>,
) -> Failure {
    let deadline = Instant::now() + opts.shrink_time;
    let mut trial = |candidate: &[HostOp]| -> Option<Failure> {
        let mut driver = make(prepared.sim.clone()).ok()?;
        let mut run = Run::new(prepared.model.clone());
        run.ops(
            driver.as_mut(),
            candidate,
            0,
            Some(deadline + Duration::from_secs(60)),
        )
    };
    // As many operations after the failure as before stay until the end: removing an earlier
    // one may need a later one to fail again (a fault on the n-th page read needs n reads).
    // Candidates are only ever subsets, each tested as it is.
    let around = ops[..(2 * (f.op_index as usize + 1)).min(ops.len())].to_vec();
    let (short, f) = coarse(around, f, &mut trial, deadline);
    let (mut small, mut failure) = ddmin(short, f, &mut trial, deadline);
    let end = failure.op_index as usize + 1;
    if end < small.len() {
        if let Some(f) = trial(&small[..end]) {
            small.truncate(end);
            failure = f;
        }
    }
    failure.stream_ops = Some(small.len() as u64);
    let file = ReplayFile {
        spec: spec.clone(),
        failure: failure.to_string(),
        ops: small,
    };
    let name = format!("{}-{}-seed{}.json", spec.ftl, spec.through, spec.seed);
    let path = opts.failures_dir.join(name);
    let saved = std::fs::create_dir_all(&opts.failures_dir)
        .and_then(|_| {
            let text = serde_json::to_string_pretty(&file).expect("serialisable");
            std::fs::write(&path, text)
        })
        .map(|_| path.display().to_string());
    match saved {
        Ok(p) => {
            failure.replay = Some(format!("learnedftl check --replay {p}"));
            failure.replay_file = Some(p);
        }
        // The unshrunk stream replays from the seed alone.
        Err(_) => failure.replay = Some(spec.command()),
    }
    failure
}

/// Cheap cuts before delta debugging: the shortest failing stream that starts 8, 16, 32, ...
/// operations before the failing one (most failures need only the last few), then the stream
/// without every operation of one kind but the failing one (reads, trims, write-zeroes,
/// flushes).
fn coarse(
    mut ops: Vec<HostOp>,
    mut failure: Failure,
    test: &mut dyn FnMut(&[HostOp]) -> Option<Failure>,
    deadline: Instant,
) -> (Vec<HostOp>, Failure) {
    let mut keep = |ops: &mut Vec<HostOp>, failure: &mut Failure, candidate: Vec<HostOp>| {
        if Instant::now() >= deadline || candidate.len() >= ops.len() {
            return;
        }
        if let Some(f) = test(&candidate) {
            *ops = candidate;
            *failure = f;
        }
    };
    let mut n = 8;
    while n <= failure.op_index as usize && Instant::now() < deadline {
        let before = ops.len();
        let suffix = ops[failure.op_index as usize + 1 - n..].to_vec();
        keep(&mut ops, &mut failure, suffix);
        if ops.len() < before {
            break;
        }
        n *= 2;
    }
    for kind in [
        Kind::Read,
        Kind::Trim,
        Kind::WriteZeroes,
        Kind::WriteZeroesNoHole,
        Kind::Flush,
    ] {
        let failing = failure.op_index as usize;
        let candidate = ops
            .iter()
            .enumerate()
            .filter(|&(i, o)| o.kind != kind || i == failing)
            .map(|(_, o)| *o)
            .collect();
        keep(&mut ops, &mut failure, candidate);
    }
    (ops, failure)
}

/// Delta debugging (Zeller's ddmin) over a failing stream: tries removing ever smaller chunks
/// and keeps any smaller stream that still fails; stops at 1-minimality or the deadline.
/// Returns the smallest failing stream and its failure.
fn ddmin(
    mut ops: Vec<HostOp>,
    mut failure: Failure,
    test: &mut dyn FnMut(&[HostOp]) -> Option<Failure>,
    deadline: Instant,
) -> (Vec<HostOp>, Failure) {
    let mut n = 2usize;
    while ops.len() >= 2 && Instant::now() < deadline {
        let chunk = ops.len().div_ceil(n);
        let mut smaller = None;
        for i in 0..n {
            if Instant::now() >= deadline {
                break;
            }
            let (a, b) = (i * chunk, ((i + 1) * chunk).min(ops.len()));
            if a >= b {
                continue;
            }
            let complement: Vec<HostOp> = ops[..a].iter().chain(&ops[b..]).copied().collect();
            if let Some(f) = test(&complement) {
                smaller = Some((complement, f));
                break;
            }
        }
        match smaller {
            Some((o, f)) => {
                ops = o;
                failure = f;
                n = (n - 1).max(2);
            }
            None if n >= ops.len() => break,
            None => n = (2 * n).min(ops.len()),
        }
    }
    (ops, failure)
}
