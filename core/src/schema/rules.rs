//! protoc-gen-validate's rules (`(validate.rules)` on a field), compiled from the descriptors,
//! and their checks with the texts PGV's C++ validators print, which Envoy quotes in
//! `Proto constraint validation failed (...)`.
//!
//! PGV's C++ code is generated from Go templates (`templates/cc/*.go` in protoc-gen-validate):
//! the order of the checks of one field and the wording of each reason below follow them, and
//! the numbers, strings and durations in a reason are printed the way those templates print
//! them, with Go's `fmt` (`%v` floats, `%q` strings, `time.Duration.String`).

use std::fmt::Write as _;

#[cfg(feature = "compile")]
use prost_reflect::{DynamicMessage, Value};
use serde::{Deserialize, Serialize};

use super::{Card, Field, Kind};

/// The rules of one field.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FieldRules {
    /// `message: {required, skip}`.
    pub message: MessageRules,
    /// The rules of the field's type, if any.
    pub kind: Option<KindRules>,
    /// Of an enum field, what PGV says when it is left at 0 (its rules name the enum's values,
    /// which only the schema knows: filled in when the schema is compiled).
    pub enum_absent: Option<String>,
}

/// `validate.MessageRules`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct MessageRules {
    /// `skip`: the embedded message is not validated.
    pub skip: bool,
    /// `required`: the field must be set.
    pub required: bool,
}

/// The rules of one of the field types PGV knows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum KindRules {
    /// Any integer or floating-point type.
    Number(NumberRules),
    /// `bool`.
    Bool(Option<bool>),
    /// `string`.
    String(Box<StringRules>),
    /// `bytes`.
    Bytes(Box<BytesRules>),
    /// An enum.
    Enum(EnumRules),
    /// A repeated field.
    Repeated(Box<RepeatedRules>),
    /// A map.
    Map(Box<MapRules>),
    /// `google.protobuf.Any`.
    Any(AnyRules),
    /// `google.protobuf.Duration`.
    Duration(DurationRules),
    /// `google.protobuf.Timestamp` (PGV's C++ implements only `required`).
    Timestamp {
        /// `required`.
        required: bool,
    },
}

/// A number as the rules compare it.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
pub enum Num {
    /// Signed integers.
    I(i64),
    /// Unsigned integers.
    U(u64),
    /// `float` and `double`.
    F(f64),
}

impl Num {
    fn zero(self) -> bool {
        match self {
            Num::I(v) => v == 0,
            Num::U(v) => v == 0,
            Num::F(v) => v == 0.0,
        }
    }

    fn cmp(self, other: Num) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Num::I(a), Num::I(b)) => Some(a.cmp(&b)),
            (Num::U(a), Num::U(b)) => Some(a.cmp(&b)),
            (Num::F(a), Num::F(b)) => a.partial_cmp(&b),
            (Num::I(a), Num::U(b)) => Some(i128::from(a).cmp(&i128::from(b))),
            (Num::U(a), Num::I(b)) => Some(i128::from(a).cmp(&i128::from(b))),
            (Num::F(a), Num::I(b)) => a.partial_cmp(&(b as f64)),
            (Num::F(a), Num::U(b)) => a.partial_cmp(&(b as f64)),
            (Num::I(a), Num::F(b)) => (a as f64).partial_cmp(&b),
            (Num::U(a), Num::F(b)) => (a as f64).partial_cmp(&b),
        }
    }

    fn lt(self, o: Num) -> bool {
        self.cmp(o) == Some(std::cmp::Ordering::Less)
    }
    fn le(self, o: Num) -> bool {
        matches!(self.cmp(o), Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal))
    }
    fn eq(self, o: Num) -> bool {
        self.cmp(o) == Some(std::cmp::Ordering::Equal)
    }
}

/// How a rule value is printed: Go's `%v` of the rule's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum NumFormat {
    Int,
    Float32,
    Float64,
}

/// The rules of a numeric field.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NumberRules {
    konst: Option<Num>,
    lt: Option<Num>,
    lte: Option<Num>,
    gt: Option<Num>,
    gte: Option<Num>,
    in_list: Vec<Num>,
    not_in: Vec<Num>,
    ignore_empty: bool,
    format: NumFormat,
}

/// `validate.StringRules`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StringRules {
    konst: Option<String>,
    len: Option<u64>,
    min_len: Option<u64>,
    max_len: Option<u64>,
    len_bytes: Option<u64>,
    min_bytes: Option<u64>,
    max_bytes: Option<u64>,
    /// `pattern`, or the pattern PGV substitutes for `well_known_regex`.
    pattern: Option<Pattern>,
    prefix: Option<String>,
    suffix: Option<String>,
    contains: Option<String>,
    not_contains: Option<String>,
    in_list: Vec<String>,
    not_in: Vec<String>,
    well_known: WellKnown,
    ignore_empty: bool,
    /// Not PGV's: Envoy compiles the value as an RE2 pattern once it is validated
    /// (`RegexMatcher.regex`), and refuses what RE2 refuses.
    pub(crate) re2: bool,
}

/// A regular expression a string must match whole (RE2 `FullMatch`). The schema carries its
/// source; the engine compiles it when a value first meets it (most inputs meet few of the API's
/// patterns, and compiling them all would be most of the schema's start).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub struct Pattern {
    source: String,
    regex: std::sync::OnceLock<Option<Engine>>,
}

/// The engine PGV's patterns run on: the regex crate's own where the build has it (the CLI: a
/// lazy DFA; a tenth of loading 10k listeners with inline route tables went to the small
/// engine's backtracking-free but slow PikeVM), its small engine on the page (which leaves the
/// large one out). Both read a pattern's Perl classes RE2's way once [`super::re2::for_engine`]
/// has written them out.
#[cfg(feature = "regex")]
type Engine = regex::Regex;
#[cfg(not(feature = "regex"))]
type Engine = regex_lite::Regex;

