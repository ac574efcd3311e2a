//! Which filter chain takes a connection, as Envoy decides it: the filter-chain index of one
//! listener (here: [`MatchGraph`], a petgraph tree), the unified `filter_chain_matcher`
//! ([`matcher`]), and [`select::ListenerMatch`], which asks whichever of the two a listener
//! uses.
//!
//! The index:
//!
//! Envoy expands every chain's `filter_chain_match` into the cross product of its repeated
//! fields and inserts each tuple into a tree with one level per criterion (envoy-matching.md
//! §2.1). The same tree answers both questions xdsck asks: which chains collide (two tuples on
//! one leaf — Envoy's "overlapping" error) and where a connection lands ([`trace`]: one key per
//! level, the most specific present, never backtracking).
//!
//! One difference in shape, not in meaning: where the rest of a tuple is wildcards only, its
//! chain leaf hangs at the last level it sets instead of below a run of `Any` nodes (see
//! [`MatchGraph::leaf_child`]). Every level a connection passes there takes the `Any` key, so
//! `trace` and `reach` treat such a leaf as reached; tenant listeners, which set two of the nine
//! levels, get a graph a third of the size.

pub mod key;
pub mod matcher;
pub mod select;
pub mod trace;

#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use std::sync::LazyLock;

use petgraph::Direction;
use petgraph::graph::DiGraph;
/// A node of a [`MatchGraph`]; nodes are numbered in creation order, parents before children.
pub use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;

use crate::hashing::InputHasher;
use crate::model::{AddressSuffix, ChainIndex, CidrRange, FilterChain, FilterChainMatch, Listener, SourceType, Text};
use crate::parallel::par_map_cheap;
pub use key::{Key, Level};

/// Up to this many children a node's keys are found by scanning its edges.
const SMALL: usize = 8;
// A node's child count is kept in a byte that stops at 255 ([`MatchGraph::counts`]): past
// `SMALL` it must still tell "more than SMALL".
const _: () = assert!(SMALL < u8::MAX as usize);

/// How many chains' keys are read at a time ahead of their insertion: few enough that what they
/// borrow is still in the cache when the chains are inserted.
const KEY_BLOCK: usize = 2048;

/// The largest node bound whose index is cut to size once built (see [`MatchGraph::build`]).
const SHRINK_UP_TO: usize = 4096;

/// A node of the index: a key at a level, or a chain at the leaves, as [`MatchGraph::node`]
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node<'g> {
    /// The listener itself, above [`Level::DestinationPort`]: where Envoy starts every lookup.
    Root,
    /// One entry of Envoy's per-level map: connections whose attribute at `level` is `key` go
    /// down this edge.
    Key {
        /// The level this key belongs to (its depth below the root).
        level: Level,
        /// The value Envoy compares the connection's attribute with at that level (its text
        /// borrowed from the model or the index).
        key: Key<'g>,
    },
    /// Index into `listener.filter_chains`.
    Chain(usize),
}

/// A node as the graph holds it: its level is kept beside it ([`MatchGraph::levels`]), and
/// what does not fit in four bytes (a key's text, a CIDR) is in the index's [`Values`], by
/// number: 8 bytes a node and 16 with petgraph's two edge links, not the 32 of a node holding
/// its text's reference (at tenant scale the index has 1.5M nodes). [`Values::key`] shows a
/// node as the key it stands for.
///
/// Four bytes are enough for a chain or a value: a listener's chains are numbered so
/// ([`ChainIndex::listed`]), and each value has its node, which petgraph numbers in 32 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    Root,
    Chain(u32),
    Any,
    Port(u32),
    Cidr(u32),
    SourceType(SourceType),
    /// A text borrowed from the model ([`Values::texts`]).
    Text(TextKey, u32),
    /// A text lower-casing made ([`Values::lowered`]), as rare as upper-case server names.
    Lowered(TextKey, u32),
}

/// Which [`Key`] a [`Stored`] text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextKey {
    Name,
    Suffix,
    Protocol,
}

impl TextKey {
    fn key(self, text: Cow<'_, str>) -> Key<'_> {
        match self {
            TextKey::Name => Key::Name(text),
            TextKey::Suffix => Key::Suffix(text),
            TextKey::Protocol => Key::Protocol(text),
        }
    }
}

/// How many distinct protocols [`Values::store`] looks for among those it holds before it
/// stores one again: a listener's protocols are a handful of values, each under every server
/// name (half a million `tls` nodes at tenant scale, one text).
const SHARED_PROTOCOLS: usize = 8;

/// The values of an index's key nodes that a [`Stored`] names by number.
#[derive(Debug, Default)]
struct Values<'l> {
    texts: Vec<&'l str>,
    lowered: Vec<Box<str>>,
    cidrs: Vec<ipnet::IpNet>,
    /// The first protocols stored, by number in `texts`: a protocol key found here is not
    /// stored again.
    protocols: Vec<u32>,
}

