//! One-pass trace statistics (`trace stats`, `--json`).

use super::error::TraceError;
use super::TraceRecord;
use crate::request::Op;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::fmt;

/// Largest address span (highest minus lowest byte touched) whose footprint is counted.
///
/// The footprint bitmap holds one bit per 4 KiB page of the span, so this bounds it at
/// 64 MiB. Beyond it [`TraceStats::footprint_pages`] is `None` (not a wrong number).
pub const FOOTPRINT_MAX_SPAN: u64 = 2 << 40;

/// Page size of the footprint.
const PAGE: u64 = 4096;

/// Upper bounds of the request size histogram, in bytes (a last bucket holds the larger ones).
const SIZE_BOUNDS: [u64; 12] = [
    512,
    1 << 10,
    2 << 10,
    4 << 10,
    8 << 10,
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
    1 << 20,
];

/// Largest inter-arrival gap tracked exactly (larger ones count as this): ~146 years.
const MAX_GAP_NS: u64 = 1 << 62;

/// One bucket of the size histogram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SizeBucket {
    /// Sizes up to and including this many bytes (above the previous bucket); `None` for the
    /// last bucket (everything larger).
    pub up_to_bytes: Option<u64>,
    /// Requests in the bucket.
    pub count: u64,
}

/// Gaps between consecutive records' timestamps (file order).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InterArrival {
    /// Exact mean, ns.
    pub mean_ns: f64,
    /// Median, ns (within 0.1 %).
    pub p50_ns: u64,
    /// 99th percentile, ns (within 0.1 %).
    pub p99_ns: u64,
}

/// Statistics of a whole trace, computed in one streaming pass ([`StatsBuilder`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceStats {
    /// Records (every operation).
    pub requests: u64,
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
    /// Trims (discards).
    pub trims: u64,
    /// Flushes.
    pub flushes: u64,
    /// reads / (reads + writes); 0 without either.
    pub read_ratio: f64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Bytes trimmed.
    pub bytes_trimmed: u64,
    /// Mean size of reads, writes and trims, bytes.
    pub mean_size: f64,
    /// Size histogram of reads, writes and trims (powers of two from 512 B to 1 MiB).
    pub size_histogram: Vec<SizeBucket>,
    /// Lowest byte touched (reads, writes, trims of non-zero length).
    pub min_byte: Option<u64>,
    /// Highest byte touched (inclusive).
    pub max_byte: Option<u64>,
    /// Distinct 4 KiB pages touched; `None` when the span exceeds [`FOOTPRINT_MAX_SPAN`].
    pub footprint_pages: Option<u64>,
    /// Of the requests that have a predecessor of the same operation, the fraction starting
    /// exactly where that predecessor ended.
    pub sequential_fraction: f64,
    /// First record's timestamp, ns (raw).
    pub first_ns: Option<u64>,
    /// Latest timestamp minus the first, ns.
    pub duration_ns: u64,
    /// Gaps between consecutive records; a record earlier than its predecessor counts as 0.
    pub inter_arrival: InterArrival,
    /// Records earlier than their predecessor.
    pub out_of_order: u64,
}

impl TraceStats {
    /// Statistics of every record, stopping at the first error.
    pub fn from_records<I>(records: I) -> Result<TraceStats, TraceError>
    where
        I: IntoIterator<Item = Result<TraceRecord, TraceError>>,
    {
        let mut b = StatsBuilder::new();
        for rec in records {
            b.add(&rec?);
        }
        Ok(b.finish())
    }
}

/// One bit per 4 KiB page over the span seen so far, growing in either direction.
#[derive(Debug, Default)]
struct PageBitmap {
    /// Word index (page / 64) of `words[0]`.
    first_word: u64,
    words: Vec<u64>,
    /// The span outgrew [`FOOTPRINT_MAX_SPAN`]: counting stopped, memory freed.
    overflow: bool,
}

impl PageBitmap {
    const MAX_WORDS: u64 = FOOTPRINT_MAX_SPAN / PAGE / 64;

