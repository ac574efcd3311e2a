//! `match-blackhole`: a more specific key (server name, port, prefix, source type or port) wins
//! a level, then its chains turn the connection away, and Envoy never goes back to the less
//! specific key that would have taken it. (Formerly `sni-blackhole`, which named one kind only.)
//!
//! Every finding is proven with the match graph itself: one concrete connection that Envoy
//! closes (or hands to the default chain), and that reaches a chain if the specific key were not
//! there. Candidates come from the less specific sibling's own chains, so the search stays
//! linear in the keys of the listener.

use std::rc::Rc;

use rustc_hash::FxHashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::chain_match::trace::{Connection, Outcome};
use crate::chain_match::{Key, Level, MatchGraph, Node, NodeIndex};
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{Address, SourceType};

declare_rule! {
    pub(crate) static RULE for MatchBlackhole = {
        code: "XDS201",
        name: "match-blackhole",
        severity: Severity::Warning,
        summary: "A more specific match (exact SNI, port, prefix, source type) loses connections a less specific chain would take: Envoy never backtracks.",
        explanation: "match_blackhole.md",
    }
}

pub(crate) struct MatchBlackhole;

impl Check for MatchBlackhole {
    fn reads(&self) -> Reads {
        Reads::GRAPHS
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            // A listener Envoy rejects has no traffic to lose; its errors come first.
            if !l.graph().overlaps.is_empty() || l.graph().excluded.iter().any(Option::is_some) {
                continue;
            }
            Search::new(&l).run(out);
        }
    }
}

/// What the pass from the leaves up knows of a node, a byte a node: whether every realistic
/// connection that reaches it gets through to a chain ([`Facts::TOTAL`]), and what its parent
/// asks of it (a chain leaf, an `Any` key, the `tls` transport). Each node's key is looked at
/// once, when the pass reaches it, not again by its parent and by [`Search::run`].
#[derive(Debug, Clone, Copy, Default)]
struct Facts(u8);

impl Facts {
    const TOTAL: u8 = 1;
    const CHAIN: u8 = 2;
    const ANY: u8 = 4;
    const TLS: u8 = 8;

    fn has(self, fact: u8) -> bool {
        self.0 & fact != 0
    }
}

/// Which nodes let every realistic connection through to a chain: a node with a chain below
/// it directly, or whose every child does and which has a wildcard (`Any`) child for the rest.
/// Below an exact or wildcard server name only TLS connections arrive (the SNI comes from a
/// ClientHello), so there a `tls` transport child that lets everything through is enough.
/// Nodes are created parents first, so one pass from the last node up sees children first.
fn totality(g: &MatchGraph<'_, '_>) -> Vec<Facts> {
    let mut facts = vec![Facts::default(); g.node_count()];
    for n in g.nodes().rev() {
        let mut all = true;
        let mut any_child = false;
        let mut tls_child = false;
        let mut leaf = false;
        for c in g.children_unordered(n) {
            let child = facts[c.index()];
            let total = child.has(Facts::TOTAL);
            if child.has(Facts::CHAIN) {
                leaf = true;
            } else {
                all &= total;
                any_child |= child.has(Facts::ANY) && total;
                tls_child |= child.has(Facts::TLS) && total;
            }
        }
        let (kind, under_name) = match g.node(n) {
            Node::Chain(_) => (Facts::CHAIN, false),
            Node::Key { key: Key::Any, .. } => (Facts::ANY, false),
            Node::Key { key: Key::Protocol(p), .. } if p == "tls" => (Facts::TLS, false),
            Node::Key { level, .. } => (0, level == Level::ServerName),
            Node::Root => (0, false),
        };
        let total = leaf || (all && any_child) || (under_name && (tls_child || any_child));
        facts[n.index()] = Facts(kind | if total { Facts::TOTAL } else { 0 });
    }
    facts
}

/// Attributes of a candidate connection; `None` where the path leaves the attribute free.
#[derive(Debug, Clone, Default)]
struct Attrs {
    dst_port: Option<u16>,
    dst_ip: Option<IpAddr>,
    sni: Option<String>,
    transport: Option<String>,
    alpn: Option<Vec<String>>,
    direct_src: Option<IpAddr>,
    source_type: Option<SourceType>,
    src_ip: Option<IpAddr>,
    src_port: Option<u16>,
}

const EXTERNAL: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7));
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The keys from one level down to a chain.
type LeafPath<'k> = Vec<(Level, Key<'k>)>;

struct Search<'c, 's, 'a> {
    l: &'c ListenerCx<'s, 'a>,
    g: &'s MatchGraph<'s, 'a>,
    /// Leaf paths (keys per level) below a node, a few per node.
    paths: FxHashMap<NodeIndex, Rc<Vec<LeafPath<'s>>>>,
    /// Per node: whether every connection a client can send that reaches it also reaches a
    /// chain, and whether it is an `Any` key ([`totality`]).
    facts: Vec<Facts>,
}

