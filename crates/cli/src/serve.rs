//! `learnedftl serve`: the simulated SSD over NBD (a thin layer over `learnedftl-nbd`).

use anyhow::{bail, Context, Result};
use clap::Args;
use learnedftl::config::{Capacity, DeviceConfig};
use learnedftl::device::StateFiles;
use learnedftl::engine::{SimOptions, Simulator, Verify};
use learnedftl::error::ConfigError;
use learnedftl::host::{short_of_memory, AvailableMemory, MEMORY_FLOOR_BYTES};
use learnedftl::params::{parse_duration_ns, Params};
use learnedftl::report;
use learnedftl::stats::LatencySummary;
use learnedftl::trace::{Format, TraceWriter};
use learnedftl_nbd::server::Connections;
use learnedftl_nbd::sim::{CutTrigger, Recorder, SimBackend, Timing};
use learnedftl_nbd::Listener;
use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of `serve`.
#[derive(Args)]
pub struct ServeOpts {
    /// FTL managing the device.
    #[arg(long, default_value = "ideal")]
    ftl: String,
    /// Device preset: paper, quick, tiny or 980pro (docs/device.md "Drive presets"), or a drive preset file (PATH.preset).
    #[arg(long, default_value = "quick")]
    preset: String,
    /// Scale the preset to this logical capacity (binary units: 512MiB, 32GiB, 1TiB; or bytes)
    /// by its blocks per plane, rounded up (docs/device.md "Capacity"): the export's size.
    #[arg(long, value_name = "SIZE")]
    capacity: Option<String>,
    /// Override a device or FTL parameter (repeatable), e.g. --set cmt_ratio=0.05.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// TCP address to listen on (port 0: any free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:10809", conflicts_with = "socket")]
    listen: String,
    /// Listen on this Unix socket instead of TCP.
    #[arg(long)]
    socket: Option<PathBuf>,
    /// realtime: hold each reply until its simulated completion; none: reply at once and
    /// record the simulated latency only.
    #[arg(long, default_value = "realtime", value_name = "realtime|none")]
    timing: String,
    /// Print the metrics so far at this wall-clock interval (e.g. 10s).
    #[arg(long, value_name = "DURATION")]
    stats_interval: Option<String>,
    /// Record every request the FTL serves as a trace, for replay in pure simulation.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Format of --record: fio-iolog, disksim, msr (the last two cannot express trims and
    /// flushes, which are then left out) or learnedftl (with each command's connection, issue
    /// and reply times, for closed-loop replay, and with `fdp_ruhs` each write's placement ID).
    #[arg(long, default_value = "fio-iolog", requires = "record")]
    record_format: String,
    /// Write the report (the keys of `run --json`) to PATH on exit, SIGINT or SIGTERM.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Keep page data in this sparse file (created or truncated; as large as the physical
    /// space) instead of memory, for devices larger than RAM.
    #[arg(long, value_name = "FILE")]
    payload_file: Option<PathBuf>,
    /// Export name (clients may also ask for the default export, "").
    #[arg(long, default_value = "learnedftl")]
    name: String,
    /// Answer NBD_EIO instead of wrong data: a read whose pages fail the oracle's stamp check
    /// or the byte check (a hash of each page's last written bytes) is refused, logged and
    /// counted (docs/nbd.md).
    #[arg(long)]
    verify: bool,
    /// Cut the power while serving (docs/nbd.md "Power cuts"): N, once in every N page-level
    /// requests at a seeded request and flash operation; or a DURATION (e.g. 2s), once in
    /// every such window of wall time at a seeded instant, striking inside the flash work
    /// (host writes, GC, mapping write-back) that follows. Each cut closes every connection
    /// and the FTL recovers from flash; SIGUSR1 cuts on demand.
    #[arg(long, value_name = "N|DURATION")]
    power_cut_every: Option<String>,
    /// Seed of where power cuts strike (reported).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep the device's flash in DIR across restarts (docs/power.md "Persistent state"): the
    /// page data in DIR/pages from the start, the rest of the flash saved to DIR/flash when
    /// the server stops (SIGINT/SIGTERM: an orderly shutdown, buffers flushed; SIGUSR2: the
    /// power pulled, volatile buffers lost). Started on a saved state, the FTL recovers from
    /// it, as after a power cut.
    #[arg(long, value_name = "DIR", conflicts_with = "payload_file")]
    state: Option<PathBuf>,
}

