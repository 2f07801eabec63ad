//! A device's flash state saved and resumed (`serve --state`, docs/power.md "Persistent
//! state"): every recoverable FTL comes back with the data acknowledged before an orderly
//! power-off, a power-off as a cut keeps each cache contract, and a state of another device
//! or FTL, or a damaged one, is refused saying why.

use learnedftl::addr::{Lpn, SimTime};
use learnedftl::config::DeviceConfig;
use learnedftl::device::StateFiles;
use learnedftl::engine::{EngineError, Payload, SimOptions, Simulator, Verify};
use learnedftl::params::Params;
use learnedftl::request::Op;
use learnedftl::workload::HostIo;
use std::path::PathBuf;

const PS: usize = 4096;

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("lftl-state-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn cfg(sets: &[&str]) -> DeviceConfig {
    let mut p = Params::from_assignments(sets.iter().copied(), "test").unwrap();
    let mut c = DeviceConfig::from_params("tiny", &mut p).unwrap();
    p.finish().unwrap();
    c.payloads = true;
    c
}

fn opts() -> SimOptions {
    SimOptions {
        verify: Verify::FailFast,
        ..SimOptions::default()
    }
}

/// A simulator of `ftl` on `cfg` keeping its pages in the state directory's file.
fn fresh(cfg: &DeviceConfig, ftl: &str, files: &StateFiles) -> Simulator {
    let mut s = Simulator::new(cfg, ftl, Params::new(), opts()).unwrap();
    s.device_mut()
        .payloads_mut()
        .unwrap()
        .use_file(&files.pages)
        .unwrap();
    s
}

fn page(seed: u32) -> Vec<u8> {
    (0..PS)
        .map(|i| (seed as usize * 31 + i * 7) as u8)
        .collect()
}

/// A host request of the tests: never placed (no FDP here).
fn io(arrival: SimTime, op: Op, offset: u64, len: u64) -> HostIo {
    HostIo {
        arrival,
        op,
        offset,
        len,
        placement: 0,
    }
}

fn write(s: &mut Simulator, lpn: u64, data: &[u8]) {
    let t = s.clock();
    let io = io(t, Op::Write, lpn * PS as u64, data.len() as u64);
    s.submit_data(io, Payload::Write(data)).unwrap();
}

fn read(s: &mut Simulator, lpn: u64) -> Vec<u8> {
    let mut buf = vec![0; PS];
    let io = io(s.clock(), Op::Read, lpn * PS as u64, PS as u64);
    s.submit_data(io, Payload::Read(&mut buf)).unwrap();
    buf
}

fn flush(s: &mut Simulator) {
    let io = io(s.clock(), Op::Flush, 0, 0);
    s.submit(io).unwrap();
}

/// Overwrites enough to make every FTL collect garbage and write its mapping back, then
/// returns what each LPN of the first 256 holds.
fn churn(s: &mut Simulator) -> Vec<Vec<u8>> {
    let mut want = vec![vec![0; PS]; 256];
    let lp = s.device().geo().logical_pages;
    for i in 0..(lp * 5 / 4) as u32 {
        let lpn = (i as u64 * 7919) % lp;
        let p = page(i);
        write(s, lpn, &p);
        if lpn < 256 {
            want[lpn as usize] = p;
        }
    }
    want
}

