//! The peers' own CLI outputs, read as they print them: the maps their tools wrap Envoy's
//! messages in. Each proxy of such a map is an Envoy of its own (two pods of one Gateway hold
//! the same listener names), so each becomes an input of its own, named in the findings.
//!
//! The layouts, as the tools print them (JSON or YAML alike):
//! - `egctl config envoy-proxy all|listener|route|cluster`: namespace → pod → a config_dump, or
//!   one `configs` entry of it (a `ListenersConfigDump` with its `@type`);
//! - `egctl x translate`: `xds:` → `namespace/name` → the same;
//! - Kuma's inspect answers: type URL → resource name → resource, alone or as the `xds` of an
//!   `{xds, diff}` answer (the `diff` is a JSON Patch between two versions, not configuration);
//! - kgateway's and Gloo's proxy dumps, Emissary's snapshots: `Listeners:`, `Routes:`,
//!   `Clusters:` (any casing) → a list of resources of that type.
//!
//! `istioctl proxy-config listener -o json|yaml` prints a list of Listeners and `... all` a
//! config_dump, which the loaders read as they are; its `route` and `cluster` lists are one
//! proxy's resources ([`resource_list`]).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::envoy_json::{RootKind, root_kind};
use super::raw::RawObject;
use super::{Failure, Place, Step};
use crate::model::Proxy;

const LISTENER: &str = "envoy.config.listener.v3.Listener";
const ROUTE: &str = "envoy.config.route.v3.RouteConfiguration";
const CLUSTER: &str = "envoy.config.cluster.v3.Cluster";

/// The lists a resource map may hold, by key (compared without case: kgateway writes
/// `Listeners:`, Emissary `listeners:`), with the message each element is.
const LISTS: [(&str, &str); 5] = [
    ("listeners", LISTENER),
    ("routes", ROUTE),
    ("clusters", CLUSTER),
    ("endpoints", "envoy.config.endpoint.v3.ClusterLoadAssignment"),
    ("secrets", "envoy.extensions.transport_sockets.tls.v3.Secret"),
];

const TYPE_URL_PREFIX: &str = "type.googleapis.com/";

/// What `egctl x translate` prints beside the `xds` map: its input.
const TRANSLATED_FROM: &str = "what egctl translated from (Gateway API objects, Envoy Gateway's own kinds)";

/// What a peer's output is, when xdsck takes it apart.
pub(super) enum Peer<'a> {
    /// Its proxies, each an Envoy of its own.
    Proxies(Vec<Found<'a>>),
    /// A layout that holds no Envoy configuration, named.
    Unread(&'static str),
}

/// Where a value of `doc` starts in it.
fn offset_in(doc: &str, v: &RawValue) -> usize {
    v.get().as_ptr() as usize - doc.as_ptr() as usize
}

/// One proxy of a peer's output, found but not yet read.
pub(super) struct Found<'a> {
    /// The whole document the proxy was found in.
    doc: &'a str,
    proxy: Proxy,
    /// Each document or resource of the proxy, with where it is and, for a resource, its type.
    parts: Vec<(Place<'a>, &'a str)>,
    /// What the wrapper holds that is no configuration (Kuma's `diff`): pointer, what it is,
    /// and where it starts in `doc`.
    skipped: Vec<(String, &'static str, usize)>,
}

/// One proxy of a peer's output, read.
pub(crate) struct ProxyDocuments<'a> {
    pub(crate) proxy: Proxy,
    /// Each part: its pointer, the message the wrapper says it is (`None`: a document, told
    /// apart by its keys), and the object read.
    pub(crate) parts: Vec<(String, Option<&'static str>, RawObject<'a>)>,
    /// What the wrapper holds that is no configuration: pointer, what it is, and its text.
    pub(crate) skipped: Vec<(String, &'static str, &'a str)>,
}

impl<'a> Found<'a> {
    /// Reads every part with `read` (the schema walk of one document).
    pub(super) fn read(
        self,
        mut read: impl FnMut(&Place<'a>, &'a str) -> Result<RawObject<'a>, Failure>,
    ) -> Result<ProxyDocuments<'a>, Failure> {
        let mut parts = Vec::with_capacity(self.parts.len());
        for (place, doc) in self.parts {
            let obj = read(&place, doc)?;
            parts.push((place.pointer(), place.message, obj));
        }
        let skipped = self.skipped.into_iter().map(|(p, what, at)| (p, what, &self.doc[at..])).collect();
        Ok(ProxyDocuments { proxy: self.proxy, parts, skipped })
    }
}

