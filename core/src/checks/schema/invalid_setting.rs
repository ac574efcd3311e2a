//! `invalid-setting`: A value Envoy refuses after parsing it: a negative duration, a regex RE2 refuses, a virtual cluster without headers.

use crate::checks::{Check, Context, Reads, schema_problems};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::problem::ProblemKind;

declare_rule! {
    pub(crate) static RULE for InvalidSetting = {
        code: "XDS122",
        name: "invalid-setting",
        severity: Severity::Error,
        summary: "A value Envoy refuses after parsing it: a negative duration, a regex RE2 refuses, a virtual cluster without headers.",
        explanation: "invalid_setting.md",
    }
}

pub(crate) struct InvalidSetting;

impl Check for InvalidSetting {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        schema_problems::report(cx, ProblemKind::InvalidSetting, &RULE, out);
    }
}
