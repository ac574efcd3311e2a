//! The listener model every check and the match graph read.
//!
//! Strings borrow from the source text wherever the JSON had no escapes (`Cow::Borrowed`): a
//! 100 MB dump must not become 100 MB of small allocations. Positions are byte offsets into the
//! JSON text the loader parsed ([`crate::source::Locator::json_text`]); pointers are built on
//! demand from the listener's pointer and the chain's index.

use std::borrow::Cow;

use thin_vec::ThinVec;

/// A string of a filter chain: borrowed from the input's text unless reading it made it (an
/// escape, a protobuf input), as a `Cow` is, in two words instead of three (beef's lean `Cow`
/// keeps length and capacity in one word, 32 bits each: the loader refuses a text longer than
/// [`TextOffset::MAX_TEXT`], so no string of one is longer). A chain has half a dozen of them:
/// at 100k tenants (400k chains) the wider `Cow` was some 20 MB more of the model. The rest of
/// the model (listeners, route tables, clusters) still holds `Cow`s: there are fewer of them.
#[cfg(target_pointer_width = "64")]
pub type Text<'a> = beef::lean::Cow<'a, str>;
/// A string of a filter chain (see the 64-bit definition): beef's three-word `Cow` on
/// 32-bit targets (the page), where the lean one does not exist.
#[cfg(not(target_pointer_width = "64"))]
pub type Text<'a> = beef::Cow<'a, str>;

pub mod build;
pub mod matcher;
pub mod one_or_list;
pub mod problem;
pub mod route;

pub use one_or_list::OneOrList;

use crate::source::{Location, Locator, Pointer, SourceFile, SourceId, Translation, join_field, join_field_index};

/// A string as the model keeps it, in two words. Its length fits a [`Text`] (the loader refuses
/// a text longer than [`TextOffset::MAX_TEXT`], and an unescaped string or a name made of a few
/// of them is no longer than its text); room a parse left beyond 4 GiB would not, and is given
/// back first.
pub(crate) fn text_of(s: Cow<'_, str>) -> Text<'_> {
    match s {
        Cow::Borrowed(s) => Text::borrowed(s),
        Cow::Owned(mut s) => {
            if u32::try_from(s.capacity()).is_err() {
                s.shrink_to_fit();
            }
            Text::owned(s)
        }
    }
}

/// Every input of a run, loaded.
#[derive(Debug, Default)]
pub struct Snapshot<'a> {
    /// In the order they were given: findings and the report follow it.
    pub inputs: Vec<Input<'a>>,
    /// The inputs are one Envoy's (its config_dump beside new listeners, its LDS, RDS and CDS
    /// answers saved apart): a route table is checked against the clusters of all of them.
    /// Otherwise each input is an Envoy of its own, and lends no other its clusters.
    pub one_envoy: bool,
}

impl<'a> Snapshot<'a> {
    /// Adds a loaded input: a peer's map of proxies as one input per proxy.
    pub fn push(&mut self, input: Input<'a>) {
        if input.kind == InputKind::Proxies {
            self.inputs.extend(input.proxies);
        } else {
            self.inputs.push(input);
        }
    }

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
    /// An Envoy bootstrap; its `static_resources.listeners` are checked.
    Bootstrap,
    /// One Listener, a list of them, or a YAML stream of them.
    Listeners,
    /// An xDS (SotW) DiscoveryResponse of Listeners, as an LDS server sends it.
    DiscoveryResponse,
    /// An xDS DeltaDiscoveryResponse (`system_version_info`, `removed_resources`).
    DeltaDiscoveryResponse,
    /// CiliumEnvoyConfig / CiliumClusterwideEnvoyConfig, alone, in a stream or in a `kind: List`.
    CiliumEnvoyConfig,
    /// A YAML stream or JSON list mixing several of the above.
    Mixed,
    /// Kubernetes objects of other kinds only (a Service, a Deployment, a Kustomization): no
    /// Envoy configuration, each named by a `skipped-document` info.
    Kubernetes,
    /// xDS resources a peer's tool lists by type (`listeners:`, Kuma's map by type URL), with
    /// no response around them.
    Resources,
    /// A peer's map of proxies: the input holds nothing itself, its [`Input::proxies`] do.
    Proxies,
}

impl InputKind {
    /// Whether what is at `pointer` of such an input is a record of what an Envoy built (a
    /// config_dump, alone or in a stream), rather than configuration Envoy would build from it.
    pub fn is_record_at(self, pointer: &str) -> bool {
        match self {
            InputKind::ConfigDump | InputKind::DynamicListenersDump | InputKind::StaticListenersDump => true,
            InputKind::Mixed => pointer.contains("/configs/"),
            _ => false,
        }
    }

    /// How the report names the kind.
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
            InputKind::Kubernetes => "kubernetes objects",
            InputKind::Resources => "resources",
            InputKind::Proxies => "proxies",
        }
    }
}

