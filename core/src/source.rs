//! Inputs as text, and places in them.
//!
//! The model stores byte offsets and JSON pointers only; lines and columns are computed here,
//! at the edge, when something is rendered (the way ruff's `LineIndex` does it).

use std::sync::OnceLock;

mod json;
mod locator;
mod pointer;

pub use json::pointer_offset_from;
pub(crate) use json::{Elements, LONG, object_start, pointer_offset_in};
pub use locator::Locator;
pub use pointer::{
    Casing, Pointer, escape_pointer_token, join_field, join_field_index, join_index, join_token, pointer_and_ancestors,
    tokens as pointer_tokens, unescape_pointer_token,
};

/// What a loader made of an input whose text is not the JSON it reads (YAML): the JSON text it
/// stands for, and the way back from places in that JSON to places in the input. Declared here
/// and implemented by the loader (`load::yaml`), so that this layer depends on nothing above it.
pub trait Translation: std::fmt::Debug + Send + Sync {
    /// The JSON text the loaders parse.
    fn json(&self) -> &str;
    /// Offset in the input of the node whose JSON starts at (or encloses) `json_offset`.
    fn original_offset(&self, json_offset: usize) -> usize;
    /// Offset in the input of the node at a pointer into the JSON, if any.
    fn pointer_offset(&self, pointer: &str) -> Option<usize>;
    /// [`Self::pointer_offset`] for a pointer relative to the JSON value that starts at
    /// `json_start`, reading only that value: `None` when the lookup cannot start there (then
    /// the caller looks up the whole pointer), `Some(None)` when the pointer does not resolve.
    fn pointer_offset_below(&self, json_start: usize, pointer: &str) -> Option<Option<usize>>;
}

/// Index of a [`SourceFile`] in a [`Sources`] set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SourceId(pub u32);

/// One input: its display name (a path, `<stdin>`, an attach address) and its text, as given.
/// What a loader makes of the text (the JSON a YAML input stands for, and the way back) is kept
/// with the loaded input, in `load::Document`.
#[derive(Debug)]
pub struct SourceFile {
    name: String,
    text: String,
    lines: OnceLock<LineIndex>,
    /// Where the elements of its long arrays start, as far as finding places has read them.
    elements: Elements,
    /// Found by walking a directory the run was given, rather than named: a file there that is
    /// not Envoy configuration is passed by with an info, not refused.
    walked: bool,
}

impl SourceFile {
    /// An input whose text is already a string: `name` is what findings show as the file.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            text: text.into(),
            lines: OnceLock::new(),
            elements: Elements::default(),
            walked: false,
        }
    }

    /// The same source, marked as found by walking a directory ([`Self::walked`]).
    pub fn found_by_walk(mut self) -> Self {
        self.walked = true;
        self
    }

    /// Whether it was found by walking a directory rather than named.
    pub fn walked(&self) -> bool {
        self.walked
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

    /// The display name findings and the report show for this input.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The input as given (YAML stays YAML): the text locations' offsets point into.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// One-based line and column (in characters) of a byte offset into [`Self::text`].
    pub fn line_column(&self, offset: usize) -> LineColumn {
        self.line_index().line_column(&self.text, offset)
    }

    /// The text of one line (one-based), without its line break. This reads the whole line:
    /// on a one-line (minified) input, the whole input. Renderers use [`Self::line_around`].
    pub fn line_text(&self, line: usize) -> &str {
        self.line_index().line_text(&self.text, line)
    }

    /// Offset in [`Self::text`] where a line (one-based) starts, if there is such a line; reads
    /// at most a few KB, however long the lines are.
    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.line_index().line_start(&self.text, line.saturating_sub(1)).0
    }

    /// Where the line holding `offset` starts and ends (before its break), reading at most
    /// `reach` bytes either side: `(start, end)`, each `None` where the line goes on beyond that.
    pub fn line_around(&self, offset: usize, reach: usize) -> (Option<usize>, Option<usize>) {
        LineIndex::line_around(&self.text, offset, reach)
    }

    /// Where the elements of its long arrays start, for [`Locator`]'s walks of its text.
    pub(crate) fn elements(&self) -> &Elements {
        &self.elements
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
    /// No inputs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes an input into the run; the id names it in every finding from now on. Ids follow the
    /// order inputs are added, which is the order findings and the report keep.
    pub fn add(&mut self, file: SourceFile) -> SourceId {
        let id = SourceId(u32::try_from(self.files.len()).expect("fewer than 2^32 inputs"));
        self.files.push(file);
        id
    }

    /// The input an id names. Panics on an id from another [`Sources`]: ids are only made by
    /// [`Self::add`].
    pub fn get(&self, id: SourceId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    /// Every input with its id, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (SourceId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (SourceId(i as u32), f))
    }

    /// How many inputs the run has.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no input was added (a run with nothing to read).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// A place in an input: which input, the RFC 6901 JSON pointer of the node, and where the node
/// starts in the input's own text when that is known.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// The input the node is in.
    pub source: SourceId,
    /// RFC 6901 pointer into the JSON form of the input (for YAML, the JSON it stands for), with
    /// field names as the input spelt them: the same node whatever the text's layout.
    pub pointer: String,
    /// Byte offset into the source's original text (YAML offsets for YAML inputs).
    pub offset: Option<usize>,
}