impl From<String> for Pattern {
    fn from(source: String) -> Self {
        Pattern { source, regex: std::sync::OnceLock::new() }
    }
}

impl From<Pattern> for String {
    fn from(p: Pattern) -> String {
        p.source
    }
}

impl Pattern {
    #[cfg(feature = "compile")]
    fn new(source: String) -> Self {
        Pattern::from(source)
    }

    fn full_match(&self, value: &str) -> bool {
        // FullMatch: the whole value, whatever anchors the pattern has; the Perl classes as RE2
        // reads them (every one of Envoy's patterns has such a writing: see the schema's tests).
        let regex = self.regex.get_or_init(|| {
            let source = super::re2::for_engine(&self.source).unwrap_or_else(|| self.source.clone());
            Engine::new(&format!("^(?:{source})$")).ok()
        });
        // A pattern the engine cannot compile matches everything rather than reject valid input.
        regex.as_ref().is_none_or(|r| r.is_match(value))
    }
}

/// The `well_known` checks PGV's C++ implements for strings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
enum WellKnown {
    #[default]
    None,
    Ip,
    Ipv4,
    Ipv6,
    Address,
    Hostname,
    Uuid,
}

/// `validate.BytesRules`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BytesRules {
    konst: Option<Vec<u8>>,
    len: Option<u64>,
    min_len: Option<u64>,
    max_len: Option<u64>,
    pattern: Option<Pattern>,
    prefix: Option<Vec<u8>>,
    suffix: Option<Vec<u8>>,
    contains: Option<Vec<u8>>,
    in_list: Vec<Vec<u8>>,
    not_in: Vec<Vec<u8>>,
    ignore_empty: bool,
}

/// `validate.EnumRules`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EnumRules {
    konst: Option<i32>,
    /// `defined_only`.
    pub defined_only: bool,
    in_list: Vec<i32>,
    not_in: Vec<i32>,
}

/// `validate.RepeatedRules`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RepeatedRules {
    min_items: Option<u64>,
    max_items: Option<u64>,
    /// `unique`: no two items equal.
    pub unique: bool,
    /// The rules of each item.
    pub items: Option<FieldRules>,
    ignore_empty: bool,
}

/// `validate.MapRules`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MapRules {
    min_pairs: Option<u64>,
    max_pairs: Option<u64>,
    /// The rules of each key.
    pub keys: Option<FieldRules>,
    /// The rules of each value.
    pub values: Option<FieldRules>,
    ignore_empty: bool,
}

/// `validate.AnyRules`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AnyRules {
    /// `required`.
    pub required: bool,
    in_list: Vec<String>,
    not_in: Vec<String>,
}

/// A duration as PGV compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct Dur {
    /// Seconds.
    pub seconds: i64,
    /// Nanoseconds, with the sign of `seconds`.
    pub nanos: i32,
}

/// `validate.DurationRules`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DurationRules {
    /// `required`.
    pub required: bool,
    konst: Option<Dur>,
    lt: Option<Dur>,
    lte: Option<Dur>,
    gt: Option<Dur>,
    gte: Option<Dur>,
    in_list: Vec<Dur>,
    not_in: Vec<Dur>,
}

// ---------------------------------------------------------------------------------------------
// Compiling from the descriptors.

#[cfg(feature = "compile")]
fn get<'m>(m: &'m DynamicMessage, name: &str) -> Option<std::borrow::Cow<'m, Value>> {
    m.has_field_by_name(name).then(|| m.get_field_by_name(name)).flatten()
}

#[cfg(feature = "compile")]
fn u64_of(m: &DynamicMessage, name: &str) -> Option<u64> {
    get(m, name).and_then(|v| v.as_u64())
}

#[cfg(feature = "compile")]
fn bool_of(m: &DynamicMessage, name: &str) -> bool {
    get(m, name).and_then(|v| v.as_bool()) == Some(true)
}

#[cfg(feature = "compile")]
fn str_of(m: &DynamicMessage, name: &str) -> Option<String> {
    get(m, name).and_then(|v| v.as_str().map(str::to_owned))
}

#[cfg(feature = "compile")]
fn bytes_of(m: &DynamicMessage, name: &str) -> Option<Vec<u8>> {
    get(m, name).and_then(|v| v.as_bytes().map(|b| b.to_vec()))
}

#[cfg(feature = "compile")]
fn list_of<T>(m: &DynamicMessage, name: &str, f: impl Fn(&Value) -> Option<T>) -> Vec<T> {
    get(m, name).and_then(|v| v.as_list().map(|l| l.iter().filter_map(&f).collect())).unwrap_or_default()
}

#[cfg(feature = "compile")]
fn num_of(v: &Value) -> Option<Num> {
    Some(match v {
        Value::I32(x) => Num::I(i64::from(*x)),
        Value::I64(x) => Num::I(*x),
        Value::U32(x) => Num::U(u64::from(*x)),
        Value::U64(x) => Num::U(*x),
        Value::F32(x) => Num::F(f64::from(*x)),
        Value::F64(x) => Num::F(*x),
        _ => return None,
    })
}

#[cfg(feature = "compile")]
fn dur_of(v: &Value) -> Option<Dur> {
    let m = v.as_message()?;
    let seconds = m.get_field_by_name("seconds").and_then(|v| v.as_i64()).unwrap_or(0);
    let nanos = m.get_field_by_name("nanos").and_then(|v| v.as_i32()).unwrap_or(0);
    Some(Dur { seconds, nanos })
}

