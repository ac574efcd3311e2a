//! `matcher-ignored-match`: a filter chain that sets `filter_chain_match` in a listener with
//! `filter_chain_matcher`. Envoy neither applies nor validates it.

use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{FilterChain, FilterChainMatch};

declare_rule! {
    pub(crate) static RULE for MatcherIgnoredMatch = {
        code: "XDS209",
        name: "matcher-ignored-match",
        severity: Severity::Warning,
        summary: "A filter chain sets filter_chain_match next to filter_chain_matcher: Envoy ignores it.",
        explanation: "matcher_ignored_match.md",
        fingerprint: "XDS204",
    }
}

pub(crate) struct MatcherIgnoredMatch;

fn diagnostic(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>) -> Diagnostic {
    Diagnostic::new(
        &RULE,
        format!(
            "filter_chain_match of chain '{}' is ignored because the listener has filter_chain_matcher",
            chain.display_name()
        ),
    )
    .at(l.chain_field_location(chain, &["filter_chain_match"]))
    .listener(l.listener.display_name().into_owned())
    .chain(chain.display_name().into_owned())
    .note("Envoy selects chains only through the matcher; it neither applies nor validates filter_chain_match")
}

/// Whether a match says anything (a `{}` next to a matcher is harmless).
fn restricts(m: &FilterChainMatch<'_>) -> bool {
    let empty = FilterChainMatch { offset: m.offset, casing: m.casing, ..FilterChainMatch::default() };
    *m != empty
}

impl Check for MatcherIgnoredMatch {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.matcher_listeners() {
            for chain in &l.listener.filter_chains {
                if chain.filter_chain_match.as_ref().is_some_and(restricts) {
                    out.push(diagnostic(&l, chain));
                }
            }
        }
    }
}
