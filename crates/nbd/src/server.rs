//! The transmission phase and the accept loops.
//!
//! Each connection's reader parses requests in order, checks them and has the [`Backend`]
//! execute them. If the backend may hold replies (until a simulated completion), a second
//! thread, the connection's writer, sends each reply once it is due (sleeping with a timer
//! slack of 1 ns, then yielding in a loop for the last 50 µs; lingering in that loop for the
//! next reply before it blocks) and flushes when none is;
//! otherwise the reader writes each reply itself and flushes whenever no request is waiting.
//! Replies may thus leave out of order, as the protocol allows; cookies tell them apart. A
//! request the protocol lets us refuse gets an error reply and the connection goes on; only a
//! broken stream (bad magic, I/O error) ends it, and never another one.

use crate::handshake::{negotiate, Export, Outcome};
use crate::proto::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A command the server checked (in range, aligned, within the payload limit) for the
/// backend to execute: the library's byte-addressed host command.
pub use learnedftl::engine::bytes::Cmd;

/// What a server exports: the device behind every connection. Called from every
/// connection's thread; commands of one connection arrive in order.
pub trait Backend: Send + Sync + 'static {
    /// The export.
    fn export(&self) -> Export;
    /// Executes a command of connection `conn` (numbered from 0 in the order they were
    /// accepted); returns when its reply may be sent (`None`: at once).
    fn execute(&self, conn: u64, cmd: Cmd<'_>) -> Result<Option<Instant>, NbdError>;
    /// Whether [`Backend::execute`] may hold replies (return a time). If not, each
    /// connection's reader writes its replies itself, with no writer thread (faster).
    fn holds_replies(&self) -> bool {
        true
    }
    /// Called once a reply [`Backend::execute`] held has been sent: `late` is how long after
    /// its due time the socket write that carried it was issued, `write` how long that write
    /// took (the kernel copying the reply and waking the client: the host path's, not the
    /// server's).
    fn sent(&self, late: Duration, write: Duration) {
        let _ = (late, write);
    }
}

/// A stream a connection runs on.
pub trait Stream: Read + Write + Send + Sized + 'static {
    /// A second handle to the same connection (for the writer thread).
    fn try_clone(&self) -> io::Result<Self>;
    /// Closes both directions (wakes a reader blocked on the other handle).
    fn shutdown(&self);
}

impl Stream for TcpStream {
    fn try_clone(&self) -> io::Result<Self> {
        TcpStream::try_clone(self)
    }
    fn shutdown(&self) {
        let _ = TcpStream::shutdown(self, std::net::Shutdown::Both);
    }
}

impl Stream for UnixStream {
    fn try_clone(&self) -> io::Result<Self> {
        UnixStream::try_clone(self)
    }
    fn shutdown(&self) {
        let _ = UnixStream::shutdown(self, std::net::Shutdown::Both);
    }
}

/// Connections served at once; further ones are closed at once.
pub const MAX_CONNECTIONS: usize = 64;

/// A reply waiting for its time.
struct Reply {
    due: Option<Instant>,
    cookie: u64,
    error: NbdError,
    /// A successful read's data (an empty buffer otherwise).
    data: Vec<u8>,
}

