//! Arbitrary bytes from a client never panic the server: raw garbage, and a valid handshake
//! followed by requests with arbitrary fields and payloads.

mod common;

use common::Ram;
use learnedftl::config::DeviceConfig;
use learnedftl::engine::{SimOptions, Simulator};
use learnedftl::params::Params;
use learnedftl_nbd::proto::*;
use learnedftl_nbd::server::{serve_connection, Backend, Stream};
use learnedftl_nbd::sim::{SimBackend, Timing};
use proptest::prelude::*;
use std::io::{self, Cursor, Read, Write};
use std::sync::{Arc, Mutex};

/// A connection whose client sends `input` and then closes; replies are discarded.
#[derive(Clone)]
struct Scripted(Arc<Mutex<Cursor<Vec<u8>>>>);

impl Read for Scripted {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        self.0.lock().unwrap().read(b)
    }
}
impl Write for Scripted {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
impl Stream for Scripted {
    fn try_clone(&self) -> io::Result<Self> {
        Ok(self.clone())
    }
    fn shutdown(&self) {}
}

fn run<B: Backend>(b: &B, input: Vec<u8>) {
    // Ok or Err: either way it returns, without a panic.
    let _ = serve_connection(Scripted(Arc::new(Mutex::new(Cursor::new(input)))), b, 0);
}

/// The client's side of a handshake that reaches transmission.
fn handshake() -> Vec<u8> {
    let mut v = (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES)
        .to_be_bytes()
        .to_vec();
    v.extend_from_slice(&IHAVEOPT.to_be_bytes());
    v.extend_from_slice(&OPT_GO.to_be_bytes());
    v.extend_from_slice(&6u32.to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    v
}

fn sim() -> SimBackend {
    let mut cfg = DeviceConfig::preset("tiny").unwrap();
    cfg.payloads = true;
    let s = Simulator::new(&cfg, "leaftl", Params::new(), SimOptions::default()).unwrap();
    SimBackend::new(s, "f", Timing::None, None).unwrap()
}

/// A request with arbitrary fields, biased towards valid commands, small lengths and offsets
/// near the end of the export, followed by up to 9000 payload bytes.
fn request() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![0u16..8, any::<u16>()],
        prop_oneof![0u16..4, any::<u16>()],
        prop_oneof![0u64..(130 << 20), any::<u64>()],
        prop_oneof![Just(0u32), Just(512), Just(4096), 0u32..9000, any::<u32>()],
        0usize..9000,
    )
        .prop_map(|(cmd, flags, offset, len, payload)| {
            let mut b = REQUEST_MAGIC.to_be_bytes().to_vec();
            b.extend_from_slice(&flags.to_be_bytes());
            b.extend_from_slice(&cmd.to_be_bytes());
            b.extend_from_slice(&7u64.to_be_bytes());
            b.extend_from_slice(&offset.to_be_bytes());
            b.extend_from_slice(&len.to_be_bytes());
            b.resize(REQUEST_LEN + payload.min(len as usize), 0x5a);
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn raw_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..2048)) {
        run(&*Ram::new(1 << 20), input.clone());
        let mut after = handshake();
        after.extend_from_slice(&input);
        run(&*Ram::new(1 << 20), after);
    }

    #[test]
    fn arbitrary_requests_never_panic(reqs in proptest::collection::vec(request(), 1..24)) {
        let mut input = handshake();
        reqs.iter().for_each(|r| input.extend_from_slice(r));
        run(&*Ram::new(1 << 20), input.clone());
        run(&sim(), input);
    }

    #[test]
    fn request_parsing_never_panics(h in proptest::array::uniform28(any::<u8>())) {
        let bs = BlockSize { min: 512, preferred: 4096, max_payload: 1 << 25 };
        if let Some(r) = Request::parse(&h) {
            let _ = r.check(u64::MAX, bs);
            let _ = r.check(0, bs);
            prop_assert_eq!(r.to_bytes(), h);
        }
    }
}
