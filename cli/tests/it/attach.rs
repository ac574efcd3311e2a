//! `xdsck attach` against real parts: an in-process tonic xDS server (support/xds_server.rs)
//! that a real Envoy 1.40 accepts as its LDS source (over TCP and over a `pipe:` address), and
//! that Envoy's admin API on a Unix socket (as Cilium runs it) and on TCP. Also: the protobuf
//! path gives the findings the JSON path gives, and the faults a live attach meets — on both
//! paths, one-shot and --watch: a 100 MB answer (under and over --max-bytes), a flood of
//! responses of a type nobody asked for, garbage, a stall, a connection lost mid-message — with
//! a plain HTTP/1.1 server (support/admin_server.rs) where Envoy's admin cannot be made to
//! misbehave.

use crate::support;

use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::admin_server::{AdminServer, Answer};
use support::envoy::{self, LiveEnvoy};
use support::proto_build;
use support::xds_server::{Bind, CutRelay, Flood, LISTENER_TYPE, Mode, State, XdsServer};
use support::{Kill, attach_watch, edge, http_get, lines, tcp_proxy};
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
/// differ between a file and an attach address, and a protobuf has no lines. Over xDS, attach
/// reads the list of the responses it received, the listeners' first: its pointers are those of
/// the listeners' response alone with `/0` before them.
fn findings(report: &Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                for k in ["source", "line", "column"] {
                    o.remove(k);
                }
                if let Some(Value::String(p)) = o.get_mut("pointer")
                    && let Some(rest) = p.strip_prefix("/0/resources")
                {
                    *p = format!("/resources{rest}");
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

/// A report as `--format json` prints it.
fn report_json(report: &xdsck_core::report::Report, sources: &Sources) -> Value {
    let text = xdsck_core::report::render(xdsck_core::report::Format::Json, report, sources, Default::default());
    serde_json::from_str(&text).unwrap()
}

/// Listeners as DiscoveryResponse resources: each with its `@type`.
fn typed(listeners: &[Value]) -> Vec<Value> {
    listeners
        .iter()
        .map(|l| {
            let mut l = l.clone();
            l["@type"] = json!(proto_build::LISTENER_TYPE);
            l
        })
        .collect()
}

/// The same listeners as a DiscoveryResponse JSON file, for `xdsck check`.
fn discovery_json(dir: &Path, listeners: &[Value]) -> PathBuf {
    let resources = typed(listeners);
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
/// protobufs built (by support/proto_build.rs, with prost-reflect, not by xdsck) from the same JSON.
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
    let mut not_encodable = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let file = SourceFile::new("x", text);
        let document = xdsck_core::load::Document::new(xdsck_core::SourceId(0), &file);
        let Ok(input) = document.load() else { continue };
        if !matches!(
            input.kind,
            xdsck_core::model::InputKind::Listeners | xdsck_core::model::InputKind::DiscoveryResponse
        ) {
            continue;
        }
        let mut doc: Value = serde_json::from_str(document.locator().json_text()).unwrap();
        proto_build::snake_keys(&mut doc);
        // A document's listeners: a Listener, or the Listener resources of a DiscoveryResponse;
        // a list or a stream holds documents.
        let of_document = |d: &Value| -> Vec<Value> {
            match d.get("resources").and_then(Value::as_array) {
                Some(resources) => resources
                    .iter()
                    .filter(|r| r.get("@type").and_then(Value::as_str) == Some(proto_build::LISTENER_TYPE))
                    .cloned()
                    .collect(),
                None => vec![d.clone()],
            }
        };
        let listeners: Vec<Value> = match &doc {
            Value::Array(a) => a.iter().flat_map(of_document).collect(),
            d => of_document(d),
        };
        if listeners.is_empty() {
            continue;
        }
        let resources = typed(&listeners);
        // The JSON path.
        let mut sources = Sources::new();
        sources.add(SourceFile::new("json", serde_json::to_string_pretty(&json!({"resources": resources})).unwrap()));
        let from_json = xdsck_core::analyze(&sources, &xdsck_core::Options::default());
        let json_report = report_json(&from_json, &sources);
        // The protobuf path: encoded by prost-reflect, transcoded back by xdsck.
        let anys: Result<Vec<_>, String> = listeners.iter().map(proto_build::try_listener_any).collect();
        let anys = match anys {
            Ok(a) => a,
            // The lenient proto3 JSON forms Envoy takes (a single value for a list, a quoted
            // bool...) are not proto3 JSON to prost-reflect: such fixtures have no protobuf.
            Err(e) => {
                not_encodable.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let resources: Vec<_> =
            anys.iter().map(|a| xdsck_core::load::proto::Resource { type_url: &a.type_url, value: &a.value }).collect();
        let mut psources = Sources::new();
        xdsck_core::load::proto::add_response(&mut psources, "proto", "", "", &resources)
            .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message));
        let from_proto = xdsck_core::analyze(&psources, &xdsck_core::Options::default());
        let proto_report = report_json(&from_proto, &psources);
        assert_same_findings(
            &defaults_unseen(&proto_report),
            &defaults_unseen(&json_report),
            &path.display().to_string(),
        );
        assert_eq!(json_report["summary"], proto_report["summary"], "{}", path.display());
        compared += 1;
        with_findings += usize::from(!from_json.findings.is_empty());
    }
    assert!(
        compared >= 80 && with_findings >= 50 && not_encodable.len() * 4 < compared,
        "{compared} fixtures compared ({with_findings} with findings); not proto3 JSON:\n{}",
        not_encodable.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// A real Envoy takes its listeners from the test server; attach reads Envoy's admin.

/// Starts Envoy on `boot`, written with its log (`envoy.log`) into `dir`; it is stopped when
/// the guard drops. (For a TCP admin address, which `LiveEnvoy` does not wait on.)
fn spawn_envoy(bin: &Path, dir: &Path, boot: &Value) -> Kill {
    std::fs::write(dir.join("bootstrap.json"), serde_json::to_vec(boot).unwrap()).unwrap();
    let log = std::fs::File::create(dir.join("envoy.log")).unwrap();
    let child = Command::new(bin)
        .args(["--disable-hot-restart", "--concurrency", "1", "-l", "warning", "-c"])
        .arg(dir.join("bootstrap.json"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    Kill(child)
}

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
    drop(held);
    let _envoy = spawn_envoy(&bin, dir.path(), &boot);
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
        findings(&a).as_array().unwrap().iter().any(|f| f["code"] == "XDS105" || f["rule"] == "match-blackhole"),
        "{a}"
    );
    assert_eq!(a["inputs"][0]["source"], format!("http://{admin}"));
    // --save keeps the dump as fetched: `check` of the folder says the same.
    let saved = dir.path().join("saved");
    let again = xdsck(&["attach", &format!("http://{admin}"), "--save", saved.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code(&again), code(&attached), "{}", stderr(&again));
    assert!(saved.join("config_dump.json").is_file());
    let from_saved = json_out(&xdsck(&["check", saved.to_str().unwrap(), "--format", "json"]));
    assert_eq!(findings(&from_saved), findings(&json_out(&again)));
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

/// An Envoy with static listeners only (no LDS): `?resource=static_listeners` answers with the
/// `StaticListener` items, which attach reads as such; `?resource=dynamic_listeners` answers
/// `{}`, which attach reports as a config_dump with no listener (an XDS303 note, exit 0), not
/// as something that is not Envoy configuration.
#[test]
fn attach_reads_each_resource_answer_of_a_static_envoy() {
    let bin = envoy::binary();
    let (ports, held) = envoy::free_ports(1, &[Ipv4Addr::LOCALHOST]);
    let envoy_dir = tempfile::tempdir().unwrap();
    let admin_sock = LiveEnvoy::admin_socket(envoy_dir.path());
    let clusters: Vec<Value> =
        ["api", "wild"].iter().map(|c| json!({"name": c, "type": "STATIC", "connect_timeout": "1s"})).collect();
    let boot = json!({
        "admin": {"address": {"pipe": {"path": admin_sock.to_str().unwrap()}}},
        "static_resources": {"listeners": [edge(ports[0], true)], "clusters": clusters}
    });
    drop(held);
    let live = LiveEnvoy::start(&bin, envoy_dir, &boot).unwrap();
    let admin_url = format!("unix://{}", admin_sock.display());

    let dir = tempfile::tempdir().unwrap();
    let statics = live.get("/config_dump?resource=static_listeners").unwrap();
    assert!(statics.contains("ListenersConfigDump.StaticListener"), "{statics}");
    let statics_path = dir.path().join("static_listeners.json");
    std::fs::write(&statics_path, &statics).unwrap();
    let checked = json_out(&xdsck(&["check", statics_path.to_str().unwrap(), "--format", "json"]));
    let attached = xdsck(&["attach", &format!("{admin_url}?resource=static_listeners"), "--format", "json"]);
    assert_eq!(code(&attached), 1, "{}", stderr(&attached));
    let a = json_out(&attached);
    assert_eq!(a["inputs"][0]["kind"], "config_dump (static_listeners)", "{a}");
    assert_eq!(a["inputs"][0]["listeners"], 1, "{a}");
    assert_eq!(a["inputs"][0]["filter_chains"], 2, "{a}");
    assert_eq!(findings(&a), findings(&checked));
    assert!(a["findings"].as_array().unwrap().iter().any(|f| f["code"] == "XDS201"), "the edge black hole: {a}");

    let dynamics = live.get("/config_dump?resource=dynamic_listeners").unwrap();
    assert_eq!(dynamics.trim(), "{}", "Envoy's answer without dynamic listeners");
    let attached = xdsck(&["attach", &format!("{admin_url}?resource=dynamic_listeners"), "--format", "json"]);
    assert_eq!(code(&attached), 0, "{}", stderr(&attached));
    let a = json_out(&attached);
    assert_eq!(a["inputs"][0]["kind"], "config_dump", "{a}");
    assert_eq!(a["inputs"][0]["listeners"], 0, "{a}");
    let found: Vec<&Value> = a["findings"].as_array().unwrap().iter().map(|f| &f["code"]).collect();
    assert_eq!(found, ["XDS303"], "{a}");
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

fn next_json(rx: &mpsc::Receiver<String>) -> Value {
    let line = rx.recv_timeout(Duration::from_secs(10)).expect("a watch update within 10 s");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// The names of the resources of a type a watch line says were added.
fn added(v: &Value, type_name: &str) -> Vec<String> {
    (v["resources"]["added"].as_array().unwrap().iter())
        .filter(|r| r["type"] == type_name)
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
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
    let rx = lines(child.stdout.take().unwrap());
    let mut child = Kill(child);

    let first = next_json(&rx);
    assert_eq!(first["version"], "1");
    assert!(!first["findings"]["new"].as_array().unwrap().is_empty(), "{first}");
    assert!(first["findings"]["fixed"].as_array().unwrap().is_empty());
    let warned = codes(&first["findings"]["new"]);

    // A changed listener set: the duplicate appears, the edge's warning goes.
    server.set(state("2", &[edge(10443, false), duplicate(8443)]));
    let second = next_json(&rx);
    assert_eq!(second["version"], "2", "{second}");
    assert_eq!(codes(&second["findings"]["fixed"]), warned, "{second}");
    assert!(codes(&second["findings"]["new"]).iter().any(|c| c.contains("\"dup\"")), "{second}");

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
    assert_eq!(codes(&third["findings"]["new"]), warned);
    assert!(codes(&third["findings"]["fixed"]).iter().any(|c| c.contains("\"dup\"")));
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
    // of a type nobody asked for. Both are ACKed; xdsck reports them to the user. Envoy would
    // reject the whole update for the one resource, so the response is unreadable as a whole.
    let mut st = state("7", &[edge(10443, true)]);
    st.resources.push(envoy_types::pb::google::protobuf::Any {
        type_url: proto_build::LISTENER_TYPE.into(),
        value: vec![0x0a, 0xff, 0xff, 0xff],
    });
    st.extra_type_first = Some("type.googleapis.com/cilium.NetworkPolicy".into());
    let server = rt.block_on(XdsServer::start(Bind::Unix(dir.path().join("xds.sock")), st));
    let out = xdsck(&["attach", &server.url(), "--type", "ads", "--format", "json"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let v = json_out(&out);
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{v}");
    assert_eq!(findings[0]["code"], "XDS006", "{v}");
    assert_eq!(findings[0]["location"]["pointer"], "/0/resources/1");
    assert!(findings[0]["message"].as_str().unwrap().contains("does not decode"), "{v}");
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

// ---------------------------------------------------------------------------------------------
// 100 MB answers and --max-bytes

const MB: usize = 1 << 20;

/// `edge` as listener number `i`: its own name and port.
fn edge_n(i: usize) -> Value {
    let mut l = edge(20000 + i as u16, true);
    l["name"] = json!(format!("edge-{i}"));
    l
}

/// `n` listeners, each padded to `each` bytes with a field Listener does not have (field 1000,
/// length-delimited): protobuf decoders skip it, so the response is large and cheap to make,
/// and its findings are those of the `n` listeners and one `XDS215` each for the padding.
fn padded_listeners(n: usize, each: usize) -> Vec<envoy_types::pb::google::protobuf::Any> {
    (0..n)
        .map(|i| {
            let mut any = proto_build::listener_any(&edge_n(i));
            let pad = each.saturating_sub(any.value.len() + 8);
            prost::encoding::encode_key(1000, prost::encoding::WireType::LengthDelimited, &mut any.value);
            prost::encoding::encode_varint(pad as u64, &mut any.value);
            any.value.resize(any.value.len() + pad, b'p');
            any
        })
        .collect()
}

/// A config_dump of `n` active listeners, padded to `total` bytes with a long string in a
/// ClustersConfigDump field xdsck does not read.
fn padded_dump(n: usize, total: usize) -> Vec<u8> {
    let listeners: Vec<Value> = (0..n)
        .map(|i| {
            let mut l = edge_n(i);
            l["@type"] = json!(proto_build::LISTENER_TYPE);
            json!({"name": l["name"], "active_state": {"version_info": "1", "listener": l}})
        })
        .collect();
    let doc = json!({"configs": [
        {"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump", "dynamic_listeners": listeners},
        {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump", "version_info": "PAD"}]});
    let text = serde_json::to_vec_pretty(&doc).unwrap();
    let at = text.windows(5).position(|w| w == b"\"PAD\"").unwrap() + 1;
    let pad = total.saturating_sub(text.len() - 3);
    let mut out = Vec::with_capacity(text.len() + pad);
    out.extend_from_slice(&text[..at]);
    out.resize(at + pad, b'x');
    out.extend_from_slice(&text[at + 3..]);
    out
}

/// A report as far as a protobuf can tell: proto3 does not write a field at its default value,
/// so a constraint broken by an explicit `""` or `0` in JSON is, in the protobuf, broken by a
/// field left out, which xdsck words and places differently (at the field, or at its message).
/// Envoy's text is the same: those findings are compared by it alone.
fn defaults_unseen(report: &Value) -> Value {
    let mut r = report.clone();
    if let Some(list) = r["findings"].as_array_mut() {
        for f in list.iter_mut().filter(|f| f["code"] == "XDS120") {
            *f = json!({"code": f["code"], "envoy_error": f["envoy_error"]});
        }
    }
    r
}

/// Asserts two reports have the same findings, in any order (a protobuf has no offsets to sort
/// by), without printing hundreds of them when they do not.
fn assert_same_findings(got: &Value, want: &Value, what: &str) {
    let sorted = |v: &Value| {
        let mut a: Vec<String> = findings(v).as_array().unwrap().iter().map(Value::to_string).collect();
        a.sort();
        a
    };
    let (g, w) = (sorted(got), sorted(want));
    assert_eq!(g.len(), w.len(), "{what}: {} findings, want {}", g.len(), w.len());
    if let Some((a, b)) = g.iter().zip(&w).find(|(a, b)| a != b) {
        panic!("{what}: found\n{a}\nwhere\n{b}\nwas expected");
    }
}

/// The one finding of a report that could not load its input, which must be XDS009.
fn limit_finding(out: &Output) -> Value {
    assert_eq!(code(out), 2, "{}", stderr(out));
    let v = json_out(out);
    let f = v["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{v}");
    assert_eq!(f[0]["code"], "XDS009", "{v}");
    assert_eq!(f[0]["rule"], "input-limit", "{v}");
    assert!(f[0]["notes"].to_string().contains("--max-bytes"), "{v}");
    f[0].clone()
}

/// The findings of `n` copies of `edge`, as `xdsck check` gives them.
fn edge_findings(dir: &Path, n: usize) -> Value {
    let listeners: Vec<Value> = (0..n).map(edge_n).collect();
    json_out(&xdsck(&["check", discovery_json(dir, &listeners).to_str().unwrap(), "--format", "json"]))
}

#[test]
fn a_100_mb_listener_response_is_checked_and_one_over_max_bytes_is_refused_unread() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let n = 100;
    let st = State { version: "1".into(), resources: padded_listeners(n, MB), ..State::default() };
    let size: usize = st.resources.iter().map(|a| a.value.len()).sum();
    assert!(size > 100_000_000, "{size}");
    let server = rt.block_on(XdsServer::start(Bind::Tcp("127.0.0.1:0".parse().unwrap()), st));
    let want = edge_findings(dir.path(), n);
    assert!(!findings(&want).as_array().unwrap().is_empty());

    // Under the default limit (1 GiB): read and checked like any other response.
    let out = xdsck(&["attach", &server.url(), "--format", "json"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let mut got = json_out(&out);
    assert_eq!(got["inputs"][0]["listeners"], n);
    // The padding is a field Envoy does not know: each listener has it, ignored (XDS215).
    let all = got["findings"].as_array().unwrap().clone();
    let (padding, rest): (Vec<Value>, Vec<Value>) = all.into_iter().partition(|f| {
        f["code"] == "XDS215" && f["location"]["pointer"].as_str().is_some_and(|p| p.ends_with("/1000"))
    });
    assert_eq!(padding.len(), n, "{padding:?}");
    got["findings"] = Value::Array(rest);
    assert_same_findings(&got, &want, "100 MB over gRPC");
    assert!(server.requests().iter().any(|r| r.version_info == "1" && r.response_nonce == "nonce-1"));

    // Over --max-bytes: refused from the length prefix, exit 2 with the XDS009 finding that
    // names the limit and the flag; never ACKed (nor NACKed).
    let before = server.requests().len();
    let out = xdsck(&["attach", &server.url(), "--format", "json", "--max-bytes", "10000000"]);
    let f = limit_finding(&out);
    let message = f["message"].as_str().unwrap();
    assert!(message.contains("over the size limit of 10000000 bytes"), "{f}");
    let announced: usize = message.split("the input is ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(announced > size && announced < size + 100_000, "{f}");
    assert!(f["notes"].to_string().contains("refused from its announced length"), "{f}");
    assert_eq!(f["location"]["source"], server.url());
    assert!(
        server.requests()[before..].iter().filter(|r| r.type_url == LISTENER_TYPE).all(|r| r.response_nonce.is_empty()),
        "{:?}",
        &server.requests()[before..]
    );
    // The text report says the same.
    let out = xdsck(&["attach", &server.url(), "--max-bytes", "10000000", "--color", "never"]);
    assert_eq!(code(&out), 2);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error[XDS009]") && text.contains("--max-bytes N"), "{text}");
    assert_only_acks(&server, &["1"]);
}

#[test]
fn a_100_mb_config_dump_is_checked_and_one_over_max_bytes_is_not_read_past_it() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let n = 50;
    let body = Arc::new(padded_dump(n, 100 * MB));
    assert!(body.len() >= 100 * MB);
    let dump = dir.path().join("dump.json");
    std::fs::write(&dump, body.as_slice()).unwrap();
    let want = json_out(&xdsck(&["check", dump.to_str().unwrap(), "--format", "json"]));
    assert_eq!(want["inputs"][0]["listeners"], n, "{want}");
    assert!(!findings(&want).as_array().unwrap().is_empty());

    // Envoy streams a big dump chunked (here on a Unix socket, as Cilium's admin.sock).
    let unix =
        rt.block_on(AdminServer::start(Bind::Unix(dir.path().join("admin.sock")), Answer::Chunked(body.clone())));
    let tcp = rt.block_on(AdminServer::start(Bind::Tcp("127.0.0.1:0".parse().unwrap()), Answer::Length(body.clone())));
    for server in [&unix, &tcp] {
        // Under the default limit: the findings of `check` on the same bytes.
        let out = xdsck(&["attach", &server.url(), "--format", "json"]);
        assert_eq!(code(&out), 1, "{}: {}", server.url(), stderr(&out));
        assert_same_findings(&json_out(&out), &want, &server.url());
    }

    // Over the limit, chunked: not read past it. The server could hand the kernel only the
    // limit and what the socket buffers hold before xdsck hung up.
    unix.reset_written();
    let out = xdsck(&["attach", &unix.url(), "--format", "json", "--max-bytes", "10000000"]);
    let f = limit_finding(&out);
    assert!(f["message"].as_str().unwrap().contains("more than 10000000 bytes"), "{f}");
    assert!(f["notes"].to_string().contains("was not read past the limit"), "{f}");
    let written = unix.body_bytes_written();
    assert!(written < 40 * MB as u64, "{written} bytes of the body were sent: xdsck read past the limit");
    // Over the limit with a Content-Length: refused before the body.
    tcp.reset_written();
    let out = xdsck(&["attach", &tcp.url(), "--format", "json", "--max-bytes", "10000000"]);
    let f = limit_finding(&out);
    assert!(f["message"].as_str().unwrap().contains(&format!("the input is {} bytes", body.len())), "{f}");
    let written = tcp.body_bytes_written();
    assert!(written < 40 * MB as u64, "{written} bytes of the body were sent: xdsck read the body");
    // One byte over, both ways.
    let under = (body.len() - 1).to_string();
    for server in [&unix, &tcp] {
        limit_finding(&xdsck(&["attach", &server.url(), "--format", "json", "--max-bytes", &under]));
    }
}

/// The limit is the same number on both paths and in `check`: at the size accepted, one byte
/// under it refused. (Small answers: this is about the boundary, not the volume.)
#[test]
fn max_bytes_is_exact_on_both_paths() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let body = Arc::new(padded_dump(2, 300_000));
    let path = dir.path().join("dump.json");
    std::fs::write(&path, body.as_slice()).unwrap();
    let (len, under) = (body.len().to_string(), (body.len() - 1).to_string());
    assert_eq!(code(&xdsck(&["check", path.to_str().unwrap(), "--max-bytes", &len])), 1);
    assert_eq!(code(&xdsck(&["check", path.to_str().unwrap(), "--max-bytes", &under])), 2);
    for answer in [Answer::Chunked(body.clone()), Answer::Length(body.clone())] {
        let admin = rt.block_on(AdminServer::start(Bind::Tcp("127.0.0.1:0".parse().unwrap()), answer));
        assert_eq!(code(&xdsck(&["attach", &admin.url(), "--max-bytes", &len])), 1);
        limit_finding(&xdsck(&["attach", &admin.url(), "--format", "json", "--max-bytes", &under]));
    }

    // gRPC: the encoded DiscoveryResponse. Its size comes from the refusal's message.
    let st = State { version: "1".into(), resources: padded_listeners(2, 100_000), ..State::default() };
    let server = rt.block_on(XdsServer::start(Bind::Unix(dir.path().join("xds.sock")), st));
    let f = limit_finding(&xdsck(&["attach", &server.url(), "--format", "json", "--max-bytes", "1000"]));
    let size: usize = f["message"]
        .as_str()
        .unwrap()
        .split("the input is ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(code(&xdsck(&["attach", &server.url(), "--max-bytes", &size.to_string()])), 1);
    limit_finding(&xdsck(&["attach", &server.url(), "--format", "json", "--max-bytes", &(size - 1).to_string()]));
    assert_only_acks(&server, &["1"]);
}

// ---------------------------------------------------------------------------------------------
// The admin path's faults

#[test]
fn admin_faults_are_clear_errors() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let body = Arc::new(padded_dump(2, MB));
    let server = rt.block_on(AdminServer::start(Bind::Unix(dir.path().join("admin.sock")), Answer::Silent));
    let url = server.url();

    // No answer at all, then an answer that stops half-way: --timeout, each time.
    let t = Instant::now();
    let out = xdsck(&["attach", &url, "--timeout", "1"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("timed out after 1 s waiting for the admin response from"), "{}", stderr(&out));
    server.set(Answer::StallAfter(body.clone(), 300_000));
    let out = xdsck(&["attach", &url, "--timeout", "1"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("timed out after 1 s waiting for the rest of the admin response"),
        "{}",
        stderr(&out)
    );
    assert!(t.elapsed() < Duration::from_secs(8));

    // The connection lost in the middle of the body.
    server.set(Answer::CutAfter(body.clone(), 300_000));
    let out = xdsck(&["attach", &url]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("reading the admin response from") && err.contains("failed"), "{err}");
    assert!(!err.contains("xDS"), "{err}");

    // An error status with a large body: Envoy's text, cut short.
    let mut text = b"no such resource: ".to_vec();
    text.resize(10 * MB, b'z');
    server.set(Answer::Status(404, Arc::new(text)));
    let out = xdsck(&["attach", &url]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("answered HTTP 404: no such resource: zzz"), "{}", &err[..err.len().min(300)]);
    assert!(err.len() < 3000, "{} bytes on stderr", err.len());

    // Bytes that are not UTF-8, and text that is not a config_dump: findings, as for `check`.
    let mut bad = br#"{"configs": ["#.to_vec();
    bad.extend_from_slice(&[0xff, 0xfe]);
    server.set(Answer::Length(Arc::new(bad)));
    let out = xdsck(&["attach", &url, "--format", "json"]);
    assert_eq!(code(&out), 2);
    assert_eq!(json_out(&out)["findings"][0]["code"], "XDS003", "{}", String::from_utf8_lossy(&out.stdout));
    server.set(Answer::Chunked(Arc::new(b"<html>not envoy</html>".to_vec())));
    let out = xdsck(&["attach", &url, "--format", "json"]);
    assert_eq!(code(&out), 2);
    let code0 = json_out(&out)["findings"][0]["code"].as_str().unwrap().to_owned();
    assert!(code0.starts_with("XDS00"), "{code0}");
    // Each try was one request for /config_dump.
    let reqs = server.requests();
    assert!(reqs.len() >= 6 && reqs.iter().all(|r| r == "GET /config_dump HTTP/1.1"), "{reqs:?}");
}

/// An address whose path cannot go in a request line is refused as an address (it used to
/// panic while building the request).
#[test]
fn an_admin_path_that_is_not_a_valid_request_target_is_an_address_error() {
    for address in ["http://127.0.0.1:9/config dump", "unix:///run/admin.sock?resource=a b"] {
        let out = xdsck(&["attach", address]);
        assert_eq!(code(&out), 2, "{address}: {}", stderr(&out));
        assert!(stderr(&out).contains("invalid address"), "{address}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{address}: {}", stderr(&out));
    }
}

/// Waits (at most 20 s) for a line that satisfies `want`; returns it with the lines before it.
fn wait_line(rx: &mpsc::Receiver<String>, what: &str, want: impl Fn(&str) -> bool) -> (String, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if want(&l) => return (l, seen),
            Ok(l) => seen.push(l),
            Err(_) => panic!("no line {what} within 20 s; saw: {seen:#?}"),
        }
    }
}

#[test]
fn admin_watch_reports_each_fault_keeps_the_last_snapshot_and_recovers() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let v1 = Arc::new(padded_dump(1, 1000));
    let server = rt.block_on(AdminServer::start(Bind::Unix(dir.path().join("admin.sock")), Answer::Chunked(v1)));
    let (child, out, err) = attach_watch(
        &["--format", "json"],
        &[&server.url(), "--interval", "0.1", "--timeout", "1", "--max-bytes", "2000000"],
    );
    let first = next_json(&out);
    assert_eq!(added(&first, "Listener"), ["edge-0"], "{first}");
    assert!(!first["findings"]["new"].as_array().unwrap().is_empty(), "{first}");

    // Over the limit, cut, stalled: each a warning; the snapshot stands (no update line).
    let big = Arc::new(padded_dump(1, 10 * MB));
    let faults = [
        (Answer::Chunked(big.clone()), "over the size limit of 2000000 bytes; raise the limit with --max-bytes N"),
        (Answer::Length(big.clone()), "is 10485760 bytes, over the size limit of 2000000 bytes"),
        (Answer::CutAfter(Arc::new(padded_dump(1, 100_000)), 5000), "reading the admin response from"),
        (Answer::StallAfter(big.clone(), 1000), "timed out after 1 s waiting for the rest of the admin response"),
        (Answer::Silent, "timed out after 1 s waiting for the admin response"),
        (Answer::Status(503, Arc::new(b"draining".to_vec())), "answered HTTP 503: draining"),
    ];
    for (answer, want) in faults {
        server.set(answer);
        let (line, _) = wait_line(&err, want, |l| l.contains(want));
        assert!(line.contains("retrying in") && line.contains("the last snapshot stands"), "{line}");
    }
    assert!(out.try_recv().is_err(), "a fault is not an update");

    // Served again, with another listener set: the next update.
    server.set(Answer::Length(Arc::new(padded_dump(3, 1000))));
    let next = next_json(&out);
    assert_eq!(added(&next, "Listener"), ["edge-1", "edge-2"], "{next}");
    assert!(!next["findings"]["new"].as_array().unwrap().is_empty(), "{next}");
    drop(child);
}

// ---------------------------------------------------------------------------------------------
// The xDS path: floods, garbage, stalls, oversize and cuts

const POLICY: &str = "type.googleapis.com/cilium.NetworkPolicy";

fn flood(count: usize, read_requests: bool) -> Flood {
    Flood { type_url: POLICY.into(), count, resource_bytes: 300, read_requests }
}

#[test]
fn a_flood_of_an_unknown_type_is_acked_reported_once_and_the_listeners_still_come() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let want = edge_findings(dir.path(), 1);
    // As go-control-plane serves (requests read all along), and a server that reads none
    // while it floods: 20k responses of ~350 bytes, and their ACKs, outgrow both HTTP/2
    // windows, so a client that waited for room for each ACK before reading on would never get
    // to the listeners (it did: it timed out).
    for (read_requests, count) in [(true, 10_000), (false, 20_000)] {
        let st = State {
            version: "1".into(),
            resources: vec![proto_build::listener_any(&edge_n(0))],
            flood: Some(flood(count, read_requests)),
            ..State::default()
        };
        let server =
            rt.block_on(XdsServer::start(Bind::Unix(dir.path().join(format!("xds-{read_requests}.sock"))), st));
        for api in ["ads", "lds"] {
            let before = server.requests().len();
            let out = xdsck(&["attach", &server.url(), "--type", api, "--format", "json"]);
            assert_eq!(code(&out), 1, "read {read_requests} {api}: {}", stderr(&out));
            let got = json_out(&out);
            assert_eq!(findings(&got), findings(&want), "read {read_requests} {api}");
            let err = stderr(&out);
            assert_eq!(err.lines().count(), 1, "reported once: {err}");
            assert!(err.contains("cilium.NetworkPolicy") && err.contains("did not ask for"), "{err}");
            // The listeners are ACKed; they came last, after the flood's nonces.
            let reqs = &server.requests()[before..];
            // xdsck never subscribes to the type: every request of it has a nonce, an ACK.
            assert!(reqs.iter().all(|r| r.type_url != POLICY || !r.response_nonce.is_empty()));
            let nonce = |r: &envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest| -> usize {
                r.response_nonce["nonce-".len()..].parse().unwrap()
            };
            let last = reqs
                .iter()
                .find(|r| r.type_url == LISTENER && r.version_info == "1" && !r.response_nonce.is_empty())
                .map(nonce)
                .expect("the listeners are ACKed");
            let acked: std::collections::BTreeSet<usize> =
                reqs.iter().filter(|r| r.type_url == POLICY).map(nonce).collect();
            // The flood's last response is ACKed, and every one when the server reads as it
            // sends. (One that does not read gets the latest ACK of each type when there is
            // room again: a server heeds only the nonce it sent last.) Nonces count per stream:
            // the flood's are 1..=count on the stream that carries the listeners.
            assert!(acked.contains(&count), "the flood's last response is ACKed");
            assert!(acked.iter().all(|n| (1..=count).contains(n)), "{acked:?}");
            assert!(last > count, "the listeners came after the flood");
            if read_requests {
                assert_eq!(acked.len(), count, "a server that reads as it sends gets every ACK");
            }
        }
        assert_only_acks(&server, &["1"]);
    }
}

const LISTENER: &str = proto_build::LISTENER_TYPE;

#[test]
fn a_connection_lost_in_the_middle_of_a_large_response_is_a_clear_error() {
    let rt = runtime();
    let st = State { version: "1".into(), resources: padded_listeners(4, MB), ..State::default() };
    let server = rt.block_on(XdsServer::start(Bind::Tcp("127.0.0.1:0".parse().unwrap()), st));
    let Bind::Tcp(addr) = server.addr().clone() else { unreachable!() };
    let relay = rt.block_on(CutRelay::start(addr, 1_500_000));
    let out = xdsck(&["attach", &relay.url(), "--timeout", "5"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.starts_with("xdsck: error: ") && err.contains(&relay.url()["grpc://".len()..]), "{err}");
    assert!(!err.contains("panicked") && !err.contains("timed out"), "{err}");
    // The same server, whole: fine.
    assert_eq!(code(&xdsck(&["attach", &server.url()])), 1);
}

/// --watch through every fault of the xDS path, in one run: a stalled server, a flood of an
/// unknown type, an undecodable resource, a response over --max-bytes, a stream cut; each is
/// reported, and the watch carries on with the next good state.
#[test]
fn watch_reports_each_xds_fault_and_recovers() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let mut server =
        rt.block_on(XdsServer::start(Bind::Unix(dir.path().join("xds.sock")), state("1", &[edge(10443, true)])));
    server.set_mode(Mode::Stall);
    let (child, out, err) = attach_watch(
        &["--format", "json"],
        &[&server.url(), "--type", "ads", "--timeout", "1", "--max-bytes", "2000000"],
    );

    let mut log = Vec::new();
    // Stalled before the first response: reported, and retried.
    let (line, before) = wait_line(&err, "about the stall", |l| l.contains("waiting for the first Listener response"));
    log.extend(before);
    assert!(line.contains("timed out after 1 s") && line.contains("retrying in"), "{line}");
    server.set_mode(Mode::Serve);
    let first = next_json(&out);
    assert_eq!(first["version"], "1", "{first}");
    let warned = codes(&first["findings"]["new"]);

    // A new stream that starts with 10k responses of a type nobody asked for, and a listener
    // that does not decode: one line about the type, the garbage as the one finding (Envoy
    // rejects such an update whole), the findings of version 1 gone with it.
    let mut st = state("2", &[edge(10443, true)]);
    st.flood = Some(flood(10_000, false));
    st.resources.push(envoy_types::pb::google::protobuf::Any {
        type_url: LISTENER.into(),
        value: vec![0x0a, 0xff, 0xff, 0xff],
    });
    let restart_with = |server: &mut XdsServer, st: State| {
        rt.block_on(async {
            server.stop();
            // The cut streams are gone before the state changes: it reaches new streams only.
            tokio::time::sleep(Duration::from_millis(300)).await;
            server.set(st);
            server.restart().await;
        });
    };
    restart_with(&mut server, st.clone());
    let (second, before) = wait_line(&out, "for version 2", |l| l.contains("\"version\":\"2\""));
    assert!(before.is_empty(), "{before:?}");
    let second: Value = serde_json::from_str(&second).unwrap();
    assert_eq!(codes(&second["findings"]["new"]), vec!["XDS006 null".to_owned()], "{second}");
    assert_eq!(codes(&second["findings"]["fixed"]), warned, "{second}");
    // The next stream floods again, with one more listener (a version that changed nothing
    // would print nothing): the one change is its line.
    st.version = "3".into();
    st.resources.push(proto_build::listener_any(&edge_n(1)));
    restart_with(&mut server, st);
    let (third, before) = wait_line(&out, "for version 3", |l| l.contains("\"version\":\"3\""));
    assert!(before.is_empty(), "{before:?}");
    let third: Value = serde_json::from_str(&third).unwrap();
    assert_eq!(added(&third, "Listener"), ["edge-1"], "{third}");

    // Over --max-bytes: a warning naming the limit and the flag; retried until it fits.
    server.set(State { version: "4".into(), resources: padded_listeners(3, MB), ..State::default() });
    let (line, before) = wait_line(&err, "about the size", |l| l.contains("over the size limit"));
    log.extend(before);
    assert!(line.contains("over the size limit of 2000000 bytes") && line.contains("--max-bytes"), "{line}");
    assert!(line.contains("the last snapshot stands"), "{line}");
    server.set(state("5", &[edge(10443, true), duplicate(8443)]));
    let (fifth, _) = wait_line(&out, "for version 5", |l| l.contains("\"version\":\"5\""));
    let fifth: Value = serde_json::from_str(&fifth).unwrap();
    assert!(codes(&fifth["findings"]["new"]).iter().any(|c| c.contains("\"dup\"")), "{fifth}");
    assert_eq!(codes(&fifth["findings"]["fixed"]), vec!["XDS006 null".to_owned()], "{fifth}");
    // The edge listener is back (versions 2 and 3 were unreadable as a whole).
    assert!(warned.iter().all(|c| codes(&fifth["findings"]["new"]).contains(c)), "{fifth}");

    drop(child);
    log.extend(err.iter());
    // Two streams flooded, one line about it.
    assert_eq!(log.iter().filter(|l| l.contains("cilium.NetworkPolicy")).count(), 1, "{log:#?}");
    assert!(log.iter().all(|l| !l.contains("panicked")), "{log:#?}");
    // Version 4's listeners were over the limit: never ACKed. Its other answers (no clusters:
    // a few bytes) are ACKed when they arrive before version 5 does, which a loaded machine
    // lets happen.
    assert_only_acks(&server, &["1", "2", "3", "4", "5"]);
    let acked_4 =
        server.requests().into_iter().filter(|r| r.version_info == "4").map(|r| r.type_url).collect::<Vec<_>>();
    assert!(!acked_4.iter().any(|t| t == proto_build::LISTENER_TYPE), "version 4's listeners were ACKed: {acked_4:?}");
}

// ---------------------------------------------------------------------------------------------
// Route tables and clusters over xDS

/// A listener whose HCM takes its routes from RDS table `table`.
fn rds_listener(name: &str, port: u16, table: &str) -> Value {
    json!({"name": name,
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": name,
            "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
            "rds": {"route_config_name": table, "config_source": {"ads": {}, "resource_api_version": "V3"}}}}]}]})
}

/// Table `web`: a domain twice (Envoy refuses the table) and a route to a cluster CDS does not
/// have (refused too: the table validates its clusters).
fn web_routes(domain_twice: bool) -> Value {
    let second = if domain_twice { "a.example.com" } else { "b.example.com" };
    json!({"name": "web", "validate_clusters": true, "virtual_hosts": [
        {"name": "a", "domains": ["a.example.com"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "api"}}]},
        {"name": "b", "domains": [second], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "gone"}}]}]})
}

fn api_cluster() -> Value {
    json!({"name": "api", "type": "STATIC", "connect_timeout": "1s", "load_assignment": {"cluster_name": "api",
        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 1}}}}]}]}})
}

