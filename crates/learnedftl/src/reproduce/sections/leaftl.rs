//! LeaFTL's experiment: the learned table's size against the page map.

use super::*;
use crate::reproduce::def::Def;
use crate::reproduce::doc::{Section, Table};
use crate::reproduce::Results;

pub(in crate::reproduce) fn leaftl_mapping(results: &Results, def: &Def, s: &mut Section) {
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