#[test]
fn every_recoverable_ftl_resumes_what_an_orderly_power_off_saved() {
    for ftl in learnedftl::ftl::RECOVERABLE {
        let d = Dir::new(ftl);
        let files = StateFiles::in_dir(&d.0);
        let c = cfg(&[]);
        let mut s = fresh(&c, ftl, &files);
        let want = churn(&mut s);
        let stamps: Vec<u32> = (0..256)
            .map(|l| s.oracle().unwrap().expected(Lpn(l)))
            .collect();
        let t = s.clock();
        s.power_off(true, t).unwrap();
        s.save_state(&files).unwrap();
        let stamp = s.last_stamp();
        drop(s);
        let mut r = Simulator::new(&c, ftl, Params::new(), opts()).unwrap();
        let reads = r.resume(&files).unwrap();
        assert!(reads > 0, "{ftl}: recovery read nothing");
        for (lpn, w) in want.iter().enumerate() {
            let got = r.oracle().unwrap().expected(Lpn(lpn as u32));
            assert_eq!(got, stamps[lpn], "{ftl}: LPN {lpn}'s version");
            assert!(&read(&mut r, lpn as u64) == w, "{ftl}: LPN {lpn}'s bytes");
        }
        // New writes are stamped above the saved ones, and once flushed (LeaFTL buffers
        // writes) survive a cut on the resumed device.
        write(&mut r, 3, &page(999_999));
        assert!(r.last_stamp() > stamp, "{ftl}");
        flush(&mut r);
        let t = r.clock();
        r.cut_power_now(t).unwrap();
        assert!(read(&mut r, 3) == page(999_999), "{ftl}");
        assert_eq!(r.oracle().unwrap().failures(), 0, "{ftl}");
    }
}

/// Every section of the state file in use: an SLC cache (which pages hold SLC-mode data, the
/// fold order), mapping checkpoints, and trims (their records and the copies counted for
/// them); every LPN comes back in its version.
#[test]
fn a_state_with_slc_checkpoints_and_trims_resumes() {
    let d = Dir::new("sections");
    let files = StateFiles::in_dir(&d.0);
    let c = cfg(&["cell=tlc", "slc_cache=4MiB", "checkpoint_every=700"]);
    let mut s = fresh(&c, "dftl", &files);
    let want = churn(&mut s);
    for lpn in (0..2000u64).step_by(3) {
        let io = io(s.clock(), Op::Trim, (300 + lpn) * PS as u64, PS as u64);
        s.submit(io).unwrap();
    }
    let lp = c.geometry.logical_pages as u32;
    let stamps: Vec<u32> = (0..lp)
        .map(|l| s.oracle().unwrap().expected(Lpn(l)))
        .collect();
    let t = s.clock();
    s.power_off(true, t).unwrap();
    s.save_state(&files).unwrap();
    let mut r = Simulator::new(&c, "dftl", Params::new(), opts()).unwrap();
    r.resume(&files).unwrap();
    let o = r.oracle().unwrap();
    let wrong = (0..lp)
        .filter(|&l| o.expected(Lpn(l)) != stamps[l as usize])
        .count();
    assert_eq!(wrong, 0, "LPNs in another version after the restart");
    for (lpn, w) in want.iter().enumerate() {
        assert!(&read(&mut r, lpn as u64) == w, "LPN {lpn}'s bytes");
    }
    // Serving goes on over the restored SLC cache and checkpoints.
    churn(&mut r);
    assert_eq!(r.oracle().unwrap().failures(), 0);
}

