//! The engine's tests: requests and their bytes, closed-loop and time-based phases, payloads
//! through GC and flushes.

use super::*;
use crate::addr::Ppa;
use crate::device::{Cause, Oob, Src};
use crate::seed::mix;
use crate::workload::{JobSpec, RwKind};

fn sim(ftl: &str) -> Simulator {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    Simulator::new(&cfg, ftl, Params::new(), SimOptions::checked()).unwrap()
}

#[test]
fn bytes_cover_every_touched_page() {
    let mut s = sim("ideal");
    s.begin_phase("t");
    s.submit(HostIo {
        placement: 0,
        arrival: SimTime(0),
        op: Op::Write,
        offset: 4000,
        len: 200,
    })
    .unwrap();
    let m = s.end_phase();
    assert_eq!(m.page_writes, 2);
    assert_eq!(s.oracle().unwrap().expected(Lpn(0)), 1);
    assert_eq!(s.oracle().unwrap().expected(Lpn(1)), 1);
    assert_eq!(s.oracle().unwrap().expected(Lpn(2)), 0);
}

#[test]
fn bad_requests_are_refused() {
    let mut s = sim("ideal");
    let lb = s.device().geo().logical_bytes();
    let e = s.submit(HostIo {
        placement: 0,
        arrival: SimTime(5),
        op: Op::Read,
        offset: lb - 4096,
        len: 8192,
    });
    assert!(matches!(e, Err(EngineError::OutOfRange { .. })));
    let e = s.submit(HostIo {
        placement: 0,
        arrival: SimTime(5),
        op: Op::Read,
        offset: 0,
        len: 0,
    });
    assert!(matches!(e, Err(EngineError::OutOfRange { .. })));
    s.submit(HostIo {
        placement: 0,
        arrival: SimTime(5),
        op: Op::Flush,
        offset: 0,
        len: 0,
    })
    .unwrap();
    let e = s.submit(HostIo {
        placement: 0,
        arrival: SimTime(4),
        op: Op::Flush,
        offset: 0,
        len: 0,
    });
    assert!(matches!(e, Err(EngineError::OutOfOrder { .. })));
}

#[test]
fn closed_loop_psync_read_latency_is_one_flash_read() {
    let mut s = sim("ideal");
    let mut w = JobSpec::new("fill", RwKind::Write);
    w.bs = 512 << 10;
    s.run_jobs("fill", &[w], 1, &mut NoProgress).unwrap();
    let mut r = JobSpec::new("r", RwKind::RandRead);
    r.number_ios = Some(1000);
    let m = s.run_jobs("r", &[r], 1, &mut NoProgress).unwrap();
    assert_eq!(m.requests.read, 1000);
    assert_eq!(m.lookups.single, 1000);
    assert_eq!(m.verify.checked, 1000);
    // One job, depth 1: each read waits only for its own flash read (the fill drained first
    // unless a LUN is still busy with background work).
    assert!(
        m.latency_us.read.p50 >= 40.0 && m.latency_us.read.p50 < 41.0,
        "{:?}",
        m.latency_us.read
    );
    assert!((m.iops - 25_000.0).abs() < 1000.0, "{}", m.iops);
    assert_eq!(m.flash.reads["user"], 1000);
}

#[test]
fn parallel_jobs_use_parallel_luns() {
    let mut s = sim("ideal");
    let mut w = JobSpec::new("fill", RwKind::Write);
    w.bs = 512 << 10;
    s.run_jobs("fill", &[w], 1, &mut NoProgress).unwrap();
    let mut r = JobSpec::new("r", RwKind::RandRead);
    r.number_ios = Some(2000);
    r.numjobs = 8;
    let m = s.run_jobs("r", &[r], 1, &mut NoProgress).unwrap();
    // 8 LUNs on tiny: well above one LUN's 25 k IOPS.
    assert!(m.iops > 100_000.0, "{}", m.iops);
}

/// Counts a phase's requests and fails the test once they pass `limit`, so that a phase
/// which would never end fails instead of hanging.
struct Bounded {
    done: u64,
    limit: u64,
}

impl Progress for Bounded {
    fn start(&mut self, _: &str, _: Option<u64>) {}
    fn advance(&mut self, n: u64) {
        self.done += n;
        assert!(
            self.done <= self.limit,
            "still running after {} requests",
            self.done
        );
    }
    fn finish(&mut self) {}
}

