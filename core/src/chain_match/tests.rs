//! The matcher rules of envoy-matching.md §2, one test each, on listeners written in YAML.
//! (Agreement with a real Envoy is tested in cli/tests/it/envoy_probe.rs.)

use std::net::SocketAddr;

use super::MatchGraph;
use super::trace::{Connection, Outcome};
use crate::load;
use crate::model::Listener;
use crate::source::{SourceFile, SourceId};

/// Chains named by their match, one per line: `name: {filter_chain_match}`.
fn listener_yaml(chains: &[(&str, &str)], default: bool) -> String {
    let mut y =
        String::from("name: l\naddress: {socket_address: {address: 10.0.0.1, port_value: 443}}\nfilter_chains:\n");
    for (name, m) in chains {
        y.push_str(&format!("- name: {name}\n  filter_chain_match: {m}\n"));
    }
    if default {
        y.push_str("default_filter_chain: {name: default}\n");
    }
    y
}

fn conn(dst: &str, src: &str, transport: &str, sni: &str, alpn: &[&str]) -> Connection {
    Connection {
        destination: Some(dst.parse::<SocketAddr>().unwrap()),
        source: Some(src.parse::<SocketAddr>().unwrap()),
        direct_source: None,
        transport_protocol: transport.to_owned(),
        server_name: sni.to_owned(),
        application_protocols: alpn.iter().map(|s| s.to_string()).collect(),
    }
}

/// Where `c` lands, by chain name ("closed" / "default"), checking that the fast path agrees.
fn lands(l: &Listener<'_>, c: &Connection) -> String {
    let g = MatchGraph::build(l);
    let slow = g.trace(c).outcome;
    assert_eq!(slow, g.reach(c, None).outcome, "trace and reach disagree for {c:?}");
    match slow {
        Outcome::Chain(i) => l.filter_chains[i].name.to_string(),
        Outcome::Default => "default".to_owned(),
        Outcome::Closed => "closed".to_owned(),
        Outcome::NeedsInput(level) => format!("needs {}", level.as_str()),
    }
}

fn with<R>(chains: &[(&str, &str)], default: bool, f: impl FnOnce(&Listener<'_>) -> R) -> R {
    let file = SourceFile::new("t.yaml", listener_yaml(chains, default));
    let document = load::Document::new(SourceId(0), &file);
    let input = document.load().expect("test listener loads");
    f(&input.listeners[0])
}

const DST: &str = "10.0.0.1:443";
const SRC: &str = "192.0.2.9:5000";

#[test]
fn exact_name_beats_wildcards_and_wildcards_go_longest_first() {
    let chains = [
        ("exact", "{server_names: [api.example.com]}"),
        ("star", "{server_names: ['*.example.com']}"),
        ("deeper", "{server_names: ['*.b.example.com']}"),
        ("tld", "{server_names: ['*.com']}"),
        ("none", "{}"),
    ];
    with(&chains, false, |l| {
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "api.example.com", &[])), "exact");
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "x.example.com", &[])), "star");
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "a.b.example.com", &[])), "deeper");
        // A wildcard never matches its apex, but `*.com` matches `example.com`.
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "example.com", &[])), "tld");
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "example.org", &[])), "none");
        // No SNI looks up the catch-all directly; a trailing dot matches nothing listed.
        assert_eq!(lands(l, &conn(DST, SRC, "raw_buffer", "", &[])), "none");
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "api.example.com.", &[])), "none");
    });
}

#[test]
fn no_backtracking_from_an_exact_name() {
    let chains = [
        ("api-h2", "{server_names: [api.example.com], application_protocols: [h2]}"),
        ("star", "{server_names: ['*.example.com']}"),
    ];
    with(&chains, false, |l| {
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "api.example.com", &["h2", "http/1.1"])), "api-h2");
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "api.example.com", &["http/1.1"])), "closed");
    });
    with(&chains, true, |l| {
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "api.example.com", &["http/1.1"])), "default");
    });
}

#[test]
fn a_destination_port_entry_hides_the_port_less_chains() {
    let chains = [("port", "{destination_port: 443, transport_protocol: tls}"), ("any", "{}")];
    with(&chains, false, |l| {
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "", &[])), "port");
        assert_eq!(lands(l, &conn(DST, SRC, "raw_buffer", "", &[])), "closed");
        assert_eq!(lands(l, &conn("10.0.0.1:8443", SRC, "raw_buffer", "", &[])), "any");
    });
}

