//! Property tests (issue 7): `trace` agrees with `reach` and with a slow reference matcher
//! written straight from envoy-matching.md §2.2–2.3; reports are deterministic; duplicate and
//! overlap findings do not depend on the order of the chains they do not name.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use proptest::prelude::*;
use serde_json::{Value, json};
use xdsck_core::chain_match::MatchGraph;
use xdsck_core::chain_match::trace::{Connection, Outcome};
use xdsck_core::load;
use xdsck_core::report::{self, RenderOptions};
use xdsck_core::{Options, SourceFile, SourceId, Sources};

// ---- random listeners ----

const DST_PORTS: &[u32] = &[443, 8443];
const DST_CIDRS: &[&str] = &["10.0.0.0/8", "10.1.0.0/16", "10.1.2.3/16", "192.168.1.0/24", "2001:db8::/32"];
const NAMES: &[&str] = &[
    "api.example.com",
    "API.Example.COM",
    "*.example.com",
    "*.B.example.com",
    "a.b.example.com",
    "*.com",
    "other.org",
];
const TRANSPORTS: &[&str] = &["tls", "raw_buffer"];
const ALPNS: &[&str] = &["h2", "http/1.1"];
const SOURCE_TYPES: &[&str] = &["ANY", "SAME_IP_OR_LOOPBACK", "EXTERNAL"];
const SRC_CIDRS: &[&str] = &["10.0.0.0/8", "10.2.0.0/16", "127.0.0.1/32", "2001:db8::/48"];
const SRC_PORTS: &[u32] = &[1000, 2000];

/// One chain's `filter_chain_match`, as indices into the tables above.
#[derive(Debug, Clone)]
struct Match {
    destination_port: Option<usize>,
    prefix_ranges: Vec<usize>,
    server_names: Vec<usize>,
    transport_protocol: Option<usize>,
    application_protocols: Vec<usize>,
    direct_source_prefix_ranges: Vec<usize>,
    source_type: usize,
    source_prefix_ranges: Vec<usize>,
    source_ports: Vec<usize>,
}

#[derive(Debug, Clone)]
struct Spec {
    chains: Vec<Option<Match>>,
    default_chain: bool,
}

fn some_of(n: usize, max: usize) -> impl Strategy<Value = Vec<usize>> {
    // Mostly empty (a wildcard at that level), so that levels interact.
    prop_oneof![3 => Just(Vec::new()), 2 => proptest::collection::vec(0..n, 1..=max)]
}

fn maybe(n: usize) -> impl Strategy<Value = Option<usize>> {
    prop_oneof![2 => Just(None), 1 => (0..n).prop_map(Some)]
}

fn a_match() -> impl Strategy<Value = Match> {
    (
        maybe(DST_PORTS.len()),
        some_of(DST_CIDRS.len(), 2),
        some_of(NAMES.len(), 2),
        maybe(TRANSPORTS.len()),
        some_of(ALPNS.len(), 2),
        prop_oneof![4 => Just(Vec::new()), 1 => Just(vec![0])],
        prop_oneof![3 => Just(0), 1 => 1..3usize],
        some_of(SRC_CIDRS.len(), 2),
        some_of(SRC_PORTS.len(), 1),
    )
        .prop_map(|(dp, pr, sn, tp, ap, dsr, st, spr, sp)| Match {
            destination_port: dp,
            prefix_ranges: pr,
            server_names: sn,
            transport_protocol: tp,
            application_protocols: ap,
            direct_source_prefix_ranges: dsr,
            source_type: st,
            source_prefix_ranges: spr,
            source_ports: sp,
        })
}

fn a_spec() -> impl Strategy<Value = Spec> {
    (proptest::collection::vec(prop_oneof![1 => Just(None), 8 => a_match().prop_map(Some)], 1..7), any::<bool>())
        .prop_map(|(chains, default_chain)| Spec { chains, default_chain })
}

fn cidr_json(c: &str) -> Value {
    let (addr, len) = c.split_once('/').unwrap();
    json!({"address_prefix": addr, "prefix_len": len.parse::<u32>().unwrap()})
}

