//! `learnedftl check --through nbd`: the check's streams driven through the NBD server, so
//! what is compared is what the server sends its clients.
//!
//! The prepared simulator is served by a [`SimBackend`] (`serve`'s backend, replies at once)
//! on several connections at once, each served by the server's own connection code
//! ([`serve_connection`]: handshake, request parsing, replies) over a Unix socket pair. A
//! batch's operations go round-robin to the connections, all in flight together; each
//! connection's requests are sent by a thread of its own while its replies are read, so large
//! reads and writes never block each other. Power cuts strike between batches, as `kill -USR1`
//! does on `serve`.

use crate::client::{self, Receiver, Sender};
use crate::proto::{Command, Request, CMD_FLAG_FUA, CMD_FLAG_NO_HOLE};
use crate::server::{serve_connection, Backend};
use crate::sim::{SimBackend, Timing};
use learnedftl::check::stream::{Cut, HostOp, Kind};
use learnedftl::check::{Driver, DriverError, Ran};
use learnedftl::engine::Simulator;
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::sync::Arc;

/// One connection: a thread sending what it is given, and the reply half.
struct Conn {
    to_send: mpsc::Sender<Vec<u8>>,
    sent: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    replies: Receiver,
}

/// Drives check streams through the NBD server on `connections` connections.
pub struct NbdDriver {
    sim: Arc<SimBackend>,
    conns: Vec<Conn>,
    /// Request bytes per connection (reused through the sender threads).
    spare: Vec<Vec<u8>>,
}

impl NbdDriver {
    /// Serves `sim` over `connections` connections and connects to each.
    pub fn new(sim: Simulator, connections: u32) -> Result<NbdDriver, String> {
        let backend = Arc::new(SimBackend::new(sim, "check", Timing::None, None)?);
        Self::with_backend(backend.clone(), backend, connections)
    }

    /// Like [`NbdDriver::new`] with clients served by `backend`, a wrapper of `sim` (tests
    /// inject server faults this way).
    pub fn with_backend(
        sim: Arc<SimBackend>,
        backend: Arc<dyn Backend>,
        connections: u32,
    ) -> Result<NbdDriver, String> {
        let mut conns = Vec::new();
        for i in 0..connections.max(1) {
            let (c, s) = UnixStream::pair().map_err(|e| format!("socket pair: {e}"))?;
            let b = backend.clone();
            std::thread::spawn(move || serve_connection(s, &*b, i as u64));
            let (_size, _flags, sender, replies) =
                client::connect(c).map_err(|e| format!("connection {i}: handshake: {e}"))?;
            let (to_send, rx) = mpsc::channel::<Vec<u8>>();
            let (done, sent) = mpsc::channel();
            std::thread::spawn(move || send_loop(sender, rx, done));
            conns.push(Conn {
                to_send,
                sent,
                replies,
            });
        }
        Ok(NbdDriver {
            sim,
            spare: Vec::new(),
            conns,
        })
    }
}

/// Sends each buffer it receives, and hands it back (for reuse) with the outcome.
fn send_loop(
    mut s: Sender,
    rx: mpsc::Receiver<Vec<u8>>,
    done: mpsc::Sender<std::io::Result<Vec<u8>>>,
) {
    for bytes in rx {
        let r = s.send(&bytes).map(|()| bytes);
        if done.send(r).is_err() {
            return;
        }
    }
}

/// The NBD request of batch operation `i`.
fn request(op: &HostOp, i: usize) -> Request {
    let (cmd, extra) = match op.kind {
        Kind::Read => (Command::Read, 0),
        Kind::Write => (Command::Write, 0),
        Kind::Trim => (Command::Trim, 0),
        Kind::Flush => (Command::Flush, 0),
        Kind::WriteZeroes => (Command::WriteZeroes, 0),
        Kind::WriteZeroesNoHole => (Command::WriteZeroes, CMD_FLAG_NO_HOLE),
    };
    Request {
        flags: extra | if op.fua { CMD_FLAG_FUA } else { 0 },
        cmd,
        cookie: i as u64,
        offset: op.offset,
        len: op.len as u32,
    }
}

impl Driver for NbdDriver {
    fn cut(&mut self, _: Cut) -> Result<(), String> {
        self.sim.cut_power(crate::sim::CutTrigger::Signal).map(drop)
    }

    fn run_batch(&mut self, ops: &[HostOp], bufs: &mut [Vec<u8>]) -> Result<Ran, DriverError> {
        let n = self.conns.len();
        self.spare.resize_with(n, Vec::new);
        for (c, (conn, out)) in self.conns.iter().zip(self.spare.iter_mut()).enumerate() {
            let mut bytes = std::mem::take(out);
            bytes.clear();
            for i in (c..ops.len()).step_by(n) {
                let data = (ops[i].kind == Kind::Write).then(|| &bufs[i][..]);
                client::encode(&mut bytes, &request(&ops[i], i), data);
            }
            if !bytes.is_empty() {
                conn.to_send
                    .send(bytes)
                    .map_err(|_| (c, format!("connection {c}: its sender stopped")))?;
            }
        }
        for (c, conn) in self.conns.iter_mut().enumerate() {
            let expected = (c..ops.len()).step_by(n).count();
            for _ in 0..expected {
                let (error, cookie) = conn
                    .replies
                    .reply()
                    .map_err(|e| (c, format!("connection {c}: reading a reply: {e}")))?;
                let i = cookie as usize;
                if i >= ops.len() || i % n != c {
                    return Err((
                        c,
                        format!("connection {c}: reply to unknown cookie {cookie}"),
                    ));
                }
                if error != 0 {
                    return Err((i, format!("the server answered NBD error {error}")));
                }
                if ops[i].kind == Kind::Read {
                    conn.replies
                        .data(&mut bufs[i])
                        .map_err(|e| (i, format!("reading its data: {e}")))?;
                }
            }
            if expected > 0 {
                let bytes = conn
                    .sent
                    .recv()
                    .map_err(|_| (c, format!("connection {c}: its sender stopped")))?
                    .map_err(|e| (c, format!("connection {c}: sending: {e}")))?;
                self.spare[c] = bytes;
            }
        }
        Ok(Ran {
            ops: ops.len(),
            cut_after: false,
        })
    }

    fn with_sim(&mut self, f: &mut dyn FnMut(&mut Simulator)) {
        self.sim.with_sim(|s| f(s));
    }
}
