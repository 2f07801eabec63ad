//! `reproduce fdp` (docs/fdp.md): write amplification with and without Flexible Data
//! Placement across utilisations, stream mixes, isolation of reads from another handle's
//! writes, and what placement does to the mapping schemes.

use super::*;
use crate::reproduce::def::Def;
use crate::reproduce::doc::{Section, Table};
use crate::reproduce::fdp::{MAPPING_FTLS, PLACEMENTS, UTILISATIONS};
use crate::reproduce::Results;

/// Each handle's own WAF in a phase, `h0 / h1 / …` ("–" without FDP).
fn handle_wafs(m: &Value) -> String {
    match m["fdp"]["handles"].as_array() {
        Some(hs) => hs
            .iter()
            .map(|h| num(f(h, "waf"), 2))
            .collect::<Vec<_>>()
            .join(" / "),
        None => "–".into(),
    }
}

/// The run labelled `label`'s report of `ftl` (the first FTL when `None`).
fn ftl_report<'a>(e: &'a ExperimentResult, label: &str, ftl: Option<&str>) -> Option<&'a Value> {
    let r = run(e, label)?;
    match ftl {
        None => r.reports.first(),
        Some(n) => r.reports.iter().find(|r| r["ftl"] == n),
    }
}

pub(in crate::reproduce) fn fdp(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    lifetimes(e, s);
    mixes(e, s);
    isolation(e, s);
    mappings(e, s);
}

/// The shape of (a), (b) and (c): for each point (a utilisation, a mix, an FTL: the table's
/// first column) and each placement, the `measure` phase of the report `report(point,
/// placement)` gives a row of `t`, the point, the placement and `cells`, and a value of its
/// placement's series, `value`; a missing run leaves a gap in the series. One series a
/// placement, in [`PLACEMENTS`]' order.
fn per_placement<'a>(
    t: &mut Table,
    points: &[String],
    report: impl Fn(&str, &str) -> Option<&'a Value>,
    cells: impl Fn(&Value) -> Vec<String>,
    value: impl Fn(&Value) -> f64,
) -> Vec<Series> {
    let mut by: Vec<Vec<Option<f64>>> = vec![Vec::new(); PLACEMENTS.len()];
    for point in points {
        for (i, (label, _)) in PLACEMENTS.iter().enumerate() {
            let Some(m) = report(point, label).and_then(|r| phase(r, "measure")) else {
                by[i].push(None);
                continue;
            };
            let mut row = vec![point.clone(), label.to_string()];
            row.extend(cells(m));
            t.row(row);
            by[i].push(ok(value(m)));
        }
    }
    PLACEMENTS
        .iter()
        .zip(by)
        .map(|((label, _), v)| series(label, v))
        .collect()
}

/// (a): WAF against utilisation, each placement a line, beside the published ≈ 1.0.
fn lifetimes(e: &ExperimentResult, s: &mut Section) {
    s.text(
        "**(a) Two lifetimes (CacheLib's shape).** The ideal FTL on a device exposing 87.5 % of its \
         flash; a hot quarter of the used space under 4 KiB random overwrites (placement ID 1) \
         beside a circular log of 512 KiB writes over the rest (ID 0), as many bytes each: a \
         fill, a pass of the log warming, a pass measured. Utilisation is the share of the \
         logical space written; the rest stays unwritten. Meta and Samsung report a device WAF \
         of about 1.0 for CacheLib with FDP (EuroSys'25), the grey line.",
    );
    let mut t = Table::new(&[
        "utilisation",
        "placement",
        "WAF",
        "WAF by handle (log / hot)",
        "GC pages moved",
    ]);
    let points: Vec<String> = UTILISATIONS
        .iter()
        .map(|(u, _, _)| format!("{u} %"))
        .collect();
    let mut list = per_placement(
        &mut t,
        &points,
        |u, label| ftl_report(e, &format!("(a) {u} · {label}"), None),
        |m| {
            vec![
                num(f(m, "waf"), 3),
                handle_wafs(m),
                num(f(m, "gc.pages_moved"), 0),
            ]
        },
        |m| f(m, "waf"),
    );
    s.table(t);
    let xs: Vec<String> = UTILISATIONS.iter().map(|(u, _, _)| u.to_string()).collect();
    list.push(series("paper", vec![Some(1.0); xs.len()]));
    s.chart(lines(
        "(a) WAF against utilisation, two lifetimes",
        "utilisation, %",
        "WAF",
        xs,
        list,
    ));
}

