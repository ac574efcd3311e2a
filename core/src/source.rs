//! Inputs as text, and places in them.
//!
//! The model stores byte offsets and JSON pointers only; lines and columns are computed here,
//! at the edge, when something is rendered (the way ruff's `LineIndex` does it).

use std::sync::OnceLock;

use crate::load::yaml::YamlJson;

/// Index of a [`SourceFile`] in a [`Sources`] set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SourceId(pub u32);

/// One input: its display name (a path, `<stdin>`, an attach address) and its text.
#[derive(Debug)]
pub struct SourceFile {
    name: String,
    text: String,
    /// Set by the loader when the text is YAML: the JSON the YAML stands for, with a map from
    /// JSON offsets back to the YAML text. Every loader reads JSON; YAML is translated once.
    yaml: OnceLock<YamlJson>,
    lines: OnceLock<LineIndex>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self { name: name.into(), text: text.into(), yaml: OnceLock::new(), lines: OnceLock::new() }
    }

    /// A source from raw bytes. Bytes that are not UTF-8 are replaced (U+FFFD) so the text can
    /// still be shown, and the offset of the first bad byte is returned: the caller reports it
    /// (`XDS003`) instead of loading the source. Before that offset the text is the input itself,
    /// so the offset is valid in [`Self::text`] too.
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> (Self, Option<usize>) {
        match String::from_utf8(bytes) {
            Ok(text) => (Self::new(name, text), None),
            Err(e) => {
                let bad = e.utf8_error().valid_up_to();
                (Self::new(name, String::from_utf8_lossy(e.as_bytes()).into_owned()), Some(bad))
            }
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The JSON text the loaders parse: the input itself, or the translation of a YAML input.
    pub fn json_text(&self) -> &str {
        match self.yaml.get() {
            Some(y) => y.json(),
            None => &self.text,
        }
    }

    pub(crate) fn set_yaml(&self, yaml: YamlJson) -> &YamlJson {
        // A source is loaded once; a second translation would be identical, so losing the race
        // (which cannot happen through the public API) is harmless.
        let _ = self.yaml.set(yaml);
        self.yaml.get().expect("just set")
    }

    pub(crate) fn yaml(&self) -> Option<&YamlJson> {
        self.yaml.get()
    }

    /// Maps an offset into [`Self::json_text`] to an offset into [`Self::text`].
    pub fn original_offset(&self, json_offset: usize) -> usize {
        match self.yaml.get() {
            Some(y) => y.yaml_offset(json_offset),
            None => json_offset,
        }
    }

    /// Where a node recorded at `json_offset` (the opening quote of its first key, as the loaders
    /// record objects) is shown, as an offset into [`Self::text`]: the object's `{`, or in JSON
    /// the key it is the value of, so that `"listener": {` is the line shown.
    pub fn node_offset(&self, json_offset: usize) -> usize {
        let json = self.json_text();
        let Some(before) = json.get(..json_offset) else {
            return self.original_offset(json_offset);
        };
        let trimmed = before.trim_end();
        if !trimmed.ends_with('{') {
            return self.original_offset(json_offset);
        }
        let brace = trimmed.len() - 1;
        if self.yaml.get().is_some() {
            return self.original_offset(brace);
        }
        // `"key": {` — step back over the colon to the key's opening quote.
        let Some(key_end) = json[..brace].trim_end().strip_suffix(':').map(str::trim_end) else {
            return brace;
        };
        if !key_end.ends_with('"') {
            return brace;
        }
        let body = &key_end[..key_end.len() - 1];
        match body.rfind('"') {
            // Keys xdsck looks for have no escaped quotes; anything else keeps the brace.
            Some(q) if !body[q..].contains('\\') => q,
            _ => brace,
        }
    }

    /// Offset into [`Self::text`] of the node at a JSON pointer, found by reading the text again.
    /// For the few places a finding names below a chain (one server name, one CIDR); the
    /// loaders record offsets of listeners, chains and matches as they parse.
    pub fn locate_pointer(&self, pointer: &str) -> Option<usize> {
        match self.yaml.get() {
            Some(y) => y.pointer_offset(pointer),
            None => crate::load::locate::pointer_offset(&self.text, pointer),
        }
    }

    /// One-based line and column (in characters) of a byte offset into [`Self::text`].
    pub fn line_column(&self, offset: usize) -> LineColumn {
        self.line_index().line_column(&self.text, offset)
    }

    /// The text of one line (one-based), without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        self.line_index().line_text(&self.text, line)
    }

    /// Where each line starts, found on first use (or ahead of it: [`crate::analyze`] builds it
    /// on a spare core while the checks run).
    pub(crate) fn line_index(&self) -> &LineIndex {
        self.lines.get_or_init(|| LineIndex::new(&self.text))
    }
}

/// Every input of one run. Diagnostics name sources by [`SourceId`].
#[derive(Debug, Default)]
pub struct Sources {
    files: Vec<SourceFile>,
}

impl Sources {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, file: SourceFile) -> SourceId {
        let id = SourceId(u32::try_from(self.files.len()).expect("fewer than 2^32 inputs"));
        self.files.push(file);
        id
    }

    pub fn get(&self, id: SourceId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn iter(&self) -> impl Iterator<Item = (SourceId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (SourceId(i as u32), f))
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// A place in an input: which input, the RFC 6901 JSON pointer of the node, and where the node
/// starts in the input's own text when that is known.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    pub source: SourceId,
    pub pointer: String,
    /// Byte offset into the source's original text (YAML offsets for YAML inputs).
    pub offset: Option<usize>,
}

impl Location {
    pub fn new(source: SourceId, pointer: impl Into<String>, offset: Option<usize>) -> Self {
        Self { source, pointer: pointer.into(), offset }
    }
}

