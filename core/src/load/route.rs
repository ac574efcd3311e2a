//! Route tables into the model: an `http_connection_manager`'s settings and inline table, and
//! a `RouteConfiguration` given on its own (RDS: a DiscoveryResponse's, a CiliumEnvoyConfig's, a
//! config_dump's), read by the listener loader's own pass over the text (the typed messages of
//! [`super::route_raw`], strings borrowed from the text).
//!
//! A table's pointers are known only once the listener (or resource) holding it is placed:
//! [`place`] gives them afterwards, from the keys as the input spells them, so that they meet
//! the listener model's chain pointers (`Listener::chain_pointer`) exactly.

use std::borrow::Cow;

use serde_json::Value;
use thin_vec::ThinVec;

use super::route_raw::{
    Field, FromRaw, RawHeaderMatcher, RawQueryParameterMatcher, RawRoute, RawRouteConfiguration, RawRouteMatch,
    RawStringMatcher, RawVirtualHost, boolean, get, key_of, message, string, take,
};
use crate::model::route::{
    Action, HeaderMatch, HeaderMatcher, Mirrors, NotAnalysed, PathSpec, QueryParameterMatcher, RequireTls, Route,
    RouteMatch, RouteTable, TableOrigin, VirtualHost,
};
use crate::model::{Text, text_of};
use crate::source::{SourceId, join_token};

/// The parts of a RouteConfiguration the model keeps, however it was read.
pub(crate) struct TableParts<'t> {
    pub name: Option<Cow<'t, str>>,
    pub virtual_hosts: Vec<VirtualHost<'t>>,
    /// The `virtual_hosts` key as written.
    pub vh_key: &'static str,
    pub vhds: bool,
    pub ignore_port_in_host_matching: bool,
    pub validate_clusters: Option<bool>,
    pub mirrors: Option<Box<Mirrors<'t>>>,
}

impl<'t> TableParts<'t> {
    /// The parts of a `RouteConfiguration` read as one message (an HCM's `route_config`).
    pub(crate) fn of(o: RawRouteConfiguration<'t>) -> Self {
        TableParts {
            vh_key: key_of(&o.virtual_hosts, "virtual_hosts", "virtualHosts"),
            vhds: o.vhds.is_some(),
            ignore_port_in_host_matching: boolean(&o.ignore_port_in_host_matching).unwrap_or(false),
            validate_clusters: boolean(&o.validate_clusters),
            mirrors: mirrors(o.request_mirror_policies),
            virtual_hosts: take(o.virtual_hosts).map(|l| l.0).unwrap_or_default(),
            name: string(o.name),
        }
    }

    /// The table, not yet placed ([`place`]).
    pub(crate) fn table(self, origin: TableOrigin) -> RouteTable<'t> {
        RouteTable {
            source: SourceId::default(),
            name: self.name.map(text_of),
            origin,
            // Sized to its items as they were read: boxing it keeps the allocation.
            virtual_hosts: self.virtual_hosts.into_boxed_slice(),
            ignore_port_in_host_matching: self.ignore_port_in_host_matching,
            vhds: self.vhds,
            validate_clusters: self.validate_clusters,
            mirrors: self.mirrors,
            pointer: Box::default(),
            vh_key: self.vh_key,
        }
    }
}

/// Places a table at `pointer` of input `source` (its virtual hosts' and routes' places are
/// spelt from it when a finding needs one), and what of it xdsck does not analyse (a `vhds`, a
/// virtual host `matcher`).
pub(crate) fn place(t: &mut RouteTable<'_>, source: SourceId, pointer: String, not_analysed: &mut Vec<NotAnalysed>) {
    t.source = source;
    t.pointer = pointer.into_boxed_str();
    // A dump's copy of an inline table was reported where the listener holds it.
    if t.origin == TableOrigin::DumpStatic {
        return;
    }
    for vh in t.virtual_hosts.iter().filter(|vh| vh.has_matcher) {
        not_analysed.push(NotAnalysed {
            source,
            pointer: join_token(&t.vh_pointer(vh), "matcher"),
            what: "a virtual host matcher",
        });
    }
    if t.vhds {
        not_analysed.push(NotAnalysed { source, pointer: join_token(&t.pointer, "vhds"), what: "vhds" });
    }
}

