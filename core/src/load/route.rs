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

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::model::Snapshot;
use crate::model::route::{
    Action, CodecType, Hcm, HcmRoutes, HeaderMatch, HeaderMatcher, MirrorPolicies, NotAnalysed, PathSpec,
    RequireTls, Route,
    RouteMatch, RouteTable, RouteTables, TableOrigin, VirtualHost,
};
use crate::source::{SourceId, Sources, join_index, join_token};

const HCM_TYPE: &str = ".HttpConnectionManager";
const ROUTE_TYPE: &str = ".RouteConfiguration";

/// Reads the route tables of every loaded input of a snapshot, for the checks: an input with
/// no virtual host and no `scoped_routes` has nothing for them and is not read again (a
/// tenant-scale dump whose HCMs all name RDS tables it does not hold costs a substring search).
pub fn read_all(snapshot: &Snapshot<'_>, sources: &Sources) -> RouteTables {
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
pub fn read_all_hcms(snapshot: &Snapshot<'_>, sources: &Sources) -> RouteTables {
    let mut out = RouteTables::default();
    for input in &snapshot.inputs {
        read(input.source, input.locator(sources.get(input.source)).json_text(), &mut out);
    }
    out
}

/// Reads one source's route tables into `out`, from the JSON text the listener loader read.
pub fn read(source: SourceId, text: &str, out: &mut RouteTables) {
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

struct Walker<'o> {
    source: SourceId,
    out: &'o mut RouteTables,
}

fn field<'v>(o: &'v Map<String, Value>, snake: &str) -> Option<(&'v str, &'v Value)> {
    if let Some((k, v)) = o.get_key_value(snake) {
        return Some((k.as_str(), v));
    }
    if !snake.contains('_') {
        return None;
    }
    // Objects here have a handful of keys: a scan that compares camel-wise costs less than
    // making the camel-case name (an allocation for every absent field of every route).
    o.iter().find(|(k, _)| is_camel_of(k, snake)).map(|(k, v)| (k.as_str(), v))
}

/// Whether `key` is `snake` in lowerCamelCase (what `Casing::Camel.field` makes of it).
fn is_camel_of(key: &str, snake: &str) -> bool {
    let mut k = key.chars();
    let mut s = snake.chars();
    while let Some(c) = s.next() {
        let want = if c == '_' {
            match s.next() {
                Some(n) => n.to_ascii_uppercase(),
                None => return k.next().is_none(),
            }
        } else {
            c
        };
        if k.next() != Some(want) {
            return false;
        }
    }
    k.next().is_none()
}

fn get<'v>(o: &'v Map<String, Value>, snake: &str) -> Option<&'v Value> {
    field(o, snake).map(|(_, v)| v)
}

fn string(o: &Map<String, Value>, snake: &str) -> Option<String> {
    get(o, snake).and_then(Value::as_str).map(str::to_owned)
}

/// A bool field, also as a `BoolValue` wrapper (`{value: true}`).
fn boolean(o: &Map<String, Value>, snake: &str) -> Option<bool> {
    match get(o, snake)? {
        Value::Bool(b) => Some(*b),
        Value::Object(w) => w.get("value").and_then(Value::as_bool),
        _ => None,
    }
}

/// `codec_type`, by name or number (protobuf JSON takes both); anything else is the default.
fn codec_type(v: Option<&Value>) -> CodecType {
    match v.and_then(|v| v.as_str().map(str::to_owned).or_else(|| v.as_u64().map(|n| n.to_string()))).as_deref() {
        Some("HTTP1" | "1") => CodecType::Http1,
        Some("HTTP2" | "2") => CodecType::Http2,
        Some("HTTP3" | "3") => CodecType::Http3,
        _ => CodecType::Auto,
    }
}

fn u32_of(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => s.parse().ok(),
        Value::Object(w) => w.get("value").and_then(u32_of),
        _ => None,
    }
}

