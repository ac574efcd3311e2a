//! `invalid-value`: A value Envoy's protobuf JSON parser refuses: the wrong type, a number out of range, a malformed duration, an Any without @type.

use crate::checks::{Check, Context, Reads, schema_problems};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::problem::ProblemKind;

declare_rule! {
    pub(crate) static RULE for InvalidValue = {
        code: "XDS119",
        name: "invalid-value",
        severity: Severity::Error,
        summary: "A value Envoy's protobuf JSON parser refuses: the wrong type, a number out of range, a malformed duration, an Any without @type.",
        explanation: "invalid_value.md",
    }
}

pub(crate) struct InvalidValue;

impl Check for InvalidValue {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        schema_problems::report(cx, ProblemKind::InvalidValue, &RULE, out);
    }
}
