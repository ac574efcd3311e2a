//! The listener model every check and the match graph read.
//!
//! Strings borrow from the source text wherever the JSON had no escapes (`Cow::Borrowed`): a
//! 100 MB dump must not become 100 MB of small allocations. Positions are byte offsets into the
//! JSON text the loader parsed ([`crate::source::Locator::json_text`]); pointers are built on
//! demand from the listener's pointer and the chain's index.

use std::borrow::Cow;

pub mod matcher;

use crate::source::{Location, Locator, Pointer, SourceFile, SourceId, Translation, join_field, join_index};

/// Every input of a run, loaded.
#[derive(Debug, Default)]
pub struct Snapshot<'a> {
    pub inputs: Vec<Input<'a>>,
}

impl<'a> Snapshot<'a> {
    /// Every listener Envoy is (or would be) serving, across inputs.
    pub fn live_listeners(&self) -> impl Iterator<Item = &Listener<'a>> {
        self.inputs.iter().flat_map(|i| i.listeners.iter().filter(|l| l.state.is_live()))
    }
}

/// What kind of document an input was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// Envoy admin `/config_dump`.
    ConfigDump,
    /// `/config_dump?resource=dynamic_listeners`.
    DynamicListenersDump,
    /// `/config_dump?resource=static_listeners`.
    StaticListenersDump,
    Bootstrap,
    /// One Listener, a list of them, or a YAML stream of them.
    Listeners,
    DiscoveryResponse,
    /// An xDS DeltaDiscoveryResponse (`system_version_info`, `removed_resources`).
    DeltaDiscoveryResponse,
    /// CiliumEnvoyConfig / CiliumClusterwideEnvoyConfig, alone, in a stream or in a `kind: List`.
    CiliumEnvoyConfig,
    /// A YAML stream or JSON list mixing several of the above.
    Mixed,
}

impl InputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::ConfigDump => "config_dump",
            InputKind::DynamicListenersDump => "config_dump (dynamic_listeners)",
            InputKind::StaticListenersDump => "config_dump (static_listeners)",
            InputKind::Bootstrap => "bootstrap",
            InputKind::Listeners => "listeners",
            InputKind::DiscoveryResponse => "discovery_response",
            InputKind::DeltaDiscoveryResponse => "delta_discovery_response",
            InputKind::CiliumEnvoyConfig => "CiliumEnvoyConfig",
            InputKind::Mixed => "mixed",
        }
    }
}

/// One loaded input.
#[derive(Debug)]
pub struct Input<'a> {
    pub source: SourceId,
    pub kind: InputKind,
    /// Every listener found, in document order, whatever its state.
    pub listeners: Vec<Listener<'a>>,
    /// Rejected updates Envoy recorded (`error_state` of a dynamic listener).
    pub error_states: Vec<ErrorState<'a>>,
    /// What the input holds besides listeners, each named and located: nothing is dropped
    /// without a trace.
    pub skipped: Vec<Skipped>,
    /// The translation a YAML input was read through (owned by the `load::Document` this input
    /// borrows from): offsets above are into its JSON. `None` for JSON and protobuf.
    pub translation: Option<&'a dyn Translation>,
}

impl<'a> Input<'a> {
    /// Where the places this input records are in `file`, its source's text.
    pub fn locator<'s>(&self, file: &'s SourceFile) -> Locator<'s>
    where
        'a: 's,
    {
        Locator::new(file, self.translation)
    }
}

/// A part of an input that is not a listener, so xdsck does not check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub kind: SkippedKind,
    /// What it is: `a Kubernetes \`Service\``, or the resource's type (`Cluster`).
    pub what: String,
    pub pointer: Pointer,
    /// Byte offset in the source's JSON text.
    pub offset: Option<usize>,
}

/// Why a part of an input was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkippedKind {
    /// A document of a stream or list that is not Envoy configuration at all (reported).
    Document,
    /// An xDS resource of another type than Listener (a Cluster next to the listeners of a
    /// DiscoveryResponse or a CiliumEnvoyConfig): counted in the inventory.
    Resource,
}

