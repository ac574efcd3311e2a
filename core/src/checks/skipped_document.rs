//! `skipped-document`: a document of a stream or list that is not Envoy configuration, so
//! nothing in it was checked.

use crate::checks::{Check, Context};
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

impl Check for SkippedDocument {
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
