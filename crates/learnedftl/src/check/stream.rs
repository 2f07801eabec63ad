//! The host operation streams `check` drives: a seeded generator of everything a host does
//! (reads, writes, trims, flushes, FUA, write-zeroes; one sector to several MiB, aligned and
//! not; uniform, Zipf, hot/cold and sequential addresses; queue depths 1 to 64), and the
//! preconditioning that leaves the device full and fragmented.

use crate::device::Cause;
use crate::workload::dist::{BlockPicker, Dist};
use rand::Rng;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

/// The unit of every address and length: a 512-byte sector (NBD's smallest block).
pub const SECTOR: u64 = 512;

/// What a host operation does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Read and compare.
    Read,
    /// Write the operation's data.
    Write,
    /// Discard (whole pages inside the range read as zeroes afterwards).
    Trim,
    /// Make every completed write durable.
    Flush,
    /// Make the range read as zeroes; whole pages may be discarded.
    WriteZeroes,
    /// Make the range read as zeroes by writing zeroes (NBD's `NO_HOLE`).
    WriteZeroesNoHole,
}

impl Kind {
    /// Whether it changes data.
    pub fn writes(self) -> bool {
        !matches!(self, Kind::Read | Kind::Flush)
    }
}

/// One host operation of a stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostOp {
    /// What it does.
    pub kind: Kind,
    /// First byte (a multiple of [`SECTOR`]).
    pub offset: u64,
    /// Bytes (a multiple of [`SECTOR`]; 0 for a flush).
    pub len: u64,
    /// Force unit access: complete only once durable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fua: bool,
    /// Data identity of a write: every sector it writes holds bytes derived from this and the
    /// sector's number ([`super::model`]), so a wrong read names the write it came from.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub id: u32,
    /// Starts a new queue-depth batch: the operations of one batch are in flight together
    /// (none conflicts with another, so any order of service is correct).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new_batch: bool,
    /// A power cut armed before this operation: through the engine, where [`Cut`] says;
    /// through NBD, between the previous batch and this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
    /// A write's FDP placement ID, on a device with handles (docs/fdp.md).
    #[serde(default, skip_serializing_if = "is_zero_u16")]
    pub placement: u16,
}

fn is_zero_u16(x: &u16) -> bool {
    *x == 0
}

/// Where a power cut strikes in the service of its operation (through the engine).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cut {
    /// With the program or erase after this many others in flight.
    After(u32),
    /// With the `nth` (from 1) program or erase of one kind of flash work in flight (GC,
    /// translation write-back, a trim record, a checkpoint), in this operation's service or
    /// whichever later one does that work.
    At {
        /// The kind of work ([`Cause::key`]).
        cause: Cause,
        /// Which of its operations.
        nth: u32,
    },
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl HostOp {
    /// Whether two operations may not be in flight together: one changes a page the other
    /// touches (the byte path rewrites whole pages, so byte-disjoint writes to one page
    /// conflict too), or either is a flush (it orders what it makes durable).
    pub fn conflicts(&self, o: &HostOp, page_size: u64) -> bool {
        if self.kind == Kind::Flush || o.kind == Kind::Flush {
            return true;
        }
        if !self.kind.writes() && !o.kind.writes() {
            return false;
        }
        let pages = |x: &HostOp| (x.offset / page_size, (x.offset + x.len).div_ceil(page_size));
        let ((a0, a1), (b0, b1)) = (pages(self), pages(o));
        a0 < b1 && b0 < a1
    }
}

/// Splits `ops` into batches of operations in flight together: a batch starts at every
/// `new_batch`, at a cut, after a flush (which runs alone), and wherever an operation
/// conflicts with one already in the batch (so a shrunk stream keeps every batch free of
/// conflicts).
pub fn batches(ops: &[HostOp], page_size: u64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..ops.len() {
        let op = &ops[i];
        let split = i > start
            && (op.new_batch
                || op.cut.is_some()
                || ops[i - 1].kind == Kind::Flush
                || ops[start..i].iter().any(|o| o.conflicts(op, page_size)));
        if split {
            out.push(start..i);
            start = i;
        }
    }
    if start < ops.len() {
        out.push(start..ops.len());
    }
    out
}

/// How a stream is generated.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamSpec {
    /// Operations.
    pub ops: u64,
    /// Seed of every choice.
    pub seed: u64,
    /// One power cut per this many operations on average (0: none).
    pub cut_every: u64,
    /// FDP reclaim unit handles writes are placed on (0: none, writes untagged).
    pub handles: u16,
}

