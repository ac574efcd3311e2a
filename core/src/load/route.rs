//! Route tables: every `http_connection_manager` and every `RouteConfiguration` of a run.
//!
//! A separate pass from the listener loader: the inputs' JSON text is streamed again
//! and walked for the two message types, wherever they sit (a bootstrap's static listeners, a
//! config_dump's `static_route_configs`/`dynamic_route_configs`, an LDS or RDS
//! DiscoveryResponse, a CiliumEnvoyConfig's `resources`). The pass only runs on an input whose
//! text names one of the two types, so a listener-only input pays a substring search.
//!
//! Pointers are built from the keys as the input spells them, so they meet the listener
//! model's chain pointers (`Listener::chain_pointer`) exactly.

use std::borrow::Cow;

use std::sync::Arc;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::route_raw::{
    Field, FromRaw, LStr, RawHcm, RawHeaderMatcher, RawRoute, RawRouteConfiguration, RawRouteMatch, RawVirtualHost,
    boolean, get, key_of, message, string, take,
};
use crate::model::Snapshot;
use crate::model::route::{
    Action, Hcm, HcmRoutes, HeaderMatch, HeaderMatcher, Mirrors, NotAnalysed, PathSpec, RequireTls, Route, RouteMatch,
    RouteTable, RouteTables, TableOrigin, VirtualHost,
};
use crate::source::{SourceId, Sources, join_index, join_token};

const HCM_TYPE: &str = ".HttpConnectionManager";
const ROUTE_TYPE: &str = ".RouteConfiguration";

/// Reads the route tables of every loaded input of a snapshot, for the checks: an input with
/// no virtual host and no `scoped_routes` has nothing for them and is not read again (a
/// tenant-scale dump whose HCMs all name RDS tables it does not hold costs a substring search).
pub fn read_all<'s>(snapshot: &Snapshot<'s>, sources: &'s Sources) -> RouteTables<'s> {
    let mut out = RouteTables::default();
    for input in &snapshot.inputs {
        let text = input.locator(sources.get(input.source)).json_text();
        let has = |needle: &str| memchr::memmem::find(text.as_bytes(), needle.as_bytes()).is_some();
        if ["virtual_hosts", "virtualHosts", "scoped_routes", "scopedRoutes"].into_iter().any(has) {
            read(input.source, text, &mut out);
        }
    }
    out
}

/// [`read_all`] for a trace, which needs every HCM even when its table is elsewhere.
pub fn read_all_hcms<'s>(snapshot: &Snapshot<'s>, sources: &'s Sources) -> RouteTables<'s> {
    let mut out = RouteTables::default();
    for input in &snapshot.inputs {
        read(input.source, input.locator(sources.get(input.source)).json_text(), &mut out);
    }
    out
}

/// Reads one source's route tables into `out`, from the JSON text the listener loader read.
pub fn read<'t>(source: SourceId, text: &'t str, out: &mut RouteTables<'t>) {
    let finder = |needle: &str| memchr::memmem::find(text.as_bytes(), needle.as_bytes()).is_some();
    if !finder(HCM_TYPE) && !finder(ROUTE_TYPE) {
        return;
    }
    let mut w = Walker { source, out };
    let mut path = Vec::new();
    // The text parsed once already (the listener loader); it is valid JSON.
    let _ = walk_text(text, &mut w, &mut path, None);
}

/// A CiliumEnvoyConfig's namespace (empty for a clusterwide one) and name.
type Cec = (String, String);

struct Walker<'o, 't> {
    source: SourceId,
    out: &'o mut RouteTables<'t>,
}

/// One step of the path from the document's root to the node being read. The pointer string
/// is built from these only where an HCM or a RouteConfiguration is found: a pointer per node
/// of a 40 MB input cost more than the rest of the pass.
enum Seg<'t> {
    Key(Cow<'t, str>),
    Index(usize),
}

