//! Deterministic tenant-scale Envoy configuration, in every input format xdsck reads.
//!
//! The layout is Cilium's TenantGateway (see docs/architecture.md and the README's speed section): per tenant a TLS-terminating
//! chain for `*.<apex>` and `<apex>` (one chain per certificate, as Cilium groups them),
//! optional per-hostname TLS chains, and TLS-passthrough `tcp_proxy` chains for `api`,
//! `vm-exportproxy` and `cdi-uploadproxy`. Same arguments, same bytes: the generator has no
//! randomness, injected problems are placed by tenant index.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{Value, json};

/// Which document to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Envoy admin `/config_dump` JSON (dynamic listeners, active state).
    ConfigDump,
    BootstrapJson,
    BootstrapYaml,
    /// One CiliumEnvoyConfig per listener, a YAML stream (unqualified names, no addresses).
    Cec,
}

/// How listeners are cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One 443 listener holds every tenant's chains.
    Shared,
    /// One listener per tenant.
    PerTenant,
}

/// Shapes that stress one part of the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The TenantGateway layout above.
    Tenants,
    /// One wildcard over N exact names (N = tenants).
    WildcardFanout,
    /// N chains with the same SNI, told apart by source port.
    SameSni,
    /// One chain with N server names.
    ManyNames,
    /// One route table of N virtual hosts with the same domain (N - 1 `duplicate-domain`s).
    SameDomain,
    /// One virtual host of N routes, every one after the first covered by it.
    CoveredRoutes,
    /// One TLS chain of N wildcard server names, its table N exact domains none of them takes.
    WildcardNames,
    /// N TLS chains of one server name each, all on one RDS table of N virtual hosts that take
    /// none of them (config_dump only: the table is in `dynamic_route_configs`).
    SharedTable,
    /// N listeners on one address.
    SharedAddress,
}

/// Everything that decides the output.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub tenants: usize,
    pub format: Format,
    pub layout: Layout,
    pub shape: Shape,
    /// Extra TLS-terminating hostname chains per tenant.
    pub hostnames: usize,
    /// Every `duplicate_every`-th tenant gets its `api` passthrough chain twice (Envoy rejects).
    pub duplicate_every: Option<usize>,
    /// Every `blackhole_every`-th tenant's `api` chain demands ALPN h2 (HTTP/1.1 clients lost).
    pub blackhole_every: Option<usize>,
    /// JSON formats on one line, as `json.dump`, `json.Marshal` and `jq -c` write them, instead
    /// of indented like Envoy's admin output.
    pub minified: bool,
    /// Where the TLS-terminating chains' HCMs find their routes.
    pub routes: Routes,
}

/// How the tenants' HCMs get their route tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routes {
    /// `rds` naming a table the input does not hold (what Cilium's agent sends over ADS).
    External,
    /// Per TLS-terminating chain an inline `route_config` (virtual hosts for the chain's
    /// names, a few routes each), and the static clusters those routes name.
    Inline,
    /// config_dump only: `rds` per chain and the tables in `dynamic_route_configs`, the
    /// clusters in a `ClustersConfigDump`.
    Rds,
}

impl Spec {
    pub fn tenants(tenants: usize, format: Format) -> Self {
        Spec {
            tenants,
            format,
            layout: Layout::Shared,
            shape: Shape::Tenants,
            hostnames: 0,
            duplicate_every: None,
            blackhole_every: None,
            minified: false,
            routes: Routes::External,
        }
    }
}

const PASSTHROUGH: [&str; 3] = ["api", "vm-exportproxy", "cdi-uploadproxy"];

fn apex(t: usize) -> String {
    format!("tenant-{t}.example.com")
}

fn hcm(stat: &str, route: &str) -> Value {
    hcm_with(
        stat,
        "rds",
        json!({"route_config_name": route, "config_source": {"ads": {}, "resource_api_version": "V3"}}),
    )
}

