//! `xdsck attach` against real parts: an in-process tonic xDS server (support/xds_server.rs)
//! that a real Envoy 1.40 accepts as its LDS source (over TCP and over a `pipe:` address), and
//! that Envoy's admin API on a Unix socket (as Cilium runs it) and on TCP. Also: the protobuf
//! path gives the findings the JSON path gives, and the faults a live attach meets.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::envoy::{self, LiveEnvoy};
use support::proto_build;
use support::xds_server::{Bind, Mode, State, XdsServer};
use xdsck_core::{SourceFile, Sources};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn xdsck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xdsck")).args(args).stdin(Stdio::null()).output().unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout {} stderr {}", String::from_utf8_lossy(&o.stdout), stderr(o)))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Findings without what names the input or places it in a text (source, line, column): those
/// differ between a file and an attach address, and a protobuf has no lines.
fn findings(report: &Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                for k in ["source", "line", "column"] {
                    o.remove(k);
                }
                o.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut f = report["findings"].clone();
    strip(&mut f);
    f
}

fn tcp_proxy(cluster: &str) -> Value {
    json!([{"name": "envoy.filters.network.tcp_proxy", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
        "stat_prefix": cluster, "cluster": cluster}}])
}

/// Accepted by Envoy, with a warning: api.example.com clients without h2 are closed
/// (Envoy does not fall back to the wildcard chain).
fn edge(port: u16, with_wildcard: bool) -> Value {
    let mut chains = vec![json!({"name": "api-h2",
        "filter_chain_match": {"server_names": ["api.example.com"], "application_protocols": ["h2"]},
        "filters": tcp_proxy("api")})];
    if with_wildcard {
        chains.push(json!({"name": "wild", "filter_chain_match": {"server_names": ["*.example.com"]},
            "filters": tcp_proxy("wild")}));
    }
    json!({"name": "edge",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "listener_filters": [{"name": "envoy.filters.listener.tls_inspector", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"}}],
        "filter_chains": chains})
}

/// Rejected by Envoy (two chains with the same match): an error finding.
fn duplicate(port: u16) -> Value {
    json!({"name": "dup",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [
            {"name": "a", "filter_chain_match": {"destination_port": 8443}, "filters": tcp_proxy("a")},
            {"name": "b", "filter_chain_match": {"destination_port": 8443}, "filters": tcp_proxy("b")}]})
}

fn state(version: &str, listeners: &[Value]) -> State {
    State {
        version: version.into(),
        resources: listeners.iter().map(proto_build::listener_any).collect(),
        ..State::default()
    }
}

/// The same listeners as a DiscoveryResponse JSON file, for `xdsck check`.
fn discovery_json(dir: &Path, listeners: &[Value]) -> PathBuf {
    let resources: Vec<Value> = listeners
        .iter()
        .map(|l| {
            let mut l = l.clone();
            l["@type"] = json!(proto_build::LISTENER_TYPE);
            l
        })
        .collect();
    let path = dir.join("discovery-response.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&json!({"version_info": "1", "resources": resources})).unwrap())
        .unwrap();
    path
}

/// Every request the server got is a subscription or an ACK: never an error_detail, and each
/// one with a nonce names a version the server sent.
fn assert_only_acks(server: &XdsServer, versions: &[&str]) {
    let reqs = server.requests();
    assert!(!reqs.is_empty());
    for r in &reqs {
        assert!(r.error_detail.is_none(), "a NACK: {r:?}");
        if !r.response_nonce.is_empty() {
            assert!(r.response_nonce.starts_with("nonce-"), "{r:?}");
            assert!(versions.contains(&r.version_info.as_str()) || r.version_info == "x1", "{r:?}");
        }
    }
    assert!(reqs.iter().any(|r| !r.response_nonce.is_empty()), "no ACK at all: {reqs:?}");
}

// ---------------------------------------------------------------------------------------------
// The protobuf path and the JSON path agree.

/// Every fixture that is Listeners or a DiscoveryResponse: loaded from its JSON, and from
/// protobufs built (by support/proto_build.rs, not by xdsck) from the same JSON.
#[test]
fn protobuf_and_json_give_the_same_findings() {
    let mut files = Vec::new();
    for dir in ["testdata/listeners", "testdata/checks"] {
        let mut stack = vec![workspace().join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "yaml")) {
                    files.push(p);
                }
            }
        }
    }
    files.sort();
    let mut compared = 0;
    let mut with_findings = 0;
    for path in &files {
        // Known gap: no-filter-chains tells QUIC from plain UDP by finding `quic_options` in the
        // input's text, which a protobuf listener does not have (the model keeps only a bool).
        if path.ends_with("no-filter-chains/bad-quic.yaml") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let file = SourceFile::new("x", text);
        let Ok(input) = xdsck_core::load::load(xdsck_core::SourceId(0), &file) else { continue };
        if !matches!(
            input.kind,
            xdsck_core::model::InputKind::Listeners | xdsck_core::model::InputKind::DiscoveryResponse
        ) {
            continue;
        }
        let mut doc: Value = serde_json::from_str(file.json_text()).unwrap();
        proto_build::snake_keys(&mut doc);
        let listeners: Vec<Value> = match &doc {
            Value::Array(a) => a.clone(),
            Value::Object(o) if o.contains_key("resources") => doc["resources"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r.get("@type").and_then(Value::as_str) == Some(proto_build::LISTENER_TYPE))
                .cloned()
                .collect(),
            _ => vec![doc.clone()],
        };
        let resources: Vec<Value> = listeners
            .iter()
            .map(|l| {
                let mut l = l.clone();
                l["@type"] = json!(proto_build::LISTENER_TYPE);
                l
            })
            .collect();
        // The JSON path.
        let mut sources = Sources::new();
        sources.add(SourceFile::new("json", serde_json::to_string_pretty(&json!({"resources": resources})).unwrap()));
        let from_json = xdsck_core::analyze(&sources, &xdsck_core::Options::default());
        let json_report: Value = serde_json::from_str(&xdsck_core::report::render(
            xdsck_core::report::Format::Json,
            &from_json,
            &sources,
            Default::default(),
        ))
        .unwrap();
        // The protobuf path.
        let anys: Vec<_> = listeners.iter().map(proto_build::listener_any).collect();
        let mut psources = Sources::new();
        let id = psources.add(SourceFile::new("proto", String::new()));
        let (pinput, problems) = xdsck_core::load::proto::load_resources(id, &anys);
        assert!(problems.is_empty(), "{}: {problems:?}", path.display());
        let from_proto = xdsck_core::analyze_inputs(&psources, vec![pinput], problems);
        let proto_report: Value = serde_json::from_str(&xdsck_core::report::render(
            xdsck_core::report::Format::Json,
            &from_proto,
            &psources,
            Default::default(),
        ))
        .unwrap();
        // Findings sort by place: with offsets (JSON) and without (protobuf) the order differs.
        let sorted = |v: Value| {
            let mut a: Vec<String> = v.as_array().unwrap().iter().map(Value::to_string).collect();
            a.sort();
            a
        };
        assert_eq!(sorted(findings(&json_report)), sorted(findings(&proto_report)), "{}", path.display());
        assert_eq!(json_report["summary"], proto_report["summary"], "{}", path.display());
        compared += 1;
        with_findings += usize::from(!from_json.findings.is_empty());
    }
    assert!(compared >= 20 && with_findings >= 10, "only {compared} fixtures compared ({with_findings} with findings)");
}