fn list<'v>(o: &'v Map<String, Value>, snake: &'v str) -> (&'v str, &'v [Value]) {
    match field(o, snake) {
        Some((k, Value::Array(a))) => (k, a.as_slice()),
        Some((k, _)) => (k, &[]),
        None => (snake, &[]),
    }
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
/// then parsed into values (for the two message types) or walked (for any other object).
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
    // for the cluster check (`mirror_policies`)
    "validate_clusters",
    "validateClusters",
    "request_mirror_policies",
    "requestMirrorPolicies",
];

/// Walks a JSON text for HCMs and RouteConfigurations, without building a value for it.
fn walk_text<'t>(
    text: &'t str,
    w: &mut Walker<'_>,
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
    w: &'a mut Walker<'o>,
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
        let mut type_url: Option<Value> = None;
        let mut kind: Option<Value> = None;
        let mut kept: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            if k == "@type" {
                type_url = Some(map.next_value()?);
            } else if k == "kind" {
                kind = Some(map.next_value()?);
            } else if KEPT.contains(&k.as_ref()) {
                kept.push((k, map.next_value()?));
            } else if type_url
                .as_ref()
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with(HCM_TYPE) || t.ends_with(ROUTE_TYPE))
            {
                // The two readers use only kept fields.
                map.next_value::<IgnoredAny>()?;
            } else {
                self.path.push(Seg::Key(k));
                map.next_value_seed(Node { w: &mut *self.w, path: &mut *self.path, cec: self.cec })?;
                self.path.pop();
            }
        }
        let type_is = |suffix: &str| type_url.as_ref().and_then(Value::as_str).is_some_and(|t| t.ends_with(suffix));
        let object = || -> Map<String, Value> {
            // Raw text is valid JSON by construction.
            kept.iter()
                .filter_map(|(k, v)| Some((k.clone().into_owned(), serde_json::from_str(v.get()).ok()?)))
                .collect()
        };
        if type_is(HCM_TYPE) {
            let pointer = pointer_of(self.path);
            self.w.hcm(&object(), pointer, self.cec);
            return Ok(());
        }
        if type_is(ROUTE_TYPE) {
            let in_static = self
                .path
                .iter()
                .any(|s| matches!(s, Seg::Key(k) if k == "static_route_configs" || k == "staticRouteConfigs"));
            let origin = if in_static { TableOrigin::DumpStatic } else { TableOrigin::Rds };
            let pointer = pointer_of(self.path);
            let mut t = self.w.table(&object(), pointer, origin);
            if let (Some(n), Some((ns, name))) = (&t.name, self.cec) {
                t.name = Some(super::classify::qualified_name(ns, name, &n.as_str().into()).into_owned());
            }
            self.w.out.push_table(t);
            return Ok(());
        }
        let own;
        let cec = match kind.as_ref().and_then(Value::as_str) {
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

impl Walker<'_> {
    fn not_analysed(&mut self, pointer: String, what: &'static str) {
        self.out.not_analysed.push(NotAnalysed { source: self.source, pointer, what });
    }

    fn hcm(&mut self, o: &Map<String, Value>, pointer: String, cec: Option<&Cec>) {
        // `.../filter_chains/N/filters/M/typed_config`: the chain is what comes before `/filters/`.
        let chain_pointer = pointer.rfind("/filters/").map_or_else(String::new, |i| pointer[..i].to_owned());
        let routes = if let Some(rds) = get(o, "rds").and_then(Value::as_object) {
            let name = string(rds, "route_config_name").unwrap_or_default();
            let name = match cec {
                Some((ns, cec_name)) => {
                    super::classify::qualified_name(ns, cec_name, &name.as_str().into()).into_owned()
                }
                None => name,
            };
            HcmRoutes::Rds(name)
        } else if let Some((k, Value::Object(rc))) = field(o, "route_config") {
            let t = self.table(rc, join_token(&pointer, k), TableOrigin::Inline);
            HcmRoutes::Inline(self.out.push_table(t))
        } else if let Some((k, _)) = field(o, "scoped_routes") {
            self.not_analysed(join_token(&pointer, k), "scoped_routes");
            HcmRoutes::Scoped
        } else {
            HcmRoutes::None
        };
        let hcm = Hcm {
            source: self.source,
            chain_pointer,
            routes,
            strip_any_host_port: boolean(o, "strip_any_host_port").unwrap_or(false),
            strip_matching_host_port: boolean(o, "strip_matching_host_port").unwrap_or(false),
            codec_type: codec_type(get(o, "codec_type")),
            pointer,
        };
        self.out.push_hcm(hcm);
    }

    fn table(&mut self, o: &Map<String, Value>, pointer: String, origin: TableOrigin) -> RouteTable {
        let (key, vhs) = list(o, "virtual_hosts");
        let base = join_token(&pointer, key);
        // A dump's copy of an inline table was reported where the listener holds it.
        let report = origin != TableOrigin::DumpStatic;
        let virtual_hosts = vhs
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((i, v.as_object()?)))
            .map(|(i, v)| self.virtual_host(v, join_index(&base, i), report))
            .collect();
        let vhds = field(o, "vhds");
        if let Some((k, _)) = vhds.filter(|_| report) {
            self.not_analysed(join_token(&pointer, k), "vhds");
        }
        RouteTable {
            source: self.source,
            name: string(o, "name"),
            origin,
            virtual_hosts,
            ignore_port_in_host_matching: boolean(o, "ignore_port_in_host_matching").unwrap_or(false),
            vhds: vhds.is_some(),
            validate_clusters: boolean(o, "validate_clusters"),
            mirror_policies: mirror_policies(o, &pointer),
            pointer,
        }
    }

    fn virtual_host(&mut self, o: &Map<String, Value>, pointer: String, report: bool) -> VirtualHost {
        let (_, domains) = list(o, "domains");
        let (key, routes) = list(o, "routes");
        let base = join_token(&pointer, key);
        let routes = routes
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i, r.as_object()?)))
            .map(|(i, r)| route(r, i, join_index(&base, i)))
            .collect();
        let matcher = field(o, "matcher");
        if let Some((k, _)) = matcher.filter(|_| report) {
            self.not_analysed(join_token(&pointer, k), "a virtual host matcher");
        }
        let require_tls = match get(o, "require_tls") {
            Some(Value::String(s)) if s == "ALL" => RequireTls::All,
            Some(Value::String(s)) if s == "EXTERNAL_ONLY" => RequireTls::ExternalOnly,
            Some(Value::Number(n)) if n.as_u64() == Some(2) => RequireTls::All,
            Some(Value::Number(n)) if n.as_u64() == Some(1) => RequireTls::ExternalOnly,
            _ => RequireTls::None,
        };
        VirtualHost {
            name: string(o, "name").unwrap_or_default(),
            domains: domains.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            routes,
            has_matcher: matcher.is_some(),
            require_tls,
            pointer,
        }
    }
}

