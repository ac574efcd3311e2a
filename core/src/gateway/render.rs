//! Cilium's model to the CiliumEnvoyConfig the operator writes (`desiredEnvoyListenerCombined`,
//! `desiredEnvoyListenerPerPort`, the route configurations, clusters and services), in the
//! lowerCamelCase protojson Cilium writes, so that the existing loader reads it unchanged.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::cilium::hostnames::sni_intersect;
use super::cilium::ingest::{Backend, HttpEntry, Model, PassEntry, PassRoute};
use super::cilium::versions::Behaviour;

const LISTENER: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";
const ROUTES: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
const CLUSTER: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

/// The Gateway a CEC is rendered for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owner<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
}

fn hcm(rds: &str) -> Value {
    json!({
        "name": "envoy.filters.network.http_connection_manager",
        "typedConfig": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "httpFilters": [{"name": "envoy.filters.http.router", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
            "rds": {"routeConfigName": rds},
            "statPrefix": rds,
            "useRemoteAddress": true
        }
    })
}

fn raw_chain(rds: &str) -> Value {
    json!({"filterChainMatch": {"transportProtocol": "raw_buffer"}, "filters": [hcm(rds)]})
}

/// The SDS name of a Secret as the release operators write it (`cilium-secrets/<ns>-<name>`).
pub(crate) fn sds_name(ns: &str, name: &str) -> String {
    format!("cilium-secrets/{ns}-{name}")
}

/// One chain per TLS Secret among `entries`, sorted by `ns/name`; its server names are every
/// hostname of the entries using that Secret (none: a catch-all, when one of them is `*`).
fn https_chains(entries: &[&HttpEntry], rds: &str) -> Vec<Value> {
    let mut by_secret: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for e in entries {
        for s in &e.secrets {
            by_secret.entry(s.clone()).or_default().insert(e.hostname.clone());
        }
    }
    by_secret
        .into_iter()
        .map(|((ns, name), hosts)| {
            let mut matcher = serde_json::Map::new();
            if !hosts.contains("*") {
                matcher.insert("serverNames".into(), json!(hosts.into_iter().collect::<Vec<_>>()));
            }
            matcher.insert("transportProtocol".into(), json!("tls"));
            json!({
                "filterChainMatch": matcher,
                "filters": [hcm(rds)],
                "transportSocket": {
                    "name": "envoy.transport_sockets.tls",
                    "typedConfig": {
                        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
                        "commonTlsContext": {"tlsCertificateSdsSecretConfigs": [{"name": sds_name(&ns, &name)}]}
                    }
                }
            })
        })
        .collect()
}

fn pass_chain(r: &PassRoute) -> Value {
    let mut hosts = r.hostnames.clone();
    hosts.sort();
    let prefix = if hosts.is_empty() { "*".to_owned() } else { hosts.join(",") };
    let mut proxy = serde_json::Map::new();
    proxy.insert("@type".into(), json!("type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"));
    if let [one] = r.backends.as_slice() {
        proxy.insert("cluster".into(), json!(one.cluster()));
    } else {
        let clusters: Vec<Value> =
            r.backends.iter().map(|b| json!({"name": b.cluster(), "weight": b.weight})).collect();
        proxy.insert("weightedClusters".into(), json!({"clusters": clusters}));
    }
    proxy.insert("statPrefix".into(), json!(format!("tls-passthrough:{prefix}")));
    let mut matcher = serde_json::Map::new();
    if !hosts.is_empty() {
        matcher.insert("serverNames".into(), json!(hosts));
    }
    matcher.insert("transportProtocol".into(), json!("tls"));
    json!({"filterChainMatch": matcher, "filters": [{"name": "envoy.filters.network.tcp_proxy", "typedConfig": proxy}]})
}

/// Passthrough chains of `entries`: listeners by (port, hostname, name), routes by hostnames.
fn pass_chains(entries: &[&PassEntry]) -> Vec<Value> {
    let mut sorted: Vec<&&PassEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| (a.port, &a.hostname, &a.listener).cmp(&(b.port, &b.hostname, &b.listener)));
    let mut out = Vec::new();
    for e in sorted {
        let mut routes: Vec<&PassRoute> = e.routes.iter().collect();
        routes.sort_by(|a, b| a.hostnames.cmp(&b.hostnames));
        out.extend(routes.into_iter().map(pass_chain));
    }
    out
}

