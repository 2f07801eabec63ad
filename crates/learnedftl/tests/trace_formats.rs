//! Trace parsers on their fixtures (golden), malformed input, detection, conversion round trips
//! and compressed input.

use learnedftl::trace::{
    self, Compression, Format, LineErrorKind, ParseOptions, TraceError, TraceReader, TraceRecord,
    TraceStats, TraceWriter, MAX_LINE,
};
use learnedftl::Op;
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name)
}

fn rec(line: u64, time_ns: u64, op: Op, offset: u64, len: u64, device: u32) -> TraceRecord {
    TraceRecord {
        placement: None,
        line,
        time_ns,
        op,
        offset,
        len,
        device,
        done_ns: None,
    }
}

/// Every record of a file, asserting the detected format.
fn parse_file(name: &str, want: Format) -> Vec<TraceRecord> {
    let reader = trace::open(fixture(name), None, &ParseOptions::default()).unwrap();
    assert_eq!(reader.format(), want, "{name}");
    assert!(reader.detected());
    assert_eq!(reader.compression(), Compression::None);
    reader.collect::<Result<_, _>>().unwrap()
}

fn parse_bytes(data: &[u8], format: Option<Format>) -> Result<Vec<TraceRecord>, TraceError> {
    TraceReader::from_read(
        "mem",
        Cursor::new(data.to_vec()),
        format,
        &ParseOptions::default(),
    )?
    .collect()
}

const S: u64 = 512;
const DEV8_0: u32 = 8 << 20;

#[test]
fn trace_golden_recording() {
    use Op::*;
    let recs = parse_file("app.rec", Format::Recording);
    let done: Vec<_> = recs.iter().map(|r| r.done_ns.unwrap()).collect();
    let plain: Vec<_> = recs
        .into_iter()
        .map(|r| TraceRecord { done_ns: None, ..r })
        .collect();
    assert_eq!(
        plain,
        vec![
            rec(4, 1000, Write, 0, 65536, 0),
            rec(5, 1000, Write, 65536, 65536, 1),
            rec(6, 230_000, Flush, 0, 0, 0),
            rec(7, 260_000, Read, 4096, 4096, 0),
            rec(8, 260_500, Read, 69632, 8192, 1),
            rec(9, 320_000, Read, 0, 4096, 0),
            rec(10, 380_000, Trim, 65536, 65536, 1),
            rec(11, 440_000, Read, 65536, 4096, 0),
        ]
    );
    assert_eq!(
        done,
        [201_000, 202_000, 231_000, 300_000, 301_000, 360_000, 420_000, 480_000]
    );
}

#[test]
fn trace_golden_disksim() {
    use Op::*;
    assert_eq!(
        parse_file("disksim.trace", Format::DiskSim),
        vec![
            rec(2, 0, Write, 2048 * S, 8 * S, 0),
            rec(3, 1500, Write, 2056 * S, 8 * S, 0),
            rec(4, 3000, Read, 2048 * S, 16 * S, 0),
            rec(5, 4500, Read, 0, 8 * S, 1),
            rec(6, 6000, Write, 4096 * S, 32 * S, 0),
            rec(7, 7500, Write, 4128 * S, 32 * S, 0),
            rec(8, 9000, Read, 100 * S, S, 0),
            rec(9, 10500, Read, 2048 * S, 8 * S, 0), // flags 3: bit 0 set
            rec(10, 12000, Write, 8 * S, 8 * S, 2),
        ]
    );
}

#[test]
fn trace_golden_msr() {
    use Op::*;
    let t = |ticks: u64| ticks * 100;
    assert_eq!(
        parse_file("msr.csv", Format::Msr),
        vec![
            rec(1, t(128166372000000000), Write, 8192, 4096, 0),
            rec(2, t(128166372000001000), Write, 12288, 4096, 0),
            rec(3, t(128166372000002500), Read, 8192, 8192, 0),
            rec(4, t(128166372000004000), Read, 0, 512, 1),
            rec(5, t(128166372000004000), Write, 1048576, 65536, 0),
            rec(6, t(128166372000009000), Read, 1114112, 4096, 0),
            rec(7, t(128166372000012345), Write, 4096, 4096, 2),
            rec(8, t(128166372000015000), Read, 8192, 4096, 0),
        ]
    );
}

