//! Group-based allocation, opportunistic cross-group allocation, group GC with training, the
//! refresh rewrite, and the translation stream (paper §III-D, §III-E2/E3; SPEC §5.5).
//!
//! * A **group** is `group_tps` consecutive TPs (one line's worth of LPNs by default). Group `g`
//!   writes through its own pointer ([`Stream`] `FIRST_GROUP_STREAM + g` of the shared
//!   [`Allocator`]), striping channel → LUN → plane → page inside lines it owns, so its pages get
//!   consecutive VPPNs in write order.
//! * A group takes a free line while it owns fewer than `group_line_quota` lines and more than
//!   `gc_reserve_lines` lines are free (the reserve is what GC writes into).
//! * Otherwise it may **borrow**: write into the open line of a *cold* group, the one with the
//!   most free pages among those whose models are untrained (`lender=any`: trained ones too),
//!   which hosts no other group's pages and whose own pages are all at home. The pair is
//!   remembered (`host`/`guest`); once the borrower placed `encroach_threshold` pages there, both
//!   are collected together and retrained.
//! * Otherwise **GC** collects the group with the most invalid pages in its lines, with its
//!   partner: the group it borrows from, or the group its lines host. A collection reads the
//!   members' TPs, reads their valid pages wherever they are, writes them back sorted by LPN into
//!   fresh lines of their own group (so each TP's pages are VPPN-contiguous), programs the
//!   members' TPs, erases the members' lines and trains every member TP.
//! * `group_gc=line` (an ablation, closer to the authors' code, which collects single lines
//!   inside a group): a group short of space borrows unpaired from the lender with the most
//!   room, else the closed group line with the fewest valid pages — of any group — is collected
//!   alone: its pages, sorted by LPN, go to their own group's open line, else to the open line
//!   with the most room, else to a new line of their group; every TP they belong to is
//!   rewritten once; TPs with enough moved pages are retrained, keeping the better model.
//! * The translation stream has its own pointer; when it needs a line and lines are short (or,
//!   under `design=paper`, it owns [`TRANS_LINES`] already) its emptiest line is collected the
//!   baseline way.

use super::model::{self, Piece, PIECES};
use super::{Design, LearnedFtl};
use crate::addr::{Lpn, Ppa, SimTime, Tpn, Vppn};
use crate::config::Geometry;
use crate::device::{Cause, Device, Oob, Src, Unit};
use crate::error::FtlError;
use crate::mapping::{gc, radix, Allocator, GcHooks, LineState, Stream, TransTable};
use std::ops::Range;
use std::time::Instant;

/// "No group".
pub const NONE: u32 = u32::MAX;
/// Stream number of group 0 (after the baseline data and translation streams).
pub const FIRST_GROUP_STREAM: u16 = 2;
/// `design=paper`: lines the translation stream may own before it collects its emptiest one
/// instead of taking another.
pub const TRANS_LINES: usize = 2;
/// DRAM per group: write pointer (line + page, 8 B), borrowing partner and guest (2 × 2 B),
/// encroachment counter (4 B), trained flags (1 B), read heat (2 B) and spare (1 B).
const GROUP_BYTES: u64 = 20;

/// Per-group allocation state.
#[derive(Clone, Debug)]
pub struct Groups {
    tps_per_group: u32,
    lpns_per_group: u32,
    logical: u32,
    tps: u32,
    count: u32,
    /// The group `g` is currently borrowing from.
    pub host: Vec<u32>,
    /// The group whose pages `g`'s lines may hold.
    pub guest: Vec<u32>,
    /// How many groups' lines hold pages of `g`.
    pub guest_in: Vec<u32>,
    /// Pages `g` placed in other groups' lines since its last collection.
    pub encroach: Vec<u32>,
    /// When `g` was last trained (`None`: never; its models are untrained).
    pub trained_at: Vec<Option<SimTime>>,
    /// Mapped LPNs of `g` (simulator bookkeeping, for the refresh choice and reports).
    pub mapped: Vec<u32>,
    /// Of which written with an FDP handle other than the default, and with a persistently
    /// isolated one (simulator bookkeeping: a group with both is not merged; docs/fdp.md).
    pub other_handles: Vec<u32>,
    /// See [`Groups::other_handles`].
    pub isolated: Vec<u32>,
    /// Collections of `g` since the last stats reset.
    pub collections: Vec<u32>,
    /// Host page reads of `g` the CMT did not serve (model hits and double reads: the reads a
    /// trained model serves), halved every [`Groups::note_read`] period so that old reads fade.
    pub heat: Vec<u16>,
    /// Whether an idle merge trained `g` and no collection has moved its pages since.
    pub idle_trained: Vec<bool>,
    /// Reads noted since the heats were last halved.
    reads_since_decay: u32,
}

