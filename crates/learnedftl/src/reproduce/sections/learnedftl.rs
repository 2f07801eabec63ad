//! The LearnedFTL paper's experiments: reads, writes, training cost, TPFTL's motivation, the
//! CMT sweep, traces and the ablations of LearnedFTL's switches.

use super::*;
use crate::reproduce::def::Def;
use crate::reproduce::doc::{Section, Table};
use crate::reproduce::sweeps::{ablation_label, ABLATIONS, CMT_RATIOS};
use crate::reproduce::{ExperimentResult, Results};
use serde_json::Value;

/// What the LearnedFTL paper reports per experiment and FTL: text, and the number we plot
/// (reads: combined CMT + model hit ratio; writes: GCs ÷ DFTL's).
fn paper_note(experiment: &str, ftl: &str) -> (&'static str, Option<f64>) {
    match (experiment, ftl) {
        ("randread", "dftl") => ("CMT hit ≈ 0 %; LearnedFTL 1.5×", Some(0.0)),
        ("randread", "tpftl") => ("CMT hit ≈ 0 %; LearnedFTL 1.4×", Some(0.0)),
        ("randread", "leaftl") => (
            "single 5 %, double 52 %, triple 43 %; LearnedFTL 1.6×",
            None,
        ),
        ("randread", "learnedftl") => ("model hit 55.5 %; 89.2 % of ideal", Some(0.555)),
        ("seqread" | "seqread-shared", "dftl") => ("hits 61 %; LearnedFTL 1.1×", Some(0.61)),
        ("seqread" | "seqread-shared", "tpftl") => ("hits 80 %; LearnedFTL 1.1×", Some(0.80)),
        ("seqread" | "seqread-shared", "leaftl") => ("hits 76 %; LearnedFTL 1.1×", Some(0.76)),
        ("seqread" | "seqread-shared", "learnedftl") => ("hits 90 %; 96.8 % of ideal", Some(0.90)),
        ("randwrite", "dftl") => ("GCs 4,335 (1.00× DFTL's)", Some(1.0)),
        ("randwrite", "tpftl") => ("GCs 4,335 (1.00×)", Some(1.0)),
        ("randwrite", "leaftl") => ("GCs 4,395 (1.01×)", Some(1.01)),
        ("randwrite", "learnedftl") => ("GCs 4,188 (0.97×); IOPS 1.2–1.4× the others", Some(0.97)),
        ("seqwrite", "dftl") => ("GCs 4,572 (1.00× DFTL's)", Some(1.0)),
        ("seqwrite", "tpftl") => ("GCs 4,304 (0.94×)", Some(0.94)),
        ("seqwrite", "leaftl") => ("GCs 4,473 (0.98×)", Some(0.98)),
        ("seqwrite", "learnedftl") => (
            "GCs 4,285 (0.94×); IOPS within 2 % of DFTL/TPFTL",
            Some(0.94),
        ),
        _ => ("", None),
    }
}

/// Every report of an experiment with its row label: the first run's by FTL, the variants' by
/// run label.
fn labelled(e: &ExperimentResult) -> Vec<(String, &Value)> {
    let mut rows = vec![];
    for (i, run) in e.runs.iter().enumerate() {
        for r in by_ftl(run) {
            rows.push((if i == 0 { name(r) } else { run.label.clone() }, r));
        }
    }
    rows
}

