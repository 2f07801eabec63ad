//! Striped write pointers over lines, a FIFO free-line list and greedy victim choice.
//!
//! A write pointer owns one open line and hands out its pages in VPPN order (channel → LUN →
//! plane → page), so consecutive allocations land on different LUNs. When its line is full it
//! takes the next line from the FIFO free list.

use crate::addr::{Ppa, SimTime};
use crate::config::{Geometry, Stripe};
use crate::device::Device;
use crate::device::Oob;
use crate::error::{ConfigError, FtlError};
use crate::params::Params;
use serde::Serialize;
use std::collections::VecDeque;

/// A write stream: data, or translation pages. Each has its own pointer and open line. FTLs with
/// per-group pointers (LearnedFTL) number further streams after these two.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Stream(pub u16);

impl Stream {
    /// Host and GC data pages.
    pub const DATA: Stream = Stream(0);
    /// Translation pages.
    pub const TRANS: Stream = Stream(1);
}

/// The life of a line.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LineState {
    /// Erased, in the free list.
    Free,
    /// Owned by a write pointer.
    Open(Stream),
    /// Full; a GC candidate.
    Closed(Stream),
}

/// When garbage collection runs (SPEC §3.5), in lines.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GcPolicy {
    /// Foreground GC runs before an allocation needing a new line while free lines ≤ this.
    pub fg_free_lines: u32,
    /// Background GC runs after a request while free lines ≤ this ...
    pub bg_free_lines: u32,
    /// ... and the best victim has at least this many invalid pages ...
    pub bg_min_invalid: u32,
    /// ... cleaning at most this many victims after each request (FEMU: 1).
    pub bg_victims: u32,
}

impl GcPolicy {
    /// Defaults (foreground at 5 % free, at least 2 lines; background at 25 % with victims at
    /// least 1/8 invalid, one victim per request, as FEMU), overridable with `gc_fg_ratio`,
    /// `gc_bg_ratio`, `gc_bg_min_invalid` and `gc_bg_victims`.
    pub fn from_params(geo: &Geometry, params: &mut Params) -> Result<GcPolicy, ConfigError> {
        let fg = params.take::<f64>("gc_fg_ratio")?.unwrap_or(0.05);
        let bg = params.take::<f64>("gc_bg_ratio")?.unwrap_or(0.25);
        let inv = params.take::<f64>("gc_bg_min_invalid")?.unwrap_or(0.125);
        let bg_victims = params.take::<u32>("gc_bg_victims")?.unwrap_or(1);
        for (k, v) in [
            ("gc_fg_ratio", fg),
            ("gc_bg_ratio", bg),
            ("gc_bg_min_invalid", inv),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(ConfigError::invalid(
                    k,
                    format!("{v} is not a fraction in [0, 1]"),
                ));
            }
        }
        let lines = geo.lines();
        let fg_free_lines = ((lines as f64 * fg) as u32).max(2);
        if fg_free_lines + 2 >= lines {
            return Err(ConfigError::invalid(
                "gc_fg_ratio",
                format!("{fg_free_lines} reserved lines leave too few of {lines} for data"),
            ));
        }
        Ok(GcPolicy {
            fg_free_lines,
            bg_free_lines: ((lines as f64 * bg) as u32).max(fg_free_lines),
            bg_min_invalid: ((geo.pages_per_line() as f64 * inv).ceil() as u32).max(1),
            bg_victims,
        })
    }
}

#[derive(Copy, Clone, Debug)]
struct Pointer {
    line: u32,
    next: u32,
    stripe: Stripe,
}

impl Pointer {
    const NONE: u32 = u32::MAX;
}

/// Line allocator shared by the baseline FTLs.
#[derive(Clone, Debug)]
pub struct Allocator {
    ppl: u32,
    geo: Geometry,
    free: VecDeque<u32>,
    state: Vec<LineState>,
    ptrs: Vec<Pointer>,
    /// Lines each stream owns (open or closed), so that a quota check need not scan the lines.
    owned: Vec<u32>,
    /// `(invalidations, free lines)` when the last background check found no victim: until a
    /// page is invalidated or a line changes hands, the answer stays the same.
    idle_at: Option<(u64, u32)>,
    /// Scratch space of [`collect_line`](super::gc::collect_line): the victim's pages between
    /// their reads and their programs, kept so a collection allocates nothing.
    pub(super) gc_buffer: Vec<(u32, Ppa, Oob, SimTime)>,
    /// GC thresholds.
    pub policy: GcPolicy,
}