impl<'c, 's, 'a> Search<'c, 's, 'a> {
    fn new(l: &'c ListenerCx<'s, 'a>) -> Self {
        let g = l.graph();
        Search { l, g, paths: FxHashMap::default(), facts: totality(g) }
    }

    fn run(&mut self, out: &mut Vec<Diagnostic>) {
        // The index outlives this borrow of the search: its nodes are walked without a list.
        let g = self.g;
        for n in g.nodes() {
            // Nothing is lost below a node every connection gets through (most nodes are such),
            // nor below an `Any`, which is the fallback itself.
            let facts = self.facts[n.index()];
            if facts.has(Facts::TOTAL) || facts.has(Facts::ANY) {
                continue;
            }
            let Node::Key { level, key } = g.node(n) else { continue };
            let Some(parent) = g.parent(n) else { continue };
            let Some(fallback) = g.fallback_of(parent, &key) else { continue };
            if let Some(d) = self.witness(n, level, &key, parent, fallback) {
                out.push(d);
            }
        }
    }

    /// A few leaf paths below `node`: the keys from the level after it down to a chain leaf (a
    /// leaf above the last level leaves the levels below it free, all wildcards).
    fn leaf_paths(&mut self, node: NodeIndex) -> Rc<Vec<LeafPath<'s>>> {
        if let Some(p) = self.paths.get(&node) {
            return Rc::clone(p);
        }
        let mut found = Vec::new();
        let mut stack = vec![(node, Vec::new())];
        while let Some((n, path)) = stack.pop() {
            if found.len() >= 8 {
                break;
            }
            let children = self.g.children(n);
            if children.iter().any(|&c| matches!(self.g.node(c), Node::Chain(_))) {
                found.push(path);
                continue;
            }
            for c in children.into_iter().rev() {
                if let Node::Key { level, key } = self.g.node(c) {
                    let mut p = path.clone();
                    p.push((level, key.clone()));
                    stack.push((c, p));
                }
            }
        }
        let found = Rc::new(found);
        self.paths.insert(node, Rc::clone(&found));
        found
    }

    fn witness(
        &mut self,
        node: NodeIndex,
        level: Level,
        key: &Key<'s>,
        parent: NodeIndex,
        fallback: NodeIndex,
    ) -> Option<Diagnostic> {
        let above = self.g.ancestors(parent);
        let depth = level as usize;
        for below in self.leaf_paths(fallback).iter() {
            let mut attrs = Attrs::default();
            for (lv, k) in above.iter().chain(std::iter::once(&(level, key.clone()))).chain(below.iter()) {
                set(&mut attrs, *lv, k);
            }
            for c in self.candidates(&attrs) {
                let hit = self.g.reach(&c, None);
                if hit.path[depth] != Some(node) || !matches!(hit.outcome, Outcome::Closed | Outcome::Default) {
                    continue;
                }
                if let Outcome::Chain(taker) = self.g.reach(&c, Some(node)).outcome {
                    return Some(self.diagnostic(node, level, key, &c, hit.outcome, taker));
                }
            }
        }
        None
    }

    /// Concrete connections for the attributes, free ones filled with the values real clients
    /// send (no ALPN, HTTP/1.1 only, h2 first; an external and a loopback source).
    fn candidates(&self, a: &Attrs) -> Vec<Connection> {
        let listener_addr = self.l.listener.addresses().find_map(|addr| match addr {
            Address::Socket(s) => Some((s.address.parse::<IpAddr>().ok(), s.port_value)),
            _ => None,
        });
        let dst_ip =
            a.dst_ip.or(listener_addr.and_then(|(ip, _)| ip).filter(|ip| !ip.is_unspecified())).unwrap_or(LOOPBACK);
        let dst_port = a
            .dst_port
            .or(listener_addr.and_then(|(_, p)| p).and_then(|p| u16::try_from(p).ok()).filter(|&p| p != 0))
            .unwrap_or(10000);
        let sni = a.sni.clone().unwrap_or_default();
        let transports: Vec<String> = match &a.transport {
            Some(t) => vec![t.clone()],
            None if !sni.is_empty() || a.alpn.as_ref().is_some_and(|v| !v.is_empty()) => vec!["tls".into()],
            None => vec!["raw_buffer".into(), "tls".into()],
        };
        let alpns: Vec<Vec<String>> = match &a.alpn {
            Some(v) => vec![v.clone()],
            // HTTP/1.1-only first: the client that most often falls into these holes.
            None => vec![vec!["http/1.1".into()], vec![], vec!["h2".into(), "http/1.1".into()], vec!["h2c".into()]],
        };
        let sources: Vec<IpAddr> = match (a.src_ip, a.source_type) {
            (Some(ip), _) => vec![ip],
            (None, Some(SourceType::SameIpOrLoopback)) => vec![LOOPBACK],
            (None, Some(SourceType::External)) => vec![EXTERNAL],
            _ => vec![EXTERNAL, LOOPBACK],
        };
        let listener = self.l.listener;
        let tls_inspector = listener.has_tls_inspector();
        let http_inspector = listener.has_http_inspector();
        // Only connections this listener's own listener filters can produce: SNI and ALPN come
        // from a ClientHello (tls_inspector), a plaintext ALPN from http_inspector.
        let possible = |t: &str, alpn: &[String]| match t {
            "tls" => tls_inspector,
            "raw_buffer" => {
                sni.is_empty()
                    && (alpn.is_empty()
                        || (http_inspector
                            && alpn.len() == 1
                            && matches!(alpn[0].as_str(), "http/1.1" | "http/1.0" | "h2c")))
            }
            _ => true,
        };
        let mut out = Vec::new();
        for t in &transports {
            for alpn in alpns.iter().filter(|alpn| possible(t, alpn)) {
                for &src in &sources {
                    out.push(Connection {
                        destination: Some(SocketAddr::new(dst_ip, dst_port)),
                        source: Some(SocketAddr::new(src, a.src_port.unwrap_or(40000))),
                        direct_source: a.direct_src,
                        transport_protocol: t.clone(),
                        server_name: sni.clone(),
                        application_protocols: alpn.clone(),
                    });
                }
            }
        }
        out
    }

    fn diagnostic(
        &self,
        node: NodeIndex,
        level: Level,
        key: &Key<'_>,
        c: &Connection,
        outcome: Outcome,
        taker: usize,
    ) -> Diagnostic {
        let chains = &self.l.listener.filter_chains;
        let specific = self.g.chains_below(node);
        let first = specific.first().copied().unwrap_or(taker);
        let taker_chain = &chains[taker];
        let fate = match outcome {
            Outcome::Default => "are handed to default_filter_chain",
            _ => "are closed",
        };
        let what = describe(c);
        let mut d = Diagnostic::new(
            &RULE,
            format!(
                "{what} {fate}: {} {key} wins that level, but {} {} {} not match them, and Envoy never falls back to '{}', which would take them",
                level.as_str(),
                if specific.len() == 1 { "its chain" } else { "its chains" },
                specific.iter().map(|&i| format!("'{}'", chains[i].display_name())).collect::<Vec<_>>().join(", "),
                if specific.len() == 1 { "does" } else { "do" },
                taker_chain.display_name()
            ),
        )
        .at(self.l.chain_location(&chains[first]))
        .listener(self.l.listener.name.to_string())
        .related(format!("'{}' would take these connections", taker_chain.display_name()), self.l.chain_location(taker_chain))
        .note("Envoy picks the most specific key at each level before it looks at the next, and does not come back");
        for &i in &specific {
            d = d.chain(chains[i].display_name());
        }
        d = d.chain(taker_chain.display_name());
        if let Some(dst) = c.destination {
            d = d.with_example("dst_ip", dst.ip().to_string()).with_example("dst_port", dst.port());
        }
        if !c.server_name.is_empty() {
            d = d.with_example("sni", c.server_name.clone());
        }
        d = d.with_example("transport", c.transport_protocol.clone());
        d = d.with_example("alpn", c.application_protocols.clone());
        if let Some(src) = c.source {
            d = d.with_example("src_ip", src.ip().to_string()).with_example("src_port", src.port());
        }
        d
    }
}

