//! `unvalidated-payload`: A typed config of a type Envoy 1.40's API does not have (another proxy's extension): its fields were not validated.

use crate::checks::{Check, Context, Reads, schema_problems};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::problem::ProblemKind;

declare_rule! {
    pub(crate) static RULE for UnvalidatedPayload = {
        code: "XDS305",
        name: "unvalidated-payload",
        severity: Severity::Info,
        summary: "A typed config of a type Envoy 1.40's API does not have (another proxy's extension): its fields were not validated.",
        explanation: "unvalidated_payload.md",
    }
}

pub(crate) struct UnvalidatedPayload;

impl Check for UnvalidatedPayload {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        schema_problems::report(cx, ProblemKind::NotValidated, &RULE, out);
    }
}
