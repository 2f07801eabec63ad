//! Striped write pointers over lines, a FIFO free-line list and victim choice (greedy, or
//! cost-benefit with `gc_victim=cost-benefit`).
//!
//! A write pointer owns one open line and hands out its pages in VPPN order (channel → LUN →
//! plane → page), so consecutive allocations land on different LUNs. When its line is full it
//! takes the next line from the FIFO free list.

use crate::addr::{Ppa, SimTime};
use crate::config::{FdpConfig, Geometry, Stripe, DEFAULT_GC_RESERVE_LINES};
use crate::device::{Device, Oob, RuOwner};
use crate::error::{quote, ConfigError, FtlError};
use crate::params::{keys, parse_word, Key, Params};
use serde::Serialize;
use std::collections::VecDeque;

/// A write stream: data, or translation pages. Each has its own pointer and open line. FTLs with
/// per-group pointers (LearnedFTL) number further streams after these two.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Stream(pub u16);

impl Stream {
    /// Host and GC data pages.
    pub const DATA: Stream = Stream(0);
    /// Translation pages.
    pub const TRANS: Stream = Stream(1);
}

/// The life of a line.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LineState {
    /// Erased, in the free list.
    Free,
    /// Owned by a write pointer.
    Open(Stream),
    /// Full; a GC candidate.
    Closed(Stream),
}

/// Which rule sets the GC thresholds (`gc=reserve|femu`, SPEC §3.5).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GcRule {
    /// The default: every FTL keeps the same small reserve of free lines (`gc_reserve_lines`)
    /// and collects in the background from `gc_bg_lines` free lines, so that FTLs differ only
    /// in their placement and victims.
    Reserve,
    /// FEMU's thresholds as fractions of the lines (`gc_fg_ratio`, `gc_bg_ratio`), for
    /// reproducing FEMU-based papers.
    Femu,
}

/// How GC ranks candidate victims (`gc_victim=greedy|cost-benefit|fifo`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VictimRule {
    /// The default (SPEC §3.5): the line with the fewest valid pages.
    Greedy,
    /// LFS's cost-benefit: the line with the highest `(1 - u) * age / (1 + u)`, `u` its share
    /// of valid pages and `age` the blocks opened since its first block was. A young line
    /// waits until more of it is invalid, so lines of hot pages (translation pages, rewritten
    /// far more often than data) are collected emptier than greedy collects them.
    CostBenefit,
    /// The oldest line first (by when its first block was opened), however valid: the
    /// analytic model's FIFO cleaning (Desnoyers, SYSTOR'12; `reproduce::theory`).
    Fifo,
}

/// When garbage collection runs (SPEC §3.5), in lines, and how it ranks victims.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GcPolicy {
    /// The rule the line counts below came from.
    pub rule: GcRule,
    /// How victims are ranked.
    pub victim: VictimRule,
    /// Foreground GC runs before an allocation needing a new line while free lines ≤ this (the
    /// reserve only GC writes into).
    pub fg_free_lines: u32,
    /// Background GC runs after a request (and while the device settles) while free lines ≤
    /// this ...
    pub bg_free_lines: u32,
    /// ... and the best victim has at least this many invalid pages ...
    pub bg_min_invalid: u32,
    /// ... cleaning at most this many victims after each request (FEMU: 1).
    pub bg_victims: u32,
}

impl GcPolicy {
    /// The invalid pages a background victim must have with `free` lines free: the policy's
    /// minimum, or any gain while the reserve itself is short. A collection may take reserve
    /// lines for its copies and TPs; with nearly-valid victims the foreground GC that follows
    /// only makes room for the stream that needs it, and nothing else would give the reserve
    /// back (TPFTL ran out of lines at 4 TiB after random writes: its victims were 89 % valid).
    pub fn bg_min_gain(&self, free: u32) -> u32 {
        if free < self.fg_free_lines {
            1
        } else {
            self.bg_min_invalid
        }
    }

    /// Refuses `gc_victim` other than greedy for an FTL (`who`) whose GC picks its victims by
    /// its own rule, so that the setting does not pass silently.
    pub fn greedy_only(&self, who: &str) -> Result<(), ConfigError> {
        match self.victim {
            VictimRule::Greedy => Ok(()),
            VictimRule::CostBenefit | VictimRule::Fifo => Err(ConfigError::invalid(
                "gc_victim",
                format!("{who} picks its GC victims by its own rule; only greedy applies"),
            )),
        }
    }
}

keys! {
    /// The GC policy's keys ([`GcPolicy::from_params`]), shared by the FTLs that collect lines.
    pub static GC_KEYS = "gc", "when garbage collection runs (SPEC §3.5)";
    GC = "gc" ["reserve|femu"] "the rule for the GC thresholds: one reserve for every FTL, or FEMU's fractions of the lines";
    GC_VICTIM = "gc_victim" ["greedy|cost-benefit|fifo"] "how GC ranks victim lines: fewest valid pages, LFS's cost-benefit (emptiness times age), or the oldest first";
    GC_BG_MIN_INVALID = "gc_bg_min_invalid" ["of a line"] "a background victim needs at least this share of its pages invalid";
    GC_BG_VICTIMS = "gc_bg_victims" ["victims"] "victims background GC cleans after each request, at most";
    GC_RESERVE_LINES = "gc_reserve_lines" ["lines"] "foreground GC runs while free lines are at most this" only with "gc=reserve";
    GC_BG_LINES = "gc_bg_lines" ["lines"] "background GC runs while free lines are at most this (gc_reserve_lines + 2 unless given)" only with "gc=reserve";
    GC_FG_RATIO = "gc_fg_ratio" ["of the lines"] "foreground GC threshold (FEMU's; giving it implies gc=femu)" only with "gc=femu";
    GC_BG_RATIO = "gc_bg_ratio" ["of the lines"] "background GC threshold (FEMU's; giving it implies gc=femu)" only with "gc=femu";
}

