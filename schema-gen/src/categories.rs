//! Which extension category each extension slot of the API takes, from the
//! `[#extension-category: ...]` annotations in the comments of envoy-types' .proto files.
//!
//! Envoy looks an extension's factory up by the type of its `typed_config` within the category
//! of the slot it sits in, so the category of a slot decides what may go there. The binary's
//! descriptors carry no comments (protoc leaves `source_code_info` out of what it embeds), so
//! the only machine-readable record of the categories is the API's .proto sources, which
//! envoy-types ships with their comments.
//!
//! The files are parsed, not compiled: protox's `Compiler` (through prost-reflect's name
//! resolution) rejects `envoy/extensions/clusters/dynamic_forward_proxy/v3/cluster.proto`, which
//! protoc accepts — it takes the package `envoy.extensions.clusters.common`, declared by a file
//! that `cluster.proto` only imports indirectly, as shadowing
//! `common.dynamic_forward_proxy.v3.DnsCacheConfig`, where protoc only counts packages its direct
//! imports declare. Compiling every file into one `Compiler` fails on 136 files that way. Nothing
//! here needs resolved types: a slot is named by its message's full name (package and nesting)
//! and its field's name, both of which the parser gives, with every comment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use prost_reflect::DescriptorPool;
use prost_types::{DescriptorProto, FileDescriptorProto};
use serde_json::Value;

use crate::Error;

/// The annotation's name, as Envoy's API docs tooling (`tools/api_proto_plugin/annotations.py`)
/// spells it.
pub const ANNOTATION: &str = "extension-category";

/// The folders under envoy-types' `proto/` that hold the API: `data-plane-api` holds `envoy/`,
/// `xds` holds `xds/` and `udpa/`. The others (googleapis, protoc-gen-validate, cel-spec,
/// opentelemetry-proto, client_model, ratelimit) are what the API imports or serves, and none
/// of them uses Envoy's annotations.
pub const API_ROOTS: [&str; 2] = ["data-plane-api", "xds"];

/// Where envoy-types keeps its .proto files, and which version it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvoyTypes {
    pub version: String,
    /// Its `proto/` folder.
    pub proto_dir: PathBuf,
}