#[test]
fn alpn_follows_the_clients_order() {
    let chains =
        [("h2", "{application_protocols: [h2]}"), ("h1", "{application_protocols: [http/1.1]}"), ("none", "{}")];
    with(&chains, false, |l| {
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "", &["http/1.1", "h2"])), "h1");
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "", &["h2", "http/1.1"])), "h2");
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "", &["spdy/3"])), "none");
    });
}

#[test]
fn destination_and_source_prefixes_take_the_longest_and_keep_families_apart() {
    let chains = [
        ("host", "{prefix_ranges: [{address_prefix: 10.0.0.1, prefix_len: 32}]}"),
        (
            "net",
            "{prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}], source_prefix_ranges: [{address_prefix: 192.0.2.0, prefix_len: 24}]}",
        ),
        ("v6", "{prefix_ranges: [{address_prefix: '::', prefix_len: 0}]}"),
    ];
    with(&chains, false, |l| {
        assert_eq!(lands(l, &conn(DST, SRC, "raw_buffer", "", &[])), "host");
        assert_eq!(lands(l, &conn("10.9.9.9:443", SRC, "raw_buffer", "", &[])), "net");
        // The /8 wins the destination level; its source criterion then fails: no backtracking.
        assert_eq!(lands(l, &conn("10.9.9.9:443", "198.51.100.1:1", "raw_buffer", "", &[])), "closed");
        // An IPv4 destination never matches an IPv6 range.
        assert_eq!(lands(l, &conn("192.0.2.1:443", SRC, "raw_buffer", "", &[])), "closed");
        assert_eq!(lands(l, &conn("[2001:db8::1]:443", SRC, "raw_buffer", "", &[])), "v6");
    });
}

#[test]
fn source_type_local_and_external_hide_any() {
    let chains = [("local", "{source_type: SAME_IP_OR_LOOPBACK, source_ports: [1]}"), ("any", "{}")];
    with(&chains, false, |l| {
        assert_eq!(lands(l, &conn(DST, "127.0.0.1:1", "raw_buffer", "", &[])), "local");
        // Local, but the LOCAL entry fails deeper: Envoy does not try ANY.
        assert_eq!(lands(l, &conn(DST, "127.0.0.1:2", "raw_buffer", "", &[])), "closed");
        // Same IP as the local address counts as local; 127.0.0.2 does not.
        assert_eq!(lands(l, &conn(DST, "10.0.0.1:1", "raw_buffer", "", &[])), "local");
        assert_eq!(lands(l, &conn(DST, "127.0.0.2:2", "raw_buffer", "", &[])), "any");
    });
}

#[test]
fn a_missing_source_is_asked_for_only_when_it_matters() {
    with(&[("src", "{source_ports: [1]}"), ("any", "{}")], false, |l| {
        let mut c = conn(DST, SRC, "raw_buffer", "", &[]);
        c.source = None;
        assert_eq!(lands(l, &c), "needs source_port");
    });
    with(&[("any", "{}")], false, |l| {
        let mut c = conn(DST, SRC, "raw_buffer", "", &[]);
        c.source = None;
        assert_eq!(lands(l, &c), "any");
    });
}

#[test]
fn server_names_compare_lower_cased() {
    with(&[("mixed", "{server_names: [API.Example.com]}")], false, |l| {
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "api.example.com", &[])), "mixed");
    });
}

#[test]
fn a_leaf_that_stands_for_wildcard_levels_is_spelled_out_when_a_later_chain_needs_them() {
    // "plain" sets two levels: its leaf hangs below `tls`. "src" shares those two and sets a
    // source range, so the wildcard run of "plain" must become real nodes for "src" to branch off.
    let chains = [
        ("plain", "{server_names: [api.example.com], transport_protocol: tls}"),
        (
            "src",
            "{server_names: [api.example.com], transport_protocol: tls, source_prefix_ranges: [{address_prefix: 192.0.2.0, prefix_len: 24}]}",
        ),
    ];
    with(&chains[..1], false, |l| {
        let g = MatchGraph::build(l);
        // root, port, destination IP, name, transport and the leaf: no run of `Any` nodes.
        assert_eq!(g.node_count(), 6);
        let steps = g.trace(&conn(DST, SRC, "tls", "api.example.com", &["h2"])).steps;
        assert_eq!(steps.len(), 9, "every level is still explained: {steps:#?}");
        assert!(steps[4..].iter().all(|s| s.chosen.as_deref() == Some("(any)")), "{steps:#?}");
    });
    with(&chains, false, |l| {
        assert_eq!(lands(l, &conn(DST, SRC, "tls", "api.example.com", &[])), "src");
        assert_eq!(lands(l, &conn(DST, "198.51.100.7:5000", "tls", "api.example.com", &[])), "plain");
        let g = MatchGraph::build(l);
        assert!(g.overlaps.is_empty());
        // "plain" now hangs below the last level; "src" below its source range (only the source
        // port, a wildcard, is left there).
        let parent_level = |chain: usize| {
            let leaf = g.nodes().find(|&n| g.node(n) == super::Node::Chain(chain)).unwrap();
            match g.node(g.parent(leaf).unwrap()) {
                super::Node::Key { level, .. } => level,
                _ => panic!("a leaf below the root"),
            }
        };
        assert_eq!(parent_level(0), super::Level::SourcePort);
        assert_eq!(parent_level(1), super::Level::SourceIp);
    });
}

