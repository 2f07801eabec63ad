//! A minimal NBD client and a RAM-disk backend for the protocol tests.
#![allow(dead_code)]

use learnedftl_nbd::proto::*;
use learnedftl_nbd::server::{serve_connection, Backend, Cmd};
use learnedftl_nbd::{BlockSize, Export, NbdError};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A RAM disk: the simplest backend, to test the protocol alone.
pub struct Ram {
    pub data: Mutex<Vec<u8>>,
    pub flushes: Mutex<u32>,
    /// Whether the server may assume replies are never held (the reader writes them).
    pub inline: bool,
}

impl Ram {
    pub fn new(size: usize) -> Arc<Ram> {
        Self::with(size, false)
    }
    pub fn with(size: usize, inline: bool) -> Arc<Ram> {
        Arc::new(Ram {
            data: Mutex::new(vec![0; size]),
            flushes: Mutex::new(0),
            inline,
        })
    }
}

impl Backend for Ram {
    fn export(&self) -> Export {
        Export {
            name: "ram".into(),
            description: "a RAM disk".into(),
            size: self.data.lock().unwrap().len() as u64,
            flags: FLAG_HAS_FLAGS
                | FLAG_SEND_FLUSH
                | FLAG_SEND_FUA
                | FLAG_SEND_TRIM
                | FLAG_SEND_WRITE_ZEROES,
            block: BlockSize {
                min: 512,
                preferred: 4096,
                max_payload: 1 << 20,
            },
        }
    }

    fn holds_replies(&self) -> bool {
        !self.inline
    }

    fn execute(&self, _conn: u64, cmd: Cmd<'_>) -> Result<Option<Instant>, NbdError> {
        let mut d = self.data.lock().unwrap();
        match cmd {
            Cmd::Read { offset, buf } => {
                let o = offset as usize;
                buf.copy_from_slice(&d[o..o + buf.len()]);
            }
            Cmd::Write { offset, data, .. } => {
                let o = offset as usize;
                d[o..o + data.len()].copy_from_slice(data);
            }
            Cmd::Flush => *self.flushes.lock().unwrap() += 1,
            Cmd::Trim { offset, len, .. } | Cmd::WriteZeroes { offset, len, .. } => {
                d[offset as usize..(offset + len) as usize].fill(0);
            }
        }
        Ok(None)
    }
}

/// Serves one connection of `backend` on a socket pair; returns the client end and the
/// server thread (which returns how the connection ended).
pub fn connect<B: Backend>(backend: Arc<B>) -> (UnixStream, JoinHandle<std::io::Result<()>>) {
    let (c, s) = UnixStream::pair().unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let h = std::thread::spawn(move || serve_connection(s, &*backend, 0));
    (c, h)
}

pub fn u16_of(c: &mut UnixStream) -> u16 {
    let mut b = [0; 2];
    c.read_exact(&mut b).unwrap();
    u16::from_be_bytes(b)
}
pub fn u32_of(c: &mut UnixStream) -> u32 {
    let mut b = [0; 4];
    c.read_exact(&mut b).unwrap();
    u32::from_be_bytes(b)
}
pub fn u64_of(c: &mut UnixStream) -> u64 {
    let mut b = [0; 8];
    c.read_exact(&mut b).unwrap();
    u64::from_be_bytes(b)
}

/// Reads the greeting and sends the client flags.
pub fn greet(c: &mut UnixStream, client_flags: u32) -> u16 {
    assert_eq!(u64_of(c), NBDMAGIC);
    assert_eq!(u64_of(c), IHAVEOPT);
    let flags = u16_of(c);
    c.write_all(&client_flags.to_be_bytes()).unwrap();
    flags
}

pub fn send_opt(c: &mut UnixStream, opt: u32, data: &[u8]) {
    c.write_all(&IHAVEOPT.to_be_bytes()).unwrap();
    c.write_all(&opt.to_be_bytes()).unwrap();
    c.write_all(&(data.len() as u32).to_be_bytes()).unwrap();
    c.write_all(data).unwrap();
}

