//! Closed-loop jobs with fio semantics (SPEC §4.1).
//!
//! A job issues block-sized requests in its region `[offset, offset + size)` until it has issued
//! `io_size` bytes (default: `size`), or `number_ios` requests, or simulated `runtime` has passed.
//! Each of its `iodepth` slots issues its next request when its previous one completes; `numjobs`
//! clones run side by side, each with its own seed and (with `offset_increment`) region.

use super::dist::{BlockPicker, Dist};
use super::HostIo;
use crate::addr::SimTime;
use crate::error::quote;
use crate::request::Op;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// fio's `rw`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RwKind {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Sequential trims.
    Trim,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Random trims.
    RandTrim,
    /// Sequential mixed reads and writes (`rw`/`readwrite`).
    Rw,
    /// Random mixed reads and writes.
    RandRw,
}

impl RwKind {
    /// Whether offsets are random.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwKind::RandRead | RwKind::RandWrite | RwKind::RandTrim | RwKind::RandRw
        )
    }
}

impl FromStr for RwKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.trim() {
            "read" => RwKind::Read,
            "write" => RwKind::Write,
            "trim" => RwKind::Trim,
            "randread" => RwKind::RandRead,
            "randwrite" => RwKind::RandWrite,
            "randtrim" => RwKind::RandTrim,
            "rw" | "readwrite" => RwKind::Rw,
            "randrw" => RwKind::RandRw,
            other => {
                return Err(format!(
                    "unknown rw {} (expected read, write, trim, randread, randwrite, randtrim, \
                     rw, readwrite, randrw)",
                    quote(other)
                ))
            }
        })
    }
}

impl fmt::Display for RwKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            RwKind::Read => "read",
            RwKind::Write => "write",
            RwKind::Trim => "trim",
            RwKind::RandRead => "randread",
            RwKind::RandWrite => "randwrite",
            RwKind::RandTrim => "randtrim",
            RwKind::Rw => "rw",
            RwKind::RandRw => "randrw",
        };
        f.write_str(s)
    }
}

/// How a job picks each write's placement ID among its list (fio's `fdp_pli_select`, or
/// `plid_select`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PliSelect {
    /// The next in the list, cycling (fio's default).
    #[default]
    RoundRobin,
    /// One drawn uniformly from the list, from the job's own seeded stream.
    Random,
}

impl FromStr for PliSelect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "roundrobin" => Ok(PliSelect::RoundRobin),
            "random" => Ok(PliSelect::Random),
            other => Err(format!(
                "{} is not roundrobin or random (fio's scheme selection is left out, docs/fdp.md)",
                quote(other)
            )),
        }
    }
}

/// Parses fio's placement ID list (`fdp_pli`, `plids`): indices and ranges separated by
/// commas, `0,2,5-7`.
pub fn parse_plis(text: &str) -> Result<Vec<u16>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let id = |v: &str| {
            v.trim().parse::<u16>().map_err(|_| {
                format!(
                    "{} in {} is not a placement ID index",
                    quote(v),
                    quote(text)
                )
            })
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (id(a)?, id(b)?);
                if a > b {
                    return Err(format!("range {} runs backwards", quote(part)));
                }
                out.extend(a..=b);
            }
            None => out.push(id(part)?),
        }
    }
    Ok(out)
}

/// A job's write placement under Flexible Data Placement (fio's `fdp=1` or
/// `dataplacement=fdp`; docs/fdp.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Placement {
    /// Whether writes carry placement IDs (`fdp=1`).
    pub on: bool,
    /// The placement ID indices writes use (`fdp_pli`, `plids`); empty: every handle.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plis: Vec<u16>,
    /// How each write picks one.
    pub select: PliSelect,
}

impl Placement {
    /// Whether anything was set (reports leave it out otherwise).
    pub fn is_unset(&self) -> bool {
        *self == Placement::default()
    }

    /// Checks it against a device with `ruhs` reclaim unit handles (0: no FDP); the error
    /// names the option.
    pub fn validate(&self, ruhs: u16) -> Result<(), String> {
        if !self.on {
            if !self.plis.is_empty() {
                return Err("fdp_pli: needs fdp=1 (or dataplacement=fdp)".into());
            }
            if self.select != PliSelect::default() {
                return Err("fdp_pli_select: needs fdp=1 (or dataplacement=fdp)".into());
            }
            return Ok(());
        }
        if ruhs == 0 {
            return Err(
                "fdp: the device has no reclaim unit handles (set fdp_ruhs, docs/fdp.md)".into(),
            );
        }
        if let Some(p) = self.plis.iter().find(|&&p| p >= ruhs) {
            return Err(format!(
                "fdp_pli: placement ID index {p}, but the device has {ruhs} handle(s) (fdp_ruhs)"
            ));
        }
        Ok(())
    }
}

