//! Exact counts on `tiny`: 8 LUNs of one plane, each 64 blocks of 64 pages (512 blocks);
//! 30,720 logical pages make 480 logical blocks, leaving 32 spare blocks. LPN `lbn·64 + k` is
//! offset `k` of logical block `lbn`.

use super::*;
use crate::device::PowerCut;
use crate::error::DeviceError;
use crate::ftl::NullSink;

fn setup(kv: &[&str]) -> (DeviceConfig, Device, Blockmap) {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut p = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let f = Blockmap::new(&cfg, &mut p).unwrap();
    p.finish().unwrap();
    (cfg.clone(), Device::new(&cfg), f)
}

/// Serves `op` on `pages` pages from `lpn` with write stamp `stamp`, checking the invariants
/// after; returns the completion.
fn submit(f: &mut Blockmap, d: &mut Device, op: Op, lpn: u32, pages: u32, stamp: u32) -> u64 {
    let r = Request::new(op, lpn, pages, 0, stamp);
    let done = f.submit(d, &r, &mut NullSink).unwrap();
    f.check_invariants(d).unwrap();
    done.0
}

fn write(f: &mut Blockmap, d: &mut Device, lpn: u32, pages: u32, stamp: u32) {
    submit(f, d, Op::Write, lpn, pages, stamp);
}

/// The stamp each of `lpns` reads (0: unmapped).
fn stamps(f: &Blockmap, d: &Device, lpns: std::ops::Range<u32>) -> Vec<u32> {
    lpns.map(|l| {
        f.lookup(d, Lpn(l))
            .map_or(0, |p| d.peek_oob(p).unwrap().stamp)
    })
    .collect()
}

/// Programs, reads and erases of the device, by cause `(total, user, gc_data, recovery)`.
fn ops(d: &Device) -> ([u64; 4], [u64; 4], [u64; 4]) {
    let c = d.counters();
    let by = |a: &[u64; Cause::COUNT]| {
        [
            a.iter().sum(),
            a[Cause::User as usize],
            a[Cause::GcData as usize],
            a[Cause::Recovery as usize],
        ]
    };
    (by(&c.programs), by(&c.reads), by(&c.erases))
}

/// The whole logical space written in order, 128 pages (two logical blocks) a request.
fn fill(f: &mut Blockmap, d: &mut Device, stamp: u32) {
    for l in (0..f.lp).step_by(128) {
        write(f, d, l, 128.min(f.lp - l), stamp);
    }
}

#[test]
fn waf_is_pages_per_block_for_random_page_overwrites_and_one_for_whole_blocks() {
    let (_, mut d, mut f) = setup(&[]);
    assert_eq!((f.ppb, f.map.len(), f.spare), (64, 480, 32));
    // A sequential fill writes every logical block whole, in place: nothing copied or padded.
    fill(&mut f, &mut d, 1);
    assert_eq!(ops(&d).0, [30_720, 30_720, 0, 0]);
    assert_eq!(f.counters.in_place_pages, 30_720);
    d.reset_counters();
    f.reset_stats();
    // Random 4 KiB overwrites. Every block is full (write pointer 64), so every page written
    // is below its block's write pointer: a merge that programs the new page and copies the
    // block's 63 other valid pages, then erases the old block. Nothing is padded (every
    // offset holds data). So each host page costs exactly 64 programs (WAF = pages per block =
    // 64), 63 reads and one erase.
    let n = 3000u64;
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = Request::new(Op::Write, (x % 30_720) as u32, 1, 0, 2 + i as u32);
        f.submit(&mut d, &r, &mut NullSink).unwrap();
    }
    f.check_invariants(&d).unwrap();
    let (programs, reads, erases) = ops(&d);
    assert_eq!(programs, [64 * n, n, 63 * n, 0]);
    assert_eq!((reads[0], reads[2]), (63 * n, 63 * n));
    assert_eq!(erases[0], n);
    assert_eq!(programs[0] as f64 / n as f64, 64.0);
    let c = &f.counters;
    assert_eq!(
        (c.write_merges, c.merge_copies, c.pad_pages),
        (n, 63 * n, 0)
    );
    assert_eq!((f.stats.gc_events, f.stats.gc_pages_moved), (n, 63 * n));
    d.reset_counters();
    f.reset_stats();
    // Sequential writes of whole logical blocks (64 pages at offset 0): each replaces its block
    // by a merge that copies nothing; WAF 1, one erase per logical block.
    for l in (0..f.lp).step_by(64) {
        write(&mut f, &mut d, l, 64, 9000);
    }
    let (programs, reads, erases) = ops(&d);
    assert_eq!(programs, [30_720, 30_720, 0, 0]);
    assert_eq!((reads[0], erases[0]), (0, 480));
    assert_eq!(f.counters.merge_copies, 0);
}

