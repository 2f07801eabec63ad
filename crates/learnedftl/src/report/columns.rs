//! The columns of the human tables: each heading with the metrics key it shows and what that
//! is (docs/metrics.md "Table columns"), and how a phase's metrics fill it. A figure that does
//! not apply to the phase (a write latency when nothing was written, WAF without host writes)
//! shows as [`NOT_APPLICABLE`]; the JSON keeps its number (docs/metrics.md).

use super::{human_bytes, Table};
use crate::stats::Metrics;

/// The cell of a figure that does not apply to the phase (no request or page it is about).
pub const NOT_APPLICABLE: &str = "–";

/// A column of a table of phases or FTLs.
pub struct Column {
    /// Its heading.
    pub heading: &'static str,
    /// The metrics key (or keys) it shows, as in the JSON report.
    pub key: &'static str,
    /// What it is, in one line.
    pub definition: &'static str,
    /// Its cell for a phase's metrics.
    pub cell: fn(&Metrics) -> String,
}

/// A table: its first column (what each row is: a phase, an FTL), the columns of the row's
/// metrics, and a one-line legend of what the headings do not say.
pub struct Layout {
    /// The first column; its cells come from the row, not from the metrics.
    pub label: (&'static str, &'static str, &'static str),
    /// The metrics columns.
    pub columns: &'static [&'static Column],
    /// A line for under the table.
    pub legend: &'static str,
}

impl Layout {
    /// The table with one row per `(label, metrics)`.
    pub fn render<'a>(&self, rows: impl IntoIterator<Item = (&'a str, &'a Metrics)>) -> String {
        let headings: Vec<&str> = std::iter::once(self.label.0)
            .chain(self.columns.iter().map(|c| c.heading))
            .collect();
        let mut t = Table::new(&headings);
        for (label, m) in rows {
            t.row(
                std::iter::once(label.to_string())
                    .chain(self.columns.iter().map(|c| (c.cell)(m)))
                    .collect(),
            );
        }
        t.render()
    }

    /// Every column's heading, metrics key and definition.
    pub fn explain(&self) -> String {
        let mut t = Table::new(&["column", "key", "definition"]).left_aligned();
        let (heading, key, definition) = self.label;
        t.row(vec![heading.into(), key.into(), definition.into()]);
        for c in self.columns {
            t.row(vec![c.heading.into(), c.key.into(), c.definition.into()]);
        }
        t.render()
    }
}

/// `format!("{:.1$}", v, decimals)`, or [`NOT_APPLICABLE`] when `applies` is false.
fn figure(applies: bool, v: f64, decimals: usize) -> String {
    if applies {
        format!("{v:.decimals$}")
    } else {
        NOT_APPLICABLE.to_string()
    }
}

/// `ratio` as a percentage, or [`NOT_APPLICABLE`] when `applies` is false.
pub(super) fn percent(applies: bool, ratio: f64) -> String {
    if applies {
        format!("{:.1}%", ratio * 100.0)
    } else {
        NOT_APPLICABLE.to_string()
    }
}

/// `part / of` as a percentage, or [`NOT_APPLICABLE`] when `of` is 0.
fn share(part: u64, of: u64) -> String {
    percent(of > 0, part as f64 / of.max(1) as f64)
}

fn requests(m: &Metrics) -> u64 {
    let q = &m.requests;
    q.read + q.write + q.trim + q.flush
}

fn lookups(m: &Metrics) -> u64 {
    let l = &m.lookups;
    l.none + l.single + l.double + l.triple
}

fn total(ops: &std::collections::BTreeMap<&str, u64>) -> u64 {
    ops.get("total").copied().unwrap_or(0)
}

