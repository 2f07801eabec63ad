//! The oracle (SPEC §9): the latest write stamp of every LPN, and a check of every page a read
//! returns against it; under FDP also the handle each LPN was last written with, checked
//! against the handle the device recorded for the flash page a read returns (docs/fdp.md).

use crate::addr::Lpn;
use crate::ftl::Served;

/// How many failure messages are kept for the report.
const KEEP: usize = 10;

/// Latest write stamps (0 = never written or trimmed) and the checks made so far.
#[derive(Clone)]
pub struct Oracle {
    stamps: Vec<u32>,
    /// Under FDP, per LPN, the handle its latest write was placed with ([`Oracle::UNKNOWN`]
    /// once a recovery fell back to an older version); empty without FDP.
    handles: Vec<u8>,
    checked: u64,
    failures: u64,
    messages: Vec<String>,
    /// The latest failure's message (the server names it in the failed command's log line).
    last: Option<String>,
}

impl Oracle {
    /// [`Oracle::handles`]' mark of a version whose handle is not known.
    const UNKNOWN: u8 = u8::MAX;

    /// An oracle for `logical_pages` pages, none written; checking placement too if `fdp`.
    pub fn new(logical_pages: u64, fdp: bool) -> Oracle {
        Oracle {
            stamps: vec![0; logical_pages as usize],
            handles: if fdp {
                vec![Self::UNKNOWN; logical_pages as usize]
            } else {
                Vec::new()
            },
            checked: 0,
            failures: 0,
            messages: Vec::new(),
            last: None,
        }
    }

    /// Records that `lpn` now holds version `stamp` (0 after a trim); under FDP the handle of
    /// a version other than the one recorded is not known.
    #[inline]
    pub fn set(&mut self, lpn: Lpn, stamp: u32) {
        let i = lpn.idx();
        if let Some(h) = self.handles.get_mut(i) {
            if self.stamps[i] != stamp {
                *h = Self::UNKNOWN;
            }
        }
        self.stamps[i] = stamp;
    }

    /// Records that a write placed with FDP handle `handle` made `lpn` version `stamp`.
    #[inline]
    pub fn set_written(&mut self, lpn: Lpn, stamp: u32, handle: u8) {
        let i = lpn.idx();
        if let Some(h) = self.handles.get_mut(i) {
            *h = handle;
        }
        self.stamps[i] = stamp;
    }

    /// The expected stamp of `lpn`.
    #[inline]
    pub fn expected(&self, lpn: Lpn) -> u32 {
        self.stamps[lpn.idx()]
    }

    /// Page reads checked.
    pub fn checked(&self) -> u64 {
        self.checked
    }
    /// Failed checks.
    pub fn failures(&self) -> u64 {
        self.failures
    }
    /// The first failure messages.
    pub fn messages(&self) -> &[String] {
        &self.messages
    }
    /// The latest failure's message.
    pub fn last_message(&self) -> Option<&str> {
        self.last.as_deref()
    }

    /// Counts a check made outside a read (after a recovery), and its failure with the message
    /// `msg` makes.
    pub fn note_check(&mut self, ok: bool, msg: impl FnOnce() -> String) {
        self.checked += 1;
        if !ok {
            self.fail(msg());
        }
    }

    /// Zeroes the check counters (stamps stay).
    pub fn reset_counts(&mut self) {
        self.checked = 0;
        self.failures = 0;
        self.messages.clear();
        self.last = None;
    }

    /// Counts a read of `lpn` that returned `from` instead of version `want` (0: unmapped).
    #[cold]
    fn wrong_read(&mut self, lpn: Lpn, want: u32, from: Served) {
        let expected = if want == 0 {
            "unmapped".to_string()
        } else {
            format!("stamp {want}")
        };
        let found = match from {
            Served::Flash { ppa, oob } => match (oob.lpn(), oob.tpn()) {
                (Some(l), _) => format!("{ppa:?} holding LPN {} stamp {}", l.0, oob.stamp),
                (_, Some(t)) => format!("{ppa:?} holding translation page {}", t.0),
                _ => format!("{ppa:?}"),
            },
            Served::Buffer { stamp } => format!("buffered stamp {stamp}"),
            Served::Unmapped => "unmapped".to_string(),
        };
        self.fail(format!(
            "read of LPN {}: expected {expected}, found {found}",
            lpn.0
        ));
    }

