//! The offset of the node at a JSON pointer in JSON text, found by reading the text again.
//!
//! The loaders record offsets only for the nodes the model keeps (listeners, chains, matches).
//! Anything deeper — one `server_names` entry, the field a type error was in — is found here, by
//! walking the text once more along the pointer's path: each value off the path is skipped by
//! serde_json, the punctuation between them is read here. Where a walk passes many elements of
//! one array, where each element starts is kept ([`Elements`]): the next walk into that array
//! jumps to its element, so a finding about each of 20k virtual hosts of one table reads the
//! table once, not 20k times.

use std::borrow::Cow;
use std::fmt;
use std::sync::Mutex;

use rustc_hash::FxHashMap;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::pointer::tokens;

/// Byte offset of the node at `pointer` (RFC 6901) relative to the value that starts at `start`
/// in `json`: for an object member, where its key starts; for a list element, where the element
/// starts (for numbers and booleans in a list, where the list starts). Only that value is read,
/// and only up to the node, so a finding about one chain costs what reading the chain costs,
/// not the file. `None` if the pointer does not resolve or the text is not JSON.
pub fn pointer_offset_from(json: &str, start: usize, pointer: &str) -> Option<usize> {
    pointer_offset_in(json, start, pointer, &Elements::default())
}

/// [`pointer_offset_from`], keeping in `elements` where the elements of the long arrays it
/// passes start (and jumping by what earlier walks of the same text kept there).
pub(crate) fn pointer_offset_in(json: &str, start: usize, pointer: &str, elements: &Elements) -> Option<usize> {
    let tokens: Vec<Cow<'_, str>> = tokens(pointer)?.collect::<Option<_>>()?;
    json.get(start..)?;
    Walk { json, elements }.node(skip_space(json, start), &tokens)
}

/// Where an object whose first key's quote is at `quote` starts: the `{` before it.
pub(crate) fn object_start(json: &str, quote: usize) -> usize {
    let before = json[..quote].trim_end();
    if before.ends_with('{') { before.len() - 1 } else { quote }
}

/// An array is long when a walk passes this many of its elements: only then are their starts
/// kept (a chain's few server names are read again, not remembered).
pub(crate) const LONG: usize = 16;

/// Where the elements of the long arrays walked in one text start, by where the array starts:
/// as far as a walk went into each, in order. Kept with the text (JSON in
/// [`super::SourceFile`], YAML in its translation), shared by the cores that locate findings.
/// What an element's start is, and how to step from one to the next, is the walker's.
#[derive(Debug, Default)]
pub(crate) struct Elements(Mutex<FxHashMap<usize, Vec<usize>>>);

impl Elements {
    /// Where element `index` of the array that starts at `open` starts: `first` finds the first
    /// element, `after` the one after an element (each `None` past the last). The array is read
    /// only past the last element any walk has reached.
    pub(crate) fn nth(
        &self,
        open: usize,
        index: usize,
        first: impl FnOnce() -> Option<usize>,
        after: impl Fn(usize) -> Option<usize>,
    ) -> Option<usize> {
        let (known, last) = {
            let table = self.0.lock().unwrap_or_else(|e| e.into_inner());
            match table.get(&open) {
                Some(starts) if index < starts.len() => return Some(starts[index]),
                Some(starts) => (starts.len(), starts.last().copied()),
                None => (0, None),
            }
        };
        // Read on from the last element known, without the lock; another core may be reading
        // the same elements, and whichever adds them first is kept (they are the same).
        let mut found = Vec::with_capacity(index + 1 - known);
        let mut next = match last {
            Some(last) => after(last)?,
            None => first()?,
        };
        loop {
            found.push(next);
            if known + found.len() > index {
                break;
            }
            next = after(next)?;
        }
        let mut table = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let starts = table.entry(open).or_default();
        if starts.len() == known {
            starts.extend_from_slice(&found);
        }
        found.last().copied()
    }

    /// Each array kept and how many of its elements' starts are: for tests.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> Vec<(usize, usize)> {
        let table = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut kept: Vec<_> = table.iter().map(|(&open, starts)| (open, starts.len())).collect();
        kept.sort_unstable();
        kept
    }
}

struct Walk<'t, 'e> {
    json: &'t str,
    elements: &'e Elements,
}

