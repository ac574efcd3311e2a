//! YAML input, translated once into JSON text with a map back to the YAML positions.
//!
//! Every loader reads JSON through serde_json with borrowed strings. Teaching each of them YAML
//! as well would double their code, so a YAML text is turned into the JSON it stands for, once,
//! and a compact per-node table leads JSON offsets and JSON pointers back to the YAML text: the
//! user is shown a line of the file they wrote, not of a translation they never saw.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Tag};
use serde::Serializer as _;

use super::Limits;

mod apart;

/// The JSON a YAML input stands for, and how to find YAML positions from JSON positions.
pub struct YamlJson {
    json: String,
    /// Every emitted JSON value in emission (pre-)order, so `json` and `key_json` both increase.
    nodes: Vec<Node>,
    /// `(alias node, anchored node)`, sorted: a pointer may walk on into what an alias copied.
    aliases: Vec<(u32, u32)>,
    stream: bool,
    /// The child nodes of the long sequences walked so far, by the sequence's node.
    elements: crate::source::Elements,
}

/// One JSON value. Kept to 20 bytes because there is one per node of the document, and offsets
/// are `u32` because [`translate`] refuses texts that do not fit.
#[derive(Debug, Clone, Copy)]
struct Node {
    json: u32,
    yaml: u32,
    /// Nodes in this subtree, itself included: the next sibling is `size` nodes further on.
    size: u32,
    /// Where the key of this mapping entry starts; equal to `json` when the node is no entry.
    key_json: u32,
    key_yaml: u32,
}

impl YamlJson {
    /// The JSON the YAML stands for, which the loaders parse; offsets into it map back with
    /// [`Self::yaml_offset`].
    pub fn json(&self) -> &str {
        &self.json
    }

    /// Offset in the YAML text of the node whose JSON starts at (or encloses) `json_offset`.
    ///
    /// An offset inside a mapping key leads to the key: serde reports unknown and duplicate
    /// fields there.
    pub fn yaml_offset(&self, json_offset: usize) -> usize {
        let i = self.nodes.partition_point(|n| n.key_json as usize <= json_offset);
        match i.checked_sub(1).and_then(|i| self.nodes.get(i)) {
            Some(n) if json_offset >= n.json as usize => n.yaml as usize,
            Some(n) => n.key_yaml as usize,
            None => 0,
        }
    }

    /// Offset in the YAML text of the node at this RFC 6901 pointer (into the JSON), if any.
    ///
    /// Walks siblings by subtree size, so a lookup costs at most one pass over the nodes and
    /// no index beyond the node table is kept.
    pub fn pointer_offset(&self, pointer: &str) -> Option<usize> {
        self.walk(0, pointer)
    }

    /// [`Self::pointer_offset`] for a pointer relative to the JSON value that starts at
    /// `json_start`: the walk starts at that node, so it costs what the node's subtree costs,
    /// not the document. `None` when it cannot start there (no node starts there, or the
    /// document has aliases), `Some(None)` when the pointer does not resolve.
    pub fn pointer_offset_below(&self, json_start: usize, pointer: &str) -> Option<Option<usize>> {
        let at = self.nodes.partition_point(|n| (n.json as usize) < json_start);
        // An alias's copy has no nodes of its own, but a walk may enter one; the walk from the
        // root knows which alias it came through, so a document with aliases takes that walk.
        let starts_here = self.nodes.get(at).is_some_and(|n| n.json as usize == json_start);
        (starts_here && self.aliases.is_empty()).then(|| self.walk(at, pointer))
    }

    fn walk(&self, from: usize, pointer: &str) -> Option<usize> {
        let mut at = from;
        // Everything an alias copied is reported at the alias: that is the text the user wrote.
        let mut via_alias: Option<u32> = None;
        if !pointer.is_empty() {
            let rest = pointer.strip_prefix('/')?;
            for raw in rest.split('/') {
                if let Some(target) = self.alias_target(at) {
                    via_alias.get_or_insert(self.nodes.get(at)?.yaml);
                    at = target;
                }
                let token = crate::source::unescape_pointer_token(raw)?;
                let node = self.nodes.get(at)?;
                at = match self.json.as_bytes().get(node.json as usize)? {
                    b'[' => {
                        let index = array_index(&token)?;
                        if index < crate::source::LONG {
                            self.children(at).nth(index)?
                        } else {
                            // Past many siblings: jump to what an earlier walk reached.
                            let end = at + self.nodes.get(at)?.size as usize;
                            let after =
                                |c: usize| Some(c + self.nodes.get(c)?.size.max(1) as usize).filter(|&n| n < end);
                            self.elements.nth(at, index, || self.children(at).next(), after)?
                        }
                    }
                    b'{' => {
                        let mut key = Vec::with_capacity(token.len() + 2);
                        write_str(&mut key, &token);
                        let json = self.json.as_bytes();
                        self.children(at).find(|&c| {
                            let start = self.nodes.get(c).map_or(usize::MAX, |n| n.key_json as usize);
                            json.get(start..).is_some_and(|s| s.starts_with(&key))
                        })?
                    }
                    _ => return None,
                };
            }
        }
        let own = self.nodes.get(at)?.yaml;
        Some(via_alias.unwrap_or(own) as usize)
    }

    /// Whether the input was a stream of more than one document (the JSON is then an array).
    pub fn is_stream(&self) -> bool {
        self.stream
    }

    fn alias_target(&self, node: usize) -> Option<usize> {
        let node = u32::try_from(node).ok()?;
        let i = self.aliases.binary_search_by_key(&node, |a| a.0).ok()?;
        Some(self.aliases[i].1 as usize)
    }

    fn children(&self, parent: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.nodes.get(parent).map_or(0, |n| parent + n.size as usize);
        let mut next = parent + 1;
        std::iter::from_fn(move || {
            if next >= end {
                return None;
            }
            let child = next;
            next += self.nodes.get(child).map_or(1, |n| (n.size as usize).max(1));
            Some(child)
        })
    }
}

impl crate::source::Translation for YamlJson {
    fn json(&self) -> &str {
        YamlJson::json(self)
    }
    fn original_offset(&self, json_offset: usize) -> usize {
        self.yaml_offset(json_offset)
    }
    fn pointer_offset(&self, pointer: &str) -> Option<usize> {
        YamlJson::pointer_offset(self, pointer)
    }
    fn pointer_offset_below(&self, json_start: usize, pointer: &str) -> Option<Option<usize>> {
        YamlJson::pointer_offset_below(self, json_start, pointer)
    }
}

impl fmt::Debug for YamlJson {
    // The JSON may be megabytes long; a debug print of it helps nobody.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("YamlJson")
            .field("json_len", &self.json.len())
            .field("nodes", &self.nodes.len())
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

/// Why a YAML text could not be translated. Outside the loaders it is only shown (`Display`):
/// the loaders turn its parts into a located finding with the code its kind calls for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub(crate) kind: YamlErrorKind,
    pub(crate) message: String,
    /// Byte offset into the YAML text.
    pub(crate) offset: usize,
}

