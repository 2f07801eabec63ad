//! Power cuts during a run and the check after each recovery (docs/power.md).
//!
//! A planned cut strikes once per window of host requests, at a request and an operation
//! offset inside it drawn from the plan's seed. The engine then rebuilds the FTL from flash
//! ([`crate::ftl::recover`]) and reads every LPN through a clone of the recovered simulator,
//! so the check perturbs neither the run's state nor its statistics: each LPN must read as
//! its last acknowledged version — the request in flight at the cut may have left old or new
//! data on each of its pages, a write lost from a volatile buffer may read as any version
//! from its last durable one on — and the oracle then adopts what recovery found.

use super::{EngineError, Oracle, Simulator};
use crate::addr::{Lpn, SimTime};
use crate::device::{Device, PowerCut, StateFiles, StateOwner};
use crate::ftl::{self, ReadSink, Served, Unflushed};
use crate::request::{Op, Request};

/// Where power cuts strike: one in every window of `every` host requests.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PowerCutPlan {
    /// Host requests per window (at least 1).
    pub every: u64,
    /// Seeds the request and the operation offset of each window's cut.
    pub seed: u64,
}

impl PowerCutPlan {
    /// The cut armed for the `index`th host request of the plan (0-based) of `pages` pages, if
    /// its window's cut falls on it: after an offset drawn from `[0, 2·pages + 2)` programs and
    /// erases (a request of n pages issues about n programs plus the GC and translation work
    /// they cause); if the request and the background work after it issue fewer, the cut
    /// strikes after them, between two requests.
    pub fn cut_for(&self, index: u64, pages: u32) -> Option<PowerCut> {
        let w = index / self.every;
        (index % self.every == crate::seed::mix(self.seed, w, 0) % self.every)
            .then(|| PowerCut::AfterOps(crate::seed::mix(self.seed, w, 1) % (2 * pages as u64 + 2)))
    }
}

/// An LPN's stamp that no read returns: a flash page holding another LPN.
const WRONG_PAGE: u32 = u32::MAX;

/// Collects the stamp each LPN of a read returned.
struct Found {
    first: u32,
    stamps: Vec<u32>,
}

impl ReadSink for Found {
    fn deliver(&mut self, _: &Device, lpn: Lpn, from: Served) {
        let stamp = match from {
            Served::Flash { oob, .. } if oob.lpn() == Some(lpn) => oob.stamp,
            Served::Flash { .. } => WRONG_PAGE,
            Served::Buffer { stamp } => stamp,
            Served::Unmapped => 0,
        };
        if let Some(s) = self.stamps.get_mut(lpn.0.wrapping_sub(self.first) as usize) {
            *s = stamp;
        }
    }
}

/// LPNs read per request of the check.
const CHECK_PAGES: u32 = 256;

impl Found {
    /// Reads LPNs `first..first + pages` through `ftl` at `at` (after a recovery: its
    /// failures are the recovery's).
    fn read(
        &mut self,
        ftl: &mut dyn crate::ftl::Ftl,
        dev: &mut Device,
        first: u32,
        pages: u32,
        at: SimTime,
    ) -> Result<(), EngineError> {
        self.first = first;
        self.stamps.clear();
        self.stamps.resize(pages as usize, WRONG_PAGE);
        let req = Request::new(Op::Read, first, pages, at.0, 0);
        ftl.submit(dev, &req, self)
            .map(drop)
            .map_err(|e| EngineError::Recover {
                at: at.0,
                message: format!("reading back LPN {first}+{pages}: {e}"),
            })
    }
}

impl Simulator {
    /// Puts this simulator, just built by FTL name and unused, on the device state saved in
    /// `files` by [`Simulator::save_state`] (docs/power.md "Persistent state"): a power cycle
    /// — the device comes back with what its flash holds and the FTL recovers from it, as
    /// after a power cut. The oracle adopts what recovery found. Refused for a state of
    /// another format, geometry or FTL, or an FTL that cannot recover. The clock ends where
    /// the recovery did; returns the recovery's flash reads.
    pub fn resume(&mut self, files: &StateFiles) -> Result<u64, EngineError> {
        let s = self;
        if let Some(why) = s.power_cut_refusal() {
            return Err(EngineError::PowerCuts(why));
        }
        let cfg = s.dev.config().clone();
        let ftl_name = s.ftl.name();
        let (dev, stamp) = Device::load_state(&cfg, files, ftl_name)?;
        s.dev = dev;
        // New versions are stamped above every one on flash: recovery orders them by stamp.
        s.stamp = stamp.max(s.dev.newest_stamp());
        s.flushed = s.stamp;
        let (name, mut params) = s.recipe.clone().expect("built by name");
        let (ftl, cost) = crate::ftl::recover(&name, &cfg, &mut params, &mut s.dev, SimTime::ZERO)
            .map_err(|e| EngineError::Recover {
                at: 0,
                message: e.to_string(),
            })?;
        s.ftl = ftl;
        if let Some(o) = s.oracle.as_mut() {
            let lp = s.dev.geo().logical_pages as u32;
            let (mut dev, mut ftl) = (s.dev.clone_without_payloads(), s.ftl.clone());
            let mut found = Found {
                first: 0,
                stamps: Vec::new(),
            };
            for first in (0..lp).step_by(CHECK_PAGES as usize) {
                let pages = CHECK_PAGES.min(lp - first);
                found.read(&mut *ftl, &mut dev, first, pages, cost.done)?;
                for (i, &got) in found.stamps.iter().enumerate() {
                    let lpn = Lpn(first + i as u32);
                    o.set(lpn, if got == WRONG_PAGE { 0 } else { got });
                }
            }
        }
        s.clock = cost.done;
        s.last_arrival = cost.done;
        Ok(cost.flash_reads)
    }

