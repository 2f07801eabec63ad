//! μ-FTL on `tiny`: extents, their splits, node reads, and the bitmap cache.

use super::*;
use crate::ftl::NullSink;

fn setup(kv: &[&str]) -> (Device, MuFtl) {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut p = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let f = MuFtl::new(&cfg, &mut p).unwrap();
    p.finish().unwrap();
    (Device::new(&cfg), f)
}

fn submit(f: &mut MuFtl, d: &mut Device, op: Op, lpn: u32, pages: u32) -> SimTime {
    let done = f
        .submit(d, &Request::new(op, lpn, pages, 0, 1), &mut NullSink)
        .unwrap();
    f.check_invariants(d).unwrap();
    done
}

fn extents(f: &MuFtl) -> Vec<(u32, u32)> {
    f.core.tree.extents_iter().map(|e| (e.lpn, e.len)).collect()
}

#[test]
fn a_write_is_one_extent_and_a_partial_overwrite_splits_it() {
    let (mut d, mut f) = setup(&["cmt_ratio=0.5"]);
    submit(&mut f, &mut d, Op::Write, 100, 64);
    assert_eq!(extents(&f), vec![(100, 64)]);
    assert_eq!(f.core.tree.height(), 1);
    // Four pages in the middle: the extent splits around them; the new pages are one extent.
    submit(&mut f, &mut d, Op::Write, 120, 4);
    assert_eq!(extents(&f), vec![(100, 20), (120, 4), (124, 40)]);
    assert_eq!(f.core.stats.extent_splits, 1);
    // A trim at the edge shortens an extent without splitting it.
    submit(&mut f, &mut d, Op::Trim, 100, 2);
    assert_eq!(extents(&f)[0], (102, 18));
    assert_eq!(f.core.stats.extent_splits, 1);
    // Reads: one lookup per extent touched, all cached (no node reads): single reads.
    submit(&mut f, &mut d, Op::Read, 100, 30);
    assert_eq!(f.stats().lookups, [2, 28, 0, 0]);
    assert_eq!(d.counters().reads[Cause::TransRead as usize], 0);
}

#[test]
fn an_uncached_leaf_costs_a_node_read_before_the_data_read() {
    // A node cache of one leaf: 2 KiB of budget after the counters, bitmap cache and
    // directory.
    let (mut d, mut f) = setup(&["mapping_dram_bytes=8k"]);
    // 171 single-page extents (every other LPN) overflow one leaf (170): height 2.
    for i in 0..171 {
        submit(&mut f, &mut d, Op::Write, i * 2, 1);
    }
    assert_eq!(f.core.tree.height(), 2);
    assert_eq!(f.core.tree.leaves(), 2);
    // Idle write-back leaves nothing dirty: every node is on flash.
    while f.idle(&mut d, SimTime(0)).unwrap().is_some() {}
    f.check_invariants(&d).unwrap();
    assert_eq!(f.core.nodes.dirty_count, 0);
    // Drop the cache: a lookup now reads the root's page, then the leaf's.
    for n in 0..f.core.tree.arena() as u32 {
        f.core.nodes.drop_id(n);
    }
    let before = d.counters().reads[Cause::TransRead as usize];
    let done = submit(&mut f, &mut d, Op::Read, 0, 1);
    let node_reads = d.counters().reads[Cause::TransRead as usize] - before;
    assert!((1..=2).contains(&node_reads), "{node_reads}");
    assert_eq!(f.stats().lookups[1 + node_reads as usize], 1);
    // Dependent reads on the LUN timelines: the data read starts after the node reads.
    assert!(done.0 >= 40_000 * (1 + node_reads), "{done:?}");
}

#[test]
fn bad_settings_are_named() {
    let cfg = DeviceConfig::preset("tiny").unwrap();
    for (kv, key) in [
        ("partitions=0", "partitions"),
        ("partitions=9", "partitions"),
        ("mapping_dram_bytes=5k", "mapping_dram_bytes"),
        ("bitmap_cache_bytes=lots", "bitmap_cache_bytes"),
    ] {
        let mut p = Params::from_assignments([kv], "test").unwrap();
        let e = MuFtl::new(&cfg, &mut p).err().unwrap().to_string();
        assert!(e.contains(key), "{kv}: {e}");
    }
}