/// How often `--power-cut-every` cuts.
#[derive(Copy, Clone)]
enum CutEvery {
    Requests(u64),
    Wall(Duration),
}

impl CutEvery {
    fn parse(s: &str) -> Result<CutEvery> {
        let what = || {
            format!("--power-cut-every: '{s}' is neither a count of requests (e.g. 1000) nor a duration (e.g. 2s)")
        };
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return match s.parse::<u64>() {
                Ok(n @ 1..) => Ok(CutEvery::Requests(n)),
                _ => bail!("{}", what()),
            };
        }
        let ns = parse_duration_ns(s)
            .filter(|&ns| ns > 0)
            .with_context(what)?;
        Ok(CutEvery::Wall(Duration::from_nanos(ns)))
    }
}

/// Flash programs and erases after which an armed cut strikes, drawn from [0, this): within
/// the flash work of the next few requests.
const CUT_WITHIN_OPS: u64 = 64;

/// How long an armed cut may wait for flash work before it strikes between requests (an
/// idle or read-only device issues none).
const ARMED_GRACE: Duration = Duration::from_millis(100);

/// A configuration error, a capacity's named as the option that gave it.
fn capacity_error(e: ConfigError) -> anyhow::Error {
    match e {
        ConfigError::Capacity(message) => anyhow::anyhow!("--capacity: {message}"),
        e => e.into(),
    }
}

