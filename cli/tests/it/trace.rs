//! `xdsck trace` as a user reads it: the keys that lost, one spelling for a missing value,
//! warming and draining listeners, and exit status 1 when Envoy closes the connection.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn trace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xdsck")).current_dir(workspace()).arg("trace").args(args).output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

const H2: &str = "testdata/checks/match-blackhole/bad-exact-sni-requires-h2.yaml";
const DUMP: &str = "testdata/envoy/config_dump.json";

#[test]
fn a_closed_connection_exits_1_and_names_the_keys_that_lost() {
    let args =
        ["--dst", "127.0.0.1:10443", "--src", "192.0.2.1:50000", "--sni", "api.example.com", "--alpn", "http/1.1"];
    let out = trace(&[&[H2][..], &args].concat());
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("\n                                                        not h2: does not match http/1.1\n"),
        "{text}"
    );
    assert!(!text.contains("key(s)"), "{text}");
    assert!(text.contains("Envoy closes the connection"), "{text}");
    let out = trace(&[&[H2][..], &args, &["--format", "json"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "closed");
    let alpn = v["levels"].as_array().unwrap().iter().find(|l| l["level"] == "application_protocol").unwrap();
    assert_eq!(alpn["unmatched_keys"], serde_json::json!(["h2"]));

    // A chain takes it: exit 0.
    let out = trace(&[H2, "--dst", "127.0.0.1:10443", "--sni", "www.example.com"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("=> filter chain wildcard"));
}

#[test]
fn a_tcp_proxy_chain_names_its_cluster_and_routes_no_request() {
    // TLS passthrough: Envoy proxies the bytes to the cluster; nothing answers 404.
    let conn = ["--dst", "127.0.0.1:21001", "--sni", "api.tenant1.example.com"];
    let http = ["--host", "api.tenant1.example.com", "--path", "/v1"];
    let cluster = "gateway:tenant1-backend:443";
    let out = trace(&[&[DUMP][..], &conn].concat());
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "=> filter chain filter_chains[2]: tcp_proxy passes the connection to cluster '{cluster}'\n"
        )),
        "{text}"
    );
    let out = trace(&[&[DUMP][..], &conn, &http].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(!text.contains("404"), "{text}");
    assert!(
        text.ends_with(&format!("=> not routed: tcp_proxy passes the connection to cluster '{cluster}'\n")),
        "{text}"
    );
    let out = trace(&[&[DUMP][..], &conn, &http, &["--format", "json"]].concat());
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tcp_proxy"]["clusters"], serde_json::json!([cluster]));
    assert_eq!(v["http"]["tcp_proxy"]["clusters"], serde_json::json!([cluster]));
    assert_eq!(v["http"]["route"], Value::Null);
    // A chain with an http_connection_manager has none.
    let out = trace(&[DUMP, "--dst", "127.0.0.1:21001", "--sni", "www.tenant1.example.com", "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tcp_proxy"], Value::Null, "{v}");
}

#[test]
fn a_missing_value_has_one_spelling() {
    let out = trace(&[H2, "--dst", "127.0.0.1:10443", "--sni", "www.example.com"]);
    let text = stdout(&out);
    let connection = text.lines().nth(1).unwrap();
    assert_eq!(
        connection,
        "connection: dst 127.0.0.1:10443 src (not given) transport tls sni www.example.com alpn (none)"
    );
    assert!(text.contains("  source_ip             (not given) "), "{text}");
    assert!(text.contains("  application_protocol  (none) "), "{text}");
    assert!(!text.contains(" - "), "{text}");
}

