//! Statistics of a phase, exactly as SPEC §6 defines them: what the engine collects while a
//! phase runs ([`Collector`]) and the finished, serialisable numbers ([`Metrics`]).

use crate::addr::SimTime;
use crate::device::{
    BackfillCounters, Cause, Device, FdpEvents, PlaneCounters, SlcCounters, SuspendCounters, Wear,
};
use crate::ftl::controller::ControllerCounters;
use crate::ftl::Ftl;
use crate::mapping::FtlStats;
use crate::request::Op;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// Latency summary in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Requests measured.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    /// Maximum.
    pub max: f64,
}

/// A histogram of latencies in nanoseconds (three significant digits, up to an hour; longer
/// ones saturate there), as every latency in a report is recorded.
#[derive(Clone, Debug)]
pub struct LatencyHistogram(Histogram<u64>);

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram(
            Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds"),
        )
    }
}

impl LatencyHistogram {
    /// Records one latency of `ns` nanoseconds (0 included).
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns);
    }

    /// What was recorded, in microseconds (all zero if nothing was).
    pub fn summary(&self) -> LatencySummary {
        let h = &self.0;
        if h.is_empty() {
            return LatencySummary::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        LatencySummary {
            count: h.len(),
            mean: h.mean() / 1000.0,
            p50: us(h.value_at_quantile(0.5)),
            p90: us(h.value_at_quantile(0.9)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            p9999: us(h.value_at_quantile(0.9999)),
            max: us(h.max()),
        }
    }
}

/// Read, write and overall latency.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latencies {
    /// Read requests.
    pub read: LatencySummary,
    /// Write requests.
    pub write: LatencySummary,
    /// Every request (reads, writes, trims, flushes).
    pub all: LatencySummary,
}

/// Where a request's time went, each part's mean over the requests, µs (docs/metrics.md
/// "latency_parts_us"); the parts add up to the mean latency.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyParts {
    /// The host: waiting for the job's core, submitting, the interrupt and taking the
    /// completion.
    pub host: f64,
    /// The controller: the command cost and a buffered write's wait for room.
    pub controller: f64,
    /// The host link: waiting for it and crossing it.
    pub transfer: f64,
    /// The rest of the device: the FTL's flash operations, queueing at LUNs and channels.
    pub flash: f64,
}

/// [`LatencyParts`] of reads, writes and every request.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyBreakdown {
    /// Read requests.
    pub read: LatencyParts,
    /// Write requests.
    pub write: LatencyParts,
    /// Every request.
    pub all: LatencyParts,
}

/// One request's time by part, ns (what [`Collector::note_parts`] sums).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PartsNs {
    /// In the host.
    pub host: u64,
    /// In the controller.
    pub controller: u64,
    /// On the host link.
    pub transfer: u64,
    /// In the rest of the device.
    pub flash: u64,
}

/// Sums of [`PartsNs`] over `count` requests.
#[derive(Copy, Clone, Debug, Default)]
struct PartSums {
    count: u64,
    sum: PartsNs,
}

impl PartSums {
    fn add(&mut self, p: PartsNs) {
        self.count += 1;
        self.sum.host += p.host;
        self.sum.controller += p.controller;
        self.sum.transfer += p.transfer;
        self.sum.flash += p.flash;
    }

    fn means_us(&self) -> LatencyParts {
        let mean = |ns: u64| {
            if self.count > 0 {
                ns as f64 / self.count as f64 / 1000.0
            } else {
                0.0
            }
        };
        LatencyParts {
            host: mean(self.sum.host),
            controller: mean(self.sum.controller),
            transfer: mean(self.sum.transfer),
            flash: mean(self.sum.flash),
        }
    }
}

/// Host requests by operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OpCounts {
    /// Reads.
    pub read: u64,
    /// Writes.
    pub write: u64,
    /// Trims.
    pub trim: u64,
    /// Flushes.
    pub flush: u64,
}

/// Host page reads by the flash reads each needed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Lookups {
    /// No flash read: unmapped, or served from a DRAM buffer.
    pub none: u64,
    /// One flash read.
    pub single: u64,
    /// Two (a translation read, then the data).
    pub double: u64,
    /// Three (translation, a misprediction, then the data).
    pub triple: u64,
}

