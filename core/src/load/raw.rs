//! The proto messages xdsck reads, as they appear in proto3 JSON, and their conversion into the
//! model. Everything not listed here is skipped unread.
//!
//! Filter chains are converted into the model while the chain list is parsed, so a listener with
//! 400k chains never holds two copies of them.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, Visitor};
use thin_vec::ThinVec;

use super::envoy_json::ListKind;
use super::protojson::{
    Bool, Captured, Elements, I64, Present, Repeated, Str, Strict, U32, Wrapped, enum_value, offset_of, proto_message,
};
use super::route::{TableParts, mirrors_of};
use super::route_raw::{Codec, Given, Items, LBool, List, Obj, RawMirror, RawRds, RawRouteConfiguration};
use crate::model::build::{
    ClusterBuild, ClusterPlace, Discovery, Endpoint, EndpointPlace, Pem, PemHolds, Source, StatusRange, TlsCertificates,
};
use crate::model::route::{CodecType, Hcm, HcmRoutes, RouteTable, TableOrigin, VirtualHost};
use crate::model::{
    Address, AddressSuffix, Casing, ChainIndex, CidrRange, FilterChain, FilterChainMatch, Listener, ListenerFilter,
    MatchAddresses, NetworkFilter, NetworkFilterKind, OneOrList, Protocol, SocketAddress, SourceType, Text, TextOffset,
    TransportSocket, text_of,
};
use crate::source::{SourceId, join_field, join_index};

pub(crate) fn object_offset(first_key: Option<&str>) -> Option<usize> {
    // The key's first character follows its opening quote; the object starts at or before it.
    first_key.and_then(offset_of).map(|o| o.saturating_sub(1))
}

fn cow(s: Option<Str<'_>>) -> Cow<'_, str> {
    s.map(Str::into_cow).unwrap_or_default()
}

fn text(s: Option<Str<'_>>) -> Text<'_> {
    s.map(Str::into_text).unwrap_or_default()
}

fn texts<'a, L: ExactList<Text<'a>>>(v: Option<Repeated<Str<'a>>>) -> L {
    exact(v, Str::into_text)
}

/// Maps a parsed list into the model with an allocation of exactly its length.
///
/// Why not `into_iter().map().collect()`: that reuses the parse buffer in place, and serde grows
/// lists to at least four elements, so a one-filter chain would keep room for four raw filters
/// (over 1 KB per chain; a 200 MB dump then takes 3x its size in memory instead of under 2x).
fn exact<T, U, L: ExactList<U>>(v: Option<Repeated<T>>, f: impl FnMut(T) -> U) -> L {
    let v = v.unwrap_or_default().0;
    let mut out = L::with_capacity(v.len());
    out.extend(v.into_iter().map(f));
    out
}

/// The model's two kinds of list, made by [`exact`]: `Vec`, and `ThinVec` for the short lists
/// a filter chain holds.
trait ExactList<U>: Extend<U> {
    fn with_capacity(len: usize) -> Self;
}

impl<U> ExactList<U> for Vec<U> {
    fn with_capacity(len: usize) -> Self {
        Vec::with_capacity(len)
    }
}

impl<U> ExactList<U> for ThinVec<U> {
    fn with_capacity(len: usize) -> Self {
        ThinVec::with_capacity(len)
    }
}

impl<U> ExactList<U> for OneOrList<U> {
    fn with_capacity(len: usize) -> Self {
        OneOrList::with_capacity(len)
    }
}

// ---------------------------------------------------------------------------------------------
// Documents and containers. One union message reads every object that may be a document, a
// config_dump entry or an Any resource; the loader classifies it afterwards. The fields of
// different message types do not clash in name, so one pass reads them all.

proto_message! {
    /// Any object that may hold or be a Listener. A long list of listeners read in parts is
    /// held as these until the whole list is read, then made into the model: with a listener
    /// per tenant, that moment is about as high as a run's peak. Every field a Listener does
    /// not have (a matcher, a dump's lists and states, a bootstrap's parts, a discovery
    /// response's fields, a CEC's metadata and spec, a route table's lists) is boxed, one word
    /// each: 1256 -> 472 bytes, 78 MB less at 100k listeners.
    pub(crate) struct RawObject<'a> as "an Envoy configuration object" {
        type_url_field: Str<'a> = "@type",
        // Listener
        name: Str<'a> = "name",
        address: Box<RawAddress<'a>> = "address",
        additional_addresses: Repeated<RawAdditionalAddress<'a>> = "additional_addresses" | "additionalAddresses",
        filter_chains: Chains<'a> = "filter_chains" | "filterChains",
        default_filter_chain: Box<RawFilterChain<'a>> = "default_filter_chain" | "defaultFilterChain",
        filter_chain_matcher: Box<Captured> = "filter_chain_matcher" | "filterChainMatcher",
        listener_filters: Repeated<RawListenerFilter<'a>> = "listener_filters" | "listenerFilters",
        use_original_dst: Wrapped<Bool> = "use_original_dst" | "useOriginalDst",
        bind_to_port: Wrapped<Bool> = "bind_to_port" | "bindToPort",
        enable_reuse_port: Wrapped<Bool> = "enable_reuse_port" | "enableReusePort",
        internal_listener: Present = "internal_listener" | "internalListener",
        api_listener: Present = "api_listener" | "apiListener",
        udp_listener_config: Present = "udp_listener_config" | "udpListenerConfig",
        // Listener fields xdsck does not read, listed so that a listener giving only these
        // (`{name, stat_prefix}`) is still recognised as one.
        stat_prefix: Present = "stat_prefix" | "statPrefix",
        traffic_direction: Present = "traffic_direction" | "trafficDirection",
        per_connection_buffer_limit_bytes: Present = "per_connection_buffer_limit_bytes" | "perConnectionBufferLimitBytes",
        socket_options: Present = "socket_options" | "socketOptions",
        listener_filters_timeout: Present = "listener_filters_timeout" | "listenerFiltersTimeout",
        continue_on_listener_filters_timeout: Present = "continue_on_listener_filters_timeout" | "continueOnListenerFiltersTimeout",
        transparent: Present = "transparent",
        freebind: Present = "freebind",
        access_log: Present = "access_log" | "accessLog",
        drain_type: Present = "drain_type" | "drainType",
        // ListenersConfigDump.StaticListener (the `?resource=static_listeners` form)
        listener: Box<RawObject<'a>> = "listener",
        // ConfigDump
        configs: Box<Repeated<RawObject<'a>>> = "configs",
        // ListenersConfigDump
        static_listeners: Box<Repeated<RawStaticListener<'a>>> = "static_listeners" | "staticListeners",
        dynamic_listeners: Box<LongList<RawDynamicListener<'a>>> = "dynamic_listeners" | "dynamicListeners",
        // ClustersConfigDump: only the clusters' names are read, for the routes' cluster check
        static_clusters: Box<Repeated<RawClusterEntry<'a>>> = "static_clusters" | "staticClusters",
        dynamic_active_clusters: Box<Repeated<RawClusterEntry<'a>>> = "dynamic_active_clusters" | "dynamicActiveClusters",
        dynamic_warming_clusters: Box<Repeated<RawClusterEntry<'a>>> = "dynamic_warming_clusters" | "dynamicWarmingClusters",
        // RoutesConfigDump: every table Envoy has
        static_route_configs: Box<Repeated<RawRouteConfigEntry<'a>>> = "static_route_configs" | "staticRouteConfigs",
        dynamic_route_configs: Box<Repeated<RawRouteConfigEntry<'a>>> = "dynamic_route_configs" | "dynamicRouteConfigs",
        // RouteConfiguration (a resource of its own: RDS)
        virtual_hosts: Box<Items<VirtualHost<'a>>> = "virtual_hosts" | "virtualHosts",
        vhds: Given = "vhds",
        ignore_port_in_host_matching: LBool = "ignore_port_in_host_matching" | "ignorePortInHostMatching",
        validate_clusters: LBool = "validate_clusters" | "validateClusters",
        request_mirror_policies: Box<List<Obj<RawMirror<'a>>>> = "request_mirror_policies" | "requestMirrorPolicies",
        // ListenersConfigDump.DynamicListener (the `?resource=dynamic_listeners` form)
        active_state: Box<RawListenerState<'a>> = "active_state" | "activeState",
        warming_state: Box<RawListenerState<'a>> = "warming_state" | "warmingState",
        draining_state: Box<RawListenerState<'a>> = "draining_state" | "drainingState",
        error_state: Box<RawUpdateFailure<'a>> = "error_state" | "errorState",
        // Bootstrap
        static_resources: Box<RawStaticResources<'a>> = "static_resources" | "staticResources",
        dynamic_resources: Box<RawDynamicResources<'a>> = "dynamic_resources" | "dynamicResources",
        admin: Box<RawAdmin<'a>> = "admin",
        node: Box<RawNode<'a>> = "node",
        bootstrap_extensions: Box<Repeated<RawTypedExtension<'a>>> = "bootstrap_extensions" | "bootstrapExtensions",
        // Cluster (a resource of its own: CDS)
        discovery_type: U32 = "type",
        cluster_type: Present = "cluster_type" | "clusterType",
        lb_policy: U32 = "lb_policy" | "lbPolicy",
        load_balancing_policy: Present = "load_balancing_policy" | "loadBalancingPolicy",
        load_assignment: Box<RawLoadAssignment<'a>> = "load_assignment" | "loadAssignment",
        transport_socket: Box<RawTransportSocket<'a>> = "transport_socket" | "transportSocket",
        health_checks: Box<Repeated<RawHealthCheck<'a>>> = "health_checks" | "healthChecks",
        // DiscoveryResponse, DeltaDiscoveryResponse
        resources: Box<LongList<RawObject<'a>>> = "resources",
        version_info: Box<Str<'a>> = "version_info" | "versionInfo",
        type_url: Box<Str<'a>> = "type_url" | "typeUrl",
        nonce: Present = "nonce",
        system_version_info: Box<Str<'a>> = "system_version_info" | "systemVersionInfo",
        removed_resources: Present = "removed_resources" | "removedResources",
        // envoy.service.discovery.v3.Resource, the wrapper in Delta responses (and in some SotW
        // ones): `{name, version, resource: {"@type": ...}}`
        resource: Box<RawObject<'a>> = "resource",
        // Kubernetes objects (CiliumEnvoyConfig, List)
        api_version: Box<Str<'a>> = "apiVersion",
        kind: Box<Str<'a>> = "kind",
        metadata: Box<RawMetadata<'a>> = "metadata",
        spec: Box<RawSpec<'a>> = "spec",
        items: Box<Vec<RawObject<'a>>> = "items",
    }
}

impl RawObject<'_> {
    /// Whether any Listener field is set.
    pub(crate) fn has_listener_fields(&self) -> bool {
        self.address.is_some()
            || self.additional_addresses.is_some()
            || self.filter_chains.is_some()
            || self.default_filter_chain.is_some()
            || self.filter_chain_matcher.is_some()
            || self.listener_filters.is_some()
            || self.internal_listener.is_some()
            || self.api_listener.is_some()
            || self.udp_listener_config.is_some()
            || self.use_original_dst.is_some()
            || self.bind_to_port.is_some()
            || self.enable_reuse_port.is_some()
            || self.stat_prefix.is_some()
            || self.traffic_direction.is_some()
            || self.per_connection_buffer_limit_bytes.is_some()
            || self.socket_options.is_some()
            || self.listener_filters_timeout.is_some()
            || self.continue_on_listener_filters_timeout.is_some()
            || self.transparent.is_some()
            || self.freebind.is_some()
            || self.access_log.is_some()
            || self.drain_type.is_some()
    }

    /// Whether the object says nothing about being any other kind of document (no `kind`,
    /// `metadata` or `@type`): in a list of Listeners, it is one by its position.
    pub(crate) fn is_plain(&self) -> bool {
        self.kind.is_none() && self.metadata.is_none() && self.type_url_field.is_none() && self.api_version.is_none()
    }

    /// Whether the object is one entry of a config_dump's `configs` (listeners, clusters or
    /// route configs by their dump's own fields).
    pub(crate) fn is_dump_entry(&self) -> bool {
        self.static_listeners.is_some()
            || self.dynamic_listeners.is_some()
            || self.static_clusters.is_some()
            || self.dynamic_active_clusters.is_some()
            || self.dynamic_warming_clusters.is_some()
            || self.static_route_configs.is_some()
            || self.dynamic_route_configs.is_some()
    }

    pub(crate) fn type_url(&self) -> Option<&str> {
        self.type_url_field.as_ref().map(|s| &*s.0)
    }
}

