//! `--format text`: findings that read like a compiler's errors (annotate-snippets, the crate
//! rustc uses), then one line per input and a tally.

use std::borrow::Cow;
use std::fmt::Write;

use annotate_snippets::{Annotation, AnnotationKind, Element, Group, Level, Origin, Renderer, Snippet};

use super::{InputSummary, RenderOptions, Report, plural};
use crate::diagnostic::{Diagnostic, Note, Severity};
use crate::source::{SourceFile, SourceId, Sources};

/// Annotations this many lines apart or closer share one snippet; farther ones get their own.
const NEARBY_LINES: usize = 8;
/// Longer lines (minified JSON) are cut to a window around the annotation, so one finding in a
/// one-line 100 MB dump prints a few dozen characters, not the whole dump.
const MAX_LINE_BYTES: usize = 240;
/// Short enough that the renderer, which cuts lines wider than a terminal, shows all of it.
const WINDOW_BEFORE: usize = 40;
const WINDOW_AFTER: usize = 80;

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
    // Which sources were YAML (by source index): their text is not JSON to reformat.
    let mut yaml = vec![false; sources.len()];
    for input in report.inputs.iter().filter(|i| i.yaml) {
        if let Some(y) = yaml.get_mut(input.source.0 as usize) {
            *y = true;
        }
    }
    for batch in report.findings.chunks(4096) {
        let rendered = crate::parallel::par_map(batch, |d| renderer.render(&[group(d, sources, &yaml)]));
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
    for note in &report.notes {
        writeln!(out, "note: {note}")?;
    }
    writeln!(out, "{}", tally(report))
}

