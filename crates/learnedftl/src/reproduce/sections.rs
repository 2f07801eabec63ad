//! Each experiment's section: tables and charts of our numbers beside the papers', read from
//! the runs' JSON reports (every key: docs/metrics.md), and why they differ (the causes of
//! docs/reproduction.md, numbered as there).

use super::doc::{Section, Table};
use super::registry::{Def, ABLATIONS, CMT_RATIOS, HP_RATIOS, HP_WORKLOADS};
use super::{ExperimentResult, Results, RunResult};
use crate::report::plot::{Chart, Kind, Series};
use serde_json::Value;

/// Renders a section from the results.
pub type Render = fn(&Results, &Def, &mut Section);

/// The order FTLs appear in, whatever order the runs used: the registry's.
const ORDER: &[&str] = crate::ftl::FTLS;

// ---- reading reports --------------------------------------------------------------------------

/// The number at `path` (dot-separated keys) in `v`; NaN where absent.
fn f(v: &Value, path: &str) -> f64 {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_f64)
        .unwrap_or(f64::NAN)
}

/// An FTL counter of a phase (`ftl_counters.<path>`), if the FTL reports it.
fn counter(m: &Value, path: &str) -> Option<f64> {
    let v = f(&m["ftl_counters"], path);
    v.is_finite().then_some(v)
}

/// A report's phases.
pub(super) fn phase_list(r: &Value) -> &[Value] {
    r["phases"].as_array().map_or(&[], Vec::as_slice)
}

fn phase<'a>(r: &'a Value, name: &str) -> Option<&'a Value> {
    phase_list(r).iter().find(|p| p["phase"] == name)
}

/// The reports of a run, in [`ORDER`].
fn by_ftl(run: &RunResult) -> Vec<&Value> {
    let mut v: Vec<&Value> = run.reports.iter().collect();
    v.sort_by_key(|r| {
        ORDER
            .iter()
            .position(|o| r["ftl"] == *o)
            .unwrap_or(ORDER.len())
    });
    v
}

fn name(r: &Value) -> String {
    r["ftl"].as_str().unwrap_or("?").to_string()
}

fn run<'a>(e: &'a ExperimentResult, label: &str) -> Option<&'a RunResult> {
    e.runs
        .iter()
        .find(|r| r.label == label && !r.reports.is_empty())
}

/// The first report of the run labelled `label`.
fn report<'a>(e: &'a ExperimentResult, label: &str) -> Option<&'a Value> {
    run(e, label).and_then(|r| r.reports.first())
}

// ---- formatting -------------------------------------------------------------------------------

/// `x` with thousands separators and `digits` decimals; "–" when not a number.
pub(super) fn num(x: f64, digits: usize) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let s = format!("{:.*}", digits, x.abs());
    let (int, frac) = s
        .split_once('.')
        .map_or((s.as_str(), None), |(a, b)| (a, Some(b)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if x < 0.0 && s.chars().any(|c| c != '0' && c != '.') {
        "-"
    } else {
        ""
    };
    match frac {
        Some(fr) => format!("{sign}{grouped}.{fr}"),
        None => format!("{sign}{grouped}"),
    }
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1} %", 100.0 * x)
    } else {
        "–".into()
    }
}

/// `a ÷ b` as "1.23×".
fn times(a: f64, b: f64) -> String {
    if a.is_finite() && b.is_finite() && b != 0.0 && a != 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "–".into()
    }
}

fn lookup_split(m: &Value) -> String {
    let n = f(m, "page_reads").max(1.0);
    format!(
        "{:.2}/{:.2}/{:.2}",
        f(m, "lookups.single") / n,
        f(m, "lookups.double") / n,
        f(m, "lookups.triple") / n
    )
}

fn series(name: &str, values: Vec<Option<f64>>) -> Series {
    Series {
        name: name.into(),
        values,
    }
}

/// Grouped bars of `series` over `categories`.
fn bars(title: &str, y: &str, categories: Vec<String>, series: Vec<Series>) -> Chart {
    Chart {
        title: title.into(),
        y_label: y.into(),
        categories,
        series,
        kind: Kind::Bars,
    }
}

/// Lines of `series` over the numeric `xs`.
fn lines(title: &str, x: &str, y: &str, xs: Vec<String>, series: Vec<Series>) -> Chart {
    Chart {
        title: title.into(),
        y_label: y.into(),
        categories: xs,
        series,
        kind: Kind::Lines { x_label: x.into() },
    }
}