fn chain_json(name: &str, m: Option<&Match>) -> Value {
    let mut chain = json!({"name": name, "filters": []});
    let Some(m) = m else { return chain };
    let mut fcm = serde_json::Map::new();
    if let Some(p) = m.destination_port {
        fcm.insert("destination_port".into(), json!(DST_PORTS[p]));
    }
    let cidrs = |v: &[usize], t: &[&str]| Value::Array(v.iter().map(|&i| cidr_json(t[i])).collect());
    if !m.prefix_ranges.is_empty() {
        fcm.insert("prefix_ranges".into(), cidrs(&m.prefix_ranges, DST_CIDRS));
    }
    if !m.server_names.is_empty() {
        fcm.insert("server_names".into(), json!(m.server_names.iter().map(|&i| NAMES[i]).collect::<Vec<_>>()));
    }
    if let Some(t) = m.transport_protocol {
        fcm.insert("transport_protocol".into(), json!(TRANSPORTS[t]));
    }
    if !m.application_protocols.is_empty() {
        fcm.insert(
            "application_protocols".into(),
            json!(m.application_protocols.iter().map(|&i| ALPNS[i]).collect::<Vec<_>>()),
        );
    }
    if !m.direct_source_prefix_ranges.is_empty() {
        fcm.insert("direct_source_prefix_ranges".into(), cidrs(&m.direct_source_prefix_ranges, DST_CIDRS));
    }
    if m.source_type != 0 {
        fcm.insert("source_type".into(), json!(SOURCE_TYPES[m.source_type]));
    }
    if !m.source_prefix_ranges.is_empty() {
        fcm.insert("source_prefix_ranges".into(), cidrs(&m.source_prefix_ranges, SRC_CIDRS));
    }
    if !m.source_ports.is_empty() {
        fcm.insert("source_ports".into(), json!(m.source_ports.iter().map(|&i| SRC_PORTS[i]).collect::<Vec<_>>()));
    }
    chain["filter_chain_match"] = Value::Object(fcm);
    chain
}

/// The listener as JSON; chain `i` is named `c{order[i]}` (names survive reordering).
fn listener_json(spec: &Spec, order: &[usize]) -> String {
    let chains: Vec<Value> = order.iter().map(|&i| chain_json(&format!("c{i}"), spec.chains[i].as_ref())).collect();
    let mut l = json!({
        "name": "l",
        "address": {"socket_address": {"address": "0.0.0.0", "port_value": 443}},
        "listener_filters": [{"name": "envoy.filters.listener.tls_inspector"}],
        "filter_chains": chains,
    });
    if spec.default_chain {
        l["default_filter_chain"] = json!({"name": "default", "filters": []});
    }
    serde_json::to_string_pretty(&l).unwrap()
}

// ---- random connections ----

const DESTINATIONS: &[&str] =
    &["10.0.0.1:443", "10.1.2.3:8443", "192.168.1.5:443", "10.0.0.1:8443", "[2001:db8::1]:443"];
const SOURCES: &[&str] =
    &["10.0.0.1:1000", "10.2.3.4:2000", "127.0.0.1:1000", "192.168.1.5:3000", "[2001:db8::2]:1000", "10.9.9.9:2000"];
const SNIS: &[&str] =
    &["", "api.example.com", "a.b.example.com", "x.b.example.com", "x.example.com", "example.com", "other.org"];
const CLIENT_ALPNS: &[&[&str]] = &[&[], &["h2"], &["http/1.1"], &["h2", "http/1.1"], &["http/1.1", "h2"]];

fn a_connection() -> impl Strategy<Value = Connection> {
    (0..DESTINATIONS.len(), 0..SOURCES.len(), 0..TRANSPORTS.len(), 0..SNIS.len(), 0..CLIENT_ALPNS.len()).prop_map(
        |(d, s, t, n, a)| Connection {
            destination: Some(DESTINATIONS[d].parse().unwrap()),
            source: Some(SOURCES[s].parse().unwrap()),
            direct_source: None,
            transport_protocol: TRANSPORTS[t].to_owned(),
            server_name: SNIS[n].to_owned(),
            application_protocols: CLIENT_ALPNS[a].iter().map(|s| (*s).to_owned()).collect(),
        },
    )
}

// ---- the reference matcher: no graph, straight from envoy-matching.md §2.1–2.3 ----

/// One key per level (§2.1 table), `None` for the wildcard key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum K {
    Any,
    Port(u32),
    Net(IpNet),
    Str(String),
    Type(usize),
}

