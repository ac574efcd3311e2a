//! `rejected-update`: Envoy already refused a listener update and recorded why.

use crate::checks::{Check, Context, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::ErrorState;
use crate::source::{Location, Locator, SourceId};

declare_rule! {
    pub(crate) static RULE for RejectedUpdate = {
        code: "XDS110",
        name: "rejected-update",
        severity: Severity::Error,
        summary: "Envoy rejected the last update of a dynamic listener (its config_dump has an error_state).",
        explanation: "rejected_update.md",
    }
}

pub(crate) struct RejectedUpdate;

fn diagnostic(e: &ErrorState<'_>, source: SourceId, text: Locator<'_>) -> Diagnostic {
    let what = if e.has_active_state {
        "Envoy keeps serving the previous version of this listener"
    } else {
        "the listener was never added: Envoy serves nothing for it"
    };
    let mut d = Diagnostic::new(&RULE, format!("Envoy rejected the last update of listener '{}'", e.listener_name))
        .at(Location::new(source, e.pointer.clone(), e.offset.map(|o| text.node_offset(o))))
        .listener(e.listener_name.to_string())
        .with_envoy_error(e.details.to_string())
        .note(what);
    if let Some(t) = &e.last_update_attempt {
        d = d.note(format!("last update attempt: {t}"));
    }
    if let Some(l) = &e.failed_configuration {
        d = d.related("the configuration Envoy refused", l.location(source, text));
    }
    d
}

impl Check for RejectedUpdate {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for input in &cx.snapshot.inputs {
            let text = cx.locator(input);
            out.extend(input.error_states.iter().map(|e| diagnostic(e, input.source, text)));
        }
    }
}