#[test]
fn trace_golden_umass() {
    use Op::*;
    assert_eq!(
        parse_file("umass.spc", Format::Umass),
        vec![
            rec(1, 551_706_000, Write, 20941264 * S, 8192, 0),
            rec(2, 554_041_000, Write, 20939840 * S, 8192, 0),
            rec(3, 600_000_000, Read, 1007 * S, 512, 1),
            rec(4, 611_111_000, Read, 20939856 * S, 4096, 0),
            rec(5, 1_000_000_001, Write, 0, 16384, 2),
            rec(6, 1_250_000_000, Read, 20941264 * S, 8192, 0),
            rec(7, 1_500_000_000, Read, 1008 * S, 512, 1),
            rec(8, 2_000_000_000, Write, 20939840 * S, 4096, 0),
        ]
    );
}

#[test]
fn trace_golden_systor() {
    use Op::*;
    let t = |s: u64, us: u64| s * 1_000_000_000 + us * 1000;
    assert_eq!(
        parse_file("systor.csv", Format::Systor),
        vec![
            rec(2, t(1487065502, 807433), Write, 1617371136, 4096, 0),
            rec(3, t(1487065502, 807580), Read, 1617371136, 4096, 0),
            rec(4, t(1487065502, 810001), Read, 0, 65536, 1),
            rec(5, t(1487065502, 811000), Write, 4096, 8192, 3),
            rec(6, t(1487065503, 0), Write, 1617375232, 4096, 0),
            rec(7, t(1487065503, 500000), Read, 4096, 512, 3),
        ]
    );
}

#[test]
fn trace_golden_fiu() {
    use Op::*;
    assert_eq!(
        parse_file("fiu.trace", Format::Fiu),
        vec![
            rec(1, 1_000_000_000, Write, 2048 * S, 8 * S, DEV8_0),
            rec(2, 1_000_500_000, Read, 4096 * S, 16 * S, DEV8_0),
            rec(3, 1_001_000_000, Write, 8 * S, 8 * S, DEV8_0 | 1), // "my app"
            rec(4, 1_002_000_000, Write, 2056 * S, 8 * S, DEV8_0),
            rec(5, 1_003_000_000, Read, 4112 * S, 8 * S, DEV8_0),
        ]
    );
}

#[test]
fn trace_golden_blkparse() {
    use Op::*;
    let mut reader = trace::open(fixture("blkparse.txt"), None, &ParseOptions::default()).unwrap();
    assert_eq!(reader.format(), Format::Blkparse);
    let recs: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        recs,
        vec![
            rec(2, 1_000, Write, 2048 * S, 8 * S, DEV8_0),
            rec(7, 1_000_000, Read, 40960 * S, 64 * S, DEV8_0),
            rec(8, 2_000_000, Flush, 0, 0, DEV8_0),
            rec(9, 3_000_000, Trim, 1000 * S, 2048 * S, DEV8_0),
            rec(10, 4_000_000, Write, 0, S, DEV8_0 | 16),
        ]
    );
    // Other actions, the summary and the blank line carry no request.
    assert_eq!(reader.ignored(), 21 - 5);
    assert_eq!(reader.skipped(), 0);

    // Another action, chosen by option.
    let options = ParseOptions {
        blkparse_action: 'D',
        ..Default::default()
    };
    let dispatched: Vec<_> = trace::open(fixture("blkparse.txt"), None, &options)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        dispatched,
        vec![rec(5, 12_000, Write, 2048 * S, 8 * S, DEV8_0)]
    );
}

#[test]
fn trace_golden_fio_iolog() {
    use Op::*;
    assert_eq!(
        parse_file("fio_v2.log", Format::FioIolog),
        vec![
            rec(4, 0, Write, 0, 4096, 0),
            rec(5, 0, Write, 4096, 4096, 0),
            rec(7, 0, Read, 0, 8192, 0),
            rec(8, 0, Trim, 1048576, 65536, 0),
            rec(9, 0, Flush, 0, 0, 0),
            rec(10, 0, Flush, 0, 0, 0),
        ]
    );
    // v3 timestamps are microseconds; devices are numbered in order of appearance.
    assert_eq!(
        parse_file("fio_v3.log", Format::FioIolog),
        vec![
            rec(4, 10_000, Write, 0, 4096, 0),
            rec(5, 15_000, Write, 4096, 4096, 0),
            rec(6, 40_000, Read, 0, 8192, 0),
            rec(9, 50_000, Write, 65536, 131072, 1),
            rec(10, 100_000, Trim, 0, 4096, 0),
            rec(11, 120_000, Flush, 0, 0, 0),
        ]
    );
}

