//! HTTP route tables: what an `http_connection_manager` routes requests with.
//!
//! A [`RouteTable`] is one `RouteConfiguration`, inline in an HCM or delivered by RDS. Every
//! part can say the JSON pointer it was read at, so a finding can point at a domain or a route.
//! Strings borrow from the input's text where it spells them without escapes (a tenant-scale
//! dump holds millions of them), and a virtual host's or route's pointer is made when asked for
//! ([`RouteTable::vh_pointer`], [`RouteTable::route_pointer`]: from the table's pointer and the
//! numbers of the virtual host and the route): only findings and traces need one.

use std::borrow::Cow;

use thin_vec::ThinVec;

use crate::model::Text;
use crate::source::{Casing, SourceId, join_index, join_token};

/// Where a route table was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableOrigin {
    /// `route_config` inside an HCM: its rejection fails the listener.
    Inline,
    /// A RouteConfiguration resource (config_dump, DiscoveryResponse, CiliumEnvoyConfig): its
    /// rejection drops that RDS update alone.
    Rds,
    /// A config_dump's `static_route_configs` entry: an inline table as the dump lists it again.
    /// Found by name, not checked a second time.
    DumpStatic,
}

/// One `RouteConfiguration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteTable<'a> {
    /// The input the table was read from.
    pub source: SourceId,
    /// As Envoy names it (qualified as the Cilium agent does for a CiliumEnvoyConfig); `None`
    /// when the message has no name (Envoy's texts then end in `in route `).
    pub name: Option<Text<'a>>,
    /// Where it came from, which decides what Envoy's refusal of it costs.
    pub origin: TableOrigin,
    /// JSON pointer of the `RouteConfiguration` message in its input.
    pub pointer: Box<str>,
    /// In the order given: Envoy searches domains in this order, and the first duplicate is the
    /// one it complains about. A boxed slice, and the name a `Text`: 80 bytes a table, not 96.
    pub virtual_hosts: Box<[VirtualHost<'a>]>,
    /// `ignore_port_in_host_matching`: the Host's `:port` is dropped before domains are searched.
    pub ignore_port_in_host_matching: bool,
    /// `vhds` is set: virtual hosts arrive on demand and are not in this input.
    pub vhds: bool,
    /// `validate_clusters` as given; unset, Envoy validates an inline table's clusters and not
    /// an RDS one's (checked with envoy 1.40).
    pub validate_clusters: Option<bool>,
    /// The table's own `request_mirror_policies`: the routes that have none of their own and
    /// whose virtual host has none mirror with it.
    pub mirrors: Option<Box<Mirrors<'a>>>,
    /// The `virtual_hosts` key as the input spells it, for the virtual hosts' pointers.
    pub vh_key: &'static str,
}

impl RouteTable<'_> {
    /// JSON pointer of one of its virtual hosts.
    pub fn vh_pointer(&self, vh: &VirtualHost<'_>) -> String {
        join_index(&join_token(&self.pointer, self.vh_key), vh.index as usize)
    }

    /// JSON pointer of a route of its virtual host `vh`.
    pub fn route_pointer(&self, vh: &VirtualHost<'_>, route: &Route<'_>) -> String {
        join_index(&join_token(&self.vh_pointer(vh), "routes"), route.index as usize)
    }
}

/// One `request_mirror_policies` list (boxed where it sits: most tables, virtual hosts and
/// routes have none). A route mirrors with its own list, else its virtual host's, else the
/// table's, and Envoy validates the clusters of the list each route uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirrors<'a> {
    /// The key as the input spells it (`request_mirror_policies` or `requestMirrorPolicies`).
    pub key: &'static str,
    /// Each policy's `cluster`, in order; `""` for one that mirrors by `cluster_header`.
    pub clusters: Vec<Cow<'a, str>>,
}

