//! End-to-end tests of the `learnedftl` binary: valid JSON with the documented keys, and clear
//! errors for bad input.

mod common;

use std::process::Command;

/// A scratch directory removed when the test ends, pass or fail.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn join(&self, file: &str) -> std::path::PathBuf {
        self.0.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn learnedftl(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_learnedftl"))
        .args(args)
        .output()
        .expect("run the binary");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the binary with `args`, which must fail saying `says` (never a panic); returns stderr.
fn refused(args: &[&str], says: &str) -> String {
    let (ok, _, stderr) = learnedftl(args);
    assert!(!ok, "{args:?} succeeded");
    assert!(stderr.contains(says), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    stderr
}

const SMALL: &[&str] = &[
    "--preset",
    "tiny",
    "--precondition",
    "randwrite:512k:1.5",
    "--rw",
    "randread",
    "--numjobs",
    "8",
    "--number-ios",
    "200",
    "--verify",
    "--quiet",
    "--json",
    "-",
];

#[test]
fn run_writes_json_with_every_documented_key() {
    let mut args = vec!["run", "--ftl", "ideal"];
    args.extend_from_slice(SMALL);
    let (ok, stdout, stderr) = learnedftl(&args);
    assert!(ok, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("valid JSON on stdout");
    for key in ["ftl", "preset", "seed", "config", "phases", "result"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["ftl"], "ideal");
    assert_eq!(v["preset"], "tiny");
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3);
    assert_eq!(phases[0]["phase"], "precondition");
    // The device settles after preconditioning (default --settle auto), a phase of its own.
    assert_eq!(phases[1]["phase"], "settle");
    assert_eq!(v["config"]["settle"], "auto");
    // The GC policy and the line counts it gave.
    let gc = &v["config"]["ftl"]["gc"];
    assert_eq!(gc["rule"], "reserve");
    assert_eq!(
        (gc["fg_free_lines"].as_u64(), gc["bg_free_lines"].as_u64()),
        (Some(2), Some(4))
    );
    let r = &v["result"];
    for ptr in [
        "/iops",
        "/bandwidth_mib_s",
        "/latency_us/read/p99",
        "/latency_us/read/p999",
        "/latency_us/write/mean",
        "/latency_us/all/p9999",
        "/latency_us/all/max",
        "/page_reads",
        "/page_writes",
        "/lookups/single",
        "/lookups/double",
        "/lookups/triple",
        "/cmt_hit_ratio",
        "/model_hit_ratio",
        "/flash/reads/user",
        "/flash/reads/translation_read",
        "/flash/programs/gc_data",
        "/flash/erases",
        "/waf",
        "/gc/events",
        "/gc/passed_over",
        "/gc/pages_moved",
        "/dram_bytes/total",
        "/dram_bytes/page_map",
        "/energy_uj",
        "/verify/checked",
        "/verify/failures",
        "/wall_seconds",
        "/sim_page_ops_per_sec",
    ] {
        assert!(r.pointer(ptr).is_some(), "result lacks {ptr}");
    }
    assert_eq!(r["page_reads"], 1600);
    assert_eq!(r["verify"]["checked"], 1600);
    assert_eq!(r["verify"]["failures"], 0);
    assert!(phases[0]["gc"]["events"].as_u64().unwrap() > 0);
    // The table goes to stderr when JSON takes stdout.
    assert!(
        stderr.contains("precondition") && stderr.contains("sim Mops/s"),
        "{stderr}"
    );
}

#[test]
fn settle_off_with_femu_thresholds_reproduces_the_earlier_defaults() {
    // The built-in workload on tiny (randwrite:512k:2, then 64 jobs x 4096 random reads). The
    // numbers are what the defaults gave before the shared GC rule, the settle phase and
    // gap-filling timing (commit b5653b7): the measured phase paid the preconditioning's dirty
    // entries.
    let base = [
        "run", "--ftl", "dftl", "--preset", "tiny", "--quiet", "--json", "-",
    ];
    let report = |extra: &[&str]| -> serde_json::Value {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let (ok, stdout, stderr) = learnedftl(&args);
        assert!(ok, "{stderr}");
        serde_json::from_str(&stdout).unwrap()
    };
    let v = report(&[
        "--settle",
        "off",
        "--set",
        "gc=femu",
        "--set",
        "timing=femu",
    ]);
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    let (pre, m) = (&phases[0], &v["result"]);
    assert_eq!(pre["flash"]["programs"]["total"], 220_030);
    assert_eq!(pre["gc"]["events"], 369);
    assert_eq!(m["flash"]["programs"]["translation_writeback"], 921);
    assert_eq!(m["latency_us"]["read"]["p99"], 1960.959);
    // Settled (the default): the measured reads write nothing back.
    let v = report(&[]);
    assert_eq!(v["phases"][1]["phase"], "settle");
    assert_eq!(v["result"]["flash"]["programs"]["translation_writeback"], 0);
}

#[test]
fn compare_prints_one_row_per_ftl_and_a_json_array() {
    let dir = Scratch::new("learnedftl-cli");
    let json = dir.join("out.json");
    let mut args = vec!["compare", "--ftl", "ideal,ideal"];
    args.extend_from_slice(&SMALL[..SMALL.len() - 2]);
    args.extend_from_slice(&["--json", json.to_str().unwrap()]);
    let (ok, stdout, stderr) = learnedftl(&args);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ideal ")).count(),
        2,
        "{stdout}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    // Same seed, same workload: the same simulated result.
    assert_eq!(v[0]["result"]["iops"], v[1]["result"]["iops"]);
}

#[test]
fn job_files_run_as_phases() {
    let dir = Scratch::new("learnedftl-job");
    let job = dir.join("two.fio");
    let path = job.to_str().unwrap();
    // Runs the job file holding `text` on tiny with `extra` options; the JSON report.
    let run = |text: &str, extra: &[&str]| -> serde_json::Value {
        std::fs::write(&job, text).unwrap();
        let mut args = vec![
            "run", "--preset", "tiny", "--job", path, "--quiet", "--json", "-",
        ];
        args.extend_from_slice(extra);
        let (ok, stdout, stderr) = learnedftl(&args);
        assert!(ok, "{stderr}");
        serde_json::from_str(&stdout).unwrap()
    };
    // The error running the job file holding `text` gives.
    let refused = |text: &str| -> String {
        std::fs::write(&job, text).unwrap();
        let (ok, _, stderr) = learnedftl(&["run", "--preset", "tiny", "--job", path]);
        assert!(!ok);
        stderr
    };
    let v = run(
        "[global]\nbs=64k\n[fill]\nrw=write\nsize=50%\n[read]\nstonewall\nrw=randread\nbs=4k\nnumjobs=4\nnumber_ios=100\n",
        &["--verify"],
    );
    assert_eq!(v["phases"].as_array().unwrap().len(), 2);
    assert_eq!(v["result"]["requests"]["read"], 400);
    // settle= before a phase, and --settle off after preconditioning.
    let v = run(
        "[fill]\nrw=write\nbs=64k\nsize=50%\n[read]\nstonewall\nsettle=50ms\nrw=randread\nnumber_ios=100\n",
        &["--precondition", "randwrite:512k:1", "--settle", "off"],
    );
    let names: Vec<&str> = v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["precondition", "fill", "settle", "read"]);
    assert_eq!(
        v["config"]["workload"]["phases"][1]["settle"]["for"],
        50_000_000
    );
    for (text, needle) in [
        ("[a]\nrw=randread\nsettle=later\n", "settle"),
        ("[a]\nrw=randread\nbogus_option=3\n", "bogus_option"),
    ] {
        let stderr = refused(text);
        assert!(
            stderr.contains("two.fio:3") && stderr.contains(needle),
            "{stderr}"
        );
    }
}

#[test]
fn bad_input_gets_a_clear_error() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--preset", "huge"], "unknown preset \"huge\""),
        (
            &["run", "--preset", "tiny", "--set", "channels=0"],
            "channels",
        ),
        (
            &["run", "--preset", "tiny", "--set", "logical_ratio=1.2"],
            "logical_ratio",
        ),
        (
            &["run", "--preset", "tiny", "--set", "no_such_knob=1"],
            "no_such_knob",
        ),
        (
            &["run", "--preset", "tiny", "--set", "missing-equals"],
            "key=value",
        ),
        (
            &["run", "--ftl", "nope", "--preset", "tiny"],
            "unknown FTL \"nope\"",
        ),
        (
            &["run", "--preset", "tiny", "--precondition", "randread:4k:1"],
            "--precondition",
        ),
        (&["run", "--preset", "tiny", "--rw", "sideways"], "--rw"),
        (&["run", "--preset", "tiny", "--settle", "soon"], "--settle"),
        (&["run", "--preset", "tiny", "--set", "gc=lazy"], "gc"),
        (
            &[
                "run",
                "--preset",
                "tiny",
                "--set",
                "gc=reserve",
                "--set",
                "gc_fg_ratio=0.1",
            ],
            "gc_fg_ratio",
        ),
        (
            &["run", "--preset", "tiny", "--rw", "read", "--size", "1t"],
            "beyond the logical space",
        ),
        (
            &["run", "--preset", "tiny", "--job", "/nonexistent/x.fio"],
            "cannot read job file",
        ),
    ];
    for (args, needle) in cases {
        refused(args, needle);
    }
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../learnedftl/tests/fixtures/traces/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn trace_replay_stats_and_convert() {
    let trace = fixture("disksim.trace");
    let (ok, stdout, stderr) = learnedftl(&[
        "run",
        "--preset",
        "tiny",
        "--trace",
        &trace,
        "--fill-unwritten",
        "--verify",
        "--quiet",
        "--json",
        "-",
    ]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("detected format disksim"), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["phases"][0]["phase"], "fill-unwritten");
    assert_eq!(v["result"]["phase"], "trace");
    assert_eq!(v["result"]["unmapped_reads"], 0);
    assert_eq!(v["trace"]["replay"]["requests"], 9);

    let (ok, stdout, stderr) = learnedftl(&["trace", "stats", &trace, "--json"]);
    assert!(ok, "{stderr}");
    let s: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(s["requests"], 9);

    let (ok, converted, stderr) = learnedftl(&["trace", "convert", &trace, "--to", "msr"]);
    assert!(ok, "{stderr}");
    assert_eq!(
        converted.lines().filter(|l| !l.trim().is_empty()).count(),
        9,
        "{converted}"
    );
}