/// The keys and values of an object, in text order, the values unread.
struct Entries<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                    out.push((k, map.next_value::<&'de RawValue>()?));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The top object's entries of `doc`, which starts at its `{`: read once, not as a value first.
fn entries(doc: &str) -> Option<Vec<(Cow<'_, str>, &RawValue)>> {
    serde_json::from_str::<Entries<'_>>(doc).ok().map(|e| e.0)
}

fn object_entries(v: &RawValue) -> Option<Vec<(Cow<'_, str>, &RawValue)>> {
    if !v.get().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Entries<'_>>(v.get()).ok().map(|e| e.0)
}

fn first_byte(v: &RawValue) -> u8 {
    v.get().as_bytes().first().copied().unwrap_or(b' ')
}

/// The message of the elements of a resource list under `key`.
fn list_message(key: &str) -> Option<&'static str> {
    LISTS.iter().find(|(k, _)| key.eq_ignore_ascii_case(k)).map(|&(_, m)| m)
}

/// Whether a value is an Envoy document xdsck reads by its keys (or `{}`, an empty dump).
fn is_envoy_document(v: &RawValue) -> bool {
    first_byte(v) == b'{' && !matches!(root_kind(v.get()), RootKind::Unknown | RootKind::K8s)
}

/// The message of a config_dump entry given on its own (`egctl ... listener` prints a pod's
/// `ListenersConfigDump`), which its `@type` names; `None` for a document of its own.
fn entry_message(v: &RawValue) -> Option<&'static str> {
    match root_kind(v.get()) {
        RootKind::DumpEntry(id) => Some(&crate::schema::Schema::get().message(id).full_name),
        _ => None,
    }
}

/// The proxies of a peer's output whose top object is `doc`, when it is one of the layouts
/// above; `None` otherwise (the caller then says what it is not).
pub(super) fn find(doc: &str) -> Option<Peer<'_>> {
    let top = entries(doc)?;
    if top.is_empty() {
        return None;
    }
    let has = |key: &str| top.iter().any(|(k, _)| k == key);
    if has("xdsIR") || has("infraIR") {
        return Some(Peer::Unread(
            "Envoy Gateway's intermediate representation (`xdsIR`, `infraIR`), not Envoy's: \
             `egctl x translate --to xds` prints the Envoy configuration",
        ));
    }
    if !has("xds") && (has("gatewayClass") || has("gateways")) {
        return Some(Peer::Unread(
            "Gateway API objects as `egctl x translate` prints its input, with no `xds`: \
             `egctl x translate --to xds` prints the Envoy configuration",
        ));
    }
    find_proxies(doc, top).map(Peer::Proxies)
}

fn find_proxies<'a>(doc: &'a str, top: Vec<(Cow<'a, str>, &'a RawValue)>) -> Option<Vec<Found<'a>>> {
    // `Listeners: [...]`, `routes: [...]`: one proxy's resources, by type.
    if top.iter().all(|(k, v)| list_message(k).is_some() && matches!(first_byte(v), b'[' | b'n')) {
        let mut parts = Vec::new();
        for (key, v) in &top {
            let Some(message) = list_message(key) else { continue };
            let Ok(items) = serde_json::from_str::<Option<Vec<&RawValue>>>(v.get()) else { return None };
            for (i, item) in items.unwrap_or_default().into_iter().enumerate() {
                let path = vec![Step::Key(key.clone()), Step::Index(i)];
                parts.push((Place { path, message: Some(message) }, item.get()));
            }
        }
        let proxy = Proxy::new(None, "", "resource lists (`listeners:`, `routes:`, `clusters:`)");
        return Some(vec![Found { doc, proxy, parts, skipped: Vec::new() }]);
    }
    if let Some(parts) = typed_map(&top, &[]) {
        let proxy = Proxy::new(None, "", "a map of resources by type URL (Kuma's inspect)");
        return Some(vec![Found { doc, proxy, parts, skipped: Vec::new() }]);
    }
    if let Some(xds) = top.iter().find(|(k, _)| k == "xds").map(|(_, v)| *v) {
        let inner = object_entries(xds)?;
        let prefix = [Step::Key(Cow::Borrowed("xds"))];
        // Kuma's `{xds, diff}`: one proxy's resources by type URL, and a patch.
        if top.iter().all(|(k, _)| k == "xds" || k == "diff")
            && let Some(parts) = typed_map(&inner, &prefix)
        {
            let skipped = top
                .iter()
                .filter(|(k, _)| k == "diff")
                .map(|(_, v)| {
                    ("/diff".to_owned(), "Kuma's `diff` (a JSON Patch between two versions)", offset_in(doc, v))
                })
                .collect();
            let proxy = Proxy::new(None, "", "a map of resources by type URL (Kuma's inspect)");
            return Some(vec![Found { doc, proxy, parts, skipped }]);
        }
        // egctl x translate: proxy → its configuration, beside the Gateway API objects it was
        // translated from (`gateways:`, `httpRoutes:`), which are not Envoy's.
        if !inner.is_empty() && inner.iter().all(|(_, v)| is_envoy_document(v)) {
            let shape = "egctl x translate's `xds` map (proxy → configuration)";
            let mut found: Vec<Found<'_>> = inner
                .into_iter()
                .map(|(name, v)| {
                    let path = vec![Step::Key(Cow::Borrowed("xds")), Step::Key(name.clone())];
                    let place = Place { path, message: entry_message(v) };
                    let proxy = Proxy::new(Some(name.into_owned()), &place.pointer(), shape);
                    Found { doc, proxy, parts: vec![(place, v.get())], skipped: Vec::new() }
                })
                .collect();
            if let Some(first) = found.first_mut() {
                first.skipped = top
                    .iter()
                    .filter(|(k, _)| k != "xds")
                    .map(|(k, v)| (crate::source::join_token("", k), TRANSLATED_FROM, offset_in(doc, v)))
                    .collect();
            }
            return Some(found);
        }
        return None;
    }
    // egctl config envoy-proxy: namespace → pod → its configuration.
    let mut found = Vec::new();
    for (namespace, v) in &top {
        let pods = object_entries(v)?;
        if pods.is_empty() || !pods.iter().all(|(_, p)| is_envoy_document(p)) {
            return None;
        }
        for (pod, p) in pods {
            let path = vec![Step::Key(namespace.clone()), Step::Key(pod.clone())];
            let place = Place { path, message: entry_message(p) };
            let shape = "egctl config envoy-proxy's map (namespace → pod → configuration)";
            let proxy = Proxy::new(Some(format!("{namespace}/{pod}")), &place.pointer(), shape);
            found.push(Found { doc, proxy, parts: vec![(place, p.get())], skipped: Vec::new() });
        }
    }
    Some(found)
}