    /// Turns the power off at `t`: cleanly (`orderly`: the host's shutdown flushes the write
    /// buffers first, as an NVMe shutdown notification does) or as a power cut (volatile
    /// buffers lost; with `power_loss_protection` they are flushed, which is what the
    /// capacitors promise). The simulator serves nothing after it; save its state with
    /// [`Simulator::save_state`].
    pub fn power_off(&mut self, orderly: bool, t: SimTime) -> Result<(), EngineError> {
        if orderly || self.dev.config().power_loss_protection {
            let flush = crate::workload::HostIo {
                arrival: t.max(self.last_arrival),
                op: Op::Flush,
                offset: 0,
                len: 0,
                placement: 0,
            };
            self.submit(flush)?;
        }
        self.dev.cut_power();
        Ok(())
    }

    /// Saves the device's flash state to `files` (its pages must be kept in `files.pages`):
    /// what [`Simulator::resume`] starts from.
    pub fn save_state(&self, files: &StateFiles) -> Result<(), EngineError> {
        let owner = StateOwner {
            ftl: self.ftl.name().to_string(),
            stamp: self.stamp,
        };
        Ok(self.dev.save_state(files, &owner)?)
    }

    /// Rebuilds the FTL after the power was lost at `t` (`inflight`: the request the cut
    /// interrupted, unacknowledged), checks every LPN when reads are verified, and counts the
    /// cut in the phase. Returns when recovery completed.
    pub(super) fn recover(
        &mut self,
        inflight: Option<&Request>,
        t: SimTime,
    ) -> Result<SimTime, EngineError> {
        let fail = |message: String| EngineError::Recover { at: t.0, message };
        self.cut_in = self.dev.last_cut_in();
        let mut unflushed = Vec::new();
        if self.dev.config().power_loss_protection {
            self.dev.run_on_capacitors();
            self.ftl
                .flush_on_power_loss(&mut self.dev, t)
                .map_err(|e| fail(format!("flush on capacitor energy: {e}")))?;
            self.dev.cut_power();
        } else {
            self.ftl.unflushed(&self.dev, &mut unflushed);
        }
        let (name, params) = self
            .recipe
            .as_ref()
            .ok_or_else(|| fail("the simulator was not built by FTL name".into()))?;
        let mut params = params.clone();
        let cfg = self.dev.config().clone();
        let (ftl, cost) = ftl::recover(name, &cfg, &mut params, &mut self.dev, t)
            .map_err(|e| fail(e.to_string()))?;
        let old = std::mem::replace(&mut self.ftl, ftl);
        self.recoveries += 1;
        self.cut_after_ack = inflight.is_none();
        let lost = self.check_recovery(inflight, &mut unflushed, cost.done)?;
        self.phase.note_power_cut(
            old.as_ref(),
            (lost.unflushed, lost.flushed),
            cost.flash_reads,
            cost.sim_ns(),
        );
        // Once per cut, the FTL's invariants are checked whenever reads are verified.
        if self.opts.check_invariants || self.oracle.is_some() {
            self.ftl
                .check_invariants(&self.dev)
                .map_err(|e| fail(format!("invariant broken after recovery: {e}")))?;
        }
        Ok(cost.done)
    }

