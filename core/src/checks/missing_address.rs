//! `missing-address`: a listener without an `address` that Envoy rejects.

use crate::checks::{Check, Context, ListenerCx};
use crate::diagnostic::{Diagnostic, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "XDS113",
    name: "missing-address",
    severity: Severity::Error,
    summary: "A listener has no address; Envoy rejects it.",
    explanation: "## What it finds\nA listener without `address` in a bootstrap, a Listener file or an xDS response. Envoy refuses it before looking at anything else in it: `error adding listener named '<name>': address is necessary` (an unnamed listener is named with a random UUID in that message). Internal listeners (`internal_listener`, which Envoy addresses as `envoy://<name>/`) and the listeners of a CiliumEnvoyConfig (the Cilium agent gives each a proxy port of its own) are exempt.\n\n## Why it matters\nThe listener is never added. Over xDS the whole update is NACKed, so every other listener sent with it stays at its previous version.\n\n## Example\n```yaml\nstatic_resources:\n  listeners:\n  - name: https\n    stat_prefix: https\n```\n\n## Fix\nGive the listener an `address` (`socket_address`, `pipe` or `envoy_internal_address`).\n",
};

pub struct MissingAddress;

fn diagnostic(l: &ListenerCx<'_, '_>) -> Diagnostic {
    let name = &l.listener.name;
    let (message, envoy_name) = if name.is_empty() {
        ("an unnamed listener has no address".to_owned(), "<a random UUID Envoy gives the unnamed listener>")
    } else {
        (format!("listener '{name}' has no address"), &**name)
    };
    Diagnostic::new(&RULE, message)
        .at(l.location())
        .listener(name.to_string())
        .envoy_error(format!("error adding listener named '{envoy_name}': address is necessary"))
        .note("Envoy checks the address first: no other problem of this listener is reported until it has one")
}

impl Check for MissingAddress {
    fn rule(&self) -> &'static Rule {
        &RULE
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        out.extend(cx.listeners().filter(|l| l.listener.lacks_address()).map(|l| diagnostic(&l)));
    }
}
