//! `unreachable-filter-chain`: chains no connection can ever reach on this listener.
//!
//! Only what can be proven from the listener itself: criteria no listener filter can satisfy,
//! destinations the listener never sees, and port-less chains on a listener whose every port has
//! its own chains.

use std::net::IpAddr;

use crate::chain_match::key;
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{Address, FilterChain, Listener};

declare_rule! {
    pub(crate) static RULE for UnreachableFilterChain = {
        code: "XDS202",
        name: "unreachable-filter-chain",
        severity: Severity::Warning,
        summary: "A filter chain no connection can reach: nothing sets what it matches on, or more specific chains take all its traffic.",
        explanation: "unreachable_filter_chain.md",
    }
}

pub(crate) struct UnreachableFilterChain;

impl Check for UnreachableFilterChain {
    fn reads(&self) -> Reads {
        Reads::GRAPHS
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            let listener = l.listener;
            if listener.filter_chain_matcher.is_some() || listener.udp_listener_config {
                continue;
            }
            let facts = Facts::of(listener);
            let port_less_shadowed = facts.ports_all_claimed(listener);
            for (i, chain) in listener.filter_chains.iter().enumerate() {
                // A chain Envoy refuses (an error finding says why) is not also "unreachable".
                if l.graph().excluded.get(i).is_some_and(Option::is_some) {
                    continue;
                }
                if let Some(why) = facts.why_unreachable(chain, port_less_shadowed) {
                    out.push(diagnostic(&l, chain, why));
                }
            }
        }
    }
}

fn diagnostic(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>, why: String) -> Diagnostic {
    Diagnostic::new(&RULE, format!("filter chain '{}' can never be reached: {why}", chain.display_name()))
        .at(l.chain_location(chain))
        .listener(l.listener.display_name().into_owned())
        .chain(chain.display_name())
}

/// What the listener's filters and addresses allow.
struct Facts {
    tls_inspector: bool,
    http_inspector: bool,
    /// A listener filter may present another local address than the socket's.
    destination_restored: bool,
    /// The listener's own ports and IPs; `None` when they are not known (no address, port 0).
    ports: Option<Vec<u32>>,
    ips: Option<Vec<IpAddr>>,
}

impl Facts {
    fn of(l: &Listener<'_>) -> Self {
        let restored = l.restores_destination();
        let sockets: Vec<_> = l
            .addresses()
            .map(|a| match a {
                Address::Socket(s) => Some(s),
                _ => None,
            })
            .collect();
        let known = !sockets.is_empty() && sockets.iter().all(|s| s.is_some_and(|s| s.port_value.unwrap_or(0) != 0));
        let ports = known.then(|| sockets.iter().flatten().filter_map(|s| s.port_value).collect());
        let ips = known
            .then(|| sockets.iter().flatten().filter_map(|s| s.address.parse::<IpAddr>().ok()).collect::<Vec<_>>())
            .filter(|ips: &Vec<IpAddr>| !ips.is_empty() && ips.iter().all(|ip| !ip.is_unspecified()));
        Facts {
            tls_inspector: l.has_tls_inspector(),
            http_inspector: l.has_http_inspector(),
            destination_restored: restored,
            ports,
            ips,
        }
    }

    /// Whether every port the listener receives has chains with that `destination_port`.
    fn ports_all_claimed(&self, l: &Listener<'_>) -> bool {
        let Some(ports) = &self.ports else { return false };
        !self.destination_restored
            && ports.iter().all(|p| {
                l.filter_chains
                    .iter()
                    .any(|c| c.filter_chain_match.as_ref().and_then(|m| m.destination_port) == Some(*p))
            })
    }

    fn why_unreachable(&self, chain: &FilterChain<'_>, port_less_shadowed: bool) -> Option<String> {
        let Some(m) = &chain.filter_chain_match else {
            return port_less_shadowed.then(|| self.shadowed_text());
        };
        let names = m.server_names.iter().any(|n| !n.is_empty());
        if !self.tls_inspector && (names || m.transport_protocol == "tls") {
            let what = if names { "server_names" } else { "transport_protocol tls" };
            return Some(format!(
                "it matches on {what}, and the listener has no tls_inspector to read a ClientHello (Envoy does not add one by itself)"
            ));
        }
        if !m.application_protocols.is_empty() && !self.tls_inspector {
            let plaintext =
                m.application_protocols.iter().any(|a| matches!(a.as_ref(), "http/1.1" | "http/1.0" | "h2c"));
            if !(plaintext && self.http_inspector && m.transport_protocol != "tls") {
                return Some(
                    "it matches on application_protocols, and no listener filter sets them (tls_inspector for TLS, http_inspector for plaintext HTTP)"
                        .to_owned(),
                );
            }
        }
        if !self.destination_restored {
            if let (Some(port), Some(ports)) = (m.destination_port, &self.ports) {
                if !ports.contains(&port) {
                    return Some(format!(
                        "destination_port {port} is none of the listener's ports ({}) and no listener filter restores another destination",
                        ports.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
            if let Some(ips) = &self.ips {
                let ranges: Vec<_> = m.prefix_ranges().iter().filter_map(|r| key::cidr(r).ok()).collect();
                if !ranges.is_empty() && !ips.iter().any(|ip| ranges.iter().any(|r| r.contains(ip))) {
                    return Some(format!(
                        "its prefix_ranges contain none of the listener's addresses ({})",
                        ips.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        (port_less_shadowed && m.destination_port.is_none()).then(|| self.shadowed_text())
    }

    fn shadowed_text(&self) -> String {
        "it has no destination_port, and every port of the listener has chains with that destination_port: Envoy then never tries the port-less chains".to_owned()
    }
}
