//! The oracle (SPEC §9): the latest write stamp of every LPN, and a check of every page a read
//! returns against it.

use crate::addr::Lpn;
use crate::ftl::Served;

/// How many failure messages are kept for the report.
const KEEP: usize = 10;

/// Latest write stamps (0 = never written or trimmed) and the checks made so far.
#[derive(Clone)]
pub struct Oracle {
    stamps: Vec<u32>,
    checked: u64,
    failures: u64,
    messages: Vec<String>,
    /// The latest failure's message (the server names it in the failed command's log line).
    last: Option<String>,
}

impl Oracle {
    /// An oracle for `logical_pages` pages, none written.
    pub fn new(logical_pages: u64) -> Oracle {
        Oracle {
            stamps: vec![0; logical_pages as usize],
            checked: 0,
            failures: 0,
            messages: Vec::new(),
            last: None,
        }
    }

    /// Records that `lpn` now holds version `stamp` (0 after a trim).
    #[inline]
    pub fn set(&mut self, lpn: Lpn, stamp: u32) {
        self.stamps[lpn.idx()] = stamp;
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

    /// Checks that `lpn` was served in the version it expects.
    #[inline]
    pub fn deliver(&mut self, lpn: Lpn, from: Served) {
        self.checked += 1;
        let want = self.stamps[lpn.idx()];
        let ok = match from {
            Served::Flash { oob, .. } => oob.lpn() == Some(lpn) && oob.stamp == want && want != 0,
            Served::Buffer { stamp } => stamp == want && want != 0,
            Served::Unmapped => want == 0,
        };
        if !ok {
            self.wrong_read(lpn, want, from);
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
        let mut o = Oracle::new(10);
        o.set(Lpn(3), 7);
        o.deliver(
            Lpn(3),
            Served::Flash {
                ppa: Ppa(1),
                oob: Oob::data(Lpn(3), 7),
            },
        );
        o.deliver(Lpn(4), Served::Unmapped);
        o.deliver(Lpn(3), Served::Buffer { stamp: 7 });
        assert_eq!((o.checked(), o.failures()), (3, 0));
        o.deliver(
            Lpn(3),
            Served::Flash {
                ppa: Ppa(9),
                oob: Oob::data(Lpn(3), 6),
            },
        );
        o.deliver(Lpn(3), Served::Unmapped);
        o.deliver(
            Lpn(4),
            Served::Flash {
                ppa: Ppa(2),
                oob: Oob::data(Lpn(5), 1),
            },
        );
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
}
