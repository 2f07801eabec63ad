//! Program and erase suspend (`suspend=on`, docs/device.md "Program and erase suspend"): a
//! host-path read has priority over the programs and erases queued on its LUN (as in MQSim's
//! transaction scheduling unit), and one that finds its LUN programming or erasing suspends
//! that operation, is served, and the operation resumes.
//!
//! Completions are decided when an operation is booked, so a suspension cannot move the
//! completion of work already booked: it charges the LUN instead. The read starts
//! `suspend_program_ns` (or `suspend_erase_ns`) after it is issued, and every operation booked
//! on the LUN from then on starts as much later as the read took (with a suspension: suspend,
//! read, resume): LUN time is conserved, reads gain their latency, and the work already booked
//! reports its completion early by that much. A read never overlaps another read: it queues
//! behind a read executing or given priority already, goes after any queued read it would
//! overlap, and takes no priority on a LUN with only reads booked.

use crate::config::SuspendConfig;
use serde::Serialize;

/// Counters of the suspensions since the last reset.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SuspendCounters {
    /// Programs suspended by a read.
    pub programs: u64,
    /// Erases suspended by a read.
    pub erases: u64,
    /// Reads served ahead of queued programs and erases (in a suspension or not).
    pub reads: u64,
    /// Reads that found a program or erase to suspend but waited for it: it had been
    /// suspended `suspend_max` times already.
    pub refused: u64,
}

/// What an operation booked on a LUN does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Read,
    Program,
    Erase,
}

/// An operation booked on a LUN, `[start, end)`, and how often a read suspended it.
#[derive(Copy, Clone, Debug)]
struct Booked {
    start: u64,
    end: u64,
    kind: Kind,
    suspended: u32,
}

/// Operations remembered per LUN: the one executing at a read's issue is among the latest
/// booked unless more than this many were queued after it (then the read is taken to find the
/// LUN idle: see docs/device.md).
const REMEMBERED: usize = 64;

/// The latest operations booked on one LUN, oldest first (a ring).
#[derive(Clone, Debug, Default)]
struct Lun {
    ops: std::collections::VecDeque<Booked>,
}

impl Lun {
    fn push(&mut self, b: Booked) {
        if self.ops.len() == REMEMBERED {
            self.ops.pop_front();
        }
        self.ops.push_back(b);
    }
}

/// The suspension state of every LUN.
#[derive(Clone, Debug)]
pub(super) struct Suspend {
    cfg: SuspendConfig,
    luns: Vec<Lun>,
    counters: SuspendCounters,
}

/// Where a suspending read goes: its end, and the LUN time it adds.
pub(super) struct Suspended {
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

    /// Notes an operation booked on `lun` over `[start, end)`.
    #[inline]
    pub(super) fn booked(&mut self, lun: usize, start: u64, end: u64, kind: Kind) {
        self.luns[lun].push(Booked {
            start,
            end,
            kind,
            suspended: 0,
        });
    }

    /// A host-path read of `read_ns` issued at `t` on `lun`, whose normal booking would start
    /// at `normal` (the earliest gap, or the LUN's tail): where it goes with priority over the
    /// queued work — right away on a LUN executing nothing, after a read it is executing, or
    /// after suspending the program or erase it is executing (at most `suspend_max` times
    /// each) — or `None` when the normal booking is no later.
    #[inline]
    pub(super) fn read(
        &mut self,
        lun: usize,
        t: u64,
        read_ns: u64,
        normal: u64,
    ) -> Option<Suspended> {
        let cfg = &self.cfg;
        let l = &mut self.luns[lun];
        // Priority is over programs and erases: on a LUN with none executing or queued, the
        // read takes its place among the reads (going ahead of them would serve two at once,
        // as the completions of work already booked do not move).
        if !l.ops.iter().any(|o| o.end > t && o.kind != Kind::Read) {
            return None;
        }
        // Reads in progress, or starting within a suspension's time (the executing operation
        // is suspended already for them): this one follows them.
        let soon = t + cfg.program_ns.max(cfg.erase_ns);
        // One pass over the remembered operations: the latest end of such reads, and the
        // operation executing at `t`.
        let (mut reading, mut at) = (None::<u64>, None);
        for (i, o) in l.ops.iter().enumerate() {
            if o.end <= t {
                continue;
            }
            if o.kind == Kind::Read && o.start <= soon {
                reading = Some(reading.map_or(o.end, |e| e.max(o.end)));
            }
            if at.is_none() && o.start <= t {
                at = Some(i);
            }
        }
        let executing = match reading {
            Some(_) => None,
            None => at.and_then(|i| l.ops.get_mut(i)),
        };
        let (start, pause) = match (reading, executing) {
            (Some(end), _) => (end, None),
            (None, None) => (t, None),
            (None, Some(o)) if o.kind == Kind::Read => (o.end, None),
            (None, Some(o)) if o.suspended >= cfg.max => {
                if o.end < normal {
                    self.counters.refused += 1;
                }
                (o.end, None)
            }
            (None, Some(o)) => {
                let pause = if o.kind == Kind::Erase {
                    cfg.erase_ns
                } else {
                    cfg.program_ns
                };
                if t + pause >= normal {
                    return None;
                }
                o.suspended += 1;
                (t + pause, Some((o.kind, pause)))
            }
        };
        // Nor does it overlap a read booked later in the queue: it goes after any it would.
        let mut start = start;
        while let Some(o) = l
            .ops
            .iter()
            .find(|o| o.kind == Kind::Read && o.start < start + read_ns && start < o.end)
        {
            start = o.end;
        }
        if start >= normal {
            return None;
        }
        let charge = match pause {
            Some((kind, pause)) => {
                match kind {
                    Kind::Erase => self.counters.erases += 1,
                    _ => self.counters.programs += 1,
                }
                pause + read_ns + cfg.resume_ns
            }
            None => read_ns,
        };
        self.counters.reads += 1;
        let end = start + read_ns;
        l.push(Booked {
            start,
            end,
            kind: Kind::Read,
            suspended: 0,
        });
        Some(Suspended { end, charge })
    }
}
