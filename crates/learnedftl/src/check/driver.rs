//! Where a check's batches run: the [`Driver`] interface, and [`EngineDriver`], which drives
//! them straight into a simulator through the byte path the NBD server uses (the NBD crate's
//! driver goes through the server itself).

use super::stream::{Cut, HostOp, Kind};
use crate::addr::SimTime;
use crate::device::PowerCut;
use crate::engine::bytes::{Cmd, HostBytes};
use crate::engine::Simulator;

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
    /// where `cut` says: [`Cut::After`] in that operation's service or right after it,
    /// [`Cut::At`] at that kind of flash work in whichever later operation does it; through
    /// NBD, now, between two batches.
    fn cut(&mut self, cut: Cut) -> Result<(), String>;
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
            placement: op.placement,
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
    fn cut(&mut self, cut: Cut) -> Result<(), String> {
        let cut = match cut {
            Cut::After(n) => PowerCut::AfterOps(n as u64),
            Cut::At { cause, nth } => PowerCut::AtCause {
                cause,
                nth: nth.max(1) as u64,
            },
        };
        self.sim.arm_power_cut(cut).map_err(|e| e.to_string())
    }

    fn run_batch(&mut self, ops: &[HostOp], bufs: &mut [Vec<u8>]) -> Result<Ran, DriverError> {
        let mut done = self.t;
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
            // A cut after a number of operations that its operation did not reach strikes right
            // after it; one at a kind of work waits for it.
            let counted = matches!(op.cut, Some(Cut::After(_)));
            if i == 0 && counted && self.sim.device().power_cut_armed() {
                self.sim.cut_power_now(d).map_err(|e| (i, e.to_string()))?;
            }
            // Stop at a cut (what follows is a batch of its own) or at a wrong version (the
            // failure is this operation's).
            if self.sim.recoveries() != recoveries || failures(&self.sim) != failed {
                break;
            }
        }
        self.t = done;
        // A cut in the background work after the operation's last request struck after it
        // completed, as one right after it does: a read returned what it found before.
        let cut_after =
            self.sim.recoveries() != recoveries && self.bytes.cut_after_last_command(&self.sim);
        Ok(Ran {
            ops: ran,
            cut_after,
        })
    }

    fn with_sim(&mut self, f: &mut dyn FnMut(&mut Simulator)) {
        f(&mut self.sim)
    }
}
