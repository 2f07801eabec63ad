//! Open-loop replay adaptation (SPEC §4.2): trace records to [`HostIo`]s for a logical space.

use super::error::TraceError;
use super::TraceRecord;
use crate::addr::SimTime;
use crate::error::quote;
use crate::request::Op;
use crate::workload::HostIo;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// How trace writes without a placement ID of their own get one (`--placement-by`;
/// docs/fdp.md): by logical range or by size.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlacementBy {
    /// None: they stay untagged (the default).
    #[default]
    None,
    /// `lba:N`: the logical space in `N` equal ranges, ID = the range of the first byte.
    Lba(u16),
    /// `size:T1,T2,...` (ascending): a write of at most `T1` bytes gets ID 0, at most `T2` ID
    /// 1, and so on; larger ones the next ID.
    Size(Vec<u64>),
}

impl PlacementBy {
    /// Whether it leaves writes untagged (reports then leave it out).
    pub fn is_none(&self) -> bool {
        *self == PlacementBy::None
    }

    /// The ID of a write of `len` bytes at `offset` in a logical space of `logical` bytes.
    #[inline]
    fn id(&self, offset: u64, len: u64, logical: u64) -> u16 {
        match self {
            PlacementBy::None => 0,
            PlacementBy::Lba(n) => (offset as u128 * *n as u128 / logical.max(1) as u128) as u16,
            PlacementBy::Size(t) => t.iter().take_while(|&&t| len > t).count() as u16,
        }
    }
}

impl FromStr for PlacementBy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{} is not lba:N or size:BYTES,BYTES,... (ascending)",
                crate::error::quote(s)
            )
        };
        match s.trim().split_once(':') {
            Some(("lba", n)) => match n.trim().parse::<u16>() {
                Ok(n) if n > 0 => Ok(PlacementBy::Lba(n)),
                _ => Err(bad()),
            },
            Some(("size", list)) => {
                let t: Option<Vec<u64>> = list.split(',').map(crate::params::parse_size).collect();
                match t {
                    Some(t) if !t.is_empty() && t.windows(2).all(|w| w[0] < w[1]) => {
                        Ok(PlacementBy::Size(t))
                    }
                    _ => Err(bad()),
                }
            }
            _ if s.trim() == "none" => Ok(PlacementBy::None),
            _ => Err(bad()),
        }
    }
}

/// What happens to a request reaching beyond the logical space.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AddressPolicy {
    /// Stop with [`TraceError::OutOfRange`] naming the line (the default: nothing is silently
    /// changed).
    #[default]
    Refuse,
    /// Take the offset modulo the logical size. A request crossing the end is split in two at
    /// the end: the rest continues at byte 0 with the same arrival (every byte keeps a place;
    /// a request longer than the whole space is first cut to its size).
    Wrap,
    /// Drop requests starting at or beyond the end; cut those crossing it.
    Clip,
}

impl AddressPolicy {
    /// The policy's name (`refuse`, `wrap`, `clip`).
    pub fn name(self) -> &'static str {
        match self {
            AddressPolicy::Refuse => "refuse",
            AddressPolicy::Wrap => "wrap",
            AddressPolicy::Clip => "clip",
        }
    }
}

impl fmt::Display for AddressPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AddressPolicy {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self, TraceError> {
        [
            AddressPolicy::Refuse,
            AddressPolicy::Wrap,
            AddressPolicy::Clip,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
        .ok_or_else(|| {
            TraceError::InvalidOption(format!(
                "address policy {} (expected refuse, wrap or clip)",
                quote(s)
            ))
        })
    }
}

/// How a trace is replayed.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayOptions {
    /// Time scale: arrivals are divided by it (2.0 replays twice as fast). Finite, > 0.
    pub speed: f64,
    /// Requests beyond the logical space.
    pub address_policy: AddressPolicy,
    /// Stop after this many trace requests (a wrapped request split in two counts once).
    pub max_requests: Option<u64>,
    /// Keep only this device's requests (MSR disk, SYSTOR LUN, UMass ASU, Linux `dev_t`…).
    pub device_filter: Option<u32>,
    /// Placement IDs for writes the trace gives none.
    pub placement_by: PlacementBy,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            speed: 1.0,
            address_policy: AddressPolicy::Refuse,
            max_requests: None,
            device_filter: None,
            placement_by: PlacementBy::None,
        }
    }
}