impl Walk<'_, '_> {
    /// The offset of the node at `tokens` below the value that starts at `at`.
    fn node(&self, at: usize, tokens: &[Cow<'_, str>]) -> Option<usize> {
        let Some((token, rest)) = tokens.split_first() else {
            return Some(at);
        };
        let json = self.json;
        match json.as_bytes().get(at)? {
            b'{' => {
                let mut key = skip_space(json, at + 1);
                while json.as_bytes().get(key) == Some(&b'"') {
                    let (name, end) = read_key(json, key)?;
                    let value = skip_space(json, expect(json, skip_space(json, end), b':')?);
                    if *name == **token {
                        match (rest.is_empty(), &name) {
                            (true, Cow::Borrowed(_)) => return Some(key),
                            // A key with escapes is matched but has no place of its own.
                            (true, Cow::Owned(_)) => {}
                            (false, _) => {
                                if let Some(found) = self.node(value, rest) {
                                    return Some(found);
                                }
                            }
                        }
                    }
                    let after = skip_space(json, skip_value(json, value)?);
                    key = skip_space(json, expect(json, after, b',')?);
                }
                None
            }
            b'[' => {
                let index = token.parse::<usize>().ok()?;
                let element = if index >= LONG {
                    self.elements.nth(at, index, || first_element(json, at), |e| after_element(json, e))?
                } else {
                    (0..index).try_fold(first_element(json, at)?, |e, _| after_element(json, e))?
                };
                if rest.is_empty() { value_start(json, element) } else { self.node(element, rest) }
            }
            _ => None,
        }
    }
}

/// The first non-space offset at or after `at`.
fn skip_space(json: &str, at: usize) -> usize {
    let bytes = json.as_bytes();
    let mut i = at;
    while bytes.get(i).is_some_and(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// The offset after `byte`, which must be at `at`.
fn expect(json: &str, at: usize, byte: u8) -> Option<usize> {
    (json.as_bytes().get(at) == Some(&byte)).then_some(at + 1)
}

/// Where the value that starts at `at` ends (serde_json reads it).
fn skip_value(json: &str, at: usize) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_str(json.get(at..)?).into_iter::<IgnoredAny>();
    values.next()?.ok()?;
    Some(at + values.byte_offset())
}

/// Where the first element of the array whose `[` is at `open` starts; `None` when it is empty.
fn first_element(json: &str, open: usize) -> Option<usize> {
    let first = skip_space(json, open + 1);
    (json.as_bytes().get(first) != Some(&b']')).then_some(first)
}

/// Where the element after the one that starts at `element` starts; `None` after the last.
fn after_element(json: &str, element: usize) -> Option<usize> {
    let after = skip_space(json, skip_value(json, element)?);
    Some(skip_space(json, expect(json, after, b',')?))
}

/// An object key whose opening quote is at `quote`, and the offset after its closing quote:
/// borrowed from the text when it has no escapes.
fn read_key(json: &str, quote: usize) -> Option<(Cow<'_, str>, usize)> {
    let body = json.get(quote + 1..)?;
    let close = memchr::memchr2(b'"', b'\\', body.as_bytes())?;
    if body.as_bytes()[close] == b'"' {
        return Some((Cow::Borrowed(&body[..close]), quote + close + 2));
    }
    let mut strings = serde_json::Deserializer::from_str(&json[quote..]).into_iter::<String>();
    let key = strings.next()?.ok()?;
    Some((Cow::Owned(key), quote + strings.byte_offset()))
}

/// Where an element that starts at `at` is shown: a string's quote, an object's `{`, a list
/// before its first placed element; numbers, booleans and `null` have no place of their own.
fn value_start(json: &str, at: usize) -> Option<usize> {
    let mut de = serde_json::Deserializer::from_str(json.get(at..)?);
    Start { json }.deserialize(&mut de).ok().flatten()
}

/// Offset in `json` of a string borrowed from it.
fn offset_in(json: &str, s: &str) -> Option<usize> {
    let (base, p) = (json.as_ptr() as usize, s.as_ptr() as usize);
    (p >= base && p <= base + json.len()).then(|| p - base)
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
        // A key is a string: its place is its quote.
        while let Some(quote) = map.next_key_seed(Start { json: self.json })? {
            if found.is_none() {
                found = quote.map(|q| object_start(self.json, q));
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

    #[test]
    fn long_arrays_are_walked_once_and_jumped_into_after() {
        // Elements of every kind, some with escapes and nesting, with the place each is shown.
        let kinds = [r#"{"k": [1, "x"], "s": "a\"b"}"#, r#""e\u0041""#, "7", r#"[{"k": 1}, 2]"#, "{}", "null", "[]"];
        let mut doc = String::from(r#"{"pad": [1, 2], "list" : [ "#);
        let mut starts = Vec::new();
        for i in 0..100 {
            if i > 0 {
                doc.push_str(if i % 3 == 0 { ",\n  " } else { "," });
            }
            starts.push(doc.len());
            doc.push_str(kinds[i % kinds.len()]);
        }
        doc.push_str(" ] }");
        let elements = Elements::default();
        // A string with escapes is not borrowed from the text: like a number, it has no place.
        let shown = |i: usize| match kinds[i % kinds.len()] {
            "{}" | "[]" | "7" | "null" => None,
            text if text.starts_with('"') && text.contains('\\') => None,
            _ => Some(starts[i]),
        };
        // Out of order, past the end, below the elements: with the kept starts as without.
        for i in [40, 3, 99, 17, 100, 16, 15, 0, 77, 250, 64, 98] {
            let pointer = format!("/list/{i}");
            let kept = pointer_offset_in(&doc, 0, &pointer, &elements);
            assert_eq!(kept, pointer_offset_from(&doc, 0, &pointer), "{pointer}");
            assert_eq!(kept, if i < 100 { shown(i) } else { None }, "{pointer}");
            for below in ["/k", "/k/1", "/s", "/0/k", "/1"] {
                let pointer = format!("/list/{i}{below}");
                assert_eq!(pointer_offset_in(&doc, 0, &pointer, &elements), pointer_offset_from(&doc, 0, &pointer));
            }
        }
        assert_eq!(pointer_offset_in(&doc, 0, "/list/42/k/1", &elements).map(|o| &doc[o..o + 3]), Some("\"x\""));
        // Only the long array's starts are kept, as far as the furthest walk went.
        assert_eq!(elements.kept(), [(doc.find("[ ").unwrap(), 100)]);
        assert_eq!(elements.nth(doc.find("[ ").unwrap(), 99, || None, |_| None), starts.last().copied());
    }
}