/// `dump.json: config_dump, 3 listeners, 41 filter chains (1 warming, 1 failed update)`.
fn input_line(input: &InputSummary, sources: &Sources) -> String {
    let name = match &input.proxy {
        Some(proxy) => format!("{} ({proxy})", sources.get(input.source).name()),
        None => sources.get(input.source).name().to_owned(),
    };
    let Some(kind) = input.kind else {
        return format!("{name}: not loaded");
    };
    let inv = &input.inventory;
    let mut line =
        format!("{name}: {kind}, {}, {}", plural(inv.listeners, "listener"), plural(inv.filter_chains, "filter chain"));
    if inv.default_filter_chains > 0 {
        line.push_str(&format!(" + {}", plural(inv.default_filter_chains, "default chain")));
    }
    let extra: Vec<String> = [(inv.warming, "warming"), (inv.draining, "draining")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .chain((inv.failed > 0).then(|| plural(inv.failed, "failed update")))
        .chain((inv.route_tables > 0).then(|| plural(inv.route_tables, "route table")))
        .chain((inv.inline_route_tables > 0).then(|| plural(inv.inline_route_tables, "inline route table")))
        .chain((inv.clusters > 0).then(|| plural(inv.clusters, "cluster")))
        .chain(
            (inv.other_resources > 0).then(|| format!("{} not checked", plural(inv.other_resources, "other resource"))),
        )
        .chain(
            (inv.skipped_documents > 0)
                .then(|| format!("{} not checked", plural(inv.skipped_documents, "other document"))),
        )
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

fn group<'d>(d: &'d Diagnostic, sources: &'d Sources, yaml: &[bool]) -> Group<'d> {
    let mut elements: Vec<Element<'d>> = Vec::new();
    let mut marks = Vec::new();
    let mut unplaced_notes = Vec::new();

    let places = d
        .location
        .iter()
        .map(|l| (l, None, true))
        .chain(d.related.iter().map(|r| (&r.location, Some(&*r.message), false)));
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
        let source = cluster[0].source;
        let is_yaml = yaml.get(source.0 as usize).copied().unwrap_or(false);
        elements.extend(snippet(&cluster, sources.get(source), is_yaml));
    }

    let mut notes: Vec<Cow<'_, str>> = Vec::new();
    if let Some(e) = d.envoy_error() {
        notes.push(format!("Envoy rejects it with: {e}").into());
    }
    notes.extend(d.notes.iter().map(Note::text));
    notes.extend(unplaced_notes.into_iter().map(Cow::Owned));
    elements.extend(notes.into_iter().map(|n| Element::from(Level::NOTE.message(n))));
    if !d.example().is_empty() {
        let example: Vec<String> = d
            .example()
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
        elements.push(Level::NOTE.with_name("listener").message(&**listener).into());
    }
    if let Some(proxy) = d.proxy() {
        elements.push(Level::NOTE.with_name("proxy").message(proxy).into());
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

/// Byte range of a line (one-based) in the file's text, without its line break; `None` when
/// the line is longer than [`MAX_LINE_BYTES`] (found without reading the rest of it, which on a
/// minified dump is the rest of the file).
fn short_line(file: &SourceFile, line: usize) -> Option<std::ops::Range<usize>> {
    let bytes = file.text().as_bytes();
    let start = file.line_start(line).unwrap_or(bytes.len());
    // Room for the longest line shown whole, its `\r` and its `\n`.
    let limit = (start + MAX_LINE_BYTES + 2).min(bytes.len());
    let end = match memchr::memchr(b'\n', &bytes[start..limit]) {
        Some(i) => start + i,
        None if limit == bytes.len() => limit,
        None => return None,
    };
    let end = if end > start && bytes[end - 1] == b'\r' { end - 1 } else { end };
    (end - start <= MAX_LINE_BYTES).then_some(start..end)
}

/// The span to mark: from the offset to the end of its line (the key, the value, the opening
/// bracket), or one character when the line ends there. Inside a flow collection on that line
/// (YAML's `{server_names: [a, b], ...}`, a one-line JSON list), only the item at the offset:
/// a scalar, or a key with its value, so that a mark on `a` does not run on over `b` and the
/// fields after it.
fn mark_span(text: &str, offset: usize, line_start: usize, line_end: usize) -> std::ops::Range<usize> {
    // An offset on a line's `\r` lies past the line as shown (its break is cut off).
    let offset = offset.min(line_end);
    let rest = text[offset..line_end].trim_end();
    if rest.is_empty() {
        let end = text[offset..].chars().next().map_or(offset, |c| offset + c.len_utf8());
        return offset..end.min(line_end.max(offset));
    }
    let line = &text.as_bytes()[..line_end];
    if line_start <= offset && flow_depth(&line[line_start..offset]) > 0 {
        if let Some(end) = flow_item_end(line, offset).filter(|&e| e > offset) {
            return offset..end;
        }
    }
    offset..offset + rest.len()
}

/// How many flow collections (`[`, `{`) are open at the end of `before`, quotes respected.
fn flow_depth(before: &[u8]) -> usize {
    let (mut depth, mut i) = (0usize, 0);
    while i < before.len() {
        match before[i] {
            q @ (b'"' | b'\'') => i = quoted_end(before, i, q).unwrap_or(before.len()),
            b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    depth
}

/// The end of a quoted scalar opening at `at` (past its closing quote): `\` escapes in double
/// quotes, `''` in single ones.
fn quoted_end(line: &[u8], at: usize, quote: u8) -> Option<usize> {
    let mut i = at + 1;
    while i < line.len() {
        match line[i] {
            b'\\' if quote == b'"' => i += 2,
            b'\'' if quote == b'\'' && line.get(i + 1) == Some(&b'\'') => i += 2,
            c if c == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The end of the flow item at `at`: a scalar or a collection, and when it is a key, its value
/// too. `None` when the item does not end on this line.
fn flow_item_end(line: &[u8], at: usize) -> Option<usize> {
    let node_end = |i: usize| -> Option<usize> {
        match line.get(i)? {
            q @ (b'"' | b'\'') => quoted_end(line, i, *q),
            b'[' | b'{' => {
                let mut j = i + 1;
                let mut depth = 1;
                while j < line.len() {
                    match line[j] {
                        q @ (b'"' | b'\'') => j = quoted_end(line, j, q)?,
                        b'[' | b'{' => {
                            depth += 1;
                            j += 1;
                        }
                        b']' | b'}' => {
                            depth -= 1;
                            j += 1;
                            if depth == 0 {
                                return Some(j);
                            }
                        }
                        _ => j += 1,
                    }
                }
                None
            }
            // A plain scalar ends at a flow indicator or at `: ` (YAML's key indicator).
            _ => {
                let mut j = i;
                while j < line.len() {
                    match line[j] {
                        b',' | b']' | b'}' => break,
                        b':' if line.get(j + 1).is_none_or(|c| matches!(c, b' ' | b',' | b']' | b'}')) => break,
                        _ => j += 1,
                    }
                }
                let trimmed = line[i..j].iter().rposition(|c| *c != b' ').map_or(i, |k| i + k + 1);
                Some(trimmed)
            }
        }
    };
    let skip_spaces = |mut i: usize| {
        while line.get(i) == Some(&b' ') {
            i += 1;
        }
        i
    };
    let key_end = node_end(at)?;
    let colon = skip_spaces(key_end);
    if line.get(colon) != Some(&b':') {
        return Some(key_end);
    }
    let value = skip_spaces(colon + 1);
    match line.get(value) {
        None | Some(b',' | b']' | b'}') => Some(key_end),
        Some(_) => node_end(value),
    }
}

fn snippet<'d>(cluster: &[Mark<'d>], file: &'d SourceFile, is_yaml: bool) -> Vec<Element<'d>> {
    let text = file.text();
    let first = cluster.iter().map(|m| m.line).min().expect("a cluster is never empty");
    let last = cluster.iter().map(|m| m.line).max().expect("a cluster is never empty");
    let Some(ranges) = (first..=last).map(|l| short_line(file, l)).collect::<Option<Vec<_>>>() else {
        return cluster.iter().flat_map(|m| long_line_snippet(m, file, is_yaml)).collect();
    };
    let lines = ranges[0].start..ranges[ranges.len() - 1].end;
    let annotations = cluster.iter().map(|m| {
        let line = &ranges[m.line - first];
        let span = mark_span(text, m.offset, line.start, line.end);
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

/// A mark on a very long line (minified JSON): a window of the line around it, cut with `…`,
/// the marked token underlined below it, and, where the mark opens a small JSON node, the node
/// reformatted. The renderer would count the column from the window's start, so the window is
/// shown without a marker of its own, under a header that gives the real line and column.
fn long_line_snippet<'d>(mark: &Mark<'d>, file: &'d SourceFile, is_yaml: bool) -> Vec<Element<'d>> {
    let text = file.text();
    // Only the window is looked at: the line itself may be the whole file.
    let (line_start, line_end) = file.line_around(mark.offset, WINDOW_BEFORE.max(WINDOW_AFTER));
    let line_end = line_end.map(|e| if e > mark.offset && text.as_bytes()[e - 1] == b'\r' { e - 1 } else { e });
    let mut start = mark.offset.saturating_sub(WINDOW_BEFORE).max(line_start.unwrap_or(0));
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let mut end = (mark.offset + WINDOW_AFTER).min(line_end.unwrap_or(text.len())).max(mark.offset);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let span = token_span(text, mark.offset, end);
    let before = if line_start.is_some_and(|s| s >= start) { "" } else { ELLIPSIS };
    let after = if line_end.is_some_and(|e| e <= end) { "" } else { ELLIPSIS };
    let lead = before.chars().count() + text[start..span.start].chars().count();
    let width = text[span.clone()].chars().count().max(1);
    let marker = if mark.primary { "^" } else { "-" };
    let mut source = format!("{before}{}{after}\n{:lead$}{}", &text[start..end], "", marker.repeat(width));
    if let Some(label) = mark.label {
        let _ = write!(source, " {label}");
    }
    let column = file.line_column(mark.offset).column;
    // Without annotations the renderer's header is the path as given for the primary place
    // (`-->`), and the path then the snippet's first line number for the others (`:::`); line
    // numbers are not shown, so that number carries the column.
    let snippet = Snippet::<Annotation<'d>>::source(source).line_numbering(false).fold(false);
    let snippet = if mark.primary {
        snippet.path(format!("{}:{}:{column}", file.name(), mark.line))
    } else {
        snippet.path(format!("{}:{}", file.name(), mark.line)).line_start(column)
    };
    let mut elements: Vec<Element<'d>> = vec![snippet.into()];
    // The node itself, readable, for the place the finding is about.
    if mark.primary
        && !is_yaml
        && let Some(node) = reformatted(text, mark.offset)
    {
        elements
            .push(Level::NOTE.message(format!("reformatted, from line {} column {column}:\n{node}", mark.line)).into());
    }
    elements
}

/// What cut text is shown with.
const ELLIPSIS: &str = "…";
/// Nodes up to this size are reformatted under a long line; larger ones (a whole listener) only
/// get the window, so a finding never reads more than this of the file.
const REFORMAT_MAX_BYTES: usize = 16 * 1024;
/// Lines of a reformatted node shown.
const REFORMAT_LINES: usize = 12;

/// The JSON token at `offset`, within `limit`: a string (with its value when it is a key whose
/// value is a string), or one character.
fn token_span(text: &str, offset: usize, limit: usize) -> std::ops::Range<usize> {
    let bytes = &text.as_bytes()[..limit];
    let string_end = |at: usize| -> Option<usize> {
        let mut i = at + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    };
    let one = || offset..text[offset..].chars().next().map_or(offset, |c| offset + c.len_utf8()).min(limit.max(offset));
    if bytes.get(offset) != Some(&b'"') {
        return one();
    }
    let Some(key_end) = string_end(offset) else {
        return offset..limit;
    };
    let rest = &text[key_end..limit];
    let value = key_end + rest.len() - rest.trim_start().len();
    if let Some(v) = text[value..limit].strip_prefix(':').map(|v| limit - v.trim_start().len())
        && bytes.get(v) == Some(&b'"')
        && let Some(value_end) = string_end(v)
    {
        return offset..value_end;
    }
    offset..key_end
}

/// The object or list that starts at `offset` (or whose first member it is), pretty-printed
/// and cut to [`REFORMAT_LINES`] lines; `None` for scalars, members in the middle of an object,
/// and nodes larger than [`REFORMAT_MAX_BYTES`].
fn reformatted(text: &str, offset: usize) -> Option<String> {
    let bytes = text.as_bytes();
    let mut at = offset;
    // A value after its key (`"name":"https-0"`, where chain findings point): its key.
    if bytes.get(at) == Some(&b'"')
        && let Some(key_end) = text[..at].trim_end().strip_suffix(':').map(str::trim_end)
        && key_end.ends_with('"')
        && let Some(q) = key_end[..key_end.len() - 1].rfind('"')
    {
        at = q;
    }
    // The first member of an object: the object.
    if bytes.get(at) == Some(&b'"') {
        at = text[..at].trim_end().strip_suffix('{').map(str::len)?;
    }
    if !matches!(bytes.get(at), Some(b'{' | b'[')) {
        return None;
    }
    let mut cut = (at + REFORMAT_MAX_BYTES).min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    // Read whole (a node must end within the cut to be shown; a duplicate key shows its last
    // value, as a `Value` keeps it), but written only as far as it is shown: a chain of a tenant
    // listener is some forty lines pretty, and writing them all cost as much as reading it.
    let mut de = serde_json::Deserializer::from_str(&text[at..cut]);
    let node = <serde_json::Value as serde::Deserialize>::deserialize(&mut de).ok()?;
    let mut shown = FirstLines { text: Vec::with_capacity(512), breaks: 0 };
    let more = match serde_json::to_writer_pretty(&mut shown, &node) {
        Ok(()) => false,
        Err(e) if e.is_io() => true,
        Err(_) => return None,
    };
    let mut node = String::from_utf8(shown.text).ok()?;
    if more {
        node.push('\n');
        node.push_str(ELLIPSIS);
    }
    Some(node)
}

/// The first [`REFORMAT_LINES`] lines written to it; the write that would start the line after
/// them fails, which stops the writer. Pretty JSON ends without a line break, so a line break
/// past the last shown line means there is more.
struct FirstLines {
    text: Vec<u8>,
    breaks: usize,
}

impl std::io::Write for FirstLines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for (i, &b) in buf.iter().enumerate() {
            if b == b'\n' {
                if self.breaks + 1 == REFORMAT_LINES {
                    self.text.extend_from_slice(&buf[..i]);
                    return Err(std::io::Error::other("the lines shown are written"));
                }
                self.breaks += 1;
            }
        }
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn annotation<'d>(mark: &Mark<'d>, span: std::ops::Range<usize>) -> Annotation<'d> {
    let kind = if mark.primary { AnnotationKind::Primary } else { AnnotationKind::Context };
    kind.span(span).label(mark.label)
}

#[cfg(test)]
mod tests {
    use super::mark_span;

    /// The text `mark_span` marks on a one-line input, at the first occurrence of `at`.
    fn marked<'t>(line: &'t str, at: &str) -> &'t str {
        let offset = line.find(at).expect("in the line");
        &line[mark_span(line, offset, 0, line.len())]
    }

    #[test]
    fn a_mark_in_a_flow_collection_covers_its_item_only() {
        let yaml = r#"  filter_chain_match: {server_names: [a.example, "b, c", 'd''s'], application_protocols: [h2]}"#;
        assert_eq!(marked(yaml, "a.example"), "a.example");
        assert_eq!(marked(yaml, "\"b"), "\"b, c\"");
        assert_eq!(marked(yaml, "'d"), "'d''s'");
        // A key: with its value, a collection as a whole.
        assert_eq!(marked(yaml, "server_names"), "server_names: [a.example, \"b, c\", 'd''s']");
        assert_eq!(marked(yaml, "application_protocols"), "application_protocols: [h2]");
        // A scalar may hold a colon that is no key indicator.
        assert_eq!(marked("[{address: 2001:db8::1, port: 80}]", "2001"), "2001:db8::1");
        // Pretty JSON's one-line lists.
        assert_eq!(marked(r#"      "server_names": ["x.example", "y.example"],"#, "\"y"), "\"y.example\"");
    }

    #[test]
    fn outside_a_flow_collection_the_mark_runs_to_the_end_of_the_line() {
        let yaml = "  server_names: [a, b]   ";
        assert_eq!(marked(yaml, "server_names"), "server_names: [a, b]");
        // A flow collection that goes on past the line: the rest of the line.
        assert_eq!(marked("  names: [a, {x: [1,", "{x"), "{x: [1,");
    }

    /// A node is written only as far as it is shown: the lines are the whole node's first ones,
    /// cut where the whole would be (a node of twelve lines whole, of thirteen cut to twelve
    /// and an ellipsis), and a duplicate key shows its last value as a `Value` keeps it.
    #[test]
    fn a_reformatted_node_is_the_first_lines_of_the_whole() {
        let whole = |json: &str| {
            let node: serde_json::Value = serde_json::from_str(json).unwrap();
            let pretty = serde_json::to_string_pretty(&node).unwrap();
            let mut lines: Vec<&str> = pretty.lines().take(super::REFORMAT_LINES + 1).collect();
            if lines.len() > super::REFORMAT_LINES {
                lines[super::REFORMAT_LINES] = super::ELLIPSIS;
            }
            lines.join("\n")
        };
        let list = |n: usize| format!("[{}]", (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
        // A list of n numbers is n + 2 lines pretty: 11, 12, 13 and 14 lines, and longer.
        let mut nodes: Vec<String> = (9..=14).chain([40]).map(list).collect();
        nodes.push(r#"{"name":"a","name":"b","filters":[{"x":{"y":[1,2.5,"\u00e9\n"]}}],"z":{}}"#.into());
        nodes.push("{}".into());
        for node in &nodes {
            let text = format!("  {node}  ");
            assert_eq!(super::reformatted(&text, 2).as_deref(), Some(&*whole(node)), "{node}");
        }
        assert_eq!(super::reformatted(&list(10), 0).map(|n| n.lines().count()), Some(12));
        assert!(super::reformatted(&list(11), 0).is_some_and(|n| n.ends_with("\n  10\n…")));
        // A node cut off by the end of the text is not shown.
        assert_eq!(super::reformatted("[1,2", 0), None);
    }
}
