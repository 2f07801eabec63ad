//! Fuzz-style properties of every parser of user input (issue 13): each trace format, fio job
//! files and `--set` parameters. Arbitrary bytes and arbitrary `key=value` text never panic,
//! every error names its line or key, and no error repeats a control character raw. Case
//! counts are bounded so the whole file runs in seconds.

use learnedftl::config::DeviceConfig;
use learnedftl::ftl::{self, FTLS};
use learnedftl::params::Params;
use learnedftl::trace::{Format, ParseOptions, TraceError, TraceReader};
use learnedftl::workload::fio;
use proptest::prelude::*;
use std::io::Cursor;

/// Line-shaped text from the tokens trace formats are made of, with garbage mixed in.
fn trace_text() -> impl Strategy<Value = Vec<u8>> {
    "([0-9]{1,22}|-[0-9]|[0-9]\\.[0-9]{1,9}|Read|Write|Trim|[RWDQAFNS]{1,2}|fio version [23] iolog|add|open|read|write|trim|/dev/sdb|\\+|,| |\t|\n|\r|\u{1b}|\u{0}|\u{ff}|[a-z]{1,4}){0,150}"
        .prop_map(String::into_bytes)
}

/// Arbitrary bytes, or trace-shaped text.
fn trace_input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![proptest::collection::vec(any::<u8>(), 0..600), trace_text()]
}

/// No raw control character (other than none at all) reaches a message.
fn printable(msg: &str) -> bool {
    !msg.chars().any(char::is_control)
}

/// Reads `bytes` as `format` (detected when `None`) to the end; checks every error.
fn check_trace(bytes: &[u8], format: Option<Format>, skip: bool) -> Result<(), TestCaseError> {
    let lines = bytes.split(|&b| b == b'\n').count() as u64;
    let options = ParseOptions {
        skip_bad_lines: skip,
        ..ParseOptions::default()
    };
    let reader = match TraceReader::from_read("fuzz", Cursor::new(bytes.to_vec()), format, &options)
    {
        Ok(r) => r,
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(msg.starts_with("fuzz:"), "{msg}");
            prop_assert!(printable(&msg), "{msg:?}");
            return Ok(());
        }
    };
    for item in reader {
        let Err(e) = item else { continue };
        let msg = e.to_string();
        prop_assert!(printable(&msg), "{msg:?}");
        match &e {
            TraceError::Line { file, line, .. } => {
                prop_assert!(file == "fuzz" && (1..=lines).contains(line), "{msg}");
                prop_assert!(msg.starts_with(&format!("fuzz:{line}: field `")), "{msg}");
                prop_assert!(!skip, "a skipped line was returned: {msg}");
            }
            TraceError::Io { file, .. } => prop_assert_eq!(file, "fuzz"),
            TraceError::NoRequest(n) => {
                prop_assert!(
                    n.file == "fuzz" && msg.starts_with("fuzz: no request"),
                    "{msg}"
                );
                prop_assert!(n.lines <= lines, "{msg}");
            }
            other => prop_assert!(false, "unexpected error {other:?}"),
        }
    }
    Ok(())
}

/// Parameter names: the device's and the FTLs'.
const KEYS: &[&str] = &[
    "channels",
    "luns_per_channel",
    "planes_per_lun",
    "blocks_per_plane",
    "pages_per_block",
    "page_size",
    "oob_size",
    "logical_pages",
    "logical_ratio",
    "read_ns",
    "program_ns",
    "erase_ns",
    "channel_mb_s",
    "channel_transfer",
    "timing",
    "backfill_gaps",
    "read_uj",
    "payloads",
    "cmt_ratio",
    "dram",
    "dram_ratio",
    "mapping_dram_bytes",
    "gc",
    "gc_fg_ratio",
    "gc_bg_ratio",
    "gc_bg_lines",
    "gc_reserve_lines",
    "gc_bg_min_invalid",
    "gc_bg_victims",
    "gc_batch",
    "gamma",
    "group_tps",
    "group_line_quota",
    "secondary_ratio",
    "write_buffer_pages",
    "prefetch_threshold",
    "merge_budget",
    "train_min_pages",
    "sftl_runs",
    "node_bytes",
    "h",
    "m",
];

/// Keys of `--set`: the device's, every FTL's, and made-up ones.
fn set_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(KEYS).prop_map(str::to_string),
        1 => "[a-z_\u{1b}\u{7}]{1,10}",
    ]
}

/// Values: small and huge numbers, fractions, switches, garbage.
fn set_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,3}",
        "[0-9]{1,12}",
        "0\\.[0-9]{1,4}",
        "-[0-9]{1,3}",
        "(on|off|femu|backfill|reserve|inf|nan)",
        ".{0,12}",
    ]
}