    /// Reads LPNs through a clone of the recovered simulator at `at`: every LPN when reads are
    /// verified (failures go to the oracle, which then adopts the recovered stamps), else only
    /// the unflushed ones. Returns how many acknowledged buffered writes were lost, and how
    /// many of those a completed FLUSH had covered (`flush=ignore|reorder` only: where
    /// FLUSHes are honoured such a loss is a failure the oracle reports).
    fn check_recovery(
        &mut self,
        inflight: Option<&Request>,
        unflushed: &mut [Unflushed],
        at: SimTime,
    ) -> Result<Lost, EngineError> {
        let mut lost = Lost::default();
        if self.oracle.is_none() && unflushed.is_empty() {
            return Ok(lost);
        }
        // Versions up to this stamp must survive (0: FLUSH promises nothing).
        let flushed = match self.dev.config().controller.flush.is_honor() {
            true => self.flushed,
            false => 0,
        };
        unflushed.sort_unstable_by_key(|u| u.lpn.0);
        let lp = self.dev.geo().logical_pages as u32;
        // The read-back needs OOBs, not data: a clone without payloads skips touching every
        // stored page.
        let mut dev = self.dev.clone_without_payloads();
        let mut ftl = self.ftl.clone();
        let mut found = Found {
            first: 0,
            stamps: Vec::new(),
        };
        let mut next_unflushed = unflushed.iter().peekable();
        let verify = self.oracle.is_some();
        let failures_before = self.oracle.as_ref().map_or(0, |o| o.failures());
        let mut first = 0;
        while first < lp {
            // Without the oracle only the unflushed LPNs are read.
            if !verify {
                match next_unflushed.peek() {
                    Some(u) => first = u.lpn.0,
                    None => break,
                }
            }
            let pages = if verify {
                CHECK_PAGES.min(lp - first)
            } else {
                1
            };
            found.read(&mut *ftl, &mut dev, first, pages, at)?;
            for (i, &got) in found.stamps.iter().enumerate() {
                let lpn = Lpn(first + i as u32);
                let u = next_unflushed.next_if(|u| u.lpn == lpn);
                if let Some(u) = u.filter(|u| got != u.acked) {
                    lost.unflushed += 1;
                    lost.flushed += (u.acked <= self.flushed) as u64;
                }
                if let Some(o) = self.oracle.as_mut() {
                    check_lpn(o, lpn, got, inflight, u, flushed);
                }
            }
            first += pages;
        }
        if let Some(o) = self.oracle.as_ref() {
            if self.opts.verify == super::Verify::FailFast && o.failures() > failures_before {
                return Err(EngineError::Verify(format!(
                    "after a power cut: {}",
                    o.messages().last().cloned().unwrap_or_default()
                )));
            }
        }
        Ok(lost)
    }
}

/// Acknowledged page writes a cut lost.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Lost {
    /// From a volatile buffer.
    pub unflushed: u64,
    /// Of which a completed FLUSH had covered.
    pub flushed: u64,
}

/// Checks the stamp `got` recovery left on `lpn` and adopts it; an unflushed version with a
/// stamp up to `flushed` was covered by a FLUSH and must have survived.
fn check_lpn(
    o: &mut Oracle,
    lpn: Lpn,
    got: u32,
    inflight: Option<&Request>,
    unflushed: Option<&Unflushed>,
    flushed: u32,
) {
    let want = o.expected(lpn);
    // The request in flight may have left its version (a write's, or unmapped for a trim) on
    // each page it covers, whether or not that page also sat in a volatile buffer.
    let alt = inflight
        .filter(|r| covers(r, lpn))
        .map(|r| if r.op == Op::Write { r.stamp } else { 0 });
    let ok = alt == Some(got) && got != WRONG_PAGE
        || match unflushed {
            Some(u) if u.acked <= flushed => got == u.acked,
            Some(u) => {
                got != WRONG_PAGE
                    && if got == 0 {
                        u.durable == 0
                    } else {
                        (u.durable..=u.acked).contains(&got)
                    }
            }
            None => got == want,
        };
    o.note_check(ok, || {
        let found = match got {
            WRONG_PAGE => "a page holding another LPN".to_string(),
            0 => "unmapped".to_string(),
            s => format!("stamp {s}"),
        };
        let also = match (unflushed, inflight) {
            (Some(u), _) => format!(" (unflushed: durable stamp {})", u.durable),
            (None, Some(r)) if covers(r, lpn) => {
                format!(" (or the cut {:?} stamp {})", r.op, r.stamp)
            }
            _ => String::new(),
        };
        format!(
            "after recovery, LPN {}: expected {}{also}, found {found}",
            lpn.0,
            if want == 0 {
                "unmapped".to_string()
            } else {
                format!("stamp {want}")
            }
        )
    });
    o.set(lpn, if got == WRONG_PAGE { want } else { got });
}

