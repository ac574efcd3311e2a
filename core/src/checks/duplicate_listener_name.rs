//! `duplicate-listener-name`: two listeners with one name in one input. In one LDS response (or
//! one CiliumEnvoyConfig) that is rejected; in a bootstrap Envoy silently drops the later one.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::checks::{Check, Context, ListenerCx};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::InputKind;

declare_rule! {
    pub static RULE for DuplicateListenerName = {
        code: "XDS109",
        name: "duplicate-listener-name",
        severity: Severity::Error,
        summary: "Two listeners share a name: one LDS response or CiliumEnvoyConfig is rejected; in a bootstrap the later listener is silently ignored.",
        explanation: "duplicate_listener_name.md",
    }
}

pub struct DuplicateListenerName;

/// How the input hands its listeners to Envoy, which decides what a repeated name does.
#[derive(Clone, Copy)]
enum Delivery {
    /// One LDS DiscoveryResponse.
    Lds,
    /// One CiliumEnvoyConfig (the agent validates it).
    Cec,
    /// Static listeners of a bootstrap, or listeners given without a delivery (checked with
    /// envoy --mode validate as static listeners).
    Static,
}

fn diagnostic(l: &ListenerCx<'_, '_>, first: &ListenerCx<'_, '_>, delivery: Delivery) -> Diagnostic {
    let name = &l.listener.name;
    let name_at = |x: &ListenerCx<'_, '_>| {
        let pointer = format!("{}/name", x.listener.pointer);
        let offset = x.locate_in_listener(&pointer).or_else(|| x.location().offset);
        crate::source::Location::new(x.source, pointer, offset)
    };
    let d = Diagnostic::new(&RULE, format!("listener name '{name}' is used twice"))
        .at(name_at(l))
        .listener(name.to_string())
        .related("the first listener with this name", name_at(first));
    match delivery {
        Delivery::Lds => d
            .envoy_error(format!("duplicate listener {name} found"))
            .note(format!("Envoy rejects the LDS response (`Error adding/updating listener(s) {name}: duplicate listener {name} found`); it applies the first copy")),
        Delivery::Cec => d
            .envoy_error(format!("duplicate listener {name} found"))
            .note(format!("the cilium-agent refuses the whole CiliumEnvoyConfig first (`duplicate Listener name \"{name}\"`, \"Skipping CiliumEnvoyConfig due to malformed xDS resources\"); sent over LDS, Envoy would reject it with the text above")),
        Delivery::Static => d
            .severity(Severity::Warning)
            .note("as static listeners Envoy keeps the first and silently skips this one (static listeners cannot be updated); this listener is never served")
            .note(format!("sent in one LDS response the same listeners are rejected: `duplicate listener {name} found`")),
    }
}

impl Check for DuplicateListenerName {
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        let kinds: HashMap<_, _> = cx.snapshot.inputs.iter().map(|i| (i.source, i.kind)).collect();
        let all: Vec<ListenerCx<'_, '_>> = cx.listeners().collect();
        for live in all.chunk_by(|a, b| a.source == b.source) {
            let Some(&kind) = live.first().and_then(|l| kinds.get(&l.source)) else { continue };
            // A dump is what Envoy kept: it cannot hold two live listeners with one name.
            if matches!(kind, InputKind::ConfigDump | InputKind::DynamicListenersDump) {
                continue;
            }
            // (CEC document, name) -> first listener. Names of different CECs are qualified
            // with the CEC, so only names within one CEC are compared.
            let mut first: HashMap<(&str, &str), &ListenerCx<'_, '_>> = HashMap::new();
            for l in live {
                let listener = l.listener;
                if listener.name.is_empty() {
                    continue;
                }
                let (scope, delivery) = match listener.pointer.find("/spec/") {
                    Some(i) => (&listener.pointer[..i], Delivery::Cec),
                    None if kind == InputKind::DiscoveryResponse => ("", Delivery::Lds),
                    None => ("", Delivery::Static),
                };
                match first.entry((scope, &listener.name)) {
                    Entry::Vacant(v) => {
                        v.insert(l);
                    }
                    Entry::Occupied(o) => out.push(diagnostic(l, o.get(), delivery)),
                }
            }
        }
    }
}
