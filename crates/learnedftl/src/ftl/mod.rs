//! The FTL interface and the registry of implemented schemes.
//!
//! An FTL receives whole host requests (so it can see their length), issues flash operations
//! through the [`Device`], and returns the request's completion time. Each page a read request
//! returns is reported to a [`ReadSink`] (the engine's oracle) with where it was served from.

/// Implements [`Register`] for a built-in FTL type `$ty` named `$name`: built by its
/// `new(dev, params)` and rebuilt after a power cut by its `recover(cfg, params, dev, t)`
/// (`demand = f`: built by the function `f`, rebuilt by the demand-based FTL's
/// `Demand::recover`). A new FTL may use it or implement [`Register`] itself.
macro_rules! registered {
    ($ty:ty, $name:literal $(, demand = $new:path)?) => {
        impl $crate::ftl::Register for $ty {
            const NAME: &'static str = $name;
            const RECOVERS: bool = true;

            fn build(
                dev: &$crate::config::DeviceConfig,
                params: &mut $crate::params::Params,
            ) -> Result<Self, $crate::error::ConfigError> {
                registered!(@build $ty $(, $new)?)(dev, params)
            }

            fn recover(
                cfg: &$crate::config::DeviceConfig,
                params: &mut $crate::params::Params,
                dev: &mut $crate::device::Device,
                t: $crate::addr::SimTime,
            ) -> Result<(Self, $crate::addr::SimTime), $crate::error::RecoverError> {
                registered!(@recover $ty $(, $new)?)(cfg, params, dev, t)
            }
        }
    };
    (@build $ty:ty) => { <$ty>::new };
    (@build $ty:ty, $new:path) => { $new };
    (@recover $ty:ty) => { <$ty>::recover };
    (@recover $ty:ty, $new:path) => {
        |cfg, params, dev, t| Ok($new(cfg, params)?.recover(dev, t)?)
    };
}
pub(crate) use registered;

pub mod blockmap;
pub mod controller;
pub mod demand;
pub mod dftl;
pub mod fast;
pub mod hpftl;
pub mod ideal;
pub mod inject;
pub mod keys;
pub mod leaftl;
pub mod learned;
pub mod mu;
pub mod sftl;
pub mod tpftl;

use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Cause, Device, Oob};
use crate::error::{ConfigError, FtlError, RecoverError};
use crate::mapping::recovery::RecoveryCost;
use crate::mapping::FtlStats;
use crate::params::Params;
use crate::request::{Op, Request, Upcoming};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Where a page read was served from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Served {
    /// From flash: the page the FTL finally read and its OOB.
    Flash {
        /// Page read.
        ppa: Ppa,
        /// Its OOB.
        oob: Oob,
    },
    /// From a DRAM write buffer, holding this write stamp.
    Buffer {
        /// Stamp of the buffered version.
        stamp: u32,
    },
    /// The LPN maps nowhere (never written, or trimmed): zeroes are returned.
    Unmapped,
}

/// An acknowledged write a power cut may lose ([`Ftl::unflushed`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Unflushed {
    /// The page.
    pub lpn: Lpn,
    /// Stamp of its newest durable version (0: none, it reads unmapped if the write is lost).
    pub durable: u32,
    /// Stamp of the acknowledged write in the buffer.
    pub acked: u32,
    /// The FDP placement ID it was written with (0 without FDP).
    pub placement: u16,
}

/// Receives every page a read returns (the engine's oracle, the NBD server's data path).
pub trait ReadSink {
    /// `lpn` was served from `from` on `dev`, now: a page served from flash holds the data
    /// until the FTL's next flash work, which may move it (GC in the same request).
    fn deliver(&mut self, dev: &Device, lpn: Lpn, from: Served);
}

/// A sink that ignores what it is given.
pub struct NullSink;

impl ReadSink for NullSink {
    fn deliver(&mut self, _: &Device, _: Lpn, _: Served) {}
}

