//! The simulated-SSD backend over the protocol: data through the FTL, sub-page requests,
//! zeroing, flush and FUA on a buffering FTL, realtime replies, recording, power cuts, and
//! the checks of `serve --verify`.

mod common;

use common::*;
use learnedftl::addr::{Lpn, SimTime};
use learnedftl::config::DeviceConfig;
use learnedftl::engine::{SimOptions, Simulator, Verify};
use learnedftl::params::Params;
use learnedftl::request::Op;
use learnedftl::stats::HandleMetrics;
use learnedftl::trace::{Format, TraceWriter};
use learnedftl::workload::HostIo;
use learnedftl_nbd::proto::*;
use learnedftl_nbd::server::{serve, Connections, Listener};
use learnedftl_nbd::sim::{CutTrigger, SimBackend, Timing};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn backend(ftl: &str, timing: Timing) -> Arc<SimBackend> {
    backend_recording(ftl, timing, None)
}

fn backend_recording(
    ftl: &str,
    timing: Timing,
    record: Option<learnedftl_nbd::sim::Recorder>,
) -> Arc<SimBackend> {
    Arc::new(SimBackend::new(sim(ftl, &[]), "t", timing, record).unwrap())
}

/// `ftl` on the tiny preset with payloads, parameters `set` (`key=value`: the device's or the
/// FTL's), reads counted by
/// the oracle (as `serve` builds it).
fn sim(ftl: &str, set: &[&str]) -> Simulator {
    let mut params = Params::new();
    for s in set {
        params.insert_assignment(s, "set").unwrap();
    }
    // Device keys go to the device, the rest to the FTL.
    let mut cfg = DeviceConfig::from_params("tiny", &mut params).unwrap();
    cfg.payloads = true;
    let opts = SimOptions {
        verify: Verify::Count,
        check_invariants: false,
        ..SimOptions::default()
    };
    Simulator::new(&cfg, ftl, params, opts).unwrap()
}

/// Lines a verifying backend logged.
type Logged = Arc<Mutex<Vec<String>>>;

/// A backend replying at once, with the checks of `serve --verify` if `verify`.
fn verifying(ftl: &str, set: &[&str], verify: bool) -> (Arc<SimBackend>, Logged) {
    let b = SimBackend::new(sim(ftl, set), "t", Timing::None, None).unwrap();
    let log = Logged::default();
    let b = match verify {
        true => {
            let l = log.clone();
            b.verify(move |m| l.lock().unwrap().push(m)).unwrap()
        }
        false => b,
    };
    (Arc::new(b), log)
}

#[test]
fn a_device_without_payloads_is_refused() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let sim = Simulator::new(&cfg, "ideal", Params::new(), SimOptions::default()).unwrap();
    let e = SimBackend::new(sim, "t", Timing::None, None).err().unwrap();
    assert!(e.contains("payloads"), "{e}");
}

#[test]
fn sub_page_requests_read_modify_write_whole_pages() {
    let b = backend("dftl", Timing::None);
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    let page = bytes(3, 8192);
    write(&mut c, 4096, &page, 0);
    // 512 B into the middle of the first page, and 1 KiB across the page boundary.
    write(&mut c, 4096 + 1024, &[0xaa; 512], 0);
    write(&mut c, 8192 - 512, &[0xbb; 1024], 0);
    let mut want = page.clone();
    want[1024..1536].fill(0xaa);
    want[4096 - 512..4096 + 512].fill(0xbb);
    assert_eq!(read(&mut c, 4096, 8192), want);
    // An unaligned read across the boundary.
    assert_eq!(read(&mut c, 8192 - 1024, 2048), &want[3072..5120]);
    let m = b.live_metrics();
    // Each sub-page write read its covering pages first (one request, the two pages of the
    // boundary-crossing one together).
    assert_eq!(m.requests.write, 3);
    assert_eq!(m.requests.read, 4);
    // A write from inside page 0 to inside page 3 reads only pages 0 and 3: the pages between
    // are overwritten whole.
    let long = bytes(5, 3 * 4096);
    write(&mut c, 512, &long, 0);
    let m = b.live_metrics();
    assert_eq!((m.requests.write, m.requests.read), (4, 6));
    let mut all = vec![0; 4 * 4096];
    all[4096..3 * 4096].copy_from_slice(&want);
    all[512..512 + long.len()].copy_from_slice(&long);
    assert_eq!(read(&mut c, 0, 4 * 4096), all);
    assert_eq!(b.live_metrics().verify.failures, 0);
    disconnect(c, h);
}