impl Input<'_> {
    /// The distinct `version_info`s of the live listeners, sorted.
    pub fn versions(&self) -> Vec<String> {
        let set: std::collections::BTreeSet<&str> = self
            .listeners
            .iter()
            .filter(|l| l.state.is_live())
            .filter_map(|l| l.version_info.as_deref())
            .filter(|v| !v.is_empty())
            .collect();
        set.into_iter().map(str::to_owned).collect()
    }

    pub fn inventory(&self) -> Inventory {
        let mut inv = Inventory { failed: self.error_states.len(), ..Inventory::default() };
        for s in &self.skipped {
            match s.kind {
                SkippedKind::Document => inv.skipped_documents += 1,
                SkippedKind::Resource => inv.other_resources += 1,
            }
        }
        for l in &self.listeners {
            match l.state {
                ListenerState::Warming => inv.warming += 1,
                ListenerState::Draining => inv.draining += 1,
                s if s.is_live() => {
                    inv.listeners += 1;
                    inv.filter_chains += l.filter_chains.len();
                }
                _ => {}
            }
        }
        inv
    }
}

/// Counts per input, for the report's `inputs` section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inventory {
    /// Live listeners: static and active (or declared, for inputs that are not dumps).
    pub listeners: usize,
    /// Filter chains in the live listeners (the default chain not counted).
    pub filter_chains: usize,
    pub warming: usize,
    pub draining: usize,
    /// Rejected updates (`error_state`).
    pub failed: usize,
    /// xDS resources of other types (clusters, route tables, secrets), not checked.
    pub other_resources: usize,
    /// Documents that are not Envoy configuration, not checked (each is also a finding).
    pub skipped_documents: usize,
}

/// Where a listener stands in Envoy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListenerState {
    /// From the bootstrap's static_resources, as listed in a config_dump.
    Static,
    /// `dynamic_listeners[].active_state`.
    Active,
    /// `dynamic_listeners[].warming_state`.
    Warming,
    /// `dynamic_listeners[].draining_state`.
    Draining,
    /// A listener given to Envoy (bootstrap, bare listener, xDS response, CEC): it is what Envoy
    /// would serve if it accepts it.
    #[default]
    Declared,
}

impl ListenerState {
    pub fn is_live(self) -> bool {
        matches!(self, ListenerState::Static | ListenerState::Active | ListenerState::Declared)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ListenerState::Static => "static",
            ListenerState::Active => "active",
            ListenerState::Warming => "warming",
            ListenerState::Draining => "draining",
            ListenerState::Declared => "declared",
        }
    }
}

/// A rejected listener update that Envoy recorded in a config_dump.
#[derive(Debug)]
pub struct ErrorState<'a> {
    /// The dynamic listener entry's name.
    pub listener_name: Cow<'a, str>,
    /// Envoy's own error text.
    pub details: Cow<'a, str>,
    pub last_update_attempt: Option<Cow<'a, str>>,
    /// Pointer and offset of the `error_state` object.
    pub pointer: Pointer,
    pub offset: Option<usize>,
    /// Whether the same entry also has an active state (an update to a running listener was
    /// refused) or not (a new listener was refused; the entry holds only the error).
    pub has_active_state: bool,
    /// The configuration Envoy refused, when the dump carries it.
    pub failed_configuration: Option<Listener<'a>>,
}

pub use crate::source::Casing;

/// An Envoy Listener.
#[derive(Debug, Default)]
pub struct Listener<'a> {
    /// As Envoy names it (for CECs: `<namespace>/<cec>/<listener>` as the Cilium agent does).
    pub name: Cow<'a, str>,
    pub state: ListenerState,
    /// `version_info` of the dump entry, when there is one.
    pub version_info: Option<Cow<'a, str>>,
    /// RFC 6901 pointer of the Listener object in the source.
    pub pointer: Pointer,
    /// Byte offset of the Listener object in the source's JSON text.
    pub offset: Option<usize>,
    pub casing: Casing,
    pub address: Option<Address<'a>>,
    pub additional_addresses: Vec<Address<'a>>,
    pub bind_to_port: Option<bool>,
    pub use_original_dst: bool,
    pub enable_reuse_port: Option<bool>,
    pub listener_filters: Vec<ListenerFilter<'a>>,
    pub filter_chains: Vec<FilterChain<'a>>,
    pub default_filter_chain: Option<FilterChain<'a>>,
    /// The unified matcher, typed by the loader.
    pub filter_chain_matcher: Option<matcher::FilterChainMatcher>,
    /// `internal_listener` is set (an Envoy internal listener, no socket).
    pub internal_listener: bool,
    /// `api_listener` is set.
    pub api_listener: bool,
    /// `udp_listener_config` is set (UDP or QUIC).
    pub udp_listener_config: bool,
    /// The listener comes from a CiliumEnvoyConfig: the Cilium agent gives one without an
    /// address its own proxy port, so a missing address is no error there.
    pub address_assigned_by_agent: bool,
    /// The `xdsck.io/ignore` annotation of the CiliumEnvoyConfig the listener came in.
    pub ignore_annotation: Option<IgnoreAnnotation<'a>>,
}

