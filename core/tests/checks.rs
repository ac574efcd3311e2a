//! Fixture tests for the checks, in the style of biome's spec tests: one test per file
//! `testdata/checks/<rule-name>/{ok,bad}-*.{yaml,yml,json}`, run with only its directory's rule
//! selected and rendered as text; the snapshot (next to the fixture, `<file>.snap`) shows the
//! input, then the output. So a snapshot shows its own rule's findings only, and one fixture
//! that fails does not hide another.
//!
//! * `ok-*` must produce no finding of its rule, nor of any other (each is a clean input);
//! * `bad-*` must produce at least one finding of its directory's rule.
//!
//! Besides: every rule's explanation has an `Example` whose config makes the rule fire, and a
//! few checks that look at every fixture at once. Fixtures are found at run time (a libtest-mimic
//! harness), so a new fixture or rule directory needs no edit here and shows up in `--list`.

use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};
use xdsck_core::report::{self, Format, RenderOptions, Suppressed};
use xdsck_core::settings::{Selector, Settings};
use xdsck_core::{Options, Rule, SourceFile, Sources};

fn main() {
    let args = Arguments::from_args();
    let mut trials: Vec<Trial> = fixtures()
        .into_iter()
        .map(|(rule, path)| {
            let name = format!("{rule}/{}", path.file_name().and_then(|n| n.to_str()).unwrap_or_default());
            Trial::test(name, move || check(&rule, &path))
        })
        .collect();
    trials.extend(xdsck_core::rules().map(|rule| Trial::test(format!("example/{}", rule.name), move || example(rule))));
    trials.push(Trial::test("every_rule_directory_names_a_rule", every_rule_directory_names_a_rule));
    trials.push(Trial::test("no_snapshot_without_its_fixture", no_snapshot_without_its_fixture));
    trials.push(Trial::test(
        "messages_are_complete_and_text_names_the_listener",
        messages_are_complete_and_text_names_the_listener,
    ));
    trials.push(Trial::test("unnamed_json_chains_are_shown_at_a_key", unnamed_json_chains_are_shown_at_a_key));
    libtest_mimic::run(&args, trials).exit();
}

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

/// Settings that report one rule only (input problems are always reported).
fn only(rule: &'static Rule) -> Options {
    Options {
        settings: Settings { select: Some(vec![Selector::Rule(rule)]), ..Settings::default() },
        ..Options::default()
    }
}

