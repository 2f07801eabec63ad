//! The flash state of a device saved to disk and loaded again (`serve --state DIR`,
//! docs/power.md "Persistent state"): what a drive keeps without power — every page's OOB,
//! each block's write pointer, erase count (wear) and sequence number, trim records, the last
//! mapping checkpoint, which pages hold SLC-mode data, which reclaim unit handle owns each
//! line and placed each page under FDP — and, in the payload store's file
//! `pages` beside it, the page data. Nothing held in DRAM is saved (validity, the FTL's
//! tables): a device loaded is a device whose power came back, and the FTL must recover from
//! it, exactly as after a power cut.
//!
//! The file `flash` is a header line of JSON (format version, the learnedftl version, the
//! owner's name — the FTL —, the geometry and cell type) and then fixed-order little-endian
//! sections, written and read through buffers element by element: saving or loading needs no
//! memory beyond the device's own. It is written to `flash.tmp` and renamed into place.

use super::{payload::PayloadStore, Device, Oob, TrimRecord};
use crate::addr::Lpn;
use crate::config::DeviceConfig;
use crate::error::StateError;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The state file's format version: a state of another version is refused.
pub const STATE_FORMAT: u32 = 1;

const MAGIC: &[u8; 8] = b"LFTLSTAT";
const END: &[u8; 8] = b"LFTLEND\0";

/// What a saved state says about itself beside the flash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateOwner {
    /// The FTL that wrote the flash (its recovery must read it).
    pub ftl: String,
    /// The stamp of the newest write or trim on flash or acknowledged before saving (new
    /// writes must be stamped above it: recovery orders versions by stamp).
    pub stamp: u32,
}

/// The files of a state directory.
pub struct StateFiles {
    /// The flash state.
    pub flash: PathBuf,
    /// The page data (the payload store's file).
    pub pages: PathBuf,
}

impl StateFiles {
    /// The files of state directory `dir`.
    pub fn in_dir(dir: &Path) -> StateFiles {
        StateFiles {
            flash: dir.join("flash"),
            pages: dir.join("pages"),
        }
    }
}

/// What must match for a state to be loaded on `cfg` with `ftl`.
fn header(cfg: &DeviceConfig, ftl: &str, stamp: u32) -> serde_json::Value {
    serde_json::json!({
        "format": STATE_FORMAT,
        "learnedftl": env!("CARGO_PKG_VERSION"),
        "ftl": ftl,
        "geometry": cfg.geometry,
        "cell": cfg.timing.cell,
        "slc_cache": cfg.slc.is_on(),
        "fdp": match cfg.fdp.is_on() {
            // The handles' types too, but as before they were a key: states saved without FDP
            // stay loadable.
            true => serde_json::json!([cfg.fdp.ruhs, cfg.fdp.ru_lines, cfg.fdp.types_key()]),
            false => serde_json::json!([cfg.fdp.ruhs, cfg.fdp.ru_lines]),
        },
        "stamp": stamp,
    })
}

pub(super) fn put_u32(w: &mut impl Write, x: u32) -> io::Result<()> {
    w.write_all(&x.to_le_bytes())
}

pub(super) fn put_u64(w: &mut impl Write, x: u64) -> io::Result<()> {
    w.write_all(&x.to_le_bytes())
}

/// A section of `u32`s: its length, then each.
pub(super) fn put_u32s<'a>(
    w: &mut impl Write,
    xs: impl ExactSizeIterator<Item = &'a u32>,
) -> io::Result<()> {
    put_u64(w, xs.len() as u64)?;
    xs.into_iter().try_for_each(|&x| put_u32(w, x))
}

/// A section of bytes: its length, then each.
pub(super) fn put_u8s(w: &mut impl Write, xs: &[u8]) -> io::Result<()> {
    put_u64(w, xs.len() as u64)?;
    w.write_all(xs)
}

pub(super) fn put_u64s(w: &mut impl Write, xs: &[u64]) -> io::Result<()> {
    put_u64(w, xs.len() as u64)?;
    xs.iter().try_for_each(|&x| put_u64(w, x))
}

/// Reads a state file, naming the section that is cut short or wrong.
pub(super) struct Reader<R: Read> {
    pub(super) r: R,
    pub(super) section: &'static str,
}

impl<R: Read> Reader<R> {
    pub(super) fn bad(&self, what: String) -> StateError {
        StateError::Format(format!("section {}: {what}", self.section))
    }

