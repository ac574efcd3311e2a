//! Loaders: text in, [`Input`] out.
//!
//! The kind of input is detected from its content, never from a file name: JSON or YAML, then
//! config_dump, bootstrap, Listener(s), DiscoveryResponse or CiliumEnvoyConfig. YAML is
//! translated once into JSON ([`yaml`]); the JSON is read once, with serde_json and borrowed
//! strings, through the schema adapter (`envoy_json`: every value judged as Envoy's parser and
//! PGV judge it) into the typed readers (`raw`, `route_raw`), then `classify` walks the parsed
//! documents into the model.
//!
//! Loading is two steps: [`Document::new`] reads a [`SourceFile`] (limits, YAML translation) and
//! keeps what it made of the text; [`Document::load`] parses it into an [`Input`] whose strings
//! borrow from that text. The caller keeps the document alive as long as the input.

mod classify;
mod document;
pub mod dump_resources;
mod envoy_json;
mod error;
pub mod locate;
pub(crate) mod matcher;
mod peers;
#[cfg(feature = "proto")]
pub mod proto;
pub(crate) mod protojson;
pub(crate) mod raw;
pub mod route;
mod route_raw;
pub mod rules;
pub mod yaml;

pub use document::Document;
pub use error::LoadError;

use serde::Deserialize;

use crate::model::{Input, TextOffset};
use crate::source::{Location, Locator, Pointer, SourceFile, SourceId};
use raw::RawObject;

/// Safety limits for hostile or broken input.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Deepest nesting of objects and lists accepted in YAML. JSON is held to serde_json's
    /// fixed 128; YAML stays below it so that its translation always parses.
    pub max_depth: usize,
    /// Nodes that YAML aliases may add in total by expansion, beyond the document's own nodes.
    pub max_alias_nodes: usize,
    /// Largest input accepted, in bytes (`xdsck check --max-bytes`). Checked before parsing.
    pub max_bytes: usize,
}

/// The default [`Limits::max_bytes`]: 1 GiB, far beyond any real config_dump.
pub const DEFAULT_MAX_BYTES: usize = 1 << 30;

impl Default for Limits {
    fn default() -> Self {
        Self { max_depth: 100, max_alias_nodes: 100_000, max_bytes: DEFAULT_MAX_BYTES }
    }
}

/// The `XDS009` error for an input of `size` bytes over `limit` (`size` may be a lower bound:
/// a reader stops one byte past the limit).
pub fn size_limit_error(size: usize, limit: usize, at_least: bool, location: Location) -> LoadError {
    let size = if at_least { format!("more than {limit}") } else { size.to_string() };
    LoadError::new(
        &rules::INPUT_LIMIT,
        format!("the input is {size} bytes, over the size limit of {limit} bytes"),
        location,
    )
    .note("raise the limit with `--max-bytes N` if the input is legitimate")
}

/// The first loader step, everything before the parse: the size limit, an empty input, a
/// template, and the translation of YAML into the JSON every loader reads.
fn read(id: SourceId, file: &SourceFile, limits: &Limits) -> Result<document::Read, LoadError> {
    let text = file.text();
    let at = |offset: usize| Location::new(id, "", Some(offset));

    if text.len() > limits.max_bytes {
        let mut offset = limits.max_bytes;
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        return Err(size_limit_error(text.len(), limits.max_bytes, false, at(offset)));
    }

    let body_start = text.len() - text.trim_start_matches('\u{feff}').len();
    let Some(first) = first_significant(&text[body_start..]) else {
        return Err(LoadError::new(&rules::EMPTY, "the input is empty", at(0)));
    };
    let first_offset = body_start + first.0;
    // JSON has no comments: a document after a `#` line is YAML, even if it is `[]`.
    let is_json = matches!(first.1, b'{' | b'[') && !text[body_start..first_offset].contains('#');
    if is_json {
        return Ok(document::Read { yaml: None, body_start, first_offset });
    }
    if let Some(offset) = template_action_line(text) {
        return Err(template_error(at(offset)));
    }
    match yaml::translate(text, limits) {
        Ok(y) => Ok(document::Read { yaml: Some(y), body_start, first_offset }),
        Err(e) => {
            if let Some(offset) = text.find("{{") {
                return Err(template_error(at(offset)));
            }
            let rule = match e.kind {
                yaml::YamlErrorKind::Syntax => &rules::YAML_SYNTAX,
                yaml::YamlErrorKind::Limit => &rules::INPUT_LIMIT,
            };
            Err(LoadError::new(rule, e.message, at(e.offset)))
        }
    }
}