/// Random and sequential reads: IOPS against ideal, hits, lookups; chart of the combined hit
/// ratio beside the paper's.
pub(in crate::reproduce) fn reads(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let rows = labelled(e);
    let iops = |label: &str| {
        rows.iter()
            .find(|(l, _)| l == label)
            .map_or(f64::NAN, |(_, r)| f(r, "result.iops"))
    };
    let (ideal, ld) = (iops("ideal"), iops("learnedftl"));
    let mut t = Table::new(&[
        "FTL",
        "IOPS",
        "% of ideal",
        "LearnedFTL ÷ it",
        "CMT hit",
        "model hit",
        "single/double/triple",
        "read p99 µs",
        "precond. WAF",
        "settle write-backs",
        "paper",
    ]);
    for (label, r) in &rows {
        let m = &r["result"];
        let settle = phase(r, "settle");
        t.row(vec![
            label.clone(),
            num(f(m, "iops"), 0),
            pct(f(m, "iops") / ideal),
            if label == "learnedftl" {
                String::new()
            } else {
                times(ld, f(m, "iops"))
            },
            pct(f(m, "cmt_hit_ratio")),
            pct(f(m, "model_hit_ratio")),
            lookup_split(m),
            num(f(m, "latency_us.read.p99"), 1),
            phase(r, "precondition").map_or("–".into(), |p| num(f(p, "waf"), 2)),
            settle.map_or("–".into(), |p| {
                num(f(p, "flash.programs.translation_writeback"), 0)
            }),
            paper_note(def.name, label).0.to_string(),
        ]);
    }
    s.table(t);
    let cats: Vec<String> = rows.iter().map(|(l, _)| l.clone()).collect();
    s.chart(bars(
        "CMT + model hit ratio of the measured reads",
        "hit ratio",
        cats.clone(),
        vec![
            series(
                "ours",
                rows.iter()
                    .map(|(_, r)| ok(f(r, "result.cmt_hit_ratio") + f(r, "result.model_hit_ratio")))
                    .collect(),
            ),
            series(
                "paper",
                cats.iter().map(|c| paper_note(def.name, c).1).collect(),
            ),
        ],
    ));
    s.chart(bars(
        "IOPS of the measured reads",
        "IOPS",
        cats,
        vec![series(
            "ours",
            rows.iter().map(|(_, r)| ok(f(r, "result.iops"))).collect(),
        )],
    ));
}

/// Random and sequential writes: IOPS, WAF, GC counts against DFTL's; chart of GCs ÷ DFTL's
/// beside the paper's.
pub(in crate::reproduce) fn writes(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let rows = labelled(e);
    let get = |label: &str, path: &str| {
        rows.iter()
            .find(|(l, _)| l == label)
            .map_or(f64::NAN, |(_, r)| f(r, path))
    };
    let (ld, dftl_gcs) = (
        get("learnedftl", "result.iops"),
        get("dftl", "result.gc.events"),
    );
    let mut t = Table::new(&[
        "FTL",
        "IOPS",
        "LearnedFTL ÷ it",
        "WAF",
        "GCs",
        "GCs ÷ DFTL's",
        "pages moved",
        "write p99 µs",
        "precond. WAF",
        "paper",
    ]);
    for (label, r) in &rows {
        let m = &r["result"];
        t.row(vec![
            label.clone(),
            num(f(m, "iops"), 0),
            if label == "learnedftl" {
                String::new()
            } else {
                times(ld, f(m, "iops"))
            },
            num(f(m, "waf"), 2),
            num(f(m, "gc.events"), 0),
            times(f(m, "gc.events"), dftl_gcs),
            num(f(m, "gc.pages_moved"), 0),
            num(f(m, "latency_us.write.p99"), 0),
            phase(r, "precondition").map_or("–".into(), |p| num(f(p, "waf"), 2)),
            paper_note(def.name, label).0.to_string(),
        ]);
    }
    s.table(t);
    s.text(
        "HP-FTL's GCs are block collections, the others' line collections (a line is one block \
         per LUN plane), so its GC ratio does not compare; the chart leaves it out.",
    );
    // The collapsing paper design's thousands would flatten the chart: the FTLs' own rows; and
    // HP-FTL counts block collections, the others line collections (64 blocks on quick).
    let main: Vec<&(String, &Value)> = rows
        .iter()
        .filter(|(l, _)| !l.contains('=') && l != "hpftl")
        .collect();
    let cats: Vec<String> = main.iter().map(|(l, _)| l.clone()).collect();
    s.chart(bars(
        "GC events ÷ DFTL's",
        "× DFTL's GCs",
        cats.clone(),
        vec![
            series(
                "ours",
                main.iter()
                    .map(|(_, r)| ok(f(r, "result.gc.events") / dftl_gcs))
                    .collect(),
            ),
            series(
                "paper",
                cats.iter().map(|c| paper_note(def.name, c).1).collect(),
            ),
        ],
    ));
    s.chart(bars(
        "Write IOPS and WAF",
        "value",
        cats,
        vec![
            series(
                "IOPS ÷ 1000",
                main.iter()
                    .map(|(_, r)| ok(f(r, "result.iops") / 1e3))
                    .collect(),
            ),
            series(
                "WAF",
                main.iter().map(|(_, r)| ok(f(r, "result.waf"))).collect(),
            ),
        ],
    ));
}

