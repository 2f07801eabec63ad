//! Validation against a real drive (issue 49): the Samsung 980 PRO preset's simulated 4 KiB
//! random reads beside the drive's measured ones, point by point, and its datasheet points.

use super::*;
use crate::reproduce::def::Def;
use crate::reproduce::doc::{Section, Table};
use crate::reproduce::validation::{
    samsung_980pro, validation_label, DATASHEET_980PRO, VALIDATION_CAPACITY,
};
use crate::reproduce::Results;

/// The measured phase of the run labelled `label`, on its one FTL.
fn measured<'a>(e: &'a ExperimentResult, label: &str) -> Option<&'a Value> {
    report(e, label).and_then(|r| phase_list(r).last())
}

/// One curve: a path and job count, and per queue depth the real and simulated IOPS and mean
/// latency.
type Curve = (String, u32, Vec<(u32, [f64; 4])>);

/// Relative error of `sim` against `real`, in per cent.
fn err(sim: f64, real: f64) -> f64 {
    (sim / real - 1.0) * 100.0
}

pub(in crate::reproduce) fn validation(results: &Results, def: &Def, s: &mut Section) {
    let Some(e) = results.get(def.name) else {
        return;
    };
    let points = samsung_980pro();
    let mut t = Table::new(&[
        "path",
        "jobs",
        "QD",
        "IOPS real",
        "IOPS sim",
        "error",
        "mean µs real",
        "mean µs sim",
        "error",
        "p99 µs real",
        "p99 µs sim",
        "error",
    ]);
    // Per path: absolute errors of IOPS, mean and p99, and the curves over the queue depth.
    let mut abs: Vec<(String, [Vec<f64>; 3])> = Vec::new();
    let mut curves: Vec<Curve> = Vec::new();
    for p in &points {
        let Some(m) = measured(e, &validation_label(p)) else {
            continue;
        };
        let (iops, mean, p99) = (
            f(m, "iops"),
            f(m, "latency_us.read.mean"),
            f(m, "latency_us.read.p99"),
        );
        let errs = [err(iops, p.iops), err(mean, p.mean_us), err(p99, p.p99_us)];
        t.row(vec![
            p.path.clone(),
            p.numjobs.to_string(),
            p.iodepth.to_string(),
            num(p.iops, 0),
            num(iops, 0),
            format!("{:+.1} %", errs[0]),
            num(p.mean_us, 1),
            num(mean, 1),
            format!("{:+.1} %", errs[1]),
            num(p.p99_us, 1),
            num(p99, 1),
            format!("{:+.1} %", errs[2]),
        ]);
        let at = match abs.iter().position(|(path, _)| *path == p.path) {
            Some(i) => i,
            None => {
                abs.push((p.path.clone(), Default::default()));
                abs.len() - 1
            }
        };
        for (k, x) in errs.iter().enumerate() {
            abs[at].1[k].push(x.abs());
        }
        let c = match curves
            .iter()
            .position(|(path, j, _)| *path == p.path && *j == p.numjobs)
        {
            Some(i) => i,
            None => {
                curves.push((p.path.clone(), p.numjobs, Vec::new()));
                curves.len() - 1
            }
        };
        curves[c]
            .2
            .push((p.iodepth, [p.iops, iops, p.mean_us, mean]));
    }
    s.text(format!(
        "Every measured point (4 KiB random reads over the whole drive; ICPE'24 artifact, \
         `crates/learnedftl/data/real-drives/`) run on `--preset 980pro --capacity \
         {VALIDATION_CAPACITY}` with the ideal FTL (the drive's 1 GB DRAM holds its whole page \
         map) after a sequential fill, through the host path measured (`host_path=spdk` or \
         `io_uring`). Latency is fio's completion latency, the host's part included."
    ));
    let mut m = Table::new(&["path", "points", "IOPS MAE", "mean latency MAE", "p99 MAE"]);
    for (path, [i, mean, p99]) in &abs {
        let mae = |v: &Vec<f64>| format!("{:.1} %", v.iter().sum::<f64>() / v.len().max(1) as f64);
        m.row(vec![
            path.clone(),
            i.len().to_string(),
            mae(i),
            mae(mean),
            mae(p99),
        ]);
    }
    s.table(m);
    s.table(t);
    for path in ["spdk", "io_uring"] {
        for (metric, k, unit) in [("IOPS", 0, "IOPS"), ("mean latency", 2, "µs")] {
            let mut xs: Vec<u32> = curves
                .iter()
                .filter(|c| c.0 == path)
                .flat_map(|c| c.2.iter().map(|p| p.0))
                .collect();
            xs.sort_unstable();
            xs.dedup();
            let mut series_list = Vec::new();
            for (_, jobs, pts) in curves.iter().filter(|c| c.0 == path) {
                for (which, off) in [("real", 0), ("sim", 1)] {
                    let v = xs
                        .iter()
                        .map(|x| pts.iter().find(|p| p.0 == *x).map(|p| p.1[k + off]))
                        .collect();
                    series_list.push(series(&format!("{jobs} jobs {which}"), v));
                }
            }
            if series_list.is_empty() {
                continue;
            }
            s.chart(lines(
                &format!("{path}: {metric} against queue depth, real and simulated"),
                "queue depth per job",
                unit,
                xs.iter().map(|x| x.to_string()).collect(),
                series_list,
            ));
        }
    }
    let mut d = Table::new(&["datasheet point", "published", "simulated", "source"]);
    for p in &DATASHEET_980PRO {
        let Some(m) = measured(e, p.name) else {
            continue;
        };
        let sim = if p.unit == "IOPS" {
            f(m, "iops")
        } else {
            f(m, "bandwidth_mib_s") * 1.048_576
        };
        d.row(vec![
            p.name.to_string(),
            format!("{} {}", num(p.value, 0), p.unit),
            format!("{} {}", num(sim, 0), p.unit),
            p.source.to_string(),
        ]);
    }
    s.table(d);
}