/// Every expanded tuple of every chain, with its chain index.
fn tuples(spec: &Spec) -> Vec<(usize, [K; 9])> {
    let mut out = Vec::new();
    for (i, m) in spec.chains.iter().enumerate() {
        let Some(m) = m else {
            out.push((i, std::array::from_fn(|_| K::Any)));
            continue;
        };
        let or_any = |v: Vec<K>| if v.is_empty() { vec![K::Any] } else { v };
        let nets = |v: &[usize], t: &[&str]| {
            or_any(v.iter().map(|&j| K::Net(t[j].parse::<IpNet>().unwrap().trunc())).collect())
        };
        let levels: [Vec<K>; 9] = [
            vec![m.destination_port.map_or(K::Any, |p| K::Port(DST_PORTS[p]))],
            nets(&m.prefix_ranges, DST_CIDRS),
            or_any(
                m.server_names
                    .iter()
                    .map(|&j| {
                        let n = NAMES[j].to_ascii_lowercase();
                        K::Str(n.strip_prefix('*').map(str::to_owned).unwrap_or(n))
                    })
                    .collect(),
            ),
            vec![m.transport_protocol.map_or(K::Any, |t| K::Str(TRANSPORTS[t].to_owned()))],
            or_any(m.application_protocols.iter().map(|&j| K::Str(ALPNS[j].to_owned())).collect()),
            nets(&m.direct_source_prefix_ranges, DST_CIDRS),
            vec![if m.source_type == 0 { K::Any } else { K::Type(m.source_type) }],
            nets(&m.source_prefix_ranges, SRC_CIDRS),
            or_any(m.source_ports.iter().map(|&j| K::Port(SRC_PORTS[j])).collect()),
        ];
        // The cartesian product of the levels.
        let mut partial: Vec<Vec<K>> = vec![Vec::new()];
        for level in &levels {
            partial = partial
                .into_iter()
                .flat_map(|p| level.iter().map(move |k| [p.clone(), vec![k.clone()]].concat()))
                .collect();
        }
        out.extend(partial.into_iter().map(|t| (i, <[K; 9]>::try_from(t).unwrap())));
    }
    out
}

/// The most specific key present among `keys` for address `addr`: the longest prefix that
/// contains it, the wildcard counting as length 0 of both families.
fn longest(keys: &[&K], addr: IpAddr) -> Option<K> {
    let mut best: Option<(u8, K)> = None;
    for k in keys {
        let len = match k {
            K::Any => 0,
            K::Net(n) if n.contains(&addr) => n.prefix_len(),
            _ => continue,
        };
        if best.as_ref().is_none_or(|(l, _)| len > *l) {
            best = Some((len, (*k).clone()));
        }
    }
    best.map(|(_, k)| k)
}

fn reference(spec: &Spec, c: &Connection) -> Outcome {
    let fallback = if spec.default_chain { Outcome::Default } else { Outcome::Closed };
    let dst = c.destination.unwrap();
    let src = c.source.unwrap();
    let mut in_play = tuples(spec);
    for level in 0..9 {
        let keys: Vec<&K> = in_play.iter().map(|(_, t)| &t[level]).collect();
        let has = |k: &K| keys.contains(&k);
        let chosen = match level {
            // 1. The exact local port, else the port-0 subtree.
            0 => [K::Port(u32::from(dst.port())), K::Any].into_iter().find(|k| has(k)),
            1 => longest(&keys, dst.ip()),
            // 3. Exact SNI, then wildcard suffixes longest first, then no server_names.
            2 => {
                let sni = c.server_name.as_str();
                let mut candidates = Vec::new();
                if !sni.is_empty() {
                    candidates.push(K::Str(sni.to_owned()));
                    let mut rest = sni;
                    while let Some(dot) = rest[1..].find('.') {
                        rest = &rest[dot + 1..];
                        if rest != "." {
                            candidates.push(K::Str(rest.to_owned()));
                        }
                    }
                }
                candidates.push(K::Any);
                candidates.into_iter().find(|k| has(k))
            }
            3 => [K::Str(c.transport_protocol.clone()), K::Any].into_iter().find(|k| has(k)),
            // 5. The client's ALPN list in the client's order, then none.
            4 => c.application_protocols.iter().map(|a| K::Str(a.clone())).chain([K::Any]).find(|k| has(k)),
            5 => longest(&keys, c.direct_source.unwrap_or(src.ip())),
            // 7. The typed entry if it exists, ANY only when it does not.
            6 => {
                let local = src.ip() == IpAddr::V4(Ipv4Addr::LOCALHOST)
                    || src.ip() == IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
                    || src.ip() == dst.ip();
                let want = K::Type(if local { 1 } else { 2 });
                [want, K::Any].into_iter().find(|k| has(k))
            }
            7 => longest(&keys, src.ip()),
            _ => [K::Port(u32::from(src.port())), K::Any].into_iter().find(|k| has(k)),
        };
        // Commit to the key; never come back (§2.3).
        let Some(chosen) = chosen else { return fallback };
        in_play.retain(|(_, t)| t[level] == chosen);
    }
    let chains: BTreeSet<usize> = in_play.iter().map(|(i, _)| *i).collect();
    assert!(chains.len() <= 1, "overlapping tuples reached a leaf: {chains:?}");
    chains.first().map_or(fallback, |&i| Outcome::Chain(i))
}

