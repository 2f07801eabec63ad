//! LearnedFTL's recovery after a power cut (docs/power.md; `docs/ftls/learnedftl.md`, "Power
//! loss and recovery"). Flash holds the data pages (each OOB names its LPN and write stamp),
//! the TPs (with the newest stamp their FTL had seen), and the trim records (on translation
//! lines). Everything else was DRAM and is rebuilt from the shared OOB scan:
//!
//! * the mappings and the GTD ([`TransTable::restore`](crate::mapping::TransTable::restore));
//!   stale TPs are rewritten (cause `recovery`); `tp_write_cost=free` (no TP and no trim
//!   record on flash) is refused;
//! * the lines: each written line belongs to the group of its first data page, or to the
//!   translation stream; under `design=log` a line holding valid pages of another group is a
//!   log line; under `design=paper` such a line is a lender's, and its guest is paired with it
//!   again (with its encroachment: the guest's valid pages in other groups' lines); a line with
//!   no readable page (a cut during a collection's erases) is erased; under FDP the device's
//!   reclaim unit table gives the other handles' units back to their streams, and a unit of
//!   the default handle or a GC unit is a group line if its valid pages are one group's (else
//!   the log, or the GC stream it was);
//! * the models: every TP is retrained from its mappings (CPU time, no flash operation), so a
//!   set bit predicts its LPN exactly, as after a collection;
//! * a collection the cut interrupted is finished while free lines are below the reserve.

use super::groups::{valid_pages, FIRST_GROUP_STREAM, NONE};
use super::{Design, LearnedFtl};
use crate::addr::{Lpn, SimTime, Tpn};
use crate::config::DeviceConfig;
use crate::device::{Cause, Device, RuOwner};
use crate::error::{ConfigError, FtlError, RecoverError};
use crate::ftl::Ftl;
use crate::mapping::{recovery, Allocator, LineState, Stream};
use crate::params::Params;
use std::cmp::Reverse;
use std::time::Instant;

