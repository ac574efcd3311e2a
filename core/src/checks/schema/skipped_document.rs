//! `skipped-document`: a document of a stream or list that is not Envoy configuration, so
//! nothing in it was checked.

use crate::checks::{Check, Context, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{Skipped, SkippedKind};
use crate::source::{Location, Locator, SourceId};

declare_rule! {
    pub(crate) static RULE for SkippedDocument = {
        code: "XDS302",
        name: "skipped-document",
        severity: Severity::Info,
        summary: "A document of the input is not Envoy configuration; xdsck did not check it.",
        explanation: "skipped_document.md",
    }
}

pub(crate) struct SkippedDocument;

fn diagnostic(s: &Skipped, source: SourceId, text: Locator<'_>) -> Diagnostic {
    let d = Diagnostic::new(&RULE, format!("not checked: {} is not Envoy configuration", s.what)).at(Location::new(
        source,
        s.pointer.clone(),
        s.offset.map(|o| text.node_offset(o)),
    ));
    match s.note {
        Some(n) => d.note(n),
        None => d,
    }
}

/// The info for a file a directory walk met that is not Envoy configuration (`refusal`, the
/// `not-envoy-config` or `template` error it has when named): it is passed by, not refused.
pub(crate) fn walked_past(refusal: &Diagnostic) -> Diagnostic {
    let d = Diagnostic::new(&RULE, format!("not checked: {}", refusal.message)).note(format!(
        "found by a directory walk or `--found`, so passed by; named on its own it is {} {}",
        refusal.rule.code, refusal.rule.name
    ));
    match &refusal.location {
        Some(at) => d.at(at.clone()),
        None => d,
    }
}

impl Check for SkippedDocument {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for input in &cx.snapshot.inputs {
            let text = cx.locator(input);
            out.extend(
                input
                    .skipped
                    .iter()
                    .filter(|s| s.kind == SkippedKind::Document)
                    .map(|s| diagnostic(s, input.source, text)),
            );
        }
    }
}
