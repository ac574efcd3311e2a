//! Every renderer on one hand-made report: an error with Envoy's words and a related place, a
//! warning with an example connection whose related place is in another file, an info with no
//! location, an input that could not be read; a JSON and a YAML source; a line with non-ASCII
//! text before the marked column.

use super::*;
use crate::diagnostic::{Diagnostic, Rule, Severity};
use crate::load::codes;
use crate::model::Inventory;
use crate::source::{Location, SourceFile, Sources};

static DUPLICATE: Rule = Rule {
    code: "XDS101",
    name: "duplicate-filter-chain-match",
    severity: Severity::Error,
    summary: "Two filter chains have the same filter_chain_match.",
    explanation: "## What it finds\nTwo chains of one listener with identical matches.\n\n## Why it matters\nEnvoy rejects the listener.\n\n## Example\n-\n\n## Fix\nMerge them.\n",
};

static SHADOWED: Rule = Rule {
    code: "XDS102",
    name: "shadowed-filter-chain",
    severity: Severity::Warning,
    summary: "A filter chain can never be selected.",
    explanation: "## What it finds\nA chain every connection of which a more specific chain takes.\n\n## Why it matters\nIts filters never run.\n\n## Example\n-\n\n## Fix\nRemove it.\n",
};

static CARVED: Rule = Rule {
    code: "XDS103",
    name: "exact-name-in-wildcard",
    severity: Severity::Info,
    summary: "An exact server name is carved out of a wildcard.",
    explanation: "## What it finds\nAn exact name beside a wildcard that covers it.\n\n## Why it matters\nUsually deliberate.\n\n## Example\n-\n\n## Fix\nNothing to do.\n",
};

const DUMP: &str = r#"{
  "configs": [
    {
      "name": "listener-443",
      "filter_chains": [
        {"name": "a", "filter_chain_match": {"server_names": ["api.example.com"]}},
        {"name": "b", "filter_chain_match": {"server_names": ["api.example.com"]}},
        {"name": "é-ü", "filter_chain_match": {"server_names": ["*.example.com"]}}
      ]
    }
  ]
}
"#;

const CEC: &str = "apiVersion: cilium.io/v2
kind: CiliumEnvoyConfig
spec:
  resources:
    - name: ingress
      filterChains:
        - filterChainMatch: {transportProtocol: tls}
        - filterChainMatch: {transportProtocol: tls, serverNames: [a.example.com]}
";

fn offset(text: &str, needle: &str) -> usize {
    text.find(needle).unwrap_or_else(|| panic!("{needle:?} is in the fixture"))
}