impl<'a> RawObject<'a> {
    /// The parts of a Cluster resource Envoy's cluster manager checks.
    pub(crate) fn into_cluster_parts(self) -> ClusterParts<'a> {
        ClusterParts {
            name: self.name.map(super::protojson::Str::into_cow).unwrap_or_default(),
            camel: self.camel,
            discovery_type: self.discovery_type,
            cluster_type: self.cluster_type.is_some(),
            lb_policy: self.lb_policy,
            load_balancing_policy: self.load_balancing_policy.is_some(),
            load_assignment: self.load_assignment.map(|b| *b),
            transport_socket: self.transport_socket,
            health_checks: self.health_checks.map(|b| *b),
        }
    }
    /// The route table this object's RouteConfiguration fields make, not yet placed.
    pub(crate) fn into_route_table(self, origin: TableOrigin) -> RouteTable<'a> {
        let camel = self.camel;
        TableParts {
            name: self.name.map(Str::into_cow),
            virtual_hosts: self.virtual_hosts.map(|i| i.0).unwrap_or_default(),
            vh_key: if camel { "virtualHosts" } else { "virtual_hosts" },
            vhds: self.vhds.is_some(),
            ignore_port_in_host_matching: self.ignore_port_in_host_matching.and_then(|b| b.0).unwrap_or(false),
            validate_clusters: self.validate_clusters.and_then(|b| b.0),
            mirrors: mirrors_of(self.request_mirror_policies.map(|b| *b), camel),
        }
        .table(origin)
    }

    /// Takes the chains it holds that were read in parts out of `split`: the listener is then
    /// made from the object alone (on any core).
    pub(crate) fn take_chains(&mut self, split: &mut [PartList<'a>]) {
        if let Some(chains) = self.filter_chains.take() {
            self.filter_chains = Some(Chains::Read(chains.take(split)));
        }
    }

    /// Builds the model Listener from this object's Listener fields (its chains taken from
    /// `split` when the walk read them in parts).
    pub(crate) fn into_listener(self, pointer: String, split: &mut [PartList<'a>]) -> Listener<'a> {
        let casing = Casing::from_camel(self.camel);
        Listener {
            name: text(self.name),
            pointer: pointer.into(),
            offset: object_offset(self.first_key).and_then(TextOffset::new),
            casing,
            address: self.address.and_then(|a| a.into_model()),
            unset_additional_addresses: self.additional_addresses.as_ref().map_or_else(ThinVec::new, |list| {
                list.0.iter().enumerate().filter(|(_, a)| a.address.is_none()).map(|(i, _)| i).collect()
            }),
            additional_addresses: self
                .additional_addresses
                .unwrap_or_default()
                .into_iter()
                .filter_map(|a| a.address.and_then(RawAddress::into_model))
                .collect(),
            bind_to_port: self.bind_to_port.map(|b| b.0.0),
            use_original_dst: self.use_original_dst.is_some_and(|b| b.0.0),
            enable_reuse_port: self.enable_reuse_port.map(|b| b.0.0),
            listener_filters: exact(self.listener_filters, |f| ListenerFilter {
                name: text(f.name),
                type_url: f.typed_config.and_then(|t| t.type_url).map(Str::into_text),
            }),
            filter_chains: self.filter_chains.map(|c| c.take(split)).unwrap_or_default(),
            default_filter_chain: self.default_filter_chain.map(|c| Box::new(c.into_model(ChainIndex::DEFAULT))),
            filter_chain_matcher: self.filter_chain_matcher.map(|m| Box::new(super::matcher::read(&m.value, m.offset))),
            internal_listener: self.internal_listener.is_some(),
            api_listener: self.api_listener.is_some(),
            udp_listener_config: self.udp_listener_config.is_some(),
            ..Listener::default()
        }
    }
}

proto_message! {
    /// A RoutesConfigDump's `static_route_configs` / `dynamic_route_configs` entry.
    pub(crate) struct RawRouteConfigEntry<'a> as "a RoutesConfigDump entry" {
        route_config: Box<RawObject<'a>> = "route_config" | "routeConfig",
    }
}

proto_message! {
    pub(crate) struct RawStaticListener<'a> as "a StaticListener object" {
        listener: Box<RawObject<'a>> = "listener",
    }
}

