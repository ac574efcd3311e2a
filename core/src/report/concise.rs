//! `--format concise`: one line per finding, `path:line:col: CODE [severity] message`, as
//! compilers and ruff print them, for editors' problem matchers and `grep`.

use super::{Report, line_column};
use crate::source::Sources;

/// Writes one line per finding, then one `note:` line per thing the run could not check.
pub fn write(report: &Report, sources: &Sources, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    for d in &report.findings {
        let place = match &d.location {
            Some(loc) => {
                let name = sources.get(loc.source).name();
                match line_column(sources, loc) {
                    Some(lc) => format!("{name}:{}:{}", lc.line, lc.column),
                    None => name.to_owned(),
                }
            }
            None => "xdsck".to_owned(),
        };
        // The message stays on its line: a line break in it would start a line no matcher reads.
        let message = d.message.replace(['\n', '\r'], " ");
        writeln!(out, "{place}: {} [{}] {message}", d.rule.code, d.severity.as_str())?;
    }
    for note in &report.notes {
        writeln!(out, "xdsck: note: {note}")?;
    }
    Ok(())
}