/// One loaded input.
#[derive(Debug)]
pub struct Input<'a> {
    /// The source it was loaded from.
    pub source: SourceId,
    /// What it was recognised as.
    pub kind: InputKind,
    /// Every listener found, in document order, whatever its state.
    pub listeners: Vec<Listener<'a>>,
    /// Rejected updates Envoy recorded (`error_state` of a dynamic listener).
    pub error_states: Vec<ErrorState<'a>>,
    /// What the input holds besides listeners, each named and located: nothing is dropped
    /// without a trace.
    pub skipped: Vec<Skipped>,
    /// The clusters the input defines, when it carries a cluster list (a bootstrap's
    /// `static_resources.clusters`, a config_dump's clusters, a CDS response): what routes are
    /// validated against. `None` when it carries none.
    pub clusters: Option<ClusterList<'a>>,
    /// RouteConfiguration resources given on their own (RDS: a DiscoveryResponse's, a
    /// CiliumEnvoyConfig's, a config_dump's route configs); inline tables are part of their
    /// listeners' chains.
    pub route_tables: Vec<route::RouteTable<'a>>,
    /// Whether the input is an RDS answer (a SotW DiscoveryResponse of RouteConfigurations, as
    /// `attach` saves the one it received): it holds every table the Envoy asked for, so an RDS
    /// name of the same Envoy that no input has was asked and not answered.
    pub route_answers: bool,
    /// Parts of the route configuration xdsck does not analyse (`scoped_routes`, `vhds`, a
    /// virtual host's `matcher`), each reported.
    pub not_analysed: Vec<route::NotAnalysed>,
    /// The translation a YAML input was read through (owned by the `load::Document` this input
    /// borrows from): offsets above are into its JSON. `None` for JSON and protobuf.
    pub translation: Option<&'a dyn Translation>,
    /// What Envoy's parser or proto validation would refuse or ignore in the input, found while
    /// it was read; the schema rules report them.
    pub problems: Vec<problem::Problem>,
    /// The clusters Envoy builds from this input (a bootstrap's static ones, a CDS response's),
    /// for what it checks when it builds them.
    pub cluster_builds: Vec<build::ClusterBuild<'a>>,
    /// A bootstrap's own parts Envoy checks when it starts.
    pub bootstrap: Option<build::BootstrapBuild<'a>>,
    /// The proxy of a peer's output this input is (`egctl config envoy-proxy`'s namespace →
    /// pod map): one Envoy of several in one file.
    pub proxy: Option<Proxy>,
    /// For a peer's map of proxies ([`InputKind::Proxies`]): an input per proxy, each an Envoy
    /// of its own. [`Snapshot::push`] puts them in the snapshot in the map's place.
    pub proxies: Vec<Input<'a>>,
}

/// One proxy of a peer's output: its name there and where its part of the file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    /// `default/envoy-default-eg-e41e7b31-6c4f5d8b9-xk2lp` (namespace/pod), the `xds` key of
    /// `egctl x translate`; `None` for a file that is one proxy's resources.
    pub name: Option<String>,
    /// The JSON pointer of the proxy's part (`/default/eg`); every place of the input is
    /// below it.
    pub pointer: String,
    /// The layout it was found in, for the input summary.
    pub shape: &'static str,
}

impl Proxy {
    /// A proxy named `name` whose part of the file is at `pointer`.
    pub fn new(name: Option<String>, pointer: &str, shape: &'static str) -> Self {
        Proxy { name, pointer: pointer.to_owned(), shape }
    }
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

/// The clusters one input defines, by name (borrowed from the text): a name per cluster, no
/// more, so a dump of 100k clusters costs a list of 100k string slices.
#[derive(Debug, Default)]
pub struct ClusterList<'a> {
    /// Every cluster, in input order.
    pub names: Vec<ClusterName<'a>>,
    /// The list may lack clusters Envoy has: a bootstrap that also takes clusters from CDS, a
    /// delta CDS response. Only its static clusters are then the complete set they are.
    pub partial: bool,
}

/// One cluster of a [`ClusterList`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterName<'a> {
    /// `Cluster.name` (two words: a tenant bootstrap lists 300k).
    pub name: Text<'a>,
    /// A bootstrap's (or a dump's `static_clusters`): the only ones a bootstrap's inline route
    /// tables may name, since Envoy builds its static listeners before CDS delivers anything.
    pub is_static: bool,
}

