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
//!   background by the shared GC rule) takes the closed line with the fewest valid pages —
//!   data and translation lines in one heap, greedy, as every FTL (SPEC §3.5); a line with none
//!   is just erased:
//!   - a **translation line** is collected the baseline way;
//!   - a **log line** is collected alone: its valid pages go home to their group's open line if
//!     it has room, else back to the log, sorted by LPN; every TP they belong to is rewritten
//!     once, and TPs whose moved pages landed at consecutive VPPNs get rank pieces (see
//!     [`super::model`]);
//!   - a **group line** merges its group while the merge credit (`merge_budget` pages per host
//!     page written) covers it: every live page of the group — in its own lines and in the log —
//!     is read, sorted by LPN and written into a fresh line of the group, its TPs are programmed,
//!     its old lines erased and its TPs trained (the paper's group collection). Without credit
//!     the line is collected alone, like a log line.
//! * **Idle merges** (when training pays): while the device is idle and nothing else is owed,
//!   merges spend a second credit (`idle_merge_budget` pages per host page written) on the group
//!   whose merge removes the most expected double reads per page moved — its recent reads past
//!   the CMT (plus one, so that unread groups rank by their misses) times the share of its
//!   pages the model misses, per page the merge moves — among groups whose model misses at
//!   least an eighth of their pages. Writes leave groups scattered; the next idle period sorts
//!   the ones reads will use first, once, after the writes that would have undone it.
//! * **Under FDP** (docs/fdp.md, "LearnedFTL") a group's lines and the log are the default
//!   handle's: the other handles' host writes go to their own units, a line collection sends
//!   only handle 0's pages home and the rest where their handle's GC copies go, an open group
//!   line with room is a reclaim candidate (collected alone), and under persistently isolated
//!   handles only groups whose pages all carry handle 0 are merged.

use super::groups::{line_written, Groups};
use super::LearnedFtl;
use crate::addr::{Ppa, SimTime, Tpn};
use crate::device::Device;
use crate::error::FtlError;
use crate::mapping::{gc, LineState, Stream};

/// What [`LearnedFtl::reclaim`] does.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Victim {
    /// A line whose every written page is invalid: erase it.
    Empty(u32),
    /// A log line, or a group line collected without merging its group: collect it alone.
    Line(u32),
    /// A closed translation line: collect it the baseline way.
    Trans(u32),
    /// A group: merge it.
    Group(u32),
}

/// A candidate idle merge ([`LearnedFtl::idle_merge_candidate`]).
#[derive(Copy, Clone, Debug, PartialEq)]
struct IdleMerge {
    /// The group.
    group: u32,
    /// Its mapped LPNs whose bit is clear: what the merge makes predictable.
    misses: u32,
    /// Fresh lines the merge writes into.
    lines: u32,
    /// Of which more than the group's own lines, which the merge frees.
    extra_lines: u32,
}

/// Whether an open line of stream `s` with `room` unwritten pages is a reclaim candidate: a
/// group's full open line is; one with room still takes its group's writes (collecting it would
/// throw its room away), except under FDP (`fdp`), where only the default handle's pages of a
/// group go to its lines, so that a group whose other pages have other handles never fills its
/// line and its room counts as space to reclaim (docs/fdp.md, "LearnedFTL").
fn open_victim(groups: &Groups, fdp: bool, s: Stream, room: u32) -> bool {
    groups.of_stream(s).is_some() && (room == 0 || fdp)
}

