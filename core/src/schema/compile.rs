//! The schema compiled from the descriptors (the `compile` feature: `xdsck-schema-gen`, which
//! writes `core/schema/schema.postcard`, and its test that the file is current). A run reads that
//! file and never comes here.

use prost_reflect::{Cardinality, DescriptorPool, ExtensionDescriptor, Kind as PKind, MessageDescriptor};
use rustc_hash::FxHashMap;

use super::{
    Card, Enum, EnumId, ExtensionSlots, Extensions, Field, FieldRules, Kind, Message, MsgId, Oneof, Requirement,
    Schema, Wkt, descriptors, lower_camel_case, pgv_camel_case, rules, schema_file,
};

/// What Envoy says of a virtual cluster without `headers` (route config validation, not PGV).
const VIRTUAL_CLUSTER_HEADERS: &str = "virtual clusters must define 'headers'";

/// What Envoy says of a weighted cluster that names no cluster (route table build, not PGV).
const CLUSTER_WEIGHT_NAME: &str = "At least one of name or cluster_header need to be specified";

/// What Envoy says of a weighted cluster without a weight (route table build, not PGV). Envoy
/// follows it with the message's protobuf debug string, which xdsck does not reproduce.
const CLUSTER_WEIGHT_WEIGHT: &str = "Field 'weight' is missing in: ";

/// Fields of which at least one is to be given and not empty, with what Envoy says otherwise.
type Group = (&'static [&'static str], &'static str);

/// What Envoy's own code (not PGV) requires of a message once it is parsed, by message.
const ENVOY_REQUIRES: &[(&str, &[Group])] = &[
    ("envoy.config.route.v3.VirtualCluster", &[(&["headers"], VIRTUAL_CLUSTER_HEADERS)]),
    (
        "envoy.config.route.v3.WeightedCluster.ClusterWeight",
        &[(&["name", "cluster_header"], CLUSTER_WEIGHT_NAME), (&["weight"], CLUSTER_WEIGHT_WEIGHT)],
    ),
];

impl Schema {
    /// Compiles the schema from a descriptor set and the two tables of `core/schema/`: the
    /// extension registry (`extensions.tsv`) and the slots' categories (`categories.tsv`). The
    /// schema borrows the tables' names, so they live as long as the program.
    pub fn compile(
        descriptors: &[u8],
        extensions: &'static str,
        categories: &'static str,
    ) -> Result<Schema, prost_reflect::DescriptorError> {
        Ok(Schema::compile_pool(&DescriptorPool::decode(descriptors)?, Extensions::parse(extensions), categories))
    }

    /// The schema compiled from the descriptors and tables embedded in this build, as
    /// `core/schema/schema.postcard` is to be.
    pub fn compile_embedded() -> Schema {
        let text = |bytes: &'static [u8]| std::str::from_utf8(bytes).expect("core/schema/'s tables are UTF-8");
        let extensions = text(schema_file!("extensions.tsv"));
        let categories = text(schema_file!("categories.tsv"));
        Schema::compile(descriptors(), extensions, categories).expect("core/schema/envoy.binpb decodes")
    }

