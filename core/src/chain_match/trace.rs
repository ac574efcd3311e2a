//! Where a connection lands: Envoy's `findFilterChain`, level by level, on the [`MatchGraph`].
//!
//! At each level Envoy takes the most specific key present under the node chosen so far and
//! never comes back (envoy-matching.md §2.2–2.3). The trace records every level's choice and why
//! the other keys lost, so "why did my connection go there" has an answer.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use ipnet::IpNet;
use petgraph::graph::NodeIndex;

use super::key::{self, Key, Level};
use super::{MatchGraph, Node, SMALL};
use crate::model::{Listener, SourceType};

/// What the client sends, before the listener's own listener filters look at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Client {
    /// A TLS ClientHello with this SNI (may be empty) and ALPN list.
    Tls {
        /// The `server_name` extension; empty when the client sends none.
        sni: String,
        /// The ALPN protocols offered, in the client's order.
        alpn: Vec<String>,
    },
    /// Plaintext HTTP/1.1.
    Http1,
    /// Plaintext HTTP/2 with prior knowledge (the `PRI *` preface).
    H2c,
    /// Anything else.
    Raw,
}

impl Client {
    /// What the client sends, in one word: `tls`, `http1`, `h2c`, `raw` (as `trace --client`
    /// and `diff`'s classes name it).
    pub fn kind(&self) -> &'static str {
        match self {
            Client::Tls { .. } => "tls",
            Client::Http1 => "http1",
            Client::H2c => "h2c",
            Client::Raw => "raw",
        }
    }
}

/// The attributes Envoy's matcher reads (after the listener filters ran).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// The local address the connection arrived on (`None`: not an IP, e.g. a pipe).
    pub destination: Option<SocketAddr>,
    /// The remote address (`None`: not given; only chains without source criteria can be told).
    pub source: Option<SocketAddr>,
    /// The real TCP peer; PROXY protocol does not change it. Defaults to the source IP.
    pub direct_source: Option<IpAddr>,
    /// As the listener filters left it: `tls` from a TLS inspector that saw a ClientHello,
    /// `raw_buffer` otherwise (without a TLS inspector, whatever the client sent).
    pub transport_protocol: String,
    /// Lower-cased, as Envoy's socket stores it; empty when none.
    pub server_name: String,
    /// The ALPN list the matcher compares `application_protocols` with: from the TLS
    /// inspector, or `http/1.1`/`h2c` from the HTTP inspector; empty when none.
    pub application_protocols: Vec<String>,
}

impl Connection {
    /// What Envoy's matcher sees when `client` connects to `listener`: only the listener filters
    /// the listener has can set the transport protocol, SNI and ALPN.
    pub fn detect(
        listener: &Listener<'_>,
        client: &Client,
        destination: Option<SocketAddr>,
        source: Option<SocketAddr>,
    ) -> (Self, Vec<String>) {
        let tls_inspector = listener.has_tls_inspector();
        let http_inspector = listener.has_http_inspector();
        let mut notes = Vec::new();
        let mut c = Connection {
            destination,
            source,
            direct_source: None,
            transport_protocol: "raw_buffer".to_owned(),
            server_name: String::new(),
            application_protocols: Vec::new(),
        };
        match client {
            Client::Tls { sni, alpn } if tls_inspector => {
                c.transport_protocol = "tls".to_owned();
                c.server_name = sni.to_ascii_lowercase();
                c.application_protocols = alpn.clone();
            }
            Client::Tls { .. } => {
                notes.push("the listener has no tls_inspector: Envoy sees neither TLS, SNI nor ALPN (transport stays raw_buffer)".to_owned());
            }
            Client::Http1 | Client::H2c if http_inspector => {
                let p = if *client == Client::Http1 { "http/1.1" } else { "h2c" };
                c.application_protocols = vec![p.to_owned()];
            }
            Client::Http1 | Client::H2c => {
                notes.push(
                    "the listener has no http_inspector: Envoy does not detect the HTTP version (no ALPN)".to_owned(),
                );
            }
            Client::Raw => {}
        }
        (c, notes)
    }