impl Groups {
    /// Groups of `tps_per_group` TPs over the device's logical space.
    pub fn new(geo: &Geometry, tps_per_group: u32) -> Groups {
        let tps = geo.tps();
        let count = tps.div_ceil(tps_per_group);
        let n = count as usize;
        Groups {
            tps_per_group,
            lpns_per_group: tps_per_group * geo.entries_per_tp(),
            logical: geo.logical_pages as u32,
            tps,
            count,
            host: vec![NONE; n],
            guest: vec![NONE; n],
            guest_in: vec![0; n],
            encroach: vec![0; n],
            trained_at: vec![None; n],
            mapped: vec![0; n],
            other_handles: vec![0; n],
            isolated: vec![0; n],
            collections: vec![0; n],
            heat: vec![0; n],
            idle_trained: vec![false; n],
            reads_since_decay: 0,
        }
    }

    /// A host page read of group `g` that the CMT did not serve. Every heat is halved once the
    /// host has read the logical space's worth of pages since the last halving, or when one
    /// would overflow: heats rank groups by recent reads, and halving keeps the ranking.
    pub fn note_read(&mut self, g: u32) {
        self.reads_since_decay += 1;
        if self.heat[g as usize] == u16::MAX || self.reads_since_decay >= self.logical {
            self.heat.iter_mut().for_each(|h| *h /= 2);
            self.reads_since_decay = 0;
        }
        self.heat[g as usize] += 1;
    }

    /// Number of groups.
    #[inline]
    pub fn count(&self) -> u32 {
        self.count
    }
    /// TPs per group.
    #[inline]
    pub fn tps_per_group(&self) -> u32 {
        self.tps_per_group
    }
    /// The group of `lpn`.
    #[inline]
    pub fn of(&self, lpn: Lpn) -> u32 {
        lpn.0 / self.lpns_per_group
    }
    /// The write stream of group `g`.
    #[inline]
    pub fn stream(&self, g: u32) -> Stream {
        Stream(FIRST_GROUP_STREAM + g as u16)
    }
    /// The group writing through `s`, if `s` is a group stream.
    #[inline]
    pub fn of_stream(&self, s: Stream) -> Option<u32> {
        // Streams after the groups' are FDP's (`Allocator::with_fdp`).
        s.0.checked_sub(FIRST_GROUP_STREAM)
            .map(u32::from)
            .filter(|&g| g < self.count)
    }
    /// The LPNs of group `g`.
    pub fn lpns(&self, g: u32) -> Range<u32> {
        let s = g * self.lpns_per_group;
        s..(s + self.lpns_per_group).min(self.logical)
    }
    /// The TPs of group `g`.
    pub fn tps(&self, g: u32) -> Range<u32> {
        let s = g * self.tps_per_group;
        s..(s + self.tps_per_group).min(self.tps)
    }
    /// DRAM of the per-group state.
    pub fn dram_bytes(&self) -> u64 {
        self.count as u64 * GROUP_BYTES
    }

    /// The groups collected together with `v`: its borrowing partner (the group it borrows from,
    /// or the group its lines host), in ascending order.
    pub fn members(&self, v: u32) -> Vec<u32> {
        let other = if self.guest[v as usize] != NONE {
            self.guest[v as usize]
        } else {
            self.host[v as usize]
        };
        match other {
            NONE => vec![v],
            o => vec![v.min(o), v.max(o)],
        }
    }

    /// `g` starts borrowing from `lender`.
    pub fn pair(&mut self, g: u32, lender: u32) {
        self.host[g as usize] = lender;
        self.guest[lender as usize] = g;
        self.guest_in[g as usize] += 1;
    }

    /// `g` was collected: none of its pages is in another group's line any more, and the pages
    /// its lines hosted are gone with them.
    pub fn collected(&mut self, g: u32, t: SimTime) {
        let i = g as usize;
        for h in self.guest.iter_mut().filter(|h| **h == g) {
            *h = NONE;
        }
        self.host[i] = NONE;
        self.guest[i] = NONE;
        self.guest_in[i] = 0;
        self.encroach[i] = 0;
        self.trained_at[i] = Some(t);
        self.idle_trained[i] = false;
        self.collections[i] += 1;
    }
}

/// GC hooks for translation lines: moved TPs update the GTD. Trim records live on translation
/// lines too (a data line belongs to one group or the log), so they move on there while needed.
struct TransHooks<'a>(&'a mut TransTable);

impl GcHooks for TransHooks<'_> {
    fn moved(
        &mut self,
        dev: &mut Device,
        _: &mut Allocator,
        oob: Oob,
        _: Ppa,
        new: Ppa,
        _: SimTime,
    ) -> Result<(), FtlError> {
        match self.0.gc_moved(dev, oob, new)? {
            None => Ok(()),
            Some(lpn) => Err(FtlError::Invariant(format!(
                "data page of {lpn:?} on a translation line"
            ))),
        }
    }

    fn unmapped(&self, lpn: u32) -> bool {
        self.0.get(Lpn(lpn)).is_none()
    }

    fn record_stream(&self) -> Stream {
        Stream::TRANS
    }
}