/// One fio job section (per-job amounts, as in fio).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobSpec {
    /// Section name.
    pub name: String,
    /// Access pattern.
    pub rw: RwKind,
    /// Percentage of reads in mixed jobs.
    pub rwmixread: u32,
    /// Block size in bytes.
    pub bs: u64,
    /// Clones of the job.
    pub numjobs: u32,
    /// Requests in flight per clone.
    pub iodepth: u32,
    /// Start of the region, bytes.
    pub offset: u64,
    /// Extra offset of clone `i`: `offset + i * offset_increment`.
    pub offset_increment: u64,
    /// Region size in bytes (`None`: the rest of the logical space after `offset`).
    pub size: Option<u64>,
    /// Bytes each clone issues (`None`: `size`).
    pub io_size: Option<u64>,
    /// Requests each clone issues (overrides `io_size`).
    pub number_ios: Option<u64>,
    /// Simulated time limit, ns.
    pub runtime_ns: Option<u64>,
    /// Keep going until `runtime` even past `io_size` (fio's `time_based`).
    pub time_based: bool,
    /// Random distribution.
    pub dist: Dist,
    /// fio's random map (uniform only): each block once per pass.
    pub random_map: bool,
    /// Seed of this job (`None`: derived from the run's seed and the job's position).
    pub seed: Option<u64>,
    /// A FLUSH after every this many writes of a clone (fio's `fsync`; 0: never, and absent
    /// from reports).
    #[serde(skip_serializing_if = "never")]
    pub fsync: u64,
    /// Write placement under FDP (absent from reports when unset).
    #[serde(skip_serializing_if = "Placement::is_unset")]
    pub placement: Placement,
}

/// Whether an `fsync` interval means never.
fn never(fsync: &u64) -> bool {
    *fsync == 0
}

impl JobSpec {
    /// A job with fio's defaults: 4 KiB, one clone, iodepth 1, the whole device.
    pub fn new(name: &str, rw: RwKind) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            rw,
            rwmixread: 50,
            bs: 4096,
            numjobs: 1,
            iodepth: 1,
            offset: 0,
            offset_increment: 0,
            size: None,
            io_size: None,
            number_ios: None,
            runtime_ns: None,
            time_based: false,
            dist: Dist::Uniform,
            random_map: true,
            seed: None,
            fsync: 0,
            placement: Placement::default(),
        }
    }

    /// Checks the job against a logical space of `logical_bytes`; the error names the option.
    pub fn validate(&self, logical_bytes: u64) -> Result<(), String> {
        if self.bs == 0 {
            return Err("bs: must be positive".into());
        }
        if self.numjobs == 0 {
            return Err("numjobs: must be at least 1".into());
        }
        if self.iodepth == 0 {
            return Err("iodepth: must be at least 1".into());
        }
        if self.rwmixread > 100 {
            return Err(format!("rwmixread: {} is above 100", self.rwmixread));
        }
        // Amounts of zero would measure nothing and report an all-zero phase.
        if self.number_ios == Some(0) {
            return Err("number_ios: must be at least 1".into());
        }
        if self.runtime_ns == Some(0) {
            return Err("runtime: must be positive".into());
        }
        if let Some(io_size) = self.io_size.filter(|&b| b < self.bs) {
            return Err(format!(
                "io_size: {io_size} B is less than one block of {} B (bs); a job issues whole \
                 blocks",
                self.bs
            ));
        }
        let last_clone_offset = self
            .offset_increment
            .checked_mul((self.numjobs - 1) as u64)
            .and_then(|x| x.checked_add(self.offset))
            .ok_or("offset_increment: overflows")?;
        let size = self.region_size(logical_bytes);
        if size < self.bs {
            return Err(format!(
                "size: region of {size} B (offset {}) holds no block of {} B",
                self.offset, self.bs
            ));
        }
        if last_clone_offset
            .checked_add(size)
            .is_none_or(|end| end > logical_bytes)
        {
            return Err(format!(
                "offset/size: region [{last_clone_offset}, +{size}) of clone {} lies beyond the \
                 logical space of {logical_bytes} B",
                self.numjobs - 1
            ));
        }
        if self.time_based && self.runtime_ns.is_none() {
            return Err("time_based: needs runtime".into());
        }
        Ok(())
    }

    /// Its slots: `numjobs` × `iodepth`, each one request in flight.
    pub fn slots(&self) -> u64 {
        self.numjobs as u64 * self.iodepth as u64
    }

    /// The region size for a logical space of `logical_bytes`.
    pub fn region_size(&self, logical_bytes: u64) -> u64 {
        self.size
            .unwrap_or_else(|| logical_bytes.saturating_sub(self.offset))
    }

    /// Requests one clone issues before stopping on amount (`None`: unbounded, time-based).
    pub fn ios_per_clone(&self, logical_bytes: u64) -> Option<u64> {
        if let Some(n) = self.number_ios {
            return Some(n);
        }
        if self.time_based {
            return None;
        }
        let bytes = self.io_size.unwrap_or(self.region_size(logical_bytes));
        Some(bytes.div_ceil(self.bs))
    }
}