/// Address patterns a stretch of the stream follows.
#[derive(Copy, Clone, Debug)]
enum Pattern {
    Uniform,
    Zipf,
    HotCold,
    Sequential,
}

/// Operations per stretch of one pattern and queue depth.
const STRETCH: u64 = 997;

/// Operations generated at a time; each chunk starts a batch, so a stream run chunk by chunk
/// is batched exactly as the whole stream would be.
pub const CHUNK: u64 = 1 << 16;

/// The operations of `spec` on a logical space of `logical_bytes` in pages of `page_size`;
/// data identities start after `first_id`.
pub fn generate(
    spec: &StreamSpec,
    logical_bytes: u64,
    page_size: u64,
    first_id: u32,
) -> Vec<HostOp> {
    let mut g = Generator::new(spec, logical_bytes, page_size, first_id);
    let mut ops = Vec::new();
    while g.fill(&mut ops) {}
    ops
}

/// A stream generated chunk by chunk (a long check keeps one chunk in memory). The first `n`
/// operations do not depend on the stream's length.
pub struct Generator {
    gen: Gen,
    spec: StreamSpec,
    next: u64,
}

impl Generator {
    /// The generator of `spec`'s stream (see [`generate`]).
    pub fn new(spec: &StreamSpec, logical_bytes: u64, page_size: u64, first_id: u32) -> Self {
        Generator {
            gen: Gen::new(spec.seed, logical_bytes, page_size, first_id),
            spec: *spec,
            next: 0,
        }
    }

    /// A write's placement ID: by the region of the logical space its offset falls in three
    /// times in four (data of one handle stays together, as with placement by LBA range), any
    /// handle otherwise (an LPN changes handle). Drawn from the write's identity rather than
    /// the stream's generator, so the stream is the same with and without handles.
    fn placement(&self, op: &HostOp) -> u16 {
        let h = self.spec.handles as u64;
        let r = crate::seed::mix(self.spec.seed, op.id as u64, 0xfd);
        if r % 4 < 3 {
            (op.offset * h / self.gen.sectors.max(1) / SECTOR).min(h - 1) as u16
        } else {
            ((r >> 8) % h) as u16
        }
    }

    /// Index of the next operation.
    pub fn position(&self) -> u64 {
        self.next
    }

    /// Appends the next chunk (up to [`CHUNK`] operations) to `out`; false once the stream is
    /// over.
    pub fn fill(&mut self, out: &mut Vec<HostOp>) -> bool {
        let end = (self.next + CHUNK).min(self.spec.ops);
        if self.next == end {
            return false;
        }
        for i in self.next..end {
            let mut op = self.gen.next(i, self.spec.cut_every);
            op.new_batch |= i % CHUNK == 0;
            if op.kind == Kind::Write && self.spec.handles > 0 {
                op.placement = self.placement(&op);
            }
            out.push(op);
        }
        self.next = end;
        true
    }
}

/// The stream generator's state.
struct Gen {
    rng: Pcg64Mcg,
    sectors: u64,
    page_sectors: u64,
    next_id: u32,
    pattern: Pattern,
    qd: u32,
    /// Flushes per thousand operations in this stretch (FUA on twice as many writes).
    durable_per_mille: u32,
    /// A power cut drawn and not yet attached to an operation.
    cut_pending: bool,
    in_batch: u32,
    zipf: BlockPicker,
    cursor: u64,
}

impl Gen {
    fn new(seed: u64, logical_bytes: u64, page_size: u64, first_id: u32) -> Gen {
        let mut rng = Pcg64Mcg::seed_from_u64(crate::seed::mix(seed, 0xC4EC, 0));
        let pages = logical_bytes / page_size;
        let zipf = BlockPicker::new(pages, Dist::Zipf { theta: 1.1 }, false, &mut rng);
        Gen {
            rng,
            sectors: logical_bytes / SECTOR,
            page_sectors: page_size / SECTOR,
            next_id: first_id,
            pattern: Pattern::Uniform,
            qd: 1,
            durable_per_mille: 0,
            cut_pending: false,
            in_batch: 0,
            zipf,
            cursor: 0,
        }
    }