    /// Mark pages `first..=last`.
    fn set(&mut self, first: u64, last: u64) {
        if self.overflow || !self.cover(first / 64, last / 64) {
            return;
        }
        let mut page = first;
        while page <= last {
            let bit = page % 64;
            let n = (64 - bit).min(last - page + 1);
            let mask = if n == 64 {
                !0
            } else {
                ((1u64 << n) - 1) << bit
            };
            self.words[(page / 64 - self.first_word) as usize] |= mask;
            page += n;
        }
    }

    /// Make words `lo..=hi` addressable; false (and give up) when the span gets too large.
    fn cover(&mut self, lo: u64, hi: u64) -> bool {
        let end = self.first_word + self.words.len() as u64;
        if !self.words.is_empty() && lo >= self.first_word && hi < end {
            return true;
        }
        let (need_lo, need_end) = if self.words.is_empty() {
            (lo, hi + 1)
        } else {
            (lo.min(self.first_word), (hi + 1).max(end))
        };
        if need_end - need_lo > Self::MAX_WORDS {
            self.overflow = true;
            self.words = Vec::new();
            return false;
        }
        // Grow geometrically, in the direction of the growth, for amortised O(1) per word.
        let size = (need_end - need_lo)
            .max(2 * self.words.len() as u64)
            .min(Self::MAX_WORDS);
        let new_first = if lo < self.first_word {
            need_end.saturating_sub(size)
        } else {
            need_lo
        };
        let mut words = vec![0u64; size as usize];
        let at = (self.first_word.saturating_sub(new_first)) as usize;
        if !self.words.is_empty() {
            words[at..at + self.words.len()].copy_from_slice(&self.words);
        }
        self.first_word = new_first;
        self.words = words;
        true
    }

    fn count(&self) -> Option<u64> {
        (!self.overflow).then(|| self.words.iter().map(|w| u64::from(w.count_ones())).sum())
    }
}

/// Accumulates [`TraceStats`] one record at a time, in bounded memory.
#[derive(Debug)]
pub struct StatsBuilder {
    counts: [u64; 4],
    bytes: [u64; 3],
    sizes: [u64; SIZE_BOUNDS.len() + 1],
    size_sum: u128,
    min_byte: Option<u64>,
    max_byte: Option<u64>,
    pages: PageBitmap,
    /// End of the previous request of each data operation.
    last_end: [Option<u64>; 3],
    seq_candidates: u64,
    sequential: u64,
    first_ns: Option<u64>,
    prev_ns: u64,
    max_ns: u64,
    gaps: Histogram<u64>,
    gap_sum: u128,
    out_of_order: u64,
}

impl Default for StatsBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Index of a data operation in the per-operation arrays.
fn data_index(op: Op) -> Option<usize> {
    match op {
        Op::Read => Some(0),
        Op::Write => Some(1),
        Op::Trim => Some(2),
        Op::Flush => None,
    }
}

impl StatsBuilder {
    /// No records yet.
    pub fn new() -> Self {
        StatsBuilder {
            counts: [0; 4],
            bytes: [0; 3],
            sizes: [0; SIZE_BOUNDS.len() + 1],
            size_sum: 0,
            min_byte: None,
            max_byte: None,
            pages: PageBitmap::default(),
            last_end: [None; 3],
            seq_candidates: 0,
            sequential: 0,
            first_ns: None,
            prev_ns: 0,
            max_ns: 0,
            // Bounds 1 ns .. 2^62 ns at 3 significant digits: ~430 KiB, allocated once.
            gaps: Histogram::new_with_bounds(1, MAX_GAP_NS, 3).expect("constant bounds are valid"),
            gap_sum: 0,
            out_of_order: 0,
        }
    }

    /// Account one record.
    pub fn add(&mut self, rec: &TraceRecord) {
        self.time(rec.time_ns);
        let Some(i) = data_index(rec.op) else {
            self.counts[3] += 1;
            return;
        };
        self.counts[i] += 1;
        self.bytes[i] = self.bytes[i].saturating_add(rec.len);
        self.size_sum += u128::from(rec.len);
        let bucket = SIZE_BOUNDS
            .iter()
            .position(|&b| rec.len <= b)
            .unwrap_or(SIZE_BOUNDS.len());
        self.sizes[bucket] += 1;
        let end = rec.offset.saturating_add(rec.len);
        if let Some(prev) = self.last_end[i] {
            self.seq_candidates += 1;
            self.sequential += u64::from(prev == rec.offset);
        }
        self.last_end[i] = Some(end);
        if rec.len > 0 {
            let last = end - 1;
            self.min_byte = Some(self.min_byte.map_or(rec.offset, |m| m.min(rec.offset)));
            self.max_byte = Some(self.max_byte.map_or(last, |m| m.max(last)));
            self.pages.set(rec.offset / PAGE, last / PAGE);
        }
    }

