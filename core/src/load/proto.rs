//! Protobuf xDS (what `xdsck attach grpc://…` receives) as the proto3 JSON the loaders read.
//! Behind the `proto` feature.
//!
//! A protobuf input is not modelled on its own: it is transcoded once into the JSON of a
//! DiscoveryResponse, field names as Envoy's config_dump spells them, and that text is what
//! xdsck reads, checks and shows — the same reader, the same schema checks, the same route
//! tables as a JSON input, and snippets a person can read. The messages are decoded with
//! Envoy's own descriptors (`crate::schema`), so every field Envoy 1.40 knows is carried over.
//!
//! What the JSON cannot say is spelled so that the reader reports it where it is:
//! - a field number the descriptors do not have becomes the key `"<number>"` with a `null`
//!   value: no field is named with a digit, so the reader reports it as an unknown field, which
//!   Envoy ignores in xDS (`XDS215`);
//! - an Any whose type the descriptors do not have keeps its `@type` and loses its body: the
//!   reader reports it as it reports that type in JSON.
//!
//! Bytes that do not decode as the message they claim to be make the whole response unreadable
//! (`XDS006`, at the resource): Envoy rejects such an update as a whole too.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value,
};
use serde_json::{Map, Value as Json};

use super::{LoadError, rules};
use crate::schema::Wkt;
use crate::source::{Location, SourceFile, SourceId, Sources};

const DISCOVERY_RESPONSE: &str = "envoy.service.discovery.v3.DiscoveryResponse";

/// Envoy's descriptor pool, decoded on first use (the compiled [`crate::schema::Schema`] keeps
/// what validation needs, not the pool).
fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(crate::schema::descriptors()).expect("core/schema/envoy.binpb decodes"))
}

/// One resource of a response: its Any's type URL and bytes.
#[derive(Debug, Clone, Copy)]
pub struct Resource<'b> {
    /// The Any's `type_url`: which message the bytes are.
    pub type_url: &'b str,
    /// The Any's `value`: the encoded message.
    pub value: &'b [u8],
}

/// Adds the JSON of a DiscoveryResponse's parts to `sources` as input `name`. On an
/// undecodable resource the input is added with no text and the error is located in it.
pub fn add_response(
    sources: &mut Sources,
    name: &str,
    version_info: &str,
    type_url: &str,
    resources: &[Resource<'_>],
) -> Result<SourceId, LoadError> {
    let mut t = Transcoder { path: Vec::new() };
    let text = t.response(version_info, type_url, resources).map(|v| pretty(&v));
    added(sources, name, text)
}

/// One DiscoveryResponse's parts, for [`add_responses`].
#[derive(Debug, Clone, Copy)]
pub struct ResponseParts<'b> {
    /// `version_info` (a delta subscription's held state: its `system_version_info`).
    pub version_info: &'b str,
    /// The type of every resource in it.
    pub type_url: &'b str,
    /// Its resources.
    pub resources: &'b [Resource<'b>],
}