/// A part of an input that is not a listener, so xdsck does not check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Whether it is reported (a document) or only counted (a resource of another type).
    pub kind: SkippedKind,
    /// What it is: `a Kubernetes \`Service\``, or the resource's type (`Cluster`).
    pub what: String,
    /// What to do with it instead, where xdsck knows (a Gateway API object).
    pub note: Option<&'static str>,
    /// Where it is in the input.
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

    /// What the input holds, counted.
    pub fn inventory(&self) -> Inventory {
        let mut inv = Inventory {
            failed: self.error_states.len(),
            route_tables: self.route_tables.iter().filter(|t| t.origin == route::TableOrigin::Rds).count(),
            clusters: self.clusters.as_ref().map_or(0, |c| c.names.len()),
            ..Inventory::default()
        };
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
                    inv.default_filter_chains += usize::from(l.default_filter_chain.is_some());
                    inv.inline_route_tables += l
                        .chains()
                        .flat_map(route::RouteTables::hcms_of_chain)
                        .filter(|h| matches!(h.routes, route::HcmRoutes::Inline(_)))
                        .count();
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
    /// Live listeners' `default_filter_chain`s.
    pub default_filter_chains: usize,
    /// Route tables inline in the live listeners' HTTP connection managers (`route_config`).
    pub inline_route_tables: usize,
    /// Listeners Envoy is still warming (not serving yet, not checked).
    pub warming: usize,
    /// Listeners Envoy is draining (on their way out, not checked).
    pub draining: usize,
    /// Rejected updates (`error_state`).
    pub failed: usize,
    /// RouteConfiguration resources given on their own (RDS), checked by the route checks.
    pub route_tables: usize,
    /// Clusters of the input's cluster list, which routes are checked against.
    pub clusters: usize,
    /// xDS resources of other types (endpoints, secrets; a CiliumEnvoyConfig's clusters), not
    /// checked.
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
    /// Whether Envoy serves (or would serve) the listener: the states the checks look at.
    pub fn is_live(self) -> bool {
        matches!(self, ListenerState::Static | ListenerState::Active | ListenerState::Declared)
    }

    /// How the report names the state.
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
    /// When Envoy tried the update, as the dump says (RFC 3339).
    pub last_update_attempt: Option<Cow<'a, str>>,
    /// Pointer and offset of the `error_state` object.
    pub pointer: Pointer,
    /// Byte offset of the `error_state` object.
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
    pub name: Text<'a>,
    /// Whether it is served, warming, draining or only declared.
    pub state: ListenerState,
    /// `version_info` of the dump entry, when there is one.
    pub version_info: Option<Text<'a>>,
    /// RFC 6901 pointer of the Listener object in the source.
    pub pointer: Pointer,
    /// Byte offset of the Listener object in the source's JSON text.
    pub offset: Option<TextOffset>,
    /// Whether the listener's fields are snake_case or camelCase, to build pointers as the input
    /// spells them.
    pub casing: Casing,
    /// `address`; `None` for listeners Envoy gives one itself (internal, CEC) and for those it
    /// rejects.
    pub address: Option<Address<'a>>,
    /// `additional_addresses`: each is served by the same chains and collides like the primary.
    pub additional_addresses: ThinVec<Address<'a>>,
    /// The entries of `additional_addresses` without an `address` at all, by index: Envoy 1.40
    /// aborts on them (`panic: unset oneof`).
    pub unset_additional_addresses: ThinVec<usize>,
    /// `bind_to_port`; unset is `true`. A listener that does not bind only takes connections handed
    /// to it (`use_original_dst`).
    pub bind_to_port: Option<bool>,
    /// `use_original_dst`: connections are handed to the listener of their original destination.
    pub use_original_dst: bool,
    /// `enable_reuse_port`; decides whether two listeners on one address are an error.
    pub enable_reuse_port: Option<bool>,
    /// In order: which of them run decides what a chain can match on (SNI needs `tls_inspector`).
    /// The one filter most listeners have (a `tls_inspector`) held in place: a list of one was
    /// an allocation of its own, 64 bytes a tenant when each tenant has its listener.
    pub listener_filters: OneOrList<ListenerFilter<'a>>,
    /// In order.
    pub filter_chains: Vec<FilterChain<'a>>,
    /// What takes connections no chain matches; without it they are closed. Boxed, as the
    /// matcher: most listeners have neither, and a listener per tenant makes 100k listeners.
    pub default_filter_chain: Option<Box<FilterChain<'a>>>,
    /// The unified matcher, typed by the loader.
    pub filter_chain_matcher: Option<Box<matcher::FilterChainMatcher>>,
    /// `internal_listener` is set (an Envoy internal listener, no socket).
    pub internal_listener: bool,
    /// `api_listener` is set.
    pub api_listener: bool,
    /// `udp_listener_config` is set (UDP or QUIC).
    pub udp_listener_config: bool,
    /// The listener comes from a CiliumEnvoyConfig: the Cilium agent gives one without an
    /// address its own proxy port, so a missing address is no error there.
    pub address_assigned_by_agent: bool,
    /// The `xdsck.io/ignore` annotation of the CiliumEnvoyConfig the listener came in. Boxed:
    /// rare, and 48 bytes in place.
    pub ignore_annotation: Option<Box<IgnoreAnnotation<'a>>>,
}

/// A CiliumEnvoyConfig's `xdsck.io/ignore` annotation (rules to silence on its listeners), as
/// written, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoreAnnotation<'a> {
    /// The annotation's value: selectors separated by commas.
    pub value: Cow<'a, str>,
    /// Where it is, for a finding about an entry that is not a rule.
    pub pointer: Pointer,
}

