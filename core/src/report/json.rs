//! `--format json`: the one object design.md promises to other tools. Structs (not maps) keep
//! the keys in the documented order; absent values are `null`, never missing keys, so
//! consumers can rely on the shape.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Report, line_column};
use crate::diagnostic::{Diagnostic, Severity};
use crate::source::{Location, Sources};

/// Bumped only when the shape changes incompatibly.
const VERSION: u32 = 1;

#[derive(Serialize)]
struct Output<'r> {
    version: u32,
    inputs: Vec<Input<'r>>,
    findings: Vec<Finding<'r>>,
    summary: Summary,
}

#[derive(Serialize)]
struct Input<'r> {
    source: &'r str,
    /// `null` when the input could not be loaded.
    kind: Option<&'static str>,
    listeners: usize,
    filter_chains: usize,
    warming: usize,
    draining: usize,
    failed: usize,
}

#[derive(Serialize)]
struct Finding<'r> {
    code: &'static str,
    rule: &'static str,
    severity: Severity,
    message: &'r str,
    envoy_error: Option<&'r str>,
    listener: Option<&'r str>,
    filter_chains: &'r [String],
    location: Option<JsonLocation<'r>>,
    related: Vec<JsonRelated<'r>>,
    /// `null` when the finding has no example connection.
    example: Option<&'r BTreeMap<&'static str, serde_json::Value>>,
    notes: &'r [String],
}

#[derive(Serialize)]
struct JsonLocation<'r> {
    source: &'r str,
    pointer: &'r str,
    /// `null` when only the pointer is known (e.g. an input that was not text).
    line: Option<usize>,
    column: Option<usize>,
}

#[derive(Serialize)]
struct JsonRelated<'r> {
    message: &'r str,
    location: JsonLocation<'r>,
}

#[derive(Serialize)]
struct Summary {
    error: usize,
    warning: usize,
    info: usize,
    /// Findings left out (selection, ignores, annotations, baseline); `suppressed_by` says why.
    suppressed: usize,
    suppressed_by: SuppressedBy,
}

#[derive(Serialize)]
struct SuppressedBy {
    not_selected: usize,
    annotation: usize,
    ignore: usize,
    baseline: usize,
}

#[derive(Serialize)]
struct StatisticsOutput<'r> {
    version: u32,
    inputs: Vec<Input<'r>>,
    statistics: Vec<Statistic>,
    summary: Summary,
}

#[derive(Serialize)]
struct Statistic {
    code: &'static str,
    rule: &'static str,
    severity: Severity,
    count: usize,
}

impl Serialize for Severity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

fn location<'r>(sources: &'r Sources, loc: &'r Location) -> JsonLocation<'r> {
    let lc = line_column(sources, loc);
    JsonLocation {
        source: sources.get(loc.source).name(),
        pointer: &loc.pointer,
        line: lc.map(|lc| lc.line),
        column: lc.map(|lc| lc.column),
    }
}

/// Renders the report as pretty-printed JSON with a trailing newline.
pub fn write(report: &Report, sources: &Sources, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let output = Output {
        version: VERSION,
        inputs: inputs(report, sources),
        findings: report.findings.iter().map(|d| finding(d, sources)).collect(),
        summary: summary(report),
    };
    serde_json::to_writer_pretty(&mut *out, &output)?;
    out.write_all(b"\n")
}

/// `--statistics --format json`: `statistics` (per rule and severity, most frequent first) in
/// place of `findings`.
pub fn write_statistics(report: &Report, sources: &Sources, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let output = StatisticsOutput {
        version: VERSION,
        inputs: inputs(report, sources),
        statistics: super::statistics(report)
            .into_iter()
            .map(|s| Statistic { code: s.rule.code, rule: s.rule.name, severity: s.severity, count: s.count })
            .collect(),
        summary: summary(report),
    };
    serde_json::to_writer_pretty(&mut *out, &output)?;
    out.write_all(b"\n")
}

fn inputs<'r>(report: &Report, sources: &'r Sources) -> Vec<Input<'r>> {
    report
        .inputs
        .iter()
        .map(|i| Input {
            source: sources.get(i.source).name(),
            kind: i.kind,
            listeners: i.inventory.listeners,
            filter_chains: i.inventory.filter_chains,
            warming: i.inventory.warming,
            draining: i.inventory.draining,
            failed: i.inventory.failed,
        })
        .collect()
}

/// Each finding as the object `--format json` prints for it (`attach --watch` prints the ones
/// that appear and disappear), without rendering and re-reading the whole report.
pub fn finding_values(report: &Report, sources: &Sources) -> Vec<serde_json::Value> {
    report
        .findings
        .iter()
        .map(|d| serde_json::to_value(finding(d, sources)).expect("a finding serializes: plain data, string keys"))
        .collect()
}

/// The report's `summary` object (findings per severity).
pub fn summary_value(report: &Report) -> serde_json::Value {
    serde_json::to_value(summary(report)).expect("counts serialize")
}

fn summary(report: &Report) -> Summary {
    Summary {
        error: report.count(Severity::Error),
        warning: report.count(Severity::Warning),
        info: report.count(Severity::Info),
        suppressed: report.suppressed.total(),
        suppressed_by: SuppressedBy {
            not_selected: report.suppressed.not_selected,
            annotation: report.suppressed.annotation,
            ignore: report.suppressed.ignored,
            baseline: report.suppressed.baseline,
        },
    }
}

fn finding<'r>(d: &'r Diagnostic, sources: &'r Sources) -> Finding<'r> {
    Finding {
        code: d.rule.code,
        rule: d.rule.name,
        severity: d.severity,
        message: &d.message,
        envoy_error: d.envoy_error.as_deref(),
        listener: d.listener.as_deref(),
        filter_chains: &d.filter_chains,
        location: d.location.as_ref().map(|l| location(sources, l)),
        related: d
            .related
            .iter()
            .map(|r| JsonRelated { message: &r.message, location: location(sources, &r.location) })
            .collect(),
        example: (!d.example.is_empty()).then_some(&d.example),
        notes: &d.notes,
    }
}