proto_message! {
    pub(crate) struct RawDynamicListener<'a> as "a DynamicListener object" {
        name: Str<'a> = "name",
        active_state: RawListenerState<'a> = "active_state" | "activeState",
        warming_state: RawListenerState<'a> = "warming_state" | "warmingState",
        draining_state: RawListenerState<'a> = "draining_state" | "drainingState",
        error_state: RawUpdateFailure<'a> = "error_state" | "errorState",
    }
}

proto_message! {
    pub(crate) struct RawListenerState<'a> as "a DynamicListenerState object" {
        version_info: Str<'a> = "version_info" | "versionInfo",
        listener: Box<RawObject<'a>> = "listener",
    }
}

proto_message! {
    pub(crate) struct RawUpdateFailure<'a> as "an UpdateFailureState object" {
        failed_configuration: Box<RawObject<'a>> = "failed_configuration" | "failedConfiguration",
        last_update_attempt: Str<'a> = "last_update_attempt" | "lastUpdateAttempt",
        details: Str<'a> = "details",
        version_info: Str<'a> = "version_info" | "versionInfo",
    }
}

proto_message! {
    pub(crate) struct RawStaticResources<'a> as "a Bootstrap.StaticResources object" {
        listeners: LongList<RawObject<'a>> = "listeners",
        clusters: LongList<BuiltCluster<'a>> = "clusters",
        secrets: Repeated<RawNamed<'a>> = "secrets",
    }
}

/// A list that may be long, of items each of which may hold a long list itself (a bootstrap's
/// `listeners`, a discovery response's `resources`, a config_dump's `dynamic_listeners`: a
/// listener per tenant, as Istio and Envoy Gateway render) or not (a bootstrap's `clusters`):
/// read item by item, or in parts on every core by the walk, which hands over the handle of
/// what it read.
#[derive(Debug)]
pub(crate) enum LongList<T> {
    Read(Vec<T>),
    /// The handle of the items in the loader's table of lists read in parts.
    Split(usize),
}

impl<T> Default for LongList<T> {
    fn default() -> Self {
        LongList::Read(Vec::new())
    }
}

/// An item of a [`LongList`]: which of the loader's kinds of lists read in parts it is read as.
pub(crate) trait PartItem<'a>: Sized {
    const KIND: ListKind;
    /// The items of a list of this kind read in parts.
    fn items<'l>(list: &'l mut PartList<'a>) -> Option<&'l mut Vec<Self>>;
}

/// Implements [`PartItem`] for a type read as the lists of one [`ListKind`], whose
/// [`PartList`] variant has the kind's name.
macro_rules! part_item {
    ($item:ident, $kind:ident) => {
        impl<'a> PartItem<'a> for $item<'a> {
            const KIND: ListKind = ListKind::$kind;
            fn items<'l>(list: &'l mut PartList<'a>) -> Option<&'l mut Vec<Self>> {
                match list {
                    PartList::$kind(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}

part_item!(RawObject, Objects);
part_item!(RawDynamicListener, DynamicListeners);
part_item!(BuiltCluster, Clusters);

impl<'a, T: PartItem<'a>> LongList<T> {
    /// The items, taken from `split` when they were read in parts.
    pub(crate) fn take(self, split: &mut [PartList<'a>]) -> Vec<T> {
        match self {
            LongList::Read(items) => items,
            LongList::Split(h) => split.get_mut(h).and_then(T::items).map(std::mem::take).unwrap_or_default(),
        }
    }
}

impl<'de, T: PartItem<'de> + Deserialize<'de> + Default> Deserialize<'de> for LongList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for V<T> {
            type Value = LongList<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list")
            }
            fn visit_u128<E: serde::de::Error>(self, handle: u128) -> Result<Self::Value, E> {
                Ok(LongList::Split(handle as usize))
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                Repeated::deserialize(d).map(|r| LongList::Read(r.0))
            }
            // A reader that does not know the newtype (not the walk's) hands the value itself.
            fn visit_seq<S: serde::de::SeqAccess<'de>>(self, s: S) -> Result<Self::Value, S::Error> {
                self.visit_newtype_struct(serde::de::value::SeqAccessDeserializer::new(s))
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, m: M) -> Result<Self::Value, M::Error> {
                self.visit_newtype_struct(serde::de::value::MapAccessDeserializer::new(m))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                self.visit_newtype_struct(serde::de::value::UnitDeserializer::new())
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                self.visit_unit()
            }
        }
        d.deserialize_newtype_struct(T::KIND.name(), V(std::marker::PhantomData))
    }
}

proto_message! {
    /// Whether a bootstrap takes clusters from CDS too (its static list is then not all of them),
    /// and the clusters its xDS sources name.
    pub(crate) struct RawDynamicResources<'a> as "a Bootstrap.DynamicResources object" {
        cds_config: RawConfigSource<'a> = "cds_config" | "cdsConfig",
        cds_resources_locator: Present = "cds_resources_locator" | "cdsResourcesLocator",
        ads_config: RawApiConfigSource<'a> = "ads_config" | "adsConfig",
    }
}

proto_message! {
    pub(crate) struct RawTypedExtension<'a> as "a TypedExtensionConfig object" {
        typed_config: RawTypeOnly<'a> = "typed_config" | "typedConfig",
    }
}

proto_message! {
    pub(crate) struct RawNode<'a> as "a Node object" {
        id: Str<'a> = "id",
        cluster: Str<'a> = "cluster",
    }
}

proto_message! {
    pub(crate) struct RawConfigSource<'a> as "a ConfigSource object" {
        api_config_source: RawApiConfigSource<'a> = "api_config_source" | "apiConfigSource",
    }
}

proto_message! {
    pub(crate) struct RawApiConfigSource<'a> as "an ApiConfigSource object" {
        api_type: U32 = "api_type" | "apiType",
        cluster_names: Repeated<Str<'a>> = "cluster_names" | "clusterNames",
        grpc_services: Repeated<RawGrpcService<'a>> = "grpc_services" | "grpcServices",
    }
}