/// The second step: parses the JSON text of a read document and walks it into the model.
fn parse_document<'a>(id: SourceId, text: Locator<'a>, read: &document::Read) -> Result<Input<'a>, LoadError> {
    let at = |offset: usize| Location::new(id, "", Some(offset));
    let is_json = read.yaml.is_none();
    let json = text.json_text();
    // The model keeps a chain's offsets in four bytes: a longer text (JSON, or YAML's
    // translation) is refused whatever `--max-bytes` allows, not read with chains unplaced.
    if json.len() > TextOffset::MAX_TEXT {
        return Err(LoadError::new(
            &rules::INPUT_LIMIT,
            format!(
                "the input is {} bytes as JSON, over the {} bytes xdsck reads in one input",
                json.len(),
                TextOffset::MAX_TEXT
            ),
            at(0),
        )
        .note("split it into several inputs"));
    }
    // Offsets are computed from borrowed strings while parsing and while classifying; they are
    // relative to the whole text, so a byte-order mark skipped below still counts.
    let _scope = protojson::ParseScope::new(json);
    let skip = if is_json { read.body_start } else { 0 };
    let mut problems = Vec::new();
    let mut split = Vec::new();
    let documents = match parse(json, skip, read.yaml.is_some(), &mut problems, &mut split) {
        Ok(d) => d,
        Err(f) => return Err(parse_error(id, text, skip, &f, is_json)),
    };
    let documents = match documents {
        Some(d) => d,
        None => {
            let offset = if is_json { read.first_offset } else { 0 };
            return Err(LoadError::new(
                &rules::NOT_ENVOY,
                "not Envoy configuration: the document is a single value, not an object or a list",
                at(offset),
            ));
        }
    };
    let mut input = classify::classify(id, text, documents, split)?;
    if input.proxies.is_empty() {
        input.problems = problems;
    } else {
        // Each proxy of a peer's map is an input of its own: its problems go with it (the proxy
        // whose part holds the place; the first for a place outside them all).
        let at: crate::hashing::InputMap<String, usize> = input
            .proxies
            .iter()
            .enumerate()
            .filter_map(|(i, x)| Some((x.proxy.as_ref()?.pointer.clone(), i)))
            .collect();
        for p in problems {
            let i = crate::source::pointer_and_ancestors(&p.pointer).find_map(|q| at.get(q).copied()).unwrap_or(0);
            input.proxies[i].problems.push(p);
        }
    }
    Ok(input)
}

