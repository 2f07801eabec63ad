//! The controller's tests: each part of the write buffer does what docs/device.md says, seen
//! through the engine (the oracle checks every read) or the FTL interface.

use super::*;
use crate::config::DeviceConfig;
use crate::device::Cause;
use crate::engine::{SimOptions, Simulator};
use crate::params::Params;
use crate::workload::HostIo;

const PAGE: u64 = 4096;

fn cfg(sets: &[&str]) -> DeviceConfig {
    let mut p = Params::from_assignments(sets.iter().copied(), "test").unwrap();
    let c = DeviceConfig::from_params("tiny", &mut p).unwrap();
    p.finish().unwrap();
    c
}

fn sim(ftl: &str, sets: &[&str]) -> Simulator {
    let mut s = Simulator::new(&cfg(sets), ftl, Params::new(), SimOptions::checked()).unwrap();
    s.begin_phase("t");
    s
}

fn io(t: u64, op: Op, page: u64, pages: u64) -> HostIo {
    HostIo {
        placement: 0,
        arrival: SimTime(t),
        op,
        offset: page * PAGE,
        len: pages * PAGE,
    }
}

fn programs(s: &Simulator) -> u64 {
    s.device().counters().total_programs()
}

fn counters(s: &Simulator) -> ControllerCounters {
    s.ftl().controller().expect("a controller")
}

#[test]
fn off_by_default_and_on_when_a_part_is_set() {
    let s = sim("ideal", &[]);
    assert!(s.ftl().controller().is_none());
    assert!(s.live_metrics().controller.is_none());
    let s = sim("ideal", &["cmd_overhead_ns=1000"]);
    assert_eq!(counters(&s), ControllerCounters::default());
}

#[test]
fn a_buffered_write_completes_without_a_program() {
    // Without a buffer, a one-page write waits for its program (200 µs).
    let mut s = sim("ideal", &[]);
    assert_eq!(s.submit(io(0, Op::Write, 3, 1)).unwrap(), SimTime(200_000));
    // With one, it completes once buffered: the command's cost alone.
    for ftl in crate::ftl::FTLS {
        let mut s = sim(ftl, &["write_buffer=64KiB", "write_buffer_drain=full"]);
        s.set_check_invariants(true);
        let done = s.submit(io(10, Op::Write, 3, 2)).unwrap();
        assert_eq!(done, SimTime(10), "{ftl}");
        assert_eq!(programs(&s), 0, "{ftl}");
        let mut s = sim(ftl, &["write_buffer=64KiB", "cmd_overhead_ns=2500"]);
        assert_eq!(
            s.submit(io(10, Op::Write, 3, 2)).unwrap(),
            SimTime(2_510),
            "{ftl}"
        );
    }
}

#[test]
fn reads_of_buffered_pages_need_no_flash_read() {
    let mut s = sim("dftl", &["write_buffer=64KiB", "write_buffer_drain=full"]);
    s.submit(io(0, Op::Write, 8, 2)).unwrap();
    // Pages 7..11: 8 and 9 from the buffer, 7 and 10 unmapped.
    let done = s.submit(io(5, Op::Read, 7, 4)).unwrap();
    assert_eq!(done, SimTime(5));
    let m = s.live_metrics();
    assert_eq!(m.verify.checked, 4);
    assert_eq!(m.lookups.none, 4);
    assert_eq!(counters(&s).buffer_read_hits, 2);
    assert_eq!(s.device().counters().total_reads(), 0);
}

#[test]
fn a_write_that_finds_the_buffer_full_waits_for_a_program() {
    // 4 pages of room: the fifth page drains the oldest write and waits for its program.
    let mut s = sim("ideal", &["write_buffer=16KiB", "write_buffer_drain=full"]);
    assert_eq!(s.submit(io(0, Op::Write, 0, 2)).unwrap(), SimTime(0));
    assert_eq!(s.submit(io(0, Op::Write, 10, 2)).unwrap(), SimTime(0));
    let done = s.submit(io(1_000, Op::Write, 20, 1)).unwrap();
    // The two drained pages are programmed on two LUNs at once.
    assert_eq!(done, SimTime(201_000));
    let c = counters(&s);
    assert_eq!((c.stalls, c.stall_ns, c.drained_pages), (1, 200_000, 2));
    assert_eq!(programs(&s), 2);
    // Rewriting a buffered page takes no room: it replaces the version in place.
    assert_eq!(
        s.submit(io(2_000, Op::Write, 10, 1)).unwrap(),
        SimTime(2_000)
    );
    assert_eq!(counters(&s).buffer_absorbed, 1);
    // A write larger than the buffer goes straight to the FTL.
    let done = s.submit(io(3_000, Op::Write, 40, 8)).unwrap();
    assert!(done >= SimTime(203_000), "{done:?}");
    assert_eq!(counters(&s).bypassed_pages, 8);
}