/// Malformed lines, one per (format, problem): `good` lines first, then `bad`.
struct Bad {
    format: Format,
    good: &'static str,
    bad: &'static str,
    field: &'static str,
    kind: LineErrorKind,
}

fn bad_cases() -> Vec<Bad> {
    use LineErrorKind::*;
    let missing = |expected, found| Missing { expected, found };
    let case = |format, good, bad, field, kind| Bad {
        format,
        good,
        bad,
        field,
        kind,
    };
    let (d, m, u, s, f, b, io) = (
        Format::DiskSim,
        Format::Msr,
        Format::Umass,
        Format::Systor,
        Format::Fiu,
        Format::Blkparse,
        Format::FioIolog,
    );
    let (dg, mg, ug, sg, fg, bg, iog) = (
        "0 0 8 8 1",
        "128166372003061629,h,0,Read,0,4096,10",
        "0,8,4096,r,0.5",
        "Timestamp,Response,IOType,LUN,Offset,Size\n1.5,0.001,R,0,0,4096",
        "100 1 proc 8 8 R 8 0 abcd",
        "8,0 0 1 0.000001000 10 Q W 8 + 8 [p]",
        "fio version 3 iolog\n1 f read 0 4096",
    );
    vec![
        case(d, dg, "0 0 8 8", "type", missing(5, 4)),
        case(d, dg, "0 0 8 8 1 9", "extra field", Extra { expected: 5 }),
        case(d, dg, "0 0 abc 8 1", "lba", NotNumber),
        case(d, dg, "0 0 8 -8 1", "size", Negative),
        case(d, dg, "1.5 0 8 8 1", "time", NotInteger),
        case(d, dg, "0 0 8 8 R", "type", UnknownOp),
        case(m, mg, "1,h,0,Read,0,4096", "response_time", missing(7, 6)),
        case(m, mg, "1,h,0,Read,x,4096,10", "offset", NotNumber),
        case(m, mg, "1,h,0,Read,0,-4096,10", "size", Negative),
        case(m, mg, "1,h,0,Trim,0,4096,10", "type", UnknownOp),
        case(u, ug, "0,8,4096,r", "timestamp", missing(5, 4)),
        case(u, ug, "0,x,4096,r,0.5", "lba", NotNumber),
        case(u, ug, "0,8,-4096,r,0.5", "size", Negative),
        case(u, ug, "0,8,4096,t,0.5", "opcode", UnknownOp),
        case(s, sg, "1.5,0.001,R,0,0", "size", missing(6, 5)),
        case(s, sg, "abc,0.001,R,0,0,4096", "timestamp", NotNumber),
        case(s, sg, "1.5,0.001,R,0,0,-1", "size", Negative),
        case(s, sg, "1.5,0.001,X,0,0,4096", "iotype", UnknownOp),
        case(f, fg, "100 1 proc 8 8 R 8 0", "md5", missing(9, 8)),
        case(f, fg, "100 1 proc x 8 R 8 0 abcd", "lba", NotNumber),
        case(f, fg, "100 1 proc 8 -8 R 8 0 abcd", "size", Negative),
        case(f, fg, "100 1 proc 8 8 Q 8 0 abcd", "op", UnknownOp),
        case(
            b,
            bg,
            "8,0 0 1 0.000001000 10 Q W 8 +",
            "sectors",
            missing(11, 9),
        ),
        case(
            b,
            bg,
            "8,0 0 1 0.000001000 10 Q W x + 8 [p]",
            "sector",
            NotNumber,
        ),
        case(
            b,
            bg,
            "8,0 0 1 0.000001000 10 Q W 8 + -8 [p]",
            "sectors",
            Negative,
        ),
        case(
            b,
            bg,
            "8,0 0 1 0.000001000 10 Q X 8 + 8 [p]",
            "rwbs",
            UnknownOp,
        ),
        case(io, iog, "1 f read 0", "length", missing(5, 4)),
        case(io, iog, "1 f read x 4096", "offset", NotNumber),
        case(io, iog, "1 f read 0 -4096", "length", Negative),
        case(io, iog, "1 f frob 0 4096", "action", UnknownOp),
        case(
            io,
            "",
            "1 f read 0 4096",
            "header",
            MissingHeader("fio version 3 iolog"),
        ),
    ]
}