/// Flash operations by cause.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlashOps {
    /// Page reads by cause, plus `total`.
    pub reads: BTreeMap<&'static str, u64>,
    /// Page programs by cause, plus `total`.
    pub programs: BTreeMap<&'static str, u64>,
    /// Block erases.
    pub erases: u64,
    /// Gap filling under `timing=backfill` (zeros under `timing=femu`).
    pub backfill: BackfillCounters,
    /// Reads of a page still being programmed, served from the controller's write buffer
    /// (no flash read; only with `write_buffer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reads_in_flight: Option<u64>,
    /// What the SLC cache did, with one (`slc_cache`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slc: Option<SlcCounters>,
    /// Operations that ran together with another plane's, with `multi_plane=on`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_plane: Option<PlaneCounters>,
    /// Program and erase suspensions, with `suspend=on`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<SuspendCounters>,
}

/// Garbage collection.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GcSummary {
    /// Victims cleaned.
    pub events: u64,
    /// Of which in the background.
    pub background: u64,
    /// Of which passed over the victim rule's first choice because its collection would not
    /// fit.
    pub passed_over: u64,
    /// Valid pages moved.
    pub pages_moved: u64,
}

/// Oracle results.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct VerifySummary {
    /// Whether reads were checked.
    pub enabled: bool,
    /// Page reads checked.
    pub checked: u64,
    /// Page reads that returned the wrong version.
    pub failures: u64,
    /// The byte path's checks, when on (`serve --verify`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<ByteChecks>,
}

/// What the checks of a verifying byte path counted (`serve --verify`; docs/metrics.md).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ByteChecks {
    /// Pages reads returned whose bytes were compared with what was last written there.
    pub pages_compared: u64,
    /// Pages reads returned in a version not written through the byte path (adopted by a
    /// power cut's recovery, or written before the checks began): their bytes were learned.
    pub pages_learned: u64,
    /// Compared pages whose bytes differed (of the right version: the stamp check passed).
    pub mismatches: u64,
    /// Commands failed because a check failed (the server answers them `NBD_EIO`).
    pub failed_commands: u64,
}

/// Power cuts injected during a phase and the recoveries after them (docs/power.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PowerCutSummary {
    /// Power cuts.
    pub count: u64,
    /// Acknowledged page writes lost because they sat in a volatile buffer no FLUSH/FUA
    /// covered (only without `power_loss_protection`).
    pub lost_unflushed_pages: u64,
    /// Of the lost acknowledged page writes, those a completed FLUSH or FUA had covered: 0
    /// unless the drive breaks the contract on purpose (`flush=ignore|reorder`).
    pub lost_flushed_pages: u64,
    /// Flash page reads of every recovery (the OOB scan, translation pages).
    pub recovery_flash_reads: u64,
    /// Simulated time of every recovery, seconds.
    pub recovery_sim_seconds: f64,
}

/// One reclaim unit handle's numbers in a phase (docs/metrics.md "fdp").
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HandleMetrics {
    /// The handle (its placement ID).
    pub handle: u16,
    /// Host data pages programmed with this handle.
    pub host_pages: u64,
    /// Host bytes written with this handle (`host_pages` × page size).
    pub host_bytes: u64,
    /// GC copies of this handle's data.
    pub gc_pages: u64,
    /// Pages programmed for this handle's data: host pages + GC copies.
    pub media_pages: u64,
    /// Bytes programmed for this handle's data (`media_pages` × page size).
    pub media_bytes: u64,
    /// This handle's own write amplification: media pages / host pages (0 without host pages).
    pub waf: f64,
    /// Its part of the device's WAF: media pages / every handle's host page writes; the parts
    /// of the handles and of the FTL's own pages add up to `waf`.
    pub waf_share: f64,
    /// Reclaim units (lines) opened for this handle: its host units, and its own GC units when
    /// persistently isolated.
    pub rus: u64,
}

/// Flexible Data Placement's numbers in a phase, with `fdp_ruhs` (docs/metrics.md "fdp").
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FdpMetrics {
    /// By handle.
    pub handles: Vec<HandleMetrics>,
    /// Pages the FTL programmed for itself (translation pages, trim records, checkpoints,
    /// recovery): every program no handle's data accounts for.
    pub ftl_pages: u64,
    /// Their part of the device's WAF: `ftl_pages` / host page writes.
    pub ftl_waf_share: f64,
    /// FDP events (docs/fdp.md).
    pub events: FdpEvents,
}

