//! `wildcard-overlap`: exact server names carved out of a wildcard on the same listener. Legal
//! (the exact name wins), and worth knowing — especially where a TLS-terminating wildcard meets
//! passthrough exact names, which Cilium ≥ 1.19.6 marks as a ProtocolConflict.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::chain_match::{Key, Level, NodeIndex};
use crate::checks::{Check, Context, Deferred, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Note, Severity, declare_rule};
use crate::parallel::{par_extend_mut_cheap, par_map_cheap};

declare_rule! {
    pub(crate) static RULE for WildcardOverlap = {
        code: "XDS301",
        name: "wildcard-overlap",
        severity: Severity::Info,
        summary: "Exact server names carved out of a wildcard on the same listener (the exact names win).",
        explanation: "wildcard_overlap.md",
    }
}

pub(crate) struct WildcardOverlap;

/// How many exact names a finding's message lists; the rest are counted.
const LISTED: usize = 10;

impl Check for WildcardOverlap {
    fn reads(&self) -> Reads {
        Reads::GRAPHS
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        if let Some(deferred) = self.run_deferred(cx, out) {
            deferred.append_to(cx, out);
        }
    }

    fn run_deferred(&self, cx: Context<'_, '_>, _out: &mut Vec<Diagnostic>) -> Option<Deferred> {
        // A finding per tenant at tenant scale, the longest of the checks: what each is made of
        // is found now, on every core; the findings are made once the indexes are dropped.
        let found = cx.per_listener(|place, l, found| {
            let g = l.graph();
            // Server names hang below destination IP keys: only those parents can have them
            // (reading the node first spares a walk of the edges of millions of others).
            for parent in g.nodes_at(Level::DestinationIp) {
                if g.children_unordered(parent).nth(1).is_none() {
                    continue;
                }
                let children = g.children(parent);
                // Each exact name belongs to the longest wildcard that covers it (the one that
                // would take it if the name were gone).
                // A catch-all chain that terminates TLS counts as `*` (Cilium renders a Gateway
                // listener without hostname so); a plaintext catch-all is no wildcard at all.
                let catch_all = g
                    .child(parent, &Key::Any)
                    .filter(|&a| g.chains_below(a).iter().any(|&c| l.listener.filter_chains[c].terminates_tls()));
                // The wildcards are looked up on every core: a hash probe or three per name
                // into a table of millions, at tenant scale most of this check's work.
                let owners = par_map_cheap(&children, |&n| match g.key(n) {
                    Some(Key::Name(name)) => g.wildcard_for(parent, name).or(catch_all),
                    _ => None,
                });
                let mut carved: BTreeMap<NodeIndex, Vec<NodeIndex>> = BTreeMap::new();
                for (&n, owner) in children.iter().zip(owners) {
                    if let Some(w) = owner {
                        carved.entry(w).or_default().push(n);
                    }
                }
                let carved: Vec<_> = carved.into_iter().collect();
                crate::checks::append(
                    found,
                    par_map_cheap(&carved, |(wildcard, names)| Carved::of(place, &l, *wildcard, names)),
                );
            }
        });
        Some(Deferred {
            len: found.len(),
            make: Box::new(move |cx: Context<'_, '_>, out: &mut Vec<Diagnostic>| {
                let mut found = found;
                par_extend_mut_cheap(&mut found, out, |_, c| c.diagnostic(cx));
            }),
        })
    }
}

/// One finding as the index shows it, kept while the indexes are dropped: its message (written
/// while the index lives, moved into the finding later) and chain numbers, nothing borrowed
/// from the index; about a third of the finding's size.
struct Carved {
    /// The listener's place among the run's live listeners.
    place: usize,
    message: String,
    /// The chains below the wildcard.
    wild_chains: Vec<usize>,
    /// The passthrough chains below the names.
    passthrough: Vec<usize>,
}

