//! Proto3 JSON (snake_case) of a Listener → the envoy-types protobuf, for the fields xdsck reads.
//!
//! This is deliberately independent of xdsck's loaders: it builds prost messages field by field
//! so the protobuf path can be compared with the JSON path on the same data, and so the test xDS
//! server can serve listeners written as JSON. Any typed_config other than the ones built here
//! keeps its type URL and an empty body.

use envoy_types::pb::envoy::config::core::v3 as core;
use envoy_types::pb::envoy::config::listener::v3 as listener;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3 as hcm;
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3 as tcp;
use envoy_types::pb::google::protobuf::{Any, BoolValue, StringValue, UInt32Value};
use envoy_types::pb::xds::r#type::matcher::v3 as xm;
use prost::Message;
use serde_json::Value;

pub const LISTENER_TYPE: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

fn s(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn u32_of(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => n.as_u64().map(|n| n as u32),
        Value::String(s) => s.parse().ok(),
        Value::Object(o) => o.get("value").and_then(u32_of),
        _ => None,
    }
}

fn b_of(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Object(o) => o.get("value").and_then(Value::as_bool),
        _ => None,
    }
}

fn arr<'v>(v: &'v Value, k: &str) -> &'v [Value] {
    v.get(k).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn strings(v: &Value, k: &str) -> Vec<String> {
    arr(v, k).iter().filter_map(|x| x.as_str().map(str::to_owned)).collect()
}

fn any<M: Message>(type_url: &str, m: &M) -> Any {
    Any { type_url: type_url.to_owned(), value: m.encode_to_vec() }
}

/// A Listener resource as an Any.
pub fn listener_any(l: &Value) -> Any {
    any(LISTENER_TYPE, &listener(l))
}

pub fn listener(l: &Value) -> listener::Listener {
    listener::Listener {
        name: s(l, "name"),
        address: l.get("address").map(address),
        additional_addresses: arr(l, "additional_addresses")
            .iter()
            .map(|a| listener::AdditionalAddress { address: a.get("address").map(address), ..Default::default() })
            .collect(),
        filter_chains: arr(l, "filter_chains").iter().map(chain).collect(),
        default_filter_chain: l.get("default_filter_chain").map(chain),
        filter_chain_matcher: l.get("filter_chain_matcher").map(matcher),
        listener_filters: arr(l, "listener_filters")
            .iter()
            .map(|f| listener::ListenerFilter {
                name: s(f, "name"),
                config_type: f
                    .get("typed_config")
                    .map(|t| listener::listener_filter::ConfigType::TypedConfig(bare_any(t))),
                ..Default::default()
            })
            .collect(),
        use_original_dst: l.get("use_original_dst").and_then(b_of).map(|value| BoolValue { value }),
        bind_to_port: l.get("bind_to_port").and_then(b_of).map(|value| BoolValue { value }),
        enable_reuse_port: l.get("enable_reuse_port").and_then(b_of).map(|value| BoolValue { value }),
        listener_specifier: l
            .get("internal_listener")
            .map(|_| listener::listener::ListenerSpecifier::InternalListener(Default::default())),
        api_listener: l.get("api_listener").map(|_| Default::default()),
        udp_listener_config: l.get("udp_listener_config").map(|_| Default::default()),
        ..Default::default()
    }
}

fn bare_any(t: &Value) -> Any {
    Any { type_url: s(t, "@type"), value: Vec::new() }
}

fn address(a: &Value) -> core::Address {
    use core::address::Address as A;
    let inner = if let Some(sa) = a.get("socket_address") {
        let port = if let Some(p) = sa.get("port_value").and_then(u32_of) {
            Some(core::socket_address::PortSpecifier::PortValue(p))
        } else {
            sa.get("named_port")
                .and_then(Value::as_str)
                .map(|n| core::socket_address::PortSpecifier::NamedPort(n.into()))
        };
        Some(A::SocketAddress(core::SocketAddress {
            address: s(sa, "address"),
            port_specifier: port,
            protocol: if s(sa, "protocol") == "UDP" { 1 } else { 0 },
            ipv4_compat: sa.get("ipv4_compat").and_then(b_of).unwrap_or(false),
            resolver_name: s(sa, "resolver_name"),
            network_namespace_filepath: s(sa, "network_namespace_filepath"),
        }))
    } else if let Some(p) = a.get("pipe") {
        Some(A::Pipe(core::Pipe { path: s(p, "path"), mode: p.get("mode").and_then(u32_of).unwrap_or(0) }))
    } else {
        a.get("envoy_internal_address").map(|i| {
            A::EnvoyInternalAddress(core::EnvoyInternalAddress {
                address_name_specifier: Some(core::envoy_internal_address::AddressNameSpecifier::ServerListenerName(
                    s(i, "server_listener_name"),
                )),
                endpoint_id: s(i, "endpoint_id"),
            })
        })
    };
    core::Address { address: inner }
}

fn cidrs(v: &Value, k: &str) -> Vec<core::CidrRange> {
    arr(v, k)
        .iter()
        .map(|c| core::CidrRange {
            address_prefix: s(c, "address_prefix"),
            prefix_len: c.get("prefix_len").and_then(u32_of).map(|value| UInt32Value { value }),
        })
        .collect()
}

