//! Envoy's parser, as a serde adapter: every value of an input is checked against Envoy 1.40's
//! schema ([`crate::schema`]) the way protobuf's JSON parser (in the lenient mode Envoy runs it
//! in) and protoc-gen-validate check it, while the loader's typed readers ([`super::raw`])
//! read the same values into the model. One pass over the text does both.
//!
//! [`Checked`] wraps a `serde_json` deserializer and knows, at every node, which message or
//! field of the schema the node is ([`Shape`]). It records what Envoy would refuse or ignore as
//! [`Problem`]s in the [`Walk`], and hands the typed readers the value in its canonical form
//! (`"443"` as a number, a single value as a list of one, a wrapper object as its value) — or,
//! when the value is refused, as unset, so that the model still holds everything else.

mod document;
mod message;
mod repeated;
mod scalar;
mod texts;
mod value;
mod wkt;

use std::borrow::Cow;
use std::cell::RefCell;

pub(crate) use document::{RootKind, root_kind, root_of};
pub(crate) use repeated::{ListKind, PartItems};
pub(crate) use value::{Checked, Shape};

use crate::load::raw::PartList;
use crate::model::problem::{Anchor, Problem, ProblemKind};
use crate::schema::{MsgId, Schema};
use crate::source::{escape_pointer_token, join_index};

/// Whose rules a part of the input is read by, which decides what an unknown field costs and
/// which lenient forms are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Envoy reads it as static configuration (a bootstrap, a Listener file): unknown fields and
    /// enum names are refused.
    Static,
    /// Envoy reads it as an xDS resource (a DiscoveryResponse, a config_dump): unknown fields and
    /// enum names are ignored, with a warning in Envoy's log.
    Dynamic,
    /// The Cilium agent decodes it with Go's protojson first (a CiliumEnvoyConfig resource),
    /// which refuses unknown fields and every lenient form; Envoy's proto validation follows.
    Cilium,
    /// A configuration Envoy already refused (a config_dump's `failed_configuration`): read,
    /// not judged again.
    Silent,
}

/// One token of the JSON pointer of the node being read.
#[derive(Debug, Clone)]
enum Tok<'de> {
    /// An object key as written, with its offset in the text when the reader saw it.
    Key(Cow<'de, str>, Option<usize>),
    /// A list index (nested lists nest here, unlike in Envoy's path).
    Index(usize),
}

/// One component of Envoy's own path of the node (protobuf's `MessagePath`), which its parse
/// errors print: `static_resources.listeners[0].address`.
#[derive(Debug, Clone)]
struct Comp<'de> {
    /// The field as the input spelled it, or `<any>`, `<struct>`, `<list>`; for a root, the
    /// message's full name.
    name: Cow<'de, str>,
    /// Envoy's index into a repeated field (elements of nested lists count on), `-1` when none.
    index: i64,
    /// The index PGV prints after this step (a field's: an item's, a map key's).
    pgv_index: Option<PgvIndex<'de>>,
    /// What the component is.
    of: Of,
}

/// What a component of the path is. A field's kind, type and PGV names are the schema's, read
/// when a text is written: a field entered pushes 80 bytes, not the 128 it took with them.
#[derive(Debug, Clone, Copy)]
enum Of {
    /// Field `.1` of message `.0`.
    Field(MsgId, u16),
    /// A message that is not a field's value: a parse root, an Any's payload, a Struct's
    /// insides.
    Message {
        /// Its full name, for the path's tail.
        type_name: &'static str,
        /// PGV starts here (the document's message, an Any's payload, a TypedStruct's
        /// message); otherwise PGV takes no step here (inside a Struct).
        pgv_root: bool,
        /// A parse root: Envoy's parser starts its path here (the document's message, a
        /// TypedStruct's type).
        parse_root: bool,
    },
}

/// How one step of the path reads in PGV's texts.
enum PgvLink<'c, 'de> {
    /// Not a step PGV takes (inside a Struct).
    None,
    /// PGV starts here: the document's message, an Any's payload, a TypedStruct's message.
    Root,
    /// A field of a message: `ListenerValidationError.FilterChains[3]`.
    Field { message: &'static str, field: &'static str, index: Option<&'c PgvIndex<'de>> },
}