#[test]
fn chains_colliding_on_a_wildcard_run_overlap_with_the_whole_tuple() {
    let chains =
        [("a", "{server_names: [api.example.com]}"), ("b", "{server_names: [www.example.com, api.example.com]}")];
    with(&chains, false, |l| {
        let g = MatchGraph::build(l);
        assert_eq!(g.overlaps.len(), 1, "{:?}", g.overlaps);
        let o = &g.overlaps[0];
        assert_eq!((o.chain, o.earlier), (1, 0));
        assert_eq!(o.tuple.len(), 9);
        assert_eq!(o.tuple[2].to_string(), "api.example.com");
        assert!(o.tuple.iter().enumerate().all(|(i, k)| i == 2 || *k == super::Key::Any), "{:?}", o.tuple);
    });
}

#[test]
fn queries_find_parents_ancestors_and_the_key_that_takes_over() {
    use super::{Key, Level, Node};
    let chains = [
        ("exact", "{server_names: [api.example.com]}"),
        ("wild", "{server_names: ['*.example.com']}"),
        ("top", "{server_names: ['*.com']}"),
        ("any", "{}"),
    ];
    with(&chains, false, |l| {
        let g = MatchGraph::build(l);
        let by_key = |level: Level, key: &Key<'_>| g.nodes_at(level).find(|&n| g.key(n).as_ref() == Some(key)).unwrap();
        let exact = by_key(Level::ServerName, &Key::Name("api.example.com".into()));
        let wild = by_key(Level::ServerName, &Key::Suffix(".example.com".into()));
        let top = by_key(Level::ServerName, &Key::Suffix(".com".into()));
        let parent = g.parent(exact).unwrap();
        assert!(matches!(g.node(parent), Node::Key { level: Level::DestinationIp, key: Key::Any }));
        assert_eq!(g.parent(g.parent(parent).unwrap()), Some(g.root));
        assert_eq!(g.parent(g.root), None);
        assert_eq!(
            g.ancestors(exact),
            [
                (Level::DestinationPort, Key::Any),
                (Level::DestinationIp, Key::Any),
                (Level::ServerName, Key::Name("api.example.com".into()))
            ]
        );
        // Each name falls back to the next wildcard up, the last one to the name-less chain.
        let any = g.child(parent, &Key::Any).unwrap();
        assert_eq!(g.fallback_of(parent, &Key::Name("api.example.com".into())), Some(wild));
        assert_eq!(g.fallback_of(parent, &Key::Suffix(".example.com".into())), Some(top));
        assert_eq!(g.fallback_of(parent, &Key::Suffix(".com".into())), Some(any));
        assert_eq!(g.fallback_of(parent, &Key::Any), None);
        assert_eq!(g.wildcard_for(parent, "www.example.com"), Some(wild));
        assert_eq!(g.wildcard_for(parent, "example.org"), None);
        // Nodes come parents first: reversed, every child is seen before its parent.
        let order: Vec<_> = g.nodes().collect();
        assert_eq!(order.len(), g.node_count());
        assert!(order.iter().all(|&n| g.parent(n).is_none_or(|p| p < n)));
    });
}