    fn direct_source_ip(&self) -> Option<IpAddr> {
        self.direct_source.or(self.source.map(|s| s.ip()))
    }

    /// Envoy's "local" source: a pipe, exactly 127.0.0.1 or ::1, or the same IP as the local one.
    fn is_local(&self) -> Option<bool> {
        let src = self.source?.ip();
        let loopback = src == IpAddr::V4(Ipv4Addr::LOCALHOST) || src == IpAddr::V6(std::net::Ipv6Addr::LOCALHOST);
        Some(loopback || self.destination.is_some_and(|d| d.ip() == src))
    }
}

/// Where the connection went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// The chain at this index of `filter_chains`.
    Chain(usize),
    /// No chain matched; `default_filter_chain` took it.
    Default,
    /// No chain matched and there is no default chain: Envoy closes the connection.
    Closed,
    /// The listener matches on an attribute the question did not give (e.g. the source).
    NeedsInput(Level),
}

/// How many of a level's keys a trace names when none of them matches.
pub const UNMATCHED_SHOWN: usize = 8;

/// One level's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The level decided, in Envoy's walk order.
    pub level: Level,
    /// The connection's attribute at this level, as Envoy compares it.
    pub value: String,
    /// The key taken, if any.
    pub chosen: Option<String>,
    /// The other keys that match the connection at this level, and why each lost.
    pub lost: Vec<(String, String)>,
    /// How many further keys at this level do not match the connection at all.
    pub unmatched: usize,
    /// When nothing matched at this level: the first [`UNMATCHED_SHOWN`] keys there, which the
    /// connection does not match (a trace names the keys that lost).
    pub unmatched_keys: Vec<String>,
    /// Set when Envoy's choice at this level is undefined (an explicit `0.0.0.0/0` next to an
    /// unset range).
    pub ambiguous: bool,
}

/// A trace through one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// One decision per level walked, stopping where nothing matched.
    pub steps: Vec<Step>,
    /// Where the connection ended: a chain, the default chain, closed, or a missing attribute.
    pub outcome: Outcome,
    /// The graph's nodes the connection went through, the root first and the chain's leaf last
    /// when one took it (empty for a `filter_chain_matcher` listener, which has no index).
    pub path: Vec<NodeIndex>,
}

impl MatchGraph<'_, '_> {
    /// Where Envoy sends `c`.
    pub fn trace(&self, c: &Connection) -> Trace {
        self.trace_skipping(c, None)
    }

    /// Like [`Self::trace`], but as if the node `skip` were not there: what a less specific
    /// sibling would have done with the connection (the black-hole check asks this).
    pub fn trace_skipping(&self, c: &Connection, skip: Option<NodeIndex>) -> Trace {
        let mut steps = Vec::new();
        let mut node = self.root;
        let mut path = vec![node];
        for level in Level::ALL {
            // A leaf above the last level stands for `Any` at every level left: the node is its
            // own `Any` child, so each of those levels is explained as usual.
            let children: Vec<(NodeIndex, Key<'_>)> = if self.leaf_child(node).is_some() {
                vec![(node, Key::Any)]
            } else {
                self.children(node)
                    .into_iter()
                    .filter(|&n| Some(n) != skip)
                    .filter_map(|n| self.key(n).map(|k| (n, k)))
                    .collect()
            };
            let decision = decide(level, &children, c);
            let step = Step {
                level,
                value: decision.value,
                chosen: decision.chosen.map(|i| children[i].1.to_string()),
                lost: children
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (_, k))| decision.why_lost.get(&i).map(|why| (k.to_string(), why.clone())))
                    .collect(),
                unmatched: children.len() - usize::from(decision.chosen.is_some()) - decision.why_lost.len(),
                // Only where the connection stops: naming every key of every level would cost
                // a string per chain at each step of the black-hole check's traces.
                unmatched_keys: if decision.chosen.is_none() {
                    children
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !decision.why_lost.contains_key(i))
                        .take(UNMATCHED_SHOWN)
                        .map(|(_, (_, k))| k.to_string())
                        .collect()
                } else {
                    Vec::new()
                },
                ambiguous: decision.ambiguous,
            };
            steps.push(step);
            if decision.needs_input {
                return Trace { steps, outcome: Outcome::NeedsInput(level), path };
            }
            match decision.chosen {
                Some(i) => {
                    node = children[i].0;
                    // A leaf above the last level is its own `Any` child: the path stays.
                    if path.last() != Some(&node) {
                        path.push(node);
                    }
                }
                None => return Trace { steps, outcome: self.fallback(), path },
            }
        }
        let chain = self.graph.neighbors(node).find_map(|n| match self.node(n) {
            Node::Chain(c) => Some((n, c)),
            _ => None,
        });
        if let Some((leaf, _)) = chain {
            path.push(leaf);
        }
        Trace { steps, outcome: chain.map_or_else(|| self.fallback(), |(_, c)| Outcome::Chain(c)), path }
    }

    fn fallback(&self) -> Outcome {
        if self.listener.default_filter_chain.is_some() { Outcome::Default } else { Outcome::Closed }
    }
}