    pub(super) fn bytes<const N: usize>(&mut self) -> Result<[u8; N], StateError> {
        let mut b = [0; N];
        self.r
            .read_exact(&mut b)
            .map_err(|e| self.bad(format!("cut short ({e})")))?;
        Ok(b)
    }

    pub(super) fn u8(&mut self) -> Result<u8, StateError> {
        self.bytes::<1>().map(|b| b[0])
    }

    pub(super) fn u32(&mut self) -> Result<u32, StateError> {
        self.bytes().map(u32::from_le_bytes)
    }

    pub(super) fn u64(&mut self) -> Result<u64, StateError> {
        self.bytes().map(u64::from_le_bytes)
    }

    /// A section's length, which must be `want` (what this device has).
    pub(super) fn len(&mut self, section: &'static str, want: usize) -> Result<usize, StateError> {
        self.section = section;
        let n = self.u64()?;
        if n != want as u64 {
            return Err(self.bad(format!("{n} entries, the device has {want}")));
        }
        Ok(want)
    }

    /// Fills `out` from a section as long as it, each element read by `read`.
    pub(super) fn fill<T>(
        &mut self,
        section: &'static str,
        out: &mut [T],
        read: fn(&mut Self) -> Result<T, StateError>,
    ) -> Result<(), StateError> {
        self.len(section, out.len())?;
        for x in out.iter_mut() {
            *x = read(self)?;
        }
        Ok(())
    }

    /// A section of `u32`s of any length (at most `max`).
    pub(super) fn u32s(
        &mut self,
        section: &'static str,
        max: usize,
    ) -> Result<Vec<u32>, StateError> {
        self.section = section;
        let n = self.u64()?;
        if n > max as u64 {
            return Err(self.bad(format!("{n} entries, at most {max} possible")));
        }
        (0..n).map(|_| self.u32()).collect()
    }
}

impl Device {
    /// Saves the flash state to `files` (the page data is already in `files.pages`: the
    /// payload store must be kept there, [`PayloadStore::use_file`]), as `owner` left it. The
    /// device must have no capacitor dump pending (recovery writes it back).
    pub fn save_state(&self, files: &StateFiles, owner: &StateOwner) -> Result<(), StateError> {
        let io = |e: io::Error| StateError::Io {
            path: files.flash.display().to_string(),
            message: e.to_string(),
        };
        let Some(present) = self.payload.as_ref().and_then(PayloadStore::file_pages) else {
            return Err(StateError::Format(
                "the device keeps no page data in a file: nothing to save it beside".into(),
            ));
        };
        if !self.dump.is_empty() {
            return Err(StateError::Format(
                "a capacitor dump is pending: recover before saving".into(),
            ));
        }
        let tmp = files.flash.with_extension("tmp");
        let f = File::create(&tmp).map_err(io)?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        w.write_all(MAGIC).map_err(io)?;
        let head = header(&self.cfg, &owner.ftl, owner.stamp).to_string();
        put_u64(&mut w, head.len() as u64).map_err(io)?;
        w.write_all(head.as_bytes()).map_err(io)?;
        (|| {
            put_u64(&mut w, self.oob.len() as u64)?;
            for o in &self.oob {
                put_u32(&mut w, o.tag)?;
                put_u32(&mut w, o.stamp)?;
            }
            put_u32s(&mut w, self.blk_next.iter())?;
            put_u32s(&mut w, self.blk_erases.iter())?;
            put_u32s(&mut w, self.blk_seq.iter())?;
            put_u32(&mut w, self.opened)?;
            put_u64(&mut w, self.ckpt_pages)?;
            put_u32s(&mut w, self.ckpt_written.iter())?;
            put_u64(&mut w, self.records.len() as u64)?;
            for (&ppa, r) in &self.records {
                put_u32(&mut w, ppa)?;
                put_u32(&mut w, r.first.0)?;
                put_u32(&mut w, r.pages)?;
            }
            w.write_all(&[self.copies.is_counting() as u8])?;
            put_u64s(&mut w, present)?;
            if let Some(s) = self.slc.as_ref() {
                s.save(&mut w)?;
            }
            if let Some(f) = self.fdp.as_ref() {
                f.save(&mut w)?;
            }
            w.write_all(END)?;
            w.into_inner().map_err(|e| e.into_error())?.sync_all()
        })()
        .map_err(io)?;
        std::fs::rename(&tmp, &files.flash).map_err(io)
    }

