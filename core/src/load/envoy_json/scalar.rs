//! One scalar value as protobuf's JSON parser reads it in the lenient ("legacy") mode Envoy
//! runs it in (`json/internal/parser.cc`): which JSON values each kind takes, what it makes of
//! them, and its words when it refuses one.

use std::borrow::Cow;

use crate::schema::Kind;
use crate::schema::rules::Num;

/// A scalar JSON value as the deserializer handed it over.
#[derive(Debug, Clone)]
pub(crate) enum Ev<'de> {
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(Cow<'de, str>),
    Null,
}

impl Ev<'_> {
    /// The character protobuf's lexer sees first, for `unexpected character: 'c'`. `text` is the
    /// value's text when the reader knows where it starts.
    pub(crate) fn first_char(&self, text: Option<&str>) -> char {
        if let Some(c) = text.and_then(|t| t.chars().next()) {
            return c;
        }
        match self {
            Ev::Bool(true) => 't',
            Ev::Bool(false) => 'f',
            Ev::U64(v) => v.to_string().chars().next().unwrap_or('0'),
            Ev::I64(v) => v.to_string().chars().next().unwrap_or('-'),
            Ev::F64(v) => {
                if *v < 0.0 {
                    '-'
                } else {
                    v.to_string().chars().next().unwrap_or('0')
                }
            }
            Ev::Str(_) => '"',
            Ev::Null => 'n',
        }
    }
}

/// A parsed scalar, canonical.
#[derive(Debug, Clone)]
pub(crate) enum Parsed<'de> {
    Bool(bool),
    Signed(i64),
    Unsigned(u64),
    Float(f64),
    Str(Cow<'de, str>),
    Bytes(Vec<u8>),
    Enum(i32),
}

impl Parsed<'_> {
    /// The value as PGV's numeric rules compare it.
    pub(crate) fn num(&self) -> Option<Num> {
        Some(match self {
            Parsed::Signed(v) => Num::I(*v),
            Parsed::Unsigned(v) => Num::U(*v),
            Parsed::Float(v) => Num::F(*v),
            _ => return None,
        })
    }
}

/// Why a value was refused: the parser's words, and whether it counts as an unknown field
/// (an enum name the enum lacks: Envoy's second, lenient parse ignores those).
#[derive(Debug)]
pub(crate) enum Refusal {
    /// protobuf's message (placed at the value).
    At(String),
    /// An enum name the enum does not have.
    UnknownEnum(String),
}

const EXPECTED_NUMBER: &str = "expected number or string";

