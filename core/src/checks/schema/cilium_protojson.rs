//! `cilium-protojson`: a form the Cilium agent's Go protojson decoder refuses in a
//! CiliumEnvoyConfig resource, though Envoy's own parser would take it.

use crate::checks::{Check, Context, Reads, schema_problems};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::problem::ProblemKind;

declare_rule! {
    pub(crate) static RULE for CiliumProtojson = {
        code: "XDS123",
        name: "cilium-protojson",
        severity: Severity::Error,
        summary: "A CiliumEnvoyConfig resource in a form the Cilium agent's Go protojson refuses (an unknown field, a single value for a list, a wrapper object): the agent drops the resource.",
        explanation: "cilium_protojson.md",
    }
}

pub(crate) struct CiliumProtojson;

impl Check for CiliumProtojson {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        schema_problems::report(cx, ProblemKind::AgentRefuses, &RULE, out);
    }
}