/// What the top of a document holds.
pub(crate) enum Documents<'a> {
    One(Box<RawObject<'a>>),
    /// A JSON list or a YAML stream; `None` for empty (null) documents.
    Many(Vec<Option<RawObject<'a>>>),
    /// A peer tool's map of proxies (or of one proxy's resources), each read apart: each is an
    /// Envoy of its own.
    Proxies(Vec<peers::ProxyDocuments<'a>>),
    /// Something a peer's tool prints that is not configuration, named (a JSON Patch).
    Unread(&'static str),
}

/// Where a document sits in its text, and what it is when a wrapper around it says so.
#[derive(Default)]
pub(crate) struct Place<'a> {
    /// The way from the text's root to the document.
    pub(crate) path: Vec<Step<'a>>,
    /// The message the document is, when the wrapper names it (a peer's `listeners:` list, a
    /// Kuma map keyed by type URL); otherwise the document's keys tell.
    pub(crate) message: Option<&'static str>,
}

/// One token of a [`Place`].
#[derive(Clone)]
pub(crate) enum Step<'a> {
    Key(std::borrow::Cow<'a, str>),
    Index(usize),
}

impl Place<'_> {
    fn index(i: usize) -> Self {
        Place { path: vec![Step::Index(i)], message: None }
    }

    /// The JSON pointer of the place.
    pub(crate) fn pointer(&self) -> String {
        let mut p = String::new();
        for step in &self.path {
            p = match step {
                Step::Key(k) => crate::source::join_token(&p, k),
                Step::Index(i) => crate::source::join_index(&p, *i),
            };
        }
        p
    }
}

/// Why a text could not be parsed: serde_json's error, and for an error in a value the JSON
/// pointer of the place the schema walk was at when it happened.
struct Failure {
    error: serde_json::Error,
    pointer: Option<String>,
}

impl From<serde_json::Error> for Failure {
    fn from(error: serde_json::Error) -> Self {
        Failure { error, pointer: None }
    }
}

/// Parses the JSON text from `skip` on, checking every document against Envoy's schema as it is
/// read (the problems found go to `problems`, the lists read in parts to `split`); `Ok(None)`
/// when it is a scalar.
fn parse<'a>(
    json: &'a str,
    skip: usize,
    yaml: bool,
    problems: &mut Vec<crate::model::problem::Problem>,
    split: &mut Vec<raw::PartList<'a>>,
) -> Result<Option<Documents<'a>>, Failure> {
    let body = &json[skip..];
    let Some((at, first)) = first_significant(body) else {
        return Ok(None);
    };
    match first {
        b'{' if envoy_json::root_kind(&body[at..]) == envoy_json::RootKind::Unknown
            && let Some(peer) = peers::find(&body[at..]) =>
        {
            let proxies = match peer {
                peers::Peer::Proxies(p) => p,
                peers::Peer::Unread(what) => return Ok(Some(Documents::Unread(what))),
            };
            let mut out = Vec::with_capacity(proxies.len());
            for proxy in proxies {
                out.push(proxy.read(|place, doc| read_document(json, doc, place, yaml, problems, Some(split)))?);
            }
            Ok(Some(Documents::Proxies(out)))
        }
        b'{' => Ok(Some(Documents::One(Box::new(read_document(
            json,
            &body[at..],
            &Place::default(),
            yaml,
            problems,
            Some(split),
        )?)))),
        b'[' => {
            // A JSON list or a YAML stream: each document is told apart and checked on its own.
            let mut de = serde_json::Deserializer::from_str(body);
            let raws: Vec<Option<&'a serde_json::value::RawValue>> = Vec::deserialize(&mut de)?;
            de.end()?;
            if let Some(what) = peers::describe_list(&raws) {
                return Ok(Some(Documents::Unread(what)));
            }
            // A list of route tables or clusters (`istioctl proxy-config route -o json`): one
            // proxy's resources, each read as the message it is.
            if let Some(found) = peers::resource_list(&raws) {
                let proxy = found.read(|place, doc| read_document(json, doc, place, yaml, problems, Some(split)))?;
                return Ok(Some(Documents::Proxies(vec![proxy])));
            }
            if many_small(&raws) {
                return read_small_documents(json, &raws, yaml, problems).map(|d| Some(Documents::Many(d)));
            }
            let mut docs = Vec::with_capacity(raws.len());
            for (i, raw) in raws.into_iter().enumerate() {
                docs.push(match raw {
                    Some(raw) => {
                        Some(read_document(json, raw.get(), &Place::index(i), yaml, problems, Some(&mut *split))?)
                    }
                    None => None,
                });
            }
            Ok(Some(Documents::Many(docs)))
        }
        _ => {
            let mut de = serde_json::Deserializer::from_str(body);
            serde::de::IgnoredAny::deserialize(&mut de)?;
            de.end()?;
            Ok(None)
        }
    }
}

/// A document shorter than this is read whole on one core, never in parts; a stream of such
/// documents is read a document per core instead ([`read_small_documents`]).
const SMALL_DOCUMENT: usize = 1 << 20;

/// Whether a list's documents are many enough, together, to be worth reading on every core,
/// and each small (a stream of 10k CiliumEnvoyConfigs of 3 KB each was read one after another).
fn many_small(raws: &[Option<&serde_json::value::RawValue>]) -> bool {
    let len = |r: &Option<&serde_json::value::RawValue>| r.map_or(0, |r| r.get().len());
    cfg!(feature = "parallel")
        && raws.len() > 1
        && raws.iter().map(len).sum::<usize>() >= SMALL_DOCUMENT / 4
        && raws.iter().all(|r| len(r) < SMALL_DOCUMENT)
}

/// [`read_document`] of each of a list's documents, on every core: each read whole (no list in
/// it is long enough to be read in parts), its problems taken in the list's order, and the
/// first failure in that order the list's, as when they are read one by one.
fn read_small_documents<'a>(
    json: &'a str,
    raws: &[Option<&'a serde_json::value::RawValue>],
    yaml: bool,
    problems: &mut Vec<crate::model::problem::Problem>,
) -> Result<Vec<Option<RawObject<'a>>>, Failure> {
    let indexed: Vec<(usize, Option<&'a str>)> = raws.iter().map(|r| r.map(|r| r.get())).enumerate().collect();
    let read = crate::parallel::par_map(&indexed, |&(i, raw)| {
        let Some(raw) = raw else { return Ok::<_, Failure>(None) };
        let _scope = protojson::ParseScope::new(json);
        let mut found = Vec::new();
        let doc = read_document(json, raw, &Place::index(i), yaml, &mut found, None)?;
        Ok(Some((doc, found)))
    });
    let mut docs = Vec::with_capacity(read.len());
    for r in read {
        docs.push(r?.map(|(doc, found)| {
            problems.extend(found);
            doc
        }));
    }
    Ok(docs)
}

