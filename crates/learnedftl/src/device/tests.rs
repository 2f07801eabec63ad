//! The device's tests: misuse, power cuts, LUN and channel timing, backfill, counters and energy.

use super::*;
use crate::config::TimingMode;
use crate::params::Params;

fn tiny() -> Device {
    Device::new(&DeviceConfig::preset("tiny").unwrap())
}

#[test]
fn misuse_fails_loudly() {
    let mut d = tiny();
    let g = d.geo().clone();
    let p0 = Ppa(0);
    assert_eq!(
        d.read(p0, Cause::User, SimTime(0)),
        Err(DeviceError::ReadErased(p0))
    );
    assert!(matches!(
        d.program(
            Ppa(1),
            Oob::data(Lpn(1), 1),
            Src::Host,
            Cause::User,
            SimTime(0)
        ),
        Err(DeviceError::OutOfOrderProgram {
            expected: 0,
            got: 1,
            ..
        })
    ));
    d.program(p0, Oob::data(Lpn(7), 3), Src::Host, Cause::User, SimTime(0))
        .unwrap();
    assert_eq!(
        d.erase(0, Cause::GcData, SimTime(0)),
        Err(DeviceError::EraseValid { block: 0, valid: 1 })
    );
    d.invalidate(p0).unwrap();
    assert_eq!(d.invalidate(p0), Err(DeviceError::InvalidateInvalid(p0)));
    // Stale data can still be read until the block is erased.
    assert_eq!(
        d.read(p0, Cause::User, SimTime(0)).unwrap().0,
        Oob::data(Lpn(7), 3)
    );
    d.erase(0, Cause::GcData, SimTime(0)).unwrap();
    assert!(!d.is_programmed(p0));
    assert!(d
        .read(Ppa(g.pages() as u32), Cause::User, SimTime(0))
        .is_err());
    d.check_consistency().unwrap();
}

#[test]
fn a_power_cut_tears_the_operation_in_flight_and_power_on_forgets_validity() {
    let mut d = tiny();
    let ppb = d.geo().pages_per_block;
    let t = SimTime(0);
    for pg in 0..3 {
        d.program(
            Ppa(pg),
            Oob::data(Lpn(pg), pg + 1),
            Src::Host,
            Cause::User,
            t,
        )
        .unwrap();
    }
    let rec = TrimRecord {
        first: Lpn(0),
        pages: 2,
    };
    d.program_record(Ppa(3), 9, rec, Cause::TrimRecord, t)
        .unwrap();
    assert_eq!(d.record(Ppa(3)), Some(rec));
    assert_eq!(d.valid_records(), 1);
    // Block 1: one page, invalidated, so that its erase can be in flight.
    d.program(Ppa(ppb), Oob::data(Lpn(7), 5), Src::Host, Cause::User, t)
        .unwrap();
    d.invalidate(Ppa(ppb)).unwrap();
    // The second program of cause user from now is in flight: the first completes.
    d.arm_power_cut(PowerCut::AtCause {
        cause: Cause::User,
        nth: 2,
    });
    d.program(Ppa(4), Oob::data(Lpn(4), 10), Src::Host, Cause::User, t)
        .unwrap();
    assert!(d.power_cut_armed());
    let torn = d.program(Ppa(5), Oob::data(Lpn(5), 11), Src::Host, Cause::User, t);
    assert_eq!(torn, Err(DeviceError::PowerLost));
    assert!(d.power_lost());
    assert_eq!(d.block_written(0), 6, "the torn page is consumed");
    assert!(d.peek_oob(Ppa(5)).unwrap().is_torn() && !d.is_valid(Ppa(5)));
    // Everything fails until power-on.
    assert_eq!(d.read(Ppa(0), Cause::User, t), Err(DeviceError::PowerLost));
    assert_eq!(d.invalidate(Ppa(0)), Err(DeviceError::PowerLost));
    assert_eq!(d.erase(1, Cause::GcData, t), Err(DeviceError::PowerLost));
    d.power_on();
    assert_eq!(d.lines_valid().iter().sum::<u32>(), 0);
    assert_eq!(d.peek_oob(Ppa(4)), Some(Oob::data(Lpn(4), 10)));
    assert_eq!(d.record(Ppa(3)), Some(rec), "records are flash contents");
    d.revalidate(Ppa(4)).unwrap();
    assert_eq!(d.revalidate(Ppa(4)), Err(DeviceError::Revalidate(Ppa(4))));
    assert_eq!(d.revalidate(Ppa(5)), Err(DeviceError::Revalidate(Ppa(5))));
    assert_eq!(d.revalidate(Ppa(6)), Err(DeviceError::ReadErased(Ppa(6))));
    d.check_consistency().unwrap();
    // An erase in flight tears its whole block until it is erased again.
    d.arm_power_cut(PowerCut::AfterOps(0));
    assert_eq!(d.erase(1, Cause::GcData, t), Err(DeviceError::PowerLost));
    d.power_on();
    assert_eq!(d.block_written(1), ppb);
    assert!((0..ppb).all(|pg| d.peek_oob(Ppa(ppb + pg)).unwrap().is_torn()));
    d.erase(1, Cause::GcData, t).unwrap();
    assert_eq!(d.block_written(1), 0);
    // Erasing block 0 forgets its record's contents.
    d.erase(0, Cause::GcData, t).unwrap();
    assert_eq!(d.record(Ppa(3)), None);
}

