//! Running a phase: closed-loop jobs (a heap of slots, each issuing its next request when its
//! previous one completes), settling an idle device, open-loop streams and closed-loop replay;
//! with what a phase's jobs cost in memory and how their seeds derive from the run seed.

use super::{EngineError, Progress, Simulator};
use crate::addr::{Lpn, SimTime};
use crate::error::quote;
use crate::host::short_of_memory;
use crate::request::{Op, Upcoming};
use crate::seed::mix;
use crate::stats::Metrics;
use crate::workload::{HostIo, JobGen, JobSpec, Settle};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

/// Reports progress in batches, so a progress bar costs nothing per request, and looks at the
/// machine's memory between batches at most once a second ([`super::SimOptions::memory_floor`]).
struct Ticker<'a> {
    progress: &'a mut dyn Progress,
    since: u64,
    done: u64,
    phase: &'a str,
    ftl: &'static str,
    floor: u64,
    next_look: Instant,
}

impl<'a> Ticker<'a> {
    /// How many requests between progress updates.
    const EVERY: u64 = 4096;
    /// The least time between two looks at the machine's memory.
    const LOOK_EVERY: Duration = Duration::from_secs(1);

    fn start(
        sim: &Simulator,
        progress: &'a mut dyn Progress,
        phase: &'a str,
        total: Option<u64>,
    ) -> Self {
        progress.start(phase, total);
        Ticker {
            progress,
            since: 0,
            done: 0,
            phase,
            ftl: sim.ftl.name(),
            floor: sim.opts.memory_floor,
            next_look: Instant::now(),
        }
    }

    /// Counts a request; fails when the machine runs short of memory.
    #[inline]
    fn tick(&mut self) -> Result<(), EngineError> {
        self.since += 1;
        if self.since == Self::EVERY {
            self.progress.advance(self.since);
            self.done += self.since;
            self.since = 0;
            return self.look();
        }
        Ok(())
    }

    /// The memory check: a run whose state outgrows the machine stops here, naming what grew,
    /// before the kernel kills the largest process (this one, or another's long run).
    #[inline(never)]
    fn look(&mut self) -> Result<(), EngineError> {
        let now = Instant::now();
        if now < self.next_look {
            return Ok(());
        }
        self.next_look = now + Self::LOOK_EVERY;
        match short_of_memory(self.floor) {
            None => Ok(()),
            Some(short) => Err(EngineError::Memory(format!(
                "{short}, {} requests into phase {} of {}: the run's state grew past what the \
                 estimate made before it counts (docs/device.md \"Memory\"; LeaFTL's segments \
                 grow with every small random write); make the device smaller (--capacity), \
                 write less, or run fewer simulations at once",
                self.done,
                quote(self.phase),
                self.ftl
            ))),
        }
    }

    fn finish(self) {
        self.progress.advance(self.since);
        self.progress.finish();
    }
}

/// Marks a staged slot entry (the host is submitting its request) on its clone index.
const STAGED: u32 = 1 << 31;

impl Simulator {
    /// Passes a prefetch hint for the request `op` at byte `offset` to the FTL.
    #[inline]
    fn prefetch(&self, (op, offset): (Op, u64), when: Upcoming) {
        if op == Op::Flush {
            return;
        }
        let lpn = Lpn((offset / self.dev.geo().page_size as u64) as u32);
        self.ftl.prefetch(&self.dev, op, lpn, when);
    }