#[test]
fn trim_and_write_zeroes_zero_what_they_cover() {
    let b = backend("tpftl", Timing::None);
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    let data = bytes(9, 6 * 4096);
    write(&mut c, 0, &data, 0);
    // A trim discards only whole pages: the partial first and last pages keep their data.
    assert_eq!(call(&mut c, Command::Trim, 0, 2048, Err(3 * 4096)).0, 0);
    let mut want = data.clone();
    want[4096..3 * 4096].fill(0);
    assert_eq!(read(&mut c, 0, 6 * 4096), want);
    // Write-zeroes zeroes exactly its range, with and without punching holes.
    for (flags, at) in [(0, 3 * 4096 + 512), (CMD_FLAG_NO_HOLE, 512)] {
        let len = 2 * 4096 + 1024;
        assert_eq!(call(&mut c, Command::WriteZeroes, flags, at, Err(len)).0, 0);
        want[at as usize..(at + len as u64) as usize].fill(0);
    }
    assert_eq!(read(&mut c, 0, 6 * 4096), want);
    // The first trim, and the write-zeroes that may punch a hole.
    assert_eq!(b.live_metrics().requests.trim, 2);
    disconnect(c, h);
}

#[test]
fn flush_and_fua_drain_leaftls_write_buffer() {
    let b = backend("leaftl", Timing::None);
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    write(&mut c, 0, &bytes(1, 4096), 0);
    let m = b.live_metrics();
    assert_eq!(m.flash.programs["user"], 0, "LeaFTL buffers a lone page");
    // Served from the buffer.
    assert_eq!(read(&mut c, 0, 4096), bytes(1, 4096));
    assert_eq!(call(&mut c, Command::Flush, 0, 0, Err(0)).0, 0);
    let m = b.live_metrics();
    assert_eq!(m.flash.programs["user"], 1);
    assert_eq!(m.requests.flush, 1);
    write(&mut c, 4096, &bytes(2, 4096), CMD_FLAG_FUA);
    let m = b.live_metrics();
    assert_eq!(
        m.flash.programs["user"], 2,
        "a FUA write is durable when answered"
    );
    assert_eq!(m.requests.flush, 2);
    assert_eq!(read(&mut c, 0, 8192)[4096..], bytes(2, 4096));
    disconnect(c, h);
}

#[test]
fn realtime_replies_wait_for_the_simulated_completion() {
    let b = backend("ideal", Timing::Realtime);
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    // 64 pages on 8 LUNs: at least 8 programs of 200 µs in a row on one LUN.
    let t = Instant::now();
    write(&mut c, 0, &bytes(5, 64 * 4096), 0);
    assert!(
        t.elapsed() >= Duration::from_micros(1600),
        "{:?}",
        t.elapsed()
    );
    let m = b.live_metrics();
    assert!(m.latency_us.write.max >= 1600.0, "{:?}", m.latency_us.write);
    disconnect(c, h);
}

