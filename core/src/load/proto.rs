//! Listener protobufs (from a live xDS stream) into the model. Behind the `proto` feature.
//!
//! The model is the one the JSON loaders build, field for field, so the checks cannot tell the
//! two apart; only positions differ: a protobuf has no text, so a listener gets the pointer its
//! resource would have in the DiscoveryResponse's JSON (`/resources/N`) and no offset.
//! `typed_config` Anys are decoded by comparing the type URL's last segment with the message's
//! full name. `filter_chain_matcher` is rendered to the proto3 JSON the matcher module reads.

use std::borrow::Cow;

use envoy_types::pb::envoy::config::core::v3 as core;
use envoy_types::pb::envoy::config::listener::v3 as listener;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3 as hcm;
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3 as tcp_proxy;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryResponse, Resource};
use envoy_types::pb::google::protobuf::Any;
use envoy_types::pb::xds::r#type::matcher::v3 as xm;
use prost::{Message, Name};
use serde_json::{Map, Value, json};

use super::codes;
use crate::diagnostic::Diagnostic;
use crate::model::{
    Address, Casing, ChainIndex, CidrRange, FilterChain, FilterChainMatch, Input, InputKind, Listener, ListenerFilter,
    NetworkFilter, NetworkFilterKind, Protocol, RouteSource, Skipped, SkippedKind, SocketAddress, SourceType,
    TransportSocket, VirtualHost,
};
use crate::source::{Location, SourceId};

/// Whether `any` holds a `T`: the type URL's last segment is `T`'s full name (the prefix is
/// free-form, as the Any spec says).
pub fn is<T: Name>(any: &Any) -> bool {
    any.type_url.rsplit('/').next() == Some(T::full_name().as_str())
}

fn decode<T: Message + Name + Default>(any: &Any) -> Option<T> {
    if is::<T>(any) { T::decode(any.value.as_slice()).ok() } else { None }
}

/// Loads the Listener resources of a DiscoveryResponse, also those wrapped in a
/// `service.discovery.v3.Resource` (TTLs, named resources). Resources of another type are
/// counted in `skipped`; one that claims to be a Listener but does not decode is an `XDS006`
/// diagnostic at its pointer (the caller still has every other listener).
pub fn load_resources(id: SourceId, resources: &[Any]) -> (Input<'static>, Vec<Diagnostic>) {
    let mut input = Input {
        source: id,
        kind: InputKind::DiscoveryResponse,
        listeners: Vec::with_capacity(resources.len()),
        error_states: Vec::new(),
        skipped: Vec::new(),
    };
    let mut problems = Vec::new();
    for (i, any) in resources.iter().enumerate() {
        let mut pointer = format!("/resources/{i}");
        let wrapped = decode::<Resource>(any).and_then(|r| r.resource);
        if wrapped.is_some() {
            pointer.push_str("/resource");
        }
        let any = wrapped.as_ref().unwrap_or(any);
        if !is::<listener::Listener>(any) {
            let what = any.type_url.rsplit(['/', '.']).next().unwrap_or(&any.type_url).to_owned();
            input.skipped.push(Skipped { kind: SkippedKind::Resource, what, pointer, offset: None });
            continue;
        }
        match listener::Listener::decode(any.value.as_slice()) {
            Ok(l) => input.listeners.push(from_listener(&l, pointer)),
            Err(e) => problems.push(
                Diagnostic::new(&codes::WRONG_TYPE, format!("resource {i} is not a valid Listener protobuf: {e}"))
                    .at(Location::new(id, pointer, None)),
            ),
        }
    }
    (input, problems)
}