impl<'a> Listener<'a> {
    /// How xdsck names the listener: its name, or for an unnamed one its place in the list
    /// that holds it (`listeners[2]`), as an unnamed chain is `filter_chains[N]`.
    pub fn display_name(&self) -> Cow<'_, str> {
        if !self.name.is_empty() {
            return Cow::Borrowed(&self.name);
        }
        let mut tokens = self.pointer.as_str().rsplit('/');
        match (tokens.next(), tokens.next()) {
            (Some(i), Some(list)) if !list.is_empty() && i.parse::<usize>().is_ok() => {
                Cow::Owned(format!("{list}[{i}]"))
            }
            _ => Cow::Borrowed("(unnamed listener)"),
        }
    }

    /// Its chains: `filter_chains` in order, then `default_filter_chain`.
    pub fn chains(&self) -> impl Iterator<Item = &FilterChain<'a>> {
        self.filter_chains.iter().chain(self.default_filter_chain.as_deref())
    }

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
        match chain.index.listed_at() {
            Some(i) => join_field_index(&self.pointer, self.casing, "filter_chains", i as usize),
            None => join_field(&self.pointer, self.casing, "default_filter_chain"),
        }
    }

    /// The location of the listener in its source's original text.
    pub fn location(&self, source: SourceId, text: Locator<'_>) -> Location {
        Location::new(source, self.pointer.clone(), self.offset.map(|o| text.node_offset(o.get())))
    }

    /// The location of one of its chains.
    pub fn chain_location(&self, source: SourceId, text: Locator<'_>, chain: &FilterChain<'_>) -> Location {
        // The chain's name says which chain it is; its opening brace does not, so an unnamed
        // chain is shown at its first key (`"filter_chain_match": {`), not at a bare `{`.
        let offset = match (chain.name_offset, chain.offset) {
            (Some(o), _) | (None, Some(o)) => Some(text.original_offset(o.get())),
            (None, None) => self.offset.map(|o| text.node_offset(o.get())),
        };
        Location::new(source, self.chain_pointer(chain), offset)
    }
}

/// A listener or upstream address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address<'a> {
    /// An IP (or DNS) address and port.
    Socket(SocketAddress<'a>),
    /// A Unix domain socket.
    Pipe {
        /// The socket's path (`@` first for an abstract socket).
        path: Text<'a>,
        /// Its file mode.
        mode: Option<u32>,
    },
    /// An Envoy internal address: another listener of the same Envoy, no socket.
    EnvoyInternal {
        /// The internal listener it reaches.
        server_listener_name: Text<'a>,
        /// Tells apart connections to the same internal listener.
        endpoint_id: Text<'a>,
    },
}

/// `config.core.v3.SocketAddress`: 40 bytes, its rarely set names boxed together (112 bytes in
/// place with three-word strings; every listener has one, and a listener per tenant makes 100k).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SocketAddress<'a> {
    /// As written: an IP literal, or a name Envoy resolves.
    pub address: Text<'a>,
    /// `port_value`; unset is 0 (any port, chosen by the kernel).
    pub port_value: Option<u32>,
    /// TCP or UDP: two listeners on one address and port collide only with the same protocol.
    pub protocol: Protocol,
    /// `ipv4_compat`: an IPv6 listener on `::` takes IPv4 connections too.
    pub ipv4_compat: bool,
    /// `named_port`, `resolver_name` and `network_namespace_filepath`, when any is set.
    rare: Option<Box<SocketNames<'a>>>,
}

/// The names a socket address rarely has, boxed together.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct SocketNames<'a> {
    named_port: Option<Text<'a>>,
    resolver_name: Option<Text<'a>>,
    network_namespace_filepath: Option<Text<'a>>,
}

impl<'a> SocketAddress<'a> {
    /// Sets `named_port`, `resolver_name` and `network_namespace_filepath` (boxed only when one
    /// is given).
    pub fn with_names(
        mut self,
        named_port: Option<Text<'a>>,
        resolver_name: Option<Text<'a>>,
        network_namespace_filepath: Option<Text<'a>>,
    ) -> Self {
        self.rare = (named_port.is_some() || resolver_name.is_some() || network_namespace_filepath.is_some())
            .then(|| Box::new(SocketNames { named_port, resolver_name, network_namespace_filepath }));
        self
    }

    /// `named_port`, which Envoy does not support for listeners.
    pub fn named_port(&self) -> Option<&str> {
        self.rare.as_ref()?.named_port.as_deref()
    }

    /// `resolver_name`, a custom resolver (the address is then not an IP literal).
    pub fn resolver_name(&self) -> Option<&str> {
        self.rare.as_ref()?.resolver_name.as_deref()
    }

    /// `network_namespace_filepath`: the same address in two namespaces is two sockets.
    pub fn network_namespace_filepath(&self) -> Option<&str> {
        self.rare.as_ref()?.network_namespace_filepath.as_deref()
    }
}

/// A socket address's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Protocol {
    /// `TCP`, the default.
    #[default]
    Tcp,
    /// `UDP` (and QUIC, which runs over it).
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
    /// As written, e.g. `envoy.filters.listener.tls_inspector`; matched when there is no `@type`.
    pub name: Text<'a>,
    /// `typed_config["@type"]`, when given.
    pub type_url: Option<Text<'a>>,
}

/// A byte offset in an input's JSON text as a filter chain keeps it: four bytes, and four as
/// an `Option` too. A tenant listener holds 400k chains with three offsets each; as `usize`
/// they were 16 bytes each, a fifth of a chain. The loader refuses a text of more than
/// [`TextOffset::MAX_TEXT`] bytes, so every offset in one fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TextOffset(std::num::NonZeroU32);