fn chain(c: &Value) -> listener::FilterChain {
    listener::FilterChain {
        name: s(c, "name"),
        filter_chain_match: c.get("filter_chain_match").map(|m| listener::FilterChainMatch {
            destination_port: m.get("destination_port").and_then(u32_of).map(|value| UInt32Value { value }),
            prefix_ranges: cidrs(m, "prefix_ranges"),
            address_suffix: s(m, "address_suffix"),
            suffix_len: m.get("suffix_len").and_then(u32_of).map(|value| UInt32Value { value }),
            direct_source_prefix_ranges: cidrs(m, "direct_source_prefix_ranges"),
            source_type: match m.get("source_type") {
                Some(Value::String(t)) if t == "SAME_IP_OR_LOOPBACK" => 1,
                Some(Value::String(t)) if t == "EXTERNAL" => 2,
                Some(Value::Number(n)) => n.as_i64().unwrap_or(0) as i32,
                _ => 0,
            },
            source_prefix_ranges: cidrs(m, "source_prefix_ranges"),
            source_ports: arr(m, "source_ports").iter().filter_map(u32_of).collect(),
            server_names: strings(m, "server_names"),
            transport_protocol: s(m, "transport_protocol"),
            application_protocols: strings(m, "application_protocols"),
        }),
        filters: arr(c, "filters").iter().map(filter).collect(),
        transport_socket: c.get("transport_socket").map(|t| core::TransportSocket {
            name: s(t, "name"),
            config_type: t.get("typed_config").map(|c| core::transport_socket::ConfigType::TypedConfig(bare_any(c))),
        }),
        ..Default::default()
    }
}