#[test]
fn one_lun_serialises() {
    let mut d = tiny();
    // Pages 0 and 1 of block 0 are on the same LUN.
    let a = d
        .program(
            Ppa(0),
            Oob::data(Lpn(0), 1),
            Src::Host,
            Cause::User,
            SimTime(0),
        )
        .unwrap();
    let b = d
        .program(
            Ppa(1),
            Oob::data(Lpn(1), 1),
            Src::Host,
            Cause::User,
            SimTime(0),
        )
        .unwrap();
    assert_eq!(a, SimTime(200_000));
    assert_eq!(b, SimTime(400_000));
    let (_, r) = d.read(Ppa(0), Cause::User, SimTime(100_000)).unwrap();
    assert_eq!(r, SimTime(440_000));
    // Issued after the LUN is idle: no waiting.
    let (_, r) = d.read(Ppa(1), Cause::User, SimTime(1_000_000)).unwrap();
    assert_eq!(r, SimTime(1_040_000));
    let e = d.erase(1, Cause::GcData, SimTime(0)).unwrap();
    assert_eq!(e, SimTime(1_040_000 + 2_000_000));
}

#[test]
fn luns_run_in_parallel() {
    let mut d = tiny();
    let g = d.geo().clone();
    let mut done = Vec::new();
    for v in 0..g.luns() {
        let ppa = g.vppn_to_ppa(crate::addr::Vppn(v));
        done.push(
            d.program(
                ppa,
                Oob::data(Lpn(v), 1),
                Src::Host,
                Cause::User,
                SimTime(0),
            )
            .unwrap(),
        );
    }
    assert!(done.iter().all(|&t| t == SimTime(200_000)), "{done:?}");
    // The next stripe goes to the same LUNs again and waits.
    let ppa = g.vppn_to_ppa(crate::addr::Vppn(g.luns()));
    let t = d
        .program(
            ppa,
            Oob::data(Lpn(99), 1),
            Src::Host,
            Cause::User,
            SimTime(0),
        )
        .unwrap();
    assert_eq!(t, SimTime(400_000));
}

#[test]
fn channel_transfer_mode_serialises_a_channel() {
    let mut p = Params::new();
    p.insert_assignment("channel_transfer=on", "t").unwrap();
    p.insert_assignment("timing=femu", "t").unwrap();
    p.insert_assignment("channel_mb_s=400", "t").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
    let mut d = Device::new(&cfg);
    let g = d.geo().clone();
    // 4096 B at 400 MB/s = 10,240 ns.
    assert_eq!(cfg.timing.transfer_ns(4096), 10_240);
    // Two LUNs of channel 0: transfers serialise, programs overlap.
    let a = g.ppa_from_parts(crate::addr::PpaParts {
        ch: 0,
        lun: 0,
        ..Default::default()
    });
    let b = g.ppa_from_parts(crate::addr::PpaParts {
        ch: 0,
        lun: 1,
        ..Default::default()
    });
    let ta = d
        .program(a, Oob::data(Lpn(0), 1), Src::Host, Cause::User, SimTime(0))
        .unwrap();
    let tb = d
        .program(b, Oob::data(Lpn(1), 1), Src::Host, Cause::User, SimTime(0))
        .unwrap();
    assert_eq!(ta, SimTime(10_240 + 200_000));
    assert_eq!(tb, SimTime(2 * 10_240 + 200_000));
    let (_, r) = d.read(a, Cause::User, SimTime(1_000_000)).unwrap();
    assert_eq!(r, SimTime(1_000_000 + 40_000 + 10_240));
}

