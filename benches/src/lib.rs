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
        }
    }
}

const PASSTHROUGH: [&str; 3] = ["api", "vm-exportproxy", "cdi-uploadproxy"];

fn apex(t: usize) -> String {
    format!("tenant-{t}.example.com")
}

fn hcm(stat: &str, route: &str) -> Value {
    json!({
        "name": "envoy.filters.network.http_connection_manager",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": stat,
            "rds": {"route_config_name": route, "config_source": {"ads": {}, "resource_api_version": "V3"}},
            "use_remote_address": true,
            "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]
        }
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
    out.push(json!({
        "name": format!("https-{t}"),
        "filter_chain_match": {"server_names": [format!("*.{apex}"), apex], "transport_protocol": "tls"},
        "filters": [hcm(&format!("listener-secure-{t}"), &format!("tenant-{t}/listener-secure"))],
        "transport_socket": tls_socket(&format!("cilium-secrets/tenant-{t}-wildcard-tls")),
    }));
    for h in 0..spec.hostnames {
        let host = format!("app-{h}.{apex}");
        out.push(json!({
            "name": format!("https-{t}-app-{h}"),
            "filter_chain_match": {"server_names": [host], "transport_protocol": "tls"},
            "filters": [hcm(&format!("listener-secure-{t}-{h}"), &format!("tenant-{t}/listener-secure"))],
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

/// Writes the spec's document. Listeners are written one at a time, so a 175 MB config is never
/// held as one `Value`.
pub fn write(spec: &Spec, out: &mut impl Write) -> io::Result<()> {
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
            out.write_all(tail)
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
            out.write_all(tail)
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
    fn output_is_deterministic() {
        let spec = Spec::tenants(5, Format::Cec);
        assert_eq!(generate(&spec), generate(&spec));
    }
}