    fn next(&mut self, i: u64, cut_every: u64) -> HostOp {
        if i % STRETCH == 0 {
            self.pattern = match self.rng.gen_range(0..4) {
                0 => Pattern::Uniform,
                1 => Pattern::Zipf,
                2 => Pattern::HotCold,
                _ => Pattern::Sequential,
            };
            self.qd = 1 << self.rng.gen_range(0..7);
            // Half the stretches never flush, so volatile write buffers fill and flush in the
            // middle of writes (LeaFTL's 2,048 pages take about two such stretches).
            self.durable_per_mille = [0, 0, 3, 30][self.rng.gen_range(0..4)];
        }
        let flush = self.durable_per_mille;
        let kind = match self.rng.gen_range(0..1000) {
            k if k < flush => Kind::Flush,
            k if k < 450 => Kind::Read,
            k if k < 860 => Kind::Write,
            k if k < 930 => Kind::Trim,
            k if k < 965 => Kind::WriteZeroes,
            _ => Kind::WriteZeroesNoHole,
        };
        self.in_batch += 1;
        let new_batch = self.in_batch > self.qd || kind == Kind::Flush;
        if new_batch {
            self.in_batch = 1;
        }
        // A cut drawn on a read waits for the next operation that programs flash (a read
        // rarely does), so cuts strike inside flash work rather than between operations.
        self.cut_pending |= cut_every > 0 && self.rng.gen_range(0..cut_every) == 0;
        let cut_here = self.cut_pending && kind != Kind::Read;
        self.cut_pending &= !cut_here;
        if kind == Kind::Flush {
            // Inside a write buffer's flush, if there is one.
            let cut = cut_here.then(|| Cut::After(self.rng.gen_range(0..64)));
            return HostOp {
                placement: 0,
                kind,
                offset: 0,
                len: 0,
                fua: false,
                id: 0,
                new_batch,
                cut,
            };
        }
        let len = self.length().min(self.sectors);
        let start = self.start(len);
        // Four in nine cuts among the operation's own programs (about two per page it
        // touches, with the GC and write-backs they cause; now and then deeper), the others at
        // a kind of flash work whenever it next happens.
        let pages = (len.div_ceil(self.page_sectors) + 1) as u32;
        let cut = cut_here.then(|| match self.rng.gen_range(0..9) {
            0 => Cut::After(self.rng.gen_range(0..64 * pages)),
            1..=3 => Cut::After(self.rng.gen_range(0..2 * pages + 2)),
            k => {
                let (cause, most) = match k {
                    4 => (Cause::GcData, 64),
                    5 => (Cause::TransWrite, 4),
                    6 => (Cause::GcTrans, 4),
                    // Host data: inside a buffered FTL's next buffer flush.
                    7 => (Cause::User, 64),
                    _ if kind != Kind::Write => (Cause::TrimRecord, 1),
                    _ => (Cause::Checkpoint, 8),
                };
                let nth = self.rng.gen_range(1..=most);
                Cut::At { cause, nth }
            }
        });
        let id = if kind == Kind::Write {
            self.next_id = self.next_id.checked_add(1).unwrap_or(1);
            self.next_id
        } else {
            0
        };
        HostOp {
            kind,
            offset: start * SECTOR,
            len: len * SECTOR,
            fua: kind.writes() && self.rng.gen_range(0..1000) < 2 * flush,
            id,
            new_batch,
            cut,
            placement: 0,
        }
    }

    /// A length in sectors: mostly one sector to a page, sometimes a few pages, rarely up to a
    /// MiB and very rarely several MiB.
    fn length(&mut self) -> u64 {
        let ps = self.page_sectors;
        match self.rng.gen_range(0..10_000) {
            0..=4999 => self.rng.gen_range(1..=ps),
            5000..=9449 => ps * self.rng.gen_range(1..=4),
            9450..=9964 => self.rng.gen_range(ps..=16 * ps),
            9965..=9996 => self.rng.gen_range(16 * ps..=2048),
            _ => self.rng.gen_range(2048..=8192),
        }
    }

    /// The first sector of an operation of `len` sectors; half of them page-aligned.
    fn start(&mut self, len: u64) -> u64 {
        let ps = self.page_sectors;
        let pages = self.sectors / ps;
        let page = match self.pattern {
            Pattern::Uniform => self.rng.gen_range(0..pages),
            Pattern::Zipf => self.zipf.next(&mut self.rng),
            // 90 % of the operations on the first 10 % of the space.
            Pattern::HotCold => {
                let hot = (pages / 10).max(1);
                if self.rng.gen_range(0..10) < 9 {
                    self.rng.gen_range(0..hot)
                } else {
                    self.rng.gen_range(0..pages)
                }
            }
            Pattern::Sequential => {
                let p = self.cursor / ps;
                self.cursor += len;
                if self.cursor >= self.sectors {
                    self.cursor = 0;
                }
                p
            }
        };
        let within = if self.rng.gen_bool(0.5) {
            0
        } else {
            self.rng.gen_range(0..ps)
        };
        (page * ps + within).min(self.sectors - len)
    }
}