fn pointer_of(path: &[Seg<'_>]) -> String {
    let mut p = String::new();
    for s in path {
        p = match s {
            Seg::Key(k) => join_token(&p, k),
            Seg::Index(i) => join_index(&p, *i),
        };
    }
    p
}

/// The fields the HCM, RouteConfiguration and CiliumEnvoyConfig readers use. An object's other
/// fields are walked as they stream past (or skipped, once its `@type` says it is one of the
/// two); these are kept as borrowed raw text until the object's end says what it is, and only
/// then read into the typed messages of [`super::route_raw`] (for the two message types) or
/// walked (for any other object).
const KEPT: [&str; 23] = [
    "rds",
    "route_config",
    "routeConfig",
    "scoped_routes",
    "scopedRoutes",
    "strip_any_host_port",
    "stripAnyHostPort",
    "strip_matching_host_port",
    "stripMatchingHostPort",
    "codec_type",
    "codecType",
    "name",
    "virtual_hosts",
    "virtualHosts",
    "vhds",
    "ignore_port_in_host_matching",
    "ignorePortInHostMatching",
    "metadata",
    "spec",
    // for the cluster check
    "validate_clusters",
    "validateClusters",
    "request_mirror_policies",
    "requestMirrorPolicies",
];

/// Walks a JSON text for HCMs and RouteConfigurations, without building a value for it.
fn walk_text<'t>(
    text: &'t str,
    w: &mut Walker<'_, 't>,
    path: &mut Vec<Seg<'t>>,
    cec: Option<&Cec>,
) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    Node { w, path, cec }.deserialize(&mut de)
}

/// An object key, borrowed from the text when it has no escapes.
struct Key<'t>(Cow<'t, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// One node of the walk, as a serde seed: scalars are skipped, arrays and objects walked.
struct Node<'a, 'o, 't> {
    w: &'a mut Walker<'o, 't>,
    path: &'a mut Vec<Seg<'t>>,
    cec: Option<&'a Cec>,
}

impl<'de, 'a, 'o> DeserializeSeed<'de> for Node<'a, 'o, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a, 'o> Visitor<'de> for Node<'a, 'o, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        loop {
            self.path.push(Seg::Index(i));
            let more = seq.next_element_seed(Node { w: &mut *self.w, path: &mut *self.path, cec: self.cec })?;
            self.path.pop();
            if more.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut type_url: Option<Cow<'de, str>> = None;
        let mut kind: Option<Cow<'de, str>> = None;
        let mut kept: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            if k == "@type" {
                type_url = map.next_value::<LStr<'de>>()?.0;
            } else if k == "kind" {
                kind = map.next_value::<LStr<'de>>()?.0;
            } else if KEPT.contains(&k.as_ref()) {
                kept.push((k, map.next_value()?));
            } else if type_url.as_deref().is_some_and(|t| t.ends_with(HCM_TYPE) || t.ends_with(ROUTE_TYPE)) {
                // The two readers use only kept fields.
                map.next_value::<IgnoredAny>()?;
            } else {
                self.path.push(Seg::Key(k));
                map.next_value_seed(Node { w: &mut *self.w, path: &mut *self.path, cec: self.cec })?;
                self.path.pop();
            }
        }
        let type_is = |suffix: &str| type_url.as_deref().is_some_and(|t| t.ends_with(suffix));
        // The kept fields as the one message they belong to (raw text is valid JSON).
        fn message_of<'de, T: Deserialize<'de>, E: de::Error>(kept: &[(Cow<'de, str>, &'de RawValue)]) -> Result<T, E> {
            let fields = kept.iter().map(|(k, v)| (k.as_ref(), *v));
            T::deserialize(de::value::MapDeserializer::<_, serde_json::Error>::new(fields)).map_err(E::custom)
        }
        if type_is(HCM_TYPE) {
            let pointer = pointer_of(self.path);
            self.w.hcm(message_of::<_, A::Error>(&kept)?, pointer, self.cec);
            return Ok(());
        }
        if type_is(ROUTE_TYPE) {
            let in_static = self
                .path
                .iter()
                .any(|s| matches!(s, Seg::Key(k) if k == "static_route_configs" || k == "staticRouteConfigs"));
            let origin = if in_static { TableOrigin::DumpStatic } else { TableOrigin::Rds };
            let pointer = pointer_of(self.path);
            let mut t = self.w.table(message_of::<_, A::Error>(&kept)?, pointer, origin);
            if let (Some(n), Some((ns, name))) = (&t.name, self.cec) {
                t.name = Some(Cow::Owned(super::classify::qualified_name(ns, name, n).into_owned()));
            }
            self.w.out.push_table(t);
            return Ok(());
        }
        let own;
        let cec = match kind.as_deref() {
            Some(k @ ("CiliumEnvoyConfig" | "CiliumClusterwideEnvoyConfig")) => {
                let meta = kept
                    .iter()
                    .find(|(k, _)| k == "metadata")
                    .and_then(|(_, v)| serde_json::from_str::<Map<String, Value>>(v.get()).ok());
                let meta_str =
                    |f: &str| meta.as_ref().and_then(|m| m.get(f)).and_then(Value::as_str).unwrap_or("").to_owned();
                let ns = if k == "CiliumClusterwideEnvoyConfig" { String::new() } else { meta_str("namespace") };
                own = (ns, meta_str("name"));
                Some(&own)
            }
            _ => self.cec,
        };
        for (k, v) in kept {
            self.path.push(Seg::Key(k));
            walk_text(v.get(), self.w, self.path, cec).map_err(de::Error::custom)?;
            self.path.pop();
        }
        Ok(())
    }
}