#[test]
fn a_prefix_falls_back_to_the_longest_wider_prefix_then_to_unset() {
    use super::{Key, Level};
    let chains = [
        ("narrow", "{prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 24}]}"),
        ("wide", "{prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}"),
        ("wider", "{prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 7}]}"),
        ("unset", "{}"),
    ];
    with(&chains, false, |l| {
        let g = MatchGraph::build(l);
        let cidr = |s: &str| Key::Cidr(s.parse().unwrap());
        let node = |key: &Key<'_>| g.nodes_at(Level::DestinationIp).find(|&n| g.key(n).as_ref() == Some(key)).unwrap();
        let parent = g.parent(node(&cidr("10.0.0.0/24"))).unwrap();
        assert_eq!(g.fallback_of(parent, &cidr("10.0.0.0/24")), Some(node(&cidr("10.0.0.0/8"))));
        assert_eq!(g.fallback_of(parent, &cidr("10.0.0.0/8")), Some(node(&cidr("10.0.0.0/7"))));
        assert_eq!(g.fallback_of(parent, &cidr("10.0.0.0/7")), Some(node(&Key::Any)));
    });
}

#[test]
fn an_item_is_the_same_as_the_first_earlier_equal_one_not_as_one_of_equal_hash() {
    // Items 0, 2 and 3 share a hash; 2 differs from 0 in value, 3 equals 0.
    let values = ["a", "b", "c", "a", "b", "c"];
    let hashes = [1, 2, 1, 1, 2, 1];
    let mut same = super::same_as_earlier(&hashes, |i, j| values[i] == values[j]);
    same.sort_unstable();
    assert_eq!(same, [(3, 0), (4, 1), (5, 2)]);
}

/// A level of many ranges is searched by looking up each prefix of the address, not by trying
/// every child: both find the same child, whichever child is left out (as a "what if" asks),
/// for both families, an address no range holds and no address at all, with `0.0.0.0/0` and
/// the wildcard tying at length 0 (the first inserted wins) in either order.
#[test]
fn many_ranges_are_looked_up_by_prefix_as_trying_each_would() {
    use super::key::Key;
    use std::net::IpAddr;
    let mut ranges: Vec<String> = (0..12).map(|i| format!("{{address_prefix: 10.{i}.0.0, prefix_len: 16}}")).collect();
    ranges.extend((0..4).map(|i| format!("{{address_prefix: 10.{i}.7.0, prefix_len: 24}}")));
    ranges.extend(["10.0.0.0/8", "10.3.7.9/32", "2001:db8::/32", "2001:db8:1::/48", "::/0"].map(|r| {
        let (a, len) = r.split_once('/').unwrap();
        format!("{{address_prefix: '{a}', prefix_len: {len}}}")
    }));
    for zero_first in [true, false] {
        let mut chains: Vec<(String, String)> =
            ranges.iter().enumerate().map(|(i, r)| (format!("c{i}"), format!("{{prefix_ranges: [{r}]}}"))).collect();
        let zero = ("zero".to_owned(), "{prefix_ranges: [{address_prefix: 0.0.0.0, prefix_len: 0}]}".to_owned());
        let any = ("any".to_owned(), "{}".to_owned());
        let (a, b) = if zero_first { (zero, any) } else { (any, zero) };
        chains.insert(3, a);
        chains.push(b);
        let chains: Vec<(&str, &str)> = chains.iter().map(|(n, m)| (n.as_str(), m.as_str())).collect();
        with(&chains, false, |l| {
            let g = MatchGraph::build(l);
            let node = g.child(g.root, &Key::Any).expect("the port level's wildcard");
            let children: Vec<_> = g.children(node);
            assert!(children.len() > super::SMALL, "{} children: the lookup is not used", children.len());
            let addrs =
                ["10.3.7.9", "10.3.7.1", "10.11.1.1", "10.200.0.1", "192.0.2.1", "2001:db8:1::5", "2001:db9::1"];
            let addrs = addrs.iter().map(|a| Some(a.parse::<IpAddr>().unwrap())).chain([None]);
            for addr in addrs {
                for skip in std::iter::once(None).chain(children.iter().copied().map(Some)) {
                    let all = g.longest_of_all(node, addr.unwrap_or(super::trace::NON_IP), skip);
                    assert_eq!(g.longest(node, addr, skip), all, "{addr:?} without {skip:?}");
                }
            }
            // A range's fallback is the longest wider range among its siblings, else the wildcard.
            let key = |r: &str| Key::Cidr(r.parse().unwrap());
            let fallback = |r: &str| g.fallback_of(node, &key(r)).and_then(|n| g.key(n)).map(|k| k.to_string());
            assert_eq!(fallback("10.3.7.9/32").as_deref(), Some("10.3.7.0/24"));
            assert_eq!(fallback("10.3.7.0/24").as_deref(), Some("10.3.0.0/16"));
            assert_eq!(fallback("10.11.0.0/16").as_deref(), Some("10.0.0.0/8"));
            assert_eq!(fallback("10.0.0.0/8").as_deref(), Some("0.0.0.0/0"));
            assert_eq!(fallback("2001:db8:1::/48").as_deref(), Some("2001:db8::/32"));
            assert_eq!(fallback("::/0").as_deref(), Some("(any)"));
        });
    }
}