/// Pages written in `line` (its blocks' write pointers).
pub(super) fn line_written(dev: &Device, line: u32) -> u32 {
    let geo = dev.geo();
    (0..geo.blocks_per_line())
        .map(|i| dev.block_written(geo.block_in_line(line, i)))
        .sum()
}

/// The valid pages of `line`, block by block.
pub(super) fn valid_pages(dev: &Device, line: u32) -> impl Iterator<Item = Ppa> + '_ {
    let geo = dev.geo();
    (0..geo.blocks_per_line()).flat_map(move |i| {
        let block = geo.block_in_line(line, i);
        (0..dev.block_written(block))
            .map(move |pg| Ppa(block * geo.pages_per_block + pg))
            .filter(|&p| dev.is_valid(p))
    })
}

impl LearnedFtl {
    /// The page a host write of an LPN of group `g` goes to: the group's own line, the line it
    /// borrows, a new line, a new lender, or after GC (see the module docs). `log` is the
    /// write's host stream under `design=log`: [`Stream::DATA`], or its FDP handle's.
    pub(super) fn data_page(
        &mut self,
        dev: &mut Device,
        g: u32,
        log: Stream,
        t: SimTime,
    ) -> Result<Ppa, FtlError> {
        if self.cfg.design == Design::Log {
            return self.data_page_log(dev, Some(g), log, t);
        }
        if self.cfg.line_gc {
            return self.data_page_line(dev, g, t);
        }
        let s = self.groups.stream(g);
        let gi = g as usize;
        for _ in 0..2 * self.groups.count() + 8 {
            let h = self.groups.host[gi];
            if h != NONE && self.groups.encroach[gi] >= self.cfg.encroach_threshold {
                let members = self.groups.members(g);
                self.collect(dev, &members, t, false)?;
                continue;
            }
            if self.alloc.room(s) > 0 {
                return self.alloc.next_page(s);
            }
            if h != NONE && self.alloc.room(self.groups.stream(h)) > 0 {
                self.groups.encroach[gi] += 1;
                self.extra.borrowed_pages += 1;
                return self.alloc.next_page(self.groups.stream(h));
            }
            let free = self.alloc.free_lines();
            if free > self.cfg.gc_reserve_lines
                && self.alloc.lines_owned(s) < self.cfg.group_line_quota
            {
                return self.alloc.next_page(s);
            }
            if self.try_borrow(g, self.cfg.lend_trained) {
                continue;
            }
            if let Some(v) = self.victim(dev) {
                let members = self.groups.members(v);
                self.collect(dev, &members, t, false)?;
                continue;
            }
            // Nothing to reclaim: use whatever room is left anywhere.
            if self.try_borrow(g, true) {
                continue;
            }
            if free > self.cfg.gc_reserve_lines {
                return self.alloc.next_page(s);
            }
            break;
        }
        Err(FtlError::NoSpace)
    }

    /// `group_gc=line`: the page a host write of group `g` goes to — its own line, a new line
    /// (above the reserve, under the quota), the open line of the lender with the most room
    /// (unpaired: a line collection sends every page home on its own), else after collecting
    /// the emptiest line (see the module docs).
    fn data_page_line(&mut self, dev: &mut Device, g: u32, t: SimTime) -> Result<Ppa, FtlError> {
        let s = self.groups.stream(g);
        for _ in 0..self.geo.lines() + 8 {
            if self.alloc.room(s) > 0 {
                return self.alloc.next_page(s);
            }
            let free = self.alloc.free_lines();
            if free > self.cfg.gc_reserve_lines
                && self.alloc.lines_owned(s) < self.cfg.group_line_quota
            {
                return self.alloc.next_page(s);
            }
            let any = self.cfg.lend_trained;
            let lender =
                self.roomiest(|gr, l| l != g && (any || gr.trained_at[l as usize].is_none()));
            if let (true, Some(l)) = (self.cfg.cross_group, lender) {
                self.extra.borrowed_pages += 1;
                return self.alloc.next_page(self.groups.stream(l));
            }
            if let Some(line) = self.line_victim(dev) {
                self.collect_one_line(dev, line, t)?;
                continue;
            }
            // Nothing to reclaim: use whatever room is left anywhere.
            if let Some(l) = self.roomiest(|_, _| true) {
                self.extra.borrowed_pages += 1;
                return self.alloc.next_page(self.groups.stream(l));
            }
            if free > self.cfg.gc_reserve_lines {
                return self.alloc.next_page(s);
            }
            break;
        }
        Err(FtlError::NoSpace)
    }

