//! Structured listeners (every match field, from small pools so that keys collide) through the
//! analysis: graph, every check, and trace of a few connections — the parts text fuzzing reaches
//! only slowly. The listener is written as JSON and loaded the ordinary way.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use xdsck_core::graph::MatchGraph;
use xdsck_core::graph::trace::Connection;
use xdsck_core::{Options, SourceFile, SourceId, Sources, analyze, load};

const NAMES: [&str; 8] =
    ["a.example.com", "*.example.com", "A.Example.com", ".example.com", "*.com", "", "*.", "b.example.org"];
const CIDRS: [(&str, Option<u32>); 6] = [
    ("10.0.0.0", Some(8)),
    ("10.0.0.1", Some(32)),
    ("0.0.0.0", Some(0)),
    ("::", Some(0)),
    ("10.1.2.3", None),
    ("127.0.0.1", Some(40)),
];
const PROTOS: [&str; 4] = ["tls", "raw_buffer", "h2", "http/1.1"];

#[derive(Debug, Arbitrary)]
struct Chain {
    port: Option<u8>,
    dst: Vec<u8>,
    names: Vec<u8>,
    transport: Option<u8>,
    alpn: Vec<u8>,
    source_type: u8,
    src: Vec<u8>,
    src_ports: Vec<u8>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    chains: Vec<Chain>,
    default_chain: bool,
    tls_inspector: bool,
    probes: Vec<(u8, u8, u8, u8)>,
}

fn cidrs(v: &[u8]) -> Vec<serde_json::Value> {
    v.iter()
        .take(3)
        .map(|&i| {
            let (a, l) = CIDRS[i as usize % CIDRS.len()];
            match l {
                Some(l) => serde_json::json!({"address_prefix": a, "prefix_len": l}),
                None => serde_json::json!({"address_prefix": a}),
            }
        })
        .collect()
}

fuzz_target!(|input: Input| {
    let chains: Vec<serde_json::Value> = input
        .chains
        .iter()
        .take(8)
        .enumerate()
        .map(|(i, c)| {
            let mut m = serde_json::Map::new();
            if let Some(p) = c.port {
                m.insert("destination_port".into(), (10000 + u32::from(p % 4)).into());
            }
            if !c.dst.is_empty() {
                m.insert("prefix_ranges".into(), cidrs(&c.dst).into());
            }
            if !c.names.is_empty() {
                m.insert(
                    "server_names".into(),
                    c.names.iter().take(3).map(|&n| NAMES[n as usize % NAMES.len()]).collect::<Vec<_>>().into(),
                );
            }
            if let Some(t) = c.transport {
                m.insert("transport_protocol".into(), PROTOS[t as usize % 2].into());
            }
            if !c.alpn.is_empty() {
                m.insert(
                    "application_protocols".into(),
                    c.alpn.iter().take(2).map(|&a| PROTOS[2 + a as usize % 2]).collect::<Vec<_>>().into(),
                );
            }
            m.insert(
                "source_type".into(),
                ["ANY", "SAME_IP_OR_LOOPBACK", "EXTERNAL"][c.source_type as usize % 3].into(),
            );
            if !c.src.is_empty() {
                m.insert("source_prefix_ranges".into(), cidrs(&c.src).into());
            }
            if !c.src_ports.is_empty() {
                m.insert(
                    "source_ports".into(),
                    c.src_ports.iter().take(2).map(|&p| u32::from(p % 3) + 1).collect::<Vec<_>>().into(),
                );
            }
            serde_json::json!({"name": format!("c{i}"), "filter_chain_match": m})
        })
        .collect();
    let mut l = serde_json::json!({
        "name": "fuzz",
        "address": {"socket_address": {"address": "10.0.0.1", "port_value": 10000}},
        "filter_chains": chains,
    });
    if input.tls_inspector {
        l["listener_filters"] = serde_json::json!([{"name": "envoy.filters.listener.tls_inspector"}]);
    }
    if input.default_chain {
        l["default_filter_chain"] = serde_json::json!({"name": "default"});
    }
    let mut sources = Sources::new();
    sources.add(SourceFile::new("fuzz.json", l.to_string()));
    let _ = analyze(&sources, &Options::default());
    let document = load::Document::new(SourceId(0), sources.get(SourceId(0)));
    let Ok(loaded) = document.load() else { return };
    let graph = MatchGraph::build(&loaded.listeners[0]);
    for &(port, name, proto, src) in input.probes.iter().take(8) {
        let c = Connection {
            destination: Some(format!("10.0.0.1:{}", 10000 + u16::from(port % 4)).parse().unwrap()),
            source: Some(
                format!("{}:{}", ["127.0.0.1", "10.0.0.1", "192.0.2.1"][src as usize % 3], 1 + u16::from(src % 3))
                    .parse()
                    .unwrap(),
            ),
            direct_source: None,
            transport_protocol: PROTOS[proto as usize % 2].into(),
            server_name: NAMES[name as usize % NAMES.len()]
                .trim_start_matches('*')
                .trim_start_matches('.')
                .to_ascii_lowercase(),
            application_protocols: vec![PROTOS[2 + proto as usize % 2].into()],
        };
        assert_eq!(graph.trace(&c).outcome, graph.reach(&c, None).outcome, "{c:?}");
    }
});