#[test]
fn a_time_based_phase_in_which_no_time_passes_ends_with_an_error() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    // Reads of a fresh device take no simulated time; trims do (each persists a record).
    // Whatever the FTL, a runtime-limited phase ends: at its runtime, or with the error.
    for &ftl in ftl::FTLS {
        for rw in [
            RwKind::RandRead,
            RwKind::Read,
            RwKind::Trim,
            RwKind::RandTrim,
        ] {
            let mut s = Simulator::new(&cfg, ftl, Params::new(), SimOptions::default()).unwrap();
            let mut j = JobSpec::new("stuck", rw);
            j.runtime_ns = Some(1_000_000);
            j.time_based = true;
            j.numjobs = 2;
            j.iodepth = 4;
            let mut progress = Bounded {
                done: 0,
                limit: 4 * STALLED_REQUESTS,
            };
            match s.run_jobs("t", &[j], 1, &mut progress) {
                Ok(m) => assert!(m.sim_seconds >= 1e-3 && rw.to_string().ends_with("trim")),
                Err(e) => {
                    let msg = e.to_string();
                    assert!(
                        matches!(e, EngineError::Job { ref job, .. } if job == "stuck")
                            && msg.contains("no simulated time passes")
                            && msg.contains("runtime of 1000000 ns"),
                        "{ftl} {rw}: {msg}"
                    );
                    assert!(
                        progress.done <= STALLED_REQUESTS + 4096,
                        "{ftl} {rw}: {}",
                        progress.done
                    );
                }
            }
        }
    }
}

#[test]
fn time_based_phases_with_some_timed_requests_run_to_their_runtime() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut s = Simulator::new(&cfg, "ideal", Params::new(), SimOptions::default()).unwrap();
    // Mostly reads of unwritten pages, but every write takes flash time; and a bounded job
    // of zero-time reads beside a time-based one does not count against it.
    let mut mixed = JobSpec::new("mixed", RwKind::RandRw);
    mixed.rwmixread = 99;
    mixed.runtime_ns = Some(2_000_000);
    mixed.time_based = true;
    let mut reads = JobSpec::new("reads", RwKind::RandRead);
    reads.number_ios = Some(2 * STALLED_REQUESTS);
    let m = s
        .run_jobs("t", &[mixed, reads], 1, &mut NoProgress)
        .unwrap();
    assert!(m.requests.write > 0 && m.requests.read > 2 * STALLED_REQUESTS);
    // The mixed job ran to its runtime (the reads that found its pages took flash time too).
    assert!(m.sim_seconds >= 2e-3, "{}", m.sim_seconds);
}

#[test]
fn a_phase_too_large_to_allocate_is_an_error() {
    let mut s = sim("ideal");
    let mut j = JobSpec::new("wide", RwKind::RandRead);
    j.numjobs = u32::MAX;
    j.iodepth = u32::MAX;
    j.number_ios = Some(1);
    let e = s.run_jobs("t", &[j], 1, &mut NoProgress).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("job \"wide\": cannot allocate the state of 4294967295 clones")
            && msg.contains("lower numjobs or iodepth"),
        "{msg}"
    );
    // Nothing ran: the simulator goes on as before.
    let mut r = JobSpec::new("r", RwKind::RandRead);
    r.number_ios = Some(10);
    assert_eq!(
        s.run_jobs("r", &[r], 1, &mut NoProgress)
            .unwrap()
            .requests
            .read,
        10
    );
}

/// A page's content: its LPN and version in every 8-byte word.
/// A request of `len` bytes from the device's first byte.
fn from_start(op: Op, arrival: SimTime, len: usize) -> HostIo {
    HostIo {
        placement: 0,
        arrival,
        op,
        offset: 0,
        len: len as u64,
    }
}

fn pattern(lpn: u64, version: u64, page: &mut [u8]) {
    for w in page.chunks_exact_mut(8) {
        w.copy_from_slice(&(lpn << 32 | version).to_le_bytes());
    }
}

