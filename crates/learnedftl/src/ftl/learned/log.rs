//! `design=log` (the default; ours, not the paper's): group lines plus a shared write log, so
//! that small random writes on a full device never pay a whole-group compaction for a handful of
//! freed pages (see `docs/ftls/learnedftl.md`, "The default design").
//!
//! * A group's **own lines** hold only its pages. A host write of group `g` goes to `g`'s open
//!   line while it has room (VPPN-contiguous in write order, as in the paper); a group that owns
//!   no line takes a free one while lines are plentiful.
//! * Otherwise the page goes to the **write log**: the baseline data stream
//!   ([`Stream::DATA`]), page-mapped and shared by every group — the paper's cross-group
//!   allocation with the spare room shared page by page instead of line by line.
//! * **Reclaiming** (foreground when the log needs a line and free lines are at the reserve;
//!   background by the shared GC rule) takes the line with the fewest valid pages (greedy, as
//!   every FTL; a line with none is just erased):
//!   - a **log line** is collected alone: its valid pages go home to their group's open line if
//!     it has room, else back to the log, sorted by LPN; every TP they belong to is rewritten
//!     once, and TPs whose moved pages landed at consecutive VPPNs get rank pieces (see
//!     [`super::model`]);
//!   - a **group line** merges its group while the merge credit (`merge_budget` pages per host
//!     page written) covers it: every live page of the group — in its own lines and in the log —
//!     is read, sorted by LPN and written into a fresh line of the group, its TPs are programmed,
//!     its old lines erased and its TPs trained (the paper's group collection). Without credit
//!     the line is collected alone, like a log line.

use super::LearnedFtl;
use crate::addr::{Ppa, SimTime};
use crate::device::Device;
use crate::error::FtlError;
use crate::mapping::{LineState, Stream};

/// What [`LearnedFtl::reclaim`] does.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Victim {
    /// A line whose every written page is invalid: erase it.
    Empty(u32),
    /// A log line, or a group line collected without merging its group: collect it alone.
    Line(u32),
    /// A group: merge it.
    Group(u32),
}

impl LearnedFtl {
    /// `design=log`: the page a host write of group `g` goes to (see the module docs). Each
    /// page earns `merge_budget` pages of merge credit.
    pub(super) fn data_page_log(
        &mut self,
        dev: &mut Device,
        g: u32,
        t: SimTime,
    ) -> Result<Ppa, FtlError> {
        let s = self.groups.stream(g);
        let reserve = self.cfg.gc_reserve_lines;
        // Unused credit is capped at two merges' worth, so that merges follow the writes
        // rather than bunch up after a quiet spell.
        let cap = 2.0 * self.groups.lpns(g).len() as f64;
        self.merge_credit.earn(cap);
        for _ in 0..self.groups.count() + 2 * self.geo.lines() + 8 {
            if self.alloc.room(s) > 0 {
                return self.alloc.next_page(s);
            }
            let free = self.alloc.free_lines();
            // Only while lines are plentiful: on a full device a group line filled by one slow
            // stream would hold spare room the log and GC need.
            if self.alloc.lines_owned(s) == 0 && free > self.alloc.policy.bg_free_lines + 1 {
                return self.alloc.next_page(s);
            }
            if self.alloc.room(Stream::DATA) > 0 || free > reserve {
                return self.alloc.next_page(Stream::DATA);
            }
            // A full log line becomes a candidate before the log takes another.
            self.alloc.close_full(Stream::DATA);
            if self.reclaim(dev, t, 0)?.is_none() {
                // Nothing reclaimable yet (every written page valid): dip into the reserve,
                // as the baselines' GC does.
                return self.alloc.next_page(Stream::DATA);
            }
        }
        Err(FtlError::NoSpace)
    }

    /// `design=log`: background GC after a request, by the shared rule (up to the policy's
    /// victims per request, see [`LearnedFtl::background_one`]).
    pub(super) fn background_log(
        &mut self,
        dev: &mut Device,
        now: SimTime,
    ) -> Result<(), FtlError> {
        for _ in 0..self.alloc.policy.bg_victims {
            if self.background_one(dev, now)?.is_none() {
                break;
            }
        }
        Ok(())
    }