    /// The group, among those `ok` accepts, whose open line has the most room (ties: the lowest
    /// number), if any has room.
    fn roomiest(&self, ok: impl Fn(&Groups, u32) -> bool) -> Option<u32> {
        let gr = &self.groups;
        (0..gr.count())
            .filter(|&l| ok(gr, l))
            .map(|l| (self.alloc.room(gr.stream(l)), l))
            .filter(|&(room, _)| room > 0)
            .max_by_key(|&(room, l)| (room, std::cmp::Reverse(l)))
            .map(|(_, l)| l)
    }

    /// Pairs `g` with a cold lender if cross-group allocation is on and one qualifies.
    fn try_borrow(&mut self, g: u32, any: bool) -> bool {
        if !self.cfg.cross_group || self.groups.guest[g as usize] != NONE {
            return false;
        }
        let lender = self.roomiest(|gr, l| {
            let i = l as usize;
            l != g
                && gr.guest[i] == NONE
                && gr.host[i] == NONE
                && gr.guest_in[i] == 0
                && (any || gr.trained_at[i].is_none())
        });
        match lender {
            Some(l) => {
                self.groups.pair(g, l);
                self.extra.borrow_pairings += 1;
                true
            }
            None => false,
        }
    }

    /// `group_gc=line`: the group line with the most invalid pages (greedy; ties: the fewest
    /// valid), if any has one. Open lines count too (their unwritten room is not lost: the line
    /// is erased at once), else groups that each keep a half-written line would leave nothing
    /// to reclaim.
    pub(super) fn line_victim(&self, dev: &Device) -> Option<u32> {
        (0..self.geo.lines())
            .filter(|&line| match self.alloc.state(line) {
                LineState::Open(s) | LineState::Closed(s) => self.groups.of_stream(s).is_some(),
                LineState::Free => false,
            })
            .map(|line| {
                let valid = dev.line_valid(line);
                (line_written(dev, line) - valid, valid, line)
            })
            .filter(|&(invalid, ..)| invalid > 0)
            .max_by_key(|&(invalid, valid, line)| (invalid, std::cmp::Reverse((valid, line))))
            .map(|(.., line)| line)
    }