#[test]
fn bad_traces_name_the_line() {
    let dir = Scratch::new("learnedftl-trace");
    let bad = dir.join("bad.disksim");
    std::fs::write(&bad, "0 0 8 8 0\n100 0 x 8 1\n").unwrap();
    let (ok, _, stderr) = learnedftl(&[
        "run",
        "--preset",
        "tiny",
        "--trace",
        bad.to_str().unwrap(),
        "--format",
        "disksim",
        "--quiet",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("bad.disksim:2") && stderr.contains("\"x\""),
        "{stderr}"
    );
    let (ok, _, stderr) = learnedftl(&[
        "run",
        "--preset",
        "tiny",
        "--trace",
        bad.to_str().unwrap(),
        "--format",
        "disksim",
        "--skip-bad-lines",
        "--quiet",
    ]);
    assert!(ok, "{stderr}");
    let far = dir.join("far.disksim");
    std::fs::write(&far, "0 0 999999999 8 1\n").unwrap();
    let (ok, _, stderr) = learnedftl(&[
        "run",
        "--preset",
        "tiny",
        "--trace",
        far.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(
        !ok && stderr.contains("far.disksim:1:") && stderr.contains("refuse"),
        "{stderr}"
    );
    let (ok, _, stderr) = learnedftl(&[
        "run",
        "--preset",
        "tiny",
        "--trace",
        far.to_str().unwrap(),
        "--address-policy",
        "wrap",
        "--quiet",
    ]);
    assert!(ok, "{stderr}");
}

// Hardening (issue 13): no bad input loses data, crashes, or yields a plausible wrong result.

/// Runs the binary with its standard output going to `stdout`; (success, exit code, stderr).
fn learnedftl_to(args: &[&str], stdout: std::process::Stdio) -> (bool, Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_learnedftl"))
        .args(args)
        .stdout(stdout)
        .output()
        .expect("run the binary");
    (
        out.status.success(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A valid DiskSim trace of `n` 4 KiB writes.
fn disksim_lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("{} 0 {} 8 0\n", i * 1000, (i % 1000) * 8))
        .collect()
}

#[test]
fn outputs_never_overwrite_an_input_and_a_failed_run_leaves_no_file() {
    let dir = Scratch::new("learnedftl-overwrite");
    let input = dir.join("in.disksim");
    let text = disksim_lines(50);
    std::fs::write(&input, &text).unwrap();
    let hard = dir.join("hard.disksim");
    std::fs::hard_link(&input, &hard).unwrap();
    let sym = dir.join("sym.disksim");
    std::os::unix::fs::symlink(&input, &sym).unwrap();
    let inp = input.to_str().unwrap();
    for out in [&input, &hard, &sym] {
        let (ok, _, stderr) = learnedftl(&[
            "trace",
            "convert",
            inp,
            "--to",
            "disksim",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(!ok && stderr.contains("is the input"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&input).unwrap(), text);
    }
    // --json over the job file is refused before anything runs.
    let job = dir.join("j.fio");
    std::fs::write(&job, "[a]\nrw=randread\nnumber_ios=10\n").unwrap();
    let j = job.to_str().unwrap();
    let (ok, _, stderr) = learnedftl(&["run", "--preset", "tiny", "--job", j, "--json", j]);
    assert!(!ok && stderr.contains("is the input"), "{stderr}");
    assert!(std::fs::read_to_string(&job).unwrap().starts_with("[a]"));
    // A conversion that fails half-way leaves neither a new file nor a temporary one, and an
    // existing output as it was.
    let bad = dir.join("bad.disksim");
    std::fs::write(&bad, disksim_lines(30) + "1 0 x 8 0\n").unwrap();
    let out = dir.join("out.msr");
    let convert = || {
        learnedftl(&[
            "trace",
            "convert",
            bad.to_str().unwrap(),
            "--to",
            "msr",
            "-o",
            out.to_str().unwrap(),
        ])
    };
    let (ok, _, stderr) = convert();
    assert!(!ok && stderr.contains("bad.disksim:31"), "{stderr}");
    assert!(!out.exists());
    std::fs::write(&out, "old").unwrap();
    assert!(!convert().0);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    let left: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn write_errors_exit_nonzero_and_a_closed_pipe_exits_quietly() {
    use std::process::Stdio;
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        return; // not Linux
    }
    let trace = fixture("disksim.trace");
    let run: &[&str] = &[
        "run",
        "--preset",
        "tiny",
        "--rw",
        "randread",
        "--number-ios",
        "10",
        "--quiet",
    ];
    let to_full = || Stdio::from(std::fs::File::create(full).unwrap());
    for args in [
        &["list"][..],
        run,
        &["compare", "--ftl", "ideal", "--preset", "tiny", "--quiet"],
        &["trace", "stats", &trace],
        &["trace", "convert", &trace, "--to", "msr"],
    ] {
        let (ok, code, stderr) = learnedftl_to(args, to_full());
        assert!(!ok && code == Some(1), "{args:?}: {code:?} {stderr}");
        assert!(stderr.contains("No space left on device"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let mut args = run.to_vec();
    args.extend_from_slice(&["--json", "/dev/full"]);
    let (ok, _, stderr) = learnedftl_to(&args, Stdio::null());
    assert!(!ok && stderr.contains("cannot write /dev/full"), "{stderr}");
    // A reader that goes away (`| head`): exit 141 without a word.
    let dir = Scratch::new("learnedftl-pipe");
    let big = dir.join("big.disksim");
    std::fs::write(&big, disksim_lines(20_000)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_learnedftl"))
        .args(["trace", "convert", big.to_str().unwrap(), "--to", "msr"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(
        !stderr.contains("error") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

#[test]
fn wrong_or_missing_errors_are_right_and_clear() {
    let dir = Scratch::new("learnedftl-errors");
    let job = dir.join("j.fio");
    let j = job.to_str().unwrap();
    for (text, needle) in [
        (
            "[a]\nrw=randrw\nrwmixread=150\n",
            "j.fio:3: rwmixread: 150 is above 100",
        ),
        (
            "[a]\nrw=randrw\nrwmixwrite=150\n",
            "j.fio:3: rwmixwrite: 150 is above 100",
        ),
        (
            "[a]\nrw=read\nbs=8k\nio_size=4k\n",
            "io_size: 4096 B is less than",
        ),
        (
            "[a]\nrw=read\n\u{1b}[2J=1\n",
            "unknown option \"\\u{1b}[2J\"",
        ),
    ] {
        std::fs::write(&job, text).unwrap();
        let stderr = refused(&["run", "--preset", "tiny", "--job", j], needle);
        assert!(!stderr.contains('\u{1b}'), "raw escape echoed: {stderr:?}");
    }
    let trace = fixture("disksim.trace");
    let rw = ["run", "--preset", "tiny", "--rw", "randread", "--quiet"];
    let tr = ["run", "--preset", "tiny", "--quiet", "--trace", &trace];
    let cases: [(Vec<&str>, &str); 5] = [
        ([&rw[..], &["--number-ios", "0"]].concat(), "number_ios"),
        ([&rw[..], &["--runtime", "0"]].concat(), "runtime"),
        (
            [&tr[..], &["--max-requests", "0"]].concat(),
            "--max-requests",
        ),
        (
            [&tr[..], &["--device-filter", "7"]].concat(),
            "no request to replay",
        ),
        (
            vec!["run", "--job", "/nonexistent/j.fio"],
            "cannot read job file",
        ),
    ];
    for (args, needle) in cases {
        refused(&args, needle);
    }
    // The OS's message once, not once per layer of the error.
    for args in [
        &["run", "--job", "/nonexistent/j.fio"][..],
        &["run", "--preset", "tiny", "--trace", "/nonexistent/t"],
        &["trace", "stats", "/nonexistent/t"],
    ] {
        let (_, _, stderr) = learnedftl(args);
        assert_eq!(stderr.matches("No such file").count(), 1, "{stderr}");
    }
    // A bad first line in a valid trace: the format is still detected, and the line named (or
    // skipped); a trace with no valid line at all is an error even when skipping.
    let bad = dir.join("bad1.disksim");
    std::fs::write(&bad, format!("1 0 \u{7}x 8 0\n{}", disksim_lines(20))).unwrap();
    let b = bad.to_str().unwrap();
    let (ok, _, stderr) = learnedftl(&["trace", "stats", b]);
    assert!(
        !ok && stderr.contains("bad1.disksim:1: field `lba`"),
        "{stderr}"
    );
    assert!(stderr.contains("\"\\u{7}x\""), "{stderr}");
    let (ok, stdout, stderr) = learnedftl(&["trace", "stats", b, "--skip-bad-lines", "--json"]);
    assert!(ok, "{stderr}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()["requests"],
        20
    );
    let all_bad = dir.join("allbad.disksim");
    std::fs::write(&all_bad, "1 0 x 8 0\n2 0 y 8 0\n").unwrap();
    let a = all_bad.to_str().unwrap();
    for args in [
        &[
            "trace",
            "stats",
            a,
            "--format",
            "disksim",
            "--skip-bad-lines",
        ][..],
        &[
            "run",
            "--preset",
            "tiny",
            "--quiet",
            "--trace",
            a,
            "--format",
            "disksim",
            "--skip-bad-lines",
        ],
    ] {
        let (ok, _, stderr) = learnedftl(args);
        assert!(
            !ok && stderr.contains("allbad.disksim"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn results_resting_on_unwritten_pages_or_adapted_trace_requests_say_so() {
    // Random reads of a fresh device: every page read is unmapped.
    let (ok, stdout, stderr) = learnedftl(&[
        "run",
        "--preset",
        "tiny",
        "--rw",
        "randread",
        "--number-ios",
        "50",
        "--quiet",
    ]);
    assert!(ok, "{stderr}");
    // The count under the tables, the warning on stderr (--quiet silences progress only).
    assert!(
        stdout.contains("unmapped page reads: 50 of 50\n"),
        "{stdout}"
    );
    assert!(
        stderr.starts_with("warning: the measured phase read pages never written"),
        "{stderr}"
    );
    // A written device: nothing to warn about.
    let mut args = vec!["run", "--ftl", "ideal"];
    args.extend_from_slice(&SMALL[..SMALL.len() - 2]);
    let (ok, stdout, stderr) = learnedftl(&args);
    assert!(
        ok && !stdout.contains("warning:") && !stderr.contains("warning:"),
        "{stdout}{stderr}"
    );
    // The fixture: device 0 keeps 7 of 9 records, some of its reads touch unwritten pages,
    // and on a logical space of 514 pages (ending inside the write at byte 2 MiB) that write is
    // cut and the next one, beyond the end, dropped.
    let trace = fixture("disksim.trace");
    let (ok, stdout, stderr) = learnedftl(&[
        "compare",
        "--ftl",
        "ideal,dftl",
        "--preset",
        "tiny",
        "--trace",
        &trace,
        "--device-filter",
        "0",
        "--address-policy",
        "clip",
        "--set",
        "logical_pages=514",
        "--quiet",
    ]);
    assert!(ok, "{stderr}");
    let footer = stdout
        .lines()
        .find(|l| l.starts_with("trace: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        footer.contains("requests filtered 2, clipped 1, dropped 1"),
        "{footer}"
    );
    assert!(stdout.contains("unmapped page reads: "), "{stdout}");
    for needle in [
        "warning: 2 trace requests of other devices were filtered out",
        "warning: 1 trace requests were cut at the end of the logical space and 1 beyond it",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
}

#[test]
fn configurations_beyond_reason_or_memory_are_refused() {
    for (set, needle) in [
        (&["page_size=4294966784"][..], "invalid page_size"),
        (&["channels=100000"], "invalid channels"),
        // 64 x 16 x 65000 x 64 pages: about 100 GB of simulator state, per FTL.
        (
            &[
                "channels=64",
                "luns_per_channel=16",
                "blocks_per_plane=65000",
                "pages_per_block=64",
            ],
            "the simulator state would need about",
        ),
    ] {
        let mut args = vec!["compare", "--preset", "tiny", "--jobs", "7", "--quiet"];
        for s in set {
            args.extend_from_slice(&["--set", s]);
        }
        refused(&args, needle);
    }
}

#[test]
fn capacity_scales_the_preset_by_its_blocks_per_plane() {
    let small = [
        "--preset",
        "tiny",
        "--capacity",
        "121MiB",
        "--rw",
        "randread",
        "--number-ios",
        "10",
        "--quiet",
        "--json",
        "-",
    ];
    for cmd in ["run", "compare"] {
        let mut args = vec![cmd, "--ftl", "ideal"];
        args.extend_from_slice(&small);
        let (ok, stdout, stderr) = learnedftl(&args);
        assert!(ok, "{stderr}");
        // The exact result of the rounding, under the device line.
        assert!(
            stderr.contains(
                "\ncapacity: 121MiB asked (126877696 B), rounded up to 65 blocks per plane: \
                 127795200 B logical (917504 B more), 136314880 B physical (130.0 MiB)\n"
            ),
            "{stderr}"
        );
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let r = if cmd == "run" { &v } else { &v[0] };
        let d = &r["config"]["device"];
        assert_eq!(d["capacity"], 126877696, "{d}");
        let g = &d["geometry"];
        assert_eq!(
            [
                &g["channels"],
                &g["luns_per_channel"],
                &g["planes_per_lun"],
                &g["blocks_per_plane"],
                &g["pages_per_block"],
                &g["page_size"],
                &g["logical_pages"]
            ],
            [4, 2, 1, 65, 64, 4096, 31200],
            "{g}"
        );
    }
    // Without --capacity, no trace of it in the report.
    let (ok, stdout, _) = learnedftl(&[
        "run",
        "--preset",
        "tiny",
        "--rw",
        "read",
        "--number-ios",
        "1",
        "--quiet",
        "--json",
        "-",
    ]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(v["config"]["device"].get("capacity").is_none(), "{v}");
}

#[test]
fn bad_capacities_are_refused_naming_the_option_and_the_value() {
    for (preset, capacity, says) in [
        ("tiny", "0", "--capacity: \"0\" is no space at all"),
        ("tiny", "3XB", "--capacity: \"3XB\" is not a size"),
        ("tiny", "-1", "--capacity: \"-1\" is not a size"),
        ("tiny", "1TB", "--capacity: \"1TB\" is in decimal units"),
        (
            "paper",
            "512MiB",
            "--capacity: \"512MiB\" is below the smallest paper device the geometry checks \
             allow, 7.5GiB",
        ),
        (
            "paper",
            "16TiB",
            "--capacity: \"16TiB\" needs 139811 blocks per plane, 4581326848 physical pages of \
             4096 B: more than 2^32-1",
        ),
    ] {
        for cmd in ["run", "compare", "serve", "reproduce"] {
            let mut args = vec![cmd, "--preset", preset, "--capacity", capacity];
            if cmd == "serve" {
                args.extend_from_slice(&["--listen", "127.0.0.1:0"]);
            }
            if cmd == "reproduce" {
                args.extend_from_slice(&["--out", "/nonexistent/never-written", "dram"]);
            }
            refused(&args, says);
        }
    }
    // With the key it sets itself: both named.
    for cmd in ["run", "compare", "serve"] {
        refused(
            &[
                cmd,
                "--preset",
                "tiny",
                "--capacity",
                "1GiB",
                "--set",
                "blocks_per_plane=128",
                "--listen",
                "127.0.0.1:0",
            ][..if cmd == "serve" { 9 } else { 7 }],
            "--capacity: \"1GiB\" sizes the device by its blocks per plane and cannot be \
             combined with blocks_per_plane=128 (from --set): give one or the other",
        );
    }
    // Large enough for the device but not for the quick suite's sequential jobs.
    refused(
        &[
            "reproduce",
            "--preset",
            "quick",
            "--capacity",
            "1GiB",
            "--out",
            "/nonexistent/x",
        ],
        "--capacity: \"1GiB\" is too small for the quick suite",
    );
}

#[test]
fn list_shows_each_presets_largest_capacity_here() {
    let (ok, stdout, stderr) = learnedftl(&["list"]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("FTLs: ideal,"), "{stdout}");
    let row = |preset: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(preset))
            .unwrap_or_else(|| panic!("no {preset} row: {stdout}"))
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let paper = row("paper");
    assert_eq!(
        paper[1..4],
        ["8 x 8 x 1 x 256 x 512 x 4096 B", "30GiB", "32GiB"]
    );
    for preset in ["paper", "quick", "tiny"] {
        let r = row(preset);
        // Each largest capacity is one --capacity takes, and without the oracle no smaller.
        let size = |s: &str| {
            let s = s.trim_end_matches(" *");
            let (num, unit) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic()).unwrap());
            let shift = match unit {
                "B" => 0,
                "KiB" => 10,
                "MiB" => 20,
                "GiB" => 30,
                "TiB" => 40,
                u => panic!("{u}"),
            };
            num.parse::<f64>().unwrap() * (1u64 << shift) as f64
        };
        if r[4] != "none fits" {
            assert!(size(&r[4]) >= size(&r[5]), "{r:?}");
        }
    }
    assert!(
        stdout.contains("largest --capacity: the largest logical capacity whose device state fits"),
        "{stdout}"
    );
}

#[test]
fn compare_draws_its_measured_phase_as_an_svg() {
    let dir = Scratch::new("learnedftl-svg");
    let svg = dir.join("compare.svg");
    let (ok, _, stderr) = learnedftl(&[
        "compare",
        "--preset",
        "tiny",
        "--ftl",
        "ideal,dftl",
        "--rw",
        "randrw",
        "--number-ios",
        "50",
        "--quiet",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    for label in ["IOPS", "p99 latency", "WAF", "ideal", "dftl"] {
        assert!(text.contains(label), "no {label} in the plot");
    }
    // Two bars per panel, three panels.
    assert_eq!(text.matches("<g class=\"panel\"").count(), 3);
    assert_eq!(text.matches("<rect class=\"mark\"").count(), 6);
    // The plot may not overwrite an input.
    let job = dir.join("j.fio");
    std::fs::write(&job, "[j]\nrw=randread\nnumber_ios=10\n").unwrap();
    let (ok, _, stderr) = learnedftl(&[
        "compare",
        "--preset",
        "tiny",
        "--ftl",
        "ideal",
        "--job",
        job.to_str().unwrap(),
        "--svg",
        job.to_str().unwrap(),
    ]);
    assert!(!ok && stderr.contains("j.fio"), "{stderr}");
    assert!(std::fs::read_to_string(&job).unwrap().starts_with("[j]"));
}

#[test]
fn power_cuts_are_reported_for_every_ftl_and_a_zero_period_refused() {
    let args = [
        "compare",
        "--ftl",
        "ideal,dftl",
        "--preset",
        "tiny",
        "--precondition",
        "randwrite:512k:1",
        "--rw",
        "randrw",
        "--bs",
        "16k",
        "--number-ios",
        "600",
        "--power-cut-every",
        "100",
        "--verify",
        "--quiet",
        "--json",
        "-",
    ];
    let (ok, stdout, stderr) = learnedftl(&args);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("power cuts: ideal 6 cuts") && stderr.contains("dftl 6 cuts"),
        "{stderr}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for run in v.as_array().unwrap() {
        let p = &run["result"]["power_cuts"];
        assert_eq!(p["count"], 6, "{p}");
        assert_eq!(p["lost_unflushed_pages"], 0);
        assert!(p["recovery_flash_reads"].as_u64().unwrap() > 0);
        assert!(p["recovery_sim_seconds"].as_f64().unwrap() > 0.0);
        assert_eq!(run["result"]["verify"]["failures"], 0);
        assert_eq!(run["config"]["power_cut_every"], 100);
    }
    // With payloads kept, which survive a cut too (docs/power.md).
    let with_payloads: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--set", "payloads=true"])
        .collect();
    let (ok, stdout, stderr) = learnedftl(&with_payloads);
    assert!(ok, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for run in v.as_array().unwrap() {
        assert_eq!(run["result"]["power_cuts"]["count"], 6);
        assert_eq!(run["result"]["verify"]["failures"], 0);
        assert_eq!(
            run["config"]["device"]["payloads"], true,
            "{}",
            run["config"]
        );
    }
    // Without the flag, no power_cuts key.
    let without: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !["--power-cut-every", "100", "--verify"].contains(a))
        .collect();
    let (ok, stdout, stderr) = learnedftl(&without);
    assert!(ok, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(v[0]["result"].get("power_cuts").is_none());
    // The whole registry recovers (LearnedFTL last joined).
    let (ok, stdout, stderr) = learnedftl(&[
        "compare",
        "--preset",
        "tiny",
        "--rw",
        "randwrite",
        "--number-ios",
        "10",
        "--power-cut-every",
        "5",
        "--verify",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("ideal 2 cuts") && stdout.contains("learnedftl 2 cuts"),
        "{stdout}"
    );
    let (ok, _, stderr) = learnedftl(&["run", "--ftl", "ideal", "--power-cut-every", "0"]);
    assert!(
        !ok && stderr.contains("--power-cut-every: 0 requests"),
        "{stderr}"
    );
    // An FTL whose parameters persist too little is refused before anything runs (the paper
    // preset's preconditioning would take minutes).
    let (ok, stdout, stderr) = learnedftl(&[
        "run",
        "--ftl",
        "learnedftl",
        "--preset",
        "paper",
        "--set",
        "tp_write_cost=free",
        "--precondition",
        "randwrite:512k:6",
        "--power-cut-every",
        "5",
    ]);
    assert!(
        !ok && stdout.is_empty() && stderr.contains("tp_write_cost=free"),
        "{stderr}"
    );
}

/// Runs the binary for at most `secs` seconds (killed after that: the test then fails rather
/// than hang); (success, stdout, stderr).
fn learnedftl_within(secs: u64, args: &[&str]) -> (bool, String, String) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_learnedftl"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{args:?} still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.success(), stdout, stderr)
}

#[test]
fn a_time_based_job_in_which_no_time_passes_stops_with_an_error() {
    // Reads of a fresh device take no simulated time: the runtime would never come.
    let (ok, stdout, stderr) = learnedftl_within(
        60,
        &[
            "run",
            "--ftl",
            "ideal",
            "--preset",
            "tiny",
            "--rw",
            "randread",
            "--runtime",
            "1ms",
            "--quiet",
        ],
    );
    assert!(
        !ok && stdout.is_empty()
            && stderr.contains("job \"measure\": 1048576 requests in a row completed the instant")
            && stderr.contains("no simulated time passes"),
        "{stderr}"
    );
    // Once the pages are written, the same job runs to its runtime.
    let (ok, stdout, stderr) = learnedftl_within(
        60,
        &[
            "run",
            "--ftl",
            "ideal",
            "--preset",
            "tiny",
            "--precondition",
            "write:512k:1",
            "--rw",
            "randread",
            "--runtime",
            "1ms",
            "--quiet",
            "--json",
            "-",
        ],
    );
    assert!(ok, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        v["result"]["sim_seconds"].as_f64().unwrap() >= 1e-3,
        "{stdout}"
    );
}

#[test]
fn jobs_too_large_for_memory_are_refused_before_allocating() {
    let dir = Scratch::new("learnedftl-wide");
    let job = dir.join("wide.fio");
    std::fs::write(
        &job,
        "[wide]\nrw=randread\nnumjobs=4294967295\niodepth=4294967295\nnumber_ios=1\n",
    )
    .unwrap();
    // ~2.7e20 B of slots: more than any machine has, so refused wherever the test runs.
    let wide = [
        "--rw",
        "randread",
        "--numjobs",
        "4294967295",
        "--iodepth",
        "4294967295",
        "--number-ios",
        "1",
    ];
    let runs: [Vec<&str>; 3] = [
        [&["run", "--preset", "tiny", "--quiet"][..], &wide].concat(),
        [&["compare", "--preset", "tiny", "--quiet"][..], &wide].concat(),
        vec![
            "run",
            "--preset",
            "tiny",
            "--quiet",
            "--job",
            job.to_str().unwrap(),
        ],
    ];
    for args in runs {
        let (ok, _, stderr) = learnedftl_within(60, &args);
        assert!(
            !ok && stderr.starts_with("error: the simulator state would need about")
                && stderr.contains("numjobs x iodepth = 18446744065119617025 slots x 16 B")
                && stderr.contains("lower numjobs or iodepth of job")
                && !stderr.contains("panicked")
                && !stderr.contains("memory allocation"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_trace_without_a_request_is_an_error_naming_the_first_line_that_is_not_one() {
    let dir = Scratch::new("learnedftl-noise");
    // Bytes that are no trace (a fixed xorshift stream), read as blkparse: every line used to
    // be passed over as a non-event, and `trace stats` said 0 requests with status 0.
    let noise = dir.join("noise.bin");
    let bytes = common::noise(0x2545_F491_4F6C_DD1D, 100_000);
    std::fs::write(&noise, bytes).unwrap();
    let n = noise.to_str().unwrap();
    let out = dir.join("out.msr");
    for args in [
        &["trace", "stats", n, "--format", "blkparse"][..],
        &[
            "trace",
            "stats",
            n,
            "--format",
            "blkparse",
            "--skip-bad-lines",
        ],
        &["trace", "convert", n, "--format", "blkparse", "--to", "msr"],
        &[
            "trace",
            "convert",
            n,
            "--format",
            "blkparse",
            "--to",
            "msr",
            "-o",
            out.to_str().unwrap(),
        ],
        &[
            "run", "--preset", "tiny", "--trace", n, "--format", "blkparse", "--quiet",
        ],
    ] {
        let (ok, stdout, stderr) = learnedftl(args);
        assert!(
            !ok && stdout.is_empty()
                && stderr.contains(&format!("{n}: no request in "))
                && stderr.contains("lines read as blkparse: ")
                && stderr.contains("without a request, the first at line 1: \""),
            "{args:?}: {stdout}{stderr}"
        );
    }
    assert!(!out.exists());
    // An empty trace under an explicit format, and a DiskSim trace read as blkparse.
    let empty = dir.join("empty.trace");
    std::fs::write(&empty, "").unwrap();
    let (ok, _, stderr) = learnedftl(&[
        "trace",
        "stats",
        empty.to_str().unwrap(),
        "--format",
        "disksim",
    ]);
    assert!(
        !ok && stderr.contains("no request: the trace is empty"),
        "{stderr}"
    );
    let disksim = fixture("disksim.trace");
    let (ok, _, stderr) = learnedftl(&["trace", "stats", &disksim, "--format", "blkparse"]);
    assert!(
        !ok && stderr.contains("9 without a request, the first at line 2: \"0 0 2048 8 0\""),
        "{stderr}"
    );
}

#[test]
fn warnings_that_describe_the_result_go_to_stderr_even_when_quiet() {
    let dir = Scratch::new("learnedftl-order");
    // The third request arrives before the second (replayed at the second's arrival instead),
    // the fourth has length 0 (skipped), and the last reads a page never written.
    let trace = dir.join("back.disksim");
    std::fs::write(
        &trace,
        "0 0 0 8 0\n5000 0 8 8 0\n1000 0 16 8 0\n6000 0 24 0 0\n7000 0 64 8 1\n",
    )
    .unwrap();
    let t = trace.to_str().unwrap();
    for cmd in [
        &["run", "--ftl", "ideal"][..],
        &["compare", "--ftl", "ideal,dftl"],
    ] {
        let mut args = cmd.to_vec();
        args.extend_from_slice(&["--preset", "tiny", "--trace", t, "--quiet"]);
        let (ok, stdout, stderr) = learnedftl(&args);
        assert!(ok, "{stderr}");
        // The counts stay in the footer under the tables; the warnings are on stderr only.
        assert!(
            stdout.contains("zero-length 1, out of order 1") && !stdout.contains("warning:"),
            "{stdout}"
        );
        for needle in [
            "warning: 1 trace requests arrived before the request before them",
            "warning: 1 trace reads, writes or trims of length 0 were skipped",
            "warning: the measured phase read pages never written",
        ] {
            assert!(stderr.contains(needle), "{cmd:?} {needle}: {stderr}");
        }
    }
}

#[test]
fn check_passes_and_writes_one_json_object_per_ftl() {
    let dir = Scratch::new("check-pass");
    let failures = dir.join("failures");
    let (ok, stdout, stderr) = learnedftl(&[
        "check",
        "--ftl",
        "ideal,leaftl",
        "--ops",
        "2000",
        "--power-cuts",
        "200",
        "--failures",
        failures.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("check leaftl through engine: 2000 operations"),
        "{stderr}"
    );
    assert!(
        stderr.contains("MiB checked"),
        "the table on stderr: {stderr}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        for key in [
            "ftl",
            "ops",
            "reads_checked",
            "bytes_checked",
            "power_cuts",
            "failures",
            "seconds",
        ] {
            assert!(r.get(key).is_some(), "{key} missing: {r}");
        }
        assert_eq!(r["ops"], 2000);
        assert!(r["power_cuts"].as_u64().unwrap() > 0);
        assert_eq!(r["failures"], serde_json::json!([]));
    }
    assert!(!failures.exists(), "nothing saved when nothing failed");
}

#[test]
fn check_passes_each_ftl_the_keys_it_takes_as_compare_does() {
    // FAST has log blocks, not the shared GC: gc=femu is the ideal FTL's alone.
    let (ok, stdout, stderr) = learnedftl(&[
        "check",
        "--ftl",
        "ideal,fast",
        "--ops",
        "2000",
        "--set",
        "gc=femu",
        "--quiet",
        "--json",
        "-",
    ]);
    assert!(ok, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let command = |i: usize| v[i]["command"].as_str().unwrap().to_string();
    assert!(
        command(0).ends_with(
            "--ftl ideal --preset tiny --seed 1 --ops 2000 --through engine --set gc=femu"
        ),
        "{}",
        command(0)
    );
    assert!(!command(1).contains("--set"), "{}", command(1));
    // A key no FTL asked for takes is still refused.
    refused(
        &["check", "--ftl", "ideal,fast", "--set", "gc_victm=greedy"],
        "not a parameter of ideal, fast",
    );
}

#[test]
fn a_failed_check_exits_1_with_a_replay_that_fails_again() {
    let dir = Scratch::new("check-fail");
    let failures = dir.join("failures");
    let (ok, stdout, stderr) = learnedftl(&[
        "check",
        "--ftl",
        "tpftl",
        "--ops",
        "5000",
        "--set",
        "inject=drop-trim",
        "--failures",
        failures.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(!ok, "{stdout}");
    assert!(stderr.is_empty(), "--quiet: {stderr}");
    assert!(
        stdout.contains("FAILED: tpftl (seed 1): operation"),
        "{stdout}"
    );
    let replay = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: learnedftl check --replay "))
        .expect("a replay line");
    assert!(stdout.contains(
        "the whole stream: learnedftl check --ftl tpftl --preset tiny --seed 1 --ops 5000 --through engine --set inject=drop-trim"
    ), "{stdout}");
    // Its own failures go to the scratch directory too (the default is the working directory).
    let (ok, again, _) = learnedftl(&[
        "check",
        "--replay",
        replay,
        "--quiet",
        "--failures",
        failures.to_str().unwrap(),
    ]);
    assert!(!ok && again.contains("FAILED: tpftl"), "{again}");
}

#[test]
fn check_refuses_bad_options_naming_them() {
    for (args, says) in [
        (vec!["--through", "usb"], "--through"),
        (vec!["--ops", "0"], "--ops"),
        (vec!["--ftl", "nosuch"], "nosuch"),
        (vec!["--set", "bogus=1"], "bogus"),
        (vec!["--power-cuts", "0"], "--power-cuts"),
        (vec!["--replay", "/nonexistent/stream.json"], "--replay"),
    ] {
        let mut a = vec!["check"];
        a.extend(args);
        refused(&a, says);
    }
}

#[test]
fn params_lists_every_key_with_its_default_and_unknown_keys_say_what_was_meant() {
    let (ok, table, stderr) = learnedftl(&["params", "--ftl", "dftl", "--preset", "tiny"]);
    assert!(ok, "{stderr}");
    assert!(table.contains("defaults on the tiny preset"), "{table}");
    let row = |key: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no row for {key}: {table}"))
            .to_string()
    };
    assert!(row("cmt_ratio").contains(" 0.03 "), "{table}");
    assert!(row("channels").contains(" 4 "), "{table}");
    assert!(row("gc_fg_ratio").contains("only with gc=femu"), "{table}");

    let (ok, json, stderr) = learnedftl(&["params", "--ftl", "learnedftl", "--json"]);
    assert!(ok, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (v["preset"].as_str(), v["ftl"].as_str()),
        (Some("quick"), Some("learnedftl"))
    );
    let keys: Vec<&serde_json::Value> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["keys"].as_array().unwrap())
        .collect();
    let default = |key: &str| {
        keys.iter().find(|k| k["key"] == key).unwrap()["default"]
            .as_str()
            .map(str::to_string)
    };
    assert_eq!(default("cmt_ratio").as_deref(), Some("0.015"));
    assert_eq!(default("channels").as_deref(), Some("8"));
    assert_eq!(default("mapping_dram_bytes"), None);
    for k in &keys {
        assert!(k["meaning"].as_str().is_some_and(|m| !m.is_empty()), "{k}");
    }

    // Every key with a default that needs no other setting, given that default, is taken.
    let (ok, json, _) = learnedftl(&["params", "--ftl", "dftl", "--preset", "tiny", "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut args = vec![
        "run", "--ftl", "dftl", "--preset", "tiny", "--settle", "off",
    ];
    args.extend(["--rw", "randread", "--number-ios", "10", "--quiet"]);
    let sets: Vec<String> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["keys"].as_array().unwrap())
        .filter(|k| k["only_with"].is_null())
        .filter_map(|k| Some(format!("{}={}", k["key"].as_str()?, k["default"].as_str()?)))
        .collect();
    assert!(sets.len() > 20, "{sets:?}");
    for s in &sets {
        args.extend(["--set", s]);
    }
    let (ok, _, stderr) = learnedftl(&args);
    assert!(ok, "{sets:?}: {stderr}");

    // A misspelt key: the closest valid one, and where every key is explained.
    let (ok, _, stderr) = learnedftl(&[
        "run",
        "--ftl",
        "dftl",
        "--preset",
        "tiny",
        "--set",
        "cmt_ration=0.1",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("\"cmt_ration\" (from --set; did you mean cmt_ratio?)")
            && stderr.contains("`learnedftl params --ftl dftl` explains each key"),
        "{stderr}"
    );
    // Nothing close: every valid key.
    let (ok, _, stderr) = learnedftl(&[
        "run", "--ftl", "tpftl", "--preset", "tiny", "--set", "zzz=1",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("the valid keys are: ") && stderr.contains("prefetch_threshold"),
        "{stderr}"
    );
    let (ok, _, stderr) = learnedftl(&["params", "--ftl", "nope"]);
    assert!(!ok && stderr.contains("unknown FTL \"nope\""), "{stderr}");
}

#[test]
fn tables_show_a_dash_where_a_figure_does_not_apply_and_explain_their_columns() {
    let args = [
        "compare",
        "--ftl",
        "ideal,dftl",
        "--preset",
        "tiny",
        "--precondition",
        "randwrite:512k:1",
        "--rw",
        "randread",
        "--number-ios",
        "50",
        "--quiet",
        "--json",
        "-",
    ];
    let (ok, stdout, table) = learnedftl(&args);
    assert!(ok, "{table}");
    let lines: Vec<&str> = table.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("ftl "))
        .expect("the table");
    let headings: Vec<&str> = lines[header]
        .split("  ")
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    let col = |h: &str| headings.iter().position(|x| *x == h).unwrap();
    for row in &lines[header + 1..header + 3] {
        let cells: Vec<&str> = row.split_whitespace().collect();
        // Read-only: no write latency and no WAF; the read figures are measured.
        for h in ["wr p99 µs", "wr p99.9 µs", "WAF"] {
            assert_eq!(cells[col(h)], "–", "{h}: {row}");
        }
        assert_ne!(cells[col("rd p99 µs")], "–", "{row}");
    }
    assert!(
        lines[header + 3].starts_with("–: does not apply")
            && lines[header + 3].contains("double/triple: page reads needing 2/3 flash reads")
            && lines[header + 3].ends_with("(--explain: every column)"),
        "{table}"
    );
    // The JSON keeps its numbers.
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v[0]["result"]["waf"], 0.0);
    assert_eq!(v[0]["result"]["latency_us"]["write"]["count"], 0);

    let mut explain = args.to_vec();
    explain.push("--explain");
    let (ok, _, table) = learnedftl(&explain);
    assert!(ok, "{table}");
    for (heading, key) in [
        ("double", "lookups.double"),
        ("sim Mops/s", "sim_page_ops_per_sec"),
        ("WAF", "waf"),
    ] {
        let row = table
            .lines()
            .find(|l| l.starts_with(heading) && l.contains(key))
            .unwrap_or_else(|| panic!("no {heading} → {key}: {table}"));
        assert!(row.len() > heading.len() + key.len() + 10, "{row}");
    }
    assert!(!table.contains("(--explain: every column)"), "{table}");
}

#[test]
fn a_negative_number_is_a_bad_value_not_an_unknown_flag() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["run", "--seed", "-1"],
            "invalid value '-1' for '--seed <SEED>': must be a whole number from 0 to",
        ),
        (
            &["compare", "--jobs", "-2"],
            "'--jobs <JOBS>': must be a whole number",
        ),
        (
            &["run", "--rw", "randread", "--numjobs", "-4"],
            "'--numjobs <NUMJOBS>': must be a whole number from 0 to 4294967295",
        ),
        (
            &["check", "--ops", "-5"],
            "'--ops <OPS>': must be a whole number",
        ),
        (
            &["reproduce", "--seed", "-1", "dram"],
            "'--seed <SEED>': must be a whole number",
        ),
        (
            &["run", "--trace", "/nonexistent", "--speed", "-1"],
            "--speed: -1 is not a positive factor",
        ),
    ];
    for (args, says) in cases {
        let stderr = refused(args, says);
        assert!(
            !stderr.contains("unexpected argument"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn serve_refused_for_memory_names_the_payload_file() {
    // 2^31 pages of 64 KiB: 128 TiB of page data, more than any machine holds in memory.
    let (ok, _, stderr) = learnedftl_within(
        60,
        &[
            "serve",
            "--preset",
            "paper",
            "--listen",
            "127.0.0.1:0",
            "--set",
            "page_size=65536",
            "--set",
            "pages_per_block=4096",
            "--set",
            "blocks_per_plane=8192",
        ],
    );
    assert!(!ok, "{stderr}");
    assert!(
        stderr.starts_with("error: the simulator state would need about")
            && stderr.contains("128.0 TiB for the page data")
            && stderr.contains(
                "keep the page data in a sparse file instead (serve --payload-file FILE)"
            ),
        "{stderr}"
    );
}