/// Reads one document (`doc`, a part of `json`) with its root checked as the message its keys
/// (or its wrapper) say it is; `place` is where it is, `yaml` whether `json` is a YAML
/// translation.
///
/// An object that gives a field twice is legal to Envoy, which keeps the last value or joins
/// the lists; a streaming reader cannot take back what it handed over, so the first reading
/// only notes such objects and the document is read once more, those objects buffered.
fn read_document<'a>(
    json: &'a str,
    doc: &'a str,
    place: &Place<'a>,
    yaml: bool,
    problems: &mut Vec<crate::model::problem::Problem>,
    split: Option<&mut Vec<raw::PartList<'a>>>,
) -> Result<RawObject<'a>, Failure> {
    use envoy_json::Walk;
    let object = doc.trim_start().starts_with('{');
    let (kind, typed) = match place.message {
        // What a wrapper says a resource is, it is: an xDS resource, read by xDS's rules.
        Some(m) => (
            envoy_json::RootKind::DumpEntry(crate::schema::Schema::get().known(m)),
            object && envoy_json::root_of(doc).1,
        ),
        None if object => envoy_json::root_of(doc),
        None => (envoy_json::RootKind::Unknown, false),
    };
    let root = Root { kind, typed };
    // A listener's long chain list is read in parts, on every core: the walk keeps them, and
    // the listener their handle (from `split.len()` on: one table for every document here).
    // (`split`: none when the document is read whole, as one of many on its own core.)
    let walk = Walk::new(json, kind.mode());
    #[cfg(feature = "parallel")]
    let walk = match &split {
        Some(split) => walk.splitting(raw::read_part, split.len()),
        None => walk,
    };
    let obj = read_with(&walk, doc, place, root)?;
    let repeated = walk.take_repeated();
    if repeated.is_empty() {
        if let Some(split) = split {
            split.extend(walk.take_split());
        }
        problems.extend(walk.into_problems());
        return Ok(obj);
    }
    drop(obj);
    // The merging reading reads every list in order (see `Walk::part_reader`).
    let walk = Walk::new(json, kind.mode()).merging(repeated, yaml);
    let obj = read_with(&walk, doc, place, root)?;
    problems.extend(walk.into_problems());
    Ok(obj)
}

/// What a document's root is read as.
#[derive(Clone, Copy)]
struct Root {
    kind: envoy_json::RootKind,
    /// Its `@type` names its message: it is read as an Any, whose `@type` is no field.
    typed: bool,
}

/// Reads one document with the walk; a failure carries the place the error came up.
fn read_with<'a>(
    walk: &envoy_json::Walk<'a>,
    doc: &'a str,
    place: &Place<'a>,
    root: Root,
) -> Result<RawObject<'a>, Failure> {
    read_walking(walk, doc, place, root).map_err(|error| Failure { error, pointer: Some(walk.failure_pointer()) })
}

fn read_walking<'a>(
    walk: &envoy_json::Walk<'a>,
    doc: &'a str,
    place: &Place<'a>,
    Root { kind, typed }: Root,
) -> Result<RawObject<'a>, serde_json::Error> {
    use envoy_json::{Checked, Shape};
    for step in &place.path {
        match step {
            Step::Key(k) => walk.push_key(k.clone()),
            Step::Index(i) => walk.push_index(*i),
        }
    }
    // An object with no key of anything xdsck reads (a JSON schema, a package.json) is handed
    // to no typed reader, which knows Envoy's keys and would refuse other files' values under
    // them (`"type": "object"` is no cluster type): classifying it names what it is not.
    if kind == envoy_json::RootKind::Unknown && doc.trim_start().starts_with('{') {
        let keys: std::collections::HashMap<std::borrow::Cow<'a, str>, serde::de::IgnoredAny> =
            serde_json::from_str(doc)?;
        return Ok(RawObject { keys: keys.len(), ..RawObject::default() });
    }
    let shape = match kind.message() {
        Some(_) if typed => {
            let id = walk.schema.known("google.protobuf.Any");
            walk.push_root(id);
            Shape::message(id, walk)
        }
        Some(m) => {
            let id = walk.schema.known(m);
            walk.push_root(id);
            Shape::message(id, walk)
        }
        None if kind == envoy_json::RootKind::K8s => Shape::K8s,
        None => Shape::Free,
    };
    let mut de = serde_json::Deserializer::from_str(doc);
    let obj = RawObject::deserialize(Checked { de: &mut de, shape, w: walk })?;
    de.end()?;
    Ok(obj)
}

