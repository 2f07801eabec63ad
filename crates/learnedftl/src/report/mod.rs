//! Reports for people: aligned tables of runs (JSON comes straight from the serialisable
//! [`RunReport`] and [`Metrics`]).

pub mod columns;
pub mod params;
pub mod plot;
pub mod table;

pub use params::params_table;
pub use table::Table;

use crate::device::Cause;
use crate::run::RunReport;
use crate::stats::Metrics;

pub use crate::units::human_bytes;

/// One row per FTL: throughput, tail latency, hit ratios, read amplification, WAF, GC, DRAM and
/// simulator speed of the measured phase ([`columns::COMPARE`]).
pub fn compare_table(runs: &[RunReport]) -> String {
    columns::COMPARE.render(runs.iter().map(|r| (r.ftl.as_str(), &r.result)))
}

/// One row per phase of a run (flash reads and programs of every cause, so that a `settle`
/// phase shows the work it did; [`columns::PHASES`]).
pub fn phases_table(phases: &[Metrics]) -> String {
    columns::PHASES.render(phases.iter().map(|m| (m.phase.as_str(), m)))
}

/// A line with what the byte path's checks counted (`serve --verify`), or nothing when they
/// were off.
pub fn byte_checks_line(m: &Metrics) -> String {
    let Some(b) = m.verify.bytes else {
        return String::new();
    };
    format!(
        "verify: {} pages compared byte for byte, {} mismatched, {} learned; {} commands failed a check\n",
        b.pages_compared, b.mismatches, b.pages_learned, b.failed_commands
    )
}

/// The measured phase of one run in detail: flash operations by cause and DRAM by part.
pub fn detail_table(r: &RunReport) -> String {
    let m = &r.result;
    let mut t = Table::new(&["flash op", "reads", "programs"]);
    let keys = Cause::ALL
        .iter()
        .map(|c| c.key())
        .chain(std::iter::once("total"));
    // Causes the run does not report (the SLC cache's fold without one) have no row.
    for cause in keys.filter(|k| m.flash.reads.contains_key(k)) {
        let get = |m: &std::collections::BTreeMap<&str, u64>| m.get(cause).copied().unwrap_or(0);
        t.row(vec![
            cause.to_string(),
            get(&m.flash.reads).to_string(),
            get(&m.flash.programs).to_string(),
        ]);
    }
    let mut d = Table::new(&["dram part", "bytes"]);
    for (part, b) in &m.dram_bytes {
        d.row(vec![part.clone(), format!("{b} ({})", human_bytes(*b))]);
    }
    let l = &m.lookups;
    let bf = &m.flash.backfill;
    let backfill = if bf.ops_in_gaps + bf.gaps_dropped > 0 {
        format!(
            "backfill: {} operations in idle gaps, {} gaps dropped at the bound\n",
            bf.ops_in_gaps, bf.gaps_dropped
        )
    } else {
        String::new()
    };
    let parts = m
        .latency_parts_us
        .as_ref()
        .map_or(String::new(), latency_parts_line);
    let fdp = m.fdp.as_ref().map_or(String::new(), fdp_table);
    format!(
        "{}\nerases: {}  wear min/mean/max: {}/{:.2}/{}  energy: {:.3} J\n{backfill}{parts}\
         page reads: {} (none {}, single {}, double {}, triple {})  CMT hit {}  model hit {}\n\n{}{fdp}",
        t.render(),
        m.flash.erases,
        m.wear.min,
        m.wear.mean,
        m.wear.max,
        m.energy_uj / 1e6,
        l.none + l.single + l.double + l.triple,
        l.none,
        l.single,
        l.double,
        l.triple,
        columns::percent(m.page_reads > 0, m.cmt_hit_ratio),
        columns::percent(m.page_reads > 0, m.model_hit_ratio),
        d.render()
    )
}