/// What went wrong: each kind is reported under its own finding code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum YamlErrorKind {
    /// Not YAML at all, as the parser reports it.
    Syntax,
    /// Nesting depth or alias expansion over the limits.
    Limit,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for YamlError {}

fn error(kind: YamlErrorKind, message: impl Into<String>, offset: usize) -> YamlError {
    YamlError { kind, message: message.into(), offset }
}

/// Translates one YAML document, or a stream of them, into JSON.
///
/// Refuses what JSON cannot say (complex keys) and what would make a small input cost a lot of
/// memory or time (deep nesting, alias bombs), with the offset of the culprit. A key written twice
/// in one mapping stays twice in the JSON, and `<<` stays a key: Envoy's YAML reader (yaml-cpp)
/// has no merge keys and keeps the last of repeated ones, which the schema reader reports.
pub fn translate(yaml: &str, limits: &Limits) -> Result<YamlJson, YamlError> {
    if u32::try_from(yaml.len()).is_err() {
        return Err(error(YamlErrorKind::Limit, "YAML input larger than 4 GiB", 0));
    }
    let resolution = Resolution::of(yaml);
    match apart::translate(yaml, limits, resolution) {
        Some(done) => Ok(done),
        None => whole(yaml, limits, resolution),
    }
}

/// [`translate`] on one thread, in one piece.
fn whole(yaml: &str, limits: &Limits, resolution: Resolution) -> Result<YamlJson, YamlError> {
    let mut t = Translator::new(yaml, limits, resolution, yaml.len());
    t.run()?;
    t.finish()
}

/// Saphyr's markers count characters; everything here speaks bytes.
///
/// Markers arrive almost always in increasing order, so a forward-only cursor converts them in
/// one pass over the text; a step back (an error reported at an earlier token) restarts it.
struct ByteOffsets<'a> {
    text: &'a [u8],
    ascii: bool,
    chars: usize,
    bytes: usize,
}

impl<'a> ByteOffsets<'a> {
    fn new(text: &'a str) -> Self {
        Self { text: text.as_bytes(), ascii: text.is_ascii(), chars: 0, bytes: 0 }
    }

    fn byte(&mut self, char_index: usize) -> usize {
        let len = self.text.len();
        if self.ascii {
            return char_index.min(len);
        }
        if char_index < self.chars {
            self.chars = 0;
            self.bytes = 0;
        }
        while self.chars < char_index && self.bytes < len {
            let end = (self.bytes + (char_index - self.chars).min(64)).min(len);
            let chunk = &self.text[self.bytes..end];
            if chunk.is_ascii() {
                self.bytes = end;
                self.chars += chunk.len();
            } else {
                // The text is valid UTF-8 and the cursor sits on a char boundary.
                self.bytes += match self.text[self.bytes] {
                    0..0x80 => 1,
                    0x80..0xE0 => 2,
                    0xE0..0xF0 => 3,
                    _ => 4,
                };
                self.chars += 1;
            }
        }
        self.bytes.min(len)
    }
}

struct Frame {
    node: usize,
    anchor: usize,
    /// `total_nodes` before this container: the difference at its end is what an alias copies.
    count_start: usize,
    /// Nothing written inside yet, so no comma is due.
    empty: bool,
    map: Option<MapFrame>,
}

struct MapFrame {
    awaiting_value: bool,
    key_json: u32,
    key_yaml: u32,
}

enum Anchor {
    /// Kept as text: the same scalar may be needed as a key (a string) or as a value (resolved).
    Scalar {
        text: Box<str>,
        forced_string: bool,
    },
    Container {
        node: usize,
        json: Range<usize>,
        nodes: usize,
    },
}

struct Doc {
    /// Length of the JSON before this document's separating comma, to cut it off again.
    json_before: usize,
    node_start: usize,
    empty: bool,
}

struct Translator<'a> {
    yaml: &'a str,
    limits: &'a Limits,
    offsets: ByteOffsets<'a>,
    out: Vec<u8>,
    nodes: Vec<Node>,
    aliases: Vec<(u32, u32)>,
    frames: Vec<Frame>,
    /// By saphyr's anchor id; a map because ids keep counting across documents and it is cleared
    /// at each one.
    anchors: HashMap<usize, Anchor>,
    docs: Vec<Doc>,
    /// Nodes emitted so far, counting alias copies at their full size.
    total_nodes: usize,
    alias_nodes: usize,
    alias_bytes: usize,
    alias_byte_budget: usize,
    resolution: Resolution,
    /// The most containers open when one more was opened: how deep the text nests, for a
    /// piece translated apart ([`apart`]), whose depth adds to where it stands.
    deepest: usize,
    /// An anchor was set or an alias followed.
    anchored: bool,
    /// Where a stand-in sequence starts (a piece's place in the rest of the text, [`apart`]),
    /// and once opened, its node and the containers open around it. saphyr places a block
    /// sequence at its first `-`, but one at its parent key's column after that `- `.
    stand_in: Option<Range<usize>>,
    stood_in: Option<(usize, usize)>,
    /// The last node begun is an empty block scalar (`key: |` and no text), which saphyr
    /// places after the blank lines that follow it: for a piece's last node, lines the piece
    /// does not hold.
    empty_block_last: bool,
}

/// How many bytes aliases may copy in a text `len` bytes long: node counting alone would let
/// one huge anchored string be copied 100,000 times.
fn alias_byte_budget(limits: &Limits, len: usize) -> usize {
    limits.max_alias_nodes.saturating_mul(64).max(len)
}

fn u32_of(x: usize) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

impl<'a> Translator<'a> {
    /// A translator of `yaml`, which is the whole text or a piece of one `whole_len` bytes long
    /// (the aliases' byte budget is the whole text's).
    fn new(yaml: &'a str, limits: &'a Limits, resolution: Resolution, whole_len: usize) -> Self {
        Translator {
            yaml,
            limits,
            offsets: ByteOffsets::new(yaml),
            out: Vec::with_capacity(yaml.len() + yaml.len() / 4),
            nodes: Vec::new(),
            aliases: Vec::new(),
            frames: Vec::new(),
            anchors: HashMap::new(),
            docs: Vec::new(),
            total_nodes: 0,
            alias_nodes: 0,
            alias_bytes: 0,
            alias_byte_budget: alias_byte_budget(limits, whole_len),
            resolution,
            deepest: 0,
            anchored: false,
            stand_in: None,
            stood_in: None,
            empty_block_last: false,
        }
    }

    fn run(&mut self) -> Result<(), YamlError> {
        // Pulling events one by one (rather than `Parser::load`, which recurses per nesting
        // level) keeps the stack flat whatever the input's depth.
        let mut parser = Parser::new_from_str(self.yaml);
        while let Some(next) = parser.next_event() {
            let (event, span) = match next {
                Ok(ok) => ok,
                Err(e) => return Err(self.scan_error(&e)),
            };
            let at = self.offsets.byte(span.start.index());
            match event {
                Event::StreamEnd => break,
                Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
                Event::DocumentStart(_) => self.document_start(),
                Event::Scalar(value, style, anchor, tag) => {
                    self.scalar(&value, style, anchor, tag.as_deref(), at)?;
                }
                Event::SequenceStart(anchor, _) => self.open(false, anchor, at)?,
                Event::MappingStart(anchor, _) => self.open(true, anchor, at)?,
                Event::SequenceEnd | Event::MappingEnd => self.close(at)?,
                Event::Alias(id) => self.alias(id, at)?,
            }
        }
        Ok(())
    }

