//! The host request, the unit every layer from the workloads down to the mapping machinery
//! speaks: what to do ([`Op`]) on which pages ([`Request`]), and how soon a request hinted ahead
//! of time will be served ([`Upcoming`]). It lives below the FTLs because the shared mapping
//! machinery serves requests too.

use crate::addr::{Lpn, SimTime};
use serde::Serialize;

/// A host operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Read pages.
    Read,
    /// Write pages.
    Write,
    /// Discard pages (their data is gone; reads return unmapped).
    Trim,
    /// Make buffered writes durable.
    Flush,
}

/// A host request over whole pages.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// What to do.
    pub op: Op,
    /// First page.
    pub lpn: Lpn,
    /// Number of pages (0 for flush).
    pub pages: u32,
    /// Arrival time.
    pub arrival: SimTime,
    /// Write stamp of this write or trim (the oracle's version number of every page it writes;
    /// a trim's orders it against writes in a recovery, docs/power.md); 0 for reads and flushes.
    pub stamp: u32,
    /// The write's placement ID under Flexible Data Placement (docs/fdp.md): the reclaim unit
    /// handle its data goes to; 0, the default handle, for untagged writes and other requests.
    pub placement: u16,
}

impl Request {
    /// A request for `pages` pages from `lpn`, arriving at `arrival` ns.
    pub fn new(op: Op, lpn: u32, pages: u32, arrival: u64, stamp: u32) -> Request {
        Request {
            op,
            lpn: Lpn(lpn),
            pages,
            arrival: SimTime(arrival),
            stamp,
            placement: 0,
        }
    }

    /// The request with placement ID `placement` (a write's reclaim unit handle).
    pub fn placed(self, placement: u16) -> Request {
        Request { placement, ..self }
    }

    /// The pages of the request.
    #[inline]
    pub fn lpns(&self) -> impl Iterator<Item = Lpn> {
        let s = self.lpn.0;
        (s..s + self.pages).map(Lpn)
    }
    /// The last page of the request.
    #[inline]
    pub fn last_lpn(&self) -> Lpn {
        Lpn(self.lpn.0 + self.pages.max(1) - 1)
    }
}

/// How soon a request hinted with [`crate::ftl::Ftl::prefetch`] will be served.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Upcoming {
    /// After the other jobs' requests now queued: time for a cache miss on the entries indexed
    /// by its LPN, but not for one that depends on them.
    Later,
    /// Next, after the request being served: the entries indexed by its LPN were hinted
    /// [`Upcoming::Later`] and are cached, so they can be read to hint the device state they
    /// point at.
    Next,
}