/// An HCM whose routes come from `key` (`rds` or `route_config`).
fn hcm_with(stat: &str, key: &str, routes: Value) -> Value {
    let mut cfg = json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": stat,
    });
    cfg[key] = routes;
    cfg["use_remote_address"] = json!(true);
    cfg["http_filters"] = json!([{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]);
    json!({"name": "envoy.filters.network.http_connection_manager", "typed_config": cfg})
}

/// The clusters a tenant's routes name.
const SERVICES: [&str; 3] = ["web", "api", "auth"];

fn service(t: usize, svc: &str) -> String {
    format!("tenant-{t}/{svc}:8080")
}

/// A route as Cilium writes one for an HTTPRoute rule.
fn route(m: Value, cluster: &str) -> Value {
    json!({"match": m, "route": {"cluster": cluster, "max_stream_duration": {"max_stream_duration": "0s"}}})
}

/// The route table of one TLS-terminating chain: a virtual host per server name (and the name
/// with `:443`, so a Host that spells out the port is routed too), HTTPRoute-style rules in Cilium's order
/// (exact paths, then longer prefixes, then `/`), every one reaching a cluster of the tenant.
fn route_table(t: usize, name: &str, hosts: &[String]) -> Value {
    let c = |s: &str| service(t, s);
    let virtual_hosts: Vec<Value> = hosts
        .iter()
        .map(|h| {
            let routes = vec![
                route(json!({"path": "/login", "headers": [{"name": ":method", "string_match": {"exact": "POST"}}]}), &c("auth")),
                route(json!({"prefix": "/api/", "headers": [{"name": "x-api-version", "string_match": {"exact": "v2"}}]}), &c("api")),
                route(json!({"path_separated_prefix": "/api"}), &c("api")),
                json!({"match": {"prefix": "/static/"}, "route": {"weighted_clusters": {"clusters": [{"name": c("web"), "weight": 90}, {"name": c("api"), "weight": 10}]}}}),
                route(json!({"prefix": "/"}), &c("web")),
            ];
            json!({"name": h, "domains": [h, format!("{h}:443")], "routes": routes})
        })
        .collect();
    json!({"name": name, "virtual_hosts": virtual_hosts})
}

/// The static clusters of one tenant's services.
fn clusters(t: usize) -> impl Iterator<Item = Value> {
    SERVICES.into_iter().map(move |svc| {
        let name = service(t, svc);
        let ip = format!("10.{}.{}.{}", t / 65536 % 256, t / 256 % 256, t % 256);
        json!({
            "name": name,
            "type": "STATIC",
            "connect_timeout": "5s",
            "load_assignment": {"cluster_name": name, "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": ip, "port_value": 8080}}}}]}]},
        })
    })
}

/// The HCM of a TLS-terminating chain for `hosts`, with its table where the spec puts it.
fn secure_hcm(spec: &Spec, t: usize, stat: &str, table: &str, hosts: &[String]) -> Value {
    match spec.routes {
        Routes::External => hcm(stat, &format!("tenant-{t}/listener-secure")),
        Routes::Inline => hcm_with(stat, "route_config", route_table(t, table, hosts)),
        Routes::Rds => hcm(stat, table),
    }
}

/// The RDS tables of `Routes::Rds`, in chain order: (name, hosts) per TLS-terminating chain.
fn tenant_tables(spec: &Spec, t: usize) -> Vec<(String, Vec<String>)> {
    let apex = apex(t);
    let mut v = vec![(format!("tenant-{t}/listener-secure"), vec![format!("*.{apex}"), apex.clone()])];
    v.extend((0..spec.hostnames).map(|h| (format!("tenant-{t}/listener-secure-{h}"), vec![format!("app-{h}.{apex}")])));
    v
}

/// A route that answers itself, so that a shape needs no clusters.
fn answer(m: Value) -> Value {
    json!({"match": m, "direct_response": {"status": 200}})
}