/// Every `request_mirror_policies` list of a RouteConfiguration `o` at `pointer`: its own, its
/// virtual hosts', its routes' (`route.request_mirror_policies`). For the cluster check.
fn mirror_policies(o: &Map<String, Value>, pointer: &str) -> Vec<MirrorPolicies> {
    let mut out = Vec::new();
    let mut add = |o: &Map<String, Value>, at: &str, virtual_host, route| {
        let (key, list) = list(o, "request_mirror_policies");
        if !list.is_empty() {
            let clusters = list.iter().map(|p| p.as_object().and_then(|p| string(p, "cluster")).unwrap_or_default());
            let pointer = join_token(at, key);
            out.push(MirrorPolicies { virtual_host, route, pointer, clusters: clusters.collect() });
        }
    };
    add(o, pointer, None, None);
    let (key, vhs) = list(o, "virtual_hosts");
    let base = join_token(pointer, key);
    for (v, vh) in vhs.iter().enumerate().filter_map(|(v, vh)| Some((v, vh.as_object()?))) {
        let vp = join_index(&base, v);
        add(vh, &vp, Some(v), None);
        let (key, routes) = list(vh, "routes");
        let rbase = join_token(&vp, key);
        for (r, route) in routes.iter().enumerate().filter_map(|(r, x)| Some((r, x.as_object()?))) {
            if let Some((k, Value::Object(action))) = field(route, "route") {
                add(action, &join_token(&join_index(&rbase, r), k), Some(v), Some(r));
            }
        }
    }
    out
}

