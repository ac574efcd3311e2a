//! `matcher-missing-chain`: a `filter_chain_matcher` action naming a filter chain the listener
//! does not have. Envoy accepts the listener and closes every connection that reaches it.

use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::source::Location;

declare_rule! {
    pub(crate) static RULE for MatcherMissingChain = {
        code: "XDS204",
        name: "matcher-missing-chain",
        severity: Severity::Warning,
        summary: "A filter_chain_matcher action names a filter chain the listener does not have: its connections are closed.",
        explanation: "matcher_missing_chain.md",
    }
}

pub(crate) struct MatcherMissingChain;

fn diagnostic(l: &ListenerCx<'_, '_>, at: Location, name: &str) -> Diagnostic {
    let default_named = l.listener.default_filter_chain.as_ref().is_some_and(|d| d.name == name);
    let mut d = Diagnostic::new(
        &RULE,
        format!("filter_chain_matcher action names filter chain '{name}', which the listener does not have"),
    )
    .at(at)
    .listener(l.listener.display_name().into_owned())
    .note("Envoy closes every connection that reaches this action; it does not fall back to default_filter_chain");
    if default_named {
        d = d.note("actions select only among filter_chains: the default_filter_chain cannot be named by an action");
    }
    d
}

impl Check for MatcherMissingChain {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            let Some(parts) = &l.listener.filter_chain_matcher else { continue };
            for a in &parts.actions {
                if !l.listener.filter_chains.iter().any(|c| c.name == a.name) {
                    out.push(diagnostic(&l, l.matcher_location(&a.pointer), &a.name));
                }
            }
        }
    }
}