#[test]
fn trace_malformed_lines_name_line_and_field() {
    for c in bad_cases() {
        let good = if c.good.is_empty() {
            String::new()
        } else {
            format!("{}\n", c.good)
        };
        let line = good.lines().count() as u64 + 1;
        let text = format!("{good}{}\n", c.bad);
        let err = parse_bytes(text.as_bytes(), Some(c.format)).unwrap_err();
        let what = format!("{} {:?}", c.format, c.bad);
        match &err {
            TraceError::Line {
                file,
                line: l,
                field,
                kind,
                ..
            } => {
                assert_eq!((file.as_str(), *l), ("mem", line), "{what}");
                assert_eq!((*field, kind), (c.field, &c.kind), "{what}");
            }
            other => panic!("{what}: {other}"),
        }
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("mem:{line}: field `{}`", c.field)),
            "{msg}"
        );
    }
}

#[test]
fn trace_skip_bad_lines_counts_and_keeps_going() {
    let text = "0 0 8 8 1\n0 0 x 8 1\n\n# note\n10 0 16 8 0\n0 0 8 8\n20 0 24 8 1\n";
    let options = ParseOptions {
        skip_bad_lines: true,
        ..Default::default()
    };
    let mut r = TraceReader::from_read(
        "t.trace",
        Cursor::new(text),
        Some(Format::DiskSim),
        &options,
    )
    .unwrap();
    let recs: Vec<_> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        recs.iter().map(|r| r.line).collect::<Vec<_>>(),
        vec![1, 5, 7]
    );
    assert_eq!((r.skipped(), r.ignored(), r.lines()), (2, 2, 7));
    assert_eq!(r.warnings().len(), 2);
    assert!(r.warnings()[0].starts_with("t.trace:2: field `lba`: not a number"));
    assert!(r.warnings()[1].starts_with("t.trace:6: field `type`: missing"));
}

/// Reads `data` as `format` to the end; the message of its last error, if any.
fn last_error(data: &[u8], format: Format, skip_bad_lines: bool) -> Option<String> {
    let options = ParseOptions {
        skip_bad_lines,
        ..Default::default()
    };
    let r = TraceReader::from_read("t.txt", Cursor::new(data.to_vec()), Some(format), &options)
        .unwrap();
    r.filter_map(Result::err).last().map(|e| e.to_string())
}