/// A virtual host of the shapes that grow route tables.
fn virtual_host(name: &str, domains: Value, routes: Vec<Value>) -> Value {
    json!({"name": name, "domains": domains, "routes": routes})
}

/// The RDS table of `Shape::SharedTable`: N virtual hosts whose domains no chain's name is.
fn shared_table(spec: &Spec) -> Value {
    let hosts = (0..spec.tenants).map(|i| {
        virtual_host(
            &format!("other-{i}"),
            json!([format!("other-{i}.example.com")]),
            vec![answer(json!({"prefix": "/"}))],
        )
    });
    json!({
        "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
        "name": "shared",
        "virtual_hosts": hosts.collect::<Vec<_>>(),
    })
}

fn tls_socket(secret: &str) -> Value {
    json!({
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
            "common_tls_context": {
                "alpn_protocols": ["h2", "http/1.1"],
                "tls_certificate_sds_secret_configs": [{"name": secret, "sds_config": {"ads": {}, "resource_api_version": "V3"}}]
            }
        }
    })
}

fn tcp_proxy(stat: &str, cluster: &str) -> Value {
    json!({
        "name": "envoy.filters.network.tcp_proxy",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
            "stat_prefix": stat,
            "cluster": cluster
        }
    })
}

/// The chains of one tenant, in Cilium's order.
fn tenant_chains(spec: &Spec, t: usize, out: &mut Vec<Value>) {
    let apex = apex(t);
    let tables = tenant_tables(spec, t);
    let (table, hosts) = &tables[0];
    out.push(json!({
        "name": format!("https-{t}"),
        "filter_chain_match": {"server_names": hosts, "transport_protocol": "tls"},
        "filters": [secure_hcm(spec, t, &format!("listener-secure-{t}"), table, hosts)],
        "transport_socket": tls_socket(&format!("cilium-secrets/tenant-{t}-wildcard-tls")),
    }));
    for (h, (table, hosts)) in tables[1..].iter().enumerate() {
        out.push(json!({
            "name": format!("https-{t}-app-{h}"),
            "filter_chain_match": {"server_names": hosts, "transport_protocol": "tls"},
            "filters": [secure_hcm(spec, t, &format!("listener-secure-{t}-{h}"), table, hosts)],
            "transport_socket": tls_socket(&format!("cilium-secrets/tenant-{t}-app-{h}-tls")),
        }));
    }
    for p in PASSTHROUGH {
        let host = format!("{p}.{apex}");
        let mut m = json!({"server_names": [host], "transport_protocol": "tls"});
        if p == "api" && spec.blackhole_every.is_some_and(|n| t % n == 0) {
            m["application_protocols"] = json!(["h2"]);
        }
        let chain = json!({
            "filter_chain_match": m,
            "filters": [tcp_proxy(&format!("tls-passthrough:{host}"), &format!("tenant-{t}:{p}:443"))],
        });
        if p == "api" && spec.duplicate_every.is_some_and(|n| t % n == 0) {
            out.push(chain.clone());
        }
        out.push(chain);
    }
}

