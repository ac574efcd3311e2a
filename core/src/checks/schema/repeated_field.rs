//! `repeated-field`: a field given more than once in one object. Envoy's JSON parser accepts it:
//! of a list or a map it adds the later items to the first ones, of anything else it keeps the
//! last value; from YAML, a key written twice in one mapping keeps only its last value. Either
//! way a value the author wrote does not take effect as written.

use crate::checks::{Check, Context, Reads, schema_problems};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::problem::ProblemKind;

declare_rule! {
    pub(crate) static RULE for RepeatedField = {
        code: "XDS216",
        name: "repeated-field",
        severity: Severity::Warning,
        summary: "A field given more than once in one object: Envoy keeps the last value (a list or map: all items, in order), so a value written does not take effect as written.",
        explanation: "repeated_field.md",
    }
}

pub(crate) struct RepeatedField;

impl Check for RepeatedField {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        schema_problems::report(cx, ProblemKind::RepeatedField, &RULE, out);
    }
}