impl Location {
    /// A place from its parts; `offset` is `None` where only the pointer is known (protobuf
    /// inputs, nodes a loader synthesised).
    pub fn new(source: SourceId, pointer: impl Into<String>, offset: Option<usize>) -> Self {
        Self { source, pointer: pointer.into(), offset }
    }
}

/// One-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineColumn {
    /// Line number, from 1.
    pub line: usize,
    /// Column in characters (not bytes), from 1, as editors count it.
    pub column: usize,
}

/// Most bytes between two checkpoints of a [`LineIndex`], and so the most one lookup reads.
const CHECKPOINT_BYTES: usize = 4096;

/// A place every [`CHECKPOINT_BYTES`] of the text, with what a lookup would otherwise have to
/// count from the start: the line it is on and its column.
#[derive(Debug, Clone, Copy)]
struct Checkpoint {
    /// A character boundary.
    offset: usize,
    /// Zero-based line of `offset`.
    line: usize,
    /// Characters between the start of that line and `offset`.
    column: usize,
}

/// Checkpoints every 4 KiB, found once in one pass: a lookup finds the checkpoint before its
/// offset by binary search and reads at most 4 KiB from there, whatever the lines look like. A
/// table of line starts would cost nothing per lookup on a one-line (minified) dump, but 8 bytes
/// a line on a pretty one (88 MB for 11M lines); a table of every 64th line start, which this
/// replaces, made each lookup on a one-line dump read the whole prefix. Here it is 24 bytes per
/// 4 KiB (0.6 % of the text) either way.
#[derive(Debug)]
pub(crate) struct LineIndex {
    /// Increasing offsets; the first is 0, and the last is less than `CHECKPOINT_BYTES + 3`
    /// before the end of the text.
    checkpoints: Vec<Checkpoint>,
}

/// Characters in a UTF-8 byte slice that starts on a character boundary: the bytes that are
/// not continuation bytes.
fn chars(bytes: &[u8]) -> usize {
    if bytes.is_ascii() { bytes.len() } else { bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count() }
}

