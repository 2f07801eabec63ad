//! Multi-plane operations (`multi_plane=on`, docs/device.md "Multi-plane operations"): a LUN's
//! planes share its command interface, and a controller sends programs of the same page of a
//! line to several planes (erases of the same line's blocks) as one command that takes one
//! operation's time. With `independent_plane_reads=on` reads on different planes also run
//! together at any page offset (the independent multi-plane reads recent dies offer).
//!
//! An operation joins the latest one of its kind booked on its LUN when that one has not
//! started by the time it is issued (it is still queued, so the controller can add this plane
//! to its command), runs on another plane, matches it (the same page of the same line for a
//! program, the same line for an erase, any page for a read) and takes no longer; it then
//! completes with it and takes no LUN time of its own.

use serde::Serialize;

/// Operations that ran together with another plane's, since the last reset.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PlaneCounters {
    /// Programs that joined a multi-plane program.
    pub programs: u64,
    /// Erases that joined a multi-plane erase.
    pub erases: u64,
    /// Reads that ran beside another plane's read.
    pub reads: u64,
}

/// What an operation does, for joining.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Read = 0,
    Program = 1,
    Erase = 2,
}

/// The latest operation of a kind booked on a LUN and the planes it covers.
#[derive(Copy, Clone, Debug, Default)]
struct Group {
    line: u32,
    page: u32,
    planes: u64,
    start: u64,
    end: u64,
}

/// Per LUN and kind, the latest group.
#[derive(Clone, Debug)]
pub(super) struct Planes {
    independent_reads: bool,
    groups: Vec<[Option<Group>; 3]>,
    counters: PlaneCounters,
}

/// Where an operation runs on its LUN: its plane, line and page in the block.
#[derive(Copy, Clone, Debug)]
pub(super) struct At {
    pub lun: usize,
    pub plane: u32,
    pub line: u32,
    pub page: u32,
}

impl Planes {
    pub(super) fn new(luns: usize, independent_reads: bool) -> Planes {
        Planes {
            independent_reads,
            groups: vec![[None; 3]; luns],
            counters: PlaneCounters::default(),
        }
    }

    pub(super) fn counters(&self) -> PlaneCounters {
        self.counters
    }

    pub(super) fn reset_counters(&mut self) {
        self.counters = PlaneCounters::default();
    }

    /// An operation of `kind` and `ns` at `at`, which may start at `earliest` (its issue, or
    /// later if its block orders it after another operation): the completion of the queued
    /// operation it joins, if it can join one.
    #[inline]
    pub(super) fn join(&mut self, kind: Kind, at: At, earliest: u64, ns: u64) -> Option<u64> {
        if kind == Kind::Read && !self.independent_reads {
            return None;
        }
        let g = self.groups[at.lun][kind as usize].as_mut()?;
        let matches = match kind {
            Kind::Program => g.line == at.line && g.page == at.page,
            Kind::Erase => g.line == at.line,
            Kind::Read => true,
        };
        if !matches || g.planes >> at.plane & 1 == 1 || earliest > g.start || ns > g.end - g.start {
            return None;
        }
        g.planes |= 1 << at.plane;
        match kind {
            Kind::Program => self.counters.programs += 1,
            Kind::Erase => self.counters.erases += 1,
            Kind::Read => self.counters.reads += 1,
        }
        Some(g.end)
    }

    /// An operation of `kind` at `at` booked on its own over `[start, end)`: the latest group
    /// of its kind on its LUN.
    #[inline]
    pub(super) fn booked(&mut self, kind: Kind, at: At, start: u64, end: u64) {
        self.groups[at.lun][kind as usize] = Some(Group {
            line: at.line,
            page: at.page,
            planes: 1 << at.plane,
            start,
            end,
        });
    }
}
