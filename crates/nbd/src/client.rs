//! A minimal NBD client (fixed newstyle, `NBD_OPT_GO`, simple replies), for `learnedftl
//! check --through nbd`: split into a half that sends requests and one that reads replies, so
//! a connection can have many requests in flight without either side blocking the other.

use crate::proto::*;
use std::io::{self, BufReader, Read, Write};
use std::os::unix::net::UnixStream;

/// The half of a connection that sends requests.
pub struct Sender {
    stream: UnixStream,
}

/// The half of a connection that reads replies.
pub struct Receiver {
    stream: BufReader<UnixStream>,
}

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn read_u<const N: usize>(s: &mut impl Read) -> io::Result<[u8; N]> {
    let mut b = [0; N];
    s.read_exact(&mut b)?;
    Ok(b)
}

/// Negotiates the default export on `stream` with `NBD_OPT_GO`; returns its size and
/// transmission flags and the connection's two halves.
pub fn connect(mut stream: UnixStream) -> io::Result<(u64, u16, Sender, Receiver)> {
    let s = &mut stream;
    if u64::from_be_bytes(read_u(s)?) != NBDMAGIC || u64::from_be_bytes(read_u(s)?) != IHAVEOPT {
        return Err(bad("not an NBD server (bad greeting)".into()));
    }
    let _server_flags = u16::from_be_bytes(read_u(s)?);
    s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes())?;
    // NBD_OPT_GO for the default export, no information requests.
    let mut opt = IHAVEOPT.to_be_bytes().to_vec();
    opt.extend_from_slice(&OPT_GO.to_be_bytes());
    opt.extend_from_slice(&6u32.to_be_bytes());
    opt.extend_from_slice(&[0; 6]);
    s.write_all(&opt)?;
    let mut export = None;
    loop {
        if u64::from_be_bytes(read_u(s)?) != OPT_REPLY_MAGIC {
            return Err(bad("bad option reply magic".into()));
        }
        let _opt = u32::from_be_bytes(read_u(s)?);
        let kind = u32::from_be_bytes(read_u(s)?);
        let mut data = vec![0; u32::from_be_bytes(read_u(s)?) as usize];
        s.read_exact(&mut data)?;
        match kind {
            REP_INFO if data.len() >= 12 && data[..2] == INFO_EXPORT.to_be_bytes() => {
                let size = u64::from_be_bytes(data[2..10].try_into().expect("8 bytes"));
                let flags = u16::from_be_bytes(data[10..12].try_into().expect("2 bytes"));
                export = Some((size, flags));
            }
            REP_INFO => {}
            REP_ACK => break,
            k => return Err(bad(format!("NBD_OPT_GO refused ({k:#x})"))),
        }
    }
    let (size, flags) = export.ok_or_else(|| bad("no NBD_INFO_EXPORT before the ACK".into()))?;
    let reader = stream.try_clone()?;
    Ok((
        size,
        flags,
        Sender { stream },
        Receiver {
            stream: BufReader::with_capacity(1 << 16, reader),
        },
    ))
}

/// Appends request `r` (and a write's `data`) to `out`, to be sent in one go.
pub fn encode(out: &mut Vec<u8>, r: &Request, data: Option<&[u8]>) {
    out.extend_from_slice(&r.to_bytes());
    if let Some(d) = data {
        out.extend_from_slice(d);
    }
}

impl Sender {
    /// Sends encoded requests.
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }
}

impl Receiver {
    /// The next simple reply: its error value and cookie.
    pub fn reply(&mut self) -> io::Result<(u32, u64)> {
        let s = &mut self.stream;
        let magic = u32::from_be_bytes(read_u(s)?);
        if magic != SIMPLE_REPLY_MAGIC {
            return Err(bad(format!("bad reply magic {magic:#x}")));
        }
        let error = u32::from_be_bytes(read_u(s)?);
        Ok((error, u64::from_be_bytes(read_u(s)?)))
    }

    /// A successful read's data, after its reply.
    pub fn data(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.stream.read_exact(buf)
    }
}