/// Everything reported for one phase (SPEC §6). See docs/metrics.md for each key.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Phase name.
    pub phase: String,
    /// Completed host requests by operation.
    pub requests: OpCounts,
    /// Simulated time from the phase's start to its last completion, seconds.
    pub sim_seconds: f64,
    /// Completed requests per simulated second.
    pub iops: f64,
    /// Host bytes read + written per simulated second, MiB/s.
    pub bandwidth_mib_s: f64,
    /// Request latency, µs.
    pub latency_us: Latencies,
    /// Mean request latency by where it was spent (host, controller, host link, flash), µs,
    /// when the host or the controller costs anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_parts_us: Option<LatencyBreakdown>,
    /// Host pages read.
    pub page_reads: u64,
    /// Host pages written.
    pub page_writes: u64,
    /// Host page reads that returned unmapped data (never written, or trimmed).
    pub unmapped_reads: u64,
    /// Host page reads by flash reads needed.
    pub lookups: Lookups,
    /// Host page reads whose mapping came from a cached entry / host page reads.
    pub cmt_hit_ratio: f64,
    /// Host page reads served by a learned prediction with one flash read / host page reads.
    pub model_hit_ratio: f64,
    /// Flash operations by cause.
    pub flash: FlashOps,
    /// All flash programs / host page writes (0 without host writes).
    pub waf: f64,
    /// Garbage collection.
    pub gc: GcSummary,
    /// Erase counts over all blocks at the end of the phase.
    pub wear: Wear,
    /// Mapping DRAM: `total` and `peak` during the phase, `budget` if any, and each part at the end.
    pub dram_bytes: BTreeMap<String, u64>,
    /// Flash energy, µJ.
    pub energy_uj: f64,
    /// Flash energy by cause, µJ.
    pub energy_uj_by_cause: BTreeMap<&'static str, f64>,
    /// Oracle.
    pub verify: VerifySummary,
    /// FTL-specific counters.
    pub ftl_counters: serde_json::Value,
    /// Wall-clock seconds the phase took to simulate.
    pub wall_seconds: f64,
    /// Simulated flash page operations (reads + programs) per wall-clock second.
    pub sim_page_ops_per_sec: f64,
    /// Power cuts and recoveries, when the run injects them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_cuts: Option<PowerCutSummary>,
    /// The controller's write buffer and FLUSHes, when the device has a controller
    /// (docs/device.md "The controller").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<ControllerCounters>,
    /// Flexible Data Placement by handle, with `fdp_ruhs` (docs/fdp.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fdp: Option<FdpMetrics>,
}

/// What the engine accumulates during a phase.
#[derive(Clone)]
pub struct Collector {
    name: String,
    start: SimTime,
    end: SimTime,
    ops: OpCounts,
    bytes: u64,
    page_reads: u64,
    page_writes: u64,
    unmapped_reads: u64,
    hist: [LatencyHistogram; 3],
    /// Latency parts of reads, writes and every request, when the engine notes them.
    parts: Option<[PartSums; 3]>,
    dram_peak: u64,
    wall: Instant,
    /// Counters of FTL instances a recovery replaced during the phase.
    carried: FtlStats,
    /// Counters of the controllers a recovery replaced during the phase.
    carried_controller: ControllerCounters,
    power_cuts: Option<PowerCutSummary>,
}

impl Collector {
    /// A phase starting at simulated time `start`.
    pub fn new(name: &str, start: SimTime) -> Collector {
        Collector {
            name: name.to_string(),
            start,
            end: start,
            ops: OpCounts::default(),
            bytes: 0,
            page_reads: 0,
            page_writes: 0,
            unmapped_reads: 0,
            hist: Default::default(),
            parts: None,
            dram_peak: 0,
            wall: Instant::now(),
            carried: FtlStats::default(),
            carried_controller: ControllerCounters::default(),
            power_cuts: None,
        }
    }

    /// When the phase started.
    pub fn start(&self) -> SimTime {
        self.start
    }

    /// The latest completion so far.
    pub fn end(&self) -> SimTime {
        self.end
    }