impl RouteTable<'_> {
    /// The name as Envoy prints it in its texts (`""` for an unnamed table).
    pub fn envoy_name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// The name as xdsck prints it.
    pub fn display_name(&self) -> String {
        match &self.name {
            Some(n) => n.to_string(),
            None => "(unnamed)".to_owned(),
        }
    }
}

/// `VirtualHost.require_tls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequireTls {
    /// Plain HTTP is routed like TLS (the default).
    #[default]
    None,
    /// `EXTERNAL_ONLY`: requests Envoy takes for external ones (with the default
    /// `internal_address_config`, loopback too) must be TLS, else it redirects them to https.
    ExternalOnly,
    /// `ALL`: every plain-HTTP request is redirected to https before any route is tried.
    All,
}

/// One virtual host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualHost<'a> {
    /// Its `name`, which Envoy's texts and xdsck's findings name it by.
    pub name: Text<'a>,
    /// Its position in the table's `virtual_hosts` ([`RouteTable::vh_pointer`] spells its place
    /// from it: a pointer kept for each virtual host and its routes was three allocations of
    /// some 100 bytes a tenant's table).
    pub index: u32,
    /// As written (Envoy lower-cases them when it indexes them). Boxed slices, not `Vec`s (read
    /// to their length, never grown): 16 bytes less a virtual host, a tenant's two in 128 bytes,
    /// not 160.
    pub domains: Box<[Cow<'a, str>]>,
    /// In the order given: Envoy takes the first whose match holds.
    pub routes: Box<[Route<'a>]>,
    /// A `matcher` tree is set (routes are then chosen by it, which xdsck does not evaluate).
    pub has_matcher: bool,
    /// Whether plain HTTP is redirected before routing, which a trace reports.
    pub require_tls: RequireTls,
    /// Its `request_mirror_policies`, for the routes that have none of their own.
    pub mirrors: Option<Box<Mirrors<'a>>>,
}

/// One route of a virtual host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route<'a> {
    /// Its `name`, if any.
    pub name: Option<Text<'a>>,
    /// Its position in the virtual host's `routes`: order decides which of two routes wins
    /// ([`RouteTable::route_pointer`] spells its place from it).
    pub index: u32,
    /// Its `match`: what a request must be for this route to take it.
    pub matcher: RouteMatch<'a>,
    /// What it does with the requests it takes.
    pub action: Action<'a>,
    /// `route.request_mirror_policies`.
    pub mirrors: Option<Box<Mirrors<'a>>>,
}

impl Route<'_> {
    /// How xdsck names a route: its name, or `routes[N]`.
    pub fn display_name(&self) -> String {
        match &self.name {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("routes[{}]", self.index),
        }
    }
}

