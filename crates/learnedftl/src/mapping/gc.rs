//! Garbage collection of one line, and the foreground/background drivers (SPEC §3.5).
//!
//! The mechanics are shared; what a move means for the mapping is the FTL's, through
//! [`GcHooks`].

use super::alloc::{Allocator, LineState, Stream};
use super::stats::FtlStats;
use crate::addr::{Ppa, SimTime};
use crate::device::{Cause, Device, Oob, Src, Unit};
use crate::error::FtlError;

/// What an FTL does when GC moves its pages.
pub trait GcHooks {
    /// A valid page holding `oob` moved from `old` to `new` (already programmed; `old` already
    /// invalidated). Update the mapping. `t` is when the move completed.
    fn moved(
        &mut self,
        dev: &mut Device,
        alloc: &mut Allocator,
        oob: Oob,
        old: Ppa,
        new: Ppa,
        t: SimTime,
    ) -> Result<(), FtlError>;

    /// The translation pages [`GcHooks::victim_moved`] will program, for the victim moved so
    /// far (default: none).
    fn pending_tp_pages(&self) -> u32 {
        0
    }

    /// At most how many translation pages [`GcHooks::victim_moved`] may program after moving
    /// `valid` data pages (default: none), so that GC starts no collection whose TP updates
    /// may not fit ([`fits`]).
    fn tp_pages_bound(&self, valid: u32) -> u32 {
        let _ = valid;
        0
    }

    /// Every valid page of the victim has moved, before its blocks are erased (DFTL and TPFTL
    /// batch their translation-page updates here; so does LeaFTL). If those pages
    /// ([`GcHooks::pending_tp_pages`]) would not fit the translation stream's room and the free
    /// lines, the victim is erased first and they take it.
    fn victim_moved(
        &mut self,
        _dev: &mut Device,
        _alloc: &mut Allocator,
        _t: SimTime,
    ) -> Result<(), FtlError> {
        Ok(())
    }

    /// GC will soon move a page holding `oob`: hint the mapping state [`GcHooks::moved`] will
    /// touch for it into cache. Collections call it a few pages ahead, so the random lookups
    /// of tables sized by the logical space overlap instead of stalling one by one. A hint
    /// only (default: nothing).
    fn prefetch_moved(&self, oob: Oob) {
        let _ = oob;
    }

    /// How GC moves this FTL's data pages. [`GcOrder::Physical`] by default.
    fn order(&self) -> GcOrder {
        GcOrder::Physical
    }

    /// Whether `lpn` is unmapped (trimmed, or never written): GC keeps a valid trim record
    /// while one of its LPNs is, and still has a data page on flash
    /// ([`Device::record_needed`], [`super::trims`]); otherwise no recovery needs it and GC
    /// drops it. The default says every LPN is (safe: records then live while any of their
    /// LPNs has a page on flash).
    fn unmapped(&self, lpn: u32) -> bool {
        let _ = lpn;
        true
    }

    /// The stream a kept trim record moves to: [`Stream::DATA`] by default; an FTL that keeps
    /// its records on translation lines (LearnedFTL: its data lines belong to groups) says so.
    fn record_stream(&self) -> Stream {
        Stream::DATA
    }
}

/// The order in which a collection programs a victim's pages. Either way every valid page is
/// read first (into the controller's GC buffer), so the victim's reads queue on their LUNs before
/// any copy is programmed and the copies spread over every LUN, as in a real controller.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GcOrder {
    /// Copies in the victim's physical order, each programmed when its own read completes.
    Physical,
    /// LeaFTL §3.6: data pages programmed sorted by LPN (so they are VPPN-contiguous in LPN order
    /// and learnable), issued when the last read completes. [`GcHooks::moved`] is called in that
    /// order.
    ByLpn,
}

/// What one GC did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct GcOutcome {
    /// Data pages moved.
    pub data_moved: u32,
    /// Translation pages moved.
    pub tp_moved: u32,
    /// When the last operation of the GC completes.
    pub done: SimTime,
}

/// How many pages ahead of its moves a collection hints their mapping state
/// ([`GcHooks::prefetch_moved`]): enough to cover a cache miss with the work of the moves
/// between.
const PREFETCH_AHEAD: usize = 8;

