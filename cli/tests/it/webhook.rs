//! `xdsck webhook` over real TLS (a self-signed certificate made here with rcgen, a rustls
//! client): AdmissionReviews of valid, rejected-by-Envoy and merely-warned CECs, with and
//! without --strict, Gateway-owned ones, a DELETE; and what a hostile or broken client sends —
//! an oversized body (announced or chunked), garbage, a non-review, plain HTTP on the TLS port,
//! a client that stalls in its body or never says anything — after each of which the server
//! still answers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};

use crate::support;
use support::tcp_proxy;

/// A webhook process, killed when the test ends (also on panic).
struct Webhook {
    child: Child,
    addr: String,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Tls {
    dir: tempfile::TempDir,
    ca: CertificateDer<'static>,
}

fn certificate() -> Tls {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.path().join("tls.key"), key.serialize_pem()).unwrap();
    Tls { dir, ca: cert.der().clone() }
}

fn start(tls: &Tls, flags: &[&str]) -> Webhook {
    let dir = tls.dir.path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["webhook", "--listen", "127.0.0.1:0", "--request-timeout", "1", "--max-request-bytes", "65536"])
        .arg("--tls-cert")
        .arg(dir.join("tls.crt"))
        .arg("--tls-key")
        .arg(dir.join("tls.key"))
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("xdsck: webhook listening on https://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    Webhook { child, addr }
}

