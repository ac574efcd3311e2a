//! Every renderer on one hand-made report: an error with Envoy's words and a related place, a
//! warning with an example connection whose related place is in another file, an info with no
//! location, an input that could not be read; a JSON and a YAML source; a line with non-ASCII
//! text before the marked column.

use super::*;
use crate::diagnostic::{Diagnostic, Rule, Severity};
use crate::load::rules;
use crate::model::Inventory;
use crate::source::{Location, SourceFile, Sources};

static DUPLICATE: Rule = Rule {
    code: "XDS101",
    fingerprint: "XDS101",
    name: "duplicate-filter-chain-match",
    severity: Severity::Error,
    summary: "Two filter chains have the same filter_chain_match.",
    explanation: crate::diagnostic::Explanation::new(
        "## What it finds\nTwo chains of one listener with identical matches.\n\n## Why it matters\nEnvoy rejects the listener.\n\n## Example\n-\n\n## Fix\nMerge them.\n",
    ),
};

static SHADOWED: Rule = Rule {
    code: "XDS102",
    fingerprint: "XDS102",
    name: "shadowed-filter-chain",
    severity: Severity::Warning,
    summary: "A filter chain can never be selected.",
    explanation: crate::diagnostic::Explanation::new(
        "## What it finds\nA chain every connection of which a more specific chain takes.\n\n## Why it matters\nIts filters never run.\n\n## Example\n-\n\n## Fix\nRemove it.\n",
    ),
};

static CARVED: Rule = Rule {
    code: "XDS103",
    fingerprint: "XDS103",
    name: "exact-name-in-wildcard",
    severity: Severity::Info,
    summary: "An exact server name is carved out of a wildcard.",
    explanation: crate::diagnostic::Explanation::new(
        "## What it finds\nAn exact name beside a wildcard that covers it.\n\n## Why it matters\nUsually deliberate.\n\n## Example\n-\n\n## Fix\nNothing to do.\n",
    ),
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
        .with_envoy_error(
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
    .with_example("dst_port", 443)
    .with_example("transport", "tls")
    .with_example("sni", "a.example.com");
    let info = Diagnostic::new(&CARVED, "2 listeners carve exact names out of wildcards");
    let unreadable =
        Diagnostic::new(&rules::UNREADABLE, "cannot read missing, really.json: No such file or directory (os error 2)")
            .at(Location::new(missing, "", None));

    let mut report = Report {
        inputs: vec![
            InputSummary {
                source: dump,
                kind: Some("config_dump"),
                inventory: Inventory {
                    listeners: 3,
                    filter_chains: 41,
                    warming: 1,
                    failed: 1,
                    route_tables: 2,
                    clusters: 5,
                    ..Inventory::default()
                },
                versions: Vec::new(),
                yaml: false,
                proxy: None,
            },
            InputSummary {
                source: cec,
                kind: Some("CiliumEnvoyConfig"),
                inventory: Inventory { listeners: 1, filter_chains: 2, ..Inventory::default() },
                versions: Vec::new(),
                yaml: false,
                proxy: None,
            },
            InputSummary::failed(missing, false),
        ],
        findings: vec![info, warning, unreadable, non_ascii, error],
        failed_inputs: 1,
        suppressed: Default::default(),
        notes: vec![
            "routes' clusters not checked (XDS117) in CiliumEnvoyConfigs: the cilium-agent adds clusters of its own"
                .to_owned(),
        ],
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
            yaml: false,
            proxy: None,
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
fn text_on_a_minified_file_keeps_related_places_and_reformats_the_node() {
    let mut sources = Sources::new();
    let minified = format!(
        r#"{{"configs":[{}{{"name":"needle","port":443,"names":["a","b"]}},{}{{"name":"other"}}]}}"#,
        r#"{"name":"hay"},"#.repeat(20),
        r#"{"name":"straw"},"#.repeat(20)
    );
    let at = minified.find("\"needle").unwrap();
    let other = minified.find("\"other").unwrap();
    let id = sources.add(SourceFile::new("min.json", minified));
    let report = Report {
        findings: vec![
            Diagnostic::new(&DUPLICATE, "found it")
                .at(Location::new(id, "/configs/20/name", Some(at)))
                .related("the other one", Location::new(id, "/configs/41/name", Some(other))),
        ],
        ..Report::default()
    };
    let out = render(Format::Text, &report, &sources, RenderOptions::default());
    assert!(out.contains(&format!("--> min.json:1:{}", at + 1)), "{out}");
    assert!(out.contains(&format!("::: min.json:1:{}", other + 1)), "{out}");
    assert!(out.contains("- the other one"), "{out}");
    insta::assert_snapshot!(out);
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
            "suppressed_by": {"not_selected": 0, "annotation": 0, "ignore": 0, "baseline": 0},
            "notes": ["routes' clusters not checked (XDS117) in CiliumEnvoyConfigs: the cilium-agent adds clusters of its own"]})
    );
    // What `attach --watch` prints per finding is exactly what the report holds.
    assert_eq!(serde_json::Value::Array(json::finding_values(&report, &sources)), value["findings"]);
    assert_eq!(json::summary_value(&report), value["summary"]);
}