fn route(o: &Map<String, Value>, index: usize, pointer: String) -> Route {
    let matcher = get(o, "match").and_then(Value::as_object).map(route_match).unwrap_or_default();
    Route { name: string(o, "name"), index, pointer, matcher, action: action(o) }
}

fn route_match(m: &Map<String, Value>) -> RouteMatch {
    let path = if let Some(p) = string(m, "prefix") {
        PathSpec::Prefix(p)
    } else if let Some(p) = string(m, "path") {
        PathSpec::Path(p)
    } else if let Some(r) = get(m, "safe_regex").and_then(Value::as_object) {
        PathSpec::SafeRegex(string(r, "regex").unwrap_or_default())
    } else if let Some(p) = string(m, "path_separated_prefix") {
        PathSpec::PathSeparatedPrefix(p)
    } else if get(m, "connect_matcher").is_some() {
        PathSpec::Connect
    } else if get(m, "path_match_policy").is_some() {
        PathSpec::Policy
    } else {
        PathSpec::Missing
    };
    let (_, headers) = list(m, "headers");
    let unevaluated =
        ["query_parameters", "runtime_fraction", "grpc", "tls_context", "dynamic_metadata", "filter_state"]
            .into_iter()
            .filter(|f| match get(m, f) {
                Some(Value::Array(a)) => !a.is_empty(),
                Some(Value::Null) | None => false,
                Some(_) => true,
            })
            .collect();
    RouteMatch {
        path,
        case_sensitive: boolean(m, "case_sensitive").unwrap_or(true),
        headers: headers.iter().filter_map(Value::as_object).map(header_matcher).collect(),
        unevaluated,
    }
}

fn header_matcher(h: &Map<String, Value>) -> HeaderMatcher {
    let s = |f: &str| string(h, f);
    let kind = if let Some(v) = s("exact_match") {
        HeaderMatch::Exact { value: v, ignore_case: false }
    } else if let Some(v) = s("prefix_match") {
        HeaderMatch::Prefix { value: v, ignore_case: false }
    } else if let Some(v) = s("suffix_match") {
        HeaderMatch::Suffix { value: v, ignore_case: false }
    } else if let Some(v) = s("contains_match") {
        HeaderMatch::Contains { value: v, ignore_case: false }
    } else if let Some(r) = get(h, "safe_regex_match").and_then(Value::as_object) {
        HeaderMatch::Regex(string(r, "regex").unwrap_or_default())
    } else if let Some(p) = boolean(h, "present_match") {
        HeaderMatch::Present(p)
    } else if let Some(sm) = get(h, "string_match").and_then(Value::as_object) {
        let ignore_case = boolean(sm, "ignore_case").unwrap_or(false);
        if let Some(v) = string(sm, "exact") {
            HeaderMatch::Exact { value: v, ignore_case }
        } else if let Some(v) = string(sm, "prefix") {
            HeaderMatch::Prefix { value: v, ignore_case }
        } else if let Some(v) = string(sm, "suffix") {
            HeaderMatch::Suffix { value: v, ignore_case }
        } else if let Some(v) = string(sm, "contains") {
            HeaderMatch::Contains { value: v, ignore_case }
        } else if let Some(r) = get(sm, "safe_regex").and_then(Value::as_object) {
            HeaderMatch::Regex(string(r, "regex").unwrap_or_default())
        } else {
            HeaderMatch::Other("string_match".to_owned())
        }
    } else if let Some((k, _)) = h.iter().find(|(k, _)| k.ends_with("_match") || k.ends_with("Match")) {
        HeaderMatch::Other(k.clone())
    } else {
        // No match specifier: Envoy then tests presence.
        HeaderMatch::Present(true)
    };
    HeaderMatcher {
        name: string(h, "name").unwrap_or_default(),
        kind,
        invert_match: boolean(h, "invert_match").unwrap_or(false),
        treat_missing_header_as_empty: boolean(h, "treat_missing_header_as_empty").unwrap_or(false),
    }
}