    fn scan_error(&mut self, e: &ScanError) -> YamlError {
        let at = self.offsets.byte(e.marker().index());
        // saphyr counts flow levels in a `u8` and scans ahead of the events it has given us, so
        // deep flow nesting can hit its limit (255) before ours: the same refusal, reported at
        // the level where saphyr stopped.
        if e.info() == "recursion limit exceeded" {
            let depth = self.limits.max_depth.min(255);
            return error(YamlErrorKind::Limit, format!("nesting deeper than {depth} levels"), at);
        }
        error(YamlErrorKind::Syntax, e.info(), at)
    }

    fn finish(mut self) -> Result<YamlJson, YamlError> {
        // `kubectl` output and hand-written streams often end in a `---` with nothing after it;
        // that must not turn a single document into a stream of two.
        while self.docs.last().is_some_and(|d| d.empty) {
            let Some(doc) = self.docs.pop() else { break };
            self.out.truncate(doc.json_before);
            self.nodes.truncate(doc.node_start);
            while self.aliases.last().is_some_and(|a| a.0 as usize >= doc.node_start) {
                self.aliases.pop();
            }
        }
        let stream = self.docs.len() > 1;
        if self.docs.is_empty() {
            self.out.clear();
            self.out.extend_from_slice(b"null");
            self.nodes = vec![Node { json: 0, yaml: 0, size: 1, key_json: 0, key_yaml: 0 }];
        } else if stream {
            let mut out = Vec::with_capacity(self.out.len() + 2);
            out.push(b'[');
            out.append(&mut self.out);
            out.push(b']');
            self.out = out;
            for n in &mut self.nodes {
                n.json += 1;
                n.key_json += 1;
            }
            let size = u32_of(self.nodes.len() + 1);
            self.nodes.insert(0, Node { json: 0, yaml: 0, size, key_json: 0, key_yaml: 0 });
            for a in &mut self.aliases {
                a.0 += 1;
                a.1 += 1;
            }
        }
        if u32::try_from(self.out.len()).is_err() || u32::try_from(self.nodes.len()).is_err() {
            return Err(error(YamlErrorKind::Limit, "translated YAML larger than 4 GiB", 0));
        }
        let json = String::from_utf8(self.out)
            .map_err(|_| error(YamlErrorKind::Syntax, "YAML translated to invalid UTF-8", 0))?;
        Ok(YamlJson { json, nodes: self.nodes, aliases: self.aliases, stream, elements: Default::default() })
    }

    fn document_start(&mut self) {
        // Anchors belong to their document; saphyr forgets them only in `Parser::load`.
        self.anchors.clear();
        let json_before = self.out.len();
        if !self.docs.is_empty() {
            self.out.push(b',');
        }
        self.docs.push(Doc { json_before, node_start: self.nodes.len(), empty: false });
    }

    fn awaiting_key(&self) -> bool {
        self.frames.last().and_then(|f| f.map.as_ref()).is_some_and(|m| !m.awaiting_value)
    }

    fn scalar(
        &mut self,
        value: &str,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        at: usize,
    ) -> Result<(), YamlError> {
        // yaml-cpp (Envoy) reads a scalar as a string only when it is quoted or a block; `!!str`
        // makes one for go-yaml (kubectl) too.
        let str_tag = tag.is_some_and(|t| t.is_yaml_core_schema() && t.suffix == "str");
        let forced_string = style != ScalarStyle::Plain || (str_tag && self.resolution == Resolution::Kubernetes);
        if anchor != 0 {
            self.set_anchor(anchor, Anchor::Scalar { text: value.into(), forced_string });
        }
        self.empty_block_last = value.is_empty() && matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
        if self.awaiting_key() {
            return self.key(value, at);
        }
        let empty_document =
            self.frames.is_empty() && value.is_empty() && style == ScalarStyle::Plain && tag.is_none() && anchor == 0;
        self.begin_value(at);
        write_scalar(&mut self.out, value, forced_string, self.resolution);
        self.total_nodes += 1;
        if empty_document && let Some(doc) = self.docs.last_mut() {
            doc.empty = true;
        }
        Ok(())
    }

    fn key(&mut self, text: &str, at: usize) -> Result<(), YamlError> {
        let Some(Frame { empty, map: Some(map), .. }) = self.frames.last_mut() else {
            return Ok(());
        };
        if !*empty {
            self.out.push(b',');
        }
        *empty = false;
        let json = self.out.len();
        write_str(&mut self.out, text);
        self.out.push(b':');
        map.awaiting_value = true;
        map.key_json = u32_of(json);
        map.key_yaml = u32_of(at);
        Ok(())
    }

    /// Writes what must precede a value (a comma, or nothing after a key) and records its node.
    fn begin_value(&mut self, at: usize) -> usize {
        let key = match self.frames.last_mut() {
            None => None,
            Some(Frame { map: Some(map), .. }) => {
                map.awaiting_value = false;
                Some((map.key_json, map.key_yaml))
            }
            Some(frame) => {
                if !frame.empty {
                    self.out.push(b',');
                }
                frame.empty = false;
                None
            }
        };
        let json = u32_of(self.out.len());
        let yaml = u32_of(at);
        let (key_json, key_yaml) = key.unwrap_or((json, yaml));
        self.nodes.push(Node { json, yaml, size: 1, key_json, key_yaml });
        self.nodes.len() - 1
    }

    fn open(&mut self, map: bool, anchor: usize, at: usize) -> Result<(), YamlError> {
        if self.awaiting_key() {
            return Err(complex_key(at));
        }
        if self.frames.len() >= self.limits.max_depth {
            let message = format!("nesting deeper than {} levels", self.limits.max_depth);
            return Err(error(YamlErrorKind::Limit, message, at));
        }
        self.deepest = self.deepest.max(self.frames.len());
        self.empty_block_last = false;
        let node = self.begin_value(at);
        if !map && self.stood_in.is_none() && self.stand_in.as_ref().is_some_and(|r| r.contains(&at)) {
            self.stood_in = Some((node, self.frames.len()));
        }
        self.out.push(if map { b'{' } else { b'[' });
        let count_start = self.total_nodes;
        self.total_nodes += 1;
        let map = map.then_some(MapFrame { awaiting_value: false, key_json: 0, key_yaml: 0 });
        self.frames.push(Frame { node, anchor, count_start, empty: true, map });
        Ok(())
    }

