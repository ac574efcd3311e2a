use serde_json::{Value, json};

use super::{Moved, Side, connections, region_witnesses};
use crate::chain_match::select::ListenerMatch;
use crate::chain_match::trace::Client;

fn chain(name: &str, names: &[&str], alpn: &[&str], cluster: &str) -> Value {
    json!({"name": name,
        "filter_chain_match": {"server_names": names, "application_protocols": alpn},
        "filters": [{"name": "envoy.filters.network.tcp_proxy", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
            "stat_prefix": cluster, "cluster": cluster}}]})
}

fn listener(chains: Vec<Value>) -> String {
    json!({"name": "edge",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": 443}},
        "listener_filters": [{"name": "envoy.filters.listener.tls_inspector", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"}}],
        "filter_chains": chains})
    .to_string()
}

/// The classes that move between two versions of one listener.
fn moved(old: &str, new: &str) -> Vec<Moved> {
    crate::diff::loaded(old, new, |(o, so), (n, sn)| {
        let (io, inew) = (&o.inputs[0], &n.inputs[0]);
        let (lo, ln) = (&io.listeners[0], &inew.listeners[0]);
        let (mo, mn) = (ListenerMatch::build(lo), ListenerMatch::build(ln));
        let old = Side { listener: lo, matching: &mo, locator: io.locator(so.get(io.source)) };
        let new = Side { listener: ln, matching: &mn, locator: inew.locator(sn.get(inew.source)) };
        connections(&old, &new, &[]).unwrap().moved
    })
}

fn base() -> Vec<Value> {
    vec![chain("api", &["api.example.com"], &[], "api"), chain("wild", &["*.example.com"], &[], "wild")]
}

#[test]
fn a_reorder_or_a_rename_moves_no_connection() {
    let mut reordered = base();
    reordered.reverse();
    assert!(moved(&listener(base()), &listener(reordered)).is_empty());
    let mut renamed = base();
    renamed[1]["name"] = json!("everything-else");
    assert!(moved(&listener(base()), &listener(renamed)).is_empty());
}

#[test]
fn demanding_h2_on_the_exact_name_closes_its_other_clients() {
    let mut h2 = base();
    h2[0] = chain("api", &["api.example.com"], &["h2"], "api");
    let m = moved(&listener(base()), &listener(h2));
    // TLS clients of api.example.com that do not offer h2 (no ALPN, or http/1.1... which the
    // new version does not name) now reach no chain: Envoy does not fall back to the wildcard.
    assert!(!m.is_empty(), "{m:#?}");
    for c in &m {
        assert_eq!((c.old.as_deref(), c.new.as_deref()), (Some("api"), None), "{c:#?}");
        assert_eq!(c.class.server_names, ["api.example.com"], "{c:#?}");
        let Client::Tls { sni, alpn } = &c.connection.client else { panic!("{c:#?}") };
        assert_eq!(sni, "api.example.com");
        assert!(!alpn.contains(&"h2".to_owned()), "{c:#?}");
    }
}

#[test]
fn a_dropped_chain_sends_its_names_to_the_wildcard_and_says_which() {
    let m = moved(&listener(base()), &listener(vec![base()[1].clone()]));
    assert_eq!(m.len(), 1, "{m:#?}");
    assert_eq!((m[0].old.as_deref(), m[0].new.as_deref()), (Some("api"), Some("wild")));
    assert_eq!(m[0].class.server_names, ["api.example.com"]);
    // A chain whose filters change is a change even with the same name and match.
    let mut retargeted = base();
    retargeted[1] = chain("wild", &["*.example.com"], &[], "elsewhere");
    let m = moved(&listener(base()), &listener(retargeted));
    assert_eq!(m.len(), 1, "{m:#?}");
    assert_eq!((m[0].old.as_deref(), m[0].new.as_deref()), (Some("wild"), Some("wild")));
    // Every name under the wildcard but the exact one: one class, named by the wildcard.
    assert_eq!(m[0].class.server_names, ["*.example.com"], "{m:#?}");
    let Client::Tls { sni, .. } = &m[0].connection.client else { panic!("{m:#?}") };
    assert!(sni.ends_with(".example.com") && sni != "api.example.com", "{m:#?}");
}

#[test]
fn every_cidr_cell_has_a_witness_no_narrower_range_takes() {
    let nets: Vec<ipnet::IpNet> =
        ["10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24"].iter().map(|s| s.parse().unwrap()).collect();
    let w = region_witnesses(&nets, "198.51.100.7".parse().unwrap(), &[]);
    assert_eq!(w.len(), 4, "{w:?}");
    for (i, net) in nets.iter().enumerate() {
        // One witness in this range and in no narrower one.
        let narrower = &nets[i + 1..];
        assert!(w.iter().any(|a| net.contains(a) && !narrower.iter().any(|n| n.contains(a))), "{net}: {w:?}");
    }
    // A range wholly covered by narrower ones has no cell: 10.0.0.0/31 by its two /32s.
    let covered: Vec<ipnet::IpNet> =
        ["10.0.0.0/31", "10.0.0.0/32", "10.0.0.1/32"].iter().map(|s| s.parse().unwrap()).collect();
    assert_eq!(region_witnesses(&covered, "198.51.100.7".parse().unwrap(), &[]).len(), 3);
}

#[test]
fn witnesses_are_inside_the_preferred_ranges_where_their_cell_reaches() {
    let nets: Vec<ipnet::IpNet> = ["10.0.0.0/8", "10.1.0.0/16"].iter().map(|s| s.parse().unwrap()).collect();
    let prefer: Vec<ipnet::IpNet> = ["10.200.0.0/16", "192.168.0.0/24"].iter().map(|s| s.parse().unwrap()).collect();
    let w = region_witnesses(&nets, "198.51.100.7".parse().unwrap(), &prefer);
    let inside = |a: &std::net::IpAddr| prefer.iter().any(|p| p.contains(a));
    // 10.0.0.0/8 less 10.1.0.0/16 reaches into 10.200.0.0/16; outside both, 192.168.0.0/24.
    assert!(w.iter().any(|a| inside(a) && nets[0].contains(a) && !nets[1].contains(a)), "{w:?}");
    assert!(w.iter().any(|a| inside(a) && !nets[0].contains(a)), "{w:?}");
    // 10.1.0.0/16 reaches into no preferred range: a witness of its own all the same.
    assert!(w.iter().any(|a| nets[1].contains(a)), "{w:?}");
    assert_eq!(w.len(), 3, "{w:?}");
}

#[test]
fn a_chain_written_with_its_defaults_is_the_chain_envoy_dumps_without_them() {
    // As written by hand (explicit defaults, a duration with trailing zeros), and as Envoy's
    // dump or a transcoded xDS answer prints it.
    let mut written = base();
    written[1]["filters"][0]["typed_config"]["idle_timeout"] = json!("3600.000s");
    written[1]["filters"][0]["typed_config"]["access_log"] = json!([]);
    written[1]["filters"][0]["typed_config"]["max_connect_attempts"] = json!(0);
    let mut dumped = base();
    dumped[1]["filters"][0]["typed_config"]["idle_timeout"] = json!("3600s");
    assert!(moved(&listener(written.clone()), &listener(dumped)).is_empty());
    // A value that is not a default is a change.
    let mut other = base();
    other[1]["filters"][0]["typed_config"]["idle_timeout"] = json!("60s");
    assert_eq!(moved(&listener(written), &listener(other)).len(), 1);
}

#[test]
fn a_move_every_alpn_list_makes_alike_is_one_class() {
    // `h2` is named (by the exact name's chain), so ALPN has cells; the wildcard's chain moves
    // the same for all of them: one class, any ALPN.
    let mut old = base();
    old[0] = chain("api", &["api.example.com"], &["h2"], "api");
    let mut new = old.clone();
    new[1] = chain("wild", &["*.example.com"], &[], "elsewhere");
    let m = moved(&listener(old), &listener(new));
    let wild: Vec<&Moved> = m.iter().filter(|c| c.class.server_names == ["*.example.com"]).collect();
    assert_eq!(wild.len(), 1, "{m:#?}");
    assert!(wild[0].class.any_alpn, "{m:#?}");
    assert_eq!(wild[0].class.application_protocols, [vec![], vec!["h2".to_owned()]]);
}
