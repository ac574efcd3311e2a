//! `matcher-action`: what `filter_chain_matcher` does that Envoy accepts but that loses
//! connections: actions naming chains that do not exist, chains no action names,
//! `filter_chain_match` that Envoy ignores, and ServerNameMatcher domains that can never match.

use std::collections::HashSet;

use crate::checks::{Check, Context, ListenerCx};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{FilterChain, FilterChainMatch};
use crate::source::Location;

declare_rule! {
    pub static RULE for MatcherAction = {
        code: "XDS204",
        name: "matcher-action",
        severity: Severity::Warning,
        summary: "filter_chain_matcher sends connections to a chain that does not exist, never reaches a chain, or has settings Envoy ignores.",
        explanation: "matcher_action.md",
    }
}

pub struct MatcherAction;

fn missing_chain(l: &ListenerCx<'_, '_>, at: Location, name: &str) -> Diagnostic {
    let default_named = l.listener.default_filter_chain.as_ref().is_some_and(|d| d.name == name);
    let mut d = Diagnostic::new(
        &RULE,
        format!("filter_chain_matcher action names filter chain '{name}', which the listener does not have"),
    )
    .at(at)
    .listener(l.listener.name.to_string())
    .note("Envoy closes every connection that reaches this action; it does not fall back to default_filter_chain");
    if default_named {
        d = d.note("actions select only among filter_chains: the default_filter_chain cannot be named by an action");
    }
    d
}

fn unreachable(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>) -> Diagnostic {
    Diagnostic::new(
        &RULE,
        format!("no filter_chain_matcher action names filter chain '{}': it is never used", chain.name),
    )
    .at(l.chain_location(chain))
    .listener(l.listener.name.to_string())
    .chain(chain.display_name().into_owned())
    .note("with filter_chain_matcher, a chain is reached only through an action naming it")
}

fn ignored_match(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>) -> Diagnostic {
    Diagnostic::new(
        &RULE,
        format!(
            "filter_chain_match of chain '{}' is ignored because the listener has filter_chain_matcher",
            chain.display_name()
        ),
    )
    .at(l.chain_field_location(chain, &["filter_chain_match"]))
    .listener(l.listener.name.to_string())
    .chain(chain.display_name().into_owned())
    .note("Envoy selects chains only through the matcher; it neither applies nor validates filter_chain_match")
}

fn upper_case(l: &ListenerCx<'_, '_>, at: Location, domain: &str) -> Diagnostic {
    Diagnostic::new(&RULE, format!("ServerNameMatcher domain '{domain}' has upper-case letters and never matches"))
        .at(at)
        .listener(l.listener.name.to_string())
        .note(format!(
            "Envoy lower-cases the SNI but compares ServerNameMatcher domains as written: write '{}'",
            domain.to_ascii_lowercase()
        ))
}

/// Whether a match says anything (a `{}` next to a matcher is harmless).
fn restricts(m: &FilterChainMatch<'_>) -> bool {
    let empty = FilterChainMatch { offset: m.offset, casing: m.casing, ..FilterChainMatch::default() };
    *m != empty
}

impl Check for MatcherAction {
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            let Some(parts) = &l.listener.filter_chain_matcher else { continue };
            let locate = |p: &str| l.matcher_location(p);
            let chains = &l.listener.filter_chains;
            for a in &parts.actions {
                if !chains.iter().any(|c| c.name == a.name) {
                    out.push(missing_chain(&l, locate(&a.pointer), &a.name));
                }
            }
            let named: HashSet<&str> = parts.actions.iter().map(|a| &*a.name).collect();
            // A repeated name is matcher-chain-name's error; the chain is reported once here.
            let mut seen: HashSet<&str> = HashSet::new();
            for chain in chains {
                if !chain.name.is_empty() && seen.insert(&chain.name) && !named.contains(&*chain.name) {
                    out.push(unreachable(&l, chain));
                }
                if chain.filter_chain_match.as_ref().is_some_and(restricts) {
                    out.push(ignored_match(&l, chain));
                }
            }
            for snm in parts.server_name_matchers.iter().filter(|s| s.reads_server_name) {
                for (domain, pointer) in snm.domain_matchers.iter().flatten() {
                    if domain.bytes().any(|b| b.is_ascii_uppercase()) {
                        out.push(upper_case(&l, locate(pointer), domain));
                    }
                }
            }
        }
    }
}