fn connect(addr: &str, ca: &CertificateDer<'static>) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let conn = rustls::ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap()).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

/// Sends `head` (the request line and headers, without the blank line) and `body`, and returns
/// the status code and the body of the answer.
fn exchange(w: &Webhook, ca: &CertificateDer<'static>, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = connect(&w.addr, ca);
    s.write_all(format!("{head}\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    s.write_all(body).unwrap();
    s.flush().unwrap();
    let mut raw = Vec::new();
    // The server closes after answering (Connection: close); rustls reports a close without
    // close_notify as an error, which is fine once the answer is in.
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no answer: {raw:?}"));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

fn post(w: &Webhook, ca: &CertificateDer<'static>, body: &[u8]) -> (u16, String) {
    let head = format!("POST /validate HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}", body.len());
    exchange(w, ca, &head, body)
}

/// The `response` of the AdmissionReview answering `object` (a CREATE).
fn review(w: &Webhook, ca: &CertificateDer<'static>, object: &Value) -> Value {
    let kind = object["kind"].as_str().unwrap();
    let request = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "cilium.io", "version": "v2", "kind": kind},
        "resource": {"group": "cilium.io", "version": "v2", "resource": format!("{}s", kind.to_lowercase())},
        "operation": "CREATE", "name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
        "userInfo": {"username": "admin"}, "object": object, "oldObject": null, "dryRun": false}});
    let (status, body) = post(w, ca, request.to_string().as_bytes());
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(v["kind"], "AdmissionReview");
    assert_eq!(v["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    v["response"].clone()
}

fn cec(name: &str, chains: Value) -> Value {
    json!({"apiVersion": "cilium.io/v2", "kind": "CiliumEnvoyConfig",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"resources": [{"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": "l",
            "listener_filters": [{"name": "envoy.filters.listener.tls_inspector", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"}}],
            "filter_chains": chains}]}})
}

/// Envoy takes it, nothing to say.
fn valid() -> Value {
    cec("valid", json!([{"filter_chain_match": {"server_names": ["a.example.com"]}, "filters": tcp_proxy("a")}]))
}

/// Envoy rejects it: two chains with the same match.
fn rejected() -> Value {
    cec(
        "rejected",
        json!([
            {"filter_chain_match": {"destination_port": 443}, "filters": tcp_proxy("a")},
            {"filter_chain_match": {"destination_port": 443}, "filters": tcp_proxy("b")}]),
    )
}

/// Envoy takes it, but api.example.com clients without h2 are closed (no fallback to *).
fn warned() -> Value {
    cec(
        "warned",
        json!([
            {"filter_chain_match": {"server_names": ["api.example.com"], "application_protocols": ["h2"]}, "filters": tcp_proxy("api")},
            {"filter_chain_match": {"server_names": ["*.example.com"]}, "filters": tcp_proxy("wild")}]),
    )
}

fn gateway_owned(mut object: Value) -> Value {
    object["metadata"]["ownerReferences"] = json!([{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "name": "gw", "uid": "0f0c0f7e-1b8e-4d6c-9d4a-3c5d1c2b0a11", "controller": true}]);
    object
}

fn warnings(response: &Value) -> Vec<String> {
    response["warnings"]
        .as_array()
        .map(|a| a.iter().map(|w| w.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn reviews_follow_the_findings_and_the_mode() {
    let tls = certificate();
    let warn_only = start(&tls, &[]);
    let strict = start(&tls, &["--strict"]);
    let strict_all = start(&tls, &["--strict", "--deny-gateway-owned"]);
    let ca = &tls.ca;

    for w in [&warn_only, &strict, &strict_all] {
        let r = review(w, ca, &valid());
        assert_eq!(r["allowed"], true, "{r}");
        assert!(r.get("warnings").is_none() && r.get("status").is_none(), "{r}");
        // Accepted by Envoy, with a warning: never denied.
        let r = review(w, ca, &warned());
        assert_eq!(r["allowed"], true, "{r}");
        assert!(warnings(&r).iter().any(|w| w.starts_with("warning XDS")), "{r}");
    }

    // What Envoy rejects: a warning without --strict...
    let r = review(&warn_only, ca, &rejected());
    assert_eq!(r["allowed"], true, "{r}");
    let errors: Vec<String> = warnings(&r).into_iter().filter(|w| w.starts_with("error XDS")).collect();
    assert!(!errors.is_empty() && errors.iter().all(|e| e.contains("(Envoy: ")), "{r}");
    // ... denied with it, with Envoy's words.
    let r = review(&strict, ca, &rejected());
    assert_eq!(r["allowed"], false, "{r}");
    assert_eq!(r["status"]["code"], 422);
    let message = r["status"]["message"].as_str().unwrap();
    assert!(message.starts_with("xdsck: Envoy would reject rejected: XDS"), "{message}");
    assert!(message.contains("(Envoy: error adding listener"), "{message}");

    // A Gateway's CEC: only warned even with --strict, unless asked.
    let r = review(&strict, ca, &gateway_owned(rejected()));
    assert_eq!(r["allowed"], true, "{r}");
    assert!(warnings(&r).iter().any(|w| w.starts_with("not denied: owned by a Gateway")), "{r}");
    let r = review(&strict_all, ca, &gateway_owned(rejected()));
    assert_eq!(r["allowed"], false, "{r}");

    // A clusterwide one is checked the same way.
    let mut clusterwide = rejected();
    clusterwide["kind"] = json!("CiliumClusterwideEnvoyConfig");
    clusterwide["metadata"].as_object_mut().unwrap().remove("namespace");
    let r = review(&strict, ca, &clusterwide);
    assert_eq!(r["allowed"], false, "{r}");

    // The namespace from the request when the object leaves it out: listeners are named as
    // the Cilium agent names them.
    let mut unnamespaced = warned();
    unnamespaced["metadata"].as_object_mut().unwrap().remove("namespace");
    let request = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-ns", "kind": {"group": "cilium.io", "version": "v2", "kind": "CiliumEnvoyConfig"},
        "operation": "CREATE", "namespace": "team-b", "object": unnamespaced}});
    let (status, body) = post(&warn_only, ca, request.to_string().as_bytes());
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(warnings(&v["response"]).iter().any(|w| w.contains("(listener team-b/warned/l)")), "{v}");

    // A DELETE has no object: allowed, nothing checked.
    let delete = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-delete", "kind": {"group": "cilium.io", "version": "v2", "kind": "CiliumEnvoyConfig"},
        "operation": "DELETE", "object": null, "oldObject": rejected()}});
    let (status, body) = post(&strict, ca, delete.to_string().as_bytes());
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["response"], json!({"uid": "u-delete", "allowed": true}));
}