/// What the adaptation did, for the run report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReplayCounters {
    /// Trace requests replayed.
    pub requests: u64,
    /// Host I/Os produced (requests plus the second halves of split ones).
    pub host_ios: u64,
    /// Records of other devices (`device_filter`).
    pub filtered: u64,
    /// Reads, writes and trims of length 0, skipped (they touch no page).
    pub zero_length: u64,
    /// Records earlier than the one before: their arrival is clamped to the previous one, so
    /// that arrivals never decrease (the engine's contract).
    pub out_of_order: u64,
    /// `wrap`: requests whose offset was taken modulo the logical size.
    pub wrapped: u64,
    /// `wrap`: requests crossing the end, emitted as two host I/Os.
    pub split: u64,
    /// `wrap`: requests longer than the logical space, cut to its size.
    pub truncated: u64,
    /// `clip`: requests crossing the end, cut at it.
    pub clipped: u64,
    /// `clip`: requests entirely beyond the end, dropped.
    pub dropped: u64,
}

/// An iterator of [`HostIo`]s over an iterator of trace records.
///
/// Arrivals are rebased to the first replayed record's timestamp and divided by the speed.
/// Flushes pass whatever the address policy, as offset 0, length 0. Errors of the records
/// iterator are passed on unchanged.
#[derive(Debug)]
pub struct Replay<I> {
    inner: I,
    source: String,
    logical: u64,
    options: ReplayOptions,
    base: Option<u64>,
    last_arrival: u64,
    /// The recorded completion of the request yielded last, rebased and scaled.
    last_done: Option<SimTime>,
    pending: Option<HostIo>,
    counters: ReplayCounters,
}

impl<I> Replay<I>
where
    I: Iterator<Item = Result<TraceRecord, TraceError>>,
{
    /// Replay `records` (read from `source`, named in errors) onto `logical_bytes` bytes.
    pub fn new(
        records: I,
        source: impl Into<String>,
        logical_bytes: u64,
        options: ReplayOptions,
    ) -> Result<Self, TraceError> {
        if !(options.speed.is_finite() && options.speed > 0.0) {
            return Err(TraceError::InvalidOption(format!(
                "replay speed {} (must be a positive number)",
                options.speed
            )));
        }
        if options.max_requests == Some(0) {
            return Err(TraceError::InvalidOption(
                "max_requests 0 would replay nothing (leave it unset for no limit)".into(),
            ));
        }
        if logical_bytes == 0 {
            return Err(TraceError::InvalidOption(
                "replay onto an empty logical space".into(),
            ));
        }
        Ok(Replay {
            inner: records,
            source: source.into(),
            logical: logical_bytes,
            options,
            base: None,
            last_arrival: 0,
            last_done: None,
            pending: None,
            counters: ReplayCounters::default(),
        })
    }

    /// What was filtered, clamped, wrapped or clipped so far.
    pub fn counters(&self) -> &ReplayCounters {
        &self.counters
    }

    /// The records iterator (e.g. the [`TraceReader`](super::TraceReader) for its counts).
    pub fn inner(&self) -> &I {
        &self.inner
    }

    /// Trace time `time_ns` on the replay's clock: relative to the first replayed record and
    /// divided by the speed (the first record read sets time 0).
    fn rebased(&mut self, time_ns: u64) -> u64 {
        let base = *self.base.get_or_insert(time_ns);
        self.scale(time_ns.saturating_sub(base))
    }

    fn scale(&self, delta: u64) -> u64 {
        #[allow(clippy::float_cmp)] // exactly 1.0 keeps full integer precision
        if self.options.speed == 1.0 {
            delta
        } else {
            (delta as f64 / self.options.speed) as u64
        }
    }

    /// Trace time `time_ns` on the replay's clock, once the first record was read (a phase
    /// mark of a closed-loop replay): negative before the first record.
    pub fn replay_time(&self, time_ns: u64) -> Option<i64> {
        self.base.map(|b| {
            let d = |a: u64, b: u64| i64::try_from(self.scale(a - b)).unwrap_or(i64::MAX);
            if time_ns >= b {
                d(time_ns, b)
            } else {
                -d(b, time_ns)
            }
        })
    }

    /// The recorded completion of the request yielded last (the second half of a split one
    /// shares it), on the replay's clock: for closed-loop replay. `None` when the trace does
    /// not record completions.
    pub fn recorded_done(&self) -> Option<SimTime> {
        self.last_done
    }

    fn arrival(&mut self, time_ns: u64) -> SimTime {
        let base = *self.base.get_or_insert(time_ns);
        let mut t = self.rebased(time_ns);
        if time_ns < base || t < self.last_arrival {
            self.counters.out_of_order += 1;
            t = self.last_arrival;
        }
        self.last_arrival = t;
        SimTime(t)
    }

    /// Apply the address policy; `None` drops the request.
    fn place(&mut self, rec: &TraceRecord, arrival: SimTime) -> Result<Option<HostIo>, TraceError> {
        let logical = self.logical;
        let (mut offset, mut len) = (rec.offset, rec.len);
        // A write's placement ID: the trace's own, else the rule's (of the request as traced).
        let placement = match rec.op {
            Op::Write => rec.placement.unwrap_or_else(|| {
                self.options
                    .placement_by
                    .id(offset.min(logical - 1), len, logical)
            }),
            _ => 0,
        };
        let beyond = match offset.checked_add(len) {
            Some(end) => end > logical,
            None => true,
        };
        if beyond {
            match self.options.address_policy {
                AddressPolicy::Refuse => {
                    return Err(TraceError::OutOfRange {
                        file: self.source.clone(),
                        line: rec.line,
                        offset,
                        len,
                        logical,
                    })
                }
                AddressPolicy::Clip if offset >= logical => {
                    self.counters.dropped += 1;
                    return Ok(None);
                }
                AddressPolicy::Clip => {
                    self.counters.clipped += 1;
                    len = logical - offset;
                }
                AddressPolicy::Wrap => {
                    if len > logical {
                        self.counters.truncated += 1;
                        len = logical;
                    }
                    if offset >= logical {
                        self.counters.wrapped += 1;
                        offset %= logical;
                    }
                    let room = logical - offset;
                    if len > room {
                        self.counters.split += 1;
                        self.pending = Some(HostIo {
                            placement,
                            arrival,
                            op: rec.op,
                            offset: 0,
                            len: len - room,
                        });
                        len = room;
                    }
                }
            }
        }
        Ok(Some(HostIo {
            placement,
            arrival,
            op: rec.op,
            offset,
            len,
        }))
    }
}

