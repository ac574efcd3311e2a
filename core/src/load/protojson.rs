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

thread_local! {
    /// The text being parsed, as (address, length). Borrowed strings point into it, so their
    /// position is a subtraction: no offset bookkeeping in the hot path.
    static BASE: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Marks `text` as the text being parsed on this thread until dropped (then the previous one
/// is restored, so scopes nest).
pub(crate) struct ParseScope {
    previous: (usize, usize),
}

impl ParseScope {
    pub(crate) fn new(text: &str) -> Self {
        let previous = BASE.with(|b| b.replace((text.as_ptr() as usize, text.len())));
        ParseScope { previous }
    }
}

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct U32(pub u32);

impl<'de> Deserialize<'de> for U32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = U32;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an unsigned 32-bit integer (a number or a decimal string)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<U32, E> {
                u32::try_from(v).map(U32).map_err(|_| E::custom(format!("{v} is out of range for uint32")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<U32, E> {
                u32::try_from(v).map(U32).map_err(|_| E::custom(format!("{v} is out of range for uint32")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<U32, E> {
                // protojson accepts an integral value written with a fraction or exponent.
                if v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v) {
                    Ok(U32(v as u32))
                } else {
                    Err(E::custom(format!("{v} is not an unsigned 32-bit integer")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<U32, E> {
                v.trim()
                    .parse::<u32>()
                    .map(U32)
                    .map_err(|_| E::custom(format!("\"{v}\" is not an unsigned 32-bit integer")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A `bool` (or `BoolValue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bool(pub bool);

impl<'de> Deserialize<'de> for Bool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        bool::deserialize(d).map(Bool)
    }
}

/// A field whose presence is all xdsck needs (e.g. `api_listener`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Present;

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Present)
    }
}

/// A proto enum: its value name, or its number.
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
            usize::try_from(v)
                .ok()
                .filter(|&i| i < self.0.len())
                .ok_or_else(|| E::custom(format!("{v} is not a defined enum value")))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<usize, E> {
            usize::try_from(v)
                .ok()
                .filter(|&i| i < self.0.len())
                .ok_or_else(|| E::custom(format!("{v} is not a defined enum value")))
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
/// The struct also records `first_key` (the first key as borrowed from the input: the object's
/// position) and `camel` (whether its keys were lowerCamelCase).
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
                            if out.first_key.is_none() {
                                if let std::borrow::Cow::Borrowed(k) = key.0 {
                                    out.first_key = Some(k);
                                }
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