impl Carved {
    fn of(place: usize, l: &ListenerCx<'_, '_>, wildcard: NodeIndex, names: &[NodeIndex]) -> Self {
        let g = l.graph();
        let chains = &l.listener.filter_chains;
        // The chains below each name, found once (a walk down the remaining levels each).
        let below: Vec<Vec<usize>> = names.iter().map(|&n| g.chains_below(n)).collect();
        // Written into one string, piece by piece (`format!` cost more than the words): at
        // tenant scale there is one such finding per tenant. Room for a tenant's few names, cut
        // to size below.
        let mut message = String::with_capacity(256);
        message.push_str(itoa::Buffer::new().format(names.len()));
        message.push_str(if names.len() == 1 { " exact name is" } else { " exact names are" });
        message.push_str(" carved out of ");
        match g.key(wildcard) {
            Some(Key::Any) => message.push_str("the catch-all TLS chain (no server_names)"),
            Some(k) => {
                let _ = k.write_to(&mut message);
            }
            None => {}
        }
        message.push_str(": ");
        for (k, (&n, below)) in names.iter().zip(&below).take(LISTED).enumerate() {
            if k > 0 {
                message.push_str(", ");
            }
            if let Some(key) = g.key(n) {
                let _ = key.write_to(&mut message);
            }
            message.push_str(" (");
            for (j, &c) in below.iter().enumerate() {
                message.push_str(if j > 0 { ", '" } else { "'" });
                chains[c].push_display_name(&mut message);
                message.push('\'');
            }
            message.push(')');
        }
        let more = names.len().saturating_sub(LISTED);
        if more > 0 {
            let _ = write!(message, " and {more} more");
        }
        // Kept at its size while the indexes live (the finding would cut it so anyway).
        message.shrink_to_fit();
        let passthrough =
            below.into_iter().flatten().filter(|&c| !chains[c].terminates_tls() && chains[c].is_tcp_proxy()).collect();
        Carved { place, message, wild_chains: g.chains_below(wildcard), passthrough }
    }

    /// The finding, its message moved out of what was kept.
    fn diagnostic(&mut self, cx: Context<'_, '_>) -> Diagnostic {
        let l = cx.listener_at(self.place);
        let chains = &l.listener.filter_chains;
        let (message, wild_chains, passthrough) =
            (std::mem::take(&mut self.message), &self.wild_chains, &self.passthrough);
        let first = wild_chains.first().map(|&c| &chains[c]);
        let mut d = Diagnostic::new(&RULE, message)
            .listener(l.listener.display_name().into_owned())
            .note("Envoy sends each exact name to its own chain and the rest of the domain to the wildcard");
        if let Some(c) = first {
            d = d.at(l.chain_location(c));
        }
        for &c in wild_chains {
            d = d.chain(chains[c].display_name());
        }
        let terminates = wild_chains.iter().any(|&c| chains[c].terminates_tls());
        if terminates && !passthrough.is_empty() {
            // Sized once: the note is held with the finding until it is written.
            const HEAD: &str = "the wildcard terminates TLS and ";
            let room = passthrough.iter().map(|&c| chains[c].display_name_len() + 7).sum::<usize>();
            let mut note = String::with_capacity(HEAD.len() + room + 7);
            note.push_str(HEAD);
            for (k, &c) in passthrough.iter().enumerate() {
                note.push_str(match k {
                    0 => "'",
                    _ if k + 1 == passthrough.len() => " and '",
                    _ => ", '",
                });
                chains[c].push_display_name(&mut note);
                note.push('\'');
            }
            note.push_str(if passthrough.len() == 1 { " passes" } else { " pass" });
            d = d.note(Note::joined(
                note,
                " TLS through: Cilium 1.19.6 and later mark that Gateway listener pair ProtocolConflict (Accepted=False) although Envoy serves both correctly; cilium#48092 disputes the rule",
            ));
            if let Some(&c) = passthrough.first() {
                d = d.related("a passthrough chain for a name under the wildcard", l.chain_location(&chains[c]));
            }
        }
        d
    }
}
