//! `invalid-address`: an address Envoy cannot use when it builds a listener or a static
//! cluster: a listener address (or the admin API's) that is not an IP literal; a static cluster's endpoint without
//! an address, with a name where an IP belongs, or naming a resolver Envoy does not have.
//! (Resolving names is what the DNS cluster types do; a STATIC cluster takes IPs.) Texts
//! checked with envoy 1.40 `--mode validate`.

use crate::checks::cidr_ranges::parse_ip;
use crate::checks::{Check, Context, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::build::Discovery;
use crate::model::{Address, Casing, TextOffset};
use crate::source::{Location, join_field, join_index};

declare_rule! {
    pub(crate) static RULE for InvalidAddress = {
        code: "XDS124",
        name: "invalid-address",
        severity: Severity::Error,
        summary: "A listener address that is not an IP, or a static cluster endpoint without a usable address: Envoy refuses the configuration.",
        explanation: "invalid_address.md",
    }
}

pub(crate) struct InvalidAddress;

/// What a STATIC cluster's endpoint errors end with.
const CONSIDER: &str = ". Consider setting resolver_name or setting cluster type to 'STRICT_DNS' or 'LOGICAL_DNS'";

/// Whether Envoy 1.40 has the resolver (`envoy.resolvers` in `/server_info`).
fn known_resolver(name: &str) -> bool {
    crate::schema::Schema::get().extensions().has_name("envoy.resolvers", name)
}

impl Check for InvalidAddress {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            let listener = l.listener;
            let addresses = listener.address.iter().map(|a| (a, "address".to_owned())).chain(
                listener.additional_addresses.iter().enumerate().map(|(i, a)| {
                    let list = join_field("", listener.casing, "additional_addresses");
                    (
                        a,
                        join_field(&join_index(&list, i), listener.casing, "address")
                            .trim_start_matches('/')
                            .to_owned(),
                    )
                }),
            );
            for (address, field) in addresses {
                let Address::Socket(s) = address else { continue };
                if s.resolver_name().is_some() || s.address.is_empty() || parse_ip(&s.address).is_some() {
                    continue;
                }
                let at = address_pointer(&join_field(&listener.pointer, listener.casing, &field), listener.casing);
                let location = Location::new(
                    l.source,
                    at.clone(),
                    l.locate_in_listener(&at).or(listener.offset.map(TextOffset::get)),
                );
                out.push(
                    Diagnostic::new(&RULE, format!("listener '{}': address {:?} is not an IP address", listener.display_name(), s.address))
                        .at(location)
                        .listener(listener.display_name().into_owned())
                        .with_envoy_error(format!("malformed IP address: {}", s.address))
                        .note("a listener binds an IP; names are resolved by clusters (STRICT_DNS, LOGICAL_DNS), not listeners"),
                );
            }
        }
        for l in cx.listeners() {
            let listener = l.listener;
            // An internal listener is served by the bootstrap extension that makes them.
            let bootstrap = cx.snapshot.inputs.get(l.envoy).and_then(|i| i.bootstrap.as_ref());
            if listener.internal_listener
                && let Some(b) = bootstrap
                && !b
                    .extensions
                    .iter()
                    .any(|t| t.ends_with("envoy.extensions.bootstrap.internal_listener.v3.InternalListener"))
            {
                out.push(
                    Diagnostic::new(&RULE, format!("internal listener '{}' needs the bootstrap's InternalListener extension, which it lacks", listener.display_name()))
                        .at(l.location())
                        .listener(listener.display_name().into_owned())
                        .with_envoy_error(format!("error adding listener named '{}': InternalListener bootstrap extension is mandatory", listener.name))
                        .note("add bootstrap_extensions: [{name: envoy.bootstrap.internal_listener, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener}}]"),
                );
            }
            for &i in &listener.unset_additional_addresses {
                let list = join_field(&listener.pointer, listener.casing, "additional_addresses");
                let at = join_index(&list, i);
                let location = Location::new(
                    l.source,
                    at.clone(),
                    l.locate_in_listener(&at).or(listener.offset.map(TextOffset::get)),
                );
                // Envoy has no message for it: it aborts.
                out.push(
                    Diagnostic::new(
                        &RULE,
                        format!("listener '{}': additional_addresses[{i}] has no address", listener.display_name()),
                    )
                    .at(location)
                    .listener(listener.display_name().into_owned())
                    .note("Envoy 1.40 aborts on it (`panic: unset oneof`) instead of refusing it"),
                );
            }
        }
        for input in &cx.snapshot.inputs {
            let text = cx.locator(input);
            // The admin API's address: Envoy binds it as it binds a listener's.
            if let Some((pointer, Address::Socket(s))) = input.bootstrap.as_ref().and_then(|b| b.admin_address.as_ref())
                && s.resolver_name().is_none()
                && !s.address.is_empty()
                && parse_ip(&s.address).is_none()
            {
                let at = address_pointer(pointer, Casing::Snake);
                let location =
                    Location::new(input.source, at.clone(), text.locate_pointer(&at).or(text.locate_pointer(pointer)));
                out.push(
                    Diagnostic::new(&RULE, format!("the admin address {:?} is not an IP address", s.address))
                        .at(location)
                        .with_envoy_error(format!("malformed IP address: {}", s.address)),
                );
            }
            for c in input.cluster_builds.iter().filter(|c| c.discovery == Some(Discovery::Static)) {
                for e in c.endpoints.iter().filter(|e| e.address.is_some() || !e.address_given) {
                    let Some((message, envoy)) = endpoint_problem(&c.name, e.address.as_ref()) else { continue };
                    let pointer = format!("{}{}", c.pointer(), e.pointer());
                    let offset = text.locate_pointer(&pointer);
                    let at = Location::new(input.source, pointer, offset);
                    out.push(Diagnostic::new(&RULE, message).at(at).with_envoy_error(envoy));
                }
            }
        }
    }
}

/// What is wrong with a STATIC cluster's endpoint address, in xdsck's words and Envoy's.
fn endpoint_problem(cluster: &str, address: Option<&Address<'_>>) -> Option<(String, String)> {
    match address {
        // Envoy prints the (empty) Address message between its two parts.
        None => Some((
            format!("an endpoint of STATIC cluster '{cluster}' has no address"),
            format!("Address must be set: {CONSIDER}"),
        )),
        Some(Address::Socket(s)) => match s.resolver_name() {
            Some(r) if !r.is_empty() => (!known_resolver(r)).then(|| {
                (
                    format!("an endpoint of cluster '{cluster}' names resolver {r:?}, which Envoy 1.40 does not have"),
                    format!("Unknown address resolver: {r}{CONSIDER}"),
                )
            }),
            // An empty address breaks a PGV rule (constraint-violation).
            _ if s.address.is_empty() || parse_ip(&s.address).is_some() => None,
            _ => Some((
                format!(
                    "an endpoint of STATIC cluster '{cluster}' has the address {:?}, which is not an IP: a STATIC cluster does not resolve names",
                    s.address
                ),
                format!("malformed IP address: {}{CONSIDER}", s.address),
            )),
        },
        Some(_) => None,
    }
}

/// The pointer of the address string in an Address message at `at`.
fn address_pointer(at: &str, casing: Casing) -> String {
    join_field(&join_field(at, casing, "socket_address"), casing, "address")
}
