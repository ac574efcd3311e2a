//! `unimplemented-field`: `address_suffix` or `suffix_len` set in a filter chain match. Envoy
//! never implemented them and rejects the listener.

use crate::checks::{Check, Context, ListenerCx, Reads, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::FilterChain;

declare_rule! {
    pub(crate) static RULE for UnimplementedField = {
        code: "XDS105",
        name: "unimplemented-field",
        severity: Severity::Error,
        summary: "A filter_chain_match sets address_suffix or suffix_len, which Envoy does not implement; it rejects the listener.",
        explanation: "unimplemented_field.md",
    }
}

pub(crate) struct UnimplementedField;

fn diagnostic(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>, fields: &[&str]) -> Diagnostic {
    let chain_name = chain.display_name();
    Diagnostic::new(
        &RULE,
        format!("filter chain '{chain_name}' sets {}, which Envoy does not implement", fields.join(" and ")),
    )
    .at(l.chain_field_location(chain, &["filter_chain_match", fields[0]]))
    .listener(l.listener.display_name().into_owned())
    .chain(chain_name.to_string())
    // Envoy prints the name as written, '' for an unnamed chain.
    .with_envoy_error(envoy_text::adding_listener(
        l.listener,
        format_args!("filter chain '{}' contains unimplemented fields", chain.name),
    ))
    .note("Envoy rejects the whole listener, with or without filter_chain_matcher")
}

impl Check for UnimplementedField {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            for chain in &l.listener.filter_chains {
                let Some(u) = chain.filter_chain_match.as_ref().and_then(|m| m.unimplemented()) else {
                    continue;
                };
                let mut fields = Vec::new();
                if !u.address_suffix.is_empty() {
                    fields.push("address_suffix");
                }
                // A UInt32Value: set to 0 is still set.
                if u.suffix_len.is_some() {
                    fields.push("suffix_len");
                }
                if !fields.is_empty() {
                    out.push(diagnostic(&l, chain, &fields));
                }
            }
        }
    }
}
