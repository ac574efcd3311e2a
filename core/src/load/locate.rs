//! Finding places in JSON text after the fact: the byte offset of the node at a JSON pointer.
//!
//! The loaders record offsets only for the nodes the model keeps (listeners, chains, matches).
//! Anything deeper — one `server_names` entry, the field a type error was in — is found here, by
//! walking the text once more with serde_json and skipping everything off the pointer's path.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::protojson::{ParseScope, Str, offset_of};

/// Byte offset of the node at `pointer` (RFC 6901) in `json`: for an object member, where its key
/// starts; for a list element, where the element starts (for numbers and booleans in a list,
/// where the list starts). `None` if the pointer does not resolve or the text is not JSON.
pub fn pointer_offset(json: &str, pointer: &str) -> Option<usize> {
    let tokens: Vec<String> = if pointer.is_empty() {
        Vec::new()
    } else {
        pointer.strip_prefix('/')?.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect()
    };
    if tokens.is_empty() {
        return Some(json.len() - json.trim_start().len());
    }
    let _scope = ParseScope::new(json);
    let mut de = serde_json::Deserializer::from_str(json);
    Seek { json, tokens: &tokens }.deserialize(&mut de).ok().flatten()
}

/// Byte offset of a (line, column) position as serde_json reports it: lines from one, columns
/// counting bytes from the line start (0 at the start of a line).
pub fn line_column_to_offset(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match memchr::memchr(b'\n', &text.as_bytes()[start..]) {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    (start + column.saturating_sub(1)).min(text.len())
}

/// Where an object whose first key's quote is at `quote` starts: the `{` before it.
fn object_start(json: &str, quote: usize) -> usize {
    let before = json[..quote].trim_end();
    if before.ends_with('{') { before.len() - 1 } else { quote }
}

struct Seek<'t> {
    json: &'t str,
    tokens: &'t [String],
}

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if found.is_none() && *key.0 == *self.tokens[0] {
                if self.tokens.len() == 1 {
                    found = key.offset().map(|o| o - 1);
                    map.next_value::<IgnoredAny>()?;
                } else {
                    found = map.next_value_seed(Seek { json: self.json, tokens: &self.tokens[1..] })?;
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let want: Option<usize> = self.tokens[0].parse().ok();
        let mut found = None;
        let mut i = 0;
        loop {
            let done = if Some(i) == want {
                if self.tokens.len() == 1 {
                    match seq.next_element_seed(Start { json: self.json })? {
                        Some(o) => {
                            found = o;
                            false
                        }
                        None => true,
                    }
                } else {
                    let rest = Seek { json: self.json, tokens: &self.tokens[1..] };
                    match seq.next_element_seed(rest)? {
                        Some(o) => {
                            found = o;
                            false
                        }
                        None => true,
                    }
                }
            } else {
                seq.next_element::<IgnoredAny>()?.is_none()
            };
            if done {
                break;
            }
            i += 1;
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
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
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
        Ok(offset_of(v).map(|o| o - 1))
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if found.is_none() {
                found = key.offset().map(|o| object_start(self.json, o - 1));
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
    }

    #[test]
    fn line_columns_map_back_to_offsets() {
        let text = "ab\ncd\nef";
        assert_eq!(line_column_to_offset(text, 1, 1), 0);
        assert_eq!(line_column_to_offset(text, 2, 2), 4);
        assert_eq!(line_column_to_offset(text, 3, 0), 6);
        assert_eq!(line_column_to_offset(text, 9, 1), text.len());
    }
}
