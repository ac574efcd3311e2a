//! The checks. Each lives in its own file and reads top to bottom: its [`Rule`], how it builds
//! its diagnostic, then its logic. [`ALL`] is the one explicit registry, in code order.
//!
//! Codes: `XDS1xx` Envoy rejects the configuration (severity error); `XDS2xx` Envoy accepts it
//! but connections are lost or misrouted (warning); `XDS3xx` worth knowing (info).

mod ambiguous_catch_all;
mod duplicate_filter_chain_match;
mod duplicate_listener_address;
mod duplicate_listener_name;
mod envoy_text;
mod invalid_port;
mod invalid_server_name;
mod malformed_cidr;
mod matcher_action;
mod matcher_chain_name;
mod matcher_server_name_domain;
mod missing_address;
mod no_filter_chains;
mod no_listeners;
mod overlapping_filter_chain_match;
mod rejected_update;
mod skipped_document;
mod sni_blackhole;
mod unimplemented_field;
mod unreachable_filter_chain;
mod wildcard_overlap;

use crate::diagnostic::{Diagnostic, Rule};
use crate::graph::MatchGraph;
use crate::graph::select::ListenerMatch;
use crate::model::{FilterChain, Input, Listener, Snapshot};
use crate::parallel::par_map;
use crate::source::{Location, Locator, SourceId, Sources};

/// What a check is given.
#[derive(Debug, Clone, Copy)]
pub struct Context<'s, 'a> {
    pub snapshot: &'s Snapshot<'a>,
    pub sources: &'s Sources,
    listeners: &'s [ListenerCx<'s, 'a>],
}

/// One live listener with the source it came from and how it selects chains, built once for
/// every check that asks it.
#[derive(Debug, Clone, Copy)]
pub struct ListenerCx<'s, 'a> {
    pub source: SourceId,
    /// Where places in the listener's input are.
    pub text: Locator<'s>,
    pub listener: &'s Listener<'a>,
    /// The engine `xdsck trace` asks too: the index or the `filter_chain_matcher`.
    pub matching: &'s ListenerMatch<'s, 'a>,
    /// The filter-chain index, `matching.graph()`: empty when the matcher selects.
    pub graph: &'s MatchGraph<'s, 'a>,
}

impl<'s, 'a> Context<'s, 'a> {
    /// Where places in one of the snapshot's inputs are.
    pub fn locator(&self, input: &Input<'a>) -> Locator<'s> {
        input.locator(self.sources.get(input.source))
    }

    /// Every live listener (static, active or declared), in input order.
    pub fn listeners(&self) -> impl Iterator<Item = ListenerCx<'s, 'a>> + 's {
        self.listeners.iter().copied()
    }
}

impl ListenerCx<'_, '_> {
    /// Where the listener is.
    pub fn location(&self) -> Location {
        self.listener.location(self.source, self.text)
    }

    /// Where one of its chains is.
    pub fn chain_location(&self, chain: &FilterChain<'_>) -> Location {
        self.listener.chain_location(self.source, self.text, chain)
    }

    /// A place inside the listener's `filter_chain_matcher`, `suffix` being a pointer relative to
    /// it (e.g. `/matcher_tree/custom_match`). Found by reading the matcher again, like
    /// [`Self::chain_field_location`].
    pub fn matcher_location(&self, suffix: &str) -> Location {
        let anchor = format!("{}/{}", self.listener.pointer, self.listener.casing.field("filter_chain_matcher"));
        let pointer = format!("{anchor}{suffix}");
        // The loader kept where the matcher starts: only it is read again.
        let start = self.listener.filter_chain_matcher.as_ref().and_then(|m| m.offset);
        let offset = self.text.locate_pointer_below(&anchor, start, &pointer).or_else(|| self.location().offset);
        Location::new(self.source, pointer, offset)
    }

    /// The offset of a node below the listener (a pointer starting with the listener's),
    /// reading only the listener again, and only up to the node.
    pub fn locate_in_listener(&self, pointer: &str) -> Option<usize> {
        self.text.locate_pointer_below(&self.listener.pointer, self.listener.offset, pointer)
    }

