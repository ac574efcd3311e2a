//! What the tests against a real Envoy share: finding and running Envoy (`envoy`), a seeded
//! listener generator (`generate`) and a client that asks a live Envoy which chain a connection
//! reaches (`client`). Each test crate uses the parts it needs.
#![allow(dead_code)]

pub mod admin_server;
pub mod client;
pub mod envoy;
pub mod generate;
pub mod mutate;
pub mod proto_build;
pub mod xds_server;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;

use serde_json::{Value, json};

/// The repository root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// An HTTP/1.1 GET over TCP, by hand (the tests' own client, not xdsck's): the body of a 200
/// answer, decoded when chunked; the status line of any other.
pub fn http_get(addr: &str, path: &str) -> Result<String, String> {
    use std::io::Write as _;
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").map_err(|e| e.to_string())?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).map_err(|e| e.to_string())?;
    let (head, body) = raw.split_once("\r\n\r\n").ok_or("no header end")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(head.lines().next().unwrap_or_default().to_owned());
    }
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return envoy::dechunk(body).ok_or_else(|| "bad chunked body".to_owned());
    }
    Ok(body.to_owned())
}

/// Process output as text, for messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A failed command's status, stdout and stderr, for an assertion message.
pub fn describe(what: &str, out: &Output) -> String {
    format!("{what}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}", out.status, text(&out.stdout), text(&out.stderr))
}

/// A child process killed (and reaped) when the test ends, also when it panics.
#[derive(Debug)]
pub struct Kill(pub std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines of a child's stdout or stderr, read on a thread of their own.
pub fn lines(r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                return;
            }
        }
    });
    rx
}

/// A chain's `filters`: one tcp_proxy to `cluster`.
pub fn tcp_proxy(cluster: &str) -> Value {
    json!([{"name": "envoy.filters.network.tcp_proxy", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
        "stat_prefix": cluster, "cluster": cluster}}])
}

/// `xdsck attach --watch FLAGS... ARGS...`, killed when dropped, with its stdout and stderr as
/// lines.
pub fn attach_watch(flags: &[&str], args: &[&str]) -> (Kill, mpsc::Receiver<String>, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["attach", "--watch"])
        .args(flags)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines(child.stdout.take().unwrap());
    let err = lines(child.stderr.take().unwrap());
    (Kill(child), out, err)
}

/// The `edge` listener on 127.0.0.1:`port`: an exact-SNI chain that demands ALPN `h2` and, with
/// `with_wildcard`, a `*.example.com` chain. Envoy accepts it, with a warning: api.example.com
/// clients without h2 are closed (Envoy does not fall back to the wildcard chain).
pub fn edge(port: u16, with_wildcard: bool) -> Value {
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