/// LearnedFTL's sorting + training CPU time against GC flash time, from other experiments.
pub(in crate::reproduce) fn training(results: &Results, def: &Def, s: &mut Section) {
    let mut t = Table::new(&[
        "workload",
        "LearnedFTL",
        "phase",
        "collections (group / line)",
        "sort µs/GC",
        "train µs/GC",
        "GC flash ms/GC",
        "share",
    ]);
    let mut shares = vec![];
    for name in def.reads {
        let Some(e) = results.get(name) else { continue };
        for (i, run) in e.runs.iter().enumerate() {
            for r in run.reports.iter().filter(|r| r["ftl"] == "learnedftl") {
                let label = if i == 0 {
                    "default".to_string()
                } else {
                    run.label.replace("learnedftl ", "")
                };
                for m in phase_list(r) {
                    let group = counter(m, "group_gcs").unwrap_or(0.0);
                    let line = counter(m, "line_gcs").unwrap_or(0.0);
                    let gcs = group + line;
                    if gcs == 0.0 {
                        continue;
                    }
                    let sort_ms = counter(m, "sort_ns").unwrap_or(0.0) / 1e6;
                    let train_ms = counter(m, "train_ns").unwrap_or(0.0) / 1e6;
                    let flash = gc_flash_ms(r, m);
                    let share = (sort_ms + train_ms) / (sort_ms + train_ms + flash);
                    let ph = m["phase"].as_str().unwrap_or("?");
                    t.row(vec![
                        name.to_string(),
                        label.clone(),
                        ph.to_string(),
                        format!("{} ({} / {})", num(gcs, 0), num(group, 0), num(line, 0)),
                        num(sort_ms * 1e3 / gcs, 1),
                        num(train_ms * 1e3 / gcs, 1),
                        num(flash / gcs, 2),
                        pct(share),
                    ]);
                    shares.push((format!("{name} {label} {ph}"), share));
                }
            }
        }
    }
    if shares.is_empty() {
        s.text("No LearnedFTL collection in the runs read.");
        return;
    }
    s.text(
        "Sorting and training are the simulator's own CPU time (x86 host); GC flash time is the \
         GC reads, programs and erases of the phase at the device's latencies divided by the \
         LUNs they stripe over. share = CPU / (CPU + GC flash time).",
    );
    s.table(t);
    let cats: Vec<String> = shares.iter().map(|(l, _)| l.clone()).collect();
    s.chart(bars(
        "Training + sorting share of GC time",
        "share",
        cats,
        vec![
            series("ours", shares.iter().map(|(_, v)| ok(*v)).collect()),
            series("paper", shares.iter().map(|_| Some(0.032)).collect()),
        ],
    ));
}

pub(in crate::reproduce) fn tpftl_threads(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let (Some(rnd), Some(seq)) = (report(e, "random"), report(e, "sequential")) else {
        s.text("(incomplete: needs the random and sequential runs)");
        return;
    };
    let seq0 = report(e, "sequential, prefetch_threshold=0");
    let mut t = Table::new(&[
        "jobs",
        "random IOPS",
        "sequential IOPS",
        "random below sequential",
        "CMT hit random",
        "CMT hit sequential",
        "sequential, counter off",
        "random below it",
    ]);
    let (mut xs, mut r_iops, mut s_iops, mut s0_iops) = (vec![], vec![], vec![], vec![]);
    for p in phase_list(rnd) {
        let Some(jobs) = p["phase"].as_str().and_then(|n| n.strip_prefix("jobs-")) else {
            continue;
        };
        let name = p["phase"].as_str().unwrap_or_default();
        let q = phase(seq, name).unwrap_or(&Value::Null);
        let q0 = seq0.and_then(|r| phase(r, name)).unwrap_or(&Value::Null);
        t.row(vec![
            jobs.into(),
            num(f(p, "iops"), 0),
            num(f(q, "iops"), 0),
            pct(1.0 - f(p, "iops") / f(q, "iops")),
            pct(f(p, "cmt_hit_ratio")),
            pct(f(q, "cmt_hit_ratio")),
            num(f(q0, "iops"), 0),
            pct(1.0 - f(p, "iops") / f(q0, "iops")),
        ]);
        xs.push(jobs.to_string());
        r_iops.push(ok(f(p, "iops")));
        s_iops.push(ok(f(q, "iops")));
        s0_iops.push(ok(f(q0, "iops")));
    }
    s.text("\"counter off\": `--set prefetch_threshold=0`, TPFTL's selective prefetch never switches off. Paper: random reads up to 60 % below sequential at every thread count.");
    s.table(t);
    s.chart(lines(
        "TPFTL read IOPS by thread count",
        "jobs",
        "IOPS",
        xs,
        vec![
            series("random", r_iops),
            series("sequential (±3 counter)", s_iops),
            series("sequential, counter off", s0_iops),
        ],
    ));
}