    fn time(&mut self, t: u64) {
        if self.first_ns.is_none() {
            self.first_ns = Some(t);
            self.prev_ns = t;
            self.max_ns = t;
            return;
        }
        let gap = if t < self.prev_ns {
            self.out_of_order += 1;
            0
        } else {
            t - self.prev_ns
        };
        self.gaps.saturating_record(gap);
        self.gap_sum += u128::from(gap);
        self.prev_ns = t;
        self.max_ns = self.max_ns.max(t);
    }

    /// The statistics.
    pub fn finish(self) -> TraceStats {
        let [reads, writes, trims, flushes] = self.counts;
        let data = reads + writes + trims;
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let gaps = self.gaps.len();
        TraceStats {
            requests: data + flushes,
            reads,
            writes,
            trims,
            flushes,
            read_ratio: ratio(reads, reads + writes),
            bytes_read: self.bytes[0],
            bytes_written: self.bytes[1],
            bytes_trimmed: self.bytes[2],
            mean_size: if data == 0 {
                0.0
            } else {
                self.size_sum as f64 / data as f64
            },
            size_histogram: self
                .sizes
                .iter()
                .enumerate()
                .map(|(i, &count)| SizeBucket {
                    up_to_bytes: SIZE_BOUNDS.get(i).copied(),
                    count,
                })
                .collect(),
            min_byte: self.min_byte,
            max_byte: self.max_byte,
            footprint_pages: self.pages.count(),
            sequential_fraction: ratio(self.sequential, self.seq_candidates),
            first_ns: self.first_ns,
            duration_ns: self.max_ns - self.first_ns.unwrap_or(self.max_ns),
            inter_arrival: InterArrival {
                mean_ns: if gaps == 0 {
                    0.0
                } else {
                    self.gap_sum as f64 / gaps as f64
                },
                p50_ns: if gaps == 0 {
                    0
                } else {
                    self.gaps.value_at_quantile(0.5)
                },
                p99_ns: if gaps == 0 {
                    0
                } else {
                    self.gaps.value_at_quantile(0.99)
                },
            },
            out_of_order: self.out_of_order,
        }
    }
}

/// `n` bytes with a binary unit.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    match u {
        0 => format!("{n} B"),
        _ if v.fract() == 0.0 => format!("{v:.0} {}", UNITS[u]),
        _ => format!("{v:.2} {}", UNITS[u]),
    }
}

/// A duration in ns with a readable unit.
fn duration(ns: f64) -> String {
    match ns {
        n if n >= 1e9 => format!("{:.3} s", n / 1e9),
        n if n >= 1e6 => format!("{:.3} ms", n / 1e6),
        n if n >= 1e3 => format!("{:.3} µs", n / 1e3),
        n => format!("{n:.0} ns"),
    }
}