/// A CiliumEnvoyConfig's `xdsck.io/ignore` annotation (rules to silence on its listeners), as
/// written, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoreAnnotation<'a> {
    pub value: Cow<'a, str>,
    pub pointer: Pointer,
}

impl<'a> Listener<'a> {
    /// Every address, the primary first.
    pub fn addresses(&self) -> impl Iterator<Item = &Address<'a>> {
        self.address.iter().chain(self.additional_addresses.iter())
    }

    /// Whether Envoy refuses the listener for having no address ("address is necessary"):
    /// every listener needs one but internal listeners (Envoy names them `envoy://<name>/`)
    /// and CiliumEnvoyConfig listeners (the agent assigns one). Checked with envoy 1.40.
    pub fn lacks_address(&self) -> bool {
        self.address.is_none() && !self.internal_listener && !self.api_listener && !self.address_assigned_by_agent
    }

    /// The address list as Envoy prints it in errors: comma-joined, IPv6 in brackets.
    pub fn envoy_address_list(&self) -> String {
        // An internal listener written without an address gets `envoy://<name>/` from Envoy,
        // and that is what its errors print (checked with envoy 1.40 --mode validate).
        if self.address.is_none() && self.internal_listener {
            let mut list = format!("envoy://{}/", self.name);
            for a in &self.additional_addresses {
                list.push(',');
                list.push_str(&a.to_string());
            }
            return list;
        }
        self.addresses().map(|a| a.to_string()).collect::<Vec<_>>().join(",")
    }

    /// Whether a listener filter with this name (or whose typed_config has this type) is present.
    pub fn has_listener_filter(&self, name: &str, type_suffix: &str) -> bool {
        self.listener_filters
            .iter()
            .any(|f| f.name == name || f.type_url.as_deref().is_some_and(|t| t.ends_with(type_suffix)))
    }

    /// Whether a `tls_inspector` reads the ClientHello: without it Envoy sees neither TLS, SNI
    /// nor ALPN (it has not added one by itself since 1.17).
    pub fn has_tls_inspector(&self) -> bool {
        self.has_listener_filter("envoy.filters.listener.tls_inspector", ".tls_inspector.v3.TlsInspector")
    }

    /// Whether an `http_inspector` sets a plaintext ALPN (`http/1.1`, `h2c`).
    pub fn has_http_inspector(&self) -> bool {
        self.has_listener_filter("envoy.filters.listener.http_inspector", ".http_inspector.v3.HttpInspector")
    }

    /// Whether a connection may present another local address than the listener's socket:
    /// `use_original_dst`, `original_dst`, `proxy_protocol`, or Cilium's transparent proxy
    /// (`bpf_metadata`, whose local address is the original destination).
    pub fn restores_destination(&self) -> bool {
        self.use_original_dst
            || self.has_listener_filter("envoy.filters.listener.original_dst", ".original_dst.v3.OriginalDst")
            || self.has_listener_filter("envoy.filters.listener.proxy_protocol", ".proxy_protocol.v3.ProxyProtocol")
            || self.has_listener_filter("cilium.bpf_metadata", ".BpfMetadata")
    }

    /// The pointer of a filter chain of this listener.
    pub fn chain_pointer(&self, chain: &FilterChain<'_>) -> String {
        match chain.index {
            ChainIndex::Listed(i) => join_index(&join_field(&self.pointer, self.casing, "filter_chains"), i),
            ChainIndex::Default => join_field(&self.pointer, self.casing, "default_filter_chain"),
        }
    }

    /// The location of the listener in its source's original text.
    pub fn location(&self, source: SourceId, text: Locator<'_>) -> Location {
        Location::new(source, self.pointer.clone(), self.offset.map(|o| text.node_offset(o)))
    }

    /// The location of one of its chains.
    pub fn chain_location(&self, source: SourceId, text: Locator<'_>, chain: &FilterChain<'_>) -> Location {
        // The chain's name says which chain it is; its opening brace does not, so an unnamed
        // chain is shown at its first key (`"filter_chain_match": {`), not at a bare `{`.
        let offset = match (chain.name_offset, chain.offset) {
            (Some(o), _) | (None, Some(o)) => Some(text.original_offset(o)),
            (None, None) => self.offset.map(|o| text.node_offset(o)),
        };
        Location::new(source, self.chain_pointer(chain), offset)
    }
}

