//! What `duplicate-listener-in-update` and `duplicate-static-listener` share: finding the
//! listeners that repeat an earlier listener's name, and how their input hands them to Envoy,
//! which decides whether the repeat is rejected or silently skipped.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::checks::{Context, ListenerCx};
use crate::model::InputKind;
use crate::source::Location;

/// How the input hands its listeners to Envoy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Delivery {
    /// One LDS DiscoveryResponse.
    Lds,
    /// One CiliumEnvoyConfig (the agent validates it).
    Cec,
    /// Static listeners of a bootstrap, or listeners given without a delivery (checked with
    /// envoy --mode validate as static listeners).
    Static,
}

/// Calls `f(repeat, first, delivery)` for every live listener whose name an earlier listener
/// of the same input (and the same CiliumEnvoyConfig) already has, in input order.
pub(super) fn walk(cx: Context<'_, '_>, mut f: impl FnMut(&ListenerCx<'_, '_>, &ListenerCx<'_, '_>, Delivery)) {
    let kinds: HashMap<_, _> = cx.snapshot.inputs.iter().map(|i| (i.source, i.kind)).collect();
    let all: Vec<ListenerCx<'_, '_>> = cx.listeners().collect();
    for live in all.chunk_by(|a, b| a.envoy == b.envoy) {
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
                Entry::Occupied(o) => f(l, o.get(), delivery),
            }
        }
    }
}

/// Where a listener's `name` is.
pub(super) fn name_at(l: &ListenerCx<'_, '_>) -> Location {
    let pointer = format!("{}/name", l.listener.pointer);
    let offset = l.locate_in_listener(&pointer).or_else(|| l.location().offset);
    Location::new(l.source, pointer, offset)
}