#[test]
fn the_watermark_drains_down_to_the_mark() {
    let mut s = sim(
        "ideal",
        &["write_buffer=32KiB", "write_buffer_watermark=0.5"],
    );
    s.submit(io(0, Op::Write, 0, 3)).unwrap();
    s.submit(io(0, Op::Write, 3, 3)).unwrap();
    // 6 of 8 pages: above the mark of 4, the first write (3 pages) drained.
    assert_eq!(counters(&s).drained_pages, 3);
    assert_eq!(programs(&s), 3);
}

#[test]
fn idle_drain_waits_for_idle_luns() {
    let mut s = sim("ideal", &["write_buffer=64KiB", "write_buffer_drain=idle"]);
    // The device is idle at the first write: it drains at once.
    s.submit(io(0, Op::Write, 0, 1)).unwrap();
    assert_eq!(programs(&s), 1);
    // Busy programming: the next write stays buffered.
    s.submit(io(1_000, Op::Write, 1, 1)).unwrap();
    assert_eq!(programs(&s), 1);
    s.submit(io(500_000, Op::Write, 2, 1)).unwrap();
    assert_eq!(programs(&s), 3);
}

#[test]
fn flush_makes_every_buffered_write_durable() {
    let mut s = sim(
        "learnedftl",
        &["write_buffer=64KiB", "write_buffer_drain=full"],
    );
    s.submit(io(0, Op::Write, 0, 4)).unwrap();
    s.submit(io(0, Op::Write, 2, 1)).unwrap();
    let done = s.submit(io(100, Op::Flush, 0, 0)).unwrap();
    assert!(done >= SimTime(200_100), "{done:?}");
    assert_eq!(programs(&s), 4, "the absorbed version was never programmed");
    let mut out = Vec::new();
    s.ftl().unflushed(s.device(), &mut out);
    assert!(out.is_empty());
    assert_eq!(counters(&s).flushes, 1);
}

#[test]
fn a_trim_drops_buffered_versions() {
    let mut s = sim("tpftl", &["write_buffer=64KiB", "write_buffer_drain=full"]);
    s.submit(io(0, Op::Write, 0, 4)).unwrap();
    s.submit(io(10, Op::Trim, 1, 2)).unwrap();
    s.submit(io(20, Op::Read, 0, 4)).unwrap();
    assert_eq!(counters(&s).buffer_read_hits, 2);
    s.submit(io(30, Op::Flush, 0, 0)).unwrap();
    assert_eq!(s.device().counters().programs[Cause::User as usize], 2);
}

#[test]
fn unflushed_writes_fall_back_to_their_durable_version() {
    let mut s = sim("ideal", &["write_buffer=64KiB", "write_buffer_drain=full"]);
    s.submit(io(0, Op::Write, 5, 1)).unwrap(); // stamp 1
    s.submit(io(0, Op::Flush, 0, 0)).unwrap();
    s.submit(io(1, Op::Write, 5, 1)).unwrap(); // stamp 2
    s.submit(io(1, Op::Write, 6, 1)).unwrap(); // stamp 3
    let mut out = Vec::new();
    s.ftl().unflushed(s.device(), &mut out);
    out.sort_by_key(|u| u.lpn.0);
    let got: Vec<_> = out.iter().map(|u| (u.lpn.0, u.durable, u.acked)).collect();
    assert_eq!(got, [(5, 1, 2), (6, 0, 3)]);
}

