//! The layers of docs/architecture.md, kept true: every `crate::` path in core's sources (tests
//! aside) reaches only its own layer or one below, and the few arrows up the document names are
//! the only ones. Also: each of the concepts the schema step merged is defined exactly once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Core's top-level modules by layer, lowest first (docs/architecture.md, *Layers*).
const LAYERS: &[(&str, &[&str])] = &[
    ("places", &["source", "parallel", "hashing", "short_list", "test_support"]),
    ("model", &["model", "diagnostic", "schema"]),
    ("input", &["load"]),
    ("engine", &["chain_match", "routing", "trace", "diff"]),
    ("rules", &["checks", "codes"]),
    ("output", &["report"]),
    ("front ends", &["lib", "settings", "gateway", "baseline"]),
];

/// The arrows up that docs/architecture.md names, as (file, module it reaches).
const ALLOWED_UP: &[(&str, &str)] = &[
    // The annotation key is spelt once, in settings.
    ("load/classify.rs", "settings"),
    ("load/raw.rs", "settings"),
    // The table of every code lists the rules the settings and the Gateway model declare where
    // they report them.
    ("codes.rs", "settings"),
    ("codes.rs", "gateway"),
];

/// The layer of `crate::name`: a module's, or, for an item of `lib.rs` itself
/// (`crate::analyze_inputs`), the front ends'.
fn layer_of(name: &str) -> usize {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let module = if lib.contains(&format!("mod {name};")) { name } else { "lib" };
    LAYERS
        .iter()
        .position(|(_, ms)| ms.contains(&module))
        .unwrap_or_else(|| panic!("module `{module}` is in no layer of docs/architecture.md"))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A file's text without its test-only items and comments: a `#[cfg(test)]` item (an inline
/// test module, a test helper) is left out up to the line that closes it at its own
/// indentation, a `#[cfg(test)] mod tests;` line is only that line; what follows is read.
fn code(text: &str) -> String {
    let mut lines = Vec::new();
    let mut all = text.lines().peekable();
    while let Some(line) = all.next() {
        if line.trim() == "#[cfg(test)]" {
            let indent = &line[..line.len() - line.trim_start().len()];
            let close = format!("{indent}}}");
            match all.next() {
                Some(item) if item.trim_end().ends_with(';') => {}
                Some(_) => {
                    for rest in all.by_ref() {
                        if rest.trim_end() == close {
                            break;
                        }
                    }
                }
                None => {}
            }
            continue;
        }
        lines.push(line.split("//").next().unwrap_or(""));
    }
    lines.join("\n")
}

/// The top-level modules a text names as `crate::m` (in `use` lines, paths and macros).
fn reached(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for prefix in ["crate::", "$crate::"] {
        let mut rest = text;
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().next_back();
            rest = &rest[i + prefix.len()..];
            if prefix == "crate::" && matches!(before, Some('$' | '_') | Some('a'..='z')) {
                continue;
            }
            let m: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !m.is_empty() {
                out.insert(m);
            }
        }
    }
    // `use crate::{a, b::c}`
    let mut rest = text;
    while let Some(i) = rest.find("crate::{") {
        rest = &rest[i + "crate::{".len()..];
        let group = &rest[..rest.find('}').unwrap_or(rest.len())];
        for part in group.split(',') {
            let m: String = part.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !m.is_empty() {
                out.insert(m);
            }
        }
    }
    out
}

#[test]
fn every_import_goes_down_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        if rel.ends_with("tests.rs") || rel.contains("/tests/") {
            continue;
        }
        let own = rel.split(['/', '.']).next().unwrap().to_owned();
        let own_layer = layer_of(&own);
        for m in reached(&code(&std::fs::read_to_string(f).unwrap())) {
            if m == own || m == "self" {
                continue;
            }
            if layer_of(&m) > own_layer && !ALLOWED_UP.contains(&(rel.as_str(), m.as_str())) {
                wrong.push(format!("{rel} ({}) uses crate::{m} ({})", LAYERS[own_layer].0, LAYERS[layer_of(&m)].0));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layers of docs/architecture.md:\n{}", wrong.join("\n"));
}

#[test]
fn the_loaders_and_the_checks_do_not_reach_into_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let read = |dir: &str| {
        let mut files = Vec::new();
        sources(&root.join(dir), &mut files);
        files.iter().map(|f| reached(&code(&std::fs::read_to_string(f).unwrap()))).fold(BTreeSet::new(), |mut a, b| {
            a.extend(b);
            a
        })
    };
    // The scan sees imports at all: the checks ask the engine and the model.
    assert!(read("checks").is_superset(&["chain_match".to_owned(), "model".to_owned()].into()), "{:?}", read("checks"));
    assert!(!read("load").contains("checks"), "load/ imports checks");
    assert!(!read("checks").contains("load"), "checks/ imports load");
    let diagnostic = reached(&code(&std::fs::read_to_string(root.join("diagnostic.rs")).unwrap()));
    assert!(!diagnostic.contains("checks"), "diagnostic.rs reaches checks: {diagnostic:?}");
}

/// Counts the definitions of `item` (`struct VirtualHost`) in core's sources, tests aside.
fn definitions(item: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in &files {
        let text = code(&std::fs::read_to_string(f).unwrap());
        for (n, line) in text.lines().enumerate() {
            let words: Vec<&str> = line.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').collect();
            if words.windows(2).any(|w| format!("{} {}", w[0], w[1]) == item) {
                out.push(format!("{}:{}", f.strip_prefix(&root).unwrap().display(), n + 1));
            }
        }
    }
    out
}

#[test]
fn each_route_concept_is_defined_once() {
    for kind in ["struct", "enum"] {
        for name in ["VirtualHost", "StringMatcher"] {
            let item = format!("{kind} {name}");
            let other = if kind == "struct" { format!("enum {name}") } else { format!("struct {name}") };
            let all: Vec<String> = definitions(&item).into_iter().chain(definitions(&other)).collect();
            assert_eq!(all.len(), 1, "`{name}` is defined {} times: {all:?}", all.len());
        }
    }
    let f = definitions("fn is_partial_wildcard");
    assert_eq!(f.len(), 1, "`is_partial_wildcard` is defined {} times: {f:?}", f.len());
}

/// docs/architecture.md's code map names every file of core's sources (a rule's own file aside:
/// `codes.rs` lists those), and names no file that is gone.
#[test]
fn the_code_map_names_every_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md")).unwrap();
    let map = doc
        .split("\n## Code map\n")
        .nth(1)
        .expect("docs/architecture.md has a Code map")
        .split("\n## ")
        .next()
        .unwrap();
    let named: BTreeSet<String> =
        map.lines().filter_map(|l| l.strip_prefix("| `")?.split_once('`').map(|(path, _)| path.to_owned())).collect();
    let mut files = Vec::new();
    sources(&root, &mut files);
    let rule_folders = ["checks/listener/", "checks/matcher/", "checks/route/", "checks/schema/"];
    let wanted: BTreeSet<String> = files
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"))
        .filter(|rel| !rel.ends_with("tests.rs") && !rel.contains("/tests/"))
        .filter(|rel| !rule_folders.iter().any(|d| rel.starts_with(d)) || rel.ends_with("/mod.rs"))
        .collect();
    let missing: Vec<&String> = wanted.difference(&named).collect();
    let gone: Vec<&String> = named.difference(&wanted).collect();
    assert!(missing.is_empty() && gone.is_empty(), "not in the code map: {missing:?}; in it but not a file: {gone:?}");
}