/// One fixture: its snapshot, and whether it is the ok or bad case it says it is.
fn check(dir: &str, path: &Path) -> Result<(), Failed> {
    let rule = xdsck_core::rule(dir).ok_or_else(|| format!("`{dir}` is not a rule name"))?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path.strip_prefix(workspace()).unwrap_or(path).to_string_lossy().replace('\\', "/");
    let mut sources = Sources::new();
    sources.add(SourceFile::new(name.clone(), text.clone()));
    let mut report = xdsck_core::analyze(&sources, &only(rule));
    // How many findings of other rules were left out is not this fixture's business: counting
    // them would change this snapshot whenever another rule changes.
    report.suppressed = Suppressed::default();
    let rendered = report::render(Format::Text, &report, &sources, RenderOptions { color: false, quiet: false });

    let file = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(path.parent().expect("fixture has a directory"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(path);
    settings.set_omit_expression(true);
    let document = format!("# Input: {name}\n\n{text}\n# ---- xdsck output ----\n\n{rendered}");
    settings.bind(|| insta::assert_snapshot!(file.clone(), document));

    if file.starts_with("ok-") {
        let all = xdsck_core::analyze(&sources, &Options::default());
        let rules: Vec<&str> = all.findings.iter().map(|d| d.rule.name).collect();
        if !rules.is_empty() {
            return Err(format!("{name}: an ok fixture has findings {rules:?}").into());
        }
    }
    if file.starts_with("bad-") && !report.findings.iter().any(|d| d.rule == rule) {
        let rules: Vec<&str> = report.findings.iter().map(|d| d.rule.name).collect();
        return Err(format!("{name}: a bad fixture has no `{dir}` finding (has {rules:?})").into());
    }
    Ok(())
}

/// Rules whose `Example` shows no configuration to run, and why: each is about how an input
/// reaches xdsck (a file that cannot be read, bytes that are not text, an empty or cut-off
/// download, a command line), which a Markdown snippet cannot be.
const NO_RUNNABLE_EXAMPLE: &[(&str, &str)] = &[
    ("unreadable-input", "a file that cannot be read"),
    ("empty-input", "an empty download"),
    ("invalid-utf8", "bytes that are not UTF-8"),
    ("json-syntax", "a file cut off mid-way, shown inline"),
    ("not-envoy-config", "a command line"),
    ("unrendered-template", "names a file of the Helm chart"),
];

/// The first fenced `yaml` or `json` block of an explanation's `Example` section.
fn example_config(explanation: &str) -> Option<(&'static str, &str)> {
    let section = explanation.split_once("## Example\n")?.1;
    let section = section.split_once("\n## ").map_or(section, |(s, _)| s);
    for (fence, ext) in [("```yaml\n", "yaml"), ("```json\n", "json")] {
        if let Some((_, rest)) = section.split_once(fence) {
            return rest.split_once("```").map(|(body, _)| (ext, body));
        }
    }
    None
}

/// The explanation's example, run as a fixture with only its rule selected, makes it fire.
fn example(rule: &'static Rule) -> Result<(), Failed> {
    let exempt = NO_RUNNABLE_EXAMPLE.iter().any(|(name, _)| *name == rule.name);
    let Some((ext, config)) = example_config(rule.explanation()) else {
        if exempt {
            return Ok(());
        }
        return Err(format!("{} {}: the Example section has no ```yaml or ```json block", rule.code, rule.name).into());
    };
    if exempt {
        return Err(format!("{}: has a runnable example now; drop it from NO_RUNNABLE_EXAMPLE", rule.name).into());
    }
    let mut sources = Sources::new();
    sources.add(SourceFile::new(format!("{}-example.{ext}", rule.name), config.to_owned()));
    let report = if xdsck_core::codes::of(rule).is_some_and(|c| c.group == xdsck_core::codes::Group::Gateway) {
        // A Gateway API rule's example is Gateway API input: `xdsck gateway` reads it.
        let version = xdsck_core::gateway::cilium::Version::NEWEST;
        xdsck_core::gateway::evaluate(&mut sources, version, &Default::default()).report
    } else {
        xdsck_core::analyze(&sources, &only(rule))
    };
    if report.findings.iter().any(|d| d.rule == rule) {
        return Ok(());
    }
    let found: Vec<String> = report.findings.iter().map(|d| format!("{}: {}", d.code(), d.message)).collect();
    Err(format!("{} {}: its Example does not make it fire (found {found:?}):\n{config}", rule.code, rule.name).into())
}

/// Every rule directory names a rule xdsck knows, so a typo cannot make a fixture vacuous.
fn every_rule_directory_names_a_rule() -> Result<(), Failed> {
    let all = fixtures();
    if all.is_empty() {
        return Err("no fixtures under testdata/checks".into());
    }
    let unknown: Vec<String> = all
        .iter()
        .filter(|(rule, _)| xdsck_core::rule(rule).is_none())
        .map(|(rule, path)| format!("{}: `{rule}` is not a rule name", path.display()))
        .collect();
    if unknown.is_empty() { Ok(()) } else { Err(unknown.join("\n").into()) }
}

/// Every snapshot beside the fixtures belongs to a fixture: a snapshot whose input was renamed
/// or removed would otherwise stay behind, showing output nothing produces.
fn no_snapshot_without_its_fixture() -> Result<(), Failed> {
    let inputs: Vec<PathBuf> = fixtures().into_iter().map(|(_, p)| p).collect();
    let mut orphans = Vec::new();
    for dir in std::fs::read_dir(workspace().join("testdata/checks")).map_err(|e| e.to_string())? {
        let dir = dir.map_err(|e| e.to_string())?.path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).map_err(|e| e.to_string())? {
            let f = f.map_err(|e| e.to_string())?.path();
            if f.extension().is_some_and(|e| e == "snap") && !inputs.contains(&f.with_extension("")) {
                orphans.push(f.display().to_string());
            }
        }
    }
    if orphans.is_empty() { Ok(()) } else { Err(format!("snapshots without their fixture: {orphans:?}").into()) }
}

/// Every message stands on its own (JSON, SARIF and GitHub show it without the labels), and
/// the text output names the listener of every finding that has one.
fn messages_are_complete_and_text_names_the_listener() -> Result<(), Failed> {
    const DANGLING: &[&str] = &["would", "which", "and", "or", "but", "to", "the", "a", "of", "is", "that"];
    let mut problems = Vec::new();
    for (_, path) in fixtures() {
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
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
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
}

/// An unnamed chain in JSON is shown at its first key, not at a bare `{` that says nothing.
fn unnamed_json_chains_are_shown_at_a_key() -> Result<(), Failed> {
    let path = workspace().join("testdata/envoy/config_dump.json");
    let mut sources = Sources::new();
    sources.add(SourceFile::new("config_dump.json", std::fs::read_to_string(path).map_err(|e| e.to_string())?));
    let report = xdsck_core::analyze(&sources, &Options::default());
    if !report.findings.iter().any(|d| d.filter_chains.iter().any(|c| c.starts_with("filter_chains["))) {
        return Err("no finding names an unnamed chain of the dump".into());
    }
    let text = report::render(Format::Text, &report, &sources, RenderOptions::default());
    // A source line of a snippet is `1056 |         {`: a line number, a bar, the text.
    let bare: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.split_once('|').is_some_and(|(number, code)| number.trim().parse::<usize>().is_ok() && code.trim() == "{")
        })
        .collect();
    if bare.is_empty() { Ok(()) } else { Err(format!("{bare:?}\n{text}").into()) }
}