/// The request generator of one clone of a job.
#[derive(Clone, Debug)]
pub struct JobGen {
    rw: RwKind,
    rwmixread: u32,
    bs: u64,
    base: u64,
    blocks: u64,
    seq_next: [u64; 2],
    picker: Option<BlockPicker>,
    rng: Pcg64Mcg,
    /// Requests left to draw after `ahead`.
    remaining: Option<u64>,
    deadline: Option<SimTime>,
    /// The next request's operation and block, drawn one request early so that the engine can
    /// prefetch the state it will touch ([`JobGen::upcoming`]). Drawing does not depend on
    /// the issue time, so the requests are those drawn on demand.
    ahead: Option<(Op, u64)>,
    /// Writes between two FLUSHes (0: none), and writes drawn since the last.
    fsync: u64,
    writes_unsynced: u64,
    /// With FDP, how writes pick their placement IDs.
    placer: Option<Placer>,
}

/// Picks each write's placement ID (fio's FDP placement: round robin over the list, or
/// uniform draws from a stream of its own, so the job's offsets do not change).
#[derive(Clone, Debug)]
struct Placer {
    plis: Vec<u16>,
    select: PliSelect,
    next: usize,
    rng: Pcg64Mcg,
}

impl Placer {
    #[inline]
    fn pick(&mut self) -> u16 {
        let i = match self.select {
            PliSelect::RoundRobin => {
                let i = self.next;
                self.next = (i + 1) % self.plis.len();
                i
            }
            PliSelect::Random => self.rng.gen_range(0..self.plis.len()),
        };
        self.plis[i]
    }
}

impl JobGen {
    /// Clone `clone` of `spec`, seeded with `seed`, starting at `start`.
    pub fn new(
        spec: &JobSpec,
        clone: u32,
        logical_bytes: u64,
        seed: u64,
        start: SimTime,
    ) -> JobGen {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let size = spec.region_size(logical_bytes);
        let blocks = (size / spec.bs).max(1);
        let picker = spec
            .rw
            .is_random()
            .then(|| BlockPicker::new(blocks, spec.dist, spec.random_map, &mut rng));
        let mut g = JobGen {
            rw: spec.rw,
            rwmixread: spec.rwmixread,
            bs: spec.bs,
            base: spec.offset + clone as u64 * spec.offset_increment,
            blocks,
            seq_next: [0; 2],
            picker,
            rng,
            remaining: spec.ios_per_clone(logical_bytes),
            deadline: spec.runtime_ns.map(|r| start.after(r)),
            ahead: None,
            fsync: spec.fsync,
            writes_unsynced: 0,
            placer: None,
        };
        g.ahead = g.draw();
        g
    }

    /// The generator with its job's write placement on a device with `ruhs` handles (an empty
    /// list means all of them), its random picks seeded from `seed`; unchanged without it.
    pub fn placing(mut self, spec: &Placement, ruhs: u16, seed: u64) -> JobGen {
        if spec.on && ruhs > 0 {
            let plis = match spec.plis.is_empty() {
                true => (0..ruhs).collect(),
                false => spec.plis.clone(),
            };
            self.placer = Some(Placer {
                plis,
                select: spec.select,
                next: 0,
                rng: Pcg64Mcg::seed_from_u64(crate::seed::mix(seed, 0xfd, 0)),
            });
        }
        self
    }

    /// Requests left on amount (`None` if time-based).
    pub fn remaining(&self) -> Option<u64> {
        self.remaining.map(|r| r + self.ahead.is_some() as u64)
    }

    /// The next request issued at `now`, or `None` when the job is done.
    #[inline]
    pub fn next(&mut self, now: SimTime) -> Option<HostIo> {
        if self.deadline.is_some_and(|d| now >= d) {
            return None;
        }
        let (op, offset) = self.upcoming()?;
        self.ahead = self.draw();
        let placement = match &mut self.placer {
            Some(p) if op == Op::Write => p.pick(),
            _ => 0,
        };
        Some(HostIo {
            placement,
            arrival: now,
            op,
            offset,
            len: if op == Op::Flush { 0 } else { self.bs },
        })
    }

