//! `missing-address`: a listener without an `address` that Envoy rejects.

use crate::checks::{Check, Context, ListenerCx, Reads, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};

declare_rule! {
    pub(crate) static RULE for MissingAddress = {
        code: "XDS113",
        name: "missing-address",
        severity: Severity::Error,
        summary: "A listener has no address; Envoy rejects it.",
        explanation: "missing_address.md",
    }
}

pub(crate) struct MissingAddress;

fn diagnostic(l: &ListenerCx<'_, '_>) -> Diagnostic {
    let name = &l.listener.name;
    let (message, envoy_name) = if name.is_empty() {
        ("an unnamed listener has no address".to_owned(), "<a random UUID Envoy gives the unnamed listener>")
    } else {
        (format!("listener '{name}' has no address"), &**name)
    };
    Diagnostic::new(&RULE, message)
        .at(l.location())
        .listener(l.listener.display_name().into_owned())
        .with_envoy_error(envoy_text::address_is_necessary(envoy_name))
        .note("Envoy checks the address first: no other problem of this listener is reported until it has one")
}

impl Check for MissingAddress {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        out.extend(cx.listeners().filter(|l| l.listener.lacks_address()).map(|l| diagnostic(&l)));
    }
}
