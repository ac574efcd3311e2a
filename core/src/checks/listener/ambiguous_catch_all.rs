//! `ambiguous-catch-all`: an explicit `0.0.0.0/0` (or `::/0`) next to an unset range list at the
//! same place of Envoy's index. Envoy accepts it and then picks either.

use crate::chain_match::{Key, Level, Node, NodeIndex};
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};

declare_rule! {
    pub(crate) static RULE for AmbiguousCatchAll = {
        code: "XDS203",
        name: "ambiguous-catch-all",
        severity: Severity::Warning,
        summary: "An explicit 0.0.0.0/0 or ::/0 range next to an unset one: Envoy's choice between them is undefined.",
        explanation: "ambiguous_catch_all.md",
    }
}

pub(crate) struct AmbiguousCatchAll;

impl Check for AmbiguousCatchAll {
    fn reads(&self) -> Reads {
        Reads::GRAPHS
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            let g = l.graph();
            for parent in g.nodes() {
                // Most nodes have one child; only a node with both keys can be ambiguous.
                if g.children_unordered(parent).nth(1).is_none() {
                    continue;
                }
                let children = g.children(parent);
                let at = |want: fn(&Key<'_>) -> bool| -> Option<(NodeIndex, Level)> {
                    children.iter().find_map(|&n| match g.node(n) {
                        Node::Key { level, key } if ip_level(level) && want(&key) => Some((n, level)),
                        _ => None,
                    })
                };
                let Some((unset, level)) = at(|k| *k == Key::Any) else { continue };
                for (family, zero) in [("IPv4", "0.0.0.0/0"), ("IPv6", "::/0")] {
                    let explicit = children
                        .iter()
                        .copied()
                        .find(|&n| matches!(g.key(n), Some(Key::Cidr(c)) if c.to_string() == zero));
                    if let Some(explicit) = explicit {
                        out.push(diagnostic(
                            &l,
                            level,
                            family,
                            zero,
                            &g.chains_below(explicit),
                            &g.chains_below(unset),
                        ));
                    }
                }
            }
        }
    }
}

fn ip_level(level: Level) -> bool {
    matches!(level, Level::DestinationIp | Level::DirectSourceIp | Level::SourceIp)
}

fn field(level: Level) -> &'static str {
    match level {
        Level::DestinationIp => "prefix_ranges",
        Level::DirectSourceIp => "direct_source_prefix_ranges",
        _ => "source_prefix_ranges",
    }
}

fn diagnostic(
    l: &ListenerCx<'_, '_>,
    level: Level,
    family: &str,
    zero: &str,
    explicit: &[usize],
    unset: &[usize],
) -> Diagnostic {
    let chains = &l.listener.filter_chains;
    let (Some(&first_explicit), Some(&first_unset)) = (explicit.first(), unset.first()) else {
        unreachable!("both keys of the index lead to at least one chain")
    };
    let mut d = Diagnostic::new(
        &RULE,
        format!(
            "filter chain '{}' lists {zero} in {} while '{}' leaves it unset: for {family} connections Envoy's choice is undefined",
            chains[first_explicit].display_name(),
            field(level),
            chains[first_unset].display_name()
        ),
    )
    .at(l.chain_location(&chains[first_explicit]))
    .listener(l.listener.display_name().into_owned())
    .related("the chain without the range", l.chain_location(&chains[first_unset]))
    .note("Envoy stores an unset list as 0.0.0.0/0 and ::/0 under another key: its overlap check does not see this, and its lookup finds two equal-length prefixes");
    for &c in explicit.iter().chain(unset) {
        d = d.chain(chains[c].display_name());
    }
    d
}