/// Adds several DiscoveryResponses of one Envoy (its LDS, RDS and CDS answers) as one input
/// `name`: a JSON list of them, which xdsck reads as one Envoy's, so their route tables and
/// clusters meet their listeners — what `attach` checks and `attach --save` writes. On an
/// undecodable resource the input is added with no text and the error is located in it.
pub fn add_responses(
    sources: &mut Sources,
    name: &str,
    responses: &[ResponseParts<'_>],
) -> Result<SourceId, LoadError> {
    let mut t = Transcoder { path: Vec::new() };
    let mut list = Vec::with_capacity(responses.len());
    let mut failed = None;
    for (i, r) in responses.iter().enumerate() {
        t.path.push(i.to_string());
        match t.response(r.version_info, r.type_url, r.resources) {
            Ok(v) => list.push(v),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
        t.path.pop();
    }
    let text = match failed {
        Some(e) => Err(e),
        None => Ok(pretty(&Json::Array(list))),
    };
    added(sources, name, text)
}

/// Adds the transcoded text, or the located failure with no text.
fn added(sources: &mut Sources, name: &str, text: Result<String, Failure>) -> Result<SourceId, LoadError> {
    match text {
        Ok(text) => Ok(sources.add(SourceFile::new(name, text))),
        Err((pointer, message)) => {
            let id = sources.add(SourceFile::new(name, String::new()));
            Err(LoadError::new(&rules::INVALID_FIELD, message, Location::new(id, pointer, None)))
        }
    }
}

/// Adds an encoded DiscoveryResponse to `sources` as input `name` (the fuzz target's entry).
pub fn add_discovery_response(sources: &mut Sources, name: &str, bytes: &[u8]) -> Result<SourceId, LoadError> {
    let desc = pool().get_message_by_name(DISCOVERY_RESPONSE).expect("Envoy's schema has DiscoveryResponse");
    let decoded = DynamicMessage::decode(desc, bytes);
    let text =
        decoded.as_ref().map_err(|e| ("".to_owned(), format!("not a DiscoveryResponse protobuf: {e}"))).and_then(|m| {
            let mut t = Transcoder { path: Vec::new() };
            t.message(m).map(|v| pretty(&v))
        });
    match text {
        Ok(text) => Ok(sources.add(SourceFile::new(name, text))),
        Err((pointer, message)) => {
            let id = sources.add(SourceFile::new(name, String::new()));
            Err(LoadError::new(&rules::INVALID_FIELD, message, Location::new(id, pointer, None)))
        }
    }
}

fn pretty(v: &Json) -> String {
    serde_json::to_string_pretty(v).expect("a JSON value prints")
}

/// A failure: the JSON pointer of the value and what is wrong.
type Failure = (String, String);

/// Walks decoded messages into JSON, knowing where it is for the errors it reports.
struct Transcoder {
    path: Vec<String>,
}

impl Transcoder {
    fn pointer(&self) -> String {
        self.path.iter().map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1"))).collect()
    }

    fn fail(&self, message: String) -> Failure {
        (self.pointer(), message)
    }

    /// A DiscoveryResponse's JSON: `version_info`, `type_url`, `resources`.
    fn response(&mut self, version_info: &str, type_url: &str, resources: &[Resource<'_>]) -> Result<Json, Failure> {
        self.path.push("resources".to_owned());
        let mut list = Vec::with_capacity(resources.len());
        for (i, r) in resources.iter().enumerate() {
            self.path.push(i.to_string());
            list.push(self.any(r.type_url, r.value)?);
            self.path.pop();
        }
        self.path.pop();
        let mut root = Map::new();
        root.insert("version_info".to_owned(), Json::String(version_info.to_owned()));
        root.insert("type_url".to_owned(), Json::String(type_url.to_owned()));
        root.insert("resources".to_owned(), Json::Array(list));
        Ok(Json::Object(root))
    }

    /// An Any: `@type` and the fields of its payload, or `value` for a well-known payload.
    fn any(&mut self, type_url: &str, value: &[u8]) -> Result<Json, Failure> {
        let mut out = Map::new();
        out.insert("@type".to_owned(), Json::String(type_url.to_owned()));
        let name = type_url.rsplit('/').next().unwrap_or(type_url);
        let Some(desc) = pool().get_message_by_name(name) else {
            // Not in Envoy's schema: the reader reports the type as it does in JSON.
            return Ok(Json::Object(out));
        };
        let payload = DynamicMessage::decode(desc.clone(), value)
            .map_err(|e| self.fail(format!("the {name} in this Any does not decode: {e}")))?;
        match self.message(&payload)? {
            // An Any's own payload is written as `value` too, or its `@type` would be lost.
            Json::Object(fields) if !is_well_known(&desc) && desc.full_name() != "google.protobuf.Any" => {
                out.extend(fields)
            }
            v => {
                out.insert("value".to_owned(), v);
            }
        }
        Ok(Json::Object(out))
    }

    fn message(&mut self, m: &DynamicMessage) -> Result<Json, Failure> {
        let desc = m.descriptor();
        if desc.full_name() == "google.protobuf.Any" {
            let url = m.get_field_by_name("type_url").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            let bytes = m.get_field_by_name("value").and_then(|v| v.as_bytes().cloned()).unwrap_or_default();
            return self.any(&url, &bytes);
        }
        if is_well_known(&desc) {
            // No Any inside these: prost-reflect's proto3 JSON is theirs.
            return serde_json::to_value(m).map_err(|e| self.fail(format!("{}: {e}", desc.full_name())));
        }
        let mut out = Map::new();
        for (field, value) in m.fields() {
            self.path.push(field.name().to_owned());
            let v = self.value(&field, value)?;
            self.path.pop();
            out.insert(field.name().to_owned(), v);
        }
        for unknown in m.unknown_fields() {
            out.insert(unknown.number().to_string(), Json::Null);
        }
        Ok(Json::Object(out))
    }

    fn value(&mut self, field: &FieldDescriptor, value: &Value) -> Result<Json, Failure> {
        match value {
            Value::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.path.push(i.to_string());
                    out.push(self.single(&field.kind(), item)?);
                    self.path.pop();
                }
                Ok(Json::Array(out))
            }
            Value::Map(entries) => {
                let value_kind = match field.kind() {
                    Kind::Message(entry) => entry.map_entry_value_field().kind(),
                    k => k,
                };
                // Sorted: a HashMap has no order, the output must have one.
                let sorted: BTreeMap<String, &Value> = entries.iter().map(|(k, v)| (map_key(k), v)).collect();
                let mut out = Map::new();
                for (k, v) in sorted {
                    self.path.push(k.clone());
                    let j = self.single(&value_kind, v)?;
                    self.path.pop();
                    out.insert(k, j);
                }
                Ok(Json::Object(out))
            }
            v => self.single(&field.kind(), v),
        }
    }

    fn single(&mut self, kind: &Kind, value: &Value) -> Result<Json, Failure> {
        Ok(match value {
            Value::Bool(b) => Json::Bool(*b),
            Value::I32(n) => Json::from(*n),
            Value::U32(n) => Json::from(*n),
            // proto3 JSON writes 64-bit integers as strings.
            Value::I64(n) => Json::String(n.to_string()),
            Value::U64(n) => Json::String(n.to_string()),
            Value::F32(f) => float(f64::from(*f)),
            Value::F64(f) => float(*f),
            Value::String(s) => Json::String(s.clone()),
            Value::Bytes(b) => Json::String(BASE64.encode(b)),
            Value::EnumNumber(n) => match kind {
                Kind::Enum(e) => e.get_value(*n).map_or_else(|| Json::from(*n), |v| Json::String(v.name().to_owned())),
                _ => Json::from(*n),
            },
            Value::Message(m) => self.message(m)?,
            Value::List(_) | Value::Map(_) => return Err(self.fail("a list inside a list".to_owned())),
        })
    }
}

fn float(f: f64) -> Json {
    if f.is_nan() {
        Json::String("NaN".to_owned())
    } else if f.is_infinite() {
        Json::String(if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned())
    } else {
        serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number)
    }
}

fn map_key(k: &MapKey) -> String {
    match k {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

/// The well-known types proto3 JSON writes in their own form (all but Any hold no Any); Empty
/// too, which the schema reads as an ordinary message (its form is `{}`).
fn is_well_known(desc: &MessageDescriptor) -> bool {
    let name = desc.full_name();
    !matches!(Wkt::of(name), Wkt::None | Wkt::Any | Wkt::TypedStruct) || name == "google.protobuf.Empty"
}
