//! Field splitting and number parsing shared by every text format.
//!
//! Everything works on byte slices borrowed from the reader's line buffer: no allocation on the
//! success path. Each field is named (the format's column list), so every error can say which
//! column of which line is wrong.

use super::error::{FieldError, LineErrorKind};
use crate::request::Op;

/// How the columns of a line are separated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sep {
    /// Runs of ASCII whitespace; leading and trailing whitespace is ignored.
    Whitespace,
    /// Single commas; whitespace around each field is trimmed, so `a,,b` has an empty field.
    Comma,
}

/// The named fields of one line, consumed left to right.
#[derive(Clone)]
pub(crate) struct Fields<'a> {
    rest: &'a [u8],
    sep: Sep,
    names: &'static [&'static str],
    /// Index of the next field (for its name, and the count in errors).
    idx: usize,
    /// Comma mode: the last field has been handed out.
    exhausted: bool,
}

impl<'a> Fields<'a> {
    /// Fields of `line`, named after `names` (the format's columns, in order).
    pub(crate) fn new(line: &'a [u8], sep: Sep, names: &'static [&'static str]) -> Self {
        Fields {
            rest: line,
            sep,
            names,
            idx: 0,
            exhausted: false,
        }
    }

    fn token(&mut self) -> Option<&'a [u8]> {
        match self.sep {
            Sep::Whitespace => {
                let start = self.rest.iter().position(|b| !b.is_ascii_whitespace());
                let Some(start) = start else {
                    self.rest = &[];
                    return None;
                };
                let rest = &self.rest[start..];
                let end = rest
                    .iter()
                    .position(u8::is_ascii_whitespace)
                    .unwrap_or(rest.len());
                self.rest = &rest[end..];
                Some(&rest[..end])
            }
            Sep::Comma => {
                if self.exhausted {
                    return None;
                }
                let field = match self.rest.iter().position(|&b| b == b',') {
                    Some(i) => {
                        let f = &self.rest[..i];
                        self.rest = &self.rest[i + 1..];
                        f
                    }
                    None => {
                        self.exhausted = true;
                        self.rest
                    }
                };
                Some(field.trim_ascii())
            }
        }
    }

    /// Name of the next field.
    pub(crate) fn name(&self) -> &'static str {
        self.names.get(self.idx).copied().unwrap_or("extra field")
    }

    /// The next field's raw text; a missing field is an error naming it.
    pub(crate) fn next(&mut self) -> Result<&'a [u8], FieldError> {
        let name = self.name();
        match self.token() {
            Some(t) => {
                self.idx += 1;
                Ok(t)
            }
            None => Err(FieldError::new(
                name,
                LineErrorKind::Missing {
                    expected: self.names.len(),
                    found: self.idx,
                },
                b"",
            )),
        }
    }

    /// The next field as a non-negative integer.
    pub(crate) fn u64(&mut self) -> Result<u64, FieldError> {
        let name = self.name();
        parse_u64(name, self.next()?)
    }

    /// The next field as a non-negative integer that fits 32 bits (device numbers).
    pub(crate) fn u32(&mut self) -> Result<u32, FieldError> {
        let name = self.name();
        let t = self.next()?;
        let v = parse_u64(name, t)?;
        u32::try_from(v).map_err(|_| FieldError::new(name, LineErrorKind::Overflow, t))
    }

    /// The next field as a non-negative decimal (`12`, `0.5`, `1e-3`) times `10^exp10`,
    /// truncated: seconds to nanoseconds is `decimal(9)`.
    pub(crate) fn decimal(&mut self, exp10: u32) -> Result<u64, FieldError> {
        let name = self.name();
        parse_decimal(name, self.next()?, exp10)
    }

    /// The next field as a read/write code (see [`parse_rw`]).
    pub(crate) fn rw(&mut self) -> Result<Op, FieldError> {
        let name = self.name();
        parse_rw(name, self.next()?)
    }

    /// Require the next field to be present, without looking at it.
    pub(crate) fn skip(&mut self) -> Result<(), FieldError> {
        self.next().map(|_| ())
    }

    /// Consume `k >= 1` tokens as one logical field (a process name with spaces).
    pub(crate) fn skip_joined(&mut self, k: usize) -> Result<(), FieldError> {
        self.next()?;
        for _ in 1..k {
            self.token();
        }
        Ok(())
    }

    /// How many tokens are left (scans a copy; the fields are not consumed).
    pub(crate) fn remaining(&self) -> usize {
        let mut copy = self.clone();
        std::iter::from_fn(|| copy.token()).count()
    }

    /// Require the line to end here.
    pub(crate) fn end(mut self) -> Result<(), FieldError> {
        match self.token() {
            None => Ok(()),
            Some(t) => Err(FieldError::new(
                "extra field",
                LineErrorKind::Extra {
                    expected: self.names.len(),
                },
                t,
            )),
        }
    }
}