impl LearnedFtl {
    /// `design=log`: the page a host write of group `g` goes to (see the module docs), `log`
    /// being its host stream: the write log ([`Stream::DATA`]), or under FDP its handle's
    /// (docs/fdp.md, "LearnedFTL": a group's lines are the default handle's, so the other
    /// handles write their own units only). Each page earns `merge_budget` pages of merge
    /// credit. With no group (`None`), a page of the log itself, for a trim record: records
    /// live in the log, where reclaims meet them among the data pages whose old copies they
    /// outlive, and earn no credit.
    pub(super) fn data_page_log(
        &mut self,
        dev: &mut Device,
        g: Option<u32>,
        log: Stream,
        t: SimTime,
    ) -> Result<Ppa, FtlError> {
        let s = g
            .filter(|_| log == Stream::DATA)
            .map(|g| self.groups.stream(g));
        let reserve = self.cfg.gc_reserve_lines;
        if let Some(g) = g {
            // Unused credit is capped at two merges' worth, so that merges follow the writes
            // rather than bunch up after a quiet spell.
            let cap = 2.0 * self.groups.lpns(g).len() as f64;
            self.merge_credit.earn(cap);
            // Idle merges come after the writes by design: their credit may build up to one
            // rewrite of the logical space.
            self.idle_credit
                .earn(self.idle_credit.rate() * self.geo.logical_pages as f64);
        }
        for _ in 0..self.groups.count() + 2 * self.geo.lines() + 8 {
            let free = self.alloc.free_lines();
            if let Some(s) = s {
                if self.alloc.room(s) > 0 {
                    return self.alloc.next_page(s);
                }
                // Only while lines are plentiful: on a full device a group line filled by one
                // slow stream would hold spare room the log and GC need.
                if self.alloc.lines_owned(s) == 0 && free > self.alloc.policy.bg_free_lines + 1 {
                    return self.alloc.next_page(s);
                }
            }
            if self.alloc.room(log) > 0 || free > reserve {
                return self.alloc.next_page(log);
            }
            // A full log line becomes a candidate before the log takes another.
            self.alloc.close_full(log);
            if self.reclaim(dev, t, 0)?.is_none() {
                // Nothing reclaimable yet (every written page valid): dip into the reserve,
                // as the baselines' GC does.
                return self.alloc.next_page(log);
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
        // The shared GC's rule and its memo of fruitless searches (`Allocator::idle`: reads
        // and most writes would otherwise each scan every line).
        let Some(min_gain) = self.alloc.background_gain(dev) else {
            return Ok(None);
        };
        let done = self.reclaim(dev, now, min_gain)?;
        self.stats.gc_background += done.is_some() as u64;
        if done.is_none() {
            // Open group lines are candidates too (`log_victim`).
            let (groups, fdp) = (&self.groups, self.cfg.fdp);
            self.alloc
                .idle(dev, min_gain, |s, room| open_victim(groups, fdp, s, room));
        }
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
            Victim::Trans(line) => self.collect_trans_line(dev, line, t)?,
            Victim::Group(g) => {
                let pages = self.groups.mapped[g as usize] as u64;
                self.merge_credit.spend(pages);
                self.extra.merges += 1;
                self.extra.merge_pages += pages;
                self.collect(dev, &[g], t, false)?
            }
        };
        Ok(Some(done))
    }

    /// `design=log`: one idle merge issued at `now` (see the module docs), if the idle credit
    /// covers the best candidate. A merge that frees fewer lines than it takes needs room
    /// above the reserve: while there is none, a greedy reclaim is issued instead, charged to
    /// the same credit. Returns when the unit completes (`None`: nothing is worth merging, or
    /// nothing can be).
    pub(super) fn idle_merge(
        &mut self,
        dev: &mut Device,
        now: SimTime,
    ) -> Result<Option<SimTime>, FtlError> {
        if self.idle_credit.rate() == 0.0 {
            return Ok(None);
        }
        // Until the host writes or a page is invalidated, a search that found nothing would
        // find nothing again (the settle phase asks after every unit of its other work).
        let state = (dev.invalidations(), self.host_pages);
        if self.idle_merge_none_at == Some(state) {
            return Ok(None);
        }
        let pick = self.idle_merge_candidate(dev).filter(|c| {
            self.idle_credit
                .covers(self.groups.mapped[c.group as usize] as u64)
        });
        let Some(c) = pick else {
            self.idle_merge_none_at = Some(state);
            self.idle_merge_no_candidate = true;
            return Ok(None);
        };
        let gi = c.group as usize;
        let free = self.alloc.free_lines();
        // A merge giving back every line it takes may borrow them from the reserve meanwhile
        // (one stays for the translation stream), as GC's own merges do; any other leaves the
        // reserve intact.
        let room = if c.extra_lines == 0 {
            free > c.lines
        } else {
            free > self.cfg.gc_reserve_lines + c.lines
        };
        // Idle merges and their reclaims are background collections (metrics.md).
        if !room {
            let done = self.idle_charged(|ftl| ftl.reclaim(dev, now, 0))?;
            self.stats.gc_background += done.is_some() as u64;
            if done.is_none() {
                self.idle_merge_none_at = Some(state);
                self.idle_merge_no_candidate = false;
            }
            return Ok(done);
        }
        self.stats.gc_background += 1;
        let pages = self.groups.mapped[gi] as u64;
        self.idle_credit.spend(pages);
        let x = &mut self.extra;
        x.idle_merges += 1;
        x.idle_merges_read += (self.groups.heat[gi] > 0) as u64;
        x.merge_pages += pages;
        x.idle_merge_pages += pages;
        x.idle_merge_gained += c.misses as u64;
        let done = self.collect(dev, &[c.group], now, false)?;
        self.groups.idle_trained[gi] = true;
        Ok(Some(done))
    }

    /// Runs `collect`, a collection while the device idles, and charges the pages it moves to
    /// the idle credit: the room idle merges take is reclaimed either by their own reclaims or
    /// by background GC once free lines fall to its threshold, and both count against the
    /// budget, so that it bounds all the data idling moves.
    pub(super) fn idle_charged(
        &mut self,
        collect: impl FnOnce(&mut Self) -> Result<Option<SimTime>, FtlError>,
    ) -> Result<Option<SimTime>, FtlError> {
        let moved = self.stats.gc_pages_moved;
        self.idle_collecting = true;
        let done = collect(self);
        self.idle_collecting = false;
        let done = done?;
        let pages = self.stats.gc_pages_moved - moved;
        self.idle_credit.spend(pages);
        self.extra.idle_room_pages += pages;
        Ok(done)
    }

    /// After an idle write-back that began with `(invalidations, free lines)` = `before`: a
    /// write-back invalidates translation pages only (its old TP copy, and those a
    /// translation-line collection moves), while an idle-merge search that found no candidate
    /// reads the data lines, the groups and the free lines; unless lines changed hands it would
    /// find none again, so its memo carries over. Re-searching after every write-back made the
    /// settle phase quadratic (37 of 54 minutes at 4 TiB).
    pub(super) fn keep_idle_merge_memo(&mut self, dev: &Device, before: (u64, u32)) {
        if self.alloc.free_lines() == before.1
            && self.idle_merge_no_candidate
            && self.idle_merge_none_at == Some((before.0, self.host_pages))
        {
            self.idle_merge_none_at = Some((dev.invalidations(), self.host_pages));
        }
    }

    /// The group an idle merge would take: the most expected double reads removed per page
    /// moved. A merge removes, per later read of the group, the share of its mapped LPNs the
    /// model misses; later reads are expected in proportion to the group's heat + 1 (unread
    /// groups rank by their misses alone); the pages moved are its mapped LPNs, plus, for each
    /// line it takes beyond the lines it frees, what reclaiming one costs now (the emptiest
    /// data line's valid pages per page it frees, LFS's cost-benefit price). Only groups with
    /// at least `train_min_pages` mapped LPNs whose model misses at least an eighth of them
    /// (ties: the lowest group).
    fn idle_merge_candidate(&self, dev: &Device) -> Option<IdleMerge> {
        let ppl = self.geo.pages_per_line();
        let entries = self.models.entries();
        let (emptiest, invalid) = self.reclaimable(dev);
        let line_price = emptiest.map(|v| ppl as f64 * v as f64 / (ppl - v) as f64);
        // Lines reclaiming could free at best (every invalid page compacted away).
        let could_free = self.alloc.free_lines() + (invalid / ppl as u64) as u32;
        let mut best: Option<(f64, IdleMerge)> = None;
        for g in 0..self.groups.count() {
            let mapped = self.groups.mapped[g as usize];
            if mapped < self.cfg.train_min_pages.max(1) || !self.mergeable(g) {
                continue;
            }
            let bits: u32 = self
                .groups
                .tps(g)
                .map(|tpn| self.models.bits_in(Tpn(tpn), 0, entries))
                .sum();
            let misses = mapped - bits;
            if 8 * misses < mapped {
                continue;
            }
            let lines = mapped.div_ceil(ppl);
            let extra_lines = lines.saturating_sub(self.alloc.lines_owned(self.groups.stream(g)));
            let room = match (extra_lines, line_price) {
                (0, _) => 0.0,
                (n, Some(price)) if could_free > self.cfg.gc_reserve_lines + lines => {
                    n as f64 * price
                }
                // No reclaim can make room for it above the reserve.
                _ => continue,
            };
            let m = mapped as f64;
            let heat = if self.cfg.idle_merge_reads {
                self.groups.heat[g as usize] as f64
            } else {
                0.0
            };
            let benefit = (heat + 1.0) * misses as f64 / m;
            let score = benefit / (m + room);
            if best.as_ref().is_none_or(|(b, _)| score > *b) {
                let c = IdleMerge {
                    group: g,
                    misses,
                    lines,
                    extra_lines,
                };
                best = Some((score, c));
            }
        }
        best.map(|(_, c)| c)
    }

    /// Over the closed data lines (log or group): the valid pages of the one with the fewest
    /// among those with an invalid page (what a reclaim would move), and their invalid pages
    /// (what reclaims could free).
    fn reclaimable(&self, dev: &Device) -> (Option<u32>, u64) {
        let mut emptiest = None;
        let mut invalid = 0;
        for line in 0..self.geo.lines() {
            let LineState::Closed(s) = self.alloc.state(line) else {
                continue;
            };
            if s == Stream::TRANS {
                continue;
            }
            let (written, valid) = (line_written(dev, line), dev.line_valid(line));
            if valid < written {
                invalid += (written - valid) as u64;
                emptiest = Some(emptiest.map_or(valid, |e: u32| e.min(valid)));
            }
        }
        (emptiest, invalid)
    }

    /// The reclaim, if it frees at least `min_gain` pages now: an empty line is erased; else
    /// the best line by the victim rule (greedy by default: the fewest valid pages, as every
    /// FTL; `gc_victim`) — if it is a group line its group is merged while the merge credit
    /// covers it and its lines fit, and otherwise the line is collected alone, like a log line
    /// (its survivors go home or to the log; rank pieces keep predicting them). A line collected
    /// alone whose copies would not fit gives way to the emptiest translation line.
    fn log_victim(&mut self, dev: &Device, min_gain: u32) -> Option<Victim> {
        let ppl = self.geo.pages_per_line();
        let valid = dev.lines_valid();
        // (valid pages, line, its group) of the best log or translation line, the best
        // translation line and the best group line.
        let mut log: Option<(u32, u32)> = None;
        let mut trans: Option<(u32, u32)> = None;
        let mut grp: Option<(u32, u32, u32)> = None;
        for line in 0..self.geo.lines() {
            let v = valid[line as usize];
            let group = match self.alloc.state(line) {
                LineState::Open(s)
                    if !open_victim(&self.groups, self.cfg.fdp, s, self.alloc.room(s)) =>
                {
                    continue
                }
                // A group line, or (`None`) a log line (under FDP also the handles' units)
                // or a translation line: translation lines compete as the baselines' do (SPEC
                // §3.5): a cap on the stream's lines instead held a spare line of TPs, which
                // cost the data lines 10 % more copies under skewed writes.
                LineState::Open(s) | LineState::Closed(s) => self.groups.of_stream(s),
                LineState::Free => continue,
            };
            if v == 0 {
                return Some(Victim::Empty(line));
            }
            if v == ppl {
                continue;
            }
            // Ranked by the victim rule (greedy: fewest valid pages; `gc_victim`); the first
            // choice must free `min_gain` itself, as in the baselines' GC (`mapping::gc`).
            let better = |(bv, bl): (u32, u32)| self.alloc.better(dev, (line, v), (bl, bv));
            let gain = ppl - v >= min_gain.max(1);
            let is_trans = self.alloc.state(line) == LineState::Closed(Stream::TRANS);
            if is_trans && gain && trans.is_none_or(better) {
                trans = Some((v, line));
            }
            match group {
                None if log.is_none_or(better) => log = Some((v, line)),
                Some(g) if grp.is_none_or(|(bv, bl, _)| better((bv, bl))) => {
                    grp = Some((v, line, g))
                }
                _ => {}
            }
        }
        // The best line by the victim rule (greedy by default: the fewest valid pages). A
        // group line's group is merged instead while the merge credit (earned per host page
        // written) covers the merge, which moves every live page of the group, its log pages
        // included, into fresh lines.
        let group_best = grp.filter(|&(gv, gl, _)| {
            log.is_none_or(|(lv, ll)| self.alloc.better(dev, (gl, gv), (ll, lv)))
        });
        let (first_valid, _) = group_best.map(|(v, l, _)| (v, l)).or(log)?;
        if ppl - first_valid < min_gain.max(1) {
            return None;
        }
        let victim = match (group_best, log) {
            (Some((_, line, g)), _) => {
                let mapped = self.groups.mapped[g as usize];
                // An open line with room (a candidate under FDP) is collected alone: a merge
                // would leave the group a fresh line with room again, freeing nothing.
                let open =
                    matches!(self.alloc.state(line), LineState::Open(s) if self.alloc.room(s) > 0);
                if !open
                    && self.mergeable(g)
                    && mapped.div_ceil(ppl) <= self.alloc.free_lines()
                    && self.merge_credit.covers(mapped as u64)
                {
                    Victim::Group(g)
                } else {
                    Victim::Line(line)
                }
            }
            (None, Some((_, line)))
                if self.alloc.state(line) == LineState::Closed(Stream::TRANS) =>
            {
                Victim::Trans(line)
            }
            (None, Some((_, line))) => Victim::Line(line),
            (None, None) => return None,
        };
        // A line collected alone starts only if its copies and TP rewrites fit
        // (`mapping::gc::fits`, as for the baselines; a group line's copies go home to its
        // group's stream first, the others' where GC copies of their unit's handle go: the log
        // without FDP); else the emptiest translation line, whose collection only moves TPs,
        // if that fits.
        let tps = self.table.gtd.tps();
        let fits = |line| {
            let to = match self.alloc.state(line) {
                LineState::Closed(s) if self.groups.of_stream(s).is_some() => s,
                _ => self.alloc.gc_stream_of_line(dev, line),
            };
            gc::fits(dev, &self.alloc, line, to, |v| v.min(tps))
        };
        Some(match (victim, trans) {
            (Victim::Line(line), Some((_, t))) if !fits(line) && fits(t) => {
                self.stats.gc_passed_over += 1;
                Victim::Trans(t)
            }
            _ => victim,
        })
    }
}