/// LeaFTL keeps a buffer of its own: an LPN in both is listed once, falling back to what
/// LeaFTL had durable.
#[test]
fn an_ftl_buffer_beneath_is_merged() {
    let mut s = sim("leaftl", &["write_buffer=8KiB", "write_buffer_drain=full"]);
    s.submit(io(0, Op::Write, 5, 1)).unwrap(); // stamp 1, in the controller
    s.submit(io(0, Op::Write, 6, 2)).unwrap(); // stamp 2: drains stamp 1 into LeaFTL's buffer
    s.submit(io(0, Op::Write, 5, 1)).unwrap(); // stamp 3: drains stamp 2
    let mut out = Vec::new();
    s.ftl().unflushed(s.device(), &mut out);
    out.sort_by_key(|u| u.lpn.0);
    let got: Vec<_> = out.iter().map(|u| (u.lpn.0, u.durable, u.acked)).collect();
    assert_eq!(got, [(5, 0, 3), (6, 0, 2), (7, 0, 2)]);
}

/// The cache contracts (SPEC §12) through the engine's power cuts: without protection,
/// unflushed writes may be lost and flushed ones never; with it, nothing acknowledged is.
#[test]
fn power_cuts_keep_each_contract() {
    for (plp, lost) in [("off", true), ("on", false)] {
        for ftl in crate::ftl::FTLS {
            let plp = format!("power_loss_protection={plp}");
            let mut s = sim(
                ftl,
                &["write_buffer=64KiB", "write_buffer_drain=full", &plp],
            );
            s.submit(io(0, Op::Write, 0, 4)).unwrap();
            s.submit(io(1, Op::Flush, 0, 0)).unwrap();
            s.submit(io(2, Op::Write, 2, 4)).unwrap();
            let t = s.clock();
            s.cut_power_now(t).unwrap();
            let m = s.live_metrics();
            assert_eq!(m.verify.failures, 0, "{ftl} {plp}");
            let cut = m.power_cuts.unwrap();
            assert_eq!(cut.lost_unflushed_pages > 0, lost, "{ftl} {plp}");
            let o = s.oracle().unwrap();
            // The flushed pages 0 and 1 survive either way.
            assert_eq!(
                (o.expected(Lpn(0)), o.expected(Lpn(1))),
                (1, 1),
                "{ftl} {plp}"
            );
            let want = if lost { 1 } else { 2 };
            assert_eq!(o.expected(Lpn(2)), want, "{ftl} {plp}");
        }
    }
}

/// Misbehaving drives (docs/power.md): `flush=ignore` acknowledges a FLUSH at once and a cut
/// then loses flushed writes, counted apart; the engine's check accepts the loss only there.
#[test]
fn an_ignored_flush_makes_nothing_durable() {
    for (mode, lost_flushed) in [("honor", 0), ("ignore", 4), ("reorder", 4)] {
        for ftl in ["ideal", "leaftl"] {
            let flush = format!("flush={mode}");
            let mut s = sim(
                ftl,
                &["write_buffer=64KiB", "write_buffer_drain=full", &flush],
            );
            s.submit(io(0, Op::Write, 0, 4)).unwrap();
            let done = s.submit(io(100, Op::Flush, 0, 0)).unwrap();
            assert_eq!(
                done > SimTime(100),
                mode == "honor",
                "{ftl} {mode}: {done:?}"
            );
            s.submit(io(200, Op::Write, 8, 2)).unwrap();
            let t = s.clock();
            s.cut_power_now(t).unwrap();
            let m = s.live_metrics();
            let cut = m.power_cuts.unwrap();
            assert_eq!(cut.lost_flushed_pages, lost_flushed, "{ftl} {mode}");
            assert_eq!(cut.lost_unflushed_pages, lost_flushed + 2, "{ftl} {mode}");
            assert_eq!(m.verify.failures, 0, "{ftl} {mode}");
        }
    }
    // Without a write buffer, an ignored FLUSH leaves LeaFTL's own buffer volatile.
    let mut s = sim("leaftl", &["flush=ignore"]);
    s.submit(io(0, Op::Write, 0, 4)).unwrap();
    s.submit(io(100, Op::Flush, 0, 0)).unwrap();
    let mut out = Vec::new();
    s.ftl().unflushed(s.device(), &mut out);
    assert_eq!(out.len(), 4);
}

