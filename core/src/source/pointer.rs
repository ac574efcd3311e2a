//! JSON pointers (RFC 6901): the one place they are built, escaped and taken apart.

use std::borrow::Cow;

/// Escapes one reference token (RFC 6901 §3): `~` becomes `~0`, `/` becomes `~1`.
pub fn escape_pointer_token(token: &str) -> Cow<'_, str> {
    // memchr, not `contains(['~', '/'])`: the char-set search went a character at a time, and
    // every chain's pointers pass their keys through here.
    if memchr::memchr2(b'~', b'/', token.as_bytes()).is_some() {
        token.replace('~', "~0").replace('/', "~1").into()
    } else {
        token.into()
    }
}

/// The reference token an escaped one stands for; `None` for a `~` not followed by `0` or `1`.
pub fn unescape_pointer_token(raw: &str) -> Option<Cow<'_, str>> {
    if !raw.contains('~') {
        return Some(raw.into());
    }
    let mut token = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '~' => match chars.next() {
                Some('0') => token.push('~'),
                Some('1') => token.push('/'),
                _ => return None,
            },
            c => token.push(c),
        }
    }
    Some(token.into())
}

/// The unescaped tokens of a pointer, in order: none for `""` (the whole document), and `None`
/// for text that is not a pointer (it does not start with `/`). A token with a bad escape is
/// `None` in the sequence.
pub fn tokens(pointer: &str) -> Option<impl Iterator<Item = Option<Cow<'_, str>>>> {
    let rest = match pointer {
        "" => None,
        p => Some(p.strip_prefix('/')?),
    };
    Some(rest.into_iter().flat_map(|r| r.split('/')).map(unescape_pointer_token))
}

/// Proto field-name casing an object was written in. Pointers use the spelling of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Casing {
    /// `filter_chain_match`: the proto field names, as Envoy's docs, its YAML and its
    /// `config_dump` spell them.
    #[default]
    Snake,
    /// `filterChainMatch`: protobuf's canonical JSON names, which JSON printers such as Go's
    /// `protojson` emit unless told to keep the proto names.
    Camel,
}

impl Casing {
    /// The casing of an object the loader saw a camelCase key in (`camel`), or not.
    pub fn from_camel(camel: bool) -> Self {
        if camel { Casing::Camel } else { Casing::Snake }
    }

    /// The field name as this object spells it: `filter_chain_match` or `filterChainMatch`.
    pub fn field(self, snake: &str) -> Cow<'_, str> {
        match self {
            Casing::Snake => Cow::Borrowed(snake),
            Casing::Camel if !snake.contains('_') => Cow::Borrowed(snake),
            Casing::Camel => {
                let mut out = String::with_capacity(snake.len());
                let mut upper = false;
                for c in snake.chars() {
                    if c == '_' {
                        upper = true;
                    } else if upper {
                        out.extend(c.to_uppercase());
                        upper = false;
                    } else {
                        out.push(c);
                    }
                }
                Cow::Owned(out)
            }
        }
    }
}

/// A JSON pointer being built: each push appends one escaped reference token.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pointer(String);

impl Pointer {
    /// The pointer to the whole document, `""`.
    pub fn root() -> Self {
        Self::default()
    }

    /// Appends a token (an object key as written, or anything else), escaping it.
    pub fn push(&mut self, token: &str) -> &mut Self {
        push_pointer(&mut self.0, token);
        self
    }

    /// Appends a proto field, spelled as the object it belongs to spells its keys.
    pub fn push_field(&mut self, casing: Casing, snake: &str) -> &mut Self {
        self.push(&casing.field(snake))
    }

    /// Appends a list index.
    pub fn push_index(&mut self, index: usize) -> &mut Self {
        push_index(&mut self.0, index);
        self
    }

    /// This pointer with one token more.
    pub fn join(&self, token: &str) -> Self {
        let mut p = self.clone();
        p.push(token);
        p
    }

    /// This pointer with a list index more.
    pub fn join_index(&self, index: usize) -> Self {
        let mut p = self.clone();
        p.push_index(index);
        p
    }

    /// The pointer as RFC 6901 text (tokens escaped), as a finding's location prints it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// [`Self::as_str`], giving up the buffer instead of copying it.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl From<String> for Pointer {
    /// A pointer from its text, which must already be escaped.
    fn from(escaped: String) -> Self {
        Self(escaped)
    }
}

impl From<&str> for Pointer {
    /// A pointer from its text, which must already be escaped.
    fn from(escaped: &str) -> Self {
        Self(escaped.to_owned())
    }
}

impl From<Pointer> for String {
    fn from(p: Pointer) -> Self {
        p.0
    }
}

