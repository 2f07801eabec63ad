//! `learnedftl check` through the NBD server: streams pass on correct FTLs with power cuts
//! between batches, and a server that answers a read with stale bytes is caught, shrunk and
//! replayed.

use learnedftl::check::{self, CheckReport, CheckSpec, Driver, ReplayFile, RunOptions, Through};
use learnedftl::engine::{NoProgress, Simulator};
use learnedftl_nbd::check::NbdDriver;
use learnedftl_nbd::server::{Backend, Cmd};
use learnedftl_nbd::sim::{SimBackend, Timing};
use learnedftl_nbd::{Export, NbdError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn spec(ftl: &str, ops: u64, cut_every: u64, connections: u32) -> CheckSpec {
    CheckSpec {
        ftl: ftl.into(),
        preset: "tiny".into(),
        capacity: None,
        set: Vec::new(),
        seed: 3,
        ops,
        cut_every,
        through: Through::Nbd,
        connections,
        blank: false,
    }
}

fn opts(name: &str) -> RunOptions {
    RunOptions {
        shrink_time: Duration::from_secs(60),
        failures_dir: std::env::temp_dir().join(format!("nbd-check-{}-{name}", std::process::id())),
    }
}

fn run(
    spec: &CheckSpec,
    ops: Option<Vec<check::stream::HostOp>>,
    opts: &RunOptions,
    stale: bool,
) -> CheckReport {
    let connections = spec.connections;
    let mut make = |sim: Simulator| -> Result<Box<dyn Driver>, String> {
        if !stale {
            return Ok(Box::new(NbdDriver::new(sim, connections)?));
        }
        let inner = Arc::new(SimBackend::new(sim, "check", Timing::None, None)?);
        let backend = Arc::new(Stale {
            inner: inner.clone(),
            last: Mutex::new(Vec::new()),
        });
        Ok(Box::new(NbdDriver::with_backend(
            inner,
            backend,
            connections,
        )?))
    };
    check::run(spec, ops, opts, &mut make, &mut NoProgress).unwrap()
}

#[test]
fn checks_pass_through_the_server_with_power_cuts() {
    for ftl in ["ideal", "leaftl", "learnedftl"] {
        let r = run(&spec(ftl, 3000, 300, 4), None, &opts(ftl), false);
        assert!(r.failures.is_empty(), "{ftl}: {:?}", r.failures);
        assert_eq!(r.ops, 3000);
        assert!(r.power_cuts >= 3 && r.reads_checked > 1000, "{ftl}: {r:?}");
    }
}

/// The cache contracts through the server, FLUSH and FUA in the stream: behind a volatile
/// write buffer the check allows unflushed writes to be lost and passes; with power-loss
/// protection it allows nothing acknowledged to be lost and passes; a drive that ignores
/// FLUSH (`flush=ignore`) loses flushed writes, and the check catches it.
#[test]
fn each_cache_contract_is_held_and_a_broken_flush_is_caught() {
    let buffer = ["write_buffer=256KiB", "write_buffer_drain=full"];
    for (extra, passes) in [
        (None, true),
        (Some("power_loss_protection=on"), true),
        (Some("flush=ignore"), false),
    ] {
        let mut s = spec("tpftl", 10_000, 300, 2);
        s.set = buffer.iter().chain(&extra).map(|x| x.to_string()).collect();
        let r = run(&s, None, &opts(&format!("contract-{passes}")), false);
        assert_eq!(r.failures.is_empty(), passes, "{extra:?}: {:?}", r.failures);
        if !passes {
            let f = &r.failures[0];
            assert!(f.to_string().contains("a flushed write was lost"), "{f}");
        }
    }
}

/// A server bug: reads of some offsets are answered with the bytes of the previous read
/// (a reused reply buffer), which no check inside the simulator can see.
struct Stale {
    inner: Arc<SimBackend>,
    last: Mutex<Vec<u8>>,
}

impl Backend for Stale {
    fn export(&self) -> Export {
        self.inner.export()
    }
    fn holds_replies(&self) -> bool {
        self.inner.holds_replies()
    }
    fn execute(&self, conn: u64, cmd: Cmd<'_>) -> Result<Option<Instant>, NbdError> {
        let Cmd::Read { offset, buf } = cmd else {
            return self.inner.execute(conn, cmd);
        };
        let mut last = self.last.lock().unwrap();
        if offset / 512 % 97 == 0 && last.len() >= buf.len() {
            buf.copy_from_slice(&last[..buf.len()]);
            return Ok(None);
        }
        let r = self.inner.execute(
            conn,
            Cmd::Read {
                offset,
                buf: &mut *buf,
            },
        );
        last.clear();
        last.extend_from_slice(buf);
        r
    }
}

#[test]
fn a_server_returning_a_stale_buffer_is_caught_shrunk_and_replayed() {
    let s = spec("dftl", 20_000, 0, 1);
    let o = opts("stale");
    let r = run(&s, None, &o, true);
    let f = r.failures.first().expect("the stale buffer is caught");
    assert!(f.what.contains("wrong bytes"), "{f}");
    let n = f.stream_ops.unwrap();
    assert!(n <= 40, "shrunk to {n} operations only: {f}");
    let file: ReplayFile =
        serde_json::from_str(&std::fs::read_to_string(f.replay_file.as_ref().unwrap()).unwrap())
            .unwrap();
    let again = run(&file.spec, Some(file.ops), &o, true);
    assert!(!again.failures.is_empty(), "the replay passes");
    std::fs::remove_dir_all(&o.failures_dir).unwrap();
}

#[test]
fn the_stale_buffer_server_passes_without_its_bug() {
    // The same stream on the plain server: the failure above is the wrapper's, not the FTL's.
    let r = run(&spec("dftl", 3000, 0, 1), None, &opts("plain"), false);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
}