fn full_state(version: &str, listeners: &[Value], routes: &[Value], clusters: &[Value]) -> State {
    State {
        version: version.into(),
        resources: listeners.iter().map(proto_build::listener_any).collect(),
        routes: routes.iter().map(proto_build::route_any).collect(),
        clusters: clusters.iter().map(proto_build::cluster_any).collect(),
        ..State::default()
    }
}

/// The same resources as three DiscoveryResponse files, one Envoy's, for `xdsck check --one-envoy`.
fn check_three(dir: &Path, listeners: &[Value], routes: &[Value], clusters: &[Value]) -> Value {
    let mut paths = Vec::new();
    for (file, type_url, list) in [
        ("lds.json", LISTENER_TYPE, listeners),
        ("rds.json", support::xds_server::ROUTE_TYPE, routes),
        ("cds.json", support::xds_server::CLUSTER_TYPE, clusters),
    ] {
        let resources: Vec<Value> = list
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r["@type"] = json!(type_url);
                r
            })
            .collect();
        let path = dir.join(file);
        let doc = json!({"version_info": "1", "type_url": type_url, "resources": resources});
        std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
        paths.push(path.to_str().unwrap().to_owned());
    }
    let mut args = vec!["check", "--one-envoy", "--format", "json"];
    args.extend(paths.iter().map(String::as_str));
    json_out(&xdsck(&args))
}

