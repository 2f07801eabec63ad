//! Program and erase suspend (`suspend=on`, docs/device.md "Program and erase suspend"): a
//! host-path read that finds its LUN programming or erasing suspends that operation, is
//! served, and the operation resumes, instead of waiting behind it and behind the programs and
//! erases queued after it (controllers give reads priority over queued writes, as MQSim's
//! transaction scheduler does).
//!
//! Completions are decided when an operation is booked, so a suspension cannot move the
//! completion of work already booked: it charges the LUN instead. The read starts
//! `suspend_program_ns` (or `suspend_erase_ns`) after it is issued, and every operation booked
//! on the LUN from then on starts as much later as the suspension took (suspend, read, resume):
//! LUN time is conserved, reads gain their latency, and the suspended work's own completion is
//! reported early by that much. Reads arriving while a suspension's read is in progress queue
//! behind it without suspending again.

use crate::config::SuspendConfig;
use serde::Serialize;

/// Counters of the suspensions since the last reset.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SuspendCounters {
    /// Programs suspended by a read.
    pub programs: u64,
    /// Erases suspended by a read.
    pub erases: u64,
    /// Reads served during a suspension (its own included).
    pub reads: u64,
    /// Reads that found a program or erase to suspend but waited: it had been suspended
    /// `suspend_max` times.
    pub refused: u64,
}

/// One LUN's program and erase work as suspensions see it.
#[derive(Copy, Clone, Debug, Default)]
struct Lun {
    /// Completion of the latest program or erase booked.
    pe_end: u64,
    /// The latest erase booked, `[start, end)`.
    erase: (u64, u64),
    /// When the latest read served during a suspension completes.
    read_until: u64,
    /// Suspensions of the program and erase work pending when the first of them struck, and
    /// when that work ends (the cap's window).
    count: u32,
    window_end: u64,
}

/// The suspension state of every LUN.
#[derive(Clone, Debug)]
pub(super) struct Suspend {
    cfg: SuspendConfig,
    luns: Vec<Lun>,
    counters: SuspendCounters,
}

/// Where a suspending read goes: its start and end, and the LUN time the suspension adds.
pub(super) struct Suspended {
    pub start: u64,
    pub end: u64,
    pub charge: u64,
}

impl Suspend {
    pub(super) fn new(cfg: &SuspendConfig, luns: usize) -> Suspend {
        Suspend {
            cfg: cfg.clone(),
            luns: vec![Lun::default(); luns],
            counters: SuspendCounters::default(),
        }
    }

    pub(super) fn counters(&self) -> SuspendCounters {
        self.counters
    }

    pub(super) fn reset_counters(&mut self) {
        self.counters = SuspendCounters::default();
    }

    /// Notes a program (or, with `erase`, an erase) booked on `lun` over `[start, end)`.
    #[inline]
    pub(super) fn booked(&mut self, lun: usize, start: u64, end: u64, erase: bool) {
        let l = &mut self.luns[lun];
        l.pe_end = l.pe_end.max(end);
        if erase {
            l.erase = (start, end);
        }
    }

    /// A read of `read_ns` issued at `t` on `lun`, whose normal booking would start at
    /// `normal` (the earliest gap, or the LUN's tail): where it goes if it suspends a program
    /// or erase instead, `None` if it books normally (nothing to suspend, or waiting is no
    /// slower, or the cap is reached).
    #[inline]
    pub(super) fn read(
        &mut self,
        lun: usize,
        t: u64,
        read_ns: u64,
        normal: u64,
    ) -> Option<Suspended> {
        let l = &mut self.luns[lun];
        if l.pe_end <= t {
            return None;
        }
        // Behind a read another suspension serves: no new suspension.
        if t < l.read_until {
            let start = l.read_until;
            if start >= normal {
                return None;
            }
            l.read_until = start + read_ns;
            self.counters.reads += 1;
            return Some(Suspended {
                start,
                end: start + read_ns,
                charge: read_ns,
            });
        }
        let erasing = l.erase.0 <= t && t < l.erase.1;
        let pause = if erasing {
            self.cfg.erase_ns
        } else {
            self.cfg.program_ns
        };
        if t + pause >= normal {
            return None;
        }
        if t >= l.window_end {
            l.window_end = l.pe_end;
            l.count = 0;
        }
        if l.count >= self.cfg.max {
            self.counters.refused += 1;
            return None;
        }
        l.count += 1;
        let start = t + pause;
        l.read_until = start + read_ns;
        self.counters.reads += 1;
        if erasing {
            self.counters.erases += 1;
        } else {
            self.counters.programs += 1;
        }
        Some(Suspended {
            start,
            end: start + read_ns,
            charge: pause + read_ns + self.cfg.resume_ns,
        })
    }
}
