//! Conformance checking (`learnedftl check`, SPEC §9): seeded host operation streams driven
//! through the engine or the NBD server, every read compared byte for byte with what the host
//! last acknowledged (and with the oracle's stamp), power cuts anywhere, and a failing stream
//! shrunk to a short one with a command that replays it.
//!
//! * [`stream`]: the generator and the preconditioning (a full, fragmented device).
//! * [`model`]: the expected content of every sector, and the versions a recovery may bring
//!   back.
//! * `driver`: the [`Driver`] a stream runs on ([`EngineDriver`] here; the NBD crate has one
//!   that goes through `serve` over sockets).
//! * `verify`: the loop that runs and checks each batch; `shrink`: shrinking a failure.
//! * this module: what a check is ([`CheckSpec`]), preparing the device, and the per-FTL
//!   report.
//!
//! An FTL is conformant when `learnedftl check --ftl NAME` passes (docs/check.md).

mod driver;
pub mod model;
mod shrink;
pub mod stream;
mod verify;

pub use driver::{command, Driver, DriverError, EngineDriver, Ran};

use crate::config::DeviceConfig;
use crate::engine::{Progress, SimOptions, Simulator, Verify};
use crate::params::Params;
use model::Model;
use serde::{Deserialize, Serialize};
use shrink::shrink_and_save;
use std::time::{Duration, Instant};
use stream::{HostOp, StreamSpec, SECTOR};
use verify::Run;

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
    /// The preset scaled to this logical capacity (`--capacity`, as `run` takes it), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<String>,
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
    /// Start from a blank device, without the preconditioning: a replayed stream that holds
    /// its own, shrunk (a failure the preconditioning's writes caused).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blank: bool,
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
        let capacity = self
            .capacity
            .as_deref()
            .map(str::parse::<crate::config::Capacity>)
            .transpose()?;
        let mut cfg =
            DeviceConfig::from_params_sized(&self.preset, capacity.as_ref(), &mut params)?;
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
            "learnedftl check --ftl {} --preset {}",
            self.ftl, self.preset
        );
        if let Some(cap) = &self.capacity {
            c += &format!(" --capacity {cap}");
        }
        c += &format!(
            " --seed {} --ops {} --through {}",
            self.seed, self.ops, self.through
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
    /// The data identity of the write whose data the page should have held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_id: Option<u32>,
    /// The data identity of the write whose data it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_id: Option<u32>,
    /// Which operations wrote the data expected and found (of the stream that reproduces it,
    /// or the preconditioning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writers: Option<String>,
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
        if let Some(w) = &self.writers {
            write!(f, " ({w})")?;
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
    /// Power cuts by the cause of the flash operation they struck in
    /// ([`crate::device::Cause::key`]), or `between_operations`.
    pub power_cuts_in: std::collections::BTreeMap<&'static str, u64>,
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
    /// Power cuts by the cause of the flash operation in flight (`user`, `gc_data`,
    /// `translation_writeback`, `checkpoint`, …) or `between_operations`.
    pub power_cuts_in: std::collections::BTreeMap<&'static str, u64>,
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
/// logical space written, then as much again at random (a full, fragmented device); nothing
/// when the spec is `blank`.
pub fn prepare(spec: &CheckSpec) -> Result<Prepared, CheckError> {
    let (cfg, params) = spec.device()?;
    let opts = SimOptions {
        verify: Verify::Count,
        check_invariants: false,
        ..SimOptions::default()
    };
    let sim = Simulator::new(&cfg, &spec.ftl, params, opts)?;
    if spec.cut_every > 0 {
        if let Some(why) = sim.power_cut_refusal() {
            return Err(CheckError::Setup(format!("--power-cuts: {why}")));
        }
    }
    let g = cfg.geometry;
    let ps = g.page_size as u64;
    let ops = if spec.blank {
        Vec::new()
    } else {
        stream::precondition(spec.seed, g.logical_bytes(), ps)
    };
    let last_id = ops.iter().map(|o| o.id).max().unwrap_or(0);
    let mut driver = EngineDriver::new(sim);
    let mut model = Model::new(g.logical_bytes(), ps, spec.cut_every > 0);
    // Power-loss protection: nothing acknowledged may be lost, flushed or not.
    model.set_every_ack_durable(cfg.power_loss_protection);
    let mut run = Run::new(model);
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

impl Failure {
    fn new(op_index: u64, op: HostOp, what: String) -> Failure {
        Failure {
            op_index,
            op,
            what,
            lpn: None,
            expected: None,
            found: None,
            expected_id: None,
            found_id: None,
            writers: None,
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
        // Writes are placed on every handle the device has (docs/fdp.md).
        handles: prepared.sim.device().config().fdp.ruhs,
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
        power_cuts_in: counts.power_cuts_in,
        failures,
        seconds,
        ops_per_sec: counts.ops as f64 / seconds.max(1e-9),
        precondition_seconds,
        command: spec.command(),
    })
}