pub(in crate::reproduce) fn cmt_sweep(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let mut t = Table::new(&[
        "CMT (share of mappings)",
        "CMT hit",
        "IOPS",
        "double reads",
        "paper",
    ]);
    let (mut xs, mut hits, mut paper) = (vec![], vec![], vec![]);
    for ratio in CMT_RATIOS {
        let Some(r) = report(e, &format!("cmt_ratio={ratio}")) else {
            continue;
        };
        let m = &r["result"];
        let x: f64 = ratio.parse().unwrap_or(f64::NAN);
        let at_half = (x - 0.5).abs() < 1e-9;
        t.row(vec![
            pct(x),
            pct(f(m, "cmt_hit_ratio")),
            num(f(m, "iops"), 0),
            pct(f(m, "lookups.double") / f(m, "page_reads")),
            if at_half {
                "25.9 %".into()
            } else {
                String::new()
            },
        ]);
        xs.push(format!("{}", x * 100.0));
        hits.push(ok(f(m, "cmt_hit_ratio") * 100.0));
        paper.push(at_half.then_some(25.9));
    }
    s.table(t);
    s.chart(lines(
        "TPFTL CMT hit ratio against CMT size (random reads)",
        "CMT, % of the mappings",
        "CMT hit, %",
        xs,
        vec![series("ours", hits), series("paper", paper)],
    ));
}

pub(in crate::reproduce) fn traces(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    // One series per replay: [TPFTL's, LeaFTL's] P99 ÷ LearnedFTL's.
    let mut replays: Vec<Series> = vec![];
    for run in e.runs.iter().filter(|r| !r.label.contains(" learnedftl ")) {
        let mut ratios = vec![None, None];
        let reports = by_ftl(run);
        let variant = e
            .runs
            .iter()
            .find(|v| v.label == format!("{} learnedftl design=paper", run.label))
            .and_then(|v| v.reports.first());
        let ld = reports
            .iter()
            .find(|r| r["ftl"] == "learnedftl")
            .map_or(f64::NAN, |r| f(r, "result.latency_us.read.p99"));
        let mut t = Table::new(&[
            "FTL",
            "read p99 µs",
            "read p99.9 µs",
            "read mean µs",
            "it ÷ LearnedFTL p99",
            "CMT hit",
            "model hit",
            "single/double/triple",
            "paper (P99 ÷ LearnedFTL's)",
        ]);
        let rows = reports
            .iter()
            .map(|r| (name(r), *r))
            .chain(variant.map(|v| ("learnedftl design=paper".to_string(), v)));
        for (label, r) in rows {
            let m = &r["result"];
            let p99 = f(m, "latency_us.read.p99");
            t.row(vec![
                label.clone(),
                num(p99, 1),
                num(f(m, "latency_us.read.p999"), 1),
                num(f(m, "latency_us.read.mean"), 1),
                if label.starts_with("learnedftl") {
                    String::new()
                } else {
                    times(p99, ld)
                },
                pct(f(m, "cmt_hit_ratio")),
                pct(f(m, "model_hit_ratio")),
                lookup_split(m),
                match label.as_str() {
                    "tpftl" => "5.3× / 7.4× / 6.5× (WS1–3), 2.9× (Systor); mean 5.5×".into(),
                    "leaftl" => "7.8× / 12.2× / 9.7× (WS1–3), 3.0× (Systor); mean 8.2×".into(),
                    _ => String::new(),
                },
            ]);
            if let Some(i) = ["tpftl", "leaftl"].iter().position(|f| *f == label) {
                ratios[i] = ok(p99 / ld);
            }
        }
        replays.push(series(&run.label, ratios));
        s.text(format!("**{}**:", run.label));
        s.table(t);
    }
    if replays.is_empty() {
        s.text("No trace found: the sample traces are not in the traces directory.");
        return;
    }
    // The paper's means over WebSearch 1–3 and Systor'17.
    replays.push(series("paper", vec![Some(5.5), Some(8.2)]));
    s.chart(bars(
        "P99 read latency ÷ LearnedFTL's (default design)",
        "× LearnedFTL's P99",
        vec!["TPFTL".into(), "LeaFTL".into()],
        replays,
    ));
}