impl Reply {
    fn key(&self) -> (Reverse<Option<Instant>>, u64) {
        (Reverse(self.due), self.cookie)
    }
}
impl PartialEq for Reply {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Reply {}
impl PartialOrd for Reply {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Reply {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
}

/// Serves connection number `conn` to the end: handshake, then requests until the client
/// disconnects or the stream breaks. Returns why it ended (`Ok` for a clean end).
pub fn serve_connection<S: Stream, B: Backend + ?Sized>(
    stream: S,
    backend: &B,
    conn: u64,
) -> io::Result<()> {
    let export = backend.export();
    let out = stream.try_clone()?;
    let mut rw = BufStream {
        r: BufReader::with_capacity(256 << 10, stream),
        w: BufWriter::with_capacity(256 << 10, out),
    };
    if negotiate(&mut rw, &export)? == Outcome::Closed {
        return Ok(());
    }
    let BufStream {
        r: mut reader,
        w: mut writer,
    } = rw;
    if !backend.holds_replies() {
        // Every reply leaves at once: the reader writes it, no thread hand-off per request.
        let mut sink = Inline {
            w: &mut writer,
            spare: Vec::new(),
        };
        let r = read_requests(&mut reader, backend, conn, &export, &mut sink);
        return r.and_then(|()| writer.flush());
    }
    let (tx, rx) = mpsc::channel::<Reply>();
    let (free_tx, free_rx) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|s| {
        let w = s.spawn(move || {
            let r = write_replies(&mut writer, rx, free_tx, backend);
            if r.is_err() {
                // Wake the reader: the connection is over.
                writer.get_ref().shutdown();
            }
            r
        });
        let mut sink = Queued { tx, free: free_rx };
        let r = read_requests(&mut reader, backend, conn, &export, &mut sink);
        drop(sink);
        let w = w
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("reply writer panicked")));
        r.and(w)
    })
}

/// Where the reader puts replies.
trait Replies {
    /// A buffer for the next request's data (recycled from earlier replies).
    fn buffer(&mut self) -> Vec<u8>;
    /// Sends or queues a reply; false if the connection's writer is gone.
    fn reply(&mut self, r: Reply) -> io::Result<bool>;
    /// No request is waiting to be read: make sure the client has every reply written so far.
    fn idle(&mut self) -> io::Result<()>;
}

/// Replies written by the reader itself, at once; flushed whenever no request is waiting.
struct Inline<'a, W: Write> {
    w: &'a mut BufWriter<W>,
    spare: Vec<u8>,
}

impl<W: Write> Replies for Inline<'_, W> {
    fn buffer(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.spare)
    }
    fn reply(&mut self, r: Reply) -> io::Result<bool> {
        self.w.write_all(&simple_reply(r.error, r.cookie))?;
        self.w.write_all(&r.data)?;
        self.spare = r.data;
        Ok(true)
    }
    fn idle(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// Replies queued for the writer thread, which sends each when due.
struct Queued {
    tx: Sender<Reply>,
    free: Receiver<Vec<u8>>,
}

impl Replies for Queued {
    fn buffer(&mut self) -> Vec<u8> {
        self.free.try_recv().unwrap_or_default()
    }
    fn reply(&mut self, r: Reply) -> io::Result<bool> {
        Ok(self.tx.send(r).is_ok())
    }
    fn idle(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads, checks and executes requests until `NBD_CMD_DISC`, EOF or a broken stream.
fn read_requests<R: Read, B: Backend + ?Sized>(
    r: &mut BufReader<R>,
    backend: &B,
    conn: u64,
    export: &Export,
    replies: &mut impl Replies,
) -> io::Result<()> {
    let mut header = [0u8; REQUEST_LEN];
    loop {
        if r.buffer().is_empty() {
            replies.idle()?;
        }
        if !read_header(r, &mut header)? {
            return Ok(());
        }
        let Some(req) = Request::parse(&header) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bad request magic",
            ));
        };
        if req.cmd == Command::Disc {
            return Ok(());
        }
        let mut data = replies.buffer();
        data.clear();
        let checked = req.check(export.size, export.block);
        // A write's payload follows its header even when the write is refused.
        let payload = req.payload_len();
        if checked.is_err() || payload > export.block.max_payload as u64 {
            io::copy(&mut r.take(payload), &mut io::sink())?;
        } else {
            data.resize(payload as usize, 0);
            r.read_exact(&mut data)?;
        }
        let result = checked.and_then(|()| execute(backend, conn, &req, &mut data));
        let (due, error) = match result {
            Ok(due) => (due, NbdError(0)),
            Err(e) => (None, e),
        };
        if error != NbdError(0) || req.cmd != Command::Read {
            data.clear();
        }
        let reply = Reply {
            due,
            cookie: req.cookie,
            error,
            data,
        };
        if !replies.reply(reply)? {
            // The writer stopped: the stream is broken.
            return Ok(());
        }
    }
}