    /// `group_gc=line`: collects one line at `t`. Its valid pages are read, sorted by LPN and
    /// each programmed into its own group's open line, else the open line with the most room,
    /// else a new line of its group (GC may use the reserve); every TP a moved page belongs to
    /// is rewritten once (read + program; its cached entries become clean); the line is
    /// erased; every TP with at least `train_min_pages` moved pages is retrained, the new model
    /// kept only if it verifies more LPNs than the current one.
    pub(super) fn collect_one_line(
        &mut self,
        dev: &mut Device,
        line: u32,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        if let LineState::Open(s) = self.alloc.state(line) {
            self.alloc.close(s);
        }
        let mut moves = std::mem::take(&mut self.line_moves);
        moves.clear();
        moves.extend(valid_pages(dev, line).map(|p| (Lpn(0), p, Oob::default())));
        let mut all_read = t;
        for m in moves.iter_mut() {
            let (oob, done) = dev.read(m.1, Cause::GcData, t)?;
            // Trim records (design=log keeps them in the log) sort after every LPN.
            m.0 = if oob.is_record() && self.cfg.design == Design::Log {
                Lpn(u32::MAX)
            } else {
                oob.lpn().ok_or_else(|| {
                    FtlError::Invariant(format!("{:?} on data line {line} holds a TP", m.1))
                })?
            };
            m.2 = oob;
            all_read = all_read.max(done);
        }
        let clock = Instant::now();
        radix::sort_by_u32_key(&mut moves, &mut self.sort_scratch, |m| m.0 .0);
        self.extra.sort_ns += clock.elapsed().as_nanos() as u64;
        let data_pages = moves.partition_point(|m| m.0 .0 != u32::MAX);
        // The TPs the moved pages belong to, with each one's moved offsets (ascending).
        let mut touched = std::mem::take(&mut self.touched);
        let mut offsets = std::mem::take(&mut self.offsets);
        touched.clear();
        offsets.clear();
        for &(lpn, ..) in &moves[..data_pages] {
            let (tpn, x) = self.locate(lpn);
            if touched.last().is_none_or(|&(last, _)| last != tpn) {
                touched.push((tpn, offsets.len() as u32));
            }
            offsets.push(x);
        }
        // The records move on in the log while needed.
        let mut data_done = all_read;
        for &(_, old, oob) in &moves[data_pages..] {
            let unmapped = |l| self.table.get(Lpn(l)).is_none();
            let moved = gc::relocate_record(
                dev,
                &mut self.alloc,
                old,
                oob,
                all_read,
                Stream::DATA,
                unmapped,
            )?;
            if let Some(done) = moved {
                data_done = data_done.max(done);
                self.stats.gc_pages_moved += 1;
            }
        }
        moves.truncate(data_pages);
        // Copies are programmed once every read is done, in LPN order, so the pages of one TP
        // that share a destination get consecutive VPPNs. Under FDP only the default handle's
        // pages go home (a group's lines are handle 0's); the others, and those with no room
        // at home, go where their handle's GC copies go (the log without FDP).
        let mut spill = None;
        for &(lpn, old, oob) in &moves {
            let home = self.groups.stream(self.groups.of(lpn));
            let handle = dev.page_handle(old);
            let s = if self.alloc.room(home) > 0 && handle == 0 {
                home
            } else if self.cfg.design == Design::Log {
                self.alloc.gc_stream(handle)
            } else {
                if spill.is_none_or(|l| self.alloc.room(self.groups.stream(l)) == 0) {
                    spill = self.roomiest(|_, _| true);
                }
                spill.map_or(home, |l| self.groups.stream(l))
            };
            let new = self.alloc.next_page(s)?;
            data_done =
                data_done.max(dev.program(new, oob, Src::Page(old), Cause::GcData, all_read)?);
            dev.place(new, Unit::Gc, handle);
            dev.invalidate(old)?;
            self.table.set(lpn, Some(new));
            let (tpn, x) = self.locate(lpn);
            self.models.clear(tpn, x);
        }
        // The victim is erased before the TPs are written, so that the translation stream can
        // have the line it frees: the copies (at most a line) and the TPs then never need two
        // of the reserve's lines at once. The moved pages' OOBs name their LPNs, so a power
        // cut in between recovers them (the scan rewrites stale TPs).
        let mut done = data_done.max(self.erase_line(dev, line, t)?);
        // While idle (`idle_gc_updates=cache`) the new mappings wait in the CMT instead.
        let deferred = self.idle_collecting && self.cfg.idle_gc_cached && self.cfg.tp_write_charged;
        if deferred {
            for &(lpn, ..) in &moves {
                self.cache_moved(dev, lpn, data_done)?;
            }
            self.extra.idle_cached_moves += moves.len() as u64;
        } else if self.cfg.tp_write_charged {
            self.ensure_trans_room(dev, touched.len() as u32, t, 1)?;
        }
        // Each touched TP now holds every current value, cached dirty ones included.
        for &(tpn, _) in touched.iter().filter(|_| !deferred) {
            if self.cfg.tp_write_charged {
                let new = self.alloc.next_page(Stream::TRANS)?;
                done =
                    done.max(
                        self.table
                            .gtd
                            .rewrite(dev, tpn, new, Cause::GcTrans, data_done)?,
                    );
            }
            self.extra.gc_cleaned_entries += self.cache.clean_tp(tpn) as u64;
        }
        let clock = Instant::now();
        for (i, &(tpn, start)) in touched.iter().enumerate() {
            let end = touched
                .get(i + 1)
                .map_or(offsets.len(), |&(_, e)| e as usize);
            let moved = &offsets[start as usize..end];
            // Under design=log a linear fit of scattered log pages teaches nothing (merges
            // train the groups): it is tried only where the moves are mostly runs of
            // consecutive offsets.
            let fit = self.cfg.design == Design::Paper
                || 2 * moved.windows(2).filter(|w| w[1] == w[0] + 1).count() >= moved.len();
            let g = self.groups.of(Lpn(self.table.gtd.lpns(tpn).start)) as usize;
            // Its pages moved: model hits there are no longer the idle merge's.
            self.groups.idle_trained[g] = false;
            if moved.len() >= self.cfg.train_min_pages as usize && self.retrain(tpn, moved, fit) {
                self.groups.trained_at[g] = Some(t);
            }
        }
        self.extra.train_ns += clock.elapsed().as_nanos() as u64;
        self.gc_epoch += 1;
        self.stats.gc_events += 1;
        self.stats.gc_pages_moved += moves.len() as u64;
        self.extra.line_gcs += 1;
        self.line_moves = moves;
        self.touched = touched;
        self.offsets = offsets;
        Ok(done)
    }

    /// Erases every written block of `line` at `t` and returns it to the free list.
    pub(super) fn erase_line(
        &mut self,
        dev: &mut Device,
        line: u32,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let mut done = t;
        for i in 0..self.geo.blocks_per_line() {
            let block = self.geo.block_in_line(line, i);
            if dev.block_written(block) > 0 {
                done = done.max(dev.erase(block, Cause::GcData, t)?);
            }
        }
        self.alloc.release(line);
        Ok(done)
    }

    /// The group with the most invalid pages in the lines it owns, if any has one.
    fn victim(&self, dev: &Device) -> Option<u32> {
        let mut invalid = vec![0u32; self.groups.count() as usize];
        for line in 0..self.geo.lines() {
            if let LineState::Open(s) | LineState::Closed(s) = self.alloc.state(line) {
                if let Some(g) = self.groups.of_stream(s) {
                    invalid[g as usize] += line_written(dev, line) - dev.line_valid(line);
                }
            }
        }
        (0..self.groups.count())
            .filter(|&g| invalid[g as usize] > 0)
            .max_by_key(|&g| (invalid[g as usize], std::cmp::Reverse(g)))
    }