/// Serves until SIGINT or SIGTERM, then writes the report; SIGUSR1 and `--power-cut-every`
/// cut the power (every connection closes, the FTL recovers from flash and serving goes on).
pub fn serve(o: ServeOpts) -> Result<()> {
    let cut_every = o
        .power_cut_every
        .as_deref()
        .map(CutEvery::parse)
        .transpose()?;
    let timing: Timing = o
        .timing
        .parse()
        .map_err(anyhow::Error::msg)
        .context("--timing")?;
    let interval = o
        .stats_interval
        .as_deref()
        .map(|s| {
            parse_duration_ns(s)
                .filter(|&ns| ns > 0)
                .with_context(|| format!("--stats-interval: '{s}' is not a duration (e.g. 10s)"))
        })
        .transpose()?
        .map(Duration::from_nanos);
    let mut params = Params::new();
    for s in &o.set {
        params.insert_assignment(s, "--set")?;
    }
    let capacity = o
        .capacity
        .as_deref()
        .map(str::parse::<Capacity>)
        .transpose()
        .map_err(capacity_error)?;
    let mut device = DeviceConfig::from_params_sized(&o.preset, capacity.as_ref(), &mut params)
        .map_err(capacity_error)?;
    // Pages in a file take no memory (issue 13: refuse what cannot fit before building it).
    device.payloads = o.payload_file.is_none() && o.state.is_none();
    learnedftl::run::with_largest_cache(device.memory_estimate(true), &device, &params)
        .check(1, &AvailableMemory::now())?;
    device.payloads = true;
    let opts = SimOptions {
        verify: Verify::Count,
        check_invariants: false,
        ..SimOptions::default()
    };
    let mut sim = Simulator::new(&device, &o.ftl, params, opts)
        .map_err(|e| crate::params_error(e, &[&o.ftl]))?;
    let mut state = o.state.as_deref().map(State::open).transpose()?;
    let mut resumed = serde_json::Value::Null;
    match (&state, &o.payload_file) {
        (Some(st), _) if st.files.flash.exists() => {
            let reads = sim
                .resume(&st.files)
                .with_context(|| format!("--state {}", st.dir.display()))?;
            let secs = sim.clock().0 as f64 / 1e9;
            eprintln!(
                "resumed the state in {}: {} recovered in {secs:.6} simulated s, {reads} flash reads",
                st.dir.display(),
                o.ftl,
            );
            resumed =
                serde_json::json!({ "recovery_flash_reads": reads, "recovery_sim_seconds": secs });
        }
        (Some(st), _) => use_pages_file(&mut sim, &st.files.pages, "--state")?,
        (None, Some(path)) => use_pages_file(&mut sim, path, "--payload-file")?,
        (None, None) => {}
    }
    let record = o
        .record
        .as_ref()
        .map(|p| recorder(p, &o.record_format))
        .transpose()?;
    if let (Some(_), Some(why)) = (&cut_every, sim.power_cut_refusal()) {
        bail!("--power-cut-every: {why}");
    }
    let connections = Arc::new(Connections::default());
    let mut backend = SimBackend::new(sim, &o.name, timing, record)
        .map_err(anyhow::Error::msg)?
        .close_on_cut(connections.clone());
    if let Some(CutEvery::Requests(n)) = cut_every {
        backend
            .plan_cuts(n, o.seed)
            .map_err(anyhow::Error::msg)
            .context("--power-cut-every")?;
    }
    if o.verify {
        backend = backend
            .verify(|m| eprintln!("{m}"))
            .map_err(anyhow::Error::msg)?;
    }
    let backend = Arc::new(backend);

    let (listener, at) = match &o.socket {
        Some(path) => {
            remove_stale_socket(path)?;
            let l = UnixListener::bind(path)
                .with_context(|| format!("--socket: cannot listen on {}", path.display()))?;
            (Listener::Unix(l), format!("unix:{}", path.display()))
        }
        None => {
            let l = TcpListener::bind(&o.listen)
                .with_context(|| format!("--listen: cannot listen on {}", o.listen))?;
            let a = l.local_addr()?;
            if !a.ip().is_loopback() {
                eprintln!("warning: listening on {a}, not loopback: anyone who can reach it can read and write the device");
            }
            (Listener::Tcp(l), a.to_string())
        }
    };
    let g = &device.geometry;
    eprintln!(
        "serving {} on a {} device ({} logical, {} B pages), timing {timing}, export '{}'",
        o.ftl,
        o.preset,
        report::human_bytes(g.logical_bytes()),
        g.page_size,
        o.name
    );
    if let Some(note) = device.capacity_note() {
        eprintln!("{note}");
    }
    if let Some(c) = device.controller.describe(device.power_loss_protection) {
        eprintln!("{c}");
    }
    if let Some(f) = device.fdp.describe() {
        eprintln!("{f}");
    }
    if let Some(st) = state.as_mut() {
        st.serving = true;
    }
    // Scripts and tests wait for this line.
    println!("listening on {at}");
    std::io::stdout().flush()?;

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let cut = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, cut.clone())?;
    // With a state: SIGUSR2 pulls the power and stops (the state as a cut leaves it).
    let unplug = Arc::new(AtomicBool::new(false));
    if state.is_some() {
        signal_hook::flag::register(signal_hook::consts::SIGUSR2, unplug.clone())?;
        signal_hook::flag::register(signal_hook::consts::SIGUSR2, stop.clone())?;
    }
    let failed = Arc::new(std::sync::Mutex::new(None::<String>));
    {
        let (backend, failed, stop) = (backend.clone(), failed.clone(), stop.clone());
        std::thread::spawn(move || {
            let e = learnedftl_nbd::serve(listener, backend, connections, |m| eprintln!("{m}"));
            *failed.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(format!("accepting connections: {e:?}"));
            stop.store(true, Ordering::SeqCst);
        });
    }
    let mut next = interval.map(|i| Instant::now() + i);
    let mut look = Instant::now();
    let started = Instant::now();
    let mut timed = TimedCuts::new(cut_every, o.seed, started);
    let (mut signals, mut logged) = (0u64, 0usize);
    while !stop.load(Ordering::SeqCst) {
        let nap = timed
            .next
            .map_or(Duration::from_millis(50), |t| {
                t.saturating_duration_since(Instant::now())
            })
            .clamp(Duration::from_millis(1), Duration::from_millis(50));
        std::thread::sleep(nap);
        // The memory floor, as runs have it (docs/device.md "Memory"): the server stops, with
        // its report, rather than be killed by the kernel as the FTL's tables grow.
        if Instant::now() >= look {
            look = Instant::now() + Duration::from_secs(1);
            if let Some(short) = short_of_memory(MEMORY_FLOOR_BYTES) {
                *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!(
                    "memory: {short}: the FTL's state grew past what the estimate made before \
                     serving counts (docs/device.md \"Memory\"); the server stopped"
                ));
                break;
            }
        }
        if cut.swap(false, Ordering::SeqCst) {
            // Inside the flash work that follows, or between requests if none comes
            // (docs/nbd.md); the server keeps serving if refused.
            signals += 1;
            let ops = learnedftl::seed::mix(o.seed, signals, 2) % CUT_WITHIN_OPS;
            if let Err(why) = backend.arm_cut(CutTrigger::Signal, ops) {
                eprintln!("SIGUSR1: no power cut: {why}");
            }
        }
        if let Some(ops) = timed.due() {
            if let Err(why) = backend.arm_cut(CutTrigger::EveryDuration, ops) {
                eprintln!("--power-cut-every: no power cut: {why}");
            }
        }
        if let Some(Err(why)) = backend.strike_armed(ARMED_GRACE) {
            eprintln!("{why}");
        }
        // Cuts taken here and inside requests alike.
        for c in backend.cuts_since(&mut logged) {
            eprintln!("{c}");
        }
        if let (Some(at), Some(i)) = (next, interval) {
            if Instant::now() >= at {
                print_stats(&backend);
                next = Some(at + i);
            }
        }
    }

    let config = serde_json::json!({
        "device": device,
        "workload": {
            "nbd": {
                "listen": at,
                "timing": timing.to_string(),
                "export": o.name,
                "record": o.record.as_ref().map(|p| p.display().to_string()),
                "payload_file": o.payload_file.as_ref().map(|p| p.display().to_string()),
                "verify": o.verify,
                "power_cut_every": o.power_cut_every,
                "state": o.state.as_ref().map(|p| p.display().to_string()),
                "resumed": resumed,
            },
        },
        "verify": true,
    });
    let served = backend.report(&o.preset, o.seed, config);
    let r = &served.run;
    // Whoever started the server may have stopped reading its output: not a failure.
    let _ = writeln!(
        std::io::stdout(),
        "{}{} (docs/metrics.md: every column)\n{}{}\n{}",
        report::phases_table(&r.phases),
        report::columns::PHASES.legend,
        report::byte_checks_line(&r.result),
        lateness_line(served.lateness_us.as_ref(), served.reply_write_us.as_ref()),
        report::detail_table(r)
    );
    if let (n @ 1.., last) = backend.failures() {
        eprintln!("{n} requests failed; last: {}", last.unwrap_or_default());
    }
    backend.flush_record().context("--record")?;
    if let Some(st) = &state {
        let orderly = !unplug.load(Ordering::SeqCst);
        backend
            .power_off(orderly)
            .map_err(anyhow::Error::msg)
            .and_then(|()| st.save(&backend))
            .with_context(|| format!("--state {}: saving the flash", st.dir.display()))?;
        eprintln!(
            "flash saved to {} ({})",
            st.dir.display(),
            if orderly {
                "orderly shutdown: buffers flushed"
            } else {
                "power pulled: volatile buffers lost"
            }
        );
    }
    if let Some(path) = &o.json {
        let f = std::fs::File::create(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(f), &served)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &o.socket {
        std::fs::remove_file(path).ok();
    }
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        bail!("{e}");
    }
    Ok(())
}