impl FieldRules {
    /// The sources of the patterns these rules (and their items', keys' and values') hold.
    #[cfg(test)]
    pub(crate) fn patterns(&self) -> Vec<&str> {
        match &self.kind {
            Some(KindRules::String(r)) => r.pattern.iter().map(|p| &*p.source).collect(),
            Some(KindRules::Repeated(r)) => r.items.iter().flat_map(FieldRules::patterns).collect(),
            Some(KindRules::Map(r)) => r.keys.iter().chain(&r.values).flat_map(FieldRules::patterns).collect(),
            _ => Vec::new(),
        }
    }

    /// Compiles a `validate.FieldRules` option.
    #[cfg(feature = "compile")]
    pub(super) fn compile(m: &DynamicMessage) -> FieldRules {
        let message = get(m, "message")
            .and_then(|v| {
                v.as_message().map(|mr| MessageRules { skip: bool_of(mr, "skip"), required: bool_of(mr, "required") })
            })
            .unwrap_or_default();
        let mut kind = None;
        for (name, format) in [
            ("float", NumFormat::Float32),
            ("double", NumFormat::Float64),
            ("int32", NumFormat::Int),
            ("int64", NumFormat::Int),
            ("uint32", NumFormat::Int),
            ("uint64", NumFormat::Int),
            ("sint32", NumFormat::Int),
            ("sint64", NumFormat::Int),
            ("fixed32", NumFormat::Int),
            ("fixed64", NumFormat::Int),
            ("sfixed32", NumFormat::Int),
            ("sfixed64", NumFormat::Int),
        ] {
            if let Some(v) = get(m, name) {
                let Some(r) = v.as_message() else { continue };
                let one = |n: &str| get(r, n).and_then(|v| num_of(&v));
                kind = Some(KindRules::Number(NumberRules {
                    konst: one("const"),
                    lt: one("lt"),
                    lte: one("lte"),
                    gt: one("gt"),
                    gte: one("gte"),
                    in_list: list_of(r, "in", num_of),
                    not_in: list_of(r, "not_in", num_of),
                    ignore_empty: bool_of(r, "ignore_empty"),
                    format,
                }));
            }
        }
        if let Some(v) = get(m, "bool") {
            kind = Some(KindRules::Bool(v.as_message().and_then(|r| get(r, "const")).and_then(|v| v.as_bool())));
        }
        if let Some(v) = get(m, "string")
            && let Some(r) = v.as_message()
        {
            kind = Some(KindRules::String(Box::new(StringRules::compile(r))));
        }
        if let Some(v) = get(m, "bytes")
            && let Some(r) = v.as_message()
        {
            kind = Some(KindRules::Bytes(Box::new(BytesRules {
                konst: bytes_of(r, "const"),
                len: u64_of(r, "len"),
                min_len: u64_of(r, "min_len"),
                max_len: u64_of(r, "max_len"),
                pattern: str_of(r, "pattern").map(Pattern::new),
                prefix: bytes_of(r, "prefix"),
                suffix: bytes_of(r, "suffix"),
                contains: bytes_of(r, "contains"),
                in_list: list_of(r, "in", |v| v.as_bytes().map(|b| b.to_vec())),
                not_in: list_of(r, "not_in", |v| v.as_bytes().map(|b| b.to_vec())),
                ignore_empty: bool_of(r, "ignore_empty"),
            })));
        }
        if let Some(v) = get(m, "enum")
            && let Some(r) = v.as_message()
        {
            kind = Some(KindRules::Enum(EnumRules {
                konst: get(r, "const").and_then(|v| v.as_i32()),
                defined_only: bool_of(r, "defined_only"),
                in_list: list_of(r, "in", Value::as_i32),
                not_in: list_of(r, "not_in", Value::as_i32),
            }));
        }
        if let Some(v) = get(m, "repeated")
            && let Some(r) = v.as_message()
        {
            kind = Some(KindRules::Repeated(Box::new(RepeatedRules {
                min_items: u64_of(r, "min_items"),
                max_items: u64_of(r, "max_items"),
                unique: bool_of(r, "unique"),
                items: get(r, "items").and_then(|v| v.as_message().map(FieldRules::compile)),
                ignore_empty: bool_of(r, "ignore_empty"),
            })));
        }
        if let Some(v) = get(m, "map")
            && let Some(r) = v.as_message()
        {
            kind = Some(KindRules::Map(Box::new(MapRules {
                min_pairs: u64_of(r, "min_pairs"),
                max_pairs: u64_of(r, "max_pairs"),
                keys: get(r, "keys").and_then(|v| v.as_message().map(FieldRules::compile)),
                values: get(r, "values").and_then(|v| v.as_message().map(FieldRules::compile)),
                ignore_empty: bool_of(r, "ignore_empty"),
            })));
        }
        if let Some(v) = get(m, "any")
            && let Some(r) = v.as_message()
        {
            kind = Some(KindRules::Any(AnyRules {
                required: bool_of(r, "required"),
                in_list: list_of(r, "in", |v| v.as_str().map(str::to_owned)),
                not_in: list_of(r, "not_in", |v| v.as_str().map(str::to_owned)),
            }));
        }
        if let Some(v) = get(m, "duration")
            && let Some(r) = v.as_message()
        {
            let one = |n: &str| get(r, n).and_then(|v| dur_of(&v));
            kind = Some(KindRules::Duration(DurationRules {
                required: bool_of(r, "required"),
                konst: one("const"),
                lt: one("lt"),
                lte: one("lte"),
                gt: one("gt"),
                gte: one("gte"),
                in_list: list_of(r, "in", dur_of),
                not_in: list_of(r, "not_in", dur_of),
            }));
        }
        if let Some(v) = get(m, "timestamp")
            && let Some(r) = v.as_message()
        {
            kind = Some(KindRules::Timestamp { required: bool_of(r, "required") });
        }
        FieldRules { message, kind, enum_absent: None }
    }