#[test]
fn trace_with_no_request_is_an_error_naming_the_first_line_that_is_not_one() {
    // Random bytes read as blkparse: no line is an event, so every one used to be ignored.
    let mut noise = vec![0u8; 100_000];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for b in &mut noise {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let lines = noise.split(|&b| b == b'\n').count() - noise.ends_with(b"\n") as usize;
    for skip in [false, true] {
        let msg = last_error(&noise, Format::Blkparse, skip).expect("an error");
        assert!(
            msg.starts_with(&format!(
                "t.txt: no request in {lines} lines read as blkparse"
            )) && msg.contains("without a request, the first at line 1: \""),
            "{msg}"
        );
    }
    // Another format's trace, and blkparse events of other actions only.
    let msg = last_error(
        b"# DiskSim\n0 0 2048 8 0\n1500 0 2056 8 1\n",
        Format::Blkparse,
        false,
    );
    let msg = msg.expect("an error");
    assert!(
        msg.contains("2 without a request, the first at line 2: \"0 0 2048 8 0\""),
        "{msg}"
    );
    let events = b"  8,0 1 1 0.000000000 412 A WS 2048 + 8 <- (8,1) 0\n";
    let msg = last_error(events, Format::Blkparse, false).expect("an error");
    assert!(
        msg.contains("1 without a request, the first at line 1"),
        "{msg}"
    );
    // Every request line malformed and skipped: how many, and the first.
    let msg = last_error(b"1 0 x 8 0\n2 0 y 8 0\n", Format::DiskSim, true).expect("an error");
    assert!(
        msg.contains("2 malformed (skipped; the first: t.txt:1: field `lba`: not a number"),
        "{msg}"
    );
    // An empty trace.
    let msg = last_error(b"", Format::DiskSim, false).expect("an error");
    assert_eq!(
        msg,
        "t.txt: no request: the trace is empty (read as disksim)"
    );
    // One request is enough.
    let one = b"garbage\n  8,0 1 2 0.000001000 412 Q WS 2048 + 8 [jbd2/sda1-8]\n";
    assert_eq!(last_error(one, Format::Blkparse, false), None);
}

#[test]
fn trace_no_panic_on_garbage() {
    let garbage: [&[u8]; 8] = [
        b"\xff\xfe\x00\x01 \x80\n",
        b",,,,,,,,,,\n",
        b"8,0 0 1 x\n",
        b"99999999999999999999999 0 0 0 0\n",
        b"0 4294967296 0 0 0\n",
        b"18446744073709551615 0 18446744073709551615 18446744073709551615 1\n",
        b"fio version 3 iolog\n1\n1 f\n",
        b"\r\n\r\n\t\n",
    ];
    for format in Format::ALL {
        for g in garbage {
            let options = ParseOptions {
                skip_bad_lines: true,
                ..Default::default()
            };
            let r = TraceReader::from_read("g", Cursor::new(g.to_vec()), Some(format), &options)
                .unwrap();
            for item in r {
                let _ = item;
            }
            let _ = parse_bytes(g, Some(format));
            let _ = parse_bytes(g, None);
        }
    }
}

#[test]
fn trace_overlong_line_is_an_error_not_a_memory_sink() {
    let mut text = b"0 0 8 8 1\n".to_vec();
    text.extend(vec![b'7'; 10 * MAX_LINE]);
    text.extend(b"\n10 0 16 8 0\n");
    let options = ParseOptions {
        skip_bad_lines: true,
        ..Default::default()
    };
    let mut r =
        TraceReader::from_read("long", Cursor::new(text), Some(Format::DiskSim), &options).unwrap();
    let recs: Vec<_> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1].line, 3);
    assert_eq!(r.skipped(), 1);
    assert!(
        r.warnings()[0].contains("line longer than 65536 bytes"),
        "{:?}",
        r.warnings()
    );
    assert!(r.line_buffer_capacity() <= 2 * MAX_LINE);
}

#[test]
fn trace_detection_of_every_fixture_and_refusal_of_unknown() {
    let files = [
        ("disksim.trace", Format::DiskSim),
        ("msr.csv", Format::Msr),
        ("umass.spc", Format::Umass),
        ("systor.csv", Format::Systor),
        ("fiu.trace", Format::Fiu),
        ("blkparse.txt", Format::Blkparse),
        ("fio_v2.log", Format::FioIolog),
        ("fio_v3.log", Format::FioIolog),
    ];
    for (name, want) in files {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(Format::detect(&lines), Some(want), "{name}");
    }
    let err = parse_bytes(b"hello, world\n", None).unwrap_err();
    assert!(matches!(err, TraceError::UndetectedFormat { .. }), "{err}");
    assert!(err.to_string().contains("disksim, msr"), "{err}");
}

/// Records every writer can express exactly (sector-aligned, read/write, device 0).
fn aligned_records() -> Vec<TraceRecord> {
    (0..50u64)
        .map(|i| {
            let op = if i % 3 == 0 { Op::Read } else { Op::Write };
            rec(
                0,
                1_000_000 + i * 1_700,
                op,
                (i * 7919 % 1000) * 4096,
                (1 + i % 8) * 512,
                0,
            )
        })
        .collect()
}

fn convert(format: Format, recs: &[TraceRecord]) -> Vec<u8> {
    let mut w = TraceWriter::new(format, Vec::new()).unwrap();
    for r in recs {
        w.write(r).unwrap();
    }
    w.finish().unwrap()
}

/// Records with the line numbers cleared (they differ between source and converted file).
fn lineless(recs: impl IntoIterator<Item = TraceRecord>) -> Vec<TraceRecord> {
    recs.into_iter()
        .map(|r| TraceRecord { line: 0, ..r })
        .collect()
}

