//! Listener protobufs (from a live xDS stream) into the model. Behind the `proto` feature.
//!
//! The model is the one the JSON loaders build, field for field, so the checks cannot tell the
//! two apart; only positions differ: a protobuf has no text, so a listener gets the pointer its
//! resource would have in the DiscoveryResponse's JSON (`/resources/N`) and no offset.
//! `typed_config` Anys are decoded by comparing the type URL's last segment with the message's
//! full name. `filter_chain_matcher` is typed straight from the messages, with the pointers its parts
//! would have in the resource's proto3 JSON.

use std::borrow::Cow;

use envoy_types::pb::envoy::config::core::v3 as core;
use envoy_types::pb::envoy::config::listener::v3 as listener;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3 as hcm;
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3 as tcp_proxy;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3 as tls;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryResponse, Resource};
use envoy_types::pb::google::protobuf::Any;
use envoy_types::pb::xds::r#type::matcher::v3 as xm;
use prost::{Message, Name};

use super::codes;
use crate::diagnostic::Diagnostic;
use crate::model::matcher::{
    FilterChainMatcher, Input as MatcherInput, Matcher, MatcherAction, OnMatch, Predicate, RangeMatcher,
    ServerNameMatcherParts, StringMatch, StringMatcher, Then, Tree,
};
use crate::model::{
    Address, Casing, ChainIndex, CidrRange, FilterChain, FilterChainMatch, Input, InputKind, Listener, ListenerFilter,
    NetworkFilter, NetworkFilterKind, Protocol, RouteSource, Skipped, SkippedKind, SocketAddress, SourceType,
    TransportSocket, VirtualHost,
};
use crate::source::{Location, Pointer, SourceId};

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
        // Protobuf inputs' route tables are not read (XDS304 says so), nor their clusters:
        // both stay other resources.
        clusters: None,
        route_tables: 0,
        translation: None,
        problems: Vec::new(),
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
            input.skipped.push(Skipped { kind: SkippedKind::Resource, what, pointer: pointer.into(), offset: None });
            continue;
        }
        match listener::Listener::decode(any.value.as_slice()) {
            Ok(l) => input.listeners.push(from_listener(&l, pointer)),
            Err(e) => problems.push(
                Diagnostic::new(&codes::INVALID_FIELD, format!("resource {i} is not a valid Listener protobuf: {e}"))
                    .at(Location::new(id, pointer, None)),
            ),
        }
    }
    problems.extend(routes_not_read(&input));
    (input, problems)
}