/// The number the next value pushed on `list` has.
fn next_number<T>(list: &[T]) -> u32 {
    u32::try_from(list.len()).expect("fewer values than nodes, which petgraph numbers in 32 bits")
}

impl<'l> Values<'l> {
    /// How the graph holds `key`: its value stored here if it does not fit in the node.
    fn store(&mut self, key: &Key<'l>) -> Stored {
        let (kind, text) = match key {
            Key::Any => return Stored::Any,
            Key::Port(p) => return Stored::Port(*p),
            Key::Cidr(n) => {
                let i = next_number(&self.cidrs);
                self.cidrs.push(*n);
                return Stored::Cidr(i);
            }
            Key::SourceType(t) => return Stored::SourceType(*t),
            Key::Name(s) => (TextKey::Name, s),
            Key::Suffix(s) => (TextKey::Suffix, s),
            Key::Protocol(s) => (TextKey::Protocol, s),
        };
        let s = match text {
            Cow::Borrowed(s) => s,
            Cow::Owned(s) => {
                let i = next_number(&self.lowered);
                self.lowered.push(s.as_str().into());
                return Stored::Lowered(kind, i);
            }
        };
        let protocol = kind == TextKey::Protocol;
        let shared = match protocol {
            true => self.protocols.iter().copied().find(|&i| self.texts[i as usize] == *s),
            false => None,
        };
        if let Some(i) = shared {
            return Stored::Text(kind, i);
        }
        let i = next_number(&self.texts);
        self.texts.push(s);
        if protocol && self.protocols.len() < SHARED_PROTOCOLS {
            self.protocols.push(i);
        }
        Stored::Text(kind, i)
    }

    /// The key a key node stands for, its text borrowed from the model or from here; `None`
    /// for the root and a chain leaf.
    fn key(&self, node: Stored) -> Option<Key<'_>> {
        match node {
            Stored::Text(kind, i) => Some(kind.key(Cow::Borrowed(self.texts[i as usize]))),
            Stored::Lowered(kind, i) => Some(kind.key(Cow::Borrowed(&self.lowered[i as usize]))),
            other => self.textless_key(other),
        }
    }

    /// [`Self::key`] for as long as the model lives: a lowered text is copied.
    fn model_key(&self, node: Stored) -> Option<Key<'l>> {
        match node {
            Stored::Text(kind, i) => Some(kind.key(Cow::Borrowed(self.texts[i as usize]))),
            Stored::Lowered(kind, i) => Some(kind.key(Cow::Owned(self.lowered[i as usize].to_string()))),
            other => self.textless_key(other),
        }
    }

    /// The key of a node whose key has no text; `None` for the root, a leaf and a text.
    fn textless_key(&self, node: Stored) -> Option<Key<'static>> {
        match node {
            Stored::Any => Some(Key::Any),
            Stored::Port(p) => Some(Key::Port(p)),
            Stored::Cidr(i) => Some(Key::Cidr(self.cidrs[i as usize])),
            Stored::SourceType(t) => Some(Key::SourceType(t)),
            Stored::Root | Stored::Chain(_) | Stored::Text(..) | Stored::Lowered(..) => None,
        }
    }

    /// Whether `node` is a key node for `key`.
    fn is(&self, node: Stored, key: &Key<'_>) -> bool {
        self.key(node).as_ref() == Some(key)
    }
}

/// Two chains whose expanded tuples collide: Envoy rejects the listener with
/// "multiple filter chains with overlapping matching rules are defined".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap<'k> {
    /// The later chain (Envoy fails while adding it).
    pub chain: usize,
    /// The earlier chain that holds the tuple (may equal `chain`: a value repeated in one chain).
    pub earlier: usize,
    /// The colliding tuple, one key per level.
    pub tuple: Vec<Key<'k>>,
}

/// A chain that takes no part in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Excluded {
    /// Its match is protobuf-equal to this earlier chain's: Envoy rejects it before indexing.
    /// (Its number in four bytes, as a chain's: one of these a chain is 8 bytes, not 16.)
    SameRulesAs(u32),
    /// It has a value Envoy refuses (malformed CIDR, partial wildcard server name).
    Invalid,
}