/// Turns a serde_json error into a located [`LoadError`].
fn parse_error(id: SourceId, text: Locator<'_>, skip: usize, failure: &Failure, is_json: bool) -> LoadError {
    use serde_json::error::Category;
    let e = &failure.error;
    let (file, json) = (text.file(), text.json_text());
    // serde_json counts lines from one and columns in bytes from one, in the text it was given.
    let json_offset = skip + locate::line_column_to_offset(&json[skip..], e.line(), e.column());
    let message = shorten_quoted(&strip_position(e));
    // A number too large for any numeric type (`1e400`, 10,000 digits) is well-formed JSON;
    // serde_json reports it as a syntax error, but it is a bad value of the field it is in.
    let category = if message == "number out of range" { Category::Data } else { e.classify() };
    match category {
        Category::Syntax | Category::Eof | Category::Io => {
            if let Some(offset) = file.text().find("{{") {
                return template_error(Location::new(id, "", Some(offset)));
            }
            let rule = if message.contains("recursion limit") { &rules::INPUT_LIMIT } else { &rules::JSON_SYNTAX };
            let message = if message.contains("recursion limit") {
                "nesting deeper than 128 levels".to_owned()
            } else if e.classify() == Category::Eof {
                format!("{message} (the input ends in the middle of a value: truncated?)")
            } else if let Some(token) = non_finite_token(json, json_offset) {
                format!("{message}: `{token}` is not a JSON number (JSON has no NaN or Infinity)")
            } else {
                message
            };
            let offset = if is_json { json_offset } else { text.original_offset(json_offset) };
            LoadError::new(rule, message, Location::new(id, "", Some(offset)))
        }
        Category::Data => {
            // The walk was at the value it read when the error came. A number too large, or
            // nesting too deep, fails wherever it is, read or not: parse again, this time
            // recording the path over the bare structure (errors are rare, the fast path does
            // not pay for this).
            let structural = category != e.classify() || message.contains("recursion limit");
            let mut pointer =
                if structural { path_of_structure(&json[skip..]) } else { failure.pointer.clone() }.unwrap_or_default();
            let duplicate = message.strip_prefix("duplicate field `").and_then(|m| m.split('`').next());
            let offset = if let Some(key) = duplicate {
                // The error fires right after the repeated key: serde_json's position is the
                // place, and the pointer names the key (its first occurrence).
                pointer = crate::source::join_token(&pointer, key);
                Some(text.original_offset(json_offset))
            } else {
                // For JSON the original offset is `json_offset` itself.
                text.locate_pointer(&pointer).or(Some(text.original_offset(json_offset)))
            };
            let rule = if duplicate.is_some() { &rules::DUPLICATE_KEY } else { &rules::INVALID_FIELD };
            let field = pointer.rsplit('/').next().filter(|t| !t.is_empty() && duplicate.is_none());
            let message = match field {
                Some(f) if !f.bytes().all(|b| b.is_ascii_digit()) => format!("`{f}`: {message}"),
                _ => message,
            };
            LoadError::new(rule, message, Location::new(id, pointer, offset))
        }
    }
}

/// The JSON pointer of a number serde_json cannot hold, or of nesting beyond its limit: these
/// fail in any value, read or not, so the path is taken over the plain JSON structure.
fn path_of_structure(json: &str) -> Option<String> {
    let mut de = serde_json::Deserializer::from_str(json);
    let err = serde_path_to_error::deserialize::<_, Structure>(&mut de).err()?;
    Some(pointer_of(err.path()))
}

/// Any JSON value, read for its structure only: keys as strings (so that the path records
/// them), nothing kept.
struct Structure;