    /// Whether the rules can fail for a field that is absent (PGV checks a scalar's default
    /// value, a list's or map's emptiness and a message's presence).
    #[cfg(feature = "compile")]
    pub(super) fn can_fail_absent(&self, field: &Field) -> bool {
        // A member of a oneof (or of a proto3 `optional`) is checked only when it is the one set.
        if field.oneof.is_some() || field.optional {
            return false;
        }
        match field.card {
            Card::Repeated => match &self.kind {
                Some(KindRules::Repeated(r)) => !r.ignore_empty && r.min_items.is_some_and(|n| n > 0),
                _ => false,
            },
            Card::Map(_) => match &self.kind {
                Some(KindRules::Map(r)) => !r.ignore_empty && r.min_pairs.is_some_and(|n| n > 0),
                _ => false,
            },
            Card::Single => match field.kind {
                Kind::Message(_) => {
                    self.message.required
                        || matches!(
                            &self.kind,
                            Some(KindRules::Any(AnyRules { required: true, .. }))
                                | Some(KindRules::Duration(DurationRules { required: true, .. }))
                                | Some(KindRules::Timestamp { required: true })
                        )
                }
                _ => self.absent_failure(field).is_some(),
            },
        }
    }

    /// What PGV says about the field when it is absent, if anything.
    pub fn absent_failure(&self, field: &Field) -> Option<String> {
        match field.card {
            Card::Repeated => match &self.kind {
                Some(KindRules::Repeated(r)) if !r.ignore_empty => r.check_count(0),
                _ => None,
            },
            Card::Map(_) => match &self.kind {
                Some(KindRules::Map(r)) if !r.ignore_empty => r.check_count(0),
                _ => None,
            },
            Card::Single => match field.kind {
                Kind::Message(_) => match &self.kind {
                    // A wrapper's rules are the wrapped type's: its own message rules decide.
                    Some(KindRules::Number(_) | KindRules::Bool(_) | KindRules::String(_) | KindRules::Bytes(_)) => {
                        self.message.required.then(|| "value is required and must not be nil.".to_owned())
                    }
                    Some(KindRules::Any(AnyRules { required: true, .. }))
                    | Some(KindRules::Duration(DurationRules { required: true, .. }))
                    | Some(KindRules::Timestamp { required: true }) => Some("value is required".to_owned()),
                    _ => self.message.required.then(|| "value is required".to_owned()),
                },
                Kind::String => match &self.kind {
                    Some(KindRules::String(r)) => r.check(""),
                    _ => None,
                },
                Kind::Bytes => match &self.kind {
                    Some(KindRules::Bytes(r)) => r.check(b""),
                    _ => None,
                },
                Kind::Bool => match &self.kind {
                    Some(KindRules::Bool(b)) => check_bool(*b, false),
                    _ => None,
                },
                Kind::Enum(_) => self.enum_absent.clone(),
                _ => match &self.kind {
                    Some(KindRules::Number(r)) => {
                        let zero = if matches!(field.kind, Kind::Float | Kind::Double) {
                            Num::F(0.0)
                        } else if field.kind.is_unsigned() {
                            Num::U(0)
                        } else {
                            Num::I(0)
                        };
                        r.check(zero)
                    }
                    _ => None,
                },
            },
        }
    }
}

impl StringRules {
    #[cfg(feature = "compile")]
    fn compile(r: &DynamicMessage) -> StringRules {
        let well_known_regex = get(r, "well_known_regex").and_then(|v| v.as_enum_number()).unwrap_or(0);
        // `strict` defaults to true; PGV swaps the header patterns for a laxer one when false.
        let strict = get(r, "strict").and_then(|v| v.as_bool()).unwrap_or(true);
        let pattern = match well_known_regex {
            1 | 2 if !strict => Some("^[^\u{0}\u{A}\u{D}]*$".to_owned()),
            1 => Some("^:?[0-9a-zA-Z!#$%&'*+-.^_|~\u{60}]+$".to_owned()),
            2 => Some("^[^\u{0}-\u{8}\u{A}-\u{1F}\u{7F}]*$".to_owned()),
            _ => str_of(r, "pattern"),
        };
        let well_known = if bool_of(r, "ip") {
            WellKnown::Ip
        } else if bool_of(r, "ipv4") {
            WellKnown::Ipv4
        } else if bool_of(r, "ipv6") {
            WellKnown::Ipv6
        } else if bool_of(r, "address") {
            WellKnown::Address
        } else if bool_of(r, "hostname") {
            WellKnown::Hostname
        } else if bool_of(r, "uuid") {
            WellKnown::Uuid
        } else {
            WellKnown::None
        };
        StringRules {
            konst: str_of(r, "const"),
            len: u64_of(r, "len"),
            min_len: u64_of(r, "min_len"),
            max_len: u64_of(r, "max_len"),
            len_bytes: u64_of(r, "len_bytes"),
            min_bytes: u64_of(r, "min_bytes"),
            max_bytes: u64_of(r, "max_bytes"),
            pattern: pattern.map(Pattern::new),
            prefix: str_of(r, "prefix"),
            suffix: str_of(r, "suffix"),
            contains: str_of(r, "contains"),
            not_contains: str_of(r, "not_contains"),
            in_list: list_of(r, "in", |v| v.as_str().map(str::to_owned)),
            not_in: list_of(r, "not_in", |v| v.as_str().map(str::to_owned)),
            well_known,
            ignore_empty: bool_of(r, "ignore_empty"),
            re2: false,
        }
    }