static REQUESTS: Column = Column {
    heading: "requests",
    key: "requests.{read,write,trim,flush}",
    definition: "completed host requests of every kind",
    cell: |m| requests(m).to_string(),
};
static SIM_S: Column = Column {
    heading: "sim s",
    key: "sim_seconds",
    definition: "simulated time from the phase's start to its last completion",
    cell: |m| format!("{:.3}", m.sim_seconds),
};
static IOPS: Column = Column {
    heading: "IOPS",
    key: "iops",
    definition: "completed requests / sim_seconds (– without requests)",
    cell: |m| figure(requests(m) > 0, m.iops, 0),
};
static MIB_S: Column = Column {
    heading: "MiB/s",
    key: "bandwidth_mib_s",
    definition: "host bytes read and written / sim_seconds, in MiB/s (– without requests)",
    cell: |m| figure(requests(m) > 0, m.bandwidth_mib_s, 1),
};
static RD_MEAN: Column = Column {
    heading: "rd mean µs",
    key: "latency_us.read.mean",
    definition: "mean read latency, completion − arrival (– without reads)",
    cell: |m| figure(m.latency_us.read.count > 0, m.latency_us.read.mean, 1),
};
static RD_P99: Column = Column {
    heading: "rd p99 µs",
    key: "latency_us.read.p99",
    definition: "99th percentile of read latency (– without reads)",
    cell: |m| figure(m.latency_us.read.count > 0, m.latency_us.read.p99, 1),
};
static RD_P999: Column = Column {
    heading: "rd p99.9 µs",
    key: "latency_us.read.p999",
    definition: "99.9th percentile of read latency (– without reads)",
    cell: |m| figure(m.latency_us.read.count > 0, m.latency_us.read.p999, 1),
};
static WR_MEAN: Column = Column {
    heading: "wr mean µs",
    key: "latency_us.write.mean",
    definition: "mean write latency, completion − arrival (– without writes)",
    cell: |m| figure(m.latency_us.write.count > 0, m.latency_us.write.mean, 1),
};
static WR_P99: Column = Column {
    heading: "wr p99 µs",
    key: "latency_us.write.p99",
    definition: "99th percentile of write latency (– without writes)",
    cell: |m| figure(m.latency_us.write.count > 0, m.latency_us.write.p99, 1),
};
static WR_P999: Column = Column {
    heading: "wr p99.9 µs",
    key: "latency_us.write.p999",
    definition: "99.9th percentile of write latency (– without writes)",
    cell: |m| figure(m.latency_us.write.count > 0, m.latency_us.write.p999, 1),
};
static CMT_HIT: Column = Column {
    heading: "CMT hit",
    key: "cmt_hit_ratio",
    definition: "host page reads whose mapping came from a cached entry / host page reads (– without page reads)",
    cell: |m| percent(m.page_reads > 0, m.cmt_hit_ratio),
};
static MODEL_HIT: Column = Column {
    heading: "model hit",
    key: "model_hit_ratio",
    definition: "host page reads a learned prediction served with one flash read / host page reads (– without page reads)",
    cell: |m| percent(m.page_reads > 0, m.model_hit_ratio),
};
static DOUBLE: Column = Column {
    heading: "double",
    key: "lookups.double",
    definition: "share of host page reads that needed 2 flash reads: translation, then data (– without page reads)",
    cell: |m| share(m.lookups.double, lookups(m)),
};
static TRIPLE: Column = Column {
    heading: "triple",
    key: "lookups.triple",
    definition: "share of host page reads that needed 3 flash reads: translation, misprediction, data (– without page reads)",
    cell: |m| share(m.lookups.triple, lookups(m)),
};
static WAF: Column = Column {
    heading: "WAF",
    key: "waf",
    definition: "flash programs of every cause / host page writes (– without page writes)",
    cell: |m| figure(m.page_writes > 0, m.waf, 2),
};
static GC: Column = Column {
    heading: "GC",
    key: "gc.events",
    definition: "GC victims cleaned (foreground and background)",
    cell: |m| m.gc.events.to_string(),
};
static FLASH_RD: Column = Column {
    heading: "flash rd",
    key: "flash.reads.total",
    definition: "flash page reads of every cause",
    cell: |m| total(&m.flash.reads).to_string(),
};
static FLASH_PR: Column = Column {
    heading: "flash pr",
    key: "flash.programs.total",
    definition: "flash page programs of every cause",
    cell: |m| total(&m.flash.programs).to_string(),
};
static VERIFIED: Column = Column {
    heading: "verified",
    key: "verify.{checked,failures}",
    definition: "page reads the oracle found right / page reads it checked (off without --verify)",
    cell: |m| {
        let v = &m.verify;
        if v.enabled {
            format!("{}/{}", v.checked - v.failures, v.checked)
        } else {
            "off".into()
        }
    },
};
static DRAM: Column = Column {
    heading: "DRAM",
    key: "dram_bytes.total",
    definition: "mapping DRAM at the end of the phase, every part",
    cell: |m| human_bytes(m.dram_bytes.get("total").copied().unwrap_or(0)),
};
static WALL_S: Column = Column {
    heading: "wall s",
    key: "wall_seconds",
    definition: "wall-clock seconds the phase took to simulate (depends on the machine)",
    cell: |m| format!("{:.2}", m.wall_seconds),
};
static SIM_MOPS: Column = Column {
    heading: "sim Mops/s",
    key: "sim_page_ops_per_sec",
    definition: "simulator speed: flash page reads and programs per wall-clock second, in millions (depends on the machine)",
    cell: |m| format!("{:.1}", m.sim_page_ops_per_sec / 1e6),
};

