//! The Gateway API objects xdsck models, typed: what Cilium's operator reads from them and
//! nothing more. Each object keeps where it came from (source and JSON pointer) so a verdict
//! about it is shown at its place in the YAML.
//!
//! Every field the API lets one leave out reads as its empty value: a missing `Option` is `None`
//! by serde's own rule, and a struct whose fields are all optional says `default` once.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::source::SourceId;

/// Where an object (or one of its listeners) is: its source and JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct At {
    pub(crate) source: SourceId,
    pub(crate) pointer: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Meta {
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
    pub(crate) labels: BTreeMap<String, String>,
}

impl Meta {
    /// The namespace, `default` when the object names none (as `kubectl apply` does).
    pub(crate) fn ns(&self) -> &str {
        self.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default")
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Gateway {
    #[serde(default)]
    pub(crate) metadata: Meta,
    pub(crate) spec: GatewaySpec,
    #[serde(skip)]
    pub(crate) at: Option<At>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GatewaySpec {
    #[serde(default)]
    pub(crate) gateway_class_name: String,
    #[serde(default)]
    pub(crate) listeners: Vec<Listener>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listener {
    pub(crate) name: String,
    pub(crate) port: u32,
    pub(crate) protocol: String,
    pub(crate) hostname: Option<String>,
    pub(crate) tls: Option<ListenerTls>,
    pub(crate) allowed_routes: Option<AllowedRoutes>,
}

impl Listener {
    /// The TLS mode; Gateway API's default is `Terminate`.
    pub(crate) fn tls_mode(&self) -> &str {
        self.tls.as_ref().and_then(|t| t.mode.as_deref()).unwrap_or("Terminate")
    }

    /// The hostname, `*` when the listener has none (Cilium's normalisation).
    pub(crate) fn host(&self) -> &str {
        self.hostname.as_deref().filter(|h| !h.is_empty()).unwrap_or("*")
    }

    pub(crate) fn certificate_refs(&self) -> &[SecretObjectRef] {
        self.tls.as_ref().map_or(&[], |t| &t.certificate_refs)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ListenerTls {
    pub(crate) mode: Option<String>,
    pub(crate) certificate_refs: Vec<SecretObjectRef>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SecretObjectRef {
    pub(crate) group: Option<String>,
    pub(crate) kind: Option<String>,
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
}

impl SecretObjectRef {
    /// A core `Secret` (group empty, kind `Secret` or unset), the only kind Cilium reads.
    pub(crate) fn is_core_secret(&self) -> bool {
        self.group.as_deref().unwrap_or("").is_empty() && self.kind.as_deref().unwrap_or("Secret") == "Secret"
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct AllowedRoutes {
    pub(crate) namespaces: Option<RouteNamespaces>,
    pub(crate) kinds: Vec<RouteGroupKind>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct RouteNamespaces {
    pub(crate) from: Option<String>,
    pub(crate) selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct LabelSelector {
    pub(crate) match_labels: BTreeMap<String, String>,
    pub(crate) match_expressions: Vec<LabelExpression>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LabelExpression {
    pub(crate) key: String,
    pub(crate) operator: String,
    #[serde(default)]
    pub(crate) values: Vec<String>,
}

impl LabelSelector {
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|e| {
                let value = labels.get(&e.key);
                match e.operator.as_str() {
                    "In" => value.is_some_and(|v| e.values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RouteGroupKind {
    pub(crate) group: Option<String>,
    pub(crate) kind: String,
}

/// HTTPRoute, GRPCRoute and TLSRoute: the fields Cilium's ingestion reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RouteKind {
    Http,
    Grpc,
    Tls,
}

impl RouteKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RouteKind::Http => "HTTPRoute",
            RouteKind::Grpc => "GRPCRoute",
            RouteKind::Tls => "TLSRoute",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Route {
    #[serde(default)]
    pub(crate) metadata: Meta,
    #[serde(default)]
    pub(crate) spec: RouteSpec,
    #[serde(skip, default = "http_kind")]
    pub(crate) kind: RouteKind,
    #[serde(skip)]
    pub(crate) at: Option<At>,
}

fn http_kind() -> RouteKind {
    RouteKind::Http
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct RouteSpec {
    pub(crate) parent_refs: Vec<ParentRef>,
    pub(crate) hostnames: Vec<String>,
    pub(crate) rules: Vec<RouteRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ParentRef {
    pub(crate) group: Option<String>,
    pub(crate) kind: Option<String>,
    pub(crate) namespace: Option<String>,
    pub(crate) name: String,
    pub(crate) section_name: Option<String>,
    pub(crate) port: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct RouteRule {
    pub(crate) backend_refs: Vec<BackendRef>,
    pub(crate) matches: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BackendRef {
    pub(crate) group: Option<String>,
    pub(crate) kind: Option<String>,
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
    pub(crate) port: Option<u32>,
    pub(crate) weight: Option<u32>,
}

impl BackendRef {
    pub(crate) fn is_service(&self) -> bool {
        self.group.as_deref().unwrap_or("").is_empty() && self.kind.as_deref().unwrap_or("Service") == "Service"
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReferenceGrant {
    #[serde(default)]
    pub(crate) metadata: Meta,
    pub(crate) spec: ReferenceGrantSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReferenceGrantSpec {
    #[serde(default)]
    pub(crate) from: Vec<GrantFrom>,
    #[serde(default)]
    pub(crate) to: Vec<GrantTo>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GrantFrom {
    #[serde(default)]
    pub(crate) group: String,
    pub(crate) kind: String,
    pub(crate) namespace: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GrantTo {
    #[serde(default)]
    pub(crate) group: String,
    pub(crate) kind: String,
    pub(crate) name: Option<String>,
}

impl ReferenceGrant {
    /// Whether this grant lets a `from_kind` in `from_ns` refer to `to_kind` `to_name` in the
    /// grant's namespace.
    pub(crate) fn permits(
        &self,
        from_group: &str,
        from_kind: &str,
        from_ns: &str,
        to_kind: &str,
        to_name: &str,
    ) -> bool {
        self.spec.from.iter().any(|f| f.group == from_group && f.kind == from_kind && f.namespace == from_ns)
            && self.spec.to.iter().any(|t| {
                t.group.is_empty()
                    && t.kind == to_kind
                    && t.name.as_deref().is_none_or(|n| n.is_empty() || n == to_name)
            })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Namespace {
    #[serde(default)]
    pub(crate) metadata: Meta,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Service {
    #[serde(default)]
    pub(crate) metadata: Meta,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GatewayClass {
    #[serde(default)]
    pub(crate) metadata: Meta,
    #[serde(default)]
    pub(crate) spec: GatewayClassSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct GatewayClassSpec {
    pub(crate) controller_name: String,
}

/// A TLS Secret: only whether it holds a certificate and a key matters to Cilium's check.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Secret {
    #[serde(default)]
    pub(crate) metadata: Meta,
    #[serde(default)]
    pub(crate) data: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) string_data: BTreeMap<String, String>,
}

/// `-----BEGIN` in base64, as every base64-encoded PEM document starts (the encoding is aligned
/// at the start, so the prefix is fixed).
const PEM_BASE64: &str = "LS0tLS1CRUdJT";

impl Secret {
    /// Whether `tls.crt` and `tls.key` are both PEM, the first thing Cilium's
    /// `validateTLSSecret` asks (it then parses them; xdsck does not).
    pub(crate) fn has_tls_pair(&self) -> bool {
        ["tls.crt", "tls.key"].iter().all(|k| {
            self.data.get(*k).is_some_and(|v| v.trim_start().starts_with(PEM_BASE64))
                || self.string_data.get(*k).is_some_and(|v| v.trim_start().starts_with("-----BEGIN"))
        })
    }
}

/// An object of the input that xdsck does not model: counted and named, never dropped silently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unmodelled {
    pub(crate) kind: String,
    pub(crate) api_version: String,
    pub(crate) name: String,
    pub(crate) at: At,
}

/// Everything read from the inputs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Objects {
    pub(crate) gateways: Vec<Gateway>,
    pub(crate) routes: Vec<Route>,
    pub(crate) grants: Vec<ReferenceGrant>,
    pub(crate) namespaces: Vec<Namespace>,
    pub(crate) services: Vec<Service>,
    pub(crate) classes: Vec<GatewayClass>,
    pub(crate) secrets: Vec<Secret>,
    pub(crate) unmodelled: Vec<Unmodelled>,
}