impl<'de> Comp<'de> {
    /// The component of field `i` of message `m`, spelled `key` in the input.
    fn field(key: Cow<'de, str>, m: MsgId, i: u16) -> Self {
        Comp { name: key, index: -1, pgv_index: None, of: Of::Field(m, i) }
    }

    /// A parse root: the document's message (or a TypedStruct's), where both Envoy's parser and
    /// PGV start their paths.
    fn root(type_name: &'static str) -> Self {
        Self::message(Cow::Borrowed(type_name), type_name, true, true)
    }

    /// An Any's payload of type `type_name`: PGV starts again here, Envoy's parser does not.
    fn any(type_name: &'static str) -> Self {
        Self::message(Cow::Borrowed("<any>"), type_name, true, false)
    }

    /// A step inside a Struct or Value (`<struct>`, `<list>`), which PGV does not take.
    fn opaque(name: &'static str, type_name: &'static str) -> Self {
        Self::message(Cow::Borrowed(name), type_name, false, false)
    }

    fn message(name: Cow<'de, str>, type_name: &'static str, pgv_root: bool, parse_root: bool) -> Self {
        Comp { name, index: -1, pgv_index: None, of: Of::Message { type_name, pgv_root, parse_root } }
    }

    /// The kind the component holds (`message`, `uint32`), for the path's tail.
    fn kind(&self, schema: &'static Schema) -> &'static str {
        match self.of {
            Of::Field(m, i) => schema.message(m).field(i).type_kind,
            Of::Message { .. } => "message",
        }
    }

    /// The message or enum type, for the path's tail (`""` for scalars).
    fn type_name(&self, schema: &'static Schema) -> &'static str {
        match self.of {
            Of::Field(m, i) => &schema.message(m).field(i).type_name,
            Of::Message { type_name, .. } => type_name,
        }
    }

    /// Whether Envoy's parser starts its path here.
    fn parse_root(&self) -> bool {
        matches!(self.of, Of::Message { parse_root: true, .. })
    }

    /// How PGV names this step of its "embedded message failed validation" chain.
    fn pgv(&self, schema: &'static Schema) -> PgvLink<'_, 'de> {
        match self.of {
            Of::Field(m, i) => {
                let message = schema.message(m);
                PgvLink::Field {
                    message: &message.name,
                    field: &message.field(i).pgv_name,
                    index: self.pgv_index.as_ref(),
                }
            }
            Of::Message { pgv_root: true, .. } => PgvLink::Root,
            Of::Message { pgv_root: false, .. } => PgvLink::None,
        }
    }
}

/// The index PGV prints after a repeated field or a map.
#[derive(Debug, Clone)]
enum PgvIndex<'de> {
    Item(u64),
    Key(Cow<'de, str>),
}

/// The state of one document's walk, shared by every adapter of it.
/// Which object gives a field more than once: by where its first key is in the text (the same
/// in both readings), or, when that key was escaped and so has no place, by its pointer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Repeated {
    FirstKey(usize),
    Pointer(String),
}

#[derive(Debug)]
pub(crate) struct Walk<'de> {
    pub(crate) schema: &'static Schema,
    /// The JSON text being read (offsets are into it).
    text: &'de str,
    st: RefCell<State<'de>>,
    /// The objects that give a field more than once, found by a first reading: this reading
    /// buffers their entries and joins each field's occurrences as Envoy does.
    merge: Option<std::collections::HashSet<Repeated>>,
    /// The text is the translation of YAML: Envoy reads each YAML mapping into a
    /// `google.protobuf.Struct` first, so of a key written twice only the last counts, and the
    /// keys reach the JSON parser sorted.
    yaml: bool,
    /// The typed reader of a part of a long list (a listener's `filter_chains`, a bootstrap's
    /// `listeners`), when this walk may read such lists in parts on every core (see
    /// [`Walk::splitting`]).
    reader: Option<PartReader>,
    /// The lists read in parts, by handle: the typed reader holds the handle, the loader takes
    /// the list (see [`Walk::take_split`]).
    split: RefCell<Vec<PartList<'de>>>,
    /// The handle of this walk's first list read in parts (the loader keeps one table for every
    /// document of a text).
    split_base: usize,
}

/// Reads the items of one part of a list of the given kind (their first has index `.1` in the
/// list) as the typed reader of the whole list would.
pub(crate) type PartReader =
    for<'r, 'w, 'de> fn(&mut PartItems<'r, 'w, 'de>, usize, ListKind) -> Result<PartList<'de>, serde_json::Error>;

