//! HP-FTL's primary-table entry: `h` bits of hash ID (HID) above `m` bits of partial page ID
//! (PPID), paper Fig. 1.
//!
//! * HID 0: unmapped. HID `2^h − 1`: the mapping is in the secondary table and the PPID holds the
//!   secondary segment to search. HID `1 ..= 2^h − 2`: the page is in block `H_HID(lpn)`.
//! * Page offset inside that block (`p` = bits to index a page of a block): the PPID when
//!   `m = p`; otherwise the PPID concatenated with the `p − m` least significant LPN bits,
//!   `offset = PPID << (p − m) | lpn mod 2^(p − m)`, so an LPN can only land on the pages whose
//!   low bits equal its own ("such as even pages").

/// The entry layout for given `h`, `m`, `p`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Codec {
    h: u32,
    m: u32,
    p: u32,
}

impl Codec {
    /// Layout with `h` HID bits, `m` PPID bits, `p` page-offset bits (`m ≤ p`, `h ≥ 2`).
    pub fn new(h: u32, m: u32, p: u32) -> Codec {
        debug_assert!(h >= 2 && m <= p && h + m <= 32);
        Codec { h, m, p }
    }

    /// HID bits.
    #[inline]
    pub fn h(&self) -> u32 {
        self.h
    }

    /// PPID bits.
    #[inline]
    pub fn m(&self) -> u32 {
        self.m
    }

    /// Bits per entry.
    #[inline]
    pub fn bits(&self) -> u32 {
        self.h + self.m
    }

    /// The HID meaning "in the secondary table".
    #[inline]
    pub fn sec_hid(&self) -> u32 {
        (1 << self.h) - 1
    }

    /// Number of hash functions, `2^h − 2`.
    #[inline]
    pub fn functions(&self) -> u32 {
        (1 << self.h) - 2
    }

    /// The entry for `hid` and `ppid`.
    #[inline]
    pub fn encode(&self, hid: u32, ppid: u32) -> u32 {
        debug_assert!(hid <= self.sec_hid() && ppid < 1 << self.m);
        hid << self.m | ppid
    }

    /// HID of an entry.
    #[inline]
    pub fn hid(&self, entry: u32) -> u32 {
        entry >> self.m
    }

    /// PPID of an entry.
    #[inline]
    pub fn ppid(&self, entry: u32) -> u32 {
        entry & ((1 << self.m) - 1)
    }

    #[inline]
    fn borrowed(&self) -> u32 {
        self.p - self.m
    }

    /// The PPID that records page `offset` for `lpn`, if that offset is representable for it.
    #[inline]
    pub fn ppid_for(&self, lpn: u32, offset: u32) -> Option<u32> {
        let s = self.borrowed();
        let low = (1u32 << s) - 1;
        (offset & low == lpn & low).then_some(offset >> s)
    }

    /// The page offset an entry's PPID denotes for `lpn`.
    #[inline]
    pub fn offset(&self, lpn: u32, ppid: u32) -> u32 {
        let s = self.borrowed();
        ppid << s | (lpn & ((1u32 << s) - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_for_every_h_and_m() {
        let p = 6; // 64 pages per block
        for h in 2..=8 {
            for m in 0..=p {
                let c = Codec::new(h, m, p);
                assert_eq!(c.bits(), h + m);
                assert_eq!(c.functions() + 2, 1 << h);
                for hid in 0..=c.sec_hid() {
                    for ppid in 0..1u32 << m {
                        let e = c.encode(hid, ppid);
                        assert!(e < 1 << c.bits());
                        assert_eq!((c.hid(e), c.ppid(e)), (hid, ppid), "h {h} m {m}");
                    }
                }
                for lpn in 0..300u32 {
                    let mut representable = 0;
                    for off in 0..1u32 << p {
                        if let Some(ppid) = c.ppid_for(lpn, off) {
                            representable += 1;
                            assert!(ppid < 1 << m);
                            assert_eq!(c.offset(lpn, ppid), off, "h {h} m {m} lpn {lpn}");
                        }
                    }
                    // An LPN reaches 2^m pages of a block: those whose low p − m bits are its own.
                    assert_eq!(representable, 1 << m, "h {h} m {m} lpn {lpn}");
                    assert!(c.ppid_for(lpn, lpn % (1 << (p - m))).is_some());
                }
            }
        }
    }
}