    fn close(&mut self, at: usize) -> Result<(), YamlError> {
        let Some(frame) = self.frames.pop() else {
            return Err(error(YamlErrorKind::Syntax, "unbalanced end of a collection", at));
        };
        if let Some(map) = &frame.map {
            if map.awaiting_value {
                self.out.extend_from_slice(b"null");
            }
            self.out.push(b'}');
        } else {
            self.out.push(b']');
        }
        let size = self.nodes.len() - frame.node;
        let Some(node) = self.nodes.get_mut(frame.node) else {
            return Ok(());
        };
        node.size = u32_of(size);
        if frame.anchor != 0 {
            let json = node.json as usize..self.out.len();
            let nodes = self.total_nodes - frame.count_start;
            self.set_anchor(frame.anchor, Anchor::Container { node: frame.node, json, nodes });
        }
        Ok(())
    }

    fn set_anchor(&mut self, id: usize, anchor: Anchor) {
        self.anchored = true;
        self.anchors.insert(id, anchor);
    }

    fn alias(&mut self, id: usize, at: usize) -> Result<(), YamlError> {
        self.anchored = true;
        self.empty_block_last = false;
        let anchor = match self.anchors.get(&id) {
            Some(anchor) => anchor,
            _ if self.frames.iter().any(|f| f.anchor == id) => {
                let message = "alias refers to a collection that contains it (a recursive alias)";
                return Err(error(YamlErrorKind::Syntax, message, at));
            }
            _ => {
                return Err(error(YamlErrorKind::Syntax, "alias to an unknown anchor", at));
            }
        };
        let (nodes, bytes) = match anchor {
            Anchor::Scalar { text, .. } => (1, text.len()),
            Anchor::Container { json, nodes, .. } => (*nodes, json.len()),
        };
        if self.awaiting_key() {
            return match anchor {
                Anchor::Scalar { text, .. } => {
                    let text = text.clone();
                    self.key(&text, at)
                }
                Anchor::Container { .. } => Err(complex_key(at)),
            };
        }
        self.alias_nodes = self.alias_nodes.saturating_add(nodes);
        if self.alias_nodes > self.limits.max_alias_nodes {
            let message = format!(
                "YAML aliases expand to more than {} nodes (a \"billion laughs\" document?)",
                self.limits.max_alias_nodes
            );
            return Err(error(YamlErrorKind::Limit, message, at));
        }
        self.alias_bytes = self.alias_bytes.saturating_add(bytes);
        if self.alias_bytes > self.alias_byte_budget {
            let message = format!(
                "YAML aliases expand to more than {} bytes (a \"billion laughs\" document?)",
                self.alias_byte_budget
            );
            return Err(error(YamlErrorKind::Limit, message, at));
        }
        match anchor {
            Anchor::Scalar { text, forced_string } => {
                let (text, forced_string) = (text.clone(), *forced_string);
                self.begin_value(at);
                write_scalar(&mut self.out, &text, forced_string, self.resolution);
            }
            Anchor::Container { node, json, .. } => {
                let (target, json) = (*node, json.clone());
                let alias = self.begin_value(at);
                self.aliases.push((u32_of(alias), u32_of(target)));
                self.out.extend_from_within(json);
            }
        }
        self.total_nodes += nodes;
        Ok(())
    }
}

fn complex_key(at: usize) -> YamlError {
    let message = "complex mapping keys are not supported: a JSON object key must be a scalar";
    error(YamlErrorKind::Syntax, message, at)
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    // Serializing a `str` into a `Vec` cannot fail; there is no error to report.
    let _ = serde_json::Serializer::new(out).serialize_str(s);
}

fn write_scalar(out: &mut Vec<u8>, text: &str, forced_string: bool, resolution: Resolution) {
    let plain = match resolution {
        _ if forced_string => false,
        Resolution::Envoy => write_envoy_plain(out, text),
        Resolution::Kubernetes => write_plain(out, text),
    };
    if !plain {
        write_str(out, text);
    }
}

/// Who turns the YAML into JSON, which decides what a plain scalar is: Envoy itself (yaml-cpp)
/// for its own files, or kubectl (go-yaml, YAML 1.1) for a Kubernetes object such as a
/// CiliumEnvoyConfig, which the Cilium agent then reads as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolution {
    Envoy,
    Kubernetes,
}

impl Resolution {
    /// Kubernetes objects say so at the top of a document: `apiVersion:` or `kind:` at the left
    /// margin (one of a YAML stream, or an item of a list). Envoy's own documents have neither.
    fn of(yaml: &str) -> Self {
        let k8s = yaml.lines().any(|l| {
            let l = l.strip_prefix("- ").unwrap_or(l);
            l.starts_with("apiVersion:") || l.starts_with("kind:")
        });
        if k8s { Resolution::Kubernetes } else { Resolution::Envoy }
    }
}

/// Writes a plain scalar as Envoy's YAML reader makes it (checked with envoy 1.40): yaml-cpp's
/// booleans (`yes`, `On`, `N`... in one of three casings), its 32-bit integers (decimal, `0x` hex,
/// `0` octal, a sign) as numbers, null; everything else, floats and larger integers too, stays a
/// string, so `stat_prefix: 1.5` is the string "1.5" while `stat_prefix: 12` is refused.
/// Returns `false` (having written nothing) for strings.
fn write_envoy_plain(out: &mut Vec<u8>, s: &str) -> bool {
    let literal: &[u8] = match s {
        "" | "~" | "null" | "Null" | "NULL" => b"null",
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => b"true",
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => b"false",
        _ => {
            return match yaml_cpp_int(s) {
                Some(n) => {
                    out.extend_from_slice(n.to_string().as_bytes());
                    true
                }
                None => false,
            };
        }
    };
    out.extend_from_slice(literal);
    true
}