    /// Counts a failed check and keeps its message.
    fn fail(&mut self, msg: String) {
        self.failures += 1;
        if self.messages.len() < KEEP {
            self.messages.push(msg.clone());
        }
        self.last = Some(msg);
    }

    /// Checks that `lpn` was served in the version it expects; from flash, under FDP, from a
    /// page the device recorded as `handle`'s data, the handle of that version's write.
    #[inline]
    pub fn deliver(&mut self, lpn: Lpn, from: Served, handle: u8) {
        self.checked += 1;
        let want = self.stamps[lpn.idx()];
        let ok = match from {
            Served::Flash { oob, .. } => oob.lpn() == Some(lpn) && oob.stamp == want && want != 0,
            Served::Buffer { stamp } => stamp == want && want != 0,
            Served::Unmapped => want == 0,
        };
        if !ok {
            self.wrong_read(lpn, want, from);
            return;
        }
        let placed = self.handles.get(lpn.idx()).copied();
        if let (Served::Flash { ppa, .. }, Some(h)) = (from, placed) {
            if h != Self::UNKNOWN && h != handle {
                self.fail(format!(
                    "read of LPN {}: stamp {want} as expected, but {ppa:?} holds it as handle \
                     {handle}'s data; it was written with handle {h}",
                    lpn.0
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Ppa;
    use crate::device::Oob;

    #[test]
    fn names_lpn_expected_and_found() {
        let mut o = Oracle::new(10, false);
        o.set(Lpn(3), 7);
        let flash = |ppa, lpn, stamp| Served::Flash {
            ppa: Ppa(ppa),
            oob: Oob::data(Lpn(lpn), stamp),
        };
        o.deliver(Lpn(3), flash(1, 3, 7), 0);
        o.deliver(Lpn(4), Served::Unmapped, 0);
        o.deliver(Lpn(3), Served::Buffer { stamp: 7 }, 0);
        assert_eq!((o.checked(), o.failures()), (3, 0));
        o.deliver(Lpn(3), flash(9, 3, 6), 0);
        o.deliver(Lpn(3), Served::Unmapped, 0);
        o.deliver(Lpn(4), flash(2, 5, 1), 0);
        assert_eq!(o.failures(), 3);
        assert_eq!(o.last_message(), Some(o.messages()[2].as_str()));
        assert!(o.messages()[0].contains("LPN 3") && o.messages()[0].contains("stamp 7"));
        assert!(o.messages()[0].contains("stamp 6"), "{}", o.messages()[0]);
        assert!(
            o.messages()[2].contains("expected unmapped"),
            "{}",
            o.messages()[2]
        );
    }

    #[test]
    fn under_fdp_a_page_of_another_handle_fails_until_a_recovery_falls_back() {
        let mut o = Oracle::new(10, true);
        let flash = Served::Flash {
            ppa: Ppa(4),
            oob: Oob::data(Lpn(3), 7),
        };
        o.set_written(Lpn(3), 7, 2);
        o.deliver(Lpn(3), flash, 2);
        o.deliver(Lpn(3), Served::Buffer { stamp: 7 }, 0);
        assert_eq!(o.failures(), 0);
        o.deliver(Lpn(3), flash, 0);
        assert_eq!(o.failures(), 1);
        assert!(o.messages()[0].contains("handle 0") && o.messages()[0].contains("handle 2"));
        // Adopting the version found (the same one) keeps the handle; an older one forgets it.
        o.set(Lpn(3), 7);
        o.deliver(Lpn(3), flash, 0);
        assert_eq!(o.failures(), 2);
        o.set(Lpn(3), 5);
        let older = Served::Flash {
            ppa: Ppa(6),
            oob: Oob::data(Lpn(3), 5),
        };
        o.deliver(Lpn(3), older, 1);
        assert_eq!(o.failures(), 2);
    }
}
