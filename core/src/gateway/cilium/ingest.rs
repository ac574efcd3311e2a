//! Gateway API to Cilium's model (`ingestion.GatewayAPI`): one HTTP entry per HTTP, HTTPS and
//! TLS listener, one passthrough entry per TLS listener, each with the routes attached to it
//! and the hostnames `ComputeHosts` gives them.

use super::hostnames::compute_hosts;
use crate::gateway::api::{BackendRef, Gateway, Listener, Objects, Route, RouteKind};

const GROUP: &str = "gateway.networking.k8s.io";

/// A backend cluster: namespace, Service, port, weight.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Backend {
    pub(crate) namespace: String,
    pub(crate) service: String,
    pub(crate) port: u32,
    pub(crate) weight: u32,
}

impl Backend {
    pub(crate) fn cluster(&self) -> String {
        format!("{}:{}:{}", self.namespace, self.service, self.port)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct HttpRoute {
    pub(crate) hostnames: Vec<String>,
    pub(crate) rules: Vec<(Vec<serde_json::Value>, Vec<Backend>)>,
}

#[derive(Debug, Clone)]
pub(crate) struct HttpEntry {
    pub(crate) port: u32,
    pub(crate) hostname: String,
    /// `(namespace, name)` of the TLS Secrets, empty for cleartext.
    pub(crate) secrets: Vec<(String, String)>,
    pub(crate) routes: Vec<HttpRoute>,
}

#[derive(Debug, Clone)]
pub(crate) struct PassRoute {
    pub(crate) hostnames: Vec<String>,
    pub(crate) backends: Vec<Backend>,
}

#[derive(Debug, Clone)]
pub(crate) struct PassEntry {
    pub(crate) listener: String,
    pub(crate) port: u32,
    pub(crate) hostname: String,
    pub(crate) routes: Vec<PassRoute>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Model {
    pub(crate) http: Vec<HttpEntry>,
    pub(crate) passthrough: Vec<PassEntry>,
}

/// Whether `route` names listener `l` of `gw` as a parent and may attach to it.
pub(crate) fn attaches(gw: &Gateway, l: &Listener, route: &Route, objects: &Objects) -> bool {
    let route_ns = route.metadata.ns();
    let named = route.spec.parent_refs.iter().any(|p| {
        p.group.as_deref().unwrap_or(GROUP) == GROUP
            && p.kind.as_deref().unwrap_or("Gateway") == "Gateway"
            && p.namespace.as_deref().unwrap_or(route_ns) == gw.metadata.ns()
            && p.name == gw.metadata.name
            && p.section_name.as_deref().is_none_or(|s| s == l.name)
            && p.port.is_none_or(|port| port == l.port)
    });
    named && namespace_allowed(gw, l, route_ns, objects) && kind_allowed(l, route.kind)
}

fn namespace_allowed(gw: &Gateway, l: &Listener, ns: &str, objects: &Objects) -> bool {
    let from = l.allowed_routes.as_ref().and_then(|a| a.namespaces.as_ref());
    match from.and_then(|f| f.from.as_deref()).unwrap_or("Same") {
        "All" => true,
        "Selector" => {
            let labels = objects.namespaces.iter().find(|n| n.metadata.name == ns).map(|n| n.metadata.labels.clone());
            let mut labels = labels.unwrap_or_default();
            labels.entry("kubernetes.io/metadata.name".to_owned()).or_insert_with(|| ns.to_owned());
            from.and_then(|f| f.selector.as_ref()).is_some_and(|s| s.matches(&labels))
        }
        _ => ns == gw.metadata.ns(),
    }
}

fn kind_allowed(l: &Listener, kind: RouteKind) -> bool {
    let kinds = l.allowed_routes.as_ref().map_or(&[][..], |a| &a.kinds);
    if kinds.is_empty() {
        return super::conditions::supported_kinds(&l.protocol).contains(&kind.as_str());
    }
    kinds.iter().any(|k| k.group.as_deref().unwrap_or(GROUP) == GROUP && k.kind == kind.as_str())
}

fn backends(route: &Route, refs: &[BackendRef], objects: &Objects) -> Vec<Backend> {
    let route_ns = route.metadata.ns();
    refs.iter()
        .filter(|b| b.is_service())
        .filter_map(|b| {
            let ns = b.namespace.as_deref().unwrap_or(route_ns);
            // Services, like Secrets, may live elsewhere: with none in the input they are
            // read as existing.
            let exists = objects.services.is_empty()
                || objects.services.iter().any(|s| s.metadata.ns() == ns && s.metadata.name == b.name);
            let allowed = ns == route_ns
                || objects.grants.iter().any(|g| {
                    g.metadata.ns() == ns && g.permits(GROUP, route.kind.as_str(), route_ns, "Service", &b.name)
                });
            (exists && allowed).then(|| Backend {
                namespace: ns.to_owned(),
                service: b.name.clone(),
                port: b.port.unwrap_or(0),
                weight: b.weight.unwrap_or(1),
            })
        })
        .collect()
}

/// Whether the operator hands a certificate ref to Envoy as an SDS secret: whenever the
/// reference is allowed (same namespace or a ReferenceGrant). Cilium's own test data renders
/// refs of the wrong kind and to missing or malformed Secrets too (the listener is still
/// marked invalid); only a ref not permitted leaves the chain cleartext.
fn secret_usable(gw: &Gateway, ns: &str, name: &str, objects: &Objects) -> bool {
    ns == gw.metadata.ns()
        || objects
            .grants
            .iter()
            .any(|g| g.metadata.ns() == ns && g.permits(GROUP, "Gateway", gw.metadata.ns(), "Secret", name))
}

/// The model of `gw` built from the listeners `keep` admits.
pub(crate) fn ingest(gw: &Gateway, objects: &Objects, keep: &dyn Fn(usize) -> bool) -> Model {
    let listeners: Vec<&Listener> =
        gw.spec.listeners.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(_, l)| l).collect();
    let mut model = Model::default();
    for l in &listeners {
        if !matches!(l.protocol.as_str(), "HTTP" | "HTTPS" | "TLS") {
            continue;
        }
        let others: Vec<&str> = listeners.iter().filter(|o| o.protocol == l.protocol).map(|o| o.host()).collect();
        let secrets = if l.protocol == "HTTPS" {
            l.certificate_refs()
                .iter()
                .map(|r| (r.namespace.clone().unwrap_or_else(|| gw.metadata.ns().to_owned()), r.name.clone()))
                .filter(|(ns, name)| secret_usable(gw, ns, name, objects))
                .collect()
        } else {
            Vec::new()
        };
        let mut http = HttpEntry { port: l.port, hostname: l.host().to_owned(), secrets, routes: Vec::new() };
        let mut pass =
            PassEntry { listener: l.name.clone(), port: l.port, hostname: l.host().to_owned(), routes: Vec::new() };
        for route in &objects.routes {
            if !attaches(gw, l, route, objects) {
                continue;
            }
            let hosts = compute_hosts(&route.spec.hostnames, l.host(), &others);
            if hosts.is_empty() {
                continue;
            }
            let hosts = if hosts == ["*"] { Vec::new() } else { hosts };
            match route.kind {
                RouteKind::Http | RouteKind::Grpc => http.routes.push(HttpRoute {
                    hostnames: hosts,
                    rules: route
                        .spec
                        .rules
                        .iter()
                        .map(|r| (r.matches.clone(), backends(route, &r.backend_refs, objects)))
                        .collect(),
                }),
                RouteKind::Tls => {
                    for rule in &route.spec.rules {
                        let b = backends(route, &rule.backend_refs, objects);
                        if !b.is_empty() {
                            pass.routes.push(PassRoute { hostnames: hosts.clone(), backends: b });
                        }
                    }
                }
            }
        }
        model.http.push(http);
        if l.protocol == "TLS" {
            model.passthrough.push(pass);
        }
    }
    model
}