    /// Fresh lines a collection of `members` writes into.
    pub(super) fn lines_needed(&self, members: &[u32]) -> u32 {
        let ppl = self.geo.pages_per_line();
        members
            .iter()
            .map(|&g| self.groups.mapped[g as usize].div_ceil(ppl))
            .sum()
    }

    /// Collects `members` (ascending) at `t`: TP reads, valid pages read wherever they are and
    /// written back in LPN order into fresh lines of their group, TP programs, erases of the
    /// members' lines, training. `refresh` marks a refresh rewrite (not counted as GC).
    pub(super) fn collect(
        &mut self,
        dev: &mut Device,
        members: &[u32],
        t: SimTime,
        refresh: bool,
    ) -> Result<SimTime, FtlError> {
        let charged = self.cfg.tp_write_charged;
        let tps: Vec<Tpn> = members
            .iter()
            .flat_map(|&g| self.groups.tps(g).map(Tpn))
            .collect();
        if charged {
            self.ensure_trans_room(dev, tps.len() as u32, t, self.cfg.gc_reserve_lines + 1)?;
        }
        let mut victims = Vec::new();
        for &g in members {
            let s = self.groups.stream(g);
            self.alloc.close(s);
            victims.extend(self.alloc.lines_of(s));
        }
        // ① Read the members' TPs and keep their valid translations, sorted by LPN.
        let mut tp_done = t;
        for &tpn in &tps {
            tp_done = tp_done.max(self.table.gtd.read(dev, tpn, Cause::GcTrans, t)?);
        }
        let clock = Instant::now();
        let mut moves = std::mem::take(&mut self.moves);
        moves.clear();
        for &g in members {
            for l in self.groups.lpns(g) {
                if let Some(p) = self.table.get(Lpn(l)) {
                    moves.push((Lpn(l), p));
                }
            }
        }
        moves.sort_unstable_by_key(|m| m.0);
        self.extra.sort_ns += clock.elapsed().as_nanos() as u64;
        let need = self.lines_needed(members);
        if self.alloc.free_lines() < need {
            self.moves = moves;
            return Err(FtlError::NoSpace);
        }
        // ② Write the valid pages back, VPPN-contiguously per group.
        let mut data_done = tp_done;
        for &(lpn, old) in &moves {
            let s = self.groups.stream(self.groups.of(lpn));
            let (oob, read) = dev.read(old, Cause::GcData, tp_done)?;
            let new = self.alloc.next_page(s)?;
            data_done =
                data_done.max(dev.program(new, oob, Src::Page(old), Cause::GcData, read)?);
            dev.place(new, Unit::Gc, dev.page_handle(old));
            dev.invalidate(old)?;
            self.table.set(lpn, Some(new));
            self.models
                .clear(self.table.gtd.tpn_of(lpn), self.table.gtd.offset_of(lpn));
        }
        let moved = moves.len() as u64;
        self.moves = moves;
        for &line in &victims {
            if dev.line_valid(line) != 0 {
                return Err(FtlError::Invariant(format!(
                    "line {line} still holds {} valid pages after collecting groups {members:?}",
                    dev.line_valid(line)
                )));
            }
        }
        // The members' TPs now hold every current value: the new locations, and the cached
        // dirty entries' values (which therefore become clean).
        let mut done = data_done;
        for &tpn in &tps {
            let lpns = self.table.gtd.lpns(tpn);
            let mapped = lpns.clone().any(|l| self.table.get(Lpn(l)).is_some());
            if !mapped && self.table.gtd.location(tpn).is_none() {
                continue;
            }
            if charged {
                let new = self.alloc.next_page(Stream::TRANS)?;
                done =
                    done.max(
                        self.table
                            .gtd
                            .program(dev, tpn, new, Cause::GcTrans, data_done)?,
                    );
            }
            self.extra.gc_cleaned_entries += self.cache.clean_tp(tpn) as u64;
        }
        for &line in &victims {
            done = done.max(self.erase_line(dev, line, t)?);
        }
        // ③④ Train every member TP and set the bits of exact predictions.
        let clock = Instant::now();
        for &tpn in &tps {
            self.train(tpn);
        }
        self.extra.train_ns += clock.elapsed().as_nanos() as u64;
        for &g in members {
            self.groups.collected(g, t);
        }
        self.gc_epoch += 1;
        if refresh {
            self.extra.refresh_rewrites += 1;
        } else {
            self.stats.gc_events += 1;
            self.extra.group_gcs += 1;
            self.extra.paired_gcs += (members.len() > 1) as u64;
        }
        self.stats.gc_pages_moved += moved;
        Ok(done)
    }