/// The path specifier of a `RouteMatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSpec<'a> {
    /// `prefix`: the path starts with it (`""` takes every path).
    Prefix(Text<'a>),
    /// `path`: the path, query stripped, is exactly it.
    Path(Text<'a>),
    /// `safe_regex.regex`: the RE2 pattern must match the whole path.
    SafeRegex(Text<'a>),
    /// `path_separated_prefix`: the path, query stripped, is it, or starts with it followed by
    /// `/`.
    PathSeparatedPrefix(Text<'a>),
    /// `connect_matcher`: CONNECT requests only.
    Connect,
    /// `path_match_policy` (an extension, e.g. a URI template).
    Policy,
    /// None given (Envoy's proto validation rejects it).
    Missing,
}

/// A header matcher of a route.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HeaderMatcher<'a> {
    /// The header tested, pseudo-headers (`:path`, `:method`, `:authority`) included.
    pub name: Text<'a>,
    /// The test applied to its value.
    pub kind: HeaderMatch<'a>,
    /// `invert_match`: the matcher holds where the test fails. A string test on an absent header
    /// fails inverted or not; only `present_match` turns over.
    pub invert_match: bool,
    /// `treat_missing_header_as_empty`: an absent header is tested as the empty string instead
    /// of failing every test.
    pub treat_missing_header_as_empty: bool,
}

/// What a header matcher tests.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HeaderMatch<'a> {
    /// `string_match.exact` (or the legacy `exact_match`): the value is this string.
    Exact {
        /// The string compared with.
        value: Text<'a>,
        /// `ignore_case`: compared ASCII case-insensitively.
        ignore_case: bool,
    },
    /// `string_match.prefix`: the value starts with this string.
    Prefix {
        /// The string compared with.
        value: Text<'a>,
        /// `ignore_case`: compared ASCII case-insensitively.
        ignore_case: bool,
    },
    /// `string_match.suffix`: the value ends with this string.
    Suffix {
        /// The string compared with.
        value: Text<'a>,
        /// `ignore_case`: compared ASCII case-insensitively.
        ignore_case: bool,
    },
    /// `string_match.contains`: the value holds this string somewhere.
    Contains {
        /// The string compared with.
        value: Text<'a>,
        /// `ignore_case`: compared ASCII case-insensitively.
        ignore_case: bool,
    },
    /// `string_match.safe_regex` (or `safe_regex_match`): the RE2 pattern must match the whole
    /// value.
    Regex(Text<'a>),
    /// `present_match: true|false`.
    Present(bool),
    /// A form xdsck does not evaluate (`range_match`, ...).
    Other(Text<'a>),
}

/// `RouteMatch`. Forty bytes: what few matches have (case-insensitive paths, query
/// parameters, predicates xdsck does not evaluate) is boxed together, so a route is 96 bytes
/// and a virtual host's five routes 480, which jemalloc keeps in 512; at 112 bytes five took
/// 640 (a tenant-scale input has a million routes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteMatch<'a> {
    /// The one path specifier of the match.
    pub path: PathSpec<'a>,
    /// `headers`: every one must hold. A `ThinVec`, a word and no allocation when empty.
    pub headers: ThinVec<HeaderMatcher<'a>>,
    /// `None` when the match is case-sensitive and has no query parameters and nothing
    /// unevaluated ([`RouteMatch::new`] keeps it so, which makes equal matches equal).
    rare: Option<Box<RareMatch<'a>>>,
}

/// What few route matches have.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RareMatch<'a> {
    case_sensitive: bool,
    query_parameters: ThinVec<QueryParameterMatcher<'a>>,
    unevaluated: ThinVec<&'static str>,
}

impl<'a> RouteMatch<'a> {
    /// A match of its fields.
    pub fn new(
        path: PathSpec<'a>,
        case_sensitive: bool,
        headers: ThinVec<HeaderMatcher<'a>>,
        query_parameters: ThinVec<QueryParameterMatcher<'a>>,
        unevaluated: ThinVec<&'static str>,
    ) -> Self {
        let rare = (!case_sensitive || !query_parameters.is_empty() || !unevaluated.is_empty())
            .then(|| Box::new(RareMatch { case_sensitive, query_parameters, unevaluated }));
        RouteMatch { path, headers, rare }
    }

    /// A match of a path alone.
    pub fn of_path(path: PathSpec<'a>, case_sensitive: bool) -> Self {
        RouteMatch::new(path, case_sensitive, ThinVec::new(), ThinVec::new(), ThinVec::new())
    }

    /// `case_sensitive` (default true); applies to prefix, path and path_separated_prefix.
    pub fn case_sensitive(&self) -> bool {
        self.rare.as_ref().is_none_or(|r| r.case_sensitive)
    }

    /// `query_parameters`: every one must hold.
    pub fn query_parameters(&self) -> &[QueryParameterMatcher<'a>] {
        self.rare.as_ref().map_or(&[], |r| &r.query_parameters)
    }

    /// Predicates xdsck does not evaluate, by field name (`runtime_fraction`, `grpc`,
    /// `tls_context`, `dynamic_metadata`, `filter_state`, `cookies`).
    pub fn unevaluated(&self) -> &[&'static str] {
        self.rare.as_ref().map_or(&[], |r| &r.unevaluated)
    }
}

impl Default for RouteMatch<'_> {
    fn default() -> Self {
        RouteMatch { path: PathSpec::Missing, headers: ThinVec::new(), rare: None }
    }
}

