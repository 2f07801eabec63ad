//! Each experiment's section: tables and charts of our numbers beside the papers', read from
//! the runs' JSON reports (every key: docs/metrics.md), and why they differ (the causes of
//! docs/reproduction.md, numbered as there).

mod deck;
mod differences;
mod drive;
mod fdp;
mod hpftl;
mod leaftl;
mod learnedftl;
mod theory;
mod validation;

pub(super) use deck::{dram, fast_merges, mu_translation};
pub(super) use differences::*;
pub(super) use drive::drive_features;
pub(super) use fdp::fdp;
pub(super) use hpftl::{hpftl_fig2, hpftl_secondary};
pub(super) use leaftl::leaftl_mapping;
pub(super) use learnedftl::{
    ablations, cmt_sweep, filebench, reads, rocksdb, tpftl_threads, traces, training, writes,
};
pub(super) use theory::theory;
pub(super) use validation::validation;

use super::{ExperimentResult, RunResult};
use crate::report::plot::{Chart, Kind, Series};
use serde_json::Value;

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

// ---- flash time -------------------------------------------------------------------------------

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
