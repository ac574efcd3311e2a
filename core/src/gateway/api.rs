//! The Gateway API objects xdsck models, typed: what Cilium's operator reads from them and
//! nothing more. Each object keeps where it came from (source and JSON pointer) so a verdict
//! about it is shown at its place in the YAML.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::source::SourceId;

/// Where an object (or one of its listeners) is: its source and JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    pub source: SourceId,
    pub pointer: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

impl Meta {
    /// The namespace, `default` when the object names none (as `kubectl apply` does).
    pub fn ns(&self) -> &str {
        self.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default")
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Gateway {
    #[serde(default)]
    pub metadata: Meta,
    pub spec: GatewaySpec,
    #[serde(skip)]
    pub at: Option<At>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    #[serde(default)]
    pub gateway_class_name: String,
    #[serde(default)]
    pub listeners: Vec<Listener>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listener {
    pub name: String,
    pub port: u32,
    pub protocol: String,
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub tls: Option<ListenerTls>,
    #[serde(default)]
    pub allowed_routes: Option<AllowedRoutes>,
}

impl Listener {
    /// The TLS mode; Gateway API's default is `Terminate`.
    pub fn tls_mode(&self) -> &str {
        self.tls.as_ref().and_then(|t| t.mode.as_deref()).unwrap_or("Terminate")
    }

    /// The hostname, `*` when the listener has none (Cilium's normalisation).
    pub fn host(&self) -> &str {
        self.hostname.as_deref().filter(|h| !h.is_empty()).unwrap_or("*")
    }

    pub fn certificate_refs(&self) -> &[SecretObjectRef] {
        self.tls.as_ref().map_or(&[], |t| &t.certificate_refs)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerTls {
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub certificate_refs: Vec<SecretObjectRef>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretObjectRef {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

impl SecretObjectRef {
    /// A core `Secret` (group empty, kind `Secret` or unset), the only kind Cilium reads.
    pub fn is_core_secret(&self) -> bool {
        self.group.as_deref().unwrap_or("").is_empty() && self.kind.as_deref().unwrap_or("Secret") == "Secret"
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowedRoutes {
    #[serde(default)]
    pub namespaces: Option<RouteNamespaces>,
    #[serde(default)]
    pub kinds: Vec<RouteGroupKind>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteNamespaces {
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<LabelExpression>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelExpression {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

impl LabelSelector {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
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
pub struct RouteGroupKind {
    #[serde(default)]
    pub group: Option<String>,
    pub kind: String,
}

/// HTTPRoute, GRPCRoute and TLSRoute: the fields Cilium's ingestion reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RouteKind {
    Http,
    Grpc,
    Tls,
}

impl RouteKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKind::Http => "HTTPRoute",
            RouteKind::Grpc => "GRPCRoute",
            RouteKind::Tls => "TLSRoute",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: RouteSpec,
    #[serde(skip, default = "http_kind")]
    pub kind: RouteKind,
    #[serde(skip)]
    pub at: Option<At>,
}

fn http_kind() -> RouteKind {
    RouteKind::Http
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteSpec {
    #[serde(default)]
    pub parent_refs: Vec<ParentRef>,
    #[serde(default)]
    pub hostnames: Vec<String>,
    #[serde(default)]
    pub rules: Vec<RouteRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentRef {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    pub name: String,
    #[serde(default)]
    pub section_name: Option<String>,
    #[serde(default)]
    pub port: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteRule {
    #[serde(default)]
    pub backend_refs: Vec<BackendRef>,
    #[serde(default)]
    pub matches: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendRef {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub port: Option<u32>,
    #[serde(default)]
    pub weight: Option<u32>,
}

impl BackendRef {
    pub fn is_service(&self) -> bool {
        self.group.as_deref().unwrap_or("").is_empty() && self.kind.as_deref().unwrap_or("Service") == "Service"
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceGrant {
    #[serde(default)]
    pub metadata: Meta,
    pub spec: ReferenceGrantSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceGrantSpec {
    #[serde(default)]
    pub from: Vec<GrantFrom>,
    #[serde(default)]
    pub to: Vec<GrantTo>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantFrom {
    #[serde(default)]
    pub group: String,
    pub kind: String,
    pub namespace: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantTo {
    #[serde(default)]
    pub group: String,
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
}

impl ReferenceGrant {
    /// Whether this grant lets a `from_kind` in `from_ns` refer to `to_kind` `to_name` in the
    /// grant's namespace.
    pub fn permits(&self, from_group: &str, from_kind: &str, from_ns: &str, to_kind: &str, to_name: &str) -> bool {
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
pub struct Namespace {
    #[serde(default)]
    pub metadata: Meta,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Service {
    #[serde(default)]
    pub metadata: Meta,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayClass {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: GatewayClassSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayClassSpec {
    #[serde(default)]
    pub controller_name: String,
}

/// A TLS Secret: only whether it holds a certificate and a key matters to Cilium's check.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Secret {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub data: BTreeMap<String, String>,
    #[serde(default)]
    pub string_data: BTreeMap<String, String>,
}

/// `-----BEGIN` in base64, as every base64-encoded PEM document starts (the encoding is aligned
/// at the start, so the prefix is fixed).
const PEM_BASE64: &str = "LS0tLS1CRUdJT";

impl Secret {
    /// Whether `tls.crt` and `tls.key` are both PEM, the first thing Cilium's
    /// `validateTLSSecret` asks (it then parses them; xdsck does not).
    pub fn has_tls_pair(&self) -> bool {
        ["tls.crt", "tls.key"].iter().all(|k| {
            self.data.get(*k).is_some_and(|v| v.trim_start().starts_with(PEM_BASE64))
                || self.string_data.get(*k).is_some_and(|v| v.trim_start().starts_with("-----BEGIN"))
        })
    }
}

/// An object of the input that xdsck does not model: counted and named, never dropped silently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmodelled {
    pub kind: String,
    pub api_version: String,
    pub name: String,
    pub at: At,
}

/// Everything read from the inputs.
#[derive(Debug, Clone, Default)]
pub struct Objects {
    pub gateways: Vec<Gateway>,
    pub routes: Vec<Route>,
    pub grants: Vec<ReferenceGrant>,
    pub namespaces: Vec<Namespace>,
    pub services: Vec<Service>,
    pub classes: Vec<GatewayClass>,
    pub secrets: Vec<Secret>,
    pub unmodelled: Vec<Unmodelled>,
}