/// Loads an encoded DiscoveryResponse.
pub fn load_discovery_response(id: SourceId, bytes: &[u8]) -> (Input<'static>, Vec<Diagnostic>) {
    match DiscoveryResponse::decode(bytes) {
        Ok(r) => load_resources(id, &r.resources),
        Err(e) => {
            let input = Input {
                source: id,
                kind: InputKind::DiscoveryResponse,
                listeners: Vec::new(),
                error_states: Vec::new(),
                skipped: Vec::new(),
            };
            let d = Diagnostic::new(&codes::WRONG_TYPE, format!("not a DiscoveryResponse protobuf: {e}"))
                .at(Location::new(id, "", None));
            (input, vec![d])
        }
    }
}

fn own(s: &str) -> Cow<'static, str> {
    Cow::Owned(s.to_owned())
}

/// One Listener protobuf as the model.
pub fn from_listener(l: &listener::Listener, pointer: String) -> Listener<'static> {
    Listener {
        name: own(&l.name),
        pointer,
        offset: None,
        casing: Casing::Snake,
        address: l.address.as_ref().and_then(address),
        additional_addresses: l
            .additional_addresses
            .iter()
            .filter_map(|a| a.address.as_ref().and_then(address))
            .collect(),
        bind_to_port: l.bind_to_port.map(|b| b.value),
        use_original_dst: l.use_original_dst.is_some_and(|b| b.value),
        enable_reuse_port: l.enable_reuse_port.map(|b| b.value),
        listener_filters: l
            .listener_filters
            .iter()
            .map(|f| ListenerFilter {
                name: own(&f.name),
                type_url: match &f.config_type {
                    Some(listener::listener_filter::ConfigType::TypedConfig(a)) => Some(own(&a.type_url)),
                    _ => None,
                },
            })
            .collect(),
        filter_chains: l.filter_chains.iter().enumerate().map(|(i, c)| chain(c, ChainIndex::Listed(i))).collect(),
        default_filter_chain: l.default_filter_chain.as_ref().map(|c| chain(c, ChainIndex::Default)),
        filter_chain_matcher: l.filter_chain_matcher.as_ref().map(|m| super::matcher::read(&matcher(m), None)),
        internal_listener: matches!(
            l.listener_specifier,
            Some(listener::listener::ListenerSpecifier::InternalListener(_))
        ),
        api_listener: l.api_listener.is_some(),
        udp_listener_config: l.udp_listener_config.is_some(),
        ..Listener::default()
    }
}

fn address(a: &core::Address) -> Option<Address<'static>> {
    use core::address::Address as A;
    Some(match a.address.as_ref()? {
        A::SocketAddress(s) => Address::Socket(SocketAddress {
            address: own(&s.address),
            port_value: match &s.port_specifier {
                Some(core::socket_address::PortSpecifier::PortValue(p)) => Some(*p),
                _ => None,
            },
            named_port: match &s.port_specifier {
                Some(core::socket_address::PortSpecifier::NamedPort(n)) => Some(own(n)),
                _ => None,
            },
            protocol: if s.protocol == core::socket_address::Protocol::Udp as i32 {
                Protocol::Udp
            } else {
                Protocol::Tcp
            },
            ipv4_compat: s.ipv4_compat,
            resolver_name: (!s.resolver_name.is_empty()).then(|| own(&s.resolver_name)),
            network_namespace_filepath: (!s.network_namespace_filepath.is_empty())
                .then(|| own(&s.network_namespace_filepath)),
        }),
        A::Pipe(p) => Address::Pipe { path: own(&p.path), mode: (p.mode != 0).then_some(p.mode) },
        A::EnvoyInternalAddress(i) => Address::EnvoyInternal {
            server_listener_name: match &i.address_name_specifier {
                Some(core::envoy_internal_address::AddressNameSpecifier::ServerListenerName(n)) => own(n),
                None => Cow::Borrowed(""),
            },
            endpoint_id: own(&i.endpoint_id),
        },
    })
}

fn cidrs(v: &[core::CidrRange]) -> Vec<CidrRange<'static>> {
    v.iter()
        .map(|c| CidrRange { address_prefix: own(&c.address_prefix), prefix_len: c.prefix_len.map(|l| l.value) })
        .collect()
}

