//! HTTP route tables: what an `http_connection_manager` routes requests with.
//!
//! A [`RouteTable`] is one `RouteConfiguration`, inline in an HCM or delivered by RDS. Every
//! part keeps the JSON pointer it was read at, so a finding can point at a domain or a route.
//! Strings are owned: route tables are read by a second, separate pass over the text
//! ([`crate::load::route`]), which must not tie their lifetime to the listener model's.

use crate::source::SourceId;

/// Where a route table was found.
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone)]
pub struct RouteTable {
    pub source: SourceId,
    /// As Envoy names it (qualified as the Cilium agent does for a CiliumEnvoyConfig); `None`
    /// when the message has no name (Envoy's texts then end in `in route `).
    pub name: Option<String>,
    pub origin: TableOrigin,
    pub pointer: String,
    pub virtual_hosts: Vec<VirtualHost>,
    /// `ignore_port_in_host_matching`: the Host's `:port` is dropped before domains are searched.
    pub ignore_port_in_host_matching: bool,
    /// `vhds` is set: virtual hosts arrive on demand and are not in this input.
    pub vhds: bool,
}

impl RouteTable {
    /// The name as Envoy prints it in its texts (`""` for an unnamed table).
    pub fn envoy_name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// The name as xdsck prints it.
    pub fn display_name(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => "(unnamed)".to_owned(),
        }
    }
}

/// `VirtualHost.require_tls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequireTls {
    #[default]
    None,
    ExternalOnly,
    All,
}

/// One virtual host.
#[derive(Debug, Clone)]
pub struct VirtualHost {
    pub name: String,
    pub pointer: String,
    /// As written (Envoy lower-cases them when it indexes them).
    pub domains: Vec<String>,
    pub routes: Vec<Route>,
    /// A `matcher` tree is set (routes are then chosen by it, which xdsck does not evaluate).
    pub has_matcher: bool,
    pub require_tls: RequireTls,
}

/// One route of a virtual host.
#[derive(Debug, Clone)]
pub struct Route {
    /// Its `name`, if any.
    pub name: Option<String>,
    pub index: usize,
    pub pointer: String,
    pub matcher: RouteMatch,
    pub action: Action,
}

impl Route {
    /// How xdsck names a route: its name, or `routes[N]`.
    pub fn display_name(&self) -> String {
        match &self.name {
            Some(n) if !n.is_empty() => n.clone(),
            _ => format!("routes[{}]", self.index),
        }
    }
}

/// The path specifier of a `RouteMatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSpec {
    Prefix(String),
    Path(String),
    SafeRegex(String),
    PathSeparatedPrefix(String),
    /// `connect_matcher`: CONNECT requests only.
    Connect,
    /// `path_match_policy` (an extension, e.g. a URI template).
    Policy,
    /// None given (Envoy's proto validation rejects it).
    Missing,
}

/// A header matcher of a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderMatcher {
    pub name: String,
    pub kind: HeaderMatch,
    pub invert_match: bool,
    pub treat_missing_header_as_empty: bool,
}

/// What a header matcher tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderMatch {
    Exact {
        value: String,
        ignore_case: bool,
    },
    Prefix {
        value: String,
        ignore_case: bool,
    },
    Suffix {
        value: String,
        ignore_case: bool,
    },
    Contains {
        value: String,
        ignore_case: bool,
    },
    Regex(String),
    /// `present_match: true|false`.
    Present(bool),
    /// A form xdsck does not evaluate (`range_match`, ...).
    Other(String),
}

/// `RouteMatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteMatch {
    pub path: PathSpec,
    /// `case_sensitive` (default true); applies to prefix, path and path_separated_prefix.
    pub case_sensitive: bool,
    pub headers: Vec<HeaderMatcher>,
    /// Predicates xdsck does not evaluate, by field name (`query_parameters`,
    /// `runtime_fraction`, `grpc`, `tls_context`, `dynamic_metadata`, `filter_state`).
    pub unevaluated: Vec<&'static str>,
}

impl Default for RouteMatch {
    fn default() -> Self {
        Self { path: PathSpec::Missing, case_sensitive: true, headers: Vec::new(), unevaluated: Vec::new() }
    }
}