/// One-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineColumn {
    pub line: usize,
    pub column: usize,
}

/// Lines per entry of [`LineIndex::starts`].
const STRIDE: usize = 64;

/// Start offsets of every [`STRIDE`]th line, found once with memchr; the lines between are
/// counted on demand (a few KB of memchr). Every line would be 88 MB for a 300 MB dump of
/// 11M lines, a third as much as the graph of its 400k chains.
#[derive(Debug)]
pub(crate) struct LineIndex {
    /// `starts[k]` is the offset of line `k * STRIDE` (zero-based).
    starts: Vec<usize>,
    /// Start offsets of the multi-byte characters, each with the number of bytes beyond one that
    /// it and every earlier one take: a column is then a byte difference minus a lookup, so a
    /// 100 MB single-line (minified) dump with 100k findings is not 100k scans of its line.
    wide: Vec<(usize, usize)>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = Vec::with_capacity(text.len() / (32 * STRIDE) + 1);
        starts.push(0);
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).skip(STRIDE - 1).step_by(STRIDE).map(|i| i + 1));
        let mut wide = Vec::new();
        if !text.is_ascii() {
            let mut extra = 0;
            for (i, c) in text.char_indices() {
                if c.len_utf8() > 1 {
                    extra += c.len_utf8() - 1;
                    wide.push((i, extra));
                }
            }
        }
        Self { starts, wide }
    }

    /// Bytes beyond one per character taken by the multi-byte characters before `offset`.
    fn extra_before(&self, offset: usize) -> usize {
        match self.wide.partition_point(|&(i, _)| i < offset) {
            0 => 0,
            n => self.wide[n - 1].1,
        }
    }

    /// The zero-based line of `offset` and the offset where it starts.
    fn line_of(&self, text: &str, offset: usize) -> (usize, usize) {
        let block = self.starts.partition_point(|&s| s <= offset) - 1;
        let from = self.starts[block];
        let between = &text.as_bytes()[from..offset];
        let newlines = memchr::memchr_iter(b'\n', between).count();
        let start = memchr::memrchr(b'\n', between).map_or(from, |i| from + i + 1);
        (block * STRIDE + newlines, start)
    }

    /// The offset where a zero-based line starts, if the text has that many lines.
    fn line_start(&self, text: &str, line: usize) -> Option<usize> {
        let from = *self.starts.get(line / STRIDE)?;
        match line % STRIDE {
            0 => Some(from),
            n => memchr::memchr_iter(b'\n', &text.as_bytes()[from..]).nth(n - 1).map(|i| from + i + 1),
        }
    }

    fn line_column(&self, text: &str, offset: usize) -> LineColumn {
        let offset = offset.min(text.len());
        let (line, start) = self.line_of(text, offset);
        // Columns count characters, as editors and SARIF consumers expect; an offset inside a
        // multi-byte character is moved back to its start.
        let mut end = offset;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let column = (end - start) - (self.extra_before(end) - self.extra_before(start)) + 1;
        LineColumn { line: line + 1, column }
    }

    fn line_text<'t>(&self, text: &'t str, line: usize) -> &'t str {
        let Some(start) = self.line_start(text, line.saturating_sub(1)) else {
            return "";
        };
        let end = memchr::memchr(b'\n', &text.as_bytes()[start..]).map_or(text.len(), |i| start + i + 1);
        text[start..end].trim_end_matches(['\n', '\r'])
    }
}

/// Escapes one JSON pointer reference token (RFC 6901 §3).
pub fn escape_pointer_token(token: &str) -> std::borrow::Cow<'_, str> {
    if token.contains(['~', '/']) { token.replace('~', "~0").replace('/', "~1").into() } else { token.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let f = SourceFile::new("x", "ab\nçd\n\nx");
        assert_eq!(f.line_column(0), LineColumn { line: 1, column: 1 });
        assert_eq!(f.line_column(3), LineColumn { line: 2, column: 1 });
        // 'd' is after the two-byte 'ç'.
        assert_eq!(f.line_column(5), LineColumn { line: 2, column: 2 });
        assert_eq!(f.line_column(8), LineColumn { line: 4, column: 1 });
        assert_eq!(f.line_text(2), "çd");
        assert_eq!(f.line_text(3), "");
        assert_eq!(f.line_text(9), "");
    }

    #[test]
    fn lines_past_the_first_index_stride_are_found_exactly() {
        // More lines than several strides, of varying length, some empty, some multi-byte.
        let lines: Vec<String> = (0..STRIDE * 5 + 7).map(|i| "é".repeat(i % 3) + &"x".repeat(i % 11)).collect();
        let text = lines.join("\n");
        let f = SourceFile::new("x", text.clone());
        let mut offset = 0;
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(f.line_text(i + 1), line);
            for (column, (at, _)) in line.char_indices().enumerate() {
                assert_eq!(f.line_column(offset + at), LineColumn { line: i + 1, column: column + 1 });
            }
            offset += line.len() + 1;
        }
        assert_eq!(f.line_column(text.len()).line, lines.len());
        assert_eq!(f.line_text(lines.len() + 1), "");
    }

    #[test]
    fn invalid_utf8_is_located_at_its_first_bad_byte() {
        let (f, bad) = SourceFile::from_bytes("x", b"ok\n\xc3\xa7a\xff\xfez\n".to_vec());
        assert_eq!(bad, Some(6));
        assert_eq!(f.line_column(6), LineColumn { line: 2, column: 3 });
        assert_eq!(f.line_text(2), "\u{e7}a\u{fffd}\u{fffd}z");
        assert_eq!(SourceFile::from_bytes("y", b"fine".to_vec()).1, None);
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(escape_pointer_token("a/b~c"), "a~1b~0c");
        assert_eq!(escape_pointer_token("plain"), "plain");
    }
}