/// Keys only `gc=femu` reads.
static FEMU_KEYS: [&Key; 2] = [&GC_FG_RATIO, &GC_BG_RATIO];
/// Keys only `gc=reserve` reads.
static RESERVE_KEYS: [&Key; 2] = [&GC_RESERVE_LINES, &GC_BG_LINES];

impl GcPolicy {
    /// The policy from `params` (SPEC §3.5). `gc=reserve` (the default): foreground GC at
    /// `gc_reserve_lines` free lines (default 2; at least `min_reserve`, the lines one
    /// collection of this FTL may need to open for its destinations), background GC from
    /// `gc_bg_lines` (default reserve + 2). `gc=femu`: foreground at `gc_fg_ratio` of the lines
    /// (default 5 %, at least 2), background from `gc_bg_ratio` (25 %); giving either ratio
    /// implies `gc=femu`. Both: background victims need `gc_bg_min_invalid` of a line invalid
    /// (1/8), at most `gc_bg_victims` (1) per request. A key of the other rule is an error
    /// naming it.
    pub fn from_params(
        geo: &Geometry,
        params: &mut Params,
        min_reserve: u32,
    ) -> Result<GcPolicy, ConfigError> {
        let femu_key = FEMU_KEYS.into_iter().find(|k| params.contains(k));
        let reserve_key = RESERVE_KEYS.into_iter().find(|k| params.contains(k));
        // Giving a FEMU ratio implies gc=femu.
        let implied = if femu_key.is_some() {
            GcRule::Femu
        } else {
            GcRule::Reserve
        };
        let rule = parse_word(
            "gc",
            &params.take_str_or(&GC, implied.key()),
            &[("reserve", GcRule::Reserve), ("femu", GcRule::Femu)],
        )?;
        let wrong = match rule {
            GcRule::Reserve => femu_key.map(|k| (k, "gc=femu")),
            GcRule::Femu => reserve_key.map(|k| (k, "gc=reserve")),
        };
        if let Some((key, other)) = wrong {
            return Err(ConfigError::invalid(
                key.name(),
                format!("only meaningful with {other}, but gc={}", rule.key()),
            ));
        }
        let victim = match params.take_str_or(&GC_VICTIM, "greedy").as_str() {
            "greedy" => VictimRule::Greedy,
            "cost-benefit" => VictimRule::CostBenefit,
            "fifo" => VictimRule::Fifo,
            o => {
                return Err(ConfigError::invalid(
                    "gc_victim",
                    format!("{} is not greedy, cost-benefit or fifo", quote(o)),
                ))
            }
        };
        let inv = params.take_or(&GC_BG_MIN_INVALID, 0.125)?;
        check_fraction("gc_bg_min_invalid", inv)?;
        let bg_victims = params.take_or(&GC_BG_VICTIMS, 1u32)?;
        let lines = geo.lines();
        let (fg_free_lines, bg_free_lines) = match rule {
            GcRule::Reserve => {
                let reserve = params.take_or(&GC_RESERVE_LINES, DEFAULT_GC_RESERVE_LINES)?;
                if reserve < min_reserve || reserve + 4 > lines {
                    return Err(ConfigError::invalid(
                        "gc_reserve_lines",
                        format!(
                            "{reserve}: need at least {min_reserve} (a collection's \
                             destinations) and 4 of {lines} lines left for data"
                        ),
                    ));
                }
                // FEMU's fractions are FEMU's, whatever they leave (docs/device.md).
                geo.check_gc_room(reserve, GC_RESERVE_LINES.name())?;
                let bg = params.take_or(&GC_BG_LINES, reserve + 2)?;
                if bg < reserve || bg + 2 > lines {
                    return Err(ConfigError::invalid(
                        "gc_bg_lines",
                        format!("{bg}: need gc_reserve_lines ({reserve}) to {}", lines - 2),
                    ));
                }
                (reserve, bg)
            }
            GcRule::Femu => {
                let fg = params.take_or(&GC_FG_RATIO, 0.05)?;
                let bg = params.take_or(&GC_BG_RATIO, 0.25)?;
                check_fraction("gc_fg_ratio", fg)?;
                check_fraction("gc_bg_ratio", bg)?;
                let fg_free_lines = ((lines as f64 * fg) as u32).max(2).max(min_reserve);
                if fg_free_lines + 2 >= lines {
                    return Err(ConfigError::invalid(
                        "gc_fg_ratio",
                        format!("{fg_free_lines} reserved lines leave too few of {lines} for data"),
                    ));
                }
                (
                    fg_free_lines,
                    ((lines as f64 * bg) as u32).max(fg_free_lines),
                )
            }
        };
        Ok(GcPolicy {
            rule,
            victim,
            fg_free_lines,
            bg_free_lines,
            bg_min_invalid: ((geo.pages_per_line() as f64 * inv).ceil() as u32).max(1),
            bg_victims,
        })
    }
}

impl GcRule {
    /// The `gc=` value.
    pub fn key(self) -> &'static str {
        match self {
            GcRule::Reserve => "reserve",
            GcRule::Femu => "femu",
        }
    }
}

fn check_fraction(key: &str, v: f64) -> Result<(), ConfigError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            key,
            format!("{v} is not a fraction in [0, 1]"),
        ))
    }
}

#[derive(Copy, Clone, Debug)]
pub(super) struct Pointer {
    pub(super) line: u32,
    pub(super) next: u32,
    pub(super) stripe: Stripe,
}

impl Pointer {
    pub(super) const NONE: u32 = u32::MAX;
}

