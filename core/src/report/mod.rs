//! Rendering a [`Report`]: text for people, JSON for programs, SARIF for code scanning,
//! GitHub workflow annotations, OpenReports for Kubernetes. Lines and columns are computed here,
//! from byte offsets.

pub mod concise;
pub mod diff;
pub mod github;
pub mod graph;
pub mod json;
pub mod line;
pub mod openreports;
pub mod sarif;
pub mod summary;
pub mod text;
pub mod trace;

#[cfg(test)]
mod tests;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::Inventory;
use crate::source::{LineColumn, Location, SourceId, Sources};

/// Everything one run found, ready to render.
#[derive(Debug, Default)]
pub struct Report {
    /// One line per input, in the order the inputs were given.
    pub inputs: Vec<InputSummary>,
    /// Sorted with [`Diagnostic::sort_key`].
    pub findings: Vec<Diagnostic>,
    /// How many inputs could not be loaded (their `XDS0xx` finding is in `findings`).
    pub failed_inputs: usize,
    /// The findings left out of `findings`, by why.
    pub suppressed: Suppressed,
    /// What the run could not check for want of input, said once for the whole run (a check
    /// that had nothing to run on is not "no findings").
    pub notes: Vec<String>,
}

/// How many findings a run left out, by why: every one is counted, none vanishes silently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Suppressed {
    /// Of a rule not selected (`select`, `ignore`) that the run found anyway: the Gateway
    /// model's. A check not selected is not run, so nothing of it is counted.
    pub not_selected: usize,
    /// By an `xdsck.io/ignore` annotation on the listener's CiliumEnvoyConfig.
    pub annotation: usize,
    /// By an `[[ignore]]` of the config file (a listener or path glob).
    pub ignored: usize,
    /// Recorded in the baseline.
    pub baseline: usize,
}

impl Suppressed {
    /// Every finding left out, for whatever reason: what the tally says was suppressed.
    pub fn total(&self) -> usize {
        self.not_selected + self.annotation + self.ignored + self.baseline
    }

    /// `3 suppressed: 2 not selected, 1 in the baseline`, or `None` when nothing was.
    pub fn describe(&self) -> Option<String> {
        if self.total() == 0 {
            return None;
        }
        let parts: Vec<String> = [
            (self.not_selected, "not selected"),
            (self.annotation, "by annotation"),
            (self.ignored, "by [[ignore]]"),
            (self.baseline, "in the baseline"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| format!("{n} {why}"))
        .collect();
        Some(format!("{} suppressed: {}", self.total(), parts.join(", ")))
    }
}

/// One input's line in the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSummary {
    /// The input.
    pub source: SourceId,
    /// e.g. `config_dump`, `CiliumEnvoyConfig`; `None` when the input could not be loaded.
    pub kind: Option<&'static str>,
    /// What it holds (listeners, chains, ...), so a clean input still shows it was read.
    pub inventory: Inventory,
    /// The distinct `version_info`s of its live listeners (a config_dump's dynamic listeners),
    /// sorted: what `attach --watch` calls the version of a dump.
    pub versions: Vec<String>,
    /// Whether the input was YAML, read through its translation into JSON: its text is then
    /// not the JSON the renderer could reformat.
    pub yaml: bool,
    /// The proxy of a peer's map of several this input is, by its name there.
    pub proxy: Option<String>,
}

impl InputSummary {
    /// The summary of a loaded input.
    pub fn of(input: &crate::model::Input<'_>) -> Self {
        Self {
            source: input.source,
            kind: Some(input.kind.as_str()),
            inventory: input.inventory(),
            versions: input.versions(),
            yaml: input.translation.is_some(),
            proxy: input.proxy.as_ref().and_then(|p| p.name.clone()),
        }
    }

    /// The summary of an input that could not be loaded (`yaml`: its text was YAML and was
    /// translated before loading failed).
    pub fn failed(source: SourceId, yaml: bool) -> Self {
        Self { source, kind: None, inventory: Inventory::default(), versions: Vec::new(), yaml, proxy: None }
    }
}

impl Report {
    /// Sorts the findings into their output order.
    pub fn sort(&mut self) {
        // Mostly they already are (a tenant-scale run's findings are one check's, in input
        // order): then nothing is sorted, for the sort's scratch room is half the findings
        // (12 MB of 100k, at the peak of the run).
        if !self.findings.is_sorted_by(|a, b| a.sort_key() <= b.sort_key()) {
            self.findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        }
    }

    /// Count of findings per severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|d| d.severity == severity).count()
    }

    /// The highest severity found.
    pub fn max_severity(&self) -> Option<Severity> {
        self.findings.iter().map(|d| d.severity).max()
    }
}