/// What a finding says, wherever it is: code, message, listener.
fn said(report: &Value) -> Vec<String> {
    let mut v: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {} {}", f["code"], f["listener"], f["message"]))
        .collect();
    v.sort();
    v
}

#[test]
fn attach_follows_the_listeners_route_tables_and_the_clusters_sotw_and_delta() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let listeners = [rds_listener("http", 8080, "web")];
    let routes = [web_routes(true)];
    let clusters = [api_cluster()];
    let want = check_three(dir.path(), &listeners, &routes, &clusters);
    let want = said(&want);
    assert!(want.iter().any(|f| f.contains("XDS1") && f.contains("a.example.com")), "{want:#?}");
    assert!(want.iter().any(|f| f.contains("\"XDS117\"") && f.contains("'gone'")), "{want:#?}");
    let server = rt.block_on(XdsServer::start(
        Bind::Unix(dir.path().join("xds.sock")),
        full_state("1", &listeners, &routes, &clusters),
    ));
    for (i, flags) in [&["--type", "ads"][..], &["--type", "lds"], &["--type", "ads", "--delta"]].iter().enumerate() {
        let url = server.url();
        let saved = dir.path().join(format!("saved-{i}"));
        let mut args = vec!["attach", "--no-config", url.as_str(), "--save", saved.to_str().unwrap()];
        args.extend(*flags);
        args.extend(["--format", "json"]);
        let out = xdsck(&args);
        assert_eq!(code(&out), 1, "{flags:?}: {}", stderr(&out));
        let got = json_out(&out);
        assert_eq!(said(&got), want, "{flags:?}");
        // What was received, saved, gives `check` the same findings at the same places.
        let again = json_out(&xdsck(&["check", "--no-config", saved.to_str().unwrap(), "--format", "json"]));
        assert_eq!(findings(&again), findings(&got), "{flags:?}");
        assert!(saved.join("xds.json").is_file());
    }
    // xdsck asked RDS for the name the listener gives, and only ever ACKed.
    assert!(
        server.requests().iter().any(|r| r.type_url == support::xds_server::ROUTE_TYPE && r.resource_names == ["web"])
    );
    assert_only_acks(&server, &["1"]);
    let delta = server.delta_requests();
    assert!(delta.iter().any(|r| r.resource_names_subscribe == ["web"]), "{delta:?}");
    assert!(delta.iter().all(|r| r.error_detail.is_none()), "a NACK: {delta:?}");
    assert!(delta.iter().any(|r| !r.response_nonce.is_empty()), "no ACK: {delta:?}");

    // A table the server does not have: checked without it after --timeout, and said where the
    // listener asks for it, as `check` says it of the same answers.
    let listeners = [rds_listener("http", 8080, "web"), rds_listener("api", 8081, "api")];
    let routes = [web_routes(false)];
    server.set(full_state("2", &listeners, &routes, &clusters));
    let want = said(&check_three(dir.path(), &listeners, &routes, &clusters));
    assert!(want.iter().any(|f| f.contains("\"XDS304\"") && f.contains("'api'")), "{want:#?}");
    for flags in [&["--type", "ads"][..], &["--type", "ads", "--delta"]] {
        let url = server.url();
        let mut args = vec!["attach", "--no-config", url.as_str(), "--timeout", "2", "--format", "json"];
        args.extend(flags);
        let out = xdsck(&args);
        assert_eq!(said(&json_out(&out)), want, "{flags:?}");
        assert!(stderr(&out).contains("no answer for route tables 'api'"), "{}", stderr(&out));
    }
}

