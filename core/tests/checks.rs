//! Fixture tests for the checks, in the style of ruff's and biome's spec tests: every file
//! `testdata/checks/<rule-name>/{ok,bad}-*.{yaml,yml,json}` is analysed and rendered as text,
//! and the snapshot (next to the fixture, `<file>.snap`) shows the input, then the output.
//!
//! * `ok-*` must produce no finding of any rule;
//! * `bad-*` must produce at least one finding of its directory's rule.
//!
//! Fixtures are found by walking the tree, so a new rule directory needs no edit here.

use std::path::{Path, PathBuf};

use xdsck_core::report::{self, Format, RenderOptions};
use xdsck_core::{Options, SourceFile, Sources};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("core/ has a parent").to_path_buf()
}

/// Every fixture, sorted: `(rule directory name, path)`.
fn fixtures() -> Vec<(String, PathBuf)> {
    let root = workspace().join("testdata/checks");
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let rule = dir.file_name().and_then(|n| n.to_str()).expect("UTF-8 directory name").to_owned();
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("readable entry").path())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                (name.starts_with("ok-") || name.starts_with("bad-"))
                    && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
            })
            .collect();
        files.sort();
        out.extend(files.into_iter().map(|f| (rule.clone(), f)));
    }
    out
}

/// Checks one fixture; returns a description of what is wrong with it, if anything.
fn check(rule: &str, path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path.strip_prefix(workspace()).unwrap_or(path).to_string_lossy().replace('\\', "/");
    let mut sources = Sources::new();
    sources.add(SourceFile::new(name.clone(), text.clone()));
    let report = xdsck_core::analyze(&sources, &Options::default());
    let rendered = report::render(Format::Text, &report, &sources, RenderOptions { color: false, quiet: false });

    let file = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(path.parent().expect("fixture has a directory"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(path);
    settings.set_omit_expression(true);
    let document = format!("# Input: {name}\n\n{text}\n# ---- xdsck output ----\n\n{rendered}");
    settings.bind(|| insta::assert_snapshot!(file.clone(), document));

    let rules: Vec<&str> = report.findings.iter().map(|d| d.rule.name).collect();
    if file.starts_with("ok-") && !report.findings.is_empty() {
        return Some(format!("{name}: an ok fixture has findings {rules:?}"));
    }
    if file.starts_with("bad-") && !rules.contains(&rule) {
        return Some(format!("{name}: a bad fixture has no `{rule}` finding (has {rules:?})"));
    }
    None
}

#[test]
fn fixtures_match_their_snapshots() {
    let all = fixtures();
    assert!(!all.is_empty(), "no fixtures under testdata/checks");
    // Every rule directory names a rule xdsck knows, so a typo cannot make a fixture vacuous.
    for (rule, path) in &all {
        assert!(xdsck_core::rule(rule).is_some(), "{}: `{rule}` is not a rule name", path.display());
    }
    let problems: Vec<String> = all.iter().filter_map(|(rule, path)| check(rule, path)).collect();
    assert!(problems.is_empty(), "{} fixture(s) failed:\n{}", problems.len(), problems.join("\n"));
}

/// Every snapshot beside the fixtures belongs to a fixture: a snapshot whose input was renamed
/// or removed would otherwise stay behind, showing output nothing produces.
#[test]
fn no_snapshot_without_its_fixture() {
    let inputs: Vec<PathBuf> = fixtures().into_iter().map(|(_, p)| p).collect();
    let mut orphans = Vec::new();
    for dir in std::fs::read_dir(workspace().join("testdata/checks")).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "snap") && !inputs.contains(&f.with_extension("")) {
                orphans.push(f.display().to_string());
            }
        }
    }
    assert!(orphans.is_empty(), "snapshots without their fixture: {orphans:?}");
}

/// Every message stands on its own (JSON, SARIF and GitHub show it without the labels), and
/// the text output names the listener of every finding that has one.
#[test]
fn messages_are_complete_and_text_names_the_listener() {
    const DANGLING: &[&str] = &["would", "which", "and", "or", "but", "to", "the", "a", "of", "is", "that"];
    let mut problems = Vec::new();
    for (_, path) in fixtures() {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut sources = Sources::new();
        sources.add(SourceFile::new(path.display().to_string(), text));
        let report = xdsck_core::analyze(&sources, &Options::default());
        for d in &report.findings {
            let last = d.message.trim_end().rsplit(' ').next().unwrap_or_default();
            if DANGLING.contains(&last) {
                problems.push(format!("{}: {} ends mid-sentence: {}", path.display(), d.code(), d.message));
            }
            let one = report::Report { findings: vec![d.clone()], ..Default::default() };
            let rendered = report::render(Format::Text, &one, &sources, RenderOptions::default());
            if let Some(listener) = &d.listener {
                if !rendered.contains(&format!("= listener: {listener}\n")) {
                    problems.push(format!("{}: {} does not name listener {listener}", path.display(), d.code()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// An unnamed chain in JSON is shown at its first key, not at a bare `{` that says nothing.
#[test]
fn unnamed_json_chains_are_shown_at_a_key() {
    let path = workspace().join("testdata/envoy/config_dump.json");
    let mut sources = Sources::new();
    sources.add(SourceFile::new("config_dump.json", std::fs::read_to_string(path).unwrap()));
    let report = xdsck_core::analyze(&sources, &Options::default());
    assert!(report.findings.iter().any(|d| d.filter_chains.iter().any(|c| c.starts_with("filter_chains["))));
    let text = report::render(Format::Text, &report, &sources, RenderOptions::default());
    // A source line of a snippet is `1056 |         {`: a line number, a bar, the text.
    let bare: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.split_once('|').is_some_and(|(number, code)| number.trim().parse::<usize>().is_ok() && code.trim() == "{")
        })
        .collect();
    assert!(bare.is_empty(), "{bare:?}\n{text}");
}