/// Flexible Data Placement's state (which handle owns each line and placed each page) comes
/// back with the flash: recovery gives units back to their handles, and writes placed after
/// the restart keep each persistently isolated handle apart (the FTL's invariants check it).
/// A device without the same handles is refused. LearnedFTL's recovery tells its group lines
/// among the default handle's units and the GC units.
#[test]
fn fdp_placement_survives_a_restart() {
    for ftl in ["dftl", "learnedftl"] {
        for ty in ["initially", "persistently"] {
            let d = Dir::new(&format!("fdp-{ftl}-{ty}"));
            let files = StateFiles::in_dir(&d.0);
            let ty = format!("fdp_ruh_type={ty}");
            let c = cfg(&["logical_ratio=0.75", "fdp_ruhs=2", &ty]);
            let mut s = fresh(&c, ftl, &files);
            let lp = c.geometry.logical_pages;
            let placed = |s: &mut Simulator, rounds: u64| {
                for i in 0..rounds * lp {
                    let lpn = (i * 7919) % lp;
                    let mut w = io(s.clock(), Op::Write, lpn * PS as u64, PS as u64);
                    w.placement = (lpn % 2) as u16;
                    s.submit_data(w, Payload::Write(&page(i as u32))).unwrap();
                }
            };
            placed(&mut s, 2);
            let t = s.clock();
            s.power_off(true, t).unwrap();
            s.save_state(&files).unwrap();
            let mut r = Simulator::new(&c, ftl, Params::new(), opts()).unwrap();
            r.resume(&files).unwrap();
            r.ftl().check_invariants(r.device()).unwrap();
            placed(&mut r, 1);
            r.ftl().check_invariants(r.device()).unwrap();
            assert_eq!(r.oracle().unwrap().failures(), 0, "{ftl} {ty}");
            let mut other =
                Simulator::new(&cfg(&["logical_ratio=0.75"]), ftl, Params::new(), opts()).unwrap();
            match other.resume(&files) {
                Err(EngineError::State(e)) => assert!(e.to_string().contains("fdp"), "{e}"),
                r => panic!("{ftl}: resumed without FDP: {r:?}"),
            }
        }
    }
}

/// A power-off as a cut: behind a volatile write buffer, what no FLUSH covered may be lost
/// (and flushed data never is); with power-loss protection nothing acknowledged is lost.
#[test]
fn a_power_off_as_a_cut_keeps_each_cache_contract() {
    for plp in ["off", "on"] {
        let d = Dir::new(&format!("cut-{plp}"));
        let files = StateFiles::in_dir(&d.0);
        let plp_set = format!("power_loss_protection={plp}");
        let c = cfg(&["write_buffer=64KiB", "write_buffer_drain=full", &plp_set]);
        let mut s = fresh(&c, "tpftl", &files);
        write(&mut s, 0, &page(1));
        flush(&mut s);
        write(&mut s, 1, &page(2));
        let t = s.clock();
        s.power_off(false, t).unwrap();
        s.save_state(&files).unwrap();
        let mut r = Simulator::new(&c, "tpftl", Params::new(), opts()).unwrap();
        r.resume(&files).unwrap();
        assert!(read(&mut r, 0) == page(1), "flushed, {plp}");
        let unflushed = if plp == "on" { page(2) } else { vec![0; PS] };
        assert!(read(&mut r, 1) == unflushed, "unflushed, {plp}");
    }
}

#[test]
fn a_state_of_another_device_or_ftl_or_a_damaged_one_is_refused() {
    let d = Dir::new("refused");
    let files = StateFiles::in_dir(&d.0);
    let c = cfg(&[]);
    let mut s = fresh(&c, "dftl", &files);
    write(&mut s, 5, &page(5));
    s.power_off(true, SimTime(s.clock().0)).unwrap();
    s.save_state(&files).unwrap();
    let refused = |cfg: &DeviceConfig, ftl: &str| -> String {
        let mut r = Simulator::new(cfg, ftl, Params::new(), opts()).unwrap();
        match r.resume(&files) {
            Err(EngineError::State(e)) => e.to_string(),
            other => panic!("resumed: {other:?}"),
        }
    };
    let e = refused(&c, "tpftl");
    assert!(e.contains("ftl \"dftl\"") && e.contains("\"tpftl\""), "{e}");
    let e = refused(&cfg(&["blocks_per_plane=80"]), "dftl");
    assert!(e.contains("geometry"), "{e}");
    // Cut short: the section is named.
    let bytes = std::fs::read(&files.flash).unwrap();
    std::fs::write(&files.flash, &bytes[..bytes.len() / 2]).unwrap();
    let e = refused(&c, "dftl");
    assert!(e.contains("section") && e.contains("cut short"), "{e}");
    std::fs::write(&files.flash, b"not a state").unwrap();
    let e = refused(&c, "dftl");
    assert!(
        e.contains("not a learnedftl state") || e.contains("cut short"),
        "{e}"
    );
}
