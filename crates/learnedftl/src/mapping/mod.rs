//! Machinery shared by the FTLs: line allocation through striped write pointers, the free-line
//! list, greedy victim choice and line garbage collection (SPEC §3.5), and translation pages
//! with their directory (SPEC §5.0).

pub mod alloc;
pub mod budget;
pub mod gc;
pub mod gtd;
pub mod lru;

pub use alloc::{Allocator, GcPolicy, LineState, Stream};
pub use gc::{GcHooks, GcOrder, GcOutcome};
pub use gtd::Gtd;
pub use lru::ByteLru;
