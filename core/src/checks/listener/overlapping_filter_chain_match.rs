//! `overlapping-filter-chain-match`: two chains (or one chain twice) claim the same connection
//! tuple after Envoy's normalisation; Envoy rejects the listener.

use crate::chain_match::{Key, Level, Overlap};
use crate::checks::{Check, Context, ListenerCx, Reads, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};

declare_rule! {
    pub(crate) static RULE for OverlappingFilterChainMatch = {
        code: "XDS102",
        name: "overlapping-filter-chain-match",
        severity: Severity::Error,
        summary: "Two filter chains match the same connection after normalisation; Envoy rejects the listener.",
        explanation: "overlapping_filter_chain_match.md",
    }
}

pub(crate) struct OverlappingFilterChainMatch;

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
        .listener(l.listener.display_name().into_owned())
        .chain(chain.display_name())
        .with_envoy_error(envoy_text::adding_listener(
            l.listener,
            "multiple filter chains with overlapping matching rules are defined",
        ))
        .note("Envoy compares server names lower-cased, `*.x` and `.x` alike, `\"\"` as unset, and CIDRs after masking host bits");
    if o.chain != o.earlier {
        d = d.chain(earlier.display_name()).related("the other chain", l.chain_location(earlier));
    }
    for (level, key) in Level::ALL.iter().zip(&o.tuple) {
        match (level, key) {
            (Level::DestinationPort, Key::Port(p)) => d = d.with_example("dst_port", *p),
            (Level::DestinationIp, Key::Cidr(n)) => d = d.with_example("dst_ip", n.network().to_string()),
            (Level::ServerName, Key::Name(n)) => d = d.with_example("sni", n.to_string()),
            (Level::ServerName, Key::Suffix(s)) => d = d.with_example("sni", format!("x{s}")),
            (Level::TransportProtocol, Key::Protocol(p)) => d = d.with_example("transport", p.to_string()),
            (Level::ApplicationProtocol, Key::Protocol(p)) => d = d.with_example("alpn", p.to_string()),
            (Level::SourceIp, Key::Cidr(n)) => d = d.with_example("src_ip", n.network().to_string()),
            (Level::SourcePort, Key::Port(p)) => d = d.with_example("src_port", *p),
            _ => {}
        }
    }
    d
}

impl Check for OverlappingFilterChainMatch {
    fn reads(&self) -> Reads {
        Reads::GRAPHS
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            out.extend(l.graph().overlaps.iter().map(|o| diagnostic(&l, o)));
        }
    }
}
