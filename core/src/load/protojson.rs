//! Reading proto3 JSON the way Envoy's (and Go's) protojson parsers accept it, fast.
//!
//! Why not `#[derive(Deserialize)]` with `alias`: the derive forgets which spelling a key had and
//! where it stood, and xdsck points at both (pointers use the input's own spelling; locations use
//! the key's byte offset). [`proto_message!`] generates the same kind of visitor the derive
//! would, plus those two facts, plus protojson's rule that `null` means "unset".

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, Visitor};

use crate::short_list::push_short;

// The one place that keeps parse state in thread-locals. serde's derive-like visitors below
// cannot be handed the text they read, so the text (for positions) and the strictness (for
// CiliumEnvoyConfig) are set around a parse by scopes that restore the previous value. The
// lookup of places after the fact (`crate::source`) needs neither: it holds the text it walks.
thread_local! {
    /// The text being parsed, as (address, length). Borrowed strings point into it, so their
    /// position is a subtraction: no offset bookkeeping in the hot path.
    static BASE: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

thread_local! {
    /// Set while a CiliumEnvoyConfig's `spec.resources` are parsed: the Cilium agent decodes
    /// them with Go's protojson, which refuses the lenient forms Envoy's own parser takes (a
    /// single value for a list, nested lists, `null` elements, `{"value": N}` for a wrapper,
    /// booleans as strings). Only the lenient readers below look at it.
    static STRICT: Cell<bool> = const { Cell::new(false) };
}

fn strict() -> bool {
    STRICT.with(Cell::get)
}

/// A value parsed with Go protojson's rules (see [`STRICT`]), however deep it is.
#[derive(Debug, Default)]
pub(crate) struct Strict<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Strict<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                STRICT.with(|s| s.set(self.0));
            }
        }
        let _restore = Restore(STRICT.with(|s| s.replace(true)));
        T::deserialize(d).map(Strict)
    }
}

/// The error for a lenient form in a strict context.
fn refused_by_agent<E: de::Error>(what: &str) -> E {
    E::custom(format!(
        "{what}: the Cilium agent decodes CiliumEnvoyConfig resources with Go's protojson, which \
         refuses this form (Envoy's own parser would take it)"
    ))
}

/// Marks `text` as the text being parsed on this thread until dropped (then the previous one
/// is restored, so scopes nest).
pub(crate) struct ParseScope {
    previous: (usize, usize),
}

impl ParseScope {
    pub(crate) fn new(text: &str) -> Self {
        Self::again(Parsing((text.as_ptr() as usize, text.len())))
    }

    /// The text this thread is parsing, for work on other threads that turns what it read into
    /// the model (a borrowed string's offset is found only where the text is marked).
    pub(crate) fn current() -> Parsing {
        Parsing(BASE.with(Cell::get))
    }

    /// Marks a text another thread is parsing ([`Self::current`]) as this thread's too.
    pub(crate) fn again(text: Parsing) -> Self {
        ParseScope { previous: BASE.with(|b| b.replace(text.0)) }
    }
}

/// The text a thread is parsing, as [`BASE`] holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parsing((usize, usize));

impl Drop for ParseScope {
    fn drop(&mut self) {
        BASE.with(|b| b.set(self.previous));
    }
}

/// Byte offset of a string borrowed from the text being parsed.
pub(crate) fn offset_of(s: &str) -> Option<usize> {
    let (base, len) = BASE.with(Cell::get);
    let p = s.as_ptr() as usize;
    (base != 0 && p >= base && p <= base + len).then(|| p - base)
}

/// A JSON string that borrows from the input unless it had escapes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Str<'a>(pub Cow<'a, str>);

impl<'a> Str<'a> {
    pub(crate) fn into_cow(self) -> Cow<'a, str> {
        self.0
    }

    /// The string as the model keeps it ([`crate::model::text_of`]).
    pub(crate) fn into_text(self) -> crate::model::Text<'a> {
        crate::model::text_of(self.0)
    }

    /// Byte offset of the string's first character (after the quote), when borrowed.
    pub(crate) fn offset(&self) -> Option<usize> {
        match &self.0 {
            Cow::Borrowed(s) => offset_of(s),
            Cow::Owned(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A `uint32` (or `UInt32Value`) as protojson accepts it: a number, or a decimal string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct U32(pub u32);

impl<'de> Deserialize<'de> for U32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Integer::new("uint32", "an unsigned 32-bit integer")).map(U32)
    }
}

/// An `int64` as protojson accepts it: a number, or a decimal string (the schema pass has
/// refused anything else before the typed reader sees it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct I64(pub i64);