// ---- the properties ----

fn load_listener(text: &str) -> SourceFile {
    SourceFile::new("l.json", text)
}

/// Case counts keep the whole file under 10 s in a debug build.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    // About a third of the random listeners are accepted by Envoy with more than one chain:
    // those are the cases the reference comparison needs, hence more of them.
    #![proptest_config(config(1000))]

    /// (a) trace and reach agree; (b) both agree with the reference matcher on listeners
    /// Envoy accepts and where no level's choice is undefined.
    #[test]
    fn trace_agrees_with_reach_and_the_reference(spec in a_spec(), conns in proptest::collection::vec(a_connection(), 1..12)) {
        let order: Vec<usize> = (0..spec.chains.len()).collect();
        let file = load_listener(&listener_json(&spec, &order));
        let document = load::Document::new(SourceId(0), &file);
        let input = document.load().expect("the generated listener loads");
        let listener = &input.listeners[0];
        let g = MatchGraph::build(listener);
        let accepted = g.overlaps.is_empty() && g.excluded.iter().all(Option::is_none);
        for c in &conns {
            let t = g.trace(c);
            prop_assert_eq!(t.outcome, g.reach(c, None).outcome, "trace and reach differ on {:?}", c);
            if accepted && !t.steps.iter().any(|s| s.ambiguous) {
                prop_assert_eq!(t.outcome, reference(&spec, c), "trace and the reference differ on {:?}\n{:#?}", c, t.steps);
            }
        }
    }
}

proptest! {
    #![proptest_config(config(200))]

    /// (c) The same input gives the same bytes in every format, however often it is analysed.
    #[test]
    fn reports_are_deterministic(spec in a_spec()) {
        let order: Vec<usize> = (0..spec.chains.len()).collect();
        let text = listener_json(&spec, &order);
        let render_all = || {
            let mut sources = Sources::new();
            sources.add(SourceFile::new("l.json", text.as_str()));
            let r = xdsck_core::analyze(&sources, &Options::default());
            [report::Format::Text, report::Format::Json, report::Format::Sarif, report::Format::Github]
                .map(|f| report::render(f, &r, &sources, RenderOptions::default()))
        };
        let first = render_all();
        for _ in 0..2 {
            prop_assert_eq!(&render_all(), &first);
        }
    }

    /// (d) Shuffling the chains that no duplicate or overlap finding names leaves those
    /// findings (code and the chains they name, in Envoy's order) unchanged.
    #[test]
    fn duplicate_and_overlap_findings_ignore_the_order_of_other_chains(spec in a_spec(), keys in proptest::collection::vec(any::<u32>(), 7)) {
        let findings = |order: &[usize]| -> BTreeSet<(String, Vec<String>)> {
            let mut sources = Sources::new();
            sources.add(SourceFile::new("l.json", listener_json(&spec, order)));
            xdsck_core::analyze(&sources, &Options::default())
                .findings
                .iter()
                .filter(|d| matches!(d.code(), "XDS101" | "XDS102"))
                .map(|d| (d.code().to_owned(), d.filter_chains.to_vec()))
                .collect()
        };
        let n = spec.chains.len();
        let order: Vec<usize> = (0..n).collect();
        let before = findings(&order);
        let named: BTreeSet<String> = before.iter().flat_map(|(_, c)| c.iter().cloned()).collect();
        // The unnamed chains, shuffled among their own places.
        let free: Vec<usize> = (0..n).filter(|i| !named.contains(&format!("c{i}"))).collect();
        let mut shuffled = free.clone();
        shuffled.sort_by_key(|&i| keys[i]);
        let mut new_order = order.clone();
        for (slot, chain) in free.iter().zip(&shuffled) {
            new_order[*slot] = *chain;
        }
        prop_assert_eq!(findings(&new_order), before, "order {:?}", new_order);
    }
}
