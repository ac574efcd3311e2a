//! `ignored-field`: A key or enum name Envoy does not know in an xDS resource: Envoy ignores it, so the setting does not take effect.

use crate::checks::{Check, Context, Reads, schema_problems};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::problem::ProblemKind;

declare_rule! {
    pub(crate) static RULE for IgnoredField = {
        code: "XDS215",
        name: "ignored-field",
        severity: Severity::Warning,
        summary: "A key or enum name Envoy does not know in an xDS resource: Envoy ignores it, so the setting does not take effect.",
        explanation: "ignored_field.md",
    }
}

pub(crate) struct IgnoredField;

impl Check for IgnoredField {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        schema_problems::report(cx, ProblemKind::IgnoredField, &RULE, out);
    }
}
