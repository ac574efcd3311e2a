//! `unknown-extension`: A typed config Envoy 1.40 has no extension for (an unregistered type, or no typed_config at all): Envoy refuses it.

use crate::checks::{Check, Context, Reads, schema_problems};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::problem::ProblemKind;

declare_rule! {
    pub(crate) static RULE for UnknownExtension = {
        code: "XDS121",
        name: "unknown-extension",
        severity: Severity::Error,
        summary: "A typed config Envoy 1.40 has no extension for (an unregistered type, or no typed_config at all): Envoy refuses it.",
        explanation: "unknown_extension.md",
    }
}

pub(crate) struct UnknownExtension;

impl Check for UnknownExtension {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        schema_problems::report(cx, ProblemKind::UnknownExtension, &RULE, out);
    }
}
