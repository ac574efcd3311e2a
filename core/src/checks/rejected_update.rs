//! `rejected-update`: Envoy already refused a listener update and recorded why.

use crate::checks::{Check, Context};
use crate::diagnostic::{Diagnostic, Rule, Severity};
use crate::model::ErrorState;
use crate::source::{Location, SourceFile, SourceId};

pub static RULE: Rule = Rule {
    code: "XDS110",
    name: "rejected-update",
    severity: Severity::Error,
    summary: "Envoy rejected the last update of a dynamic listener (its config_dump has an error_state).",
    explanation: "## What it finds\nA dynamic listener in an Envoy `/config_dump` whose `error_state` records an update Envoy refused, with Envoy's own error text.\n\n## Why it matters\nThe control plane believes the new configuration is live, but Envoy kept the previous version of the listener (or, for a new listener, has none at all). With xDS the update was NACKed; Cilium's agent then reports the CiliumEnvoyConfig as failing and may roll back other resources sent with it.\n\n## Example\n```json\n{\"name\": \"listener-443\",\n \"error_state\": {\"details\": \"error adding listener '127.0.0.1:10443': filter chain 'b' has the same matching rules defined as 'a'\"}}\n```\n\n## Fix\nFix what `details` names (the other findings usually say where), then push the update again.\n",
};

pub struct RejectedUpdate;

fn diagnostic(e: &ErrorState<'_>, source: SourceId, file: &SourceFile) -> Diagnostic {
    let what = if e.has_active_state {
        "Envoy keeps serving the previous version of this listener"
    } else {
        "the listener was never added: Envoy serves nothing for it"
    };
    let mut d = Diagnostic::new(&RULE, format!("Envoy rejected the last update of listener '{}'", e.listener_name))
        .at(Location::new(source, e.pointer.clone(), e.offset.map(|o| file.node_offset(o))))
        .listener(e.listener_name.to_string())
        .envoy_error(e.details.to_string())
        .note(what);
    if let Some(t) = &e.last_update_attempt {
        d = d.note(format!("last update attempt: {t}"));
    }
    if let Some(l) = &e.failed_configuration {
        d = d.related("the configuration Envoy refused", l.location(source, file));
    }
    d
}

impl Check for RejectedUpdate {
    fn rule(&self) -> &'static Rule {
        &RULE
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for input in &cx.snapshot.inputs {
            let file = cx.sources.get(input.source);
            out.extend(input.error_states.iter().map(|e| diagnostic(e, input.source, file)));
        }
    }
}