/// One `--set` argument: usually `key=value`, sometimes anything at all.
fn assignment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (set_key(), set_value()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => ".{0,20}",
    ]
}

/// Whether `msg` names one of the keys of `given`, or a parameter (a default value can be at
/// fault: a cache ratio too small for a changed geometry), or the geometry as a whole.
fn names_a_key(msg: &str, given: &[String]) -> bool {
    let keys = given
        .iter()
        .filter_map(|a| a.split_once('='))
        .map(|(k, _)| k.trim());
    keys.filter(|k| !k.is_empty())
        .chain(KEYS.iter().copied())
        .chain(["geometry"])
        .any(|k| msg.contains(k) || msg.contains(&format!("{k:?}")))
}

/// Section headers and `key=value` lines of job files, with garbage mixed in.
fn job_text() -> impl Strategy<Value = Vec<u8>> {
    let key = prop_oneof![
        proptest::sample::select(
            &[
                "rw",
                "rwmixread",
                "rwmixwrite",
                "bs",
                "numjobs",
                "iodepth",
                "offset",
                "offset_increment",
                "size",
                "io_size",
                "number_ios",
                "runtime",
                "time_based",
                "random_distribution",
                "norandommap",
                "randseed",
                "stonewall",
                "settle",
                "ioengine",
            ][..]
        )
        .prop_map(str::to_string),
        "[a-z_\u{1b}]{1,8}",
    ];
    let value = prop_oneof![
        "[0-9]{1,4}[kmg%]?",
        "[0-9]{1,22}",
        "(randread|randwrite|randrw|read|write|zipf:1\\.2|pareto:0\\.3|auto|off|10ms)",
        ".{0,10}",
    ];
    let line = prop_oneof![
        (key, value).prop_map(|(k, v)| format!("{k}={v}")),
        "\\[(global|a|b|\u{1b}x)?\\]?",
        "(stonewall|time_based|norandommap|; comment|)",
    ];
    proptest::collection::vec(line, 0..14).prop_map(|l| l.join("\n").into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Each trace parser, on arbitrary input: no panic; errors name the file and a line of it.
    #[test]
    fn fuzz_trace_parsers(bytes in trace_input(), skip in any::<bool>()) {
        for format in Format::ALL {
            check_trace(&bytes, Some(format), skip)?;
        }
        check_trace(&bytes, None, skip)?;
    }

    /// Job files, arbitrary bytes or job-shaped text: no panic; errors name the file and a
    /// line of it (0 only for a file without job sections).
    #[test]
    fn fuzz_job_files(bytes in prop_oneof![proptest::collection::vec(any::<u8>(), 0..300), job_text()]) {
        let lines = bytes.split(|&b| b == b'\n').count();
        if let Err(e) = fio::parse_bytes(&bytes, "fuzz.fio", 1 << 30) {
            let msg = e.to_string();
            prop_assert!(msg.starts_with(&format!("fuzz.fio:{}: ", e.line)), "{msg}");
            prop_assert!(e.line <= lines, "{msg}");
            prop_assert!(e.line > 0 || e.message == "no job sections", "{msg}");
            prop_assert!(printable(&msg), "{msg:?}");
        }
    }

    /// `--set` assignments through the device configuration and every FTL: no panic; errors
    /// name a key.
    #[test]
    fn fuzz_set_parameters(given in proptest::collection::vec(assignment(), 0..5)) {
        let mut params = Params::new();
        for a in &given {
            if let Err(e) = params.insert_assignment(a, "--set") {
                let msg = e.to_string();
                prop_assert!(msg.starts_with("--set: cannot parse"), "{msg}");
                prop_assert!(printable(&msg), "{msg:?}");
                return Ok(());
            }
        }
        let device = match DeviceConfig::from_params("tiny", &mut params) {
            Ok(d) => d,
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(names_a_key(&msg, &given), "{given:?}: {msg}");
                prop_assert!(printable(&msg), "{msg:?}");
                return Ok(());
            }
        };
        // Only devices this machine would run (the CLI refuses larger ones first).
        if device.state_bytes(false) > 64 << 20 {
            return Ok(());
        }
        for name in FTLS {
            let mut p = params.clone();
            match ftl::build(name, &device, &mut p) {
                Ok(_) => {
                    if let Err(e) = p.finish() {
                        let msg = e.to_string();
                        prop_assert!(names_a_key(&msg, &given), "{given:?}: {msg}");
                        prop_assert!(printable(&msg), "{msg:?}");
                    }
                }
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(names_a_key(&msg, &given), "{name} {given:?}: {msg}");
                    prop_assert!(printable(&msg), "{msg:?}");
                }
            }
        }
    }
}