    /// `design=log`: one background reclaim issued at `now` while free lines are at or below
    /// the background threshold, freeing at least the policy's minimum of invalid pages;
    /// returns when it completes (`None`: the rule asks for nothing).
    pub(super) fn background_one(
        &mut self,
        dev: &mut Device,
        now: SimTime,
    ) -> Result<Option<SimTime>, FtlError> {
        let pol = &self.alloc.policy;
        if self.alloc.free_lines() > pol.bg_free_lines {
            return Ok(None);
        }
        // Until a page is invalidated or a line changes hands, a search that found nothing
        // would find nothing again (reads would otherwise each scan every line).
        let state = (dev.invalidations(), self.alloc.free_lines());
        if self.bg_idle_at == Some(state) {
            return Ok(None);
        }
        let min_gain = pol.bg_min_invalid;
        let done = self.reclaim(dev, now, min_gain)?;
        self.bg_idle_at = done.is_none().then_some(state);
        Ok(done)
    }

    /// Frees space at `t` (see [`LearnedFtl::log_victim`]) by a way that frees at least
    /// `min_gain` pages. Returns when its last operation completes (`None`: nothing to do).
    pub(super) fn reclaim(
        &mut self,
        dev: &mut Device,
        t: SimTime,
        min_gain: u32,
    ) -> Result<Option<SimTime>, FtlError> {
        let Some(v) = self.log_victim(dev, min_gain) else {
            return Ok(None);
        };
        let done = match v {
            Victim::Empty(line) => {
                if let LineState::Open(s) = self.alloc.state(line) {
                    self.alloc.close(s);
                }
                self.stats.gc_events += 1;
                self.extra.empty_erases += 1;
                self.erase_line(dev, line, t)?
            }
            Victim::Line(line) => self.collect_one_line(dev, line, t)?,
            Victim::Group(g) => {
                self.merge_credit
                    .spend(self.groups.mapped[g as usize] as u64);
                self.extra.merges += 1;
                self.collect(dev, &[g], t, false)?
            }
        };
        Ok(Some(done))
    }

    /// The reclaim among those freeing at least `min_gain` pages now: an empty line is erased;
    /// else the line with the fewest valid pages (greedy, as every FTL) — if it is a group line
    /// its group is merged while the merge credit covers it, and otherwise the log line with
    /// the fewest valid pages is collected instead (a group line's pages leave it only through
    /// a merge, so its models survive); a group line is collected alone only when the log has
    /// no candidate.
    fn log_victim(&mut self, dev: &Device, min_gain: u32) -> Option<Victim> {
        let ppl = self.geo.pages_per_line();
        let valid = dev.lines_valid();
        // (valid pages, line, its group) of the best log line and the best group line.
        let mut log: Option<(u32, u32)> = None;
        let mut grp: Option<(u32, u32, u32)> = None;
        for line in 0..self.geo.lines() {
            let v = valid[line as usize];
            let group = match self.alloc.state(line) {
                LineState::Closed(Stream::DATA) => None,
                // A group's open line still takes its writes (collecting it would throw its
                // room away), unless it is full.
                LineState::Open(s) if self.alloc.room(s) > 0 => continue,
                LineState::Open(s) | LineState::Closed(s) => match self.groups.of_stream(s) {
                    Some(g) => Some(g),
                    None => continue,
                },
                LineState::Free => continue,
            };
            if v == 0 {
                return Some(Victim::Empty(line));
            }
            if ppl - v < min_gain.max(1) {
                continue;
            }
            match group {
                None if log.is_none_or(|(bv, _)| v < bv) => log = Some((v, line)),
                Some(g) if grp.is_none_or(|(bv, ..)| v < bv) => grp = Some((v, line, g)),
                _ => {}
            }
        }
        // Greedy: the line with the fewest valid pages. A group line's group is merged instead
        // while the merge credit (earned per host page written) covers the merge, which moves
        // every live page of the group, its log pages included, into fresh lines.
        let group_best = grp.filter(|&(gv, ..)| log.is_none_or(|(lv, _)| gv < lv));
        Some(match (group_best, log) {
            (Some((_, line, g)), _) => {
                let mapped = self.groups.mapped[g as usize];
                if mapped.div_ceil(ppl) <= self.alloc.free_lines()
                    && self.merge_credit.covers(mapped as u64)
                {
                    Victim::Group(g)
                } else {
                    Victim::Line(line)
                }
            }
            (None, Some((_, line))) => Victim::Line(line),
            (None, None) => return None,
        })
    }
}
