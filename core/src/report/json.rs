//! `--format json`: the one object the README and docs/architecture.md promise to other tools. Structs (not maps) keep
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
pub(super) struct Output<'r> {
    version: u32,
    inputs: Vec<Input<'r>>,
    findings: Vec<Finding<'r>>,
    summary: Summary,
}

#[derive(Serialize)]
struct Input<'r> {
    source: &'r str,
    /// The proxy of a peer's map of several this input is (namespace/pod): only on such inputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy: Option<&'r str>,
    /// `null` when the input could not be loaded.
    kind: Option<&'static str>,
    listeners: usize,
    filter_chains: usize,
    /// Live listeners' `default_filter_chain`s (not among `filter_chains`).
    default_filter_chains: usize,
    /// Route tables inline in live listeners' HTTP connection managers.
    inline_route_tables: usize,
    warming: usize,
    draining: usize,
    failed: usize,
    /// RouteConfiguration resources given on their own (RDS), checked by the route checks.
    route_tables: usize,
    /// Clusters of the input's cluster list, which routes are checked against.
    clusters: usize,
    /// xDS resources of other types (endpoints, secrets; a CiliumEnvoyConfig's clusters): not
    /// checked.
    other_resources: usize,
    /// Documents that are not Envoy configuration (each also an `XDS302` finding).
    skipped_documents: usize,
}

#[derive(Serialize)]
pub(super) struct Finding<'r> {
    code: &'static str,
    rule: &'static str,
    severity: Severity,
    message: &'r str,
    envoy_error: Option<&'r str>,
    listener: Option<&'r str>,
    /// The proxy of a peer's map of several (namespace/pod): only on such inputs' findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy: Option<&'r str>,
    filter_chains: &'r [String],
    location: Option<JsonLocation<'r>>,
    related: Vec<JsonRelated<'r>>,
    /// `null` when the finding has no example connection.
    example: Option<&'r BTreeMap<&'static str, serde_json::Value>>,
    notes: &'r [crate::diagnostic::Note],
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
    /// What the run could not check for want of input (e.g. routes' clusters without a
    /// cluster list), once per run.
    notes: Vec<String>,
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
///
/// The findings are most of it (100k of them are 150 MB): they are serialized a batch at a
/// time on every core and written in order between the rest of the object, which is serialized
/// once, with an empty list. Each is the same bytes that serializing the whole object would give.
pub fn write(report: &Report, sources: &Sources, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let frame = serde_json::to_string_pretty(&output(report, sources, Vec::new()))?;
    // The only line that can read so: keys are not user text, and user text has no raw newline.
    let empty = "\n  \"findings\": [],\n";
    let at = frame.find(empty).ok_or_else(|| std::io::Error::other("the report has a findings list"))?;
    if report.findings.is_empty() {
        out.write_all(frame.as_bytes())?;
        return out.write_all(b"\n");
    }
    out.write_all(&frame.as_bytes()[..at])?;
    out.write_all(b"\n  \"findings\": [")?;
    // A batch is rendered on every core while the one before it is written here: at 100k
    // findings the writing (150 MB) no longer waits for the rendering or the other way round,
    // and no more than two batches are held (a thousand findings are about 1.5 MB: at 4096 a
    // batch, the two were 12 MB on top of the model, at the run's peak).
    let render = |batch: &[Diagnostic]| crate::parallel::par_map(batch, |d| element(&finding(d, sources)));
    let mut first = true;
    let mut write_batch = |rendered: Vec<std::io::Result<Vec<u8>>>| -> std::io::Result<()> {
        for r in rendered {
            out.write_all(if std::mem::take(&mut first) { b"\n" } else { b",\n" })?;
            out.write_all(element_of(&r?))?;
        }
        Ok(())
    };
    let mut batches = report.findings.chunks(1024);
    let mut ready = batches.next().map(render);
    for batch in batches {
        let done = ready.take().unwrap_or_default();
        let (rendered, written) = crate::parallel::beside(|| render(batch), || write_batch(done));
        written?;
        ready = Some(rendered);
    }
    write_batch(ready.unwrap_or_default())?;
    out.write_all(b"\n  ],\n")?;
    out.write_all(&frame.as_bytes()[at + empty.len()..])?;
    out.write_all(b"\n")
}

