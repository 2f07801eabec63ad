//! Host workloads: closed-loop fio-style jobs ([`job`]), their random distributions ([`dist`]),
//! fio job files ([`fio`]), the open-loop request type trace replay feeds the engine, and the
//! schedule of a closed-loop replay of a recording ([`closed_loop`]).

use crate::addr::SimTime;
use crate::error::quote;
use crate::request::Op;

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
    /// A write's placement ID under Flexible Data Placement (docs/fdp.md; 0: the default
    /// handle).
    pub placement: u16,
}

/// Simulated idle time before a phase (SPEC §3.5, settled device): the FTL does the work it
/// owes an idle device — background GC up to its threshold, write-back of dirty mapping
/// entries, write-buffer flushes — as a phase of its own (`settle`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Settle {
    /// No idle time.
    Off,
    /// Idle until the FTL owes nothing.
    Auto,
    /// Idle for at most this many simulated ns: work is issued only inside it.
    For(u64),
}

impl std::str::FromStr for Settle {
    type Err = String;
    fn from_str(s: &str) -> Result<Settle, String> {
        match s.trim() {
            "auto" => Ok(Settle::Auto),
            "off" | "0" => Ok(Settle::Off),
            d => crate::params::parse_duration_ns(d)
                .map(Settle::For)
                .ok_or_else(|| format!("{} is not auto, off or a duration (e.g. 100ms)", quote(s))),
        }
    }
}

pub mod closed_loop;
pub mod dist;
pub mod fio;
pub mod job;

pub use dist::Dist;
pub use fio::Phase;
pub use job::{parse_plis, JobGen, JobSpec, Placement, PliSelect, RwKind};