/// Cleans `victim`: reads every valid page, programs it through the write pointer of its stream
/// (data or translation), lets the FTL update its mapping, then erases every block of the line
/// and returns it to the free list. Operations are issued at `t`; every read is issued before
/// any program, and each program waits for its data ([`GcOrder`]).
pub fn collect_line(
    dev: &mut Device,
    alloc: &mut Allocator,
    victim: u32,
    t: SimTime,
    hooks: &mut impl GcHooks,
) -> Result<GcOutcome, FtlError> {
    let geo = dev.geo().clone();
    let mut out = GcOutcome {
        done: t,
        ..Default::default()
    };
    let ppb = geo.pages_per_block;
    // The GC buffer: (sort key, old page, its OOB, when its read completes). Reused across
    // collections so a GC allocates nothing.
    let mut buf = std::mem::take(&mut alloc.gc_buffer);
    buf.clear();
    let mut all_read = t;
    for i in 0..geo.blocks_per_line() {
        let block = geo.block_in_line(victim, i);
        if dev.block_valid(block) == 0 {
            continue;
        }
        for pg in 0..dev.block_written(block) {
            let old = Ppa(block * ppb + pg);
            if !dev.is_valid(old) {
                continue;
            }
            let is_tp = dev.peek_oob(old).is_some_and(|o| o.tpn().is_some());
            let cause = if is_tp { Cause::GcTrans } else { Cause::GcData };
            let (oob, read_done) = dev.read(old, cause, t)?;
            all_read = all_read.max(read_done);
            buf.push((oob.tag, old, oob, read_done));
        }
    }
    if hooks.order() == GcOrder::ByLpn {
        // Data pages (tags without the TP flag) in LPN order after every read; TPs last (then
        // trim records, in the victim's order).
        super::radix::sort_by_u32_key(&mut buf, &mut alloc.gc_scratch, |e| e.0);
        for e in buf.iter_mut().filter(|e| e.2.lpn().is_some()) {
            e.3 = all_read;
        }
    }
    for (i, &(_, old, oob, ready)) in buf.iter().enumerate() {
        if let Some(ahead) = buf.get(i + PREFETCH_AHEAD) {
            hooks.prefetch_moved(ahead.2);
        }
        move_page(dev, alloc, old, oob, ready, hooks, &mut out)?;
    }
    alloc.gc_buffer = buf;
    // On a large device a victim's pages can map to tens of thousands of TPs, more than the
    // reserve holds besides the copies (DFTL at 1 TiB ran out of lines here).
    let pending = hooks.pending_tp_pages() as u64;
    let erase_first = pending > 0
        && pending
            > alloc.room(Stream::TRANS) as u64
                + alloc.free_lines() as u64 * geo.pages_per_line() as u64;
    if !erase_first {
        hooks.victim_moved(dev, alloc, t)?;
    }
    for i in 0..geo.blocks_per_line() {
        let block = geo.block_in_line(victim, i);
        if dev.block_written(block) > 0 {
            out.done = out.done.max(dev.erase(block, Cause::GcData, t)?);
        }
    }
    alloc.release(victim);
    if erase_first {
        hooks.victim_moved(dev, alloc, t)?;
    }
    Ok(out)
}

/// Programs a page GC read (at `ready`) through its stream's pointer, invalidates the old copy
/// and tells the FTL.
fn move_page(
    dev: &mut Device,
    alloc: &mut Allocator,
    old: Ppa,
    oob: Oob,
    ready: SimTime,
    hooks: &mut impl GcHooks,
    out: &mut GcOutcome,
) -> Result<(), FtlError> {
    if oob.is_record() {
        let stream = hooks.record_stream();
        let moved = relocate_record(dev, alloc, old, oob, ready, stream, |l| hooks.unmapped(l))?;
        if let Some(done) = moved {
            out.done = out.done.max(done);
            out.data_moved += 1;
        }
        return Ok(());
    }
    let is_tp = oob.tpn().is_some();
    // Under FDP a data page keeps its handle, and goes where its handle's GC copies go.
    let handle = dev.page_handle(old);
    let (stream, cause) = if is_tp {
        (Stream::TRANS, Cause::GcTrans)
    } else {
        (alloc.gc_stream(handle), Cause::GcData)
    };
    let new = alloc.next_page(stream)?;
    let done = dev.program(new, oob, Src::Page(old), cause, ready)?;
    if !is_tp {
        dev.place(new, Unit::Gc, handle);
    }
    dev.invalidate(old)?;
    hooks.moved(dev, alloc, oob, old, new, done)?;
    out.done = out.done.max(done);
    if is_tp {
        out.tp_moved += 1;
    } else {
        out.data_moved += 1;
    }
    Ok(())
}