/// Reads a request header; false on a clean EOF before its first byte.
fn read_header<R: Read>(r: &mut R, b: &mut [u8; REQUEST_LEN]) -> io::Result<bool> {
    let mut got = 0;
    while got < REQUEST_LEN {
        match r.read(&mut b[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Hands a checked request to the backend; a read's data lands in `data`.
fn execute<B: Backend + ?Sized>(
    backend: &B,
    conn: u64,
    req: &Request,
    data: &mut Vec<u8>,
) -> Result<Option<Instant>, NbdError> {
    let fua = req.flags & CMD_FLAG_FUA != 0;
    let (offset, len) = (req.offset, req.len as u64);
    if len == 0 && req.cmd != Command::Flush {
        // Allowed but meaningless: nothing to do.
        return Ok(None);
    }
    let cmd = match req.cmd {
        Command::Read => {
            data.resize(len as usize, 0);
            Cmd::Read { offset, buf: data }
        }
        Command::Write => Cmd::Write {
            offset,
            data,
            fua,
            placement: 0,
        },
        Command::Flush => Cmd::Flush,
        Command::Trim => Cmd::Trim { offset, len, fua },
        Command::WriteZeroes => Cmd::WriteZeroes {
            offset,
            len,
            fua,
            no_hole: req.flags & CMD_FLAG_NO_HOLE != 0,
        },
        Command::Disc | Command::Unknown(_) => return Err(NbdError::EINVAL),
    };
    backend.execute(conn, cmd)
}

/// Sends replies when due, oldest deadline first; flushes whenever none is due, and tells
/// `backend` how late each held reply left.
fn write_replies<W: Write, B: Backend + ?Sized>(
    w: &mut BufWriter<W>,
    rx: Receiver<Reply>,
    free: Sender<Vec<u8>>,
    backend: &B,
) -> io::Result<()> {
    exact_timers();
    let mut pending: BinaryHeap<Reply> = BinaryHeap::new();
    // Due times of the held replies written since the last flush: they leave with it.
    let mut unsent: Vec<Instant> = Vec::new();
    let mut open = true;
    loop {
        while let Ok(r) = rx.try_recv() {
            pending.push(r);
        }
        let now = Instant::now();
        while pending
            .peek()
            .is_some_and(|r| r.due.is_none_or(|d| d <= now))
        {
            let r = pending.pop().expect("peeked");
            w.write_all(&simple_reply(r.error, r.cookie))?;
            w.write_all(&r.data)?;
            unsent.extend(r.due);
            // Recycled by the reader: no allocation per read.
            let _ = free.send(r.data);
        }
        if !open && pending.is_empty() {
            return flush_sent(w, &mut unsent, backend);
        }
        if open {
            // Replies queued meanwhile go out in the same batch.
            match rx.try_recv() {
                Ok(r) => {
                    pending.push(r);
                    continue;
                }
                Err(TryRecvError::Disconnected) => open = false,
                Err(TryRecvError::Empty) => {}
            }
        }
        flush_sent(w, &mut unsent, backend)?;
        // Wait for the next reply, or until the earliest pending one is due. With nothing
        // pending and the reader done, the next round returns.
        let due = pending.peek().and_then(|r| r.due);
        if open || due.is_some() {
            match wait(&rx, open, due) {
                Woken::Due => {}
                Woken::Reply(r) => pending.push(r),
                Woken::Closed => open = false,
            }
        }
    }
}

/// How long before a reply is due its writer stops sleeping and yields the CPU in a loop
/// until the due time instead. A thread woken from a timed sleep runs tens of µs late on a
/// busy machine; one that checks the clock in a loop, a few µs (docs/nbd.md, "Lateness, and
/// the host path's own cost"). The loop yields, so another thread that needs the core gets it.
const SPIN: Duration = Duration::from_micros(50);

/// How long a writer with no reply pending keeps checking for the next one in the same loop
/// before it blocks: a blocked writer woke ~20 µs after its reply was handed over (a virtual
/// CPU halted meanwhile), half a 40 µs read, and sent 0.5 % of the replies late.
const LINGER: Duration = Duration::from_micros(200);

/// What ended a writer's [`wait`].
enum Woken {
    /// The due time came.
    Due,
    /// A reply came from the reader first.
    Reply(Reply),
    /// The reader is done: no reply will come.
    Closed,
}

/// Waits until `due`, or (if the reader is still `open`) for its next reply if that comes
/// first: sleeps until [`SPIN`] before `due`, then yields in a loop. With no `due` (the
/// reader must be open), yields in a loop for [`LINGER`], then blocks.
fn wait(rx: &Receiver<Reply>, open: bool, due: Option<Instant>) -> Woken {
    match due {
        Some(due) => block(rx, open, Some(due.checked_sub(SPIN).unwrap_or(due)))
            .or_else(|| spin(rx, open, due))
            .unwrap_or(Woken::Due),
        None => spin(rx, open, Instant::now() + LINGER)
            .or_else(|| block(rx, open, None))
            .unwrap_or(Woken::Closed),
    }
}

/// Yields the CPU in a loop until `until`, checking for the reader's next reply if `open`:
/// `None` if none came.
fn spin(rx: &Receiver<Reply>, open: bool, until: Instant) -> Option<Woken> {
    while Instant::now() < until {
        if open {
            match rx.try_recv() {
                Ok(r) => return Some(Woken::Reply(r)),
                Err(TryRecvError::Disconnected) => return Some(Woken::Closed),
                Err(TryRecvError::Empty) => {}
            }
        }
        std::thread::yield_now();
    }
    None
}

/// Sleeps until `until` (forever if `None`), or while `open` until the reader's next reply:
/// `None` if the time came first.
fn block(rx: &Receiver<Reply>, open: bool, until: Option<Instant>) -> Option<Woken> {
    match (until, open) {
        (None, true) => Some(rx.recv().map_or(Woken::Closed, Woken::Reply)),
        (None, false) => Some(Woken::Closed),
        (Some(t), open) => {
            let now = Instant::now();
            if now >= t {
                None
            } else if !open {
                std::thread::sleep(t - now);
                None
            } else {
                match rx.recv_timeout(t - now) {
                    Err(RecvTimeoutError::Timeout) => None,
                    Ok(r) => Some(Woken::Reply(r)),
                    Err(RecvTimeoutError::Disconnected) => Some(Woken::Closed),
                }
            }
        }
    }
}

/// Makes this thread's timed waits end on time: Linux lets a sleep overrun by the thread's
/// timer slack (50 µs by default) to batch wake-ups, which a reply held for its simulated
/// completion cannot afford. Best effort: on failure the default slack stays.
fn exact_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes an integer and changes only this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Flushes the replies written, then tells `backend` how late each of those held (`unsent`,
/// their due times) left: when the flush was issued (a reply larger than the buffer was
/// written before, so this errs late), and how long it took.
fn flush_sent<W: Write, B: Backend + ?Sized>(
    w: &mut BufWriter<W>,
    unsent: &mut Vec<Instant>,
    backend: &B,
) -> io::Result<()> {
    let issued = Instant::now();
    w.flush()?;
    let write = issued.elapsed();
    for due in unsent.drain(..) {
        backend.sent(issued.saturating_duration_since(due), write);
    }
    Ok(())
}

/// A buffered reader and writer over the two handles of one connection.
struct BufStream<S: Stream> {
    r: BufReader<S>,
    w: BufWriter<S>,
}

impl<S: Stream> Read for BufStream<S> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        self.r.read(b)
    }
}

impl<S: Stream> Write for BufStream<S> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.w.write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// A listening socket: TCP or Unix.
pub enum Listener {
    /// TCP.
    Tcp(TcpListener),
    /// A Unix socket.
    Unix(UnixListener),
}

/// An accepted connection.
enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    /// What closes this connection from another thread.
    fn closer(&self) -> io::Result<Box<dyn Fn() + Send>> {
        Ok(match self {
            Conn::Tcp(s) => {
                let s = s.try_clone()?;
                Box::new(move || Stream::shutdown(&s))
            }
            Conn::Unix(s) => {
                let s = s.try_clone()?;
                Box::new(move || Stream::shutdown(&s))
            }
        })
    }
}

impl Listener {
    /// The next connection, and who it is from.
    fn accept(&self) -> io::Result<(Conn, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, a) = l.accept()?;
                // Replies are flushed when none is due; Nagle would only delay them.
                s.set_nodelay(true)?;
                Ok((Conn::Tcp(s), a.to_string()))
            }
            Listener::Unix(l) => Ok((Conn::Unix(l.accept()?.0), "unix socket".into())),
        }
    }
}

