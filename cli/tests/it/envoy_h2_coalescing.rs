//! HTTP/2 connection coalescing against a live Envoy 1.40 (no mocks): what `h2-coalescing-misroute`
//! (XDS214) warns about, shown on the real thing.
//!
//! One listener has a wildcard chain (`*.example.com`, its table answering "A") and an exact
//! chain carved out of it (`api.example.com`, answering "B"), both TLS with self-signed
//! certificates made here, both offering `h2`. One TLS connection is opened with SNI
//! www.example.com, as a browser would, and a second request for api.example.com is sent over
//! it, as a browser coalescing onto that connection would (the wildcard certificate covers the
//! name): Envoy answers from A's table, while a connection of api.example.com's own gets B.
//! xdsck flags that configuration with XDS214, naming both answers. Two variants get no finding,
//! and Envoy agrees nothing is misrouted: A's table answers api.example.com as B's does, and a
//! chain that offers no `h2` (the client's ALPN lands on HTTP/1.1, no connection to reuse).

use crate::support;

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use support::envoy::{self, LiveEnvoy};

const HCM: &str =
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
const TLS: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext";

/// A self-signed certificate for `names`, written to `dir` as `<file>.crt` and `<file>.key`.
fn certificate(dir: &Path, file: &str, names: &[&str]) -> CertificateDer<'static> {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    let cert = params.self_signed(&key).unwrap();
    std::fs::write(dir.join(format!("{file}.crt")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{file}.key")), key.serialize_pem()).unwrap();
    cert.der().clone()
}

/// A virtual host answering every request with `body`.
fn vh(name: &str, domains: &[&str], body: &str) -> Value {
    json!({"name": name, "domains": domains,
        "routes": [{"match": {"prefix": "/"}, "direct_response": {"status": 200, "body": {"inline_string": body}}}]})
}

/// A TLS chain for `server_names`, offering `alpn`, routing with an inline table. The Host's
/// port is stripped so the tables' domains need none (a browser sends the port on a port other
/// than 443).
fn chain(dir: &Path, name: &str, server_names: &[&str], cert: &str, alpn: &[&str], vhs: Vec<Value>) -> Value {
    json!({
        "name": name,
        "filter_chain_match": {"server_names": server_names},
        "filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
            "@type": HCM, "stat_prefix": name, "strip_any_host_port": true,
            "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
            "route_config": {"name": name, "virtual_hosts": vhs}
        }}],
        "transport_socket": {"name": "envoy.transport_sockets.tls", "typed_config": {"@type": TLS,
            "common_tls_context": {
                "alpn_protocols": alpn,
                "tls_certificates": [{
                    "certificate_chain": {"filename": dir.join(format!("{cert}.crt"))},
                    "private_key": {"filename": dir.join(format!("{cert}.key"))}
                }]
            }}}
    })
}

/// The listener: a wildcard chain and api.example.com carved out of it. `a_serves_api` gives A's
/// table a virtual host for api.example.com answering as B's does.
fn listener(dir: &Path, name: &str, port: u16, a_alpn: &[&str], a_serves_api: bool) -> Value {
    let mut a_vhs = vec![vh("a", &["*.example.com"], "A")];
    if a_serves_api {
        a_vhs.insert(0, vh("api", &["api.example.com"], "B"));
    }
    let mut l = support::generate::listener_json(
        name,
        &[(Ipv4Addr::LOCALHOST, port)],
        vec![support::generate::tls_inspector()],
    );
    l["filter_chains"] = json!([
        chain(dir, "wildcard", &["*.example.com"], "wildcard", a_alpn, a_vhs),
        chain(dir, "api", &["api.example.com"], "api", &["h2", "http/1.1"], vec![vh("api", &["api.example.com"], "B")]),
    ]);
    l
}

/// A TLS connection to `port` with SNI `sni` offering h2 and http/1.1, as a browser does; the
/// certificate is verified against `roots`. Returns the stream and the protocol Envoy chose.
async fn connect(
    port: u16,
    sni: &str,
    roots: &rustls::RootCertStore,
) -> (tokio_rustls::client::TlsStream<TcpStream>, Option<Vec<u8>>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let tcp = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await.unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from(sni.to_owned()).unwrap(), tcp)
        .await
        .unwrap_or_else(|e| panic!("TLS to {sni} on {port}: {e}"));
    let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    (tls, alpn)
}