proto_message! {
    pub(crate) struct RawGrpcService<'a> as "a GrpcService object" {
        envoy_grpc: RawEnvoyGrpc<'a> = "envoy_grpc" | "envoyGrpc",
    }
}

proto_message! {
    pub(crate) struct RawEnvoyGrpc<'a> as "a GrpcService.EnvoyGrpc object" {
        cluster_name: Str<'a> = "cluster_name" | "clusterName",
    }
}

impl<'a> RawApiConfigSource<'a> {
    /// The clusters it names, each with its pointer below `at`.
    pub(crate) fn clusters(self, at: &str) -> Vec<(String, Cow<'a, str>)> {
        let casing = Casing::from_camel(self.camel);
        let mut out = Vec::new();
        let names = join_field(at, casing, "cluster_names");
        for (i, n) in self.cluster_names.map(|l| l.0).unwrap_or_default().into_iter().enumerate() {
            out.push((join_index(&names, i), n.0));
        }
        let services = join_field(at, casing, "grpc_services");
        for (i, g) in self.grpc_services.map(|l| l.0).unwrap_or_default().into_iter().enumerate() {
            let service = join_index(&services, i);
            if let Some(e) = g.envoy_grpc {
                let envoy = join_field(&service, Casing::from_camel(g.camel), "envoy_grpc");
                if let Some(name) = e.cluster_name {
                    out.push((join_field(&envoy, Casing::from_camel(e.camel), "cluster_name"), name.0));
                }
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Clusters: their names (what routes are checked against), and what Envoy checks when it builds
// them.

proto_message! {
    pub(crate) struct RawCluster<'a> as "a Cluster object" {
        name: Str<'a> = "name",
        discovery_type: U32 = "type",
        cluster_type: Present = "cluster_type" | "clusterType",
        lb_policy: U32 = "lb_policy" | "lbPolicy",
        load_balancing_policy: Present = "load_balancing_policy" | "loadBalancingPolicy",
        load_assignment: RawLoadAssignment<'a> = "load_assignment" | "loadAssignment",
        transport_socket: Box<RawTransportSocket<'a>> = "transport_socket" | "transportSocket",
        health_checks: Repeated<RawHealthCheck<'a>> = "health_checks" | "healthChecks",
    }
}

/// A bootstrap's cluster, built as soon as it is read: a raw cluster with its endpoint lists is
/// several times the size of its build, and 30k of them held until the bootstrap is classified
/// were the peak of loading a tenant bootstrap with route tables.
#[derive(Debug)]
pub(crate) struct BuiltCluster<'a>(pub(crate) ClusterBuild<'a>);

// What a list's `null` item is read as: the build of an empty cluster, as before it was built.
impl Default for BuiltCluster<'_> {
    fn default() -> Self {
        BuiltCluster(RawCluster::default().into_build())
    }
}

impl<'de> Deserialize<'de> for BuiltCluster<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RawCluster::deserialize(d).map(|c| BuiltCluster(c.into_build()))
    }
}

impl<'a> RawCluster<'a> {
    fn into_build(self) -> ClusterBuild<'a> {
        ClusterParts {
            name: cow(self.name),
            camel: self.camel,
            discovery_type: self.discovery_type,
            cluster_type: self.cluster_type.is_some(),
            lb_policy: self.lb_policy,
            load_balancing_policy: self.load_balancing_policy.is_some(),
            load_assignment: self.load_assignment,
            transport_socket: self.transport_socket,
            health_checks: self.health_checks,
        }
        .into_build()
    }
}

/// What a [`ClusterBuild`] is made of, from a [`RawCluster`] or a CDS resource's [`RawObject`].
pub(crate) struct ClusterParts<'a> {
    pub(crate) name: Cow<'a, str>,
    pub(crate) camel: bool,
    pub(crate) discovery_type: Option<U32>,
    pub(crate) cluster_type: bool,
    pub(crate) lb_policy: Option<U32>,
    pub(crate) load_balancing_policy: bool,
    pub(crate) load_assignment: Option<RawLoadAssignment<'a>>,
    pub(crate) transport_socket: Option<Box<RawTransportSocket<'a>>>,
    pub(crate) health_checks: Option<Repeated<RawHealthCheck<'a>>>,
}

impl<'a> ClusterParts<'a> {
    /// The build, every pointer in it below the cluster's: where the cluster is is the
    /// caller's to say ([`ClusterBuild::pointer`]), which a list's reader does not know.
    pub(crate) fn into_build(self) -> ClusterBuild<'a> {
        let casing = Casing::from_camel(self.camel);
        let discovery =
            if self.cluster_type { None } else { Discovery::from_number(self.discovery_type.map_or(0, |t| t.0)) };
        let load_assignment = self.load_assignment.is_some();
        let (mut localities, mut endpoints) = (0, ThinVec::new());
        if let Some(la) = self.load_assignment {
            let assignment = Casing::from_camel(la.camel);
            let la = la.endpoints.unwrap_or_default().0;
            localities = la.len() as u32;
            // One list for every locality's endpoints, of its exact length.
            endpoints.reserve_exact(la.iter().map(|l| l.lb_endpoints.as_ref().map_or(0, |e| e.0.len())).sum());
            for (i, locality) in la.into_iter().enumerate() {
                let casings = [casing, assignment, Casing::from_camel(locality.camel)];
                for (j, e) in locality.lb_endpoints.unwrap_or_default().0.into_iter().enumerate() {
                    let address = e.endpoint.and_then(|e| e.address);
                    endpoints.push(Endpoint {
                        address_given: address.is_some(),
                        address: address.and_then(RawAddress::into_model),
                        place: EndpointPlace { locality: i as u32, index: j as u32, casings },
                    });
                }
            }
        }
        let status_ranges = status_ranges("", casing, self.health_checks);
        ClusterBuild {
            name: text_of(self.name),
            place: ClusterPlace::At(Box::default()),
            discovery,
            lb_policy: if self.load_balancing_policy { None } else { Some(self.lb_policy.map_or(0, |p| p.0 as i32)) },
            load_assignment,
            localities,
            endpoints,
            tls: self.transport_socket.and_then(|t| t.into_model().certificates).map(Box::new),
            // Copied into a list of its exact length (most clusters have none: no allocation).
            status_ranges: ThinVec::from(status_ranges),
        }
    }
}

/// The status ranges of a cluster's HTTP health checks, each with its pointer.
fn status_ranges(cluster: &str, casing: Casing, checks: Option<Repeated<RawHealthCheck<'_>>>) -> Vec<StatusRange> {
    let mut out = Vec::new();
    let list = join_field(cluster, casing, "health_checks");
    for (i, hc) in checks.map(|l| l.0).unwrap_or_default().into_iter().enumerate() {
        let Some(http) = hc.http_health_check else { continue };
        let at = join_field(&join_index(&list, i), Casing::from_camel(hc.camel), "http_health_check");
        let casing = Casing::from_camel(http.camel);
        for (retriable, ranges) in [(false, http.expected_statuses), (true, http.retriable_statuses)] {
            let field = join_field(&at, casing, if retriable { "retriable_statuses" } else { "expected_statuses" });
            for (j, r) in ranges.map(|l| l.0).unwrap_or_default().into_iter().enumerate() {
                out.push(StatusRange {
                    pointer: join_index(&field, j),
                    retriable,
                    start: r.start.map_or(0, |v| v.0),
                    end: r.end.map_or(0, |v| v.0),
                });
            }
        }
    }
    out
}

proto_message! {
    pub(crate) struct RawHealthCheck<'a> as "a HealthCheck object" {
        http_health_check: RawHttpHealthCheck<'a> = "http_health_check" | "httpHealthCheck",
    }
}