/// The connections a server is serving, so that a power cut can close them all at once (the
/// link to a drive that lost its power is gone: clients see a disconnect, fail what they had
/// in flight, and connect again).
#[derive(Default)]
pub struct Connections {
    open: std::sync::Mutex<Open>,
}

/// Open connections' closers by connection number, the next number to give, and the first
/// number the last closing spared.
#[derive(Default)]
struct Open {
    closers: Vec<(u64, Box<dyn Fn() + Send>)>,
    next: u64,
    closed_below: u64,
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Numbers a new connection and registers `close` to end it; under the lock that
    /// [`Connections::close_all`] takes, so no connection escapes a closing.
    fn open(&self, close: Box<dyn Fn() + Send>) -> u64 {
        let mut o = self.lock();
        let id = o.next;
        o.next += 1;
        o.closers.push((id, close));
        id
    }

    /// Connection `id` ended; whether a closing ended it.
    fn ended(&self, id: u64) -> bool {
        let mut o = self.lock();
        o.closers.retain(|(c, _)| *c != id);
        id < o.closed_below
    }

    /// Closes every open connection (both directions: blocked readers wake, replies not yet
    /// sent are dropped). Returns how many were open, and the number the next connection will
    /// get: every connection numbered below it is closed.
    pub fn close_all(&self) -> (usize, u64) {
        let mut o = self.lock();
        for (_, close) in &o.closers {
            close();
        }
        o.closed_below = o.next;
        (o.closers.len(), o.next)
    }
}