// ---------------------------------------------------------------------------------------------
// A real Envoy takes its listeners from the test server; attach reads Envoy's admin.

fn envoy_bootstrap(admin: Value, xds_address: Value) -> Value {
    json!({
        "node": {"id": "host~127.0.0.1~no-id~localdomain", "cluster": "xdsck-test"},
        "admin": {"address": admin},
        "dynamic_resources": {"lds_config": {"resource_api_version": "V3", "api_config_source": {
            "api_type": "GRPC", "transport_api_version": "V3", "set_node_on_first_message_only": true,
            "grpc_services": [{"envoy_grpc": {"cluster_name": "xds"}}]}}},
        "static_resources": {"clusters": [{
            "name": "xds", "type": "STATIC", "connect_timeout": "1s",
            "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}}}},
            "load_assignment": {"cluster_name": "xds", "endpoints": [{"lb_endpoints": [{"endpoint": {"address": xds_address}}]}]}
        }]}
    })
}

/// Waits until `dump()` shows every listener name in `names` as an active dynamic listener.
fn wait_for_listeners(
    names: &[&str],
    mut dump: impl FnMut() -> Result<String, String>,
    log: impl Fn() -> String,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(d) = dump() {
            let v: Value = serde_json::from_str(&d).unwrap_or(Value::Null);
            let active: Vec<String> = v["configs"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|c| c["dynamic_listeners"].as_array().cloned().unwrap_or_default())
                .filter(|l| l["active_state"].is_object())
                .filter_map(|l| l["name"].as_str().map(str::to_owned))
                .collect();
            if names.iter().all(|n| active.iter().any(|a| a == n)) {
                return d;
            }
        }
        assert!(
            Instant::now() < deadline,
            "Envoy did not take the listeners {names:?} from the test server:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// HTTP/1.0 GET over TCP, by hand: the test's own client, not xdsck's.
fn http_get(addr: &str, path: &str) -> Result<String, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").map_err(|e| e.to_string())?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).map_err(|e| e.to_string())?;
    let (head, mut body) = raw.split_once("\r\n\r\n").ok_or("no header end")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(head.lines().next().unwrap_or_default().to_owned());
    }
    if !head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return Ok(body.to_owned());
    }
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").ok_or("bad chunk")?;
        let size = usize::from_str_radix(size.trim(), 16).map_err(|e| e.to_string())?;
        if size == 0 {
            return Ok(out);
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

/// Envoy with admin on TCP takes LDS from the test server over TCP. Then `attach http://`
/// reports what `check` reports on the dump the test fetched itself.
#[test]
fn envoy_takes_lds_over_tcp_and_attach_reads_its_tcp_admin() {
    let bin = envoy::binary();
    let rt = runtime();
    let (ports, held) = envoy::free_ports(2, &[Ipv4Addr::LOCALHOST]);
    let listeners = [edge(ports[0], true)];
    let server = rt.block_on(XdsServer::start(Bind::Tcp("127.0.0.1:0".parse().unwrap()), state("1", &listeners)));
    let Bind::Tcp(xds_addr) = server.addr().clone() else { unreachable!() };
    let admin = format!("127.0.0.1:{}", ports[1]);
    let dir = tempfile::tempdir().unwrap();
    let boot = envoy_bootstrap(
        json!({"socket_address": {"address": "127.0.0.1", "port_value": ports[1]}}),
        json!({"socket_address": {"address": "127.0.0.1", "port_value": xds_addr.port()}}),
    );
    std::fs::write(dir.path().join("bootstrap.json"), serde_json::to_vec(&boot).unwrap()).unwrap();
    drop(held);
    let log = std::fs::File::create(dir.path().join("envoy.log")).unwrap();
    let child = Command::new(&bin)
        .args(["--disable-hot-restart", "--concurrency", "1", "-l", "warning", "-c"])
        .arg(dir.path().join("bootstrap.json"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _envoy = Kill(child);
    let logs = || std::fs::read_to_string(dir.path().join("envoy.log")).unwrap_or_default();
    let dump = wait_for_listeners(&["edge"], || http_get(&admin, "/config_dump"), logs);
    // Envoy ACKed the version: the server speaks the protocol Envoy speaks.
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.version_info == "1" && r.response_nonce == "nonce-1" && r.error_detail.is_none())
    );

    let dump_path = dir.path().join("dump.json");
    std::fs::write(&dump_path, dump).unwrap();
    let checked = xdsck(&["check", dump_path.to_str().unwrap(), "--format", "json"]);
    let attached = xdsck(&["attach", &format!("http://{admin}"), "--format", "json"]);
    assert_eq!(code(&attached), code(&checked), "{}", stderr(&attached));
    let (a, c) = (json_out(&attached), json_out(&checked));
    assert_eq!(findings(&a), findings(&c));
    assert!(
        findings(&a).as_array().unwrap().iter().any(|f| f["code"] == "XDS105" || f["rule"] == "sni-blackhole"),
        "{a}"
    );
    assert_eq!(a["inputs"][0]["source"], format!("http://{admin}"));
}

/// Envoy with admin on a Unix socket (as Cilium runs it) takes LDS from the test server over a
/// `pipe:` address. `attach unix://…/admin.sock` (and the bare path) report what `check` does
/// on the dump fetched from that socket; a bare xDS socket path is detected as gRPC; each
/// socket given to the wrong client is named for what it is.
#[test]
fn envoy_takes_lds_over_a_pipe_and_attach_reads_its_admin_socket() {
    let bin = envoy::binary();
    let rt = runtime();
    let (ports, held) = envoy::free_ports(1, &[Ipv4Addr::LOCALHOST]);
    let listeners = [edge(ports[0], true)];
    let dir = tempfile::tempdir().unwrap();
    let xds_sock = dir.path().join("xds.sock");
    let server = rt.block_on(XdsServer::start(Bind::Unix(xds_sock.clone()), state("1", &listeners)));
    let envoy_dir = tempfile::tempdir().unwrap();
    let admin_sock = LiveEnvoy::admin_socket(envoy_dir.path());
    let boot = envoy_bootstrap(
        json!({"pipe": {"path": admin_sock.to_str().unwrap()}}),
        json!({"pipe": {"path": xds_sock.to_str().unwrap()}}),
    );
    drop(held);
    let live = LiveEnvoy::start(&bin, envoy_dir, &boot).unwrap();
    let dump = wait_for_listeners(&["edge"], || live.get("/config_dump"), || live.log_tail());
    assert_only_acks(&server, &["1"]);

    let dump_path = dir.path().join("dump.json");
    std::fs::write(&dump_path, dump).unwrap();
    let checked = json_out(&xdsck(&["check", dump_path.to_str().unwrap(), "--format", "json"]));
    let admin_url = format!("unix://{}", admin_sock.display());
    for address in [admin_url.as_str(), admin_sock.to_str().unwrap()] {
        let attached = xdsck(&["attach", address, "--format", "json"]);
        assert_eq!(code(&attached), 1, "{address}: {}", stderr(&attached));
        assert_eq!(findings(&json_out(&attached)), findings(&checked), "{address}");
    }
    // Query parameters go through to /config_dump.
    let only = json_out(&xdsck(&["attach", &format!("{admin_url}?resource=dynamic_listeners"), "--format", "json"]));
    assert_eq!(only["inputs"][0]["kind"], "config_dump (dynamic_listeners)", "{only}");

    // The bare xDS socket path is detected as gRPC and gives the served listeners' findings.
    let served = discovery_json(dir.path(), &listeners);
    let want = json_out(&xdsck(&["check", served.to_str().unwrap(), "--format", "json"]));
    let got = xdsck(&["attach", xds_sock.to_str().unwrap(), "--format", "json"]);
    assert_eq!(findings(&json_out(&got)), findings(&want), "{}", stderr(&got));

    // Wrong protocol, both ways.
    let wrong = xdsck(&["attach", &format!("grpc+unix://{}", admin_sock.display()), "--timeout", "2"]);
    assert_eq!(code(&wrong), 2);
    assert!(stderr(&wrong).contains("answers HTTP/1.1, not gRPC"), "{}", stderr(&wrong));
    let wrong = xdsck(&["attach", &format!("unix://{}", xds_sock.display())]);
    assert_eq!(code(&wrong), 2);
    assert!(stderr(&wrong).contains("does not answer HTTP/1.1"), "{}", stderr(&wrong));
    drop(server);
}

// ---------------------------------------------------------------------------------------------
// attach over gRPC

#[test]
fn attach_over_grpc_reports_the_served_listeners_and_only_acks() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let listeners = [edge(10443, true), duplicate(8443)];
    let want =
        json_out(&xdsck(&["check", discovery_json(dir.path(), &listeners).to_str().unwrap(), "--format", "json"]));
    assert!(findings(&want).as_array().unwrap().len() >= 2, "{want}");
    let tcp = rt.block_on(XdsServer::start(Bind::Tcp("127.0.0.1:0".parse().unwrap()), state("1", &listeners)));
    let unix = rt.block_on(XdsServer::start(Bind::Unix(dir.path().join("xds.sock")), state("1", &listeners)));
    for (server, kind) in [(&tcp, "ads"), (&tcp, "lds"), (&unix, "lds"), (&unix, "ads")] {
        let before = server.requests().len();
        let out = xdsck(&["attach", &server.url(), "--type", kind, "--format", "json"]);
        assert_eq!(code(&out), 1, "{} {kind}: {}", server.url(), stderr(&out));
        let got = json_out(&out);
        assert_eq!(findings(&got), findings(&want), "{} {kind}", server.url());
        assert_eq!(got["inputs"][0]["listeners"], 2);
        // This run: a subscription with Cilium's node id, then the ACK of version 1.
        let reqs = &server.requests()[before..];
        assert_eq!(reqs[0].node.as_ref().unwrap().id, "host~127.0.0.1~no-id~localdomain");
        assert!(reqs[0].response_nonce.is_empty() && reqs[0].resource_names.is_empty());
        assert!(reqs.iter().any(|r| r.version_info == "1" && !r.response_nonce.is_empty()), "{reqs:?}");
    }
    assert_only_acks(&tcp, &["1"]);
    assert_only_acks(&unix, &["1"]);
    // The text report names the address.
    let text = xdsck(&["attach", &tcp.url(), "--node-id", "sidecar~10.0.0.1~x~y"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains(&tcp.url()));
    assert_eq!(tcp.requests().last().unwrap().node.as_ref().unwrap().id, "sidecar~10.0.0.1~x~y");
}

/// Reads the watcher's stdout lines on a thread, so a test can wait for each with a deadline.
fn lines_of(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                return;
            }
        }
    });
    rx
}