proto_message! {
    pub(crate) struct RawHttpHealthCheck<'a> as "an HttpHealthCheck object" {
        expected_statuses: Repeated<RawInt64Range<'a>> = "expected_statuses" | "expectedStatuses",
        retriable_statuses: Repeated<RawInt64Range<'a>> = "retriable_statuses" | "retriableStatuses",
    }
}

proto_message! {
    pub(crate) struct RawInt64Range<'a> as "an Int64Range object" {
        start: I64 = "start",
        end: I64 = "end",
    }
}

proto_message! {
    pub(crate) struct RawLoadAssignment<'a> as "a ClusterLoadAssignment object" {
        endpoints: Repeated<RawLocalityLbEndpoints<'a>> = "endpoints",
    }
}

proto_message! {
    pub(crate) struct RawLocalityLbEndpoints<'a> as "a LocalityLbEndpoints object" {
        lb_endpoints: Repeated<RawLbEndpoint<'a>> = "lb_endpoints" | "lbEndpoints",
    }
}

proto_message! {
    pub(crate) struct RawLbEndpoint<'a> as "an LbEndpoint object" {
        endpoint: RawEndpoint<'a> = "endpoint",
    }
}

proto_message! {
    pub(crate) struct RawEndpoint<'a> as "an Endpoint object" {
        address: RawAddress<'a> = "address",
    }
}

proto_message! {
    /// A ClustersConfigDump entry (`StaticCluster`, `DynamicCluster`): its cluster's name.
    pub(crate) struct RawClusterEntry<'a> as "a ClustersConfigDump cluster entry" {
        cluster: RawNamed<'a> = "cluster",
    }
}

proto_message! {
    pub(crate) struct RawMetadata<'a> as "a Kubernetes ObjectMeta object" {
        name: Str<'a> = "name",
        namespace: Str<'a> = "namespace",
        // Boxed: RawObject nests deeply (a config_dump holds listeners holding chains), and
        // every byte of it is paid at each level of the parser's recursion.
        annotations: Box<RawAnnotations<'a>> = "annotations",
    }
}

proto_message! {
    /// The annotations xdsck reads (`crate::settings::IGNORE_ANNOTATION`).
    pub(crate) struct RawAnnotations<'a> as "a Kubernetes annotations object" {
        xdsck_ignore: Str<'a> = "xdsck.io/ignore",
    }
}

proto_message! {
    pub(crate) struct RawSpec<'a> as "a spec object" {
        resources: Strict<Vec<RawObject<'a>>> = "resources",
    }
}

// ---------------------------------------------------------------------------------------------
// Addresses.

proto_message! {
    pub(crate) struct RawAddress<'a> as "an Address object" {
        socket_address: RawSocketAddress<'a> = "socket_address" | "socketAddress",
        pipe: RawPipe<'a> = "pipe",
        envoy_internal_address: RawInternalAddress<'a> = "envoy_internal_address" | "envoyInternalAddress",
    }
}

proto_message! {
    /// A bootstrap's `admin`: the address Envoy binds its admin API to.
    pub(crate) struct RawAdmin<'a> as "an Admin object" {
        address: RawAddress<'a> = "address",
    }
}

impl<'a> RawAddress<'a> {
    pub(crate) fn into_model(self) -> Option<Address<'a>> {
        if let Some(s) = self.socket_address {
            let mut socket = SocketAddress::default().with_names(
                s.named_port.map(Str::into_text),
                s.resolver_name.map(Str::into_text),
                s.network_namespace_filepath.map(Str::into_text),
            );
            socket.address = text(s.address);
            socket.port_value = s.port_value.map(|p| p.0);
            socket.protocol = s.protocol.unwrap_or(Protocol::Tcp);
            socket.ipv4_compat = s.ipv4_compat.is_some_and(|b| b.0);
            return Some(Address::Socket(socket));
        }
        if let Some(p) = self.pipe {
            return Some(Address::Pipe { path: text(p.path), mode: p.mode.map(|m| m.0) });
        }
        self.envoy_internal_address.map(|i| Address::EnvoyInternal {
            server_listener_name: text(i.server_listener_name),
            endpoint_id: text(i.endpoint_id),
        })
    }
}

proto_message! {
    pub(crate) struct RawAdditionalAddress<'a> as "an AdditionalAddress object" {
        address: RawAddress<'a> = "address",
    }
}

proto_message! {
    pub(crate) struct RawSocketAddress<'a> as "a SocketAddress object" {
        address: Str<'a> = "address",
        port_value: U32 = "port_value" | "portValue",
        named_port: Str<'a> = "named_port" | "namedPort",
        protocol: Protocol = "protocol",
        ipv4_compat: Bool = "ipv4_compat" | "ipv4Compat",
        resolver_name: Str<'a> = "resolver_name" | "resolverName",
        network_namespace_filepath: Str<'a> = "network_namespace_filepath" | "networkNamespaceFilepath",
    }
}

proto_message! {
    pub(crate) struct RawPipe<'a> as "a Pipe object" {
        path: Str<'a> = "path",
        mode: U32 = "mode",
    }
}

proto_message! {
    pub(crate) struct RawInternalAddress<'a> as "an EnvoyInternalAddress object" {
        server_listener_name: Str<'a> = "server_listener_name" | "serverListenerName",
        endpoint_id: Str<'a> = "endpoint_id" | "endpointId",
    }
}

impl<'de> Deserialize<'de> for Protocol {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match enum_value(d, &["TCP", "UDP"])? {
            0 => Protocol::Tcp,
            _ => Protocol::Udp,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Listener filters and typed configs.

proto_message! {
    pub(crate) struct RawListenerFilter<'a> as "a ListenerFilter object" {
        name: Str<'a> = "name",
        typed_config: RawTypeOnly<'a> = "typed_config" | "typedConfig",
    }
}

proto_message! {
    /// An Any of which only the type matters.
    pub(crate) struct RawTypeOnly<'a> as "a typed_config object" {
        type_url: Str<'a> = "@type",
    }
}

// ---------------------------------------------------------------------------------------------
// Filter chains.