#[test]
fn payloads_follow_their_pages_through_gc_on_every_ftl() {
    let mut cfg = DeviceConfig::preset("tiny").unwrap();
    cfg.payloads = true;
    let lp = cfg.geometry.logical_pages;
    let ps = cfg.geometry.page_size as usize;
    let file = std::env::temp_dir().join(format!("engine-pages-{}.img", std::process::id()));
    // Every FTL with pages in memory, and LearnedFTL with pages in a sparse file.
    let runs = ftl::FTLS.iter().map(|&f| (f, false));
    for (name, in_file) in runs.chain([("learnedftl", true)]) {
        let mut s = Simulator::new(&cfg, name, Params::new(), SimOptions::default()).unwrap();
        if in_file {
            let store = s.device_mut().payloads_mut().unwrap();
            store.use_file(&file).unwrap();
        }
        s.begin_phase("w");
        let mut version = vec![0u64; lp as usize];
        let mut rng = 0x1234_5678u64;
        let mut buf = vec![0u8; 8 * ps];
        let mut t = 0;
        // Twice the logical space in 8-page writes at random 8-page slots, then a flush.
        for _ in 0..2 * lp / 8 {
            rng = mix(rng, 1, 2);
            let first = rng % (lp / 8) * 8;
            for (i, page) in buf.chunks_exact_mut(ps).enumerate() {
                let l = first + i as u64;
                version[l as usize] += 1;
                pattern(l, version[l as usize], page);
            }
            let io = HostIo {
                placement: 0,
                arrival: SimTime(t),
                op: Op::Write,
                offset: first * ps as u64,
                len: buf.len() as u64,
            };
            t = s.submit_data(io, Payload::Write(&buf)).unwrap().0;
        }
        let io = HostIo {
            placement: 0,
            arrival: SimTime(t),
            op: Op::Flush,
            offset: 0,
            len: 0,
        };
        t = s.submit(io).unwrap().0;
        let m = s.end_phase();
        assert!(m.gc.events > 0, "{name}: no GC");
        let mut want = vec![0u8; ps];
        for first in (0..lp).step_by(8) {
            let io = HostIo {
                placement: 0,
                arrival: SimTime(t),
                op: Op::Read,
                offset: first * ps as u64,
                len: buf.len() as u64,
            };
            s.submit_data(io, Payload::Read(&mut buf)).unwrap();
            for (i, page) in buf.chunks_exact(ps).enumerate() {
                let l = first + i as u64;
                match version[l as usize] {
                    0 => want.fill(0),
                    v => pattern(l, v, &mut want),
                }
                assert!(
                    page == want,
                    "{name}: LPN {l} version {}",
                    version[l as usize]
                );
            }
        }
    }
    std::fs::remove_file(&file).unwrap();
}

/// LeaFTL's buffer fills in the middle of a write whose later pages it still holds in an
/// older version: the flush must program those pages' older bytes, and the write's own
/// bytes must stay for its buffered pages (issue 26: ext4 on LeaFTL read back wrong files).
#[test]
fn a_flush_inside_a_write_keeps_each_versions_bytes() {
    let mut cfg = DeviceConfig::preset("tiny").unwrap();
    cfg.payloads = true;
    let ps = cfg.geometry.page_size as usize;
    let mut params = Params::new();
    params.insert("write_buffer_pages", "4", "test");
    let mut s = Simulator::new(&cfg, "leaftl", params, SimOptions::checked()).unwrap();
    s.begin_phase("t");
    let mut t = SimTime(0);
    let mut write = |s: &mut Simulator, first: u64, pages: u64, version: u64| {
        let mut buf = vec![0u8; pages as usize * ps];
        for (i, page) in buf.chunks_exact_mut(ps).enumerate() {
            pattern(first + i as u64, version, page);
        }
        let io = HostIo {
            placement: 0,
            arrival: t,
            op: Op::Write,
            offset: first * ps as u64,
            len: buf.len() as u64,
        };
        t = s.submit_data(io, Payload::Write(&buf)).unwrap();
    };
    // LPN 3 buffered; then LPNs 0..5: the buffer fills at LPN 2 and its flush programs LPN
    // 3's first version while LPN 3's second is already staged.
    write(&mut s, 3, 1, 1);
    write(&mut s, 0, 5, 2);
    let mut want = vec![0u8; ps];
    let mut got = vec![0u8; 5 * ps];
    let io = from_start(Op::Read, t, got.len());
    s.submit_data(io, Payload::Read(&mut got)).unwrap();
    for (l, page) in got.chunks_exact(ps).enumerate() {
        pattern(l as u64, 2, &mut want);
        assert!(page == want, "LPN {l}: not the second version's bytes");
    }
    // And once flushed to flash, from there.
    let flush = HostIo {
        placement: 0,
        arrival: t,
        op: Op::Flush,
        offset: 0,
        len: 0,
    };
    let t = s.submit(flush).unwrap();
    s.submit_data(HostIo { arrival: t, ..io }, Payload::Read(&mut got))
        .unwrap();
    for (l, page) in got.chunks_exact(ps).enumerate() {
        pattern(l as u64, 2, &mut want);
        assert!(page == want, "LPN {l} after a flush");
    }
}