    /// Runs closed-loop jobs as one phase: every clone's `iodepth` slots start at the phase
    /// start and each issues its next request when its previous one completes. `seed` seeds
    /// jobs that have no `randseed` of their own.
    pub fn run_jobs(
        &mut self,
        name: &str,
        jobs: &[JobSpec],
        seed: u64,
        progress: &mut dyn Progress,
    ) -> Result<Metrics, EngineError> {
        let logical = self.dev.geo().logical_bytes();
        let ruhs = self.dev.config().fdp.ruhs;
        for j in jobs {
            j.validate(logical)
                .and_then(|()| j.placement.validate(ruhs))
                .map_err(|message| EngineError::Job {
                    job: j.name.clone(),
                    message,
                })?;
        }
        // Sized once: the memory estimate is what is used, and a phase too large for the
        // machine is an error rather than an abort half-way through growing its tables.
        let state = JobsState::of(jobs);
        let mut gens: Vec<JobGen> = Vec::new();
        let mut heap: BinaryHeap<Slot> = BinaryHeap::new();
        // (Slots name their clone by a u32.)
        let reserved = state.clones <= 1 << 32
            && usize::try_from(state.slots).is_ok_and(|n| heap.try_reserve_exact(n).is_ok())
            && usize::try_from(state.clones).is_ok_and(|n| gens.try_reserve_exact(n).is_ok());
        if !reserved {
            let job = jobs.iter().max_by_key(|j| j.slots());
            return Err(EngineError::Job {
                job: job.map_or_else(String::new, |j| j.name.clone()),
                message: format!(
                    "cannot allocate the state of {} clones and numjobs x iodepth = {} slots \
                     (about {} MiB): lower numjobs or iodepth",
                    state.clones,
                    state.slots,
                    state.bytes() >> 20
                ),
            });
        }
        self.begin_phase(name);
        let start = self.clock;
        let mut total = Some(0u64);
        for (ji, j) in jobs.iter().enumerate() {
            for c in 0..j.numjobs {
                let s = j.seed.unwrap_or(seed);
                let seed = mix(s, ji as u64, c as u64);
                let g = JobGen::new(j, c, logical, seed, start).placing(&j.placement, ruhs, seed);
                total = total.zip(g.remaining()).map(|(a, b)| a + b);
                let gi = gens.len() as u32;
                gens.push(g);
                for _ in 0..j.iodepth {
                    heap.push(Reverse((start.0, gi)));
                }
            }
        }
        // The host's cost per I/O (docs/workloads.md): each clone's thread submits a request
        // on its core (`cpu`: when the core is free) and takes its completion; a slot's request
        // first waits for that as a staged entry (`STAGED` on its clone), so the device still
        // sees requests in arrival order, and `issued` keeps, per clone, when its thread issued
        // each staged request (in order: a clone's staged times increase).
        let host = self.dev.config().host;
        let (mut cpu, mut issued) = if host.is_on() {
            if gens.len() >= STAGED as usize {
                return Err(EngineError::Job {
                    job: jobs[0].name.clone(),
                    message: format!("{} clones with a host cost (at most 2^31)", gens.len()),
                });
            }
            (vec![start.0; gens.len()], vec![VecDeque::new(); gens.len()])
        } else {
            (Vec::new(), Vec::new())
        };
        let mut ticker = Ticker::start(self, progress, name, total);
        // Requests of time-based clones in a row that completed the instant they were issued.
        let mut stalled = 0u64;
        while let Some(Reverse((t, tagged))) = heap.pop() {
            let gi = tagged & !STAGED;
            if host.is_on() {
                let clone = gi as usize;
                if tagged & STAGED == 0 {
                    if gens[clone].upcoming().is_none() {
                        continue;
                    }
                    let submitted = t.max(cpu[clone]) + host.submit_ns;
                    cpu[clone] = submitted + host.complete_ns;
                    issued[clone].push_back(t);
                    heap.push(Reverse((submitted, gi | STAGED)));
                    continue;
                }
                let origin = issued[clone].pop_front().expect("a staged request");
                self.host_origin = Some((SimTime(origin), host.completion_ns()));
            }
            let g = &mut gens[gi as usize];
            let Some(io) = g.next(SimTime(t)) else {
                self.host_origin = None;
                continue;
            };
            let time_based = g.remaining().is_none();
            // The FTL state and device pages of random requests miss the cache. This clone's
            // next request comes after every other clone's: hint its table entries now; the
            // request at the top of the heap is normally served next, and its entries were
            // hinted a round ago, so the device state they lead to can be hinted too.
            if let Some(up) = gens[gi as usize].upcoming() {
                self.prefetch(up, Upcoming::Later);
            }
            if let Some(Reverse((_, next))) = heap.peek() {
                if let Some(up) = gens[(*next & !STAGED) as usize].upcoming() {
                    self.prefetch(up, Upcoming::Next);
                }
            }
            let done = self.submit(io)?;
            // A time-based job ends only when simulated time reaches its runtime: if its
            // requests stop taking any, it would spin forever. Bounded jobs end anyway.
            if done.0 > t {
                stalled = 0;
            } else if time_based {
                stalled += 1;
                if stalled == STALLED_REQUESTS {
                    return Err(stalled_error(jobs, gi, t - start.0));
                }
            }
            heap.push(Reverse((done.0 + host.completion_ns(), gi)));
            ticker.tick()?;
        }
        ticker.finish();
        Ok(self.end_phase())
    }