    /// Records a completed request.
    #[inline]
    pub fn record(&mut self, op: Op, pages: u32, bytes: u64, arrival: SimTime, done: SimTime) {
        let lat = done.since(arrival);
        self.end = self.end.max(done);
        let slot = match op {
            Op::Read => {
                self.ops.read += 1;
                self.page_reads += pages as u64;
                self.bytes += bytes;
                Some(0)
            }
            Op::Write => {
                self.ops.write += 1;
                self.page_writes += pages as u64;
                self.bytes += bytes;
                Some(1)
            }
            Op::Trim => {
                self.ops.trim += 1;
                None
            }
            Op::Flush => {
                self.ops.flush += 1;
                None
            }
        };
        if let Some(s) = slot {
            self.hist[s].record(lat);
        }
        self.hist[2].record(lat);
    }

    /// Notes where a completed request's time went (`latency_parts_us`).
    #[inline]
    pub fn note_parts(&mut self, op: Op, parts: PartsNs) {
        let sums = self.parts.get_or_insert_with(Default::default);
        match op {
            Op::Read => sums[0].add(parts),
            Op::Write => sums[1].add(parts),
            Op::Trim | Op::Flush => {}
        }
        sums[2].add(parts);
    }

    /// Extends the phase to `t`, when internal work it issued (the settle phase's) completes.
    #[inline]
    pub fn note_end(&mut self, t: SimTime) {
        self.end = self.end.max(t);
    }
    /// Counts host page reads that returned unmapped data.
    #[inline]
    pub fn note_unmapped_reads(&mut self, n: u64) {
        self.unmapped_reads += n;
    }

    /// Notes the FTL's mapping DRAM after a request.
    #[inline]
    pub fn note_dram(&mut self, bytes: u64) {
        self.dram_peak = self.dram_peak.max(bytes);
    }

    /// The phase's power cuts so far (`None` when not tracked).
    pub fn power_cuts(&self) -> Option<&PowerCutSummary> {
        self.power_cuts.as_ref()
    }

    /// Reports power cuts in this phase's metrics (zero so far).
    pub fn track_power_cuts(&mut self) {
        self.power_cuts.get_or_insert_with(PowerCutSummary::default);
    }

    /// A power cut struck and a recovery rebuilt the FTL: `old` is the lost FTL, whose
    /// counters stay in the phase's totals, `lost_unflushed` the buffered writes lost (of which
    /// `lost_flushed` a FLUSH had covered), and the recovery cost `reads` flash reads and `sim_ns` of simulated time.
    pub fn note_power_cut(
        &mut self,
        old: &dyn Ftl,
        (lost_unflushed, lost_flushed): (u64, u64),
        reads: u64,
        sim_ns: u64,
    ) {
        self.carried.add(old.stats());
        if let Some(c) = old.controller() {
            self.carried_controller.add(&c);
        }
        let p = self.power_cuts.get_or_insert_with(PowerCutSummary::default);
        p.count += 1;
        p.lost_unflushed_pages += lost_unflushed;
        p.lost_flushed_pages += lost_flushed;
        p.recovery_flash_reads += reads;
        p.recovery_sim_seconds += sim_ns as f64 / 1e9;
    }

    /// The FTL's counters for the phase so far: `ftl`'s own plus those of the FTLs power cuts
    /// replaced.
    pub fn ftl_stats(&self, ftl: &dyn Ftl) -> FtlStats {
        let mut s = ftl.stats().clone();
        s.add(&self.carried);
        s
    }

