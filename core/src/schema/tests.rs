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