fn next_json(rx: &mpsc::Receiver<String>) -> Value {
    let line = rx.recv_timeout(Duration::from_secs(10)).expect("a watch update within 10 s");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

fn codes(v: &Value) -> Vec<String> {
    let mut c: Vec<String> =
        v.as_array().unwrap().iter().map(|f| format!("{} {}", f["code"].as_str().unwrap(), f["listener"])).collect();
    c.sort();
    c
}

#[test]
fn watch_follows_changes_across_a_server_restart() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let mut server =
        rt.block_on(XdsServer::start(Bind::Unix(dir.path().join("xds.sock")), state("1", &[edge(10443, true)])));
    let mut child = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["attach", &server.url(), "--watch", "--format", "json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let rx = lines_of(&mut child);
    let mut child = Kill(child);

    let first = next_json(&rx);
    assert_eq!(first["version"], "1");
    assert!(!first["appeared"].as_array().unwrap().is_empty(), "{first}");
    assert!(first["disappeared"].as_array().unwrap().is_empty());
    let warned = codes(&first["appeared"]);

    // A changed listener set: the duplicate appears, the edge's warning goes.
    server.set(state("2", &[edge(10443, false), duplicate(8443)]));
    let second = next_json(&rx);
    assert_eq!(second["version"], "2", "{second}");
    assert_eq!(codes(&second["disappeared"]), warned, "{second}");
    assert!(codes(&second["appeared"]).iter().any(|c| c.contains("\"dup\"")), "{second}");

    // The server restarts (streams cut) with yet another set: the watcher reconnects.
    server.set_mode(Mode::Serve);
    rt.block_on(async {
        server.stop();
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.set(state("3", &[edge(10443, true)]));
        server.restart().await;
    });
    let third = next_json(&rx);
    assert_eq!(third["version"], "3", "{third}");
    assert_eq!(codes(&third["appeared"]), warned);
    assert!(codes(&third["disappeared"]).iter().any(|c| c.contains("\"dup\"")));
    assert_only_acks(&server, &["1", "2", "3"]);

    let _ = child.0.kill();
    let _ = child.0.wait();
    let mut err = String::new();
    child.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("retrying in"), "the reconnect is reported: {err}");
}