/// What a route does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Cluster(String),
    WeightedClusters(Vec<(String, u32)>),
    ClusterHeader(String),
    /// `cluster_specifier_plugin` or `inline_cluster_specifier_plugin`.
    ClusterPlugin,
    Redirect(String),
    DirectResponse {
        status: u32,
        body: Option<String>,
    },
    /// `filter_action` or `non_forwarding_action`.
    Other(&'static str),
    /// No action (Envoy's proto validation rejects it).
    Missing,
}

impl Action {
    /// The action as a JSON value, for `trace --format json`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Action::Cluster(c) => json!({"kind": "cluster", "cluster": c}),
            Action::WeightedClusters(w) => json!({
                "kind": "weighted_clusters",
                "clusters": w.iter().map(|(n, weight)| json!({"name": n, "weight": weight})).collect::<Vec<_>>(),
            }),
            Action::ClusterHeader(h) => json!({"kind": "cluster_header", "header": h}),
            Action::ClusterPlugin => json!({"kind": "cluster_specifier_plugin"}),
            Action::Redirect(to) => json!({"kind": "redirect", "redirect": to}),
            Action::DirectResponse { status, body } => {
                json!({"kind": "direct_response", "status": status, "body": body})
            }
            Action::Other(k) => json!({"kind": k}),
            Action::Missing => json!({"kind": "none"}),
        }
    }
}

impl std::fmt::Display for Action {
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
#[derive(Debug, Clone)]
pub enum HcmRoutes {
    /// `route_config`, inline: an index into [`RouteTables::tables`].
    Inline(usize),
    /// `rds.route_config_name` (qualified as Envoy will see it).
    Rds(String),
    /// `scoped_routes`: not analysed.
    Scoped,
    /// None of them.
    None,
}

/// One `http_connection_manager` and its host-matching settings.
#[derive(Debug, Clone)]
pub struct Hcm {
    pub source: SourceId,
    /// The HCM's typed_config.
    pub pointer: String,
    /// The filter chain it sits in (where the listener model's chain pointer points).
    pub chain_pointer: String,
    pub routes: HcmRoutes,
    pub strip_any_host_port: bool,
    pub strip_matching_host_port: bool,
}

/// A part of the route configuration xdsck does not analyse, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnalysed {
    pub source: SourceId,
    pub pointer: String,
    /// What it is (`scoped_routes`, `vhds`, a virtual host `matcher`).
    pub what: &'static str,
}

/// Every route table and HCM of a run.
#[derive(Debug, Default)]
pub struct RouteTables {
    pub tables: Vec<RouteTable>,
    pub hcms: Vec<Hcm>,
    pub not_analysed: Vec<NotAnalysed>,
    /// Where the RDS tables are by name: the first of each name.
    by_name: std::collections::HashMap<String, usize>,
    /// Where the HCMs are by (source, chain pointer).
    by_chain: std::collections::HashMap<(SourceId, String), Vec<usize>>,
}

impl RouteTables {
    /// Adds a table; returns its index.
    pub fn push_table(&mut self, table: RouteTable) -> usize {
        let i = self.tables.len();
        if matches!(table.origin, TableOrigin::Rds | TableOrigin::DumpStatic)
            && let Some(n) = &table.name
        {
            self.by_name.entry(n.clone()).or_insert(i);
        }
        self.tables.push(table);
        i
    }

    pub fn push_hcm(&mut self, hcm: Hcm) {
        self.by_chain.entry((hcm.source, hcm.chain_pointer.clone())).or_default().push(self.hcms.len());
        self.hcms.push(hcm);
    }

    /// The RDS table with this name, from any input of the run.
    pub fn rds(&self, name: &str) -> Option<&RouteTable> {
        self.by_name.get(name).map(|&i| &self.tables[i])
    }

    /// The HCMs of a filter chain, by the chain's pointer.
    pub fn hcms_of_chain(&self, source: SourceId, chain_pointer: &str) -> impl Iterator<Item = &Hcm> {
        self.by_chain.get(&(source, chain_pointer.to_owned())).into_iter().flatten().map(|&i| &self.hcms[i])
    }

    /// The table an HCM routes with, when the run holds it.
    pub fn table_of(&self, hcm: &Hcm) -> Option<&RouteTable> {
        match &hcm.routes {
            HcmRoutes::Inline(i) => self.tables.get(*i),
            HcmRoutes::Rds(name) => self.rds(name),
            HcmRoutes::Scoped | HcmRoutes::None => None,
        }
    }
}
