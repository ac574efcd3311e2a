use super::*;

#[test]
fn the_schema_has_envoys_messages_with_their_rules() {
    let s = Schema::get();
    let listener = s.message(s.find("envoy.config.listener.v3.Listener").expect("Listener"));
    assert!(listener.field_by_key("filter_chains").is_some());
    assert!(listener.field_by_key("filterChains").is_some());
    assert!(listener.field_by_key("bypass_overload_manager").is_some());
    let hcm = s.find("envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager").expect("HCM");
    assert!(s.message(hcm).field_by_key("record_route_resolution_stats").is_some(), "a field only Envoy 1.40 has");
    let sa = s.message(s.find("envoy.config.core.v3.SocketAddress").expect("SocketAddress"));
    let (_, port) = sa.field_by_key("port_value").expect("port_value");
    assert_eq!(&*port.pgv_name, "PortValue");
    assert!(port.rules.is_some());
    assert_eq!(s.message(s.find("google.protobuf.Duration").unwrap()).wkt, Wkt::Duration);
    assert!(s.extensions().has_type("envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"));
    assert!(!s.extensions().has_type("cilium.BpfMetadata"));
}

#[test]
fn names_are_spelled_as_protobuf_and_pgv_spell_them() {
    assert_eq!(lower_camel_case("filter_chain_match"), "filterChainMatch");
    assert_eq!(lower_camel_case("ipv4_compat"), "ipv4Compat");
    assert_eq!(pgv_camel_case("port_value"), "PortValue");
    assert_eq!(pgv_camel_case("ipv4_compat"), "Ipv4Compat");
    assert_eq!(pgv_camel_case("x509_san"), "X509San");
    assert_eq!(pgv_camel_case("_hidden"), "XHidden");
}

#[test]
fn extension_wrappers_are_known_by_their_fields() {
    let s = Schema::get();
    for name in [
        "envoy.config.listener.v3.ListenerFilter",
        "envoy.config.listener.v3.Filter",
        "envoy.config.core.v3.TypedExtensionConfig",
    ] {
        assert!(s.message(s.find(name).unwrap()).extension.is_some(), "{name}");
    }
}

#[test]
fn every_pgv_pattern_has_a_writing_both_engines_read_as_re2_does() {
    // PGV's C++ matches `pattern` with RE2; the regex crate's engines read `\\s` and its kin
    // their own way, so each pattern is run as `re2::for_engine` writes it out. A pattern of a
    // later Envoy without such a writing fails here, to be read by hand.
    let s = Schema::get();
    let mut patterns: Vec<&str> = s
        .messages
        .iter()
        .flat_map(|m| m.fields.iter())
        .filter_map(|f| f.rules.as_deref())
        .flat_map(FieldRules::patterns)
        .collect();
    patterns.sort_unstable();
    patterns.dedup();
    assert!(patterns.len() >= 10, "{patterns:?}");
    assert!(patterns.contains(&"^[^\\s,]+$"), "{patterns:?}");
    for p in patterns {
        let written = re2::for_engine(p).unwrap_or_else(|| panic!("{p}: no writing"));
        assert!(regex_lite::Regex::new(&written).is_ok(), "{p} -> {written}");
        #[cfg(feature = "regex")]
        assert!(regex::Regex::new(&written).is_ok(), "{p} -> {written}");
        assert!(!written.contains("\\s") && !written.contains("\\d") && !written.contains("\\w"), "{p} -> {written}");
    }
    assert_eq!(
        re2::for_engine(r"^[^\s,]+\d\W$").as_deref(),
        Some(r"^[^\x09\x0A\x0C\x0D\x20,]+[\x30-\x39][^\x30-\x39\x41-\x5A\x61-\x7A\x5F]$")
    );
    assert_eq!(re2::for_engine(r"[^\S]"), None);
    assert_eq!(re2::for_engine(r"(?i)a"), None);
    assert_eq!(re2::for_engine(r"a\b"), None);
}