impl fmt::Display for TraceStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |n: u64| {
            if self.requests == 0 {
                0.0
            } else {
                100.0 * n as f64 / self.requests as f64
            }
        };
        let mut row = |label: &str, value: String| writeln!(f, "{label:<22} {value:>20}");
        row("requests", self.requests.to_string())?;
        for (label, n) in [
            ("  reads", self.reads),
            ("  writes", self.writes),
            ("  trims", self.trims),
            ("  flushes", self.flushes),
        ] {
            row(label, format!("{n} ({:.1} %)", pct(n)))?;
        }
        row("read ratio", format!("{:.3}", self.read_ratio))?;
        row("bytes read", bytes(self.bytes_read))?;
        row("bytes written", bytes(self.bytes_written))?;
        row("bytes trimmed", bytes(self.bytes_trimmed))?;
        row("mean size", bytes(self.mean_size.round() as u64))?;
        let span = match (self.min_byte, self.max_byte) {
            (Some(lo), Some(hi)) => format!("{lo}..={hi}"),
            _ => "-".into(),
        };
        row("address span (bytes)", span)?;
        let footprint = match self.footprint_pages {
            Some(p) => format!("{p} pages ({})", bytes(p.saturating_mul(PAGE))),
            None => "span too large".into(),
        };
        row("footprint (4 KiB)", footprint)?;
        row(
            "sequential",
            format!("{:.1} %", 100.0 * self.sequential_fraction),
        )?;
        row("duration", duration(self.duration_ns as f64))?;
        row("inter-arrival mean", duration(self.inter_arrival.mean_ns))?;
        row(
            "inter-arrival p50",
            duration(self.inter_arrival.p50_ns as f64),
        )?;
        row(
            "inter-arrival p99",
            duration(self.inter_arrival.p99_ns as f64),
        )?;
        row("out of order", self.out_of_order.to_string())?;
        writeln!(f, "size histogram")?;
        let data = self.reads + self.writes + self.trims;
        for b in &self.size_histogram {
            let label = match b.up_to_bytes {
                Some(n) => format!("  <= {}", bytes(n)),
                None => format!("  >  {}", bytes(SIZE_BOUNDS[SIZE_BOUNDS.len() - 1])),
            };
            let share = if data == 0 {
                0.0
            } else {
                100.0 * b.count as f64 / data as f64
            };
            writeln!(
                f,
                "{label:<22} {:>20}",
                format!("{} ({share:.1} %)", b.count)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(time_ns: u64, op: Op, offset: u64, len: u64) -> TraceRecord {
        TraceRecord {
            placement: None,
            line: 0,
            time_ns,
            op,
            offset,
            len,
            device: 0,
            done_ns: None,
        }
    }

    #[test]
    fn trace_stats_counts_footprint_and_sequentiality() {
        let recs = [
            rec(100, Op::Write, 0, 8192),
            rec(200, Op::Write, 8192, 4096), // sequential write
            rec(300, Op::Read, 0, 4096),
            rec(250, Op::Read, 4096, 512), // sequential read, out of order
            rec(400, Op::Trim, 1 << 30, 1 << 21),
            rec(500, Op::Flush, 0, 0),
        ];
        let s = TraceStats::from_records(recs.iter().copied().map(Ok)).unwrap();
        assert_eq!(
            (s.requests, s.reads, s.writes, s.trims, s.flushes),
            (6, 2, 2, 1, 1)
        );
        assert_eq!(s.read_ratio, 0.5);
        assert_eq!(s.bytes_written, 12288);
        assert_eq!(s.min_byte, Some(0));
        assert_eq!(s.max_byte, Some((1 << 30) + (1 << 21) - 1));
        assert_eq!(s.footprint_pages, Some(3 + 512));
        assert_eq!(s.sequential_fraction, 1.0); // 2 of the 2 with a predecessor
        assert_eq!(
            (s.first_ns, s.duration_ns, s.out_of_order),
            (Some(100), 400, 1)
        );
        assert_eq!(s.inter_arrival.p50_ns, 100);
        assert_eq!(s.size_histogram[0].count, 1); // 512 B
        assert_eq!(s.size_histogram[3].count, 2); // 4 KiB
        assert_eq!(s.size_histogram[12].count, 1); // > 1 MiB
        let table = s.to_string();
        assert!(
            table.contains("footprint (4 KiB)") && table.contains("515 pages"),
            "{table}"
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["footprint_pages"], 515);
    }

    #[test]
    fn trace_stats_bitmap_grows_both_ways_and_gives_up_past_the_bound() {
        let mut b = PageBitmap::default();
        b.set(1000, 1000);
        b.set(10, 12);
        b.set(5000, 5063);
        b.set(1000, 1001);
        assert_eq!(b.count(), Some(1 + 3 + 64 + 1));
        b.set(
            FOOTPRINT_MAX_SPAN / PAGE + 10_000,
            FOOTPRINT_MAX_SPAN / PAGE + 10_000,
        );
        assert_eq!(b.count(), None);
        assert!(b.words.capacity() == 0);
    }
}