/// Whether request `r` touches `lpn`.
fn covers(r: &Request, lpn: Lpn) -> bool {
    (r.lpn.0..r.lpn.0 + r.pages).contains(&lpn.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oracle_with(lpn: u32, stamp: u32) -> Oracle {
        let mut o = Oracle::new(16, false);
        o.set(Lpn(lpn), stamp);
        o
    }

    #[test]
    fn acknowledged_versions_must_survive() {
        let mut o = oracle_with(3, 7);
        check_lpn(&mut o, Lpn(3), 7, None, None, 0);
        check_lpn(&mut o, Lpn(4), 0, None, None, 0);
        assert_eq!((o.checked(), o.failures()), (2, 0));
        // Older data, or a page of another LPN: failures, and the oracle keeps its stamp for a
        // page that holds no version of the LPN.
        check_lpn(&mut o, Lpn(3), 5, None, None, 0);
        assert_eq!(o.expected(Lpn(3)), 5);
        o.set(Lpn(3), 7);
        check_lpn(&mut o, Lpn(3), WRONG_PAGE, None, None, 0);
        assert_eq!(o.expected(Lpn(3)), 7);
        // A trimmed LPN must not come back.
        check_lpn(&mut o, Lpn(4), 2, None, None, 0);
        assert_eq!(o.failures(), 3);
        assert!(o.messages()[0].contains("LPN 3") && o.messages()[0].contains("stamp 5"));
    }

    #[test]
    fn the_request_in_flight_may_leave_old_or_new_per_page() {
        let write = Request::new(Op::Write, 2, 3, 0, 9);
        let mut o = oracle_with(3, 7);
        check_lpn(&mut o, Lpn(2), 9, Some(&write), None, 0);
        check_lpn(&mut o, Lpn(3), 7, Some(&write), None, 0);
        check_lpn(&mut o, Lpn(4), 0, Some(&write), None, 0);
        assert_eq!(o.failures(), 0);
        // Outside the request, or a third version: failures.
        check_lpn(&mut o, Lpn(5), 9, Some(&write), None, 0);
        check_lpn(&mut o, Lpn(3), 8, Some(&write), None, 0);
        assert_eq!(o.failures(), 2);
        let trim = Request::new(Op::Trim, 3, 1, 0, 10);
        let mut o = oracle_with(3, 7);
        check_lpn(&mut o, Lpn(3), 0, Some(&trim), None, 0);
        o.set(Lpn(3), 7);
        check_lpn(&mut o, Lpn(3), 7, Some(&trim), None, 0);
        check_lpn(&mut o, Lpn(3), 10, Some(&trim), None, 0);
        assert_eq!(o.failures(), 1, "a trim leaves no version 10");
    }

    #[test]
    fn an_unflushed_write_may_read_any_version_from_its_last_durable_one() {
        let u = Unflushed {
            lpn: Lpn(3),
            durable: 4,
            acked: 9,
            placement: 0,
        };
        for (got, ok) in [(9, true), (4, true), (6, true), (3, false), (0, false)] {
            let mut o = oracle_with(3, 9);
            check_lpn(&mut o, Lpn(3), got, None, Some(&u), 0);
            assert_eq!(o.failures(), !ok as u64, "stamp {got}");
        }
        // Nothing durable: it may read unmapped.
        let never = Unflushed { durable: 0, ..u };
        let mut o = oracle_with(3, 9);
        check_lpn(&mut o, Lpn(3), 0, None, Some(&never), 0);
        assert_eq!(o.failures(), 0);
        // Overwritten by the request in flight (a write larger than a write buffer goes
        // around it): that request's version too, not a third one.
        let write = Request::new(Op::Write, 2, 3, 0, 12);
        for (got, ok) in [(12, true), (9, true), (11, false)] {
            let mut o = oracle_with(3, 9);
            check_lpn(&mut o, Lpn(3), got, Some(&write), Some(&u), 0);
            assert_eq!(o.failures(), !ok as u64, "stamp {got}");
        }
    }

    #[test]
    fn a_flushed_write_must_survive_where_flushes_are_honoured() {
        let u = Unflushed {
            lpn: Lpn(3),
            durable: 4,
            acked: 9,
            placement: 0,
        };
        // Covered by a FLUSH (stamp 9 ≤ 10): only the acknowledged version will do.
        for (got, flushed, ok) in [(9, 10, true), (4, 10, false), (4, 8, true), (4, 0, true)] {
            let mut o = oracle_with(3, 9);
            check_lpn(&mut o, Lpn(3), got, None, Some(&u), flushed);
            assert_eq!(o.failures(), !ok as u64, "stamp {got}, flushed {flushed}");
        }
    }

    #[test]
    fn one_cut_per_window_at_a_seeded_request() {
        let plan = PowerCutPlan { every: 10, seed: 3 };
        for w in 0..50u64 {
            let cuts: Vec<u64> = (w * 10..(w + 1) * 10)
                .filter(|&i| plan.cut_for(i, 4).is_some())
                .collect();
            assert_eq!(cuts.len(), 1, "window {w}");
            match plan.cut_for(cuts[0], 4) {
                Some(PowerCut::AfterOps(n)) => assert!(n < 10),
                other => panic!("{other:?}"),
            }
        }
    }
}