fn describe(c: &Connection) -> String {
    let mut parts = Vec::new();
    if !c.server_name.is_empty() {
        parts.push(format!("SNI {}", c.server_name));
    }
    parts.push(if c.application_protocols.is_empty() {
        format!("{} without ALPN", c.transport_protocol)
    } else {
        format!("{} with ALPN {}", c.transport_protocol, c.application_protocols.join(","))
    });
    if let Some(src) = c.source {
        parts.push(format!("from {src}"));
    }
    if let Some(dst) = c.destination {
        parts.push(format!("to {dst}"));
    }
    format!("connections ({})", parts.join(", "))
}

/// Fixes the attribute of one level from a key on the path.
fn set(a: &mut Attrs, level: Level, key: &Key<'_>) {
    match (level, key) {
        (_, Key::Any) => {}
        (Level::DestinationPort, Key::Port(p)) => a.dst_port = u16::try_from(*p).ok(),
        (Level::DestinationIp, Key::Cidr(n)) => a.dst_ip = Some(n.network()),
        (Level::ServerName, Key::Name(n)) => a.sni = Some(n.to_string()),
        (Level::ServerName, Key::Suffix(s)) => a.sni = Some(format!("unlisted{s}")),
        (Level::TransportProtocol, Key::Protocol(p)) => a.transport = Some(p.to_string()),
        (Level::ApplicationProtocol, Key::Protocol(p)) => a.alpn = Some(vec![p.to_string()]),
        (Level::DirectSourceIp, Key::Cidr(n)) => a.direct_src = Some(n.network()),
        (Level::SourceType, Key::SourceType(t)) => a.source_type = Some(*t),
        (Level::SourceIp, Key::Cidr(n)) => a.src_ip = Some(n.network()),
        (Level::SourcePort, Key::Port(p)) => a.src_port = u16::try_from(*p).ok(),
        _ => {}
    }
}