/// Route tables are read from JSON text only (`load::route`): the HTTP routes of a protobuf
/// input get no route checks and no trace, which must not read as "all clear". One info
/// finding, at the first HCM that has routes, says so for the whole input.
fn routes_not_read(input: &Input<'_>) -> Option<Diagnostic> {
    let mut hcms = input.listeners.iter().flat_map(|l| {
        l.filter_chains.iter().chain(&l.default_filter_chain).filter_map(move |c| {
            c.filters
                .iter()
                .position(|f| {
                    matches!(
                        &f.kind,
                        NetworkFilterKind::HttpConnectionManager {
                            routes: RouteSource::Inline { .. } | RouteSource::Rds { .. },
                            ..
                        }
                    )
                })
                .map(|i| format!("{}/filters/{i}/typed_config", l.chain_pointer(c)))
        })
    });
    let first = hcms.next()?;
    let others = hcms.count();
    let tables = input.skipped.iter().filter(|s| s.what == "RouteConfiguration").count();
    let mut note = String::from(
        "route tables are read from JSON input only; give the config_dump or the DiscoveryResponses as JSON to check them",
    );
    if others > 0 {
        note.push_str(&format!(" ({} more http_connection_manager filters here are not analysed either)", others));
    }
    let mut d = Diagnostic::new(
        &crate::checks::ROUTE_NOT_ANALYSED,
        "the route tables of this protobuf input were not read: its http_connection_manager routes are not checked",
    )
    .at(Location::new(input.source, first, None))
    .note(note);
    if tables > 0 {
        d = d.note(format!("{tables} RouteConfiguration resources of this response are not checked"));
    }
    Some(d)
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
                clusters: None,
                route_tables: 0,
                translation: None,
                problems: Vec::new(),
            };
            let d = Diagnostic::new(&codes::INVALID_FIELD, format!("not a DiscoveryResponse protobuf: {e}"))
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
        pointer: pointer.into(),
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
        filter_chain_matcher: l.filter_chain_matcher.as_ref().map(filter_chain_matcher),
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
        transport_socket: c.transport_socket.as_ref().map(|t| {
            let any = t.config_type.as_ref().map(|core::transport_socket::ConfigType::TypedConfig(a)| a);
            let tls = any.and_then(decode::<tls::DownstreamTlsContext>);
            let alpn = tls.and_then(|t| t.common_tls_context).map(|c| c.alpn_protocols).unwrap_or_default();
            TransportSocket {
                name: own(&t.name),
                type_url: any.map(|a| own(&a.type_url)),
                alpn_protocols: alpn.into_iter().map(Cow::Owned).collect(),
            }
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
// filter_chain_matcher → the typed model.
//
// `xds.type.matcher.v3.ServerNameMatcher` and `IPMatcher` are not in envoy-types; their two
// small messages are declared here from xds' `domain.proto` and `ip.proto` (public: tests that
// build protobuf listeners encode them with these).

/// `xds.type.matcher.v3.ServerNameMatcher`: a custom matcher on the SNI, most specific domain
/// first, as Envoy's filter_chain_matcher runs it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerNameMatcher {
    /// The domain groups, each with its action.
    #[prost(message, repeated, tag = "1")]
    pub domain_matchers: Vec<DomainMatcher>,
}

/// One group of a [`ServerNameMatcher`]: domains that share an action.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DomainMatcher {
    /// Exact names or `*.`-prefixed wildcards (`*` alone takes every name).
    #[prost(string, repeated, tag = "1")]
    pub domains: Vec<String>,
    /// What a connection whose SNI one of the domains takes leads to.
    #[prost(message, optional, tag = "2")]
    pub on_match: Option<xm::matcher::OnMatch>,
}

/// `xds.type.matcher.v3.IPMatcher`: a custom matcher on an address, longest prefix first.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IpMatcher {
    /// The range groups, each with its action.
    #[prost(message, repeated, tag = "1")]
    pub range_matchers: Vec<IpRangeMatcher>,
}

/// One group of an [`IpMatcher`]: CIDR ranges that share an action.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IpRangeMatcher {
    /// The ranges; an address is in the group when any of them holds it.
    #[prost(message, repeated, tag = "1")]
    pub ranges: Vec<envoy_types::pb::xds::core::v3::CidrRange>,
    /// What an address in the ranges leads to.
    #[prost(message, optional, tag = "2")]
    pub on_match: Option<xm::matcher::OnMatch>,
    /// Tried only as the longest range that holds the address: when a longer range held it but
    /// led nowhere, this one is skipped instead of tried next.
    #[prost(bool, tag = "3")]
    pub exclusive: bool,
}