/// The CSV formats (MSR, SYSTOR) may start with a header naming the columns; its first field
/// is `Timestamp`, which no data line can have.
pub(crate) fn is_csv_header(first_field: &[u8]) -> bool {
    first_field.eq_ignore_ascii_case(b"timestamp")
}

/// Why `t` is not a non-negative integer: negative, fractional, or not a number at all.
fn not_an_integer(field: &'static str, t: &[u8]) -> FieldError {
    let numeric = |s: &[u8]| {
        !s.is_empty()
            && s.iter().any(u8::is_ascii_digit)
            && s.iter().all(|b| b.is_ascii_digit() || b"+-.eE".contains(b))
    };
    let kind = match t.split_first() {
        Some((b'-', rest)) if numeric(rest) => LineErrorKind::Negative,
        _ if numeric(t) => LineErrorKind::NotInteger,
        _ => LineErrorKind::NotNumber,
    };
    FieldError::new(field, kind, t)
}

/// A decimal non-negative integer (digits only).
pub(crate) fn parse_u64(field: &'static str, t: &[u8]) -> Result<u64, FieldError> {
    if t.is_empty() {
        return Err(FieldError::new(field, LineErrorKind::NotNumber, t));
    }
    let mut v: u64 = 0;
    for &b in t {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(not_an_integer(field, t));
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d)))
            .ok_or_else(|| FieldError::new(field, LineErrorKind::Overflow, t))?;
    }
    Ok(v)
}

/// A non-negative decimal times `10^exp10`, truncated toward zero.
///
/// Plain `int[.frac]` is converted exactly (no float rounding: epoch seconds with microseconds
/// keep every digit); forms with an exponent fall back to `f64`.
pub(crate) fn parse_decimal(field: &'static str, t: &[u8], exp10: u32) -> Result<u64, FieldError> {
    let overflow = || FieldError::new(field, LineErrorKind::Overflow, t);
    let (int, frac) = match t.iter().position(|&b| b == b'.') {
        Some(i) => (&t[..i], &t[i + 1..]),
        None => (t, &t[t.len()..]),
    };
    let plain = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if !(plain(int) && plain(frac)) || int.len() + frac.len() == 0 {
        return parse_float(field, t, exp10);
    }
    let scale = 10u64.checked_pow(exp10).ok_or_else(overflow)?;
    let whole = if int.is_empty() {
        0
    } else {
        parse_u64(field, int)?
    };
    let mut v = whole.checked_mul(scale).ok_or_else(overflow)?;
    // The first `exp10` fraction digits, each worth scale/10, scale/100, ...
    let mut unit = scale;
    for &b in frac.iter().take(exp10 as usize) {
        unit /= 10;
        v = v
            .checked_add(u64::from(b - b'0') * unit)
            .ok_or_else(overflow)?;
    }
    Ok(v)
}

/// Fallback of [`parse_decimal`] for exponent notation.
fn parse_float(field: &'static str, t: &[u8], exp10: u32) -> Result<u64, FieldError> {
    let value = std::str::from_utf8(t)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|v| v.is_finite());
    let Some(value) = value else {
        let mut e = not_an_integer(field, t);
        // `not_an_integer` would call "1.2.3" fractional; here it is simply not a number.
        if e.kind == LineErrorKind::NotInteger {
            e.kind = LineErrorKind::NotNumber;
        }
        return Err(e);
    };
    if value < 0.0 {
        return Err(FieldError::new(field, LineErrorKind::Negative, t));
    }
    let scaled = value * 10f64.powi(exp10 as i32);
    if scaled >= u64::MAX as f64 {
        return Err(FieldError::new(field, LineErrorKind::Overflow, t));
    }
    Ok(scaled as u64)
}

/// `r`/`read` or `w`/`write`, any case (UMass `r`, SYSTOR and FIU `R`, MSR `Read`).
pub(crate) fn parse_rw(field: &'static str, t: &[u8]) -> Result<Op, FieldError> {
    if t.eq_ignore_ascii_case(b"r") || t.eq_ignore_ascii_case(b"read") {
        Ok(Op::Read)
    } else if t.eq_ignore_ascii_case(b"w") || t.eq_ignore_ascii_case(b"write") {
        Ok(Op::Write)
    } else {
        Err(FieldError::new(field, LineErrorKind::UnknownOp, t))
    }
}

/// The word for `op` in the formats that spell operations out (fio logs, recordings), `flush`
/// standing for a flush.
pub(crate) fn op_word(op: Op, flush: &'static str) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Trim => "trim",
        Op::Flush => flush,
    }
}