/// The application's phase `phase` of a closed-loop replay (`trace.closed_loop.phases`).
fn app_phase<'a>(r: &'a Value, phase: &str) -> Option<&'a Value> {
    r["trace"]["closed_loop"]["phases"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == phase))
}

/// The application's operations per second in phase `phase`, as this FTL's device gives them;
/// NaN without the phase.
fn rate(r: &Value, phase: &str) -> f64 {
    app_phase(r, phase).map_or(f64::NAN, |p| f(p, "simulated_ops_per_sec"))
}

pub(in crate::reproduce) fn rocksdb(results: &Results, def: &Def, s: &mut Section) {
    let Some(run) = results.get(def.name).and_then(|e| e.runs.first()) else {
        return;
    };
    let reports = by_ftl(run);
    let base = reports.iter().find(|r| r["ftl"] == "tpftl");
    let mut t = Table::new(&[
        "FTL",
        "write ops/s",
        "readrandom ops/s",
        "readseq ops/s",
        "readrandom ÷ TPFTL",
        "readseq ÷ TPFTL",
        "CMT hit",
        "model hit",
        "WAF",
        "paper (LearnedFTL ÷ it)",
    ]);
    let learned = reports.iter().find(|r| r["ftl"] == "learnedftl");
    for r in &reports {
        let m = &r["result"];
        let vs = |phase: &str| times(rate(r, phase), base.map_or(f64::NAN, |b| rate(b, phase)));
        t.row(vec![
            name(r),
            num(rate(r, "write"), 0),
            num(rate(r, "readrandom"), 0),
            num(rate(r, "readseq"), 0),
            vs("readrandom"),
            vs("readseq"),
            pct(f(m, "cmt_hit_ratio")),
            pct(f(m, "model_hit_ratio")),
            num(f(m, "waf"), 2),
            match name(r).as_str() {
                "learnedftl" => String::new(),
                // Fig. 19: readrandom 1.3–1.4× and readseq 1.02–4.0× every other FTL's.
                _ => "readrandom 1.3–1.4×, readseq 1.02–4.0×".into(),
            },
        ]);
    }
    s.table(t);
    if let (Some(l), Some(b)) = (learned, base) {
        s.text(format!(
            "LearnedFTL ÷ TPFTL: readrandom {}, readseq {} (paper 1.3–1.4× and 1.02–4.0×).",
            times(rate(l, "readrandom"), rate(b, "readrandom")),
            times(rate(l, "readseq"), rate(b, "readseq"))
        ));
    }
}

/// Filebench's personalities, the recording's phases.
const PERSONALITIES: [&str; 3] = ["fileserver", "webserver", "varmail"];

/// The FTLs of the paper's Fig. 20 that LearnedFTL is compared with.
const FIG20: [&str; 3] = ["dftl", "tpftl", "leaftl"];