/// Reads `ev` as a value of `kind` (not a message): what Envoy's parser makes of it. `text`
/// gives the text from the value on, asked for only when a refusal quotes it (finding it costs
/// more than most values do).
pub(crate) fn parse<'de, 't>(
    kind: Kind,
    ev: &Ev<'de>,
    text: impl Fn() -> Option<&'t str>,
    enum_number: impl Fn(&str) -> Option<i32>,
) -> Result<Parsed<'de>, Refusal> {
    let unexpected = |expected: char| {
        Refusal::At(format!("unexpected character: '{}'; expected '{expected}'", ev.first_char(text())))
    };
    match kind {
        Kind::Bool => match ev {
            Ev::Bool(b) => Ok(Parsed::Bool(*b)),
            Ev::Str(s) => {
                simple_atob(s).map(Parsed::Bool).ok_or_else(|| Refusal::At("expected 'true' or 'false'".to_owned()))
            }
            _ => Err(Refusal::At("expected 'true' or 'false'".to_owned())),
        },
        Kind::String => match ev {
            Ev::Str(s) => Ok(Parsed::Str(s.clone())),
            _ => Err(unexpected('"')),
        },
        Kind::Bytes => match ev {
            Ev::Str(s) => {
                decode_base64(s.as_bytes()).map(Parsed::Bytes).ok_or_else(|| Refusal::At("corrupt base64".to_owned()))
            }
            _ => Err(unexpected('"')),
        },
        Kind::Double | Kind::Float => {
            let v = match ev {
                Ev::U64(v) => *v as f64,
                Ev::I64(v) => *v as f64,
                Ev::F64(v) => *v,
                Ev::Str(s) => match &**s {
                    "NaN" => f64::NAN,
                    "Infinity" => f64::INFINITY,
                    "-Infinity" => f64::NEG_INFINITY,
                    s => simple_atod(s)
                        .ok_or_else(|| Refusal::At("non-number characters in quoted number".to_owned()))?,
                },
                _ => return Err(Refusal::At(EXPECTED_NUMBER.to_owned())),
            };
            if kind == Kind::Float && v.is_finite() && !(v as f32).is_finite() {
                return Err(Refusal::At("float out of range".to_owned()));
            }
            Ok(Parsed::Float(v))
        }
        Kind::Enum(_) => match ev {
            Ev::Str(s) => {
                if let Some(n) = enum_number(s) {
                    return Ok(Parsed::Enum(n));
                }
                match simple_atoi_i64(s).and_then(|n| i32::try_from(n).ok()) {
                    Some(n) => Ok(Parsed::Enum(n)),
                    None => Err(Refusal::UnknownEnum(s.to_string())),
                }
            }
            Ev::U64(_) | Ev::I64(_) | Ev::F64(_) => signed(ev, true).map(|n| Parsed::Enum(n as i32)),
            _ => Err(Refusal::At(EXPECTED_NUMBER.to_owned())),
        },
        Kind::Message(_) => Err(unexpected('{')),
        k if k.is_unsigned() => unsigned(ev, k.is_32_bit()).map(Parsed::Unsigned),
        k => signed(ev, k.is_32_bit()).map(Parsed::Signed),
    }
}

const MAX_SAFE: f64 = 9_007_199_254_740_992.0;
const MAX_UNSIGNED_FLOAT: f64 = 18_014_398_509_481_984.0;

/// `ParseInt`: a signed integer from a number or a quoted number.
fn signed(ev: &Ev<'_>, bits32: bool) -> Result<i64, Refusal> {
    let n = match ev {
        Ev::I64(v) => *v,
        Ev::U64(v) => match i64::try_from(*v) {
            Ok(v) => v,
            Err(_) => float_as_int(*v as f64, &v.to_string(), -MAX_SAFE, MAX_SAFE)? as i64,
        },
        Ev::F64(v) => float_as_int(*v, &v.to_string(), -MAX_SAFE, MAX_SAFE)? as i64,
        Ev::Str(s) => {
            if s.bytes().any(|b| b.is_ascii_whitespace()) {
                return Err(Refusal::At("non-number characters in quoted number".to_owned()));
            }
            match simple_atoi_i64(s) {
                Some(v) => v,
                None => float_as_int(atod_or_invalid(s)?, s, -MAX_SAFE, MAX_SAFE)? as i64,
            }
        }
        _ => return Err(Refusal::At(EXPECTED_NUMBER.to_owned())),
    };
    if bits32 && i32::try_from(n).is_err() {
        return Err(Refusal::At("integer out of range".to_owned()));
    }
    Ok(n)
}

/// `ParseUInt`: an unsigned integer from a number or a quoted number.
fn unsigned(ev: &Ev<'_>, bits32: bool) -> Result<u64, Refusal> {
    let n = match ev {
        Ev::U64(v) => *v,
        Ev::I64(v) => float_as_int(*v as f64, &v.to_string(), 0.0, MAX_UNSIGNED_FLOAT)? as u64,
        Ev::F64(v) => float_as_int(*v, &v.to_string(), 0.0, MAX_UNSIGNED_FLOAT)? as u64,
        Ev::Str(s) => {
            if s.bytes().any(|b| b.is_ascii_whitespace()) {
                return Err(Refusal::At("non-number characters in quoted number".to_owned()));
            }
            match simple_atoi_u64(s) {
                Some(v) => v,
                None => float_as_int(atod_or_invalid(s)?, s, 0.0, MAX_UNSIGNED_FLOAT)? as u64,
            }
        }
        _ => return Err(Refusal::At(EXPECTED_NUMBER.to_owned())),
    };
    if bits32 && u32::try_from(n).is_err() {
        return Err(Refusal::At("integer out of range".to_owned()));
    }
    Ok(n)
}

