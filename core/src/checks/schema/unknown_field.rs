//! `unknown-field`: A key that is not a field of its message, or a name that is not a value of its enum: Envoy refuses the configuration.

use crate::checks::{Check, Context, Reads, schema_problems};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::problem::ProblemKind;

declare_rule! {
    pub(crate) static RULE for UnknownField = {
        code: "XDS118",
        name: "unknown-field",
        severity: Severity::Error,
        summary: "A key that is not a field of its message, or a name that is not a value of its enum: Envoy refuses the configuration.",
        explanation: "unknown_field.md",
    }
}

pub(crate) struct UnknownField;

impl Check for UnknownField {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        schema_problems::report(cx, ProblemKind::UnknownField, &RULE, out);
    }
}