/// A query parameter matcher of a route: the first value of parameter `name` in the query
/// string (split on `&`, each `key=value` or a bare `key`, nothing decoded), tested as `kind`
/// says — a `string_match` (the [`HeaderMatch`] string forms), or `present_match`, which holds
/// when the parameter's presence is what it says (`false`: absent). With neither, the parameter
/// must be present.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QueryParameterMatcher<'a> {
    /// The parameter tested (`name`).
    pub name: Text<'a>,
    /// The test applied to its first value.
    pub kind: HeaderMatch<'a>,
}

/// What a route does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action<'a> {
    /// `route.cluster`: forwarded to this cluster.
    Cluster(Text<'a>),
    /// `route.weighted_clusters`: split across these clusters by weight.
    WeightedClusters(ThinVec<(Text<'a>, u32)>),
    /// `route.cluster_header`: forwarded to the cluster this request header names.
    ClusterHeader(Text<'a>),
    /// `cluster_specifier_plugin` or `inline_cluster_specifier_plugin`.
    ClusterPlugin,
    /// `redirect`: answered with a redirect; its scalar fields as `key=value`, space-separated.
    Redirect(Box<str>),
    /// `direct_response`: Envoy answers the request itself, no upstream involved.
    DirectResponse {
        /// The HTTP status Envoy sends.
        status: u32,
        /// The body, when given as `inline_string`; `None` for no body or one from elsewhere.
        body: Option<Text<'a>>,
    },
    /// `filter_action` or `non_forwarding_action`.
    Other(&'static str),
    /// No action (Envoy's proto validation rejects it).
    Missing,
}

impl Action<'_> {
    /// The action with its strings owned, to outlive the input (a trace's answer keeps it).
    pub fn into_owned(self) -> Action<'static> {
        let own = |s: Text<'_>| Text::owned(s.into_owned());
        match self {
            Action::Cluster(c) => Action::Cluster(own(c)),
            Action::WeightedClusters(w) => Action::WeightedClusters(w.into_iter().map(|(n, x)| (own(n), x)).collect()),
            Action::ClusterHeader(h) => Action::ClusterHeader(own(h)),
            Action::ClusterPlugin => Action::ClusterPlugin,
            Action::Redirect(to) => Action::Redirect(to),
            Action::DirectResponse { status, body } => Action::DirectResponse { status, body: body.map(own) },
            Action::Other(k) => Action::Other(k),
            Action::Missing => Action::Missing,
        }
    }
}

impl std::fmt::Display for Action<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Cluster(c) => write!(f, "cluster {c}"),
            Action::WeightedClusters(w) => {
                let parts: Vec<String> = w.iter().map(|(n, weight)| format!("{n}={weight}")).collect();
                write!(f, "weighted clusters {}", parts.join(", "))
            }
            Action::ClusterHeader(h) => write!(f, "the cluster named by header {h}"),
            Action::ClusterPlugin => f.write_str("a cluster specifier plugin"),
            Action::Redirect(to) => write!(f, "redirect {to}"),
            Action::DirectResponse { status, body: Some(b) } => write!(f, "direct response {status} {b:?}"),
            Action::DirectResponse { status, body: None } => write!(f, "direct response {status}"),
            Action::Other(k) => f.write_str(k),
            Action::Missing => f.write_str("no action"),
        }
    }
}