#[test]
fn many_keys_that_lost_are_named_up_to_a_limit() {
    let mut yaml = String::from(
        "name: many\naddress: {socket_address: {address: 127.0.0.1, port_value: 443}}\nlistener_filters: [{name: envoy.filters.listener.tls_inspector}]\nfilter_chains:\n",
    );
    for i in 0..10 {
        yaml.push_str(&format!("- name: c{i}\n  filter_chain_match: {{server_names: [n{i}.example.com]}}\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = trace(&[path.to_str().unwrap(), "--dst", "127.0.0.1:443", "--sni", "other.example.com"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let named = text.lines().filter(|l| l.contains(": does not match other.example.com")).count();
    assert_eq!(named, 8, "{text}");
    assert!(text.contains("and 2 more, none of which matches"), "{text}");
}

#[test]
fn warming_and_draining_listeners_can_be_traced_and_say_they_do_not_serve() {
    let out = trace(&[DUMP, "--listener", "cilium/cilium-ingress/listener", "--dst", "127.0.0.1:21004"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.starts_with("listener cilium/cilium-ingress/listener "), "{text}");
    assert!(
        text.contains("note: listener 'cilium/cilium-ingress/listener' is warming: Envoy does not serve it yet"),
        "{text}"
    );

    let out = trace(&[
        DUMP,
        "--listener",
        "default/cilium-ingress-default-legacy/listener",
        "--dst",
        "127.0.0.1:21003",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["listener"], "default/cilium-ingress-default-legacy/listener");
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("is draining")), "{v}");

    // By address only what Envoy serves is taken; the error points at the warming one.
    let out = trace(&[DUMP, "--dst", "127.0.0.1:21004"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bound there but not served: 'cilium/cilium-ingress/listener' (warming)"), "{err}");
}

#[test]
fn graph_draws_svg_from_the_same_graph_as_dot() {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .current_dir(workspace())
        .args(["graph", H2, "--format", "svg"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let svg = stdout(&out);
    let dot = stdout(
        &Command::new(env!("CARGO_BIN_EXE_xdsck")).current_dir(workspace()).args(["graph", H2]).output().unwrap(),
    );
    // One box per DOT node, one curve per DOT edge.
    let boxes = svg.lines().filter(|l| l.starts_with("<g")).count();
    let nodes = dot.lines().filter(|l| l.contains("[label=")).count();
    assert_eq!(boxes, nodes, "{svg}\n{dot}");
    assert_eq!(
        svg.lines().filter(|l| l.starts_with("<path")).count(),
        dot.lines().filter(|l| l.contains(" -> ")).count()
    );
    assert!(svg.contains(">chain api-h2<") && svg.contains(">chain wildcard<"), "{svg}");
}

#[test]
fn a_listener_whose_last_update_was_rejected_says_so() {
    let out = trace(&[DUMP, "--listener", "gateway/cilium-gateway-tenant1/listener-9443", "--dst", "127.0.0.1:9443"]);
    let text = stdout(&out);
    assert!(
        text.contains("note: Envoy rejected the last update of listener 'gateway/cilium-gateway-tenant1/listener-9443' at 2026-11-30T23:04:37.214Z (error adding listener"),
        "{text}"
    );
    assert!(text.contains("this is the version it kept, not the one that was sent"), "{text}");
    // A listener without a rejected update has no such note.
    let out = trace(&[DUMP, "--dst", "127.0.0.1:21001", "--sni", "api.tenant1.example.com"]);
    assert!(!stdout(&out).contains("rejected"), "{}", stdout(&out));
}

#[test]
fn an_unnamed_listener_is_named_by_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unnamed.yaml");
    std::fs::write(
        &path,
        "static_resources:\n  listeners:\n  - address: {socket_address: {address: 127.0.0.1, port_value: 10443}}\n    filter_chains:\n    - filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: a, cluster: a}}]\n  clusters: [{name: a}]\n",
    )
    .unwrap();
    let out = trace(&[path.to_str().unwrap(), "--dst", "127.0.0.1:10443"]);
    assert!(stdout(&out).starts_with("listener listeners[0] ("), "{}", stdout(&out));
}

#[test]
fn a_host_that_starts_with_a_hyphen_is_a_value() {
    // `-bar.foo.com` is a legal Host Envoy routes (to `*` here: the table has none, so 404).
    let out = trace(&[
        "testdata/checks/shadowed-route/bad-catch-all-first.yaml",
        "--dst",
        "127.0.0.1:8080",
        "--host",
        "-bar.foo.com",
        "--path",
        "/x",
    ]);
    let text = stdout(&out);
    assert!(text.contains("Host \"-bar.foo.com\""), "{text}{}", String::from_utf8_lossy(&out.stderr));
}