/// The operation word `t` spells: `read`, `write`, `trim`, or one of the `flush` words.
pub(crate) fn word_op(t: &[u8], flush: &[&[u8]]) -> Option<Op> {
    match t {
        b"read" => Some(Op::Read),
        b"write" => Some(Op::Write),
        b"trim" => Some(Op::Trim),
        _ if flush.contains(&t) => Some(Op::Flush),
        _ => None,
    }
}

/// 512-byte sectors to bytes.
pub(crate) fn sectors(field: &'static str, n: u64) -> Result<u64, FieldError> {
    scaled(field, n, 512)
}

/// `value * factor` for unit conversions, as an overflow error on `field`.
pub(crate) fn scaled(field: &'static str, value: u64, factor: u64) -> Result<u64, FieldError> {
    value.checked_mul(factor).ok_or_else(|| {
        FieldError::new(field, LineErrorKind::Overflow, value.to_string().as_bytes())
    })
}

/// A Linux device number as one `u32`, the kernel's internal `MKDEV` layout
/// (`major << 20 | minor`), so blkparse and FIU devices keep distinct numbers.
pub(crate) fn dev_id(field: &'static str, major: u64, minor: u64) -> Result<u32, FieldError> {
    if major < (1 << 12) && minor < (1 << 20) {
        Ok(((major as u32) << 20) | minor as u32)
    } else {
        let text = format!("{major},{minor}");
        Err(FieldError::new(
            field,
            LineErrorKind::Invalid("device number out of range (major < 4096, minor < 2^20)"),
            text.as_bytes(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_integers() {
        assert_eq!(parse_u64("f", b"0"), Ok(0));
        assert_eq!(parse_u64("f", b"18446744073709551615"), Ok(u64::MAX));
        let kind = |t: &[u8]| parse_u64("f", t).unwrap_err().kind;
        assert_eq!(kind(b"18446744073709551616"), LineErrorKind::Overflow);
        assert_eq!(kind(b"-4"), LineErrorKind::Negative);
        assert_eq!(kind(b"4.5"), LineErrorKind::NotInteger);
        assert_eq!(kind(b"x1"), LineErrorKind::NotNumber);
        assert_eq!(kind(b""), LineErrorKind::NotNumber);
        assert_eq!(kind(b"-"), LineErrorKind::NotNumber);
    }

    #[test]
    fn trace_decimals_are_exact() {
        assert_eq!(
            parse_decimal("t", b"1487065502.807433", 9),
            Ok(1_487_065_502_807_433_000)
        );
        assert_eq!(parse_decimal("t", b"0.000000001", 9), Ok(1));
        assert_eq!(parse_decimal("t", b"0.0000000019", 9), Ok(1));
        assert_eq!(parse_decimal("t", b"12", 9), Ok(12_000_000_000));
        assert_eq!(parse_decimal("t", b".5", 9), Ok(500_000_000));
        assert_eq!(parse_decimal("t", b"3.", 0), Ok(3));
        assert_eq!(parse_decimal("t", b"1e-3", 9), Ok(1_000_000));
        let kind = |t: &[u8]| parse_decimal("t", t, 9).unwrap_err().kind;
        assert_eq!(kind(b"-0.5"), LineErrorKind::Negative);
        assert_eq!(kind(b"abc"), LineErrorKind::NotNumber);
        assert_eq!(kind(b"."), LineErrorKind::NotNumber);
        assert_eq!(kind(b"1.2.3"), LineErrorKind::NotNumber);
        assert_eq!(kind(b"nan"), LineErrorKind::NotNumber);
        assert_eq!(kind(b"99999999999999999999"), LineErrorKind::Overflow);
        assert_eq!(kind(b"1e300"), LineErrorKind::Overflow);
    }

    #[test]
    fn trace_fields_name_what_is_missing_or_extra() {
        const NAMES: &[&str] = &["a", "b", "c"];
        let mut f = Fields::new(b" 1\t 2 ", Sep::Whitespace, NAMES);
        assert_eq!(f.u64(), Ok(1));
        assert_eq!(f.u64(), Ok(2));
        let e = f.u64().unwrap_err();
        assert_eq!(
            (e.field, e.kind),
            (
                "c",
                LineErrorKind::Missing {
                    expected: 3,
                    found: 2
                }
            )
        );

        let mut f = Fields::new(b"1, x ,,4", Sep::Comma, NAMES);
        assert_eq!(f.remaining(), 4);
        assert_eq!(f.u64(), Ok(1));
        assert_eq!(f.next(), Ok(&b"x"[..]));
        assert_eq!(f.next(), Ok(&b""[..]));
        let e = f.end().unwrap_err();
        assert_eq!((e.field, e.text.as_str()), ("extra field", "4"));
    }
}