    /// A place below a chain, e.g. `["filter_chain_match", "server_names", "2"]` (snake_case
    /// field names; spelled as the input spells them). Its offset is found by reading the chain
    /// again, up to the value: the cost of a finding is the chain's, not the file's.
    pub fn chain_field_location(&self, chain: &FilterChain<'_>, path: &[&str]) -> Location {
        let mut pointer = self.listener.chain_pointer(chain);
        let mut casing = chain.casing;
        for (i, token) in path.iter().enumerate() {
            pointer = crate::source::join_field(&pointer, casing, token);
            // Below filter_chain_match the match object's own casing applies.
            if i == 0 && *token == "filter_chain_match" {
                casing = chain.filter_chain_match.as_ref().map_or(casing, |m| m.casing);
            }
        }
        let anchor = self.listener.chain_pointer(chain);
        let offset = self
            .text
            .locate_pointer_below(&anchor, chain.offset, &pointer)
            .or_else(|| self.chain_location(chain).offset);
        Location::new(self.source, pointer, offset)
    }
}

/// The rule a check reports under. `declare_rule! { pub static RULE for TheCheck = { ... } }`
/// implements it, so each check names its rule once, where it declares it.
pub trait HasRule {
    fn rule(&self) -> &'static Rule;
}

/// One check.
pub trait Check: HasRule + Sync {
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>);
}

/// Every check, in code order.
pub static ALL: &[&dyn Check] = &[
    &duplicate_filter_chain_match::DuplicateFilterChainMatch,
    &overlapping_filter_chain_match::OverlappingFilterChainMatch,
    &invalid_server_name::InvalidServerName,
    &malformed_cidr::MalformedCidr,
    &unimplemented_field::UnimplementedField,
    &no_filter_chains::NoFilterChains,
    &matcher_chain_name::MatcherChainName,
    &duplicate_listener_address::DuplicateListenerAddress,
    &duplicate_listener_name::DuplicateListenerName,
    &rejected_update::RejectedUpdate,
    &matcher_server_name_domain::MatcherServerNameDomain,
    &invalid_port::InvalidPort,
    &missing_address::MissingAddress,
    &sni_blackhole::SniBlackhole,
    &unreachable_filter_chain::UnreachableFilterChain,
    &ambiguous_catch_all::AmbiguousCatchAll,
    &matcher_action::MatcherAction,
    &wildcard_overlap::WildcardOverlap,
    &skipped_document::SkippedDocument,
    &no_listeners::NoListeners,
];

/// Runs every check on a snapshot.
pub fn run_all(snapshot: &Snapshot<'_>, sources: &Sources) -> Vec<Diagnostic> {
    run_checks(ALL, snapshot, sources)
}

/// Runs one check (graphs included), for profiling.
pub fn run_one(check: &dyn Check, snapshot: &Snapshot<'_>, sources: &Sources) -> Vec<Diagnostic> {
    run_checks(&[check], snapshot, sources)
}

fn run_checks(checks: &[&dyn Check], snapshot: &Snapshot<'_>, sources: &Sources) -> Vec<Diagnostic> {
    let live: Vec<(SourceId, Locator<'_>, &Listener<'_>)> = snapshot
        .inputs
        .iter()
        .flat_map(|input| {
            let text = input.locator(sources.get(input.source));
            input.listeners.iter().filter(|l| l.state.is_live()).map(move |l| (input.source, text, l))
        })
        .collect();
    let matchings: Vec<ListenerMatch<'_, '_>> = par_map(&live, |(_, _, l)| ListenerMatch::build(l));
    let listeners: Vec<ListenerCx<'_, '_>> = live
        .iter()
        .zip(&matchings)
        .map(|(&(source, text, listener), matching)| ListenerCx {
            source,
            text,
            listener,
            matching,
            graph: matching.graph(),
        })
        .collect();
    let cx = Context { snapshot, sources, listeners: &listeners };
    // Checks are independent readers of the same graphs; their findings are concatenated in
    // registry order, so the output does not depend on which finished first.
    par_map(checks, |check| {
        let mut out = Vec::new();
        check.run(cx, &mut out);
        out
    })
    .into_iter()
    .flatten()
    .collect()
}
