//! Typed addresses and simulated time.
//!
//! * [`Lpn`]: logical page number, the host's address in pages.
//! * [`Ppa`]: physical page address, a flat index ordered channel (most significant), LUN, plane,
//!   block, page (SPEC §3.2).
//! * [`Vppn`]: virtual physical page number, the same page numbered in allocation order: channel
//!   fastest, then LUN, plane, page, block. Consecutive VPPNs inside a line are what the striped
//!   write pointer hands out.
//! * [`Tpn`]: translation page number (which slice of the logical space a translation page maps).
//! * [`SimTime`]: simulated time in nanoseconds.

use serde::Serialize;
use std::fmt;

macro_rules! newtype {
    ($(#[$doc:meta])* $name:ident, $inner:ty) => {
        $(#[$doc])*
        #[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
        pub struct $name(pub $inner);

        impl $name {
            /// The raw number, as an array index.
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

newtype!(
    /// Logical page number.
    Lpn,
    u32
);
newtype!(
    /// Physical page address (flat index: channel, LUN, plane, block, page).
    Ppa,
    u32
);
newtype!(
    /// Virtual physical page number (allocation order: channel, LUN, plane, page, block).
    Vppn,
    u32
);
newtype!(
    /// Translation page number: TP `t` maps LPNs `[t * entries_per_tp, (t + 1) * entries_per_tp)`.
    Tpn,
    u32
);
newtype!(
    /// Simulated time in nanoseconds since the start of the run.
    SimTime,
    u64
);

impl SimTime {
    /// Time zero.
    pub const ZERO: SimTime = SimTime(0);

    /// `self + ns`.
    #[inline]
    pub fn after(self, ns: u64) -> SimTime {
        SimTime(self.0 + ns)
    }

    /// Nanoseconds from `earlier` to `self` (zero if `earlier` is later).
    #[inline]
    pub fn since(self, earlier: SimTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Seconds as a float, for reports.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

/// The parts of a physical page address.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct PpaParts {
    /// Channel.
    pub ch: u32,
    /// LUN (die) within the channel.
    pub lun: u32,
    /// Plane within the LUN.
    pub pl: u32,
    /// Block within the plane (equals the line number).
    pub blk: u32,
    /// Page within the block.
    pub pg: u32,
}