/// (b): the mixes' WAF under each placement.
fn mixes(e: &ExperimentResult, s: &mut Section) {
    use crate::reproduce::fdp::MIXES;
    s.text(
        "**(b) Stream mixes (WARP's kind).** The ideal FTL on a device exposing 80 % of its \
         flash; four streams at 85 % utilisation, each filling its \
         own quarter, then random 4 KiB writes: at rates 8:4:2:1 (lifetimes differ by stream), \
         at equal rates, and adversarial to reclaim-unit GC: every write over the whole used \
         space with a handle drawn at random, so handles say nothing of lifetimes and each \
         handle's units hold data of every age. `implicitly modified`: shared GC units that got \
         a second handle's data.",
    );
    let mut t = Table::new(&[
        "mix",
        "placement",
        "WAF",
        "WAF by handle",
        "implicitly modified",
    ]);
    let cats: Vec<String> = MIXES.iter().map(|(mix, _, _)| mix.to_string()).collect();
    let list = per_placement(
        &mut t,
        &cats,
        |mix, label| ftl_report(e, &format!("(b) {mix} · {label}"), None),
        |m| {
            vec![
                num(f(m, "waf"), 3),
                handle_wafs(m),
                num(f(m, "fdp.events.implicitly_modified"), 0),
            ]
        },
        |m| f(m, "waf"),
    );
    s.table(t);
    s.chart(bars("(b) WAF of four-stream mixes", "WAF", cats, list));
}

/// (c): read p99 beside another handle's writes.
fn isolation(e: &ExperimentResult, s: &mut Section) {
    s.text(
        "**(c) Isolation.** At 85 % utilisation, half the used space is one handle's (ID 1), \
         written at random by 4 jobs; the other half another's (ID 0), only read by 16 jobs, \
         both filled together. Without FDP the fill interleaves them in every line, so GC \
         keeps moving the read-only half and its reads queue behind more GC.",
    );
    let mut t = Table::new(&[
        "FTL",
        "placement",
        "read mean µs",
        "read p99 µs",
        "read p99.9 µs",
        "WAF",
    ]);
    let cats: Vec<String> = ["ideal", "tpftl"].map(String::from).to_vec();
    let list = per_placement(
        &mut t,
        &cats,
        |ftl, label| ftl_report(e, &format!("(c) {label}"), Some(ftl)),
        |m| {
            vec![
                num(f(m, "latency_us.read.mean"), 1),
                num(f(m, "latency_us.read.p99"), 1),
                num(f(m, "latency_us.read.p999"), 1),
                num(f(m, "waf"), 3),
            ]
        },
        |m| f(m, "latency_us.read.p99"),
    );
    s.table(t);
    s.chart(bars(
        "(c) Read p99 beside another handle's writes",
        "µs",
        cats,
        list,
    ));
}

/// (d): the mappings with and without FDP on (a) at 85 %.
fn mappings(e: &ExperimentResult, s: &mut Section) {
    s.text(
        "**(d) Mappings.** (a) at 85 % utilisation on TPFTL, LeaFTL and LearnedFTL, without FDP \
         and with each handle type: WAF of the measured writes, then 4 KiB random reads of the \
         used space: model hits (LeaFTL: accurate segments in its cache; LearnedFTL: exact \
         predictions of its models) and double reads (a translation read first). Under FDP \
         LearnedFTL's group lines are the log's handle's (docs/fdp.md): the hot region's pages \
         live in its handle's units, and persistently isolated handles merge only groups all \
         of whose pages are the log's.",
    );
    let mut t = Table::new(&[
        "FTL",
        "placement",
        "WAF",
        "CMT hit",
        "model hit",
        "double reads",
    ]);
    let ftls = MAPPING_FTLS;
    let labels = PLACEMENTS.map(|p| p.0);
    let mut waf: Vec<Vec<Option<f64>>> = vec![Vec::new(); labels.len()];
    let mut double: Vec<Vec<Option<f64>>> = vec![Vec::new(); labels.len()];
    for ftl in ftls {
        for (i, label) in labels.iter().enumerate() {
            let r = ftl_report(e, &format!("(d) {label}"), Some(ftl));
            let (Some(w), Some(rd)) = (
                r.and_then(|r| phase(r, "measure")),
                r.and_then(|r| phase(r, "read")),
            ) else {
                waf[i].push(None);
                double[i].push(None);
                continue;
            };
            let doubles = f(rd, "lookups.double") / f(rd, "page_reads").max(1.0);
            t.row(vec![
                ftl.to_string(),
                label.to_string(),
                num(f(w, "waf"), 3),
                pct(f(rd, "cmt_hit_ratio")),
                pct(f(rd, "model_hit_ratio")),
                pct(doubles),
            ]);
            waf[i].push(ok(f(w, "waf")));
            double[i].push(ok(doubles));
        }
    }
    s.table(t);
    let cats: Vec<String> = ftls.iter().map(|f| f.to_string()).collect();
    for (title, unit, v) in [
        ("(d) WAF of (a) at 85 %", "WAF", waf),
        ("(d) Share of reads that were double reads", "share", double),
    ] {
        let list = labels.iter().zip(v).map(|(l, v)| series(l, v)).collect();
        s.chart(bars(title, unit, cats.clone(), list));
    }
}
