//! Host workloads: closed-loop fio-style jobs ([`job`]), their random distributions ([`dist`]),
//! fio job files ([`fio`]), and the open-loop request type trace replay feeds the engine.

use crate::addr::SimTime;
use crate::ftl::Op;

/// One host I/O in bytes, as a workload produces it. The engine turns it into a page request
/// covering every page the byte range touches.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HostIo {
    /// When it arrives (open loop) or is issued (closed loop).
    pub arrival: SimTime,
    /// Operation.
    pub op: Op,
    /// Byte offset in the logical space.
    pub offset: u64,
    /// Length in bytes (0 for flush).
    pub len: u64,
}

pub mod dist;
pub mod fio;
pub mod job;

pub use dist::Dist;
pub use fio::Phase;
pub use job::{JobGen, JobSpec, RwKind};