    /// A device of `cfg` (with payloads) whose flash is the state saved in `files` by `ftl`:
    /// its power lost, for the FTL's recovery ([`crate::ftl::recover`]). Refused, saying what
    /// differs, for a state of another format, geometry, cell type, SLC cache, FDP handles and
    /// reclaim unit size, or FTL. Returns the device and the stamp saved with it.
    pub fn load_state(
        cfg: &DeviceConfig,
        files: &StateFiles,
        ftl: &str,
    ) -> Result<(Device, u32), StateError> {
        let path = files.flash.display().to_string();
        let f = File::open(&files.flash).map_err(|e| StateError::Io {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let mut r = Reader {
            r: BufReader::with_capacity(1 << 20, f),
            section: "header",
        };
        if &r.bytes::<8>()? != MAGIC {
            return Err(StateError::Format(format!(
                "{path} is not a learnedftl state"
            )));
        }
        let n = r.u64()?;
        if n > 1 << 20 {
            return Err(r.bad(format!("a header of {n} B")));
        }
        let mut head = vec![0; n as usize];
        r.r.read_exact(&mut head)
            .map_err(|e| r.bad(format!("cut short ({e})")))?;
        let saved: serde_json::Value =
            serde_json::from_slice(&head).map_err(|e| r.bad(format!("not JSON ({e})")))?;
        let stamp = saved["stamp"].as_u64().and_then(|s| u32::try_from(s).ok());
        let now = header(cfg, ftl, stamp.unwrap_or(0));
        for key in ["format", "ftl", "geometry", "cell", "slc_cache", "fdp"] {
            if saved[key] != now[key] {
                return Err(StateError::Mismatch {
                    what: key,
                    saved: saved[key].to_string(),
                    now: now[key].to_string(),
                });
            }
        }
        let stamp = stamp.ok_or_else(|| r.bad("no stamp".into()))?;
        let mut cfg = cfg.clone();
        cfg.payloads = true;
        let mut dev = Device::new(&cfg);
        let pages = r.len("oob", dev.oob.len())?;
        for i in 0..pages {
            let (tag, stamp) = (r.u32()?, r.u32()?);
            dev.oob[i] = Oob { tag, stamp };
        }
        r.fill("block write pointers", &mut dev.blk_next, Reader::u32)?;
        r.fill("block erase counts", &mut dev.blk_erases, Reader::u32)?;
        r.fill("block sequence numbers", &mut dev.blk_seq, Reader::u32)?;
        r.section = "blocks opened";
        dev.opened = r.u32()?;
        r.section = "checkpoint";
        dev.ckpt_pages = r.u64()?;
        dev.ckpt_written = r.u32s("checkpoint", dev.blk_next.len())?;
        r.section = "trim records";
        let records = r.u64()?;
        if records > pages as u64 {
            return Err(r.bad(format!("{records} records on {pages} pages")));
        }
        for _ in 0..records {
            let (ppa, first, n) = (r.u32()?, r.u32()?, r.u32()?);
            let rec = TrimRecord {
                first: Lpn(first),
                pages: n,
            };
            dev.records.insert(ppa, rec);
        }
        r.section = "trim copies";
        let counting = r.bytes::<1>()?[0] != 0;
        let mut present = vec![0u64; pages.div_ceil(64)];
        r.fill("pages with data", &mut present, Reader::u64)?;
        if let Some(s) = dev.slc.as_mut() {
            r.section = "slc cache";
            s.load(&mut r)?;
        }
        if let Some(f) = dev.fdp.as_mut() {
            f.load(&mut r)?;
        }
        r.section = "end";
        if &r.bytes::<8>()? != END {
            return Err(r.bad("no end mark: the file is damaged".into()));
        }
        if counting {
            dev.count_copies_from_now();
        }
        let store = dev.payload.as_mut().expect("payloads on");
        store
            .reopen_file(&files.pages, present)
            .map_err(|e| StateError::Io {
                path: files.pages.display().to_string(),
                message: e.to_string(),
            })?;
        dev.power = super::Power::Lost;
        Ok((dev, stamp))
    }

    /// The newest stamp on flash (data pages and trim records): 0 on a blank device.
    pub fn newest_stamp(&self) -> u32 {
        self.oob.iter().map(|o| o.stamp).max().unwrap_or(0)
    }
}