impl TextOffset {
    /// The longest text whose offsets fit (4 GiB less two bytes): offsets run from 0 to the
    /// text's length, each kept plus one.
    pub const MAX_TEXT: usize = u32::MAX as usize - 1;

    /// The offset, or `None` past [`Self::MAX_TEXT`] (which no loaded text reaches).
    pub fn new(offset: usize) -> Option<Self> {
        u32::try_from(offset + 1).ok().and_then(std::num::NonZeroU32::new).map(TextOffset)
    }

    /// The offset as an index into the text.
    pub fn get(self) -> usize {
        self.0.get() as usize - 1
    }
}

/// Which chain of a listener: one of `filter_chains` ([`Self::listed`]), or
/// `default_filter_chain` ([`Self::DEFAULT`]). Four bytes, the default chain the one number a
/// listed chain cannot have: an enum of a `u32` and a unit variant took eight, a tenant
/// listener's 400k chains 3.2 MB more (a chain 176 bytes, not 168).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChainIndex(u32);

impl ChainIndex {
    /// `default_filter_chain` (ordered after every listed chain).
    pub const DEFAULT: ChainIndex = ChainIndex(u32::MAX);

    /// `filter_chains[i]`: a list in a text of at most [`TextOffset::MAX_TEXT`] bytes has
    /// fewer than `u32::MAX` items, so `i` is below it (and is kept below it regardless).
    pub fn listed(i: u32) -> Self {
        ChainIndex(i.min(u32::MAX - 1))
    }

    /// Which of `filter_chains` it is; `None` for `default_filter_chain`.
    pub fn listed_at(self) -> Option<u32> {
        (self != Self::DEFAULT).then_some(self.0)
    }
}

impl std::fmt::Debug for ChainIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.listed_at() {
            Some(i) => f.debug_tuple("Listed").field(&i).finish(),
            None => f.write_str("Default"),
        }
    }
}

/// A filter chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterChain<'a> {
    /// As written; may be empty (Cilium emits unnamed chains).
    pub name: Text<'a>,
    /// Which chain of its listener it is.
    pub index: ChainIndex,
    /// Byte offset of the chain object in the JSON text.
    pub offset: Option<TextOffset>,
    /// Byte offset of its `name` value in the JSON text: where findings about the chain point.
    pub name_offset: Option<TextOffset>,
    /// The chain's own field casing (a listener may mix them).
    pub casing: Casing,
    /// `None` when the chain has no `filter_chain_match` (which Envoy treats as `{}`).
    pub filter_chain_match: Option<FilterChainMatch<'a>>,
    /// Its network filters, in order: the usual one held in place.
    pub filters: OneOrList<NetworkFilter<'a>>,
    /// Its transport socket: whether it terminates TLS. Boxed: most chains of a tenant listener
    /// have none, and a listener's chains are moved and copied as one list.
    pub transport_socket: Option<Box<TransportSocket<'a>>>,
}

impl FilterChain<'_> {
    /// How xdsck names the chain: its name, or `filter_chains[N]` when it has none.
    pub fn display_name(&self) -> Cow<'_, str> {
        if !self.name.is_empty() {
            return Cow::Borrowed(&self.name);
        }
        match self.index.listed_at() {
            Some(_) => {
                let mut name = String::with_capacity(24);
                self.push_display_name(&mut name);
                Cow::Owned(name)
            }
            None => Cow::Borrowed("default_filter_chain"),
        }
    }

    /// The length of [`Self::display_name`], for a string sized once.
    pub fn display_name_len(&self) -> usize {
        match self.index.listed_at() {
            _ if !self.name.is_empty() => self.name.len(),
            Some(i) => "filter_chains[]".len() + i.checked_ilog10().map_or(1, |d| d as usize + 1),
            None => "default_filter_chain".len(),
        }
    }

    /// Appends [`Self::display_name`] to `out`, without a string of its own: a finding per
    /// tenant names its unnamed passthrough chains in its message and again in its note.
    pub fn push_display_name(&self, out: &mut String) {
        if !self.name.is_empty() {
            out.push_str(&self.name);
            return;
        }
        match self.index.listed_at() {
            // Written by hand, not `format!`: the formatting machinery cost ten times what the
            // words do.
            Some(i) => {
                out.push_str("filter_chains[");
                out.push_str(itoa::Buffer::new().format(i));
                out.push(']');
            }
            None => out.push_str("default_filter_chain"),
        }
    }

    /// The pointer of its network filter at `filter`'s `typed_config`, the chain being at
    /// `chain_pointer` (an http_connection_manager's fields are there). An HCM's filter object
    /// is spelt as it was read; any other filter's (whose spelling is not kept) as its chain.
    pub fn filter_pointer(&self, chain_pointer: &str, filter: usize) -> String {
        let casing = match self.filters.get(filter).map(|f| &f.kind) {
            Some(NetworkFilterKind::HttpConnectionManager(h)) => h.filter_casing,
            _ => self.casing,
        };
        join_field(&join_field_index(chain_pointer, self.casing, "filters", filter), casing, "typed_config")
    }

    /// Whether the chain terminates TLS (a downstream TLS or QUIC transport socket).
    pub fn terminates_tls(&self) -> bool {
        self.transport_socket.as_deref().is_some_and(TransportSocket::terminates_tls)
    }

    /// Whether the chain is TLS passthrough: no TLS termination, a `tcp_proxy` as its filter.
    pub fn is_tcp_proxy(&self) -> bool {
        self.filters.iter().any(|f| matches!(f.kind, NetworkFilterKind::TcpProxy { .. }))
    }

    /// The clusters the chain's `tcp_proxy` passes connections to (its `cluster`, or its
    /// weighted clusters), when its filters reach one before any http_connection_manager: both
    /// are terminal, so the first of them is what handles the connection.
    pub fn tcp_proxy_clusters(&self) -> Option<&[Text<'_>]> {
        self.filters.iter().find_map(|f| match &f.kind {
            NetworkFilterKind::TcpProxy { clusters, .. } => Some(Some(clusters.as_slice())),
            NetworkFilterKind::HttpConnectionManager(_) => Some(None),
            NetworkFilterKind::Other => None,
        })?
    }
}