/// One finding serialized as pretty JSON two lists deep (`[[finding]]`), so that it is indented
/// as an element of `findings` is: the formatter's own indentation, with no second pass over
/// the text to indent it. [`element_of`] is the element in it.
fn element(f: &Finding<'_>) -> std::io::Result<Vec<u8>> {
    // Room for a finding of a tenant-scale report (1 to 1.5 KB) at once: grown from empty, the
    // buffer was regrown and copied four times per finding, 1% of such a run.
    let mut nested = Vec::with_capacity(2048);
    serde_json::to_writer_pretty(&mut nested, &[[f]])?;
    Ok(nested)
}

/// The finding in what [`element`] serialized: the lists' own brackets (`[\n  [\n` before it,
/// `\n  ]\n]` after) are left out where it is written, not cut off (and the rest moved) first.
fn element_of(nested: &[u8]) -> &[u8] {
    const OPEN: &[u8] = b"[\n  [\n";
    const CLOSE: &[u8] = b"\n  ]\n]";
    debug_assert!(nested.starts_with(OPEN) && nested.ends_with(CLOSE));
    &nested[OPEN.len()..nested.len() - CLOSE.len()]
}

pub(super) fn output<'r>(report: &'r Report, sources: &'r Sources, findings: Vec<Finding<'r>>) -> Output<'r> {
    Output { version: VERSION, inputs: inputs(report, sources), findings, summary: summary(report) }
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

fn inputs<'r>(report: &'r Report, sources: &'r Sources) -> Vec<Input<'r>> {
    report
        .inputs
        .iter()
        .map(|i| Input {
            source: sources.get(i.source).name(),
            proxy: i.proxy.as_deref(),
            kind: i.kind,
            listeners: i.inventory.listeners,
            filter_chains: i.inventory.filter_chains,
            default_filter_chains: i.inventory.default_filter_chains,
            inline_route_tables: i.inventory.inline_route_tables,
            warming: i.inventory.warming,
            draining: i.inventory.draining,
            failed: i.inventory.failed,
            route_tables: i.inventory.route_tables,
            clusters: i.inventory.clusters,
            other_resources: i.inventory.other_resources,
            skipped_documents: i.inventory.skipped_documents,
        })
        .collect()
}

/// Each finding as the object `--format json` prints for it (`attach --watch` prints the ones
/// that appear and disappear), without rendering and re-reading the whole report.
pub fn finding_values(report: &Report, sources: &Sources) -> Vec<serde_json::Value> {
    report.findings.iter().map(|d| finding_value(d, sources)).collect()
}

/// One finding as an element of `findings` in the JSON report.
pub fn finding_value(d: &Diagnostic, sources: &Sources) -> serde_json::Value {
    serde_json::to_value(finding(d, sources)).expect("a finding serializes: plain data, string keys")
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
        notes: report.notes.clone(),
    }
}

pub(super) fn finding<'r>(d: &'r Diagnostic, sources: &'r Sources) -> Finding<'r> {
    Finding {
        code: d.rule.code,
        rule: d.rule.name,
        severity: d.severity,
        message: &d.message,
        envoy_error: d.envoy_error(),
        listener: d.listener.as_deref(),
        proxy: d.proxy(),
        filter_chains: &d.filter_chains,
        location: d.location.as_ref().map(|l| location(sources, l)),
        related: d
            .related
            .iter()
            .map(|r| JsonRelated { message: &r.message, location: location(sources, &r.location) })
            .collect(),
        example: (!d.example().is_empty()).then_some(d.example()),
        notes: &d.notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Diagnostic;

    /// The whole object serialized at once: what [`write`] must print, byte for byte.
    fn at_once(report: &Report, sources: &Sources) -> String {
        let findings = report.findings.iter().map(|d| finding(d, sources)).collect();
        serde_json::to_string_pretty(&output(report, sources, findings)).unwrap() + "\n"
    }

    #[test]
    fn batched_output_is_the_object_serialized_at_once() {
        let (sources, mut report) = crate::report::tests::fixture();
        let render = |report: &Report| {
            let mut out = Vec::new();
            write(report, &sources, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(render(&report), at_once(&report, &sources));
        // More findings than one batch, with text that needs escaping.
        let many: Vec<Diagnostic> = (0..9000)
            .map(|i| {
                let mut d = report.findings[i % report.findings.len()].clone();
                d.message = format!("{} \"{i}\"\n\tü", d.message);
                d
            })
            .collect();
        report.findings = many;
        assert_eq!(render(&report), at_once(&report, &sources));
        report.findings.clear();
        assert_eq!(render(&report), at_once(&report, &sources));
    }
}