/// The lines a watch prints within `quiet` after the last one.
fn more_lines(rx: &mpsc::Receiver<String>, quiet: Duration) -> Vec<String> {
    rx.try_iter().chain(std::iter::from_fn(|| rx.recv_timeout(quiet).ok())).collect()
}

fn resource_names(v: &Value, what: &str) -> Vec<String> {
    let mut names: Vec<String> = (v["resources"][what].as_array().unwrap().iter())
        .map(|r| format!("{} {}", r["type"].as_str().unwrap(), r["name"].as_str().unwrap()))
        .collect();
    names.sort();
    names
}

#[test]
fn watch_over_xds_prints_the_state_then_exactly_what_changed() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let listeners = [rds_listener("http", 8080, "web")];
    let good = [web_routes(false)];
    let clusters = [api_cluster(), json!({"name": "gone", "type": "STATIC", "connect_timeout": "1s"})];
    let server = rt.block_on(XdsServer::start(
        Bind::Unix(dir.path().join("xds.sock")),
        full_state("1", &listeners, &good, &clusters),
    ));
    for (i, flags) in [&["--type", "ads"][..], &["--type", "ads", "--delta"], &["--type", "lds"]].iter().enumerate() {
        server.set(full_state("1", &listeners, &good, &clusters));
        let url = server.url();
        let mut args = vec![url.as_str(), "--format", "json", "--metrics", "127.0.0.1:0"];
        args.extend(*flags);
        let (child, out, err) = attach_watch(&["--no-config"], &args);
        let quiet = Duration::from_millis(1500);
        // The state: every resource added, no finding.
        let first = next_json(&out);
        assert_eq!(first["version"], "1", "{flags:?} {first}");
        assert_eq!(
            resource_names(&first, "added"),
            ["Cluster api", "Cluster gone", "Listener http", "RouteConfiguration web"],
            "{flags:?} {first}"
        );
        assert!(first["findings"]["new"].as_array().unwrap().is_empty(), "{flags:?} {first}");
        assert!(more_lines(&out, quiet).is_empty(), "{flags:?}");
        let metrics_at = {
            let (line, _) = wait_line(&err, "naming the metrics address", |l| l.contains("serving metrics on"));
            line.rsplit("http://").next().unwrap().split('/').next().unwrap().to_owned()
        };

        // Version 2: the table gives a domain twice. One line: the table updated, the error new.
        server.set(full_state("2", &listeners, &[web_routes(true)], &clusters));
        let second = next_json(&out);
        assert_eq!(second["version"], "2", "{flags:?} {second}");
        assert_eq!(resource_names(&second, "updated"), ["RouteConfiguration web"], "{flags:?} {second}");
        assert!(resource_names(&second, "added").is_empty() && resource_names(&second, "removed").is_empty());
        assert_eq!(codes(&second["findings"]["new"]).len(), 1, "{flags:?} {second}");
        assert!(second["findings"]["new"][0]["code"] == "XDS114", "{flags:?} {second}");
        assert!(more_lines(&out, quiet).is_empty(), "{flags:?}");

        // Version 3: cluster `gone` removed: the route to it is an error.
        server.set(full_state("3", &listeners, &[web_routes(true)], &clusters[..1]));
        let third = next_json(&out);
        assert_eq!(resource_names(&third, "removed"), ["Cluster gone"], "{flags:?} {third}");
        assert!(resource_names(&third, "updated").is_empty(), "{flags:?} {third}");
        assert_eq!(third["findings"]["new"][0]["code"], "XDS117", "{flags:?} {third}");
        assert!(third["findings"]["fixed"].as_array().unwrap().is_empty(), "{flags:?} {third}");
        // The agent's metrics count the route and cluster findings.
        let metrics = http_get(&metrics_at, "/metrics").unwrap();
        for code in ["XDS114", "XDS117"] {
            assert!(
                metrics.lines().any(|l| l.starts_with("xdsck_findings{") && l.contains(code)),
                "{flags:?}: {metrics}"
            );
        }

        // Version 4 changes nothing but the version: nothing is printed.
        server.set(full_state("4", &listeners, &[web_routes(true)], &clusters[..1]));
        assert!(more_lines(&out, quiet).is_empty(), "{flags:?}");

        // Version 5: the table fixed. Both errors go: the domain, and the route to `gone`.
        server.set(full_state("5", &listeners, &good, &clusters[..1]));
        let fifth = next_json(&out);
        assert_eq!(fifth["version"], "5", "{flags:?} {fifth}");
        assert_eq!(resource_names(&fifth, "updated"), ["RouteConfiguration web"], "{flags:?} {fifth}");
        let mut fixed: Vec<String> = (fifth["findings"]["fixed"].as_array().unwrap().iter())
            .map(|f| f["code"].as_str().unwrap().to_owned())
            .collect();
        fixed.sort();
        // `gone` is still named by the fixed table: its XDS117 stays.
        assert_eq!(fixed, ["XDS114"], "{flags:?} {fifth}");
        assert!(more_lines(&out, quiet).is_empty(), "{flags:?}");
        drop(child);
        let log: Vec<String> = err.try_iter().collect();
        assert!(log.iter().all(|l| !l.contains("panicked")), "{i}: {log:#?}");
    }
    assert_only_acks(&server, &["1", "2", "3", "4", "5"]);
}