impl std::ops::Deref for Pointer {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Pointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `base` (an escaped pointer) with one token more. The model keeps pointers as strings; these
/// build them the way [`Pointer`] does.
pub fn join_token(base: &str, token: &str) -> String {
    // Sized once: findings at tenant scale make hundreds of thousands of these.
    let mut p = String::with_capacity(base.len() + 1 + token.len());
    p.push_str(base);
    push_pointer(&mut p, token);
    p
}

/// `base` with a proto field more, spelled in `casing`.
pub fn join_field(base: &str, casing: Casing, snake: &str) -> String {
    join_token(base, &casing.field(snake))
}

/// `base` with a proto field and an index into it more (`/filter_chains/3`), made in one string.
pub fn join_field_index(base: &str, casing: Casing, snake: &str, index: usize) -> String {
    let field = casing.field(snake);
    // A slash, the field, a slash and the digits of any list a configuration holds.
    let mut p = String::with_capacity(base.len() + field.len() + 10);
    p.push_str(base);
    push_pointer(&mut p, &field);
    push_index(&mut p, index);
    p
}

/// `base` with a list index more.
pub fn join_index(base: &str, index: usize) -> String {
    // A slash and the digits of any list a configuration holds.
    let mut p = String::with_capacity(base.len() + 8);
    p.push_str(base);
    push_index(&mut p, index);
    p
}

/// A slash and the index's digits, written by itoa: findings at tenant scale make hundreds of
/// thousands of pointers, and `write!` costs ten times as many instructions for the digits.
fn push_index(p: &mut String, index: usize) {
    p.push('/');
    p.push_str(itoa::Buffer::new().format(index));
}

/// `pointer` and each pointer above it, deepest first, down to the root (`""`): the places
/// that hold it (`/a/b`, `/a`, `""` for `/a/b`).
pub fn pointer_and_ancestors(pointer: &str) -> impl Iterator<Item = &str> {
    let cut = pointer.rmatch_indices('/').map(|(i, _)| i);
    std::iter::once(pointer.len()).chain(cut).map(move |end| &pointer[..end])
}

/// Appends one escaped reference token to a pointer held as a string.
fn push_pointer(pointer: &mut String, token: &str) {
    pointer.push('/');
    pointer.push_str(&escape_pointer_token(token));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(escape_pointer_token("a/b~c"), "a~1b~0c");
        assert_eq!(escape_pointer_token("plain"), "plain");
    }

    #[test]
    fn a_pointer_is_held_by_itself_and_each_pointer_above_it() {
        assert_eq!(pointer_and_ancestors("/a/b~1c/0").collect::<Vec<_>>(), ["/a/b~1c/0", "/a/b~1c", "/a", ""]);
        assert_eq!(pointer_and_ancestors("").collect::<Vec<_>>(), [""]);
    }

    #[test]
    fn tokens_round_trip() {
        for token in ["a/b~c", "plain", "~01", "", "~", "/"] {
            assert_eq!(unescape_pointer_token(&escape_pointer_token(token)).as_deref(), Some(token));
        }
        assert_eq!(unescape_pointer_token("a~2"), None);
        assert_eq!(unescape_pointer_token("a~"), None);
    }

    #[test]
    fn pointers_are_built_and_taken_apart() {
        let mut p = Pointer::root();
        p.push("a/b").push_index(3).push("~");
        assert_eq!(p.as_str(), "/a~1b/3/~0");
        let parts: Vec<_> = tokens(&p).unwrap().map(|t| t.unwrap().into_owned()).collect();
        assert_eq!(parts, ["a/b", "3", "~"]);
        assert_eq!(tokens("").unwrap().count(), 0);
        assert!(tokens("a").is_none());
        assert_eq!(tokens("/").unwrap().map(|t| t.unwrap().into_owned()).collect::<Vec<_>>(), [""]);
        assert_eq!(p.join("x").as_str(), "/a~1b/3/~0/x");
        assert_eq!(Pointer::root().join_index(0).as_str(), "/0");
        let mut q = Pointer::from("/listener");
        q.push_field(Casing::Camel, "filter_chains").push_index(1).push_field(Casing::Snake, "filter_chain_match");
        assert_eq!(q.as_str(), "/listener/filterChains/1/filter_chain_match");
        assert_eq!(join_field("/l", Casing::Camel, "use_original_dst"), "/l/useOriginalDst");
        assert_eq!(join_token("/l", "a/b"), "/l/a~1b");
        assert_eq!(join_index("/l", 7), "/l/7");
        assert_eq!(Casing::from_camel(true), Casing::Camel);
        assert_eq!(Casing::from_camel(false), Casing::Snake);
    }
}