    /// The operation and byte offset of the request [`JobGen::next`] will issue (unless the
    /// job's time is up by then), for prefetching; `None` when the job is done.
    #[inline]
    pub fn upcoming(&self) -> Option<(Op, u64)> {
        self.ahead.map(|(op, block)| match op {
            Op::Flush => (op, 0),
            _ => (op, self.base + block * self.bs),
        })
    }

    /// Draws the next request's operation and block, or `None` when the amount is issued.
    #[inline]
    fn draw(&mut self) -> Option<(Op, u64)> {
        // fio's fsync: a FLUSH after every `fsync` writes, not counted in the amount.
        if self.fsync > 0 && self.writes_unsynced == self.fsync {
            self.writes_unsynced = 0;
            return Some((Op::Flush, 0));
        }
        match &mut self.remaining {
            Some(0) => return None,
            Some(r) => *r -= 1,
            None => {}
        }
        let op = match self.rw {
            RwKind::Read | RwKind::RandRead => Op::Read,
            RwKind::Write | RwKind::RandWrite => Op::Write,
            RwKind::Trim | RwKind::RandTrim => Op::Trim,
            RwKind::Rw | RwKind::RandRw => {
                if self.rng.gen_range(0..100) < self.rwmixread {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        self.writes_unsynced += (op == Op::Write) as u64;
        let block = match &mut self.picker {
            Some(p) => p.next(&mut self.rng),
            None => {
                // Sequential: each direction keeps its own position, wrapping at the region end.
                let d = (op != Op::Read) as usize;
                let b = self.seq_next[d];
                self.seq_next[d] = (b + 1) % self.blocks;
                b
            }
        };
        Some((op, block))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_job_wraps_and_stops_on_amount() {
        let mut s = JobSpec::new("j", RwKind::Write);
        s.size = Some(4 * 4096);
        s.io_size = Some(6 * 4096);
        let mut g = JobGen::new(&s, 0, 1 << 20, 1, SimTime(0));
        let offs: Vec<u64> = std::iter::from_fn(|| g.next(SimTime(0)))
            .map(|io| io.offset / 4096)
            .collect();
        assert_eq!(offs, vec![0, 1, 2, 3, 0, 1]);
    }

    #[test]
    fn upcoming_is_the_next_request_and_amounts_count_it() {
        let mut s = JobSpec::new("j", RwKind::RandRw);
        s.number_ios = Some(50);
        let mut g = JobGen::new(&s, 0, 1 << 20, 4, SimTime(0));
        assert_eq!(g.remaining(), Some(50));
        for left in (0..50).rev() {
            let up = g.upcoming().unwrap();
            let io = g.next(SimTime(7)).unwrap();
            assert_eq!((io.op, io.offset, io.arrival), (up.0, up.1, SimTime(7)));
            assert_eq!(g.remaining(), Some(left));
        }
        assert_eq!((g.upcoming(), g.next(SimTime(8))), (None, None));
    }

    #[test]
    fn fsync_flushes_after_every_n_writes() {
        let mut s = JobSpec::new("j", RwKind::RandRw);
        s.fsync = 3;
        s.number_ios = Some(200);
        let mut g = JobGen::new(&s, 0, 1 << 20, 4, SimTime(0));
        let ops: Vec<Op> = std::iter::from_fn(|| g.next(SimTime(0)))
            .map(|io| io.op)
            .collect();
        let writes = ops.iter().filter(|&&o| o == Op::Write).count();
        let flushes = ops.iter().filter(|&&o| o == Op::Flush).count();
        assert_eq!(
            ops.len() - flushes,
            200,
            "flushes are not counted in number_ios"
        );
        assert_eq!(flushes, writes / 3);
        let mut since = 0;
        for op in ops {
            match op {
                Op::Write => since += 1,
                Op::Flush => {
                    assert_eq!(since, 3);
                    since = 0
                }
                _ => {}
            }
        }
    }

    #[test]
    fn runtime_stops_in_simulated_time() {
        let mut s = JobSpec::new("j", RwKind::RandRead);
        s.runtime_ns = Some(1000);
        s.time_based = true;
        let mut g = JobGen::new(&s, 0, 1 << 20, 1, SimTime(500));
        assert!(g.next(SimTime(1499)).is_some());
        assert!(g.next(SimTime(1500)).is_none());
    }

    #[test]
    fn clones_get_their_offsets_and_mix_follows_rwmixread() {
        let mut s = JobSpec::new("j", RwKind::RandRw);
        s.rwmixread = 70;
        s.numjobs = 2;
        s.size = Some(1 << 20);
        s.offset_increment = 1 << 20;
        s.number_ios = Some(10_000);
        assert!(s.validate(2 << 20).is_ok());
        assert!(s.validate((2 << 20) - 1).is_err());
        let mut g = JobGen::new(&s, 1, 2 << 20, 9, SimTime(0));
        let mut reads = 0;
        while let Some(io) = g.next(SimTime(0)) {
            assert!(io.offset >= 1 << 20 && io.offset + io.len <= 2 << 20);
            reads += (io.op == Op::Read) as u32;
        }
        assert!((6500..7500).contains(&reads), "{reads}");
    }

    #[test]
    fn writes_take_placement_ids_by_fio_rules_and_offsets_do_not_change() {
        let mut s = JobSpec::new("j", RwKind::RandRw);
        s.number_ios = Some(400);
        let draw = |s: &JobSpec, ruhs| {
            let g = JobGen::new(s, 0, 1 << 20, 3, SimTime(0)).placing(&s.placement, ruhs, 3);
            let mut g = g;
            std::iter::from_fn(move || g.next(SimTime(0))).collect::<Vec<_>>()
        };
        let plain = draw(&s, 4);
        assert!(plain.iter().all(|io| io.placement == 0));
        s.placement.on = true;
        s.placement.plis = parse_plis("1,3-4").unwrap();
        assert_eq!(s.placement.plis, [1, 3, 4]);
        let rr = draw(&s, 5);
        let pids: Vec<u16> = rr
            .iter()
            .filter(|io| io.op == Op::Write)
            .map(|io| io.placement)
            .collect();
        assert!(
            pids.chunks(3).all(|c| c == &[1, 3, 4][..c.len()]),
            "{pids:?}"
        );
        assert!(rr
            .iter()
            .filter(|io| io.op == Op::Read)
            .all(|io| io.placement == 0));
        s.placement.select = PliSelect::Random;
        let random = draw(&s, 5);
        let mut seen: Vec<u16> = random
            .iter()
            .filter(|io| io.op == Op::Write)
            .map(|io| io.placement)
            .collect();
        assert_ne!(seen[..30], pids[..30]);
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, [1, 3, 4]);
        // The placement stream is its own: the requests are those without it.
        let strip = |v: &[HostIo]| v.iter().map(|io| (io.op, io.offset)).collect::<Vec<_>>();
        assert_eq!(strip(&plain), strip(&rr));
        assert_eq!(strip(&plain), strip(&random));
        // Every handle when no list is given.
        s.placement.plis.clear();
        s.placement.select = PliSelect::RoundRobin;
        let all: Vec<u16> = draw(&s, 3)
            .iter()
            .filter(|io| io.op == Op::Write)
            .map(|io| io.placement)
            .take(6)
            .collect();
        assert_eq!(all, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn placement_is_checked_against_the_device() {
        let mut p = Placement::default();
        assert!(p.validate(0).is_ok());
        p.plis = vec![1];
        assert!(p.validate(4).unwrap_err().starts_with("fdp_pli"));
        p.on = true;
        assert!(p.validate(0).unwrap_err().contains("fdp_ruhs"));
        assert!(p.validate(2).is_ok());
        assert!(p.validate(1).unwrap_err().contains("index 1"));
        assert!(parse_plis("3-1").is_err());
        assert!(parse_plis("a").is_err());
        assert!("scheme".parse::<PliSelect>().is_err());
    }

    #[test]
    fn validation_names_the_option() {
        let mut s = JobSpec::new("j", RwKind::Read);
        s.bs = 0;
        assert!(s.validate(1 << 20).unwrap_err().starts_with("bs"));
        let mut s = JobSpec::new("j", RwKind::Read);
        s.offset = 2 << 20;
        assert!(s.validate(1 << 20).unwrap_err().starts_with("size"));
        let mut s = JobSpec::new("j", RwKind::Read);
        s.iodepth = 0;
        assert!(s.validate(1 << 20).unwrap_err().starts_with("iodepth"));
        let mut s = JobSpec::new("j", RwKind::Read);
        s.number_ios = Some(0);
        assert!(s.validate(1 << 20).unwrap_err().starts_with("number_ios"));
        let mut s = JobSpec::new("j", RwKind::Read);
        s.runtime_ns = Some(0);
        assert!(s.validate(1 << 20).unwrap_err().starts_with("runtime"));
        let mut s = JobSpec::new("j", RwKind::Read);
        s.io_size = Some(512);
        assert!(s.validate(1 << 20).unwrap_err().starts_with("io_size"));
    }
}
