//! Theory as an oracle (issue 49): the ideal FTL's GC write amplification beside Desnoyers'
//! analytic models (`reproduce::theory`).

use super::*;
use crate::reproduce::def::Def;
use crate::reproduce::doc::{Section, Table};
use crate::reproduce::Results;

/// Theory as an oracle: the ideal FTL's WAF under FIFO and greedy GC beside Desnoyers' models,
/// at each spare factor, with the error of each point.
pub(in crate::reproduce) fn theory(results: &Results, def: &Def, s: &mut Section) {
    use crate::reproduce::theory::{alpha_of_spare, fifo_waf, greedy_waf, THEORY_UNITS};
    let Some(e) = results.get(def.name) else {
        return;
    };
    let mut t = Table::new(&[
        "GC",
        "spare factor",
        "α",
        "model WAF",
        "simulated WAF",
        "error",
    ]);
    let mut curves: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    let mut xs: Vec<String> = Vec::new();
    for run in &e.runs {
        let Some((victim, sf)) = run
            .label
            .split_once(", spare ")
            .and_then(|(v, sf)| Some((v.to_string(), sf.parse::<f64>().ok()?)))
        else {
            continue;
        };
        let Some(m) = by_ftl(run).first().and_then(|r| phase(r, "measure")) else {
            continue;
        };
        let a = alpha_of_spare(sf);
        let model = if victim == "fifo" {
            fifo_waf(a)
        } else {
            greedy_waf(a, 64)
        };
        let sim = f(m, "waf");
        t.row(vec![
            victim.clone(),
            num(sf, 2),
            num(a, 4),
            num(model, 4),
            num(sim, 4),
            format!("{:+.2} %", (sim / model - 1.0) * 100.0),
        ]);
        let x = num(sf, 2);
        if !xs.contains(&x) {
            xs.push(x);
        }
        for (name, v) in [
            (format!("{victim} model"), model),
            (format!("{victim} simulated"), sim),
        ] {
            match curves.iter_mut().find(|(n, _)| *n == name) {
                Some((_, vals)) => vals.push(ok(v)),
                None => curves.push((name, vec![ok(v)])),
            }
        }
    }
    s.text(format!(
        "The ideal FTL on a device of {THEORY_UNITS} lines of one 64-page block (one LUN, one \
         plane): a sequential fill, the logical space in independent random 4 KiB writes once \
         (twice from spare 0.2) to reach the steady state, then once more measured. Model: FIFO `A = α / (α + W₀(−α e^(−α)))`, greedy \
         `A_FIFO(kα) / k` with `k = 1 + 1/128`, α = physical ÷ logical pages."
    ));
    s.table(t);
    s.chart(lines(
        "WAF against the spare factor: model and simulation",
        "spare factor",
        "WAF",
        xs,
        curves.into_iter().map(|(n, v)| series(&n, v)).collect(),
    ));
}