#[test]
fn disconnect_sends_the_replies_still_held_first() {
    let b = backend("ideal", Timing::Realtime);
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    // Two held writes, then NBD_CMD_DISC before reading their replies.
    request(&mut c, Command::Write, 0, 1, 0, Ok(&bytes(1, 64 * 4096)));
    request(
        &mut c,
        Command::Write,
        0,
        2,
        1 << 20,
        Ok(&bytes(2, 64 * 4096)),
    );
    request(&mut c, Command::Disc, 0, 3, 0, Err(0));
    let t = Instant::now();
    let mut cookies = [reply(&mut c), reply(&mut c)].map(|(e, k)| {
        assert_eq!(e, 0);
        k
    });
    cookies.sort();
    assert_eq!(cookies, [1, 2]);
    h.join().unwrap().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn realtime_lateness_counts_every_held_reply() {
    let b = backend("ideal", Timing::Realtime);
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    write(&mut c, 0, &bytes(1, 8 * 4096), 0);
    read(&mut c, 0, 4096);
    // Eight reads in flight at once, a flush, and a refused read (past the end): its error
    // reply is sent at once, held for no completion, and not counted.
    for k in 0..8 {
        request(&mut c, Command::Read, 0, k, k * 4096, Err(4096));
    }
    for _ in 0..8 {
        assert_eq!(reply(&mut c).0, 0);
        let mut page = [0u8; 4096];
        c.read_exact(&mut page).unwrap();
    }
    let (e, _) = call(&mut c, Command::Flush, 0, 0, Err(0));
    assert_eq!(e, 0);
    let (e, _) = call(&mut c, Command::Read, 0, 1 << 40, Err(4096));
    assert_eq!(e, NbdError::EINVAL.0);
    disconnect(c, h);
    let l = b.lateness().expect("realtime reports lateness");
    assert_eq!(l.count, 11, "{l:?}");
    assert!(
        0.0 <= l.p50 && l.p50 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max,
        "{l:?}"
    );
    let w = b.reply_writes().expect("realtime reports its reply writes");
    assert_eq!(w.count, 11, "{w:?}");
    assert!(0.0 <= w.p50 && w.p50 <= w.max, "{w:?}");
    let r = b.report("tiny", 0, serde_json::json!({}));
    assert_eq!((&r.lateness_us, &r.reply_write_us), (&Some(l), &Some(w)));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["lateness_us"]["count"], 11);
    assert_eq!(json["reply_write_us"]["count"], 11);
    assert_eq!(json["result"]["requests"]["read"], 9);

    // Replies sent at once have no lateness, and the report no such key.
    let b = backend("ideal", Timing::None);
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    read(&mut c, 0, 4096);
    disconnect(c, h);
    assert_eq!((b.lateness(), b.reply_writes()), (None, None));
    let json = serde_json::to_value(b.report("tiny", 0, serde_json::json!({}))).unwrap();
    assert!(json.get("lateness_us").is_none() && json.get("reply_write_us").is_none());
    assert!(json.get("result").is_some());
}

/// A writer into a shared buffer.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn every_request_is_recorded_as_a_trace() {
    let out = Shared::default();
    let w = TraceWriter::new(
        Format::FioIolog,
        Box::new(out.clone()) as Box<dyn Write + Send>,
    )
    .unwrap();
    let b = backend_recording("ideal", Timing::None, Some(w));
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    write(&mut c, 8192, &[1; 4096], 0);
    read(&mut c, 8192, 4096);
    call(&mut c, Command::Trim, 0, 8192, Err(4096));
    call(&mut c, Command::Flush, 0, 0, Err(0));
    disconnect(c, h);
    b.flush_record().unwrap();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let ops: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && f[1] == "dev0").then(|| f[2..].join(" "))
        })
        .collect();
    assert!(text.starts_with("fio version 3 iolog"), "{text}");
    assert_eq!(
        ops,
        [
            "add",
            "open",
            "write 8192 4096",
            "read 8192 4096",
            "trim 8192 4096",
            "sync 0 0"
        ],
        "{text}"
    );
}

