//! What a document is, decided from its first keys before it is read: which message of the
//! schema its root is, and so whose rules apply (Envoy's static configuration, an xDS
//! resource, a Kubernetes object). The keys are looked up in the candidates' own fields, so a
//! document is usually known by its first key and the rest of it is not looked at twice.

use serde::de::IgnoredAny;

use super::Mode;
use crate::schema::{MsgId, Schema};

/// The kind of a document's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RootKind {
    /// `envoy.admin.v3.ConfigDump`.
    ConfigDump,
    /// `envoy.config.bootstrap.v3.Bootstrap`.
    Bootstrap,
    /// A Kubernetes object (`apiVersion`, `kind`, `metadata`, `spec`, `items`).
    K8s,
    /// `envoy.service.discovery.v3.DiscoveryResponse`.
    DiscoveryResponse,
    /// `envoy.service.discovery.v3.DeltaDiscoveryResponse`.
    DeltaDiscoveryResponse,
    /// `envoy.admin.v3.ListenersConfigDump.DynamicListener`.
    DynamicListener,
    /// `envoy.admin.v3.ListenersConfigDump.StaticListener`.
    StaticListener,
    /// `envoy.config.listener.v3.Listener`.
    Listener,
    /// `envoy.config.route.v3.RouteConfiguration` (`istioctl proxy-config route` lists them).
    RouteConfiguration,
    /// `envoy.config.cluster.v3.Cluster` (`istioctl proxy-config cluster` lists them).
    Cluster,
    /// One entry of a config_dump's `configs` on its own (`envoy.admin.v3.ListenersConfigDump`,
    /// ...), known by its `@type`: what `egctl config envoy-proxy listener` prints per pod.
    DumpEntry(MsgId),
    /// `{}`.
    Empty,
    /// No key of any of the above.
    Unknown,
}

/// The candidates, in the order a tie is broken in.
const CANDIDATES: [RootKind; 10] = [
    RootKind::ConfigDump,
    RootKind::Bootstrap,
    RootKind::K8s,
    RootKind::DiscoveryResponse,
    RootKind::DeltaDiscoveryResponse,
    RootKind::DynamicListener,
    RootKind::StaticListener,
    RootKind::Listener,
    RootKind::RouteConfiguration,
    RootKind::Cluster,
];

/// The fields of a Kubernetes object xdsck reads (or may: `status`).
pub(super) const K8S_KEYS: [&str; 6] = ["apiVersion", "kind", "metadata", "spec", "items", "status"];

impl RootKind {
    /// The message of the schema the root is.
    pub(crate) fn message(self) -> Option<&'static str> {
        Some(match self {
            RootKind::ConfigDump => "envoy.admin.v3.ConfigDump",
            RootKind::Bootstrap => "envoy.config.bootstrap.v3.Bootstrap",
            RootKind::DiscoveryResponse => "envoy.service.discovery.v3.DiscoveryResponse",
            RootKind::DeltaDiscoveryResponse => "envoy.service.discovery.v3.DeltaDiscoveryResponse",
            RootKind::DynamicListener => "envoy.admin.v3.ListenersConfigDump.DynamicListener",
            RootKind::StaticListener => "envoy.admin.v3.ListenersConfigDump.StaticListener",
            RootKind::Listener => "envoy.config.listener.v3.Listener",
            RootKind::RouteConfiguration => "envoy.config.route.v3.RouteConfiguration",
            RootKind::Cluster => "envoy.config.cluster.v3.Cluster",
            RootKind::DumpEntry(id) => &Schema::get().message(id).full_name,
            RootKind::K8s | RootKind::Empty | RootKind::Unknown => return None,
        })
    }

    /// Whose rules the document is read by.
    pub(crate) fn mode(self) -> Mode {
        match self {
            RootKind::Bootstrap | RootKind::Listener => Mode::Static,
            // A Kubernetes object's own fields are not Envoy's; its resources switch to Cilium's.
            _ => Mode::Dynamic,
        }
    }

    fn has_key(self, key: &str, schema: &Schema) -> bool {
        match self {
            RootKind::K8s => K8S_KEYS.contains(&key),
            k => {
                k.message().and_then(|m| schema.find(m)).is_some_and(|m| schema.message(m).field_by_key(key).is_some())
            }
        }
    }
}

/// What the document whose object starts at `json` is, from its keys.
pub(crate) fn root_kind(json: &str) -> RootKind {
    root_of(json).0
}