fn filter(f: &Value) -> listener::Filter {
    let config = f.get("typed_config").map(|t| {
        let url = s(t, "@type");
        if url.ends_with(".tcp_proxy.v3.TcpProxy") {
            let spec = if let Some(c) = t.get("cluster").and_then(Value::as_str) {
                Some(tcp::tcp_proxy::ClusterSpecifier::Cluster(c.into()))
            } else {
                t.get("weighted_clusters").map(|w| {
                    tcp::tcp_proxy::ClusterSpecifier::WeightedClusters(tcp::tcp_proxy::WeightedCluster {
                        clusters: arr(w, "clusters")
                            .iter()
                            .map(|c| tcp::tcp_proxy::weighted_cluster::ClusterWeight {
                                name: s(c, "name"),
                                weight: 1,
                                ..Default::default()
                            })
                            .collect(),
                    })
                })
            };
            any(
                &url,
                &tcp::TcpProxy { stat_prefix: s(t, "stat_prefix"), cluster_specifier: spec, ..Default::default() },
            )
        } else if url.ends_with(".http_connection_manager.v3.HttpConnectionManager") {
            use hcm::http_connection_manager::RouteSpecifier as R;
            let routes = if let Some(r) = t.get("rds") {
                Some(R::Rds(hcm::Rds { route_config_name: s(r, "route_config_name"), ..Default::default() }))
            } else if let Some(rc) = t.get("route_config") {
                Some(R::RouteConfig(envoy_types::pb::envoy::config::route::v3::RouteConfiguration {
                    name: s(rc, "name"),
                    virtual_hosts: arr(rc, "virtual_hosts")
                        .iter()
                        .map(|v| envoy_types::pb::envoy::config::route::v3::VirtualHost {
                            name: s(v, "name"),
                            domains: strings(v, "domains"),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }))
            } else {
                t.get("scoped_routes").map(|_| R::ScopedRoutes(Default::default()))
            };
            any(
                &url,
                &hcm::HttpConnectionManager {
                    stat_prefix: s(t, "stat_prefix"),
                    route_specifier: routes,
                    ..Default::default()
                },
            )
        } else {
            bare_any(t)
        }
    });
    listener::Filter { name: s(f, "name"), config_type: config.map(listener::filter::ConfigType::TypedConfig) }
}

// filter_chain_matcher. ServerNameMatcher / IPMatcher are not in envoy-types: core declares them.

use xdsck_core::load::proto::{DomainMatcher, IpMatcher, IpRangeMatcher, ServerNameMatcher};

fn ext(v: &Value) -> envoy_types::pb::xds::core::v3::TypedExtensionConfig {
    let t = v.get("typed_config").cloned().unwrap_or(Value::Null);
    let url = s(&t, "@type");
    let typed = if url.ends_with("google.protobuf.StringValue") {
        any(&url, &StringValue { value: s(&t, "value") })
    } else if url.ends_with("xds.type.matcher.v3.ServerNameMatcher") {
        let m = ServerNameMatcher {
            domain_matchers: arr(&t, "domain_matchers")
                .iter()
                .map(|d| DomainMatcher { domains: strings(d, "domains"), on_match: d.get("on_match").map(on_match) })
                .collect(),
        };
        any(&url, &m)
    } else if url.ends_with("xds.type.matcher.v3.IPMatcher") {
        let m = IpMatcher {
            range_matchers: arr(&t, "range_matchers")
                .iter()
                .map(|r| IpRangeMatcher {
                    ranges: arr(r, "ranges")
                        .iter()
                        .map(|c| envoy_types::pb::xds::core::v3::CidrRange {
                            address_prefix: s(c, "address_prefix"),
                            prefix_len: c.get("prefix_len").and_then(u32_of).map(|value| UInt32Value { value }),
                        })
                        .collect(),
                    on_match: r.get("on_match").map(on_match),
                    exclusive: r.get("exclusive").and_then(b_of).unwrap_or(false),
                })
                .collect(),
        };
        any(&url, &m)
    } else {
        bare_any(&t)
    };
    envoy_types::pb::xds::core::v3::TypedExtensionConfig { name: s(v, "name"), typed_config: Some(typed) }
}

fn on_match(v: &Value) -> xm::matcher::OnMatch {
    use xm::matcher::on_match::OnMatch as O;
    let inner = if let Some(m) = v.get("matcher") {
        Some(O::Matcher(Box::new(matcher(m))))
    } else {
        v.get("action").map(|a| O::Action(ext(a)))
    };
    xm::matcher::OnMatch { keep_matching: v.get("keep_matching").and_then(b_of).unwrap_or(false), on_match: inner }
}

fn predicate(v: &Value) -> xm::matcher::matcher_list::Predicate {
    use xm::matcher::matcher_list::predicate::{self as p, MatchType as M};
    let list = |l: &Value| p::PredicateList { predicate: arr(l, "predicate").iter().map(predicate).collect() };
    let t = if let Some(sp) = v.get("single_predicate") {
        let vm = sp.get("value_match").map(|m| {
            use xm::string_matcher::MatchPattern as P;
            let pat = [("exact", 0), ("prefix", 1), ("suffix", 2), ("contains", 3)].iter().find_map(|(k, i)| {
                let x = m.get(*k)?.as_str()?.to_owned();
                Some(match i {
                    0 => P::Exact(x),
                    1 => P::Prefix(x),
                    2 => P::Suffix(x),
                    _ => P::Contains(x),
                })
            });
            p::single_predicate::Matcher::ValueMatch(xm::StringMatcher {
                match_pattern: pat,
                ignore_case: m.get("ignore_case").and_then(b_of).unwrap_or(false),
            })
        });
        Some(M::SinglePredicate(p::SinglePredicate { input: sp.get("input").map(ext), matcher: vm }))
    } else if let Some(l) = v.get("or_matcher") {
        Some(M::OrMatcher(list(l)))
    } else if let Some(l) = v.get("and_matcher") {
        Some(M::AndMatcher(list(l)))
    } else {
        v.get("not_matcher").map(|n| M::NotMatcher(Box::new(predicate(n))))
    };
    xm::matcher::matcher_list::Predicate { match_type: t }
}

pub fn matcher(v: &Value) -> xm::Matcher {
    use xm::matcher::MatcherType as T;
    use xm::matcher::matcher_tree::TreeType as TT;
    let t = if let Some(l) = v.get("matcher_list") {
        Some(T::MatcherList(xm::matcher::MatcherList {
            matchers: arr(l, "matchers")
                .iter()
                .map(|f| xm::matcher::matcher_list::FieldMatcher {
                    predicate: f.get("predicate").map(predicate),
                    on_match: f.get("on_match").map(on_match),
                })
                .collect(),
        }))
    } else {
        v.get("matcher_tree").map(|t| {
            let map = |m: &Value| xm::matcher::matcher_tree::MatchMap {
                map: m
                    .get("map")
                    .and_then(Value::as_object)
                    .map(|o| o.iter().map(|(k, v)| (k.clone(), on_match(v))).collect())
                    .unwrap_or_default(),
            };
            let tree_type = if let Some(m) = t.get("exact_match_map") {
                Some(TT::ExactMatchMap(map(m)))
            } else if let Some(m) = t.get("prefix_match_map") {
                Some(TT::PrefixMatchMap(map(m)))
            } else {
                t.get("custom_match").map(|c| TT::CustomMatch(ext(c)))
            };
            T::MatcherTree(xm::matcher::MatcherTree { input: t.get("input").map(ext), tree_type })
        })
    };
    xm::Matcher { matcher_type: t, on_no_match: v.get("on_no_match").map(|m| Box::new(on_match(m))) }
}

/// Rewrites every camelCase key to snake_case (proto3 JSON accepts both), except the keys of a
/// matcher's `map`, which are data.
pub fn snake_keys(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let old = std::mem::take(o);
            for (k, mut val) in old {
                if k != "map" {
                    snake_keys(&mut val);
                } else if let Value::Object(m) = &mut val {
                    for x in m.values_mut() {
                        snake_keys(x);
                    }
                }
                let key = if k.starts_with('@') {
                    k
                } else {
                    let mut out = String::new();
                    for c in k.chars() {
                        if c.is_ascii_uppercase() {
                            out.push('_');
                            out.push(c.to_ascii_lowercase());
                        } else {
                            out.push(c);
                        }
                    }
                    out
                };
                o.insert(key, val);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(snake_keys),
        _ => {}
    }
}