impl<'de> Deserialize<'de> for I64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Integer::new("int64", "a signed 64-bit integer")).map(I64)
    }
}

/// The visitor of an integer field: its proto type's name and what it is, for the messages.
struct Integer<T> {
    proto: &'static str,
    what: &'static str,
    _t: std::marker::PhantomData<T>,
}

impl<T> Integer<T> {
    fn new(proto: &'static str, what: &'static str) -> Self {
        Integer { proto, what, _t: std::marker::PhantomData }
    }
}

impl<T: TryFrom<i128> + std::str::FromStr> Visitor<'_> for Integer<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (a number or a decimal string)", self.what)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        T::try_from(i128::from(v)).map_err(|_| E::custom(format!("{v} is out of range for {}", self.proto)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        T::try_from(i128::from(v)).map_err(|_| E::custom(format!("{v} is out of range for {}", self.proto)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        // protojson accepts an integral value written with a fraction or exponent; beyond 2^64
        // no integer type of the API holds it.
        let integral = v.fract() == 0.0 && v.abs() < 1.9e19;
        integral
            .then(|| T::try_from(v as i128).ok())
            .flatten()
            .ok_or_else(|| E::custom(format!("{v} is not {}", self.what)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        v.trim().parse::<T>().map_err(|_| E::custom(format!("\"{v}\" is not {}", self.what)))
    }
}

/// A `bool`: `true`/`false`, or a string Envoy's parser reads as one (absl's `SimpleAtob`:
/// `true`, `t`, `yes`, `y`, `1` and `false`, `f`, `no`, `n`, `0`, in any case; checked with
/// envoy 1.40, which refuses `on`, `""` and `" true"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bool(pub bool);

impl<'de> Deserialize<'de> for Bool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a boolean (true or false)")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Bool, E> {
                Ok(Bool(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bool, E> {
                if strict() {
                    return Err(refused_by_agent(&format!("a boolean written as the string \"{v}\"")));
                }
                const TRUE: [&str; 5] = ["true", "t", "yes", "y", "1"];
                const FALSE: [&str; 5] = ["false", "f", "no", "n", "0"];
                if TRUE.iter().any(|t| t.eq_ignore_ascii_case(v)) {
                    Ok(Bool(true))
                } else if FALSE.iter().any(|t| t.eq_ignore_ascii_case(v)) {
                    Ok(Bool(false))
                } else {
                    Err(E::custom(format!("\"{v}\" is not a boolean (expected true or false)")))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A wrapper message (`google.protobuf.UInt32Value`, `BoolValue`): the bare value, or, as
/// Envoy's parser also accepts, the message written out as `{"value": ...}`. Only fields of a
/// wrapper type take the object form (a plain `uint32` such as `port_value` refuses it), and the
/// object must hold exactly a non-null `value` (envoy 1.40 refuses `{}`, `{"value": null}` and
/// any other key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wrapped<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Wrapped<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer};
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Wrapped<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value, or a wrapper object {\"value\": ...}")
            }
            fn visit_map<M: de::MapAccess<'de>>(self, map: M) -> Result<Self::Value, M::Error> {
                if strict() {
                    return Err(refused_by_agent("a wrapper value written as an object {\"value\": ...}"));
                }
                WrapperObject::<T>::deserialize(MapAccessDeserializer::new(map)).map(|w| Wrapped(w.0))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                T::deserialize(de::value::BoolDeserializer::new(v)).map(Wrapped)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                T::deserialize(de::value::U64Deserializer::new(v)).map(Wrapped)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                T::deserialize(de::value::I64Deserializer::new(v)).map(Wrapped)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                T::deserialize(de::value::F64Deserializer::new(v)).map(Wrapped)
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                T::deserialize(BorrowedStrDeserializer::new(v)).map(Wrapped)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                T::deserialize(de::value::StrDeserializer::new(v)).map(Wrapped)
            }
            fn visit_seq<S: de::SeqAccess<'de>>(self, _: S) -> Result<Self::Value, S::Error> {
                Err(de::Error::invalid_type(de::Unexpected::Seq, &self))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The `{"value": ...}` form of a wrapper message.
struct WrapperObject<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for WrapperObject<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = WrapperObject<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a wrapper object {\"value\": ...}")
            }
            fn visit_map<M: de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut value = None;
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    if key.0 != "value" {
                        return Err(de::Error::custom(format!(
                            "a wrapper object has only the field `value`, not `{}`",
                            key.0
                        )));
                    }
                    if value.is_some() {
                        return Err(duplicate_field("value", "value"));
                    }
                    value = Some(map.next_value::<Option<T>>()?);
                }
                match value {
                    Some(Some(v)) => Ok(WrapperObject(v)),
                    _ => Err(de::Error::custom("a wrapper object needs a `value`")),
                }
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A repeated field as Envoy's parser reads it: a list, or a single value standing for a list
/// of one (`server_names: api.example.com`, `filters: {name: ...}`); lists nested in the list
/// are flattened into it (`[["a"], "b"]` is `["a", "b"]`) and a `null` element is the element's
/// default value. All of it checked with envoy 1.40's `--mode validate` and `/config_dump`.
#[derive(Debug)]
pub(crate) struct Repeated<T>(pub Vec<T>);