/// A listener or upstream address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address<'a> {
    Socket(SocketAddress<'a>),
    Pipe { path: Cow<'a, str>, mode: Option<u32> },
    EnvoyInternal { server_listener_name: Cow<'a, str>, endpoint_id: Cow<'a, str> },
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SocketAddress<'a> {
    pub address: Cow<'a, str>,
    pub port_value: Option<u32>,
    pub named_port: Option<Cow<'a, str>>,
    pub protocol: Protocol,
    pub ipv4_compat: bool,
    pub resolver_name: Option<Cow<'a, str>>,
    pub network_namespace_filepath: Option<Cow<'a, str>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Protocol {
    #[default]
    Tcp,
    Udp,
}

impl std::fmt::Display for Address<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Socket(s) => {
                let port = s.port_value.unwrap_or(0);
                // Envoy prints the address it parsed, not the text (`::FFFF:1.2.3.4` becomes
                // `[::ffff:1.2.3.4]`), so an IP literal is printed in its canonical form.
                match s.address.parse::<std::net::IpAddr>() {
                    Ok(std::net::IpAddr::V4(ip)) => write!(f, "{ip}:{port}"),
                    Ok(std::net::IpAddr::V6(ip)) => write!(f, "[{}]:{port}", CanonicalIpv6(ip)),
                    Err(_) if s.address.contains(':') => write!(f, "[{}]:{}", s.address, port),
                    Err(_) => write!(f, "{}:{}", s.address, port),
                }
            }
            Address::Pipe { path, .. } => f.write_str(path),
            Address::EnvoyInternal { server_listener_name, .. } => {
                write!(f, "envoy://{server_listener_name}/")
            }
        }
    }
}

/// An IPv6 address as glibc's `inet_ntop` (which Envoy uses) prints it. Rust's `Display` agrees
/// except for IPv4-compatible addresses (`::1.2.3.4`), which glibc prints in dotted form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CanonicalIpv6(pub std::net::Ipv6Addr);

impl std::fmt::Display for CanonicalIpv6 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0.segments();
        if s[..6].iter().all(|&w| w == 0) && s[6] != 0 {
            let [a, b] = s[6].to_be_bytes();
            let [c, d] = s[7].to_be_bytes();
            return write!(f, "::{a}.{b}.{c}.{d}");
        }
        write!(f, "{}", self.0)
    }
}

/// A listener filter (`tls_inspector`, `http_inspector`, `original_dst`, `proxy_protocol`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerFilter<'a> {
    pub name: Cow<'a, str>,
    /// `typed_config["@type"]`, when given.
    pub type_url: Option<Cow<'a, str>>,
}

/// Which chain of a listener: one of `filter_chains`, or `default_filter_chain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChainIndex {
    Listed(usize),
    Default,
}

/// A filter chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterChain<'a> {
    /// As written; may be empty (Cilium emits unnamed chains).
    pub name: Cow<'a, str>,
    pub index: ChainIndex,
    /// Byte offset of the chain object in the JSON text.
    pub offset: Option<usize>,
    /// Byte offset of its `name` value in the JSON text: where findings about the chain point.
    pub name_offset: Option<usize>,
    pub casing: Casing,
    /// `None` when the chain has no `filter_chain_match` (which Envoy treats as `{}`).
    pub filter_chain_match: Option<FilterChainMatch<'a>>,
    pub filters: Vec<NetworkFilter<'a>>,
    pub transport_socket: Option<TransportSocket<'a>>,
}

impl FilterChain<'_> {
    /// How xdsck names the chain: its name, or `filter_chains[N]` when it has none.
    pub fn display_name(&self) -> Cow<'_, str> {
        if !self.name.is_empty() {
            return Cow::Borrowed(&self.name);
        }
        match self.index {
            ChainIndex::Listed(i) => Cow::Owned(format!("filter_chains[{i}]")),
            ChainIndex::Default => Cow::Borrowed("default_filter_chain"),
        }
    }

    /// Whether the chain terminates TLS (a downstream TLS or QUIC transport socket).
    pub fn terminates_tls(&self) -> bool {
        self.transport_socket.as_ref().is_some_and(TransportSocket::terminates_tls)
    }

    /// Whether the chain is TLS passthrough: no TLS termination, a `tcp_proxy` as its filter.
    pub fn is_tcp_proxy(&self) -> bool {
        self.filters.iter().any(|f| matches!(f.kind, NetworkFilterKind::TcpProxy { .. }))
    }
}

