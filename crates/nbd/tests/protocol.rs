//! The protocol over a socket pair, against a RAM disk: every handshake option, every
//! command, and the errors the server answers.

mod common;

use common::*;
use learnedftl_nbd::proto::*;
use learnedftl_nbd::NbdError;
use std::io::{Read, Write};

#[test]
fn greeting_offers_fixed_newstyle_and_no_zeroes() {
    let (mut c, h) = connect(Ram::new(1 << 20));
    assert_eq!(greet(&mut c, 0), FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
    drop(c);
    h.join().unwrap().unwrap();
}

#[test]
fn unknown_client_flags_drop_the_connection() {
    let (mut c, h) = connect(Ram::new(1 << 20));
    greet(&mut c, 1 << 5);
    assert!(h.join().unwrap().is_err());
    let mut b = [0u8; 1];
    assert_eq!(c.read(&mut b).unwrap_or(0), 0);
}

#[test]
fn list_info_unknown_options_and_abort() {
    let (mut c, h) = connect(Ram::new(1 << 20));
    greet(&mut c, FLAG_C_FIXED_NEWSTYLE);
    send_opt(&mut c, OPT_LIST, &[]);
    let (opt, kind, data) = opt_reply(&mut c);
    assert_eq!((opt, kind), (OPT_LIST, REP_SERVER));
    assert_eq!(&data[..4], &3u32.to_be_bytes());
    assert_eq!(&data[4..7], b"ram");
    assert_eq!(&data[7..], b"a RAM disk");
    assert_eq!(opt_reply(&mut c).1, REP_ACK);
    // LIST takes no data.
    send_opt(&mut c, OPT_LIST, b"x");
    assert_eq!(opt_reply(&mut c).1, REP_ERR_INVALID);
    // INFO on the export by name, with every information request.
    send_opt(
        &mut c,
        OPT_INFO,
        &go_data("ram", &[INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE, 99]),
    );
    let mut seen = Vec::new();
    loop {
        let (opt, kind, data) = opt_reply(&mut c);
        assert_eq!(opt, OPT_INFO);
        if kind == REP_ACK {
            break;
        }
        assert_eq!(kind, REP_INFO);
        let t = u16::from_be_bytes([data[0], data[1]]);
        match t {
            INFO_EXPORT => {
                assert_eq!(&data[2..10], &(1u64 << 20).to_be_bytes());
                assert_eq!(data.len(), 12);
            }
            INFO_NAME => assert_eq!(&data[2..], b"ram"),
            INFO_DESCRIPTION => assert_eq!(&data[2..], b"a RAM disk"),
            INFO_BLOCK_SIZE => {
                assert_eq!(data.len(), 14);
                assert_eq!(&data[2..6], &512u32.to_be_bytes());
                assert_eq!(&data[6..10], &4096u32.to_be_bytes());
                assert_eq!(&data[10..14], &(1u32 << 20).to_be_bytes());
            }
            t => panic!("unexpected info {t}"),
        }
        seen.push(t);
    }
    seen.sort();
    assert_eq!(
        seen,
        [INFO_EXPORT, INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE]
    );
    // Unknown export, malformed data, unknown and unsupported options.
    send_opt(&mut c, OPT_INFO, &go_data("nope", &[]));
    assert_eq!(opt_reply(&mut c).1, REP_ERR_UNKNOWN);
    send_opt(&mut c, OPT_GO, &go_data("nope", &[]));
    assert_eq!(opt_reply(&mut c).1, REP_ERR_UNKNOWN);
    let mut bad = go_data("ram", &[INFO_NAME]);
    bad.pop();
    send_opt(&mut c, OPT_GO, &bad);
    assert_eq!(opt_reply(&mut c).1, REP_ERR_INVALID);
    send_opt(&mut c, OPT_INFO, &[0, 0, 1]);
    assert_eq!(opt_reply(&mut c).1, REP_ERR_INVALID);
    for opt in [5, 8, 9, 10, 11, 0xdead] {
        send_opt(&mut c, opt, &[1, 2, 3]);
        assert_eq!(opt_reply(&mut c), (opt, REP_ERR_UNSUP, vec![]));
    }
    // Too much option data is drained and refused; the session goes on.
    send_opt(&mut c, 0x77, &vec![0; (MAX_OPTION_DATA + 1) as usize]);
    assert_eq!(opt_reply(&mut c).1, REP_ERR_TOO_BIG);
    send_opt(&mut c, OPT_ABORT, &[]);
    assert_eq!(opt_reply(&mut c), (OPT_ABORT, REP_ACK, vec![]));
    h.join().unwrap().unwrap();
}

use learnedftl_nbd::handshake::MAX_OPTION_DATA;

#[test]
fn export_name_enters_transmission_with_or_without_zeroes() {
    for (flags, pad) in [(FLAG_C_FIXED_NEWSTYLE, 124), (FLAG_C_NO_ZEROES, 0)] {
        let (mut c, h) = connect(Ram::new(1 << 20));
        greet(&mut c, flags);
        send_opt(&mut c, OPT_EXPORT_NAME, b"ram");
        assert_eq!(u64_of(&mut c), 1 << 20);
        let tflags = u16_of(&mut c);
        assert_eq!(tflags & FLAG_HAS_FLAGS, FLAG_HAS_FLAGS);
        let mut zeroes = vec![1u8; pad];
        c.read_exact(&mut zeroes).unwrap();
        assert!(zeroes.iter().all(|&b| b == 0));
        write(&mut c, 0, &[7; 512], 0);
        assert_eq!(read(&mut c, 0, 512), vec![7; 512]);
        disconnect(c, h);
    }
    // An unknown name cannot be refused politely: the server hangs up.
    let (mut c, h) = connect(Ram::new(1 << 20));
    greet(&mut c, FLAG_C_FIXED_NEWSTYLE);
    send_opt(&mut c, OPT_EXPORT_NAME, b"other");
    assert!(h.join().unwrap().is_err());
}

#[test]
fn every_command_and_flag() {
    let ram = Ram::new(1 << 20);
    let (mut c, h) = connect(ram.clone());
    let (size, flags) = go(&mut c);
    assert_eq!(size, 1 << 20);
    for f in [
        FLAG_SEND_FLUSH,
        FLAG_SEND_FUA,
        FLAG_SEND_TRIM,
        FLAG_SEND_WRITE_ZEROES,
    ] {
        assert_ne!(flags & f, 0, "{f:#x}");
    }
    let data = bytes(1, 8192);
    write(&mut c, 4096, &data, 0);
    write(&mut c, 512, &data[..512], CMD_FLAG_FUA);
    assert_eq!(read(&mut c, 4096, 8192), data);
    assert_eq!(read(&mut c, 512, 512), &data[..512]);
    assert_eq!(call(&mut c, Command::Flush, 0, 0, Err(0)).0, 0);
    assert_eq!(*ram.flushes.lock().unwrap(), 1);
    assert_eq!(
        call(&mut c, Command::Trim, CMD_FLAG_FUA, 4096, Err(4096)).0,
        0
    );
    assert_eq!(read(&mut c, 4096, 4096), vec![0; 4096]);
    let (e, _) = call(
        &mut c,
        Command::WriteZeroes,
        CMD_FLAG_NO_HOLE,
        8192,
        Err(4096),
    );
    assert_eq!(e, 0);
    assert_eq!(read(&mut c, 4096, 8192), vec![0; 8192]);
    // Zero-length reads and writes are harmless.
    assert_eq!(call(&mut c, Command::Read, 0, 0, Err(0)), (0, vec![]));
    assert_eq!(call(&mut c, Command::Write, 0, 0, Ok(&[])).0, 0);
    disconnect(c, h);
}

#[test]
fn bad_requests_get_errors_and_the_connection_goes_on() {
    // With a writer thread, and with replies written by the reader.
    for inline in [false, true] {
        bad_requests(inline);
    }
}

fn bad_requests(inline: bool) {
    let (mut c, h) = connect(Ram::with(1 << 20, inline));
    go(&mut c);
    let size = 1u64 << 20;
    let einval = NbdError::EINVAL.0;
    let enospc = NbdError::ENOSPC.0;
    for (cmd, flags, offset, arg, want) in [
        // Unknown command, unknown flag, a flag of another command.
        (Command::Unknown(77), 0, 0, Err(0), einval),
        (Command::Unknown(5), 0, 0, Err(0), einval),
        (Command::Read, 1 << 12, 0, Err(512), einval),
        (
            Command::Write,
            CMD_FLAG_NO_HOLE,
            0,
            Ok(&[1u8; 512][..]),
            einval,
        ),
        // Misaligned.
        (Command::Read, 0, 100, Err(512), einval),
        (Command::Write, 0, 0, Ok(&[1u8; 100][..]), einval),
        (Command::Trim, 0, 0, Err(10), einval),
        // Out of range.
        (Command::Read, 0, size, Err(512), einval),
        (Command::Trim, 0, size - 512, Err(1024), einval),
        (Command::Write, 0, size, Ok(&[1u8; 512][..]), enospc),
        (Command::WriteZeroes, 0, size - 512, Err(1024), enospc),
        (
            Command::Write,
            0,
            u64::MAX - 511,
            Ok(&[1u8; 512][..]),
            enospc,
        ),
        // Beyond the maximum payload (a write's payload is drained).
        (Command::Read, 0, 0, Err(2 << 20), einval),
        (Command::Write, 0, 0, Ok(&vec![1u8; 2 << 20][..]), einval),
    ] {
        let (e, _) = call(&mut c, cmd, flags, offset, arg);
        assert_eq!(e, want, "{cmd:?} flags {flags:#x} at {offset}");
    }
    // Nothing was written, and the connection still works.
    assert_eq!(read(&mut c, 0, 4096), vec![0; 4096]);
    disconnect(c, h);
}

#[test]
fn pipelined_requests_are_all_answered_by_cookie() {
    for inline in [false, true] {
        pipelined(inline);
    }
}

fn pipelined(inline: bool) {
    let (mut c, h) = connect(Ram::with(1 << 20, inline));
    go(&mut c);
    let n = 64u64;
    for i in 0..n {
        request(&mut c, Command::Write, 0, i, i * 4096, Ok(&[i as u8; 4096]));
    }
    let mut cookies: Vec<u64> = (0..n)
        .map(|_| reply(&mut c))
        .map(|(e, k)| {
            assert_eq!(e, 0);
            k
        })
        .collect();
    cookies.sort();
    assert_eq!(cookies, (0..n).collect::<Vec<_>>());
    for i in 0..n {
        assert_eq!(read(&mut c, i * 4096, 4096), vec![i as u8; 4096]);
    }
    disconnect(c, h);
}

#[test]
fn broken_connections_end_only_themselves() {
    for inline in [false, true] {
        broken_connections(inline);
    }
}

fn broken_connections(inline: bool) {
    let ram = Ram::with(1 << 20, inline);
    let (mut good, hg) = connect(ram.clone());
    go(&mut good);
    // EOF in the middle of a request header, in a write's payload, and a bad magic.
    for cut in [10usize, 28 + 100] {
        let (mut c, h) = connect(ram.clone());
        go(&mut c);
        let r = Request {
            flags: 0,
            cmd: Command::Write,
            cookie: 1,
            offset: 0,
            len: 4096,
        };
        let mut b = r.to_bytes().to_vec();
        b.extend_from_slice(&[9; 4096]);
        c.write_all(&b[..cut]).unwrap();
        drop(c);
        assert!(h.join().unwrap().is_err());
    }
    let (mut c, h) = connect(ram.clone());
    go(&mut c);
    c.write_all(&[0u8; 28]).unwrap();
    assert!(h.join().unwrap().is_err());
    // A clean EOF between requests is a clean end.
    let (mut c, h) = connect(ram.clone());
    go(&mut c);
    drop(c);
    h.join().unwrap().unwrap();
    // The first connection is unaffected; the cut write left no data.
    assert_eq!(read(&mut good, 0, 4096), vec![0; 4096]);
    disconnect(good, hg);
}