    /// PGV's reason for refusing `v`, if it does (the first rule that fails, in PGV's order).
    pub fn check(&self, v: &str) -> Option<String> {
        if self.ignore_empty && v.is_empty() {
            return None;
        }
        if let Some(c) = &self.konst
            && v != c
        {
            return Some(format!("value must equal {}", go_quote(c)));
        }
        if !self.in_list.is_empty() && !self.in_list.iter().any(|x| x == v) {
            return Some(format!("value must be in list {}", go_list(self.in_list.iter())));
        }
        if !self.not_in.is_empty() && self.not_in.iter().any(|x| x == v) {
            return Some(format!("value must not be in list {}", go_list(self.not_in.iter())));
        }
        let length_rules = self.len.is_some() || self.min_len.is_some() || self.max_len.is_some();
        // Characters, as PGV counts them; ASCII (nearly every value) needs no counting.
        let chars = match length_rules {
            false => 0,
            true if v.is_ascii() => v.len() as u64,
            true => v.chars().count() as u64,
        };
        let exact = self.len.or(match (self.min_len, self.max_len) {
            (Some(a), Some(b)) if a == b => Some(a),
            _ => None,
        });
        if let Some(n) = exact {
            if chars != n {
                return Some(format!("value must be {n} characters"));
            }
        } else if let Some(min) = self.min_len {
            match self.max_len {
                Some(max) if chars < min || chars > max => {
                    return Some(format!("value must have between {min} and {max} characters inclusive"));
                }
                Some(_) => {}
                None if chars < min => return Some(format!("value length must be at least {min} characters")),
                None => {}
            }
        } else if let Some(max) = self.max_len
            && chars > max
        {
            return Some(format!("value length must be at most {max} characters"));
        }
        let bytes = v.len() as u64;
        let exact = self.len_bytes.or(match (self.min_bytes, self.max_bytes) {
            (Some(a), Some(b)) if a == b => Some(a),
            _ => None,
        });
        if let Some(n) = exact {
            if bytes != n {
                return Some(format!("value length must be {n} bytes"));
            }
        } else if let Some(min) = self.min_bytes {
            match self.max_bytes {
                Some(max) if bytes < min || bytes > max => {
                    return Some(format!("value length must be between {min} and {max} bytes, inclusive"));
                }
                Some(_) => {}
                None if bytes < min => return Some(format!("value length must be at least {min} bytes")),
                None => {}
            }
        } else if let Some(max) = self.max_bytes
            && bytes > max
        {
            return Some(format!("value length must be at most {max} bytes"));
        }
        if let Some(p) = &self.prefix
            && !v.starts_with(p.as_str())
        {
            return Some(format!("value does not have prefix {}", go_quote(p)));
        }
        if let Some(s) = &self.suffix
            && !v.ends_with(s.as_str())
        {
            return Some(format!("value does not have suffix {}", go_quote(s)));
        }
        if let Some(c) = &self.contains
            && !v.contains(c.as_str())
        {
            return Some(format!("value does not contain substring {}", go_quote(c)));
        }
        if let Some(c) = &self.not_contains
            && v.contains(c.as_str())
        {
            return Some(format!("value contains substring {}", go_quote(c)));
        }
        if let Some(p) = &self.pattern
            && !p.full_match(v)
        {
            return Some(format!("value does not match regex pattern {}", go_quote(&p.source)));
        }
        match self.well_known {
            WellKnown::None => None,
            WellKnown::Ip => (!is_ip(v)).then(|| "value must be a valid IP Address".to_owned()),
            WellKnown::Ipv4 => (!is_ipv4(v)).then(|| "value must be a valid IPv4 Address".to_owned()),
            WellKnown::Ipv6 => (!is_ipv6(v)).then(|| "value must be a valid IPv6 Address".to_owned()),
            WellKnown::Address => {
                (!is_hostname(v) && !is_ip(v)).then(|| "value must be an ip address, or a hostname.".to_owned())
            }
            WellKnown::Hostname => (!is_hostname(v)).then(|| "value must be a valid hostname".to_owned()),
            WellKnown::Uuid => (!is_uuid(v)).then(|| "value must be a valid UUID".to_owned()),
        }
    }
}

impl BytesRules {
    /// PGV's reason for refusing `v`, if it does.
    pub fn check(&self, v: &[u8]) -> Option<String> {
        if self.ignore_empty && v.is_empty() {
            return None;
        }
        if let Some(c) = &self.konst
            && v != c.as_slice()
        {
            return Some(format!("value must equal {}", go_bytes(c)));
        }
        if !self.in_list.is_empty() && !self.in_list.iter().any(|x| x == v) {
            return Some(format!("value must be in list {}", go_byte_list(&self.in_list)));
        }
        if !self.not_in.is_empty() && self.not_in.iter().any(|x| x == v) {
            return Some(format!("value must not be in list {}", go_byte_list(&self.not_in)));
        }
        let len = v.len() as u64;
        let exact = self.len.or(match (self.min_len, self.max_len) {
            (Some(a), Some(b)) if a == b => Some(a),
            _ => None,
        });
        if let Some(n) = exact {
            if len != n {
                return Some(format!("value length must be {n} bytes"));
            }
        } else if let Some(min) = self.min_len {
            match self.max_len {
                Some(max) if len < min || len > max => {
                    return Some(format!("value length must be between {min} and {max} bytes, inclusive"));
                }
                Some(_) => {}
                None if len < min => return Some(format!("value length must be at least {min} bytes")),
                None => {}
            }
        } else if let Some(max) = self.max_len
            && len > max
        {
            return Some(format!("value length must be at most {max} bytes"));
        }
        if let Some(p) = &self.prefix
            && !v.starts_with(p)
        {
            return Some(format!("value does not have prefix {}", go_bytes(p)));
        }
        if let Some(s) = &self.suffix
            && !v.ends_with(s)
        {
            return Some(format!("value does not have suffix {}", go_bytes(s)));
        }
        if let Some(c) = &self.contains
            && !v.windows(c.len().max(1)).any(|w| w == c.as_slice())
            && !c.is_empty()
        {
            return Some(format!("value does not contain substring {}", go_bytes(c)));
        }
        if let Some(p) = &self.pattern
            && !p.full_match(&String::from_utf8_lossy(v))
        {
            return Some(format!("value does not match regex pattern {}", go_quote(&p.source)));
        }
        None
    }
}

