//! `wildcard-overlap`: exact server names carved out of a wildcard on the same listener. Legal
//! (the exact name wins), and worth knowing — especially where a TLS-terminating wildcard meets
//! passthrough exact names, which Cilium ≥ 1.19.6 marks as a ProtocolConflict.

use std::fmt::Write as _;

use crate::chain_match::{Key, Level, NodeIndex, key};
use crate::checks::{Check, Context, Deferred, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Note, Severity, declare_rule};
use crate::model::FilterChain;
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
                    Some(Key::Name(name)) => g.wildcard_for(parent, &name).or(catch_all).map_or(NONE, node_number),
                    _ => NONE,
                });
                // Each name with its wildcard, grouped by wildcard (the names of each in index
                // order, as `children` has them): one sorted list of pairs of numbers while the
                // index lives, not a map of lists (at 100k tenants 2.4 MB against some 8).
                let mut pairs: Vec<(u32, u32)> = (children.iter().zip(owners))
                    .filter(|&(_, owner)| owner != NONE)
                    .map(|(&n, owner)| (owner, node_number(n)))
                    .collect();
                drop(children);
                pairs.sort_unstable();
                let carved: Vec<&[(u32, u32)]> = pairs.chunk_by(|a, b| a.0 == b.0).collect();
                crate::checks::append(found, par_map_cheap(&carved, |pairs| Carved::of(place, &l, pairs)));
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

/// One finding as the index shows it, kept while the indexes are dropped: numbers only, the
/// chains below the wildcard and below each exact name and which of its server names put a
/// chain there. Its words are written when the finding is made, from the model: written while
/// the index lived, as they were, they were held beside it at a 100k-tenant run's peak, some
/// 300 bytes a tenant. Numbers of four bytes: a listener's chains are numbered so
/// ([`crate::model::ChainIndex`]), and a run's listeners and a chain's server names are fewer.
struct Carved {
    /// The listener's place among the run's live listeners.
    place: u32,
    /// Which server name of the first chain below the wildcard is the wildcard ([`NONE`] for
    /// none found, as for a name below); `None` for a catch-all TLS chain (the `Any` key).
    wildcard: Option<u32>,
    /// How many of the chains below the wildcard start `ids`.
    wild: u32,
    /// The chains below the wildcard, then for each exact name in turn: which server name of
    /// the first chain below it is the name, how many chains are below it, and those chains.
    /// One list, sized once: a tenant's finding is a dozen numbers.
    ids: Box<[u32]>,
}

/// No server name found for a node (no chain can sit below a name but through one of its own),
/// or no wildcard for a name (no index node has this number: petgraph keeps it for none).
const NONE: u32 = u32::MAX;

/// An index node's number, as the pairs of names and wildcards hold it (petgraph numbers its
/// nodes in 32 bits).
fn node_number(n: NodeIndex) -> u32 {
    number(n.index())
}

/// A place, chain, count, server name or index node as [`Carved`] and its pairs keep it.
fn number(n: usize) -> u32 {
    u32::try_from(n).expect(
        "a listener's chains and an index's nodes are numbered in 32 bits; a run's listeners and a chain's names are fewer",
    )
}

/// The index key one of a chain's server names is, as the index holds it (lower-cased, a
/// wildcard as its suffix): what a finding names.
fn server_name_key<'c>(chain: &'c FilterChain<'_>, entry: usize) -> Option<Key<'c>> {
    let names = &chain.filter_chain_match.as_ref()?.server_names;
    names.get(entry).map(|n| key::server_name(n))
}

/// Which of a chain's server names is `key` (a chain sits below a name node through one).
fn entry_of(chain: &FilterChain<'_>, key: &Key<'_>) -> Option<usize> {
    chain.filter_chain_match.as_ref()?.server_names.iter().position(|n| key::server_name(n) == *key)
}

impl Carved {
    /// The finding of one wildcard: `pairs` are (wildcard, name) node numbers, one wildcard.
    fn of(place: usize, l: &ListenerCx<'_, '_>, pairs: &[(u32, u32)]) -> Self {
        let g = l.graph();
        let chains = &l.listener.filter_chains;
        let wildcard = NodeIndex::new(pairs[0].0 as usize);
        // The names' nodes, read from the pairs where needed (not copied: a list a tenant).
        let names = || pairs.iter().map(|&(_, n)| NodeIndex::new(n as usize));
        // The chains below each name, found once (a walk down the remaining levels each).
        let below: Vec<Vec<usize>> = names().map(|n| g.chains_below(n)).collect();
        let wild_chains = g.chains_below(wildcard);
        let entry = |node: NodeIndex, first: Option<&usize>| {
            let (key, &c) = (g.key(node)?, first?);
            entry_of(&chains[c], &key)
        };
        // The wildcard is a key node: a `*.suffix` name, or the `Any` of a catch-all chain.
        let wildcard_entry = match g.key(wildcard) {
            Some(Key::Any) => None,
            _ => Some(entry(wildcard, wild_chains.first()).map_or(NONE, number)),
        };
        let mut ids = Vec::with_capacity(wild_chains.len() + below.iter().map(|b| 2 + b.len()).sum::<usize>());
        ids.extend(wild_chains.iter().map(|&c| number(c)));
        for (n, below) in names().zip(&below) {
            ids.push(entry(n, below.first()).map_or(NONE, number));
            ids.push(number(below.len()));
            ids.extend(below.iter().map(|&c| number(c)));
        }
        Carved {
            place: number(place),
            wildcard: wildcard_entry,
            wild: number(wild_chains.len()),
            ids: ids.into_boxed_slice(),
        }
    }