/// How an HCM finds its routes, as read from the HCM itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HcmRoutes<'a> {
    /// `route_config`, inline.
    Inline(Box<RouteTable<'a>>),
    /// `rds.route_config_name` (qualified as Envoy will see it): borrowed from the text unless
    /// qualified or unescaped (a tenant listener has 100k of them).
    Rds(Cow<'a, str>),
    /// `scoped_routes`: not analysed.
    Scoped,
    /// None of them.
    None,
}

/// One `http_connection_manager` and its host-matching settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hcm<'a> {
    /// The input the HCM was read from. (Its place is not kept: [`FilterChain::filter_pointer`]
    /// spells it when a finding needs it; a pointer a TLS chain was 80 bytes at 100k tenants.)
    pub source: SourceId,
    /// Where its route table is.
    pub routes: HcmRoutes<'a>,
    /// `strip_any_host_port`: the Host's `:port` is dropped before the virtual host is chosen.
    pub strip_any_host_port: bool,
    /// `strip_matching_host_port`: the Host's `:port` is dropped only when it is the listener's.
    pub strip_matching_host_port: bool,
    /// `codec_type`: whether a TLS client that negotiated `h2` is spoken to in HTTP/2.
    pub codec_type: CodecType,
    /// The key the inline table is under, as the HCM spells it (`route_config`, `routeConfig`),
    /// for the table's pointer.
    pub table_key: &'static str,
    /// The spelling of its filter object's own keys (`typed_config` or `typedConfig`), for the
    /// HCM's pointer: kept here, not with every network filter, where its byte made a chain's
    /// one filter 64 bytes instead of 56.
    pub filter_casing: Casing,
}

/// `HttpConnectionManager.CodecType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CodecType {
    /// `AUTO` (the default): HTTP/2 when ALPN says `h2` (or the client opens with the HTTP/2
    /// preface), HTTP/1.1 otherwise.
    #[default]
    Auto,
    /// `HTTP1` only.
    Http1,
    /// `HTTP2` only.
    Http2,
    /// `HTTP3` (QUIC listeners).
    Http3,
}

impl CodecType {
    /// Whether a connection of this manager can be HTTP/2.
    pub fn speaks_http2(self) -> bool {
        matches!(self, CodecType::Auto | CodecType::Http2)
    }
}

/// A part of the route configuration xdsck does not analyse, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnalysed {
    /// The input it is in.
    pub source: SourceId,
    /// JSON pointer of the part, where the finding about it points.
    pub pointer: String,
    /// What it is (`scoped_routes`, `vhds`, a virtual host `matcher`).
    pub what: &'static str,
}