/// Flexible Data Placement by handle (docs/metrics.md "fdp"): a row per handle and one for the
/// FTL's own pages, whose WAF shares add up to the phase's WAF, then the FDP events.
pub fn fdp_table(f: &crate::stats::FdpMetrics) -> String {
    let mut t = Table::new(&[
        "handle",
        "host pages",
        "GC copies",
        "media pages",
        "WAF",
        "WAF share",
        "RUs",
    ]);
    for h in &f.handles {
        t.row(vec![
            h.handle.to_string(),
            h.host_pages.to_string(),
            h.gc_pages.to_string(),
            h.media_pages.to_string(),
            format!("{:.3}", h.waf),
            format!("{:.3}", h.waf_share),
            h.rus.to_string(),
        ]);
    }
    let dash = || "–".to_string();
    t.row(vec![
        "ftl".into(),
        dash(),
        dash(),
        f.ftl_pages.to_string(),
        dash(),
        format!("{:.3}", f.ftl_waf_share),
        dash(),
    ]);
    let e = &f.events;
    format!(
        "\n{}FDP events: {} RUs not fully written, {} implicitly modified, {} invalid placement IDs\n",
        t.render(),
        e.ru_not_fully_written,
        e.implicitly_modified,
        e.invalid_pid
    )
}

/// A line of where the mean read and write latency went (`latency_parts_us`), for the
/// operations that ran.
fn latency_parts_line(b: &crate::stats::LatencyBreakdown) -> String {
    let part = |name: &str, p: &crate::stats::LatencyParts| {
        format!(
            "{name} {:.2} = host {:.2} + controller {:.2} + transfer {:.2} + flash {:.2}",
            p.host + p.controller + p.transfer + p.flash,
            p.host,
            p.controller,
            p.transfer,
            p.flash
        )
    };
    let ran = |p: &crate::stats::LatencyParts| p.host + p.controller + p.transfer + p.flash > 0.0;
    let parts: Vec<String> = [("read", &b.read), ("write", &b.write)]
        .into_iter()
        .filter(|(_, p)| ran(p))
        .map(|(n, p)| part(n, p))
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!("latency parts, mean µs: {}\n", parts.join("; "))
}

/// What the results of `runs` (one experiment on one or more FTLs) rest on that the tables do
/// not show ([`notes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notes {
    /// Lines for under the tables: the trace replay's counts (lines skipped, requests
    /// filtered, clipped, dropped, wrapped, of length 0, out of order), power cuts and the
    /// host page reads of pages never written.
    pub footer: String,
    /// One message for each count that changes what the result means (without the
    /// `warning: ` a front end puts before it): always for the user to see, never progress
    /// output to silence.
    pub warnings: Vec<String>,
}

/// The application's phases of closed-loop replays (`--replay closed --phases`), one row per FTL
/// and phase: operations per second live and on the simulated device (SPEC §6 has no such
/// figure: docs/traces.md "Closed-loop replay" defines them) and the phase's own CMT and model
/// hit ratios; empty without them.
pub fn closed_loop_table(runs: &[RunReport]) -> String {
    let mut t = table::Table::new(&[
        "ftl",
        "phase",
        "ops",
        "requests",
        "live ms",
        "sim ms",
        "live ops/s",
        "sim ops/s",
        "CMT hit",
        "model hit",
    ]);
    let mut any = false;
    let rate = |r: Option<f64>| r.map_or("–".to_string(), |r| format!("{r:.0}"));
    for r in runs {
        let Some(c) = r.trace.as_ref().and_then(|t| t.closed_loop.as_ref()) else {
            continue;
        };
        for p in &c.phases {
            any = true;
            t.row(vec![
                r.ftl.clone(),
                p.name.clone(),
                p.ops.map_or("–".into(), |o| o.to_string()),
                p.requests.to_string(),
                format!("{:.3}", p.recorded_s * 1e3),
                format!("{:.3}", p.simulated_s * 1e3),
                rate(p.recorded_ops_per_sec),
                rate(p.simulated_ops_per_sec),
                columns::percent(p.page_reads > 0, p.cmt_hit_ratio),
                columns::percent(p.page_reads > 0, p.model_hit_ratio),
            ]);
        }
    }
    if any {
        format!("\nclosed-loop replay, application phases:\n{}", t.render())
    } else {
        String::new()
    }
}

