//! `matcher-chain-name`: with `filter_chain_matcher`, every filter chain needs a non-empty,
//! unique name (the matcher's actions name chains); Envoy rejects the listener otherwise.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::checks::{Check, Context, ListenerCx, Reads, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::FilterChain;

declare_rule! {
    pub(crate) static RULE for MatcherChainName = {
        code: "XDS107",
        name: "matcher-chain-name",
        severity: Severity::Error,
        summary: "A listener with filter_chain_matcher has a filter chain with no name or a repeated name; Envoy rejects it.",
        explanation: "matcher_chain_name.md",
    }
}

pub(crate) struct MatcherChainName;

fn unnamed(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>) -> Diagnostic {
    Diagnostic::new(&RULE, format!("{} has no name, which filter_chain_matcher requires", chain.display_name()))
        .at(l.chain_location(chain))
        .listener(l.listener.display_name().into_owned())
        .chain(chain.display_name().into_owned())
        .with_envoy_error(envoy_text::adding_listener(
            l.listener,
            "\"name\" field is required when using a listener matcher",
        ))
        .note("the matcher's actions select chains by name; Envoy rejects the whole listener")
}

fn duplicated(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>, first: &FilterChain<'_>) -> Diagnostic {
    Diagnostic::new(&RULE, format!("filter chain name '{}' is used twice with filter_chain_matcher", chain.name))
        .at(l.chain_field_location(chain, &["name"]))
        .listener(l.listener.display_name().into_owned())
        .chain(chain.display_name().into_owned())
        .related("the first chain with this name", l.chain_location(first))
        .with_envoy_error(envoy_text::adding_listener(
            l.listener,
            format_args!("\"name\" field is duplicated with value '{}'", chain.name),
        ))
        .note("the matcher's actions select chains by name, so names must be unique; Envoy rejects the whole listener")
}

impl Check for MatcherChainName {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.matcher_listeners() {
            let mut first: HashMap<&str, usize> = HashMap::with_capacity(l.listener.filter_chains.len());
            for (i, chain) in l.listener.filter_chains.iter().enumerate() {
                if chain.name.is_empty() {
                    out.push(unnamed(&l, chain));
                } else {
                    match first.entry(&chain.name) {
                        Entry::Vacant(v) => {
                            v.insert(i);
                        }
                        Entry::Occupied(o) => out.push(duplicated(&l, chain, &l.listener.filter_chains[*o.get()])),
                    }
                }
            }
        }
    }
}