/// Every route table and HCM of a run, found in the inputs' model once for the checks and a
/// trace: the inline tables of every listener's chains, the RDS tables, and what of them is
/// not analysed.
#[derive(Debug, Default)]
pub struct RouteTables<'r, 'a> {
    /// Inline and RDS tables alike, in input order.
    pub tables: Vec<&'r RouteTable<'a>>,
    /// Every HCM of every listener, in input order.
    pub hcms: Vec<&'r Hcm<'a>>,
    /// What the reader saw but xdsck does not analyse: each becomes a finding, so a partly read
    /// input never passes as clean.
    pub not_analysed: Vec<&'r NotAnalysed>,
    /// The HCMs whose RDS table the run should hold and does not: their Envoy's RDS answer is
    /// an input ([`crate::model::Input::route_answers`]) and no input has a table of the name.
    /// Each with the pointer of its `typed_config`.
    pub unanswered: Vec<(&'r Hcm<'a>, String)>,
    /// Where the RDS tables are by the Envoy that holds them ([`Self::envoy`]) and name: the
    /// first of each name.
    by_name: crate::hashing::InputMap<(usize, &'r str), usize>,
    /// The run's inputs are one Envoy's ([`crate::model::Snapshot::one_envoy`]).
    one_envoy: bool,
}

impl<'r, 'a> RouteTables<'r, 'a> {
    /// The route tables and HCMs of every input of `snapshot`.
    pub fn of(snapshot: &'r crate::model::Snapshot<'a>) -> Self {
        let mut out = RouteTables { one_envoy: snapshot.one_envoy, ..RouteTables::default() };
        // The RDS HCMs of the Envoys that hold an RDS answer, by Envoy: checked once every
        // table is in.
        let answered: rustc_hash::FxHashSet<usize> = (snapshot.inputs.iter().enumerate())
            .filter(|(_, i)| i.route_answers)
            .map(|(envoy, _)| out.envoy(envoy))
            .collect();
        let mut asked = Vec::new();
        for (envoy, input) in snapshot.inputs.iter().enumerate() {
            let failed = input.error_states.iter().filter_map(|e| e.failed_configuration.as_ref());
            let answers = answered.contains(&out.envoy(envoy));
            for l in input.listeners.iter().chain(failed) {
                for chain in l.chains() {
                    for (j, f) in chain.filters.iter().enumerate() {
                        if let crate::model::NetworkFilterKind::HttpConnectionManager(hcm) = &f.kind {
                            out.push_hcm(hcm);
                            if answers && matches!(hcm.routes, HcmRoutes::Rds(_)) {
                                asked.push((envoy, &**hcm, l, chain, j));
                            }
                        }
                    }
                }
            }
            for t in &input.route_tables {
                out.push_table(envoy, t);
            }
            out.not_analysed.extend(&input.not_analysed);
        }
        out.unanswered = asked
            .into_iter()
            .filter(|&(envoy, hcm, ..)| out.table_of(envoy, hcm).is_none())
            .map(|(_, hcm, l, chain, j)| (hcm, chain.filter_pointer(&l.chain_pointer(chain), j)))
            .collect();
        out
    }

    fn push_table(&mut self, envoy: usize, table: &'r RouteTable<'a>) {
        let i = self.tables.len();
        if matches!(table.origin, TableOrigin::Rds | TableOrigin::DumpStatic)
            && let Some(n) = &table.name
        {
            let key = (self.envoy(envoy), n.as_ref());
            self.by_name.entry(key).or_insert(i);
        }
        self.tables.push(table);
    }

    fn push_hcm(&mut self, hcm: &'r Hcm<'a>) {
        self.hcms.push(hcm);
        if let HcmRoutes::Inline(t) = &hcm.routes {
            self.tables.push(t);
        }
    }

    /// The Envoy the snapshot's input `input` (its index) is: the input itself, or the run's one
    /// when its inputs are one Envoy's. An RDS name is looked up within it: two unrelated
    /// inputs (two pods of a peer's map) may each have a table `http` of their own.
    fn envoy(&self, input: usize) -> usize {
        if self.one_envoy { 0 } else { input }
    }

    /// The RDS table with this name that the Envoy of the snapshot's input `input` holds.
    pub fn rds(&self, input: usize, name: &str) -> Option<&'r RouteTable<'a>> {
        self.by_name.get(&(self.envoy(input), name)).map(|&i| self.tables[i])
    }

    /// The HCMs of a filter chain: its `http_connection_manager` filters.
    pub fn hcms_of_chain<'c>(
        chain: &'c crate::model::FilterChain<'a>,
    ) -> impl Iterator<Item = &'c Hcm<'a>> + use<'c, 'a> {
        chain.filters.iter().filter_map(|f| match &f.kind {
            crate::model::NetworkFilterKind::HttpConnectionManager(h) => Some(&**h),
            _ => None,
        })
    }

    /// The table an HCM of the snapshot's input `input` routes with, when the run holds it.
    pub fn table_of(&self, input: usize, hcm: &'r Hcm<'a>) -> Option<&'r RouteTable<'a>> {
        match &hcm.routes {
            HcmRoutes::Inline(t) => Some(t),
            HcmRoutes::Rds(name) => self.rds(input, name),
            HcmRoutes::Scoped | HcmRoutes::None => None,
        }
    }
}