fn with(kv: &[&str]) -> Result<DeviceConfig, crate::error::ConfigError> {
    let mut p = Params::from_assignments(kv.iter().copied(), "t").unwrap();
    DeviceConfig::from_params("tiny", &mut p)
}

#[test]
fn timing_keys_are_checked() {
    assert_eq!(with(&[]).unwrap().timing.mode, TimingMode::Backfill);
    assert_eq!(
        with(&["timing=femu"]).unwrap().timing.mode,
        TimingMode::Femu
    );
    let c = with(&["backfill_gaps=7"]).unwrap();
    assert_eq!(
        (c.timing.mode, c.timing.backfill_gaps),
        (TimingMode::Backfill, 7)
    );
    assert!(with(&["timing=lazy"])
        .unwrap_err()
        .to_string()
        .contains("expected femu or backfill"));
    assert!(with(&["timing=femu", "backfill_gaps=7"])
        .unwrap_err()
        .to_string()
        .contains("timing=backfill"));
    // The channel model under either timing.
    for kv in [
        &["channel_transfer=on"][..],
        &["timing=backfill", "channel_transfer=on"],
        &["timing=femu", "channel_transfer=on"],
    ] {
        assert!(with(kv).is_ok(), "{kv:?}");
    }
}

/// `channel_transfer=on` under `timing=backfill`: a read's transfer follows its array read on
/// the channel, a program's precedes its array program, and the channel keeps idle gaps, so a
/// transfer booked later may go first.
#[test]
fn channels_fill_their_gaps_under_backfill() {
    // 800 MB/s: a 4 KiB page crosses in 5,120 ns. LUNs 0 and 1 share channel 0 on tiny.
    let mut d = Device::new(&with(&["channel_transfer=on"]).unwrap());
    let ppl = d.geo().planes_per_lun * d.geo().blocks_per_plane * d.geo().pages_per_block;
    let (a, b) = (Ppa(0), Ppa(ppl));
    assert_eq!(d.math().channel_of_lun(d.math().lun_of(b)), 0);
    let p = |d: &mut Device, ppa: Ppa, t| {
        d.program(
            ppa,
            Oob::data(Lpn(ppa.0), 1),
            Src::None,
            Cause::User,
            SimTime(t),
        )
        .unwrap()
    };
    assert_eq!(p(&mut d, a, 0), SimTime(5_120 + 200_000));
    // The second program's data waits for the channel, not for the first program.
    assert_eq!(p(&mut d, b, 0), SimTime(10_240 + 200_000));
    // Reads of both at once: array reads in parallel, transfers one after the other.
    let r1 = d.read(a, Cause::User, SimTime(300_000)).unwrap().1;
    let r2 = d.read(b, Cause::User, SimTime(300_000)).unwrap().1;
    assert_eq!((r1, r2), (SimTime(345_120), SimTime(350_240)));
}

/// Block 0 page 0 programmed at 0, block 1 page 0 programmed late at 1 ms (as a dependent
/// operation would be), then block 0 page 0 read at 300 µs: its completion.
fn read_after_a_late_program(kv: &[&str]) -> (SimTime, BackfillCounters) {
    let mut d = Device::new(&with(kv).unwrap());
    let ppb = d.geo().pages_per_block;
    assert_eq!(d.math().lun_of(Ppa(0)), d.math().lun_of(Ppa(ppb)));
    let oob = Oob::data(Lpn(0), 1);
    d.program(Ppa(0), oob, Src::Host, Cause::User, SimTime(0))
        .unwrap();
    let late = d
        .program(Ppa(ppb), oob, Src::Host, Cause::GcData, SimTime(1_000_000))
        .unwrap();
    assert_eq!(late, SimTime(1_200_000));
    let (_, r) = d.read(Ppa(0), Cause::User, SimTime(300_000)).unwrap();
    assert_eq!(d.drained_at(), SimTime(1_200_000.max(r.0)));
    (r, d.backfill_counters())
}

#[test]
fn backfill_uses_the_idle_time_femu_loses() {
    // FEMU: the read queues behind the late program although the LUN idles until 1 ms.
    assert_eq!(
        read_after_a_late_program(&["timing=femu"]),
        (SimTime(1_240_000), BackfillCounters::default())
    );
    let (r, c) = read_after_a_late_program(&[]);
    assert_eq!(r, SimTime(340_000));
    assert_eq!((c.ops_in_gaps, c.gaps_dropped), (1, 0));
    // No remembered gap: FEMU's times.
    let (r, _) = read_after_a_late_program(&["backfill_gaps=0"]);
    assert_eq!(r, SimTime(1_240_000));
}