fn action(o: &Map<String, Value>) -> Action {
    if let Some(r) = get(o, "route").and_then(Value::as_object) {
        if let Some(c) = string(r, "cluster") {
            return Action::Cluster(c);
        }
        if let Some(w) = get(r, "weighted_clusters").and_then(Value::as_object) {
            let (_, clusters) = list(w, "clusters");
            return Action::WeightedClusters(
                clusters
                    .iter()
                    .filter_map(Value::as_object)
                    .map(|c| (string(c, "name").unwrap_or_default(), get(c, "weight").and_then(u32_of).unwrap_or(0)))
                    .collect(),
            );
        }
        if let Some(h) = string(r, "cluster_header") {
            return Action::ClusterHeader(h);
        }
        return Action::ClusterPlugin;
    }
    if let Some(r) = get(o, "redirect").and_then(Value::as_object) {
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
    if let Some(d) = get(o, "direct_response").and_then(Value::as_object) {
        let body = get(d, "body").and_then(Value::as_object).and_then(|b| string(b, "inline_string"));
        return Action::DirectResponse { status: get(d, "status").and_then(u32_of).unwrap_or(0), body };
    }
    if get(o, "filter_action").is_some() {
        return Action::Other("filter_action");
    }
    if get(o, "non_forwarding_action").is_some() {
        return Action::Other("non_forwarding_action");
    }
    Action::Missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{SourceFile, Sources};

    fn tables(yaml: &str) -> RouteTables {
        let mut sources = Sources::new();
        let id = sources.add(SourceFile::new("t.yaml", yaml));
        let document = crate::load::Document::new(id, sources.get(id));
        let input = document.load().expect("loads");
        let snapshot = Snapshot { inputs: vec![input] };
        read_all(&snapshot, &sources)
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
            vh.pointer,
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
    fn mirror_lists_and_validate_clusters_are_read_where_they_are() {
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
        let got: Vec<_> = table
            .mirror_policies
            .iter()
            .map(|m| (m.virtual_host, m.route, m.pointer.as_str(), m.clusters.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (None, None, "/resources/0/requestMirrorPolicies", vec!["t".to_owned()]),
                (
                    Some(0),
                    None,
                    "/resources/0/virtual_hosts/0/request_mirror_policies",
                    vec!["v".into(), String::new()]
                ),
                (
                    Some(0),
                    Some(1),
                    "/resources/0/virtual_hosts/0/routes/1/route/requestMirrorPolicies",
                    vec!["r".into()]
                ),
            ]
        );
    }

    #[test]
    fn camel_lookup_agrees_with_the_casing_rule() {
        for snake in ["virtual_hosts", "ignore_port_in_host_matching", "safe_regex_match", "present_match", "name"] {
            let camel = crate::source::Casing::Camel.field(snake);
            assert!(is_camel_of(&camel, snake), "{snake}");
            assert!(!is_camel_of(&format!("{camel}x"), snake) && !is_camel_of(&camel[..camel.len() - 1], snake));
        }
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
