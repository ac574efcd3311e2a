//! The offset of the node at a JSON pointer in JSON text, found by reading the text again.
//!
//! The loaders record offsets only for the nodes the model keeps (listeners, chains, matches).
//! Anything deeper — one `server_names` entry, the field a type error was in — is found here, by
//! walking the text once more with serde_json and skipping everything off the pointer's path.
//! Positions come from borrowed strings: each visitor holds the text, so a position is a
//! subtraction from its start, with no state outside the walk.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::pointer::tokens;

/// Byte offset of the node at `pointer` (RFC 6901) relative to the value that starts at `start`
/// in `json`: for an object member, where its key starts; for a list element, where the element
/// starts (for numbers and booleans in a list, where the list starts). Only that value is read,
/// and only up to the node, so a finding about one chain costs what reading the chain costs,
/// not the file. `None` if the pointer does not resolve or the text is not JSON.
pub fn pointer_offset_from(json: &str, start: usize, pointer: &str) -> Option<usize> {
    let tokens: Vec<Cow<'_, str>> = tokens(pointer)?.collect::<Option<_>>()?;
    let value = json.get(start..)?;
    if tokens.is_empty() {
        return Some(start + value.len() - value.trim_start().len());
    }
    let mut de = serde_json::Deserializer::from_str(value);
    let found = Cell::new(None);
    // Seeking stops with an error as soon as the node is found; what follows is not read.
    let _ = Seek { json, tokens: &tokens, found: &found }.deserialize(&mut de);
    found.get()
}

/// Where an object whose first key's quote is at `quote` starts: the `{` before it.
pub(crate) fn object_start(json: &str, quote: usize) -> usize {
    let before = json[..quote].trim_end();
    if before.ends_with('{') { before.len() - 1 } else { quote }
}

/// Offset in `json` of a string borrowed from it.
fn offset_in(json: &str, s: &str) -> Option<usize> {
    let (base, p) = (json.as_ptr() as usize, s.as_ptr() as usize);
    (p >= base && p <= base + json.len()).then(|| p - base)
}

/// An object key, with the offset of its first character when it is borrowed from the text
/// (it is not when it had escapes).
struct Key<'t> {
    json: &'t str,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = (Cow<'de, str>, Option<usize>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = (Cow<'de, str>, Option<usize>);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok((Cow::Borrowed(v), offset_in(self.json, v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((Cow::Owned(v.to_owned()), None))
    }
}

struct Seek<'t, 'f> {
    json: &'t str,
    tokens: &'t [Cow<'t, str>],
    /// Set when the node is found; the walk then ends with [`FOUND`].
    found: &'f Cell<Option<usize>>,
}

/// The "error" that ends a walk once the node is found.
const FOUND: &str = "found";

impl Seek<'_, '_> {
    fn done<E: de::Error>(&self, offset: Option<usize>) -> Result<(), E> {
        match offset {
            Some(o) => {
                self.found.set(Some(o));
                Err(E::custom(FOUND))
            }
            None => Ok(()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seek<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seek<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        while let Some((key, offset)) = map.next_key_seed(Key { json: self.json })? {
            if *key == *self.tokens[0] {
                if self.tokens.len() == 1 {
                    return self.done(offset.map(|o| o - 1));
                }
                map.next_value_seed(Seek { json: self.json, tokens: &self.tokens[1..], found: self.found })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let Ok(want) = self.tokens[0].parse::<usize>() else {
            return Ok(());
        };
        for _ in 0..want {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        if self.tokens.len() == 1 {
            let start = seq.next_element_seed(Start { json: self.json })?;
            return self.done(start.flatten());
        }
        seq.next_element_seed(Seek { json: self.json, tokens: &self.tokens[1..], found: self.found })?;
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(())
    }
}

/// The start offset of one value.
struct Start<'t> {
    json: &'t str,
}

impl<'de> DeserializeSeed<'de> for Start<'_> {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Start<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(offset_in(self.json, v).map(|o| o - 1))
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut found = None;
        while let Some((_, offset)) = map.next_key_seed(Key { json: self.json })? {
            if found.is_none() {
                found = offset.map(|o| object_start(self.json, o - 1));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(found)
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let mut found = None;
        while let Some(o) = seq.next_element_seed(Start { json: self.json })? {
            // A list starts just before its first element that has a position.
            if found.is_none() {
                found = o.map(|o| {
                    let before = self.json[..o].trim_end();
                    if before.ends_with('[') { before.len() - 1 } else { o }
                });
            }
        }
        Ok(found)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{
  "a": {"b": [1, "two", {"c": 3}]},
  "x~y/z": true
}"#;

    fn pointer_offset(json: &str, pointer: &str) -> Option<usize> {
        pointer_offset_from(json, 0, pointer)
    }

    #[test]
    fn pointers_resolve_to_keys_and_elements() {
        let at = |p: &str| pointer_offset(DOC, p).map(|o| &DOC[o..o + 5]);
        assert_eq!(at(""), Some("{\n  \""));
        assert_eq!(at("/a"), Some("\"a\": "));
        assert_eq!(at("/a/b"), Some("\"b\": "));
        assert_eq!(at("/a/b/1"), Some("\"two\""));
        assert_eq!(at("/a/b/2"), Some("{\"c\":"));
        assert_eq!(at("/a/b/2/c"), Some("\"c\": "));
        assert_eq!(at("/x~0y~1z"), Some("\"x~y/"));
        assert_eq!(at("/a/b/0"), None);
        assert_eq!(at("/nope"), None);
        assert_eq!(at("/a/b/9"), None);
        // Not a pointer, or a token with a bad escape: nothing is found.
        assert_eq!(at("a"), None);
        assert_eq!(at("/x~2y"), None);
    }

    #[test]
    fn pointers_below_a_known_node_resolve_as_from_the_root() {
        let a = DOC.find("{\"b\"").unwrap();
        for rest in ["", "/b", "/b/1", "/b/2", "/b/2/c", "/b/0", "/nope"] {
            let from_root = pointer_offset(DOC, &format!("/a{rest}"));
            let below = pointer_offset_from(DOC, a, rest);
            if rest.is_empty() {
                assert_eq!(below, Some(a));
            } else {
                assert_eq!(below, from_root, "{rest}");
            }
        }
    }

    #[test]
    fn a_walk_stops_at_the_node() {
        // Nothing after the node is read: the rest may be anything, even a 100 MB tail.
        let doc = r#"{"a": {"b": [1, {"c": 3}], "d": 4}, "#.to_owned() + "garbage that is not JSON";
        assert_eq!(pointer_offset(&doc, "/a/b/1/c").map(|o| &doc[o..o + 3]), Some("\"c\""));
        assert_eq!(pointer_offset(&doc, "/a/d").map(|o| &doc[o..o + 3]), Some("\"d\""));
        assert_eq!(pointer_offset(&doc, "/z"), None);
    }

    #[test]
    fn escaped_keys_are_matched_but_have_no_place() {
        // A key with escapes is not borrowed from the text, so it has no offset of its own.
        let doc = r#"{"a\u0062": 1, "c": 2}"#;
        assert_eq!(pointer_offset(doc, "/ab"), None);
        assert_eq!(pointer_offset(doc, "/c"), Some(15));
    }
}