#[test]
fn payload_requests_must_be_whole_pages_on_a_payload_device() {
    let mut s = sim("ideal");
    let io = HostIo {
        placement: 0,
        arrival: SimTime(0),
        op: Op::Write,
        offset: 0,
        len: 4096,
    };
    let e = s.submit_data(io, Payload::Write(&[0; 4096])).unwrap_err();
    assert!(e.to_string().contains("payloads=true"), "{e}");
    let mut cfg = DeviceConfig::preset("tiny").unwrap();
    cfg.payloads = true;
    let mut s = Simulator::new(&cfg, "ideal", Params::new(), SimOptions::checked()).unwrap();
    let e = s
        .submit_data(HostIo { len: 512, ..io }, Payload::Write(&[0; 512]))
        .unwrap_err();
    assert!(e.to_string().contains("whole"), "{e}");
    let e = s.submit_data(io, Payload::Write(&[0; 512])).unwrap_err();
    assert!(e.to_string().contains("buffer of 512"), "{e}");
    let e = s
        .submit_data(io, Payload::Read(&mut [0; 4096]))
        .unwrap_err();
    assert!(e.to_string().contains("Read data"), "{e}");
}

#[test]
fn gc_keeps_data_correct_under_overwrites() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let opts = SimOptions {
        verify: Verify::FailFast,
        check_invariants: false,
        ..SimOptions::default()
    };
    let mut s = Simulator::new(&cfg, "ideal", Params::new(), opts).unwrap();
    let mut w = JobSpec::new("w", RwKind::RandWrite);
    w.io_size = Some(3 * s.device().geo().logical_bytes());
    w.iodepth = 4;
    let m = s.run_jobs("w", &[w], 7, &mut NoProgress).unwrap();
    assert!(m.gc.events > 0);
    assert!(m.waf > 1.0, "{}", m.waf);
    let mut r = JobSpec::new("r", RwKind::RandRead);
    r.number_ios = Some(5000);
    let m = s.run_jobs("r", &[r], 7, &mut NoProgress).unwrap();
    assert_eq!(m.verify.failures, 0);
    assert_eq!(m.verify.checked, 5000);
    s.ftl().check_invariants(s.device()).unwrap();
}

#[test]
fn a_run_stops_when_the_machine_runs_short_of_memory() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut r = JobSpec::new("r", RwKind::RandRead);
    r.number_ios = Some(3 * 4096);
    let run = |floor| {
        let opts = SimOptions {
            memory_floor: floor,
            ..SimOptions::default()
        };
        let mut s = Simulator::new(&cfg, "dftl", Params::new(), opts).unwrap();
        s.run_jobs("measure", std::slice::from_ref(&r), 7, &mut NoProgress)
    };
    // No machine has this much left: the first look, after the first 4,096 requests, stops it.
    let e = run(1 << 50).unwrap_err();
    assert!(matches!(e, EngineError::Memory(_)), "{e}");
    let e = e.to_string();
    for says in [
        "memory: ",
        "below the floor of 1024.0 TiB",
        "4096 requests into phase \"measure\" of dftl",
        "MemAvailable",
        "this process holding",
        "--capacity",
    ] {
        assert!(e.contains(says), "{says}: {e}");
    }
    assert_eq!(run(0).unwrap().requests.read, 3 * 4096);
}

/// An FTL that, like μ-FTL writing back a node during a read, moves a page right after serving
/// it from flash: each LPN has a block of its own, and a read copies its page to a fresh block
/// and erases the old one before the request returns.
#[derive(Clone, Default)]
struct MovesWhatItReads {
    map: Vec<Option<Ppa>>,
    next_block: u32,
    stats: crate::mapping::FtlStats,
}

