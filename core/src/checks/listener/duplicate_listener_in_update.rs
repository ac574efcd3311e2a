//! `duplicate-listener-in-update`: two listeners with one name in one LDS response or one
//! CiliumEnvoyConfig, which is rejected. (In a bootstrap Envoy silently drops the later one:
//! `duplicate-static-listener`.)

use crate::checks::repeated_listener_names::{self, Delivery, name_at};
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};

declare_rule! {
    pub(crate) static RULE for DuplicateListenerInUpdate = {
        code: "XDS109",
        name: "duplicate-listener-in-update",
        severity: Severity::Error,
        summary: "Two listeners in one LDS response or CiliumEnvoyConfig share a name: the update is rejected.",
        explanation: "duplicate_listener_in_update.md",
    }
}

pub(crate) struct DuplicateListenerInUpdate;

fn diagnostic(l: &ListenerCx<'_, '_>, first: &ListenerCx<'_, '_>, cec: bool) -> Diagnostic {
    let name = &l.listener.name;
    let d = Diagnostic::new(&RULE, format!("listener name '{name}' is used twice"))
        .at(name_at(l))
        .listener(name.to_string())
        .related("the first listener with this name", name_at(first))
        .with_envoy_error(format!("duplicate listener {name} found"));
    if cec {
        d.note(format!("the cilium-agent refuses the whole CiliumEnvoyConfig first (`duplicate Listener name \"{name}\"`, \"Skipping CiliumEnvoyConfig due to malformed xDS resources\"); sent over LDS, Envoy would reject it with the text above"))
    } else {
        d.note(format!("Envoy rejects the LDS response (`Error adding/updating listener(s) {name}: duplicate listener {name} found`); it applies the first copy"))
    }
}

impl Check for DuplicateListenerInUpdate {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        repeated_listener_names::walk(cx, |l, first, delivery| match delivery {
            Delivery::Lds => out.push(diagnostic(l, first, false)),
            Delivery::Cec => out.push(diagnostic(l, first, true)),
            Delivery::Static => {}
        });
    }
}
