//! `matcher-unused-chain`: a named filter chain of a listener with `filter_chain_matcher` that
//! no action names. With a matcher a chain is reached only through an action, so it is never
//! used.

use std::collections::HashSet;

use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::FilterChain;

declare_rule! {
    pub(crate) static RULE for MatcherUnusedChain = {
        code: "XDS208",
        name: "matcher-unused-chain",
        severity: Severity::Warning,
        summary: "No filter_chain_matcher action names a filter chain: it is never used.",
        explanation: "matcher_unused_chain.md",
        fingerprint: "XDS204",
    }
}

pub(crate) struct MatcherUnusedChain;

fn diagnostic(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>) -> Diagnostic {
    Diagnostic::new(
        &RULE,
        format!("no filter_chain_matcher action names filter chain '{}': it is never used", chain.name),
    )
    .at(l.chain_location(chain))
    .listener(l.listener.display_name().into_owned())
    .chain(chain.display_name().into_owned())
    .note("with filter_chain_matcher, a chain is reached only through an action naming it")
}

impl Check for MatcherUnusedChain {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            let Some(parts) = &l.listener.filter_chain_matcher else { continue };
            let named: HashSet<&str> = parts.actions.iter().map(|a| &*a.name).collect();
            // A repeated name is matcher-chain-name's error; the chain is reported once here.
            let mut seen: HashSet<&str> = HashSet::new();
            for chain in &l.listener.filter_chains {
                if !chain.name.is_empty() && seen.insert(&chain.name) && !named.contains(&*chain.name) {
                    out.push(diagnostic(&l, chain));
                }
            }
        }
    }
}