#[test]
fn a_recording_on_an_fdp_device_carries_each_writes_placement() {
    // `serve --set fdp_ruhs=3 --set fdp_ranges=…`: NBD writes carry no placement ID, the
    // ranges place them. The recording says where each went, so that replaying it on a device
    // with the handles but without the ranges places every page as the server did.
    let fdp = ["logical_ratio=0.75", "fdp_ruhs=3"];
    let sim_ranged = sim("dftl", &[fdp[0], fdp[1], "fdp_ranges=0-25%:1,50%-100%:2"]);
    let quarter = sim_ranged.device().geo().logical_bytes() / 4;
    let out = Shared::default();
    let w = TraceWriter::new(
        Format::Recording,
        Box::new(out.clone()) as Box<dyn Write + Send>,
    )
    .unwrap();
    let b = Arc::new(SimBackend::new(sim_ranged, "t", Timing::None, Some(w)).unwrap());
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    write(&mut c, 4096, &[1; 8192], 0); // handle 1
    write(&mut c, quarter + 4096, &[2; 4096], 0); // outside the ranges: handle 0
    write(&mut c, 3 * quarter, &[3; 4096], 0); // handle 2
    write(&mut c, 3 * quarter + 4096 + 512, &[4; 512], 0); // read-modify-write, handle 2
    read(&mut c, 4096, 4096);
    call(&mut c, Command::Trim, 0, quarter, Err(4096));
    call(&mut c, Command::Flush, 0, 0, Err(0));
    disconnect(c, h);
    b.flush_record().unwrap();
    let served = b.live_metrics().fdp.unwrap().handles;

    let text = out.0.lock().unwrap().clone();
    assert!(
        String::from_utf8_lossy(&text).contains("issue_ns,done_ns,conn,op,offset,len,placement"),
        "the header names the column"
    );
    let reader = learnedftl::trace::TraceReader::from_read(
        "recording",
        std::io::Cursor::new(text),
        None,
        &learnedftl::trace::ParseOptions::default(),
    )
    .unwrap();
    assert_eq!(reader.format(), Format::Recording);
    let recs: Vec<_> = reader.map(Result::unwrap).collect();
    let placed: Vec<(Op, Option<u16>)> = recs.iter().map(|r| (r.op, r.placement)).collect();
    assert_eq!(
        placed,
        [
            (Op::Write, Some(1)),
            (Op::Write, Some(0)),
            (Op::Write, Some(2)),
            (Op::Read, None),
            (Op::Write, Some(2)),
            (Op::Read, None),
            (Op::Trim, None),
            (Op::Flush, None),
        ]
    );

    let mut params = Params::new();
    for s in fdp {
        params.insert_assignment(s, "set").unwrap();
    }
    let cfg = DeviceConfig::from_params("tiny", &mut params).unwrap();
    let mut replay = Simulator::new(&cfg, "dftl", params, SimOptions::default()).unwrap();
    for (i, r) in recs.iter().filter(|r| r.op == Op::Write).enumerate() {
        replay
            .submit(HostIo {
                arrival: SimTime(1_000_000 * (i as u64 + 1)),
                op: r.op,
                offset: r.offset,
                len: r.len,
                placement: r.placement.unwrap(),
            })
            .unwrap();
    }
    let replayed = replay.end_phase().fdp.unwrap().handles;
    let pages = |h: &[HandleMetrics]| -> Vec<u64> { h.iter().map(|h| h.host_pages).collect() };
    assert_eq!(pages(&served), [1, 2, 2]);
    assert_eq!(pages(&replayed), pages(&served));
}

#[test]
fn connections_share_one_device() {
    let b = backend("learnedftl", Timing::None);
    let (mut c1, h1) = connect(b.clone());
    let (mut c2, h2) = connect(b.clone());
    go(&mut c1);
    go(&mut c2);
    let threads: Vec<_> = [(c1, 0u64), (c2, 1u64)]
        .into_iter()
        .map(|(mut c, k)| {
            std::thread::spawn(move || {
                for i in 0..200u64 {
                    let at = (i * 2 + k) * 4096;
                    write(&mut c, at, &bytes(at, 4096), 0);
                }
                c
            })
        })
        .collect();
    let mut conns: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    // Each connection reads what the other wrote.
    for (i, c) in conns.iter_mut().enumerate() {
        for p in (0..400u64).filter(|p| p % 2 != i as u64) {
            assert_eq!(read(c, p * 4096, 4096), bytes(p * 4096, 4096));
        }
    }
    let mut it = conns.into_iter();
    disconnect(it.next().unwrap(), h1);
    disconnect(it.next().unwrap(), h2);
    assert_eq!(b.live_metrics().requests.write, 400);
}