impl<'de> Deserialize<'de> for Structure {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Structure;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Structure, E> {
                Ok(Structure)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Structure, E> {
                Ok(Structure)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Structure, E> {
                Ok(Structure)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Structure, E> {
                Ok(Structure)
            }
            fn visit_str<E>(self, _: &str) -> Result<Structure, E> {
                Ok(Structure)
            }
            fn visit_unit<E>(self) -> Result<Structure, E> {
                Ok(Structure)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Structure, A::Error> {
                while a.next_element::<Structure>()?.is_some() {}
                Ok(Structure)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Structure, A::Error> {
                while a.next_key::<std::borrow::Cow<'de, str>>()?.is_some() {
                    a.next_value::<Structure>()?;
                }
                Ok(Structure)
            }
        }
        d.deserialize_any(V)
    }
}

fn pointer_of(path: &serde_path_to_error::Path) -> String {
    let mut pointer = Pointer::root();
    for seg in path.iter() {
        use serde_path_to_error::Segment;
        match seg {
            Segment::Seq { index } => pointer.push_index(*index),
            Segment::Map { key } => pointer.push(key),
            Segment::Enum { variant } => pointer.push(variant),
            Segment::Unknown => &mut pointer,
        };
    }
    pointer.into_string()
}

/// `NaN`, `Infinity` or `-Infinity` at (or, for `-Infinity`, one byte before) a syntax error.
fn non_finite_token(json: &str, offset: usize) -> Option<&'static str> {
    let at = |o: usize| json.get(o..).unwrap_or("");
    if at(offset.saturating_sub(1)).starts_with("-Infinity") {
        return Some("-Infinity");
    }
    ["NaN", "Infinity", "-Infinity"].into_iter().find(|t| at(offset).starts_with(t))
}

/// A message with any quoted input text in it (serde's `invalid type: string "..."`) cut to a
/// readable length: a 10 MB string in the wrong place must not become a 10 MB message.
fn shorten_quoted(message: &str) -> String {
    const KEEP: usize = 60;
    let (Some(open), Some(close)) = (message.find(" \""), message.rfind("\", ")) else {
        return message.to_owned();
    };
    let inner = &message[open + 2..close.max(open + 2)];
    if inner.chars().count() <= KEEP {
        return message.to_owned();
    }
    let cut = inner.char_indices().nth(KEEP).map_or(inner.len(), |(i, _)| i);
    format!("{}{}...{}", &message[..open + 2], &inner[..cut], &message[close..])
}

/// serde_json's message without its " at line L column C" suffix (xdsck shows the place itself).
fn strip_position(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).unwrap_or(&full).to_owned()
}

fn template_error(location: Location) -> LoadError {
    LoadError::new(
        &rules::TEMPLATE,
        "this is a Helm/Go template (it contains `{{ ... }}` actions), not rendered configuration",
        location,
    )
    .note("render it first, e.g. `helm template ... | xdsck -`, or check the running proxy with `xdsck attach`")
}

/// A line whose first non-blank characters are `{{`: a template action standing alone, which no
/// YAML document contains outside a block scalar.
fn template_action_line(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("{{") {
            return Some(offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    None
}

/// The first byte that is not whitespace and not inside a `#` comment line, with its offset.
fn first_significant(text: &str) -> Option<(usize, u8)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b => return Some((i, b)),
        }
    }
    None
}

// Lists are read in parts only where there are cores to read them (the CLI's build).
#[cfg(all(test, feature = "parallel"))]
mod tests {
    use super::*;

