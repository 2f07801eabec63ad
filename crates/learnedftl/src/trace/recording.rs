//! learnedftl recordings (`serve --record-format learnedftl`): every page-level request the
//! server gave the FTL, with when its host command was issued and when its reply was sent, so
//! a closed-loop replay knows what each request waited for (docs/traces.md "Recordings").
//!
//! CSV, one request a line: `issue_ns,done_ns,conn,op,offset,len[,placement]` — nanoseconds
//! since the recording started, the NBD connection (0, 1, …), `read`, `write`, `trim` or
//! `flush`, bytes, and optionally a write's FDP placement ID (docs/fdp.md; the server writes
//! it on a device with FDP handles, empty for other operations). A first line naming the columns is a header; `#` lines are comments (the server
//! writes `# start_unix_ns=N`, the wall-clock instant of time 0, so phase marks taken by a
//! script can be placed on the recording's clock). A command the server served as several
//! page-level requests (a read-modify-write) has a line for each, with the command's times.

use super::error::{FieldError, LineErrorKind, TraceError};
use super::fields::{op_word, parse_u64, word_op, Fields, Sep};
use super::{Parsed, TraceRecord};
use std::io::Write;

const FIELDS: &[&str] = &[
    "issue_ns",
    "done_ns",
    "conn",
    "op",
    "offset",
    "len",
    "placement",
];

/// The header line the server writes.
pub const HEADER: &str = "issue_ns,done_ns,conn,op,offset,len";

/// The header line of a recording with the placement column (a server on a device with FDP
/// handles).
pub const HEADER_PLACED: &str = "issue_ns,done_ns,conn,op,offset,len,placement";

/// Parse one line.
pub(crate) fn parse(line: &[u8]) -> Result<Parsed, FieldError> {
    let mut f = Fields::new(line, Sep::Comma, FIELDS);
    let issue = f.next()?;
    if issue.eq_ignore_ascii_case(b"issue_ns") {
        return Ok(Parsed::Ignored);
    }
    let time_ns = parse_u64("issue_ns", issue)?;
    let done_ns = f.u64()?;
    if done_ns < time_ns {
        return Err(FieldError::new(
            "done_ns",
            LineErrorKind::Invalid("earlier than issue_ns"),
            done_ns.to_string().as_bytes(),
        ));
    }
    let device = f.u32()?;
    let op = f.next()?;
    let op = word_op(op, &[b"flush"])
        .ok_or_else(|| FieldError::new("op", LineErrorKind::UnknownOp, op))?;
    let offset = f.u64()?;
    let len = f.u64()?;
    // An optional seventh column: the write's FDP placement ID (docs/fdp.md), empty where
    // there is none (other operations in a recording that has the column).
    let placement = match f.remaining() {
        0 => None,
        _ => match f.next()? {
            b"" => None,
            t => Some(u16::try_from(parse_u64("placement", t)?).map_err(|_| {
                FieldError::new("placement", LineErrorKind::Invalid("above 65535"), t)
            })?),
        },
    };
    f.end()?;
    Ok(Parsed::Record(TraceRecord {
        placement,
        line: 0,
        time_ns,
        op,
        offset,
        len,
        device,
        done_ns: Some(done_ns),
    }))
}

/// Writes the header: a comment naming the format, then the column names (with `placement`
/// if the lines carry it).
pub(crate) fn write_header<W: Write + ?Sized>(
    w: &mut W,
    placement: bool,
) -> Result<(), TraceError> {
    let columns = if placement { HEADER_PLACED } else { HEADER };
    writeln!(w, "# learnedftl recording\n{columns}").map_err(TraceError::Write)
}

/// Write one record (a record without `done_ns` completes when issued), with the placement
/// column if `placement` (the record's placement ID, or empty without one).
pub(crate) fn write<W: Write + ?Sized>(
    rec: &TraceRecord,
    w: &mut W,
    placement: bool,
) -> Result<(), TraceError> {
    write!(
        w,
        "{},{},{},{},{},{}",
        rec.time_ns,
        rec.done_ns.unwrap_or(rec.time_ns),
        rec.device,
        op_word(rec.op, "flush"),
        rec.offset,
        rec.len
    )
    .map_err(TraceError::Write)?;
    match (placement, rec.placement) {
        (false, _) => writeln!(w),
        (true, Some(p)) => writeln!(w, ",{p}"),
        (true, None) => writeln!(w, ","),
    }
    .map_err(TraceError::Write)
}

/// The `start_unix_ns` a recording's comment lines give, if any.
pub fn start_unix_ns(comment: &str) -> Option<u128> {
    comment
        .trim_start_matches(['#', ' '])
        .strip_prefix("start_unix_ns=")?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Op;

    #[test]
    fn recording_lines_round_trip() {
        let rec = TraceRecord {
            placement: None,
            line: 0,
            time_ns: 1200,
            op: Op::Write,
            offset: 8192,
            len: 4096,
            device: 2,
            done_ns: Some(95_000),
        };
        let mut out = Vec::new();
        write(&rec, &mut out, false).unwrap();
        assert_eq!(out, b"1200,95000,2,write,8192,4096\n");
        match parse(&out[..out.len() - 1]).unwrap() {
            Parsed::Record(r) => assert_eq!(r, rec),
            Parsed::Ignored => panic!("a request"),
        }
        assert!(matches!(parse(HEADER.as_bytes()), Ok(Parsed::Ignored)));
        assert!(parse(b"5,4,0,read,0,4096").is_err(), "done before issue");
        assert!(parse(b"5,6,0,erase,0,4096").is_err());
        // The optional placement column (docs/fdp.md).
        match parse(b"5,6,0,write,0,4096,3").unwrap() {
            Parsed::Record(r) => assert_eq!(r.placement, Some(3)),
            Parsed::Ignored => panic!("a request"),
        }
        assert!(parse(b"5,6,0,write,0,4096,70000").is_err());
        assert!(parse(b"5,6,0,write,0,4096,1,2").is_err());
        assert!(matches!(
            parse(HEADER_PLACED.as_bytes()),
            Ok(Parsed::Ignored)
        ));
        // Written with the column: a write's ID, empty for a record without one.
        for (placement, line) in [
            (Some(3), "1200,95000,2,write,8192,4096,3\n"),
            (None, "1200,95000,2,write,8192,4096,\n"),
        ] {
            let rec = TraceRecord { placement, ..rec };
            let mut out = Vec::new();
            write(&rec, &mut out, true).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), line);
            match parse(line.trim_end().as_bytes()).unwrap() {
                Parsed::Record(r) => assert_eq!(r, rec),
                Parsed::Ignored => panic!("a request"),
            }
        }
        assert_eq!(start_unix_ns("# start_unix_ns=17"), Some(17));
        assert_eq!(start_unix_ns("# learnedftl recording"), None);
    }
}