impl<'t> Walker<'_, 't> {
    fn not_analysed(&mut self, pointer: String, what: &'static str) {
        self.out.not_analysed.push(NotAnalysed { source: self.source, pointer, what });
    }

    fn hcm(&mut self, o: RawHcm<'t>, pointer: String, cec: Option<&Cec>) {
        // `.../filter_chains/N/filters/M/typed_config`: the chain is what comes before `/filters/`.
        let chain_pointer = pointer.rfind("/filters/").map_or_else(String::new, |i| pointer[..i].to_owned());
        let strip_any_host_port = boolean(&o.strip_any_host_port).unwrap_or(false);
        let strip_matching_host_port = boolean(&o.strip_matching_host_port).unwrap_or(false);
        let codec_type = get(&o.codec_type).map(|c| c.0).unwrap_or_default();
        let scoped = key_of(&o.scoped_routes, "scoped_routes", "scopedRoutes");
        let has_scoped = o.scoped_routes.is_some();
        let table_key = key_of(&o.route_config, "route_config", "routeConfig");
        let routes = if let Some(rds) = message(o.rds) {
            let name = string(rds.route_config_name).unwrap_or_default();
            let name = match cec {
                Some((ns, cec_name)) => super::classify::qualified_name(ns, cec_name, &name).into_owned(),
                None => name.into_owned(),
            };
            HcmRoutes::Rds(name)
        } else if let Some(rc) = message(o.route_config) {
            let t = self.table(rc, join_token(&pointer, table_key), TableOrigin::Inline);
            HcmRoutes::Inline(self.out.push_table(t))
        } else if has_scoped {
            self.not_analysed(join_token(&pointer, scoped), "scoped_routes");
            HcmRoutes::Scoped
        } else {
            HcmRoutes::None
        };
        let hcm = Hcm {
            source: self.source,
            chain_pointer,
            routes,
            strip_any_host_port,
            strip_matching_host_port,
            codec_type,
            pointer,
        };
        self.out.push_hcm(hcm);
    }

    fn table(&mut self, o: RawRouteConfiguration<'t>, pointer: String, origin: TableOrigin) -> RouteTable<'t> {
        let list: Arc<str> = join_token(&pointer, key_of(&o.virtual_hosts, "virtual_hosts", "virtualHosts")).into();
        // A dump's copy of an inline table was reported where the listener holds it.
        let report = origin != TableOrigin::DumpStatic;
        let vhds = o.vhds.as_ref().map(|_| "vhds");
        let ignore_port_in_host_matching = boolean(&o.ignore_port_in_host_matching).unwrap_or(false);
        let validate_clusters = boolean(&o.validate_clusters);
        let mirrors = mirrors(o.request_mirror_policies);
        let mut virtual_hosts = take(o.virtual_hosts).map(|l| l.0).unwrap_or_default();
        for vh in &mut virtual_hosts {
            vh.list = list.clone();
            if vh.has_matcher && report {
                self.not_analysed(join_token(&vh.pointer(), "matcher"), "a virtual host matcher");
            }
            if !vh.routes.is_empty() {
                // One pointer string per virtual host, shared by its routes.
                let routes: Arc<str> = join_token(&vh.pointer(), "routes").into();
                for r in &mut vh.routes {
                    r.list = routes.clone();
                }
            }
        }
        if let Some(k) = vhds.filter(|_| report) {
            self.not_analysed(join_token(&pointer, k), "vhds");
        }
        RouteTable {
            source: self.source,
            name: string(o.name),
            origin,
            virtual_hosts,
            ignore_port_in_host_matching,
            vhds: vhds.is_some(),
            validate_clusters,
            mirrors,
            pointer,
        }
    }
}

/// No pointer yet: the table's reader sets the lists' pointers once the table's is known.
fn unplaced() -> Arc<str> {
    Arc::from("")
}

impl<'t> FromRaw<'t> for VirtualHost<'t> {
    type Raw = RawVirtualHost<'t>;
    fn from_raw(o: RawVirtualHost<'t>, index: usize) -> Self {
        let domains = take(o.domains).map(|l| l.0).unwrap_or_default();
        VirtualHost {
            name: string(o.name).unwrap_or_default(),
            list: unplaced(),
            index,
            domains: exact(domains.into_iter().filter_map(|d| d.0)),
            routes: take(o.routes).map(|l| l.0).unwrap_or_default(),
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
        route(o, index, unplaced())
    }
}