/// The envoy-types the workspace depends on, as `cargo metadata` resolves it (its source is in
/// cargo's registry cache once the workspace has been built or fetched).
pub fn find_envoy_types(workspace: &Path) -> Result<EnvoyTypes, Error> {
    // `cargo run` and `cargo test` set CARGO to the cargo that runs them.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--manifest-path"])
        .arg(workspace.join("Cargo.toml"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::EnvoyTypes(format!("cannot run {}: {e}", cargo.to_string_lossy())))?;
    if !output.status.success() {
        return Err(Error::EnvoyTypes(format!(
            "cargo metadata failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    envoy_types_in_metadata(&output.stdout)
}

/// The one `envoy-types` package in `cargo metadata`'s JSON.
pub fn envoy_types_in_metadata(json: &[u8]) -> Result<EnvoyTypes, Error> {
    let metadata: Value =
        serde_json::from_slice(json).map_err(|e| Error::EnvoyTypes(format!("cargo metadata printed no JSON: {e}")))?;
    let packages = metadata["packages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let found: Vec<&Value> = packages.iter().filter(|p| p["name"] == "envoy-types").collect();
    let [package] = found.as_slice() else {
        return Err(Error::EnvoyTypes(format!(
            "the workspace resolves {} versions of envoy-types; exactly one was expected",
            found.len()
        )));
    };
    let field = |key: &str| {
        package[key].as_str().ok_or_else(|| Error::EnvoyTypes(format!("envoy-types has no {key} in cargo metadata")))
    };
    let version = field("version")?.to_owned();
    let manifest = Path::new(field("manifest_path")?);
    let proto_dir = manifest.parent().unwrap_or(Path::new("")).join("proto");
    Ok(EnvoyTypes { version, proto_dir })
}

/// One slot: a field of a message, and the categories its annotation names, as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Slot {
    /// Full name, e.g. `envoy.config.listener.v3.Filter`.
    pub message: String,
    pub field: String,
    pub categories: Vec<String>,
}

/// Every annotated slot of the API, sorted by message and field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Categories {
    /// The envoy-types version they came from.
    pub version: String,
    /// How many .proto files were read.
    pub files: usize,
    pub slots: Vec<Slot>,
    /// How many slots took their categories from the annotation of the oneof they are in.
    pub from_oneofs: usize,
}

impl Categories {
    /// `categories.tsv`: a header naming the source, then `message\tfield\tcategory,category`.
    pub fn tsv(&self) -> String {
        let mut out = format!(
            "# Extension categories of the API's slots, from the [#{ANNOTATION}] annotations of envoy-types {}'s \
             .proto files; regenerate with cargo run -p xdsck-schema-gen\n",
            self.version
        );
        for slot in &self.slots {
            out.push_str(&format!("{}\t{}\t{}\n", slot.message, slot.field, slot.categories.join(",")));
        }
        out
    }

    /// Every category some slot names.
    pub fn named(&self) -> BTreeSet<&str> {
        self.slots.iter().flat_map(|s| s.categories.iter().map(String::as_str)).collect()
    }
}

/// Reads the slots out of envoy-types' API .proto files (see [`API_ROOTS`]).
pub fn read(envoy_types: &EnvoyTypes) -> Result<Categories, Error> {
    let mut files = Vec::new();
    for root in API_ROOTS {
        let dir = envoy_types.proto_dir.join(root);
        let mut paths = Vec::new();
        proto_files(&dir, &mut paths)?;
        if paths.is_empty() {
            return Err(Error::EnvoyTypes(format!("no .proto file under {}", dir.display())));
        }
        for path in paths {
            // The name imports use: the path under the root, with `/` whatever the platform.
            let name = path
                .strip_prefix(&dir)
                .expect("found under dir")
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            let file =
                protox::file::File::open(&name, &path).map_err(|source| Error::Proto { path: path.clone(), source })?;
            let proto = file.file_descriptor_proto();
            // An annotation in a comment the parser attaches to nothing (one before a closing
            // brace, say) would be lost without a word: every one in the text must be in a comment
            // of some element, where `from_files` reads it or refuses it.
            let in_text = annotations(file.source().unwrap_or_default()).len();
            let in_comments = comment_annotations(proto);
            if in_text != in_comments {
                return Err(annotation_error(
                    proto,
                    &format!(
                        "{in_text} [#{ANNOTATION}] annotations in the text, {in_comments} in its elements' comments"
                    ),
                ));
            }
            files.push(proto.clone());
        }
    }
    let mut categories = from_files(&files)?;
    categories.version = envoy_types.version.clone();
    Ok(categories)
}

/// The `.proto` files under `dir`, recursively, sorted by path.
fn proto_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let io = |source| Error::Io { path: dir.to_owned(), source };
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(io)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().map_err(io)?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            proto_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

/// The slots the annotations in the leading comments of `files`' fields and oneofs name.
///
/// That is where Envoy writes them, and where its docs tooling reads them; one on anything else,
/// or in a trailing or detached comment, is refused rather than guessed at. An annotation on a
/// oneof applies to each of its fields (Envoy writes `oneof config_type { Any typed_config = 4; }`
/// with the annotation above `oneof`). A field annotated twice, itself and through its oneof,
/// takes both annotations' categories, first its own, each once.
pub fn from_files(files: &[FileDescriptorProto]) -> Result<Categories, Error> {
    let mut slots: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut oneof_fields = BTreeSet::new();
    for file in files {
        let Some(info) = &file.source_code_info else {
            return Err(annotation_error(file, "it was parsed without its comments"));
        };
        // Fields first, then oneofs: a field's own categories come first.
        let mut located = Vec::new();
        for location in &info.location {
            let detached = location.leading_detached_comments.join("\n");
            for (comment, kind) in
                [(location.trailing_comments(), "a trailing comment"), (&detached, "a detached comment")]
            {
                if !annotations(comment).is_empty() {
                    return Err(annotation_error(
                        file,
                        &format!("{} has an [#{ANNOTATION}] annotation in {kind}", describe(file, &location.path)),
                    ));
                }
            }
            let found = annotations(location.leading_comments());
            if found.is_empty() {
                continue;
            }
            let mut categories = Vec::new();
            for value in found {
                for category in value.split(',').map(str::trim) {
                    if category.is_empty() {
                        return Err(annotation_error(
                            file,
                            &format!(
                                "{}: [#{ANNOTATION}: {value}] names an empty category",
                                describe(file, &location.path)
                            ),
                        ));
                    }
                    categories.push(category.to_owned());
                }
            }
            let target = target(file, &location.path).ok_or_else(|| {
                annotation_error(
                    file,
                    &format!(
                        "{} has an [#{ANNOTATION}] annotation: only fields and oneofs are slots",
                        describe(file, &location.path)
                    ),
                )
            })?;
            located.push((target, categories));
        }
        located.sort_by_key(|(target, _)| matches!(target, Target::Oneof { .. }));
        for (target, categories) in located {
            let (message, fields, from_oneof) = match target {
                Target::Field { message, field } => (message, vec![field], false),
                Target::Oneof { message, fields } => (message, fields, true),
            };
            for field in fields {
                let key = (message.clone(), field);
                if from_oneof {
                    oneof_fields.insert(key.clone());
                }
                let slot = slots.entry(key).or_default();
                for category in &categories {
                    if !slot.contains(category) {
                        slot.push(category.clone());
                    }
                }
            }
        }
    }
    let slots = slots.into_iter().map(|((message, field), categories)| Slot { message, field, categories }).collect();
    Ok(Categories { version: String::new(), files: files.len(), slots, from_oneofs: oneof_fields.len() })
}

/// How many annotations all comments of `file`'s elements hold, wherever they are.
fn comment_annotations(file: &FileDescriptorProto) -> usize {
    let locations = file.source_code_info.iter().flat_map(|info| &info.location);
    locations
        .map(|l| {
            let detached: usize = l.leading_detached_comments.iter().map(|c| annotations(c).len()).sum();
            annotations(l.leading_comments()).len() + annotations(l.trailing_comments()).len() + detached
        })
        .sum()
}

fn annotation_error(file: &FileDescriptorProto, message: &str) -> Error {
    Error::Annotation { file: file.name().to_owned(), message: message.to_owned() }
}

/// The values of the `[#extension-category: ...]` annotations in `comment`, trimmed, in order.
///
/// Scanned the way Envoy's `ANNOTATION_REGEX` (`\[#([\w-]+?):\s*(.*?)\](\s?)`, applied with
/// `findall`) scans: an annotation's value ends at the first `]`, and scanning goes on after it,
/// so `[#comment: add [#extension-category: x] when ...]` is a `comment` annotation, not an
/// `extension-category` one — Envoy writes exactly that above `RetryPolicy.retry_options_predicates`
/// for a category that has no extension yet.
pub fn annotations(comment: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = comment[at..].find("[#") {
        let start = at + offset;
        let rest = &comment[start + 2..];
        let name_len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')).unwrap_or(rest.len());
        let parsed = (name_len > 0 && rest[name_len..].starts_with(':'))
            .then(|| rest[name_len + 1..].find(']').map(|end| (&rest[..name_len], &rest[name_len + 1..][..end])))
            .flatten();
        match parsed {
            Some((name, value)) => {
                if name == ANNOTATION {
                    found.push(value.trim());
                }
                at = start + 2 + name_len + 1 + value.len() + 1;
            }
            None => at = start + 1,
        }
    }
    found
}

/// What a location path points at, when it is a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Field {
        message: String,
        field: String,
    },
    /// A oneof's fields, in declaration order.
    Oneof {
        message: String,
        fields: Vec<String>,
    },
}

/// `FileDescriptorProto.message_type`, `DescriptorProto.field`, `.nested_type`, `.oneof_decl`.
const MESSAGE_TYPE: i32 = 4;
const FIELD: i32 = 2;
const NESTED_TYPE: i32 = 3;
const ONEOF_DECL: i32 = 8;

/// The message a path's leading `message_type`/`nested_type` steps name, its full name, and the
/// rest of the path.
fn message_at<'a, 'p>(
    file: &'a FileDescriptorProto,
    path: &'p [i32],
) -> Option<(&'a DescriptorProto, String, &'p [i32])> {
    let [MESSAGE_TYPE, index, rest @ ..] = path else { return None };
    let mut message = file.message_type.get(usize::try_from(*index).ok()?)?;
    let mut name = if file.package().is_empty() {
        message.name().to_owned()
    } else {
        format!("{}.{}", file.package(), message.name())
    };
    let mut rest = rest;
    while let [NESTED_TYPE, index, tail @ ..] = rest {
        message = message.nested_type.get(usize::try_from(*index).ok()?)?;
        name = format!("{name}.{}", message.name());
        rest = tail;
    }
    Some((message, name, rest))
}

fn target(file: &FileDescriptorProto, path: &[i32]) -> Option<Target> {
    let (message, name, rest) = message_at(file, path)?;
    match rest {
        [FIELD, index] => {
            let field = message.field.get(usize::try_from(*index).ok()?)?;
            Some(Target::Field { message: name, field: field.name().to_owned() })
        }
        [ONEOF_DECL, index] => {
            message.oneof_decl.get(usize::try_from(*index).ok()?)?;
            let fields =
                message.field.iter().filter(|f| f.oneof_index == Some(*index)).map(|f| f.name().to_owned()).collect();
            Some(Target::Oneof { message: name, fields })
        }
        _ => None,
    }
}

/// What a location path points at, for messages: the element, or the path itself.
fn describe(file: &FileDescriptorProto, path: &[i32]) -> String {
    let index = |i: &i32| usize::try_from(*i).ok();
    match message_at(file, path) {
        Some((_, name, [])) => format!("message {name}"),
        Some((message, name, [FIELD, i])) => match index(i).and_then(|i| message.field.get(i)) {
            Some(field) => format!("field {name}.{}", field.name()),
            None => format!("message {name}, path {path:?}"),
        },
        Some((message, name, [ONEOF_DECL, i])) => match index(i).and_then(|i| message.oneof_decl.get(i)) {
            Some(oneof) => format!("oneof {name}.{}", oneof.name()),
            None => format!("message {name}, path {path:?}"),
        },
        Some((_, name, _)) => format!("an element of message {name} (path {path:?})"),
        None => format!("the element at path {path:?}"),
    }
}

/// How the annotated slots compare with what Envoy 1.40 itself has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossCheck {
    /// Categories some annotation names that no extension of the build is in.
    pub not_in_build: Vec<String>,
    /// Categories extensions of the build are in that no annotation names.
    pub not_annotated: Vec<String>,
    /// Annotated slots whose message Envoy 1.40's descriptors do not have.
    pub missing_messages: Vec<String>,
    /// Annotated slots whose message Envoy 1.40 has, without the field (`message.field`).
    pub missing_fields: Vec<String>,
}

/// Compares the slots with the categories `/server_info` lists (`build_categories`) and with
/// Envoy's own descriptors. The other way round — Envoy 1.40's slots that envoy-types does not
/// annotate — cannot be told: the binary's descriptors have no comments.
pub fn cross_check<'a>(
    categories: &Categories,
    build_categories: impl IntoIterator<Item = &'a str>,
    pool: &DescriptorPool,
) -> CrossCheck {
    let build: BTreeSet<&str> = build_categories.into_iter().collect();
    let named = categories.named();
    let mut missing_messages = BTreeSet::new();
    let mut missing_fields = Vec::new();
    for slot in &categories.slots {
        match pool.get_message_by_name(&slot.message) {
            None => {
                missing_messages.insert(slot.message.clone());
            }
            Some(message) if message.get_field_by_name(&slot.field).is_none() => {
                missing_fields.push(format!("{}.{}", slot.message, slot.field));
            }
            Some(_) => {}
        }
    }
    CrossCheck {
        not_in_build: named.difference(&build).map(|c| (*c).to_owned()).collect(),
        not_annotated: build.difference(&named).map(|c| (*c).to_owned()).collect(),
        missing_messages: missing_messages.into_iter().collect(),
        missing_fields,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, source: &str) -> FileDescriptorProto {
        protox::file::File::from_source(name, source).unwrap().file_descriptor_proto().clone()
    }

    #[test]
    fn reads_annotations_as_envoys_tooling_does() {
        assert_eq!(annotations("Filters.\n [#extension-category: envoy.filters.network]\n"), ["envoy.filters.network"]);
        assert_eq!(
            annotations("[#extension-category:  a.b , c.d ] and [#next-free-field: 7] [#extension-category: e]"),
            ["a.b , c.d", "e"]
        );
        // A `comment` annotation's value runs to the first `]`: what it mentions is no annotation.
        assert!(
            annotations("[#comment: add [#extension-category: envoy.retry_options_predicates] when ...]").is_empty()
        );
        // Not annotations: no name, no colon, no closing bracket.
        assert!(annotations("[#: x] [#extension-category x] [#extension-category: x").is_empty());
        // A `[#` that starts nothing does not hide the annotation after it.
        assert_eq!(annotations("[#[#extension-category: x]"), ["x"]);
    }

    #[test]
    fn names_fields_nested_fields_and_the_fields_of_oneofs() {
        let file = parse(
            "envoy/a/v3/a.proto",
            r#"syntax = "proto3";
            package envoy.a.v3;
            message Filter {
              string name = 1;
              // The filter's config.
              // [#extension-category: envoy.filters.listener, envoy.filters.udp_listener]
              oneof config_type {
                Any typed_config = 3;
                string config_name = 4;
              }
              message Inner {
                message Deeper {
                  // [#extension-category: envoy.deep]
                  repeated Config configs = 1;
                }
              }
              // [#comment: add [#extension-category: envoy.none] later]
              Config later = 5;
              // [#extension-category: envoy.own]
              oneof other {
                // [#extension-category: envoy.field,envoy.own]
                Config both = 6;
              }
            }
            "#,
        );
        let categories = from_files(&[file]).unwrap();
        let lines: Vec<(&str, &str, String)> =
            categories.slots.iter().map(|s| (s.message.as_str(), s.field.as_str(), s.categories.join(","))).collect();
        assert_eq!(
            lines,
            [
                ("envoy.a.v3.Filter", "both", "envoy.field,envoy.own".to_owned()),
                ("envoy.a.v3.Filter", "config_name", "envoy.filters.listener,envoy.filters.udp_listener".to_owned()),
                ("envoy.a.v3.Filter", "typed_config", "envoy.filters.listener,envoy.filters.udp_listener".to_owned()),
                ("envoy.a.v3.Filter.Inner.Deeper", "configs", "envoy.deep".to_owned()),
            ]
        );
        assert_eq!(categories.from_oneofs, 3);
    }

    #[test]
    fn refuses_annotations_where_no_slot_is() {
        let on_message = parse(
            "m.proto",
            "syntax = \"proto3\"; package p;\n// [#extension-category: envoy.x]\nmessage M { string s = 1; }\n",
        );
        let err = from_files(&[on_message]).unwrap_err().to_string();
        assert!(err.contains("message p.M has an [#extension-category] annotation"), "{err}");

        let trailing = parse(
            "t.proto",
            "syntax = \"proto3\";\nmessage M {\n  string s = 1; // [#extension-category: envoy.x]\n}\n",
        );
        let err = from_files(&[trailing]).unwrap_err().to_string();
        assert!(err.contains("field M.s has an [#extension-category] annotation in a trailing comment"), "{err}");

        let empty = parse(
            "e.proto",
            "syntax = \"proto3\";\nmessage M {\n  // [#extension-category: a,,b]\n  string s = 1;\n}\n",
        );
        let err = from_files(&[empty]).unwrap_err().to_string();
        assert!(err.contains("names an empty category"), "{err}");
    }

    #[test]
    fn reads_both_api_roots_and_refuses_an_annotation_no_element_holds() {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "proto/data-plane-api/envoy/a/v3/a.proto",
            "syntax = \"proto3\";\npackage envoy.a.v3;\nmessage A {\n  // [#extension-category: envoy.a]\n  bytes c = 1;\n}\n",
        );
        write(
            "proto/xds/xds/b/v3/b.proto",
            "syntax = \"proto3\";\npackage xds.b.v3;\nmessage B {\n  // [#extension-category: envoy.b]\n  bytes c = 1;\n}\n",
        );
        // Not an API root: its annotations, were there any, are not read.
        write(
            "proto/googleapis/google/c.proto",
            "syntax = \"proto3\";\nmessage C {\n  // [#extension-category: x]\n  bytes c = 1;\n}\n",
        );
        let envoy_types = EnvoyTypes { version: "0.0.1".into(), proto_dir: dir.path().join("proto") };
        let categories = read(&envoy_types).unwrap();
        assert_eq!(categories.files, 2);
        assert_eq!(
            categories.tsv(),
            "# Extension categories of the API's slots, from the [#extension-category] annotations of envoy-types \
             0.0.1's .proto files; regenerate with cargo run -p xdsck-schema-gen\n\
             envoy.a.v3.A\tc\tenvoy.a\nxds.b.v3.B\tc\tenvoy.b\n"
        );

        // A comment before a closing brace belongs to no element.
        write(
            "proto/xds/xds/b/v3/b.proto",
            "syntax = \"proto3\";\nmessage B {\n  bytes c = 1;\n\n  // [#extension-category: envoy.b]\n}\n",
        );
        let err = read(&envoy_types).unwrap_err().to_string();
        assert!(err.starts_with("xds/b/v3/b.proto: 1 [#extension-category] annotations in the text, 0 in"), "{err}");
    }

    #[test]
    fn finds_envoy_types_in_cargo_metadata() {
        let json = br#"{"packages": [
            {"name": "prost", "version": "0.14.6", "manifest_path": "/r/prost-0.14.6/Cargo.toml"},
            {"name": "envoy-types", "version": "0.7.7", "manifest_path": "/r/envoy-types-0.7.7/Cargo.toml"}
        ]}"#;
        let found = envoy_types_in_metadata(json).unwrap();
        assert_eq!(found, EnvoyTypes { version: "0.7.7".into(), proto_dir: "/r/envoy-types-0.7.7/proto".into() });
        let err = envoy_types_in_metadata(br#"{"packages": []}"#).unwrap_err().to_string();
        assert!(err.contains("0 versions of envoy-types"), "{err}");
    }

    #[test]
    fn cross_checks_categories_and_descriptors() {
        let file = parse(
            "envoy/a.proto",
            "syntax = \"proto3\"; package envoy.a;\nmessage A {\n  // [#extension-category: envoy.one,envoy.two]\n  \
             string x = 1;\n  // [#extension-category: envoy.one]\n  string gone = 2;\n}\nmessage B {\n  \
             // [#extension-category: envoy.one]\n  string y = 1;\n}\n",
        );
        let categories = from_files(&[file]).unwrap();
        // Envoy's own A has no field `gone`, and there is no B at all.
        let built = parse("envoy/a.proto", "syntax = \"proto3\"; package envoy.a;\nmessage A { string x = 1; }\n");
        let pool =
            DescriptorPool::from_file_descriptor_set(prost_types::FileDescriptorSet { file: vec![built] }).unwrap();
        let check = cross_check(&categories, ["envoy.one", "envoy.three"], &pool);
        assert_eq!(
            check,
            CrossCheck {
                not_in_build: vec!["envoy.two".into()],
                not_annotated: vec!["envoy.three".into()],
                missing_messages: vec!["envoy.a.B".into()],
                missing_fields: vec!["envoy.a.A.gone".into()],
            }
        );
    }
}