    /// Puts TP `tpn`'s mappings `(offset, VPPN)` that `keep` accepts (ascending) into
    /// `self.points`.
    fn gather(&mut self, tpn: Tpn, keep: impl Fn(&model::Models, u32, u32) -> bool) {
        self.points.clear();
        let first = self.table.gtd.lpns(tpn).start;
        for l in self.table.gtd.lpns(tpn) {
            if let Some(p) = self.table.get(Lpn(l)) {
                let (x, v) = (l - first, self.math.ppa_to_vppn(p).0);
                if keep(&self.models, x, v) {
                    self.points.push((x, v));
                }
            }
        }
    }

    /// Fits `self.points` into `self.fit` (nothing if fewer than `train_min_pages`).
    fn fit_points(&mut self) {
        if self.points.len() < self.cfg.train_min_pages as usize {
            self.points.clear();
        }
        self.cfg.training.fit(&self.points, &mut self.fit);
    }

    /// Installs `self.fit` as TP `tpn`'s model, verifying every mapped LPN.
    fn install_fit(&mut self, tpn: Tpn) {
        self.gather(tpn, |_, _, _| true);
        self.models.install(
            tpn,
            &self.fit,
            self.points.iter().map(|&(x, v)| (x, Vppn(v))),
        );
        self.extra.trained_tps += !self.fit.is_empty() as u64;
    }

    /// Trains TP `tpn` on its current mappings (at least `train_min_pages` of them; fewer leave
    /// it without a model).
    pub(super) fn train(&mut self, tpn: Tpn) {
        self.gather(tpn, |_, _, _| true);
        self.fit_points();
        self.install_fit(tpn);
    }

    /// After a line collection moved TP `tpn`'s LPNs at offsets `moved` (ascending; their bits
    /// are clear), offers it two new models and keeps the one that verifies the most LPNs, if
    /// more than the current one still verifies: with `fit`, a linear fit of the LPNs the
    /// current model verifies together with those on the lines the moved ones went to (the
    /// moved ones and any run they continue; scattered LPNs elsewhere would only fragment the
    /// pieces) — unless the rank piece applies; with `rank_pieces`, rank pieces over the moved
    /// LPNs if they were written at consecutive VPPNs (holes between them cost nothing).
    /// Returns whether the model changed.
    fn retrain(&mut self, tpn: Tpn, moved: &[u32], fit: bool) -> bool {
        let ppl = self.geo.pages_per_line();
        let first = self.table.gtd.lpns(tpn).start;
        let current = self.models.bits_in(tpn, 0, self.models.entries());
        let mut rank = 0;
        if self.cfg.rank_pieces {
            self.points.clear();
            for &x in moved {
                if let Some(p) = self.table.get(Lpn(first + x)) {
                    self.points.push((x, self.math.ppa_to_vppn(p).0));
                }
            }
            if self.points.windows(2).all(|w| w[1].1 == w[0].1 + 1) {
                rank = self.points.len() as u32;
            }
        }
        let mut exact = 0;
        // A run the rank piece takes whole needs no fit (the fit costs a pass over the TP).
        if fit && rank == 0 {
            let mut dest = std::mem::take(&mut self.dest_lines);
            dest.clear();
            for &x in moved {
                if let Some(p) = self.table.get(Lpn(first + x)) {
                    let line = self.math.ppa_to_vppn(p).0 / ppl;
                    if !dest.contains(&line) {
                        dest.push(line);
                    }
                }
            }
            self.gather(tpn, |models, x, v| {
                models.bit(tpn, x) || dest.iter().any(|&l| (l * ppl..(l + 1) * ppl).contains(&v))
            });
            self.dest_lines = dest;
            self.fit_points();
            let mut pieces = [Piece::UNUSED; PIECES];
            pieces[..self.fit.len()].copy_from_slice(&self.fit);
            exact = self
                .points
                .iter()
                .filter(|&&(x, v)| model::predict(&pieces, x) == Some(Vppn(v)))
                .count() as u32;
        }
        if rank > 0 {
            // One rank piece per stretch of moved LPNs with no verified LPN between them, so
            // that it takes nothing from the pieces the others still verify.
            let pts = &self.points;
            let mut set = 0;
            let mut start = 0;
            for i in 1..=pts.len() {
                let split =
                    i == pts.len() || self.models.bits_in(tpn, pts[i - 1].0 + 1, pts[i].0) > 0;
                if split {
                    let seg = &pts[start..i];
                    if seg.len() >= self.cfg.train_min_pages.max(2) as usize {
                        set += self.models.install_run(tpn, seg);
                    }
                    start = i;
                }
            }
            self.extra.rank_installs += (set > 0) as u64;
            set > 0
        } else if exact > current {
            self.install_fit(tpn);
            true
        } else {
            false
        }
    }

