//! Fixed-newstyle negotiation: the server's greeting, then option haggling until the client
//! picks the export (`NBD_OPT_GO` or `NBD_OPT_EXPORT_NAME`), aborts, or goes away.

use crate::proto::*;
use std::io::{self, Read, Write};

/// What the server exports (one export, reachable by its name or the default name "").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    /// Its name.
    pub name: String,
    /// A description for humans (`NBD_INFO_DESCRIPTION`, `NBD_OPT_LIST`).
    pub description: String,
    /// Size in bytes.
    pub size: u64,
    /// Transmission flags.
    pub flags: u16,
    /// Size constraints.
    pub block: BlockSize,
}

impl Export {
    fn matches(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.name.as_bytes()
    }
}

/// How negotiation ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The client chose the export: transmission starts.
    Transmission,
    /// The client aborted (`NBD_OPT_ABORT`) or closed the connection between options.
    Closed,
}

/// Options a client may send before it must choose (a client that haggles longer is cut off).
pub const MAX_OPTIONS: usize = 1024;
/// Largest option data accepted; longer data is drained and refused with `NBD_REP_ERR_TOO_BIG`.
pub const MAX_OPTION_DATA: u32 = 64 << 10;
/// Option data beyond this is not even drained: the connection is dropped.
const MAX_DRAIN: u32 = 16 << 20;

fn protocol_error(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

fn read_u32<R: Read>(r: &mut R) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64<R: Read>(r: &mut R) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn opt_reply<W: Write>(w: &mut W, opt: u32, kind: u32, data: &[&[u8]]) -> io::Result<()> {
    let len: usize = data.iter().map(|d| d.len()).sum();
    w.write_all(&OPT_REPLY_MAGIC.to_be_bytes())?;
    w.write_all(&opt.to_be_bytes())?;
    w.write_all(&kind.to_be_bytes())?;
    w.write_all(&(len as u32).to_be_bytes())?;
    data.iter().try_for_each(|d| w.write_all(d))
}

/// Runs the server's side of the handshake on `s` (a buffered stream: replies are flushed
/// whenever the client must answer). Errors are I/O failures and protocol violations after
/// which the connection must be dropped (unknown client flags, a bad option magic, an
/// `NBD_OPT_EXPORT_NAME` for an unknown export, too many options).
pub fn negotiate<S: Read + Write>(s: &mut S, export: &Export) -> io::Result<Outcome> {
    s.write_all(&NBDMAGIC.to_be_bytes())?;
    s.write_all(&IHAVEOPT.to_be_bytes())?;
    s.write_all(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes())?;
    s.flush()?;
    let client = read_u32(s)?;
    if client & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(protocol_error(format!("unknown client flags {client:#x}")));
    }
    let no_zeroes = client & FLAG_C_NO_ZEROES != 0;
    for _ in 0..MAX_OPTIONS {
        let magic = match read_u64(s) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Outcome::Closed),
            Err(e) => return Err(e),
        };
        if magic != IHAVEOPT {
            return Err(protocol_error(format!("bad option magic {magic:#x}")));
        }
        let opt = read_u32(s)?;
        let len = read_u32(s)?;
        if len > MAX_OPTION_DATA {
            if len > MAX_DRAIN {
                return Err(protocol_error(format!("option {opt} with {len} B of data")));
            }
            io::copy(&mut Read::by_ref(s).take(len as u64), &mut io::sink())?;
            opt_reply(s, opt, REP_ERR_TOO_BIG, &[])?;
            s.flush()?;
            continue;
        }
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data)?;
        match opt {
            OPT_EXPORT_NAME => {
                if !export.matches(&data) {
                    return Err(protocol_error(format!(
                        "NBD_OPT_EXPORT_NAME for unknown export {:?}",
                        String::from_utf8_lossy(&data)
                    )));
                }
                s.write_all(&export.size.to_be_bytes())?;
                s.write_all(&export.flags.to_be_bytes())?;
                if !no_zeroes {
                    s.write_all(&[0u8; 124])?;
                }
                s.flush()?;
                return Ok(Outcome::Transmission);
            }
            OPT_ABORT => {
                // The client may already have closed: a failed ACK is not an error.
                let _ = opt_reply(s, opt, REP_ACK, &[]).and_then(|()| s.flush());
                return Ok(Outcome::Closed);
            }
            OPT_LIST if !data.is_empty() => opt_reply(s, opt, REP_ERR_INVALID, &[])?,
            OPT_LIST => {
                let name = export.name.as_bytes();
                let len = (name.len() as u32).to_be_bytes();
                let desc = export.description.as_bytes();
                opt_reply(s, opt, REP_SERVER, &[&len, name, desc])?;
                opt_reply(s, opt, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => {
                if info(s, opt, &data, export)? && opt == OPT_GO {
                    s.flush()?;
                    return Ok(Outcome::Transmission);
                }
            }
            _ => opt_reply(s, opt, REP_ERR_UNSUP, &[])?,
        }
        s.flush()?;
    }
    Err(protocol_error(format!(
        "more than {MAX_OPTIONS} options without choosing an export"
    )))
}

/// Answers `NBD_OPT_INFO` / `NBD_OPT_GO`; true when the export was accepted.
fn info<W: Write>(w: &mut W, opt: u32, data: &[u8], export: &Export) -> io::Result<bool> {
    // Name length, name, number of requests, requests (16 bits each).
    let parsed = (|| {
        let n = u32::from_be_bytes(data.get(..4)?.try_into().ok()?) as usize;
        let name = data.get(4..4usize.checked_add(n)?)?;
        let rest = &data[4 + n..];
        let count = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?) as usize;
        let reqs = rest.get(2..)?;
        (reqs.len() == 2 * count).then_some((name, reqs))
    })();
    let Some((name, reqs)) = parsed else {
        opt_reply(w, opt, REP_ERR_INVALID, &[])?;
        return Ok(false);
    };
    if !export.matches(name) {
        opt_reply(w, opt, REP_ERR_UNKNOWN, &[])?;
        return Ok(false);
    }
    let wants = |t: u16| reqs.chunks(2).any(|c| c == t.to_be_bytes());
    let mut exp = [0u8; 10];
    exp[..8].copy_from_slice(&export.size.to_be_bytes());
    exp[8..].copy_from_slice(&export.flags.to_be_bytes());
    opt_reply(w, opt, REP_INFO, &[&INFO_EXPORT.to_be_bytes(), &exp])?;
    // Sent unasked too: the server has constraints, and a client may ignore unknown items.
    let b = export.block;
    let mut bs = [0u8; 12];
    bs[..4].copy_from_slice(&b.min.to_be_bytes());
    bs[4..8].copy_from_slice(&b.preferred.to_be_bytes());
    bs[8..].copy_from_slice(&b.max_payload.to_be_bytes());
    opt_reply(w, opt, REP_INFO, &[&INFO_BLOCK_SIZE.to_be_bytes(), &bs])?;
    if wants(INFO_NAME) {
        let name = export.name.as_bytes();
        opt_reply(w, opt, REP_INFO, &[&INFO_NAME.to_be_bytes(), name])?;
    }
    if wants(INFO_DESCRIPTION) {
        let d = export.description.as_bytes();
        opt_reply(w, opt, REP_INFO, &[&INFO_DESCRIPTION.to_be_bytes(), d])?;
    }
    opt_reply(w, opt, REP_ACK, &[])?;
    Ok(true)
}