impl NumberRules {
    /// PGV's reason for refusing `v`, if it does.
    pub fn check(&self, v: Num) -> Option<String> {
        if self.ignore_empty && v.zero() {
            return None;
        }
        let f = |n: Num| self.fmt(n);
        if let Some(c) = self.konst
            && !v.eq(c)
        {
            return Some(format!("value must equal {}", f(c)));
        }
        if let Some(lt) = self.lt {
            if let Some(gt) = self.gt {
                if gt.lt(lt) {
                    if v.le(gt) || lt.le(v) {
                        return Some(format!("value must be inside range ({}, {})", f(gt), f(lt)));
                    }
                } else if lt.le(v) && v.le(gt) {
                    return Some(format!("value must be outside range [{}, {}]", f(lt), f(gt)));
                }
            } else if let Some(gte) = self.gte {
                if gte.lt(lt) {
                    if v.lt(gte) || lt.le(v) {
                        return Some(format!("value must be inside range [{}, {})", f(gte), f(lt)));
                    }
                } else if lt.le(v) && v.lt(gte) {
                    return Some(format!("value must be outside range [{}, {})", f(lt), f(gte)));
                }
            } else if lt.le(v) {
                return Some(format!("value must be less than {}", f(lt)));
            }
        } else if let Some(lte) = self.lte {
            if let Some(gt) = self.gt {
                if gt.lt(lte) {
                    if v.le(gt) || lte.lt(v) {
                        return Some(format!("value must be inside range ({}, {}]", f(gt), f(lte)));
                    }
                } else if lte.lt(v) && v.le(gt) {
                    return Some(format!("value must be outside range ({}, {}]", f(lte), f(gt)));
                }
            } else if let Some(gte) = self.gte {
                if gte.lt(lte) {
                    if v.lt(gte) || lte.lt(v) {
                        return Some(format!("value must be inside range [{}, {}]", f(gte), f(lte)));
                    }
                } else if lte.lt(v) && v.lt(gte) {
                    return Some(format!("value must be outside range ({}, {})", f(lte), f(gte)));
                }
            } else if lte.lt(v) {
                return Some(format!("value must be less than or equal to {}", f(lte)));
            }
        } else if let Some(gt) = self.gt {
            if v.le(gt) {
                return Some(format!("value must be greater than {}", f(gt)));
            }
        } else if let Some(gte) = self.gte
            && v.lt(gte)
        {
            return Some(format!("value must be greater than or equal to {}", f(gte)));
        }
        if !self.in_list.is_empty() && !self.in_list.iter().any(|&x| v.eq(x)) {
            return Some(format!("value must be in list {}", go_list(self.in_list.iter().map(|&n| f(n)))));
        }
        if !self.not_in.is_empty() && self.not_in.iter().any(|&x| v.eq(x)) {
            return Some(format!("value must not be in list {}", go_list(self.not_in.iter().map(|&n| f(n)))));
        }
        None
    }

    fn fmt(&self, n: Num) -> String {
        match (n, self.format) {
            (Num::I(v), _) => v.to_string(),
            (Num::U(v), _) => v.to_string(),
            (Num::F(v), NumFormat::Float32) => go_float(v, true),
            (Num::F(v), _) => go_float(v, false),
        }
    }
}

/// `bool` rules: `const` only.
pub fn check_bool(konst: Option<bool>, v: bool) -> Option<String> {
    konst.filter(|&c| c != v).map(|c| format!("value must equal {c}"))
}

impl EnumRules {
    /// PGV's reason for refusing enum number `v`, if it does; `name_of` names a number and
    /// `defined` says whether it is declared.
    pub fn check(&self, v: i32, defined: impl Fn(i32) -> bool, name_of: impl Fn(i32) -> String) -> Option<String> {
        if let Some(c) = self.konst
            && v != c
        {
            return Some(format!("value must equal {}", name_of(c)));
        }
        if !self.in_list.is_empty() && !self.in_list.contains(&v) {
            return Some(format!("value must be in list {}", go_list(self.in_list.iter().map(|&n| name_of(n)))));
        }
        if !self.not_in.is_empty() && self.not_in.contains(&v) {
            return Some(format!("value must not be in list {}", go_list(self.not_in.iter().map(|&n| name_of(n)))));
        }
        if self.defined_only && !defined(v) {
            return Some("value must be one of the defined enum values".to_owned());
        }
        None
    }
}

impl RepeatedRules {
    /// PGV's reason for refusing a list of `n` items, if it does (an empty list under
    /// `ignore_empty` is never refused).
    pub fn check_count(&self, n: u64) -> Option<String> {
        if self.ignore_empty && n == 0 {
            return None;
        }
        if let Some(min) = self.min_items.filter(|&m| m > 0) {
            if Some(min) == self.max_items {
                return (n != min).then(|| format!("value must contain exactly {min} item(s)"));
            }
            if let Some(max) = self.max_items {
                return (n < min || n > max)
                    .then(|| format!("value must contain between {min} and {max} items, inclusive"));
            }
            return (n < min).then(|| format!("value must contain at least {min} item(s)"));
        }
        if let Some(max) = self.max_items {
            return (n > max).then(|| format!("value must contain no more than {max} item(s)"));
        }
        None
    }
}

