//! `duplicate-static-listener`: a static listener (of a bootstrap, or of a plain list of
//! listeners) with the name of an earlier one. Envoy keeps the first and silently skips it.
//! (In one LDS response or CiliumEnvoyConfig the repeat is rejected:
//! `duplicate-listener-in-update`.)

use crate::checks::repeated_listener_names::{self, Delivery, name_at};
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};

declare_rule! {
    pub(crate) static RULE for DuplicateStaticListener = {
        code: "XDS207",
        name: "duplicate-static-listener",
        severity: Severity::Warning,
        summary: "Two static listeners share a name: Envoy silently ignores the later one.",
        explanation: "duplicate_static_listener.md",
        fingerprint: "XDS109",
    }
}

pub(crate) struct DuplicateStaticListener;

fn diagnostic(l: &ListenerCx<'_, '_>, first: &ListenerCx<'_, '_>) -> Diagnostic {
    let name = &l.listener.name;
    Diagnostic::new(&RULE, format!("listener name '{name}' is used twice"))
        .at(name_at(l))
        .listener(name.to_string())
        .related("the first listener with this name", name_at(first))
        .note("as static listeners Envoy keeps the first and silently skips this one (static listeners cannot be updated); this listener is never served")
        .note(format!("sent in one LDS response the same listeners are rejected: `duplicate listener {name} found`"))
}

impl Check for DuplicateStaticListener {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        repeated_listener_names::walk(cx, |l, first, delivery| {
            if delivery == Delivery::Static {
                out.push(diagnostic(l, first));
            }
        });
    }
}