// ---------------------------------------------------------------------------------------------
// Faults

#[test]
fn faults_are_reported_and_never_nacked() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    // Garbage: one resource that claims to be a Listener but does not decode, after a response
    // of a type nobody asked for. Both are ACKed; xdsck reports them to the user.
    let mut st = state("7", &[edge(10443, true)]);
    st.resources.push(envoy_types::pb::google::protobuf::Any {
        type_url: proto_build::LISTENER_TYPE.into(),
        value: vec![0x0a, 0xff, 0xff, 0xff],
    });
    st.extra_type_first = Some("type.googleapis.com/cilium.NetworkPolicy".into());
    let server = rt.block_on(XdsServer::start(Bind::Unix(dir.path().join("xds.sock")), st));
    let out = xdsck(&["attach", &server.url(), "--type", "ads", "--format", "json"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let v = json_out(&out);
    let garbage =
        v["findings"].as_array().unwrap().iter().find(|f| f["code"] == "XDS006").expect("the garbage is reported");
    assert_eq!(garbage["location"]["pointer"], "/resources/1");
    assert_eq!(v["inputs"][0]["listeners"], 1);
    assert!(stderr(&out).contains("cilium.NetworkPolicy"), "{}", stderr(&out));
    assert_only_acks(&server, &["7"]);
    assert!(
        server.requests().iter().any(|r| r.type_url.ends_with("cilium.NetworkPolicy") && r.response_nonce == "nonce-1")
    );

    // A server that never answers: --timeout.
    server.set_mode(Mode::Stall);
    let t = Instant::now();
    let out = xdsck(&["attach", &server.url(), "--timeout", "1"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("timed out after 1 s waiting for the first Listener response"), "{}", stderr(&out));
    assert!(t.elapsed() < Duration::from_secs(5));

    // A server that closes the stream without answering.
    server.set_mode(Mode::Close);
    let out = xdsck(&["attach", &server.url()]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("closed the stream"), "{}", stderr(&out));

    // Nothing listening; no socket at all.
    let (ports, held) = envoy::free_ports(1, &[Ipv4Addr::LOCALHOST]);
    drop(held);
    let out = xdsck(&["attach", &format!("grpc://127.0.0.1:{}", ports[0])]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("connection refused"), "{}", stderr(&out));
    let out = xdsck(&["attach", &format!("unix://{}/missing.sock", dir.path().display())]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("no such socket"), "{}", stderr(&out));
    let out = xdsck(&["attach", "ftp://x:1"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("invalid address"), "{}", stderr(&out));
}