impl<T> Default for Repeated<T> {
    fn default() -> Self {
        Repeated(Vec::new())
    }
}

impl<T> IntoIterator for Repeated<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Repeated<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Most repeated fields hold one or two values: no room is kept for more (a raw value can
        // be a hundred bytes and more, and a listener's are held until the listener is made).
        let mut out = Vec::new();
        d.deserialize_any(Elements { push: &mut |v| push_short(&mut out, v), what: "a list", depth: 0 })?;
        Ok(Repeated(out))
    }
}

/// Reads one value of a repeated field (a list, a nested list or a single element) and hands
/// each element to `push` as it is read, so a list converted element by element (filter chains)
/// is never held twice.
pub(crate) struct Elements<'p, T> {
    pub push: &'p mut dyn FnMut(T),
    /// What the field holds, for errors.
    pub what: &'static str,
    /// 0 for the field's own value, 1 inside its list, more inside nested lists.
    pub depth: usize,
}

impl<T> Elements<'_, T> {
    /// In a strict context only a list of plain elements is a repeated field.
    fn check<E: de::Error>(&self, seq: bool) -> Result<(), E> {
        if !strict() {
            return Ok(());
        }
        match (self.depth, seq) {
            (0, false) => Err(refused_by_agent("a single value where a list belongs")),
            (1.., true) => Err(refused_by_agent("a list inside a list")),
            _ => Ok(()),
        }
    }
}

impl<'de, T: Deserialize<'de> + Default> de::DeserializeSeed<'de> for Elements<'_, T> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for Elements<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
    fn visit_seq<S: de::SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        self.check(true)?;
        let depth = self.depth + 1;
        while seq.next_element_seed(Elements { push: &mut *self.push, what: self.what, depth })?.is_some() {}
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        if strict() {
            return Err(refused_by_agent("`null` in a list"));
        }
        (self.push)(T::default());
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }
    fn visit_map<M: de::MapAccess<'de>>(self, map: M) -> Result<(), M::Error> {
        self.check(false)?;
        (self.push)(T::deserialize(de::value::MapAccessDeserializer::new(map))?);
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.check(false)?;
        (self.push)(T::deserialize(de::value::BoolDeserializer::<E>::new(v))?);
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.check(false)?;
        (self.push)(T::deserialize(de::value::U64Deserializer::<E>::new(v))?);
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.check(false)?;
        (self.push)(T::deserialize(de::value::I64Deserializer::<E>::new(v))?);
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.check(false)?;
        (self.push)(T::deserialize(de::value::F64Deserializer::<E>::new(v))?);
        Ok(())
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<(), E> {
        self.check(false)?;
        (self.push)(T::deserialize(de::value::BorrowedStrDeserializer::<E>::new(v))?);
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.check(false)?;
        (self.push)(T::deserialize(de::value::StrDeserializer::<E>::new(v))?);
        Ok(())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<(), E> {
        self.check(false)?;
        (self.push)(T::deserialize(de::value::StringDeserializer::<E>::new(v))?);
        Ok(())
    }
}

/// A JSON value read whole, to be typed from afterwards (a `filter_chain_matcher`), with the
/// offset of the object it is.
#[derive(Debug)]
pub(crate) struct Captured {
    pub value: serde_json::Value,
    pub offset: Option<usize>,
}