#[test]
fn a_power_cut_between_requests_keeps_acknowledged_data_and_the_connection() {
    for ftl in learnedftl::ftl::RECOVERABLE {
        let b = backend(ftl, Timing::None);
        let (mut c, h) = connect(b.clone());
        go(&mut c);
        let first = bytes(1, 64 * 4096);
        write(&mut c, 0, &first, 0);
        // A sub-page write (read-modify-write) and a flushed overwrite.
        write(&mut c, 4096 + 512, &[0x5a; 1024], 0);
        let second = bytes(2, 8 * 4096);
        write(&mut c, 32 * 4096, &second, 0);
        assert_eq!(call(&mut c, Command::Flush, 0, 0, Err(0)).0, 0);
        let mut want = first.clone();
        want[4096 + 512..4096 + 1536].fill(0x5a);
        want[32 * 4096..40 * 4096].copy_from_slice(&second);
        let line = b.cut_power(CutTrigger::Signal).unwrap().to_string();
        assert!(
            line.contains("power cut 1") && line.contains("flash reads"),
            "{line}"
        );
        assert_eq!(read(&mut c, 0, 64 * 4096), want, "{ftl} after the cut");
        // Serving goes on: a write after the cut survives a second one (flushed: LeaFTL's
        // write buffer is volatile, docs/power.md).
        write(&mut c, 0, &second, 0);
        assert_eq!(call(&mut c, Command::Flush, 0, 0, Err(0)).0, 0);
        want[..8 * 4096].copy_from_slice(&second);
        b.cut_power(CutTrigger::Signal).unwrap();
        assert_eq!(read(&mut c, 0, 64 * 4096), want, "{ftl} after two cuts");
        let m = b.live_metrics();
        let p = m.power_cuts.expect("power cuts reported");
        assert_eq!(p.count, 2, "{ftl}");
        assert!(p.recovery_flash_reads > 0, "{ftl}");
        assert_eq!(p.lost_unflushed_pages, 0, "{ftl}");
        assert_eq!(m.verify.failures, 0, "{ftl}");
        disconnect(c, h);
    }
}

#[test]
fn verify_answers_eio_for_a_wrong_read_instead_of_its_data() {
    for verify in [false, true] {
        // Reads of about one LPN in four return another LPN's page: of LPNs 0-5, LPN 4.
        let (b, log) = verifying("ideal", &["inject=wrong-read:4"], verify);
        let (mut c, h) = connect(b.clone());
        go(&mut c);
        let data = bytes(1, 8 * 4096);
        let page = |p: usize| &data[p * 4096..(p + 1) * 4096];
        write(&mut c, 0, &data, 0);
        for p in 0..4 {
            assert_eq!(read(&mut c, p as u64 * 4096, 4096), page(p));
        }
        let (e, got) = call(&mut c, Command::Read, 0, 4 * 4096, Err(4096));
        let m = b.live_metrics();
        assert_eq!(m.verify.failures, 1, "the oracle sees it either way");
        if verify {
            assert_eq!((e, got.len()), (NbdError::EIO.0, 0), "no data");
            let v = m.verify.bytes.expect("byte checks reported");
            assert_eq!((v.failed_commands, v.mismatches), (1, 0));
            assert_eq!(v.pages_compared, 4);
            let log = log.lock().unwrap();
            assert_eq!(log.len(), 1, "{log:?}");
            assert!(
                log[0].contains("NBD_EIO")
                    && log[0].contains("read at byte 16384 (+4096 B)")
                    && log[0].contains("read of LPN 4: expected stamp 1"),
                "{}",
                log[0]
            );
            assert_eq!(b.failures().0, 1);
        } else {
            assert_eq!(e, 0);
            assert_ne!(got, page(4), "wrong data returned");
            assert_eq!(m.verify.bytes, None);
        }
        // Serving goes on.
        assert_eq!(read(&mut c, 5 * 4096, 4096), page(5));
        disconnect(c, h);
    }
}

#[test]
fn verify_fails_a_sub_page_write_whose_read_is_wrong_and_writes_nothing() {
    for verify in [false, true] {
        // The first page read (the read-modify-write's) returns another LPN's page.
        let (b, _) = verifying("ideal", &["inject=wrong-read:1"], verify);
        let (mut c, h) = connect(b.clone());
        go(&mut c);
        let data = bytes(2, 2 * 4096);
        write(&mut c, 0, &data, 0);
        let (e, _) = call(&mut c, Command::Write, 0, 4096 + 512, Ok(&[0x5a; 512]));
        let writes = b.live_metrics().requests.write;
        if verify {
            assert_eq!(e, NbdError::EIO.0);
            assert_eq!(writes, 1, "the merged page is not written back");
        } else {
            assert_eq!((e, writes), (0, 2), "the wrong page is merged and written");
        }
        disconnect(c, h);
    }
}