fn chain(c: &listener::FilterChain, index: ChainIndex) -> FilterChain<'static> {
    FilterChain {
        name: own(&c.name),
        index,
        offset: None,
        name_offset: None,
        casing: Casing::Snake,
        filter_chain_match: c.filter_chain_match.as_ref().map(|m| FilterChainMatch {
            offset: None,
            casing: Casing::Snake,
            destination_port: m.destination_port.map(|p| p.value),
            prefix_ranges: cidrs(&m.prefix_ranges),
            address_suffix: own(&m.address_suffix),
            suffix_len: m.suffix_len.map(|l| l.value),
            direct_source_prefix_ranges: cidrs(&m.direct_source_prefix_ranges),
            source_type: match m.source_type {
                1 => SourceType::SameIpOrLoopback,
                2 => SourceType::External,
                _ => SourceType::Any,
            },
            source_prefix_ranges: cidrs(&m.source_prefix_ranges),
            source_ports: m.source_ports.clone(),
            server_names: m.server_names.iter().map(|s| own(s)).collect(),
            transport_protocol: own(&m.transport_protocol),
            application_protocols: m.application_protocols.iter().map(|s| own(s)).collect(),
        }),
        filters: c.filters.iter().map(filter).collect(),
        transport_socket: c.transport_socket.as_ref().map(|t| TransportSocket {
            name: own(&t.name),
            type_url: t.config_type.as_ref().map(|core::transport_socket::ConfigType::TypedConfig(a)| own(&a.type_url)),
        }),
    }
}

fn filter(f: &listener::Filter) -> NetworkFilter<'static> {
    let any = match &f.config_type {
        Some(listener::filter::ConfigType::TypedConfig(a)) => Some(a),
        _ => None,
    };
    // As the JSON loader does: the type decides when there is one, else the filter's name.
    let tcp = any.map_or(f.name == "envoy.filters.network.tcp_proxy", is::<tcp_proxy::TcpProxy>);
    let http = any.map_or(f.name == "envoy.filters.network.http_connection_manager", is::<hcm::HttpConnectionManager>);
    let kind = if tcp {
        match any.and_then(decode::<tcp_proxy::TcpProxy>) {
            Some(t) => {
                let mut clusters = Vec::new();
                match &t.cluster_specifier {
                    Some(tcp_proxy::tcp_proxy::ClusterSpecifier::Cluster(c)) => clusters.push(own(c)),
                    Some(tcp_proxy::tcp_proxy::ClusterSpecifier::WeightedClusters(w)) => {
                        clusters.extend(w.clusters.iter().map(|c| own(&c.name)));
                    }
                    None => {}
                }
                NetworkFilterKind::TcpProxy {
                    clusters,
                    stat_prefix: Some(own(&t.stat_prefix)).filter(|s| !s.is_empty()),
                }
            }
            None => NetworkFilterKind::TcpProxy { clusters: Vec::new(), stat_prefix: None },
        }
    } else if http {
        match any.and_then(decode::<hcm::HttpConnectionManager>) {
            Some(h) => {
                use hcm::http_connection_manager::RouteSpecifier as R;
                let routes = match &h.route_specifier {
                    Some(R::Rds(r)) => RouteSource::Rds { route_config_name: own(&r.route_config_name) },
                    Some(R::RouteConfig(rc)) => RouteSource::Inline {
                        name: (!rc.name.is_empty()).then(|| own(&rc.name)),
                        virtual_hosts: rc
                            .virtual_hosts
                            .iter()
                            .map(|v| VirtualHost {
                                name: own(&v.name),
                                domains: v.domains.iter().map(|d| own(d)).collect(),
                            })
                            .collect(),
                    },
                    Some(R::ScopedRoutes(_)) => RouteSource::Scoped,
                    None => RouteSource::None,
                };
                NetworkFilterKind::HttpConnectionManager {
                    stat_prefix: Some(own(&h.stat_prefix)).filter(|s| !s.is_empty()),
                    routes,
                }
            }
            None => NetworkFilterKind::HttpConnectionManager { stat_prefix: None, routes: RouteSource::None },
        }
    } else {
        NetworkFilterKind::Other
    };
    NetworkFilter { name: own(&f.name), type_url: any.map(|a| own(&a.type_url)), kind }
}