    /// Lets the device idle as a phase of its own (`name`, normally `settle`; SPEC §3.5): the
    /// FTL does the work it owes an idle device ([`crate::ftl::Ftl::idle`]) with as many units in flight as
    /// the device has LUNs, each slot issuing its next unit when its previous one completes,
    /// until the FTL owes nothing or (with [`Settle::For`]) the next unit would be issued after
    /// the idle time. The phase ends when its last operation completes (at its start if the
    /// FTL owed nothing); the next phase starts then, on an idle device. `Settle::Off` runs no
    /// phase and returns `None`.
    pub fn settle(
        &mut self,
        name: &str,
        settle: Settle,
        progress: &mut dyn Progress,
    ) -> Result<Option<Metrics>, EngineError> {
        let limit = match settle {
            Settle::Off => return Ok(None),
            Settle::Auto => None,
            Settle::For(ns) => Some(ns),
        };
        self.begin_phase(name);
        let start = self.clock;
        let deadline = limit.map(|ns| SimTime(start.0.saturating_add(ns)));
        let fail = |message: String| EngineError::Settle {
            at: start.0,
            message,
        };
        progress.start(name, None);
        let mut slots: BinaryHeap<Reverse<u64>> = (0..self.dev.geo().luns())
            .map(|_| Reverse(start.0))
            .collect();
        while let Some(Reverse(t)) = slots.pop() {
            let t = SimTime(t);
            if deadline.is_some_and(|d| t >= d) {
                break;
            }
            // Units are issued in time order, like requests.
            self.dev.advance_floor(t);
            match self
                .ftl
                .idle(&mut self.dev, t)
                .map_err(|e| match e.is_power_lost() {
                    true => fail(
                        "a power cut armed with arm_power_cut struck while the device settled \
                         (cuts are injected into requests only)"
                            .into(),
                    ),
                    false => fail(e.to_string()),
                })? {
                Some(done) => slots.push(Reverse(done.0.max(t.0))),
                None => break,
            }
        }
        progress.finish();
        if self.opts.check_invariants {
            self.ftl.check_invariants(&self.dev).map_err(fail)?;
        }
        self.phase.note_end(self.dev.drained_at());
        self.phase.note_dram(self.ftl.dram_total());
        Ok(Some(self.end_phase()))
    }

    /// Runs an open-loop stream as one phase: each I/O arrives at the phase start plus its
    /// `arrival` (which must not decrease) and is served then; latency includes queueing.
    ///
    /// The stream is read `LOOKAHEAD` (32) requests ahead and each request's FTL state hinted as
    /// it is read (its device state when it is next), as the jobs' clones do for each other:
    /// random requests miss the cache, and one hint a request ahead hides little of it.
    pub fn run_stream<E: std::fmt::Display>(
        &mut self,
        name: &str,
        stream: impl IntoIterator<Item = Result<HostIo, E>>,
        total: Option<u64>,
        progress: &mut dyn Progress,
    ) -> Result<Metrics, EngineError> {
        let mut stream = stream.into_iter();
        let mut ahead = std::collections::VecDeque::with_capacity(LOOKAHEAD);
        let hint = |sim: &Simulator, r: Option<&Result<HostIo, E>>, when| {
            if let Some(Ok(io)) = r {
                sim.prefetch((io.op, io.offset), when);
            }
        };
        self.run_feedback(name, total, progress, |sim, _| {
            while ahead.len() < LOOKAHEAD {
                let Some(r) = stream.next() else { break };
                hint(sim, Some(&r), Upcoming::Later);
                ahead.push_back(r);
            }
            let r = ahead.pop_front();
            hint(sim, ahead.front(), Upcoming::Next);
            r
        })
    }