/// A long list a walk read in parts on every core (see [`ListKind`]): what the typed reader of
/// the whole list would have read, kept by handle in the loader's table until the object that
/// holds the list takes it.
#[derive(Debug)]
pub(crate) enum PartList<'a> {
    Chains(Vec<FilterChain<'a>>),
    Objects(Vec<RawObject<'a>>),
    DynamicListeners(Vec<RawDynamicListener<'a>>),
    Clusters(Vec<BuiltCluster<'a>>),
}

impl<'a> PartList<'a> {
    pub(crate) fn empty(kind: ListKind) -> Self {
        match kind {
            ListKind::Chains => PartList::Chains(Vec::new()),
            ListKind::Objects => PartList::Objects(Vec::new()),
            ListKind::DynamicListeners => PartList::DynamicListeners(Vec::new()),
            ListKind::Clusters => PartList::Clusters(Vec::new()),
        }
    }

    /// This part, with room for a whole list of `len` items (sized once: an item is a few
    /// hundred bytes to a few kilobytes, and each doubling copies all of them).
    pub(crate) fn with_capacity_for(mut self, len: usize) -> Self {
        match &mut self {
            PartList::Chains(v) => v.reserve_exact(len.saturating_sub(v.len())),
            PartList::Objects(v) => v.reserve_exact(len.saturating_sub(v.len())),
            PartList::DynamicListeners(v) => v.reserve_exact(len.saturating_sub(v.len())),
            PartList::Clusters(v) => v.reserve_exact(len.saturating_sub(v.len())),
        }
        self
    }

    /// Appends the next part of the same list.
    pub(crate) fn extend(&mut self, next: Self) {
        match (self, next) {
            (PartList::Chains(v), PartList::Chains(n)) => v.extend(n),
            (PartList::Objects(v), PartList::Objects(n)) => v.extend(n),
            (PartList::DynamicListeners(v), PartList::DynamicListeners(n)) => v.extend(n),
            (PartList::Clusters(v), PartList::Clusters(n)) => v.extend(n),
            // The parts of one list are read by one kind's reader.
            _ => {}
        }
    }
}

/// Reads the items of a part of a long list (see [`PartList`]); the first has index `first`
/// in the list.
#[cfg(feature = "parallel")]
pub(crate) fn read_part<'de>(
    items: &mut super::envoy_json::PartItems<'_, '_, 'de>,
    first: usize,
    kind: ListKind,
) -> Result<PartList<'de>, serde_json::Error> {
    let capacity = items.items_left();
    Ok(match kind {
        ListKind::Chains => match read_chains(first, capacity, |e| e.visit_seq(items))? {
            Chains::Read(chains) => PartList::Chains(chains),
            Chains::Split(_) => PartList::Chains(Vec::new()),
        },
        ListKind::Objects => PartList::Objects(read_items(items, capacity)?),
        ListKind::DynamicListeners => PartList::DynamicListeners(read_items(items, capacity)?),
        ListKind::Clusters => PartList::Clusters(read_items(items, capacity)?),
    })
}

/// The items of a part of a [`LongList`], as its own reader reads them.
#[cfg(feature = "parallel")]
fn read_items<'de, T: Deserialize<'de> + Default>(
    items: &mut super::envoy_json::PartItems<'_, '_, 'de>,
    capacity: usize,
) -> Result<Vec<T>, serde_json::Error> {
    let mut out = Vec::with_capacity(capacity);
    Elements { push: &mut |item| out.push(item), what: "a list", depth: 0 }.visit_seq(items)?;
    Ok(out)
}

/// `filter_chains`: converted chain by chain as the list is read, or read in parts on every
/// core by the walk (a long list), which hands over the handle of what it read.
#[derive(Debug)]
pub(crate) enum Chains<'a> {
    Read(Vec<FilterChain<'a>>),
    /// The handle of the chains in the loader's table of lists read in parts.
    Split(usize),
}

impl<'a> Chains<'a> {
    /// The chains, taken from `split` when they were read in parts.
    pub(crate) fn take(self, split: &mut [PartList<'a>]) -> Vec<FilterChain<'a>> {
        match self {
            Chains::Read(chains) => chains,
            Chains::Split(h) => match split.get_mut(h) {
                Some(PartList::Chains(chains)) => std::mem::take(chains),
                _ => Vec::new(),
            },
        }
    }
}

impl<'de> Deserialize<'de> for Chains<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_newtype_struct(ListKind::Chains.name(), ChainsVisitor)
    }
}

/// Reads the chains `read` hands to the element reader it is given, the first with index
/// `first` in the list; `capacity`: how many there are likely to be, when known.
fn read_chains<'de, E>(
    first: usize,
    capacity: usize,
    read: impl FnOnce(Elements<'_, RawFilterChain<'de>>) -> Result<(), E>,
) -> Result<Chains<'de>, E> {
    // Sized once where the count is known (a part of a list read in parts): a chain is a few
    // hundred bytes, and each doubling copies all of them.
    let mut out = Vec::with_capacity(capacity);
    let mut push = |raw: RawFilterChain<'de>| {
        // A list of `u32::MAX` chains would not fit in the longest text the loader reads.
        let index = ChainIndex::listed(u32::try_from(first + out.len()).unwrap_or(u32::MAX));
        out.push(raw.into_model(index));
    };
    read(Elements { push: &mut push, what: "a list of FilterChain objects", depth: 0 })?;
    // Doubling leaves up to half the list unused; a 400k-chain listener would keep ~70 MB of it.
    out.shrink_to_fit();
    Ok(Chains::Read(out))
}

/// What [`Chains`] is handed: a list read in parts (its handle), or what any list reader gets.
struct ChainsVisitor;

impl<'de> Visitor<'de> for ChainsVisitor {
    type Value = Chains<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of FilterChain objects")
    }
    fn visit_u128<E: serde::de::Error>(self, handle: u128) -> Result<Self::Value, E> {
        Ok(Chains::Split(handle as usize))
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        read_chains(0, 0, |e| d.deserialize_any(e))
    }
    fn visit_seq<S: serde::de::SeqAccess<'de>>(self, s: S) -> Result<Self::Value, S::Error> {
        read_chains(0, 0, |e| e.visit_seq(s))
    }
    fn visit_map<M: serde::de::MapAccess<'de>>(self, m: M) -> Result<Self::Value, M::Error> {
        read_chains(0, 0, |e| e.visit_map(m))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        read_chains(0, 0, |e| e.visit_unit())
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        read_chains(0, 0, |e| e.visit_unit())
    }
}

proto_message! {
    /// Its large parts boxed (a transport socket is 670 bytes): each value is handed up through
    /// the schema reader's layers by value.
    pub(crate) struct RawFilterChain<'a> as "a FilterChain object" {
        name: Str<'a> = "name",
        filter_chain_match: Box<RawFilterChainMatch<'a>> = "filter_chain_match" | "filterChainMatch",
        filters: Repeated<RawFilter<'a>> = "filters",
        transport_socket: Box<RawTransportSocket<'a>> = "transport_socket" | "transportSocket",
    }
}

impl<'a> RawFilterChain<'a> {
    fn into_model(self, index: ChainIndex) -> FilterChain<'a> {
        FilterChain {
            name_offset: self.name.as_ref().and_then(|n| n.offset()).and_then(|o| TextOffset::new(o.saturating_sub(1))),
            name: text(self.name),
            index,
            offset: object_offset(self.first_key).and_then(TextOffset::new),
            casing: Casing::from_camel(self.camel),
            filter_chain_match: self.filter_chain_match.map(|m| m.into_model()),
            filters: exact(self.filters, RawFilter::into_model),
            transport_socket: self.transport_socket.map(|t| Box::new(t.into_model())),
        }
    }
}

proto_message! {
    pub(crate) struct RawFilterChainMatch<'a> as "a FilterChainMatch object" {
        destination_port: Wrapped<U32> = "destination_port" | "destinationPort",
        prefix_ranges: Repeated<RawCidr<'a>> = "prefix_ranges" | "prefixRanges",
        address_suffix: Str<'a> = "address_suffix" | "addressSuffix",
        suffix_len: Wrapped<U32> = "suffix_len" | "suffixLen",
        direct_source_prefix_ranges: Repeated<RawCidr<'a>> = "direct_source_prefix_ranges" | "directSourcePrefixRanges",
        source_type: SourceType = "source_type" | "sourceType",
        source_prefix_ranges: Repeated<RawCidr<'a>> = "source_prefix_ranges" | "sourcePrefixRanges",
        source_ports: Repeated<U32> = "source_ports" | "sourcePorts",
        server_names: Repeated<Str<'a>> = "server_names" | "serverNames",
        transport_protocol: Str<'a> = "transport_protocol" | "transportProtocol",
        application_protocols: Repeated<Str<'a>> = "application_protocols" | "applicationProtocols",
    }
}