#[test]
fn verify_catches_wrong_bytes_of_the_right_version() {
    for verify in [false, true] {
        let (b, log) = verifying("leaftl", &["write_buffer_pages=4"], verify);
        let (mut c, h) = connect(b.clone());
        go(&mut c);
        write(&mut c, 4096, &bytes(3, 4096), 0);
        assert_eq!(b.live_metrics().flash.programs["user"], 0, "buffered");
        // The buffered page's data changes under the same LPN and stamp: the stamp check
        // cannot tell.
        b.with_sim(|sim| {
            let stamp = sim.oracle().unwrap().expected(Lpn(1));
            let store = sim.device_mut().payloads_mut().unwrap();
            store.stage(Lpn(1), stamp, &[0xee; 4096]);
        });
        let (e, got) = call(&mut c, Command::Read, 0, 0, Err(2 * 4096));
        let m = b.live_metrics();
        assert_eq!(m.verify.failures, 0, "the right version");
        if verify {
            assert_eq!(e, NbdError::EIO.0);
            let v = m.verify.bytes.unwrap();
            assert_eq!(
                (v.pages_compared, v.mismatches, v.failed_commands),
                (2, 1, 1)
            );
            let log = log.lock().unwrap();
            assert!(
                log[0].contains("read at byte 0 (+8192 B)")
                    && log[0].contains("read of LPN 1: right version (stamp 1), wrong bytes"),
                "{log:?}"
            );
        } else {
            assert_eq!((e, &got[4096..]), (0, &[0xee; 4096][..]));
        }
        disconnect(c, h);
    }
}

#[test]
fn verify_after_a_power_cut_learns_the_versions_recovery_brought_back() {
    let (b, log) = verifying("leaftl", &["write_buffer_pages=64"], true);
    let (mut c, h) = connect(b.clone());
    go(&mut c);
    let old = bytes(4, 16 * 4096);
    write(&mut c, 0, &old, 0);
    assert_eq!(call(&mut c, Command::Flush, 0, 0, Err(0)).0, 0);
    // Unflushed: an overwrite of four pages and two new pages, in LeaFTL's volatile buffer.
    write(&mut c, 4 * 4096, &bytes(5, 4 * 4096), 0);
    write(&mut c, 64 * 4096, &bytes(6, 2 * 4096), 0);
    let line = b.cut_power(CutTrigger::Signal).unwrap().to_string();
    assert!(line.contains("6 unflushed pages lost"), "{line}");
    // The acknowledged versions were lost: the last flushed ones read back, without a
    // false mismatch; the flushed pages are still compared byte for byte.
    assert_eq!(read(&mut c, 0, 16 * 4096), old);
    assert_eq!(read(&mut c, 64 * 4096, 2 * 4096), vec![0; 2 * 4096]);
    let m = b.live_metrics();
    let v = m.verify.bytes.unwrap();
    assert_eq!(
        (v.mismatches, v.failed_commands),
        (0, 0),
        "{:?}",
        log.lock()
    );
    assert_eq!((v.pages_learned, v.pages_compared), (6, 12));
    assert_eq!(m.verify.failures, 0);
    // Learned versions are compared from then on.
    assert_eq!(read(&mut c, 4 * 4096, 4096), &old[4 * 4096..5 * 4096]);
    assert_eq!(b.live_metrics().verify.bytes.unwrap().pages_compared, 13);
    disconnect(c, h);
}