fn ok(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

// ---- the LearnedFTL paper's experiments -------------------------------------------------------

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
pub(super) fn reads(results: &Results, def: &Def, s: &mut Section) {
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
pub(super) fn writes(results: &Results, def: &Def, s: &mut Section) {
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

fn luns(r: &Value) -> f64 {
    let g = &r["config"]["device"]["geometry"];
    f(g, "channels") * f(g, "luns_per_channel") * f(g, "planes_per_lun")
}

/// Flash time of a phase in ns (docs/metrics.md): the reads and programs of `causes` at the
/// device's latencies, plus every erase (erases are only ever GC's).
fn flash_ns(r: &Value, m: &Value, causes: &[&str]) -> f64 {
    let t = &r["config"]["device"]["timing"];
    causes
        .iter()
        .map(|c| {
            f(m, &format!("flash.reads.{c}")) * f(t, "read_ns")
                + f(m, &format!("flash.programs.{c}")) * f(t, "program_ns")
        })
        .sum::<f64>()
        + f(m, "flash.erases") * f(t, "erase_ns")
}

/// Every cause of flash work.
const CAUSES: [&str; 7] = [
    "user",
    "translation_read",
    "translation_writeback",
    "gc_data",
    "gc_translation",
    "misprediction",
    "prefetch",
];

/// Share of the LUNs' time spent on flash operations over a phase.
fn busy(r: &Value, m: &Value) -> f64 {
    flash_ns(r, m, &CAUSES) / (luns(r) * f(m, "sim_seconds") * 1e9)
}

/// Flash time GC spent per LUN in a phase, ms: GC reads, programs and every erase, spread over
/// all LUNs (a collection stripes over them).
fn gc_flash_ms(r: &Value, m: &Value) -> f64 {
    flash_ns(r, m, &["gc_data", "gc_translation"]) / luns(r) / 1e6
}

/// LearnedFTL's sorting + training CPU time against GC flash time, from other experiments.
pub(super) fn training(results: &Results, def: &Def, s: &mut Section) {
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

pub(super) fn tpftl_threads(results: &Results, def: &Def, s: &mut Section) {
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

pub(super) fn cmt_sweep(results: &Results, def: &Def, s: &mut Section) {
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

pub(super) fn traces(results: &Results, def: &Def, s: &mut Section) {
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

pub(super) fn ablations(results: &Results, def: &Def, s: &mut Section) {
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
        let label = super::registry::ablation_label(switches);
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

// ---- HP-FTL (Ni et al.) -----------------------------------------------------------------------

pub(super) fn hpftl_fig2(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    for (w, _) in HP_WORKLOADS {
        let ideal = report(e, &format!("{w} ideal")).map_or(f64::NAN, |r| f(r, "result.iops"));
        let mut t = Table::new(&[
            "DRAM (share of the table)",
            "ideal IOPS",
            "DFTL IOPS",
            "HP-FTL IOPS",
            "HP-FTL ÷ DFTL",
            "HP-FTL ÷ ideal",
            "DFTL ÷ ideal",
            "DFTL flash µs/write",
            "DFTL LUN busy",
            "HP-FTL LUN busy",
            "paper",
        ]);
        let (mut xs, mut d_iops, mut h_iops, mut i_iops) = (vec![], vec![], vec![], vec![]);
        for ratio in HP_RATIOS {
            let dr = report(e, &format!("{w} dftl ratio={ratio}"));
            let hr = report(e, &format!("{w} hpftl ratio={ratio}"));
            let d = dr.map_or(f64::NAN, |r| f(r, "result.iops"));
            let h = hr.map_or(f64::NAN, |r| f(r, "result.iops"));
            let lun_busy = |r: Option<&Value>| r.map_or(f64::NAN, |r| busy(r, &r["result"]));
            let x: f64 = ratio.parse().unwrap_or(f64::NAN);
            t.row(vec![
                pct(x),
                num(ideal, 0),
                num(d, 0),
                num(h, 0),
                times(h, d),
                pct(h / ideal),
                pct(d / ideal),
                dr.map_or("–".into(), |r| {
                    num(
                        flash_ns(r, &r["result"], &CAUSES) / f(r, "result.page_writes") / 1e3,
                        0,
                    )
                }),
                pct(lun_busy(dr)),
                pct(lun_busy(hr)),
                match (w, ratio) {
                    ("uniform", "0.4") => {
                        "HP-FTL 2.6× DFTL, ≥ 94 % of PFTL; DFTL < 40 % of PFTL".into()
                    }
                    ("uniform", "0.7") => "DFTL above HP-FTL by < 2 %".into(),
                    _ => String::new(),
                },
            ]);
            xs.push(format!("{}", x * 100.0));
            d_iops.push(ok(d));
            h_iops.push(ok(h));
            i_iops.push(ok(ideal));
        }
        s.text(format!(
            "**{w}** — {}",
            if w == "uniform" {
                "paper Fig. 2a (weak locality): HP-FTL nearly flat, far above DFTL at small tables; DFTL catches up by 70 %."
            } else {
                "paper Fig. 2b (strong locality): DFTL above HP-FTL at every size; HP-FTL ≈ 95 % of DFTL, ≈ 92 % of PFTL."
            }
        ));
        s.table(t);
        let mut deep = Table::new(&[
            "4 requests in flight per job, DRAM 40 %",
            "IOPS",
            "÷ ideal at this depth",
            "LUN busy",
        ]);
        let deep_ideal =
            report(e, &format!("{w} ideal iodepth=4")).map_or(f64::NAN, |r| f(r, "result.iops"));
        for ftl in ["ideal", "dftl", "hpftl"] {
            if let Some(r) = report(e, &format!("{w} {ftl} iodepth=4")) {
                deep.row(vec![
                    ftl.into(),
                    num(f(r, "result.iops"), 0),
                    pct(f(r, "result.iops") / deep_ideal),
                    pct(busy(r, &r["result"])),
                ]);
            }
        }
        s.table(deep);
        s.chart(lines(
            &format!("HP-FTL Fig. 2, {w}: IOPS against mapping DRAM"),
            "DRAM, % of the page table",
            "IOPS",
            xs,
            vec![
                series("ideal", i_iops),
                series("DFTL", d_iops),
                series("HP-FTL", h_iops),
            ],
        ));
    }
    if let Some(err) = e.runs.iter().find_map(|r| r.error.as_ref()) {
        s.text(format!(
            "\"–\": HP-FTL refuses a budget below its primary table: `{err}`"
        ));
    }
}

pub(super) fn hpftl_secondary(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    for (w, _) in HP_WORKLOADS {
        let ideal = report(e, &format!("{w} ideal")).map_or(f64::NAN, |r| f(r, "result.iops"));
        let mut t = Table::new(&[
            "point",
            "secondary peak bytes",
            "% of the table",
            "IOPS",
            "÷ ideal",
            "paper",
        ]);
        let mut cats = vec![];
        let mut share = vec![];
        for run in e
            .runs
            .iter()
            .filter(|r| r.label.starts_with(&format!("{w} hpftl")))
        {
            let Some(r) = run.reports.first() else {
                continue;
            };
            let m = &r["result"];
            let bts = 8.0 * f(r, "config.device.geometry.logical_pages");
            let peak = counter(m, "secondary_peak_bytes").unwrap_or(f64::NAN);
            let point = run
                .label
                .trim_start_matches(&format!("{w} hpftl "))
                .to_string();
            let paper = match (w, point.as_str()) {
                ("uniform", "h=2") => "≈ 3 MB = 1.2 % of BTS = 0.6 %; falls as h grows",
                ("zipf0.99", "h=3") => "no decrease from h = 3 to 5",
                _ => "",
            };
            t.row(vec![
                point.clone(),
                num(peak, 0),
                pct(peak / bts),
                num(f(m, "iops"), 0),
                pct(f(m, "iops") / ideal),
                paper.into(),
            ]);
            cats.push(point);
            share.push(ok(peak / bts * 100.0));
        }
        s.text(format!("**{w}** (ideal: {} IOPS):", num(ideal, 0)));
        s.table(t);
        s.chart(bars(
            &format!("HP-FTL Figs. 4–5, {w}: secondary table peak"),
            "% of an 8 B/LPN table",
            cats,
            vec![series("ours", share)],
        ));
    }
    s.text(
        "% of the table = peak entries per logical page (8 B entries against an 8 B/LPN table); \
         the paper's BTS counts 4 B per entry, so its shares are twice its entries per logical \
         page. Paper Figs. 6–7: IOPS ≈ 93 % of PFTL and insensitive to h and m; at m = p the \
         paper's uniform peak is 512 KB (0.1 %), at m = p − 3 ≈ 72 MB (14 %).",
    );
}

// ---- LeaFTL, the lecture deck ----------------------------------------------------------------

pub(super) fn leaftl_mapping(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let mut t = Table::new(&[
        "preconditioning",
        "FTL",
        "table bytes",
        "× smaller than the page map",
        "segments",
        "single/double/triple",
        "IOPS",
        "DRAM bytes",
    ]);
    let mut cats = vec![];
    let mut factor = vec![];
    for run in &e.runs {
        for r in by_ftl(run) {
            let m = &r["result"];
            let full = 8.0 * f(r, "config.device.geometry.logical_pages");
            let table = counter(m, "table_bytes");
            let pre = run.label.split(' ').next().unwrap_or_default();
            let ftl = if run.label.contains("gamma") {
                run.label[pre.len()..].trim().to_string()
            } else {
                name(r)
            };
            t.row(vec![
                pre.into(),
                ftl.clone(),
                table.map_or("–".into(), |b| num(b, 0)),
                table.map_or("–".into(), |b| times(full, b)),
                counter(m, "segments").map_or("–".into(), |n| num(n, 0)),
                lookup_split(m),
                num(f(m, "iops"), 0),
                num(f(m, "dram_bytes.total"), 0),
            ]);
            if let Some(b) = table {
                cats.push(format!("{pre} {ftl}"));
                factor.push(ok(full / b));
            }
        }
    }
    s.table(t);
    if !cats.is_empty() {
        s.chart(bars(
            "LeaFTL's whole table: × smaller than the page map",
            "× smaller",
            cats,
            vec![series("ours", factor)],
        ));
    }
    s.text("Paper (LeaFTL): 7.5–37.7× smaller than DFTL's page map on real traces.");
}

pub(super) fn fast_merges(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let mut t = Table::new(&[
        "workload",
        "page writes",
        "switch",
        "partial",
        "full",
        "data blocks / full",
        "copies / page write",
        "WAF",
        "write IOPS",
    ]);
    let mut cats = vec![];
    let (mut sw, mut pa, mut fu) = (vec![], vec![], vec![]);
    for run in &e.runs {
        for r in &run.reports {
            let m = &r["result"];
            let c = |k: &str| counter(m, k).unwrap_or(0.0);
            let full = c("full_merges");
            t.row(vec![
                run.label.clone(),
                num(f(m, "page_writes"), 0),
                num(c("switch_merges"), 0),
                num(c("partial_merges"), 0),
                num(full, 0),
                if full > 0.0 {
                    num(c("full_merge_data_blocks") / full, 1)
                } else {
                    "–".into()
                },
                num(
                    (c("partial_copies") + c("full_copies")) / f(m, "page_writes"),
                    2,
                ),
                num(f(m, "waf"), 2),
                num(f(m, "iops"), 0),
            ]);
            cats.push(run.label.clone());
            sw.push(Some(c("switch_merges")));
            pa.push(Some(c("partial_merges")));
            fu.push(Some(full));
        }
    }
    s.table(t);
    s.chart(bars(
        "FAST merges by kind",
        "merges",
        cats,
        vec![
            series("switch", sw),
            series("partial", pa),
            series("full", fu),
        ],
    ));
}

pub(super) fn mu_translation(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let mut t = Table::new(&[
        "workload",
        "FTL",
        "IOPS",
        "extra reads / request",
        "extra programs / request",
        "single/double/triple",
        "node reads / lookup",
        "WAF",
    ]);
    let mut cats = vec![];
    let (mut dftl, mut mu) = (vec![], vec![]);
    for run in &e.runs {
        cats.push(run.label.clone());
        let (mut d, mut u) = (None, None);
        for r in by_ftl(run) {
            let m = &r["result"];
            let req = f(m, "requests.read") + f(m, "requests.write") + f(m, "requests.trim");
            let reads = (f(m, "flash.reads.total")
                - f(m, "flash.reads.user")
                - f(m, "flash.reads.gc_data"))
                / req;
            let progs = (f(m, "flash.programs.translation_writeback")
                + f(m, "flash.programs.gc_translation"))
                / req;
            t.row(vec![
                run.label.clone(),
                name(r),
                num(f(m, "iops"), 0),
                num(reads, 3),
                num(progs, 3),
                lookup_split(m),
                counter(m, "node_reads_per_lookup").map_or(String::new(), |n| num(n, 3)),
                num(f(m, "waf"), 2),
            ]);
            if r["ftl"] == "dftl" {
                d = ok(reads);
            } else {
                u = ok(reads);
            }
        }
        dftl.push(d);
        mu.push(u);
    }
    s.table(t);
    s.chart(bars(
        "Extra flash reads per request at the same mapping DRAM",
        "reads / request",
        cats,
        vec![series("DFTL", dftl), series("μ-FTL", mu)],
    ));
}

pub(super) fn dram(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let Some(run) = e.runs.first() else { return };
    let mut t = Table::new(&["FTL", "DRAM KiB", "parts (KiB)"]);
    let reports = by_ftl(run);
    for r in &reports {
        let parts = r["result"]["dram_bytes"]
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "total" | "peak" | "budget"))
                    .map(|(k, v)| format!("{k} {}", num(v.as_f64().unwrap_or(0.0) / 1024.0, 1)))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        t.row(vec![
            name(r),
            num(f(r, "result.dram_bytes.total") / 1024.0, 1),
            parts,
        ]);
    }
    s.table(t);
    s.chart(bars(
        "Mapping DRAM after a sequential fill and random writes",
        "KiB",
        reports.iter().map(|r| name(r)).collect(),
        vec![series(
            "ours",
            reports
                .iter()
                .map(|r| ok(f(r, "result.dram_bytes.total") / 1024.0))
                .collect(),
        )],
    ));
    s.text("The deck's table (8 GB device): block-mapped 64 KB, μ-FTL 64 KB, page-mapped 8 MB.");
}

// ---- why ours differs (docs/reproduction.md, "Known causes of difference") --------------------

/// Random reads.
pub(super) const RANDREAD_DIFF: &str = "CMT hits ≈ the cache's share of the mappings (3 %): a uniform random read hits with the probability that its entry is cached, the paper's \"almost 0\" rounded. Model hits ≈ 98 % instead of 55.5 % and LeaFTL all single reads instead of 43 % triple (cause 3: random 512 KiB preconditioning is 128-page runs, which learned mappings describe exactly; cause 6: the authors' LeaFTL port mispredicts from the wrong offset). LearnedFTL ÷ DFTL/TPFTL ≈ 1.9× by default, 3.4× under `--setup femu`, paper 1.4–1.5×: with its models hitting LearnedFTL is the ideal FTL, so the ratio is what the baselines' double reads cost; there is no host stack to compress ratios (cause 1), and FEMU's busy-until timing wastes LUN time before each dependent read (cause 2).";
/// Sequential reads.
pub(super) const SEQREAD_DIFF: &str = "The paper's hit ratios lie between our two workloads: with a region per job DFTL has nothing to prefetch and TPFTL's ±3 counter switches selective prefetch off for good (cause 5); with all jobs over the same pages one job misses and 63 hit. LearnedFTL reaches 100 % of ideal instead of 96.8 %: a single sequential preconditioning stream gives every TP consecutive VPPNs and FEMU's host time is absent (cause 1). HP-FTL's hash scatters consecutive LPNs over LUNs, losing the striping sequential streams get elsewhere.";
/// Writes.
pub(super) const WRITES_DIFF: &str = "By default every FTL has the same 2-line GC reserve, so WAF compares like for like (under `--setup femu` the baselines pay FEMU's 5 %/25 % thresholds while LearnedFTL keeps its own reserve: cause 7). The paper's design (`design=paper`) collapses on a full device under small or 64-stream writes: a whole-group collection per write or two, WAF in the thousands (cause 4); the default design (`design=log`) and the paper design's `group_gc=line lender=any` sustain them. Absolute GC counts depend on the amount written and the line size (4,096 pages on `quick`, 32,768 in the paper); only ratios compare.";
/// Training share.
pub(super) const TRAINING_DIFF: &str = "Within the paper's 3.2 % bound for both designs except the paper design's line ablation, which retrains after every line collection. Ours is small because a collection is long (every LUN reads and programs ~64 pages and erases a block) while training a TP takes ~10 µs on the simulator's x86 host; the paper measured ~50 µs per TP on an ARM Cortex-A72. CPU times are the host's and vary between runs on a shared machine.";
/// TPFTL threads.
pub(super) const THREADS_DIFF: &str = "With SPEC's ±3 counter our TPFTL's sequential reads lose selective prefetch in the 64-job drain phase and never get it back (cause 5), so sequential is faster only by LUN striping. With the counter off (`prefetch_threshold=0`) the paper's gap appears (about 48–63 % by default, the paper's \"up to 60 %\"); under `--setup femu` it grows past 60 % because busy-until timelines overcharge the random reads' double reads (cause 2).";
/// CMT sweep.
pub(super) const CMT_DIFF: &str = "Under uniform random reads every entry is equally likely, so the hit ratio is the cached share whatever the LRU levels do (≈ 50 % at 50 %); the paper's 25.9 % suggests its prefetching under 64 threads filled the cache with entries nobody read. The paper's point holds either way: hits grow only linearly with DRAM.";
/// Traces.
pub(super) const TRACES_DIFF: &str = "On WebSearch the paper design's P99 is ≈ 3× lower than TPFTL's (paper 5.3–7.4×), the default design's ≈ 1.5× (its P99 is a double read after 2× preconditioning). Against LeaFTL ours are equal or in LeaFTL's favour instead of 7.8–12.2×: after 512 KiB preconditioning LeaFTL's whole table is cached and exact (causes 3, 6). TPC-C at speed 1 and 4 saturates every FTL (more program time than 64 LUNs have), so its P99 measures queue length, not lookups. The ideal FTL's mean above LeaFTL's is cause 8 (GC order scatters runs over LUNs). The samples are slices of WebSearch and TPC-C from the MQSim repository, not the paper's full traces; the Systor'17 trace is not available here.";
/// Ablations.
pub(super) const ABLATIONS_DIFF: &str = "The paper gives no per-switch numbers; these show what each of its mechanisms contributes here. On random 512 KiB preconditioning everything is decided by the group collections, which retrain every TP on contiguous data, so training method and sequential initialisation do not matter, free TP writes save ~1 % of programs, and cross-group allocation with untrained lenders is almost never possible after the first collections. `group_gc=line lender=any` cuts the preconditioning's WAF several-fold at a small cost in model hits (docs/ftls/learnedftl.md).";
/// HP-FTL.
pub(super) const HP_DIFF: &str = "HP-FTL reaches only ≈ 54 % of ideal at any DRAM size (paper ≥ 94 %): its hash pins each page to a LUN and 64 closed-loop writers collide (≈ 86 % with 4 requests in flight per job). By default gap-filling timelines let DFTL use the LUN time its write-backs wasted, so HP-FTL ÷ DFTL is below the paper's 2.6× (closer under `--setup femu`). The secondary table shrinks with h and grows steeply as m falls below p, as in the paper; at m = p it is ≈ 0 on our 70 %-filled fresh device (docs/ftls/hpftl.md).";
/// LeaFTL mapping size.
pub(super) const LEAFTL_DIFF: &str = "512 KiB requests are 128-LPN sequential runs, so even random preconditioning leaves ~2 exact segments per group: the table is 128–256× smaller than the page map, above the paper's 7.5–37.7× on real, less regular traces; after random 4 KiB writes every page is a segment and the table is barely smaller (≈ 1.2×). γ > 0 makes a few segments approximate and costs mispredictions (docs/ftls/leaftl.md).";
/// FAST.
pub(super) const FAST_DIFF: &str = "The deck gives qualitative results: a sequential stream costs FAST only switch merges (WAF 1), small random writes cost full merges involving many data blocks (the deck: 20–60 % of full merges involve more than 20 on Financial and TPC-H). A smaller log pool (the deck's 3 %) reclaims log blocks younger and merges touch more blocks. Mixed writes break the stream's switch merges (docs/ftls/fast.md).";
/// μ-FTL.
pub(super) const MU_DIFF: &str = "Extents make μ-FTL's translation cost depend on write sizes: after 512 KiB writes the whole map is a few thousand cached extents and reads are single; after 4 KiB random writes every page is an extent, the node cache holds ~1 % of the leaves and a lookup reads ~1.5 node pages against DFTL's one translation page. The deck's claim (page-mapped performance at block-mapped RAM) holds for large and sequential writes, not small random ones (docs/ftls/mu-ftl.md).";
/// DRAM.
pub(super) const DRAM_DIFF: &str = "Our page map is 8 B per page (the ideal FTL), FAST also keeps a page map of its log pool (5.5 % of the flash), and μ-FTL's default budget is DFTL's cache size with its counters and bitmap cache on top; the deck sizes μ-FTL to the block-mapped FTL's RAM, which here would leave its node cache a few leaves.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(num(1234567.0, 0), "1,234,567");
        assert_eq!(num(-1234.5, 1), "-1,234.5");
        assert_eq!(num(12.0, 2), "12.00");
        assert_eq!(num(f64::NAN, 0), "–");
        assert_eq!(times(3.0, 2.0), "1.50×");
        assert_eq!(pct(0.5), "50.0 %");
    }
}
