//! `overlapping-filter-chain-match`: two chains (or one chain twice) claim the same connection
//! tuple after Envoy's normalisation; Envoy rejects the listener.

use crate::checks::{Check, Context, ListenerCx};
use crate::diagnostic::{Diagnostic, Rule, Severity};
use crate::graph::{Key, Level, Overlap};

pub static RULE: Rule = Rule {
    code: "XDS102",
    name: "overlapping-filter-chain-match",
    severity: Severity::Error,
    summary: "Two filter chains match the same connection after normalisation; Envoy rejects the listener.",
    explanation: "## What it finds\nFilter chains whose `filter_chain_match`, expanded the way Envoy expands it (every combination of server name, prefix range, ALPN, source range and source port), puts two chains on the same entry of Envoy's index. Envoy lower-cases server names, stores `*.x` and `.x` alike, treats `\"\"` as unset, and masks CIDR host bits before comparing, so these collide:\n- one name in two chains' `server_names` with otherwise equal criteria;\n- `API.example.com` and `api.example.com`;\n- `*.example.com` and `.example.com`;\n- `10.0.0.1/8` and `10.0.0.0/8`;\n- a value listed twice in one chain.\n\n## Why it matters\nEnvoy refuses the whole listener: `multiple filter chains with overlapping matching rules are defined`. With xDS the update is NACKed and every hostname on that listener keeps the old configuration (or, for a new listener, gets none).\n\n## Example\n```yaml\nfilter_chains:\n- name: a\n  filter_chain_match: {server_names: [api.example.com, www.example.com]}\n- name: b\n  filter_chain_match: {server_names: [API.example.com]}\n```\n\n## Fix\nGive each tuple one owner: merge the chains, or remove the name from one of them. Controllers that render one chain per route (Cilium before 1.19.4, cilium#45623) need the fix upstream.\n",
};

pub struct OverlappingFilterChainMatch;

fn describe(tuple: &[Key<'_>]) -> String {
    let parts: Vec<String> = Level::ALL
        .iter()
        .zip(tuple)
        .filter(|(_, k)| **k != Key::Any)
        .map(|(level, k)| format!("{} {}", level.as_str(), k))
        .collect();
    if parts.is_empty() { "every connection (no criteria)".to_owned() } else { parts.join(", ") }
}

fn diagnostic(l: &ListenerCx<'_, '_>, o: &Overlap<'_>) -> Diagnostic {
    let chain = &l.listener.filter_chains[o.chain];
    let earlier = &l.listener.filter_chains[o.earlier];
    let what = describe(&o.tuple);
    let message = if o.chain == o.earlier {
        format!("filter chain '{}' matches {what} twice", chain.display_name())
    } else {
        format!("filter chains '{}' and '{}' both match {what}", chain.display_name(), earlier.display_name())
    };
    let mut d = Diagnostic::new(&RULE, message)
        .at(l.chain_location(chain))
        .listener(l.listener.name.to_string())
        .chain(chain.display_name())
        .envoy_error(format!(
            "error adding listener '{}': multiple filter chains with overlapping matching rules are defined",
            l.listener.envoy_address_list()
        ))
        .note("Envoy compares server names lower-cased, `*.x` and `.x` alike, `\"\"` as unset, and CIDRs after masking host bits");
    if o.chain != o.earlier {
        d = d.chain(earlier.display_name()).related("the other chain", l.chain_location(earlier));
    }
    for (level, key) in Level::ALL.iter().zip(&o.tuple) {
        match (level, key) {
            (Level::DestinationPort, Key::Port(p)) => d = d.example("dst_port", *p),
            (Level::DestinationIp, Key::Cidr(n)) => d = d.example("dst_ip", n.network().to_string()),
            (Level::ServerName, Key::Name(n)) => d = d.example("sni", n.to_string()),
            (Level::ServerName, Key::Suffix(s)) => d = d.example("sni", format!("x{s}")),
            (Level::TransportProtocol, Key::Protocol(p)) => d = d.example("transport", p.to_string()),
            (Level::ApplicationProtocol, Key::Protocol(p)) => d = d.example("alpn", p.to_string()),
            (Level::SourceIp, Key::Cidr(n)) => d = d.example("src_ip", n.network().to_string()),
            (Level::SourcePort, Key::Port(p)) => d = d.example("src_port", *p),
            _ => {}
        }
    }
    d
}

impl Check for OverlappingFilterChainMatch {
    fn rule(&self) -> &'static Rule {
        &RULE
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            out.extend(l.graph.overlaps.iter().map(|o| diagnostic(&l, o)));
        }
    }
}
