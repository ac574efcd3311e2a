//! `--format text`: findings that read like a compiler's errors (annotate-snippets, the crate
//! rustc uses), then one line per input and a tally.

use std::fmt::Write;

use annotate_snippets::{Annotation, AnnotationKind, Element, Group, Level, Origin, Renderer, Snippet};

use super::{InputSummary, RenderOptions, Report, plural};
use crate::diagnostic::{Diagnostic, Severity};
use crate::source::{SourceFile, SourceId, Sources};

/// Annotations this many lines apart or closer share one snippet; farther ones get their own.
const NEARBY_LINES: usize = 8;
/// Longer lines (minified JSON) are cut to a window around the annotation, so one finding in a
/// one-line 100 MB dump prints a few dozen characters, not the whole dump.
const MAX_LINE_BYTES: usize = 240;
const WINDOW_BEFORE: usize = 60;
const WINDOW_AFTER: usize = 120;

/// Renders every finding, then the per-input lines and the tally.
pub fn write(
    report: &Report,
    sources: &Sources,
    options: RenderOptions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let renderer = if options.color { Renderer::styled() } else { Renderer::plain() };
    // Snippets are the costly part of text output (seconds for 100k findings): rendered a batch
    // at a time on every core, written in order; one batch is all that is held.
    for batch in report.findings.chunks(4096) {
        let rendered = crate::parallel::par_map(batch, |d| renderer.render(&[group(d, sources)]));
        for r in rendered {
            writeln!(out, "{r}\n")?;
        }
    }
    footer(report, sources, options, out)
}

/// `--statistics`: one line per rule and severity, the count first, then the footer.
pub fn write_statistics(
    report: &Report,
    sources: &Sources,
    options: RenderOptions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let stats = super::statistics(report);
    let width = stats.first().map_or(1, |s| s.count.to_string().len());
    for s in &stats {
        writeln!(out, "{:>width$}  {}  {:<7}  {}", s.count, s.rule.code, s.severity.as_str(), s.rule.name)?;
    }
    if !stats.is_empty() && !options.quiet {
        writeln!(out)?;
    }
    footer(report, sources, options, out)
}

/// One line per input, and the tally (none with `quiet`).
fn footer(
    report: &Report,
    sources: &Sources,
    options: RenderOptions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    if options.quiet {
        return Ok(());
    }
    for input in &report.inputs {
        writeln!(out, "{}", input_line(input, sources))?;
    }
    writeln!(out, "{}", tally(report))
}

/// `dump.json: config_dump, 3 listeners, 41 filter chains (1 warming, 1 failed update)`.
fn input_line(input: &InputSummary, sources: &Sources) -> String {
    let name = sources.get(input.source).name();
    let Some(kind) = input.kind else {
        return format!("{name}: not loaded");
    };
    let inv = &input.inventory;
    let mut line =
        format!("{name}: {kind}, {}, {}", plural(inv.listeners, "listener"), plural(inv.filter_chains, "filter chain"));
    let extra: Vec<String> = [(inv.warming, "warming"), (inv.draining, "draining")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .chain((inv.failed > 0).then(|| plural(inv.failed, "failed update")))
        .collect();
    if !extra.is_empty() {
        let _ = write!(line, " ({})", extra.join(", "));
    }
    line
}

/// `2 errors, 1 warning, 0 infos`, or `no findings`; then what was suppressed, if anything
/// (`(3 suppressed: 2 not selected, 1 in the baseline)`).
fn tally(report: &Report) -> String {
    let mut line = if report.findings.is_empty() {
        "no findings".to_owned()
    } else {
        format!(
            "{}, {}, {}",
            plural(report.count(Severity::Error), "error"),
            plural(report.count(Severity::Warning), "warning"),
            plural(report.count(Severity::Info), "info"),
        )
    };
    if let Some(suppressed) = report.suppressed.describe() {
        let _ = write!(line, " ({suppressed})");
    }
    line
}

fn level(severity: Severity) -> Level<'static> {
    match severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Info => Level::INFO,
    }
}

/// A place to mark in a snippet.
struct Mark<'d> {
    source: SourceId,
    offset: usize,
    line: usize,
    label: Option<&'d str>,
    primary: bool,
}