/// Accepts connections forever, each served on a thread of its own (at most
/// [`MAX_CONNECTIONS`] at once) and registered in `connections` (numbered from 0 in the order
/// accepted). A connection's failure is reported to `log` and ends only it.
pub fn serve<B: Backend>(
    listener: Listener,
    backend: Arc<B>,
    connections: Arc<Connections>,
    log: impl Fn(String) + Send + Sync + 'static,
) -> io::Result<()> {
    let log = Arc::new(log);
    let live = Arc::new(AtomicUsize::new(0));
    loop {
        let (conn, peer) = match listener.accept() {
            Ok(c) => c,
            // The client gave up before we accepted it: not the listener's failure.
            Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
            Err(e) => return Err(e),
        };
        if live.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            live.fetch_sub(1, Ordering::SeqCst);
            log(format!(
                "connection ({peer}) refused: {MAX_CONNECTIONS} connections already"
            ));
            continue;
        }
        let id = match conn.closer() {
            Ok(close) => connections.open(close),
            Err(e) => {
                live.fetch_sub(1, Ordering::SeqCst);
                log(format!("connection ({peer}): {e}"));
                continue;
            }
        };
        let (backend, live, log, connections) = (
            backend.clone(),
            live.clone(),
            log.clone(),
            connections.clone(),
        );
        std::thread::spawn(move || {
            let r = match conn {
                Conn::Tcp(s) => serve_connection(s, &*backend, id),
                Conn::Unix(s) => serve_connection(s, &*backend, id),
            };
            match (r, connections.ended(id)) {
                (_, true) => log(format!(
                    "connection {} ({peer}) closed by a power cut",
                    id + 1
                )),
                (Err(e), false) => log(format!("connection {} ({peer}): {e}", id + 1)),
                (Ok(()), false) => {}
            }
            live.fetch_sub(1, Ordering::SeqCst);
        });
    }
}