/// `flush=reorder` drains the newest buffered pages first: after a cut, a write issued after
/// a FLUSH may be durable while one before it is lost (what journaling file systems fear).
#[test]
fn reorder_makes_a_later_write_durable_before_an_earlier_one() {
    let mut s = sim(
        "ideal",
        &[
            "write_buffer=16KiB",
            "write_buffer_drain=full",
            "flush=reorder",
        ],
    );
    s.submit(io(0, Op::Write, 0, 2)).unwrap(); // stamp 1: the "journal data"
    s.submit(io(1, Op::Flush, 0, 0)).unwrap();
    s.submit(io(2, Op::Write, 9, 2)).unwrap(); // stamp 2: the "commit"
                                               // A third write needs room: the newest run (the commit) goes to the FTL first.
    s.submit(io(3, Op::Write, 20, 1)).unwrap();
    let mut out = Vec::new();
    s.ftl().unflushed(s.device(), &mut out);
    out.sort_by_key(|u| u.lpn.0);
    let lpns: Vec<u32> = out.iter().map(|u| u.lpn.0).collect();
    assert_eq!(
        lpns,
        [0, 1, 20],
        "the commit (9, 10) is durable, the data before it is not"
    );
}

/// `write_buffer_max_age_ns` bounds what a cut can lose: the first request arriving that long
/// after a page's acknowledgement hands it to the FTL.
#[test]
fn max_age_bounds_how_long_a_page_stays_volatile() {
    let mut s = sim(
        "ideal",
        &[
            "write_buffer=64KiB",
            "write_buffer_drain=full",
            "flush=ignore",
            "write_buffer_max_age_ns=1000000",
        ],
    );
    s.submit(io(0, Op::Write, 0, 4)).unwrap();
    s.submit(io(500_000, Op::Write, 8, 1)).unwrap();
    s.submit(io(999_999, Op::Read, 30, 1)).unwrap();
    assert_eq!(counters(&s).drained_pages, 0);
    s.submit(io(1_000_000, Op::Read, 30, 1)).unwrap();
    assert_eq!(
        counters(&s).drained_pages,
        4,
        "the first write aged out, not the second"
    );
    let mut out = Vec::new();
    s.ftl().unflushed(s.device(), &mut out);
    assert_eq!(out.len(), 1);
}

#[test]
fn bad_settings_are_refused_naming_the_key() {
    for (set, key) in [
        ("write_buffer=lots", "write_buffer"),
        ("write_buffer=100", "write_buffer"),
        ("write_buffer_drain=never", "write_buffer_drain"),
        ("write_buffer_watermark=1.5", "write_buffer_watermark"),
        ("cmd_overhead_ns=-3", "cmd_overhead_ns"),
        ("flush=sometimes", "flush"),
        ("write_buffer_max_age_ns=soon", "write_buffer_max_age_ns"),
    ] {
        let mut p = Params::from_assignments(["write_buffer=1MiB", set], "test").unwrap();
        let e = DeviceConfig::from_params("tiny", &mut p)
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{set}: {e}");
    }
    // Sizes take binary units, as fio's do.
    assert_eq!(cfg(&["write_buffer=2MiB"]).controller.write_buffer, 2 << 20);
}

/// A page handed to the FTL stays in the buffer until its program completes: a read of it
/// meanwhile is served from there, without waiting for the program or reading flash.
#[test]
fn a_page_being_programmed_is_read_from_the_buffer() {
    let mut s = sim("ideal", &["write_buffer=64KiB", "write_buffer_drain=full"]);
    s.submit(io(0, Op::Write, 4, 1)).unwrap();
    let flushed = s.submit(io(10, Op::Flush, 0, 0)).unwrap();
    assert_eq!(flushed, SimTime(200_010));
    assert_eq!(s.submit(io(20, Op::Read, 4, 1)).unwrap(), SimTime(20));
    assert_eq!(s.device().in_flight_reads(), 1);
    assert_eq!(s.device().counters().total_reads(), 0);
    let m = s.live_metrics();
    assert_eq!(m.flash.reads_in_flight, Some(1));
    assert_eq!(m.verify.failures, 0);
    // Once programmed, from flash.
    assert_eq!(
        s.submit(io(300_000, Op::Read, 4, 1)).unwrap(),
        SimTime(340_000)
    );
}

