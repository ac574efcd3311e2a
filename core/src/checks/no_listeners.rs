//! `no-listeners`: an input that holds no listener at all, so the all-clear means nothing.

use crate::checks::{Check, Context};
use crate::diagnostic::{Diagnostic, Rule, Severity};
use crate::model::{Input, InputKind};
use crate::source::Location;

pub static RULE: Rule = Rule {
    code: "XDS303",
    name: "no-listeners",
    severity: Severity::Info,
    summary: "An input holds no listener (and no rejected one); there was nothing to check.",
    explanation: "## What it finds\nAn input xdsck read without a problem that has no listener in any state and no rejected listener update: an empty list (`[]`), Envoy's answer `{}` to `/config_dump?resource=dynamic_listeners` on a proxy without dynamic listeners, a config_dump of clusters only, a CiliumEnvoyConfig with only clusters and routes.\n\n## Why it matters\n\"No findings\" for such an input says nothing about any listener. If the input was meant to hold listeners, the command that produced it asked for the wrong thing.\n\n## Example\n```json\n[]\n```\n\n## Fix\nNothing to fix if the input is empty on purpose. Otherwise fetch the listeners: `/config_dump` (all of it) or `?resource=dynamic_listeners` / `?resource=static_listeners`.\n",
};

pub struct NoListeners;

fn what(input: &Input<'_>) -> &'static str {
    match input.kind {
        InputKind::ConfigDump | InputKind::DynamicListenersDump | InputKind::StaticListenersDump => {
            "this config_dump holds no listener"
        }
        InputKind::Bootstrap => "this bootstrap has no static listener",
        InputKind::DiscoveryResponse | InputKind::DeltaDiscoveryResponse => "this xDS response holds no Listener",
        InputKind::CiliumEnvoyConfig => "this CiliumEnvoyConfig holds no Listener",
        InputKind::Listeners | InputKind::Mixed => "this input holds no listener",
    }
}

impl Check for NoListeners {
    fn rule(&self) -> &'static Rule {
        &RULE
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for input in &cx.snapshot.inputs {
            if input.listeners.is_empty() && input.error_states.is_empty() {
                // The whole input is the place: its top node, past any comments.
                let at = cx.sources.get(input.source).node_offset(0);
                let note = match input.inventory().other_resources {
                    0 => "nothing was checked".to_owned(),
                    n => format!("nothing was checked; it holds {n} resource(s) of other types"),
                };
                out.push(Diagnostic::new(&RULE, what(input)).at(Location::new(input.source, "", Some(at))).note(note));
            }
        }
    }
}