fn group<'d>(d: &'d Diagnostic, sources: &'d Sources) -> Group<'d> {
    let mut elements: Vec<Element<'d>> = Vec::new();
    let mut marks = Vec::new();
    let mut unplaced_notes = Vec::new();

    let places = d
        .location
        .iter()
        .map(|l| (l, None, true))
        .chain(d.related.iter().map(|r| (&r.location, Some(r.message.as_str()), false)));
    for (loc, label, primary) in places {
        match loc.offset {
            Some(offset) => {
                // A location may fall inside a multi-byte character (an error position in
                // bytes, text that was not UTF-8): mark from the character's start.
                let text = sources.get(loc.source).text();
                let mut offset = offset.min(text.len());
                while !text.is_char_boundary(offset) {
                    offset -= 1;
                }
                let line = sources.get(loc.source).line_column(offset).line;
                marks.push(Mark { source: loc.source, offset, line, label, primary });
            }
            // Only the pointer is known: name the file, and say where inside it in a note.
            None if primary => elements.push(Origin::path(sources.get(loc.source).name()).into()),
            None => unplaced_notes.push(format!(
                "{}: {} {}",
                label.unwrap_or("see also"),
                sources.get(loc.source).name(),
                loc.pointer
            )),
        }
    }
    for cluster in clusters(marks) {
        elements.extend(snippet(&cluster, sources.get(cluster[0].source)));
    }

    let mut notes: Vec<String> = Vec::new();
    if let Some(e) = &d.envoy_error {
        notes.push(format!("Envoy rejects it with: {e}"));
    }
    notes.extend(d.notes.iter().cloned());
    notes.extend(unplaced_notes);
    elements.extend(notes.into_iter().map(|n| Element::from(Level::NOTE.message(n))));
    if !d.example.is_empty() {
        let example: Vec<String> = d
            .example
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        elements.push(Level::HELP.with_name("example").message(example.join(" ")).into());
    }
    // Every finding about a listener names it, whatever its message says.
    if let Some(listener) = &d.listener {
        elements.push(Level::NOTE.with_name("listener").message(listener.as_str()).into());
    }
    // An empty pointer (the whole input, e.g. a file that could not be read) says nothing.
    if let Some(loc) = d.location.as_ref().filter(|l| !l.pointer.is_empty()) {
        elements.push(Level::NOTE.with_name("pointer").message(loc.pointer.as_str()).into());
    }
    level(d.severity).primary_title(d.message.as_str()).id(d.rule.code).elements(elements)
}

/// Groups marks that are in the same source and near each other, keeping the primary first.
fn clusters(marks: Vec<Mark<'_>>) -> Vec<Vec<Mark<'_>>> {
    let mut out: Vec<Vec<Mark<'_>>> = Vec::new();
    for mark in marks {
        let near = out
            .iter_mut()
            .find(|c| c[0].source == mark.source && c.iter().any(|m| m.line.abs_diff(mark.line) <= NEARBY_LINES));
        match near {
            Some(c) => c.push(mark),
            None => out.push(vec![mark]),
        }
    }
    out
}

/// Byte range of a line (one-based) in the file's text, without its line break.
fn line_range(file: &SourceFile, line: usize) -> std::ops::Range<usize> {
    let text = file.line_text(line);
    // `line_text` borrows from the file's text, so its address gives its offset.
    let start = text.as_ptr() as usize - file.text().as_ptr() as usize;
    start..start + text.len()
}

/// The span to mark: from the offset to the end of its line (the key, the value, the opening
/// bracket), or one character when the line ends there.
fn mark_span(text: &str, offset: usize, line_end: usize) -> std::ops::Range<usize> {
    // An offset on a line's `\r` lies past the line as shown (its break is cut off).
    let offset = offset.min(line_end);
    let rest = text[offset..line_end].trim_end();
    let end = if rest.is_empty() {
        text[offset..].chars().next().map_or(offset, |c| offset + c.len_utf8())
    } else {
        offset + rest.len()
    };
    offset..end.min(line_end.max(offset))
}

fn snippet<'d>(cluster: &[Mark<'d>], file: &'d SourceFile) -> Vec<Element<'d>> {
    let text = file.text();
    let first = cluster.iter().map(|m| m.line).min().expect("a cluster is never empty");
    let last = cluster.iter().map(|m| m.line).max().expect("a cluster is never empty");
    let lines = line_range(file, first).start..line_range(file, last).end;

    if (first..=last).any(|l| line_range(file, l).len() > MAX_LINE_BYTES) {
        return cluster.iter().flat_map(|m| long_line_snippet(m, file)).collect();
    }
    let annotations = cluster.iter().map(|m| {
        let line_end = line_range(file, m.line).end;
        let span = mark_span(text, m.offset, line_end);
        annotation(m, span.start - lines.start..span.end - lines.start)
    });
    vec![
        Snippet::source(&text[lines.clone()])
            .line_start(first)
            .path(file.name())
            .fold(true)
            .annotations(annotations.collect::<Vec<_>>())
            .into(),
    ]
}

/// A mark on a very long line: a window of the line around it, with the real line and column
/// given in the header (the renderer would count the column from the window's start).
fn long_line_snippet<'d>(mark: &Mark<'d>, file: &'d SourceFile) -> Vec<Element<'d>> {
    let text = file.text();
    let line = line_range(file, mark.line);
    let mut start = mark.offset.saturating_sub(WINDOW_BEFORE).max(line.start);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let mut end = (mark.offset + WINDOW_AFTER).min(line.end);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let span = mark_span(text, mark.offset, end);
    let column = file.line_column(mark.offset).column;
    vec![
        Origin::path(file.name()).line(mark.line).char_column(column).into(),
        Snippet::source(&text[start..end])
            .line_start(mark.line)
            .fold(true)
            .annotation(annotation(mark, span.start - start..span.end - start))
            .into(),
    ]
}

fn annotation<'d>(mark: &Mark<'d>, span: std::ops::Range<usize>) -> Annotation<'d> {
    let kind = if mark.primary { AnnotationKind::Primary } else { AnnotationKind::Context };
    kind.span(span).label(mark.label)
}