impl<'a> RawFilterChainMatch<'a> {
    fn into_model(self) -> FilterChainMatch<'a> {
        let cidrs = |v: Option<Repeated<RawCidr<'a>>>| -> ThinVec<CidrRange<'a>> {
            exact(v, |c| CidrRange { address_prefix: cow(c.address_prefix), prefix_len: c.prefix_len.map(|l| l.0.0) })
        };
        FilterChainMatch {
            offset: object_offset(self.first_key).and_then(TextOffset::new),
            casing: Casing::from_camel(self.camel),
            destination_port: self.destination_port.map(|p| p.0.0),
            source_type: self.source_type.unwrap_or_default(),
            server_names: texts(self.server_names),
            transport_protocol: text(self.transport_protocol),
            application_protocols: texts(self.application_protocols),
            ..FilterChainMatch::default()
        }
        .with_addresses(MatchAddresses {
            prefix_ranges: cidrs(self.prefix_ranges),
            direct_source_prefix_ranges: cidrs(self.direct_source_prefix_ranges),
            source_prefix_ranges: cidrs(self.source_prefix_ranges),
            source_ports: exact(self.source_ports, |p| p.0),
            unimplemented: match (cow(self.address_suffix), self.suffix_len.map(|l| l.0.0)) {
                (address_suffix, None) if address_suffix.is_empty() => None,
                (address_suffix, suffix_len) => Some(AddressSuffix { address_suffix, suffix_len }),
            },
        })
    }
}

proto_message! {
    pub(crate) struct RawCidr<'a> as "a CidrRange object" {
        address_prefix: Str<'a> = "address_prefix" | "addressPrefix",
        prefix_len: Wrapped<U32> = "prefix_len" | "prefixLen",
    }
}

impl<'de> Deserialize<'de> for SourceType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match enum_value(d, &["ANY", "SAME_IP_OR_LOOPBACK", "EXTERNAL"])? {
            0 => SourceType::Any,
            1 => SourceType::SameIpOrLoopback,
            _ => SourceType::External,
        })
    }
}

proto_message! {
    pub(crate) struct RawTransportSocket<'a> as "a TransportSocket object" {
        name: Str<'a> = "name",
        typed_config: RawTlsConfig<'a> = "typed_config" | "typedConfig",
    }
}

proto_message! {
    /// A transport socket's typed_config: its type, and of a TLS context the ALPN it offers and
    /// its certificates.
    pub(crate) struct RawTlsConfig<'a> as "a typed_config object" {
        type_url: Str<'a> = "@type",
        common_tls_context: RawCommonTlsContext<'a> = "common_tls_context" | "commonTlsContext",
    }
}

proto_message! {
    pub(crate) struct RawCommonTlsContext<'a> as "a CommonTlsContext object" {
        alpn_protocols: Repeated<Str<'a>> = "alpn_protocols" | "alpnProtocols",
        tls_certificates: Repeated<RawTlsCertificate<'a>> = "tls_certificates" | "tlsCertificates",
        tls_certificate_sds_secret_configs: Repeated<RawSdsSecretConfig<'a>> =
            "tls_certificate_sds_secret_configs" | "tlsCertificateSdsSecretConfigs",
        tls_certificate_provider_instance: Present = "tls_certificate_provider_instance" | "tlsCertificateProviderInstance",
        custom_tls_certificate_selector: Present = "custom_tls_certificate_selector" | "customTlsCertificateSelector",
        validation_context_sds_secret_config: RawSdsSecretConfig<'a> =
            "validation_context_sds_secret_config" | "validationContextSdsSecretConfig",
        validation_context: RawValidationContext<'a> = "validation_context" | "validationContext",
        combined_validation_context: RawCombinedValidationContext<'a> =
            "combined_validation_context" | "combinedValidationContext",
    }
}

proto_message! {
    pub(crate) struct RawCombinedValidationContext<'a> as "a CombinedCertificateValidationContext object" {
        default_validation_context: RawValidationContext<'a> =
            "default_validation_context" | "defaultValidationContext",
    }
}

proto_message! {
    pub(crate) struct RawValidationContext<'a> as "a CertificateValidationContext object" {
        trusted_ca: RawDataSource<'a> = "trusted_ca" | "trustedCa",
        match_typed_subject_alt_names: Repeated<RawSanMatcher<'a>> =
            "match_typed_subject_alt_names" | "matchTypedSubjectAltNames",
    }
}

proto_message! {
    pub(crate) struct RawSanMatcher<'a> as "a SubjectAltNameMatcher object" {
        san_type: U32 = "san_type" | "sanType",
        oid: Str<'a> = "oid",
    }
}

/// `SubjectAltNameMatcher.SanType.OTHER_NAME`.
const SAN_OTHER_NAME: u32 = 5;

proto_message! {
    pub(crate) struct RawTlsCertificate<'a> as "a TlsCertificate object" {
        certificate_chain: RawDataSource<'a> = "certificate_chain" | "certificateChain",
        private_key: RawDataSource<'a> = "private_key" | "privateKey",
        private_key_provider: Present = "private_key_provider" | "privateKeyProvider",
        pkcs12: Present = "pkcs12",
    }
}

proto_message! {
    pub(crate) struct RawDataSource<'a> as "a DataSource object" {
        filename: Str<'a> = "filename",
        inline_string: Str<'a> = "inline_string" | "inlineString",
        inline_bytes: Str<'a> = "inline_bytes" | "inlineBytes",
        environment_variable: Str<'a> = "environment_variable" | "environmentVariable",
    }
}

impl RawDataSource<'_> {
    /// What it is to Envoy: a source given empty is no data.
    fn source(d: Option<&Self>) -> Source {
        let Some(d) = d else { return Source::Absent };
        let specifiers = [&d.filename, &d.inline_string, &d.inline_bytes, &d.environment_variable];
        if specifiers.iter().all(|s| s.is_none()) {
            Source::Unset
        } else if specifiers.iter().any(|s| s.as_ref().is_some_and(|s| !s.0.is_empty())) {
            Source::Given
        } else {
            Source::Empty
        }
    }
}

proto_message! {
    pub(crate) struct RawSdsSecretConfig<'a> as "an SdsSecretConfig object" {
        name: Str<'a> = "name",
        sds_config: Present = "sds_config" | "sdsConfig",
    }
}

impl<'a> RawTransportSocket<'a> {
    pub(crate) fn into_model(self) -> TransportSocket<'a> {
        let typed_camel = Casing::from_camel(self.camel);
        let (type_url, ctx, ctx_camel) = match self.typed_config {
            Some(c) => {
                let camel = Casing::from_camel(c.camel);
                (c.type_url, c.common_tls_context, camel)
            }
            None => (None, None, Casing::Snake),
        };
        let is_tls = type_url
            .as_ref()
            .is_some_and(|t| t.0.ends_with(".DownstreamTlsContext") || t.0.ends_with(".UpstreamTlsContext"));
        // Pointers below the socket are spelled only for what a finding may name (rarely any).
        let base = || join_field(&join_field("", typed_camel, "typed_config"), ctx_camel, "common_tls_context");
        let (alpn, certificates) = match ctx {
            Some(ctx) => {
                let certs = is_tls.then(|| ctx.certificates(base));
                (ctx.alpn_protocols, certs)
            }
            None => (None, is_tls.then(TlsCertificates::default)),
        };
        TransportSocket {
            name: text(self.name),
            type_url: type_url.map(Str::into_text),
            alpn_protocols: texts(alpn),
            certificates,
        }
    }
}