impl LearnedFtl {
    /// Rebuilds LearnedFTL from flash after a power cut, recovery issued at `t` (see the module
    /// docs). The cache starts empty. Returns the FTL and when its last operation completes.
    pub fn recover(
        cfg: &DeviceConfig,
        params: &mut Params,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(Self, SimTime), RecoverError> {
        let mut ftl = LearnedFtl::new(cfg, params)?;
        if let Some(why) = ftl.power_cut_refusal() {
            return Err(RecoverError::Config(ConfigError::invalid(
                "tp_write_cost",
                why,
            )));
        }
        let scan = recovery::scan(dev, t)?;
        scan.revalidate(dev)?;
        let stale = ftl.table.restore(dev, &scan)?;
        for l in 0..ftl.table.logical_pages() {
            if let Some(p) = scan.mapped(Lpn(l)) {
                let g = ftl.groups.of(Lpn(l));
                ftl.groups.mapped[g as usize] += 1;
                ftl.count_handle(g, dev.page_handle(p), 1);
            }
        }
        let policy = ftl.alloc.policy.clone();
        let streams = FIRST_GROUP_STREAM + ftl.groups.count() as u16;
        let groups = &ftl.groups;
        let log = ftl.cfg.design == Design::Log;
        ftl.alloc = Allocator::recovered(&cfg.geometry, streams, policy, dev, |oob| {
            let other = if log && oob.is_record() {
                Stream::DATA
            } else {
                Stream::TRANS
            };
            oob.lpn().map_or(other, |l| groups.stream(groups.of(l)))
        });
        let mut done = ftl.restore_lines(dev, scan.done)?;
        let clock = Instant::now();
        for tpn in 0..ftl.geo.tps() {
            ftl.train(Tpn(tpn));
        }
        ftl.extra.train_ns += clock.elapsed().as_nanos() as u64;
        for g in 0..ftl.groups.count() {
            let entries = ftl.models.entries();
            if ftl
                .groups
                .tps(g)
                .any(|tpn| ftl.models.bits_in(Tpn(tpn), 0, entries) > 0)
            {
                ftl.groups.trained_at[g as usize] = Some(t);
            }
        }
        for tpn in stale {
            // The scan gave every entry: a plain program, no read-modify-write.
            let new = ftl.trans_page(dev, scan.done)?;
            let d = ftl
                .table
                .gtd
                .program(dev, tpn, new, Cause::Recovery, scan.done)?;
            done = done.max(d);
        }
        let gc_done = ftl.finish_interrupted(dev, done)?;
        Ok((ftl, done.max(gc_done)))
    }

    /// Relabels the recovered lines (labelled by their first page) from their valid pages (see
    /// the module docs), and erases at `t` the lines with no readable page (every page torn,
    /// or the rest erased: a cut during a collection's erases), which no group owns. Returns
    /// when the erases complete.
    fn restore_lines(&mut self, dev: &mut Device, t: SimTime) -> Result<SimTime, FtlError> {
        let mut done = t;
        for line in 0..self.geo.lines() {
            let mut owner = match self.alloc.state(line) {
                LineState::Free => continue,
                LineState::Open(s) | LineState::Closed(s) => s,
            };
            // Where a line of several groups' pages goes: the log, or under FDP the unit's
            // own stream.
            let mut mixed = Stream::DATA;
            if let Some(unit) = self.default_unit(dev, line) {
                // Under FDP the allocator gave each unit back to its handle's stream, but the
                // default handle's units and the GC units may be group lines: labelled, as
                // without FDP, by their first data page, and relabelled below if mixed.
                mixed = unit;
                if let Some(g) = valid_pages(dev, line)
                    .find_map(|p| dev.peek_oob(p).and_then(|o| o.lpn()))
                    .map(|l| self.groups.of(l))
                {
                    owner = self.groups.stream(g);
                    self.alloc.reassign(line, owner);
                }
            }
            if owner == Stream::DATA && dev.line_valid(line) == 0 {
                if let LineState::Open(s) = self.alloc.state(line) {
                    self.alloc.close(s);
                }
                done = done.max(self.erase_line(dev, line, t)?);
                continue;
            }
            let Some(h) = self.groups.of_stream(owner) else {
                continue;
            };
            let mut guest = NONE;
            // A trim record makes it a log line (design=log keeps them there).
            let mut record = false;
            for ppa in valid_pages(dev, line) {
                let oob = dev.peek_oob(ppa);
                if self.cfg.design == Design::Log && oob.is_some_and(|o| o.is_record()) {
                    record = true;
                    continue;
                }
                let lpn = oob.and_then(|o| o.lpn()).ok_or_else(|| {
                    FtlError::Invariant(format!("{ppa:?} on data line {line} is not data"))
                })?;
                let g = self.groups.of(lpn);
                if g == h {
                    continue;
                }
                if self.cfg.design == Design::Paper && !self.cfg.line_gc {
                    if guest != NONE && guest != g {
                        return Err(FtlError::Invariant(format!(
                            "line {line} of group {h} holds pages of groups {guest} and {g}"
                        )));
                    }
                    self.groups.encroach[g as usize] += 1;
                }
                guest = g;
            }
            if guest == NONE && !record {
                continue;
            }
            match self.cfg.design {
                Design::Log => self.alloc.reassign(line, mixed),
                Design::Paper if self.cfg.line_gc => {}
                Design::Paper => {
                    let paired = self.groups.guest[h as usize];
                    if paired == NONE {
                        self.groups.pair(guest, h);
                    } else if paired != guest {
                        return Err(FtlError::Invariant(format!(
                            "group {h}'s lines host groups {paired} and {guest}"
                        )));
                    }
                }
            }
        }
        Ok(done)
    }

    /// Under FDP, the stream the allocator gave line `line` back to if it may be a group line
    /// (a unit of the default handle, or a GC unit its handle may share with group lines: the
    /// shared one, or handle 0's own); `None` otherwise, and without FDP.
    fn default_unit(&self, dev: &Device, line: u32) -> Option<Stream> {
        let may_be_group = match dev.fdp()?.owner(line) {
            RuOwner::Host(0) | RuOwner::Gc(0) | RuOwner::SharedGc => true,
            RuOwner::Host(_) | RuOwner::Gc(_) | RuOwner::None => false,
        };
        match self.alloc.state(line) {
            LineState::Open(s) | LineState::Closed(s) if may_be_group => Some(s),
            _ => None,
        }
    }

    /// A collection the cut interrupted may have left fewer free lines than the reserve GC
    /// writes into: reclaims at `t` the way the design's foreground GC does while free lines
    /// are below it and a reclaim fits. Returns when the last one completes.
    fn finish_interrupted(&mut self, dev: &mut Device, t: SimTime) -> Result<SimTime, FtlError> {
        let mut done = t;
        while self.alloc.free_lines() < self.cfg.gc_reserve_lines {
            let d = match self.cfg.design {
                Design::Log => {
                    self.alloc.close_full(Stream::DATA);
                    self.reclaim(dev, t, 0)?
                }
                Design::Paper if self.cfg.line_gc => self
                    .line_victim(dev)
                    .map(|line| self.collect_one_line(dev, line, t))
                    .transpose()?,
                Design::Paper => {
                    // The group the cut interrupted owns more lines than its pages need (its
                    // old ones and the destination the collection had taken). It is collected
                    // alone, after its guest's pages went home (the guest alone too), so that
                    // each collection needs one fresh line and frees at least as many.
                    let owned = |g: u32| self.alloc.lines_owned(self.groups.stream(g));
                    let Some(g) = (0..self.groups.count())
                        .filter(|&g| owned(g) > self.lines_needed(&[g]))
                        .max_by_key(|&g| (owned(g) - self.lines_needed(&[g]), Reverse(g)))
                    else {
                        break;
                    };
                    let first = match self.groups.guest[g as usize] {
                        NONE => g,
                        k if self.groups.guest[k as usize] == NONE => k,
                        _ => break,
                    };
                    if self.lines_needed(&[first]) > self.alloc.free_lines() {
                        break;
                    }
                    Some(self.collect(dev, &[first], t, false)?)
                }
            };
            match d {
                Some(d) => done = done.max(d),
                None => break,
            }
        }
        Ok(done)
    }
}