    /// Refresh rewrite (paper §III-E3): collects the least recently trained group that has
    /// data, if a period has passed and GC's reserve is intact.
    pub(super) fn refresh(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        let Some(period) = self.cfg.refresh_period_ns else {
            return Ok(());
        };
        if now < self.next_refresh {
            return Ok(());
        }
        self.next_refresh = now.after(period);
        if self.alloc.free_lines() <= self.cfg.gc_reserve_lines {
            return Ok(());
        }
        let g = (0..self.groups.count())
            .filter(|&g| self.groups.mapped[g as usize] > 0)
            .min_by_key(|&g| (self.groups.trained_at[g as usize], g));
        match g {
            Some(g) => {
                let members = self.groups.members(g);
                self.collect(dev, &members, now, true).map(|_| ())
            }
            None => Ok(()),
        }
    }

    /// A page of the translation stream.
    pub(super) fn trans_page(&mut self, dev: &mut Device, t: SimTime) -> Result<Ppa, FtlError> {
        self.ensure_trans_room(dev, 1, t, self.cfg.gc_reserve_lines + 1)?;
        self.alloc.next_page(Stream::TRANS)
    }

    /// Makes sure the translation stream can take `n` pages: lets it take a fresh line while
    /// more than `keep_free` lines are free (`design=log`: it fills its open line first, and
    /// its full lines are greedy GC candidates beside the data lines, as in the baselines:
    /// [`LearnedFtl::log_victim`]; `design=paper`: it closes its open line, owns at most
    /// [`TRANS_LINES`], and `keep_free` is the reserve + 1), else collects its emptiest line
    /// (the baseline way; moved TPs update the GTD), whose copies leave room for `n`.
    fn ensure_trans_room(
        &mut self,
        dev: &mut Device,
        n: u32,
        t: SimTime,
        keep_free: u32,
    ) -> Result<(), FtlError> {
        if self.alloc.room(Stream::TRANS) >= n {
            return Ok(());
        }
        let log = self.cfg.design == Design::Log;
        if log && self.alloc.free_lines() > keep_free {
            return Ok(());
        }
        let owned = self.alloc.lines_owned(Stream::TRANS) as usize;
        self.alloc.close(Stream::TRANS);
        if !log && owned < TRANS_LINES && self.alloc.free_lines() > self.cfg.gc_reserve_lines + 1 {
            return Ok(());
        }
        let victim = self
            .alloc
            .lines_of(Stream::TRANS)
            .min_by_key(|&l| dev.line_valid(l))
            .ok_or(FtlError::NoSpace)?;
        if self.alloc.free_lines() == 0 {
            return Err(FtlError::NoSpace);
        }
        self.collect_trans_line(dev, victim, t)?;
        Ok(())
    }

    /// Collects translation line `line` at `t` the baseline way (its valid TPs move through
    /// the translation stream; the GTD follows). Returns when it completes.
    pub(super) fn collect_trans_line(
        &mut self,
        dev: &mut Device,
        line: u32,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let out = gc::collect_line(
            dev,
            &mut self.alloc,
            line,
            t,
            &mut TransHooks(&mut self.table),
        )?;
        self.stats.gc_events += 1;
        self.stats.gc_pages_moved += out.tp_moved as u64;
        self.extra.trans_gcs += 1;
        Ok(out.done)
    }

    /// Checks that every valid page on a group's line belongs to that group or to the group it
    /// hosts, and that translation lines hold only TPs.
    pub(super) fn check_groups(&self, dev: &Device) -> Result<(), String> {
        for line in 0..dev.geo().lines() {
            let owner = match self.alloc.state(line) {
                LineState::Free => continue,
                LineState::Open(s) | LineState::Closed(s) => s,
            };
            for ppa in valid_pages(dev, line) {
                let oob = dev.peek_oob(ppa).unwrap_or_default();
                let ok = match (self.groups.of_stream(owner), oob.lpn()) {
                    // The write log (design=log) holds any group's data pages, and the trim
                    // records.
                    (None, lpn) if owner == Stream::DATA => {
                        self.cfg.design == Design::Log && (lpn.is_some() || oob.is_record())
                    }
                    (None, lpn) if owner == Stream::TRANS => lpn.is_none(),
                    // FDP's handle and GC units: any group's data pages (their handles are the
                    // device's check).
                    (None, lpn) => lpn.is_some(),
                    (Some(g), Some(lpn)) => {
                        // Line collections send pages home one by one: with them, any
                        // group's line may hold any data page.
                        let pg = self.groups.of(lpn);
                        self.cfg.line_gc || pg == g || pg == self.groups.guest[g as usize]
                    }
                    (Some(_), None) => false,
                };
                if !ok {
                    return Err(format!(
                        "{ppa:?} ({oob:?}) on line {line} owned by {owner:?}"
                    ));
                }
            }
        }
        Ok(())
    }
}
