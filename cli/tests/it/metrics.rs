//! `xdsck attach --watch --metrics` with real parts: a real Envoy 1.40 takes its listeners from a
//! watched LDS file (as scripts/gen-envoy-fixtures.py runs it), the agent reads Envoy's admin
//! socket, and a real Prometheus (Debian's package, started here on a loopback port) scrapes the
//! agent. The test changes Envoy's config and finds, through Prometheus' HTTP API, the findings
//! and listener states that `xdsck check` reports on the dump the test fetched itself, before and
//! after the change; `promtool check metrics` lints each exposition. Prometheus and promtool
//! come from `$XDSCK_PROMETHEUS_DIR` (scripts/test.sh sets it through
//! scripts/install-prometheus.sh) or PATH; without them the test fails, it never skips.

use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::envoy::{self, LiveEnvoy};
use support::proto_build;
use support::xds_server::{Bind, State, XdsServer};
use support::{Kill, http_get, tcp_proxy};

/// `name` in `$XDSCK_PROMETHEUS_DIR`, else on PATH; a missing tool fails the test loudly.
fn tool(name: &str) -> PathBuf {
    let dirs: Vec<PathBuf> = match std::env::var_os("XDSCK_PROMETHEUS_DIR") {
        Some(d) => vec![PathBuf::from(d)],
        None => std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect(),
    };
    dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "{name} not found in {dirs:?}: run scripts/install-prometheus.sh (Debian's prometheus package) \
             or set XDSCK_PROMETHEUS_DIR to the directory holding prometheus and promtool"
        )
    })
}

/// `support::edge` as an LDS resource: warnings on `edge`.
fn edge(port: u16, with_wildcard: bool) -> Value {
    let mut l = support::edge(port, with_wildcard);
    l["@type"] = json!("type.googleapis.com/envoy.config.listener.v3.Listener");
    l
}

/// Rejected by Envoy (two chains with the same match): its update lands in `error_state`.
fn duplicate(port: u16) -> Value {
    json!({"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": "dup",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [
            {"name": "a", "filter_chain_match": {"destination_port": 8443}, "filters": tcp_proxy("a")},
            {"name": "b", "filter_chain_match": {"destination_port": 8443}, "filters": tcp_proxy("b")}]})
}

/// A plain listener the second config drops.
fn retired(port: u16) -> Value {
    json!({"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": "retired",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [{"filters": tcp_proxy("retired")}]})
}