/// The wall-clock windows of `--power-cut-every DURATION`: one cut armed at a seeded instant
/// of each.
struct TimedCuts {
    every: Option<Duration>,
    seed: u64,
    started: Instant,
    window: u64,
    /// When the current window's cut is armed (`None`: no timed cuts).
    next: Option<Instant>,
}

impl TimedCuts {
    fn new(every: Option<CutEvery>, seed: u64, started: Instant) -> TimedCuts {
        let every = match every {
            Some(CutEvery::Wall(d)) => Some(d),
            _ => None,
        };
        let mut t = TimedCuts {
            every,
            seed,
            started,
            window: 0,
            next: None,
        };
        t.next = t.instant();
        t
    }

    /// The seeded instant of the current window.
    fn instant(&self) -> Option<Instant> {
        let d = self.every?.as_nanos() as u64;
        let offset = learnedftl::seed::mix(self.seed, self.window, 0) % d;
        Some(self.started + Duration::from_nanos(self.window * d + offset))
    }

    /// If the current window's instant has come: the flash operations after which its cut
    /// strikes (and the next window begins).
    fn due(&mut self) -> Option<u64> {
        if Instant::now() < self.next? {
            return None;
        }
        let ops = learnedftl::seed::mix(self.seed, self.window, 1) % CUT_WITHIN_OPS;
        self.window += 1;
        self.next = self.instant();
        Some(ops)
    }
}