/// The index of one listener (legacy `filter_chain_match` mode). Keys borrow from the listener.
#[derive(Debug)]
pub struct MatchGraph<'l, 'a> {
    /// The listener the index was built from; chain indices in [`Node::Chain`], [`Overlap`]
    /// and `excluded` index its `filter_chains`.
    pub listener: &'l Listener<'a>,
    /// Private: checks and callers ask the queries below, so the tree's shape (a chain leaf
    /// above the last level standing for `Any` below it) is read in one place.
    graph: DiGraph<Stored, ()>,
    /// The texts and CIDRs of its key nodes.
    values: Values<'l>,
    /// The level of each key node, by node index (what the root and the leaves hold here means
    /// nothing).
    levels: Vec<Level>,
    pub(crate) root: NodeIndex,
    /// (parent, key) → child for the nodes with many children: Envoy's per-level hash maps.
    /// Most nodes have one child (the wildcard levels of a chain), and a short scan of their
    /// edges beats hashing them; only nodes past [`SMALL`] children are indexed here. Entries
    /// are (parent, child) and the key is read from the child: 8 bytes each instead of a copy
    /// of the key. Keys are names from the input: hashed by `hasher`, seeded
    /// ([`crate::hashing`]).
    children: HashTable<(NodeIndex, NodeIndex)>,
    hasher: InputHasher,
    /// Children per node, counted up to 255: only whether a node has more than [`SMALL`] is
    /// asked (a byte a node, not four: the index has 1.5M nodes at tenant scale).
    counts: Vec<u8>,
    /// One collision per pair of chains, in the order Envoy adds the chains: the first is the
    /// one Envoy stops at when it rejects the listener.
    pub overlaps: Vec<Overlap<'l>>,
    /// Per chain: why it is not in the index, if it is not.
    pub excluded: Vec<Option<Excluded>>,
}

/// The keys of one chain per level, before expansion: level `d` is `keys[ends[d]..ends[d + 1]]`.
/// One flat buffer a chain, sized once: at tenant scale a `Vec` per level and chain was
/// millions of allocations.
#[derive(Default)]
struct ChainKeys<'k> {
    keys: Vec<Key<'k>>,
    /// Each server name's hash (`hasher.hash_one(key)`), taken where the keys are read, on
    /// every core: the insertion, on one, then hashes a number with its parent's, not the name
    /// (a fifth of its time at tenant scale). `None` for other keys, hashed where a node with
    /// many children needs it (few do: the names at a port are the wide level).
    hashes: Vec<Option<u64>>,
    ends: [usize; 10],
}

impl<'k> ChainKeys<'k> {
    fn level(&self, depth: usize) -> &[Key<'k>] {
        &self.keys[self.ends[depth]..self.ends[depth + 1]]
    }

    fn level_hashes(&self, depth: usize) -> &[Option<u64>] {
        &self.hashes[self.ends[depth]..self.ends[depth + 1]]
    }

    /// Fills in one chain's keys and its names' hashes; `false` if a value is one Envoy refuses.
    fn fill(&mut self, m: Option<&'k FilterChainMatch<'_>>, hasher: &InputHasher) -> bool {
        if !self.fill_keys(m) {
            return false;
        }
        self.hashes.clear();
        let name = |k: &Key<'_>| matches!(k, Key::Name(_) | Key::Suffix(_));
        self.hashes.extend(self.keys.iter().map(|k| name(k).then(|| hasher.hash_one(k))));
        true
    }