#[test]
fn counters_and_energy_by_cause() {
    let mut d = tiny();
    d.program(
        Ppa(0),
        Oob::tp(Tpn(3)),
        Src::None,
        Cause::TransWrite,
        SimTime(0),
    )
    .unwrap();
    let (oob, _) = d.read(Ppa(0), Cause::TransRead, SimTime(0)).unwrap();
    assert_eq!(oob.tpn(), Some(Tpn(3)));
    assert_eq!(oob.lpn(), None);
    assert_eq!(d.counters().programs[Cause::TransWrite as usize], 1);
    assert_eq!(d.counters().reads[Cause::TransRead as usize], 1);
    let e = d.energy_uj();
    assert!((e[Cause::TransWrite as usize] - 16.7).abs() < 1e-9);
    assert!((e[Cause::TransRead as usize] - 3.5).abs() < 1e-9);
    d.reset_counters();
    assert_eq!(d.counters().page_ops(), 0);
}

/// The device's own state (the flash state and the gap-filling timelines) stays within what the
/// memory estimate counts for it per physical page and per block (docs/device.md "Memory").
#[test]
fn the_device_state_fits_its_memory_estimate() {
    let cfg = DeviceConfig::preset("quick").unwrap();
    let g = &cfg.geometry;
    let d = Device::new(&cfg);
    let estimate = cfg.state_bytes(false) - g.logical_pages * crate::config::FTL_BYTES_PER_LPN;
    let per_page = d.state_bytes() as f64 / g.pages() as f64;
    assert!(
        d.state_bytes() as u64 <= estimate,
        "{} B ({per_page:.2} B per page) over the estimate's {estimate} B",
        d.state_bytes()
    );
    assert!(per_page < 9.0, "{per_page:.2} B per page");
}

/// `cell=tlc`: pages cycle through lower, center and upper page types by their position in the
/// block, each read and programmed at its own latency (FEMU's table unless given).
#[test]
fn page_types_follow_the_position_in_the_block() {
    let mut p = crate::params::Params::from_assignments(
        ["cell=tlc", "timing=femu", "program_ns_pages=100,200,300"],
        "test",
    )
    .unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
    assert_eq!(cfg.timing.read_ns_pages, [56_500, 77_500, 106_000]);
    let mut d = Device::new(&cfg);
    let ppb = cfg.geometry.pages_per_block;
    let mut t = 0;
    for pg in 0..6 {
        let ppa = Ppa(5 * ppb + pg);
        let done = d
            .program(
                ppa,
                Oob::data(Lpn(pg), 1),
                Src::None,
                Cause::User,
                SimTime(t),
            )
            .unwrap();
        assert_eq!(
            done.0 - t,
            [100, 200, 300][pg as usize % 3],
            "program of page {pg}"
        );
        t = done.0;
        let (_, r) = d.read(ppa, Cause::User, SimTime(t)).unwrap();
        assert_eq!(
            r.0 - t,
            [56_500, 77_500, 106_000][pg as usize % 3],
            "read of page {pg}"
        );
        t = r.0;
    }
    // A list per page type, no more and no fewer; none with SLC.
    for bad in [
        &["cell=tlc", "read_ns_pages=1,2"][..],
        &["cell=mlc", "read_ns_pages=1,2,x"],
        &["read_ns_pages=1"],
        &["cell=plc"],
    ] {
        let mut p = crate::params::Params::from_assignments(bad.iter().copied(), "t").unwrap();
        let e = DeviceConfig::from_params("tiny", &mut p)
            .unwrap_err()
            .to_string();
        let key = bad.last().unwrap().split('=').next().unwrap();
        assert!(e.contains(key), "{bad:?}: {e}");
    }
}