/// One option reply: (option, type, data).
pub fn opt_reply(c: &mut UnixStream) -> (u32, u32, Vec<u8>) {
    assert_eq!(u64_of(c), OPT_REPLY_MAGIC);
    let opt = u32_of(c);
    let kind = u32_of(c);
    let mut data = vec![0; u32_of(c) as usize];
    c.read_exact(&mut data).unwrap();
    (opt, kind, data)
}

/// `NBD_OPT_GO`/`INFO` data for `name` with information requests `reqs`.
pub fn go_data(name: &str, reqs: &[u16]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(reqs.len() as u16).to_be_bytes());
    for r in reqs {
        d.extend_from_slice(&r.to_be_bytes());
    }
    d
}

/// Handshake with `NBD_OPT_GO` on the default export; returns (size, transmission flags).
pub fn go(c: &mut UnixStream) -> (u64, u16) {
    greet(c, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
    send_opt(c, OPT_GO, &go_data("", &[INFO_BLOCK_SIZE]));
    let mut export = None;
    loop {
        let (opt, kind, data) = opt_reply(c);
        assert_eq!(opt, OPT_GO);
        match kind {
            REP_INFO if data[..2] == INFO_EXPORT.to_be_bytes() => {
                let size = u64::from_be_bytes(data[2..10].try_into().unwrap());
                let flags = u16::from_be_bytes(data[10..12].try_into().unwrap());
                export = Some((size, flags));
            }
            REP_INFO => {}
            REP_ACK => return export.expect("NBD_INFO_EXPORT before the ACK"),
            k => panic!("NBD_OPT_GO answered {k:#x}"),
        }
    }
}

/// Sends a request (with a write's data).
pub fn request(
    c: &mut UnixStream,
    cmd: Command,
    flags: u16,
    cookie: u64,
    offset: u64,
    data_or_len: Result<&[u8], u32>,
) {
    let len = match data_or_len {
        Ok(d) => d.len() as u32,
        Err(n) => n,
    };
    let r = Request {
        flags,
        cmd,
        cookie,
        offset,
        len,
    };
    c.write_all(&r.to_bytes()).unwrap();
    if let Ok(d) = data_or_len {
        c.write_all(d).unwrap();
    }
}

/// A simple reply's (error, cookie).
pub fn reply(c: &mut UnixStream) -> (u32, u64) {
    assert_eq!(u32_of(c), SIMPLE_REPLY_MAGIC);
    let e = u32_of(c);
    (e, u64_of(c))
}

/// A command and its reply: the error, and a successful read's data.
pub fn call(
    c: &mut UnixStream,
    cmd: Command,
    flags: u16,
    offset: u64,
    data_or_len: Result<&[u8], u32>,
) -> (u32, Vec<u8>) {
    request(c, cmd, flags, 42, offset, data_or_len);
    let (e, cookie) = reply(c);
    assert_eq!(cookie, 42);
    let mut data = Vec::new();
    if cmd == Command::Read && e == 0 {
        data = vec![0; data_or_len.err().unwrap() as usize];
        c.read_exact(&mut data).unwrap();
    }
    (e, data)
}

pub fn read(c: &mut UnixStream, offset: u64, len: u32) -> Vec<u8> {
    let (e, d) = call(c, Command::Read, 0, offset, Err(len));
    assert_eq!(e, 0, "read {offset}+{len}");
    d
}

pub fn write(c: &mut UnixStream, offset: u64, data: &[u8], flags: u16) {
    let (e, _) = call(c, Command::Write, flags, offset, Ok(data));
    assert_eq!(e, 0, "write {offset}+{}", data.len());
}

/// Disconnects and checks that the server ended the connection cleanly.
pub fn disconnect(mut c: UnixStream, h: JoinHandle<std::io::Result<()>>) {
    request(&mut c, Command::Disc, 0, 0, 0, Err(0));
    h.join().unwrap().unwrap();
    let mut b = [0u8; 1];
    assert_eq!(
        c.read(&mut b).unwrap(),
        0,
        "the server closes after NBD_CMD_DISC"
    );
}

/// Deterministic bytes.
pub fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