impl<'t> FromRaw<'t> for VirtualHost<'t> {
    type Raw = RawVirtualHost<'t>;
    fn from_raw(o: RawVirtualHost<'t>, index: usize) -> Self {
        let domains = take(o.domains).map(|l| l.0).unwrap_or_default();
        VirtualHost {
            name: text(o.name).unwrap_or_default(),
            // A list in a text of at most 4 GiB has fewer items than `u32::MAX`.
            index: u32::try_from(index).unwrap_or(u32::MAX),
            // Sized to their items as they were read: boxing them keeps the allocation.
            domains: exact(domains.into_iter().filter_map(|d| d.0)).into_boxed_slice(),
            routes: take(o.routes).map(|l| l.0).unwrap_or_default().into_boxed_slice(),
            has_matcher: o.matcher.is_some(),
            mirrors: mirrors(o.request_mirror_policies),
            require_tls: match get(&o.require_tls).map(|r| r.0) {
                Some(2) => RequireTls::All,
                Some(1) => RequireTls::ExternalOnly,
                _ => RequireTls::None,
            },
        }
    }
}

impl<'t> FromRaw<'t> for Route<'t> {
    type Raw = RawRoute<'t>;
    fn from_raw(o: RawRoute<'t>, index: usize) -> Self {
        route(o, index)
    }
}

impl<'t> FromRaw<'t> for QueryParameterMatcher<'t> {
    type Raw = RawQueryParameterMatcher<'t>;
    fn from_raw(q: RawQueryParameterMatcher<'t>, _: usize) -> Self {
        let kind = if let Some(sm) = message(q.string_match) {
            string_matcher(sm)
        } else {
            // `present_match`, or neither: then the parameter must be present.
            HeaderMatch::Present(boolean(&q.present_match).unwrap_or(true))
        };
        QueryParameterMatcher { name: text(q.name).unwrap_or_default(), kind }
    }
}

impl<'t> FromRaw<'t> for HeaderMatcher<'t> {
    type Raw = RawHeaderMatcher<'t>;
    fn from_raw(h: RawHeaderMatcher<'t>, _: usize) -> Self {
        header_matcher(h)
    }
}

/// A string as a route keeps it (two words).
fn text<'a>(f: Option<Field<super::route_raw::LStr<'a>>>) -> Option<Text<'a>> {
    string(f).map(text_of)
}

/// Collects into a `Vec` of exactly the items' length (a route table is read in full, not
/// grown into: no spare capacity kept per virtual host).
fn exact<T>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = items.collect();
    v.shrink_to_fit();
    v
}