/// The line and column at the end of `bytes`, given those at its start.
fn advance(bytes: &[u8], line: usize, column: usize) -> (usize, usize) {
    match memchr::memrchr(b'\n', bytes) {
        Some(last) => (line + memchr::memchr_iter(b'\n', bytes).count(), chars(&bytes[last + 1..])),
        None => (line, column + chars(bytes)),
    }
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut checkpoints = Vec::with_capacity(bytes.len() / CHECKPOINT_BYTES + 1);
        let (mut at, mut line, mut column) = (0, 0, 0);
        loop {
            checkpoints.push(Checkpoint { offset: at, line, column });
            let mut next = at + CHECKPOINT_BYTES;
            if next >= bytes.len() {
                break;
            }
            while !text.is_char_boundary(next) {
                next += 1;
            }
            (line, column) = advance(&bytes[at..next], line, column);
            at = next;
        }
        Self { checkpoints }
    }

    /// The last checkpoint at or before `offset`.
    fn checkpoint(&self, offset: usize) -> Checkpoint {
        self.checkpoints[self.checkpoints.partition_point(|c| c.offset <= offset) - 1]
    }

    /// Line and column of `offset`, and how many bytes of the text were read to find them.
    fn locate(&self, text: &str, offset: usize) -> (LineColumn, usize) {
        let mut offset = offset.min(text.len());
        // Columns count characters, as editors and SARIF consumers expect; an offset inside a
        // multi-byte character is moved back to its start.
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let cp = self.checkpoint(offset);
        let between = &text.as_bytes()[cp.offset..offset];
        let (line, column) = advance(between, cp.line, cp.column);
        (LineColumn { line: line + 1, column: column + 1 }, between.len())
    }

    /// The offset where a zero-based line starts, if the text has that many lines, and how
    /// many bytes were read to find it.
    fn line_start(&self, text: &str, line: usize) -> (Option<usize>, usize) {
        if line == 0 {
            return (Some(0), 0);
        }
        // The checkpoint before the line starts: the next one is on the line or after it, so
        // the line break that starts it lies between the two.
        let k = self.checkpoints.partition_point(|c| c.line < line);
        let cp = self.checkpoints[k - 1];
        let limit = self.checkpoints.get(k).map_or(text.len(), |c| c.offset);
        let window = &text.as_bytes()[cp.offset..limit];
        let start = memchr::memchr_iter(b'\n', window).nth(line - cp.line - 1).map(|i| cp.offset + i + 1);
        (start, window.len())
    }

    fn line_column(&self, text: &str, offset: usize) -> LineColumn {
        self.locate(text, offset).0
    }

    /// Where the line holding `offset` starts and ends (before its break), looking at most
    /// `reach` bytes either side: `(start, end)`, each `None` where the line goes on further.
    fn line_around(text: &str, offset: usize, reach: usize) -> (Option<usize>, Option<usize>) {
        let bytes = text.as_bytes();
        let offset = offset.min(bytes.len());
        let from = offset.saturating_sub(reach);
        let start = match memchr::memrchr(b'\n', &bytes[from..offset]) {
            Some(i) => Some(from + i + 1),
            None if from == 0 => Some(0),
            None => None,
        };
        let to = (offset + reach).min(bytes.len());
        let end = match memchr::memchr(b'\n', &bytes[offset..to]) {
            Some(i) => Some(offset + i),
            None if to == bytes.len() => Some(to),
            None => None,
        };
        (start, end)
    }

    fn line_text<'t>(&self, text: &'t str, line: usize) -> &'t str {
        let Some(start) = self.line_start(text, line.saturating_sub(1)).0 else {
            return "";
        };
        let end = memchr::memchr(b'\n', &text.as_bytes()[start..]).map_or(text.len(), |i| start + i + 1);
        text[start..end].trim_end_matches(['\n', '\r'])
    }
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

    /// Every line and column, counted the slow way.
    fn naive(text: &str, offset: usize) -> LineColumn {
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        LineColumn { line: before.matches('\n').count() + 1, column: before[line_start..].chars().count() + 1 }
    }

    #[test]
    fn lines_across_many_checkpoints_are_found_exactly() {
        // Lines of varying length, some empty, some multi-byte, some longer than a checkpoint
        // gap (so checkpoints fall inside lines and inside multi-byte characters).
        let lines: Vec<String> = (0..700)
            .map(|i| {
                let long = if i % 97 == 5 { CHECKPOINT_BYTES * 2 + i } else { i % 11 };
                "é".repeat(i % 3) + &"x".repeat(long) + &"€".repeat(i % 5)
            })
            .collect();
        let text = lines.join("\n");
        assert!(text.len() > CHECKPOINT_BYTES * 10);
        let f = SourceFile::new("x", text.clone());
        let mut offset = 0;
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(f.line_text(i + 1), line);
            for (column, (at, _)) in line.char_indices().enumerate() {
                assert_eq!(f.line_column(offset + at), LineColumn { line: i + 1, column: column + 1 });
            }
            offset += line.len() + 1;
        }
        for offset in (0..=text.len()).filter(|&o| text.is_char_boundary(o)).step_by(7) {
            assert_eq!(f.line_column(offset), naive(&text, offset), "at {offset}");
        }
        assert_eq!(f.line_column(text.len()).line, lines.len());
        assert_eq!(f.line_text(lines.len() + 1), "");
    }

    /// A one-line (minified) text of `len` bytes with multi-byte characters spread through it.
    fn one_line(len: usize) -> String {
        let unit = "{\"name\":\"tenant-ç\",\"server_names\":[\"*.example.com\"]},";
        unit.repeat(len / unit.len() + 1)
    }

    #[test]
    fn a_lookup_reads_the_same_few_bytes_on_a_1_mb_and_a_100_mb_line() {
        // Cost counted in bytes read, not time: the most any lookup reads is one checkpoint
        // gap, on either size, although the 100 MB line is a hundred times longer.
        let most_read = |len: usize| {
            let text = one_line(len);
            let index = LineIndex::new(&text);
            let mut most = 0;
            // Offsets spread over the whole line, near its end too.
            for k in 0..2000 {
                let offset = text.len() / 2000 * k + k % 37;
                let (lc, read) = index.locate(&text, offset);
                assert_eq!(lc.line, 1);
                most = most.max(read);
            }
            let (lc, read) = index.locate(&text, text.len());
            assert_eq!(lc.line, 1);
            let (start, read_start) = index.line_start(&text, 1);
            assert_eq!(start, None);
            most.max(read).max(read_start)
        };
        let small = most_read(1 << 20);
        let large = most_read(100 << 20);
        assert!(small <= CHECKPOINT_BYTES + 3, "{small}");
        assert!(large <= CHECKPOINT_BYTES + 3, "{large}");
        // Columns there are still exact, in characters.
        let text = one_line(1 << 20);
        let index = LineIndex::new(&text);
        for offset in [0, 1, 4095, 4096, 4097, 500_000, text.len() - 1, text.len()] {
            let mut o = offset;
            while !text.is_char_boundary(o) {
                o -= 1;
            }
            assert_eq!(index.locate(&text, offset).0, naive(&text, o), "at {offset}");
        }
    }

    #[test]
    fn line_starts_are_found_within_one_checkpoint_gap() {
        // A pretty text of many short lines: finding any line's start reads one gap at most.
        let text: String = (0..200_000).map(|i| format!("  \"key-{i}\": {i},\n")).collect();
        let index = LineIndex::new(&text);
        let (mut start, mut checked) = (0, 0);
        for (i, line) in text.split_inclusive('\n').enumerate() {
            if i % 113 == 0 {
                let (found, read) = index.line_start(&text, i);
                assert_eq!(found, Some(start), "line {i}");
                assert!(read <= CHECKPOINT_BYTES + 3, "{read}");
                checked += 1;
            }
            start += line.len();
        }
        assert!(checked > 1000);
        assert_eq!(index.line_start(&text, 200_001).0, None);
    }

    #[test]
    fn the_line_around_an_offset_is_bounded_by_its_reach() {
        let text = "ab\ncdefgh\nij";
        assert_eq!(LineIndex::line_around(text, 5, 10), (Some(3), Some(9)));
        assert_eq!(LineIndex::line_around(text, 5, 1), (None, None));
        assert_eq!(LineIndex::line_around(text, 1, 1), (Some(0), None));
        assert_eq!(LineIndex::line_around(text, 12, 1), (None, Some(12)));
        assert_eq!(LineIndex::line_around(text, 13, 5), (Some(10), Some(12)));
    }

    #[test]
    fn invalid_utf8_is_located_at_its_first_bad_byte() {
        let (f, bad) = SourceFile::from_bytes("x", b"ok\n\xc3\xa7a\xff\xfez\n".to_vec());
        assert_eq!(bad, Some(6));
        assert_eq!(f.line_column(6), LineColumn { line: 2, column: 3 });
        assert_eq!(f.line_text(2), "\u{e7}a\u{fffd}\u{fffd}z");
        assert_eq!(SourceFile::from_bytes("y", b"fine".to_vec()).1, None);
    }
}
