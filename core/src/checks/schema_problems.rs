//! What the schema rules share: each reports the problems of its kind that the reader
//! recorded while it read the inputs ([`crate::model::problem`]), at their places.

use crate::checks::Context;
use crate::diagnostic::{Diagnostic, Rule};
use crate::model::problem::{Problem, ProblemKind};
use crate::source::{Location, Locator, SourceId};

/// Every problem of `kind` of every input, as a finding of `rule`.
pub(crate) fn report(cx: Context<'_, '_>, kind: ProblemKind, rule: &'static Rule, out: &mut Vec<Diagnostic>) {
    for input in &cx.snapshot.inputs {
        let text = cx.locator(input);
        for p in input.problems.iter().filter(|p| p.kind == kind) {
            out.push(diagnostic(p, rule, input.source, text));
        }
    }
}

fn diagnostic(p: &Problem, rule: &'static Rule, source: SourceId, text: Locator<'_>) -> Diagnostic {
    let offset = match (p.offset, p.anchor) {
        (Some(o), _) => Some(text.original_offset(o)),
        // Only the anchor's part of the text is read again to find the value.
        (None, Some(a)) => text
            .locate_pointer_below(&p.pointer[..a.pointer_len], Some(a.offset), &p.pointer)
            .or(Some(text.original_offset(a.offset))),
        (None, None) => text.locate_pointer(&p.pointer),
    };
    let mut d = Diagnostic::new(rule, p.message.clone()).at(Location::new(source, p.pointer.clone(), offset));
    if let Some(e) = &p.envoy_error {
        d = d.with_envoy_error(e.clone());
    }
    for n in &p.notes {
        d = d.note(n.clone());
    }
    if let Some((what, at)) = &p.related {
        d = d.related(what.clone(), Location::new(source, p.pointer.clone(), Some(text.original_offset(*at))));
    }
    d
}