/// A node as the graph holds it is its kind and a number (a chain's, a port's, or its value's
/// in the index's [`super::Values`]): 8 bytes, 16 with petgraph's edge links. On 64-bit targets
/// (where tenant-scale runs are) a node holding its text's reference was 32, 24 MB more for the
/// 1.5M nodes of a 100k-tenant listener.
#[test]
fn a_stored_node_is_its_kind_and_a_number() {
    assert_eq!(std::mem::size_of::<super::Stored>(), 8);
    assert_eq!(std::mem::size_of::<petgraph::graph::Node<super::Stored>>(), 16);
}

/// A stored key is the key it was made of, borrowed or lowered, and compares, hashes and
/// shows as that key: the index finds a lowered name by the key a lookup makes of it.
#[test]
fn a_stored_key_is_the_key_it_was_made_of() {
    use super::{Key, key};
    use std::hash::BuildHasher;
    let hasher = crate::hashing::InputHasher::default();
    let keys = [
        Key::Any,
        Key::Port(443),
        Key::Cidr("10.0.0.0/8".parse().unwrap()),
        Key::SourceType(crate::model::SourceType::External),
        key::server_name("api.example.com"),
        key::server_name("API.Example.com"),
        key::server_name("*.example.com"),
        key::server_name("*.EXAMPLE.com"),
        Key::Protocol("tls".into()),
    ];
    let mut values = super::Values::default();
    for k in &keys {
        let stored = values.store(k);
        assert_eq!(values.key(stored).as_ref(), Some(k));
        assert_eq!(values.model_key(stored).as_ref(), Some(k));
        assert!(values.is(stored, k));
        assert_eq!(hasher.hash_one(values.key(stored).unwrap()), hasher.hash_one(k));
        // `is` agrees with `==` on every pair (the two spellings of a name are one key).
        assert_eq!(
            keys.iter().filter(|other| values.is(stored, other)).count(),
            keys.iter().filter(|other| *other == k).count()
        );
    }
    assert!(matches!(values.store(&key::server_name("API.example.com")), super::Stored::Lowered(..)));
    assert!(matches!(values.store(&key::server_name("api.example.com")), super::Stored::Text(..)));
    assert_eq!(values.key(super::Stored::Root), None);
    assert_eq!(values.model_key(super::Stored::Chain(3)), None);
}

/// A protocol is one text however many nodes hold it (each server name has its `tls` below
/// it), up to a handful of distinct ones; a name is stored once a node.
#[test]
fn protocols_share_their_text() {
    use super::{Key, key};
    // Borrowed, as the model's texts are (an owned one is a lower-cased copy, kept apart).
    let protocols: Vec<String> = (0..super::SHARED_PROTOCOLS + 2).map(|p| format!("p{p}")).collect();
    let protocol = |p: usize| Key::Protocol(protocols[p].as_str().into());
    let mut values = super::Values::default();
    let tls = Key::Protocol("tls".into());
    let first = values.store(&tls);
    assert_eq!(values.store(&tls), first);
    let names = [values.store(&key::server_name("a.example.com")), values.store(&key::server_name("a.example.com"))];
    assert_ne!(names[0], names[1]);
    for p in 0..protocols.len() {
        values.store(&protocol(p));
    }
    assert_eq!(values.texts.len(), 1 + 2 + protocols.len());
    // The first handful are shared; past them a protocol is stored a node at a time, and still
    // found as itself.
    assert_eq!(values.store(&protocol(0)), values.store(&protocol(0)));
    let late = protocol(protocols.len() - 1);
    let again = values.store(&late);
    assert_eq!(values.key(again).as_ref(), Some(&late));
    assert_eq!(values.texts.len(), 1 + 2 + protocols.len() + 1);
}

/// Why each chain is left out of the index, if it is: 8 bytes a chain (the earlier chain's
/// number in four), not 16 — 3.2 MB of a 400k-chain listener's index phase.
#[test]
fn an_exclusion_is_eight_bytes() {
    assert_eq!(std::mem::size_of::<Option<super::Excluded>>(), 8);
}