/// A write's outcome seen by a client: its NBD error, or the connection gone before its reply.
fn try_write(c: &mut UnixStream, offset: u64, data: &[u8], flags: u16) -> std::io::Result<u32> {
    let r = Request {
        flags,
        cmd: Command::Write,
        cookie: 7,
        offset,
        len: data.len() as u32,
    };
    c.write_all(&r.to_bytes())?;
    c.write_all(data)?;
    let mut b = [0u8; 16];
    c.read_exact(&mut b)?;
    assert_eq!(
        u32::from_be_bytes(b[..4].try_into().unwrap()),
        SIMPLE_REPLY_MAGIC
    );
    Ok(u32::from_be_bytes(b[4..8].try_into().unwrap()))
}

/// `serve --power-cut-every N` on every recoverable FTL: each cut strikes inside a request's
/// flash work (host programs, GC, mapping write-back); the write being served fails, every
/// connection closes (an idle one too), the client connects again and retries, and every
/// acknowledged FUA write reads back afterwards. Also behind a power-loss-protected write
/// buffer, whose capacitor flush must not hide where the cut struck.
#[test]
fn live_cuts_close_every_connection_and_keep_acknowledged_writes() {
    let plp: &[&str] = &["write_buffer=64KiB", "power_loss_protection=on"];
    let cases = learnedftl::ftl::RECOVERABLE
        .iter()
        .map(|&f| (f, &[][..]))
        .chain([("dftl", plp)]);
    for (ftl, set) in cases {
        let dir = std::env::temp_dir().join(format!(
            "lftl-live-cut-{}-{ftl}-{}",
            std::process::id(),
            set.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let conns = Arc::new(Connections::default());
        let b = Arc::new(
            SimBackend::new(sim(ftl, set), "t", Timing::None, None)
                .unwrap()
                .close_on_cut(conns.clone()),
        );
        b.plan_cuts(25, 3).unwrap();
        {
            let (b, conns) = (b.clone(), conns.clone());
            std::thread::spawn(move || serve(Listener::Unix(listener), b, conns, |_| {}));
        }
        let open = || {
            let mut c = UnixStream::connect(&path).unwrap();
            go(&mut c);
            c
        };
        let mut idle = open();
        let mut c = open();
        // 8 MiB written over and over in 4-32 KiB FUA writes: GC and write-back run too.
        let span = 8u64 << 20;
        let mut image = vec![0u8; span as usize];
        let (mut failed, mut n) = (0, 0u64);
        while n < 3000 && b.live_metrics().power_cuts.map_or(0, |p| p.count) < 8 {
            n += 1;
            let len = 4096 * (1 + learnedftl::seed::mix(9, n, 0) % 8);
            let offset = 4096 * (learnedftl::seed::mix(9, n, 1) % ((span - len) / 4096));
            let data = bytes(n, len as usize);
            // Retried on a new connection until acknowledged.
            loop {
                match try_write(&mut c, offset, &data, CMD_FLAG_FUA) {
                    Ok(0) => break,
                    Ok(_) | Err(_) => {
                        failed += 1;
                        c = open();
                    }
                }
            }
            image[offset as usize..(offset + len) as usize].copy_from_slice(&data);
        }
        let cuts = b
            .report("tiny", 3, serde_json::json!({}))
            .live_power_cuts
            .unwrap();
        assert!(cuts.len() >= 8, "{ftl}: {} cuts in {n} writes", cuts.len());
        assert_eq!(
            failed,
            cuts.len(),
            "{ftl}: every cut fails the write it struck in"
        );
        assert!(cuts
            .iter()
            .all(|c| c.command.is_some() && c.pages_read_back_wrong == 0));
        // Some tore a program or erase (others fell on a FUA's flush, which programs nothing
        // on most FTLs, and struck after it).
        let torn = cuts.iter().filter(|c| c.struck_in != "between_operations");
        assert!(torn.count() >= 1, "{ftl}: {cuts:?}");
        assert!(
            cuts.iter().all(|c| c.connections_closed >= 1),
            "{ftl}: {cuts:?}"
        );
        // The idle connection was closed by the first cut.
        let mut byte = [0u8; 1];
        assert!(matches!(idle.read(&mut byte), Ok(0) | Err(_)), "{ftl}");
        let mut c = open();
        assert_eq!(read(&mut c, 0, span as u32), image, "{ftl}");
        assert_eq!(b.live_metrics().verify.failures, 0, "{ftl}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