/// The valid trim record at `old`, read by GC at `ready` as `oob`: programmed on through
/// `stream` while needed (an LPN it trimmed is `unmapped` and still has a data page on flash:
/// [`Device::record_needed`]), then invalidated; returns the copy's completion if it moved.
pub fn relocate_record(
    dev: &mut Device,
    alloc: &mut Allocator,
    old: Ppa,
    oob: Oob,
    ready: SimTime,
    stream: Stream,
    unmapped: impl Fn(u32) -> bool,
) -> Result<Option<SimTime>, FtlError> {
    let rec = dev
        .record(old)
        .ok_or_else(|| FtlError::Invariant(format!("trim record at {old:?} without contents")))?;
    let mut moved = None;
    if dev.record_needed(rec, unmapped) {
        let new = alloc.next_page(stream)?;
        moved = Some(dev.program(new, oob, Src::Page(old), Cause::GcData, ready)?);
    }
    dev.invalidate(old)?;
    Ok(moved)
}

/// The lines a collection of written line `line` may open beyond the room left in its
/// destinations' open lines: those its copies take (a data line's go to `data_to`, a
/// translation line's to [`Stream::TRANS`]) and those the translation pages it may rewrite take
/// (at most `tp_pages_bound` of its valid pages; none for a translation line). `None` for a
/// line not written.
fn lines_opened(
    dev: &Device,
    alloc: &Allocator,
    line: u32,
    data_to: Stream,
    tp_pages_bound: impl Fn(u32) -> u32,
) -> Option<u32> {
    let (LineState::Closed(stream) | LineState::Open(stream)) = alloc.state(line) else {
        return None;
    };
    let ppl = dev.geo().pages_per_line();
    let valid = dev.line_valid(line);
    let (to, tps) = match stream {
        Stream::TRANS => (Stream::TRANS, 0),
        _ => (data_to, tp_pages_bound(valid)),
    };
    let copy_lines = valid.saturating_sub(alloc.room(to)).div_ceil(ppl);
    // (An FTL without translation pages has no translation stream to ask.)
    let tp_lines = match tps {
        0 => 0,
        _ => tps.saturating_sub(alloc.room(Stream::TRANS)).div_ceil(ppl),
    };
    Some(copy_lines + tp_lines)
}

/// Whether a collection of written line `line` may start now: the lines its copies (a data
/// line's to `data_to`: [`Stream::DATA`] for [`collect_line`]) and the translation pages it
/// may rewrite (at most `tp_pages_bound` of its valid pages; none for a translation line)
/// could open are free now, so that the victim, erased, leaves at least one line free. Without
/// that rule a collection can take more than it gives: on a large device a data victim's valid
/// pages map to nearly as many TPs, so it programs up to twice its valid pages, and
/// back-to-back collections of such victims ran DFTL out of lines (docs/device.md "Which
/// victim").
pub fn fits(
    dev: &Device,
    alloc: &Allocator,
    line: u32,
    data_to: Stream,
    tp_pages_bound: impl Fn(u32) -> u32,
) -> bool {
    lines_opened(dev, alloc, line, data_to, tp_pages_bound).is_some_and(|n| n <= alloc.free_lines())
}