struct Decision {
    value: String,
    chosen: Option<usize>,
    why_lost: std::collections::HashMap<usize, String>,
    ambiguous: bool,
    needs_input: bool,
}

impl Decision {
    fn new(value: String) -> Self {
        Decision { value, chosen: None, why_lost: Default::default(), ambiguous: false, needs_input: false }
    }

    /// Takes the first child whose key equals `want`.
    fn take(&mut self, children: &[(NodeIndex, Key<'_>)], want: &Key<'_>) -> bool {
        if self.chosen.is_some() {
            return true;
        }
        self.chosen = children.iter().position(|(_, k)| k == want);
        self.chosen.is_some()
    }

    /// Marks every child not chosen as lost to the chosen one.
    fn outranked(&mut self, children: &[(NodeIndex, Key<'_>)], why: impl Fn(&Key<'_>) -> Option<String>) {
        for (i, (_, k)) in children.iter().enumerate() {
            if Some(i) != self.chosen {
                if let Some(w) = why(k) {
                    self.why_lost.insert(i, w);
                }
            }
        }
    }
}

/// A placeholder Envoy uses for a non-IP address at the IP levels.
pub(super) const NON_IP: IpAddr = IpAddr::V4(Ipv4Addr::BROADCAST);

fn decide(level: Level, children: &[(NodeIndex, Key<'_>)], c: &Connection) -> Decision {
    let only_any = children.iter().all(|(_, k)| *k == Key::Any);
    match level {
        Level::DestinationPort => {
            let Some(dst) = c.destination else {
                let mut d = Decision::new("(not an IP address)".to_owned());
                d.take(children, &Key::Any);
                d.outranked(children, |_| {
                    Some("a non-IP address only uses chains without destination_port".to_owned())
                });
                return d;
            };
            let mut d = Decision::new(dst.port().to_string());
            if !d.take(children, &Key::Port(u32::from(dst.port()))) {
                d.take(children, &Key::Any);
            }
            let exact = d.chosen.is_some_and(|i| children[i].1 != Key::Any);
            d.outranked(children, |k| match k {
                Key::Any if exact => {
                    Some(format!("an entry for port {} exists: the port-less chains are not tried", dst.port()))
                }
                _ => None,
            });
            d
        }
        Level::DestinationIp => prefix(children, c.destination.map(|d| d.ip()), "destination"),
        Level::DirectSourceIp => {
            if c.direct_source_ip().is_none() && !only_any {
                let mut d = Decision::new("(not given)".to_owned());
                d.needs_input = true;
                return d;
            }
            prefix(children, c.direct_source_ip(), "direct source")
        }
        Level::SourceIp => {
            if c.source.is_none() && !only_any {
                let mut d = Decision::new("(not given)".to_owned());
                d.needs_input = true;
                return d;
            }
            prefix(children, c.source.map(|s| s.ip()), "source")
        }
        Level::ServerName => {
            let sni = c.server_name.as_str();
            let mut d = Decision::new(if sni.is_empty() { "(none)".to_owned() } else { sni.to_owned() });
            if !sni.is_empty() && !d.take(children, &Key::Name(sni.into())) {
                for suffix in key::suffixes(sni) {
                    if d.take(children, &Key::Suffix(suffix.into())) {
                        break;
                    }
                }
            }
            d.take(children, &Key::Any);
            let chosen = d.chosen.map(|i| children[i].1.to_string());
            d.outranked(children, |k| {
                let matches = match k {
                    Key::Name(n) => n == sni,
                    Key::Suffix(s) => sni.len() > s.len() && sni.ends_with(&**s),
                    Key::Any => true,
                    _ => false,
                };
                matches.then(|| format!("less specific than {}", chosen.as_deref().unwrap_or("?")))
            });
            d
        }
        Level::TransportProtocol => {
            let mut d = Decision::new(c.transport_protocol.clone());
            if !d.take(children, &Key::Protocol(c.transport_protocol.as_str().into())) {
                d.take(children, &Key::Any);
            }
            let exact = d.chosen.is_some_and(|i| children[i].1 != Key::Any);
            d.outranked(children, |k| {
                (exact && *k == Key::Any).then(|| format!("less specific than {}", c.transport_protocol))
            });
            d
        }
        Level::ApplicationProtocol => {
            let mut d = Decision::new(if c.application_protocols.is_empty() {
                "(none)".to_owned()
            } else {
                c.application_protocols.join(",")
            });
            for a in &c.application_protocols {
                if d.take(children, &Key::Protocol(a.as_str().into())) {
                    break;
                }
            }
            d.take(children, &Key::Any);
            let chosen = d.chosen.map(|i| children[i].1.to_string());
            d.outranked(children, |k| match k {
                Key::Protocol(p) if c.application_protocols.iter().any(|a| a == p) => {
                    Some(format!("later in the client's ALPN list than {}", chosen.as_deref().unwrap_or("?")))
                }
                Key::Any => Some(format!("less specific than {}", chosen.as_deref().unwrap_or("?"))),
                _ => None,
            });
            d
        }
        Level::SourceType => {
            let has_typed = children.iter().any(|(_, k)| matches!(k, Key::SourceType(_)));
            let local = c.is_local();
            let mut d = Decision::new(match local {
                Some(true) => "local".to_owned(),
                Some(false) => "external".to_owned(),
                None => "(not given)".to_owned(),
            });
            if has_typed {
                let Some(local) = local else {
                    d.needs_input = true;
                    return d;
                };
                let want = if local { SourceType::SameIpOrLoopback } else { SourceType::External };
                if !d.take(children, &Key::SourceType(want)) {
                    d.take(children, &Key::Any);
                }
                let typed = d.chosen.is_some_and(|i| children[i].1 != Key::Any);
                d.outranked(children, |k| {
                    (typed && *k == Key::Any)
                        .then(|| format!("an entry for {} exists: ANY is not tried", want.as_str()))
                });
            } else {
                d.take(children, &Key::Any);
            }
            d
        }
        Level::SourcePort => {
            let Some(src) = c.source else {
                let mut d = Decision::new("(not given)".to_owned());
                if only_any {
                    d.take(children, &Key::Any);
                } else {
                    d.needs_input = true;
                }
                return d;
            };
            let mut d = Decision::new(src.port().to_string());
            if !d.take(children, &Key::Port(u32::from(src.port()))) {
                d.take(children, &Key::Any);
            }
            let exact = d.chosen.is_some_and(|i| children[i].1 != Key::Any);
            d.outranked(children, |k| {
                (exact && *k == Key::Any).then(|| format!("less specific than port {}", src.port()))
            });
            d
        }
    }
}

/// Longest-prefix choice at an IP level. `None`: not given (only reached when every key here is
/// the wildcard), or for the destination, not an IP address (Envoy then looks up a placeholder).
fn prefix(children: &[(NodeIndex, Key<'_>)], addr: Option<IpAddr>, what: &str) -> Decision {
    let label = match addr {
        Some(a) => a.to_string(),
        None if what == "destination" => format!("(not an IP: {NON_IP} is looked up)"),
        None => "(not given)".to_owned(),
    };
    let addr = addr.unwrap_or(NON_IP);
    let mut d = Decision::new(label);
    let best = key::longest_prefix(children.iter().map(|(_, k)| k), addr);
    if let Some(first) = best.first() {
        d.chosen = children.iter().position(|(_, k)| std::ptr::eq(k, *first));
        d.ambiguous = best.len() > 1;
    }
    let chosen = d.chosen.map(|i| children[i].1.to_string());
    d.outranked(children, |k| match k {
        Key::Any => Some(format!("shorter prefix than {}", chosen.as_deref().unwrap_or("?"))),
        Key::Cidr(n) if n.contains(&addr) => Some(format!("shorter prefix than {}", chosen.as_deref().unwrap_or("?"))),
        _ => None,
    });
    if d.ambiguous {
        for (i, (_, k)) in children.iter().enumerate() {
            if Some(i) != d.chosen && best.iter().any(|b| std::ptr::eq(*b, k)) {
                d.why_lost.insert(i, "same prefix length: Envoy's choice between the two is undefined".to_owned());
            }
        }
    }
    d
}

/// The nodes a connection passed through, root excluded, and where it ended. Levels a chain
/// leaf stands for (wildcards only, see [`MatchGraph::leaf_child`]) have no node: `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// Where the connection ended, as [`Trace::outcome`] would say.
    pub outcome: Outcome,
    /// Per level, in [`Level::ALL`] order, the node taken; `None` for a level not reached or
    /// one a leaf stands for.
    pub path: [Option<NodeIndex>; 9],
}

impl MatchGraph<'_, '_> {
    /// Where Envoy sends `c`, as fast as Envoy finds it: hash probes in priority order instead
    /// of looking at every key (the checks ask this many times per listener). `skip` is a node
    /// treated as absent. Agrees with [`Self::trace_skipping`] on every outcome.
    pub fn reach(&self, c: &Connection, skip: Option<NodeIndex>) -> Reach {
        let mut path = [None; 9];
        let mut node = self.root;
        for (depth, level) in Level::ALL.into_iter().enumerate() {
            // A leaf above the last level: only wildcards are left, which every connection takes.
            if self.leaf_child(node).is_some() {
                break;
            }
            let probe = |key: Key<'_>| self.child(node, &key).filter(|&n| Some(n) != skip);
            let next = match level {
                Level::DestinationPort => match c.destination {
                    Some(d) => probe(Key::Port(u32::from(d.port()))).or_else(|| probe(Key::Any)),
                    None => probe(Key::Any),
                },
                Level::DestinationIp => self.longest(node, c.destination.map(|d| d.ip()), skip),
                Level::ServerName => {
                    let sni = c.server_name.as_str();
                    let exact = if sni.is_empty() { None } else { probe(Key::Name(sni.into())) };
                    exact
                        .or_else(|| {
                            if sni.is_empty() {
                                None
                            } else {
                                key::suffixes(sni).find_map(|s| probe(Key::Suffix(s.into())))
                            }
                        })
                        .or_else(|| probe(Key::Any))
                }
                Level::TransportProtocol => {
                    probe(Key::Protocol(c.transport_protocol.as_str().into())).or_else(|| probe(Key::Any))
                }
                Level::ApplicationProtocol => c
                    .application_protocols
                    .iter()
                    .find_map(|a| probe(Key::Protocol(a.as_str().into())))
                    .or_else(|| probe(Key::Any)),
                Level::DirectSourceIp => {
                    if c.direct_source_ip().is_none() && !self.only_any(node) {
                        return Reach { outcome: Outcome::NeedsInput(level), path };
                    }
                    self.longest(node, c.direct_source_ip(), skip)
                }
                Level::SourceType => {
                    let typed = [SourceType::SameIpOrLoopback, SourceType::External]
                        .into_iter()
                        .any(|t| self.child(node, &Key::SourceType(t)).is_some());
                    if typed {
                        let Some(local) = c.is_local() else {
                            return Reach { outcome: Outcome::NeedsInput(level), path };
                        };
                        // Envoy takes the typed entry if it exists at all: `skip` removes it for
                        // the "what if" question, which then falls to ANY.
                        let want = if local { SourceType::SameIpOrLoopback } else { SourceType::External };
                        probe(Key::SourceType(want)).or_else(|| probe(Key::Any))
                    } else {
                        probe(Key::Any)
                    }
                }
                Level::SourceIp => {
                    if c.source.is_none() && !self.only_any(node) {
                        return Reach { outcome: Outcome::NeedsInput(level), path };
                    }
                    self.longest(node, c.source.map(|s| s.ip()), skip)
                }
                Level::SourcePort => match c.source {
                    Some(s) => probe(Key::Port(u32::from(s.port()))).or_else(|| probe(Key::Any)),
                    None if self.only_any(node) => probe(Key::Any),
                    None => return Reach { outcome: Outcome::NeedsInput(level), path },
                },
            };
            match next {
                Some(n) => {
                    path[depth] = Some(n);
                    node = n;
                }
                None => return Reach { outcome: self.fallback(), path },
            }
        }
        let chain = self.graph.neighbors(node).find_map(|n| match self.node(n) {
            Node::Chain(c) => Some(c),
            _ => None,
        });
        Reach { outcome: chain.map_or_else(|| self.fallback(), Outcome::Chain), path }
    }

    fn only_any(&self, node: NodeIndex) -> bool {
        self.graph.neighbors(node).all(|n| matches!(self.key(n), Some(Key::Any) | None))
    }

    /// Longest prefix among the children of `node` (the first of equal ones, as the trace).
    pub(super) fn longest(&self, node: NodeIndex, addr: Option<IpAddr>, skip: Option<NodeIndex>) -> Option<NodeIndex> {
        let addr = addr.unwrap_or(NON_IP);
        let not_skipped = |n: &NodeIndex| Some(*n) != skip;
        // Past a few children, each prefix of the address is looked up, longest first (a range
        // key has its host bits cleared): trying every child, a level of 20k ranges made each
        // check that asks where connections go quadratic in the listener's ranges.
        if self.counts.get(node.index()).is_some_and(|&c| c as usize > SMALL) {
            let range = |len: u8| IpNet::new(addr, len).ok().map(|n| Key::Cidr(n.trunc()));
            let longest = if addr.is_ipv4() { 32 } else { 128 };
            let wider = (1..=longest).rev().filter_map(range).find_map(|k| self.child(node, &k).filter(not_skipped));
            // At length 0 the wildcard and an explicit `0.0.0.0/0` (or `::/0`) tie: the first
            // inserted wins, as below.
            let zero = || [Some(Key::Any), range(0)].into_iter().flatten().filter_map(|k| self.child(node, &k));
            return wider.or_else(|| zero().filter(not_skipped).min());
        }
        self.longest_of_all(node, addr, skip)
    }

    /// [`Self::longest`] by trying every child.
    pub(super) fn longest_of_all(&self, node: NodeIndex, addr: IpAddr, skip: Option<NodeIndex>) -> Option<NodeIndex> {
        // Longest prefix; among equal ones (the undefined case) the first inserted, as the trace.
        let mut best: Option<(i32, NodeIndex)> = None;
        for n in self.children_unordered(node).filter(|&n| Some(n) != skip) {
            let len = match self.key(n) {
                Some(Key::Any) => 0,
                Some(Key::Cidr(net)) if net.contains(&addr) => i32::from(net.prefix_len()),
                _ => continue,
            };
            if best.is_none_or(|(l, b)| len > l || (len == l && n < b)) {
                best = Some((len, n));
            }
        }
        best.map(|(_, n)| n)
    }
}