fn last_segment(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

type Extension = envoy_types::pb::xds::core::v3::TypedExtensionConfig;

/// The chain name a `google.protobuf.StringValue` action holds (empty when it does not decode).
fn string_value(a: &Any) -> String {
    envoy_types::pb::google::protobuf::StringValue::decode(a.value.as_slice()).map(|s| s.value).unwrap_or_default()
}

/// The typed matcher, and its actions and ServerNameMatchers with the pointers they have in the
/// resource's proto3 JSON (snake_case), as [`super::matcher::read`] gives them for JSON input.
fn filter_chain_matcher(m: &xm::Matcher) -> FilterChainMatcher {
    let mut parts = ProtoParts::default();
    parts.matcher(m, String::new());
    FilterChainMatcher {
        tree: typed_matcher(m, &Pointer::root()),
        actions: parts.actions,
        server_name_matchers: parts.server_name_matchers,
        offset: None,
    }
}

// The typed tree. Its errors are the JSON reader's (`load::matcher`), for the same message.

// Each node's pointer is the one the resource's proto3 JSON gives it (snake_case, as
// `ProtoParts` below spells them), so a protobuf matcher is located like its JSON.

fn typed_matcher(m: &xm::Matcher, at: &Pointer) -> Result<Matcher, String> {
    use xm::matcher::MatcherType as T;
    let on_no_match = match &m.on_no_match {
        Some(n) => Some(Box::new(typed_on_match(n, &at.join("on_no_match"))?)),
        None => None,
    };
    let tree = match &m.matcher_type {
        Some(T::MatcherList(l)) => {
            let list_at = at.join("matcher_list").join("matchers");
            let mut out = Vec::with_capacity(l.matchers.len());
            for (i, f) in l.matchers.iter().enumerate() {
                let p = f.predicate.as_ref().ok_or("a field matcher has no predicate")?;
                let o = f.on_match.as_ref().ok_or("a field matcher has no on_match")?;
                out.push((typed_predicate(p)?, typed_on_match(o, &list_at.join_index(i).join("on_match"))?));
            }
            Tree::List(out)
        }
        Some(T::MatcherTree(t)) => typed_tree(t, &at.join("matcher_tree"))?,
        None => return Err("a matcher has neither matcher_list nor matcher_tree".to_owned()),
    };
    Ok(Matcher { tree, on_no_match, at: at.clone() })
}

fn typed_tree(t: &xm::matcher::MatcherTree, at: &Pointer) -> Result<Tree, String> {
    use xm::matcher::matcher_tree::TreeType as TT;
    let input = typed_input(t.input.as_ref().ok_or("matcher_tree has no input")?)?;
    let map = |mm: &xm::matcher::matcher_tree::MatchMap, at: Pointer| -> Result<Vec<(String, OnMatch)>, String> {
        // A protobuf map has no order; sorted keys keep the output the same run to run.
        let mut entries: Vec<(&String, &xm::matcher::OnMatch)> = mm.map.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let at = at.join("map");
        entries.into_iter().map(|(k, v)| Ok((k.clone(), typed_on_match(v, &at.join(k))?))).collect()
    };
    let custom = match &t.tree_type {
        Some(TT::ExactMatchMap(mm)) => return Ok(Tree::Exact { input, map: map(mm, at.join("exact_match_map"))? }),
        Some(TT::PrefixMatchMap(mm)) => {
            return Ok(Tree::Prefix { input, map: map(mm, at.join("prefix_match_map"))? });
        }
        Some(TT::CustomMatch(c)) => c,
        None => return Err("matcher_tree has no exact_match_map, prefix_match_map or custom_match".to_owned()),
    };
    let config = custom.typed_config.as_ref().ok_or("custom_match has no typed_config")?;
    let config_at = at.join("custom_match").join("typed_config");
    match last_segment(&config.type_url) {
        "xds.type.matcher.v3.ServerNameMatcher" => {
            let mut domain_matchers = Vec::new();
            let dms = ServerNameMatcher::decode(config.value.as_slice()).unwrap_or_default().domain_matchers;
            for (i, dm) in dms.into_iter().enumerate() {
                let om = dm.on_match.as_ref().ok_or("a domain matcher has no on_match")?;
                let on_match = typed_on_match(om, &config_at.join("domain_matchers").join_index(i).join("on_match"))?;
                domain_matchers.push((dm.domains, on_match));
            }
            Ok(Tree::ServerName { input, domain_matchers })
        }
        "xds.type.matcher.v3.IPMatcher" => {
            let mut range_matchers = Vec::new();
            let rms = IpMatcher::decode(config.value.as_slice()).unwrap_or_default().range_matchers;
            for (i, rm) in rms.into_iter().enumerate() {
                let mut ranges = Vec::new();
                for r in &rm.ranges {
                    ranges.push(typed_cidr(r)?);
                }
                let om = rm.on_match.as_ref().ok_or("a range matcher has no on_match")?;
                let on_match = typed_on_match(om, &config_at.join("range_matchers").join_index(i).join("on_match"))?;
                range_matchers.push(RangeMatcher { ranges, exclusive: rm.exclusive, on_match });
            }
            Ok(Tree::Ip { input, range_matchers })
        }
        other => Err(format!("custom_match {other} is not supported")),
    }
}

fn typed_cidr(r: &envoy_types::pb::xds::core::v3::CidrRange) -> Result<ipnet::IpNet, String> {
    let addr = &r.address_prefix;
    let ip: std::net::IpAddr = addr.parse().map_err(|_| format!("malformed IP address: {addr}"))?;
    let len = r.prefix_len.as_ref().map_or(0, |l| l.value);
    let len = u8::try_from(len).map_err(|_| format!("prefix_len {len} is out of range"))?;
    ipnet::IpNet::new(ip, len).map(|n| n.trunc()).map_err(|_| format!("prefix_len {len} is out of range for {addr}"))
}

fn typed_input(e: &Extension) -> Result<MatcherInput, String> {
    let config = e.typed_config.as_ref().ok_or("an input has no typed_config")?;
    let name = last_segment(&config.type_url);
    MatcherInput::from_type_name(name)
}

fn typed_on_match(m: &xm::matcher::OnMatch, at: &Pointer) -> Result<OnMatch, String> {
    use xm::matcher::on_match::OnMatch as O;
    let keep_matching = m.keep_matching;
    match &m.on_match {
        Some(O::Matcher(inner)) => Ok(OnMatch {
            then: Then::Matcher(Box::new(typed_matcher(inner, &at.join("matcher"))?)),
            keep_matching,
            at: at.clone(),
        }),
        Some(O::Action(a)) => {
            let config = a.typed_config.as_ref().ok_or("an action has no typed_config")?;
            match last_segment(&config.type_url) {
                "google.protobuf.StringValue" => {
                    Ok(OnMatch { then: Then::Action(string_value(config)), keep_matching, at: at.clone() })
                }
                other => Err(format!("action {other} is not a filter chain name (google.protobuf.StringValue)")),
            }
        }
        None => Err("on_match has neither matcher nor action".to_owned()),
    }
}

fn typed_predicate(p: &xm::matcher::matcher_list::Predicate) -> Result<Predicate, String> {
    use xm::matcher::matcher_list::predicate::MatchType as M;
    use xm::matcher::matcher_list::predicate::single_predicate::Matcher as SM;
    use xm::string_matcher::MatchPattern as P;
    match &p.match_type {
        Some(M::SinglePredicate(s)) => {
            let input = typed_input(s.input.as_ref().ok_or("single_predicate has no input")?)?;
            let Some(SM::ValueMatch(vm)) = &s.matcher else {
                return Err("single_predicate has no value_match (custom_match is not supported)".to_owned());
            };
            let (kind, pattern) = match &vm.match_pattern {
                Some(P::Exact(v)) => (StringMatch::Exact, v),
                Some(P::Prefix(v)) => (StringMatch::Prefix, v),
                Some(P::Suffix(v)) => (StringMatch::Suffix, v),
                Some(P::Contains(v)) => (StringMatch::Contains, v),
                _ => return Err("value_match: only exact, prefix, suffix and contains are supported".to_owned()),
            };
            let matcher = StringMatcher { kind, pattern: pattern.clone(), ignore_case: vm.ignore_case };
            Ok(Predicate::Single { input, matcher })
        }
        Some(M::OrMatcher(l)) => l.predicate.iter().map(typed_predicate).collect::<Result<_, _>>().map(Predicate::Or),
        Some(M::AndMatcher(l)) => l.predicate.iter().map(typed_predicate).collect::<Result<_, _>>().map(Predicate::And),
        Some(M::NotMatcher(n)) => Ok(Predicate::Not(Box::new(typed_predicate(n)?))),
        None => Err("a predicate has none of single_predicate, or_matcher, and_matcher, not_matcher".to_owned()),
    }
}

// Actions and ServerNameMatchers with their pointers, in the order the JSON reader finds them in
// the resource's proto3 JSON (fields in declaration order, map keys sorted), also below what the
// tree cannot type.

#[derive(Default)]
struct ProtoParts {
    actions: Vec<MatcherAction>,
    server_name_matchers: Vec<ServerNameMatcherParts>,
}

impl ProtoParts {
    fn matcher(&mut self, m: &xm::Matcher, pointer: String) {
        use xm::matcher::MatcherType as T;
        use xm::matcher::matcher_tree::TreeType as TT;
        match &m.matcher_type {
            Some(T::MatcherList(l)) => {
                for (i, f) in l.matchers.iter().enumerate() {
                    let at = format!("{pointer}/matcher_list/matchers/{i}");
                    if let Some(p) = &f.predicate {
                        self.predicate(p, format!("{at}/predicate"));
                    }
                    if let Some(om) = &f.on_match {
                        self.on_match(om, format!("{at}/on_match"));
                    }
                }
            }
            Some(T::MatcherTree(t)) => {
                let at = format!("{pointer}/matcher_tree");
                if let Some(TT::CustomMatch(c)) = &t.tree_type {
                    self.server_name_matcher(t.input.as_ref(), c, &at);
                }
                if let Some(i) = &t.input {
                    self.extension(i, format!("{at}/input"));
                }
                match &t.tree_type {
                    Some(TT::ExactMatchMap(mm)) => self.map(mm, format!("{at}/exact_match_map/map")),
                    Some(TT::PrefixMatchMap(mm)) => self.map(mm, format!("{at}/prefix_match_map/map")),
                    Some(TT::CustomMatch(c)) => self.extension(c, format!("{at}/custom_match")),
                    None => {}
                }
            }
            None => {}
        }
        if let Some(n) = &m.on_no_match {
            self.on_match(n, format!("{pointer}/on_no_match"));
        }
    }

    fn map(&mut self, mm: &xm::matcher::matcher_tree::MatchMap, pointer: String) {
        let mut keys: Vec<&String> = mm.map.keys().collect();
        keys.sort();
        for k in keys {
            self.on_match(&mm.map[k], crate::source::join_token(&pointer, k));
        }
    }

    fn on_match(&mut self, m: &xm::matcher::OnMatch, pointer: String) {
        use xm::matcher::on_match::OnMatch as O;
        match &m.on_match {
            Some(O::Matcher(inner)) => self.matcher(inner, format!("{pointer}/matcher")),
            Some(O::Action(a)) => {
                let at = format!("{pointer}/action");
                if let Some(config) =
                    a.typed_config.as_ref().filter(|c| last_segment(&c.type_url) == "google.protobuf.StringValue")
                {
                    self.actions.push(MatcherAction {
                        name: string_value(config),
                        pointer: format!("{at}/typed_config/value").into(),
                    });
                }
                self.extension(a, at);
            }
            None => {}
        }
    }

    fn predicate(&mut self, p: &xm::matcher::matcher_list::Predicate, pointer: String) {
        use xm::matcher::matcher_list::predicate::MatchType as M;
        use xm::matcher::matcher_list::predicate::single_predicate::Matcher as SM;
        match &p.match_type {
            Some(M::SinglePredicate(s)) => {
                let at = format!("{pointer}/single_predicate");
                if let Some(SM::CustomMatch(c)) = &s.matcher {
                    self.server_name_matcher(s.input.as_ref(), c, &at);
                }
                if let Some(i) = &s.input {
                    self.extension(i, format!("{at}/input"));
                }
                match &s.matcher {
                    Some(SM::ValueMatch(v)) => {
                        if let Some(xm::string_matcher::MatchPattern::Custom(c)) = &v.match_pattern {
                            self.extension(c, format!("{at}/value_match/custom"));
                        }
                    }
                    Some(SM::CustomMatch(c)) => self.extension(c, format!("{at}/custom_match")),
                    None => {}
                }
            }
            Some(M::OrMatcher(l)) => {
                for (i, q) in l.predicate.iter().enumerate() {
                    self.predicate(q, format!("{pointer}/or_matcher/predicate/{i}"));
                }
            }
            Some(M::AndMatcher(l)) => {
                for (i, q) in l.predicate.iter().enumerate() {
                    self.predicate(q, format!("{pointer}/and_matcher/predicate/{i}"));
                }
            }
            Some(M::NotMatcher(n)) => self.predicate(n, format!("{pointer}/not_matcher")),
            None => {}
        }
    }

    /// A `custom_match` beside `input` in the object at `pointer`: a ServerNameMatcher is noted.
    fn server_name_matcher(&mut self, input: Option<&Extension>, custom: &Extension, pointer: &str) {
        let Some(config) = custom.typed_config.as_ref() else { return };
        if last_segment(&config.type_url) != "xds.type.matcher.v3.ServerNameMatcher" {
            return;
        }
        let reads_server_name = input
            .and_then(|i| i.typed_config.as_ref())
            .is_some_and(|t| last_segment(&t.type_url).ends_with(".network.v3.ServerNameInput"));
        let base = format!("{pointer}/custom_match/typed_config/domain_matchers");
        let domain_matchers = ServerNameMatcher::decode(config.value.as_slice())
            .unwrap_or_default()
            .domain_matchers
            .into_iter()
            .enumerate()
            .map(|(i, dm)| {
                dm.domains.into_iter().enumerate().map(|(j, d)| (d, format!("{base}/{i}/domains/{j}").into())).collect()
            })
            .collect();
        self.server_name_matchers.push(ServerNameMatcherParts { reads_server_name, domain_matchers });
    }

    /// What an extension's Any holds that has on_matches of its own: a ServerNameMatcher's or
    /// an IPMatcher's, wherever it appears.
    fn extension(&mut self, e: &Extension, pointer: String) {
        let Some(a) = &e.typed_config else { return };
        let at = format!("{pointer}/typed_config");
        match last_segment(&a.type_url) {
            "xds.type.matcher.v3.ServerNameMatcher" => {
                for (i, dm) in
                    ServerNameMatcher::decode(a.value.as_slice()).unwrap_or_default().domain_matchers.iter().enumerate()
                {
                    if let Some(om) = &dm.on_match {
                        self.on_match(om, format!("{at}/domain_matchers/{i}/on_match"));
                    }
                }
            }
            "xds.type.matcher.v3.IPMatcher" => {
                for (i, rm) in
                    IpMatcher::decode(a.value.as_slice()).unwrap_or_default().range_matchers.iter().enumerate()
                {
                    if let Some(om) = &rm.on_match {
                        self.on_match(om, format!("{at}/range_matchers/{i}/on_match"));
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use xm::matcher::matcher_list::predicate::{MatchType, SinglePredicate, single_predicate};
    use xm::matcher::matcher_tree::{MatchMap, TreeType};
    use xm::matcher::{MatcherTree, MatcherType, on_match};

    fn ext(name: &str, type_url: &str, value: Vec<u8>) -> Extension {
        Extension { name: name.into(), typed_config: Some(Any { type_url: type_url.into(), value }) }
    }

    fn input(short: &str) -> Extension {
        ext("i", &format!("type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.{short}"), Vec::new())
    }

    fn action(chain: &str) -> xm::matcher::OnMatch {
        let value = envoy_types::pb::google::protobuf::StringValue { value: chain.into() }.encode_to_vec();
        let a = ext("a", "type.googleapis.com/google.protobuf.StringValue", value);
        xm::matcher::OnMatch { keep_matching: false, on_match: Some(on_match::OnMatch::Action(a)) }
    }

    fn tree(input_name: &str, tree_type: TreeType) -> xm::Matcher {
        xm::Matcher {
            matcher_type: Some(MatcherType::MatcherTree(MatcherTree {
                input: Some(input(input_name)),
                tree_type: Some(tree_type),
            })),
            on_no_match: None,
        }
    }

    fn json_input(short: &str) -> serde_json::Value {
        json!({"name": "i", "typed_config": {"@type": format!("type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.{short}")}})
    }

    fn json_action(chain: &str) -> serde_json::Value {
        json!({"action": {"name": "a", "typed_config": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": chain}}})
    }

    /// The protobuf path gives what the JSON reader gives for the same matcher: tree (or error),
    /// actions and ServerNameMatcher domains with their pointers.
    #[test]
    fn protobuf_matcher_reads_like_its_json() {
        // A ServerNameMatcher whose domain matcher nests an exact port map; on_no_match an action.
        let snm = ServerNameMatcher {
            domain_matchers: vec![DomainMatcher {
                domains: vec!["a.com".into(), "*.B.com".into()],
                on_match: Some(xm::matcher::OnMatch {
                    keep_matching: true,
                    on_match: Some(on_match::OnMatch::Matcher(Box::new(tree(
                        "DestinationPortInput",
                        TreeType::ExactMatchMap(MatchMap {
                            map: [("443".to_owned(), action("y")), ("80".to_owned(), action("x"))].into(),
                        }),
                    )))),
                }),
            }],
        };
        let custom = ext("d", "type.googleapis.com/xds.type.matcher.v3.ServerNameMatcher", snm.encode_to_vec());
        let mut proto = tree("ServerNameInput", TreeType::CustomMatch(custom));
        proto.on_no_match = Some(Box::new(action("z")));
        let json = json!({"matcher_tree": {"input": json_input("ServerNameInput"), "custom_match": {"name": "d", "typed_config": {
            "@type": "type.googleapis.com/xds.type.matcher.v3.ServerNameMatcher",
            "domain_matchers": [{"domains": ["a.com", "*.B.com"], "on_match": {"keep_matching": true, "matcher": {"matcher_tree": {
                "input": json_input("DestinationPortInput"), "exact_match_map": {"map": {"443": json_action("y"), "80": json_action("x")}}}}}}]}}},
            "on_no_match": json_action("z")});
        let (p, j) = (filter_chain_matcher(&proto), super::super::matcher::read(&json, None));
        assert!(p.tree.is_ok());
        assert_eq!(p.actions.len(), 3);
        assert_eq!(p, j);

        // A matcher_list with an input xdsck does not model: the same error, the action still found.
        let list = xm::Matcher {
            matcher_type: Some(MatcherType::MatcherList(xm::matcher::MatcherList {
                matchers: vec![xm::matcher::matcher_list::FieldMatcher {
                    predicate: Some(xm::matcher::matcher_list::Predicate {
                        match_type: Some(MatchType::SinglePredicate(SinglePredicate {
                            input: Some(input("FilterStateInput")),
                            matcher: Some(single_predicate::Matcher::ValueMatch(xm::StringMatcher {
                                match_pattern: Some(xm::string_matcher::MatchPattern::Prefix("a".into())),
                                ignore_case: true,
                            })),
                        })),
                    }),
                    on_match: Some(action("a")),
                }],
            })),
            on_no_match: None,
        };
        let json = json!({"matcher_list": {"matchers": [{"predicate": {"single_predicate": {"input": json_input("FilterStateInput"),
            "value_match": {"prefix": "a", "ignore_case": true}}}, "on_match": json_action("a")}]}});
        let (p, j) = (filter_chain_matcher(&list), super::super::matcher::read(&json, None));
        assert!(p.tree.as_ref().is_err_and(|e| e.contains("FilterStateInput")));
        assert_eq!(p, j);
    }
}

#[cfg(test)]
mod route_tests {
    use super::*;

    fn any(type_url: &str, value: Vec<u8>) -> Any {
        Any { type_url: format!("type.googleapis.com/{type_url}"), value }
    }

    fn hcm_listener(name: &str, routes: hcm::http_connection_manager::RouteSpecifier) -> Any {
        let h =
            hcm::HttpConnectionManager { stat_prefix: "s".into(), route_specifier: Some(routes), ..Default::default() };
        let filter = listener::Filter {
            name: "envoy.filters.network.http_connection_manager".into(),
            config_type: Some(listener::filter::ConfigType::TypedConfig(any(
                "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                h.encode_to_vec(),
            ))),
        };
        let l = listener::Listener {
            name: name.into(),
            filter_chains: vec![listener::FilterChain { filters: vec![filter], ..Default::default() }],
            ..Default::default()
        };
        any("envoy.config.listener.v3.Listener", l.encode_to_vec())
    }

    /// A protobuf input's route tables are not read: one located XDS304 says so, never silence.
    #[test]
    fn protobuf_routes_are_reported_as_not_read() {
        use hcm::http_connection_manager::RouteSpecifier;
        let rds = RouteSpecifier::Rds(hcm::Rds { route_config_name: "rt".into(), ..Default::default() });
        let inline = RouteSpecifier::RouteConfig(Default::default());
        let resources = [hcm_listener("a", rds), hcm_listener("b", inline)];
        let (input, problems) = load_resources(SourceId::default(), &resources);
        assert_eq!(input.listeners.len(), 2);
        let found: Vec<_> = problems.iter().filter(|d| d.code() == "XDS304").collect();
        assert_eq!(found.len(), 1, "{problems:?}");
        let at = found[0].location.as_ref().expect("located");
        assert_eq!(at.pointer, "/resources/0/filter_chains/0/filters/0/typed_config");
        assert!(found[0].notes.iter().any(|n| n.contains("1 more http_connection_manager")), "{:?}", found[0].notes);

        // Without an HCM that has routes there is nothing unread to report.
        let (_, problems) = load_resources(SourceId::default(), &[]);
        assert!(problems.is_empty());
    }
}