fn listener(name: &str, address: Option<(&str, u16)>, chains: Vec<Value>) -> Value {
    let mut l = json!({
        "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
        "name": name,
        "listener_filters": [{"name": "envoy.filters.listener.tls_inspector", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"}}],
        "filter_chains": chains,
    });
    if let Some((ip, port)) = address {
        l["address"] = json!({"socket_address": {"address": ip, "port_value": port}});
    }
    l
}

/// The listeners of a spec (without addresses when the format is a CEC).
pub fn listeners(spec: &Spec) -> Vec<Value> {
    let addressed = spec.format != Format::Cec;
    let addr = |i: usize| -> Option<(String, u16)> {
        // Distinct loopback addresses keep 100k per-tenant listeners from sharing an address.
        addressed.then(|| (format!("127.{}.{}.{}", 1 + i / 65536, (i / 256) % 256, i % 256), 443))
    };
    let with_addr = |name: &str, i: usize, chains: Vec<Value>| {
        let a = addr(i);
        listener(name, a.as_ref().map(|(ip, port)| (ip.as_str(), *port)), chains)
    };
    match spec.shape {
        Shape::Tenants => match spec.layout {
            Layout::Shared => {
                let mut chains = Vec::with_capacity(spec.tenants * (4 + spec.hostnames));
                for t in 0..spec.tenants {
                    tenant_chains(spec, t, &mut chains);
                }
                vec![with_addr("gateway/tenants/listener-443", 0, chains)]
            }
            Layout::PerTenant => (0..spec.tenants)
                .map(|t| {
                    let mut chains = Vec::new();
                    tenant_chains(spec, t, &mut chains);
                    with_addr(&format!("tenant-{t}/cilium-gateway-tenant/listener"), t, chains)
                })
                .collect(),
        },
        Shape::WildcardFanout => {
            let mut chains = vec![json!({
                "name": "wildcard",
                "filter_chain_match": {"server_names": ["*.example.com"], "transport_protocol": "tls"},
                "filters": [tcp_proxy("wildcard", "wildcard:443")],
            })];
            chains.extend((0..spec.tenants).map(|i| {
                json!({
                    "name": format!("exact-{i}"),
                    "filter_chain_match": {"server_names": [format!("host-{i}.example.com")], "transport_protocol": "tls"},
                    "filters": [tcp_proxy(&format!("exact-{i}"), &format!("exact-{i}:443"))],
                })
            }));
            vec![with_addr("fanout", 0, chains)]
        }
        Shape::SameSni => {
            let chains = (0..spec.tenants)
                .map(|i| {
                    json!({
                        "name": format!("port-{i}"),
                        "filter_chain_match": {"server_names": ["api.example.com"], "source_ports": [1 + i % 65535], "destination_port": 443 + (i / 65535)},
                        "filters": [tcp_proxy(&format!("port-{i}"), "api:443")],
                    })
                })
                .collect();
            vec![with_addr("same-sni", 0, chains)]
        }
        Shape::ManyNames => {
            let names: Vec<String> = (0..spec.tenants).map(|i| format!("name-{i}.example.com")).collect();
            let chains = vec![json!({
                "name": "many-names",
                "filter_chain_match": {"server_names": names, "transport_protocol": "tls"},
                "filters": [tcp_proxy("many", "many:443")],
            })];
            vec![with_addr("many-names", 0, chains)]
        }
        Shape::SameDomain => {
            let hosts: Vec<Value> = (0..spec.tenants)
                .map(|i| {
                    virtual_host(
                        &format!("host-{i}"),
                        json!(["same.example.com"]),
                        vec![answer(json!({"prefix": "/"}))],
                    )
                })
                .collect();
            let table = json!({"name": "same-domain", "virtual_hosts": hosts});
            vec![with_addr("same-domain", 0, vec![json!({"filters": [hcm_with("same", "route_config", table)]})])]
        }
        Shape::CoveredRoutes => {
            let routes = std::iter::once(answer(json!({"prefix": "/"})))
                .chain((0..spec.tenants).map(|i| answer(json!({"prefix": format!("/path-{i}/")}))))
                .collect();
            let table = json!({"name": "covered", "virtual_hosts": [virtual_host("all", json!(["*"]), routes)]});
            vec![with_addr("covered-routes", 0, vec![json!({"filters": [hcm_with("covered", "route_config", table)]})])]
        }
        Shape::WildcardNames => {
            let names: Vec<String> = (0..spec.tenants).map(|i| format!("*.zone-{i}.example.com")).collect();
            let hosts: Vec<Value> = (0..spec.tenants)
                .map(|i| {
                    let domain = format!("www.other-{i}.example.com");
                    virtual_host(&domain, json!([domain]), vec![answer(json!({"prefix": "/"}))])
                })
                .collect();
            let table = json!({"name": "wildcard-names", "virtual_hosts": hosts});
            let chain = json!({
                "name": "wildcard-names",
                "filter_chain_match": {"server_names": names, "transport_protocol": "tls"},
                "filters": [hcm_with("wildcards", "route_config", table)],
                "transport_socket": tls_socket("wildcard-names-tls"),
            });
            vec![with_addr("wildcard-names", 0, vec![chain])]
        }
        Shape::SharedTable => {
            let chains = (0..spec.tenants)
                .map(|i| {
                    json!({
                        "name": format!("host-{i}"),
                        "filter_chain_match": {"server_names": [format!("host-{i}.example.com")], "transport_protocol": "tls"},
                        "filters": [hcm(&format!("host-{i}"), "shared")],
                        "transport_socket": tls_socket(&format!("host-{i}-tls")),
                    })
                })
                .collect();
            vec![with_addr("shared-table", 0, chains)]
        }
        Shape::SharedAddress => (0..spec.tenants)
            .map(|i| {
                let chains = vec![json!({"filters": [tcp_proxy(&format!("shared-{i}"), "shared:443")]})];
                listener(&format!("shared-address-{i}"), addressed.then_some(("0.0.0.0", 443)), chains)
            })
            .collect(),
    }
}

/// Envoy's own config_dump style, pretty JSON indented by one space, or all on one line.
fn to_writer(out: &mut impl Write, v: &Value, minified: bool) -> io::Result<()> {
    if minified {
        return serde_json::to_writer(out, v).map_err(io::Error::other);
    }
    let mut ser = serde_json::Serializer::with_formatter(out, serde_json::ser::PrettyFormatter::with_indent(b" "));
    serde::Serialize::serialize(v, &mut ser).map_err(io::Error::other)
}

/// The clusters every tenant's routes name (CEC streams carry none: the Cilium agent makes them).
fn all_clusters(spec: &Spec) -> impl Iterator<Item = Value> {
    (0..spec.tenants).flat_map(clusters)
}

/// The head of a config_dump entry of type `kind` up to its list `field`.
fn dump_head(kind: &str, field: &str, minified: bool) -> Vec<u8> {
    if minified {
        format!(",{{\"@type\":\"type.googleapis.com/envoy.admin.v3.{kind}\",\"{field}\":[").into_bytes()
    } else {
        format!(", {{\"@type\": \"type.googleapis.com/envoy.admin.v3.{kind}\", \"{field}\": [\n").into_bytes()
    }
}

/// A list written element by element between `head` and `tail`.
fn section(
    out: &mut impl Write,
    head: &[u8],
    sep: &[u8],
    items: impl Iterator<Item = Value>,
    tail: &[u8],
    minified: bool,
) -> io::Result<()> {
    out.write_all(head)?;
    for (i, v) in items.enumerate() {
        if i > 0 {
            out.write_all(sep)?;
        }
        to_writer(&mut *out, &v, minified)?;
    }
    out.write_all(tail)
}

/// Writes the spec's document. Listeners are written one at a time, so a 175 MB config is never
/// held as one `Value`.
pub fn write(spec: &Spec, out: &mut impl Write) -> io::Result<()> {
    if (spec.routes == Routes::Rds || spec.shape == Shape::SharedTable) && spec.format != Format::ConfigDump {
        return Err(io::Error::other("RDS route tables are written in a config_dump only"));
    }
    let listeners = listeners(spec);
    match spec.format {
        Format::ConfigDump => {
            let (head, sep, tail): (&[u8], &[u8], &[u8]) = if spec.minified {
                (b"{\"configs\":[{\"@type\":\"type.googleapis.com/envoy.admin.v3.ListenersConfigDump\",\"version_info\":\"1\",\"dynamic_listeners\":[", b",", b"]}]}")
            } else {
                (b"{\"configs\": [{\"@type\": \"type.googleapis.com/envoy.admin.v3.ListenersConfigDump\", \"version_info\": \"1\", \"dynamic_listeners\": [\n", b",\n", b"]}]}\n")
            };
            out.write_all(head)?;
            for (i, l) in listeners.iter().enumerate() {
                if i > 0 {
                    out.write_all(sep)?;
                }
                let entry = json!({"name": l["name"], "active_state": {"version_info": "1", "listener": l, "last_updated": "2026-11-30T00:00:00Z"}});
                to_writer(&mut *out, &entry, spec.minified)?;
            }
            out.write_all(&tail[..2])?;
            if spec.routes != Routes::External {
                let head = dump_head("ClustersConfigDump", "static_clusters", spec.minified);
                // A dump's clusters are Anys, `@type` first, as Envoy writes them.
                let entries = all_clusters(spec).map(|c| {
                    let mut any = serde_json::Map::new();
                    any.insert("@type".into(), json!("type.googleapis.com/envoy.config.cluster.v3.Cluster"));
                    any.extend(c.as_object().cloned().unwrap_or_default());
                    json!({"cluster": any, "last_updated": "2026-11-30T00:00:00Z"})
                });
                section(out, &head, sep, entries, b"]}", spec.minified)?;
            }
            if spec.routes == Routes::Rds {
                let head = dump_head("RoutesConfigDump", "dynamic_route_configs", spec.minified);
                let entries = (0..spec.tenants).flat_map(|t| {
                    tenant_tables(spec, t).into_iter().map(move |(name, hosts)| {
                        let mut table = route_table(t, &name, &hosts);
                        table.as_object_mut().expect("an object").insert(
                            "@type".into(),
                            json!("type.googleapis.com/envoy.config.route.v3.RouteConfiguration"),
                        );
                        json!({"version_info": "1", "route_config": table, "last_updated": "2026-11-30T00:00:00Z"})
                    })
                });
                section(out, &head, sep, entries, b"]}", spec.minified)?;
            }
            if spec.shape == Shape::SharedTable {
                let head = dump_head("RoutesConfigDump", "dynamic_route_configs", spec.minified);
                let entry = json!({"version_info": "1", "route_config": shared_table(spec), "last_updated": "2026-11-30T00:00:00Z"});
                section(out, &head, sep, std::iter::once(entry), b"]}", spec.minified)?;
            }
            out.write_all(&tail[2..])
        }
        Format::BootstrapJson => {
            let (head, sep, tail): (&[u8], &[u8], &[u8]) = if spec.minified {
                (
                    b"{\"node\":{\"id\":\"bench\",\"cluster\":\"bench\"},\"static_resources\":{\"listeners\":[",
                    b",",
                    b"]}}",
                )
            } else {
                (b"{\"node\": {\"id\": \"bench\", \"cluster\": \"bench\"}, \"static_resources\": {\"listeners\": [\n", b",\n", b"]}}\n")
            };
            out.write_all(head)?;
            for (i, l) in listeners.iter().enumerate() {
                if i > 0 {
                    out.write_all(sep)?;
                }
                let mut l = l.clone();
                if let Some(o) = l.as_object_mut() {
                    o.remove("@type");
                }
                to_writer(&mut *out, &l, spec.minified)?;
            }
            out.write_all(&tail[..1])?;
            if spec.routes == Routes::Inline {
                let head: &[u8] = if spec.minified { b",\"clusters\":[" } else { b", \"clusters\": [\n" };
                section(out, head, sep, all_clusters(spec), b"]", spec.minified)?;
            }
            out.write_all(&tail[1..])
        }
        Format::BootstrapYaml => {
            out.write_all(b"node:\n  id: bench\n  cluster: bench\nstatic_resources:\n  listeners:\n")?;
            for l in &listeners {
                let mut l = l.clone();
                if let Some(o) = l.as_object_mut() {
                    o.remove("@type");
                }
                let mut s = String::new();
                yaml_item(&l, 2, &mut s);
                out.write_all(s.as_bytes())?;
            }
            if spec.routes == Routes::Inline {
                out.write_all(b"  clusters:\n")?;
                for c in all_clusters(spec) {
                    let mut s = String::new();
                    yaml_item(&c, 2, &mut s);
                    out.write_all(s.as_bytes())?;
                }
            }
            Ok(())
        }
        Format::Cec => {
            for (i, l) in listeners.iter().enumerate() {
                let cec = json!({
                    "apiVersion": "cilium.io/v2",
                    "kind": "CiliumEnvoyConfig",
                    "metadata": {"name": format!("cilium-gateway-{i}"), "namespace": "tenants"},
                    "spec": {"services": [{"name": format!("cilium-gateway-{i}"), "namespace": "tenants"}], "resources": [l]},
                });
                let mut s = String::from("---\n");
                yaml_value(&cec, 0, &mut s);
                out.write_all(s.as_bytes())?;
            }
            Ok(())
        }
    }
}

/// Block-style YAML for a JSON value; strings are written as JSON strings, which YAML reads as
/// double-quoted scalars.
fn yaml_value(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let _ = write!(out, "{:indent$}{}:", "", serde_json::to_string(k).expect("a string serialises"));
                yaml_child(v, indent, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                yaml_item(item, indent, out);
            }
        }
        scalar => {
            let _ = writeln!(out, "{:indent$}{}", "", scalar);
        }
    }
}