/// yaml-cpp's reading of a plain scalar as an `int`: an optional sign, then `0x` and hex digits,
/// `0` and octal digits, or decimal digits; within 32 bits.
fn yaml_cpp_int(s: &str) -> Option<i32> {
    let (negative, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (digits, radix) = if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        (hex, 16)
    } else if body.len() > 1 && body.starts_with('0') {
        (&body[1..], 8)
    } else {
        (body, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = i64::from_str_radix(digits, radix).ok()?;
    i32::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// Writes a plain scalar that YAML 1.1 (go-yaml, as kubectl reads it) resolves to something
/// other than a string; returns `false` (having written nothing) for strings.
fn write_plain(out: &mut Vec<u8>, s: &str) -> bool {
    let literal: &[u8] = match s {
        "" | "~" | "null" | "Null" | "NULL" => b"null",
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => b"true",
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => b"false",
        // JSON has no such numbers; these are protojson's spellings, which loaders accept for
        // float and double fields.
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => b"\"Infinity\"",
        "-.inf" | "-.Inf" | "-.INF" => b"\"-Infinity\"",
        ".nan" | ".NaN" | ".NAN" => b"\"NaN\"",
        _ => return write_number(out, s),
    };
    out.extend_from_slice(literal);
    true
}

fn write_number(out: &mut Vec<u8>, s: &str) -> bool {
    if !matches!(s.as_bytes().first(), Some(b'0'..=b'9' | b'+' | b'-' | b'.')) {
        return false;
    }
    for (prefix, radix) in [("0x", 16), ("0o", 8)] {
        if let Some(digits) = s.strip_prefix(prefix) {
            // `from_str_radix` would accept a sign; the core schema does not.
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return false;
            }
            return match u128::from_str_radix(digits, radix) {
                Ok(n) => {
                    out.extend_from_slice(n.to_string().as_bytes());
                    true
                }
                Err(_) => false,
            };
        }
    }
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let b = rest.as_bytes();
    let digits = |from: usize| b.get(from..).map_or(0, |t| t.iter().take_while(|c| c.is_ascii_digit()).count());
    let int_len = digits(0);
    let mut i = int_len;
    let mut fraction = None;
    if b.get(i) == Some(&b'.') {
        let n = digits(i + 1);
        fraction = Some(&rest[i + 1..i + 1 + n]);
        i += 1 + n;
    }
    if int_len == 0 && fraction.is_none_or(str::is_empty) {
        return false;
    }
    let mut exponent = "";
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let n = digits(j);
        if n == 0 {
            return false;
        }
        exponent = &rest[i..j + n];
        i = j + n;
    }
    if i != b.len() {
        return false;
    }
    // Written out as JSON wants it: no `+`, no leading zeros, digits on both sides of a point.
    if negative {
        out.push(b'-');
    }
    let int = rest[..int_len].trim_start_matches('0');
    out.extend_from_slice(if int.is_empty() { b"0" } else { int.as_bytes() });
    if let Some(fraction) = fraction {
        out.push(b'.');
        out.extend_from_slice(if fraction.is_empty() { b"0" } else { fraction.as_bytes() });
    }
    out.extend_from_slice(exponent.as_bytes());
    true
}

fn array_index(token: &str) -> Option<usize> {
    if token.is_empty() || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    if !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(yaml: &str) -> String {
        match translate(yaml, &Limits::default()) {
            Ok(y) => y.json,
            Err(e) => panic!("{yaml:?}: {e:?}"),
        }
    }

    fn err(yaml: &str) -> YamlError {
        match translate(yaml, &Limits::default()) {
            Ok(y) => panic!("{yaml:?} translated to {}", y.json),
            Err(e) => e,
        }
    }

    /// One-based line and column (in characters) of a byte offset.
    fn line_col(text: &str, offset: usize) -> (usize, usize) {
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        (line, col)
    }

    const CEC: &str = r#"apiVersion: cilium.io/v2
kind: CiliumEnvoyConfig
metadata:
  name: envoy-lb-listener
  namespace: default
spec:
  services:
    - name: echo
      namespace: default
  resources:
    - '@type': type.googleapis.com/envoy.config.listener.v3.Listener
      name: envoy-lb-listener
      filterChains:
        - filterChainMatch:
            serverNames: ["api.example.com", 'www.example.com']
          filters:
            - name: envoy.filters.network.tcp_proxy
              typedConfig:
                '@type': type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
                statPrefix: tcp
                cluster: "default/echo:8080"
      socketOptions:
        - level: 1
          name: 9
          intValue: "1"
      address:
        socket_address: { address: 0.0.0.0, port_value: 443 }
"#;

    #[test]
    fn cilium_envoy_config_translates_to_compact_json() {
        let expected = concat!(
            r#"{"apiVersion":"cilium.io/v2","kind":"CiliumEnvoyConfig","#,
            r#""metadata":{"name":"envoy-lb-listener","namespace":"default"},"#,
            r#""spec":{"services":[{"name":"echo","namespace":"default"}],"#,
            r#""resources":[{"@type":"type.googleapis.com/envoy.config.listener.v3.Listener","#,
            r#""name":"envoy-lb-listener","filterChains":[{"filterChainMatch":"#,
            r#"{"serverNames":["api.example.com","www.example.com"]},"#,
            r#""filters":[{"name":"envoy.filters.network.tcp_proxy","typedConfig":"#,
            r#"{"@type":"type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy","#,
            r#""statPrefix":"tcp","cluster":"default/echo:8080"}}]}],"#,
            r#""socketOptions":[{"level":1,"name":9,"intValue":"1"}],"#,
            r#""address":{"socket_address":{"address":"0.0.0.0","port_value":443}}}]}}"#,
        );
        let y = translate(CEC, &Limits::default()).expect("translates");
        assert_eq!(y.json(), expected);
        assert!(!y.is_stream());
    }

    #[test]
    fn envoy_scalars_are_what_yaml_cpp_makes_of_them() {
        // Each as envoy 1.40 read it, as `stat_prefix`, `port_value` or a BoolValue (refused as
        // a number or boolean where a string belongs, taken where a number's text may be).
        let table = [
            ("null", "null"),
            ("NULL", "null"),
            ("~", "null"),
            ("", "null"),
            ("nULL", r#""nULL""#),
            ("y", "true"),
            ("Yes", "true"),
            ("YES", "true"),
            ("on", "true"),
            ("ON", "true"),
            ("TRUE", "true"),
            ("N", "false"),
            ("No", "false"),
            ("off", "false"),
            ("False", "false"),
            ("yEs", r#""yEs""#),
            ("oN", r#""oN""#),
            ("fALSE", r#""fALSE""#),
            ("12", "12"),
            ("-0", "0"),
            ("+5", "5"),
            ("010", "8"),
            ("08", r#""08""#),
            ("07777777777", "1073741823"),
            ("0x1F", "31"),
            ("0X1F", "31"),
            ("-0x10", "-16"),
            ("+0x10", "16"),
            ("0x", r#""0x""#),
            ("0x7FFFFFFF", "2147483647"),
            ("0x80000000", r#""0x80000000""#),
            ("2147483647", "2147483647"),
            ("2147483648", r#""2147483648""#),
            ("-2147483648", "-2147483648"),
            ("-2147483649", r#""-2147483649""#),
            ("0b11", r#""0b11""#),
            ("0o17", r#""0o17""#),
            ("1_000", r#""1_000""#),
            ("1.5", r#""1.5""#),
            ("1.", r#""1.""#),
            ("0.0", r#""0.0""#),
            ("-.5", r#""-.5""#),
            ("1e3", r#""1e3""#),
            (".inf", r#"".inf""#),
            (".nan", r#"".nan""#),
            ("Inf", r#""Inf""#),
            ("NaN", r#""NaN""#),
            ("1:2", r#""1:2""#),
            ("!!str 12", "12"),
            ("!!int 12", "12"),
            ("'12'", r#""12""#),
            ("\"true\"", r#""true""#),
            ("''", r#""""#),
            ("10s", r#""10s""#),
        ];
        for (yaml, expected) in table {
            assert_eq!(json(&format!("v: {yaml}\n")), format!(r#"{{"v":{expected}}}"#), "{yaml}");
        }
    }

    #[test]
    fn kubernetes_scalars_follow_yaml_1_1_as_kubectl_reads_them() {
        let table = [
            ("null", "null"),
            ("Null", "null"),
            ("NULL", "null"),
            ("~", "null"),
            ("", "null"),
            ("nULL", r#""nULL""#),
            ("true", "true"),
            ("True", "true"),
            ("TRUE", "true"),
            ("false", "false"),
            ("FALSE", "false"),
            ("yes", "true"),
            ("On", "true"),
            ("N", "false"),
            ("off", "false"),
            ("yEs", r#""yEs""#),
            ("443", "443"),
            ("-7", "-7"),
            ("+5", "5"),
            ("007", "7"),
            ("-0", "-0"),
            ("0o17", "15"),
            ("0x1F", "31"),
            ("0xff", "255"),
            ("0x", r#""0x""#),
            ("-0x1F", r#""-0x1F""#),
            ("0b101", r#""0b101""#),
            ("1_000", r#""1_000""#),
            ("1.5", "1.5"),
            ("1e3", "1e3"),
            ("1E-3", "1E-3"),
            ("-2.5e+10", "-2.5e+10"),
            (".5", "0.5"),
            ("-.5", "-0.5"),
            ("1.", "1.0"),
            ("01.50", "1.50"),
            ("1.e3", "1.0e3"),
            ("1e", r#""1e""#),
            (".", r#"".""#),
            ("-x", r#""-x""#),
            ("1.2.3", r#""1.2.3""#),
            ("10.0.0.1", r#""10.0.0.1""#),
            ("123456789012345678901234567890", "123456789012345678901234567890"),
            (".inf", r#""Infinity""#),
            (".Inf", r#""Infinity""#),
            ("+.INF", r#""Infinity""#),
            ("-.inf", r#""-Infinity""#),
            (".nan", r#""NaN""#),
            (".NaN", r#""NaN""#),
            (".NAN", r#""NaN""#),
            ("'443'", r#""443""#),
            ("\"true\"", r#""true""#),
            ("''", r#""""#),
            ("!!str 443", r#""443""#),
            ("!!str", r#""""#),
            ("!!int 443", "443"),
            ("!custom true", "true"),
            ("\"tab\\there \\u00e9 \\\"q\\\"\"", r#""tab\there é \"q\"""#),
            ("'it''s'", r#""it's""#),
            ("a \\ b", r#""a \\ b""#),
            ("10s", r#""10s""#),
        ];
        for (yaml, expected) in table {
            let got = json(&format!("apiVersion: v1\nv: {yaml}\n"));
            assert_eq!(got, format!(r#"{{"apiVersion":"v1","v":{expected}}}"#), "{yaml}");
        }
    }

    #[test]
    fn block_scalars_are_strings() {
        let yaml = "a: |\n  line 1\n  line 2\nb: >\n  folded\n  text\n\n  para\nc: |-\n  443\nd: >+\n  kept\n\n";
        assert_eq!(json(yaml), r#"{"a":"line 1\nline 2\n","b":"folded text\npara\n","c":"443","d":"kept\n\n"}"#);
    }

    #[test]
    fn keys_are_strings_whatever_they_resolve_to() {
        assert_eq!(
            json("80: x\ntrue: yes\n~: z\n0x10: w\n'q': v\n"),
            r#"{"80":"x","true":true,"~":"z","0x10":"w","q":"v"}"#
        );
        assert_eq!(json("{a: 1, b: [x, {c: d}], e: {}}"), r#"{"a":1,"b":["x",{"c":"d"}],"e":{}}"#);
        assert_eq!(json("- []\n- {}\n- - nested\n"), r#"[[],{},["nested"]]"#);
        assert_eq!(json("a:\n"), r#"{"a":null}"#);
    }

    #[test]
    fn documents_in_a_stream() {
        let two = translate("a: 1\n---\nb: 2\n", &Limits::default()).expect("translates");
        assert_eq!(two.json(), r#"[{"a":1},{"b":2}]"#);
        assert!(two.is_stream());

        // A trailing `---` (kubectl, templating) does not make a stream.
        for yaml in ["a: 1\n---\n", "---\na: 1\n---\n", "---\na: 1\n...\n---\n---\n"] {
            let one = translate(yaml, &Limits::default()).expect("translates");
            assert_eq!(one.json(), r#"{"a":1}"#, "{yaml:?}");
            assert!(!one.is_stream(), "{yaml:?}");
        }
        let trailing = translate("a: 1\n---\nb: 2\n---\n", &Limits::default()).expect("ok");
        assert_eq!(trailing.json(), r#"[{"a":1},{"b":2}]"#);
        assert!(trailing.is_stream());

        // Empty documents elsewhere are kept, as null.
        assert_eq!(json("---\n---\na: 1\n"), r#"[null,{"a":1}]"#);
        assert_eq!(json("a: 1\n---\n---\nb: 2\n"), r#"[{"a":1},null,{"b":2}]"#);
        assert_eq!(json("--- 5\n--- x\n"), r#"[5,"x"]"#);

        for empty in ["", "# only a comment\n", "---\n", "\n\n"] {
            let y = translate(empty, &Limits::default()).expect("translates");
            assert_eq!(y.json(), "null", "{empty:?}");
            assert!(!y.is_stream());
            assert_eq!(y.pointer_offset(""), Some(0));
        }
    }

    #[test]
    fn kind_list_document_is_unchanged() {
        let yaml = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: cilium.io/v2\n  kind: CiliumEnvoyConfig\n  metadata:\n    name: a\n- apiVersion: cilium.io/v2\n  kind: CiliumEnvoyConfig\n  metadata:\n    name: b\nmetadata:\n  resourceVersion: \"\"\n";
        let y = translate(yaml, &Limits::default()).expect("translates");
        assert_eq!(
            y.json(),
            concat!(
                r#"{"apiVersion":"v1","kind":"List","items":["#,
                r#"{"apiVersion":"cilium.io/v2","kind":"CiliumEnvoyConfig","metadata":{"name":"a"}},"#,
                r#"{"apiVersion":"cilium.io/v2","kind":"CiliumEnvoyConfig","metadata":{"name":"b"}}],"#,
                r#""metadata":{"resourceVersion":""}}"#
            )
        );
        assert!(!y.is_stream());
    }

    #[test]
    fn yaml_offset_leads_back_to_the_yaml_node() {
        let y = translate(CEC, &Limits::default()).expect("translates");
        let json = y.json();
        let at = |needle: &str| json.find(needle).unwrap_or_else(|| panic!("{needle} in {json}"));

        // The value 443, and the key `port_value` in front of it.
        let value = at("443");
        assert_eq!(line_col(CEC, y.yaml_offset(value)), (27, 57));
        assert_eq!(line_col(CEC, y.yaml_offset(at(r#""port_value""#))), (27, 45));
        // The single-quoted value, reported at its opening quote.
        assert_eq!(line_col(CEC, y.yaml_offset(at(r#""www.example.com""#))), (15, 46));
        assert_eq!(line_col(CEC, y.yaml_offset(at(r#""1""#))), (25, 21));
        // A byte inside a string still leads to that string.
        assert_eq!(line_col(CEC, y.yaml_offset(at("default/echo") + 5)), (21, 26));
        // The root, and a block sequence item (a mapping starts at its first key).
        assert_eq!(y.yaml_offset(0), 0);
        assert_eq!(line_col(CEC, y.yaml_offset(at(r#"{"level""#))), (23, 11));
        // Past the end: the last node.
        assert_eq!(line_col(CEC, y.yaml_offset(json.len() + 10)), (27, 57));
    }

    #[test]
    fn yaml_offset_counts_bytes_after_non_ascii_text() {
        let yaml = "name: \"héllo wörld ✓\"\nport: 443 # ünïcode\nlist: [ä, 8]\n";
        let y = translate(yaml, &Limits::default()).expect("translates");
        assert_eq!(y.json(), r#"{"name":"héllo wörld ✓","port":443,"list":["ä",8]}"#);
        let json = y.json();
        let port = y.yaml_offset(json.find("443").expect("443"));
        assert_eq!(&yaml[port..port + 3], "443");
        let eight = y.yaml_offset(json.find('8').expect("8"));
        assert_eq!(&yaml[eight..eight + 1], "8");
        assert_eq!(line_col(yaml, eight), (3, 11));
    }

    #[test]
    fn pointers_below_a_known_node_resolve_as_from_the_root() {
        let y = translate(CEC, &Limits::default()).expect("translates");
        let chain = "/spec/resources/0/filterChains/0";
        let start = crate::load::locate::pointer_offset(y.json(), chain).expect("the chain is in the JSON");
        for rest in ["", "/filters/0/name", "/filterChainMatch/serverNames/1", "/nope", "/filters/9"] {
            assert_eq!(
                y.pointer_offset_below(start, rest),
                Some(y.pointer_offset(&format!("{chain}{rest}"))),
                "{rest}"
            );
        }
        // No node starts inside a key: the caller walks from the root instead.
        assert_eq!(y.pointer_offset_below(start + 1, "/filters"), None);
        // With aliases only the walk from the root knows what an alias copied.
        let aliased = translate("a: &x {b: 1}\nc: *x\n", &Limits::default()).expect("translates");
        assert_eq!(aliased.pointer_offset_below(0, "/a"), None);
    }

    #[test]
    fn long_sequences_are_walked_once_and_jumped_into_after() {
        // Mappings, scalars, nested sequences and an empty one, each on a line of its own.
        let kinds = ["{k: [1, x]}", "plain", "[a, {k: 2}]", "[]", "7"];
        let yaml: String = (0..60).map(|i| format!("- {}\n", kinds[i % kinds.len()])).collect();
        let y = translate(&yaml, &Limits::default()).expect("translates");
        let value: serde_json::Value = serde_json::from_str(y.json()).expect("JSON");
        // Out of order, past the end, below the elements: as each line says, and the same again.
        for i in [30, 2, 59, 16, 60, 15, 0, 44, 200, 31] {
            let at = y.pointer_offset(&format!("/{i}"));
            assert_eq!(at.map(|o| line_col(&yaml, o)), (i < 60).then_some((i + 1, 3)), "/{i}");
            assert_eq!(y.pointer_offset(&format!("/{i}")), at);
            for below in ["/k", "/k/1", "/1/k", "/0"] {
                let pointer = format!("/{i}{below}");
                let line = |o: usize| line_col(&yaml, o).0;
                assert_eq!(
                    y.pointer_offset(&pointer).map(line),
                    at.filter(|_| value.pointer(&pointer).is_some()).map(line)
                );
            }
        }
        // The sequence's children are kept (the root node's), as far as the furthest walk went.
        assert_eq!(y.elements.kept(), [(0, 60)]);
    }

    #[test]
    fn pointer_offset_finds_nodes_in_documents_and_streams() {
        let y = translate(CEC, &Limits::default()).expect("translates");
        let lc = |p: &str| y.pointer_offset(p).map(|o| line_col(CEC, o));
        assert_eq!(y.pointer_offset(""), Some(0));
        assert_eq!(lc("/kind"), Some((2, 7)));
        assert_eq!(lc("/spec/resources/0/filterChains/0/filters/0/name"), Some((17, 21)));
        assert_eq!(lc("/spec/resources/0/filterChains/0/filterChainMatch/serverNames/1"), Some((15, 46)));
        assert_eq!(lc("/spec/resources/0/@type"), Some((11, 16)));
        assert_eq!(lc("/spec/resources/0/socketOptions/0/intValue"), Some((25, 21)));
        assert_eq!(y.pointer_offset("/spec/resources/1"), None);
        assert_eq!(y.pointer_offset("/spec/resources/00"), None);
        assert_eq!(y.pointer_offset("/spec/resources/-"), None);
        assert_eq!(y.pointer_offset("/spec/nope"), None);
        assert_eq!(y.pointer_offset("/kind/0"), None);
        assert_eq!(y.pointer_offset("kind"), None);

        let stream = "kind: A\n---\na/b: 1\nm~n: [x, y]\n\"q\\\"\": 3\n";
        let y = translate(stream, &Limits::default()).expect("translates");
        assert!(y.is_stream());
        let lc = |p: &str| y.pointer_offset(p).map(|o| line_col(stream, o));
        assert_eq!(y.pointer_offset(""), Some(0));
        assert_eq!(lc("/0/kind"), Some((1, 7)));
        assert_eq!(lc("/1"), Some((3, 1)));
        assert_eq!(lc("/1/a~1b"), Some((3, 6)));
        assert_eq!(lc("/1/m~0n/1"), Some((4, 10)));
        assert_eq!(lc("/1/q\""), Some((5, 8)));
        assert_eq!(y.pointer_offset("/1/a/b"), None);
        assert_eq!(y.pointer_offset("/1/m~2n"), None);
        assert_eq!(y.pointer_offset("/2"), None);
    }

    #[test]
    fn anchors_and_aliases_expand_and_map_to_the_alias() {
        let yaml = "base: &b\n  port: 80\n  tags: [x, &t z]\ncopy: *b\ntag: *t\nkey: &k 8080\n*k : v\nn: *k\n";
        let y = translate(yaml, &Limits::default()).expect("translates");
        assert_eq!(
            y.json(),
            concat!(
                r#"{"base":{"port":80,"tags":["x","z"]},"copy":{"port":80,"tags":["x","z"]},"#,
                r#""tag":"z","key":8080,"8080":"v","n":8080}"#
            )
        );
        let json = y.json();
        let copy = json.find(r#""copy""#).expect("copy");
        let alias = yaml.find("*b").expect("*b");
        assert_eq!(y.yaml_offset(copy + 7), alias);
        assert_eq!(y.yaml_offset(copy + 20), alias);
        assert_eq!(y.pointer_offset("/copy/tags/1"), Some(alias));
        assert_eq!(y.pointer_offset("/copy"), Some(alias));
        assert_eq!(y.pointer_offset("/copy/nope"), None);
        assert_eq!(y.pointer_offset("/base/tags/1"), yaml.find("&t"));
        assert_eq!(y.pointer_offset("/tag"), yaml.find("*t"));
        assert_eq!(y.pointer_offset("/n"), yaml.find("*k\n"));
        // Just after the copy, positions are the document's own again.
        let tag = json.find(r#""z","key""#).expect("tag");
        assert_eq!(y.yaml_offset(tag), yaml.find("*t").expect("*t"));

        let stream = translate("a: &x [1]\n---\nb: *x\n", &Limits::default());
        assert_eq!(stream.map_err(|e| e.kind).err(), Some(YamlErrorKind::Syntax));
    }

    #[test]
    fn syntax_errors_carry_byte_offsets() {
        let cases = [
            // Bad indentation: reported at `c`.
            ("a:\n  b: 1\n c: 2\n", 11, "did not find expected key"),
            // Unclosed quotes: at the opening quote, or at the end when the stream ends first.
            ("a: 'abc\nb: 1\n", 3, "quoted scalar"),
            ("a: \"abc\n", 3, "quoted scalar"),
            // A tab used for indentation.
            ("a:\n\tb: 1\n", 4, "tabs disallowed"),
            ("a: *nope\n", 3, "unknown anchor"),
            ("a: [1, 2\n", 9, "flow sequence"),
            // Non-ASCII text before the error: a byte offset, not a char index.
            ("é: ü\nb: \"x\n", 10, "quoted scalar"),
            ("\u{feff}grüße: [ü, *q]", 17, "unknown anchor"),
        ];
        for (yaml, offset, message) in cases {
            let e = err(yaml);
            assert_eq!(e.kind, YamlErrorKind::Syntax, "{yaml:?}");
            assert_eq!(e.offset, offset, "{yaml:?}: {e:?}");
            assert!(e.message.contains(message), "{yaml:?}: {e:?}");
            assert!(!e.message.contains("line"), "position is the offset's job: {e:?}");
        }
    }

    #[test]
    fn duplicate_and_merge_keys_stay_as_written() {
        // Envoy's YAML reader keeps the last of a repeated key and has no merge keys: the
        // schema reader reports both, so the translation keeps them as they are.
        let yaml = "metadata:\n  x: 1\nspec:\n  name: a\n  port: 1\n  name: b\n";
        assert_eq!(json(yaml), r#"{"metadata":{"x":1},"spec":{"name":"a","port":1,"name":"b"}}"#);
        assert_eq!(json("{80: a, '80': b}"), r#"{"80":"a","80":"b"}"#);
        assert_eq!(json("a: &x {b: 1}\nc: {<<: *x, d: 2}\n"), r#"{"a":{"b":1},"c":{"<<":{"b":1},"d":2}}"#);
    }

    #[test]
    fn complex_keys_are_refused() {
        let e = err("a: 1\n? [a, b]\n: c\n");
        assert_eq!(e.kind, YamlErrorKind::Syntax);
        assert!(e.message.starts_with("complex mapping keys are not supported"), "{e:?}");
        assert_eq!(e.offset, 7);
        let e = err("{a: 1, {b: 2}: c}");
        assert_eq!((e.kind, e.offset), (YamlErrorKind::Syntax, 7));
        let e = err("x: &l [1]\n*l : 2\n");
        assert_eq!((e.kind, e.offset), (YamlErrorKind::Syntax, 10));
    }

    #[test]
    fn recursive_alias_is_refused() {
        let e = err("a: &a [1, *a]\n");
        assert_eq!((e.kind, e.offset), (YamlErrorKind::Syntax, 10));
    }

    #[test]
    fn billion_laughs_is_refused_fast() {
        let mut yaml = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..=9 {
            let refs = vec![format!("*a{}", level - 1); 9].join(", ");
            yaml.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        let started = std::time::Instant::now();
        let e = err(&yaml);
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
        assert_eq!(e.kind, YamlErrorKind::Limit);
        assert_eq!(e.message, "YAML aliases expand to more than 100000 nodes (a \"billion laughs\" document?)");
        // 9 copies of a 10-node list per a1, 91 nodes per a2 ... the 100,000th is crossed in a5.
        let line = line_col(&yaml, e.offset).0;
        assert_eq!(line, 6);
        assert!(yaml[e.offset..].starts_with("*a4"), "{}", &yaml[e.offset..]);

        // Under a smaller limit the same document fails earlier, and a generous one lets a
        // modest expansion through.
        let tight = Limits { max_alias_nodes: 50, ..Limits::default() };
        let e = translate(&yaml, &tight).expect_err("over the limit");
        assert_eq!(line_col(&yaml, e.offset).0, 2);
        let small = "a: &a [1, 2]\nb: [*a, *a]\n";
        let y = translate(small, &Limits { max_alias_nodes: 6, ..Limits::default() });
        assert_eq!(y.map(|y| y.json).ok().as_deref(), Some(r#"{"a":[1,2],"b":[[1,2],[1,2]]}"#));
        let e = translate(small, &Limits { max_alias_nodes: 5, ..Limits::default() });
        assert_eq!(e.map_err(|e| e.offset).err(), Some(small.rfind("*a").expect("*a")));
    }

    #[test]
    fn huge_aliased_strings_are_refused_too() {
        // Few nodes, many bytes: the byte budget is max(64 x max_alias_nodes, input length).
        let mut yaml = format!("s: &s \"{}\"\nl:\n", "x".repeat(10_000));
        for _ in 0..20 {
            yaml.push_str("- *s\n");
        }
        let limits = Limits { max_alias_nodes: 100, ..Limits::default() };
        let e = translate(&yaml, &limits).expect_err("over the byte budget");
        assert_eq!(e.kind, YamlErrorKind::Limit);
        assert_eq!(
            e.message,
            format!("YAML aliases expand to more than {} bytes (a \"billion laughs\" document?)", yaml.len())
        );
        // The first copy fits, the second does not.
        assert_eq!(line_col(&yaml, e.offset), (4, 3));
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        // saphyr scans ahead and stops at 255 flow levels before our limit is reached.
        let yaml = "[".repeat(100_000);
        let e = err(&yaml);
        assert_eq!(e.kind, YamlErrorKind::Limit);
        assert_eq!(e.message, "nesting deeper than 100 levels");
        assert_eq!(e.offset, 255);
        let yaml = format!("{}{}", "[".repeat(150), "]".repeat(150));
        let e = err(&yaml);
        assert_eq!((e.kind, e.offset), (YamlErrorKind::Limit, 100));

        let block: String = (0..150).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
        let e = err(&block);
        assert_eq!((e.kind, line_col(&block, e.offset)), (YamlErrorKind::Limit, (101, 101)));

        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(json(&ok), ok);
    }

    #[test]
    fn large_generated_yaml_translates() {
        // Big enough to catch quadratic behaviour, small enough for a debug build.
        let mut yaml = String::from("resources:\n");
        let chains = 8_000;
        for i in 0..chains {
            yaml.push_str(&format!(
                "- name: chain-{i}\n  filterChainMatch:\n    serverNames: [\"h{i}.example.com\"]\n    destinationPort: {}\n",
                i % 65536
            ));
        }
        let y = translate(&yaml, &Limits::default()).expect("translates");
        // root, list, and per chain: item, name, match, serverNames, one name, port.
        assert_eq!(y.nodes.len(), 2 + 6 * chains);
        let last = format!("/resources/{}/filterChainMatch/destinationPort", chains - 1);
        let at = y.pointer_offset(&last).expect("found");
        assert!(yaml[at..].starts_with(&format!("{}\n", (chains - 1) % 65536)));
    }
}