impl MapRules {
    /// PGV's reason for refusing a map of `n` pairs, if it does.
    pub fn check_count(&self, n: u64) -> Option<String> {
        if self.ignore_empty && n == 0 {
            return None;
        }
        if let Some(min) = self.min_pairs.filter(|&m| m > 0) {
            if Some(min) == self.max_pairs {
                return (n != min).then(|| format!("value must contain exactly {min} pair(s)"));
            }
            if let Some(max) = self.max_pairs {
                return (n < min || n > max)
                    .then(|| format!("value must contain between {min} and {max} pairs, inclusive"));
            }
            return (n < min).then(|| format!("value must contain at least {min} pair(s)"));
        }
        if let Some(max) = self.max_pairs {
            return (n > max).then(|| format!("value must contain no more than {max} pair(s)"));
        }
        None
    }
}

impl AnyRules {
    /// PGV's reason for refusing an Any with this type URL, if it does.
    pub fn check(&self, type_url: &str) -> Option<String> {
        if !self.in_list.is_empty() && !self.in_list.iter().any(|t| t == type_url) {
            return Some(format!("type URL must be in list {}", go_list(self.in_list.iter())));
        }
        if !self.not_in.is_empty() && self.not_in.iter().any(|t| t == type_url) {
            return Some(format!("type URL must not be in list {}", go_list(self.not_in.iter())));
        }
        None
    }
}

impl DurationRules {
    /// PGV's reason for refusing duration `d`, if it does.
    pub fn check(&self, d: Dur) -> Option<String> {
        if self.konst.is_none()
            && self.lt.is_none()
            && self.lte.is_none()
            && self.gt.is_none()
            && self.gte.is_none()
            && self.in_list.is_empty()
            && self.not_in.is_empty()
        {
            return None;
        }
        const MAX_SECONDS: i64 = 315_576_000_000;
        if d.nanos > 999_999_999 || d.nanos < -999_999_999 || d.seconds > MAX_SECONDS || d.seconds < -MAX_SECONDS {
            return Some("value is not a valid duration".to_owned());
        }
        if let Some(c) = self.konst
            && d != c
        {
            return Some(format!("value must equal {}", go_duration(c)));
        }
        let s = go_duration;
        if let Some(lt) = self.lt {
            if let Some(gt) = self.gt {
                if lt > gt {
                    if d <= gt || d >= lt {
                        return Some(format!("value must be inside range ({}, {})", s(gt), s(lt)));
                    }
                } else if d >= lt && d <= gt {
                    return Some(format!("value must be outside range [{}, {}]", s(lt), s(gt)));
                }
            } else if let Some(gte) = self.gte {
                if lt > gte {
                    if d < gte || d >= lt {
                        return Some(format!("value must be inside range [{}, {})", s(gte), s(lt)));
                    }
                } else if d >= lt && d < gte {
                    return Some(format!("value must be outside range [{}, {})", s(lt), s(gte)));
                }
            } else if d >= lt {
                return Some(format!("value must be less than {}", s(lt)));
            }
        } else if let Some(lte) = self.lte {
            if let Some(gt) = self.gt {
                if lte > gt {
                    if d <= gt || d > lte {
                        return Some(format!("value must be inside range ({}, {}]", s(gt), s(lte)));
                    }
                } else if d > lte && d <= gt {
                    return Some(format!("value must be outside range ({}, {}]", s(lte), s(gt)));
                }
            } else if let Some(gte) = self.gte {
                if lte > gte {
                    if d < gte || d > lte {
                        return Some(format!("value must be inside range [{}, {}]", s(gte), s(lte)));
                    }
                } else if d > lte && d < gte {
                    return Some(format!("value must be outside range ({}, {})", s(lte), s(gte)));
                }
            } else if d > lte {
                return Some(format!("value must be less than or equal to {}", s(lte)));
            }
        } else if let Some(gt) = self.gt {
            if d <= gt {
                return Some(format!("value must be greater than {}", s(gt)));
            }
        } else if let Some(gte) = self.gte
            && d < gte
        {
            return Some(format!("value must be greater than or equal to {}", s(gte)));
        }
        if !self.in_list.is_empty() && !self.in_list.contains(&d) {
            return Some(format!(
                "value must be in list {}",
                go_list(self.in_list.iter().map(|&x| go_duration_literal(x)))
            ));
        }
        if !self.not_in.is_empty() && self.not_in.contains(&d) {
            return Some(format!(
                "value must not be in list {}",
                go_list(self.not_in.iter().map(|&x| go_duration_literal(x)))
            ));
        }
        None
    }
}

// ---------------------------------------------------------------------------------------------
// PGV's helpers (validate/validate.h) and Go's formatting, as the texts need them.

/// `pgv::Utf8Len`: characters counted by their first byte's length class.
fn is_ipv4(v: &str) -> bool {
    v.parse::<std::net::Ipv4Addr>().is_ok()
}

fn is_ipv6(v: &str) -> bool {
    v.parse::<std::net::Ipv6Addr>().is_ok()
}

fn is_ip(v: &str) -> bool {
    is_ipv4(v) || is_ipv6(v)
}

/// `pgv::IsHostname`.
fn is_hostname(v: &str) -> bool {
    if v.len() > 253 {
        return false;
    }
    v.split('.').all(|part| {
        !part.is_empty()
            && part.len() <= 63
            && !part.starts_with('-')
            && !part.ends_with('-')
            && part.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
    })
}

fn is_uuid(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 36
        && b.iter()
            .enumerate()
            .all(|(i, &c)| if matches!(i, 8 | 13 | 18 | 23) { c == b'-' } else { c.is_ascii_hexdigit() })
}