/// The place a walk is at, taken to read a part of a list on another thread: what the part's
/// own walk starts from.
struct Fork<'de> {
    schema: &'static Schema,
    text: &'de str,
    yaml: bool,
    mode: Mode,
    ptr: Vec<Tok<'de>>,
    comps: Vec<Comp<'de>>,
    anys: Vec<Option<MsgId>>,
    fields: Vec<(MsgId, u16)>,
}

/// What a part's walk found, for the walk it was forked from.
pub(crate) struct Found<'de> {
    problems: Vec<Problem>,
    repeated: std::collections::HashSet<Repeated>,
    failed_at: Option<String>,
    /// The lists it read in parts itself (a long listener's chains), their handles numbered on
    /// from those of the walk it was forked from (see [`Fork::splitting_walk`]).
    split: Vec<PartList<'de>>,
}

#[derive(Debug)]
struct State<'de> {
    mode: Mode,
    ptr: Vec<Tok<'de>>,
    comps: Vec<Comp<'de>>,
    problems: Vec<Problem>,
    /// What the last value read was, for the message reader that asked for it.
    last: Last<'de>,
    /// Whether the next scalar's canonical text is wanted (a `unique` list's items).
    capture: bool,
    /// The types the Anys being read resolved to, innermost last.
    anys: Vec<Option<MsgId>>,
    /// The message a TypedStruct just read named, for the Any holding it.
    typed_struct_target: Option<MsgId>,
    /// A value was just refused (Envoy rejects the input for it): the field it was for counts as
    /// given, so that no PGV "is required" follows from a value Envoy never got to validate.
    refused: bool,
    /// The objects seen to give a field more than once (see [`Walk::merge`]).
    repeated: std::collections::HashSet<Repeated>,
    /// The fields being read, outermost first: an extension's wrapper takes its category from
    /// the field that holds it when its own `typed_config` has none.
    fields: Vec<(MsgId, u16)>,
    /// How many items the last list read had.
    list_len: u64,
    /// Where the first error came up: the deepest place the walk tracked (a value it passes
    /// through unchecked is not tracked inside), taken before the way out pops it.
    failed_at: Option<String>,
}

/// What the last value the adapter read was: whether it set its field, and, for the few that
/// a message's own checks need, the value.
#[derive(Debug, Default)]
struct Last<'de> {
    set: bool,
    /// The value was refused, not left out (see [`State::refused`]).
    refused: bool,
    /// A list without items or an empty string: to PGV it is given, to Envoy's own checks it
    /// is empty.
    empty: bool,
    string: Option<Cow<'de, str>>,
    boolean: Option<bool>,
    /// An Any's type: `Some(None)` for one given but of none of the schema's.
    any_type: Option<Option<MsgId>>,
    /// The canonical text of a scalar, when asked for ([`State::capture`]).
    text: Option<String>,
}

impl<'de> Fork<'de> {
    /// A walk that starts where the forked one was.
    fn walk(&self) -> Walk<'de> {
        let walk = Walk { schema: self.schema, yaml: self.yaml, ..Walk::new(self.text, self.mode) };
        {
            let mut st = walk.st.borrow_mut();
            st.ptr = self.ptr.clone();
            st.comps = self.comps.clone();
            st.anys = self.anys.clone();
            st.fields = self.fields.clone();
        }
        walk
    }

    /// A walk that starts where the forked one was and reads long lists in parts itself (on
    /// the thread that forked it: a part's walk on a pool thread must not wait for the pool),
    /// their handles from `base` on.
    fn splitting_walk(&self, reader: PartReader, base: usize) -> Walk<'de> {
        Walk { reader: Some(reader), split_base: base, ..self.walk() }
    }
}

impl<'de> Walk<'de> {
    /// A walk over `text` (the whole JSON text: offsets are taken relative to it), starting in
    /// `mode`.
    pub(crate) fn new(text: &'de str, mode: Mode) -> Self {
        Walk {
            schema: Schema::get(),
            text,
            st: RefCell::new(State {
                mode,
                ptr: Vec::new(),
                comps: Vec::new(),
                problems: Vec::new(),
                last: Last::default(),
                capture: false,
                anys: Vec::new(),
                typed_struct_target: None,
                refused: false,
                repeated: std::collections::HashSet::new(),
                fields: Vec::new(),
                list_len: 0,
                failed_at: None,
            }),
            merge: None,
            yaml: false,
            reader: None,
            split: RefCell::new(Vec::new()),
            split_base: 0,
        }
    }