/// Sends `GET https://<host>:<port>/` for each host in turn over one HTTP/2 connection; returns
/// each answer's status and body.
async fn over_one_connection(
    tls: tokio_rustls::client::TlsStream<TcpStream>,
    port: u16,
    hosts: &[&str],
) -> Vec<(u16, String)> {
    let (client, connection) = h2::client::handshake(tls).await.expect("HTTP/2 handshake");
    let driver = tokio::spawn(connection);
    let mut out = Vec::new();
    for host in hosts {
        let mut client = client.clone().ready().await.unwrap();
        let req = http::Request::get(format!("https://{host}:{port}/")).body(()).unwrap();
        let (response, _) = client.send_request(req, true).unwrap();
        let response = response.await.unwrap_or_else(|e| panic!("request for {host}: {e}"));
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut text = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.unwrap();
            let _ = body.flow_control().release_capacity(chunk.len());
            text.extend_from_slice(&chunk);
        }
        out.push((status, String::from_utf8_lossy(&text).into_owned()));
    }
    drop(client);
    driver.abort();
    out
}

/// xdsck's XDS214 findings on a file: (message, example sni, example host).
fn xds214(path: &Path) -> Vec<(String, String, String)> {
    let out =
        Command::new(env!("CARGO_BIN_EXE_xdsck")).arg("check").arg(path).args(["--format", "json"]).output().unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", support::describe("xdsck check", &out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "XDS214")
        .map(|f| {
            let example = |k: &str| f["example"][k].as_str().unwrap_or_default().to_owned();
            (f["message"].as_str().unwrap().to_owned(), example("sni"), example("host"))
        })
        .collect()
}

#[test]
fn a_coalesced_request_is_routed_by_the_first_chains_table() {
    let envoy_bin = envoy::binary();
    let certs = tempfile::tempdir().unwrap();
    let wildcard = certificate(certs.path(), "wildcard", &["*.example.com"]);
    let api = certificate(certs.path(), "api", &["api.example.com"]);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(wildcard).unwrap();
    roots.add(api).unwrap();

    let (ports, hold) = envoy::free_ports(3, &[Ipv4Addr::LOCALHOST]);
    let (bad, same, no_h2) = (ports[0], ports[1], ports[2]);
    let listeners = [
        listener(certs.path(), "coalescing", bad, &["h2", "http/1.1"], false),
        listener(certs.path(), "same-answer", same, &["h2", "http/1.1"], true),
        listener(certs.path(), "no-h2", no_h2, &["http/1.1"], false),
    ];

    // xdsck's verdict, one listener per file.
    let files = tempfile::tempdir().unwrap();
    let verdict: Vec<_> = listeners
        .iter()
        .map(|l| {
            let path = files.path().join(format!("{}.json", l["name"].as_str().unwrap()));
            let b = support::generate::bootstrap(&[l], None);
            std::fs::write(&path, serde_json::to_vec_pretty(&b).unwrap()).unwrap();
            xds214(&path)
        })
        .collect();

    let live_dir = tempfile::tempdir().unwrap();
    let admin = LiveEnvoy::admin_socket(live_dir.path());
    let refs: Vec<&Value> = listeners.iter().collect();
    let bootstrap = support::generate::bootstrap(&refs, Some(admin.to_str().unwrap()));
    drop(hold);
    let live =
        LiveEnvoy::start(&envoy_bin, live_dir, &bootstrap).unwrap_or_else(|e| panic!("Envoy did not start: {e}"));

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        // The misroute: www.example.com's connection carries api.example.com's request to A.
        let (tls, alpn) = connect(bad, "www.example.com", &roots).await;
        assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "the wildcard chain offers h2");
        let answers = over_one_connection(tls, bad, &["www.example.com", "api.example.com"]).await;
        assert_eq!(answers, [(200, "A".to_owned()), (200, "A".to_owned())], "{}", live.log_tail());
        // A connection of its own for api.example.com reaches B.
        let (tls, _) = connect(bad, "api.example.com", &roots).await;
        assert_eq!(over_one_connection(tls, bad, &["api.example.com"]).await, [(200, "B".to_owned())]);

        // A's table answers api.example.com as B's does: the coalesced request gets B's answer.
        let (tls, _) = connect(same, "www.example.com", &roots).await;
        let answers = over_one_connection(tls, same, &["www.example.com", "api.example.com"]).await;
        assert_eq!(answers, [(200, "A".to_owned()), (200, "B".to_owned())]);

        // No h2 offered: the browser's ALPN lands on HTTP/1.1, which is never reused for another name.
        let (_, alpn) = connect(no_h2, "www.example.com", &roots).await;
        assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    });
    drop(live);

    // xdsck warns exactly where Envoy misroutes, with Envoy's two answers as its witness.
    assert_eq!(verdict[0].len(), 1, "{:?}", verdict[0]);
    let (message, sni, host) = &verdict[0][0];
    assert_eq!((sni.as_str(), host.as_str()), ("www.example.com", "api.example.com"));
    assert!(
        message.contains("direct response 200 \"A\"") && message.contains("direct response 200 \"B\""),
        "{message}"
    );
    assert!(verdict[1].is_empty(), "same answer: {:?}", verdict[1]);
    assert!(verdict[2].is_empty(), "no h2: {:?}", verdict[2]);
}