/// The preconditioning: the whole logical space written sequentially in 1 MiB writes, then
/// as much again in random 64–256 KiB writes, so the device is full, fragmented, and
/// collecting garbage from the first checked operation on; then a flush. Identities from `1`.
pub fn precondition(seed: u64, logical_bytes: u64, page_size: u64) -> Vec<HostOp> {
    let mut rng = Pcg64Mcg::seed_from_u64(crate::seed::mix(seed, 0xF111, 0));
    let mut ops = Vec::new();
    let mut id = 0u32;
    let mut push = |offset: u64, len: u64, new_batch: bool| {
        id += 1;
        ops.push(HostOp {
            placement: 0,
            kind: Kind::Write,
            offset,
            len,
            fua: false,
            id,
            new_batch,
            cut: None,
        });
    };
    let chunk = (1u64 << 20).max(page_size);
    let mut at = 0;
    while at < logical_bytes {
        let len = chunk.min(logical_bytes - at);
        push(at, len, true);
        at += len;
    }
    let pages = logical_bytes / page_size;
    let mut written = 0;
    let mut n = 0u32;
    while written < logical_bytes {
        let len = (rng.gen_range(16..=64u64) * 4096 / page_size).clamp(1, pages) * page_size;
        let start = rng.gen_range(0..=pages - len / page_size) * page_size;
        push(start, len, n % 8 == 0);
        n += 1;
        written += len;
    }
    // Durable, as a host leaves a device it filled: no write of it is in a volatile buffer.
    ops.push(HostOp {
        placement: 0,
        kind: Kind::Flush,
        offset: 0,
        len: 0,
        fua: false,
        id: 0,
        new_batch: true,
        cut: None,
    });
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_seeded_sector_aligned_in_range_and_cover_every_kind() {
        let spec = StreamSpec {
            ops: 20_000,
            seed: 3,
            cut_every: 100,
            handles: 0,
        };
        let lb = 120 << 20;
        let a = generate(&spec, lb, 4096, 10);
        assert_eq!(a, generate(&spec, lb, 4096, 10));
        assert_ne!(a, generate(&StreamSpec { seed: 4, ..spec }, lb, 4096, 10));
        for k in [
            Kind::Read,
            Kind::Write,
            Kind::Trim,
            Kind::Flush,
            Kind::WriteZeroes,
            Kind::WriteZeroesNoHole,
        ] {
            assert!(a.iter().any(|o| o.kind == k), "{k:?}");
        }
        for o in &a {
            assert!(o.offset % SECTOR == 0 && o.len % SECTOR == 0 && o.offset + o.len <= lb);
            assert_eq!(o.kind == Kind::Flush, o.len == 0);
        }
        assert!(a.iter().any(|o| o.len == SECTOR), "single sectors");
        assert!(a.iter().any(|o| o.len > 1 << 20), "several MiB");
        assert!(a.iter().any(|o| o.offset % 4096 != 0), "unaligned");
        assert!(a.iter().any(|o| o.fua));
        assert!(a.iter().filter(|o| o.cut.is_some()).count() > 100);
        let b = batches(&a, 4096);
        assert!(b.iter().any(|r| r.len() >= 32), "deep queues");
        for r in b {
            let ops = &a[r];
            for (i, x) in ops.iter().enumerate() {
                assert!(
                    ops[..i].iter().all(|y| !y.conflicts(x, 4096)),
                    "no conflicts"
                );
            }
        }
    }

    #[test]
    fn preconditioning_writes_everything_then_as_much_again() {
        let lb = 120 << 20;
        let p = precondition(1, lb, 4096);
        let total: u64 = p.iter().map(|o| o.len).sum();
        assert_eq!(p.last().unwrap().kind, Kind::Flush);
        assert!(total >= 2 * lb && total < 2 * lb + (1 << 20));
        assert!(p
            .iter()
            .all(|o| o.offset + o.len <= lb && o.offset % 4096 == 0));
    }
}