/// `host_mb_s`: every request's data crosses the host link, one transfer at a time; a buffered
/// write completes in its transfer time.
#[test]
fn a_buffered_write_completes_in_its_transfer_time() {
    // 1,000 MB/s: a 4 KiB page crosses in 4,096 ns.
    let mut s = sim(
        "ideal",
        &[
            "write_buffer=64KiB",
            "write_buffer_drain=full",
            "host_mb_s=1000",
        ],
    );
    assert_eq!(s.submit(io(0, Op::Write, 1, 1)).unwrap(), SimTime(4_096));
    assert_eq!(s.submit(io(0, Op::Write, 2, 2)).unwrap(), SimTime(12_288));
    assert_eq!(
        s.submit(io(100_000, Op::Read, 1, 1)).unwrap(),
        SimTime(104_096)
    );
    // Without a buffer the program dominates; a read's data crosses once it is read.
    let mut s = sim("ideal", &["host_mb_s=1000"]);
    assert_eq!(s.submit(io(0, Op::Write, 1, 1)).unwrap(), SimTime(200_000));
    assert_eq!(
        s.submit(io(300_000, Op::Read, 1, 1)).unwrap(),
        SimTime(344_096)
    );
    // Two reads completing out of order share the link without the later one holding back
    // the earlier (gap filling): a read of an unmapped page needs no flash and crosses at once.
    assert_eq!(
        s.submit(io(400_000, Op::Read, 1, 1)).unwrap(),
        SimTime(444_096)
    );
    assert_eq!(
        s.submit(io(400_000, Op::Read, 50, 1)).unwrap(),
        SimTime(404_096)
    );
}

/// With protection, a write larger than the buffer (it goes around it) or a trim that a cut
/// strikes in may leave its new version (a trim: its record) on flash for a page whose older,
/// acknowledged version the buffer dumped. Recovery must not write the dumped version back
/// over it: that version would read back now, and the newer one, never acknowledged, again
/// after the next cut (recovery's scan orders versions by stamp): a page changing with no
/// write in between. Found by `check` (`--set power_loss_protection=on --set
/// write_buffer=256KiB`: LearnedFTL and μ-FTL, a write around the buffer).
#[test]
fn a_dumped_version_is_not_restored_over_a_newer_one_the_cut_left() {
    // Where the cut strikes inside the request, after its first programs: a write around the
    // buffer programs on every FTL but LeaFTL (its own buffer takes it); a trim programs its
    // record and then, on these, more work (FAST: a record per unit it spans).
    let writes = crate::ftl::FTLS.iter().filter(|&&f| f != "leaftl");
    let cases = writes
        .map(|&f| (f, Op::Write, 8, 2))
        .chain(["dftl", "learnedftl", "fast"].map(|f| (f, Op::Trim, 1024, 1)));
    for (ftl, op, pages, after) in cases {
        let mut s = sim(
            ftl,
            &[
                "write_buffer=16KiB",
                "write_buffer_drain=full",
                "power_loss_protection=on",
            ],
        );
        s.submit(io(0, Op::Write, 0, 2)).unwrap(); // stamp 1, buffered
        s.arm_power_cut(crate::device::PowerCut::AfterOps(after))
            .unwrap();
        s.submit(io(1, op, 0, pages)).unwrap(); // stamp 2
        assert_eq!(s.recoveries(), 1, "{ftl} {op:?}: the cut struck in it");
        let stamps = |s: &Simulator| -> Vec<u32> {
            (0..2)
                .map(|l| s.oracle().unwrap().expected(Lpn(l)))
                .collect()
        };
        // Pages 0 and 1 keep the request's version (it reached flash before the cut).
        let kept = if op == Op::Write { 2 } else { 0 };
        assert_eq!(stamps(&s), [kept; 2], "{ftl} {op:?}");
        // Without the fix the engine's check after this cut fails (fail-fast: an error).
        let t = s.clock();
        s.cut_power_now(t).unwrap();
        assert_eq!(stamps(&s), [kept; 2], "{ftl} {op:?}");
        assert_eq!(s.live_metrics().verify.failures, 0, "{ftl} {op:?}");
    }
}