/// The sources and the report every renderer is tested on.
pub(crate) fn fixture() -> (Sources, Report) {
    let mut sources = Sources::new();
    let dump = sources.add(SourceFile::new("dump.json", DUMP));
    let cec = sources.add(SourceFile::new("k8s/cec.yaml", CEC));
    let missing = sources.add(SourceFile::new("missing, really.json", ""));
    let chains = "/configs/0/filter_chains";

    let error = Diagnostic::new(&DUPLICATE, "filter chains 'b' and 'a' of listener 'listener-443' have the same match")
        .at(Location::new(dump, format!("{chains}/1"), Some(offset(DUMP, r#"{"name": "b""#))))
        .envoy_error(
            "error adding listener 'listener-443': filter chain 'b' has the same matching rules defined as 'a'",
        )
        .listener("listener-443")
        .chain("b")
        .chain("a")
        .related(
            "first defined here",
            Location::new(dump, format!("{chains}/0"), Some(offset(DUMP, r#"{"name": "a""#))),
        )
        .note("Envoy refuses the whole listener update; the previous version keeps serving.");
    // The mark is after the two-byte 'é' and 'ü': its column counts characters.
    let non_ascii = Diagnostic::new(&CARVED, "'*.example.com' covers 'api.example.com'")
        .at(Location::new(
            dump,
            format!("{chains}/2/filter_chain_match"),
            Some(offset(DUMP, r#""filter_chain_match": {"server_names": ["*"#)),
        ))
        .listener("listener-443")
        .chain("é-ü");
    let warning = Diagnostic::new(
        &SHADOWED,
        "filter chain 'filterChains[1]' is never selected: 'filterChains[0]' takes every TLS connection first",
    )
    .at(Location::new(
        cec,
        "/spec/resources/0/filterChains/1",
        Some(offset(CEC, "filterChainMatch: {transportProtocol: tls, server")),
    ))
    .listener("ingress")
    .chain("filterChains[1]")
    .related(
        "the listener in the config_dump",
        Location::new(dump, "/configs/0", Some(offset(DUMP, r#""name": "listener-443""#))),
    )
    .related("also declared here", Location::new(cec, "/spec/resources/0", None))
    .example("dst_port", 443)
    .example("transport", "tls")
    .example("sni", "a.example.com");
    let info = Diagnostic::new(&CARVED, "2 listeners carve exact names out of wildcards");
    let unreadable =
        Diagnostic::new(&codes::UNREADABLE, "cannot read missing, really.json: No such file or directory (os error 2)")
            .at(Location::new(missing, "", None));

    let mut report = Report {
        inputs: vec![
            InputSummary {
                source: dump,
                kind: Some("config_dump"),
                inventory: Inventory { listeners: 3, filter_chains: 41, warming: 1, draining: 0, failed: 1 },
                versions: Vec::new(),
            },
            InputSummary {
                source: cec,
                kind: Some("CiliumEnvoyConfig"),
                inventory: Inventory { listeners: 1, filter_chains: 2, ..Inventory::default() },
                versions: Vec::new(),
            },
            InputSummary { source: missing, kind: None, inventory: Inventory::default(), versions: Vec::new() },
        ],
        findings: vec![info, warning, unreadable, non_ascii, error],
        failed_inputs: 1,
        suppressed: Default::default(),
    };
    report.sort();
    (sources, report)
}

#[test]
fn text() {
    let (sources, report) = fixture();
    insta::assert_snapshot!(render(Format::Text, &report, &sources, RenderOptions { color: false, quiet: false }));
}

#[test]
fn text_colour_only_when_asked() {
    let (sources, report) = fixture();
    assert!(!render(Format::Text, &report, &sources, RenderOptions { color: false, quiet: false }).contains('\x1b'));
    assert!(render(Format::Text, &report, &sources, RenderOptions { color: true, quiet: false }).contains("\x1b["));
}

#[test]
fn text_without_findings() {
    let mut sources = Sources::new();
    let id = sources.add(SourceFile::new("ok.yaml", "static_resources: {}\n"));
    let report = Report {
        inputs: vec![InputSummary {
            source: id,
            kind: Some("bootstrap"),
            inventory: Inventory { listeners: 1, filter_chains: 1, ..Inventory::default() },
            versions: Vec::new(),
        }],
        ..Report::default()
    };
    assert_eq!(
        render(Format::Text, &report, &sources, RenderOptions::default()),
        "ok.yaml: bootstrap, 1 listener, 1 filter chain\nno findings\n"
    );
}

#[test]
fn text_cuts_long_lines_to_a_window() {
    let mut sources = Sources::new();
    let minified = format!(r#"{{"configs":[{}{{"name":"needle"}}]}}"#, r#"{"name":"hay"},"#.repeat(10_000));
    let at = minified.find("needle").unwrap();
    let id = sources.add(SourceFile::new("min.json", minified));
    let report = Report {
        findings: vec![Diagnostic::new(&DUPLICATE, "found it").at(Location::new(id, "/configs/10000/name", Some(at)))],
        ..Report::default()
    };
    let out = render(Format::Text, &report, &sources, RenderOptions::default());
    assert!(out.len() < 1000, "{out}");
    assert!(out.contains(&format!("min.json:1:{}", at + 1)), "{out}");
    assert!(out.contains("needle"), "{out}");
}

#[test]
fn json() {
    let (sources, report) = fixture();
    let out = render(Format::Json, &report, &sources, RenderOptions::default());
    insta::assert_snapshot!(out);
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        value["summary"],
        serde_json::json!({"error": 2, "warning": 1, "info": 2, "suppressed": 0,
            "suppressed_by": {"not_selected": 0, "annotation": 0, "ignore": 0, "baseline": 0}})
    );
    // What `attach --watch` prints per finding is exactly what the report holds.
    assert_eq!(serde_json::Value::Array(json::finding_values(&report, &sources)), value["findings"]);
    assert_eq!(json::summary_value(&report), value["summary"]);
}

#[test]
fn sarif() {
    let (sources, report) = fixture();
    insta::assert_snapshot!(render(Format::Sarif, &report, &sources, RenderOptions::default()));
}

/// The vendored official schema, with its one known defect worked around: the `language`
/// pattern `^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$` has a stray `]`, which ECMAScript reads as a
/// literal but the Rust regex engines refuse, so the schema itself fails draft-07's meta-schema.
/// Escaping it keeps the pattern's meaning; the file on disk stays byte-identical to the origin.
pub(crate) fn sarif_schema() -> serde_json::Value {
    let text = include_str!("../../tests/data/sarif-schema-2.1.0.json");
    let fixed = text.replace(r#"-[a-zA-Z]{2}]?$""#, r#"-[a-zA-Z]{2}\\]?$""#);
    assert_ne!(text, fixed, "the workaround still applies to the vendored schema");
    serde_json::from_str(&fixed).unwrap()
}

#[test]
fn sarif_is_valid_against_the_official_schema() {
    let schema = sarif_schema();
    // Built without jsonschema's `resolve-http`/`resolve-file` features: the schema's only
    // `$ref`s are local (`#/definitions/...`) and draft-07's meta-schema is bundled, so nothing
    // is fetched, and a test that tried to would fail to build rather than reach the network.
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let (sources, report) = fixture();
    let log: serde_json::Value =
        serde_json::from_str(&render(Format::Sarif, &report, &sources, RenderOptions::default())).unwrap();
    let errors: Vec<String> = validator.iter_errors(&log).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The schema does check something: a broken log fails.
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&broken));
}

#[test]
fn sarif_fingerprints_are_stable() {
    let (sources, report) = fixture();
    let log: serde_json::Value =
        serde_json::from_str(&render(Format::Sarif, &report, &sources, RenderOptions::default())).unwrap();
    let duplicate = log["runs"][0]["results"].as_array().unwrap().iter().find(|r| r["ruleId"] == "XDS101").unwrap();
    // Pinned: if this changes, every code-scanning alert looks new to the people triaging them.
    assert_eq!(duplicate["partialFingerprints"]["xdsck/v1"], "530bdb1bd887c487");
}

#[test]
fn github() {
    let (sources, report) = fixture();
    insta::assert_snapshot!(render(Format::Github, &report, &sources, RenderOptions::default()));
}

#[test]
fn every_format_is_deterministic() {
    for format in [Format::Text, Format::Json, Format::Sarif, Format::Github] {
        let (s1, r1) = fixture();
        let (s2, r2) = fixture();
        assert_eq!(
            render(format, &r1, &s1, RenderOptions::default()),
            render(format, &r2, &s2, RenderOptions::default())
        );
    }
}
