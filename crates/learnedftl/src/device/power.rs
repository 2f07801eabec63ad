//! Power cuts: arming one, tearing the operation in flight, running on capacitors, and power-on,
//! which forgets what a real SSD keeps in DRAM until recovery revalidates it.

use super::{Cause, Device};
use crate::addr::{Lpn, Ppa};
use crate::error::DeviceError;

/// When an armed power cut strikes ([`Device::arm_power_cut`]): the operation named is the one
/// in flight; every state-changing operation before it completed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PowerCut {
    /// After this many more programs and erases (0: the next one is in flight).
    AfterOps(u64),
    /// At the `nth` (1-based) program or erase of `cause` from now.
    AtCause {
        /// The cause to count.
        cause: Cause,
        /// Which of its operations is in flight.
        nth: u64,
    },
}

/// The device's power: normal, a cut armed, or lost until [`Device::power_on`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Power {
    On,
    Armed(PowerCut),
    Lost,
}

impl Device {
    /// Arms a power cut ([`PowerCut`]): when it strikes, the operation in flight is torn (a
    /// program consumes its page but leaves it unreadable and never valid; an erase leaves
    /// every page of its block torn and the block unusable until erased again), and from then
    /// on every operation fails with [`DeviceError::PowerLost`] until [`Device::power_on`].
    /// Replaces a cut armed before.
    pub fn arm_power_cut(&mut self, cut: PowerCut) {
        if self.power != Power::Lost {
            self.power = Power::Armed(cut);
        }
    }

    /// Whether a cut is armed and has not struck yet.
    pub fn power_cut_armed(&self) -> bool {
        matches!(self.power, Power::Armed(_))
    }

    /// Cuts the power now, with no operation in flight (an armed cut that did not strike
    /// during the request it was meant for strikes between requests).
    pub fn cut_power(&mut self) {
        self.power = Power::Lost;
        self.cut_in = None;
    }

    /// The cause of the program or erase the latest power cut struck in, `None` if it struck
    /// between operations ([`Device::cut_power`]; also after power-loss protection's
    /// capacitor flush, which ends with one) or none struck yet.
    pub fn last_cut_in(&self) -> Option<Cause> {
        self.cut_in
    }

    /// Power-loss protection: the capacitors power the device for the FTL to program its
    /// volatile buffers after a cut; call [`Device::cut_power`] when done.
    pub fn run_on_capacitors(&mut self) {
        self.power = Power::On;
    }

    /// Power-loss protection for a controller's write buffer: on capacitor energy, the
    /// buffered versions `pages` (`(lpn, stamp, placement ID)`, oldest first) and their data go
    /// to a reserved power-loss area outside the data blocks, as drives do, to be restored at
    /// power-on ([`Device::take_capacitor_dump`]). The area's programs are not counted: the
    /// restore's are, when the pages are written again. Replaces an earlier dump not taken.
    /// With payloads, a version whose data was already programmed (the FTL took it before
    /// the cut struck) is on flash and left out.
    pub fn dump_on_capacitors(&mut self, pages: &[(Lpn, u32, u16)]) {
        self.dump.clear();
        for &(lpn, stamp, placement) in pages {
            if self.payload.as_mut().is_none_or(|p| p.keep(lpn, stamp)) {
                self.dump.push((lpn, stamp, placement));
            }
        }
    }

    /// Takes the pages of the last capacitor dump that `restore` keeps (given each page's
    /// LPN and stamp), their data staged again for programming; the others' data is dropped.
    /// Empty when there was no dump. Call once powered on.
    pub fn take_capacitor_dump(
        &mut self,
        mut restore: impl FnMut(Lpn, u32) -> bool,
    ) -> Vec<(Lpn, u32, u16)> {
        let mut dump = std::mem::take(&mut self.dump);
        dump.retain(|&(lpn, stamp, _)| {
            let keep = restore(lpn, stamp);
            if let Some(p) = self.payload.as_mut() {
                p.restore(lpn, stamp, keep);
            }
            keep
        });
        dump
    }

    /// Whether the power is lost (a cut struck, [`Device::power_on`] not called yet).
    pub fn power_lost(&self) -> bool {
        self.power == Power::Lost
    }

    /// The power check of a program or erase of `cause` while the power is not plainly on:
    /// `Ok(true)` if the cut strikes with this operation in flight, `Ok(false)` if it goes
    /// ahead, the error if the power is already lost.
    #[cold]
    pub(super) fn power_check(&mut self, cause: Cause) -> Result<bool, DeviceError> {
        match &mut self.power {
            Power::On => Ok(false),
            Power::Lost => Err(DeviceError::PowerLost),
            Power::Armed(PowerCut::AfterOps(0)) => {
                self.power = Power::Lost;
                self.cut_in = Some(cause);
                Ok(true)
            }
            Power::Armed(PowerCut::AfterOps(n)) => {
                *n -= 1;
                Ok(false)
            }
            Power::Armed(PowerCut::AtCause { cause: c, nth }) => {
                if *c == cause {
                    *nth = nth.saturating_sub(1);
                    if *nth == 0 {
                        self.power = Power::Lost;
                        self.cut_in = Some(cause);
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    /// Powers the device on after a cut, forgetting what a real SSD keeps in DRAM: the valid
    /// bitmap and the block and line valid counts (validity is FTL metadata, which recovery
    /// rebuilds with [`Device::revalidate`]) and host data staged for payloads. Flash contents
    /// (OOB, record contents, page payloads, write pointers, torn pages), erase counts,
    /// counters and LUN timelines stay.
    pub fn power_on(&mut self) {
        if let Some(p) = self.payload.as_mut() {
            p.on_power_on();
        }
        self.valid.fill(0);
        if let Some(s) = self.slc.as_mut() {
            s.power_on();
        }
        self.blk_valid.fill(0);
        self.line_valid.fill(0);
        // Recovery starts its GC afresh: nothing waits on the counts just cleared.
        self.line_alarm_below.fill(0);
        self.line_alarm = false;
        self.power = Power::On;
    }

    /// Marks a programmed page valid again (recovery found it live). Fails on an unprogrammed,
    /// torn or already valid page: each means a recovery bug. Costs no time.
    pub fn revalidate(&mut self, ppa: Ppa) -> Result<(), DeviceError> {
        self.check(ppa)?;
        if !self.is_programmed(ppa) {
            return Err(DeviceError::ReadErased(ppa));
        }
        let i = ppa.idx();
        if self.oob[i].is_torn() || self.is_valid(ppa) {
            return Err(DeviceError::Revalidate(ppa));
        }
        self.valid[i >> 6] |= 1 << (i & 63);
        if let Some(s) = self.slc.as_mut() {
            s.valid += 1;
        }
        let blk = self.math.block_of(ppa);
        self.blk_valid[blk as usize] += 1;
        self.line_valid[self.math.line_of_block(blk) as usize] += 1;
        Ok(())
    }
}