#[test]
fn bad_clients_get_an_answer_or_a_closed_connection_and_the_server_carries_on() {
    let tls = certificate();
    let w = start(&tls, &["--strict"]);
    let ca = &tls.ca;
    let still_serving = |what: &str| {
        let r = review(&w, ca, &rejected());
        assert_eq!(r["allowed"], false, "after {what}: {r}");
    };

    // Oversized: announced (refused unread), and chunked (cut at the limit).
    let (status, body) = exchange(&w, ca, "POST / HTTP/1.1\r\nContent-Length: 100000", b"{");
    assert_eq!(status, 413, "{body}");
    let chunk = vec![b' '; 40_000];
    let mut chunked = Vec::new();
    for _ in 0..2 {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(&chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (status, body) = exchange(&w, ca, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked", &chunked);
    assert_eq!(status, 413, "{body}");
    still_serving("an oversized request");

    // Garbage, and JSON that is no AdmissionReview.
    let (status, body) = post(&w, ca, b"\x00\xffnot json at all");
    assert_eq!(status, 400);
    assert!(body.starts_with("not JSON"), "{body}");
    let (status, body) = post(&w, ca, br#"{"apiVersion": "v1", "kind": "Pod"}"#);
    assert_eq!(status, 400);
    assert!(body.contains("expected an admission.k8s.io/v1 AdmissionReview"), "{body}");
    let (status, _) = exchange(&w, ca, "GET / HTTP/1.1", b"");
    assert_eq!(status, 405);
    assert_eq!(exchange(&w, ca, "GET /healthz HTTP/1.1", b""), (200, "ok\n".to_owned()));
    // A review of another kind is allowed, with a word.
    let pod = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-pod", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE", "object": {}}});
    let (status, body) = post(&w, ca, pod.to_string().as_bytes());
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["response"]["allowed"], true);
    assert!(warnings(&v["response"])[0].contains("not \"Pod\""), "{v}");
    // Plain HTTP on the TLS port: the handshake fails, the connection closes.
    let mut plain = TcpStream::connect(&w.addr).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    plain.write_all(b"POST / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut sink = Vec::new();
    let _ = plain.read_to_end(&mut sink);
    assert!(!String::from_utf8_lossy(&sink).contains("HTTP/1.1 200"), "{sink:?}");
    still_serving("garbage");

    // A client that stalls in its body gets 408 after --request-timeout (1 s), and one that
    // never even starts TLS is dropped; meanwhile others are served.
    let silent = TcpStream::connect(&w.addr).unwrap();
    let mut stalled = connect(&w.addr, ca);
    stalled.write_all(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n{\"apiVersion\"").unwrap();
    stalled.flush().unwrap();
    still_serving("a stalled client, concurrently");
    let started = Instant::now();
    let mut raw = Vec::new();
    let _ = stalled.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.starts_with("HTTP/1.1 408"), "{raw}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    silent.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let started = Instant::now();
    let n = (&silent).read(&mut [0u8; 16]).unwrap_or(0);
    assert_eq!(n, 0, "the silent client is closed");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    still_serving("slow clients");
}

/// A rotated certificate (the kubelet swapping the Secret's files) is served from the next
/// handshake on, without a restart; a half-written rotation keeps the previous one.
#[test]
fn a_rotated_certificate_is_picked_up() {
    let first = certificate();
    let w = start(&first, &[]);
    assert_eq!(review(&w, &first.ca, &valid())["allowed"], true);
    let second = certificate();
    let dir = first.dir.path();
    // Only the certificate changed: it does not match the key, so the old pair stays.
    let staged = dir.join(".tls.crt");
    std::fs::copy(second.dir.path().join("tls.crt"), &staged).unwrap();
    std::fs::rename(&staged, dir.join("tls.crt")).unwrap();
    assert_eq!(review(&w, &first.ca, &valid())["allowed"], true, "a mismatched pair is not taken");
    let staged = dir.join(".tls.key");
    std::fs::copy(second.dir.path().join("tls.key"), &staged).unwrap();
    std::fs::rename(&staged, dir.join("tls.key")).unwrap();
    assert_eq!(review(&w, &second.ca, &valid())["allowed"], true, "the new pair is served");
    // A client that trusts only the old certificate now fails its handshake.
    let mut old = connect(&w.addr, &first.ca);
    let refused = old.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").and_then(|()| old.flush());
    let mut sink = Vec::new();
    let read = old.read_to_end(&mut sink);
    assert!(refused.is_err() || read.is_err(), "the old certificate is no longer served");
}

/// Certificates that do not make a pair, or are no PEM, are a setup error (exit 2), not a crash.
#[test]
fn bad_certificates_are_setup_errors() {
    let tls = certificate();
    let other = certificate();
    let run = |cert: &Path, key: &Path| {
        Command::new(env!("CARGO_BIN_EXE_xdsck"))
            .args(["webhook", "--listen", "127.0.0.1:0", "--tls-cert"])
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&tls.dir.path().join("tls.crt"), &other.dir.path().join("tls.key"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("do not make a usable pair"), "{out:?}");
    let garbage = tls.dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let out = run(&garbage, &tls.dir.path().join("tls.key"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tls-cert"), "{out:?}");
}