#[test]
fn runs_at_the_write_pointer_go_in_place_others_merge_once_per_request() {
    let (_, mut d, mut f) = setup(&[]);
    // Offset 5 of a logical block with no block: offsets 0–4 padded, 5 in place.
    write(&mut f, &mut d, 5, 1, 1);
    let b = f.map[0];
    assert_eq!((f.counters.pad_pages, f.counters.in_place_pages), (5, 1));
    // Offset 10: at or above the write pointer (6), in place after padding 6–9.
    write(&mut f, &mut d, 10, 1, 2);
    assert_eq!((f.map[0], f.counters.pad_pages), (b, 9));
    // Offsets 2–4 are below the write pointer: one merge for the three pages. Offsets 0–1 and
    // 6–9 hold no data below the last one that does (10): padded; 5 and 10 copied.
    write(&mut f, &mut d, 2, 3, 3);
    let c = &f.counters;
    assert_eq!((c.write_merges, c.merged_pages, c.merge_copies), (1, 3, 2));
    assert_eq!(c.pad_pages, 9 + 6);
    assert_ne!(f.map[0], b);
    assert_eq!(d.block_written(b), 0);
    assert_eq!(ops(&d).2[0], 1);
    assert_eq!(stamps(&f, &d, 0..12), [0, 0, 3, 3, 3, 1, 0, 0, 0, 0, 2, 0]);
    // A request over two logical blocks: offsets 60–63 of the first in place (after padding
    // 11–59), offsets 0–5 of the second in a block of its own.
    write(&mut f, &mut d, 60, 10, 4);
    assert_eq!(f.counters.pad_pages, 15 + 49);
    assert_eq!(f.counters.write_merges, 1);
    assert_ne!(f.map[1], NONE);
    assert_eq!(
        stamps(&f, &d, 58..72),
        [0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0]
    );
    // Eight pages inside a full logical block: one merge, 56 copies, 64 programs, one erase.
    write(&mut f, &mut d, 128, 64, 5);
    d.reset_counters();
    write(&mut f, &mut d, 138, 8, 6);
    let (programs, _, erases) = ops(&d);
    assert_eq!(
        (programs[0], programs[1], programs[2], erases[0]),
        (64, 8, 56, 1)
    );
}

#[test]
fn trims_rewrite_the_block_without_the_trimmed_pages() {
    let (_, mut d, mut f) = setup(&[]);
    write(&mut f, &mut d, 0, 128, 1);
    // Offsets 10–19 of logical block 0: a merge copying the 54 others; 10–19 padded (below the
    // last page with data), then the old block erased before the trim completes.
    let done = submit(&mut f, &mut d, Op::Trim, 10, 10, 2);
    let (programs, _, erases) = ops(&d);
    assert_eq!((programs[2], erases[0]), (54 + 10, 1));
    assert_eq!(f.counters.trim_merges, 1);
    assert!(done >= d.config().timing.erase_ns);
    assert_eq!(
        stamps(&f, &d, 8..22).iter().filter(|&&s| s == 0).count(),
        10
    );
    // The rest of the logical block: nothing left, so its block is erased and no block taken.
    submit(&mut f, &mut d, Op::Trim, 0, 64, 3);
    assert_eq!((f.counters.trim_erases, f.map[0]), (1, NONE));
    assert_eq!(ops(&d).2[0], 2);
    // Trimming pages that hold no data costs nothing.
    let before = d.counters().clone();
    assert_eq!(submit(&mut f, &mut d, Op::Trim, 0, 64, 4), 0);
    assert_eq!(d.counters(), &before);
    // The tail of logical block 1: its 60 other pages copied, nothing padded; the new block's
    // write pointer is 60, so a write to offset 62 goes in place after padding 60–61.
    submit(&mut f, &mut d, Op::Trim, 124, 4, 5);
    assert_eq!(f.counters.merge_copies, 54 + 60);
    let b = f.map[1];
    assert_eq!(d.block_written(b), 60);
    write(&mut f, &mut d, 126, 1, 6);
    assert_eq!((f.map[1], d.block_written(b)), (b, 63));
    assert_eq!(stamps(&f, &d, 123..128), [1, 0, 0, 6, 0]);
}

#[test]
fn blocks_rotate_over_the_planes_or_merge_on_their_own() {
    let (_, mut d, mut f) = setup(&[]);
    // Logical blocks written one after another get blocks on the units in stripe order.
    write(&mut f, &mut d, 0, 64 * 8, 1);
    let units: Vec<u32> = (0..8).map(|l| f.pool.unit_of(f.map[l])).collect();
    let order: Vec<u32> = (0..8).map(|s| f.pool.unit_at(s)).collect();
    assert_eq!(units, order);
    // A merge takes the next unit in turn.
    write(&mut f, &mut d, 3, 1, 2);
    assert_eq!(f.pool.unit_of(f.map[0]), f.pool.unit_at(0));
    let (_, mut d, mut f) = setup(&["place=plane"]);
    write(&mut f, &mut d, 0, 64 * 8, 1);
    let u = f.pool.unit_of(f.map[3]);
    write(&mut f, &mut d, 3 * 64 + 5, 1, 2);
    assert_eq!(f.pool.unit_of(f.map[3]), u);
    assert_eq!(f.params()["place"], "plane");
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut p = Params::from_assignments(["place=lun"], "test").unwrap();
    let e = Blockmap::new(&cfg, &mut p).err().unwrap().to_string();
    assert!(e.contains("place") && e.contains("rotate or plane"), "{e}");
}

