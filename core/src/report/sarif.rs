//! `--format sarif`: SARIF 2.1.0 for code scanning (GitHub, GitLab, IDE viewers).
//!
//! Plain serde structs holding only the properties xdsck fills: smaller and easier to read than
//! the full generated object model, and `tests` validates the output against the official schema.

use std::fmt::Write as _;

use serde::Serialize;

use super::{Report, line_column};
use crate::diagnostic::{Diagnostic, Rule, Severity};
use crate::source::{Location, Sources};

const SCHEMA: &str = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

#[derive(Serialize)]
struct Log<'r> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'r>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'r> {
    tool: Tool,
    /// Our columns count Unicode characters, not SARIF's default UTF-16 code units.
    column_kind: &'static str,
    results: Vec<SarifResult<'r>>,
    /// Only when the run has notes (what it could not check): SARIF's place for what the tool
    /// has to say about the run itself rather than about a place in the input.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    invocations: Vec<Invocation>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
struct Notification {
    level: &'static str,
    message: Text,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    version: &'static str,
    /// Optional in SARIF; given only when the package names its repository.
    #[serde(skip_serializing_if = "Option::is_none")]
    information_uri: Option<&'static str>,
    rules: Vec<ReportingDescriptor>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportingDescriptor {
    id: &'static str,
    name: &'static str,
    short_description: Text,
    full_description: Text,
    help: Help,
    default_configuration: Configuration,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
struct Help {
    text: &'static str,
    markdown: &'static str,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'r> {
    rule_id: &'static str,
    rule_index: usize,
    level: &'static str,
    message: Text,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<SarifLocation<'r>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<SarifLocation<'r>>,
    partial_fingerprints: Fingerprints,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifLocation<'r> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    physical_location: PhysicalLocation,
    logical_locations: Vec<LogicalLocation<'r>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Text>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogicalLocation<'r> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fully_qualified_name: Option<&'r str>,
    kind: &'static str,
}

#[derive(Serialize)]
struct Fingerprints {
    #[serde(rename = "xdsck/v1")]
    v1: String,
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// Renders the report as a SARIF 2.1.0 log with one run, pretty-printed, trailing newline.
pub fn write(report: &Report, sources: &Sources, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    // Only the rules that were found: the log stays small and does not change when a check is
    // added that found nothing.
    let mut rules: Vec<&'static Rule> = report.findings.iter().map(|d| d.rule).collect();
    rules.sort_by_key(|r| r.code);
    rules.dedup_by_key(|r| r.code);

    let results = report
        .findings
        .iter()
        .map(|d| SarifResult {
            rule_id: d.rule.code,
            rule_index: rules.iter().position(|r| r.code == d.rule.code).expect("every finding's rule is listed"),
            level: level(d.severity),
            message: Text { text: message(d) },
            locations: d.location.iter().map(|l| location(sources, l, d.listener.as_deref(), None, None)).collect(),
            related_locations: d
                .related
                .iter()
                .enumerate()
                .map(|(i, r)| location(sources, &r.location, None, Some(i + 1), Some(&r.message)))
                .collect(),
            partial_fingerprints: Fingerprints { v1: d.fingerprint() },
        })
        .collect();

    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: Driver {
                    name: "xdsck",
                    version: env!("CARGO_PKG_VERSION"),
                    information_uri: Some(env!("CARGO_PKG_REPOSITORY")).filter(|r| !r.is_empty()),
                    rules: rules.iter().map(|r| descriptor(r)).collect(),
                },
            },
            column_kind: "unicodeCodePoints",
            results,
            invocations: notifications(report),
        }],
    };
    serde_json::to_writer_pretty(&mut *out, &log)?;
    out.write_all(b"\n")
}

/// The run's notes as one invocation's notifications (none without notes).
fn notifications(report: &Report) -> Vec<Invocation> {
    if report.notes.is_empty() {
        return Vec::new();
    }
    let notes = report.notes.iter().map(|n| Notification { level: "note", message: Text { text: n.clone() } });
    vec![Invocation { execution_successful: true, tool_execution_notifications: notes.collect() }]
}

fn descriptor(rule: &'static Rule) -> ReportingDescriptor {
    ReportingDescriptor {
        id: rule.code,
        name: rule.name,
        short_description: Text { text: rule.summary.to_owned() },
        full_description: Text { text: what_it_finds(rule) },
        help: Help { text: rule.explanation(), markdown: rule.explanation() },
        default_configuration: Configuration { level: level(rule.severity) },
    }
}

/// The explanation's "What it finds" paragraph, or the summary when there is none.
fn what_it_finds(rule: &Rule) -> String {
    let Some(rest) = rule.explanation().split("## What it finds").nth(1) else {
        return rule.summary.to_owned();
    };
    let section = rest.split("\n## ").next().unwrap_or_default().trim();
    if section.is_empty() { rule.summary.to_owned() } else { section.to_owned() }
}

/// The message a code-scanning UI shows: the finding, with Envoy's own words when it rejects it.
fn message(d: &Diagnostic) -> String {
    let mut text = d.message.clone();
    if let Some(e) = d.envoy_error() {
        text.push_str("\nEnvoy rejects it with: ");
        text.push_str(e);
    }
    for note in &d.notes {
        let _ = write!(text, "\nnote: {note}");
    }
    text
}

fn location<'r>(
    sources: &'r Sources,
    loc: &'r Location,
    listener: Option<&'r str>,
    id: Option<usize>,
    message: Option<&str>,
) -> SarifLocation<'r> {
    let mut logical = vec![LogicalLocation { name: None, fully_qualified_name: Some(&loc.pointer), kind: "object" }];
    if let Some(name) = listener {
        logical.push(LogicalLocation { name: Some(name), fully_qualified_name: None, kind: "resource" });
    }
    SarifLocation {
        id,
        physical_location: PhysicalLocation {
            artifact_location: ArtifactLocation { uri: uri_reference(sources.get(loc.source).name()) },
            region: line_column(sources, loc).map(|lc| Region { start_line: lc.line, start_column: lc.column }),
        },
        logical_locations: logical,
        message: message.map(|m| Text { text: m.to_owned() }),
    }
}

/// The source name as a URI reference: relative paths stay relative (code scanning resolves
/// them against the checkout); characters a URI cannot hold are percent-encoded.
fn uri_reference(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '\\' => out.push('/'),
            'A'..='Z'
            | 'a'..='z'
            | '0'..='9'
            | '-'
            | '.'
            | '_'
            | '~'
            | '/'
            | '!'
            | '$'
            | '&'
            | '\''
            | '('
            | ')'
            | '*'
            | '+'
            | ','
            | ';'
            | '='
            | ':'
            | '@' => out.push(c),
            _ => {
                let mut buf = [0; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_keep_relative_paths_and_encode_the_rest() {
        assert_eq!(uri_reference("testdata/a b.json"), "testdata/a%20b.json");
        assert_eq!(uri_reference("<stdin>"), "%3Cstdin%3E");
        assert_eq!(uri_reference("/abs/ü.yaml"), "/abs/%C3%BC.yaml");
    }
}