/// A bootstrap whose listeners, route tables and clusters all come over one ADS stream from the
/// test server, state of the world or incremental.
fn envoy_ads_bootstrap(admin_port: u16, xds_port: u16, delta: bool) -> Value {
    json!({
        "node": {"id": "envoy-under-test", "cluster": "xdsck-test"},
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin_port}}},
        "dynamic_resources": {
            "ads_config": {"api_type": if delta { "DELTA_GRPC" } else { "GRPC" }, "transport_api_version": "V3",
                "grpc_services": [{"envoy_grpc": {"cluster_name": "xds"}}]},
            "lds_config": {"ads": {}, "resource_api_version": "V3"},
            "cds_config": {"ads": {}, "resource_api_version": "V3"}},
        "static_resources": {"clusters": [{
            "name": "xds", "type": "STATIC", "connect_timeout": "1s",
            "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}}}},
            "load_assignment": {"cluster_name": "xds", "endpoints": [{"lb_endpoints": [{"endpoint": {"address":
                {"socket_address": {"address": "127.0.0.1", "port_value": xds_port}}}}]}]}
        }]}
    })
}

/// A real Envoy is the ADS client of the server xdsck observes, SotW and Delta: it takes the
/// listener, the table it names and the clusters; the next version gives a domain twice, which
/// Envoy NACKs with the words xdsck's error carries; xdsck, attached to the same server, only ever
/// ACKs.
#[test]
fn envoy_and_attach_agree_on_route_tables_over_ads_sotw_and_delta() {
    let bin = envoy::binary();
    let rt = runtime();
    for delta in [false, true] {
        let (ports, held) = envoy::free_ports(2, &[Ipv4Addr::LOCALHOST]);
        let listeners = [rds_listener("http", ports[0], "web")];
        let clusters = [api_cluster(), json!({"name": "gone", "type": "STATIC", "connect_timeout": "1s"})];
        let server = rt.block_on(XdsServer::start(
            Bind::Tcp("127.0.0.1:0".parse().unwrap()),
            full_state("1", &listeners, &[web_routes(false)], &clusters),
        ));
        let Bind::Tcp(xds_addr) = server.addr().clone() else { unreachable!() };
        let dir = tempfile::tempdir().unwrap();
        let boot = envoy_ads_bootstrap(ports[1], xds_addr.port(), delta);
        drop(held);
        let _envoy = spawn_envoy(&bin, dir.path(), &boot);
        let logs = || std::fs::read_to_string(dir.path().join("envoy.log")).unwrap_or_default();
        let admin = format!("127.0.0.1:{}", ports[1]);
        // The listener becomes active once its RDS table came: Envoy took all three types.
        wait_for_listeners(&["http"], || http_get(&admin, "/config_dump"), logs);

        // Version 2: the table gives a domain twice. Envoy refuses the table (a NACK).
        server.set(full_state("2", &listeners, &[web_routes(true)], &clusters));
        let deadline = Instant::now() + Duration::from_secs(15);
        let nack = loop {
            let sotw = server.requests().into_iter().filter(|r| r.type_url == support::xds_server::ROUTE_TYPE);
            let incremental =
                server.delta_requests().into_iter().filter(|r| r.type_url == support::xds_server::ROUTE_TYPE);
            let found = sotw.filter_map(|r| r.error_detail).chain(incremental.filter_map(|r| r.error_detail)).next();
            if let Some(status) = found {
                break status.message;
            }
            assert!(Instant::now() < deadline, "delta {delta}: Envoy did not NACK the table:\n{}", logs());
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut args =
            vec!["attach", "--no-config", "--node-id", "xdsck-observer", "--type", "ads", "--format", "json"];
        let url = server.url();
        args.push(&url);
        if delta {
            args.push("--delta");
        }
        let out = xdsck(&args);
        assert_eq!(code(&out), 1, "delta {delta}: {}", stderr(&out));
        let got = json_out(&out);
        let errors: Vec<&Value> =
            got["findings"].as_array().unwrap().iter().filter(|f| f["severity"] == "error").collect();
        assert_eq!(errors.len(), 1, "delta {delta}: {got}");
        assert_eq!(errors[0]["code"], "XDS114", "delta {delta}: {got}");
        let words = errors[0]["envoy_error"].as_str().unwrap();
        assert!(nack.contains(words), "delta {delta}: Envoy said {nack:?}, xdsck {words:?}");

        // xdsck's own requests (its node id) are subscriptions and ACKs, never a NACK.
        let ours =
            |id: Option<&envoy_types::pb::envoy::config::core::v3::Node>| id.is_some_and(|n| n.id == "xdsck-observer");
        let sotw: Vec<_> = server.requests().into_iter().filter(|r| ours(r.node.as_ref())).collect();
        let incremental: Vec<_> = server.delta_requests().into_iter().filter(|r| ours(r.node.as_ref())).collect();
        assert!(sotw.iter().all(|r| r.error_detail.is_none()) && incremental.iter().all(|r| r.error_detail.is_none()));
        let acks = if delta {
            incremental.iter().filter(|r| !r.response_nonce.is_empty()).count()
        } else {
            sotw.iter().filter(|r| !r.response_nonce.is_empty()).count()
        };
        assert!(acks >= 3, "delta {delta}: xdsck ACKed the listeners, the table and the clusters: {acks}");
    }
}

/// A per-type control plane that serves listeners alone: attach does not wait for the route
/// tables and clusters it does not serve, says so once, and says where the listener asks for a
/// table nothing answered.
#[test]
fn a_listeners_only_server_is_observed_without_routes_and_clusters() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let listeners = [rds_listener("http", 8080, "web")];
    let server = rt.block_on(XdsServer::start_listeners_only(
        Bind::Unix(dir.path().join("xds.sock")),
        full_state("1", &listeners, &[web_routes(false)], &[api_cluster()]),
    ));
    let started = Instant::now();
    let out = xdsck(&["attach", "--no-config", &server.url(), "--timeout", "20", "--format", "json"]);
    assert!(started.elapsed() < Duration::from_secs(15), "it waited for what is not served");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("does not serve route tables (RDS)") && err.contains("does not serve clusters (CDS)"),
        "{err}"
    );
    let got = json_out(&out);
    let said = said(&got);
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(said[0].contains("XDS304") && said[0].contains("'web'"), "{said:#?}");
    // It asks its server for each type once, and ACKs the listeners.
    assert!(server.requests().iter().any(|r| r.type_url == LISTENER_TYPE && !r.response_nonce.is_empty()));
    // Over ADS such a server is not one: the error says which service to try.
    let ads = xdsck(&["attach", "--no-config", &server.url(), "--type", "ads", "--timeout", "5"]);
    assert_eq!(code(&ads), 2);
    assert!(stderr(&ads).contains("try per-type LDS with --type lds"), "{}", stderr(&ads));
}
