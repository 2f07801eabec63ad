//! Fault injection (`--set inject=FAULT`): wraps any FTL and makes it misbehave in one known
//! way, so that `learnedftl check` (or any test) can show it catches that kind of fault.
//! The wrapped FTL keeps its name, parameters and statistics.
//!
//! | fault | what the FTL does wrong |
//! |---|---|
//! | `wrong-read:N` | reads of one LPN in N (by a hash of the LPN) return another valid page from flash (its data and OOB) |
//! | `drop-trim` | trims are acknowledged and ignored |
//! | `lose-flush` | flushes are acknowledged and ignored (data in a volatile buffer stays there) |
//! | `forget-mapping` | each recovery after a power cut loses one mapped page: an acknowledged write whose mapping was not persisted |

use super::{DramUsage, Ftl, ReadSink, Served, Unflushed};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::device::Device;
use crate::error::{ConfigError, FtlError};
use crate::mapping::FtlStats;
use crate::request::{Op, Request, Upcoming};

crate::params::keys! {
    /// The fault injector's key ([`super::build`]).
    pub static INJECT_KEYS = "inject", "a fault to inject, to show the checks catch it (testing)";
    INJECT = "inject" ["FAULT"] "misbehave on purpose: wrong-read:N, drop-trim, lose-flush or forget-mapping";
}

/// A fault to inject.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Reads of one LPN in `n` return another valid page.
    WrongRead {
        /// The period.
        n: u64,
    },
    /// Trims are ignored.
    DropTrim,
    /// Flushes are ignored.
    LoseFlush,
    /// Each recovery loses one mapped page.
    ForgetMapping,
    /// Writes of one LPN in `n` (those whose hash is a multiple of `n`) are acknowledged but
    /// never reach the FTL: the page keeps its older version, as a lost mapping update would.
    DropWrite {
        /// The period.
        n: u64,
    },
}

impl std::str::FromStr for Fault {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Fault, ConfigError> {
        let bad = || {
            ConfigError::invalid(
                "inject",
                format!(
                    "'{s}': wrong-read:N, drop-write:N, drop-trim, lose-flush or forget-mapping"
                ),
            )
        };
        match s.split_once(':') {
            Some((kind @ ("wrong-read" | "drop-write"), n)) => match n.parse::<u64>() {
                Ok(n) if n > 0 && kind == "wrong-read" => Ok(Fault::WrongRead { n }),
                Ok(n) if n > 0 => Ok(Fault::DropWrite { n }),
                _ => Err(bad()),
            },
            None if s == "drop-trim" => Ok(Fault::DropTrim),
            None if s == "lose-flush" => Ok(Fault::LoseFlush),
            None if s == "forget-mapping" => Ok(Fault::ForgetMapping),
            _ => Err(bad()),
        }
    }
}

/// An FTL with a fault.
#[derive(Clone)]
pub struct Inject {
    inner: Box<dyn Ftl>,
    fault: Fault,
}

impl Inject {
    /// `inner` with `fault`.
    pub fn new(inner: Box<dyn Ftl>, fault: Fault) -> Inject {
        Inject { inner, fault }
    }

    /// A recovered `inner` with `fault`: with `forget-mapping`, one mapped page chosen by the
    /// recovery's time is discarded at `t` (its newest acknowledged write is lost).
    pub fn recovered(
        inner: Box<dyn Ftl>,
        fault: Fault,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<Inject, FtlError> {
        let mut ftl = Inject::new(inner, fault);
        if fault == Fault::ForgetMapping {
            let lp = dev.geo().logical_pages;
            let lpn = (crate::seed::mix(t.0, 0xF0, 0) % lp) as u32;
            // Stamp 1: older than the writes it loses, so a later recovery does not replay it
            // over newer ones.
            let trim = Request::new(Op::Trim, lpn, 1, t.0, 1);
            ftl.inner.submit(dev, &trim, &mut super::NullSink)?;
        }
        Ok(ftl)
    }
}

/// Passes pages on, replacing pages served from flash by another valid page for one LPN in `n`
/// (those whose hash is a multiple of `n`): a failure depends on what is read, not on how many
/// reads came before, as an address-dependent bug would.
struct WrongRead<'a> {
    sink: &'a mut dyn ReadSink,
    n: u64,
}

impl ReadSink for WrongRead<'_> {
    fn deliver(&mut self, dev: &Device, lpn: Lpn, from: Served) {
        let from = match from {
            Served::Flash { ppa, .. } if crate::seed::mix(0x3A0, lpn.0 as u64, 0) % self.n == 0 => {
                // The next valid data page of another LPN, if any.
                let pages = dev.geo().pages();
                (1..pages.min(1 << 16))
                    .map(|d| Ppa(((ppa.0 as u64 + d) % pages) as u32))
                    .find_map(|p| {
                        let oob = dev.peek_oob(p)?;
                        (dev.is_valid(p) && oob.lpn().is_some_and(|l| l != lpn))
                            .then_some(Served::Flash { ppa: p, oob })
                    })
                    .unwrap_or(from)
            }
            f => f,
        };
        self.sink.deliver(dev, lpn, from);
    }
}

impl Ftl for Inject {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        match (self.fault, req.op) {
            (Fault::DropTrim, Op::Trim) | (Fault::LoseFlush, Op::Flush) => Ok(req.arrival),
            (Fault::WrongRead { n }, Op::Read) => {
                self.inner.submit(dev, req, &mut WrongRead { sink, n })
            }
            (Fault::DropWrite { n }, Op::Write) => {
                // The runs of pages kept, each a write of its own.
                let dropped = |l: u32| crate::seed::mix(0xD0, l as u64, 0) % n == 0;
                let (mut done, mut l, end) = (req.arrival, req.lpn.0, req.lpn.0 + req.pages);
                while l < end {
                    let first = l;
                    while l < end && !dropped(l) {
                        l += 1;
                    }
                    if l > first {
                        let run = Request {
                            lpn: Lpn(first),
                            pages: l - first,
                            ..*req
                        };
                        done = done.max(self.inner.submit(dev, &run, sink)?);
                    }
                    l += 1;
                }
                Ok(done)
            }
            _ => self.inner.submit(dev, req, sink),
        }
    }

    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        self.inner.background(dev, now)
    }

    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        self.inner.idle(dev, now)
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        self.inner.prefetch(dev, op, lpn, when)
    }

    fn unflushed(&self, dev: &Device, out: &mut Vec<Unflushed>) {
        self.inner.unflushed(dev, out)
    }

    fn flush_on_power_loss(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        self.inner.flush_on_power_loss(dev, now)
    }

    fn power_cut_refusal(&self) -> Option<String> {
        self.inner.power_cut_refusal()
    }

    fn stats(&self) -> &FtlStats {
        self.inner.stats()
    }

    fn reset_stats(&mut self) {
        self.inner.reset_stats()
    }

    fn dram(&self) -> DramUsage {
        self.inner.dram()
    }

    fn dram_total(&self) -> u64 {
        self.inner.dram_total()
    }

    fn params(&self) -> serde_json::Value {
        let mut p = self.inner.params();
        if let Some(o) = p.as_object_mut() {
            o.insert("inject".into(), format!("{:?}", self.fault).into());
        }
        p
    }

    fn extra_counters(&self) -> serde_json::Value {
        self.inner.extra_counters()
    }

    fn controller(&self) -> Option<super::controller::ControllerCounters> {
        self.inner.controller()
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        self.inner.check_invariants(dev)
    }
}