    fn fill_keys(&mut self, m: Option<&'k FilterChainMatch<'_>>) -> bool {
        self.keys.clear();
        // Room for every key at once (a level holds its values, or `Any`): grown from empty,
        // the buffer was reallocated three times a chain, 2% of a tenant-scale run.
        let lists = m.map_or(0, |m| {
            m.prefix_ranges().len()
                + m.server_names.len()
                + m.application_protocols.len()
                + m.direct_source_prefix_ranges().len()
                + m.source_prefix_ranges().len()
                + m.source_ports().len()
        });
        self.keys.reserve(9 + lists);
        let Some(m) = m else {
            self.keys.extend(std::iter::repeat_n(Key::Any, 9));
            self.ends = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
            return true;
        };
        // Ports outside 1..65535 fail Envoy's proto validation before anything is indexed.
        let port_ok = |p: u32| (1..=65535).contains(&p);
        if m.destination_port.is_some_and(|p| !port_ok(p)) || m.source_ports().iter().any(|&p| !port_ok(p)) {
            return false;
        }
        if m.server_names.iter().any(|n| key::is_partial_wildcard(n)) {
            return false;
        }
        let keys = &mut self.keys;
        let cidrs = |keys: &mut Vec<Key<'k>>, v: &[CidrRange<'_>]| -> bool {
            if v.is_empty() {
                keys.push(Key::Any);
                return true;
            }
            v.iter().all(|c| key::cidr(c).map(|n| keys.push(Key::Cidr(n))).is_ok())
        };
        let strs = |keys: &mut Vec<Key<'k>>, v: &'k [Text<'_>]| {
            if v.is_empty() {
                keys.push(Key::Any);
            }
            keys.extend(v.iter().map(|s| if s.is_empty() { Key::Any } else { Key::Protocol(Cow::Borrowed(&**s)) }));
        };
        let mut ends = [0; 10];
        keys.push(m.destination_port.map_or(Key::Any, Key::Port));
        ends[1] = keys.len();
        if !cidrs(keys, m.prefix_ranges()) {
            return false;
        }
        ends[2] = keys.len();
        if m.server_names.is_empty() {
            keys.push(Key::Any);
        }
        keys.extend(m.server_names.iter().map(|n| key::server_name(n)));
        ends[3] = keys.len();
        strs(keys, std::slice::from_ref(&m.transport_protocol));
        ends[4] = keys.len();
        strs(keys, &m.application_protocols);
        ends[5] = keys.len();
        if !cidrs(keys, m.direct_source_prefix_ranges()) {
            return false;
        }
        ends[6] = keys.len();
        keys.push(match m.source_type {
            SourceType::Any => Key::Any,
            t => Key::SourceType(t),
        });
        ends[7] = keys.len();
        if !cidrs(keys, m.source_prefix_ranges()) {
            return false;
        }
        ends[8] = keys.len();
        if m.source_ports().is_empty() {
            keys.push(Key::Any);
        }
        keys.extend(m.source_ports().iter().map(|&p| Key::Port(p)));
        ends[9] = keys.len();
        self.ends = ends;
        true
    }
}