/// Line allocator shared by the baseline FTLs.
#[derive(Clone, Debug)]
pub struct Allocator {
    pub(super) ppl: u32,
    geo: Geometry,
    pub(super) free: VecDeque<u32>,
    pub(super) state: Vec<LineState>,
    pub(super) ptrs: Vec<Pointer>,
    /// Lines each stream owns (open or closed), so that a quota check need not scan the lines.
    pub(super) owned: Vec<u32>,
    /// `(invalidations, free lines, line changes, blocks opened)` when the last background
    /// check found no victim: until a page is invalidated, a line changes hands, fills or
    /// closes, or a block opens (cost-benefit ages lines by blocks opened), the answer stays
    /// the same.
    idle_at: Option<(u64, u32, u64, u32)>,
    /// With it, while free lines stay `.0`, no line fills or closes (`.1`, `changes`), for
    /// cost-benefit no block opens (`.2`, ages), and the device's line alarm is down: no
    /// background victim (see [`Allocator::idle`]). Under random writes the best victim sits
    /// just below the background minimum for long stretches, and each request would otherwise
    /// scan every line again.
    idle_until: Option<(u32, u64, Option<u32>)>,
    /// The line alarms [`Allocator::idle`] computes for the device, kept so that it allocates
    /// nothing.
    alarms: Vec<u32>,
    /// Lines filled or closed so far: each may make a line a GC candidate (a closed line, or
    /// for LearnedFTL's reclaim a full open one).
    changes: u64,
    /// Scratch space of [`collect_line`](super::gc::collect_line): the victim's pages between
    /// their reads and their programs, kept so a collection allocates nothing.
    pub(super) gc_buffer: Vec<(u32, Ppa, Oob, SimTime)>,
    /// The second buffer of the GC buffer's radix sort.
    pub(super) gc_scratch: Vec<(u32, Ppa, Oob, SimTime)>,
    /// GC thresholds.
    pub policy: GcPolicy,
    /// Flexible Data Placement's streams, when the device places by handle.
    fdp: Option<FdpStreams>,
}

/// The write streams of Flexible Data Placement (docs/fdp.md): handle 0 writes through
/// [`Stream::DATA`]; handles 1.. through `first + h - 1`; GC copies of a persistently isolated
/// handle's data through `gc + 1 + h`, of the others' through `gc`, the shared GC unit's
/// stream (a slot no handle uses holds no line).
#[derive(Copy, Clone, Debug)]
struct FdpStreams {
    first: u16,
    gc: u16,
    ruhs: u16,
    /// Bit `h`: handle `h` is persistently isolated (at most 128 handles).
    persistent: u128,
}

impl FdpStreams {
    /// Stream slots: the host streams of handles 1.., the shared GC stream, one GC stream per
    /// handle.
    fn slots(ruhs: u16) -> u16 {
        ruhs - 1 + 1 + ruhs
    }
}

impl Allocator {
    /// Every line free, `streams` write pointers with no line yet.
    pub fn new(geo: &Geometry, streams: u16, policy: GcPolicy) -> Allocator {
        Allocator {
            ppl: geo.pages_per_line(),
            geo: geo.clone(),
            free: (0..geo.lines()).collect(),
            state: vec![LineState::Free; geo.lines() as usize],
            ptrs: vec![
                Pointer {
                    line: Pointer::NONE,
                    next: 0,
                    stripe: Stripe::new(geo, 0),
                };
                streams as usize
            ],
            owned: vec![0; streams as usize],
            idle_at: None,
            idle_until: None,
            alarms: Vec::new(),
            changes: 0,
            gc_buffer: Vec::new(),
            gc_scratch: Vec::new(),
            policy,
            fdp: None,
        }
    }

    /// The allocator with the write streams Flexible Data Placement `fdp` needs (docs/fdp.md),
    /// numbered after its own; unchanged when FDP is off.
    pub fn with_fdp(mut self, fdp: &FdpConfig) -> Allocator {
        if fdp.is_off() {
            return self;
        }
        let first = self.ptrs.len() as u16;
        let extra = FdpStreams::slots(fdp.ruhs) as usize;
        let none = Pointer {
            line: Pointer::NONE,
            next: 0,
            stripe: Stripe::new(&self.geo, 0),
        };
        self.ptrs.resize(first as usize + extra, none);
        self.owned.resize(first as usize + extra, 0);
        let persistent = fdp.persistent_mask();
        self.fdp = Some(FdpStreams {
            first,
            gc: first + fdp.ruhs - 1,
            ruhs: fdp.ruhs,
            persistent,
        });
        self
    }

    /// The stream and handle of a host write with placement ID `placement`: handle
    /// `placement`'s stream under FDP ([`Stream::DATA`] for handle 0), [`Stream::DATA`] and
    /// handle 0 without. A placement ID that names no handle goes to handle 0, counted as FDP's
    /// "Invalid Placement Identifier" event.
    #[inline]
    pub fn host_stream(&self, dev: &mut Device, placement: u16) -> (Stream, u8) {
        let Some(f) = self.fdp else {
            return (Stream::DATA, 0);
        };
        let h = if placement < f.ruhs {
            placement
        } else {
            dev.invalid_placement();
            0
        };
        match h {
            0 => (Stream::DATA, 0),
            h => (Stream(f.first + h - 1), h as u8),
        }
    }

    /// The stream GC copies handle `h`'s data pages through: its own GC stream (persistently
    /// isolated), the shared one (initially isolated), [`Stream::DATA`] without FDP.
    #[inline]
    pub fn gc_stream(&self, h: u8) -> Stream {
        match self.fdp {
            None => Stream::DATA,
            Some(f) if f.persistent >> h & 1 == 1 => Stream(f.gc + 1 + h as u16),
            Some(f) => Stream(f.gc),
        }
    }

    /// Write stream slots FDP `fdp` adds to an allocator ([`Allocator::with_fdp`]): more than
    /// [`FdpConfig::extra_streams`], which counts those that open lines.
    pub fn fdp_slots(fdp: &FdpConfig) -> u16 {
        if fdp.is_off() {
            0
        } else {
            FdpStreams::slots(fdp.ruhs)
        }
    }

    /// The stream GC copies the data pages of line `line` through ([`Allocator::gc_stream`]
    /// of the handle whose reclaim unit it is; a shared GC unit's go to the shared stream).
    #[inline]
    pub fn gc_stream_of_line(&self, dev: &Device, line: u32) -> Stream {
        let h = match (self.fdp, dev.fdp()) {
            (Some(_), Some(f)) => f.owner(line).handle().unwrap_or(0),
            _ => 0,
        };
        self.gc_stream(h)
    }