fn atod_or_invalid(s: &str) -> Result<f64, Refusal> {
    match simple_atod(s) {
        Some(d) if d.is_finite() => Ok(d),
        _ => Err(Refusal::At(format!("invalid number: '{s}'"))),
    }
}

/// `ParseFloatStringAsInt`: an integer written as a float, within `[lo, hi]`, with no fraction.
fn float_as_int(d: f64, text: &str, lo: f64, hi: f64) -> Result<f64, Refusal> {
    if !d.is_finite() {
        return Err(Refusal::At(format!("invalid number: '{text}'")));
    }
    if lo > d || d > hi {
        return Err(Refusal::At("JSON number out of range for int".to_owned()));
    }
    if d.fract() != 0.0 {
        return Err(Refusal::At("expected integer, but JSON number had fractional part".to_owned()));
    }
    Ok(d)
}

/// `absl::SimpleAtoi` into an `int64_t`: an optional sign and decimal digits.
pub(crate) fn simple_atoi_i64(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    if digits.starts_with(['+']) || digits.is_empty() {
        return None;
    }
    digits.parse().ok()
}

/// `absl::SimpleAtoi` into a `uint64_t`.
fn simple_atoi_u64(s: &str) -> Option<u64> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    if digits.starts_with(['+', '-']) || digits.is_empty() {
        return None;
    }
    digits.parse().ok()
}

/// `absl::SimpleAtod`: a decimal float, `inf`/`nan` included, surrounding whitespace allowed.
fn simple_atod(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let t = t.strip_prefix('+').unwrap_or(t);
    if t.is_empty() || t.starts_with(['+']) {
        return None;
    }
    t.parse().ok()
}

/// `absl::SimpleAtob`: the words Envoy's parser takes for a boolean, in any case.
fn simple_atob(s: &str) -> Option<bool> {
    const TRUE: [&str; 5] = ["true", "t", "yes", "y", "1"];
    const FALSE: [&str; 5] = ["false", "f", "no", "n", "0"];
    if TRUE.iter().any(|t| t.eq_ignore_ascii_case(s)) {
        Some(true)
    } else if FALSE.iter().any(|f| f.eq_ignore_ascii_case(s)) {
        Some(false)
    } else {
        None
    }
}