/// `FilterChainMatch`, every field, as written (normalisation happens in the graph).
///
/// Its lists are `ThinVec`s (one word, the length beside the items): most are empty, and a
/// tenant listener holds hundreds of thousands of matches. The address fields that nearly no
/// chain sets are boxed together ([`MatchAddresses`]), read through the methods of the same
/// names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilterChainMatch<'a> {
    /// Byte offset of the `filter_chain_match` object in the JSON text.
    pub offset: Option<TextOffset>,
    /// The match object's own field casing.
    pub casing: Casing,
    /// `destination_port`.
    pub destination_port: Option<u32>,
    /// `prefix_ranges`, `direct_source_prefix_ranges`, `source_prefix_ranges`, `source_ports`,
    /// `address_suffix` and `suffix_len`; `None` when none is set (so that two matches that set
    /// none compare equal). Inline they were 40 bytes of each of a tenant listener's 400k
    /// matches, which set none of them.
    pub(crate) addresses: Option<Box<MatchAddresses<'a>>>,
    /// `source_type`.
    pub source_type: SourceType,
    /// `server_names`, as written (Envoy lower-cases them): the usual one held in place.
    pub server_names: OneOrList<Text<'a>>,
    /// `transport_protocol`; empty when unset.
    pub transport_protocol: Text<'a>,
    /// `application_protocols` (ALPN).
    pub application_protocols: ThinVec<Text<'a>>,
}

/// The address fields of a [`FilterChainMatch`] that nearly no chain sets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MatchAddresses<'a> {
    /// `prefix_ranges` (destination address).
    pub prefix_ranges: ThinVec<CidrRange<'a>>,
    /// `direct_source_prefix_ranges` (the peer's address, before any PROXY protocol).
    pub direct_source_prefix_ranges: ThinVec<CidrRange<'a>>,
    /// `source_prefix_ranges` (the source address, after PROXY protocol).
    pub source_prefix_ranges: ThinVec<CidrRange<'a>>,
    /// `source_ports`.
    pub source_ports: ThinVec<u32>,
    /// `address_suffix` and `suffix_len`, when either is set: Envoy implements neither and
    /// rejects a chain that sets one.
    pub unimplemented: Option<AddressSuffix<'a>>,
}

impl MatchAddresses<'_> {
    fn is_empty(&self) -> bool {
        self.prefix_ranges.is_empty()
            && self.direct_source_prefix_ranges.is_empty()
            && self.source_prefix_ranges.is_empty()
            && self.source_ports.is_empty()
            && self.unimplemented.is_none()
    }
}

impl<'a> FilterChainMatch<'a> {
    /// The match with these address fields (kept unboxed when none is set).
    pub fn with_addresses(mut self, addresses: MatchAddresses<'a>) -> Self {
        self.addresses = (!addresses.is_empty()).then(|| Box::new(addresses));
        self
    }

    /// `prefix_ranges` (destination address).
    pub fn prefix_ranges(&self) -> &[CidrRange<'a>] {
        self.addresses.as_ref().map_or(&[], |a| &a.prefix_ranges)
    }

    /// `direct_source_prefix_ranges` (the peer's address, before any PROXY protocol).
    pub fn direct_source_prefix_ranges(&self) -> &[CidrRange<'a>] {
        self.addresses.as_ref().map_or(&[], |a| &a.direct_source_prefix_ranges)
    }

    /// `source_prefix_ranges` (the source address, after PROXY protocol).
    pub fn source_prefix_ranges(&self) -> &[CidrRange<'a>] {
        self.addresses.as_ref().map_or(&[], |a| &a.source_prefix_ranges)
    }

    /// `source_ports`.
    pub fn source_ports(&self) -> &[u32] {
        self.addresses.as_ref().map_or(&[], |a| &a.source_ports)
    }

    /// `address_suffix` and `suffix_len`, when either is set: Envoy implements neither and
    /// rejects a chain that sets one.
    pub fn unimplemented(&self) -> Option<&AddressSuffix<'a>> {
        self.addresses.as_ref().and_then(|a| a.unimplemented.as_ref())
    }
}