fn device_with(sets: &[&str]) -> Device {
    let mut p = Params::from_assignments(sets.iter().copied(), "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
    p.finish().unwrap();
    Device::new(&cfg)
}

/// `suspend=on`: a host read that finds its LUN programming suspends the program and goes
/// through in about a read's time; GC's reads wait; the LUN's later work pays for it.
#[test]
fn a_suspended_program_lets_a_read_through() {
    for timing in ["timing=femu", "timing=backfill"] {
        let sets = [
            timing,
            "suspend=on",
            "suspend_program_ns=5000",
            "resume_ns=1000",
        ];
        let mut d = device_with(&sets);
        let mut off = device_with(&[timing]);
        let ppb = d.geo().pages_per_block;
        // Block 0 and block 8 share LUN 0 on tiny (8 LUNs): page 0 of block 0 is there to read.
        let (a, b) = (Ppa(0), Ppa(8 * ppb));
        assert_eq!(d.math().lun_of(a), d.math().lun_of(b));
        for dev in [&mut d, &mut off] {
            dev.program(a, Oob::data(Lpn(1), 1), Src::None, Cause::User, SimTime(0))
                .unwrap();
            // A program booked at 300 µs, busy until 500 µs.
            let p = dev
                .program(
                    b,
                    Oob::data(Lpn(2), 2),
                    Src::None,
                    Cause::User,
                    SimTime(300_000),
                )
                .unwrap();
            assert_eq!(p, SimTime(500_000), "{timing}");
        }
        let at = SimTime(310_000);
        let (_, r) = off.read(a, Cause::User, at).unwrap();
        assert_eq!(r, SimTime(540_000), "{timing}: waits for the program");
        let (_, r) = d.read(a, Cause::User, at).unwrap();
        assert_eq!(
            r,
            SimTime(310_000 + 5_000 + 40_000),
            "{timing}: suspends it"
        );
        // A second read right behind it queues behind it without suspending again.
        let (_, r2) = d.read(a, Cause::TransRead, SimTime(312_000)).unwrap();
        assert_eq!(r2, SimTime(395_000), "{timing}");
        // GC's reads do not suspend.
        let (_, g) = d.read(a, Cause::GcData, SimTime(313_000)).unwrap();
        assert!(g.0 >= 500_000, "{timing}: {g:?}");
        let c = d.suspend_counters().unwrap();
        assert_eq!((c.programs, c.erases, c.reads), (1, 0, 2), "{timing}");
        // The LUN's tail moved by the suspension (5 + 40 + 1 µs) and the queued read (40 µs).
        let next = d
            .program(
                Ppa(8 * ppb + 1),
                Oob::data(Lpn(3), 3),
                Src::None,
                Cause::User,
                SimTime(320_000),
            )
            .unwrap();
        assert!(next.0 >= 500_000 + 86_000 + 200_000, "{timing}: {next:?}");
    }
}

/// The cap: after `suspend_max` suspensions of the pending work, reads wait.
#[test]
fn suspensions_are_capped() {
    let mut d = device_with(&[
        "timing=femu",
        "suspend=on",
        "suspend_program_ns=1000",
        "suspend_max=2",
    ]);
    let ppb = d.geo().pages_per_block;
    d.program(
        Ppa(0),
        Oob::data(Lpn(1), 1),
        Src::None,
        Cause::User,
        SimTime(0),
    )
    .unwrap();
    // Eight programs queued on LUN 0: 1.6 ms of work from 300 µs.
    for i in 0..8 {
        d.program(
            Ppa(8 * ppb + i),
            Oob::data(Lpn(2 + i), 2),
            Src::None,
            Cause::User,
            SimTime(300_000),
        )
        .unwrap();
    }
    // Three reads while the first program runs: two suspend it, the third waits for it (and
    // still goes before the seven queued after it).
    let mut ends = vec![];
    for t in [310_000, 360_000, 410_000] {
        ends.push(d.read(Ppa(0), Cause::User, SimTime(t)).unwrap().1 .0);
    }
    assert_eq!(ends, [351_000, 401_000, 540_000]);
    let c = d.suspend_counters().unwrap();
    assert_eq!((c.programs, c.refused), (2, 1));
}

/// `multi_plane=on`: programs of the same page of a line on the two planes of a LUN run as one,
/// so a sequential fill of a two-plane device takes half the time; independent plane reads
/// pair reads on different planes.
#[test]
fn two_plane_programs_halve_a_sequential_fill() {
    use crate::engine::{NoProgress, SimOptions, Simulator};
    use crate::workload::{JobSpec, RwKind};
    let fill = |sets: &[&str]| {
        let mut p = Params::from_assignments(sets.iter().copied(), "test").unwrap();
        let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
        let mut s = Simulator::new(&cfg, "ideal", Params::new(), SimOptions::checked()).unwrap();
        let mut w = JobSpec::new("fill", RwKind::Write);
        w.bs = 512 << 10;
        let m = s.run_jobs("fill", &[w], 1, &mut NoProgress).unwrap();
        (m.sim_seconds, m.flash.multi_plane)
    };
    let (one, none) = fill(&["planes_per_lun=2"]);
    let (two, joined) = fill(&["planes_per_lun=2", "multi_plane=on"]);
    assert_eq!(none, None);
    let joined = joined.unwrap();
    let ratio = two / one;
    assert!((0.45..0.55).contains(&ratio), "{two} s against {one} s");
    assert!(joined.programs > 0 && joined.reads == 0, "{joined:?}");

    let mut d = device_with(&[
        "planes_per_lun=2",
        "multi_plane=on",
        "independent_plane_reads=on",
        "timing=femu",
    ]);
    let b = d.geo().blocks_per_plane;
    // Block 0 and block `b` are the two planes of LUN 0.
    for blk in [0, b] {
        let ppa = Ppa(blk * d.geo().pages_per_block);
        d.program(
            ppa,
            Oob::data(Lpn(blk), 1),
            Src::None,
            Cause::User,
            SimTime(0),
        )
        .unwrap();
    }
    // Both programs ran as one: done at 200 µs.
    assert_eq!(d.drained_at(), SimTime(200_000));
    let ppb = d.geo().pages_per_block;
    let (_, r1) = d.read(Ppa(0), Cause::User, SimTime(300_000)).unwrap();
    let (_, r2) = d.read(Ppa(b * ppb), Cause::User, SimTime(300_000)).unwrap();
    assert_eq!((r1, r2), (SimTime(340_000), SimTime(340_000)));
    assert_eq!(d.plane_counters().unwrap().reads, 1);
}

/// The SLC cache: host writes take SLC's program time until the cache is full, then the
/// multi-bit cells' (the cliff); idle time folds them (cause `slc_fold`); pages rewritten while
/// in SLC die there.
#[test]
fn the_slc_cliff_appears_where_the_cache_ends() {
    use crate::engine::{SimOptions, Simulator};
    use crate::request::Op;
    use crate::workload::HostIo;
    let io = |t, op, page: u64| HostIo {
        placement: 0,
        arrival: t,
        op,
        offset: page * 4096,
        len: 4096,
    };
    // A burst of 24 one-page writes at once on a cache of 16 pages (64 KiB) and on one that
    // holds them all: the first 16 take SLC's 200 µs, the rest TLC's 0.8–5.7 ms.
    let burst = |cache: &str| {
        let mut p = Params::from_assignments(["cell=tlc", cache], "test").unwrap();
        let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
        let mut s = Simulator::new(&cfg, "ideal", Params::new(), SimOptions::checked()).unwrap();
        s.begin_phase("burst");
        let done = (0..24u64)
            .map(|page| s.submit(io(SimTime(0), Op::Write, page)).unwrap())
            .max()
            .unwrap();
        (s, done)
    };
    let (_, roomy) = burst("slc_cache=1MiB");
    let (mut s, t) = burst("slc_cache=64KiB");
    // 24 pages on 8 LUNs: three programs per LUN, all SLC (600 µs), or two SLC and a TLC one.
    assert_eq!(roomy, SimTime(600_000));
    assert!(t.0 >= 400_000 + 820_500, "{t:?}");
    let m = s.live_metrics();
    let slc = m.flash.slc.unwrap();
    assert_eq!((slc.cached, slc.direct), (16, 8));
    assert!(m.flash.programs.contains_key("slc_fold"));
    // Rewriting a page still in SLC: the old copy dies there, never folded.
    let t = s.submit(io(t, Op::Write, 0)).unwrap();
    // A second of idle time folds everything still in SLC.
    let idle = SimTime(t.0 + 1_000_000_000);
    s.device_mut().advance_floor(idle);
    let c = s.device().slc_counters().unwrap();
    assert_eq!(c.died_in_slc, 1, "{c:?}");
    assert_eq!(c.folded, 15, "{c:?}");
    assert_eq!(s.device().counters().programs[Cause::SlcFold as usize], 15);
    // Without an SLC cache no fold cause is reported at all.
    let mut s = Simulator::new(
        &DeviceConfig::preset("tiny").unwrap(),
        "ideal",
        Params::new(),
        SimOptions::checked(),
    )
    .unwrap();
    s.begin_phase("p");
    assert!(!s.live_metrics().flash.programs.contains_key("slc_fold"));
    // An SLC cache needs multi-bit cells.
    let mut p = Params::from_assignments(["slc_cache=64KiB"], "test").unwrap();
    let e = DeviceConfig::from_params("tiny", &mut p)
        .unwrap_err()
        .to_string();
    assert!(e.contains("slc_cache") && e.contains("cell="), "{e}");
}