    /// The stream a line placed as reclaim unit `owner` belongs to (`None`: not a reclaim
    /// unit, or FDP off), for recovery after a power cut.
    pub(super) fn fdp_stream(&self, owner: RuOwner) -> Option<Stream> {
        let f = self.fdp?;
        match owner {
            RuOwner::None => None,
            RuOwner::Host(0) => Some(Stream::DATA),
            RuOwner::Host(h) => Some(Stream(f.first + h as u16 - 1)),
            RuOwner::Gc(h) => Some(self.gc_stream(h)),
            RuOwner::SharedGc => Some(Stream(f.gc)),
        }
    }

    /// Free lines.
    #[inline]
    pub fn free_lines(&self) -> u32 {
        self.free.len() as u32
    }

    /// State of a line.
    #[inline]
    pub fn state(&self, line: u32) -> LineState {
        self.state[line as usize]
    }

    /// Whether foreground GC must run before `stream` takes `pages` pages: they need a new
    /// line and free lines are at or below the foreground threshold.
    #[inline]
    pub fn must_collect(&self, stream: Stream, pages: u32) -> bool {
        self.room(stream) < pages && self.free_lines() <= self.policy.fg_free_lines
    }

    /// Closes `stream`'s line if it is full, so that GC may choose it before the pointer takes
    /// a new line.
    pub fn close_full(&mut self, stream: Stream) {
        if self.ptrs[stream.0 as usize].next == self.ppl {
            self.close(stream);
        }
    }

    /// The next page of `stream` (VPPN order within its line). Fails only when no free line is
    /// left, which GC thresholds are there to prevent.
    #[inline]
    pub fn next_page(&mut self, stream: Stream) -> Result<Ppa, FtlError> {
        let ppl = self.ppl;
        let s = stream.0 as usize;
        if self.ptrs[s].line == Pointer::NONE || self.ptrs[s].next == ppl {
            if self.ptrs[s].line != Pointer::NONE {
                self.set_closed(self.ptrs[s].line, stream);
            }
            let line = self.free.pop_front().ok_or(FtlError::NoSpace)?;
            self.state[line as usize] = LineState::Open(stream);
            self.owned[s] += 1;
            self.ptrs[s] = Pointer {
                line,
                next: 0,
                stripe: Stripe::new(&self.geo, line),
            };
        }
        let p = &mut self.ptrs[s];
        p.next += 1;
        self.changes += (p.next == ppl) as u64;
        Ok(p.stripe.next_ppa())
    }

    /// The best closed line by the victim rule (greedy: the fewest valid pages), if any has an
    /// invalid page.
    pub fn victim(&self, dev: &Device) -> Option<u32> {
        self.victim_where(dev, |_| true)
    }

    /// The best closed line by the victim rule among those `ok` accepts, if any has an invalid
    /// page.
    ///
    /// A linear scan over the lines' valid counts: a scan of a contiguous array is cheaper
    /// than keeping a heap ordered on every invalidation.
    pub fn victim_where(&self, dev: &Device, ok: impl Fn(u32) -> bool) -> Option<u32> {
        let closed = |st: LineState| matches!(st, LineState::Closed(_));
        self.lowest(dev, closed, ok).map(|(l, _)| l)
    }

    /// The line in a state `candidate` accepts, with an invalid page, that `ok` accepts and
    /// has the lowest key by the victim rule ([`Allocator::key`]), with its key; ties go to
    /// the lower line.
    #[inline]
    fn lowest(
        &self,
        dev: &Device,
        candidate: impl Fn(LineState) -> bool,
        ok: impl Fn(u32) -> bool,
    ) -> Option<(u32, f64)> {
        let valid = dev.lines_valid();
        let mut best: Option<(u32, f64)> = None;
        for (line, &st) in self.state.iter().enumerate() {
            if candidate(st) {
                let (l, v) = (line as u32, valid[line]);
                if v < self.ppl {
                    let k = self.key(dev, l, v);
                    if best.is_none_or(|(_, bk)| k < bk) && ok(l) {
                        best = Some((l, k));
                    }
                }
            }
        }
        best
    }

    /// Line `line`'s rank by the victim rule, given its `valid` pages, lowest best: greedy's
    /// valid pages, or cost-benefit's key.
    #[inline]
    fn key(&self, dev: &Device, line: u32, valid: u32) -> f64 {
        match self.policy.victim {
            VictimRule::Greedy => valid as f64,
            VictimRule::CostBenefit => self.cost_benefit(dev, line, valid),
            // Lines open in order, so the first block's sequence number orders them by age.
            VictimRule::Fifo => dev.block_seq(self.geo.block_in_line(line, 0)) as f64,
        }
    }

    /// `gc_victim=cost-benefit`'s key of line `line` with `valid` valid pages, lowest best:
    /// minus `(P - valid) * age / (P + valid)`.
    #[inline]
    fn cost_benefit(&self, dev: &Device, line: u32, valid: u32) -> f64 {
        let age = self.age(dev, line);
        -((self.ppl - valid) as f64 * age as f64 / (self.ppl + valid) as f64)
    }

    /// Line `line`'s age for cost-benefit: blocks opened since its first block was.
    #[inline]
    fn age(&self, dev: &Device, line: u32) -> u32 {
        let first = self.geo.block_in_line(line, 0);
        dev.blocks_opened().wrapping_sub(dev.block_seq(first))
    }

    /// Whether line `a` is a better victim than line `b` by the victim rule, each given as
    /// `(line, valid pages)`; ties keep `b`. For FTLs that scan candidates themselves
    /// (LearnedFTL's reclaim).
    #[inline]
    pub fn better(&self, dev: &Device, a: (u32, u32), b: (u32, u32)) -> bool {
        self.key(dev, a.0, a.1) < self.key(dev, b.0, b.1)
    }

