//! The lecture deck's experiments: FAST's merges, μ-FTL's translation cost and every FTL's
//! mapping DRAM.

use super::*;
use crate::reproduce::def::Def;
use crate::reproduce::doc::{Section, Table};
use crate::reproduce::Results;

pub(in crate::reproduce) fn fast_merges(results: &Results, def: &Def, s: &mut Section) {
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

pub(in crate::reproduce) fn mu_translation(results: &Results, def: &Def, s: &mut Section) {
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

pub(in crate::reproduce) fn dram(results: &Results, def: &Def, s: &mut Section) {
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