#[test]
fn json_written_in_batches_is_the_whole_object_serialized_at_once() {
    // More findings than two batches (4096 each): the first, those written while the next is
    // rendered, and the last.
    let (sources, mut report) = fixture();
    let one = report.findings.clone();
    report.findings = (0..10_000).map(|i| one[i % one.len()].clone()).collect();
    let out = render(Format::Json, &report, &sources, RenderOptions::default());
    let whole = json::output(&report, &sources, report.findings.iter().map(|d| json::finding(d, &sources)).collect());
    assert!(out == serde_json::to_string_pretty(&whole).unwrap() + "\n");
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
fn concise() {
    let (sources, report) = fixture();
    insta::assert_snapshot!(render(Format::Concise, &report, &sources, RenderOptions::default()));
}

#[test]
fn every_format_is_deterministic() {
    for format in [Format::Text, Format::Json, Format::Sarif, Format::Github, Format::OpenReports, Format::Concise] {
        let (s1, r1) = fixture();
        let (s2, r2) = fixture();
        assert_eq!(
            render(format, &r1, &s1, RenderOptions::default()),
            render(format, &r2, &s2, RenderOptions::default())
        );
    }
}

#[test]
fn openreports() {
    let (sources, report) = fixture();
    insta::assert_snapshot!(render(Format::OpenReports, &report, &sources, RenderOptions::default()));
}

/// The `openAPIV3Schema` of a vendored OpenReports CRD (tests/data/README.md), read with the
/// loader's own YAML translation, made strict: the API server prunes fields a structural schema
/// does not declare, so every object with `properties` also gets `additionalProperties: false`
/// here, and a field of ours that the cluster would silently drop fails the test.
fn openreports_schema(crd: &str) -> serde_json::Value {
    fn strict(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                if o.contains_key("properties") && !o.contains_key("additionalProperties") {
                    o.insert("additionalProperties".into(), false.into());
                }
                o.values_mut().for_each(strict);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strict),
            _ => {}
        }
    }
    let json = crate::load::yaml::translate(crd, &crate::load::Limits::default()).unwrap();
    let crd: serde_json::Value = serde_json::from_str(json.json()).unwrap();
    assert_eq!(crd["spec"]["versions"][0]["name"], "v1alpha1");
    let mut schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
    // `metadata` is an ObjectMeta, which the CRD leaves to the API server (`type: object`).
    schema["properties"]["metadata"] = serde_json::json!({
        "type": "object", "required": ["name"], "additionalProperties": false,
        "properties": {
            "name": {"type": "string", "maxLength": 253, "pattern": "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"},
            "namespace": {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}});
    strict(&mut schema);
    schema
}

fn assert_valid_openreports(list: &serde_json::Value) {
    let report =
        jsonschema::draft7::new(&openreports_schema(include_str!("../../tests/data/openreports.io_reports.yaml")))
            .unwrap();
    let cluster = jsonschema::draft7::new(&openreports_schema(include_str!(
        "../../tests/data/openreports.io_clusterreports.yaml"
    )))
    .unwrap();
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    for item in list["items"].as_array().unwrap() {
        assert_eq!(item["apiVersion"], "openreports.io/v1alpha1");
        let validator = match item["kind"].as_str() {
            Some("Report") => &report,
            Some("ClusterReport") => {
                assert!(item["metadata"].get("namespace").is_none(), "{item}");
                &cluster
            }
            other => panic!("kind {other:?}"),
        };
        let errors: Vec<String> =
            validator.iter_errors(item).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "{errors:#?}\n{item:#}");
    }
}