/// Go's `%q` of a string (`strconv.Quote`).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = if (c as u32) <= 0xffff {
                    write!(out, "\\u{:04x}", c as u32)
                } else {
                    write!(out, "\\U{:08x}", c as u32)
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// PGV's C++ literal of a byte string (`"\x61\x62"`).
fn go_bytes(b: &[u8]) -> String {
    let mut out = String::from("\"");
    for x in b {
        let _ = write!(out, "\\x{x:x}");
    }
    out.push('"');
    out
}

fn go_byte_list(items: &[Vec<u8>]) -> String {
    go_list(items.iter().map(|b| format!("{b:?}")))
}

/// Go's `%v` of a slice: `[a b c]`.
fn go_list<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> String {
    let parts: Vec<String> = items.map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(" "))
}

/// Go's `%v` of a float: `strconv.FormatFloat(f, 'g', -1, bits)`, the shortest digits that
/// read back as the same value, in exponent form when the exponent is below -4 or at least 6
/// (`1e+06`, `123456`, `1e-05`).
pub fn go_float(v: f64, single: bool) -> String {
    if v.is_nan() {
        return "NaN".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".to_owned() } else { "-Inf".to_owned() };
    }
    // Shortest round-trip digits and decimal exponent, from Rust's `{:e}`.
    let e = if single { format!("{:e}", v as f32) } else { format!("{v:e}") };
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = if digits.trim_start_matches('0').is_empty() { "0".to_owned() } else { digits };
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let _ = write!(out, "{:02}", exp.abs());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let point = exp as usize + 1;
        if digits.len() <= point {
            out.push_str(&digits);
            for _ in digits.len()..point {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
    out
}

/// Go's `time.Duration.String()` of a protobuf duration (`1m30s`, `100ms`, `0s`).
pub fn go_duration(d: Dur) -> String {
    let total = i128::from(d.seconds) * 1_000_000_000 + i128::from(d.nanos);
    // time.Duration is an int64 of nanoseconds; Go's AsDuration clamps to its range.
    let total = total.clamp(i128::from(i64::MIN), i128::from(i64::MAX));
    let neg = total < 0;
    let mut u = total.unsigned_abs();
    if u < 1_000_000_000 {
        // Below a second: ns, µs or ms with a fraction.
        let (unit, div) = if u == 0 {
            return "0s".to_owned();
        } else if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        let s = fraction(u, div);
        return format!("{}{s}{unit}", if neg { "-" } else { "" });
    }
    let mut out = String::new();
    let secs_frac = fraction(u % 60_000_000_000, 1_000_000_000);
    u /= 60_000_000_000;
    let mut parts = format!("{secs_frac}s");
    if u > 0 {
        let minutes = u % 60;
        u /= 60;
        parts = format!("{minutes}m{parts}");
        if u > 0 {
            parts = format!("{u}h{parts}");
        }
    }
    if neg {
        out.push('-');
    }
    out.push_str(&parts);
    out
}

/// `v / div` with the fraction's trailing zeros dropped (`1.5`, `2`).
fn fraction(v: u128, div: u128) -> String {
    let whole = v / div;
    let mut frac = v % div;
    if frac == 0 {
        return whole.to_string();
    }
    let mut width = div.ilog10() as usize;
    while frac % 10 == 0 {
        frac /= 10;
        width -= 1;
    }
    format!("{whole}.{frac:0width$}")
}

/// How PGV's C++ prints a duration of an `in`/`not_in` list (Go's `%v` of a Duration message).
fn go_duration_literal(d: Dur) -> String {
    format!("seconds:{} nanos:{}", d.seconds, d.nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_re2_matches_them() {
        // RE2's `\s` is `[\t\n\f\r ]`: no vertical tab, no Unicode space.
        let p = Pattern::from(r"^[^\s,]+$".to_owned());
        assert!(p.full_match("a\u{b}b"));
        assert!(p.full_match("a\u{a0}b"));
        assert!(!p.full_match("a b"));
        assert!(!p.full_match("a,b"));
        assert!(!p.full_match("a\tb"));
        // FullMatch: the whole value, whatever the pattern's anchors.
        let p = Pattern::from("[0-9]+|x".to_owned());
        assert!(p.full_match("42") && p.full_match("x"));
        assert!(!p.full_match("42x"));
    }

    #[test]
    fn go_floats_print_like_fmt_v() {
        assert_eq!(go_float(0.0, false), "0");
        assert_eq!(go_float(1.0, false), "1");
        assert_eq!(go_float(0.5, false), "0.5");
        assert_eq!(go_float(100.0, false), "100");
        assert_eq!(go_float(1e6, false), "1e+06");
        assert_eq!(go_float(123456.0, false), "123456");
        assert_eq!(go_float(0.0001, false), "0.0001");
        assert_eq!(go_float(0.00001, false), "1e-05");
        assert_eq!(go_float(-2.5, false), "-2.5");
        assert_eq!(go_float(0.1, true), "0.1");
    }

    #[test]
    fn go_durations_print_like_time_duration() {
        let d = |seconds, nanos| go_duration(Dur { seconds, nanos });
        assert_eq!(d(0, 0), "0s");
        assert_eq!(d(1, 0), "1s");
        assert_eq!(d(0, 1_000_000), "1ms");
        assert_eq!(d(0, 1_500_000), "1.5ms");
        assert_eq!(d(0, 1_000), "1µs");
        assert_eq!(d(0, 1), "1ns");
        assert_eq!(d(90, 0), "1m30s");
        assert_eq!(d(3600, 0), "1h0m0s");
        assert_eq!(d(1, 500_000_000), "1.5s");
        assert_eq!(d(-1, 0), "-1s");
    }

    #[test]
    fn go_quotes_like_strconv_quote() {
        assert_eq!(go_quote("^[^\u{0}\n\r]*$"), "\"^[^\\x00\\n\\r]*$\"");
        assert_eq!(go_quote("a\"b"), "\"a\\\"b\"");
        assert_eq!(go_quote("é"), "\"é\"");
    }
}