/// The victim a collection takes now: the best line by the victim rule ([`Allocator::victim`];
/// greedy: the fewest valid pages) if it has at least `min_invalid` invalid pages and
/// [`fits`], else the best of the lines with as many that fit, if any. Returns the line and
/// whether it passed over the first choice.
///
/// The first choice must have `min_invalid` itself (background GC waits for it, as FEMU's
/// does for the greedy victim), which for greedy is the same as taking the best of the lines
/// with that many. For cost-benefit it is not: taking the best of those would collect young
/// translation lines as soon as they pass `gc_bg_min_invalid`, as greedy does (DFTL on
/// `quick` at 64 GiB, random 4 KiB writes: WAF 32.0 instead of 13.1).
fn victim(
    dev: &Device,
    alloc: &Allocator,
    hooks: &impl GcHooks,
    min_invalid: u32,
) -> Option<(u32, bool)> {
    let ppl = dev.geo().pages_per_line();
    let gain = |l: u32| ppl - dev.line_valid(l) >= min_invalid;
    let ok = |l| {
        let to = alloc.gc_stream_of_line(dev, l);
        fits(dev, alloc, l, to, |v| hooks.tp_pages_bound(v))
    };
    let first = alloc.victim(dev).filter(|&l| gain(l))?;
    if ok(first) {
        return Some((first, false));
    }
    alloc
        .victim_where(dev, |l| gain(l) && ok(l))
        .map(|l| (l, true))
}

fn record(stats: &mut FtlStats, out: &GcOutcome, background: bool, passed_over: bool) {
    stats.gc_events += 1;
    stats.gc_background += background as u64;
    stats.gc_passed_over += passed_over as u64;
    stats.gc_pages_moved += (out.data_moved + out.tp_moved) as u64;
}

/// The next page of `stream`, running foreground GC first while a new line is needed and free
/// lines are at or below the foreground threshold.
pub fn alloc_page(
    dev: &mut Device,
    alloc: &mut Allocator,
    stream: Stream,
    t: SimTime,
    hooks: &mut impl GcHooks,
    stats: &mut FtlStats,
) -> Result<Ppa, FtlError> {
    make_room(dev, alloc, stream, 1, t, hooks, stats)?;
    alloc.next_page(stream)
}

/// The foreground GC [`alloc_page`] runs before taking a page, for `pages` pages of `stream`
/// at once: for an FTL that must run it before it decides what to write (GC may change that),
/// then takes those pages with [`Allocator::next_page`]. Asking for fewer pages than it then
/// takes would let each such write spill into the reserve without GC running: μ-FTL's
/// multi-page tree writes drained it that way to "device full" under random writes.
pub fn make_room(
    dev: &mut Device,
    alloc: &mut Allocator,
    stream: Stream,
    pages: u32,
    t: SimTime,
    hooks: &mut impl GcHooks,
    stats: &mut FtlStats,
) -> Result<(), FtlError> {
    // A full open line is a GC candidate too (a translation line can be mostly invalid by the
    // time it fills, and may be the only line GC can reclaim).
    alloc.close_full(stream);
    while alloc.must_collect(stream, pages) {
        // Nothing reclaimable yet (e.g. every data page valid and the translation line still
        // open), or no collection fits: dip into the reserve; next_page fails only when no
        // free line is left.
        let Some((victim, passed_over)) = victim(dev, alloc, hooks, 1) else {
            break;
        };
        let out = collect_line(dev, alloc, victim, t, hooks)?;
        record(stats, &out, false, passed_over);
    }
    Ok(())
}

/// After a power cut (docs/power.md), issued at `t`: a collection the cut interrupted left its
/// victim with the pages it had not copied yet and its destinations open, and possibly fewer
/// free lines than GC's reserve. While free lines are below the foreground threshold, the best
/// victim is collected as long as its valid pages fit in the open lines of their streams (as
/// the interrupted collection's would: it opens no line, TP updates aside), restoring the
/// reserve a collection relies on. Returns when the last collection completes (`t` if none
/// ran).
pub fn finish_interrupted(
    dev: &mut Device,
    alloc: &mut Allocator,
    t: SimTime,
    hooks: &mut impl GcHooks,
    stats: &mut FtlStats,
) -> Result<SimTime, FtlError> {
    let mut done = t;
    while alloc.free_lines() < alloc.policy.fg_free_lines {
        let Some(victim) = alloc.victim(dev) else {
            break;
        };
        let to = alloc.gc_stream_of_line(dev, victim);
        if lines_opened(dev, alloc, victim, to, |_| 0) != Some(0) {
            break;
        }
        let out = collect_line(dev, alloc, victim, t, hooks)?;
        record(stats, &out, false, false);
        done = done.max(out.done);
    }
    Ok(done)
}