impl<'l, 'a> MatchGraph<'l, 'a> {
    /// Builds the index as Envoy does, chain by chain in list order.
    pub fn build(listener: &'l Listener<'a>) -> Self {
        let chains = &listener.filter_chains;
        // What each chain's match is, read on every core: at tenant scale the chains are
        // hundreds of megabytes, and one pass over them costs what the insertion below does.
        let hasher = InputHasher::default();
        let facts = par_map_cheap(chains, |c| {
            let m = c.filter_chain_match.as_ref();
            (hasher.hash_one(rules(m)), tuples(m), m.map_or(0, |m| m.server_names.len()))
        });
        // At most one node per level and expanded tuple, plus its leaf: sized once from that
        // bound, the vectors never regrow (reserved pages that stay unused cost no memory).
        // Capped: a hostile cross product must not reserve memory up front it would never fill.
        // Not on wasm32, where the linear memory grows by what is reserved, touched or not, and
        // never shrinks: there the vectors grow as they fill (a 100 MB dump's index reserved
        // 1.7M nodes for the 0.5M it has).
        let estimate = if cfg!(target_arch = "wasm32") {
            1
        } else {
            facts
                .iter()
                .map(|&(_, t, _)| 10 * t)
                .fold(1usize, usize::saturating_add)
                .min(chains.len().saturating_mul(64).saturating_add(1024))
        };
        let mut graph = DiGraph::with_capacity(estimate, estimate);
        let root = graph.add_node(Stored::Root);
        let names = facts.iter().map(|&(_, _, names)| names).sum::<usize>();
        let mut g = MatchGraph {
            listener,
            graph,
            // A text a server name, and the transport protocol they share (`tls`): sized once,
            // as the children below.
            values: Values { texts: Vec::with_capacity(names + 1), ..Values::default() },
            levels: Vec::with_capacity(estimate),
            root,
            // Room for a child per chain or per server name, whichever are more: the usual wide
            // node is the server names at one port. Growing past that rehashes every entry (a
            // walk to its key's node each) on one core: at 100k tenants the 500k names outgrew
            // a table sized by the 400k chains.
            children: HashTable::with_capacity(listener.filter_chains.len().max(names)),
            // The same seed as the keys' hashes taken below with `hasher`.
            hasher: hasher.clone(),
            counts: Vec::with_capacity(estimate),
            overlaps: Vec::new(),
            excluded: vec![None; listener.filter_chains.len()],
        };
        // With a unified matcher Envoy ignores filter_chain_match entirely: no index, no checks.
        if listener.filter_chain_matcher.is_some() {
            return g;
        }
        // Envoy rejects a chain whose match equals an earlier one before it indexes it.
        let hashes: Vec<u64> = facts.iter().map(|&(h, _, _)| h).collect();
        let same = same_as_earlier(&hashes, |i, j| {
            rules(chains[i].filter_chain_match.as_ref()) == rules(chains[j].filter_chain_match.as_ref())
        });
        for (i, first) in same {
            g.excluded[i] = Some(Excluded::SameRulesAs(chain_number(first)));
        }
        // Not held while the index grows: 32 bytes a chain, 13 MB at 100k tenants.
        drop((facts, hashes));
        // The chains are indexed in order, on one core; their keys are read before, a block at
        // a time on every core (a cache miss or more per server name: at tenant scale half the
        // work), the next block's while this one's are inserted.
        let mut tuple: Vec<Key<'l>> = Vec::with_capacity(9);
        let fill = |block: &'l [FilterChain<'a>]| -> Vec<Option<ChainKeys<'l>>> {
            par_map_cheap(block, |c| {
                let mut keys = ChainKeys::default();
                keys.fill(c.filter_chain_match.as_ref(), &hasher).then_some(keys)
            })
        };
        let mut blocks = chains.chunks(KEY_BLOCK).enumerate();
        let mut next = blocks.next().map(|(b, block)| (b, fill(block)));
        let mut insert = |b: usize, keys: &[Option<ChainKeys<'l>>]| {
            for (j, keys) in keys.iter().enumerate() {
                let i = b * KEY_BLOCK + j;
                if g.excluded[i].is_some() {
                    continue;
                }
                match keys {
                    Some(keys) => g.insert_level(i, keys, 0, g.root, &mut tuple),
                    None => g.excluded[i] = Some(Excluded::Invalid),
                }
            }
        };
        while let Some((b, keys)) = next {
            // The last block (the only one of a short list) has no next to read meanwhile.
            next = if blocks.len() == 0 {
                insert(b, &keys);
                None
            } else {
                crate::parallel::join(|| insert(b, &keys), || blocks.next().map(|(b, block)| (b, fill(block)))).1
            };
        }
        // A small index's vectors, sized by the bound, are in the allocator's small size
        // classes, whose pages are all written: a tenant's 4-chain listener kept room for 50
        // nodes and used 18, and 100k such listeners held some 230 MB of room until the checks
        // ended. They are cut to what they hold (a copy of a few kilobytes); a large index's
        // room beyond its nodes is pages never touched. On wasm32 (no reservation, `estimate`
        // is 1) every index is cut: its vectors grew by doubling, and the spare room goes back
        // to the allocator.
        if estimate <= SHRINK_UP_TO {
            g.graph.shrink_to_fit();
            g.counts.shrink_to_fit();
            g.levels.shrink_to_fit();
            g.values.texts.shrink_to_fit();
        }
        g
    }

    fn insert_level(
        &mut self,
        chain: usize,
        keys: &ChainKeys<'l>,
        depth: usize,
        parent: NodeIndex,
        tuple: &mut Vec<Key<'l>>,
    ) {
        // The rest of the tuple is wildcards only: the chain's leaf may hang right here instead of
        // below a run of `Any` nodes (most tenant chains set two of the nine levels; this keeps
        // their graph a third of the size). A leaf above the last level is its parent's only
        // child and stands for that run; it is expanded when another chain needs a level of it.
        let rest_any = (depth..9).all(|d| matches!(keys.level(d), [Key::Any]));
        match self.leaf_child(parent) {
            Some((_, earlier)) if rest_any => {
                // One finding per pair is enough; the first colliding tuple is the example. The
                // chains are inserted in order, so the current chain's findings are the last ones.
                if !self.overlaps.iter().rev().take_while(|o| o.chain == chain).any(|o| o.earlier == earlier) {
                    let mut tuple = tuple.clone();
                    tuple.resize(9, Key::Any);
                    self.overlaps.push(Overlap { chain, earlier, tuple });
                }
                return;
            }
            Some((leaf, _)) => self.expand(parent, depth, leaf),
            None if rest_any && self.graph.neighbors(parent).next().is_none() => {
                let leaf = self.graph.add_node(Stored::Chain(chain_number(chain)));
                self.graph.add_edge(parent, leaf, ());
                return;
            }
            None => {}
        }
        // Below the last level there are only leaves, handled above.
        let Some(&level) = Level::ALL.get(depth) else { return };
        for (key, &hash) in keys.level(depth).iter().zip(keys.level_hashes(depth)) {
            let child = self.child_or_insert(parent, level, key, hash);
            tuple.push(key.clone());
            self.insert_level(chain, keys, depth + 1, child, tuple);
            tuple.pop();
        }
    }

    /// The chain leaf below `parent` and its chain, if `parent` has one (then it is its only child).
    pub fn leaf_child(&self, parent: NodeIndex) -> Option<(NodeIndex, usize)> {
        let n = self.graph.neighbors(parent).next()?;
        match self.graph[n] {
            Stored::Chain(c) => Some((n, c as usize)),
            _ => None,
        }
    }

    /// Spells out the wildcard run a leaf at `depth` stands for: `Any` nodes down to the last
    /// level, the leaf moved below them.
    fn expand(&mut self, parent: NodeIndex, depth: usize, leaf: NodeIndex) {
        if let Some(e) = self.graph.find_edge(parent, leaf) {
            self.graph.remove_edge(e);
        }
        let mut node = parent;
        for level in &Level::ALL[depth..] {
            node = self.child_or_insert(node, *level, &Key::Any, None);
        }
        self.graph.add_edge(node, leaf, ());
    }

    /// `key_hash` is `hasher.hash_one(key)` when it was taken.
    fn child_or_insert(&mut self, parent: NodeIndex, level: Level, key: &Key<'l>, key_hash: Option<u64>) -> NodeIndex {
        // Hashed once, and only for a node whose children are in `children`.
        let key_hash = self.is_indexed(parent).then(|| key_hash.unwrap_or_else(|| self.hasher.hash_one(key)));
        if let Some(n) = self.find_child(parent, key, key_hash) {
            return n;
        }
        let n = self.graph.add_node(self.values.store(key));
        self.graph.add_edge(parent, n, ());
        self.counts.resize(self.graph.node_count(), 0);
        self.levels.resize(self.graph.node_count(), level);
        let count = &mut self.counts[parent.index()];
        *count = count.saturating_add(1);
        if *count as usize == SMALL + 1 {
            // The node just outgrew the scan: index all its children.
            for k in self.graph.neighbors(parent) {
                if let Some(key) = self.values.key(self.graph[k]) {
                    let (graph, values, h) = (&self.graph, &self.values, &self.hasher);
                    let hash = entry_hash(h, parent, h.hash_one(&key));
                    self.children.insert_unique(hash, (parent, k), |&(p, c)| hash_entry(h, graph, values, p, c));
                }
            }
        } else if let Some(key_hash) = key_hash {
            // Indexed before this child (the count was past SMALL already).
            let hash = entry_hash(&self.hasher, parent, key_hash);
            let (graph, values, h) = (&self.graph, &self.values, &self.hasher);
            self.children.insert_unique(hash, (parent, n), |&(p, c)| hash_entry(h, graph, values, p, c));
        }
        n
    }

    /// The child of `parent` with this key.
    pub fn child(&self, parent: NodeIndex, key: &Key<'l>) -> Option<NodeIndex> {
        // The key is hashed only for a node indexed in `children`.
        self.find_child(parent, key, self.is_indexed(parent).then(|| self.hasher.hash_one(key)))
    }

    /// The child of `parent` with this key: looked up in `children` by `key_hash` (taken when
    /// `parent` is indexed there), else found among its few edges.
    fn find_child(&self, parent: NodeIndex, key: &Key<'l>, key_hash: Option<u64>) -> Option<NodeIndex> {
        match key_hash {
            Some(key_hash) => {
                let hash = entry_hash(&self.hasher, parent, key_hash);
                self.children.find(hash, |&(p, c)| p == parent && self.values.is(self.graph[c], key)).map(|&(_, c)| c)
            }
            None => self.graph.neighbors(parent).find(|&n| self.values.is(self.graph[n], key)),
        }
    }

    /// Whether `parent`'s children are in `children` (it has more than [`SMALL`]).
    fn is_indexed(&self, parent: NodeIndex) -> bool {
        self.counts.get(parent.index()).is_some_and(|&c| c as usize > SMALL)
    }

    /// The children of a node, in no particular order and without allocating.
    pub fn children_unordered(&self, parent: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph.neighbors_directed(parent, Direction::Outgoing)
    }

    /// The children of a node, in insertion order (chain order): for output.
    pub fn children(&self, parent: NodeIndex) -> Vec<NodeIndex> {
        let mut v: Vec<NodeIndex> =
            self.graph.edges_directed(parent, Direction::Outgoing).map(|e| e.target()).collect();
        // petgraph lists edges newest first; insertion order reads better and is deterministic.
        v.sort_unstable();
        v
    }

    /// The key of a key node.
    pub fn key(&self, node: NodeIndex) -> Option<Key<'_>> {
        self.values.key(self.graph[node])
    }

    /// How many nodes the index has (root, keys and chain leaves).
    pub fn node_count(&self) -> usize {
        self.graph.node_count()
    }

    /// Every node, in creation order: a parent comes before its children, so reversed it visits
    /// children first.
    pub fn nodes(&self) -> impl DoubleEndedIterator<Item = NodeIndex> + ExactSizeIterator + '_ {
        self.graph.node_indices()
    }

    /// The key nodes of one level, in creation order.
    pub fn nodes_at(&self, level: Level) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph.node_indices().filter(move |&n| matches!(self.node(n), Node::Key { level: l, .. } if l == level))
    }

    /// The listener's node, where every connection starts.
    pub fn root(&self) -> NodeIndex {
        self.root
    }

    /// Every edge (parent, child), in the order they were added: for drawing.
    pub fn edges(&self) -> impl Iterator<Item = (NodeIndex, NodeIndex)> + '_ {
        self.graph.edge_references().map(|e| (e.source(), e.target()))
    }

    /// What a node is.
    pub fn node(&self, node: NodeIndex) -> Node<'_> {
        let stored = self.graph[node];
        match (stored, self.values.key(stored)) {
            (Stored::Chain(c), _) => Node::Chain(c as usize),
            (_, Some(key)) => Node::Key { level: self.levels[node.index()], key },
            (_, None) => Node::Root,
        }
    }

    /// A node's parent: its one incoming edge (the index is a tree); `None` for the root.
    pub fn parent(&self, node: NodeIndex) -> Option<NodeIndex> {
        self.graph.neighbors_directed(node, Direction::Incoming).next()
    }

    /// The keys on the way from the root to `node` (inclusive), one per level passed.
    pub fn ancestors(&self, node: NodeIndex) -> Vec<(Level, Key<'l>)> {
        let mut out = Vec::new();
        let mut n = node;
        while let Some(key) = self.values.model_key(self.graph[n]) {
            out.push((self.levels[n.index()], key));
            match self.parent(n) {
                Some(p) => n = p,
                None => break,
            }
        }
        out.reverse();
        out
    }

    /// The wildcard server-name child of `parent` that would take `name` (an exact name, or
    /// the suffix of a wildcard): the longest `*.suffix` strictly above it, as Envoy looks
    /// them up.
    pub fn wildcard_for(&self, parent: NodeIndex, name: &str) -> Option<NodeIndex> {
        key::suffixes(name).find_map(|s| self.child(parent, &Key::Suffix(s.into())))
    }

    /// The sibling below `parent` that takes `key`'s connections when `key` is absent: the
    /// next wildcard for a server name, the longest wider prefix for a CIDR, else the `Any`
    /// child. `None` for `Any` itself.
    pub fn fallback_of(&self, parent: NodeIndex, key: &Key<'_>) -> Option<NodeIndex> {
        let any = self.child(parent, &Key::Any);
        match key {
            Key::Name(n) => self.wildcard_for(parent, n).or(any),
            Key::Suffix(s) => self.wildcard_for(parent, s).or(any),
            // Each shorter prefix of the range looked up, longest first (at most 128 lookups),
            // not every sibling tried: a level of 20k source ranges made that quadratic.
            Key::Cidr(net) => (0..net.prefix_len())
                .rev()
                .find_map(|len| {
                    let wider = ipnet::IpNet::new(net.network(), len).ok()?.trunc();
                    self.child(parent, &Key::Cidr(wider))
                })
                .or(any),
            Key::Port(_) | Key::Protocol(_) | Key::SourceType(_) => any,
            Key::Any => None,
        }
    }

    /// Every chain index reachable below a node.
    pub fn chains_below(&self, node: NodeIndex) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            if let Stored::Chain(c) = self.graph[n] {
                out.push(c as usize);
            }
            stack.extend(self.graph.neighbors_directed(n, Direction::Outgoing));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The listener's chain at `index`, for turning a [`Node::Chain`] or an [`Overlap`] back
    /// into the chain it names.
    pub fn chain(&self, index: usize) -> &'l FilterChain<'a> {
        &self.listener.filter_chains[index]
    }

    /// The chain a trace result names.
    pub fn chain_at(&self, index: ChainIndex) -> Option<&'l FilterChain<'a>> {
        match index.listed_at() {
            Some(i) => self.listener.filter_chains.get(i as usize),
            None => self.listener.default_filter_chain.as_deref(),
        }
    }
}

