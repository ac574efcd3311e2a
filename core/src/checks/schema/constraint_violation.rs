//! `constraint-violation`: A value breaks a constraint of Envoy's proto validation (PGV): Envoy refuses the configuration.

use crate::checks::{Check, Context, Reads, schema_problems};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::problem::ProblemKind;

declare_rule! {
    pub(crate) static RULE for ConstraintViolation = {
        code: "XDS120",
        name: "constraint-violation",
        severity: Severity::Error,
        summary: "A value breaks a constraint of Envoy's proto validation (PGV): Envoy refuses the configuration.",
        explanation: "constraint_violation.md",
    }
}

pub(crate) struct ConstraintViolation;

impl Check for ConstraintViolation {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        schema_problems::report(cx, ProblemKind::Constraint, &RULE, out);
    }
}