impl MovesWhatItReads {
    fn place(&mut self, dev: &mut Device, lpn: Lpn, oob: Oob, src: Src, t: SimTime) -> Ppa {
        let ppa = Ppa(self.next_block * dev.geo().pages_per_block);
        self.next_block += 1;
        dev.program(ppa, oob, src, Cause::User, t).unwrap();
        if let Some(old) = self.map[lpn.idx()].replace(ppa) {
            dev.invalidate(old).unwrap();
            dev.erase(dev.geo().block_of(old), Cause::GcData, t)
                .unwrap();
        }
        ppa
    }
}

impl Ftl for MovesWhatItReads {
    fn name(&self) -> &'static str {
        "moves-what-it-reads"
    }
    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        self.map.resize(dev.geo().logical_pages as usize, None);
        for lpn in req.lpns() {
            match req.op {
                Op::Write => {
                    let oob = Oob::data(lpn, req.stamp);
                    self.place(dev, lpn, oob, Src::Host, req.arrival);
                }
                Op::Read => {
                    let ppa = self.map[lpn.idx()].unwrap();
                    let (oob, _) = dev.read(ppa, Cause::User, req.arrival)?;
                    sink.deliver(dev, lpn, Served::Flash { ppa, oob });
                    self.place(dev, lpn, oob, Src::Page(ppa), req.arrival);
                }
                _ => {}
            }
        }
        Ok(req.arrival)
    }
    fn background(&mut self, _: &mut Device, _: SimTime) -> Result<(), FtlError> {
        Ok(())
    }
    fn idle(&mut self, _: &mut Device, _: SimTime) -> Result<Option<SimTime>, FtlError> {
        Ok(None)
    }
    fn stats(&self) -> &crate::mapping::FtlStats {
        &self.stats
    }
    fn reset_stats(&mut self) {}
    fn dram(&self) -> ftl::DramUsage {
        ftl::DramUsage::default()
    }
    fn params(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn check_invariants(&self, _: &Device) -> Result<(), String> {
        Ok(())
    }
}

/// A read's bytes are taken as the FTL serves each page: μ-FTL with `gc_victim=cost-benefit`
/// returned zeroes when the GC of a node write-back in the same read erased a block it had
/// just served (`learnedftl check` found it).
#[test]
fn a_read_keeps_the_bytes_of_pages_its_own_request_moves_away() {
    let mut cfg = DeviceConfig::preset("tiny").unwrap();
    cfg.payloads = true;
    let ps = cfg.geometry.page_size as usize;
    let ftl = Box::new(MovesWhatItReads::default());
    let mut s = Simulator::with_ftl(&cfg, ftl, SimOptions::checked());
    let mut buf = vec![0u8; 3 * ps];
    for (l, page) in buf.chunks_exact_mut(ps).enumerate() {
        pattern(l as u64, 1, page);
    }
    let io = from_start(Op::Write, SimTime(0), buf.len());
    let t = s.submit_data(io, Payload::Write(&buf)).unwrap();
    for round in 0..2 {
        let mut got = vec![0u8; 3 * ps];
        s.submit_data(from_start(Op::Read, t, got.len()), Payload::Read(&mut got))
            .unwrap();
        assert!(
            got == buf,
            "round {round}: the bytes of a page moved after it was served"
        );
    }
}

