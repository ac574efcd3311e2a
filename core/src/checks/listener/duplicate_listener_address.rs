//! `duplicate-listener-address`: a listener with an address an earlier listener already has;
//! Envoy rejects the later one.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use crate::checks::{Check, Context, ListenerCx, Reads, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{Address, Protocol};
use crate::source::{Location, join_field, join_field_index};

declare_rule! {
    pub(crate) static RULE for DuplicateListenerAddress = {
        code: "XDS108",
        name: "duplicate-listener-address",
        severity: Severity::Error,
        summary: "A listener has an address that an earlier listener of the same socket type already has; Envoy rejects it.",
        explanation: "duplicate_listener_address.md",
    }
}

pub(crate) struct DuplicateListenerAddress;

/// What Envoy compares: socket type, the address as it prints it (IP literals canonical), and
/// the network namespace.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Key {
    protocol: Protocol,
    address: String,
    namespace: Option<String>,
}

fn key(a: &Address<'_>) -> Option<(Key, Option<u32>)> {
    match a {
        Address::Socket(s) => Some((
            Key {
                protocol: s.protocol,
                address: a.to_string(),
                namespace: s.network_namespace_filepath().map(str::to_owned),
            },
            Some(s.port_value.unwrap_or(0)),
        )),
        Address::Pipe { path, .. } => {
            Some((Key { protocol: Protocol::Tcp, address: path.to_string(), namespace: None }, None))
        }
        // Internal addresses name the listener itself; a second one is a name clash instead.
        Address::EnvoyInternal { .. } => None,
    }
}

/// The pointer and location of the k-th address of a listener (0 = `address`).
fn address_location(l: &ListenerCx<'_, '_>, k: usize) -> Location {
    let listener = l.listener;
    let pointer = if k == 0 || listener.address.is_none() {
        join_field(&listener.pointer, listener.casing, "address")
    } else {
        let additional = join_field_index(&listener.pointer, listener.casing, "additional_addresses", k - 1);
        join_field(&additional, listener.casing, "address")
    };
    let offset = l.locate_in_listener(&pointer).or_else(|| l.location().offset);
    Location::new(l.source, pointer, offset)
}

fn diagnostic(
    new: &ListenerCx<'_, '_>,
    k: usize,
    address: &Address<'_>,
    old: &ListenerCx<'_, '_>,
    old_k: usize,
) -> Diagnostic {
    Diagnostic::new(
        &RULE,
        format!(
            "listener '{}' has address {address}, which listener '{}' already has",
            new.listener.display_name(),
            old.listener.display_name()
        ),
    )
    .at(address_location(new, k))
    .listener(new.listener.name.to_string())
    .related(format!("listener '{}' has it first", old.listener.display_name()), address_location(old, old_k))
    .with_envoy_error(envoy_text::duplicate_address(new.listener))
    .note("Envoy rejects the later listener and keeps the earlier one; it compares exact addresses, so overlapping ones (0.0.0.0:80 and 127.0.0.1:80) only fail when binding, if at all")
}

impl Check for DuplicateListenerAddress {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        // One input is one set of listeners Envoy holds at once; two inputs are two configs.
        let all: Vec<ListenerCx<'_, '_>> = cx.listeners().collect();
        for live in all.chunk_by(|a, b| a.envoy == b.envoy) {
            let mut names: HashSet<&str> = HashSet::new();
            // Key -> (listener, address index) of the first earlier address that conflicts.
            let mut taken: HashMap<Key, (usize, usize)> = HashMap::new();
            for (i, l) in live.iter().enumerate() {
                // A later listener with an earlier one's name is never added (bootstrap: skipped;
                // LDS: rejected), so its addresses do not count. Unnamed ones get a UUID.
                if !l.listener.name.is_empty() && !names.insert(&l.listener.name) {
                    continue;
                }
                let keys: Vec<_> = l.listener.addresses().map(key).collect();
                let clash = keys.iter().enumerate().find_map(|(k, key)| {
                    let (key, _) = key.as_ref()?;
                    taken.get(key).map(|&(j, old_k)| (k, j, old_k))
                });
                if let Some((k, j, old_k)) = clash {
                    if let Some(address) = l.listener.addresses().nth(k) {
                        out.push(diagnostic(l, k, address, &live[j], old_k));
                    }
                    // Envoy does not add a rejected listener.
                    continue;
                }
                let binds = l.listener.bind_to_port.unwrap_or(true);
                for (k, key) in keys.into_iter().enumerate() {
                    let Some((key, port)) = key else { continue };
                    // A binding listener on port 0 gets its port from the OS: never a clash for
                    // a later one (checked with envoy 1.40; the exemption follows the earlier
                    // listener's bind_to_port, not the later one's).
                    if binds && port == Some(0) {
                        continue;
                    }
                    if let Entry::Vacant(v) = taken.entry(key) {
                        v.insert((i, k));
                    }
                }
            }
        }
    }
}