    /// The exact names in order: the entry that names each (of the first chain below it) and
    /// the chains below it.
    fn names(ids: &[u32], wild: u32) -> impl Iterator<Item = (usize, &[u32])> {
        let mut rest = ids.get(wild as usize..).unwrap_or_default();
        std::iter::from_fn(move || {
            let (&[entry, n], tail) = rest.split_first_chunk::<2>()?;
            let (below, tail) = tail.split_at_checked(n as usize)?;
            rest = tail;
            Some((entry as usize, below))
        })
    }

    /// The finding's message: how many names the wildcard gives up, and the first of them with
    /// their chains. Written piece by piece (`format!` cost more than the words): at tenant
    /// scale there is one such finding per tenant.
    fn message(&self, chains: &[FilterChain<'_>], names: usize) -> String {
        let ids = &self.ids;
        let chain = |c: u32| &chains[c as usize];
        let mut message = String::with_capacity(256);
        message.push_str(itoa::Buffer::new().format(names));
        message.push_str(if names == 1 { " exact name is" } else { " exact names are" });
        message.push_str(" carved out of ");
        match (self.wildcard, ids.first()) {
            (None, _) => message.push_str("the catch-all TLS chain (no server_names)"),
            (Some(entry), Some(&c)) => {
                if let Some(k) = server_name_key(chain(c), entry as usize) {
                    let _ = k.write_to(&mut message);
                }
            }
            (Some(_), None) => {}
        }
        message.push_str(": ");
        for (k, (entry, below)) in Self::names(ids, self.wild).take(LISTED).enumerate() {
            if k > 0 {
                message.push_str(", ");
            }
            if let Some(key) = below.first().and_then(|&c| server_name_key(chain(c), entry)) {
                let _ = key.write_to(&mut message);
            }
            message.push_str(" (");
            for (j, &c) in below.iter().enumerate() {
                message.push_str(if j > 0 { ", '" } else { "'" });
                chain(c).push_display_name(&mut message);
                message.push('\'');
            }
            message.push(')');
        }
        let more = names.saturating_sub(LISTED);
        if more > 0 {
            let _ = write!(message, " and {more} more");
        }
        message
    }

    /// The finding, written from the model; what was kept is let go as it is made.
    fn diagnostic(&mut self, cx: Context<'_, '_>) -> Diagnostic {
        let l = cx.listener_at(self.place as usize);
        let chains = &l.listener.filter_chains;
        let chain = |c: u32| &chains[c as usize];
        let names = Self::names(&self.ids, self.wild).count();
        let message = self.message(chains, names);
        let ids = std::mem::take(&mut self.ids);
        let wild_chains = ids.get(..self.wild as usize).unwrap_or_default();
        // The passthrough chains below the names (a chain below two names counts twice).
        let passthrough: Vec<u32> = Self::names(&ids, self.wild)
            .flat_map(|(_, below)| below.iter().copied())
            .filter(|&c| !chain(c).terminates_tls() && chain(c).is_tcp_proxy())
            .collect();
        let first = wild_chains.first().map(|&c| chain(c));
        let mut d = Diagnostic::new(&RULE, message)
            .listener(l.listener.display_name().into_owned())
            .note("Envoy sends each exact name to its own chain and the rest of the domain to the wildcard");
        if let Some(c) = first {
            d = d.at(l.chain_location(c));
        }
        for &c in wild_chains {
            d = d.chain(chain(c).display_name());
        }
        let terminates = wild_chains.iter().any(|&c| chain(c).terminates_tls());
        if terminates && !passthrough.is_empty() {
            // Sized once: the note is held with the finding until it is written.
            const HEAD: &str = "the wildcard terminates TLS and ";
            let room = passthrough.iter().map(|&c| chain(c).display_name_len() + 7).sum::<usize>();
            let mut note = String::with_capacity(HEAD.len() + room + 7);
            note.push_str(HEAD);
            for (k, &c) in passthrough.iter().enumerate() {
                note.push_str(match k {
                    0 => "'",
                    _ if k + 1 == passthrough.len() => " and '",
                    _ => ", '",
                });
                chain(c).push_display_name(&mut note);
                note.push('\'');
            }
            note.push_str(if passthrough.len() == 1 { " passes" } else { " pass" });
            d = d.note(Note::joined(
                note,
                " TLS through: Cilium 1.19.6 and later mark that Gateway listener pair ProtocolConflict (Accepted=False) although Envoy serves both correctly; cilium#48092 disputes the rule",
            ));
            if let Some(&c) = passthrough.first() {
                d = d.related("a passthrough chain for a name under the wildcard", l.chain_location(chain(c)));
            }
        }
        d
    }
}