/// A filter chain match's `address_suffix` and `suffix_len`, which Envoy does not implement.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct AddressSuffix<'a> {
    /// `address_suffix`; empty when unset.
    pub address_suffix: Cow<'a, str>,
    /// `suffix_len`: a UInt32Value, so 0 is still set.
    pub suffix_len: Option<u32>,
}

/// `config.core.v3.CidrRange`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CidrRange<'a> {
    /// As written; may not be an IP literal (which Envoy rejects).
    pub address_prefix: Cow<'a, str>,
    /// Unset means 0 (so an address without a length matches the whole family).
    pub prefix_len: Option<u32>,
}

/// `FilterChainMatch.ConnectionSourceType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub enum SourceType {
    /// `ANY`, the default.
    #[default]
    Any,
    /// `SAME_IP_OR_LOOPBACK`: the source is the destination's own address or a loopback address.
    SameIpOrLoopback,
    /// `EXTERNAL`: any other source.
    External,
}

impl SourceType {
    /// The enum's name in Envoy's API.
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
    /// As written; matched when there is no `@type`.
    pub name: Text<'a>,
    /// `typed_config["@type"]`, when given: what Envoy goes by.
    pub type_url: Option<Text<'a>>,
    /// What xdsck read of it (an HCM keeps its filter object's key spelling, the only one a
    /// pointer needs).
    pub kind: NetworkFilterKind<'a>,
}

/// What xdsck knows about the filters it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkFilterKind<'a> {
    /// `tcp_proxy`: the chain passes the connection through to a cluster. (Its `stat_prefix`,
    /// which no check reads, is not kept: a tenant listener's passthrough chains are 300k.)
    TcpProxy {
        /// `cluster`, or the weighted clusters' names: a passthrough chain's one cluster held
        /// in place.
        clusters: OneOrList<Text<'a>>,
    },
    /// `http_connection_manager`: the chain speaks HTTP and routes by route configuration.
    HttpConnectionManager(Box<route::Hcm<'a>>),
    /// Any other filter: named, not read.
    Other,
}

/// A chain's transport socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportSocket<'a> {
    /// As written; matched when there is no `@type`.
    pub name: Text<'a>,
    /// `typed_config["@type"]`, when given.
    pub type_url: Option<Text<'a>>,
    /// `common_tls_context.alpn_protocols` of a DownstreamTlsContext: what the chain offers a
    /// client in ALPN (`h2` makes a browser speak HTTP/2 and coalesce connections).
    pub alpn_protocols: ThinVec<Text<'a>>,
    /// The certificates of a TLS context, when the typed config is one.
    pub certificates: Option<build::TlsCertificates<'a>>,
}

