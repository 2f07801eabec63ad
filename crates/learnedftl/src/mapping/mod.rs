//! Machinery shared by the FTLs: line allocation through striped write pointers, the free-line
//! list, greedy victim choice and line garbage collection (SPEC §3.5); per-block allocation
//! (free blocks per LUN plane, copies and padding) for block-mapped and hybrid FTLs;
//! translation pages with their directory and the translation table of demand-based FTLs (SPEC
//! §5.0); the mapping DRAM budget and the credit that bounds optional flash work; dense bit
//! sets; hash tables of the few LPNs held at once; intrusive LRU lists and TPFTL's two-level
//! mapping cache, reused by LearnedFTL; bit-packed tables and hash families for hash-based
//! mappings (HP-FTL); checks and prefetch hints for page-level maps; the recovery scan after a
//! power cut; and the counters every FTL keeps, which this machinery counts into.

pub mod alloc;
pub mod bits;
pub mod blocks;
pub mod budget;
pub mod credit;
pub mod dirty_queue;
pub mod gc;
pub mod gtd;
pub mod hash;
pub mod keyed;
pub mod lru;
pub mod packed;
pub mod page_map;
pub mod radix;
pub mod recovery;
pub mod stats;
pub mod table;
pub mod tpcache;
pub mod trims;

pub use alloc::{Allocator, GcPolicy, GcRule, LineState, Stream, VictimRule};
pub use bits::Bits;
pub use blocks::BlockPool;
pub use budget::Budget;
pub use credit::Credit;
pub use gc::{GcHooks, GcOrder, GcOutcome};
pub use gtd::Gtd;
pub use hash::{HashFamily, HashKind};
pub use packed::PackedVec;
pub use page_map::{check_page_map, prefetch_page_map};
pub use stats::FtlStats;
pub use table::{write_tp, HasTable, TransTable, WriteBack};
pub use tpcache::{Evicted, Lookup, TpCache, TpCacheConfig, TpCacheStats};
pub use trims::persist_trim;