/// Background GC after a request: cleans up to `policy.bg_victims` lines (FEMU: one) while the
/// background condition holds.
pub fn background(
    dev: &mut Device,
    alloc: &mut Allocator,
    now: SimTime,
    hooks: &mut impl GcHooks,
    stats: &mut FtlStats,
) -> Result<(), FtlError> {
    for _ in 0..alloc.policy.bg_victims {
        if background_one(dev, alloc, now, hooks, stats)?.is_none() {
            break;
        }
    }
    Ok(())
}

/// One background collection issued at `now`, if the background condition holds (the unit of
/// idle work while the device settles, where `bg_victims` does not cap it); returns when it
/// completes.
pub fn background_one(
    dev: &mut Device,
    alloc: &mut Allocator,
    now: SimTime,
    hooks: &mut impl GcHooks,
    stats: &mut FtlStats,
) -> Result<Option<SimTime>, FtlError> {
    let Some(min_invalid) = alloc.background_gain(dev) else {
        return Ok(None);
    };
    let Some((victim, passed_over)) = victim(dev, alloc, hooks, min_invalid) else {
        alloc.idle(dev, min_invalid, |_, _| false);
        return Ok(None);
    };
    let out = collect_line(dev, alloc, victim, now, hooks)?;
    record(stats, &out, true, passed_over);
    Ok(Some(out.done))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Lpn, Tpn};
    use crate::config::DeviceConfig;
    use crate::mapping::GcPolicy;
    use crate::params::Params;

    /// Hooks whose collections rewrite one TP per moved data page (`tp_per_page`) or none.
    struct Hooks {
        tp_per_page: bool,
    }

    impl GcHooks for Hooks {
        fn moved(
            &mut self,
            _: &mut Device,
            _: &mut Allocator,
            _: Oob,
            _: Ppa,
            _: Ppa,
            _: SimTime,
        ) -> Result<(), FtlError> {
            Ok(())
        }

        fn tp_pages_bound(&self, valid: u32) -> u32 {
            if self.tp_per_page {
                valid
            } else {
                0
            }
        }
    }

    /// `tiny` (64 lines of 512 pages): a translation line (line 0) with 50 pages invalid, then
    /// data lines until `free` lines are left, line 1 with 100 pages invalid. Greedy takes line 1.
    fn full_device(free: u32) -> (Device, Allocator) {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let geo = cfg.geometry.clone();
        let pol = GcPolicy::from_params(&geo, &mut Params::new(), 2).unwrap();
        let (mut d, mut a) = (Device::new(&cfg), Allocator::new(&geo, 2, pol));
        let ppl = geo.pages_per_line();
        let write = |d: &mut Device, a: &mut Allocator, stream, oob| {
            let p = a.next_page(stream).unwrap();
            d.program(p, oob, Src::None, Cause::User, SimTime(0))
                .unwrap();
            p
        };
        let tps: Vec<Ppa> = (0..ppl)
            .map(|i| write(&mut d, &mut a, Stream::TRANS, Oob::tp(Tpn(i))))
            .collect();
        a.close_full(Stream::TRANS);
        let mut data = Vec::new();
        for i in 0..(geo.lines() - 1 - free) * ppl {
            data.push(write(&mut d, &mut a, Stream::DATA, Oob::data(Lpn(i), 1)));
        }
        a.close_full(Stream::DATA);
        for p in tps[..50].iter().chain(&data[..100]) {
            d.invalidate(*p).unwrap();
        }
        assert_eq!((a.free_lines(), a.victim(&d)), (free, Some(1)));
        (d, a)
    }

    #[test]
    fn a_collection_starts_only_if_its_copies_and_tp_updates_fit() {
        let costly = Hooks { tp_per_page: true };
        let plain = Hooks { tp_per_page: false };
        // One line free: line 1's copies take it and its TP updates would need another, so GC
        // takes the translation line, which its own copies fit.
        let (d, a) = full_device(1);
        assert!(!fits(&d, &a, 1, Stream::DATA, |v| costly.tp_pages_bound(v)));
        assert!(fits(&d, &a, 0, Stream::DATA, |v| costly.tp_pages_bound(v)));
        assert_eq!(victim(&d, &a, &costly, 1), Some((0, true)));
        // Without TP updates the greedy victim fits.
        assert!(fits(&d, &a, 1, Stream::DATA, |v| plain.tp_pages_bound(v)));
        assert_eq!(victim(&d, &a, &plain, 1), Some((1, false)));
        // The victim filter holds for the fallback too (line 0 has only 50 pages invalid).
        assert_eq!(victim(&d, &a, &costly, 51), None);
        // Two lines free: both fit, greedy wins.
        let (d, a) = full_device(2);
        assert!(fits(&d, &a, 1, Stream::DATA, |v| costly.tp_pages_bound(v)));
        assert_eq!(victim(&d, &a, &costly, 1), Some((1, false)));
        // No line free: nothing fits.
        let (d, a) = full_device(0);
        assert_eq!(victim(&d, &a, &costly, 1), None);
    }

    #[test]
    fn a_collection_counts_the_room_where_its_copies_go() {
        // A line of a third stream (μ-FTL's partitions) whose 12 valid pages collect_line
        // copies to the data stream, which has room; its own stream has no open line.
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let geo = cfg.geometry.clone();
        let pol = GcPolicy::from_params(&geo, &mut Params::new(), 2).unwrap();
        let (mut d, mut a) = (Device::new(&cfg), Allocator::new(&geo, 3, pol));
        let part = Stream(2);
        let mut write = |stream, lpn| {
            let p = a.next_page(stream).unwrap();
            d.program(
                p,
                Oob::data(Lpn(lpn), 1),
                Src::None,
                Cause::User,
                SimTime(0),
            )
            .unwrap();
            p
        };
        let pages: Vec<Ppa> = (0..geo.pages_per_line()).map(|i| write(part, i)).collect();
        write(Stream::DATA, 9999);
        a.close_full(part);
        for p in &pages[12..] {
            d.invalidate(*p).unwrap();
        }
        let line = geo.line_of(pages[0]);
        assert_eq!(a.room(part), 0);
        assert_eq!(lines_opened(&d, &a, line, Stream::DATA, |_| 0), Some(0));
        assert_eq!(lines_opened(&d, &a, line, part, |_| 0), Some(1));
    }

    #[test]
    fn room_is_made_for_every_page_a_write_takes() {
        // A translation line open with one page left, free lines down to the reserve (its
        // pages rewritten at once, as TPs are): one page needs no collection; two would take a
        // reserve line, so GC runs first.
        let mut hooks = Hooks { tp_per_page: false };
        let geo = DeviceConfig::preset("tiny").unwrap().geometry;
        let fg = GcPolicy::from_params(&geo, &mut Params::new(), 2)
            .unwrap()
            .fg_free_lines;
        let (mut d, mut a) = full_device(fg + 1);
        while a.free_lines() > fg || a.room(Stream::TRANS) != 1 {
            let p = a.next_page(Stream::TRANS).unwrap();
            d.program(p, Oob::tp(Tpn(0)), Src::None, Cause::User, SimTime(0))
                .unwrap();
            d.invalidate(p).unwrap();
        }
        let (mut d2, mut a2) = (d.clone(), a.clone());
        let mut stats = FtlStats::default();
        make_room(
            &mut d,
            &mut a,
            Stream::TRANS,
            1,
            SimTime(0),
            &mut hooks,
            &mut stats,
        )
        .unwrap();
        assert_eq!((stats.gc_events, a.free_lines()), (0, fg));
        make_room(
            &mut d2,
            &mut a2,
            Stream::TRANS,
            2,
            SimTime(0),
            &mut hooks,
            &mut stats,
        )
        .unwrap();
        assert!(stats.gc_events > 0);
    }
}
