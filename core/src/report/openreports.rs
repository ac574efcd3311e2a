//! `--format openreports`: the findings as OpenReports (`openreports.io/v1alpha1`) objects, how
//! Kubernetes-native checkers publish results (Kyverno's Policy Reporter shows them), ready for
//! `kubectl apply -f`.
//!
//! One `Report` per input; a CiliumEnvoyConfig input's findings go to one `Report` per namespace
//! (each result referencing its CEC), a CiliumClusterwideEnvoyConfig's to a `ClusterReport`. All
//! of them in one `v1` `List`. No timestamps: the same input gives the same bytes.
//!
//! Mapping: `policy` is the rule's name, `rule` its code; an error (Envoy rejects) is `fail`,
//! severity `high`; a warning (accepted, traffic lost) is `warn`, `medium`; an info is `pass`,
//! `info`; an input that could not be read (`XDS0xx` error) is `error`, the result OpenReports
//! keeps for a check that could not be evaluated. `properties` carries the listener, the chains,
//! where it is and Envoy's error text.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Report, line_column};
use crate::diagnostic::{Diagnostic, Severity};
use crate::source::{SourceId, Sources};

const API_VERSION: &str = "openreports.io/v1alpha1";
const CILIUM_API_VERSION: &str = "cilium.io/v2";

#[derive(Serialize)]
struct List<'r> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    items: Vec<OpenReport<'r>>,
}

#[derive(Serialize)]
struct OpenReport<'r> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata,
    source: &'static str,
    summary: Summary,
    results: Vec<OpenResult<'r>>,
}

#[derive(Serialize)]
struct Metadata {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    labels: BTreeMap<&'static str, &'static str>,
    annotations: BTreeMap<&'static str, String>,
}

#[derive(Serialize, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ObjectRef {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
}

#[derive(Serialize, Default)]
struct Summary {
    pass: usize,
    fail: usize,
    warn: usize,
    error: usize,
    skip: usize,
}

#[derive(Serialize)]
struct OpenResult<'r> {
    source: &'static str,
    policy: &'static str,
    rule: &'static str,
    category: &'static str,
    message: &'r str,
    result: &'static str,
    severity: &'static str,
    scored: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resources: Vec<ObjectRef>,
    properties: BTreeMap<&'static str, String>,
}

/// The report a finding belongs to: its input, and for a CEC input the namespace of its
/// CiliumEnvoyConfig (`None`: a CiliumClusterwideEnvoyConfig, `Some("")`: not a CEC listener).
type Key = (SourceId, Option<String>);

/// What a CEC listener's name says (`<namespace>/<cec>/<listener>`, as the Cilium agent names
/// it): the CEC, `namespace` empty for a clusterwide one.
fn cec_of(listener: &str) -> Option<(&str, &str)> {
    let mut parts = listener.splitn(3, '/');
    let (namespace, cec, _) = (parts.next()?, parts.next()?, parts.next()?);
    (!cec.is_empty()).then_some((namespace, cec))
}

/// A DNS-1123 subdomain name: lowercase letters, digits and `-`, at most 63 characters here.
fn object_name(parts: &[&str]) -> String {
    let mut name = String::from("xdsck");
    for p in parts {
        name.push('-');
        name.extend(p.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }));
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.truncate(63);
    out.trim_end_matches('-').to_owned()
}

fn outcome(d: &Diagnostic) -> (&'static str, &'static str) {
    match d.severity {
        Severity::Error if d.rule.code.starts_with("XDS0") => ("error", "high"),
        Severity::Error => ("fail", "high"),
        Severity::Warning => ("warn", "medium"),
        Severity::Info => ("pass", "info"),
    }
}

/// Writes the report as OpenReports `Report`s, one per input (a clean input too: "nothing found" is
/// worth publishing), in one `v1` `List`.
pub fn write(report: &Report, sources: &Sources, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let cec_input = |id: SourceId| report.inputs.iter().any(|i| i.source == id && i.kind == Some("CiliumEnvoyConfig"));
    let first_input = report.inputs.first().map(|i| i.source);
    let mut groups: BTreeMap<Key, Vec<OpenResult<'_>>> = BTreeMap::new();
    // Every input has a report, a clean one too: "nothing found" is a result worth publishing.
    // (Not a CEC input: which namespaces its findings go to is known from the findings only.)
    for i in &report.inputs {
        if !cec_input(i.source) {
            groups.entry((i.source, Some(String::new()))).or_default();
        }
    }
    for d in &report.findings {
        // A finding about no place in particular goes with its first related place, else with
        // the first input.
        let Some(source) =
            d.location.as_ref().or_else(|| d.related.first().map(|r| &r.location)).map(|l| l.source).or(first_input)
        else {
            continue;
        };
        let cec = d.listener.as_deref().filter(|_| cec_input(source)).and_then(cec_of);
        let key = match cec {
            Some(("", _)) => (source, None),
            Some((namespace, _)) => (source, Some(namespace.to_owned())),
            None => (source, Some(String::new())),
        };
        let (result, severity) = outcome(d);
        let mut properties = BTreeMap::new();
        properties.insert("code", d.rule.code.to_owned());
        if let Some(l) = &d.listener {
            properties.insert("listener", l.to_string());
        }
        if !d.filter_chains.is_empty() {
            properties.insert("filter_chains", d.filter_chains.join(", "));
        }
        if let Some(loc) = &d.location {
            properties.insert("source", sources.get(loc.source).name().to_owned());
            if !loc.pointer.is_empty() {
                properties.insert("pointer", loc.pointer.clone());
            }
            if let Some(lc) = line_column(sources, loc) {
                properties.insert("line", lc.line.to_string());
                properties.insert("column", lc.column.to_string());
            }
        }
        if let Some(e) = d.envoy_error() {
            properties.insert("envoy_error", e.to_owned());
        }
        let resources = cec
            .map(|(namespace, name)| {
                vec![ObjectRef {
                    api_version: CILIUM_API_VERSION,
                    kind: if namespace.is_empty() { "CiliumClusterwideEnvoyConfig" } else { "CiliumEnvoyConfig" },
                    name: name.to_owned(),
                    namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
                }]
            })
            .unwrap_or_default();
        groups.entry(key).or_default().push(OpenResult {
            source: "xdsck",
            policy: d.rule.name,
            rule: d.rule.code,
            category: "Envoy listeners",
            message: &d.message,
            result,
            severity,
            scored: true,
            resources,
            properties,
        });
    }
    let items = groups
        .into_iter()
        .map(|((source, namespace), results)| {
            let input = sources.get(source).name();
            let mut summary = Summary::default();
            for r in &results {
                match r.result {
                    "pass" => summary.pass += 1,
                    "fail" => summary.fail += 1,
                    "warn" => summary.warn += 1,
                    _ => summary.error += 1,
                }
            }
            let (kind, name, namespace) = match namespace.as_deref() {
                None => ("ClusterReport", object_name(&[input, "clusterwide"]), None),
                Some("") => ("Report", object_name(&[input]), None),
                Some(ns) => ("Report", object_name(&[input]), Some(ns.to_owned())),
            };
            OpenReport {
                api_version: API_VERSION,
                kind,
                metadata: Metadata {
                    name,
                    namespace,
                    labels: BTreeMap::from([("app.kubernetes.io/managed-by", "xdsck")]),
                    annotations: BTreeMap::from([("xdsck/input", input.to_owned())]),
                },
                source: "xdsck",
                summary,
                results,
            }
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &List { api_version: "v1", kind: "List", items })?;
    out.write_all(b"\n")
}