    /// The bytes of `core/schema/schema.postcard`.
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("the schema's types all serialize")
    }

    fn compile_pool(pool: &DescriptorPool, extensions: Extensions, categories: &'static str) -> Schema {
        let all: Vec<MessageDescriptor> = pool.all_messages().collect();
        let by_name: FxHashMap<Box<str>, MsgId> =
            all.iter().enumerate().map(|(i, m)| (m.full_name().into(), MsgId(i as u32))).collect();
        let enums_desc: Vec<_> = pool.all_enums().collect();
        let enum_ids: FxHashMap<String, EnumId> =
            enums_desc.iter().enumerate().map(|(i, e)| (e.full_name().to_owned(), EnumId(i as u32))).collect();
        let ext = |name: &str| pool.get_extension_by_name(name);
        let exts = Exts {
            rules: ext("validate.rules"),
            disabled: ext("validate.disabled"),
            ignored: ext("validate.ignored"),
            required: ext("validate.required"),
        };
        let kind_of = |k: &PKind| -> Kind {
            match k {
                PKind::Double => Kind::Double,
                PKind::Float => Kind::Float,
                PKind::Int64 => Kind::Int64,
                PKind::Uint64 => Kind::UInt64,
                PKind::Int32 => Kind::Int32,
                PKind::Fixed64 => Kind::Fixed64,
                PKind::Fixed32 => Kind::Fixed32,
                PKind::Bool => Kind::Bool,
                PKind::String => Kind::String,
                PKind::Bytes => Kind::Bytes,
                PKind::Uint32 => Kind::UInt32,
                PKind::Sfixed32 => Kind::SFixed32,
                PKind::Sfixed64 => Kind::SFixed64,
                PKind::Sint32 => Kind::SInt32,
                PKind::Sint64 => Kind::SInt64,
                PKind::Enum(e) => Kind::Enum(enum_ids[e.full_name()]),
                PKind::Message(m) => Kind::Message(by_name[m.full_name()]),
            }
        };
        let enums: Vec<Enum> = enums_desc
            .iter()
            .map(|e| Enum {
                full_name: e.full_name().into(),
                values: e.values().map(|v| (Box::from(v.name()), v.number())).collect(),
                is_null_value: e.full_name() == "google.protobuf.NullValue",
            })
            .collect();
        let any_id = by_name.get("google.protobuf.Any").copied();
        let categories = slot_categories(&extensions, categories);
        let mut messages: Vec<Message> =
            all.iter().map(|m| compile_message(m, &exts, &kind_of, any_id, &categories)).collect();
        let mut by_type: FxHashMap<&str, Vec<&'static str>> = FxHashMap::default();
        for (category, t) in extensions.typed() {
            by_type.entry(t).or_default().push(category);
        }
        for m in &mut messages {
            if let Some(cats) = by_type.get_mut(&*m.full_name) {
                cats.sort_unstable();
                m.factory_categories = cats.clone().into_boxed_slice();
            }
        }
        // An enum field's rules against 0, the value it has when left out (this needs the enum).
        for m in &mut messages {
            if &*m.full_name == "envoy.type.matcher.v3.RegexMatcher" {
                for f in &mut m.fields {
                    if &*f.name == "regex"
                        && let Some(rules::KindRules::String(r)) = f.rules.as_deref_mut().and_then(|r| r.kind.as_mut())
                    {
                        r.re2 = true;
                    }
                }
            }
            if let Some((_, groups)) = ENVOY_REQUIRES.iter().find(|(name, _)| *name == &*m.full_name) {
                m.envoy_requires = groups
                    .iter()
                    .map(|(names, text)| Requirement {
                        fields: (m.fields.iter().enumerate())
                            .filter(|(_, f)| names.contains(&&*f.name))
                            .map(|(i, _)| i as u16)
                            .collect(),
                        text,
                    })
                    .collect();
            }
            for f in &mut m.fields {
                if let (Kind::Enum(e), Some(r)) = (f.kind, f.rules.as_deref_mut())
                    && let Some(rules::KindRules::Enum(er)) = &r.kind
                {
                    let en: &Enum = &enums[e.0 as usize];
                    r.enum_absent = er.check(
                        0,
                        |v| en.is_defined(v),
                        |v| en.name_of(v).map_or_else(|| v.to_string(), str::to_owned),
                    );
                }
            }
            let fields = &m.fields;
            let enum_checks = (0..fields.len())
                .filter(|&i| fields[i].oneof.is_none() && !fields[i].optional && fields[i].card == Card::Single)
                .filter(|&i| fields[i].rules.as_ref().is_some_and(|r| r.enum_absent.is_some()))
                .map(|i| i as u16);
            let mut checks: Vec<u16> = m.absent_checks.iter().copied().chain(enum_checks).collect();
            checks.sort_unstable();
            checks.dedup();
            m.absent_checks = checks.into_boxed_slice();
        }
        Schema { messages, enums, by_name, extensions }
    }
}