    /// The phase's metrics so far, from what was collected plus the device's and FTL's
    /// counters (the engine calls it when the phase ends; the NBD server for live statistics).
    pub fn metrics(&self, dev: &Device, ftl: &dyn Ftl, verify: VerifySummary) -> Metrics {
        let wall = self.wall.elapsed().as_secs_f64();
        let secs = self.end.since(self.start) as f64 / 1e9;
        let per_sec = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        let c = dev.counters();
        // The SLC cache's fold cause is reported only on devices that have one.
        let causes = || {
            Cause::ALL
                .iter()
                .filter(|&&k| k != Cause::SlcFold || dev.has_slc_cache())
        };
        let by_cause = |a: &[u64; Cause::COUNT]| {
            let mut m: BTreeMap<&'static str, u64> =
                causes().map(|&k| (k.key(), a[k as usize])).collect();
            m.insert("total", a.iter().sum());
            m
        };
        let s = self.ftl_stats(ftl);
        let ftl_reads = s.page_reads();
        let ratio = |x: u64| {
            if ftl_reads > 0 {
                x as f64 / ftl_reads as f64
            } else {
                0.0
            }
        };
        let dram = ftl.dram();
        let mut dram_bytes: BTreeMap<String, u64> = dram
            .parts
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        dram_bytes.insert("total".into(), dram.total());
        dram_bytes.insert("peak".into(), self.dram_peak.max(dram.total()));
        if let Some(b) = dram.budget {
            dram_bytes.insert("budget".into(), b);
        }
        let energy = dev.energy_uj();
        let requests = self.ops.read + self.ops.write + self.ops.trim + self.ops.flush;
        Metrics {
            phase: self.name.clone(),
            sim_seconds: secs,
            iops: per_sec(requests as f64),
            bandwidth_mib_s: per_sec(self.bytes as f64) / (1u64 << 20) as f64,
            latency_us: Latencies {
                read: self.hist[0].summary(),
                write: self.hist[1].summary(),
                all: self.hist[2].summary(),
            },
            latency_parts_us: self.parts.map(|p| LatencyBreakdown {
                read: p[0].means_us(),
                write: p[1].means_us(),
                all: p[2].means_us(),
            }),
            requests: self.ops.clone(),
            page_reads: self.page_reads,
            page_writes: self.page_writes,
            unmapped_reads: self.unmapped_reads,
            lookups: Lookups {
                none: s.lookups[0],
                single: s.lookups[1],
                double: s.lookups[2],
                triple: s.lookups[3],
            },
            cmt_hit_ratio: ratio(s.cmt_hits),
            model_hit_ratio: ratio(s.model_hits),
            flash: FlashOps {
                reads: by_cause(&c.reads),
                programs: by_cause(&c.programs),
                erases: c.total_erases(),
                backfill: dev.backfill_counters(),
                suspend: dev.suspend_counters(),
                multi_plane: dev.plane_counters(),
                slc: dev.slc_counters(),
                reads_in_flight: (dev.config().controller.write_buffer > 0)
                    .then(|| dev.in_flight_reads()),
            },
            waf: if self.page_writes > 0 {
                c.total_programs() as f64 / self.page_writes as f64
            } else {
                0.0
            },
            gc: GcSummary {
                events: s.gc_events,
                background: s.gc_background,
                passed_over: s.gc_passed_over,
                pages_moved: s.gc_pages_moved,
            },
            wear: dev.wear(),
            dram_bytes,
            energy_uj: energy.iter().sum(),
            energy_uj_by_cause: causes().map(|&k| (k.key(), energy[k as usize])).collect(),
            verify,
            ftl_counters: ftl.extra_counters(),
            wall_seconds: wall,
            sim_page_ops_per_sec: if wall > 0.0 {
                c.page_ops() as f64 / wall
            } else {
                0.0
            },
            power_cuts: self.power_cuts.clone(),
            controller: ftl.controller().map(|mut c| {
                c.add(&self.carried_controller);
                c
            }),
            fdp: fdp_metrics(dev, self.page_writes),
        }
    }
}

/// FDP's numbers from the device's counters, `host_writes` host pages written in the phase.
fn fdp_metrics(dev: &Device, host_writes: u64) -> Option<FdpMetrics> {
    let f = dev.fdp()?;
    let ps = dev.geo().page_size as u64;
    let share = |pages: u64| {
        if host_writes > 0 {
            pages as f64 / host_writes as f64
        } else {
            0.0
        }
    };
    let handles: Vec<HandleMetrics> = (0u16..)
        .zip(&f.counters().handles)
        .map(|(handle, c)| {
            let media = c.host_pages + c.gc_pages;
            HandleMetrics {
                handle,
                host_pages: c.host_pages,
                host_bytes: c.host_pages * ps,
                gc_pages: c.gc_pages,
                media_pages: media,
                media_bytes: media * ps,
                waf: if c.host_pages > 0 {
                    media as f64 / c.host_pages as f64
                } else {
                    0.0
                },
                waf_share: share(media),
                rus: c.rus,
            }
        })
        .collect();
    let placed: u64 = handles.iter().map(|h| h.media_pages).sum();
    let ftl_pages = dev.counters().total_programs().saturating_sub(placed);
    Some(FdpMetrics {
        handles,
        ftl_pages,
        ftl_waf_share: share(ftl_pages),
        events: f.counters().events.clone(),
    })
}
