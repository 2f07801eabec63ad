//! End-to-end tests of `learnedftl serve` with real NBD clients from Debian packages: fio's
//! `nbd` engine with crc32c verification, qemu-io pattern checks, an nbdcopy round trip.
//! A test whose client is not installed is skipped with a message, except in CI (`CI` set),
//! where the client must be there (`.ci/run` installs them). `serve --verify` is tested with
//! the workspace's own client, so always.

mod common;

use learnedftl_nbd::client;
use learnedftl_nbd::proto::{Command as Cmd, Request};
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A scratch directory removed when the test ends, pass or fail.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn join(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// A running `learnedftl serve` on the tiny preset, stopped by PID (SIGTERM) when dropped.
struct Server {
    child: Child,
    /// `127.0.0.1:PORT` or `unix:PATH`.
    at: String,
    /// The server's stderr, line by line (also copied to the test's stderr).
    log: mpsc::Receiver<String>,
    /// Its stdout after the first line, line by line.
    out: mpsc::Receiver<String>,
}

impl Server {
    /// Serves `ftl` on `tiny` with `extra` options, `--timing none` unless they say.
    fn start(ftl: &str, extra: &[&str]) -> Server {
        let timing = match extra.contains(&"--timing") {
            true => &[][..],
            false => &["--timing", "none"][..],
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_learnedftl"))
            .args(["serve", "--ftl", ftl, "--preset", "tiny"])
            .args(timing)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the server");
        let stderr = child.stderr.take().unwrap();
        let (log_tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("{line}");
                log_tx.send(line).ok();
            }
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, out) = mpsc::channel();
        std::thread::spawn(move || {
            // Keep reading to the end, so the server never writes into a closed pipe.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                tx.send(line).ok();
            }
        });
        let line = out
            .recv_timeout(Duration::from_secs(60))
            .expect("the server says where it listens within 60 s");
        let at = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Server {
            child,
            at,
            log,
            out,
        }
    }

    /// Sends `signal` (e.g. `USR1`) to the server, by PID.
    fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// Waits (at most 60 s) for a line of the server's stderr containing `needle`; returns it.
    fn wait_log(&self, needle: &str) -> String {
        wait_line(&self.log, needle)
    }

    /// Waits (at most 60 s) for a line of the server's stdout containing `needle`; returns it.
    fn wait_out(&self, needle: &str) -> String {
        wait_line(&self.out, needle)
    }

    fn uri(&self) -> String {
        match self.at.strip_prefix("unix:") {
            Some(path) => format!("nbd+unix:///?socket={path}"),
            None => format!("nbd://{}/", self.at),
        }
    }

    /// Serves `ftl` on a Unix socket in `dir`, its report to a file there (with `extra`
    /// options); returns the server, the socket and the report's path.
    fn on_socket(dir: &Scratch, ftl: &str, extra: &[&str]) -> (Server, PathBuf, PathBuf) {
        let (sock, json) = (dir.join("nbd.sock"), dir.join("report.json"));
        let mut args = vec![
            "--socket",
            sock.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        (Server::start(ftl, &args), sock, json)
    }

    /// Sends SIGTERM and waits (at most 30 s) for a clean exit.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "server exited with {status}");
                return;
            }
            assert!(Instant::now() < deadline, "server did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Waits (at most 60 s) for a line from `lines` containing `needle`; returns it.
fn wait_line(lines: &mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => {}
            Err(e) => panic!("no server line with {needle:?} within 60 s: {e}"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Only if stop() was not reached (a failed test): by PID, never by name.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a client with a time limit of 120 s.
fn run(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the client");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("{cmd:?} took more than 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn fio_verifies(ftl: &str, sets: &[&str]) {
    let Some(fio) = common::client("fio", "fio") else {
        return;
    };
    let dir = Scratch::new(&format!("nbd-fio-{ftl}-{}", sets.len()));
    let json = dir.join("report.json");
    let mut args = vec!["--listen", "127.0.0.1:0", "--json", json.to_str().unwrap()];
    for kv in sets {
        args.extend(["--set", kv]);
    }
    let server = Server::start(ftl, &args);
    run(Command::new(fio).args([
        "--name=verify",
        "--ioengine=nbd",
        &format!("--uri={}", server.uri()),
        "--rw=randwrite",
        "--bsrange=4k-64k",
        "--size=24m",
        "--iodepth=16",
        "--verify=crc32c",
        "--do_verify=1",
        "--verify_fatal=1",
        // No verify state file in the working directory.
        "--verify_state_save=0",
        "--randseed=7",
    ]));
    server.stop();
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for key in ["ftl", "preset", "seed", "config", "phases", "result"] {
        assert!(r.get(key).is_some(), "report has no {key}");
    }
    assert_eq!(r["ftl"], ftl);
    let m = &r["result"];
    assert_eq!(m["phase"], "serve");
    assert!(m["page_writes"].as_u64().unwrap() >= 6144, "{m}");
    assert!(m["requests"]["read"].as_u64().unwrap() > 0, "{m}");
    assert_eq!(m["verify"]["failures"], 0);
}

#[test]
fn fio_verifies_crc32c_on_ideal() {
    fio_verifies("ideal", &[]);
}

#[test]
fn fio_verifies_crc32c_on_tpftl() {
    fio_verifies("tpftl", &[]);
}

#[test]
fn fio_verifies_crc32c_on_learnedftl() {
    fio_verifies("learnedftl", &[]);
}

/// fio's own verification on a drive with every layer of SPEC §12 on (docs/device.md).
#[test]
fn fio_verifies_crc32c_on_a_drive_as_built() {
    fio_verifies(
        "learnedftl",
        &[
            "write_buffer=1MiB",
            "cmd_overhead_ns=2000",
            "cell=tlc",
            "slc_cache=4MiB",
            "suspend=on",
            "planes_per_lun=2",
            "multi_plane=on",
        ],
    );
}

#[test]
fn qemu_io_patterns_over_a_unix_socket() {
    let Some(qemu_io) = common::client("qemu-io", "qemu-utils") else {
        return;
    };
    let dir = Scratch::new("nbd-qemu-io");
    let sock = dir.join("nbd.sock");
    let server = Server::start("leaftl", &["--socket", sock.to_str().unwrap()]);
    let mut cmd = Command::new(qemu_io);
    cmd.args(["-f", "raw", &server.uri()]);
    for c in [
        "write -P 0xab 0 256k",
        "write -P 0xcd 4608 1k",
        "flush",
        "read -P 0xab 0 4608",
        "read -P 0xcd 4608 1k",
        "read -P 0xab 5632 256512",
        "write -z 65536 8k",
        "read -P 0 65536 8k",
        "discard 131072 64k",
        "read -P 0xab 196608 65536",
    ] {
        cmd.args(["-c", c]);
    }
    let out = run(&mut cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("Pattern verification failed"), "{text}");
    assert_eq!(text.matches("read ").count(), 5, "{text}");
    server.stop();
    assert!(!sock.exists(), "the socket is removed on exit");
}

#[test]
fn nbdcopy_round_trip_of_a_random_file() {
    let Some(nbdcopy) = common::client("nbdcopy", "libnbd-bin") else {
        return;
    };
    let dir = Scratch::new("nbd-nbdcopy");
    let (src, back) = (dir.join("src"), dir.join("back"));
    let data = common::noise(0x9e37_79b9_7f4a_7c15, (5 << 20) + 4096);
    std::fs::write(&src, &data).unwrap();
    // Pages in a sparse file rather than memory.
    let pages = dir.join("pages.img");
    let server = Server::start(
        "dftl",
        &[
            "--listen",
            "127.0.0.1:0",
            "--payload-file",
            pages.to_str().unwrap(),
        ],
    );
    run(Command::new(&nbdcopy).args([Path::new(&src).as_os_str(), server.uri().as_ref()]));
    run(Command::new(&nbdcopy).args([server.uri().as_ref(), Path::new(&back).as_os_str()]));
    server.stop();
    let got = std::fs::read(&back).unwrap();
    assert_eq!(got.len(), 120 << 20, "the whole export comes back");
    assert!(got[..data.len()] == data[..], "the file comes back intact");
    assert!(got[data.len()..].iter().all(|&b| b == 0));
    assert_eq!(std::fs::metadata(&pages).unwrap().len(), 128 << 20);
}

/// Runs qemu-io commands on `server`'s export; fails on a pattern mismatch.
fn qemu_io(qemu_io: &Path, server: &Server, commands: &[&str]) {
    let mut cmd = Command::new(qemu_io);
    cmd.args(["-f", "raw", &server.uri()]);
    for c in commands {
        cmd.args(["-c", c]);
    }
    let out = run(&mut cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("Pattern verification failed"), "{text}");
    let reads = commands.iter().filter(|c| c.starts_with("read ")).count();
    assert_eq!(text.matches("read ").count(), reads, "{text}");
}

/// Runs `before` and a sleep in one qemu-io connection (with `flags` before the URI) and cuts
/// the server's power (`SIGUSR1`, its `nth` cut) during the sleep: the cut closes the
/// connection the client holds, so its next command fails, as on a drive that lost power; a
/// new connection then runs `after` on the recovered device, every read matching its pattern.
fn cut_while_connected(
    qemu: &Path,
    server: &Server,
    flags: &[&str],
    before: &[&str],
    after: &[&str],
    nth: u32,
) {
    let mut cmd = Command::new(qemu);
    cmd.args(["-f", "raw"]).args(flags).arg(server.uri());
    for c in before.iter().chain(&["sleep 1500", "read 0 4k"]) {
        cmd.args(["-c", c]);
    }
    let client = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    server.signal("USR1");
    let line = server.wait_log(&format!("power cut {nth}"));
    assert!(line.contains("1 connections closed"), "{line}");
    let out = client.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.contains("read failed"),
        "the held connection survived the cut: {text}"
    );
    qemu_io(qemu, server, after);
}

#[test]
fn sigusr1_cuts_the_power_and_acknowledged_data_reads_back() {
    let Some(qemu) = common::client("qemu-io", "qemu-utils") else {
        return;
    };
    let dir = Scratch::new("nbd-cut");
    let (server, _, json) = Server::on_socket(&dir, "dftl", &[]);
    // Acknowledged writes (one sub-page), some flushed, then a cut while the client is away.
    qemu_io(
        &qemu,
        &server,
        &[
            "write -P 0xa5 0 8M",
            "flush",
            "write -P 0x3c 1M 256k",
            "write -P 0x77 4608 1k",
        ],
    );
    server.signal("USR1");
    let line = server.wait_log("power cut 1");
    assert!(line.contains("flash reads"), "{line}");
    let reads = [
        "read -P 0xa5 0 4608",
        "read -P 0x77 4608 1k",
        "read -P 0xa5 5632 1042944",
        "read -P 0x3c 1M 256k",
        "read -P 0xa5 1280k 6912k",
    ];
    qemu_io(&qemu, &server, &reads);
    // A second cut while a client keeps its connection open: qemu-io sleeps between
    // commands, the cut closes its connection, and a new one reads back.
    let after = [reads[0], reads[1], reads[2], "read -P 0x11 2M 64k"];
    cut_while_connected(&qemu, &server, &[], &["write -P 0x11 2M 64k"], &after, 2);
    server.stop();
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let m = &r["result"];
    assert_eq!(m["power_cuts"]["count"], 2, "{m}");
    assert_eq!(m["power_cuts"]["lost_unflushed_pages"], 0, "{m}");
    assert!(
        m["power_cuts"]["recovery_flash_reads"].as_u64().unwrap() > 0,
        "{m}"
    );
    assert!(
        m["power_cuts"]["recovery_sim_seconds"].as_f64().unwrap() > 0.0,
        "{m}"
    );
    assert_eq!(m["verify"]["failures"], 0, "{m}");
}

/// A consumer drive's contract through a real client: behind a volatile write buffer that
/// drains only for room or at a FLUSH, a cut loses the writes no flush covered (they read back
/// as before) and nothing flushed; with power-loss protection nothing acknowledged is lost.
#[test]
fn sigusr1_loses_only_unflushed_writes_behind_a_volatile_write_buffer() {
    let Some(qemu) = common::client("qemu-io", "qemu-utils") else {
        return;
    };
    for (plp, lost) in [("off", 65), ("on", 0)] {
        let dir = Scratch::new(&format!("nbd-cut-buffer-{plp}"));
        let plp_set = format!("power_loss_protection={plp}");
        let (server, _, json) = Server::on_socket(
            &dir,
            "tpftl",
            &[
                "--set",
                "write_buffer=1MiB",
                "--set",
                "write_buffer_drain=full",
                "--set",
                &plp_set,
            ],
        );
        // The cut strikes while qemu-io sleeps after its writes, with its connection open:
        // it flushes when it closes; write-back caching, or qemu flushes after every write
        // (its default is write-through).
        let reads: &[&str] = if lost > 0 {
            &["read -P 0xa5 0 8M"]
        } else {
            &[
                "read -P 0xa5 0 4608",
                "read -P 0x77 4608 1k",
                "read -P 0x3c 1M 256k",
                "read -P 0xa5 1280k 6912k",
            ]
        };
        let before = [
            "write -P 0xa5 0 8M",
            "flush",
            "write -P 0x3c 1M 256k",
            "write -P 0x77 4608 1k",
        ];
        cut_while_connected(&qemu, &server, &["-t", "writeback"], &before, reads, 1);
        server.stop();
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let m = &r["result"];
        // 64 pages of the 256 KiB write and the page the 1 KiB write merged into.
        assert_eq!(m["power_cuts"]["lost_unflushed_pages"], lost, "{plp}: {m}");
        assert_eq!(m["verify"]["failures"], 0, "{m}");
        assert!(m["controller"]["flushes"].as_u64().unwrap() >= 1, "{m}");
    }
}

#[test]
fn serve_verify_answers_eio_for_wrong_reads_and_reports_the_counts() {
    let dir = Scratch::new("nbd-verify");
    // Reads of about one LPN in two return another LPN's page: of LPNs 0-3, 0, 1 and 2.
    let (server, sock, json) =
        Server::on_socket(&dir, "ideal", &["--set", "inject=wrong-read:2", "--verify"]);
    let (_, _, mut tx, mut rx) = client::connect(UnixStream::connect(&sock).unwrap()).unwrap();
    let mut call = |cmd, offset, data: Option<&[u8]>| {
        let len = data.map_or(4096, |d| d.len() as u32);
        let mut out = Vec::new();
        let r = Request {
            flags: 0,
            cmd,
            cookie: 1,
            offset,
            len,
        };
        client::encode(&mut out, &r, data);
        tx.send(&out).unwrap();
        let (error, _) = rx.reply().unwrap();
        if cmd == Cmd::Read && error == 0 {
            rx.data(&mut vec![0; len as usize]).unwrap();
        }
        error
    };
    assert_eq!(call(Cmd::Write, 0, Some(&[7; 4 * 4096])), 0);
    let errors: Vec<u32> = (0..4).map(|p| call(Cmd::Read, p * 4096, None)).collect();
    assert_eq!(errors, [5, 5, 5, 0], "NBD_EIO for the wrong reads");
    let line = server.wait_log("answered NBD_EIO");
    assert!(line.contains("read at byte 0 (+4096 B)"), "{line}");
    drop((tx, rx));
    server.stop();
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["config"]["workload"]["nbd"]["verify"], true);
    let v = &r["result"]["verify"];
    assert_eq!(v["failures"], 3, "{v}");
    let b = &v["bytes"];
    assert_eq!(b["pages_compared"], 1, "{v}");
    assert_eq!(b["pages_learned"], 0, "{v}");
    assert_eq!(b["mismatches"], 0, "{v}");
    assert_eq!(b["failed_commands"], 3, "{v}");
}

#[test]
fn serve_exports_the_capacity_asked_for() {
    let dir = Scratch::new("nbd-capacity");
    let (server, sock, json) = Server::on_socket(&dir, "ideal", &["--capacity", "121MiB"]);
    let note = server.wait_log("capacity: ");
    assert!(
        note.contains(
            "121MiB asked (126877696 B), rounded up to 65 blocks per plane: 127795200 B logical"
        ),
        "{note}"
    );
    // The export is the sized device's logical space (tiny: 4 x 2 x 65 blocks of 64 pages, 15/16).
    let (size, _, tx, rx) = client::connect(UnixStream::connect(&sock).unwrap()).unwrap();
    assert_eq!(size, 65 * 512 * 15 / 16 * 4096);
    drop((tx, rx));
    server.stop();
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["config"]["device"]["capacity"], 126877696, "{r}");
    assert_eq!(r["config"]["device"]["geometry"]["blocks_per_plane"], 65);
}

#[test]
fn serve_realtime_reports_lateness_in_stats_lines_and_json() {
    let dir = Scratch::new("nbd-lateness");
    let (server, sock, json) = Server::on_socket(
        &dir,
        "ideal",
        &["--timing", "realtime", "--stats-interval", "100ms"],
    );
    let (_, _, mut tx, mut rx) = client::connect(UnixStream::connect(&sock).unwrap()).unwrap();
    // One write, then four reads in flight at once.
    let mut out = Vec::new();
    let w = Request {
        flags: 0,
        cmd: Cmd::Write,
        cookie: 0,
        offset: 0,
        len: 4 * 4096,
    };
    client::encode(&mut out, &w, Some(&[3; 4 * 4096]));
    tx.send(&out).unwrap();
    assert_eq!(rx.reply().unwrap(), (0, 0));
    out.clear();
    for k in 0..4 {
        let r = Request {
            cmd: Cmd::Read,
            cookie: k + 1,
            offset: k * 4096,
            len: 4096,
            ..w
        };
        client::encode(&mut out, &r, None);
    }
    tx.send(&out).unwrap();
    for _ in 0..4 {
        assert_eq!(rx.reply().unwrap().0, 0);
        rx.data(&mut [0; 4096]).unwrap();
    }
    let line = server.wait_out("lateness: 5 replies");
    assert!(
        line.contains("p99.9") && line.contains("socket writes took"),
        "{line}"
    );
    drop((tx, rx));
    server.stop();
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let l = &r["lateness_us"];
    assert_eq!(l["count"], 5, "{l}");
    let (p50, max) = (l["p50"].as_f64().unwrap(), l["max"].as_f64().unwrap());
    assert!(0.0 <= p50 && p50 <= max, "{l}");
    assert_eq!(r["reply_write_us"]["count"], 5, "{r}");
    assert_eq!(r["result"]["requests"]["read"], 4, "{r}");
}

/// fio's nbd engine, two jobs on two connections, recorded by a realtime server as a
/// learnedftl recording; the recording then replays closed-loop on every FTL with the oracle
/// on, and its one phase (the fio run, marked from outside on the wall clock) gets a
/// simulated duration.
#[test]
fn a_recording_of_fio_replays_closed_loop_on_every_ftl() {
    let Some(fio) = common::client("fio", "fio") else {
        return;
    };
    let dir = Scratch::new("nbd-record");
    let rec = dir.join("fio.rec");
    let server = Server::start(
        "tpftl",
        &[
            "--listen",
            "127.0.0.1:0",
            "--timing",
            "realtime",
            "--record",
            rec.to_str().unwrap(),
            "--record-format",
            "learnedftl",
        ],
    );
    let unix_ns = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    };
    let start = unix_ns();
    run(Command::new(fio).args([
        "--name=rec",
        "--ioengine=nbd",
        &format!("--uri={}", server.uri()),
        "--rw=randrw",
        "--bs=4k",
        "--size=8m",
        "--io_size=2m",
        "--iodepth=4",
        "--numjobs=2",
        "--randseed=3",
    ]));
    let end = unix_ns();
    server.stop();
    let text = std::fs::read_to_string(&rec).unwrap();
    let mut conns = std::collections::BTreeSet::new();
    let mut lines = 0;
    for l in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let (issue, done): (u64, u64) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        assert!(done >= issue, "{l}");
        conns.insert(f[2].to_string());
        lines += 1;
    }
    assert!(lines >= 1024, "{lines} requests recorded");
    assert!(conns.len() >= 2, "connections {conns:?}");
    let phases = dir.join("fio.phases");
    // 2 jobs x 2 MiB of 4 KiB requests.
    std::fs::write(&phases, format!("fio,{start},{end},1024\n")).unwrap();
    let json = dir.join("replay.json");
    let out = run(Command::new(env!("CARGO_BIN_EXE_learnedftl")).args([
        "compare",
        "--preset",
        "tiny",
        "--trace",
        rec.to_str().unwrap(),
        "--replay",
        "closed",
        "--phases",
        phases.to_str().unwrap(),
        "--verify",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("closed-loop replay, application phases"),
        "{table}"
    );
    let runs: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for r in runs.as_array().unwrap() {
        let ftl = &r["ftl"];
        assert_eq!(r["result"]["verify"]["failures"], 0, "{ftl}");
        let p = &r["trace"]["closed_loop"]["phases"][0];
        assert_eq!(p["name"], "fio");
        assert_eq!(p["requests"].as_u64(), Some(lines), "{ftl}: {p}");
        assert!(p["simulated_s"].as_f64().unwrap() > 0.0, "{ftl}: {p}");
        assert!(
            p["simulated_ops_per_sec"].as_f64().unwrap() > 0.0,
            "{ftl}: {p}"
        );
        // The FTL that served the recording gives its simulated completions back exactly.
        if ftl == "tpftl" {
            let (sim, rec) = (&p["simulated_s"], &p["recorded_s"]);
            assert!(
                (sim.as_f64().unwrap() - rec.as_f64().unwrap()).abs() < 1e-6,
                "{p}"
            );
        }
    }
}

/// `serve --power-cut-every DURATION`: cuts at seeded instants while a client writes; each
/// closes the connection, the client connects again at once and is served, and the report
/// lists every cut. Bad values are refused, naming the option.
#[test]
fn power_cut_every_duration_cuts_a_writing_client_which_reconnects() {
    let dir = Scratch::new("nbd-cut-every");
    let (server, sock, json) = Server::on_socket(
        &dir,
        "tpftl",
        &["--power-cut-every", "150ms", "--seed", "5"],
    );
    let connect = || client::connect(UnixStream::connect(&sock).unwrap()).unwrap();
    let (_, _, mut tx, mut rx) = connect();
    let (start, mut n, mut lost) = (Instant::now(), 0u64, 0);
    let mut out = Vec::new();
    while start.elapsed() < Duration::from_millis(1500) {
        n += 1;
        let w = Request {
            flags: 0,
            cmd: Cmd::Write,
            cookie: n,
            offset: (n % 1024) * 65536,
            len: 65536,
        };
        out.clear();
        client::encode(&mut out, &w, Some(&[n as u8; 65536]));
        let ok = tx
            .send(&out)
            .and_then(|()| rx.reply())
            .is_ok_and(|r| r.0 == 0);
        if !ok {
            // The cut closed the connection: the device serves again at once.
            lost += 1;
            let failed = Instant::now();
            (_, _, tx, rx) = connect();
            assert!(failed.elapsed() < Duration::from_secs(1));
        }
    }
    server.stop();
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let cuts = r["live_power_cuts"].as_array().unwrap();
    assert!(cuts.len() >= 5, "{} cuts in 1.5 s", cuts.len());
    assert!(
        lost >= 1 && lost <= cuts.len(),
        "{lost} writes failed, {} cuts",
        cuts.len()
    );
    for c in cuts {
        assert_eq!(c["trigger"], "every_duration", "{c}");
        assert_eq!(c["pages_read_back_wrong"], 0, "{c}");
        assert!(c["recovery_wall_ms"].as_f64().unwrap() > 0.0, "{c}");
    }
    assert_eq!(r["seed"], 5);
    assert_eq!(r["result"]["power_cuts"]["count"], cuts.len());
    assert_eq!(r["result"]["verify"]["failures"], 0);
    for (bad, says) in [("0", "'0'"), ("2 weeks", "'2 weeks'")] {
        let out = Command::new(env!("CARGO_BIN_EXE_learnedftl"))
            .args(["serve", "--preset", "tiny", "--power-cut-every", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("--power-cut-every") && err.contains(says),
            "{err}"
        );
    }
}

/// `serve --state DIR`: data written and flushed survives an orderly stop and a restart
/// (through the FTL's recovery); pulling the power (SIGUSR2) behind a volatile write buffer
/// loses what no FLUSH covered; another FTL, or a state whose server never saved it, is
/// refused with the reason.
#[test]
fn serve_state_survives_restarts_and_refuses_a_mismatch() {
    let Some(qemu) = common::client("qemu-io", "qemu-utils") else {
        return;
    };
    let dir = Scratch::new("nbd-state");
    let state = dir.join("state");
    let sock = dir.join("nbd.sock");
    let start = |ftl: &str| {
        Server::start(
            ftl,
            &[
                "--socket",
                sock.to_str().unwrap(),
                "--state",
                state.to_str().unwrap(),
                "--set",
                "write_buffer=1MiB",
                "--set",
                "write_buffer_drain=full",
            ],
        )
    };
    let server = start("dftl");
    qemu_io(&qemu, &server, &["write -P 0x5a 0 4M", "flush"]);
    server.stop();
    let server = start("dftl");
    let line = server.wait_log("resumed the state");
    assert!(line.contains("flash reads"), "{line}");
    // Flushed (qemu-io flushes as it closes), then written without a flush and unplugged.
    qemu_io(
        &qemu,
        &server,
        &["read -P 0x5a 0 4M", "write -P 0x11 0 64k"],
    );
    let mut cmd = Command::new(&qemu);
    cmd.args(["-f", "raw", "-t", "writeback", &server.uri()]);
    cmd.args(["-c", "write -P 0x22 1M 64k", "-c", "sleep 3000"]);
    let mut held = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    server.signal("USR2");
    server.wait_log("power pulled");
    held.kill().ok();
    held.wait().ok();
    let server = start("dftl");
    qemu_io(
        &qemu,
        &server,
        &[
            "read -P 0x11 0 64k",
            "read -P 0x5a 1M 64k",
            "read -P 0x5a 2M 2M",
        ],
    );
    server.stop();
    // The server refuses to start on the state with FTL `ftl`, saying `why`.
    let refused = |ftl: &str, why: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_learnedftl"))
            .args(["serve", "--preset", "tiny", "--ftl", ftl, "--state"])
            .arg(&state)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(why), "{err}");
    };
    // Another FTL's recovery cannot read dftl's flash.
    refused("tpftl", "ftl \"dftl\"");
    // A server that died without saving leaves its marker: the state is not resumed.
    std::fs::write(state.join("serving"), "1\n").unwrap();
    refused("dftl", "stopped without saving");
}