    /// Whether background GC may run now: if free lines are at or below the background
    /// threshold, the invalid pages its victim needs ([`GcPolicy::bg_min_gain`]); `None` also
    /// when nothing changed since [`Allocator::idle`] recorded that no victim would do.
    pub fn background_gain(&self, dev: &Device) -> Option<u32> {
        let (inv, free) = (dev.invalidations(), self.free_lines());
        if free > self.policy.bg_free_lines
            || self.idle_at == Some((inv, free, self.changes, dev.blocks_opened()))
            || self.idle_until.is_some_and(|(f, c, b)| {
                !dev.line_alarm()
                    && f == free
                    && c == self.changes
                    && b.is_none_or(|b| b == dev.blocks_opened())
            })
        {
            return None;
        }
        Some(self.policy.bg_min_gain(free))
    }

    /// Records that background GC found no victim needing `min_invalid` invalid pages among
    /// the candidates: closed lines, and the open lines `open` accepts given their stream and
    /// unwritten pages (LearnedFTL's reclaim takes its groups' full ones, and under FDP any).
    /// Until a page is invalidated, a line changes hands, fills or closes, or a block opens,
    /// the answer stays the same. And while no line is freed, filled or closed (and, for
    /// cost-benefit, no block opens), a victim needs some candidate to lose as many valid pages
    /// as it lacks, itself: to rank first (its key moves only with its own pages, and the first
    /// choice's can only get better) and to have `min_invalid` invalid pages (or, for
    /// LearnedFTL, to be wholly invalid). The device's line alarms say when one has
    /// ([`Device::arm_line_alarms`]).
    pub fn idle(&mut self, dev: &mut Device, min_invalid: u32, open: impl Fn(Stream, u32) -> bool) {
        let (inv, free) = (dev.invalidations(), self.free_lines());
        self.idle_at = Some((inv, free, self.changes, dev.blocks_opened()));
        let mut alarms = std::mem::take(&mut self.alarms);
        let valid = dev.lines_valid();
        let ppl = self.ppl;
        let candidate = |st: LineState| match st {
            LineState::Closed(_) => true,
            LineState::Open(s) => open(s, self.room(s)),
            LineState::Free => false,
        };
        let first = self.lowest(dev, candidate, |_| true);
        // Invalidations line `l` with `v` valid pages needs to rank at or above the first
        // choice (a lower bound: ties count as ranking above).
        let to_rank = |l: u32, v: u32| -> u32 {
            let Some((_, fk)) = first.filter(|&(fl, _)| fl != l) else {
                return 0;
            };
            match self.policy.victim {
                VictimRule::Greedy => v.saturating_sub(fk as u32),
                // The key is `-m * age / (2P - m)` with `m` invalid pages, falling as `m`
                // grows: it reaches the first choice's `-k` near `m = 2Pk / (age + k)`; the
                // exact `m` is found from there with the key's own arithmetic.
                VictimRule::CostBenefit => {
                    let (n, k) = (ppl - v, -fk);
                    let beats = |m: u32| self.cost_benefit(dev, l, ppl - m) <= fk;
                    let age = self.age(dev, l) as f64;
                    let mut m = if k <= 0.0 {
                        n
                    } else {
                        ((2.0 * ppl as f64 * k / (age + k)) as u32).clamp(n, ppl + 1)
                    };
                    while m > n && beats(m - 1) {
                        m -= 1;
                    }
                    while m <= ppl && !beats(m) {
                        m += 1;
                    }
                    if m > ppl {
                        u32::MAX
                    } else {
                        m - n
                    }
                }
                // Age alone ranks: no invalidation makes another line the first choice.
                VictimRule::Fifo => u32::MAX,
            }
        };
        // Per candidate, the valid count below which it may become a victim (never below
        // zero: a line cannot lose more pages than it holds).
        alarms.clear();
        alarms.resize(valid.len(), 0);
        let mut waits = true;
        let candidates = (0u32..).zip(self.state.iter().zip(valid));
        for (l, (_, &v)) in candidates.filter(|(_, (&st, _))| candidate(st)) {
            let gain = min_invalid.saturating_sub(ppl - v).min(v);
            let need = to_rank(l, v).max(gain).min(v);
            waits &= need > 0;
            alarms[l as usize] = v - need + 1;
        }
        let ages = (self.policy.victim == VictimRule::CostBenefit).then(|| dev.blocks_opened());
        self.idle_until = waits.then_some((free, self.changes, ages));
        if waits {
            dev.arm_line_alarms(&alarms);
        }
        self.alarms = alarms;
    }

    /// Pages left in `stream`'s open line (0 if it has none).
    #[inline]
    pub fn room(&self, stream: Stream) -> u32 {
        let p = self.ptrs[stream.0 as usize];
        if p.line == Pointer::NONE {
            0
        } else {
            self.ppl - p.next
        }
    }

    /// `stream`'s open line, if any.
    #[inline]
    pub fn open_line(&self, stream: Stream) -> Option<u32> {
        let p = self.ptrs[stream.0 as usize];
        (p.line != Pointer::NONE).then_some(p.line)
    }

    /// Closes `stream`'s open line even if it is not full (its unwritten pages stay unused until
    /// the line is erased), so that it can be collected; the next allocation takes a new line.
    pub fn close(&mut self, stream: Stream) {
        let line = std::mem::replace(&mut self.ptrs[stream.0 as usize].line, Pointer::NONE);
        if line != Pointer::NONE {
            self.set_closed(line, stream);
        }
    }

    /// Marks `line` closed (owned by `stream`): a GC candidate from now on.
    pub(super) fn set_closed(&mut self, line: u32, stream: Stream) {
        self.state[line as usize] = LineState::Closed(stream);
        self.changes += 1;
    }