#[test]
fn openreports_are_valid_against_the_crd_schemas() {
    let (sources, report) = fixture();
    let list: serde_json::Value =
        serde_json::from_str(&render(Format::OpenReports, &report, &sources, RenderOptions::default())).unwrap();
    assert_valid_openreports(&list);
    // One report per input, each finding once.
    assert_eq!(list["items"].as_array().unwrap().len(), report.inputs.len());
    let results: usize = list["items"].as_array().unwrap().iter().map(|i| i["results"].as_array().unwrap().len()).sum();
    assert_eq!(results, report.findings.len());
    // The schemas do check something: an unknown result, a misplaced field, a bad name fail.
    let schema = openreports_schema(include_str!("../../tests/data/openreports.io_reports.yaml"));
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let item = &list["items"][0];
    assert!(validator.is_valid(item));
    for (pointer, value) in [
        ("/results/0/result", serde_json::json!("broken")),
        ("/results/0/severity", serde_json::json!("error")),
        ("/metadata/name", serde_json::json!("Not_A_Name")),
        ("/results/1/properties/line", serde_json::json!(3)),
    ] {
        let mut broken = item.clone();
        *broken.pointer_mut(pointer).unwrap_or_else(|| panic!("{pointer} in {item}")) = value;
        assert!(!validator.is_valid(&broken), "{pointer}");
    }
    let mut broken = item.clone();
    broken["results"][0]["listener"] = "misplaced".into();
    assert!(!validator.is_valid(&broken));
}

/// Loaded CECs (not a hand-made report): a namespaced one's findings go to a `Report` in its
/// namespace, a clusterwide one's to a `ClusterReport`, each result naming its CEC.
#[test]
fn openreports_of_cecs_go_to_their_namespace() {
    let cec = |kind: &str, namespace: &str| {
        format!(
            "apiVersion: cilium.io/v2\nkind: {kind}\nmetadata:\n  name: edge\n{namespace}spec:\n  resources:\n  - \"@type\": type.googleapis.com/envoy.config.listener.v3.Listener\n    name: l\n    filter_chains:\n    - filter_chain_match: {{destination_port: 443}}\n    - filter_chain_match: {{destination_port: 443}}\n"
        )
    };
    let mut sources = Sources::new();
    sources.add(SourceFile::new("team-a.yaml", cec("CiliumEnvoyConfig", "  namespace: team-a\n")));
    sources.add(SourceFile::new("global.yaml", cec("CiliumClusterwideEnvoyConfig", "")));
    let report = crate::analyze(&sources, &crate::Options::default());
    assert!(report.findings.iter().any(|d| d.severity == Severity::Error), "{:?}", report.findings);
    let list: serde_json::Value =
        serde_json::from_str(&render(Format::OpenReports, &report, &sources, RenderOptions::default())).unwrap();
    assert_valid_openreports(&list);
    let items = list["items"].as_array().unwrap();
    let namespaced = items.iter().find(|i| i["kind"] == "Report").unwrap();
    assert_eq!(namespaced["metadata"]["namespace"], "team-a", "{namespaced:#}");
    let fail = namespaced["results"].as_array().unwrap().iter().find(|r| r["result"] == "fail").unwrap();
    assert_eq!(
        fail["resources"],
        serde_json::json!([{"apiVersion": "cilium.io/v2", "kind": "CiliumEnvoyConfig", "name": "edge", "namespace": "team-a"}])
    );
    assert_eq!(fail["properties"]["listener"], "team-a/edge/l");
    assert_eq!(fail["severity"], "high");
    let clusterwide = items.iter().find(|i| i["kind"] == "ClusterReport").unwrap();
    let fail = clusterwide["results"].as_array().unwrap().iter().find(|r| r["result"] == "fail").unwrap();
    assert_eq!(
        fail["resources"],
        serde_json::json!([{"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideEnvoyConfig", "name": "edge"}])
    );
    assert!(clusterwide["summary"]["fail"].as_u64().unwrap() >= 1);
}