/// Mapping DRAM in use, by part.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DramUsage {
    /// `(part, bytes)`, e.g. `("cmt", …)`, `("gtd", …)`.
    pub parts: Vec<(&'static str, u64)>,
    /// The mapping budget, if the FTL has one.
    pub budget: Option<u64>,
}

impl DramUsage {
    /// Sum over parts.
    pub fn total(&self) -> u64 {
        self.parts.iter().map(|p| p.1).sum()
    }
}

/// A copy of an FTL's whole state behind a `Box<dyn Ftl>`: what lets a simulator be cloned
/// (snapshots: several experiments start from one preconditioned state). Every `Ftl + Clone`
/// has it.
pub trait FtlClone {
    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn Ftl>;
}

impl<T: Ftl + Clone + 'static> FtlClone for T {
    fn clone_box(&self) -> Box<dyn Ftl> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn Ftl> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// A flash translation layer.
pub trait Ftl: Send + FtlClone {
    /// The registry name (`ideal`, `dftl`, …).
    fn name(&self) -> &'static str;

    /// Serves a request arriving at `req.arrival`; returns its completion time. Read pages are
    /// reported to `sink`.
    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError>;

    /// Background work after a request (background GC), issued at `now`. The default: none.
    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        let _ = (dev, now);
        Ok(())
    }

    /// One bounded unit of the work the FTL owes an idle device (SPEC §3.5, settled device),
    /// issued at `now`: a background-GC victim while the background rule holds, a write-back of
    /// one translation page's dirty cached entries, a write-buffer flush. Returns when the
    /// unit's last operation completes, or `None` when nothing is owed: then no dirty mapping
    /// entry, buffered write or background collection is left, and `None` stays the answer
    /// until a request changes the FTL's state. The engine calls it during the `settle`
    /// phase. The default owes nothing: an FTL with background GC, a write buffer or dirty
    /// cached mapping entries must implement it (every built-in scheme does).
    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        let _ = (dev, now);
        Ok(None)
    }

    /// A hint that a request `op` on `lpn` is coming, `when` says how soon: the FTL may ask
    /// the CPU to bring the state serving it will touch into cache
    /// ([`crate::host::prefetch()`]) so that the misses overlap with the requests served
    /// meanwhile. A hint only: it changes no state and no result; the default does nothing.
    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        let _ = (dev, op, lpn, when);
    }

    /// Appends to `out` every LPN whose newest acknowledged write sits only in a volatile DRAM
    /// buffer no FLUSH or FUA covered: what a power cut may lose (docs/power.md). The default:
    /// none (no buffer).
    fn unflushed(&self, dev: &Device, out: &mut Vec<Unflushed>) {
        let _ = (dev, out);
    }

    /// Power-loss protection (`power_loss_protection=on`): the power was just cut, and the
    /// capacitors let the FTL program its volatile buffers now, issued at `now`. The default:
    /// nothing to program.
    fn flush_on_power_loss(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        let _ = (dev, now);
        Ok(())
    }

    /// Why this FTL, as configured, cannot recover from a power cut, if it cannot (its name
    /// being in [`RECOVERABLE`] is checked apart). The default: it can.
    fn power_cut_refusal(&self) -> Option<String> {
        None
    }

    /// The controller's counters since the last reset, when a [`controller::Controller`]
    /// stands in front of the FTL (`None`: no controller).
    fn controller(&self) -> Option<controller::ControllerCounters> {
        None
    }

    /// Counters since the last reset. The default: none kept (lookups and hit ratios then
    /// report zero; every built-in scheme keeps them).
    fn stats(&self) -> &FtlStats {
        &FtlStats::ZERO
    }

    /// Zeroes the counters (mapping state stays). The default: no counters to zero.
    fn reset_stats(&mut self) {}

    /// Mapping DRAM now.
    fn dram(&self) -> DramUsage;

    /// Total mapping DRAM now; the engine samples it after every request, so schemes whose
    /// [`Ftl::dram`] builds a list should answer this without allocating.
    fn dram_total(&self) -> u64 {
        self.dram().total()
    }

    /// The FTL's effective parameters, for the report. The default: none (`{}`).
    fn params(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    /// Scheme-specific counters for the report (`{}` if none).
    fn extra_counters(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    /// Checks the FTL's invariants against the device (tests call this after every request):
    /// every mapped LPN points at a valid page holding it, every valid page is mapped once, DRAM
    /// within budget, plus whatever the scheme promises.
    fn check_invariants(&self, dev: &Device) -> Result<(), String>;
}

/// An FTL scheme's registration: how the library builds it, and rebuilds it from flash after a
/// power cut. Implement it for the FTL's type and list `Scheme::of::<Type>()` in [`SCHEMES`],
/// the one place an FTL is registered (docs/architecture.md "Adding an FTL").
pub trait Register: Ftl + Sized + 'static {
    /// The registry name (`--ftl NAME`), the one [`Ftl::name`] returns.
    const NAME: &'static str;

    /// Whether [`Register::recover`] rebuilds it after a power cut (docs/power.md); the
    /// default: it cannot, and power cuts are refused on it.
    const RECOVERS: bool = false;

    /// Builds it for a device, taking its parameters from `params`.
    fn build(dev: &DeviceConfig, params: &mut Params) -> Result<Self, ConfigError>;

    /// Rebuilds it from flash after a power cut ([`recover`] has powered `dev` on), its
    /// parameters from `params` (the ones it was built with), its operations issued at `t`;
    /// returns it (caches empty) and when recovery's last operation completes. Called only
    /// when [`Register::RECOVERS`]; the default refuses.
    fn recover(
        cfg: &DeviceConfig,
        params: &mut Params,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(Self, SimTime), RecoverError> {
        let _ = (cfg, params, dev, t);
        Err(RecoverError::Unsupported {
            name: Self::NAME.to_string(),
            known: RECOVERABLE.join(", "),
        })
    }
}

/// Builds a registered FTL, boxed.
type BuildFn = fn(&DeviceConfig, &mut Params) -> Result<Box<dyn Ftl>, ConfigError>;

/// Rebuilds a registered FTL from flash, boxed, with when its recovery completes.
type RecoverFn = fn(
    &DeviceConfig,
    &mut Params,
    &mut Device,
    SimTime,
) -> Result<(Box<dyn Ftl>, SimTime), RecoverError>;

/// A registered FTL ([`Register`]), as [`build`] and [`recover`] find it by name.
pub struct Scheme {
    /// The registry name.
    pub name: &'static str,
    build: BuildFn,
    recover: Option<RecoverFn>,
}

impl Scheme {
    /// The registration of `F`.
    pub const fn of<F: Register>() -> Scheme {
        fn build<F: Register>(
            dev: &DeviceConfig,
            params: &mut Params,
        ) -> Result<Box<dyn Ftl>, ConfigError> {
            Ok(Box::new(F::build(dev, params)?))
        }
        fn recover<F: Register>(
            cfg: &DeviceConfig,
            params: &mut Params,
            dev: &mut Device,
            t: SimTime,
        ) -> Result<(Box<dyn Ftl>, SimTime), RecoverError> {
            let (f, done) = F::recover(cfg, params, dev, t)?;
            Ok((Box::new(f), done))
        }
        Scheme {
            name: F::NAME,
            build: build::<F>,
            recover: if F::RECOVERS {
                Some(recover::<F>)
            } else {
                None
            },
        }
    }

    /// The registered FTL named `name`.
    pub fn named(name: &str) -> Option<&'static Scheme> {
        SCHEMES.iter().find(|s| s.name == name)
    }

    /// Whether it rebuilds itself after a power cut.
    pub fn recovers(&self) -> bool {
        self.recover.is_some()
    }
}