// ---------------------------------------------------------------------------------------------
// filter_chain_matcher → proto3 JSON (snake_case), as graph::matcher reads it.
//
// `xds.type.matcher.v3.ServerNameMatcher` and `IPMatcher` are not in envoy-types; their two
// small messages are declared here from xds' `domain.proto` and `ip.proto` (public: tests that
// build protobuf listeners encode them with these).

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerNameMatcher {
    #[prost(message, repeated, tag = "1")]
    pub domain_matchers: Vec<DomainMatcher>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DomainMatcher {
    #[prost(string, repeated, tag = "1")]
    pub domains: Vec<String>,
    #[prost(message, optional, tag = "2")]
    pub on_match: Option<xm::matcher::OnMatch>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct IpMatcher {
    #[prost(message, repeated, tag = "1")]
    pub range_matchers: Vec<IpRangeMatcher>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct IpRangeMatcher {
    #[prost(message, repeated, tag = "1")]
    pub ranges: Vec<envoy_types::pb::xds::core::v3::CidrRange>,
    #[prost(message, optional, tag = "2")]
    pub on_match: Option<xm::matcher::OnMatch>,
    #[prost(bool, tag = "3")]
    pub exclusive: bool,
}

fn last_segment(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

/// An Any as proto3 JSON: its `@type`, plus the fields xdsck reads for the types it knows.
fn any_json(a: &Any) -> Value {
    let mut obj = Map::new();
    obj.insert("@type".into(), Value::String(a.type_url.clone()));
    match last_segment(&a.type_url) {
        "google.protobuf.StringValue" => {
            if let Ok(s) = envoy_types::pb::google::protobuf::StringValue::decode(a.value.as_slice()) {
                obj.insert("value".into(), Value::String(s.value));
            }
        }
        "xds.type.matcher.v3.ServerNameMatcher" => {
            if let Ok(m) = ServerNameMatcher::decode(a.value.as_slice()) {
                let dms: Vec<Value> = m
                    .domain_matchers
                    .iter()
                    .map(|d| {
                        let mut o = json!({"domains": d.domains});
                        if let Some(om) = &d.on_match {
                            o["on_match"] = on_match(om);
                        }
                        o
                    })
                    .collect();
                obj.insert("domain_matchers".into(), Value::Array(dms));
            }
        }
        "xds.type.matcher.v3.IPMatcher" => {
            if let Ok(m) = IpMatcher::decode(a.value.as_slice()) {
                let rms: Vec<Value> = m
                    .range_matchers
                    .iter()
                    .map(|r| {
                        let ranges: Vec<Value> = r
                            .ranges
                            .iter()
                            .map(|c| {
                                let mut o = json!({"address_prefix": c.address_prefix});
                                if let Some(l) = c.prefix_len {
                                    o["prefix_len"] = json!(l.value);
                                }
                                o
                            })
                            .collect();
                        let mut o = json!({"ranges": ranges});
                        if r.exclusive {
                            o["exclusive"] = json!(true);
                        }
                        if let Some(om) = &r.on_match {
                            o["on_match"] = on_match(om);
                        }
                        o
                    })
                    .collect();
                obj.insert("range_matchers".into(), Value::Array(rms));
            }
        }
        _ => {}
    }
    Value::Object(obj)
}

fn extension(e: &envoy_types::pb::xds::core::v3::TypedExtensionConfig) -> Value {
    let mut o = json!({"name": e.name});
    if let Some(a) = &e.typed_config {
        o["typed_config"] = any_json(a);
    }
    o
}

fn on_match(m: &xm::matcher::OnMatch) -> Value {
    use xm::matcher::on_match::OnMatch as O;
    let mut o = match &m.on_match {
        Some(O::Matcher(inner)) => json!({"matcher": matcher(inner)}),
        Some(O::Action(a)) => json!({"action": extension(a)}),
        None => json!({}),
    };
    if m.keep_matching {
        o["keep_matching"] = json!(true);
    }
    o
}

fn string_matcher(s: &xm::StringMatcher) -> Value {
    use xm::string_matcher::MatchPattern as P;
    let mut o = match &s.match_pattern {
        Some(P::Exact(v)) => json!({"exact": v}),
        Some(P::Prefix(v)) => json!({"prefix": v}),
        Some(P::Suffix(v)) => json!({"suffix": v}),
        Some(P::Contains(v)) => json!({"contains": v}),
        Some(P::SafeRegex(r)) => json!({"safe_regex": {"regex": r.regex}}),
        Some(P::Custom(c)) => json!({"custom": extension(c)}),
        None => json!({}),
    };
    if s.ignore_case {
        o["ignore_case"] = json!(true);
    }
    o
}

fn predicate(p: &xm::matcher::matcher_list::Predicate) -> Value {
    use xm::matcher::matcher_list::predicate::MatchType as M;
    use xm::matcher::matcher_list::predicate::single_predicate::Matcher as SM;
    match &p.match_type {
        Some(M::SinglePredicate(s)) => {
            let mut o = json!({});
            if let Some(i) = &s.input {
                o["input"] = extension(i);
            }
            match &s.matcher {
                Some(SM::ValueMatch(v)) => o["value_match"] = string_matcher(v),
                Some(SM::CustomMatch(c)) => o["custom_match"] = extension(c),
                None => {}
            }
            json!({"single_predicate": o})
        }
        Some(M::OrMatcher(l)) => {
            json!({"or_matcher": {"predicate": l.predicate.iter().map(predicate).collect::<Vec<_>>()}})
        }
        Some(M::AndMatcher(l)) => {
            json!({"and_matcher": {"predicate": l.predicate.iter().map(predicate).collect::<Vec<_>>()}})
        }
        Some(M::NotMatcher(n)) => json!({"not_matcher": predicate(n)}),
        None => json!({}),
    }
}

fn matcher(m: &xm::Matcher) -> Value {
    use xm::matcher::MatcherType as T;
    use xm::matcher::matcher_tree::TreeType as TT;
    let mut o = match &m.matcher_type {
        Some(T::MatcherList(l)) => {
            let matchers: Vec<Value> = l
                .matchers
                .iter()
                .map(|f| {
                    let mut o = json!({});
                    if let Some(p) = &f.predicate {
                        o["predicate"] = predicate(p);
                    }
                    if let Some(om) = &f.on_match {
                        o["on_match"] = on_match(om);
                    }
                    o
                })
                .collect();
            json!({"matcher_list": {"matchers": matchers}})
        }
        Some(T::MatcherTree(t)) => {
            let mut tree = json!({});
            if let Some(i) = &t.input {
                tree["input"] = extension(i);
            }
            let map = |mm: &xm::matcher::matcher_tree::MatchMap| {
                // A protobuf map has no order; sorted keys keep the output the same run to run.
                let mut keys: Vec<&String> = mm.map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), on_match(&mm.map[k]));
                }
                json!({"map": out})
            };
            match &t.tree_type {
                Some(TT::ExactMatchMap(mm)) => tree["exact_match_map"] = map(mm),
                Some(TT::PrefixMatchMap(mm)) => tree["prefix_match_map"] = map(mm),
                Some(TT::CustomMatch(c)) => tree["custom_match"] = extension(c),
                None => {}
            }
            json!({"matcher_tree": tree})
        }
        None => json!({}),
    };
    if let Some(n) = &m.on_no_match {
        o["on_no_match"] = on_match(n);
    }
    o
}
