//! HP-FTL's experiments (Ni et al.): IOPS and DRAM against the page map, and the secondary
//! table's size.

use super::*;
use crate::reproduce::def::Def;
use crate::reproduce::doc::{Section, Table};
use crate::reproduce::sweeps::{HP_RATIOS, HP_WORKLOADS};
use crate::reproduce::Results;
use serde_json::Value;

pub(in crate::reproduce) fn hpftl_fig2(results: &Results, def: &Def, s: &mut Section) {
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

pub(in crate::reproduce) fn hpftl_secondary(results: &Results, def: &Def, s: &mut Section) {
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