/// `FilterChainMatch`, every field, as written (normalisation happens in the graph).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilterChainMatch<'a> {
    pub offset: Option<usize>,
    pub casing: Casing,
    pub destination_port: Option<u32>,
    pub prefix_ranges: Vec<CidrRange<'a>>,
    pub address_suffix: Cow<'a, str>,
    pub suffix_len: Option<u32>,
    pub direct_source_prefix_ranges: Vec<CidrRange<'a>>,
    pub source_type: SourceType,
    pub source_prefix_ranges: Vec<CidrRange<'a>>,
    pub source_ports: Vec<u32>,
    pub server_names: Vec<Cow<'a, str>>,
    pub transport_protocol: Cow<'a, str>,
    pub application_protocols: Vec<Cow<'a, str>>,
}

/// `config.core.v3.CidrRange`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CidrRange<'a> {
    pub address_prefix: Cow<'a, str>,
    /// Unset means 0 (so an address without a length matches the whole family).
    pub prefix_len: Option<u32>,
}

/// `FilterChainMatch.ConnectionSourceType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub enum SourceType {
    #[default]
    Any,
    SameIpOrLoopback,
    External,
}

impl SourceType {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::Any => "ANY",
            SourceType::SameIpOrLoopback => "SAME_IP_OR_LOOPBACK",
            SourceType::External => "EXTERNAL",
        }
    }
}

/// A network filter of a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkFilter<'a> {
    pub name: Cow<'a, str>,
    pub type_url: Option<Cow<'a, str>>,
    pub kind: NetworkFilterKind<'a>,
}

/// What xdsck knows about the filters it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkFilterKind<'a> {
    TcpProxy {
        /// `cluster`, or the weighted clusters' names.
        clusters: Vec<Cow<'a, str>>,
        stat_prefix: Option<Cow<'a, str>>,
    },
    HttpConnectionManager {
        stat_prefix: Option<Cow<'a, str>>,
        routes: RouteSource<'a>,
    },
    Other,
}

/// Where an http_connection_manager gets its routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteSource<'a> {
    Rds { route_config_name: Cow<'a, str> },
    Inline { name: Option<Cow<'a, str>>, virtual_hosts: Vec<VirtualHost<'a>> },
    Scoped,
    None,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualHost<'a> {
    pub name: Cow<'a, str>,
    pub domains: Vec<Cow<'a, str>>,
}

/// A chain's transport socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportSocket<'a> {
    pub name: Cow<'a, str>,
    pub type_url: Option<Cow<'a, str>>,
}

impl TransportSocket<'_> {
    pub fn terminates_tls(&self) -> bool {
        match self.type_url.as_deref() {
            Some(t) => t.ends_with(".DownstreamTlsContext") || t.ends_with(".QuicDownstreamTransport"),
            None => matches!(&*self.name, "envoy.transport_sockets.tls" | "tls"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casing_spells_fields() {
        assert_eq!(Casing::Camel.field("filter_chain_match"), "filterChainMatch");
        assert_eq!(Casing::Camel.field("name"), "name");
        assert_eq!(Casing::Snake.field("filter_chain_match"), "filter_chain_match");
    }

    #[test]
    fn addresses_print_as_envoy_does() {
        let v6 = Address::Socket(SocketAddress { address: "::1".into(), port_value: Some(443), ..Default::default() });
        let v4 =
            Address::Socket(SocketAddress { address: "0.0.0.0".into(), port_value: Some(80), ..Default::default() });
        assert_eq!(v6.to_string(), "[::1]:443");
        assert_eq!(v4.to_string(), "0.0.0.0:80");
        // Checked against envoy 1.40: the parsed address is printed, not the text.
        let mapped = Address::Socket(SocketAddress {
            address: "::FFFF:1.2.3.4".into(),
            port_value: Some(1),
            ..Default::default()
        });
        assert_eq!(mapped.to_string(), "[::ffff:1.2.3.4]:1");
        let compat =
            Address::Socket(SocketAddress { address: "::1.2.3.4".into(), port_value: Some(1), ..Default::default() });
        assert_eq!(compat.to_string(), "[::1.2.3.4]:1");
    }
}
