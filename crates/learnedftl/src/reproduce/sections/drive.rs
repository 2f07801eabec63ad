//! Drive features (SPEC §12): how each layer of a drive as built moves a mapping scheme's
//! writes, reads under writes and WAF.

use super::*;
use crate::reproduce::def::Def;
use crate::reproduce::doc::{Section, Table};
use crate::reproduce::Results;

/// The metrics the section charts, each from one phase: (title, unit, phase, key).
const CHARTS: [(&str, &str, &str, &str); 4] = [
    ("Random-write IOPS", "IOPS", "write", "iops"),
    (
        "Random-write p99 latency",
        "µs",
        "write",
        "latency_us.write.p99",
    ),
    (
        "Read p99 under writes (70 % reads)",
        "µs",
        "mixed",
        "latency_us.read.p99",
    ),
    ("WAF of the random writes", "WAF", "write", "waf"),
];

pub(in crate::reproduce) fn drive_features(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let mut t = Table::new(&[
        "setting",
        "FTL",
        "write IOPS",
        "write mean µs",
        "write p99 µs",
        "WAF",
        "mixed IOPS",
        "read mean µs",
        "read p99 µs",
        "read p99.9 µs",
        "stalls",
        "suspended",
    ]);
    let ftls: Vec<String> = e
        .runs
        .first()
        .map(|r| by_ftl(r).into_iter().map(name).collect())
        .unwrap_or_default();
    let mut charts: Vec<Vec<Vec<Option<f64>>>> = vec![vec![vec![]; ftls.len()]; CHARTS.len()];
    let mut cats = vec![];
    for run in &e.runs {
        cats.push(run.label.clone());
        for (i, r) in by_ftl(run).into_iter().enumerate() {
            let (Some(w), Some(m)) = (phase(r, "write"), phase(r, "mixed")) else {
                continue;
            };
            let stalls = f(w, "controller.stalls");
            let suspended = f(m, "flash.suspend.programs") + f(m, "flash.suspend.erases");
            t.row(vec![
                run.label.clone(),
                name(r),
                num(f(w, "iops"), 0),
                num(f(w, "latency_us.write.mean"), 1),
                num(f(w, "latency_us.write.p99"), 1),
                num(f(w, "waf"), 2),
                num(f(m, "iops"), 0),
                num(f(m, "latency_us.read.mean"), 1),
                num(f(m, "latency_us.read.p99"), 1),
                num(f(m, "latency_us.read.p999"), 1),
                num(stalls, 0),
                num(suspended, 0),
            ]);
            for (c, &(_, _, p, key)) in CHARTS.iter().enumerate() {
                let v = if p == "write" { f(w, key) } else { f(m, key) };
                if let Some(col) = charts[c].get_mut(i) {
                    col.push(ok(v));
                }
            }
        }
    }
    s.table(t);
    for (c, &(title, unit, _, _)) in CHARTS.iter().enumerate() {
        let series_list = ftls
            .iter()
            .zip(&charts[c])
            .map(|(ftl, v)| series(ftl, v.clone()))
            .collect();
        s.chart(bars(title, unit, cats.clone(), series_list));
    }
}