impl<'de> Deserialize<'de> for Captured {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_json::Value;
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Captured;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<M: de::MapAccess<'de>>(self, mut map: M) -> Result<Captured, M::Error> {
                let mut out = serde_json::Map::new();
                let mut offset = None;
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    if offset.is_none() {
                        // The object starts at or before its first key's quote.
                        offset = key.offset().map(|o| o.saturating_sub(1));
                    }
                    out.insert(key.0.into_owned(), map.next_value::<Value>()?);
                }
                Ok(Captured { value: Value::Object(out), offset })
            }
            fn visit_seq<S: de::SeqAccess<'de>>(self, seq: S) -> Result<Captured, S::Error> {
                let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Captured { value, offset: None })
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Captured, E> {
                Ok(Captured { value: Value::Bool(v), offset: None })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Captured, E> {
                Ok(Captured { value: v.into(), offset: None })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Captured, E> {
                Ok(Captured { value: v.into(), offset: None })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Captured, E> {
                Ok(Captured { value: v.into(), offset: None })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Captured, E> {
                Ok(Captured { value: Value::String(v.to_owned()), offset: None })
            }
            fn visit_unit<E: de::Error>(self) -> Result<Captured, E> {
                Ok(Captured { value: Value::Null, offset: None })
            }
        }
        d.deserialize_any(V)
    }
}

/// A field whose presence is all xdsck needs (e.g. `api_listener`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Present;

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Present)
    }
}

/// A proto enum: its value name, or its number. A number the enum does not define reads as the
/// first value: proto3 enums are open, and where the API refuses one (`defined_only`) the schema
/// reader has reported it.
pub(crate) fn enum_value<'de, D: Deserializer<'de>>(d: D, names: &'static [&'static str]) -> Result<usize, D::Error> {
    struct V(&'static [&'static str]);
    impl Visitor<'_> for V {
        type Value = usize;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "one of {}", self.0.join(", "))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
            self.0.iter().position(|n| *n == v).ok_or_else(|| E::unknown_variant(v, self.0))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<usize, E> {
            Ok(usize::try_from(v).ok().filter(|&i| i < self.0.len()).unwrap_or(0))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<usize, E> {
            Ok(usize::try_from(v).ok().filter(|&i| i < self.0.len()).unwrap_or(0))
        }
    }
    d.deserialize_any(V(names))
}

/// Whether a key is spelled in lowerCamelCase (has an upper-case ASCII letter).
pub(crate) fn is_camel(key: &str) -> bool {
    key.bytes().any(|b| b.is_ascii_uppercase())
}

/// The error for a field given twice, in one spelling or both.
pub(crate) fn duplicate_field<E: de::Error>(key: &str, field: &str) -> E {
    if key == field {
        E::custom(format_args!("duplicate field `{key}`"))
    } else {
        E::custom(format_args!("duplicate field `{key}` (also given as `{field}`)"))
    }
}

/// Declares a proto message read from proto3 JSON. Each field lists its accepted keys
/// (`"snake_case" | "lowerCamelCase"`) and is stored as an `Option`: absent and `null` are unset.
/// The struct also records `first_key` (the key written first, as borrowed from the input: the
/// object's position) and `camel` (whether its keys were lowerCamelCase).
macro_rules! proto_message {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident<$lt:lifetime> as $what:literal {
            $( $field:ident : $ty:ty = $($key:literal)|+ ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default)]
        $vis struct $name<$lt> {
            pub first_key: Option<&$lt str>,
            pub camel: bool,
            /// Keys the object had, read or not.
            pub keys: usize,
            $( pub $field: Option<$ty>, )*
        }

        impl<$lt> serde::Deserialize<$lt> for $name<$lt> {
            fn deserialize<D: serde::Deserializer<$lt>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<$lt> serde::de::Visitor<$lt> for V {
                    type Value = $name<$lt>;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_map<M: serde::de::MapAccess<$lt>>(
                        self,
                        mut map: M,
                    ) -> Result<Self::Value, M::Error> {
                        let mut out = $name::default();
                        while let Some(key) = map.next_key::<$crate::load::protojson::Str<$lt>>()? {
                            out.keys += 1;
                            // The key that comes first in the text: an Any's `@type` is
                            // handed over first wherever it is written.
                            if let std::borrow::Cow::Borrowed(k) = key.0
                                && out.first_key.is_none_or(|f: &str| k.as_ptr() < f.as_ptr())
                            {
                                out.first_key = Some(k);
                            }
                            match &*key.0 {
                                $(
                                    $($key)|+ => {
                                        // A repeat after an explicit `null` goes unnoticed;
                                        // both mean "unset" to protojson anyway.
                                        if out.$field.is_some() {
                                            return Err($crate::load::protojson::duplicate_field(&key.0, stringify!($field)));
                                        }
                                        if $crate::load::protojson::is_camel(&key.0) {
                                            out.camel = true;
                                        }
                                        out.$field = map.next_value::<Option<$ty>>()?;
                                    }
                                )*
                                _ => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

pub(crate) use proto_message;
