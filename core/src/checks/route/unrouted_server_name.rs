//! `unrouted-server-name`: a TLS-terminating chain accepts a server name that no virtual host of
//! its own route table takes. The client sends that name as its Host too, and Envoy picks the
//! virtual host by Host alone, so every request for it gets a 404.
//!
//! Decided only where the table is in the input (inline, or the RDS table by name) and has no
//! `vhds`. A Host may carry the listener's port (a client connecting to a port other than the
//! scheme's default sends it), so a name counts as routed when either form reaches a virtual host.

use std::borrow::Cow;

use crate::chain_match::key::ascii_lower;
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::route::{Hcm, RouteTable, RouteTables};
use crate::model::{Address, FilterChain};
use crate::routing::{Bucket, DomainIndex, domain_key, port_start, strip_port};
use crate::source::Location;

declare_rule! {
    pub(crate) static RULE for UnroutedServerName = {
        code: "XDS213",
        name: "unrouted-server-name",
        severity: Severity::Warning,
        summary: "A TLS-terminating chain accepts a server name that no virtual host of its route table takes: every request for it gets a 404.",
        explanation: "unrouted_server_name.md",
    }
}

pub(crate) struct UnroutedServerName;

/// The Host forms a client of this chain may send after `name`: none, or the listener's port,
/// each as the HCM leaves it.
fn tails(hcm: &Hcm, table: &RouteTable, port: Option<u16>) -> Vec<String> {
    let mut out = vec![String::new()];
    if let Some(p) = port.filter(|&p| p != 0)
        && !table.ignore_port_in_host_matching
        && strip_port(&format!("x:{p}"), hcm.strip_any_host_port, hcm.strip_matching_host_port, Some(p)).is_none()
    {
        out.push(format!(":{p}"));
    }
    out
}

/// Whether some Host `<at least one character><suffix>` (suffix `.example.com` or
/// `.example.com:8443`) reaches a virtual host. Any virtual host counts: which one wins does
/// not matter here. A prefix domain is taken to reach one: a Host `<prefix>a<suffix>` exists.
fn wildcard_reached(table: &RouteTable, suffix: &str) -> bool {
    table.virtual_hosts.iter().flat_map(|vh| &vh.domains).any(|d| {
        let (bucket, key) = domain_key(d);
        if table.ignore_port_in_host_matching && bucket != Bucket::Default && port_start(&key).is_some() {
            return false;
        }
        match bucket {
            Bucket::Default | Bucket::Prefix => true,
            Bucket::Exact => key.len() > suffix.len() && key.ends_with(suffix),
            Bucket::Suffix => key.ends_with(suffix) || suffix.ends_with(key.as_str()),
        }
    })
}

/// Whether a server name (lower-cased) reaches a virtual host of the table.
fn reached(index: &DomainIndex, table: &RouteTable, name: &str, tails: &[String]) -> bool {
    // The first tail is empty: the name is its own Host, asked without writing it out again.
    fn joined<'h>(head: &'h str, tail: &str) -> Cow<'h, str> {
        match tail {
            "" => Cow::Borrowed(head),
            _ => Cow::Owned(format!("{head}{tail}")),
        }
    }
    match name.strip_prefix('*') {
        Some(rest) => tails.iter().any(|t| wildcard_reached(table, &joined(rest, t))),
        None => tails.iter().any(|t| index.domain_for(table, &joined(name, t)).is_some()),
    }
}

fn listener_port(l: &ListenerCx<'_, '_>) -> Option<u16> {
    match &l.listener.address {
        Some(Address::Socket(s)) => s.port_value.and_then(|p| u16::try_from(p).ok()),
        _ => None,
    }
}

fn diagnostic(
    cx: &Context<'_, '_>,
    l: &ListenerCx<'_, '_>,
    chain: &FilterChain<'_>,
    i: usize,
    name: &str,
    table: &RouteTable,
) -> Diagnostic {
    let at = l.chain_field_location(chain, &["filter_chain_match", "server_names", &i.to_string()]);
    let text = cx.locator_of(table.source);
    let table_at = Location::new(table.source, table.pointer.clone(), text.locate_pointer(&table.pointer));
    Diagnostic::new(
        &RULE,
        format!(
            "server name '{name}' of chain '{}' reaches no virtual host of route table '{}': every request for it gets a 404",
            chain.display_name(),
            table.display_name(),
        ),
    )
    .at(at)
    .related("the route table the chain's http_connection_manager uses", table_at)
    .note("Envoy picks the virtual host by the Host header alone, and a client sends the name it connected to")
    .note("add the name (or a wildcard that takes it) to a virtual host's domains, or drop it from server_names")
    .listener(l.listener.display_name().into_owned())
    .chain(chain.display_name().into_owned())
}

impl Check for UnroutedServerName {
    fn reads(&self) -> Reads {
        Reads::ROUTES
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        // Under a filter_chain_matcher the chains' filter_chain_match is ignored: no server
        // names select them there.
        for l in cx.listeners().filter(|l| l.listener.filter_chain_matcher.is_none()) {
            let port = listener_port(&l);
            for chain in &l.listener.filter_chains {
                let Some(m) = chain.filter_chain_match.as_ref().filter(|m| !m.server_names.is_empty()) else {
                    continue;
                };
                if !chain.terminates_tls() {
                    continue;
                }
                for hcm in RouteTables::hcms_of_chain(chain) {
                    let Some(table) = cx.routes().table_of(l.envoy, hcm).filter(|t| !t.vhds) else { continue };
                    let index = DomainIndex::build(table);
                    let tails = tails(hcm, table, port);
                    for (i, name) in m.server_names.iter().enumerate() {
                        let lower = ascii_lower(name);
                        // `""` is no server name at all (misleading-server-name says so).
                        if !lower.is_empty() && !reached(&index, table, &lower, &tails) {
                            out.push(diagnostic(&cx, &l, chain, i, name, table));
                        }
                    }
                }
            }
        }
    }
}