impl Allocator {
    /// Every line free, `streams` write pointers with no line yet.
    pub fn new(geo: &Geometry, streams: u16, policy: GcPolicy) -> Allocator {
        Allocator {
            ppl: geo.pages_per_line(),
            geo: geo.clone(),
            free: (0..geo.lines()).collect(),
            state: vec![LineState::Free; geo.lines() as usize],
            ptrs: vec![
                Pointer {
                    line: Pointer::NONE,
                    next: 0,
                    stripe: Stripe::new(geo, 0),
                };
                streams as usize
            ],
            owned: vec![0; streams as usize],
            idle_at: None,
            gc_buffer: Vec::new(),
            policy,
        }
    }

    /// Free lines.
    #[inline]
    pub fn free_lines(&self) -> u32 {
        self.free.len() as u32
    }

    /// State of a line.
    #[inline]
    pub fn state(&self, line: u32) -> LineState {
        self.state[line as usize]
    }

    /// Whether the next allocation of `stream` must take a new line.
    #[inline]
    pub fn needs_line(&self, stream: Stream) -> bool {
        let p = self.ptrs[stream.0 as usize];
        p.line == Pointer::NONE || p.next == self.ppl
    }

    /// Whether foreground GC must run before `stream` takes a new line.
    #[inline]
    pub fn must_collect(&self, stream: Stream) -> bool {
        self.needs_line(stream) && self.free_lines() <= self.policy.fg_free_lines
    }

    /// Closes `stream`'s line if it is full, so that GC may choose it before the pointer takes
    /// a new line.
    pub fn close_full(&mut self, stream: Stream) {
        let p = &mut self.ptrs[stream.0 as usize];
        if p.line != Pointer::NONE && p.next == self.ppl {
            self.state[p.line as usize] = LineState::Closed(stream);
            p.line = Pointer::NONE;
        }
    }

    /// The next page of `stream` (VPPN order within its line). Fails only when no free line is
    /// left, which GC thresholds are there to prevent.
    #[inline]
    pub fn next_page(&mut self, stream: Stream) -> Result<Ppa, FtlError> {
        let ppl = self.ppl;
        let s = stream.0 as usize;
        if self.ptrs[s].line == Pointer::NONE || self.ptrs[s].next == ppl {
            if self.ptrs[s].line != Pointer::NONE {
                self.state[self.ptrs[s].line as usize] = LineState::Closed(stream);
            }
            let line = self.free.pop_front().ok_or(FtlError::NoSpace)?;
            self.state[line as usize] = LineState::Open(stream);
            self.owned[s] += 1;
            self.ptrs[s] = Pointer {
                line,
                next: 0,
                stripe: Stripe::new(&self.geo, line),
            };
        }
        let p = &mut self.ptrs[s];
        p.next += 1;
        Ok(p.stripe.next_ppa())
    }

    /// The closed line with the fewest valid pages (greedy), if any has an invalid page.
    ///
    /// A linear scan over the lines' valid counts: lines number in the hundreds, and a scan of a
    /// contiguous array is cheaper than keeping a heap ordered on every invalidation.
    pub fn victim(&self, dev: &Device) -> Option<u32> {
        let valid = dev.lines_valid();
        let mut best: Option<(u32, u32)> = None;
        for (line, st) in self.state.iter().enumerate() {
            if let LineState::Closed(_) = st {
                let v = valid[line];
                if v < self.ppl && best.is_none_or(|(_, bv)| v < bv) {
                    best = Some((line as u32, v));
                }
            }
        }
        best.map(|(l, _)| l)
    }

    /// A victim for background GC, if free lines are at or below the background threshold and
    /// the best victim has enough invalid pages.
    pub fn background_victim(&mut self, dev: &Device) -> Option<u32> {
        if self.free_lines() > self.policy.bg_free_lines {
            return None;
        }
        let now = (dev.invalidations(), self.free_lines());
        if self.idle_at == Some(now) {
            return None;
        }
        let v = self
            .victim(dev)
            .filter(|&l| self.ppl - dev.line_valid(l) >= self.policy.bg_min_invalid);
        self.idle_at = v.is_none().then_some(now);
        v
    }

    /// Pages left in `stream`'s open line (0 if it has none).
    #[inline]
    pub fn room(&self, stream: Stream) -> u32 {
        let p = self.ptrs[stream.0 as usize];
        if p.line == Pointer::NONE {
            0
        } else {
            self.ppl - p.next
        }
    }

    /// `stream`'s open line, if any.
    #[inline]
    pub fn open_line(&self, stream: Stream) -> Option<u32> {
        let p = self.ptrs[stream.0 as usize];
        (p.line != Pointer::NONE).then_some(p.line)
    }