/// Waits for its routes from the `dead` cluster, with no initial fetch timeout: warming for good.
fn warming(port: u16) -> Value {
    json!({"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": "warm",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": "warm",
            "rds": {"route_config_name": "r", "config_source": {"resource_api_version": "V3", "initial_fetch_timeout": "0s",
                "api_config_source": {"api_type": "GRPC", "transport_api_version": "V3",
                    "grpc_services": [{"envoy_grpc": {"cluster_name": "dead"}}]}}},
            "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}]}]})
}

/// Writes the LDS file the way Envoy's watched directory sees one update: beside it, then renamed.
fn write_lds(dir: &Path, version: &str, listeners: &[Value]) {
    let staging = dir.join(".lds.json");
    std::fs::write(&staging, serde_json::to_vec(&json!({"version_info": version, "resources": listeners})).unwrap())
        .unwrap();
    std::fs::rename(&staging, dir.join("lds").join("lds.json")).unwrap();
}

/// An instant PromQL query through Prometheus' HTTP API: each series' labels (without
/// `__name__`, `instance`, `job`) and value.
fn query(prometheus: &str, promql: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let encoded: String = promql
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b == b'_' { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect();
    let body = http_get(prometheus, &format!("/api/v1/query?query={encoded}"))
        .unwrap_or_else(|e| panic!("query {promql}: {e}"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{promql}: {v}");
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let labels = r["metric"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "__name__" | "instance" | "job"))
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect();
            (labels, r["value"][1].as_str().unwrap().parse().unwrap())
        })
        .collect()
}

/// What the metrics must say about a config_dump: `xdsck check` on it, grouped as the metric
/// families group it.
#[derive(Debug, PartialEq)]
struct Expected {
    findings: BTreeMap<(String, String, String, String), f64>,
    states: BTreeMap<String, f64>,
    rejected: Vec<String>,
}

fn expected(dump: &str, dir: &Path) -> Expected {
    let path = dir.join("dump.json");
    std::fs::write(&path, dump).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["check", path.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut findings = BTreeMap::new();
    let mut rejected = Vec::new();
    for f in report["findings"].as_array().unwrap() {
        let listener = f["listener"].as_str().unwrap_or_default().to_owned();
        // Infos are counted per rule only (src/metrics.rs).
        let labelled = if f["severity"] == "info" { String::new() } else { listener.clone() };
        let key = (
            f["code"].as_str().unwrap().to_owned(),
            f["rule"].as_str().unwrap().to_owned(),
            f["severity"].as_str().unwrap().to_owned(),
            labelled,
        );
        *findings.entry(key).or_default() += 1.0;
        if f["severity"] == "error" && !listener.is_empty() && !rejected.contains(&listener) {
            rejected.push(listener);
        }
    }
    rejected.sort();
    let mut states = BTreeMap::new();
    for (state, field) in
        [("active", "listeners"), ("warming", "warming"), ("draining", "draining"), ("error", "failed")]
    {
        let n: u64 = report["inputs"].as_array().unwrap().iter().map(|i| i[field].as_u64().unwrap()).sum();
        states.insert(state.to_owned(), n as f64);
    }
    Expected { findings, states, rejected }
}

/// What Prometheus holds now, in the shape of [`Expected`].
fn scraped(prometheus: &str) -> Expected {
    let findings = query(prometheus, "xdsck_findings")
        .into_iter()
        // Prometheus keeps no empty label: a finding about no listener (or an info) has none.
        .map(|(l, v)| {
            let listener = l.get("listener").cloned().unwrap_or_default();
            ((l["code"].clone(), l["rule"].clone(), l["severity"].clone(), listener), v)
        })
        .collect();
    let states = query(prometheus, "xdsck_listeners").into_iter().map(|(l, v)| (l["state"].clone(), v)).collect();
    let mut rejected: Vec<String> =
        query(prometheus, "xdsck_predicted_rejection == 1").into_iter().map(|(l, _)| l["listener"].clone()).collect();
    rejected.sort();
    Expected { findings, states, rejected }
}

fn wait_until<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>, context: impl Fn() -> String) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} not within {secs} s\n{}", context());
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Envoy's dynamic listeners by state: (name, has active_state, has error_state, has
/// warming_state).
fn dynamic_listeners(dump: &str) -> Vec<(String, bool, bool, bool)> {
    let v: Value = serde_json::from_str(dump).unwrap_or(Value::Null);
    v["configs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["dynamic_listeners"].as_array().cloned().unwrap_or_default())
        .map(|l| {
            (
                l["name"].as_str().unwrap_or_default().to_owned(),
                l["active_state"].is_object(),
                l["error_state"].is_object(),
                l["warming_state"].is_object(),
            )
        })
        .collect()
}

/// `promtool check metrics` on what the agent serves now.
fn lint(promtool: &Path, agent: &str) -> String {
    let exposition = http_get(agent, "/metrics").unwrap();
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(exposition.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}\n{}{}\n--- exposition ---\n{exposition}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exposition
}

/// `--metrics` belongs to the agent (`--watch`); `--watch` prints text or JSON lines only.
#[test]
fn metrics_need_watch_and_watch_takes_no_openreports() {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["attach", "http://127.0.0.1:9", "--metrics", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--watch"), "{out:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["attach", "http://127.0.0.1:9", "--watch", "--format", "openreports"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--watch prints text, or json"), "{out:?}");
}

#[test]
fn prometheus_scrapes_the_findings_and_states_of_a_changing_envoy() {
    let (prometheus_bin, promtool) = (tool("prometheus"), tool("promtool"));
    let envoy_bin = envoy::binary();
    let (ports, held) = envoy::free_ports(6, &[Ipv4Addr::LOCALHOST]);
    let (edge_port, dup_port, prometheus_port, warm_port, dead_port, retired_port) =
        (ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]);

    // Envoy: admin on a Unix socket (as Cilium runs it), listeners from a watched file.
    let envoy_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(envoy_dir.path().join("lds")).unwrap();
    write_lds(envoy_dir.path(), "1", &[edge(edge_port, true), retired(retired_port)]);
    let admin_sock = LiveEnvoy::admin_socket(envoy_dir.path());
    let bootstrap = json!({
        "node": {"id": "host~127.0.0.1~no-id~localdomain", "cluster": "xdsck-test"},
        "admin": {"address": {"pipe": {"path": admin_sock.to_str().unwrap()}}},
        "dynamic_resources": {"lds_config": {"resource_api_version": "V3", "path_config_source": {
            "path": "lds/lds.json", "watched_directory": {"path": "lds"}}}},
        // The RDS server of the `warm` listener: nothing listens there.
        "static_resources": {"clusters": [{"name": "dead", "type": "STATIC", "connect_timeout": "1s",
            "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}}}},
            "load_assignment": {"cluster_name": "dead", "endpoints": [{"lb_endpoints": [{"endpoint": {"address":
                {"socket_address": {"address": "127.0.0.1", "port_value": dead_port}}}}]}]}}]}
    });
    drop(held);
    let live = LiveEnvoy::start(&envoy_bin, envoy_dir, &bootstrap).unwrap();
    let work = tempfile::tempdir().unwrap();
    let dump = wait_until(
        "Envoy serving `edge`",
        15,
        || live.get("/config_dump").ok().filter(|d| dynamic_listeners(d).iter().any(|l| l.0 == "edge" && l.1)),
        || live.log_tail(),
    );
    let before = expected(&dump, work.path());
    assert!(
        before.findings.keys().any(|(_, _, severity, listener)| severity == "warning" && listener == "edge"),
        "the first config should have a warning on edge: {before:?}"
    );
    assert!(before.rejected.is_empty(), "{before:?}");

    // The agent.
    let mut agent = Kill(
        Command::new(env!("CARGO_BIN_EXE_xdsck"))
            .args(["attach", &format!("unix://{}", admin_sock.display()), "--watch", "--format", "json"])
            .args(["--metrics", "127.0.0.1:0", "--interval", "0.5"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (tx, stderr_lines) = mpsc::channel();
    let stderr = agent.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = stderr_lines.recv_timeout(Duration::from_secs(20)).expect("the agent says where it serves");
    let agent_addr = first
        .strip_prefix("xdsck: serving metrics on http://")
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_owned();
    assert_eq!(http_get(&agent_addr, "/healthz").unwrap(), "ok\n");

    // Prometheus, scraping the agent every 500 ms, with its own storage in a temp dir.
    let config = work.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 500ms, scrape_timeout: 400ms}}\n\
             scrape_configs:\n- job_name: xdsck\n  static_configs:\n  - targets: ['{agent_addr}']\n"
        ),
    )
    .unwrap();
    let prometheus_addr = format!("127.0.0.1:{prometheus_port}");
    let prometheus_log = std::fs::File::create(work.path().join("prometheus.log")).unwrap();
    let _prometheus = Kill(
        Command::new(&prometheus_bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", work.path().join("data").display()))
            .arg(format!("--web.listen-address={prometheus_addr}"))
            .stdin(Stdio::null())
            .stdout(prometheus_log.try_clone().unwrap())
            .stderr(prometheus_log)
            .spawn()
            .unwrap(),
    );
    let prometheus_log = || std::fs::read_to_string(work.path().join("prometheus.log")).unwrap_or_default();
    wait_until("Prometheus ready", 30, || http_get(&prometheus_addr, "/-/ready").ok(), prometheus_log);

    let got = wait_until(
        "Prometheus holding the first config's findings",
        30,
        || Some(scraped(&prometheus_addr)).filter(|s| *s == before),
        || format!("want {before:?}\ngot {:?}\n{}", scraped(&prometheus_addr), prometheus_log()),
    );
    assert_eq!(got.states["active"], 2.0, "{got:?}");
    let exposition = lint(&promtool, &agent_addr);
    assert!(exposition.contains("# TYPE xdsck_analysis_duration_seconds histogram"), "{exposition}");

    // The Envoy version comes from Envoy's own /server_info.
    let server_info: Value = serde_json::from_str(&live.get("/server_info").unwrap()).unwrap();
    let envoy_version = server_info["version"].as_str().unwrap().split('/').nth(1).unwrap().to_owned();
    let info = query(&prometheus_addr, "xdsck_build_info");
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0].0["envoy_version"], envoy_version, "{info:?}");
    assert_eq!(info[0].0["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(query(&prometheus_addr, "xdsck_source_up")[0].1, 1.0);
    let analysed = query(&prometheus_addr, "xdsck_last_analysis_timestamp_seconds")[0].1;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    assert!((now - analysed).abs() < 30.0, "last analysis at {analysed}, now {now}");

    // Unchanged config, new fetches (Envoy prints its dump's maps in another order each time):
    // the findings are confirmed, not checked again.
    let sample = |name: &str| -> f64 {
        let exposition = http_get(&agent_addr, "/metrics").unwrap();
        let line = exposition.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (checks, confirmed) =
        (sample("xdsck_analysis_duration_seconds_count"), sample("xdsck_last_analysis_timestamp_seconds"));
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(sample("xdsck_analysis_duration_seconds_count"), checks, "an unchanged config was checked again");
    assert!(sample("xdsck_last_analysis_timestamp_seconds") > confirmed, "fetches confirm the findings");

    // The change: the warning goes (no wildcard chain), an update Envoy rejects arrives, a
    // listener that waits for its routes forever (warming), and `retired` is removed (draining,
    // for Envoy's drain time).
    write_lds(live.dir(), "2", &[edge(edge_port, false), duplicate(dup_port), warming(warm_port)]);
    let dump = wait_until(
        "Envoy rejecting `dup` and warming `warm`",
        15,
        || {
            live.get("/config_dump").ok().filter(|d| {
                let l = dynamic_listeners(d);
                l.iter().any(|l| l.0 == "dup" && l.2) && l.iter().any(|l| l.0 == "warm" && l.3)
            })
        },
        || live.log_tail(),
    );
    let after = expected(&dump, work.path());
    assert_eq!(after.rejected, ["dup"], "{after:?}");
    assert_eq!(after.states["error"], 1.0, "{after:?}");
    assert_eq!(after.states["warming"], 1.0, "{after:?}");
    assert_eq!(after.states["draining"], 1.0, "{after:?}");
    assert!(!after.findings.keys().any(|(_, _, s, l)| s == "warning" && l == "edge"), "{after:?}");
    wait_until(
        "Prometheus holding the second config's findings",
        30,
        || Some(scraped(&prometheus_addr)).filter(|s| *s == after),
        || format!("want {after:?}\ngot {:?}\n{}", scraped(&prometheus_addr), prometheus_log()),
    );
    // The alert the README shows fires for `dup` only.
    let alert = query(&prometheus_addr, "max by (listener) (xdsck_predicted_rejection) > 0");
    assert_eq!(alert.iter().map(|(l, _)| l["listener"].as_str()).collect::<Vec<_>>(), ["dup"], "{alert:?}");
    lint(&promtool, &agent_addr);
    let analyses = query(&prometheus_addr, "xdsck_analysis_duration_seconds_count")[0].1;
    assert!(analyses >= 2.0, "{analyses} analyses");

    // Envoy gone: the source is down, the failures counted by reason, the last findings stand.
    drop(live);
    let errors = wait_until(
        "Prometheus seeing the source down",
        30,
        || {
            let up = query(&prometheus_addr, "xdsck_source_up");
            let errors = query(&prometheus_addr, "xdsck_fetch_errors_total > 0");
            // Once Envoy is gone, its socket refuses (or is gone); a fetch cut off by the kill
            // itself may have failed otherwise first.
            let gone = errors.iter().any(|(l, _)| ["refused", "not_found"].contains(&l["reason"].as_str()));
            (up.first().map(|u| u.1) == Some(0.0) && gone).then_some(errors)
        },
        prometheus_log,
    );
    let known = ["refused", "not_found", "wrong_protocol", "body", "io", "timeout"];
    assert!(errors.iter().all(|(l, _)| known.contains(&l["reason"].as_str())), "{errors:?}");
    assert_eq!(scraped(&prometheus_addr), after);
    lint(&promtool, &agent_addr);
}

/// The exposition's samples of `name`: labels and value (the agent's own text, read directly;
/// label values here are codes, rule and listener names, never with quotes or commas).
fn samples(exposition: &str, name: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    exposition
        .lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            let labels = series
                .split_once('{')
                .map(|(_, rest)| rest.trim_end_matches('}'))
                .unwrap_or_default()
                .split(',')
                .filter(|kv| !kv.is_empty())
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap();
                    (k.to_owned(), v.trim_matches('"').to_owned())
                })
                .collect();
            (labels, value.parse().unwrap())
        })
        .collect()
}

/// The findings part of [`Expected`], from the agent's exposition.
fn exposed_findings(exposition: &str) -> BTreeMap<(String, String, String, String), f64> {
    samples(exposition, "xdsck_findings")
        .into_iter()
        .map(|(l, v)| ((l["code"].clone(), l["rule"].clone(), l["severity"].clone(), l["listener"].clone()), v))
        .collect()
}

/// The agent on an xDS stream (the in-process server of cli/tests/it/support): the metrics follow
/// each pushed version, the findings stay current while the stream is open, and a lost server
/// is the source down.
#[test]
fn over_xds_the_metrics_follow_the_stream() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let state = |version: &str, listeners: &[Value]| State {
        version: version.into(),
        resources: listeners.iter().map(proto_build::listener_any).collect(),
        ..State::default()
    };
    let work = tempfile::tempdir().unwrap();
    // What `xdsck check` says of the same listeners as a DiscoveryResponse.
    let want = |version: &str, listeners: &[Value]| {
        expected(&json!({"version_info": version, "resources": listeners}).to_string(), work.path())
    };
    let v1 = [edge(10443, true)];
    let v2 = [edge(10443, false), duplicate(8443)];
    let mut server = rt.block_on(XdsServer::start(Bind::Tcp("127.0.0.1:0".parse().unwrap()), state("1", &v1)));
    let mut agent = Kill(
        Command::new(env!("CARGO_BIN_EXE_xdsck"))
            .args([
                "attach",
                &server.url(),
                "--watch",
                "--format",
                "json",
                "--metrics",
                "127.0.0.1:0",
                "--interval",
                "0.3",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = BufReader::new(agent.0.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    // Keep reading: the agent reports each disconnection on stderr.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let addr =
        first.trim().strip_prefix("xdsck: serving metrics on http://").unwrap().strip_suffix("/metrics").unwrap();
    let exposition = || http_get(addr, "/metrics").unwrap();
    let value = |name: &str| samples(&exposition(), name).first().map(|s| s.1);

    let before = want("1", &v1);
    wait_until(
        "the first version's findings",
        20,
        || Some(exposition()).filter(|e| exposed_findings(e) == before.findings),
        exposition,
    );
    assert_eq!(value("xdsck_source_up"), Some(1.0));
    let info = samples(&exposition(), "xdsck_build_info");
    assert_eq!(info[0].0["envoy_version"], "", "no Envoy version over xDS: {info:?}");
    // No new version: no new check, but the findings are confirmed current while connected.
    let (checks, confirmed) =
        (value("xdsck_analysis_duration_seconds_count"), value("xdsck_last_analysis_timestamp_seconds"));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(value("xdsck_analysis_duration_seconds_count"), checks);
    assert!(value("xdsck_last_analysis_timestamp_seconds") > confirmed);

    server.set(state("2", &v2));
    let after = want("2", &v2);
    assert_eq!(after.rejected, ["dup"], "{after:?}");
    wait_until(
        "the second version's findings",
        20,
        || Some(exposition()).filter(|e| exposed_findings(e) == after.findings),
        exposition,
    );
    let rejected = samples(&exposition(), "xdsck_predicted_rejection");
    assert_eq!(rejected.iter().map(|(l, _)| l["listener"].as_str()).collect::<Vec<_>>(), ["dup"], "{rejected:?}");
    let states: BTreeMap<String, f64> =
        samples(&exposition(), "xdsck_listeners").into_iter().map(|(l, v)| (l["state"].clone(), v)).collect();
    assert_eq!(states, after.states);

    server.stop();
    wait_until(
        "the source down",
        20,
        || {
            let e = exposition();
            let down = samples(&e, "xdsck_source_up").first().map(|s| s.1) == Some(0.0);
            (down && !samples(&e, "xdsck_fetch_errors_total").is_empty()).then_some(())
        },
        exposition,
    );
    assert_eq!(exposed_findings(&exposition()), after.findings, "the last findings stand");
    lint(&tool("promtool"), addr);
}