    /// Runs a phase of requests that `next` gives one by one, showing it the simulator as it
    /// stands (its counters so far) and telling it when the request before completed (ns since
    /// the phase start; `None` before the first): closed-loop replay issues each request after
    /// what it waited for, and reads the counters at the application's phase marks.
    /// Arrivals are ns since the phase start and must not decrease.
    pub fn run_feedback<E: std::fmt::Display>(
        &mut self,
        name: &str,
        total: Option<u64>,
        progress: &mut dyn Progress,
        mut next: impl FnMut(&Simulator, Option<u64>) -> Option<Result<HostIo, E>>,
    ) -> Result<Metrics, EngineError> {
        self.begin_phase(name);
        let start = self.clock;
        let mut ticker = Ticker::start(self, progress, name, total);
        let mut done = None;
        while let Some(io) = next(self, done) {
            let mut io = io.map_err(|e| EngineError::Input(e.to_string()))?;
            io.arrival = start.after(io.arrival.0);
            done = Some(self.submit(io)?.since(start));
            ticker.tick()?;
        }
        ticker.finish();
        Ok(self.end_phase())
    }
}

/// Requests an open-loop stream is read ahead of the one being served (their FTL state is
/// hinted then): about as many as the jobs of a random-read benchmark keep in flight.
pub const LOOKAHEAD: usize = 32;

/// The error for a phase of `jobs` whose time-based clone `clone` (numbered across the jobs in
/// order) completed [`STALLED_REQUESTS`] requests in a row in no simulated time, `elapsed` ns
/// into the phase.
fn stalled_error(jobs: &[JobSpec], clone: u32, elapsed: u64) -> EngineError {
    let mut clones = 0u64;
    let job = jobs
        .iter()
        .find(|j| {
            clones += j.numjobs as u64;
            (clone as u64) < clones
        })
        .expect("every clone belongs to a job");
    EngineError::Job {
        job: job.name.clone(),
        message: format!(
            "{STALLED_REQUESTS} requests in a row completed the instant they were issued, {elapsed} \
             ns into the phase: no simulated time passes, so its runtime of {} ns would never \
             come. Reads of pages never written (or trimmed) take no flash time: write the \
             pages first (precondition) or bound the job (number_ios, io_size)",
            job.runtime_ns.unwrap_or_default()
        ),
    }
}

/// Requests in a row that a time-based job may complete in no simulated time before its phase
/// is stopped with an error: past that many, no simulated time passes and its runtime would
/// never come.
pub const STALLED_REQUESTS: u64 = 1 << 20;

/// A slot of [`Simulator::run_jobs`]: when it issues its next request, and its clone.
type Slot = Reverse<(u64, u32)>;

/// What [`Simulator::run_jobs`] holds for a phase's jobs besides the simulator: a request
/// generator per clone and a place in its queue per slot (docs/device.md "Memory").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct JobsState {
    /// Clones: the jobs' `numjobs` summed.
    pub clones: u64,
    /// Slots: the jobs' `numjobs` × `iodepth` summed.
    pub slots: u64,
}

impl JobsState {
    /// Bytes per clone: its request generator.
    pub const CLONE_BYTES: u64 = std::mem::size_of::<JobGen>() as u64;
    /// Bytes per slot: its entry in the queue of slots.
    pub const SLOT_BYTES: u64 = std::mem::size_of::<Slot>() as u64;

    /// The state of `jobs` run as one phase.
    pub fn of(jobs: &[JobSpec]) -> JobsState {
        jobs.iter().fold(
            JobsState {
                clones: 0,
                slots: 0,
            },
            |s, j| JobsState {
                clones: s.clones.saturating_add(j.numjobs as u64),
                slots: s.slots.saturating_add(j.slots()),
            },
        )
    }

    /// Its bytes (saturating).
    pub fn bytes(&self) -> u64 {
        let clones = self.clones as u128 * Self::CLONE_BYTES as u128;
        let slots = self.slots as u128 * Self::SLOT_BYTES as u128;
        u64::try_from(clones + slots).unwrap_or(u64::MAX)
    }
}