fn route(o: RawRoute<'_>, index: usize) -> Route<'_> {
    let name = text(o.name);
    let matcher = message(o.r#match).map(route_match).unwrap_or_default();
    let mut forward = message(o.route);
    let mirrors = mirrors(forward.as_mut().and_then(|r| r.request_mirror_policies.take()));
    let action =
        action(forward, o.redirect, o.direct_response, o.filter_action.is_some(), o.non_forwarding_action.is_some());
    // A list in a text of at most 4 GiB has fewer items than `u32::MAX`.
    Route { name, index: u32::try_from(index).unwrap_or(u32::MAX), matcher, action, mirrors }
}

fn route_match(m: RawRouteMatch<'_>) -> RouteMatch<'_> {
    let unevaluated = [
        ("runtime_fraction", &m.runtime_fraction),
        ("cookies", &m.cookies),
        ("grpc", &m.grpc),
        ("tls_context", &m.tls_context),
        ("dynamic_metadata", &m.dynamic_metadata),
        ("filter_state", &m.filter_state),
    ]
    .into_iter()
    .filter(|(_, f)| get(f).is_some_and(|p| p.0))
    .map(|(name, _)| name)
    .collect();
    let case_sensitive = boolean(&m.case_sensitive).unwrap_or(true);
    let (connect, policy) = (m.connect_matcher.is_some(), m.path_match_policy.is_some());
    // Copied into lists of their exact length (a parsed list has room for four).
    let headers = take(m.headers).map(|l| ThinVec::from(l.0)).unwrap_or_default();
    let query_parameters = take(m.query_parameters).map(|l| ThinVec::from(l.0)).unwrap_or_default();
    let path = if let Some(p) = text(m.prefix) {
        PathSpec::Prefix(p)
    } else if let Some(p) = text(m.path) {
        PathSpec::Path(p)
    } else if let Some(r) = message(m.safe_regex) {
        PathSpec::SafeRegex(text(r.regex).unwrap_or_default())
    } else if let Some(p) = text(m.path_separated_prefix) {
        PathSpec::PathSeparatedPrefix(p)
    } else if connect {
        PathSpec::Connect
    } else if policy {
        PathSpec::Policy
    } else {
        PathSpec::Missing
    };
    RouteMatch::new(path, case_sensitive, headers, query_parameters, unevaluated)
}

fn header_matcher(h: RawHeaderMatcher<'_>) -> HeaderMatcher<'_> {
    let invert_match = boolean(&h.invert_match).unwrap_or(false);
    let treat_missing_header_as_empty = boolean(&h.treat_missing_header_as_empty).unwrap_or(false);
    let present = boolean(&h.present_match);
    let kind = if let Some(v) = text(h.exact_match) {
        HeaderMatch::Exact { value: v, ignore_case: false }
    } else if let Some(v) = text(h.prefix_match) {
        HeaderMatch::Prefix { value: v, ignore_case: false }
    } else if let Some(v) = text(h.suffix_match) {
        HeaderMatch::Suffix { value: v, ignore_case: false }
    } else if let Some(v) = text(h.contains_match) {
        HeaderMatch::Contains { value: v, ignore_case: false }
    } else if let Some(r) = message(h.safe_regex_match) {
        HeaderMatch::Regex(text(r.regex).unwrap_or_default())
    } else if let Some(p) = present {
        HeaderMatch::Present(p)
    } else if let Some(sm) = message(h.string_match) {
        string_matcher(sm)
    } else if let Some(k) = h.match_key {
        HeaderMatch::Other(text_of(k))
    } else {
        // No match specifier: Envoy then tests presence.
        HeaderMatch::Present(true)
    };
    HeaderMatcher { name: text(h.name).unwrap_or_default(), kind, invert_match, treat_missing_header_as_empty }
}

/// A `StringMatcher` as a [`HeaderMatch`].
fn string_matcher(sm: RawStringMatcher<'_>) -> HeaderMatch<'_> {
    let ignore_case = boolean(&sm.ignore_case).unwrap_or(false);
    if let Some(v) = text(sm.exact) {
        HeaderMatch::Exact { value: v, ignore_case }
    } else if let Some(v) = text(sm.prefix) {
        HeaderMatch::Prefix { value: v, ignore_case }
    } else if let Some(v) = text(sm.suffix) {
        HeaderMatch::Suffix { value: v, ignore_case }
    } else if let Some(v) = text(sm.contains) {
        HeaderMatch::Contains { value: v, ignore_case }
    } else if let Some(r) = message(sm.safe_regex) {
        HeaderMatch::Regex(text(r.regex).unwrap_or_default())
    } else {
        HeaderMatch::Other("string_match".into())
    }
}

/// [`mirrors`] for a list read without its key's spelling: `camel` is the object's casing.
pub(crate) fn mirrors_of<'t>(
    list: Option<super::route_raw::List<super::route_raw::Obj<super::route_raw::RawMirror<'t>>>>,
    camel: bool,
) -> Option<Box<Mirrors<'t>>> {
    mirrors(list.map(|value| Field { value, camel }))
}

/// A `request_mirror_policies` list, when it has an entry (a policy that is not an object, or
/// mirrors by `cluster_header`, keeps its place with `""`).
pub(crate) fn mirrors<'t>(
    f: Option<Field<super::route_raw::List<super::route_raw::Obj<super::route_raw::RawMirror<'t>>>>>,
) -> Option<Box<Mirrors<'t>>> {
    let key = key_of(&f, "request_mirror_policies", "requestMirrorPolicies");
    let list = take(f)?.0;
    (!list.is_empty()).then(|| {
        let clusters = exact(list.into_iter().map(|p| p.0.and_then(|p| string(p.cluster)).unwrap_or_default()));
        Box::new(Mirrors { key, clusters })
    })
}

fn action<'t>(
    route: Option<super::route_raw::RawRouteAction<'t>>,
    redirect: Option<Field<super::route_raw::AnyObject>>,
    direct: Option<Field<super::route_raw::Obj<super::route_raw::RawDirectResponse<'t>>>>,
    filter_action: bool,
    non_forwarding_action: bool,
) -> Action<'t> {
    if let Some(r) = route {
        if let Some(c) = text(r.cluster) {
            return Action::Cluster(c);
        }
        if let Some(w) = message(r.weighted_clusters) {
            let clusters = take(w.clusters).map(|l| l.0).unwrap_or_default();
            let mut exact = ThinVec::with_capacity(clusters.iter().filter(|c| c.0.is_some()).count());
            exact.extend(clusters.into_iter().filter_map(|c| c.0).map(|c| {
                let weight = get(&c.weight).and_then(|w| w.0).unwrap_or(0);
                (text(c.name).unwrap_or_default(), weight)
            }));
            return Action::WeightedClusters(exact);
        }
        if let Some(h) = text(r.cluster_header) {
            return Action::ClusterHeader(h);
        }
        return Action::ClusterPlugin;
    }
    if let Some(r) = take(redirect).and_then(|r| r.0) {
        let parts: Vec<String> = r
            .iter()
            .filter_map(|(k, v)| match v {
                Value::String(s) => Some(format!("{k}={s}")),
                Value::Bool(b) => Some(format!("{k}={b}")),
                Value::Number(n) => Some(format!("{k}={n}")),
                _ => None,
            })
            .collect();
        return Action::Redirect(parts.join(" ").into());
    }
    if let Some(d) = message(direct) {
        let body = message(d.body).and_then(|b| text(b.inline_string));
        return Action::DirectResponse { status: get(&d.status).and_then(|s| s.0).unwrap_or(0), body };
    }
    if filter_action {
        return Action::Other("filter_action");
    }
    if non_forwarding_action {
        return Action::Other("non_forwarding_action");
    }
    Action::Missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Snapshot;
    use crate::model::route::{HcmRoutes, RouteTables};
    use crate::source::{SourceFile, Sources};

    fn tables(yaml: &str) -> RouteTables<'static, 'static> {
        // Leaked: the tables borrow the text, and each test is one short process step.
        let mut sources = Sources::new();
        let id = sources.add(SourceFile::new("t.yaml", yaml));
        let sources: &'static Sources = Box::leak(Box::new(sources));
        let document = Box::leak(Box::new(crate::load::Document::new(id, sources.get(id))));
        let input = document.load().expect("loads");
        let snapshot = Box::leak(Box::new(Snapshot { inputs: vec![input], one_envoy: false }));
        RouteTables::of(snapshot)
    }

    const HCM: &str =
        "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";

    #[test]
    fn inline_table_is_read_with_pointers_that_meet_the_chain() {
        let yaml = format!(
            r#"
static_resources:
  listeners:
  - name: l
    address: {{socket_address: {{address: 127.0.0.1, port_value: 80}}}}
    filter_chains:
    - filters:
      - name: hcm
        typed_config:
          "@type": {HCM}
          stat_prefix: x
          strip_any_host_port: true
          route_config:
            name: rt
            ignore_port_in_host_matching: true
            virtual_hosts:
            - name: a
              domains: [a.com]
              routes:
              - match: {{prefix: /api, headers: [{{name: x-a, string_match: {{exact: b}}}}]}}
                route: {{cluster: c}}
              - name: last
                match: {{safe_regex: {{regex: "/v[0-9]"}}, runtime_fraction: {{default_value: {{numerator: 1}}}}}}
                direct_response: {{status: 200, body: {{inline_string: hi}}}}
"#
        );
        let t = tables(&yaml);
        assert_eq!(t.hcms.len(), 1);
        let hcm = &t.hcms[0];
        assert!(hcm.strip_any_host_port && !hcm.strip_matching_host_port);
        let table = t.table_of(0, hcm).expect("inline table");
        assert_eq!(
            &*table.pointer,
            "/static_resources/listeners/0/filter_chains/0/filters/0/typed_config/route_config"
        );
        assert_eq!(table.name.as_deref(), Some("rt"));
        assert!(table.ignore_port_in_host_matching);
        let vh = &table.virtual_hosts[0];
        assert_eq!(
            table.vh_pointer(vh),
            "/static_resources/listeners/0/filter_chains/0/filters/0/typed_config/route_config/virtual_hosts/0"
        );
        assert_eq!(*vh.domains, ["a.com"]);
        assert_eq!(vh.routes[0].display_name(), "routes[0]");
        assert_eq!(vh.routes[0].matcher.path, PathSpec::Prefix("/api".into()));
        assert_eq!(vh.routes[0].matcher.headers[0].kind, HeaderMatch::Exact { value: "b".into(), ignore_case: false });
        assert_eq!(vh.routes[0].action, Action::Cluster("c".into()));
        assert_eq!(vh.routes[1].display_name(), "last");
        assert_eq!(vh.routes[1].matcher.path, PathSpec::SafeRegex("/v[0-9]".into()));
        assert_eq!(vh.routes[1].matcher.unevaluated(), ["runtime_fraction"]);
        assert_eq!(vh.routes[1].action, Action::DirectResponse { status: 200, body: Some("hi".into()) });
    }

    #[test]
    fn mirror_lists_validate_clusters_and_codec_are_read_where_they_are() {
        let yaml = r#"
resources:
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: rt
  validateClusters: true
  requestMirrorPolicies: [{cluster: t}]
  virtual_hosts:
  - name: a
    domains: ["*"]
    request_mirror_policies: [{cluster: v}, {cluster_header: x}]
    routes:
    - {match: {prefix: /a}, redirect: {path_redirect: /b}}
    - {match: {prefix: /}, route: {cluster: c, requestMirrorPolicies: [{cluster: r}]}}
"#;
        let t = tables(yaml);
        let table = &t.tables[0];
        assert_eq!(table.validate_clusters, Some(true));
        let m = |m: &Option<Box<Mirrors<'static>>>| m.as_ref().map(|m| (m.key, m.clusters.clone()));
        assert_eq!(m(&table.mirrors), Some(("requestMirrorPolicies", vec!["t".into()])));
        let vh = &table.virtual_hosts[0];
        assert_eq!(m(&vh.mirrors), Some(("request_mirror_policies", vec!["v".into(), "".into()])));
        assert_eq!(m(&vh.routes[0].mirrors), None);
        assert_eq!(m(&vh.routes[1].mirrors), Some(("requestMirrorPolicies", vec!["r".into()])));
        assert_eq!(vh.routes[1].action, Action::Cluster("c".into()));

        let hcm = |codec: &str| {
            let yaml = format!(
                r#"
name: l
address: {{socket_address: {{address: 0.0.0.0, port_value: 80}}}}
filter_chains:
- filters:
  - name: envoy.filters.network.http_connection_manager
    typed_config:
      "@type": {HCM}
      stat_prefix: s
      {codec}
      route_config: {{virtual_hosts: [{{name: a, domains: ["*"]}}]}}
"#
            );
            tables(&yaml).hcms[0].codec_type
        };
        assert_eq!(hcm(""), crate::model::route::CodecType::Auto);
        assert_eq!(hcm("codec_type: HTTP1"), crate::model::route::CodecType::Http1);
        assert_eq!(hcm("codecType: 2"), crate::model::route::CodecType::Http2);
        assert_eq!(hcm("codec_type: BOGUS"), crate::model::route::CodecType::Auto);
    }

    #[test]
    fn camel_case_keys_and_lenient_values_read_as_envoy_reads_them() {
        // Values Envoy's JSON parser takes in its lenient mode read as it reads them; values it
        // refuses are findings of their own and read as unset.
        let json = format!(
            r#"{{"resources": [{{"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": "l",
              "filterChains": [{{"filters": [{{"name": "hcm", "typedConfig": {{"@type": "{HCM}",
                "stripAnyHostPort": {{"value": true}}, "strip_any_host_port": false,
                "routeConfig": {{"name": "rt", "virtualHosts": [{{"name": "v", "domains": ["a", "b\u002e"],
                  "requireTls": 2, "routes": [
                    {{"name": "r", "match": {{"prefix": 5, "path": "/p", "caseSensitive": "no", "grpc": {{}},
                      "runtimeFraction": null, "queryParameters": [],
                      "headers": [{{"name": "h", "invert_match": true}}, {{"name": "h", "rangeMatch": {{}}, "present_match": 1}}]}},
                     "route": {{"weightedClusters": {{"clusters": [{{"name": "c", "weight": {{"value": "7"}}}}, 9]}}}}}},
                    {{"match": {{"prefix": "/"}}, "redirect": {{"path_redirect": "/x", "response_code": 301, "strip_query": true}}}}
                  ]}}]}}}}}}]}}]}},
              {{"@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", "name": "rt2",
                "virtualHosts": [3, {{"name": "w", "domains": ["a", 1, "c"]}}]}}]}}"#
        );
        let t = tables(&json);
        let hcm = &t.hcms[0];
        assert!(!hcm.strip_any_host_port, "the snake_case spelling wins");
        let table = t.table_of(0, hcm).expect("inline table");
        assert_eq!(&*table.pointer, "/resources/0/filterChains/0/filters/0/typedConfig/routeConfig");
        let vh = &table.virtual_hosts[0];
        assert_eq!(
            table.vh_pointer(vh),
            "/resources/0/filterChains/0/filters/0/typedConfig/routeConfig/virtualHosts/0"
        );
        assert_eq!(*vh.domains, ["a", "b."]);
        assert_eq!(vh.require_tls, RequireTls::All);
        let r = &vh.routes[0];
        assert_eq!(table.route_pointer(vh, r), format!("{}/routes/0", table.vh_pointer(vh)));
        assert_eq!(r.matcher.path, PathSpec::Path("/p".into()));
        assert!(!r.matcher.case_sensitive(), "Envoy's JSON parser reads \"no\" as false (Abseil's SimpleAtob)");
        assert_eq!(r.matcher.unevaluated(), ["grpc"]);
        assert_eq!(r.matcher.headers[0].kind, HeaderMatch::Other("invert_match".into()));
        assert_eq!(r.matcher.headers[1].kind, HeaderMatch::Other("rangeMatch".into()));
        // `9` is no cluster (Envoy rejects the input, XDS119): it reads as an empty message.
        assert_eq!(r.action, Action::WeightedClusters(thin_vec::thin_vec![("c".into(), 7), ("".into(), 0)]));
        assert_eq!(vh.routes[1].action, Action::Redirect("path_redirect=/x response_code=301 strip_query=true".into()));
        let rds = &t.tables[1];
        assert_eq!(rds.name.as_deref(), Some("rt2"));
        // `3` and `1` are refused (XDS119): the virtual host reads as empty, so the places of
        // the others hold; the domain is left out.
        assert_eq!(rds.virtual_hosts.len(), 2);
        assert_eq!(rds.vh_pointer(&rds.virtual_hosts[1]), "/resources/1/virtualHosts/1");
        assert_eq!(*rds.virtual_hosts[1].domains, ["a", "c"]);
    }

    #[test]
    fn rds_names_resolve_and_cilium_qualifies_them() {
        let yaml = format!(
            r#"
apiVersion: cilium.io/v2
kind: CiliumEnvoyConfig
metadata: {{name: cec, namespace: ns}}
spec:
  resources:
  - "@type": type.googleapis.com/envoy.config.listener.v3.Listener
    name: l
    filter_chains:
    - filters:
      - name: hcm
        typed_config:
          "@type": {HCM}
          rds: {{route_config_name: rt}}
  - "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
    name: rt
    virtual_hosts: [{{name: a, domains: ["*"], routes: [{{match: {{prefix: /}}, route: {{cluster: c}}}}]}}]
"#
        );
        let t = tables(&yaml);
        let hcm = &t.hcms[0];
        assert!(matches!(&hcm.routes, HcmRoutes::Rds(n) if n == "ns/cec/rt"));
        let table = t.table_of(0, hcm).expect("resolved");
        assert_eq!(table.origin, TableOrigin::Rds);
        assert_eq!(&*table.pointer, "/spec/resources/1");
    }

    #[test]
    fn scoped_routes_and_vhds_are_recorded_as_not_analysed() {
        let yaml = format!(
            r#"
resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: l
  filter_chains:
  - filters:
    - name: hcm
      typed_config: {{"@type": {HCM}, scoped_routes: {{name: s}}}}
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: rt
  vhds: {{}}
"#
        );
        let t = tables(&yaml);
        let what: Vec<_> = t.not_analysed.iter().map(|n| (n.what, n.pointer.as_str())).collect();
        assert_eq!(
            what,
            [
                ("scoped_routes", "/resources/0/filter_chains/0/filters/0/typed_config/scoped_routes"),
                ("vhds", "/resources/1/vhds")
            ]
        );
    }
}