    /// A listener of `n` chains (over a megabyte: read in parts), with what the schema refuses
    /// or notes sprinkled over them, deep inside typed configs too.
    fn listener(n: usize, repeat_at: Option<usize>, nested_at: Option<usize>) -> String {
        let chains: Vec<String> = (0..n)
            .map(|i| {
                let tls = r#""transport_socket": {"name": "tls", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext", "common_tls_context": {"alpn_protocols": ["h2"]}}}"#;
                let proxy = |extra: &str| {
                    format!(
                        r#"{{"name": "envoy.filters.network.tcp_proxy", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy", "stat_prefix": "s{i}", "cluster": "c"{extra}}}}}"#
                    )
                };
                match i % 11 {
                    _ if Some(i) == repeat_at => format!(r#"{{"name": "c{i}", "name": "again"}}"#),
                    _ if Some(i) == nested_at => format!(r#"[{{"name": "c{i}"}}, {{"name": "d{i}"}}]"#),
                    _ if i % 997 == 5 => "null".to_owned(),
                    1 => format!(r#"{{"name": "c{i}", "filter_chain_match": {{"destination_port": 70000}}, "filters": [{}]}}"#, proxy("")),
                    2 => format!(r#"{{"name": "c{i}", "filters": [{}], {tls}}}"#, proxy(r#", "idle_timeout": 5"#)),
                    3 => format!(r#"{{"na\u006de": "c{i}", "tyepd_config": {{}}, "filters": [{}]}}"#, proxy(r#", "stat_prefix": """#)),
                    4 => format!(r#"{{"name": "c{i}", "filter_chain_match": {{"transport_protocol": "tls", "server_names": ["a{i}.example.com"]}}, "filters": [{}], {tls}}}"#, proxy(r#", "access_log": [{"name": ""}]"#)),
                    _ => format!(r#"{{"name": "c{i}", "filter_chain_match": {{"server_names": ["n{i}.example.com"]}}, "filters": [{}]}}"#, proxy("")),
                }
            })
            .collect();
        format!(
            r#"{{"name": "l", "address": {{"socket_address": {{"address": "0.0.0.0", "port_value": 443}}}}, "filter_chains": [{}]}}"#,
            chains.join(",\n")
        )
    }

    /// The listener, its problems and the objects giving a field twice, read by one walk
    /// (`split`: the one that reads long lists in parts).
    fn read(json: &str, split: bool) -> (String, String, Vec<String>, usize) {
        read_as(json, split, |obj, table| vec![obj.into_listener(String::new(), table)])
    }

    /// As [`read`], what `listeners` takes from what was read.
    fn read_as<'a, T: std::fmt::Debug>(
        json: &'a str,
        split: bool,
        listeners: impl FnOnce(raw::RawObject<'a>, &mut Vec<raw::PartList<'a>>) -> T,
    ) -> (String, String, Vec<String>, usize) {
        let _scope = protojson::ParseScope::new(json);
        let (kind, typed) = envoy_json::root_of(json);
        let walk = envoy_json::Walk::new(json, kind.mode());
        let walk = if split { walk.splitting(raw::read_part, 0) } else { walk };
        let Ok(obj) = read_with(&walk, json, &Place::default(), Root { kind, typed }) else { panic!("not read") };
        let mut table = walk.take_split();
        let parts = table.len();
        let mut repeated: Vec<String> = walk.take_repeated().iter().map(|r| format!("{r:?}")).collect();
        repeated.sort();
        let problems = walk.into_problems();
        let listeners = listeners(obj, &mut table);
        (format!("{listeners:?}"), format!("{problems:#?}"), repeated, parts)
    }

    #[test]
    fn a_chain_list_read_in_parts_is_the_list_read_in_order() {
        // The third: a nested list far into the list, after parts were handed out.
        for (repeat_at, nested_at) in [(None, None), (Some(3001), None), (None, Some(3500))] {
            let json = listener(4000, repeat_at, nested_at);
            assert!(json.len() > 1 << 20, "{} bytes: not read in parts", json.len());
            let (whole, whole_problems, whole_repeated, unsplit) = read(&json, false);
            let (parts, parts_problems, parts_repeated, split) = read(&json, true);
            assert_eq!((unsplit, split), (0, 1));
            assert!(whole_problems.matches("kind:").count() > 1000, "{whole_problems}");
            assert_eq!(whole_problems, parts_problems);
            assert_eq!(whole_repeated, parts_repeated);
            // Case 3 gives `stat_prefix` twice; `repeat_at`, `name`.
            assert_eq!(whole_repeated.len(), 364 + usize::from(repeat_at.is_some()));
            assert_eq!(whole, parts);
        }
    }

    /// A bootstrap of `n` short listeners (each with the chains of [`listener`]'s variety and
    /// a refused field of its own here and there), with a long one (a chain list read in parts
    /// itself) at `long_at`.
    fn bootstrap(n: usize, long_at: Option<usize>, repeat_at: Option<usize>) -> String {
        let short = listener(11, None, None);
        let listeners: Vec<String> = (0..n)
            .map(|i| match i {
                _ if Some(i) == long_at => listener(4000, None, None),
                _ if Some(i) == repeat_at => short.replacen(r#""name": "l""#, r#""name": "l", "name": "again""#, 1),
                _ if i % 37 == 9 => "null".to_owned(),
                _ if i % 7 == 3 => short.replacen(r#""name": "l""#, r#""name": "l", "lisener_filters": []"#, 1),
                _ => short.replacen(r#""name": "l""#, &format!(r#""name": "l{i}""#), 1),
            })
            .collect();
        format!(r#"{{"static_resources": {{"listeners": [{}]}}}}"#, listeners.join(",\n"))
    }

    fn bootstrap_listeners<'a>(
        obj: raw::RawObject<'a>,
        table: &mut Vec<raw::PartList<'a>>,
    ) -> Vec<crate::model::Listener<'a>> {
        let listeners = obj.static_resources.and_then(|r| r.listeners).map(|l| l.take(table)).unwrap_or_default();
        listeners.into_iter().map(|l| l.into_listener(String::new(), table)).collect()
    }

    #[test]
    fn a_listener_list_read_in_parts_is_the_list_read_in_order() {
        // A long listener first: the list is read in order, each chain list by the splitting
        // walk (a short one too: found, then read on this thread), so 291 short listeners (8
        // of the 300 are `null`) and the long one give a list each; in the middle: read on the
        // thread that finds the parts, its chains in parts (two lists: its chains, the list).
        for (long_at, repeat_at, lists) in
            [(None, None, 1), (None, Some(150), 1), (Some(0), None, 292), (Some(120), None, 2)]
        {
            let json = bootstrap(300, long_at, repeat_at);
            let (whole, whole_problems, whole_repeated, unsplit) = read_as(&json, false, bootstrap_listeners);
            let (parts, parts_problems, parts_repeated, split) = read_as(&json, true, bootstrap_listeners);
            assert_eq!((unsplit, split), (0, lists));
            assert!(whole_problems.matches("kind:").count() > 1000, "{whole_problems}");
            assert!(whole_problems.contains("lisener_filters"));
            assert_eq!(whole_problems, parts_problems);
            assert_eq!(whole_repeated, parts_repeated);
            // A chain of each short listener gives `stat_prefix` twice; `repeat_at`, `name`.
            assert!(whole_repeated.len() >= 291 + usize::from(repeat_at.is_some()), "{whole_repeated:?}");
            assert_eq!(whole, parts);
        }
    }

    /// A bootstrap of `n` clusters (over a megabyte) with what the schema refuses or notes
    /// sprinkled over them: unknown fields, bad enums and durations, endpoint lists, `null`s, a
    /// field given twice at `repeat_at`, a nested list at `nested_at`.
    fn cluster_bootstrap(n: usize, repeat_at: Option<usize>, nested_at: Option<usize>) -> String {
        let clusters: Vec<String> = (0..n)
            .map(|i| {
                let endpoints = |port: u64| {
                    format!(
                        r#""load_assignment": {{"cluster_name": "c{i}", "endpoints": [{{"lb_endpoints": [{{"endpoint": {{"address": {{"socket_address": {{"address": "10.0.0.{}", "port_value": {port}}}}}}}}}]}}]}}"#,
                        i % 250
                    )
                };
                match i % 7 {
                    _ if Some(i) == repeat_at => format!(r#"{{"name": "c{i}", "name": "again"}}"#),
                    _ if Some(i) == nested_at => format!(r#"[{{"name": "c{i}"}}, {{"name": "d{i}"}}]"#),
                    _ if i % 997 == 5 => "null".to_owned(),
                    1 => format!(r#"{{"name": "c{i}", "type": "STATIK", {}}}"#, endpoints(8080)),
                    2 => format!(r#"{{"name": "c{i}", "connect_timeout": "-1s", {}}}"#, endpoints(70000)),
                    3 => format!(r#"{{"nmae": "c{i}", "lb_policy": "MAGLEV", {}}}"#, endpoints(80)),
                    _ => format!(r#"{{"name": "c{i}", "type": "STATIC", "connect_timeout": "5s", {}}}"#, endpoints(8080)),
                }
            })
            .collect();
        format!(r#"{{"static_resources": {{"clusters": [{}]}}}}"#, clusters.join(",\n"))
    }

    fn bootstrap_clusters<'a>(
        obj: raw::RawObject<'a>,
        table: &mut Vec<raw::PartList<'a>>,
    ) -> Vec<raw::BuiltCluster<'a>> {
        obj.static_resources.and_then(|r| r.clusters).map(|l| l.take(table)).unwrap_or_default()
    }

    #[test]
    fn a_cluster_list_read_in_parts_is_the_list_read_in_order() {
        for (repeat_at, nested_at, lists) in [(None, None, 1), (Some(2001), None, 1), (None, Some(2500), 1)] {
            let json = cluster_bootstrap(3000, repeat_at, nested_at);
            assert!(json.len() > 1 << 19, "{} bytes: not read in parts", json.len());
            let (whole, whole_problems, whole_repeated, unsplit) = read_as(&json, false, bootstrap_clusters);
            let (parts, parts_problems, parts_repeated, split) = read_as(&json, true, bootstrap_clusters);
            assert_eq!((unsplit, split), (0, lists));
            assert!(whole_problems.matches("kind:").count() > 1000, "{whole_problems}");
            assert!(whole_problems.contains("nmae") && whole_problems.contains("STATIK"), "{whole_problems}");
            assert_eq!(whole_problems, parts_problems);
            assert_eq!(whole_repeated, parts_repeated);
            assert_eq!(whole_repeated.len(), usize::from(repeat_at.is_some()));
            assert!(whole.contains(r#""c2997""#) && whole.matches("port_value: Some(70000)").count() > 400);
            assert_eq!(whole, parts);
        }
    }
}