/// Options shared by the renderers.
#[derive(Debug, Clone, Copy, Default)]
pub struct RenderOptions {
    /// ANSI colours (text only). The CLI sets this only on a terminal and never with NO_COLOR.
    pub color: bool,
    /// Text only: the findings and nothing else (no per-input lines, no tally).
    pub quiet: bool,
}

/// How many findings one rule has at one severity: a line of `--statistics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCount {
    /// The rule counted.
    pub rule: &'static crate::diagnostic::Rule,
    /// The severity its findings were reported at (an override can make one rule count at two).
    pub severity: Severity,
    /// How many findings.
    pub count: usize,
}

/// Findings counted per rule and severity, the most frequent first (then by code), as
/// `--statistics` prints them.
pub fn statistics(report: &Report) -> Vec<RuleCount> {
    let mut counts: std::collections::BTreeMap<(&'static str, Severity), RuleCount> = Default::default();
    for d in &report.findings {
        counts
            .entry((d.rule.code, d.severity))
            .or_insert(RuleCount { rule: d.rule, severity: d.severity, count: 0 })
            .count += 1;
    }
    let mut out: Vec<RuleCount> = counts.into_values().collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.rule.code.cmp(b.rule.code)).then(b.severity.cmp(&a.severity)));
    out
}

/// Writes the per-rule counts instead of the findings (`--statistics`): text or JSON.
pub fn write_statistics(
    format: Format,
    report: &Report,
    sources: &Sources,
    options: RenderOptions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Json => json::write_statistics(report, sources, out),
        _ => text::write_statistics(report, sources, options, out),
    }
}

/// The output formats, one renderer each. Every renderer is a pure function of the report and
/// its sources, so the CLI and the web page print the same bytes for the same input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For people: rustc-style snippets with the finding's place.
    Text,
    /// The stable JSON report (`version` 1) for scripts and the web page.
    Json,
    /// SARIF 2.1.0, for code-scanning upload.
    Sarif,
    /// GitHub Actions workflow commands (`::error file=...`), one line per finding.
    Github,
    /// OpenReports `Report`s (Kubernetes), in a `v1` `List`.
    OpenReports,
    /// One line per finding: `path:line:col: CODE [severity] message`.
    Concise,
}

impl Format {
    /// The name `--format` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Sarif => "sarif",
            Format::Github => "github",
            Format::OpenReports => "openreports",
            Format::Concise => "concise",
        }
    }
}

/// Renders `report` in `format`.
pub fn render(format: Format, report: &Report, sources: &Sources, options: RenderOptions) -> String {
    let mut out = Vec::new();
    write(format, report, sources, options, &mut out).expect("writing into memory does not fail");
    String::from_utf8(out).expect("every renderer writes UTF-8")
}

/// Writes `report` in `format` as it renders it: 100k findings are 100+ MB of output that need
/// not be held in memory next to the input. Wrap `out` in a `BufWriter` if it is unbuffered.
pub fn write(
    format: Format,
    report: &Report,
    sources: &Sources,
    options: RenderOptions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Text => text::write(report, sources, options, out),
        Format::Json => json::write(report, sources, out),
        Format::Sarif => sarif::write(report, sources, out),
        Format::Github => github::write(report, sources, out),
        Format::OpenReports => openreports::write(report, sources, out),
        Format::Concise => concise::write(report, sources, out),
    }
}

/// Line and column of a location, when it has an offset.
fn line_column(sources: &Sources, location: &Location) -> Option<LineColumn> {
    location.offset.map(|offset| sources.get(location.source).line_column(offset))
}

/// `1 error`, `2 errors`: the tally and summary lines read as English.
fn plural(count: usize, one: &str) -> String {
    if count == 1 { format!("{count} {one}") } else { format!("{count} {one}s") }
}

/// Every rule as `{"version": 1, "rules": [{code, name, severity, group, summary, input_problem,
/// explanation}]}`: what `xdsck rules --format json` prints and the web page shows.
pub fn rules_json() -> String {
    let rules: Vec<serde_json::Value> = crate::codes::ALL
        .iter()
        .map(|row| {
            let r = row.rule;
            serde_json::json!({
                "code": r.code,
                "name": r.name,
                "severity": r.severity.as_str(),
                "group": row.group.as_str(),
                "summary": r.summary,
                // XDS0xx: the input could not be read all through; selection never drops them,
                // and the page lists them apart from Envoy's verdicts.
                "input_problem": row.group == crate::codes::Group::Input,
                "explanation": r.explanation(),
            })
        })
        .collect();
    let mut out =
        serde_json::to_string_pretty(&serde_json::json!({ "version": 1, "rules": rules })).expect("plain JSON values");
    out.push('\n');
    out
}
