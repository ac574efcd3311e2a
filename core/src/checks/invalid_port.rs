//! `invalid-port`: a `destination_port` or `source_ports` entry outside 1..65535, which Envoy's
//! proto validation (PGV) refuses before it looks at anything else.

use crate::checks::{Check, Context, ListenerCx, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::FilterChain;

declare_rule! {
    pub(crate) static RULE for InvalidPort = {
        code: "XDS112",
        name: "invalid-port",
        severity: Severity::Error,
        summary: "A destination_port or source_ports entry outside 1..65535; Envoy's proto validation rejects the listener.",
        explanation: "invalid_port.md",
    }
}

pub(crate) struct InvalidPort;

/// PGV's message from "Proto constraint validation failed" on, as for a Listener resource (a
/// bootstrap prefixes the path from the Bootstrap down to the listener).
fn pgv_error(chain: &FilterChain<'_>, field: &str) -> String {
    envoy_text::pgv_filter_chain_match(chain, format_args!("{field}: value must be inside range [1, 65535]"))
}

fn diagnostic(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>, path: &[&str], what: String, field: &str) -> Diagnostic {
    Diagnostic::new(&RULE, format!("filter chain '{}': {what} is outside 1..65535", chain.display_name()))
        .at(l.chain_field_location(chain, path))
        .listener(l.listener.name.to_string())
        .chain(chain.display_name())
        .envoy_error(pgv_error(chain, field))
        .note("port 0 does not mean any port: leave the field unset for that")
}

fn valid(port: u32) -> bool {
    (1..=65535).contains(&port)
}

impl Check for InvalidPort {
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            for chain in l.listener.filter_chains.iter().chain(l.listener.default_filter_chain.iter()) {
                let Some(m) = &chain.filter_chain_match else { continue };
                if let Some(p) = m.destination_port.filter(|&p| !valid(p)) {
                    out.push(diagnostic(
                        &l,
                        chain,
                        &["filter_chain_match", "destination_port"],
                        format!("destination_port {p}"),
                        "DestinationPort",
                    ));
                }
                for (i, &p) in m.source_ports.iter().enumerate() {
                    if !valid(p) {
                        let index = i.to_string();
                        out.push(diagnostic(
                            &l,
                            chain,
                            &["filter_chain_match", "source_ports", &index],
                            format!("source port {p}"),
                            &format!("SourcePorts[{i}]"),
                        ));
                    }
                }
            }
        }
    }
}