    /// This walk reads long lists (a listener's `filter_chains`, a bootstrap's `listeners`) in
    /// parts on every core, each part with `reader`; the lists it so reads get handles from
    /// `base` on.
    #[cfg(feature = "parallel")]
    pub(crate) fn splitting(mut self, reader: PartReader, base: usize) -> Self {
        self.reader = Some(reader);
        self.split_base = base;
        self
    }

    /// The reader of a part of a list, when this walk reads lists in parts here: never while it
    /// joins repeated fields (the objects it buffers are read in their order), nor where the
    /// typed readers follow another parser's rules (a CiliumEnvoyConfig's) or none.
    fn part_reader(&self) -> Option<PartReader> {
        // With one core (the page) there is nothing to gain, and the code is left out.
        if !cfg!(feature = "parallel") {
            return None;
        }
        let mode = self.mode();
        self.reader.filter(|_| self.merge.is_none() && matches!(mode, Mode::Static | Mode::Dynamic))
    }

    /// The place this walk is at, for a walk of a part of the list being read.
    fn fork(&self) -> Fork<'de> {
        let st = self.st.borrow();
        Fork {
            schema: self.schema,
            text: self.text,
            yaml: self.yaml,
            mode: st.mode,
            ptr: st.ptr.clone(),
            comps: st.comps.clone(),
            anys: st.anys.clone(),
            fields: st.fields.clone(),
        }
    }

    /// Keeps a list read in parts; its handle.
    fn keep_split(&self, list: PartList<'de>) -> usize {
        let mut split = self.split.borrow_mut();
        split.push(list);
        self.split_base + split.len() - 1
    }

    /// The handle the next list kept will get.
    fn next_handle(&self) -> usize {
        self.split_base + self.split.borrow().len()
    }

    /// The lists read in parts, in the order of their handles.
    pub(crate) fn take_split(&self) -> Vec<PartList<'de>> {
        std::mem::take(&mut self.split.borrow_mut())
    }

    /// What a part's walk found.
    fn found(self) -> Found<'de> {
        let split = self.take_split();
        let st = self.st.into_inner();
        Found { problems: st.problems, repeated: st.repeated, failed_at: st.failed_at, split }
    }

    /// Takes in what the walk of a part found, in the list's order.
    fn absorb(&self, found: Found<'de>) {
        self.split.borrow_mut().extend(found.split);
        let mut st = self.st.borrow_mut();
        st.problems.extend(found.problems);
        st.repeated.extend(found.repeated);
        if st.failed_at.is_none() {
            st.failed_at = found.failed_at;
        }
    }

    /// This walk joins the repeated fields of the objects `objects` names (found by a first
    /// walk over the same text); `yaml` says the text is a YAML translation.
    pub(crate) fn merging(mut self, objects: std::collections::HashSet<Repeated>, yaml: bool) -> Self {
        self.merge = Some(objects);
        self.yaml = yaml;
        self
    }

    /// The objects this walk saw give a field more than once: when there are any, the text is
    /// read again with [`Self::merging`].
    pub(crate) fn take_repeated(&self) -> std::collections::HashSet<Repeated> {
        std::mem::take(&mut self.st.borrow_mut().repeated)
    }

    /// Notes that the object being read, whose first key is at `first_key`, gives a field again.
    fn found_repeated(&self, first_key: Option<usize>) {
        let id = self.object_id(first_key);
        self.st.borrow_mut().repeated.insert(id);
    }

    fn object_id(&self, first_key: Option<usize>) -> Repeated {
        match first_key {
            Some(o) => Repeated::FirstKey(o),
            None => Repeated::Pointer(self.pointer()),
        }
    }

    /// Whether this walk joins repeated fields at all.
    fn is_merging(&self) -> bool {
        self.merge.as_ref().is_some_and(|m| !m.is_empty())
    }

    /// Whether the object being read, whose first key is at `first_key`, is one whose repeated
    /// fields this walk joins.
    fn merges(&self, first_key: Option<usize>) -> bool {
        self.merge.as_ref().is_some_and(|m| m.contains(&self.object_id(first_key)))
    }

    /// The problems recorded, in the order they were found.
    pub(crate) fn into_problems(self) -> Vec<Problem> {
        self.st.into_inner().problems
    }

    pub(crate) fn mode(&self) -> Mode {
        self.st.borrow().mode
    }

    /// Runs `f` with the walk in another mode.
    /// Sets the mode, returning the one before (no closure: the readers that switch modes are
    /// generic over the typed reader, and a closure would be compiled once per reader).
    pub(crate) fn swap_mode(&self, mode: Mode) -> Mode {
        std::mem::replace(&mut self.st.borrow_mut().mode, mode)
    }

    /// Starts a parse root at the current place: a document's message (or a TypedStruct's),
    /// whose full name Envoy's parse errors start with.
    pub(crate) fn push_root(&self, message: MsgId) {
        let name = &*self.schema.message(message).full_name;
        self.st.borrow_mut().comps.push(Comp::root(name));
    }

    pub(crate) fn pop_root(&self) {
        self.st.borrow_mut().comps.pop();
    }

    /// The pointer token of a document of a list or stream.
    pub(crate) fn push_index(&self, i: usize) {
        self.st.borrow_mut().ptr.push(Tok::Index(i));
    }

    /// The pointer token of a key of a wrapper around the document (a peer tool's map of
    /// proxies: `/default/eg`), outside the schema.
    pub(crate) fn push_key(&self, key: Cow<'de, str>) {
        self.st.borrow_mut().ptr.push(Tok::Key(key, None));
    }

    pub(crate) fn pop_index(&self) {
        self.st.borrow_mut().ptr.pop();
    }

    /// Enters the value of a field (or of a key outside the schema) named `key` as written.
    fn enter_key(&self, key: Cow<'de, str>, offset: Option<usize>, comp: Option<Comp<'de>>) {
        let mut st = self.st.borrow_mut();
        st.ptr.push(Tok::Key(key, offset));
        if let Some(c) = comp {
            st.comps.push(c);
        }
    }

    fn leave_key(&self, had_comp: bool) {
        let mut st = self.st.borrow_mut();
        st.ptr.pop();
        if had_comp {
            st.comps.pop();
        }
    }

    fn push_comp(&self, comp: Comp<'de>) {
        self.st.borrow_mut().comps.push(comp);
    }

    fn pop_comp(&self) {
        self.st.borrow_mut().comps.pop();
    }

    /// Sets Envoy's and PGV's index of the innermost component (the next element of a list).
    fn set_index(&self, envoy: i64, pgv: Option<PgvIndex<'de>>) {
        let mut st = self.st.borrow_mut();
        if let Some(c) = st.comps.last_mut() {
            c.index = envoy;
            if let Of::Field(..) = c.of {
                c.pgv_index = pgv;
            }
        }
    }

    fn set_last(&self, last: Last<'de>) {
        self.st.borrow_mut().last = last;
    }

    fn set_list_len(&self, n: u64) {
        self.st.borrow_mut().list_len = n;
    }

    fn list_len(&self) -> u64 {
        self.st.borrow().list_len
    }

    fn take_last(&self) -> Last<'de> {
        let mut st = self.st.borrow_mut();
        st.refused = false;
        std::mem::take(&mut st.last)
    }

    /// Enters the value of field `field` of message `m`, written as `key`: its pointer token, its
    /// path component, and the field (see [`State::fields`]), in one go.
    fn enter_field(&self, key: Cow<'de, str>, offset: Option<usize>, comp: Comp<'de>, m: MsgId, field: u16) {
        let mut st = self.st.borrow_mut();
        st.ptr.push(Tok::Key(key, offset));
        st.comps.push(comp);
        st.fields.push((m, field));
    }

    /// Leaves the field [`Self::enter_field`] entered, with what its value was.
    fn leave_field(&self) -> Last<'de> {
        let mut st = self.st.borrow_mut();
        st.ptr.pop();
        st.comps.pop();
        st.fields.pop();
        st.refused = false;
        std::mem::take(&mut st.last)
    }

    /// The field whose value is being read.
    fn parent_field(&self) -> Option<(MsgId, u16)> {
        self.st.borrow().fields.last().copied()
    }

    /// Notes that the value being read is refused (see [`State::refused`]).
    fn refuse(&self) {
        self.st.borrow_mut().refused = true;
    }

    /// Whether a value was refused since the last field ended.
    fn take_refused(&self) -> bool {
        std::mem::take(&mut self.st.borrow_mut().refused)
    }

    fn capture(&self, on: bool) {
        self.st.borrow_mut().capture = on;
    }

    fn capturing(&self) -> bool {
        self.st.borrow().capture
    }

    /// Where the value being read starts, when its key was seen in the text.
    fn value_offset(&self) -> Option<usize> {
        let st = self.st.borrow();
        match st.ptr.last() {
            Some(Tok::Key(k, Some(o))) => Some(self.value_start(*o, k)),
            _ => None,
        }
    }

    /// The text from the value being read on, when its start is known.
    fn value_text(&self) -> Option<&'de str> {
        self.value_offset().and_then(|o| self.text.get(o..))
    }

    /// Notes where an error came up, if it is the first: called where a value ends, before the
    /// path is left.
    pub(super) fn note_failure(&self, failed: bool) {
        if failed && self.st.borrow().failed_at.is_none() {
            let at = self.pointer();
            self.st.borrow_mut().failed_at = Some(at);
        }
    }

    /// The JSON pointer of the place an error came up (the place being read, when none was
    /// noted).
    pub(crate) fn failure_pointer(&self) -> String {
        let noted = self.st.borrow().failed_at.clone();
        noted.unwrap_or_else(|| self.pointer())
    }

    /// The JSON pointer of the node being read.
    fn pointer(&self) -> String {
        let st = self.st.borrow();
        let mut p = String::new();
        for t in &st.ptr {
            match t {
                Tok::Key(k, _) => {
                    p.push('/');
                    p.push_str(&escape_pointer_token(k));
                }
                Tok::Index(i) => p = join_index(&p, *i),
            }
        }
        p
    }

    /// The nearest node of the path whose offset the reader saw, as an anchor into `pointer`.
    fn anchor(&self, pointer: &str) -> Option<Anchor> {
        let st = self.st.borrow();
        let mut len = 0;
        let mut best = None;
        for t in &st.ptr {
            match t {
                Tok::Key(k, off) => {
                    len += 1 + escape_pointer_token(k).len();
                    if let Some(o) = off {
                        best = Some(Anchor { pointer_len: len, offset: self.value_start(*o, k) });
                    }
                }
                Tok::Index(i) => len += 1 + i.to_string().len(),
            }
        }
        best.filter(|a| a.pointer_len <= pointer.len())
    }

    /// Where the value of a key starts, from where the key's text starts (after its quote).
    fn value_start(&self, key_offset: usize, key: &str) -> usize {
        let b = self.text.as_bytes();
        // The key is borrowed, so it has no escapes: its closing quote follows it.
        let mut i = key_offset + key.len() + 1;
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n' | b':') {
            i += 1;
        }
        i.min(b.len())
    }

    /// The offset of a string borrowed from the text, if it is.
    pub(crate) fn offset_of(&self, s: &str) -> Option<usize> {
        let base = self.text.as_ptr() as usize;
        let p = s.as_ptr() as usize;
        (p >= base && p <= base + self.text.len()).then(|| p - base)
    }

    /// Records a problem at the node being read (`at`: the value's offset, when known).
    fn problem(&self, kind: ProblemKind, message: String, envoy_error: Option<String>, at: Option<usize>) {
        if self.mode() == Mode::Silent {
            return;
        }
        let pointer = self.pointer();
        let anchor = if at.is_none() { self.anchor(&pointer) } else { None };
        self.st.borrow_mut().problems.push(Problem {
            kind,
            message,
            envoy_error,
            notes: Vec::new(),
            pointer,
            offset: at,
            anchor,
            related: None,
        });
    }

    /// Adds the other place to the last problem recorded.
    fn related(&self, what: String, offset: usize) {
        if let Some(p) = self.st.borrow_mut().problems.last_mut() {
            p.related = Some((what, offset));
        }
    }

    /// Adds a note to the last problem recorded.
    fn note(&self, note: impl Into<String>) {
        if let Some(p) = self.st.borrow_mut().problems.last_mut() {
            p.notes.push(note.into());
        }
    }
}
