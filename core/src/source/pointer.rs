//! JSON pointers (RFC 6901): the one place they are built, escaped and taken apart.

use std::borrow::Cow;

/// Escapes one reference token (RFC 6901 §3): `~` becomes `~0`, `/` becomes `~1`.
pub fn escape_pointer_token(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) { token.replace('~', "~0").replace('/', "~1").into() } else { token.into() }
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

    /// Appends a list index.
    pub fn push_index(&mut self, index: usize) -> &mut Self {
        use std::fmt::Write as _;
        let _ = write!(self.0, "/{index}");
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

    pub fn as_str(&self) -> &str {
        &self.0
    }

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

/// Appends one escaped reference token to a pointer held as a string.
pub(crate) fn push_pointer(pointer: &mut String, token: &str) {
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
    }
}
