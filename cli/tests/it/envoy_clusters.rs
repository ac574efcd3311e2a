//! What `--mode validate` cannot show about route clusters, on a live Envoy 1.40 fed CDS and RDS
//! from files: an RDS table validates its clusters only with `validate_clusters: true`, and then
//! a warming cluster counts. Each RDS answer is also given to xdsck with the CDS answer beside
//! it; xdsck has an `unknown-cluster` error exactly for the update Envoy refuses, with Envoy's
//! text.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use support::envoy::LiveEnvoy;

const CLUSTER: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
const ROUTES: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

/// Writes `value` to `path` the way Envoy's file watcher wants it: a rename over the old file.
fn put(path: &Path, value: &Value) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn file_source(path: &Path) -> Value {
    json!({"path_config_source": {"path": path}, "resource_api_version": "V3"})
}

fn cds(version: u32, names: &[&str]) -> Value {
    let clusters: Vec<Value> = names
        .iter()
        .map(|n| match *n {
            // EDS from a server that never answers: the cluster stays warming.
            "warm" => json!({"@type": CLUSTER, "name": n, "type": "EDS", "connect_timeout": "1s",
                "eds_cluster_config": {"eds_config": {"resource_api_version": "V3", "initial_fetch_timeout": "300s",
                    "api_config_source": {"api_type": "GRPC", "transport_api_version": "V3",
                        "grpc_services": [{"envoy_grpc": {"cluster_name": "silent"}}]}}}}),
            _ => json!({"@type": CLUSTER, "name": n, "type": "STATIC", "connect_timeout": "1s"}),
        })
        .collect();
    json!({"version_info": version.to_string(), "type_url": CLUSTER, "resources": clusters})
}

fn rds(version: u32, name: &str, validate: Option<bool>, cluster: &str) -> Value {
    let mut table = json!({"@type": ROUTES, "name": name, "virtual_hosts": [{"name": "all", "domains": ["*"],
        "routes": [{"match": {"prefix": "/"}, "route": {"cluster": cluster}}]}]});
    if let Some(v) = validate {
        table["validate_clusters"] = json!(v);
    }
    json!({"version_info": version.to_string(), "type_url": ROUTES, "resources": [table]})
}

/// `update_success` and `update_rejected` of one RDS table, once Envoy has taken `updates`.
fn rds_counters(envoy: &LiveEnvoy, name: &str, updates: u64) -> (u64, u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stats = envoy.get(&format!("/stats?filter=rds\\.{name}\\.update_")).unwrap_or_default();
        let count = |what: &str| {
            stats
                .lines()
                .find_map(|l| l.strip_prefix(&format!("http.rt.rds.{name}.{what}: ")))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let (ok, rejected) = (count("update_success"), count("update_rejected"));
        if ok + rejected >= updates || Instant::now() > deadline {
            return (ok, rejected);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// xdsck's `unknown-cluster` texts for an RDS answer given with a CDS answer.
fn xdsck_unknown_clusters(dir: &Path, cds: &Value, rds: &Value) -> Vec<String> {
    let (c, r) = (dir.join("xdsck-cds.json"), dir.join("xdsck-rds.json"));
    std::fs::write(&c, cds.to_string()).unwrap();
    std::fs::write(&r, rds.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["--format", "json", "--fail-on", "never", "--one-envoy"])
        .args([&c, &r])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", support::describe("xdsck", &out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    findings
        .iter()
        .filter(|f| f["rule"] == "unknown-cluster")
        .map(|f| f["envoy_error"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn rds_tables_validate_clusters_only_when_asked_and_warming_clusters_count() {
    let envoy_bin = support::envoy::binary();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    let cds_path = d.join("cds.json");
    put(&cds_path, &cds(1, &["api"]));
    // (table, validate_clusters, cluster named at start)
    let tables = [("unset", None, "missing"), ("asked", Some(true), "missing"), ("warming", Some(true), "api")];
    let mut listeners = Vec::new();
    for (name, validate, cluster) in &tables {
        let path = d.join(format!("{name}.json"));
        put(&path, &rds(1, name, *validate, cluster));
        listeners.push(json!({"name": name, "address": {"socket_address": {"address": "127.0.0.1", "port_value": 0}},
            "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": "rt",
                "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
                "rds": {"route_config_name": name, "config_source": file_source(&path)}}}]}]}));
    }
    let silent = json!({"name": "silent", "type": "STATIC", "connect_timeout": "1s",
        "load_assignment": {"cluster_name": "silent", "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 1}}}}]}]},
        "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": {"http2_protocol_options": {}}}}});
    let bootstrap = json!({
        "node": {"id": "xdsck", "cluster": "xdsck"},
        "admin": {"address": {"pipe": {"path": LiveEnvoy::admin_socket(&d)}}},
        "dynamic_resources": {"cds_config": file_source(&cds_path)},
        "static_resources": {"listeners": listeners, "clusters": [silent]},
    });
    let envoy = LiveEnvoy::start(&envoy_bin, dir, &bootstrap).unwrap();

    // Unset on an RDS table: not validated. Asked: refused, with the text xdsck gives.
    assert_eq!(rds_counters(&envoy, "unset", 1), (1, 0), "{}", envoy.log_tail());
    assert_eq!(rds_counters(&envoy, "asked", 1), (0, 1), "{}", envoy.log_tail());
    let log = std::fs::read_to_string(envoy.dir().join("envoy.log")).unwrap();
    assert!(log.contains("route: unknown cluster 'missing'"), "{log}");
    let cds1 = cds(1, &["api"]);
    assert!(xdsck_unknown_clusters(envoy.dir(), &cds1, &rds(1, "unset", None, "missing")).is_empty());
    assert_eq!(
        xdsck_unknown_clusters(envoy.dir(), &cds1, &rds(1, "asked", Some(true), "missing")),
        ["route: unknown cluster 'missing'"]
    );

    // A cluster still warming is one Envoy has: an update naming it is taken.
    let cds2 = cds(2, &["api", "warm"]);
    put(&cds_path, &cds2);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !envoy.get("/stats?filter=cluster_manager.warming_clusters").unwrap_or_default().contains(": 1") {
        assert!(Instant::now() < deadline, "the EDS cluster never warmed: {}", envoy.log_tail());
        std::thread::sleep(Duration::from_millis(50));
    }
    let warming = rds(2, "warming", Some(true), "warm");
    put(&envoy.dir().join("warming.json"), &warming);
    assert_eq!(rds_counters(&envoy, "warming", 2), (2, 0), "{}", envoy.log_tail());
    assert!(xdsck_unknown_clusters(envoy.dir(), &cds2, &warming).is_empty());
}