    /// Closes `stream`'s open line even if it is not full (its unwritten pages stay unused until
    /// the line is erased), so that it can be collected; the next allocation takes a new line.
    pub fn close(&mut self, stream: Stream) {
        let p = &mut self.ptrs[stream.0 as usize];
        if p.line != Pointer::NONE {
            self.state[p.line as usize] = LineState::Closed(stream);
            p.line = Pointer::NONE;
        }
    }

    /// Lines `stream` owns (open or closed), ascending.
    pub fn lines_of(&self, stream: Stream) -> impl Iterator<Item = u32> + '_ {
        self.state
            .iter()
            .enumerate()
            .filter_map(move |(l, st)| match st {
                LineState::Open(s) | LineState::Closed(s) if *s == stream => Some(l as u32),
                _ => None,
            })
    }

    /// How many lines `stream` owns (open or closed).
    #[inline]
    pub fn lines_owned(&self, stream: Stream) -> u32 {
        self.owned[stream.0 as usize]
    }

    /// Returns an erased line to the tail of the free list.
    pub fn release(&mut self, line: u32) {
        debug_assert!(matches!(self.state[line as usize], LineState::Closed(_)));
        if let LineState::Closed(s) = self.state[line as usize] {
            self.owned[s.0 as usize] -= 1;
        }
        self.state[line as usize] = LineState::Free;
        self.free.push_back(line);
    }

    /// Heap bytes of allocator state.
    pub fn state_bytes(&self) -> usize {
        self.free.capacity() * 4 + self.state.capacity() * std::mem::size_of::<LineState>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Lpn, SimTime};
    use crate::config::DeviceConfig;
    use crate::device::{Cause, Oob, Src};

    fn setup() -> (Device, Allocator) {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let mut p = Params::new();
        let pol = GcPolicy::from_params(&cfg.geometry, &mut p).unwrap();
        (Device::new(&cfg), Allocator::new(&cfg.geometry, 2, pol))
    }

    #[test]
    fn thresholds_follow_the_spec() {
        let (d, a) = setup();
        // tiny: 64 lines of 512 pages.
        assert_eq!(a.policy.fg_free_lines, 3);
        assert_eq!(a.policy.bg_free_lines, 16);
        assert_eq!(a.policy.bg_min_invalid, 64);
        assert_eq!(d.geo().lines(), 64);
        let mut p = Params::new();
        p.insert_assignment("gc_fg_ratio=0.99", "t").unwrap();
        assert!(GcPolicy::from_params(d.geo(), &mut p).is_err());
    }

    #[test]
    fn pointer_stripes_and_takes_lines_fifo() {
        let (mut d, mut a) = setup();
        let g = d.geo().clone();
        let first: Vec<u32> = (0..g.luns())
            .map(|_| g.lun_of(a.next_page(Stream::DATA).unwrap()))
            .collect();
        let mut sorted = first.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            g.luns() as usize,
            "one page per LUN: {first:?}"
        );
        assert_eq!(a.state(0), LineState::Open(Stream::DATA));
        let t = a.next_page(Stream::TRANS).unwrap();
        assert_eq!(g.line_of(t), 1);
        for _ in g.luns()..g.pages_per_line() {
            let p = a.next_page(Stream::DATA).unwrap();
            assert_eq!(g.line_of(p), 0);
            d.program(p, Oob::data(Lpn(0), 0), Src::None, Cause::User, SimTime(0))
                .ok();
        }
        assert!(a.needs_line(Stream::DATA));
        let p = a.next_page(Stream::DATA).unwrap();
        assert_eq!(g.line_of(p), 2);
        assert_eq!(a.state(0), LineState::Closed(Stream::DATA));
    }

    #[test]
    fn greedy_victim_and_background_threshold() {
        let (mut d, mut a) = setup();
        let g = d.geo().clone();
        // Fill three lines; make line 1 the emptiest.
        let mut pages = Vec::new();
        for i in 0..3 * g.pages_per_line() {
            let p = a.next_page(Stream::DATA).unwrap();
            d.program(p, Oob::data(Lpn(i), 1), Src::None, Cause::User, SimTime(0))
                .unwrap();
            pages.push(p);
        }
        a.next_page(Stream::DATA).unwrap(); // closes line 2
        for p in &pages[..10] {
            d.invalidate(*p).unwrap();
        }
        let l1 = g.pages_per_line() as usize;
        for p in &pages[l1..l1 + 100] {
            d.invalidate(*p).unwrap();
        }
        assert_eq!(a.victim(&d), Some(1));
        // Plenty of free lines: no background GC.
        assert_eq!(a.background_victim(&d), None);
        a.policy.bg_free_lines = a.free_lines();
        assert_eq!(a.background_victim(&d), Some(1));
        a.policy.bg_min_invalid = 101;
        assert_eq!(a.background_victim(&d), None);
    }
}