/// What the document whose object starts at `json` is, and whether its `@type` said so: such a
/// document is a resource in an Any's form (a config_dump's `listener` value copied out, a
/// pod's `ListenersConfigDump` as `egctl` prints it), whose `@type` is the Any's, not a field.
pub(crate) fn root_of(json: &str) -> (RootKind, bool) {
    let schema = Schema::get();
    let b = json.as_bytes();
    let ws = |i: usize| skip_ws(b, i);
    let mut i = ws(0);
    if b.get(i) != Some(&b'{') {
        return (RootKind::Unknown, false);
    }
    i += 1;
    let mut candidates: Vec<RootKind> = CANDIDATES.to_vec();
    let mut any_key = false;
    let mut matched = false;
    loop {
        i = ws(i);
        match b.get(i) {
            Some(b'}') | None => break,
            Some(b',') => {
                i += 1;
                continue;
            }
            Some(b'"') => {}
            Some(_) => return (RootKind::Unknown, false),
        }
        let Some((key, after)) = read_key(json, i) else { return (RootKind::Unknown, false) };
        any_key = true;
        i = ws(after);
        if b.get(i) != Some(&b':') {
            return (RootKind::Unknown, false);
        }
        i = ws(i + 1);
        if key == "@type" {
            // A resource written with its type (`{"@type": ...Listener, ...}`).
            if let Some((url, _)) = read_key(json, i) {
                let name = url.rsplit('/').next().unwrap_or(&url);
                if let Some(k) = CANDIDATES.iter().copied().find(|k| k.message() == Some(name)) {
                    return (k, true);
                }
                if name.starts_with("envoy.admin.v3.")
                    && let Some(id) = schema.find(name)
                {
                    return (RootKind::DumpEntry(id), true);
                }
            }
        } else {
            let mut left: Vec<RootKind> = candidates.iter().copied().filter(|k| k.has_key(&key, schema)).collect();
            if key == "resources" && left.contains(&RootKind::DeltaDiscoveryResponse) && wrapped_resources(json, i) {
                // `resources: [{name, resource: {...}}]`: Resource wrappers, the incremental
                // protocol's form (Kuma writes its snapshots so), not a SotW list of Anys.
                left.retain(|&k| k == RootKind::DeltaDiscoveryResponse);
            }
            if !left.is_empty() {
                matched = true;
                candidates = left;
                if candidates.len() == 1 {
                    return (candidates[0], false);
                }
            }
        }
        // Not decided yet: skip the value.
        let mut stream = serde_json::Deserializer::from_str(&json[i..]).into_iter::<IgnoredAny>();
        match stream.next() {
            Some(Ok(_)) => i += stream.byte_offset(),
            _ => return (RootKind::Unknown, false),
        }
    }
    if !any_key {
        return (RootKind::Empty, false);
    }
    if !matched {
        return (RootKind::Unknown, false);
    }
    (candidates[0], false)
}

/// Whether the list at `json[i]` starts with a `Resource` wrapper written without its type: an
/// object whose `resource` key comes before any `@type` (an Any is what a SotW response holds).
fn wrapped_resources(json: &str, i: usize) -> bool {
    let j = skip_ws(json.as_bytes(), i);
    if json.as_bytes().get(j) != Some(&b'[') {
        return false;
    }
    // The reader stops at the deciding key (the first element may be a listener of 100k chains,
    // which is not read twice for this), so the parse ends in an error; the key is what counts.
    let found = std::cell::Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(&json[j + 1..]);
    let _ = serde::de::DeserializeSeed::deserialize(DecidingKey(&found), &mut de);
    found.get() == Some(true)
}

/// Reads an object's keys up to `resource` (a wrapper: `true`) or `@type` (an Any: `false`),
/// skipping values, and stops there.
struct DecidingKey<'a>(&'a std::cell::Cell<Option<bool>>);

impl<'de> serde::de::DeserializeSeed<'de> for DecidingKey<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for DecidingKey<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        while let Some(k) = a.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*k {
                "resource" | "@type" => {
                    self.0.set(Some(k == "resource"));
                    return Err(serde::de::Error::custom("decided"));
                }
                _ => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The first byte at or after `i` that is not JSON whitespace.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// The string starting at `json[i]` (a quote), and where it ends.
fn read_key(json: &str, i: usize) -> Option<(String, usize)> {
    let b = json.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    let mut escaped = false;
    while j < b.len() {
        match b[j] {
            b'\\' => {
                escaped = true;
                j += 2;
                continue;
            }
            b'"' => break,
            _ => j += 1,
        }
    }
    if j >= b.len() {
        return None;
    }
    let raw = &json[i..=j];
    let key = if escaped { serde_json::from_str::<String>(raw).ok()? } else { raw[1..raw.len() - 1].to_owned() };
    Some((key, j + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_known_by_their_first_telling_key() {
        assert_eq!(root_kind(r#"{"configs": []}"#), RootKind::ConfigDump);
        assert_eq!(root_kind(r#"{"node": {}, "static_resources": {}}"#), RootKind::Bootstrap);
        assert_eq!(root_kind(r#"{"name": "l", "address": {}}"#), RootKind::Listener);
        assert_eq!(root_kind(r#"{"name": "l", "active_state": {}}"#), RootKind::DynamicListener);
        assert_eq!(root_kind(r#"{"resources": [1, 2], "system_version_info": "1"}"#), RootKind::DeltaDiscoveryResponse);
        assert_eq!(root_kind(r#"{"resources": [], "type_url": "x"}"#), RootKind::DiscoveryResponse);
        assert_eq!(root_kind(r#"{"apiVersion": "v1", "kind": "Service"}"#), RootKind::K8s);
        assert_eq!(root_kind(r#"{"metadata": {}, "spec": {}}"#), RootKind::K8s);
        assert_eq!(root_kind(r#"{"metadata": {}, "filter_chains": []}"#), RootKind::Listener);
        assert_eq!(root_kind(r#"{"filterChains": []}"#), RootKind::Listener);
        assert_eq!(
            root_kind(r#"{"@type": "type.googleapis.com/envoy.config.listener.v3.Listener"}"#),
            RootKind::Listener
        );
        assert_eq!(root_kind("{}"), RootKind::Empty);
        assert_eq!(root_kind(r#"{"foo": 1}"#), RootKind::Unknown);
    }
}
