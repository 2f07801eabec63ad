//! Machinery shared by the FTLs: line allocation through striped write pointers, the free-line
//! list, greedy victim choice and line garbage collection (SPEC §3.5).

pub mod alloc;
pub mod gc;

pub use alloc::{Allocator, GcPolicy, LineState, Stream};
pub use gc::{GcHooks, GcOutcome};