/// The hash of an entry already in [`MatchGraph::children`] (its parent and its child's key),
/// when the table grows.
fn hash_entry(
    hasher: &InputHasher,
    graph: &DiGraph<Stored, ()>,
    values: &Values<'_>,
    parent: NodeIndex,
    child: NodeIndex,
) -> u64 {
    // Only key nodes are indexed.
    values.key(graph[child]).map_or(0, |key| entry_hash(hasher, parent, hasher.hash_one(&key)))
}

/// Where `children` files a child of `parent` whose key hashes to `key_hash`: the key's hash
/// is taken once (on every core, see [`ChainKeys`]), and the parent mixed in here.
fn entry_hash(hasher: &InputHasher, parent: NodeIndex, key_hash: u64) -> u64 {
    hasher.hash_one((parent, key_hash))
}

/// How a chain leaf holds its chain's index (see [`Stored`]).
fn chain_number(chain: usize) -> u32 {
    u32::try_from(chain).expect("a listener's chains are numbered in 32 bits (ChainIndex::listed)")
}

/// How many tuples a chain's match expands to (an upper bound: invalid values are counted).
fn tuples(m: Option<&FilterChainMatch<'_>>) -> usize {
    let Some(m) = m else { return 1 };
    [
        m.prefix_ranges().len(),
        m.server_names.len(),
        m.application_protocols.len(),
        m.direct_source_prefix_ranges().len(),
        m.source_prefix_ranges().len(),
        m.source_ports().len(),
    ]
    .iter()
    .fold(1usize, |n, &k| n.saturating_mul(k.max(1)))
}