impl<'a> RawCommonTlsContext<'a> {
    /// The certificates it names, with `base` the context's pointer below the transport socket.
    fn certificates(&self, base: impl Fn() -> String) -> TlsCertificates<'a> {
        let casing = Casing::from_camel(self.camel);
        let sds = self.tls_certificate_sds_secret_configs.as_ref().map_or(&[][..], |l| &l.0[..]);
        let mut static_secrets = ThinVec::new();
        for (i, s) in sds.iter().enumerate() {
            if s.sds_config.is_none()
                && let Some(name) = &s.name
            {
                let list = join_field(&base(), casing, "tls_certificate_sds_secret_configs");
                static_secrets.push((join_index(&list, i), name.0.clone()));
            }
        }
        if let Some(v) = &self.validation_context_sds_secret_config
            && v.sds_config.is_none()
            && let Some(name) = &v.name
        {
            static_secrets.push((join_field(&base(), casing, "validation_context_sds_secret_config"), name.0.clone()));
        }
        let inline = self.tls_certificates.as_ref().filter(|l| !l.0.is_empty()).map_or_else(ThinVec::new, |l| {
            let list = join_field(&base(), casing, "tls_certificates");
            l.0.iter()
                .enumerate()
                .filter(|(_, c)| c.private_key_provider.is_none() && c.pkcs12.is_none())
                .map(|(i, c)| {
                    let chain = RawDataSource::source(c.certificate_chain.as_ref());
                    (join_index(&list, i), chain, RawDataSource::source(c.private_key.as_ref()))
                })
                .collect()
        });
        let mut pem = ThinVec::new();
        let mut other_name_oids = ThinVec::new();
        if let Some(l) = &self.tls_certificates {
            let list = join_field(&base(), casing, "tls_certificates");
            for (i, c) in l.0.iter().enumerate() {
                let at = join_index(&list, i);
                for (holds, field, d) in [
                    (PemHolds::CertificateChain, "certificate_chain", &c.certificate_chain),
                    (PemHolds::PrivateKey, "private_key", &c.private_key),
                ] {
                    if let Some(text) = d.as_ref().and_then(|d| d.inline_string.as_ref()) {
                        let pointer = join_field(&at, Casing::from_camel(c.camel), field);
                        pem.push(Pem { pointer, holds, text: text.0.clone() });
                    }
                }
            }
        }
        let validation = [
            (self.validation_context.as_ref(), join_field(&base(), casing, "validation_context")),
            (
                self.combined_validation_context.as_ref().and_then(|c| c.default_validation_context.as_ref()),
                self.combined_validation_context.as_ref().map_or_else(String::new, |c| {
                    let at = join_field(&base(), casing, "combined_validation_context");
                    join_field(&at, Casing::from_camel(c.camel), "default_validation_context")
                }),
            ),
        ];
        for (v, at) in validation {
            let Some(v) = v else { continue };
            let vcasing = Casing::from_camel(v.camel);
            if let Some(text) = v.trusted_ca.as_ref().and_then(|d| d.inline_string.as_ref()) {
                let pointer = join_field(&at, vcasing, "trusted_ca");
                pem.push(Pem { pointer, holds: PemHolds::TrustedCa, text: text.0.clone() });
            }
            let matchers = join_field(&at, vcasing, "match_typed_subject_alt_names");
            for (i, m) in v.match_typed_subject_alt_names.iter().flat_map(|l| &l.0).enumerate() {
                if m.san_type.is_some_and(|t| t.0 == SAN_OTHER_NAME) {
                    let oid = m.oid.as_ref().map_or(Cow::Borrowed(""), |o| o.0.clone());
                    other_name_oids.push((join_index(&matchers, i), oid));
                }
            }
        }
        TlsCertificates {
            pem,
            other_name_oids,
            inline,
            by_sds: sds.iter().any(|s| s.sds_config.is_some())
                || self.validation_context_sds_secret_config.as_ref().is_some_and(|v| v.sds_config.is_some()),
            any: self.tls_certificates.as_ref().is_some_and(|l| !l.0.is_empty())
                || !sds.is_empty()
                || self.tls_certificate_provider_instance.is_some()
                || self.custom_tls_certificate_selector.is_some(),
            static_secrets,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Network filters: xdsck reads tcp_proxy's clusters and http_connection_manager's route source.

proto_message! {
    pub(crate) struct RawFilter<'a> as "a Filter object" {
        name: Str<'a> = "name",
        typed_config: RawFilterConfig<'a> = "typed_config" | "typedConfig",
    }
}

impl<'a> RawFilter<'a> {
    fn into_model(self) -> NetworkFilter<'a> {
        let name = text(self.name);
        let Some(cfg) = self.typed_config else {
            return NetworkFilter { name, type_url: None, kind: NetworkFilterKind::Other };
        };
        let type_url = cfg.type_url.clone().map(Str::into_text);
        let is = |suffix: &str, filter: &str| type_url.as_deref().map_or(name == filter, |t| t.ends_with(suffix));
        let kind = if is(".tcp_proxy.v3.TcpProxy", "envoy.filters.network.tcp_proxy") {
            let weighted = cfg.weighted_clusters.and_then(|w| w.clusters).unwrap_or_default();
            let clusters =
                cfg.cluster.into_iter().map(Str::into_text).chain(weighted.into_iter().map(|c| text(c.name)));
            NetworkFilterKind::TcpProxy { clusters: clusters.collect() }
        } else if is(
            ".http_connection_manager.v3.HttpConnectionManager",
            "envoy.filters.network.http_connection_manager",
        ) {
            NetworkFilterKind::HttpConnectionManager(Box::new(cfg.into_hcm(Casing::from_camel(self.camel))))
        } else {
            NetworkFilterKind::Other
        };
        NetworkFilter { name, type_url, kind }
    }
}

proto_message! {
    /// The typed_config of a network filter: the fields of TcpProxy and HttpConnectionManager
    /// that xdsck reads (no other common filter uses these names with other types).
    pub(crate) struct RawFilterConfig<'a> as "a typed_config object" {
        type_url: Str<'a> = "@type",
        stat_prefix: Str<'a> = "stat_prefix" | "statPrefix",
        cluster: Str<'a> = "cluster",
        weighted_clusters: RawWeightedClusters<'a> = "weighted_clusters" | "weightedClusters",
        rds: Obj<RawRds<'a>> = "rds",
        route_config: Obj<RawRouteConfiguration<'a>> = "route_config" | "routeConfig",
        scoped_routes: Given = "scoped_routes" | "scopedRoutes",
        strip_any_host_port: LBool = "strip_any_host_port" | "stripAnyHostPort",
        strip_matching_host_port: LBool = "strip_matching_host_port" | "stripMatchingHostPort",
        codec_type: Codec = "codec_type" | "codecType",
    }
}

impl<'a> RawFilterConfig<'a> {
    /// The http_connection_manager, its table not yet placed (the listener's loader does that,
    /// knowing where the listener is).
    /// The HCM of a filter whose own keys are spelt `filter_casing`.
    fn into_hcm(self, filter_casing: Casing) -> Hcm<'a> {
        let routes = if let Some(rds) = self.rds.and_then(|r| r.0) {
            HcmRoutes::Rds(super::route_raw::string(rds.route_config_name).unwrap_or_default())
        } else if let Some(rc) = self.route_config.and_then(|r| r.0) {
            HcmRoutes::Inline(Box::new(TableParts::of(*rc).table(TableOrigin::Inline)))
        } else if self.scoped_routes.is_some() {
            HcmRoutes::Scoped
        } else {
            HcmRoutes::None
        };
        Hcm {
            source: SourceId::default(),
            routes,
            strip_any_host_port: self.strip_any_host_port.and_then(|b| b.0).unwrap_or(false),
            strip_matching_host_port: self.strip_matching_host_port.and_then(|b| b.0).unwrap_or(false),
            codec_type: self.codec_type.map_or(CodecType::Auto, |c| c.0),
            table_key: if self.camel { "routeConfig" } else { "route_config" },
            filter_casing,
        }
    }
}

proto_message! {
    pub(crate) struct RawWeightedClusters<'a> as "a WeightedCluster object" {
        clusters: Repeated<RawNamed<'a>> = "clusters",
    }
}

proto_message! {
    pub(crate) struct RawNamed<'a> as "an object with a name" {
        name: Str<'a> = "name",
    }
}