/// The footer and warnings of `runs` ([`Notes`]); both empty when there is nothing to say.
pub fn notes(runs: &[RunReport]) -> Notes {
    let mut footer = Vec::new();
    let mut warnings = Vec::new();
    if let Some(t) = runs.first().and_then(|r| r.trace.as_ref()) {
        let c = &t.replay;
        footer.push(format!(
            "trace: {} lines, {} requests replayed; malformed lines skipped {}, requests \
             filtered {}, clipped {}, dropped {}, wrapped {} (split {}, truncated {}), zero-length \
             {}, out of order {}",
            t.lines,
            c.requests,
            t.skipped_bad_lines,
            c.filtered,
            c.clipped,
            c.dropped,
            c.wrapped,
            c.split,
            c.truncated,
            c.zero_length,
            c.out_of_order
        ));
        if t.skipped_bad_lines > 0 {
            warnings.push(format!(
                "{} malformed trace lines were skipped (--skip-bad-lines): the result leaves \
                 their requests out; first: {}",
                t.skipped_bad_lines,
                t.warnings.first().map_or("", String::as_str)
            ));
        }
        if c.filtered > 0 {
            warnings.push(format!(
                "{} trace requests of other devices were filtered out (--device-filter)",
                c.filtered
            ));
        }
        if c.clipped + c.dropped > 0 {
            warnings.push(format!(
                "{} trace requests were cut at the end of the logical space and {} beyond it \
                 dropped (--address-policy clip): the trace does not fit this device",
                c.clipped, c.dropped
            ));
        }
        if c.zero_length > 0 {
            warnings.push(format!(
                "{} trace reads, writes or trims of length 0 were skipped (they touch no page)",
                c.zero_length
            ));
        }
        if c.out_of_order > 0 {
            warnings.push(format!(
                "{} trace requests arrived before the request before them and were replayed at \
                 its arrival instead (arrivals never go back): their timing, and the queueing \
                 around them, are not the trace's",
                c.out_of_order
            ));
        }
        if c.wrapped + c.split + c.truncated > 0 {
            warnings.push(format!(
                "{} trace requests beyond the logical space were wrapped to its start ({} split \
                 in two, {} cut to its size; --address-policy wrap): the trace does not fit this \
                 device",
                c.wrapped, c.split, c.truncated
            ));
        }
    }
    let cuts: Vec<String> = runs
        .iter()
        .filter_map(|r| {
            let p = r.result.power_cuts.as_ref()?;
            Some(format!(
                "{} {} cuts, {} unflushed pages lost, {} recovery flash reads, {:.3} s recovering",
                r.ftl,
                p.count,
                p.lost_unflushed_pages,
                p.recovery_flash_reads,
                p.recovery_sim_seconds
            ))
        })
        .collect();
    if !cuts.is_empty() {
        footer.push(format!("power cuts: {}", cuts.join("; ")));
    }
    let unmapped: Vec<(&str, u64, u64)> = runs
        .iter()
        .map(|r| (r.ftl.as_str(), r.result.unmapped_reads, r.result.page_reads))
        .collect();
    if unmapped.iter().any(|&(_, n, _)| n > 0) {
        let same = unmapped
            .windows(2)
            .all(|w| (w[0].1, w[0].2) == (w[1].1, w[1].2));
        let counts = if same {
            format!("{} of {}", unmapped[0].1, unmapped[0].2)
        } else {
            let each: Vec<String> = unmapped
                .iter()
                .map(|(ftl, n, of)| format!("{ftl} {n} of {of}"))
                .collect();
            each.join(", ")
        };
        footer.push(format!("unmapped page reads: {counts}"));
        warnings.push(
            "the measured phase read pages never written (or trimmed), which cost no flash \
             time: read latency and IOPS understate a written device (write them first: \
             --precondition, or --fill-unwritten for a trace)"
                .to_string(),
        );
    }
    Notes {
        footer: footer.iter().map(|line| format!("{line}\n")).collect(),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_count_unmapped_reads_and_warn() {
        let mut r = RunReport {
            ftl: "ideal".into(),
            preset: "tiny".into(),
            seed: 1,
            config: serde_json::Value::Null,
            phases: vec![],
            result: Metrics::default(),
            trace: None,
        };
        assert_eq!(notes(std::slice::from_ref(&r)), Notes::default());
        r.result.unmapped_reads = 2;
        r.result.page_reads = 4;
        let mut other = r.clone();
        other.ftl = "dftl".into();
        let n = notes(&[r.clone(), other.clone()]);
        assert_eq!(n.footer, "unmapped page reads: 2 of 4\n");
        assert!(
            n.warnings.len() == 1 && n.warnings[0].starts_with("the measured phase read pages"),
            "{n:?}"
        );
        other.result.unmapped_reads = 1;
        let n = notes(&[r, other]);
        assert_eq!(n.footer, "unmapped page reads: ideal 2 of 4, dftl 1 of 4\n");
    }

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(60 << 20), "60.0 MiB");
    }
}
