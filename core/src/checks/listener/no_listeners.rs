//! `no-listeners`: an input that holds no listener at all, so the all-clear means nothing.

use crate::checks::{Check, Context, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{Input, InputKind};
use crate::source::Location;

declare_rule! {
    pub(crate) static RULE for NoListeners = {
        code: "XDS303",
        name: "no-listeners",
        severity: Severity::Info,
        summary: "An input holds no listener (and no rejected one); there was nothing to check.",
        explanation: "no_listeners.md",
    }
}

pub(crate) struct NoListeners;

fn what(input: &Input<'_>) -> &'static str {
    match input.kind {
        InputKind::ConfigDump | InputKind::DynamicListenersDump | InputKind::StaticListenersDump => {
            "this config_dump holds no listener"
        }
        InputKind::Bootstrap => "this bootstrap has no static listener",
        InputKind::DiscoveryResponse | InputKind::DeltaDiscoveryResponse => "this xDS response holds no Listener",
        InputKind::CiliumEnvoyConfig => "this CiliumEnvoyConfig holds no Listener",
        InputKind::Listeners | InputKind::Mixed | InputKind::Kubernetes | InputKind::Resources => {
            "this input holds no listener"
        }
        InputKind::Proxies => "this map holds no proxy",
    }
}

impl Check for NoListeners {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for input in &cx.snapshot.inputs {
            // Route tables alone (an RDS response) are checked by the route checks.
            let has_routes = !input.route_tables.is_empty();
            // A CDS or RDS answer, even an empty one, is what it should be: the clusters or
            // tables the run's other inputs use.
            let other_type = matches!(input.kind, InputKind::DiscoveryResponse | InputKind::DeltaDiscoveryResponse)
                && (input.clusters.is_some() || input.route_answers);
            // Kubernetes objects of other kinds: each is a skipped-document info already.
            let kubernetes = input.kind == InputKind::Kubernetes;
            if input.listeners.is_empty() && input.error_states.is_empty() && !has_routes && !kubernetes && !other_type
            {
                // The whole input is the place: its top node, past any comments (a proxy's:
                // its part of the file).
                let text = cx.locator(input);
                let pointer = input.proxy.as_ref().map_or("", |p| &p.pointer);
                let at = text.locate_pointer(pointer).unwrap_or_else(|| text.node_offset(0));
                let note = match input.inventory().other_resources {
                    0 => "nothing was checked".to_owned(),
                    n => format!("nothing was checked; it holds {n} resource(s) of other types"),
                };
                out.push(
                    Diagnostic::new(&RULE, what(input)).at(Location::new(input.source, pointer, Some(at))).note(note),
                );
            }
        }
    }
}