    /// Lines `stream` owns (open or closed), ascending.
    pub fn lines_of(&self, stream: Stream) -> impl Iterator<Item = u32> + '_ {
        self.state
            .iter()
            .enumerate()
            .filter_map(move |(l, st)| match st {
                LineState::Open(s) | LineState::Closed(s) if *s == stream => Some(l as u32),
                _ => None,
            })
    }

    /// How many lines `stream` owns (open or closed).
    #[inline]
    pub fn lines_owned(&self, stream: Stream) -> u32 {
        self.owned[stream.0 as usize]
    }

    /// Returns an erased line to the tail of the free list.
    pub fn release(&mut self, line: u32) {
        debug_assert!(matches!(self.state[line as usize], LineState::Closed(_)));
        if let LineState::Closed(s) = self.state[line as usize] {
            self.owned[s.0 as usize] -= 1;
        }
        self.state[line as usize] = LineState::Free;
        self.free.push_back(line);
    }

    /// After a power cut: hands written line `line` to stream `to` (the recovered allocator
    /// labels a line by its first page; an FTL that knows better relabels it). An open line
    /// stays open for `to` unless `to` has an open line already; then it is closed.
    pub fn reassign(&mut self, line: u32, to: Stream) {
        let (from, open) = match self.state[line as usize] {
            LineState::Open(s) => (s, true),
            LineState::Closed(s) => (s, false),
            LineState::Free => return,
        };
        if from == to {
            return;
        }
        self.owned[from.0 as usize] -= 1;
        self.owned[to.0 as usize] += 1;
        self.set_closed(line, to);
        if open {
            let p = self.ptrs[from.0 as usize];
            self.ptrs[from.0 as usize].line = Pointer::NONE;
            if self.ptrs[to.0 as usize].line == Pointer::NONE {
                self.ptrs[to.0 as usize] = p;
                self.state[line as usize] = LineState::Open(to);
            }
        }
    }

    /// Heap bytes of allocator state.
    pub fn state_bytes(&self) -> usize {
        self.free.capacity() * 4 + self.state.capacity() * std::mem::size_of::<LineState>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Lpn, SimTime};
    use crate::config::DeviceConfig;
    use crate::device::{Cause, Oob, Src};

    fn setup() -> (Device, Allocator) {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let mut p = Params::new();
        let pol = GcPolicy::from_params(&cfg.geometry, &mut p, 2).unwrap();
        (Device::new(&cfg), Allocator::new(&cfg.geometry, 2, pol))
    }

    /// The policy `kv` gives on tiny with 16 spare lines (its own has 4).
    fn policy(kv: &[&str], min_reserve: u32) -> Result<GcPolicy, ConfigError> {
        let mut geo = DeviceConfig::preset("tiny").unwrap().geometry;
        geo.logical_pages = geo.pages() * 3 / 4;
        let mut p = Params::new();
        for a in kv {
            p.insert_assignment(a, "t").unwrap();
        }
        let pol = GcPolicy::from_params(&geo, &mut p, min_reserve)?;
        p.finish().unwrap();
        Ok(pol)
    }

    /// The error's text, which must name `key`.
    fn refused(kv: &[&str], min_reserve: u32, key: &str) {
        let e = policy(kv, min_reserve).unwrap_err().to_string();
        assert!(e.contains(key), "{kv:?}: '{e}' does not name {key}");
    }

    #[test]
    fn thresholds_follow_the_spec() {
        let (d, a) = setup();
        // tiny: 64 lines of 512 pages. The default: a 2-line reserve, background from 4.
        assert_eq!(d.geo().lines(), 64);
        assert_eq!(a.policy.rule, GcRule::Reserve);
        assert_eq!(a.policy.fg_free_lines, 2);
        assert_eq!(a.policy.bg_free_lines, 4);
        assert_eq!(a.policy.bg_min_invalid, 64);
        assert_eq!(a.policy.bg_victims, 1);
        let p = policy(&["gc_reserve_lines=3", "gc_bg_lines=9"], 2).unwrap();
        assert_eq!((p.fg_free_lines, p.bg_free_lines), (3, 9));
        assert_eq!(policy(&["gc_reserve_lines=5"], 2).unwrap().bg_free_lines, 7);
        // FEMU: 5 % (at least 2) and 25 % of the lines.
        for kv in [
            &["gc=femu"][..],
            &["gc_fg_ratio=0.05"],
            &["gc_bg_ratio=0.25"],
        ] {
            let p = policy(kv, 2).unwrap();
            assert_eq!(p.rule, GcRule::Femu, "{kv:?}");
            assert_eq!((p.fg_free_lines, p.bg_free_lines), (3, 16), "{kv:?}");
        }
        // The measurement docs/device.md quotes: both ratios 0 is a 2-line reserve.
        let p = policy(&["gc_fg_ratio=0", "gc_bg_ratio=0"], 2).unwrap();
        assert_eq!((p.fg_free_lines, p.bg_free_lines), (2, 2));
    }

    #[test]
    fn bad_and_contradictory_settings_name_their_key() {
        refused(&["gc=lazy"], 2, "gc");
        refused(&["gc_reserve_lines=1"], 2, "gc_reserve_lines");
        assert_eq!(policy(&["gc_reserve_lines=1"], 1).unwrap().fg_free_lines, 1);
        refused(&["gc_reserve_lines=61"], 2, "gc_reserve_lines");
        refused(&["gc_bg_lines=1"], 2, "gc_bg_lines");
        refused(&["gc_bg_lines=63"], 2, "gc_bg_lines");
        refused(&["gc=reserve", "gc_fg_ratio=0.1"], 2, "gc_fg_ratio");
        refused(&["gc=reserve", "gc_bg_ratio=0.1"], 2, "gc_bg_ratio");
        refused(&["gc=femu", "gc_reserve_lines=3"], 2, "gc_reserve_lines");
        refused(&["gc_bg_ratio=0.3", "gc_bg_lines=3"], 2, "gc_bg_lines");
        refused(&["gc_fg_ratio=0.99"], 2, "gc_fg_ratio");
        refused(&["gc_bg_min_invalid=2"], 2, "gc_bg_min_invalid");
        // A reserve the over-provisioning cannot hold beside GC's working lines: tiny's own
        // 4 spare lines hold the default reserve, not 3.
        let geo = DeviceConfig::preset("tiny").unwrap().geometry;
        let with = |v: &str| {
            let mut p = Params::new();
            p.insert("gc_reserve_lines", v, "t");
            GcPolicy::from_params(&geo, &mut p, 2).map_err(|e| e.to_string())
        };
        assert_eq!(with("2").unwrap().fg_free_lines, 2);
        let e = with("3").unwrap_err();
        assert!(
            e.contains("invalid gc_reserve_lines") && e.contains("holds 4 whole line(s)"),
            "{e}"
        );
    }

    #[test]
    fn pointer_stripes_and_takes_lines_fifo() {
        let (mut d, mut a) = setup();
        let g = d.geo().clone();
        let first: Vec<u32> = (0..g.luns())
            .map(|_| g.lun_of(a.next_page(Stream::DATA).unwrap()))
            .collect();
        let mut sorted = first.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            g.luns() as usize,
            "one page per LUN: {first:?}"
        );
        assert_eq!(a.state(0), LineState::Open(Stream::DATA));
        let t = a.next_page(Stream::TRANS).unwrap();
        assert_eq!(g.line_of(t), 1);
        for _ in g.luns()..g.pages_per_line() {
            let p = a.next_page(Stream::DATA).unwrap();
            assert_eq!(g.line_of(p), 0);
            d.program(p, Oob::data(Lpn(0), 0), Src::None, Cause::User, SimTime(0))
                .ok();
        }
        assert_eq!(a.room(Stream::DATA), 0);
        let p = a.next_page(Stream::DATA).unwrap();
        assert_eq!(g.line_of(p), 2);
        assert_eq!(a.state(0), LineState::Closed(Stream::DATA));
    }

    #[test]
    fn greedy_victim_and_background_threshold() {
        let (mut d, mut a) = setup();
        let g = d.geo().clone();
        // Fill three lines; make line 1 the emptiest.
        let mut pages = Vec::new();
        for i in 0..3 * g.pages_per_line() {
            let p = a.next_page(Stream::DATA).unwrap();
            d.program(p, Oob::data(Lpn(i), 1), Src::None, Cause::User, SimTime(0))
                .unwrap();
            pages.push(p);
        }
        a.next_page(Stream::DATA).unwrap(); // closes line 2
        for p in &pages[..10] {
            d.invalidate(*p).unwrap();
        }
        let l1 = g.pages_per_line() as usize;
        for p in &pages[l1..l1 + 100] {
            d.invalidate(*p).unwrap();
        }
        assert_eq!(a.victim(&d), Some(1));
        assert_eq!(a.victim_where(&d, |l| l != 1), Some(0));
        assert_eq!(a.victim_where(&d, |_| false), None);
        // Plenty of free lines: no background GC.
        assert_eq!(a.background_gain(&d), None);
        a.policy.bg_free_lines = a.free_lines();
        assert_eq!(a.background_gain(&d), Some(a.policy.bg_min_invalid));
        // A fruitless search is remembered until a page is invalidated.
        a.idle(&mut d, a.policy.bg_min_invalid, |_, _| false);
        assert_eq!(a.background_gain(&d), None);
        d.invalidate(pages[l1 + 100]).unwrap();
        assert_eq!(a.background_gain(&d), Some(a.policy.bg_min_invalid));
        // Below the reserve any gain will do, so that the reserve comes back.
        a.policy.fg_free_lines = a.free_lines() + 1;
        a.policy.bg_free_lines = a.policy.fg_free_lines;
        assert_eq!(a.background_gain(&d), Some(1));
    }

    /// Three closed lines (line 3 open), with `invalid[line]` of each line's pages invalidated.
    fn three_lines(invalid: [u32; 3]) -> (Device, Allocator, Vec<Ppa>) {
        let (mut d, mut a) = setup();
        let ppl = d.geo().pages_per_line();
        let mut pages = Vec::new();
        for i in 0..3 * ppl {
            let p = a.next_page(Stream::DATA).unwrap();
            d.program(p, Oob::data(Lpn(i), 1), Src::None, Cause::User, SimTime(0))
                .unwrap();
            pages.push(p);
        }
        a.next_page(Stream::DATA).unwrap(); // closes line 2
        for (line, n) in invalid.into_iter().enumerate() {
            for p in &pages[line * ppl as usize..][..n as usize] {
                d.invalidate(*p).unwrap();
            }
        }
        (d, a, pages)
    }

    #[test]
    fn a_fruitless_search_waits_for_the_invalidations_a_victim_needs() {
        let (mut d, mut a, pages) = three_lines([5, 10, 0]);
        let l1 = d.geo().pages_per_line() as usize;
        a.policy.bg_free_lines = a.free_lines();
        let min = a.policy.bg_min_invalid;
        assert_eq!(min, 64);
        assert_eq!(a.background_gain(&d), Some(min));
        // Line 1 has 10 invalid pages of the 64 a victim needs: 54 more invalidations first.
        a.idle(&mut d, min, |_, _| false);
        for p in &pages[l1 + 10..l1 + 63] {
            d.invalidate(*p).unwrap();
            assert_eq!(a.background_gain(&d), None);
        }
        d.invalidate(pages[l1 + 63]).unwrap();
        assert_eq!(a.background_gain(&d), Some(min));
        // A line that closes (it may hold invalid pages already) ends the wait.
        a.idle(&mut d, 100, |_, _| false);
        assert_eq!(a.background_gain(&d), None);
        a.close(Stream::DATA);
        assert_eq!(a.background_gain(&d), Some(min));
    }

    #[test]
    fn invalidations_on_lines_that_do_not_need_them_leave_the_wait() {
        // Line 0 lacks 59 invalid pages of the 64 a victim needs, line 1 54, line 2 64: the
        // wait lasts until one of them alone has them, however many land elsewhere.
        let (mut d, mut a, pages) = three_lines([5, 10, 0]);
        let ppl = d.geo().pages_per_line() as usize;
        a.policy.bg_free_lines = a.free_lines();
        let min = a.policy.bg_min_invalid;
        a.idle(&mut d, min, |_, _| false);
        for p in pages[5..63].iter().chain(&pages[2 * ppl..2 * ppl + 63]) {
            d.invalidate(*p).unwrap();
            assert_eq!(a.background_gain(&d), None);
        }
        // Line 0 ranks first with 63 invalid pages; its 64th makes it a victim.
        assert_eq!(a.victim(&d), Some(0));
        d.invalidate(pages[63]).unwrap();
        assert_eq!(a.background_gain(&d), Some(min));
    }

    #[test]
    fn an_open_line_that_fills_ends_the_wait() {
        let (mut d, mut a, _) = three_lines([5, 10, 0]);
        a.policy.bg_free_lines = a.free_lines();
        let min = a.policy.bg_min_invalid;
        a.idle(&mut d, min, |_, room| room == 0);
        // Line 3, open with one page written, fills: LearnedFTL's reclaim may take it now.
        for _ in 2..d.geo().pages_per_line() {
            a.next_page(Stream::DATA).unwrap();
            assert_eq!(a.background_gain(&d), None);
        }
        a.next_page(Stream::DATA).unwrap();
        assert_eq!(a.background_gain(&d), Some(min));
    }

    proptest::proptest! {
        // Cheap cases, and a wrong wait shows only in some.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// The background memo and its wait never hide a victim: whenever `background_gain`
        /// answers `None`, a fresh search finds no first choice with the invalid pages a
        /// background victim needs, under either rule, as pages are written (opening blocks,
        /// so cost-benefit's ages move) and invalidated; with no open line among the candidates,
        /// full ones (`open` 1), or every one (`open` 2: LearnedFTL's reclaim under FDP), and
        /// wholly invalid ones always taken (LearnedFTL's reclaim) or not.
        #[test]
        fn the_background_wait_never_hides_a_victim(
            cost_benefit: bool,
            open in 0u8..3,
            writes in 1u8..100,
            ops in proptest::collection::vec((0u32..100_000, 0u8..100), 1..800),
        ) {
            let (mut d, mut a) = setup();
            if cost_benefit {
                a.policy.victim = VictimRule::CostBenefit;
            }
            (a.policy.fg_free_lines, a.policy.bg_free_lines) = (0, u32::MAX);
            let (ppl, min) = (d.geo().pages_per_line(), a.policy.bg_min_invalid);
            let mut live = Vec::new();
            let write = |d: &mut Device, a: &mut Allocator, live: &mut Vec<Ppa>| {
                let p = a.next_page(Stream::DATA).unwrap();
                let oob = Oob::data(Lpn(live.len() as u32), 1);
                d.program(p, oob, Src::None, Cause::User, SimTime(0)).unwrap();
                live.push(p);
            };
            for _ in 0..5 * ppl {
                write(&mut d, &mut a, &mut live);
            }
            // `writes` in 100 operations write, the others invalidate.
            for (pick, roll) in ops {
                if roll < writes {
                    // Up to a tenth of a line, so that lines fill (and stay full while open)
                    // between invalidations.
                    for _ in 0..=pick % (ppl / 10) {
                        write(&mut d, &mut a, &mut live);
                    }
                } else {
                    // Three times in four among the last line's worth written, mostly the
                    // open line's pages.
                    let (n, pick) = (live.len(), pick as usize);
                    let i = if pick % 4 == 0 {
                        pick % n
                    } else {
                        n - 1 - (pick / 4) % n.min(ppl as usize)
                    };
                    let p = live.swap_remove(i);
                    d.invalidate(p).unwrap();
                }
                // A fresh search over the candidates, as `lowest` or LearnedFTL's reclaim ranks.
                let candidates = (0..d.geo().lines()).filter(|&l| match a.state(l) {
                    LineState::Closed(_) => true,
                    LineState::Open(s) => open == 2 || (open == 1 && a.room(s) == 0),
                    LineState::Free => false,
                });
                let mut first: Option<(u32, u32)> = None;
                let mut empty = false;
                for l in candidates {
                    let v = d.line_valid(l);
                    empty |= open > 0 && v == 0;
                    if v < ppl && first.is_none_or(|b| a.better(&d, (l, v), b)) {
                        first = Some((l, v));
                    }
                }
                let found = empty || first.is_some_and(|(_, v)| ppl - v >= min);
                match a.background_gain(&d) {
                    None => proptest::prop_assert!(!found),
                    Some(m) => {
                        proptest::prop_assert_eq!(m, min);
                        if !found {
                            a.idle(&mut d, min, |_, room| open == 2 || (open == 1 && room == 0));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn cost_benefit_prefers_old_lines_to_young_emptier_ones() {
        // Line 0 (oldest) has 100 invalid pages of 512, line 2 (youngest) 150, line 1 none.
        let (d, mut a, _) = three_lines([100, 0, 150]);
        assert_eq!(a.victim(&d), Some(2), "greedy: fewest valid pages");
        a.policy.victim = VictimRule::CostBenefit;
        // Ages in blocks opened since each line's first block (8 blocks a line, 32 opened):
        // line 0's 31, line 2's 15, and 100 / 924 * 31 > 150 / 874 * 15.
        assert_eq!(a.victim(&d), Some(0));
        assert!(a.better(&d, (0, 412), (2, 362)));
        assert!(!a.better(&d, (2, 362), (0, 412)));
        assert_eq!(a.victim_where(&d, |l| l != 0), Some(2));
        // A line without an invalid page is never a victim, however old.
        assert_eq!(a.victim_where(&d, |l| l == 1), None);
        assert!(policy(&["gc_victim=cost-benefit"], 2).unwrap().victim == VictimRule::CostBenefit);
        refused(&["gc_victim=oldest"], 2, "gc_victim");
    }
}