fn yaml_child(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            yaml_value(v, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            yaml_value(v, indent, out);
        }
        scalar => {
            let _ = writeln!(out, " {scalar}");
        }
    }
}

/// One `- ` list item.
fn yaml_item(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (i, (k, v)) in map.iter().enumerate() {
                let lead = if i == 0 { "- " } else { "  " };
                let _ = write!(out, "{:indent$}{lead}{}:", "", serde_json::to_string(k).expect("a string serialises"));
                yaml_child(v, indent + 2, out);
            }
        }
        other => {
            let _ = write!(out, "{:indent$}- ", "");
            let mut s = String::new();
            yaml_value(other, 0, &mut s);
            out.push_str(s.trim_start());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdsck_core::{Options, SourceFile, Sources, analyze};

    fn generate(spec: &Spec) -> String {
        let mut buf = Vec::new();
        write(spec, &mut buf).expect("writes to memory");
        String::from_utf8(buf).expect("UTF-8")
    }

    fn inventory(spec: &Spec) -> (usize, usize, Vec<&'static str>) {
        let mut sources = Sources::new();
        sources.add(SourceFile::new("gen", generate(spec)));
        let report = analyze(&sources, &Options::default());
        assert_eq!(report.failed_inputs, 0, "{:?}", report.findings.first().map(|d| &d.message));
        let inv = report.inputs[0].inventory;
        let mut codes: Vec<&str> = report.findings.iter().map(|d| d.code()).collect();
        codes.dedup();
        (inv.listeners, inv.filter_chains, codes)
    }

    #[test]
    fn every_format_loads_to_the_same_listeners() {
        for format in [Format::ConfigDump, Format::BootstrapJson, Format::BootstrapYaml, Format::Cec] {
            for layout in [Layout::Shared, Layout::PerTenant] {
                let spec = Spec { layout, ..Spec::tenants(12, format) };
                let (listeners, chains, _) = inventory(&spec);
                assert_eq!(chains, 48, "{format:?} {layout:?}");
                assert_eq!(listeners, if layout == Layout::Shared { 1 } else { 12 }, "{format:?} {layout:?}");
            }
        }
    }

    #[test]
    fn injected_problems_are_found() {
        let spec = Spec { duplicate_every: Some(5), blackhole_every: Some(4), ..Spec::tenants(20, Format::ConfigDump) };
        let (_, chains, codes) = inventory(&spec);
        assert_eq!(chains, 84);
        assert!(codes.contains(&"XDS101"), "{codes:?}");
        // A listener Envoy rejects has no traffic to lose: black holes need a clean listener.
        let spec = Spec { blackhole_every: Some(4), ..Spec::tenants(20, Format::ConfigDump) };
        assert!(inventory(&spec).2.contains(&"XDS201"));
    }

    #[test]
    fn minified_json_is_one_line_and_loads_like_the_pretty() {
        for format in [Format::ConfigDump, Format::BootstrapJson] {
            let pretty = Spec { duplicate_every: Some(3), ..Spec::tenants(12, format) };
            let minified = Spec { minified: true, ..pretty };
            assert_eq!(generate(&minified).lines().count(), 1, "{format:?}");
            let a: Value = serde_json::from_str(&generate(&pretty)).expect("JSON");
            let b: Value = serde_json::from_str(&generate(&minified)).expect("JSON");
            assert_eq!(a, b, "{format:?}");
            assert_eq!(inventory(&pretty), inventory(&minified), "{format:?}");
        }
    }

    #[test]
    fn route_tables_add_no_findings_and_one_table_per_tls_chain() {
        let shapes = [
            (Format::BootstrapJson, Routes::Inline),
            (Format::BootstrapYaml, Routes::Inline),
            (Format::ConfigDump, Routes::Inline),
            (Format::ConfigDump, Routes::Rds),
        ];
        for (format, routes) in shapes {
            for minified in [false, true] {
                let plain = Spec { hostnames: 1, minified, ..Spec::tenants(6, format) };
                let spec = Spec { routes, ..plain };
                assert_eq!(inventory(&spec), inventory(&plain), "{format:?} {routes:?}");
                let mut sources = Sources::new();
                sources.add(SourceFile::new("gen", generate(&spec)));
                let document =
                    xdsck_core::load::Document::new(xdsck_core::SourceId(0), sources.get(xdsck_core::SourceId(0)));
                let snapshot =
                    xdsck_core::model::Snapshot { inputs: vec![document.load().expect("loads")], one_envoy: false };
                let tables = xdsck_core::model::route::RouteTables::of(&snapshot);
                let served = tables.hcms.iter().filter_map(|h| tables.table_of(0, h)).count();
                assert_eq!(served, 12, "{format:?} {routes:?}");
            }
        }
        assert!(
            write(&Spec { routes: Routes::Rds, ..Spec::tenants(1, Format::BootstrapJson) }, &mut Vec::new()).is_err()
        );
    }

    #[test]
    fn each_growing_shape_makes_its_findings_once_per_element() {
        // (shape, the rule it grows, findings at 20): what the linearity script counts grows
        // with the findings it is built for, not with something else.
        let shapes = [
            (Shape::SameDomain, "duplicate-domain", 19),
            (Shape::CoveredRoutes, "shadowed-route", 20),
            (Shape::WildcardNames, "unrouted-server-name", 20),
            (Shape::SharedTable, "unrouted-server-name", 20),
            (Shape::SharedAddress, "duplicate-listener-address", 19),
        ];
        for (shape, rule, count) in shapes {
            for format in [Format::ConfigDump, Format::BootstrapJson] {
                let spec = Spec { shape, ..Spec::tenants(20, format) };
                if shape == Shape::SharedTable && format != Format::ConfigDump {
                    assert!(write(&spec, &mut Vec::new()).is_err());
                    continue;
                }
                let mut sources = Sources::new();
                sources.add(SourceFile::new("gen", generate(&spec)));
                let report = analyze(&sources, &Options::default());
                assert_eq!(report.failed_inputs, 0, "{shape:?} {format:?}");
                let found = report.findings.iter().filter(|d| d.rule.name == rule).count();
                assert_eq!(found, count, "{shape:?} {format:?}");
            }
        }
    }

    #[test]
    fn output_is_deterministic() {
        let spec = Spec::tenants(5, Format::Cec);
        assert_eq!(generate(&spec), generate(&spec));
    }
}