/// The items equal to an earlier one, each with the first item it equals, in no order: items of
/// equal `hashes` are compared with `equal` (items `i < j`), in the order of the list. By a sort
/// of the hashes rather than one hash table: on every core, and without a cache miss per item
/// into a table of millions.
fn same_as_earlier(hashes: &[u64], equal: impl Fn(usize, usize) -> bool) -> Vec<(usize, usize)> {
    let mut order: Vec<(u64, usize)> = hashes.iter().copied().zip(0..).collect();
    crate::parallel::sort_unstable_cheap(&mut order);
    let mut same = Vec::new();
    // The first item of each distinct value among those of one hash, by index.
    let mut firsts: Vec<usize> = Vec::new();
    for group in order.chunk_by(|a, b| a.0 == b.0).filter(|g| g.len() > 1) {
        firsts.clear();
        for &(_, j) in group {
            match firsts.iter().find(|&&i| equal(i, j)) {
                Some(&i) => same.push((j, i)),
                None => firsts.push(j),
            }
        }
    }
    same
}

/// A FilterChainMatch as Envoy compares them for "same matching rules": the whole message as
/// written (an unset match equals `{}`, proto3 defaults equal unset, repeated fields in order),
/// never the positions xdsck records.
pub type Rules<'m, 'a> = (
    Option<u32>,
    &'m [CidrRange<'a>],
    Option<&'m AddressSuffix<'a>>,
    &'m [CidrRange<'a>],
    SourceType,
    &'m [CidrRange<'a>],
    &'m [u32],
    &'m [Text<'a>],
    &'m str,
    &'m [Text<'a>],
);

static EMPTY_MATCH: LazyLock<FilterChainMatch<'static>> = LazyLock::new(FilterChainMatch::default);

/// The fields of a chain's match that decide protobuf equality.
pub fn rules<'m, 'a>(m: Option<&'m FilterChainMatch<'a>>) -> Rules<'m, 'a> {
    let m: &'m FilterChainMatch<'a> = m.unwrap_or(&EMPTY_MATCH);
    (
        m.destination_port,
        m.prefix_ranges(),
        m.unimplemented(),
        m.direct_source_prefix_ranges(),
        m.source_type,
        m.source_prefix_ranges(),
        m.source_ports(),
        &m.server_names,
        &m.transport_protocol,
        &m.application_protocols,
    )
}