impl TransportSocket<'_> {
    /// Whether it is a downstream TLS or QUIC transport, by `@type` or, without one, by name.
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
    fn a_chain_names_itself_as_long_as_its_name_says() {
        let chain = |name: &'static str, index| FilterChain {
            name: name.into(),
            index,
            offset: None,
            name_offset: None,
            casing: Casing::Snake,
            filter_chain_match: None,
            filters: OneOrList::default(),
            transport_socket: None,
        };
        let chains = [0, 9, 10, 99, 100, 12_345, u32::MAX - 1]
            .map(|i| chain("", ChainIndex::listed(i)))
            .into_iter()
            .chain([chain("https-0", ChainIndex::listed(3)), chain("", ChainIndex::DEFAULT)]);
        for c in chains {
            let mut pushed = String::from("'");
            c.push_display_name(&mut pushed);
            assert_eq!(pushed[1..], *c.display_name());
            assert_eq!(c.display_name_len(), c.display_name().len(), "{}", c.display_name());
        }
    }

    #[test]
    fn a_chain_index_is_a_listed_number_or_the_default_after_them() {
        let (first, last) = (ChainIndex::listed(0), ChainIndex::listed(u32::MAX - 1));
        assert_eq!(
            (first.listed_at(), last.listed_at(), ChainIndex::DEFAULT.listed_at()),
            (Some(0), Some(u32::MAX - 1), None)
        );
        // The one number a listed chain cannot have is the default chain's; it sorts last.
        assert_eq!(ChainIndex::listed(u32::MAX), last);
        assert!(first < last && last < ChainIndex::DEFAULT);
        assert_eq!(format!("{first:?} {:?}", ChainIndex::DEFAULT), "Listed(0) Default");
    }

    #[test]
    fn a_text_offset_is_the_offset_it_was_made_of() {
        for o in [0, 1, 4096, TextOffset::MAX_TEXT - 1, TextOffset::MAX_TEXT] {
            assert_eq!(TextOffset::new(o).map(TextOffset::get), Some(o));
        }
        assert_eq!(TextOffset::new(TextOffset::MAX_TEXT + 1), None);
        assert_eq!(std::mem::size_of::<Option<TextOffset>>(), 4);
    }

    /// A tenant listener holds 400k chains in one list, each with a filter: each byte of a
    /// chain is 400 KB there.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn a_chain_is_as_small_as_its_fields() {
        // The address fields boxed together and the strings two words each (`Text`): a match is
        // 64 bytes (104 with the fields in place, 72 with three-word strings), its one server
        // name held in place (`OneOrList`: as a `ThinVec` of one it was 32 bytes more
        // elsewhere). A chain is 160 bytes, its one filter held in place (a `ThinVec` of one
        // filter was 8 bytes here and 80, the list's header and the filter, in an allocation
        // of its own: 24 bytes more a chain) and its number in four bytes (`ChainIndex`). Four
        // chains, a tenant's listener, are 640 bytes, one of jemalloc's sizes (at 168 bytes a
        // chain they took 768).
        assert_eq!(std::mem::size_of::<FilterChainMatch<'_>>(), 64);
        assert_eq!(std::mem::size_of::<ChainIndex>(), 4);
        assert_eq!(std::mem::size_of::<FilterChain<'_>>(), 160);
        // A chain's one filter is 56 bytes (96 with three-word strings, 112 with the tcp_proxy's
        // `stat_prefix`, which nothing read; 64 with its key spelling, which only an HCM keeps).
        // A tcp_proxy's one cluster is held in the filter (a list of one was 48 bytes more a
        // passthrough chain).
        assert_eq!(std::mem::size_of::<NetworkFilter<'_>>(), 56);
        assert_eq!(std::mem::size_of::<OneOrList<Text<'_>>>(), 16);
        assert_eq!(std::mem::size_of::<NetworkFilterKind<'_>>(), 24);
        // A TLS chain's transport socket, boxed: its certificates' lists a word each, 80 bytes
        // (160 with three-word lists, 96 with three-word strings).
        assert_eq!(std::mem::size_of::<TransportSocket<'_>>(), 80);
        // A TLS chain's http_connection_manager, boxed: 48 bytes, without its `stat_prefix`
        // (which nothing read) and its pointer (spelt when a finding needs it, an 80-byte string
        // of its own).
        assert_eq!(std::mem::size_of::<route::Hcm<'_>>(), 48);
    }

    /// A tenant's inline route table has ten routes: a million at 100k tenants.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn a_route_is_as_small_as_its_fields() {
        // Two-word strings (`Text`), its number in four bytes, its match's headers a word
        // (`ThinVec`) and what few matches have (case-insensitive paths, query parameters,
        // predicates not evaluated) boxed together, no pointer of its own (its table spells its
        // place): 96 bytes, and five in a list are 480, which jemalloc keeps in 512 (at 112
        // they took 640; 176 with three-word strings, a `usize`, boxed slices and a shared
        // pointer to its list). A header matcher is 48 bytes (64); a virtual host, with its
        // name in two words, its number in four and its domains and routes boxed slices, 64
        // (112; 80 with `Vec`s): a tenant's two in 128 bytes, not 160.
        assert_eq!(std::mem::size_of::<route::Route<'_>>(), 96);
        assert_eq!(std::mem::size_of::<route::VirtualHost<'_>>(), 64);
        // A tenant's inline table, boxed in its HCM: its name in two words and its virtual
        // hosts a boxed slice, 80 bytes (96, jemalloc's next class, with a `Cow` and a `Vec`).
        assert_eq!(std::mem::size_of::<route::RouteTable<'_>>(), 80);
        assert_eq!(std::mem::size_of::<route::RouteMatch<'_>>(), 40);
        assert_eq!(std::mem::size_of::<route::Action<'_>>(), 24);
        assert_eq!(std::mem::size_of::<route::HeaderMatcher<'_>>(), 48);
        // A tenant's table names three clusters: a build has its name in two words, its TLS
        // certificates boxed, its status ranges and its endpoints a word each: 80 bytes (152
        // with them in place). An endpoint spells its pointer from its place: 56 bytes, and no
        // allocation but the cluster's one list (72 with a pointer string, in a list per
        // locality).
        assert_eq!(std::mem::size_of::<build::ClusterBuild<'_>>(), 80);
        assert_eq!(std::mem::size_of::<build::Endpoint<'_>>(), 56);
    }

    /// A listener per tenant makes 100k listeners, each with an address and a listener filter.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn a_listener_is_as_small_as_its_fields() {
        // Two-word strings, its offset in four bytes, its annotation and its address's rare names
        // boxed, its one listener filter held in place: 208 bytes (328 before, and a filter list
        // of one was a 64-byte allocation of its own).
        assert_eq!(std::mem::size_of::<Listener<'_>>(), 208);
        assert_eq!(std::mem::size_of::<Option<Address<'_>>>(), 40);
        assert_eq!(std::mem::size_of::<OneOrList<ListenerFilter<'_>>>(), 32);
    }

    #[test]
    fn a_match_without_address_fields_holds_no_box() {
        // Two matches that set no address field are equal however they were made, and the
        // fields read as empty.
        let made = FilterChainMatch::default().with_addresses(MatchAddresses::default());
        assert_eq!(made, FilterChainMatch::default());
        assert!(made.addresses.is_none());
        assert!(made.prefix_ranges().is_empty() && made.source_ports().is_empty() && made.unimplemented().is_none());
        let ports = FilterChainMatch::default()
            .with_addresses(MatchAddresses { source_ports: thin_vec::thin_vec![80], ..MatchAddresses::default() });
        assert_eq!(ports.source_ports(), [80]);
        assert!(ports.prefix_ranges().is_empty() && ports.source_prefix_ranges().is_empty());
        assert_ne!(ports, FilterChainMatch::default());
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