#[test]
fn trace_round_trip_disksim_msr_fio() {
    let recs = aligned_records();
    // DiskSim keeps everything: ns and sectors.
    let back = parse_bytes(&convert(Format::DiskSim, &recs), None).unwrap();
    assert_eq!(lineless(back), recs);
    // MSR keeps 100 ns ticks.
    let back = parse_bytes(&convert(Format::Msr, &recs), None).unwrap();
    let ticks = recs.iter().map(|r| TraceRecord {
        time_ns: r.time_ns / 100 * 100,
        ..*r
    });
    assert_eq!(lineless(back), lineless(ticks));
    // fio v3 keeps microseconds, and every operation.
    let mut all = recs.clone();
    all[4].op = Op::Trim;
    all[5] = TraceRecord {
        op: Op::Flush,
        offset: 0,
        len: 0,
        ..all[5]
    };
    let out = convert(Format::FioIolog, &all);
    assert!(out.starts_with(b"fio version 3 iolog\n1000 dev0 add\n1000 dev0 open\n"));
    let back = parse_bytes(&out, None).unwrap();
    let micros = all.iter().map(|r| TraceRecord {
        time_ns: r.time_ns / 1000 * 1000,
        ..*r
    });
    assert_eq!(lineless(back), lineless(micros));
}

#[test]
fn trace_round_trip_of_fixtures_through_writers() {
    // Every fixture converts to fio (which expresses every op) and back, as the same requests.
    for name in [
        "disksim.trace",
        "msr.csv",
        "systor.csv",
        "blkparse.txt",
        "fio_v3.log",
    ] {
        let recs: Vec<_> = trace::open(fixture(name), None, &ParseOptions::default())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let one_device: Vec<_> = recs
            .iter()
            .map(|r| TraceRecord { device: 0, ..*r })
            .collect();
        let back = parse_bytes(&convert(Format::FioIolog, &one_device), None).unwrap();
        let micros = one_device.iter().map(|r| TraceRecord {
            time_ns: r.time_ns / 1000 * 1000,
            ..*r
        });
        assert_eq!(lineless(back), lineless(micros), "{name}");
    }
}

#[test]
fn trace_writers_refuse_what_they_cannot_express() {
    let trim = rec(12, 0, Op::Trim, 0, 4096, 0);
    for format in [Format::DiskSim, Format::Msr] {
        let err = trace::write_record(format, &trim, &mut Vec::new()).unwrap_err();
        assert!(
            matches!(err, TraceError::Unrepresentable { line: 12, .. }),
            "{err}"
        );
    }
    let err = TraceWriter::new(Format::Fiu, Vec::new()).unwrap_err();
    assert!(matches!(err, TraceError::NoWriter(Format::Fiu)));
    // Only learnedftl recordings have a placement column.
    for format in [Format::DiskSim, Format::Msr, Format::FioIolog] {
        let w = TraceWriter::new(format, Vec::new()).unwrap();
        let err = w.with_placement().unwrap_err();
        assert!(err.to_string().contains("no placement IDs"), "{err}");
    }
    assert!(TraceWriter::new(Format::Recording, Vec::new())
        .unwrap()
        .with_placement()
        .unwrap()
        .placement());
    // The header names the columns, so the column cannot be added after it.
    let mut w = TraceWriter::new(Format::Recording, Vec::new()).unwrap();
    w.comment("start_unix_ns=1").unwrap();
    let err = w.with_placement().unwrap_err();
    assert!(err.to_string().contains("before the header"), "{err}");
    // Unaligned ranges are widened to the sectors they touch.
    let mut out = Vec::new();
    let odd = rec(1, 5, Op::Write, 1000, 100, 3);
    trace::write_record(Format::DiskSim, &odd, &mut out).unwrap();
    assert_eq!(out, b"5 3 1 2 0\n");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn trace_gzip_and_zstd_by_extension_and_magic() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("trace_compression");
    std::fs::create_dir_all(&dir).unwrap();
    let plain = std::fs::read(fixture("msr.csv")).unwrap();
    let want = parse_bytes(&plain, None).unwrap();

    // Two gzip members back to back (as `cat a.gz b.gz` makes) read as one stream.
    let (a, b) = plain.split_at(plain.len() / 2);
    let mut gz = gzip(a);
    gz.extend(gzip(b));
    let zst = zstd::encode_all(&plain[..], 1).unwrap();

    for (name, data, kind) in [
        ("msr.csv.gz", &gz, Compression::Gzip),
        ("msr.csv.zst", &zst, Compression::Zstd),
        ("msr-gz-without-extension.csv", &gz, Compression::Gzip),
        ("msr-zst-without-extension.csv", &zst, Compression::Zstd),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, data).unwrap();
        let reader = trace::open(&path, None, &ParseOptions::default()).unwrap();
        assert_eq!(
            (reader.compression(), reader.format()),
            (kind, Format::Msr),
            "{name}"
        );
        let got: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
        assert_eq!(got, want, "{name}");
    }

    // The extension promises what the content is not.
    let path = dir.join("plain.csv.gz");
    std::fs::write(&path, &plain).unwrap();
    let err = trace::open(&path, None, &ParseOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            TraceError::CompressionMismatch {
                extension: "gz",
                ..
            }
        ),
        "{err}"
    );

    // A truncated gzip stream is an I/O error naming the file, not a silent stop.
    let path = dir.join("truncated.csv.gz");
    std::fs::write(&path, &gz[..gz.len() - 30]).unwrap();
    let result: Result<Vec<_>, _> =
        trace::open(&path, Some(Format::Msr), &ParseOptions::default()).and_then(|r| r.collect());
    let err = result.unwrap_err();
    assert!(matches!(err, TraceError::Io { .. }), "{err}");
    assert!(err.to_string().contains("truncated.csv.gz"), "{err}");
}