/// The annotated slots of `core/schema/categories.tsv`: `(message, field)` to categories. The
/// lists live as long as the program (the schema is built once).
///
/// A matcher's `input` is annotated with the common inputs only, but Envoy takes there the data
/// inputs of the matcher's context too (`envoy.matching.http.input` in an HTTP filter's matcher,
/// `envoy.matching.network.input` in a listener's), which the API cannot annotate: such a slot
/// takes every data-input category of the build.
fn slot_categories(
    extensions: &Extensions,
    slots: &'static str,
) -> FxHashMap<(&'static str, &'static str), Box<[&'static str]>> {
    let mut data_inputs: Vec<&'static str> =
        extensions.typed().map(|(c, _)| c).filter(|c| c.ends_with(".input") || c.ends_with("_inputs")).collect();
    data_inputs.sort_unstable();
    data_inputs.dedup();
    let inputs = |mut cats: Vec<&'static str>| -> Box<[&'static str]> {
        if cats.contains(&"envoy.matching.common_inputs") {
            cats.extend(data_inputs.iter().filter(|c| !cats.contains(c)).collect::<Vec<_>>());
        }
        cats.into_boxed_slice()
    };
    let mut out: FxHashMap<(&'static str, &'static str), Box<[&'static str]>> = slots
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut cols = l.split('\t');
            let (message, field, cats) = (cols.next()?, cols.next()?, cols.next()?);
            Some(((message, field), inputs(cats.split(',').collect())))
        })
        .collect();
    // A matcher tree's `input` is a data input as a predicate's is; the API annotates the
    // predicate's field only (Envoy 1.40 refuses any other type there: `cannot create a filter
    // chain matcher: Didn't find a registered implementation for 'port' with type URL: ...`).
    for tree in ["xds.type.matcher.v3.Matcher.MatcherTree", "envoy.config.common.matcher.v3.Matcher.MatcherTree"] {
        out.entry((tree, "input")).or_insert_with(|| inputs(vec!["envoy.matching.common_inputs"]));
    }
    out
}

/// The PGV option extensions, when the descriptors declare them.
struct Exts {
    rules: Option<ExtensionDescriptor>,
    disabled: Option<ExtensionDescriptor>,
    ignored: Option<ExtensionDescriptor>,
    required: Option<ExtensionDescriptor>,
}

/// Whether `fields` are an extension wrapper's: a string `name` and an Any `typed_config`.
fn extension_slots(fields: &[Field], any: Option<MsgId>) -> Option<ExtensionSlots> {
    let find = |name: &str| fields.iter().position(|f| &*f.name == name && f.card == Card::Single).map(|i| i as u16);
    let name = find("name").filter(|&i| fields[usize::from(i)].kind == Kind::String)?;
    let typed_config = find("typed_config").filter(|&i| Some(fields[usize::from(i)].kind) == any.map(Kind::Message))?;
    let optional = find("is_optional").filter(|&i| fields[usize::from(i)].kind == Kind::Bool);
    let typed_config_required = fields[usize::from(typed_config)]
        .rules
        .as_ref()
        .is_some_and(|r| r.message.required || matches!(&r.kind, Some(rules::KindRules::Any(a)) if a.required));
    Some(ExtensionSlots { name, typed_config, optional, typed_config_required })
}

