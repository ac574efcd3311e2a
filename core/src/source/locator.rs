//! Places the loaders record (offsets into the JSON text they parsed, JSON pointers) as
//! offsets into an input's own text.

use super::{SourceFile, Translation, object_start, pointer_offset_in};

/// Where the places the loaders record are in an input's own text: its file and, for YAML, the
/// translation the offsets and pointers were taken in. Cheap to copy; `load::Document::locator`
/// or `model::Input::locator` gives one.
#[derive(Debug, Clone, Copy)]
pub struct Locator<'a> {
    file: &'a SourceFile,
    yaml: Option<&'a dyn Translation>,
}

impl<'a> Locator<'a> {
    /// For a text read as JSON, or an input with no text (decoded from protobuf).
    pub fn plain(file: &'a SourceFile) -> Self {
        Self { file, yaml: None }
    }

    /// For a text read through a translation (YAML), or, with `None`, as JSON.
    pub fn new(file: &'a SourceFile, yaml: Option<&'a dyn Translation>) -> Self {
        Self { file, yaml }
    }

    /// The input whose positions this locator resolves.
    pub fn file(&self) -> &'a SourceFile {
        self.file
    }

    /// The translation the text was read through, if any.
    pub fn translation(&self) -> Option<&'a dyn Translation> {
        self.yaml
    }

    /// The JSON text the loaders parse: the input itself, or the translation of a YAML input.
    pub fn json_text(&self) -> &'a str {
        match self.yaml {
            Some(y) => y.json(),
            None => self.file.text(),
        }
    }

    /// Maps an offset into [`Self::json_text`] to an offset into the input's text.
    pub fn original_offset(&self, json_offset: usize) -> usize {
        match self.yaml {
            Some(y) => y.original_offset(json_offset),
            None => json_offset,
        }
    }

    /// Where a node recorded at `json_offset` (the opening quote of its first key, as the loaders
    /// record objects) is shown, as an offset into the input's text: the object's `{`, or in JSON
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
        if self.yaml.is_some() {
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

    /// Offset into the input's text of the node at a JSON pointer, found by reading the text
    /// again. For the few places a finding names below a chain (one server name, one CIDR); the
    /// loaders record offsets of listeners, chains and matches as they parse.
    pub fn locate_pointer(&self, pointer: &str) -> Option<usize> {
        match self.yaml {
            Some(y) => y.pointer_offset(pointer),
            None => pointer_offset_in(self.file.text(), 0, pointer, self.file.elements()),
        }
    }

    /// [`Self::locate_pointer`] reading only below an enclosing node whose place the loader
    /// recorded: `anchor` is that node's pointer (a prefix of `pointer`), `anchor_offset` its
    /// offset in [`Self::json_text`] (the opening quote of an object's first key, as the loaders
    /// record objects, or the value's first byte). A finding about one chain then costs what the
    /// chain costs, not the whole file; without an anchor the whole text is read again.
    pub fn locate_pointer_below(&self, anchor: &str, anchor_offset: Option<usize>, pointer: &str) -> Option<usize> {
        let below = pointer.strip_prefix(anchor).filter(|rest| rest.is_empty() || rest.starts_with('/'));
        let (Some(rest), Some(offset)) = (below, anchor_offset) else {
            return self.locate_pointer(pointer);
        };
        let start = object_start(self.json_text(), offset);
        match self.yaml {
            Some(y) => y.pointer_offset_below(start, rest).unwrap_or_else(|| y.pointer_offset(pointer)),
            None => pointer_offset_in(self.file.text(), start, rest, self.file.elements()),
        }
    }
}