impl<'t> FromRaw<'t> for HeaderMatcher<'t> {
    type Raw = RawHeaderMatcher<'t>;
    fn from_raw(h: RawHeaderMatcher<'t>, _: usize) -> Self {
        header_matcher(h)
    }
}

/// Collects into a `Vec` of exactly the items' length (a route table is read in full, not
/// grown into: no spare capacity kept per virtual host).
fn exact<T>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = items.collect();
    v.shrink_to_fit();
    v
}

fn route<'t>(o: RawRoute<'t>, index: usize, list: Arc<str>) -> Route<'t> {
    let name = string(o.name);
    let matcher = message(o.r#match).map(route_match).unwrap_or_default();
    let mut forward = message(o.route);
    let mirrors = mirrors(forward.as_mut().and_then(|r| r.request_mirror_policies.take()));
    let action =
        action(forward, o.redirect, o.direct_response, o.filter_action.is_some(), o.non_forwarding_action.is_some());
    Route { name, index, list, matcher, action, mirrors }
}

fn route_match(m: RawRouteMatch<'_>) -> RouteMatch<'_> {
    let unevaluated = [
        ("query_parameters", &m.query_parameters),
        ("runtime_fraction", &m.runtime_fraction),
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
    let headers = take(m.headers).map(|l| l.0).unwrap_or_default();
    let path = if let Some(p) = string(m.prefix) {
        PathSpec::Prefix(p)
    } else if let Some(p) = string(m.path) {
        PathSpec::Path(p)
    } else if let Some(r) = message(m.safe_regex) {
        PathSpec::SafeRegex(string(r.regex).unwrap_or_default())
    } else if let Some(p) = string(m.path_separated_prefix) {
        PathSpec::PathSeparatedPrefix(p)
    } else if connect {
        PathSpec::Connect
    } else if policy {
        PathSpec::Policy
    } else {
        PathSpec::Missing
    };
    RouteMatch { path, case_sensitive, headers, unevaluated }
}

fn header_matcher(h: RawHeaderMatcher<'_>) -> HeaderMatcher<'_> {
    let invert_match = boolean(&h.invert_match).unwrap_or(false);
    let treat_missing_header_as_empty = boolean(&h.treat_missing_header_as_empty).unwrap_or(false);
    let present = boolean(&h.present_match);
    let kind = if let Some(v) = string(h.exact_match) {
        HeaderMatch::Exact { value: v, ignore_case: false }
    } else if let Some(v) = string(h.prefix_match) {
        HeaderMatch::Prefix { value: v, ignore_case: false }
    } else if let Some(v) = string(h.suffix_match) {
        HeaderMatch::Suffix { value: v, ignore_case: false }
    } else if let Some(v) = string(h.contains_match) {
        HeaderMatch::Contains { value: v, ignore_case: false }
    } else if let Some(r) = message(h.safe_regex_match) {
        HeaderMatch::Regex(string(r.regex).unwrap_or_default())
    } else if let Some(p) = present {
        HeaderMatch::Present(p)
    } else if let Some(sm) = message(h.string_match) {
        let ignore_case = boolean(&sm.ignore_case).unwrap_or(false);
        if let Some(v) = string(sm.exact) {
            HeaderMatch::Exact { value: v, ignore_case }
        } else if let Some(v) = string(sm.prefix) {
            HeaderMatch::Prefix { value: v, ignore_case }
        } else if let Some(v) = string(sm.suffix) {
            HeaderMatch::Suffix { value: v, ignore_case }
        } else if let Some(v) = string(sm.contains) {
            HeaderMatch::Contains { value: v, ignore_case }
        } else if let Some(r) = message(sm.safe_regex) {
            HeaderMatch::Regex(string(r.regex).unwrap_or_default())
        } else {
            HeaderMatch::Other("string_match".into())
        }
    } else if let Some(k) = h.match_key {
        HeaderMatch::Other(k)
    } else {
        // No match specifier: Envoy then tests presence.
        HeaderMatch::Present(true)
    };
    HeaderMatcher { name: string(h.name).unwrap_or_default(), kind, invert_match, treat_missing_header_as_empty }
}

/// A `request_mirror_policies` list, when it has an entry (a policy that is not an object, or
/// mirrors by `cluster_header`, keeps its place with `""`).
fn mirrors<'t>(
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
        if let Some(c) = string(r.cluster) {
            return Action::Cluster(c);
        }
        if let Some(w) = message(r.weighted_clusters) {
            let clusters = take(w.clusters).map(|l| l.0).unwrap_or_default();
            return Action::WeightedClusters(exact(clusters.into_iter().filter_map(|c| c.0).map(|c| {
                let weight = get(&c.weight).and_then(|w| w.0).unwrap_or(0);
                (string(c.name).unwrap_or_default(), weight)
            })));
        }
        if let Some(h) = string(r.cluster_header) {
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
        return Action::Redirect(parts.join(" "));
    }
    if let Some(d) = message(direct) {
        let body = message(d.body).and_then(|b| string(b.inline_string));
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
    use crate::source::{SourceFile, Sources};

    fn tables(yaml: &str) -> RouteTables<'static> {
        // Leaked: the tables borrow the text, and each test is one short process step.
        let mut sources = Sources::new();
        let id = sources.add(SourceFile::new("t.yaml", yaml));
        let sources: &'static Sources = Box::leak(Box::new(sources));
        let document = Box::leak(Box::new(crate::load::Document::new(id, sources.get(id))));
        let input = document.load().expect("loads");
        let snapshot = Box::leak(Box::new(Snapshot { inputs: vec![input] }));
        read_all(snapshot, sources)
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
        assert_eq!(hcm.chain_pointer, "/static_resources/listeners/0/filter_chains/0");
        assert!(hcm.strip_any_host_port && !hcm.strip_matching_host_port);
        let table = t.table_of(hcm).expect("inline table");
        assert_eq!(table.name.as_deref(), Some("rt"));
        assert!(table.ignore_port_in_host_matching);
        let vh = &table.virtual_hosts[0];
        assert_eq!(
            vh.pointer(),
            "/static_resources/listeners/0/filter_chains/0/filters/0/typed_config/route_config/virtual_hosts/0"
        );
        assert_eq!(vh.domains, ["a.com"]);
        assert_eq!(vh.routes[0].display_name(), "routes[0]");
        assert_eq!(vh.routes[0].matcher.path, PathSpec::Prefix("/api".into()));
        assert_eq!(vh.routes[0].matcher.headers[0].kind, HeaderMatch::Exact { value: "b".into(), ignore_case: false });
        assert_eq!(vh.routes[0].action, Action::Cluster("c".into()));
        assert_eq!(vh.routes[1].display_name(), "last");
        assert_eq!(vh.routes[1].matcher.path, PathSpec::SafeRegex("/v[0-9]".into()));
        assert_eq!(vh.routes[1].matcher.unevaluated, ["runtime_fraction"]);
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
    fn camel_case_keys_lenient_values_and_repeats_read_as_before() {
        // The listener loader reads an inline table's names and domains strictly; a table
        // delivered by RDS is read by this pass alone, leniently.
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
        let table = t.table_of(hcm).expect("inline table");
        assert_eq!(table.pointer, "/resources/0/filterChains/0/filters/0/typedConfig/routeConfig");
        let vh = &table.virtual_hosts[0];
        assert_eq!(vh.pointer(), "/resources/0/filterChains/0/filters/0/typedConfig/routeConfig/virtualHosts/0");
        assert_eq!(vh.domains, ["a", "b."]);
        assert_eq!(vh.require_tls, RequireTls::All);
        let r = &vh.routes[0];
        assert_eq!(r.pointer(), format!("{}/routes/0", vh.pointer()));
        assert_eq!(r.matcher.path, PathSpec::Path("/p".into()));
        assert!(r.matcher.case_sensitive);
        assert_eq!(r.matcher.unevaluated, ["grpc"]);
        assert_eq!(r.matcher.headers[0].kind, HeaderMatch::Other("invert_match".into()));
        assert_eq!(r.matcher.headers[1].kind, HeaderMatch::Other("rangeMatch".into()));
        assert_eq!(r.action, Action::WeightedClusters(vec![("c".into(), 7)]));
        assert_eq!(vh.routes[1].action, Action::Redirect("path_redirect=/x response_code=301 strip_query=true".into()));
        let rds = &t.tables[1];
        assert_eq!(rds.name.as_deref(), Some("rt2"));
        assert_eq!(rds.virtual_hosts.len(), 1);
        assert_eq!(rds.virtual_hosts[0].pointer(), "/resources/1/virtualHosts/1");
        assert_eq!(rds.virtual_hosts[0].domains, ["a", "c"]);
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
        let table = t.table_of(hcm).expect("resolved");
        assert_eq!(table.origin, TableOrigin::Rds);
        assert_eq!(table.pointer, "/spec/resources/1");
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
