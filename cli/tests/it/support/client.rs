//! The client side of a probe: the bytes to send, and one loopback connection that reports
//! which chain answered.
//!
//! Every generated chain is a `direct_response` that writes its own name and closes, so the
//! answer *is* the chain; a connection that matched no chain is closed by Envoy without a byte.

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddrV4;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use socket2::{Domain, Socket, Type};

use super::generate::{Client, Probe};

/// How long to wait for Envoy's answer. Probes that an inspector cannot decide on wait out the
/// listeners' 1 s listener_filters_timeout first.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);

/// A real TLS ClientHello, as rustls would send it for `sni` and `alpn` (no network involved:
/// the handshake's first flight is written into a buffer). Certificates are never looked at,
/// so an empty root store does.
pub fn client_hello(sni: Option<&str>, alpn: &[String]) -> Vec<u8> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
    // rustls needs a server name even when it sends none; the SNI extension is left out then.
    config.enable_sni = sni.is_some();
    let name = ServerName::try_from(sni.unwrap_or("no-sni.invalid").to_owned())
        .unwrap_or_else(|e| panic!("rustls refuses server name {sni:?}: {e}"));
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).expect("rustls client");
    let mut bytes = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut bytes).expect("writing to a Vec cannot fail");
    }
    bytes
}

/// An HTTP/2 prior-knowledge preface followed by an empty SETTINGS frame.
const H2C_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Neither a TLS record (first byte 0x16) nor an HTTP request line, so both inspectors give up
/// at once instead of waiting for more bytes.
const RAW: &[u8] = b"\x00\x01\x02 xdsck probe\r\n";

pub fn payload(client: &Client) -> Vec<u8> {
    match client {
        Client::Tls { sni, alpn } => client_hello(sni.as_deref(), alpn),
        Client::Http1 => b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Client::H2c => H2C_PREFACE.to_vec(),
        Client::Raw => RAW.to_vec(),
    }
}

/// What Envoy did with a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A chain answered with its name.
    Chain(String),
    /// Closed (or reset) without a byte: no filter chain matched.
    Closed,
    /// Neither within [`ANSWER_TIMEOUT`]: a bug in the test setup, not a verdict.
    Timeout,
    /// Something unexpected (connect failed, bytes that are no chain name).
    Error(String),
}

impl Answer {
    /// As `xdsck trace` says it: the chain's name, or `None` for a closed connection.
    pub fn chain(&self) -> Option<&str> {
        match self {
            Answer::Chain(c) => Some(c),
            _ => None,
        }
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Chain(c) => write!(f, "chain {c:?}"),
            Answer::Closed => write!(f, "closed"),
            Answer::Timeout => write!(f, "no answer within {ANSWER_TIMEOUT:?}"),
            Answer::Error(e) => write!(f, "error: {e}"),
        }
    }
}

/// Connect as `probe` says, send its bytes, read until Envoy closes. Returns the answer and the
/// source port actually used (the OS picks one when the probe does not fix it).
pub fn run(probe: &Probe) -> (Answer, u16) {
    let bytes = payload(&probe.client);
    // A fixed source port may still be held by the previous connection on it for a moment;
    // retry a few times before calling it an error.
    let mut last_err = String::new();
    for attempt in 0..5 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(100 * attempt));
        }
        match connect(probe) {
            Ok(sock) => {
                let port = sock.local_addr().ok().and_then(|a| a.as_socket()).map_or(0, |a| a.port());
                return (exchange(sock, &bytes), port);
            }
            Err(e) => last_err = e.to_string(),
        }
    }
    (Answer::Error(format!("connect: {last_err}")), probe.src.1.unwrap_or(0))
}

fn connect(probe: &Probe) -> std::io::Result<Socket> {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    // Lets a fixed source port be bound again while an old connection on it lingers, and beside
    // the socket that reserves it (`envoy::reserve_source_ports`).
    sock.set_reuse_address(true)?;
    sock.set_reuse_port(true)?;
    sock.bind(&SocketAddrV4::new(probe.src.0, probe.src.1.unwrap_or(0)).into())?;
    sock.connect_timeout(&SocketAddrV4::new(probe.dst.0, probe.dst.1).into(), Duration::from_secs(2))?;
    Ok(sock)
}

fn exchange(sock: Socket, bytes: &[u8]) -> Answer {
    let mut stream: std::net::TcpStream = sock.into();
    // Envoy may answer and close before reading anything (no listener filters): a failed write
    // is expected then, and the answer is already on its way.
    let _ = stream.write_all(bytes);
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Answer::Timeout;
        }
        stream.set_read_timeout(Some(left)).expect("a non-zero timeout");
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            // A reset after the answer (Envoy closed with our bytes unread) ends it the same way.
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted) => break,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return Answer::Timeout,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Answer::Error(format!("read: {e}")),
        }
    }
    if got.is_empty() {
        return Answer::Closed;
    }
    match std::str::from_utf8(&got).ok().and_then(|s| s.strip_suffix('\n')) {
        Some(name) if !name.is_empty() && !name.contains('\n') => Answer::Chain(name.to_owned()),
        _ => Answer::Error(format!("unexpected bytes {:?}", String::from_utf8_lossy(&got))),
    }
}

/// One HTTP/1.1 request to `to` (Host, path, method and headers as `req` says): the status and
/// the body Envoy answered (a `direct_response` names where it landed).
pub fn http1(to: (std::net::Ipv4Addr, u16), req: &xdsck_core::routing::Request) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(to).expect("connect to Envoy");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = format!("{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", req.method, req.path, req.host);
    for (n, v) in &req.headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    // Read up to the end of the body: Envoy closes a `Connection: close` stream only after its
    // delayed_close_timeout (1 s), which would make every probe take a second.
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&raw).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end].lines().find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().ok()).flatten()
            });
            if length.is_some_and(|n| raw.len() >= end + 4 + n) {
                break;
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let status = raw.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}
