//! `--format github`: GitHub Actions workflow commands, one line per finding, so findings show
//! up as annotations on the pull request's diff.
//!
//! <https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands>

use std::fmt::Write;

use super::{Report, line_column};
use crate::diagnostic::Severity;
use crate::source::Sources;

/// Renders one `::error file=…,line=…,col=…,title=…::message` line per finding.
pub fn write(report: &Report, sources: &Sources, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    for d in &report.findings {
        let command = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            // GitHub has no "info"; a notice is its lowest annotation level.
            Severity::Info => "notice",
        };
        let mut props = Vec::new();
        if let Some(loc) = &d.location {
            props.push(format!("file={}", escape_property(sources.get(loc.source).name())));
            if let Some(lc) = line_column(sources, loc) {
                props.push(format!("line={}", lc.line));
                props.push(format!("col={}", lc.column));
            }
        }
        props.push(format!("title={}", escape_property(&format!("{} {}", d.rule.code, d.rule.name))));

        // The annotation is all a reviewer sees, so Envoy's words and the notes go in too.
        let mut message = d.message.clone();
        if let Some(e) = d.envoy_error() {
            let _ = write!(message, "\nEnvoy rejects it with: {e}");
        }
        for note in &d.notes {
            let _ = write!(message, "\nnote: {note}");
        }
        if let Some(listener) = &d.listener {
            let _ = write!(message, "\nlistener: {listener}");
        }
        if let Some(loc) = d.location.as_ref().filter(|l| !l.pointer.is_empty()) {
            let _ = write!(message, "\npointer: {}", loc.pointer);
        }
        writeln!(out, "::{command} {}::{}", props.join(","), escape_data(&message))?;
    }
    // What the run could not check has no place in the input: a notice without a file.
    for note in &report.notes {
        writeln!(out, "::notice title=xdsck::{}", escape_data(note))?;
    }
    Ok(())
}

/// Escaping for the message part (GitHub's `escapeData`).
fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escaping for a property value (GitHub's `escapeProperty`): also `:` and `,`, which separate
/// the properties.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_the_actions_toolkit() {
        assert_eq!(escape_data("50% done\r\nnext: a,b"), "50%25 done%0D%0Anext: a,b");
        assert_eq!(escape_property("C:\\x,y%\n"), "C%3A\\x%2Cy%25%0A");
    }
}