impl<I> Iterator for Replay<I>
where
    I: Iterator<Item = Result<TraceRecord, TraceError>>,
{
    type Item = Result<HostIo, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(io) = self.pending.take() {
            self.counters.host_ios += 1;
            return Some(Ok(io));
        }
        loop {
            if self
                .options
                .max_requests
                .is_some_and(|max| self.counters.requests >= max)
            {
                return None;
            }
            let rec = match self.inner.next()? {
                Ok(rec) => rec,
                Err(e) => return Some(Err(e)),
            };
            if self.options.device_filter.is_some_and(|d| d != rec.device) {
                self.counters.filtered += 1;
                continue;
            }
            if rec.op != Op::Flush && rec.len == 0 {
                self.counters.zero_length += 1;
                continue;
            }
            let arrival = self.arrival(rec.time_ns);
            self.last_done = rec.done_ns.map(|d| SimTime(self.rebased(d)));
            let io = if rec.op == Op::Flush {
                Some(HostIo {
                    placement: 0,
                    arrival,
                    op: Op::Flush,
                    offset: 0,
                    len: 0,
                })
            } else {
                match self.place(&rec, arrival) {
                    Ok(io) => io,
                    Err(e) => return Some(Err(e)),
                }
            };
            if let Some(io) = io {
                self.counters.requests += 1;
                self.counters.host_ios += 1;
                return Some(Ok(io));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(line: u64, time_ns: u64, op: Op, offset: u64, len: u64) -> TraceRecord {
        TraceRecord {
            placement: None,
            line,
            time_ns,
            op,
            offset,
            len,
            device: 0,
            done_ns: None,
        }
    }

    fn replay(
        recs: Vec<TraceRecord>,
        logical: u64,
        options: ReplayOptions,
    ) -> (Vec<Result<HostIo, TraceError>>, ReplayCounters) {
        let mut r = Replay::new(recs.into_iter().map(Ok), "t", logical, options).unwrap();
        let out: Vec<_> = r.by_ref().collect();
        (out, r.counters().clone())
    }

    #[test]
    fn writes_without_a_placement_id_get_the_rules() {
        let mib = 1 << 20;
        let mut recs = vec![
            rec(1, 0, Op::Write, 0, 4096),
            rec(2, 1, Op::Write, 3 * mib, 64 << 10),
            rec(3, 2, Op::Read, 3 * mib, 4096),
            rec(4, 3, Op::Write, mib, 1 << 20),
        ];
        recs[3].placement = Some(7);
        let ids = |by: &str| {
            let options = ReplayOptions {
                placement_by: by.parse().unwrap(),
                ..ReplayOptions::default()
            };
            let (out, _) = replay(recs.clone(), 4 * mib, options);
            out.into_iter()
                .map(|io| io.unwrap().placement)
                .collect::<Vec<_>>()
        };
        // The trace's own ID wins; reads carry none.
        assert_eq!(ids("none"), [0, 0, 0, 7]);
        assert_eq!(ids("lba:4"), [0, 3, 0, 7]);
        assert_eq!(ids("size:4k,64k"), [0, 1, 0, 7]);
        for bad in ["lba:0", "size:64k,4k", "size:", "bytes:3", "lba"] {
            assert!(bad.parse::<PlacementBy>().is_err(), "{bad}");
        }
    }

    fn io(arrival: u64, op: Op, offset: u64, len: u64) -> HostIo {
        HostIo {
            placement: 0,
            arrival: SimTime(arrival),
            op,
            offset,
            len,
        }
    }

    #[test]
    fn trace_replay_rebases_scales_and_clamps_time() {
        let recs = vec![
            rec(1, 1_000, Op::Write, 0, 4096),
            rec(2, 3_000, Op::Read, 0, 4096),
            rec(3, 2_000, Op::Read, 4096, 4096), // out of order
            rec(4, 5_000, Op::Flush, 0, 0),
        ];
        let options = ReplayOptions {
            speed: 2.0,
            ..Default::default()
        };
        let (out, c) = replay(recs, 1 << 20, options);
        let out: Vec<_> = out.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            out,
            vec![
                io(0, Op::Write, 0, 4096),
                io(1_000, Op::Read, 0, 4096),
                io(1_000, Op::Read, 4096, 4096),
                io(2_000, Op::Flush, 0, 0),
            ]
        );
        assert_eq!(c.out_of_order, 1);
        assert_eq!(c.requests, 4);
    }

    #[test]
    fn trace_replay_policies() {
        let recs = || {
            vec![
                rec(1, 0, Op::Write, 8192, 4096),  // inside
                rec(2, 0, Op::Write, 14336, 4096), // crosses the end (16384)
                rec(3, 0, Op::Write, 20480, 4096), // beyond
            ]
        };
        let with = |p| ReplayOptions {
            address_policy: p,
            ..Default::default()
        };
        let (out, _) = replay(recs(), 16384, with(AddressPolicy::Refuse));
        // Each refused request is an error; a caller that goes on gets the next one.
        assert_eq!(out.len(), 3);
        assert!(out[0].is_ok() && out[2].is_err());
        let msg = out[1].as_ref().unwrap_err().to_string();
        assert!(
            msg.starts_with("t:2: request at bytes 14336..18432"),
            "{msg}"
        );

        let (out, c) = replay(recs(), 16384, with(AddressPolicy::Clip));
        let out: Vec<_> = out.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            out,
            vec![io(0, Op::Write, 8192, 4096), io(0, Op::Write, 14336, 2048)]
        );
        assert_eq!((c.clipped, c.dropped), (1, 1));

        let (out, c) = replay(recs(), 16384, with(AddressPolicy::Wrap));
        let out: Vec<_> = out.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            out,
            vec![
                io(0, Op::Write, 8192, 4096),
                io(0, Op::Write, 14336, 2048),
                io(0, Op::Write, 0, 2048),
                io(0, Op::Write, 4096, 4096),
            ]
        );
        assert_eq!((c.wrapped, c.split, c.requests, c.host_ios), (1, 1, 3, 4));
    }

    #[test]
    fn trace_replay_filters_limits_and_skips_empty() {
        let mut recs = vec![
            rec(1, 10, Op::Write, 0, 0),
            rec(2, 20, Op::Write, 0, 4096),
            rec(3, 30, Op::Read, 0, 4096),
            rec(4, 40, Op::Read, 0, 4096),
        ];
        recs[2].device = 7;
        let options = ReplayOptions {
            device_filter: Some(0),
            max_requests: Some(1),
            ..Default::default()
        };
        let (out, c) = replay(recs, 1 << 20, options);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].as_ref().unwrap(), &io(0, Op::Write, 0, 4096));
        assert_eq!((c.zero_length, c.filtered), (1, 0));
        assert!(Replay::new(
            std::iter::empty(),
            "t",
            1,
            ReplayOptions {
                speed: 0.0,
                ..Default::default()
            }
        )
        .is_err());
        let none = ReplayOptions {
            max_requests: Some(0),
            ..Default::default()
        };
        assert!(Replay::new(std::iter::empty(), "t", 1, none).is_err());
        assert_eq!(
            "Wrap".parse::<AddressPolicy>().ok(),
            Some(AddressPolicy::Wrap)
        );
    }
}