/// Logical block 0 written whole at stamp 1 and offset 30 rewritten at stamp 2, the power cut
/// at the `nth` `gc_data` program or erase of that merge (offsets 0–29 copied, then the new
/// page, 31–63 copied, then the old block's erase); then recovered. Returns the device, the
/// FTL, the old block and the merge's destination.
fn cut_merge(nth: u64) -> (Device, Blockmap, u32, u32) {
    let (cfg, mut d, mut f) = setup(&[]);
    write(&mut f, &mut d, 0, 64, 1);
    let old = f.map[0];
    let dst = f.pool.clone().take_next().unwrap();
    d.reset_counters();
    d.arm_power_cut(PowerCut::AtCause {
        cause: Cause::GcData,
        nth,
    });
    let r = Request::new(Op::Write, 30, 1, 0, 2);
    let e = f.submit(&mut d, &r, &mut NullSink).err().unwrap();
    assert_eq!(e, FtlError::Device(DeviceError::PowerLost));
    d.power_on();
    let (f, _) = Blockmap::recover(&cfg, &mut Params::new(), &mut d, SimTime(0)).unwrap();
    f.check_invariants(&d).unwrap();
    (d, f, old, dst)
}

#[test]
fn a_merge_cut_before_its_new_page_keeps_the_old_block() {
    // The 10th copy torn: the destination holds copies 0–8 only; the old block holds every
    // newest version (the copies' stamps equal the originals').
    let (d, f, old, dst) = cut_merge(10);
    assert_eq!(f.map[0], old);
    assert_eq!(stamps(&f, &d, 0..64), vec![1; 64]);
    assert_eq!(ops(&d).0[3], 0);
    assert_eq!(d.block_written(dst), 0);
}

#[test]
fn a_merge_cut_after_its_new_page_is_rebuilt_or_kept_whole() {
    // The 40th copy (offset 40) torn: the new page 30 is only in the destination, offset 40's
    // version only in the old block, which no block can take any more: rebuilt in a third
    // block (64 programs), both others erased.
    let (d, f, old, dst) = cut_merge(40);
    assert!(f.map[0] != old && f.map[0] != dst);
    let mut want = vec![1; 64];
    want[30] = 2;
    assert_eq!(stamps(&f, &d, 0..64), want);
    // Recovery read the 64 + 41 programmed pages (the torn one too), then the 64 it copied.
    let (programs, reads, erases) = ops(&d);
    assert_eq!((programs[3], reads[3], erases[3]), (64, 105 + 64, 2));
    assert_eq!((d.block_written(old), d.block_written(dst)), (0, 0));
    // The 64th gc_data operation is the erase of the old block: the destination is whole.
    let (d, f, old, dst) = cut_merge(64);
    assert_eq!(f.map[0], dst);
    assert_eq!(stamps(&f, &d, 0..64), want);
    assert_eq!(
        (ops(&d).0[3], ops(&d).2[3], d.block_written(old)),
        (0, 1, 0)
    );
}

#[test]
fn a_merge_cut_at_a_padding_page_is_completed() {
    let (cfg, mut d, mut f) = setup(&[]);
    // Offsets 0–3 at stamp 1, offset 9 at stamp 2 (4–8 padded).
    write(&mut f, &mut d, 0, 4, 1);
    write(&mut f, &mut d, 9, 1, 2);
    let old = f.map[0];
    // Offset 2 at stamp 3: a merge copying 0, 1, 3 and 9 and padding 4–8; the cut tears the
    // padding page at offset 6 (the 6th gc_data program: copies 0, 1, 3, pads 4, 5, 6).
    d.arm_power_cut(PowerCut::AtCause {
        cause: Cause::GcData,
        nth: 6,
    });
    let r = Request::new(Op::Write, 2, 1, 0, 3);
    assert!(f.submit(&mut d, &r, &mut NullSink).is_err());
    d.power_on();
    d.reset_counters();
    let (f, _) = Blockmap::recover(&cfg, &mut Params::new(), &mut d, SimTime(0)).unwrap();
    f.check_invariants(&d).unwrap();
    // The destination holds every newest version below its write pointer (7): completed with
    // padding at 7–8 and a copy of offset 9, the old block erased.
    assert_ne!(f.map[0], old);
    assert_eq!(d.block_written(f.map[0]), 10);
    assert_eq!(stamps(&f, &d, 0..11), [1, 1, 3, 1, 0, 0, 0, 0, 0, 2, 0]);
    let (programs, reads, erases) = ops(&d);
    assert_eq!((programs[3], erases[3], d.block_written(old)), (3, 1, 0));
    // The scan read every programmed page (10 + 7), the completion one copy.
    assert_eq!(reads[3], 17 + 1);
}