fn listener(name: &str, chains: Vec<Value>) -> Value {
    let opt = |description: &str, value: &str, level: &str, name: &str| json!({"description": description, "intValue": value, "level": level, "name": name});
    json!({
        "@type": LISTENER,
        "filterChains": chains,
        "listenerFilters": [{"name": "envoy.filters.listener.tls_inspector", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"}}],
        "name": name,
        "socketOptions": [
            opt("Enable TCP keep-alive (default to enabled)", "1", "1", "9"),
            opt("TCP keep-alive idle time (in seconds) (defaults to 10s)", "10", "6", "4"),
            opt("TCP keep-alive probe intervals (in seconds) (defaults to 5s)", "5", "6", "5"),
            opt("TCP keep-alive probe max failures.", "10", "6", "6"),
        ]
    })
}

fn route_action(backends: &[Backend]) -> Value {
    match backends {
        [] => json!({"directResponse": {"status": 500}}),
        [one] => json!({"route": {"cluster": one.cluster()}}),
        many => {
            let clusters: Vec<Value> = many.iter().map(|b| json!({"name": b.cluster(), "weight": b.weight})).collect();
            json!({"route": {"weightedClusters": {"clusters": clusters}}})
        }
    }
}

fn path_match(m: &Value) -> Value {
    let path = m.get("path");
    let value = path.and_then(|p| p.get("value")).and_then(Value::as_str).unwrap_or("/");
    match path.and_then(|p| p.get("type")).and_then(Value::as_str).unwrap_or("PathPrefix") {
        "Exact" => json!({"path": value}),
        "RegularExpression" => json!({"safeRegex": {"regex": value}}),
        _ if value == "/" => json!({"prefix": "/"}),
        _ => json!({"pathSeparatedPrefix": value.trim_end_matches('/')}),
    }
}

/// A route configuration: one virtual host per computed hostname, named after it.
fn route_config(name: &str, entries: &[&HttpEntry]) -> Value {
    let mut hosts: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for e in entries {
        for r in &e.routes {
            let names = if r.hostnames.is_empty() { vec!["*".to_owned()] } else { r.hostnames.clone() };
            for h in names {
                let routes = hosts.entry(h).or_default();
                for (matches, backends) in &r.rules {
                    let action = route_action(backends);
                    let ms: Vec<Value> = if matches.is_empty() { vec![json!({})] } else { matches.clone() };
                    for m in ms {
                        let mut route = json!({"match": path_match(&m)});
                        if let (Some(o), Some(a)) = (route.as_object_mut(), action.as_object()) {
                            o.extend(a.clone());
                        }
                        routes.push(route);
                    }
                }
            }
        }
    }
    let vhosts: Vec<Value> = hosts
        .into_iter()
        .map(|(h, routes)| {
            let domains = if h == "*" { json!(["*"]) } else { json!([h, format!("{h}:*")]) };
            json!({"domains": domains, "name": h, "routes": routes})
        })
        .collect();
    let mut rc = json!({"@type": ROUTES, "name": name});
    if !vhosts.is_empty() {
        rc["virtualHosts"] = json!(vhosts);
    }
    rc
}

/// Whether the model needs one Envoy listener per port (`NeedsPerPortListeners`).
pub(crate) fn needs_per_port(model: &Model) -> bool {
    let https: BTreeSet<u32> = model.http.iter().filter(|e| !e.secrets.is_empty()).map(|e| e.port).collect();
    let routed: BTreeSet<u32> = model.passthrough.iter().filter(|e| !e.routes.is_empty()).map(|e| e.port).collect();
    let cross = model.http.iter().filter(|e| !e.secrets.is_empty()).any(|h| {
        model.passthrough.iter().filter(|p| p.port != h.port).any(|p| {
            p.routes.iter().any(|r| {
                let names: Vec<&str> =
                    if r.hostnames.is_empty() { vec!["*"] } else { r.hostnames.iter().map(String::as_str).collect() };
                names.iter().any(|n| sni_intersect(&h.hostname, n))
            })
        })
    });
    https.len() > 1 || routed.len() > 1 || cross
}

/// The CiliumEnvoyConfig for `model`, or `None` when the model needs no Envoy configuration.
pub(crate) fn render(owner: Owner<'_>, model: &Model, b: Behaviour) -> Option<Value> {
    if model.http.is_empty() && model.passthrough.is_empty() {
        return None;
    }
    let cec_name = format!("cilium-gateway-{}", owner.name);
    let svc = |listener: Option<&str>, ports: Vec<u32>| {
        let mut s = json!({"name": cec_name, "namespace": owner.namespace, "ports": ports});
        if let Some(l) = listener {
            s["listener"] = json!(l);
        }
        s
    };
    let routed: BTreeSet<u32> = model.passthrough.iter().filter(|e| !e.routes.is_empty()).map(|e| e.port).collect();
    let mut resources = Vec::new();
    let mut services = Vec::new();
    let cleartext: Vec<&HttpEntry> = model.http.iter().filter(|e| e.secrets.is_empty()).collect();
    if b.per_port_listeners && needs_per_port(model) {
        let base_clear: Vec<&HttpEntry> = cleartext.iter().copied().filter(|e| !routed.contains(&e.port)).collect();
        let https_ports: BTreeSet<u32> = model.http.iter().filter(|e| !e.secrets.is_empty()).map(|e| e.port).collect();
        let mut listeners = Vec::new();
        let mut routes = Vec::new();
        let single_pass = routed.len() == 1;
        if !base_clear.is_empty() || single_pass {
            let mut chains = Vec::new();
            if !base_clear.is_empty() {
                chains.push(raw_chain("listener-insecure"));
                routes.push(route_config("listener-insecure", &cleartext));
            }
            if single_pass {
                let entries: Vec<&PassEntry> = model.passthrough.iter().collect();
                chains.extend(pass_chains(&entries));
            }
            listeners.push(listener("listener", chains));
            let clear_ports: BTreeSet<u32> = base_clear.iter().map(|e| e.port).collect();
            if !clear_ports.is_empty() {
                services.push(svc(Some("listener"), clear_ports.into_iter().collect()));
            }
        }
        for p in &https_ports {
            let name = format!("listener-{p}");
            let entries: Vec<&HttpEntry> =
                model.http.iter().filter(|e| e.port == *p && !e.secrets.is_empty()).collect();
            listeners.push(listener(&name, https_chains(&entries, &name)));
            routes.push(route_config(&name, &entries));
            services.push(svc(Some(&name), vec![*p]));
        }
        if single_pass {
            services.push(svc(Some("listener"), routed.iter().copied().collect()));
        } else {
            for p in &routed {
                let name = format!("listener-{p}");
                let entries: Vec<&PassEntry> = model.passthrough.iter().filter(|e| e.port == *p).collect();
                listeners.push(listener(&name, pass_chains(&entries)));
                services.push(svc(Some(&name), vec![*p]));
            }
        }
        resources.extend(listeners);
        resources.extend(routes);
    } else {
        let mut chains = Vec::new();
        let mut routes = Vec::new();
        if !model.http.is_empty() {
            chains.push(raw_chain("listener-insecure"));
            routes.push(route_config("listener-insecure", &cleartext));
        }
        let secure: Vec<&HttpEntry> = model.http.iter().filter(|e| !e.secrets.is_empty()).collect();
        if !secure.is_empty() {
            chains.extend(https_chains(&secure, "listener-secure"));
            routes.push(route_config("listener-secure", &secure));
        }
        let entries: Vec<&PassEntry> = model.passthrough.iter().collect();
        chains.extend(pass_chains(&entries));
        resources.push(listener("listener", chains));
        resources.extend(routes);
        // Every HTTP entry's port, and TLS listeners have HTTP entries too: a passthrough port
        // is listed whether or not a route reaches it.
        let ports: BTreeSet<u32> = model.http.iter().map(|e| e.port).collect();
        services.push(svc(None, ports.into_iter().collect()));
    }
    // Every backend: an EDS cluster and a backendServices entry.
    let mut backends: BTreeSet<(String, String, u32)> = BTreeSet::new();
    for e in &model.http {
        for r in &e.routes {
            for (_, bs) in &r.rules {
                backends.extend(bs.iter().map(|b| (b.namespace.clone(), b.service.clone(), b.port)));
            }
        }
    }
    for e in &model.passthrough {
        for r in &e.routes {
            backends.extend(r.backends.iter().map(|b| (b.namespace.clone(), b.service.clone(), b.port)));
        }
    }
    let mut backend_services: BTreeMap<(String, String), BTreeSet<u32>> = BTreeMap::new();
    for (ns, name, port) in &backends {
        resources.push(json!({
            "@type": CLUSTER,
            "edsClusterConfig": {"serviceName": format!("{ns}/{name}:{port}")},
            "name": format!("{ns}:{name}:{port}"),
            "outlierDetection": {"splitExternalLocalOriginErrors": true},
            "type": "EDS"
        }));
        backend_services.entry((ns.clone(), name.clone())).or_default().insert(*port);
    }
    let backend_services: Vec<Value> = backend_services
        .into_iter()
        .map(|((ns, name), ports)| {
            json!({"name": name, "namespace": ns, "number": ports.iter().map(u32::to_string).collect::<Vec<_>>()})
        })
        .collect();
    let mut spec = serde_json::Map::new();
    if !backend_services.is_empty() {
        spec.insert("backendServices".into(), json!(backend_services));
    }
    spec.insert("resources".into(), json!(resources));
    spec.insert("services".into(), json!(services));
    Some(json!({
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumEnvoyConfig",
        "metadata": {
            "annotations": {"cec.cilium.io/use-original-source-address": "false"},
            "labels": {"gateway.networking.k8s.io/gateway-name": owner.name},
            "name": cec_name,
            "namespace": owner.namespace,
            "ownerReferences": [{"apiVersion": "gateway.networking.k8s.io/v1", "controller": true, "kind": "Gateway", "name": owner.name, "uid": ""}]
        },
        "spec": spec
    }))
}