pub(in crate::reproduce) fn filebench(results: &Results, def: &Def, s: &mut Section) {
    let Some(run) = results.get(def.name).and_then(|e| e.runs.first()) else {
        return;
    };
    let reports = by_ftl(run);
    let ftl = |n: &str| reports.iter().find(|r| r["ftl"] == n).copied();
    let base = |phase: &str| ftl("tpftl").map_or(f64::NAN, |b| rate(b, phase));
    let mut t = Table::new(&[
        "FTL",
        "fileserver ops/s",
        "webserver ops/s",
        "varmail ops/s",
        "fileserver ÷ TPFTL",
        "webserver ÷ TPFTL",
        "varmail ÷ TPFTL",
        "paper (LearnedFTL ÷ it)",
    ]);
    let mut hits = Table::new(&[
        "FTL",
        "fileserver CMT",
        "fileserver model",
        "webserver CMT",
        "webserver model",
        "varmail CMT",
        "varmail model",
        "WAF (session)",
    ]);
    for r in &reports {
        let mut row = vec![name(r)];
        row.extend(PERSONALITIES.map(|p| num(rate(r, p), 0)));
        row.extend(PERSONALITIES.map(|p| times(rate(r, p), base(p))));
        row.push(match name(r).as_str() {
            "learnedftl" => String::new(),
            n if FIG20.contains(&n) => "1.1–2.3×".into(),
            _ => "not in Fig. 20".into(),
        });
        t.row(row);
        let mut row = vec![name(r)];
        for p in PERSONALITIES {
            // A phase without page reads has no hit ratio.
            let hit = |key: &str| match app_phase(r, p) {
                Some(q) if f(q, "page_reads") > 0.0 => pct(f(q, key)),
                _ => "–".into(),
            };
            row.extend([hit("cmt_hit_ratio"), hit("model_hit_ratio")]);
        }
        row.push(num(f(&r["result"], "waf"), 2));
        hits.row(row);
    }
    s.table(t);
    s.text(
        "Each personality's own hit ratios (the page reads of the requests issued in its run; \
         the paper gives none for Fig. 20, and Fig. 7(b) only plots TPFTL's and LeaFTL's on \
         webserver), and the WAF of the whole replay:",
    );
    s.table(hits);
    s.chart(bars(
        "Filebench operations per second ÷ TPFTL's (closed-loop replay)",
        "÷ TPFTL",
        reports.iter().map(|r| name(r)).collect(),
        PERSONALITIES
            .iter()
            .map(|&p| {
                let values = reports.iter().map(|r| ok(rate(r, p) / base(p))).collect();
                series(p, values)
            })
            .collect(),
    ));
    let Some(l) = ftl("learnedftl") else {
        return;
    };
    // LearnedFTL ÷ each of Fig. 20's other FTLs, lowest to highest.
    let span = |p: &str| {
        let v: Vec<f64> = FIG20
            .iter()
            .filter_map(|&n| ftl(n))
            .map(|o| rate(l, p) / rate(o, p))
            .filter(|x| x.is_finite())
            .collect();
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        if v.is_empty() {
            "–".to_string()
        } else {
            format!("{lo:.2}–{hi:.2}×")
        }
    };
    let mut text = format!(
        "LearnedFTL ÷ DFTL, TPFTL and LeaFTL: fileserver {}, webserver {}, varmail {} (paper \
         1.1–2.3×, Fig. 20).",
        span("fileserver"),
        span("webserver"),
        span("varmail")
    );
    if let Some(lea) = ftl("leaftl") {
        text += &format!(
            " LeaFTL ÷ TPFTL: fileserver {}, webserver {}, varmail {} (paper: at most 1×, \
             Fig. 7(a)).",
            times(rate(lea, "fileserver"), base("fileserver")),
            times(rate(lea, "webserver"), base("webserver")),
            times(rate(lea, "varmail"), base("varmail"))
        );
    }
    s.text(text);
}

pub(in crate::reproduce) fn ablations(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let mut t = Table::new(&[
        "variant",
        "precondition WAF",
        "GC events",
        "read IOPS",
        "model hit",
        "double reads",
        "DRAM B",
    ]);
    let mut cats = vec![];
    let (mut waf, mut hit) = (vec![], vec![]);
    for switches in ABLATIONS {
        let label = ablation_label(switches);
        let Some(r) = report(e, &label) else { continue };
        let pre = phase(r, "precondition").unwrap_or(&Value::Null);
        let m = &r["result"];
        t.row(vec![
            label.clone(),
            num(f(pre, "waf"), 2),
            num(f(pre, "gc.events"), 0),
            num(f(m, "iops"), 0),
            pct(f(m, "model_hit_ratio")),
            num(f(m, "lookups.double"), 0),
            num(f(m, "dram_bytes.total"), 0),
        ]);
        cats.push(label);
        waf.push(ok(f(pre, "waf")));
        hit.push(ok(f(m, "model_hit_ratio") * 100.0));
    }
    s.table(t);
    s.chart(bars(
        "Precondition WAF and model hits per switch",
        "value",
        cats,
        vec![series("precondition WAF", waf), series("model hit, %", hit)],
    ));
}