fn compile_message(
    m: &MessageDescriptor,
    exts: &Exts,
    kind_of: &dyn Fn(&PKind) -> Kind,
    any_id: Option<MsgId>,
    categories: &FxHashMap<(&str, &str), Box<[&'static str]>>,
) -> Message {
    let flag = |ext: &Option<ExtensionDescriptor>| {
        ext.as_ref().is_some_and(|e| m.options().get_extension(e).as_bool() == Some(true))
    };
    let pgv_disabled = flag(&exts.disabled) || flag(&exts.ignored);
    // Real oneofs get indices; synthetic ones (proto3 `optional`) mark their field optional.
    let mut oneof_index = FxHashMap::default();
    let mut oneofs = Vec::new();
    for o in m.oneofs() {
        if o.is_synthetic() {
            continue;
        }
        let required = exts.required.as_ref().is_some_and(|e| o.options().get_extension(e).as_bool() == Some(true));
        oneof_index.insert(o.name().to_owned(), oneofs.len() as u16);
        oneofs.push(Oneof { name: o.name().into(), required });
    }
    let mut fields = Vec::new();
    for f in m.fields() {
        let card = if f.is_map() {
            match f.kind() {
                PKind::Message(entry) => match kind_of(&PKind::Message(entry)) {
                    Kind::Message(id) => Card::Map(id),
                    _ => Card::Repeated,
                },
                _ => Card::Repeated,
            }
        } else if f.cardinality() == Cardinality::Repeated {
            Card::Repeated
        } else {
            Card::Single
        };
        let containing = f.containing_oneof();
        let optional = containing.as_ref().is_some_and(|o| o.is_synthetic());
        let oneof = containing.filter(|o| !o.is_synthetic()).map(|o| oneof_index[o.name()]);
        let options = f.options();
        let rules = exts.rules.as_ref().and_then(|e| {
            options
                .has_extension(e)
                .then(|| options.get_extension(e))
                .and_then(|v| v.as_message().map(FieldRules::compile))
        });
        let deprecated = options.get_field_by_name("deprecated").and_then(|v| v.as_bool()) == Some(true);
        fields.push(Field {
            name: f.name().into(),
            pgv_name: pgv_camel_case(f.name()).into(),
            number: f.number(),
            kind: kind_of(&f.kind()),
            card,
            oneof,
            optional,
            rules: rules.map(Box::new),
            deprecated,
            categories: categories.get(&(m.full_name(), f.name())).cloned().unwrap_or_default(),
            type_kind: match f.kind() {
                _ if f.is_map() => "message",
                PKind::Message(_) => "message",
                PKind::Enum(_) => "enum",
                k => kind_of(&k).type_name(),
            },
            type_name: match f.kind() {
                PKind::Message(t) => t.full_name().into(),
                PKind::Enum(e) => e.full_name().into(),
                _ => "".into(),
            },
            recorded: m.full_name() == "envoy.admin.v3.UpdateFailureState" && f.name() == "failed_configuration",
            per_filter_config: f.name() == "typed_per_filter_config"
                && m.full_name().starts_with("envoy.config.route.v3."),
        });
    }
    let mut keys = FxHashMap::default();
    // protobuf's parser tries the lowerCamelCase name first, then the proto name, then the JSON
    // name: the first field a key names wins.
    for (i, f) in fields.iter().enumerate() {
        keys.entry(lower_camel_case(&f.name).into()).or_insert(i as u16);
    }
    for (i, f) in fields.iter().enumerate() {
        keys.entry(f.name.clone()).or_insert(i as u16);
    }
    for (i, f) in m.fields().enumerate() {
        keys.entry(f.json_name().into()).or_insert(i as u16);
    }
    let absent_checks = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.rules.as_ref().is_some_and(|r| r.can_fail_absent(f)))
        .map(|(i, _)| i as u16)
        .collect();
    let extension = extension_slots(&fields, any_id);
    Message {
        full_name: m.full_name().into(),
        name: m.name().into(),
        extension,
        factory_categories: Box::default(),
        envoy_requires: Box::default(),
        fields: fields.into(),
        oneofs: oneofs.into(),
        wkt: Wkt::of(m.full_name()),
        map_entry: m.is_map_entry(),
        pgv_disabled,
        absent_checks,
        keys,
    }
}