/// `ftl` on `tiny` with the device keys `sets`, every read checked, after a sequential fill.
fn filled(ftl: &str, sets: &[&str]) -> Simulator {
    let mut p = Params::from_assignments(sets.iter().copied(), "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut p).unwrap();
    let mut s = Simulator::new(&cfg, ftl, Params::new(), SimOptions::checked()).unwrap();
    let mut w = JobSpec::new("fill", RwKind::Write);
    w.bs = 512 << 10;
    s.run_jobs("fill", &[w], 1, &mut NoProgress).unwrap();
    s
}

/// The host's cost per I/O (`host_submit_ns`, `host_complete_ns`): a job's latency includes
/// it, and one job's thread, submitting and completing on its own core, caps its IOPS.
#[test]
fn a_jobs_host_cost_adds_latency_and_caps_its_iops() {
    let run = |sets: &[&str], iodepth: u32| {
        let mut s = filled("ideal", sets);
        let mut r = JobSpec::new("r", RwKind::RandRead);
        r.number_ios = Some(2000);
        r.iodepth = iodepth;
        s.run_jobs("r", &[r], 1, &mut NoProgress).unwrap()
    };
    let host = ["host_submit_ns=10000", "host_complete_ns=5000"];
    let (bare, hosted) = (run(&[], 1), run(&host, 1));
    assert_eq!(hosted.verify.checked, 2000);
    let extra = hosted.latency_us.read.mean - bare.latency_us.read.mean;
    assert!((extra - 15.0).abs() < 0.5, "{extra} µs more");
    // 64 requests in flight: the device could serve 8 LUNs / 40 µs = 200 k reads/s; the job's
    // core, 15 µs a request, 66.7 k.
    let deep = run(&host, 64);
    assert!(
        (60_000.0..66_700.0).contains(&deep.iops),
        "{} IOPS",
        deep.iops
    );
    assert!(run(&[], 64).iops > 150_000.0);
}

/// `latency_parts_us` splits a request's latency where it was spent: at queue depth 1, the
/// host's part is its path's costs (io_uring: submit, interrupt, complete), the controller's
/// its command cost, the transfer a page over the host link, and the parts add up to the mean.
#[test]
fn latency_parts_add_up_to_the_mean_and_name_each_cost() {
    let sets = [
        "host_path=io_uring",
        "cmd_overhead_ns=3000",
        "host_mb_s=4096",
        "write_buffer=256k",
    ];
    let mut s = filled("tpftl", &sets);
    let mut r = JobSpec::new("mix", RwKind::RandRw);
    r.number_ios = Some(4000);
    let m = s.run_jobs("mix", &[r], 1, &mut NoProgress).unwrap();
    assert_eq!(m.verify.failures, 0);
    let parts = m.latency_parts_us.expect("parts with a host cost");
    for (op, p, mean) in [
        ("read", &parts.read, m.latency_us.read.mean),
        ("write", &parts.write, m.latency_us.write.mean),
    ] {
        let sum = p.host + p.controller + p.transfer + p.flash;
        // hdrhistogram's mean rounds each latency to three significant digits.
        assert!(
            (sum - mean).abs() < mean * 1e-3,
            "{op}: {p:?} add up to {sum}, not {mean}"
        );
        // One request in flight: nothing waits for the core or the link.
        assert!((p.host - 6.6).abs() < 1e-9, "{op}: host {}", p.host);
        assert!(
            (p.controller - 3.0).abs() < 1e-9,
            "{op}: controller {}",
            p.controller
        );
        assert!(
            (p.transfer - 1.0).abs() < 1e-9,
            "{op}: transfer {}",
            p.transfer
        );
    }
    // Reads go to flash; a buffered write at depth 1 never waits for it.
    assert!(parts.read.flash > 35.0, "{:?}", parts.read);
    assert!(parts.write.flash < parts.read.flash, "{parts:?}");
    // Without a host cost or a controller, no parts are reported (everything is the device's).
    let mut bare = filled("tpftl", &[]);
    let r = JobSpec::new("r", RwKind::Read);
    assert!(bare
        .run_jobs("r", &[r], 1, &mut NoProgress)
        .unwrap()
        .latency_parts_us
        .is_none());
}

/// Program and erase suspend gives reads priority over programs and erases, never over other
/// reads: a deep queue of reads is served no faster than the LUNs read (it once outran them,
/// a read queued ahead of reads booked already being served beside them on one LUN).
#[test]
fn suspend_never_serves_two_reads_at_once_on_a_lun() {
    for sets in [&[][..], &["suspend=on"][..]] {
        let mut s = filled("ideal", sets);
        let mut r = JobSpec::new("r", RwKind::RandRead);
        r.numjobs = 8;
        r.iodepth = 256;
        r.number_ios = Some(4000);
        let m = s.run_jobs("r", &[r], 1, &mut NoProgress).unwrap();
        // 8 LUNs reading 40 µs each: 200 k reads a second at most.
        let most = 8.0 * 1e9 / s.device().config().timing.read_ns as f64;
        assert!(m.iops <= most * 1.001, "{sets:?}: {} IOPS", m.iops);
        assert!(m.iops > 0.9 * most, "{sets:?}: {} IOPS", m.iops);
    }
}