/// Kuma's map: type URL → resource name → resource, every type one of Envoy's.
fn typed_map<'a>(top: &[(Cow<'a, str>, &'a RawValue)], prefix: &[Step<'a>]) -> Option<Vec<(Place<'a>, &'a str)>> {
    let schema = crate::schema::Schema::get();
    let mut parts = Vec::new();
    for (url, v) in top {
        let name = url.strip_prefix(TYPE_URL_PREFIX)?;
        let id = schema.find(name)?;
        let message: &'static str = &schema.message(id).full_name;
        for (resource, r) in object_entries(v)? {
            let mut path = prefix.to_vec();
            path.push(Step::Key(url.clone()));
            path.push(Step::Key(resource));
            parts.push((Place { path, message: Some(message) }, r.get()));
        }
    }
    (!top.is_empty()).then_some(parts)
}

/// A list whose every element is a route table or a cluster (`istioctl proxy-config route|
/// cluster` prints them so): one proxy's resources, each of the message its keys say.
pub(super) fn resource_list<'a>(items: &[Option<&'a RawValue>]) -> Option<Found<'a>> {
    let doc = items.first().copied().flatten()?.get();
    let mut parts = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let v = (*item)?;
        let message = match root_kind(v.get()) {
            RootKind::RouteConfiguration => ROUTE,
            RootKind::Cluster => CLUSTER,
            _ => return None,
        };
        parts.push((Place { path: vec![Step::Index(i)], message: Some(message) }, v.get()));
    }
    let proxy = Proxy::new(None, "", "a list of route tables or clusters (`istioctl proxy-config route|cluster`)");
    Some(Found { doc, proxy, parts, skipped: Vec::new() })
}

/// What a list a peer's tool prints is, when it is not configuration: a JSON Patch
/// (`[{op, path, value}]`: Kuma's inspect `diff`, Envoy Gateway's bootstrap and EnvoyPatchPolicy
/// patches), named in the error instead of "no field of Envoy's".
pub(super) fn describe_list(items: &[Option<&RawValue>]) -> Option<&'static str> {
    #[derive(Deserialize)]
    struct Operation<'a> {
        #[serde(borrow)]
        op: Cow<'a, str>,
        #[serde(rename = "path")]
        _path: serde::de::IgnoredAny,
    }
    let is_patch = !items.is_empty()
        && items.iter().all(|item| {
            item.and_then(|v| serde_json::from_str::<Operation<'_>>(v.get()).ok())
                .is_some_and(|o| matches!(&*o.op, "add" | "remove" | "replace" | "move" | "copy" | "test"))
        });
    is_patch.then_some(
        "a JSON Patch (`op`, `path`, `value`: Kuma's inspect `diff`, an Envoy Gateway patch): changes to a \
         configuration, not one",
    )
}