/// Keeps the device's page data in the file `path` (`option` names where it came from).
fn use_pages_file(sim: &mut Simulator, path: &std::path::Path, option: &str) -> Result<()> {
    let store = sim.device_mut().payloads_mut().expect("payloads are on");
    store
        .use_file(path)
        .with_context(|| format!("{option}: cannot use {}", path.display()))
}

/// A state directory in use (`--state`): a marker file says so while the server runs, so a
/// state whose server died without saving is not resumed (its page data is newer than its
/// saved flash).
struct State {
    dir: PathBuf,
    files: StateFiles,
    marker: PathBuf,
    /// Whether serving began: from then on only a save releases the directory.
    serving: bool,
}

impl Drop for State {
    fn drop(&mut self) {
        if !self.serving {
            std::fs::remove_file(&self.marker).ok();
        }
    }
}

impl State {
    fn open(dir: &std::path::Path) -> Result<State> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--state: cannot create {}", dir.display()))?;
        let marker = dir.join("serving");
        if marker.exists() {
            bail!(
                "--state {}: a server is using it, or one stopped without saving it (killed): \
                 its page data may be newer than its saved flash. Remove the directory to start \
                 afresh",
                dir.display()
            );
        }
        std::fs::write(&marker, format!("{}\n", std::process::id()))
            .with_context(|| format!("--state: cannot write {}", marker.display()))?;
        Ok(State {
            dir: dir.to_path_buf(),
            files: StateFiles::in_dir(dir),
            marker,
            serving: false,
        })
    }

    /// Saves the flash (the power is off) and releases the directory.
    fn save(&self, backend: &SimBackend) -> Result<()> {
        backend.with_sim(|s| s.save_state(&self.files))?;
        std::fs::remove_file(&self.marker)
            .with_context(|| format!("cannot remove {}", self.marker.display()))
    }
}

fn print_stats(backend: &SimBackend) {
    let m = backend.live_metrics();
    let (failures, last) = backend.failures();
    let mut out = report::phases_table(std::slice::from_ref(&m));
    out += &report::byte_checks_line(&m);
    out += &lateness_line(backend.lateness().as_ref(), backend.reply_writes().as_ref());
    if failures > 0 {
        out += &format!(
            "{failures} requests failed; last: {}\n",
            last.unwrap_or_default()
        );
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
}

/// Under `--timing realtime`, how late the replies sent so far left and how long their socket
/// writes took (docs/metrics.md); empty otherwise.
fn lateness_line(lateness: Option<&LatencySummary>, writes: Option<&LatencySummary>) -> String {
    match (lateness, writes) {
        (Some(l), Some(w)) => format!(
            "lateness: {} replies sent after their simulated completion by p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs; their socket writes took p50 {:.1} µs, p99 {:.1} µs\n",
            l.count, l.p50, l.p99, l.p999, l.max, w.p50, w.p99
        ),
        _ => String::new(),
    }
}

fn recorder(path: &PathBuf, format: &str) -> Result<Recorder> {
    let format: Format = format.parse().context("--record-format")?;
    let f = std::fs::File::create(path)
        .with_context(|| format!("--record: cannot create {}", path.display()))?;
    let out: Box<dyn Write + Send> = Box::new(std::io::BufWriter::new(f));
    TraceWriter::new(format, out).context("--record-format")
}

/// Removes a socket file left by an earlier server; refuses to remove anything else.
fn remove_stale_socket(path: &PathBuf) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)
            .with_context(|| format!("--socket: cannot remove stale {}", path.display())),
        Ok(_) => bail!("--socket: {} exists and is not a socket", path.display()),
        Err(_) => Ok(()),
    }
}