#[test]
fn trace_stats_of_a_fixture() {
    let reader = trace::open(fixture("disksim.trace"), None, &ParseOptions::default()).unwrap();
    let s = TraceStats::from_records(reader).unwrap();
    assert_eq!((s.requests, s.reads, s.writes), (9, 4, 5));
    assert_eq!(s.duration_ns, 12_000);
    assert_eq!(s.min_byte, Some(0));
    assert_eq!(s.max_byte, Some(4160 * 512 - 1));
    // Pages: 0, 1 (lba 8..16), 12 (lba 100), 256..=257, 512..=519 (2 x 16 KiB).
    assert_eq!(s.footprint_pages, Some(3 + 2 + 8));
    // Of writes after a write: 1500 (seq), 6000 (no), 7500 (seq), 12000 (no) = 2 of 4;
    // of reads after a read: 4500, 9000, 10500 = 0 of 3.
    assert!((s.sequential_fraction - 2.0 / 7.0).abs() < 1e-12);
    assert_eq!(s.inter_arrival.p50_ns, 1500);
}

#[test]
fn trace_replay_from_reader_names_the_line() {
    use learnedftl::trace::ReplayOptions;
    let reader = trace::open(fixture("disksim.trace"), None, &ParseOptions::default()).unwrap();
    // 2 MiB logical space: line 7's write (4128 * 512 + 16 KiB) crosses the end.
    let mut replay = reader
        .into_replay(2 << 20, ReplayOptions::default())
        .unwrap();
    let ok: Vec<_> = replay.by_ref().take_while(Result::is_ok).collect();
    assert_eq!(ok.len(), 4);
    let err = trace::open(fixture("disksim.trace"), None, &ParseOptions::default())
        .unwrap()
        .into_replay(2 << 20, ReplayOptions::default())
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    assert!(
        err.to_string()
            .contains("disksim.trace:6: request at bytes 2097152..2113536"),
        "{err}"
    );
}

#[test]
fn trace_reader_is_send() {
    fn send<T: Send>() {}
    send::<TraceReader>();
    send::<TraceError>();
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// No input makes any parser panic: lines of digits, separators, signs, letters and bytes.
    #[test]
    fn trace_parsers_never_panic(text in "([0-9 ,.+#-]|[a-zA-Z]|\t|\n|\u{ff}){0,400}") {
        for format in Format::ALL {
            let options = ParseOptions { skip_bad_lines: true, ..Default::default() };
            let reader = TraceReader::from_read(
                "p", Cursor::new(text.clone().into_bytes()), Some(format), &options,
            ).unwrap();
            // Skipped lines are no errors; only a trace without a request is, and it ends.
            let mut records = 0;
            for item in reader {
                match item {
                    Ok(_) => records += 1,
                    Err(TraceError::NoRequest(n)) => proptest::prop_assert_eq!((records, &*n.file), (0, "p")),
                    Err(e) => proptest::prop_assert!(false, "{e}"),
                }
            }
            let _ = parse_bytes(text.as_bytes(), None);
        }
    }
}