/// One row per FTL ([`super::compare_table`]).
pub static COMPARE: Layout = Layout {
    label: ("ftl", "ftl", "the FTL"),
    columns: &[
        &IOPS, &MIB_S, &RD_P99, &RD_P999, &WR_P99, &WR_P999, &CMT_HIT, &MODEL_HIT, &DOUBLE,
        &TRIPLE, &WAF, &GC, &DRAM, &SIM_MOPS,
    ],
    legend: "–: does not apply (no such requests); double/triple: page reads needing 2/3 flash \
             reads; GC: victims cleaned; sim Mops/s: simulator speed",
};

/// One row per phase ([`super::phases_table`]).
pub static PHASES: Layout = Layout {
    label: (
        "phase",
        "phase",
        "the phase: precondition, settle, then the workload's",
    ),
    columns: &[
        &REQUESTS, &SIM_S, &IOPS, &MIB_S, &RD_MEAN, &RD_P99, &WR_MEAN, &WR_P99, &WAF, &GC,
        &FLASH_RD, &FLASH_PR, &VERIFIED, &WALL_S, &SIM_MOPS,
    ],
    legend: "–: does not apply (no such requests); WAF: flash programs per host page written; \
             GC: victims cleaned; flash rd/pr: flash page reads/programs; sim Mops/s: simulator \
             speed",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_that_do_not_apply_show_a_dash() {
        let mut m = Metrics::default();
        m.requests.read = 10;
        m.latency_us.read.count = 10;
        m.latency_us.read.p99 = 12.34;
        m.page_reads = 10;
        m.lookups.double = 5;
        m.lookups.single = 5;
        m.cmt_hit_ratio = 0.5;
        let row = COMPARE.render([("dftl", &m)]);
        let cells: Vec<&str> = row
            .lines()
            .nth(1)
            .unwrap()
            .split("  ")
            .filter(|c| !c.is_empty())
            .collect();
        // ftl, IOPS, MiB/s, rd p99, rd p99.9, wr p99, wr p99.9, CMT, model, double, triple, WAF
        assert_eq!(cells[3].trim(), "12.3", "{row}");
        assert_eq!((cells[5].trim(), cells[6].trim()), ("–", "–"), "{row}");
        assert_eq!(
            (cells[7].trim(), cells[9].trim()),
            ("50.0%", "50.0%"),
            "{row}"
        );
        assert_eq!(cells[11].trim(), "–", "{row}");
        // A phase with no host request at all (a settle that did nothing).
        let idle = PHASES.render([("settle", &Metrics::default())]);
        let cells: Vec<&str> = idle.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(
            cells[..10],
            ["settle", "0", "0.000", "–", "–", "–", "–", "–", "–", "–"]
        );
    }

    #[test]
    fn docs_define_every_column() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/metrics.md");
        let doc = std::fs::read_to_string(path).unwrap();
        for layout in [&COMPARE, &PHASES] {
            let (heading, key, _) = layout.label;
            for (heading, key) in std::iter::once((heading, key))
                .chain(layout.columns.iter().map(|c| (c.heading, c.key)))
            {
                let row = format!("| {heading} | `{key}` |");
                assert!(doc.contains(&row), "docs/metrics.md lacks the row {row}");
            }
        }
    }
}
