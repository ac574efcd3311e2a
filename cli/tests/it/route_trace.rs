//! `xdsck trace --host/--path` as a user reads it: the route table, the virtual host with the
//! buckets that lost, the routes tried in order, the action, the `http` object of the JSON
//! form, and exit status 1 when the request reaches no route (Envoy's 404).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn trace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xdsck")).current_dir(workspace()).arg("trace").args(args).output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

const SHADOWED: &str = "testdata/checks/shadowed-route/bad-catch-all-first.yaml";
const ORDERED: &str = "testdata/checks/shadowed-route/ok-ordered.yaml";
const DUMP: &str = "testdata/envoy/config_dump.json";

#[test]
fn routes_are_tried_in_order_and_the_winner_is_named() {
    let out = trace(&[ORDERED, "--dst", "127.0.0.1:8080", "--host", "API.example.com", "--path", "/v1/users"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("routes[0] does not match: path \"/health\" does not match path \"/v1/users\""), "{text}");
    // The header route is passed over for want of its header, the runtime fraction is not
    // evaluated: the answer is undecided there, not guessed.
    assert!(text.contains("routes[1] does not match: header x-canary == \"1\""), "{text}");
    assert!(text.contains("routes[2] is undecided: runtime_fraction is not evaluated"), "{text}");
    assert!(text.ends_with("=> undecided\n"), "{text}");

    let out = trace(&[
        ORDERED,
        "--dst",
        "127.0.0.1:8080",
        "--host",
        "api.example.com",
        "--path",
        "/v1/x",
        "--header",
        "X-Canary: 1",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let http = &json(&out)["http"];
    assert_eq!(http["route_config"], "ingress-routes");
    assert_eq!(http["virtual_host"], "api");
    assert_eq!(http["route"], "routes[1]");
    assert_eq!(http["action"], serde_json::json!({"kind": "cluster", "cluster": "api-canary"}));
    let stages: Vec<&str> = http["steps"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["request", "route_config", "virtual_host", "route", "route", "action"]);
}

#[test]
fn a_request_no_route_takes_keeps_its_virtual_host_and_exits_1() {
    // The virtual host is final: a miss there is a 404, no other virtual host is tried.
    let out = trace(&[
        SHADOWED,
        "--dst",
        "127.0.0.1:8080",
        "--host",
        "x.admin.example.com",
        "--path",
        "/other",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let http = &json(&out)["http"];
    assert_eq!(http["virtual_host"], "admin");
    assert_eq!(http["route"], Value::Null);
    assert_eq!(http["action"], Value::Null);

    // A Host no domain takes: the buckets tried are named, and Envoy answers 404.
    let out = trace(&[SHADOWED, "--dst", "127.0.0.1:8080", "--host", "", "--path", "/"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("no exact domain is \"\""), "{text}");
    assert!(text.contains("there is no \"*\": Envoy answers 404"), "{text}");
}

#[test]
fn a_config_dump_is_traced_from_sni_to_route() {
    let out = trace(&[
        DUMP,
        "--dst",
        "127.0.0.1:20443",
        "--sni",
        "www.example.com",
        "--host",
        "www.example.com",
        "--path",
        "/",
        "--format",
        "json",
    ]);
    let v = json(&out);
    assert_eq!(v["listener"], "gateway-https");
    let http = &v["http"];
    assert!(http["route_config"].is_string(), "{http}");
    assert!(http["steps"].as_array().is_some_and(|s| !s.is_empty()), "{http}");
    // Without --host, trace is what it was: no `http` key.
    let out = trace(&[DUMP, "--dst", "127.0.0.1:20443", "--sni", "www.example.com", "--format", "json"]);
    assert!(json(&out).get("http").is_none());
}

#[test]
fn a_bad_header_is_a_usage_error() {
    let out = trace(&[ORDERED, "--dst", "127.0.0.1:8080", "--host", "a", "--header", "nocolon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected NAME:VALUE"));
    let out = trace(&[ORDERED, "--dst", "127.0.0.1:8080", "--path", "/"]);
    assert_eq!(out.status.code(), Some(2), "--path needs --host");
}

/// The listener and its RDS table in two files (LDS and RDS answers saved apart) are one
/// Envoy's to trace; the routes choose by query parameters, the first value of each counting.
#[test]
fn a_trace_reads_the_route_table_from_another_file_and_matches_query_parameters() {
    let files = ["testdata/trace/lds.yaml", "testdata/trace/rds.yaml"];
    let route = |path: &str| {
        let mut args = files.to_vec();
        args.extend(["--dst", "127.0.0.1:8080", "--host", "api.example.com", "--path", path, "--format", "json"]);
        let out = trace(&args);
        assert_eq!(out.status.code(), Some(0), "{path}: {}", String::from_utf8_lossy(&out.stderr));
        json(&out)["http"]["route"].as_str().unwrap().to_owned()
    };
    assert_eq!(route("/x?version=beta"), "beta");
    assert_eq!(route("/x?version=alpha&version=beta"), "no-debug");
    assert_eq!(route("/x?debug"), "debug");
    assert_eq!(route("/x?debug=1&version=beta"), "beta");
    assert_eq!(route("/x"), "no-debug");

    let mut args = files.to_vec();
    args.extend(["--dst", "127.0.0.1:8080", "--host", "api.example.com", "--path", "/x?debug"]);
    let text = String::from_utf8(trace(&args).stdout).unwrap();
    assert!(text.contains("beta does not match: query parameter version == \"beta\""), "{text}");
    assert!(text.contains("no-debug does not match: query parameter debug absent"), "{text}");

    // Alone, the listener's table is not there to trace.
    let out = trace(&[files[0], "--dst", "127.0.0.1:8080", "--host", "api.example.com"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("api-routes"), "{text}");
}

/// A peer's map of several proxies: a connection goes through one of them, named with
/// `--proxy`; without it the trace says there are several, rather than answering with the
/// first pod's listener.
#[test]
fn a_trace_of_a_map_of_proxies_names_its_proxy() {
    let file = "testdata/peers/egctl-config-all.json";
    let common = ["--listener", "tenants/gw/http", "--dst", "10.0.0.1:10080", "--host", "api.example.com"];
    let mut args = vec![file];
    args.extend(common);
    let out = trace(&args);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("several proxies: tenants/envoy-tenants-gw-5f7c9-abcde, tenants/envoy-tenants-gw-5f7c9-fghij"),
        "{err}"
    );

    for pod in ["tenants/envoy-tenants-gw-5f7c9-abcde", "tenants/envoy-tenants-gw-5f7c9-fghij"] {
        let mut args = vec![file, "--proxy", pod, "--format", "json"];
        args.extend(common);
        let out = trace(&args);
        assert_eq!(out.status.code(), Some(0), "{pod}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(json(&out)["proxy"], pod);
        let mut args = vec![file, "--proxy", pod];
        args.extend(common);
        let text = String::from_utf8(trace(&args).stdout).unwrap();
        assert!(text.starts_with(&format!("listener tenants/gw/http ({file}, proxy {pod})")), "{text}");
    }
    let out = trace(&[file, "--proxy", "nope", "--dst", "10.0.0.1:10080"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no proxy named 'nope'"));
}