/// Every FTL, in `compare` order: the one place a scheme is registered.
pub const SCHEMES: &[Scheme] = &[
    Scheme::of::<ideal::Ideal>(),
    Scheme::of::<dftl::Dftl>(),
    Scheme::of::<tpftl::Tpftl>(),
    Scheme::of::<sftl::Sftl>(),
    Scheme::of::<leaftl::Leaftl>(),
    Scheme::of::<hpftl::HpFtl>(),
    Scheme::of::<learned::LearnedFtl>(),
    Scheme::of::<fast::Fast>(),
    Scheme::of::<mu::MuFtl>(),
    Scheme::of::<blockmap::Blockmap>(),
];

/// The names of the registered FTLs ([`SCHEMES`]) that recover, or all of them.
const fn names<const N: usize>(recovering: bool) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < SCHEMES.len() {
        if !recovering || SCHEMES[i].recover.is_some() {
            out[n] = SCHEMES[i].name;
            n += 1;
        }
        i += 1;
    }
    out
}

/// How many registered FTLs recover.
const fn recovering() -> usize {
    let (mut i, mut n) = (0, 0);
    while i < SCHEMES.len() {
        if SCHEMES[i].recover.is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// Names of the registered FTLs, in `compare` order.
pub const FTLS: &[&str] = &names::<{ SCHEMES.len() }>(false);

/// FTLs [`recover`] can rebuild after a power cut (docs/power.md).
pub const RECOVERABLE: &[&str] = &names::<{ recovering() }>(true);

/// Builds the FTL `name` for a device, taking its parameters from `params` (`inject=FAULT`
/// wraps it in a fault injector, [`inject`]).
pub fn build(
    name: &str,
    dev: &DeviceConfig,
    params: &mut Params,
) -> Result<Box<dyn Ftl>, ConfigError> {
    if let Some(fault) = params.take_str(&inject::INJECT) {
        let fault: inject::Fault = fault.parse()?;
        let inner = build(name, dev, params)?;
        return Ok(Box::new(inject::Inject::new(inner, fault)));
    }
    let Some(scheme) = Scheme::named(name) else {
        return Err(ConfigError::UnknownFtl {
            name: name.to_string(),
            known: FTLS.join(", "),
        });
    };
    Ok(behind_controller((scheme.build)(dev, params)?, dev))
}

/// Refuses Flexible Data Placement (`fdp_ruhs`) for FTL `who`, whose placement it does not
/// fit: `why` names what decides where that FTL's pages go (docs/fdp.md "Which FTLs").
pub(crate) fn refuse_fdp(dev: &DeviceConfig, who: &str, why: &str) -> Result<(), ConfigError> {
    if dev.fdp.is_off() {
        return Ok(());
    }
    Err(ConfigError::invalid(
        "fdp_ruhs",
        format!("{who} cannot place writes by reclaim unit handle: {why}"),
    ))
}

/// `ftl` behind the controller the device configuration describes, if it turns a part on
/// ([`controller`]).
fn behind_controller(ftl: Box<dyn Ftl>, dev: &DeviceConfig) -> Box<dyn Ftl> {
    if dev.controller.is_on() {
        Box::new(controller::Controller::new(ftl, dev))
    } else {
        ftl
    }
}

/// Builds each of `ftls` in turn on `dev` from a copy of `params` (one set of parameters for
/// several FTLs, as `compare` and `check` take them), showing each to `each` and dropping it:
/// every key must be taken by at least one of them (each FTL leaves keys meant for others
/// alone), and each FTL must accept the values it takes. Returns, per FTL, the keys it left.
pub fn build_each(
    ftls: &[&str],
    dev: &DeviceConfig,
    params: &Params,
    mut each: impl FnMut(&str, &dyn Ftl) -> Result<(), ConfigError>,
) -> Result<Vec<BTreeSet<String>>, ConfigError> {
    let mut left_by = Vec::with_capacity(ftls.len());
    // key → origin, of the keys no FTL so far took.
    let mut unknown: Option<BTreeMap<String, String>> = None;
    let mut valid = BTreeSet::new();
    for &name in ftls {
        let mut p = params.clone();
        let built = build(name, dev, &mut p)?;
        each(name, built.as_ref())?;
        valid.extend(p.valid_keys());
        let left: BTreeMap<String, String> = p
            .left()
            .map(|(k, origin)| (k.to_string(), origin.to_string()))
            .collect();
        left_by.push(left.keys().cloned().collect());
        unknown = Some(match unknown {
            None => left,
            Some(u) => u
                .into_iter()
                .filter(|(k, _)| left.contains_key(k))
                .collect(),
        });
    }
    match unknown {
        Some(u) if !u.is_empty() => {
            let u: Vec<(&str, &str)> = u.iter().map(|(k, o)| (k.as_str(), o.as_str())).collect();
            Err(crate::params::unknown_keys(
                &u,
                valid,
                Some(&ftls.join(", ")),
            ))
        }
        _ => Ok(left_by),
    }
}

/// Rebuilds the FTL `name` from flash after a power cut (docs/power.md): `dev` must have lost
/// its power ([`Device::power_lost`]) and is powered on here; the FTL's parameters come from
/// `params` (the ones it was built with). Recovery's operations are issued at `t`; returns the
/// FTL (caches empty) and what recovery cost.
pub fn recover(
    name: &str,
    cfg: &DeviceConfig,
    params: &mut Params,
    dev: &mut Device,
    t: SimTime,
) -> Result<(Box<dyn Ftl>, RecoveryCost), RecoverError> {
    let Some(rebuild) = Scheme::named(name).and_then(|s| s.recover) else {
        return Err(RecoverError::Unsupported {
            name: name.to_string(),
            known: RECOVERABLE.join(", "),
        });
    };
    if let Some(fault) = params.take_str(&inject::INJECT) {
        let fault: inject::Fault = fault.parse().map_err(RecoverError::from)?;
        let (inner, cost) = recover(name, cfg, params, dev, t)?;
        let ftl = inject::Inject::recovered(inner, fault, dev, cost.done)?;
        return Ok((Box::new(ftl), cost));
    }
    dev.power_on();
    let before = dev.counters().clone();
    let (ftl, done) = rebuild(cfg, params, dev, t)?;
    let (ftl, done) = if cfg.controller.is_on() {
        let (c, done) = controller::Controller::recovered(ftl, cfg, dev, done)?;
        (Box::new(c) as Box<dyn Ftl>, done)
    } else {
        (ftl, done)
    };
    let c = dev.counters();
    let cost = RecoveryCost {
        flash_reads: c.total_reads() - before.total_reads(),
        flash_programs: c.total_programs() - before.total_programs(),
        start: t,
        done,
    };
    Ok((ftl, cost))
}

/// Serves a host read of `lpn` whose mapping a DRAM-resident table gave (`None`: unmapped):
/// one flash read issued at `t`, counted as a cache hit, or none; the page goes to `sink`.
/// Returns the completion (`t` when unmapped).
pub fn read_from_dram_map(
    dev: &mut Device,
    stats: &mut FtlStats,
    sink: &mut dyn ReadSink,
    lpn: Lpn,
    ppa: Option<Ppa>,
    t: SimTime,
) -> Result<SimTime, FtlError> {
    let Some(ppa) = ppa else {
        stats.lookup(0);
        sink.deliver(dev, lpn, Served::Unmapped);
        return Ok(t);
    };
    let (oob, done) = dev.read(ppa, Cause::User, t)?;
    stats.lookup(1);
    stats.cmt_hits += 1;
    sink.deliver(dev, lpn, Served::Flash { ppa, oob });
    Ok(done)
}