/// protobuf's own base64 decoder (`DecodeBase64InPlace`): the standard and the URL-safe
/// alphabets alike, padding optional; `None` is its "corrupt base64". Ported rather than taken
/// from the `base64` crate, whose engines take one alphabet each: protobuf accepts `+` and `_`
/// in one string, and its verdict on junk after padding is what Envoy's is.
pub(crate) fn decode_base64(s: &[u8]) -> Option<Vec<u8>> {
    fn lookup(c: u8) -> u32 {
        let v: i32 = match c {
            b'A'..=b'Z' => i32::from(c - b'A'),
            b'a'..=b'z' => i32::from(c - b'a') + 26,
            b'0'..=b'9' => i32::from(c - b'0') + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => -1,
        };
        // Sign-extended, as the C++ table's `signed char` is: junk sets the high bit.
        v as u32
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3 + 3);
    let mut end = s.len();
    let end4 = s.len() & !3;
    let mut p = 0;
    while p < end4 {
        let val = lookup(s[p]) << 18 | lookup(s[p + 1]) << 12 | lookup(s[p + 2]) << 6 | lookup(s[p + 3]);
        if (val as i32) < 0 {
            // Junk or padding: trailing padding shortens the input, anything else is corrupt.
            if end - p == 4 && s[p + 3] == b'=' {
                end -= if s[p + 2] == b'=' { 2 } else { 1 };
            }
            break;
        }
        out.extend_from_slice(&[(val >> 16) as u8, (val >> 8) as u8, val as u8]);
        p += 4;
    }
    if p < end {
        let val = match end - p {
            2 => {
                let v = lookup(s[p]) << 18 | lookup(s[p + 1]) << 12;
                out.push((v >> 16) as u8);
                v
            }
            3 => {
                let v = lookup(s[p]) << 18 | lookup(s[p + 1]) << 12 | lookup(s[p + 2]) << 6;
                out.extend_from_slice(&[(v >> 16) as u8, (v >> 8) as u8]);
                v
            }
            _ => u32::MAX,
        };
        if (val as i32) < 0 {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(kind: Kind, ev: Ev<'static>) -> Result<String, String> {
        match parse(kind, &ev, || None, |_| None) {
            Ok(v) => Ok(format!("{v:?}")),
            Err(Refusal::At(m)) => Err(m),
            Err(Refusal::UnknownEnum(n)) => Err(format!("unknown enum {n}")),
        }
    }

    #[test]
    fn integers_take_numbers_and_quoted_numbers_as_protobuf_does() {
        assert_eq!(p(Kind::UInt32, Ev::U64(443)), Ok("Unsigned(443)".into()));
        assert_eq!(p(Kind::UInt32, Ev::Str("443".into())), Ok("Unsigned(443)".into()));
        assert_eq!(p(Kind::UInt32, Ev::F64(5.0)), Ok("Unsigned(5)".into()));
        assert_eq!(p(Kind::UInt32, Ev::Str("1e3".into())), Ok("Unsigned(1000)".into()));
        assert_eq!(p(Kind::UInt32, Ev::U64(70000)), Ok("Unsigned(70000)".into()));
        assert_eq!(p(Kind::UInt32, Ev::U64(4_294_967_296)), Err("integer out of range".into()));
        assert_eq!(p(Kind::UInt32, Ev::I64(-5)), Err("JSON number out of range for int".into()));
        assert_eq!(p(Kind::UInt32, Ev::F64(5.5)), Err("expected integer, but JSON number had fractional part".into()));
        assert_eq!(p(Kind::UInt32, Ev::Str(" 5".into())), Err("non-number characters in quoted number".into()));
        assert_eq!(p(Kind::UInt32, Ev::Str("abc".into())), Err("invalid number: 'abc'".into()));
        assert_eq!(p(Kind::UInt32, Ev::Bool(true)), Err("expected number or string".into()));
        assert_eq!(p(Kind::Int64, Ev::Str("-9223372036854775808".into())), Ok("Signed(-9223372036854775808)".into()));
        assert_eq!(p(Kind::Int64, Ev::U64(u64::MAX)), Err("JSON number out of range for int".into()));
        assert_eq!(p(Kind::Int32, Ev::I64(-2_147_483_649)), Err("integer out of range".into()));
    }

    #[test]
    fn strings_bools_floats_and_bytes() {
        assert_eq!(p(Kind::String, Ev::U64(5)), Err("unexpected character: '5'; expected '\"'".into()));
        assert_eq!(p(Kind::String, Ev::Bool(true)), Err("unexpected character: 't'; expected '\"'".into()));
        assert_eq!(p(Kind::Bool, Ev::Str("YES".into())), Ok("Bool(true)".into()));
        assert_eq!(p(Kind::Bool, Ev::Str("on".into())), Err("expected 'true' or 'false'".into()));
        assert_eq!(p(Kind::Bool, Ev::U64(1)), Err("expected 'true' or 'false'".into()));
        assert_eq!(p(Kind::Double, Ev::Str("Infinity".into())), Ok("Float(inf)".into()));
        assert_eq!(p(Kind::Double, Ev::Str("x".into())), Err("non-number characters in quoted number".into()));
        assert_eq!(p(Kind::Float, Ev::F64(1e300)), Err("float out of range".into()));
        assert_eq!(decode_base64(b"aGk="), Some(b"hi".to_vec()));
        assert_eq!(decode_base64(b"aGk"), Some(b"hi".to_vec()));
        assert_eq!(decode_base64(b"a-_="), Some(vec![0x6b, 0xef]));
        assert_eq!(decode_base64(b"a!bc"), None);
        assert_eq!(decode_base64(b"a"), None);
    }
}
