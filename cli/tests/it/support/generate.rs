//! A seeded generator of random listeners and of the probes to send them.
//!
//! Everything is drawn from small pools so that two chains often share a key (Envoy then
//! rejects the listener, and xdsck must say so) or one shadows another at some level of
//! Envoy's match tree (Envoy accepts, and `xdsck trace` must walk the same commit-per-level
//! lookup). Ports are not drawn: they are handed in ([`Ports`]), so the same seed gives the
//! same listener whatever ports a run could get from the OS.

use std::net::Ipv4Addr;

use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// The ports one generated listener may use. `listen` are bound (the primary address uses
/// `listen[0]`, additional addresses either); `source` are what `source_ports` draws from and
/// what probes bind their client sockets to.
#[derive(Clone, Copy, Debug)]
pub struct Ports {
    pub listen: [u16; 2],
    pub source: [u16; 2],
}

impl Ports {
    /// Ports for `envoy --mode validate`, which binds nothing: any valid values do.
    pub const NOMINAL: Ports = Ports { listen: [10001, 10002], source: [10003, 10004] };
}

/// A destination port no listener binds: chains with it are unreachable.
const MISS_PORT: u16 = 9;

/// One generated listener: its JSON and the facts the prober needs.
#[derive(Clone, Debug)]
pub struct GenListener {
    pub seed: u64,
    pub name: String,
    /// Where it listens, the primary address first.
    pub addrs: Vec<(Ipv4Addr, u16)>,
    pub json: Value,
    pub ports: Ports,
    /// Every match of every chain, for drawing probes that hit (and narrowly miss) them.
    matches: Vec<Match>,
}

/// A FilterChainMatch as drawn; `None`/empty means "unset".
#[derive(Clone, Debug, Default, PartialEq)]
struct Match {
    destination_port: Option<u16>,
    prefix_ranges: Vec<Cidr>,
    server_names: Vec<&'static str>,
    transport_protocol: Option<&'static str>,
    application_protocols: Vec<&'static str>,
    direct_source_prefix_ranges: Vec<Cidr>,
    source_type: Option<&'static str>,
    source_prefix_ranges: Vec<Cidr>,
    source_ports: Vec<u16>,
}

/// A CidrRange as written: `len: None` leaves `prefix_len` unset, which Envoy reads as 0.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cidr {
    addr: &'static str,
    len: Option<u32>,
}

const fn cidr(addr: &'static str, len: u32) -> Cidr {
    Cidr { addr, len: Some(len) }
}

/// Destination prefixes. Includes host bits that Envoy masks (`127.0.0.1/8` is
/// `127.0.0.0/8`), an IPv4 length above 32 that Envoy clamps, an explicit catch-all that is a
/// different key from "unset", an IPv6 range no IPv4 connection can match, and a missing
/// prefix_len (= /0).
const DST_PREFIXES: &[Cidr] = &[
    cidr("127.0.0.0", 8),
    cidr("127.0.0.1", 8),
    cidr("127.0.0.1", 32),
    cidr("127.0.0.2", 32),
    cidr("127.0.0.0", 24),
    cidr("127.0.0.1", 40),
    cidr("0.0.0.0", 0),
    cidr("::", 0),
    Cidr { addr: "127.0.0.2", len: None },
];

const SRC_PREFIXES: &[Cidr] = &[
    cidr("127.0.0.0", 8),
    cidr("127.0.0.1", 32),
    cidr("127.0.0.3", 32),
    cidr("127.0.0.0", 30),
    cidr("0.0.0.0", 0),
    cidr("::", 0),
];

/// Exact names, wildcards nested in each other, and case variants of both (Envoy lower-cases
/// at config time, so `A.example.com` is the same key as `a.example.com`).
const SERVER_NAMES: &[&str] = &[
    "a.example.com",
    "b.example.com",
    "*.example.com",
    "*.com",
    "example.com",
    "*.a.example.com",
    "A.Example.com",
    "*.EXAMPLE.com",
];

/// Rare names that exercise Envoy's config-time rules rather than matching: `""` is the same
/// key as no server_names, `.example.com` the same as `*.example.com`, `*.` is accepted but
/// never matches, `*w.example.com` is a partial wildcard Envoy rejects. Probes never send them.
const ODD_SERVER_NAMES: &[&str] = &["", ".example.com", "*.", "*w.example.com"];

/// Envoy rejects this CidrRange ("malformed IP address"): the length belongs in prefix_len.
const MALFORMED_CIDR: Cidr = Cidr { addr: "127.0.0.0/8", len: None };

const ALPNS: &[&str] = &["h2", "http/1.1", "h2c"];
const SOURCE_TYPES: &[&str] = &["ANY", "SAME_IP_OR_LOOPBACK", "EXTERNAL"];

/// Client source addresses the prober binds to: loopback proper (a "local" source for
/// SAME_IP_OR_LOOPBACK), other 127/8 addresses (local only when equal to the destination),
/// and one outside every /30 and /32 in [`SRC_PREFIXES`].
const SRC_IPS: &[Ipv4Addr] = &[
    Ipv4Addr::new(127, 0, 0, 1),
    Ipv4Addr::new(127, 0, 0, 2),
    Ipv4Addr::new(127, 0, 0, 3),
    Ipv4Addr::new(127, 0, 0, 9),
];

fn rng_for(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// Pick 1..=max distinct items of `pool` (order as drawn: Envoy compares repeated fields in
/// order for "same matching rules", so order matters).
fn some<T: Copy + PartialEq>(rng: &mut ChaCha8Rng, pool: &[T], max: usize) -> Vec<T> {
    let n = rng.random_range(1..=max);
    let mut out = Vec::new();
    for _ in 0..n {
        let v = *pool.choose(rng).unwrap();
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn cidr_json(c: &Cidr) -> Value {
    match c.len {
        Some(len) => json!({"address_prefix": c.addr, "prefix_len": len}),
        None => json!({"address_prefix": c.addr}),
    }
}

fn addr_json(ip: Ipv4Addr, port: u16) -> Value {
    json!({"socket_address": {"address": ip.to_string(), "port_value": port}})
}

/// The one network filter of every chain: answer with the chain's name, then close.
pub fn direct_response(name: &str) -> Value {
    json!([{
        "name": "envoy.filters.network.direct_response",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.direct_response.v3.Config",
            "response": {"inline_string": format!("{name}\n")}
        }
    }])
}

pub fn tls_inspector() -> Value {
    json!({"name": "envoy.filters.listener.tls_inspector", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"}})
}

pub fn http_inspector() -> Value {
    json!({"name": "envoy.filters.listener.http_inspector", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector"}})
}

/// A Listener with the settings every generated listener shares. The listener-filter timeout
/// is short and continues on expiry, so a probe that an inspector cannot decide on (too few
/// bytes) is matched after 1 s with what was detected so far, instead of hanging 15 s.
pub fn listener_json(name: &str, addrs: &[(Ipv4Addr, u16)], listener_filters: Vec<Value>) -> Value {
    let mut l = json!({
        "name": name,
        "address": addr_json(addrs[0].0, addrs[0].1),
        "listener_filters_timeout": "1s",
        "continue_on_listener_filters_timeout": true,
        "listener_filters": listener_filters,
        "filter_chains": [],
    });
    if addrs.len() > 1 {
        l["additional_addresses"] =
            addrs[1..].iter().map(|&(ip, port)| json!({"address": addr_json(ip, port)})).collect();
    }
    l
}

impl Match {
    fn json(&self) -> Value {
        let mut m = serde_json::Map::new();
        if let Some(p) = self.destination_port {
            m.insert("destination_port".into(), json!(p));
        }
        let ranges = |v: &[Cidr]| Value::Array(v.iter().map(cidr_json).collect());
        if !self.prefix_ranges.is_empty() {
            m.insert("prefix_ranges".into(), ranges(&self.prefix_ranges));
        }
        if !self.server_names.is_empty() {
            m.insert("server_names".into(), json!(self.server_names));
        }
        if let Some(t) = self.transport_protocol {
            m.insert("transport_protocol".into(), json!(t));
        }
        if !self.application_protocols.is_empty() {
            m.insert("application_protocols".into(), json!(self.application_protocols));
        }
        if !self.direct_source_prefix_ranges.is_empty() {
            m.insert("direct_source_prefix_ranges".into(), ranges(&self.direct_source_prefix_ranges));
        }
        if let Some(t) = self.source_type {
            m.insert("source_type".into(), json!(t));
        }
        if !self.source_prefix_ranges.is_empty() {
            m.insert("source_prefix_ranges".into(), ranges(&self.source_prefix_ranges));
        }
        if !self.source_ports.is_empty() {
            m.insert("source_ports".into(), json!(self.source_ports));
        }
        Value::Object(m)
    }

    /// A random match. Each field is set with a low probability, so most chains differ in one
    /// or two fields only — the cases where collisions and shadowing happen.
    fn random(rng: &mut ChaCha8Rng, ports: &Ports, listen_ports: &[u16]) -> Match {
        let mut m = Match::default();
        if rng.random_bool(0.2) {
            // Mostly a port the listener has; sometimes one it does not (unreachable chain).
            m.destination_port =
                Some(if rng.random_bool(0.8) { *listen_ports.choose(rng).unwrap() } else { MISS_PORT });
        }
        if rng.random_bool(0.25) {
            m.prefix_ranges = some(rng, DST_PREFIXES, 2);
        }
        if rng.random_bool(0.5) {
            m.server_names = some(rng, SERVER_NAMES, 2);
            if rng.random_bool(0.06) {
                m.server_names.push(ODD_SERVER_NAMES.choose(rng).unwrap());
            }
        }
        if rng.random_bool(0.4) {
            m.transport_protocol = Some(if rng.random_bool(0.6) { "tls" } else { "raw_buffer" });
        }
        if rng.random_bool(0.3) {
            m.application_protocols = some(rng, ALPNS, 2);
        }
        if rng.random_bool(0.1) {
            m.direct_source_prefix_ranges = some(rng, SRC_PREFIXES, 2);
        }
        if rng.random_bool(0.15) {
            m.source_type = Some(SOURCE_TYPES.choose(rng).unwrap());
        }
        if rng.random_bool(0.15) {
            m.source_prefix_ranges = some(rng, SRC_PREFIXES, 2);
        }
        if rng.random_bool(0.01) {
            let ranges = [&mut m.prefix_ranges, &mut m.source_prefix_ranges, &mut m.direct_source_prefix_ranges];
            ranges.into_iter().nth(rng.random_range(0..3)).unwrap().push(MALFORMED_CIDR);
        }
        if rng.random_bool(0.1) {
            m.source_ports = some(rng, &ports.source, 2);
        }
        m
    }
}

/// The listener for `seed`, named `seed-<seed>`.
pub fn listener(seed: u64, ports: Ports) -> GenListener {
    let mut rng = rng_for(seed, 1);
    let name = format!("seed-{seed}");
    let lo = Ipv4Addr::LOCALHOST;

    let primary = if rng.random_bool(0.8) { lo } else { Ipv4Addr::new(127, 0, 0, 2) };
    let mut addrs = vec![(primary, ports.listen[0])];
    if rng.random_bool(0.35) {
        // Extra addresses: another IP on the same port, or the second port on any IP.
        for _ in 0..rng.random_range(1..=2) {
            let ip = Ipv4Addr::new(127, 0, 0, rng.random_range(1..=3));
            let port = *ports.listen.choose(&mut rng).unwrap();
            if !addrs.contains(&(ip, port)) {
                addrs.push((ip, port));
            }
        }
    }
    let listen_ports: Vec<u16> = addrs.iter().map(|a| a.1).collect();

    let mut filters = Vec::new();
    if rng.random_bool(0.65) {
        filters.push(tls_inspector());
    }
    if rng.random_bool(0.4) {
        filters.push(http_inspector());
    }
    if filters.len() == 2 && rng.random_bool(0.3) {
        // The HTTP inspector skips connections already detected as TLS; running it first must
        // not change anything, and xdsck must not assume an order.
        filters.reverse();
    }

    let mut json = listener_json(&name, &addrs, filters);
    let n_chains = if rng.random_bool(0.03) { 0 } else { rng.random_range(1..=8) };
    let mut matches: Vec<Match> = Vec::new();
    let mut chains = Vec::new();
    for i in 0..n_chains {
        let m = if !matches.is_empty() && rng.random_bool(0.08) {
            // An exact copy of an earlier chain's match: "same matching rules".
            matches.choose(&mut rng).unwrap().clone()
        } else {
            Match::random(&mut rng, &ports, &listen_ports)
        };
        let mut chain = json!({"name": format!("c{i}"), "filters": direct_response(&format!("c{i}"))});
        // `{}` and an absent filter_chain_match are the same to Envoy; write both forms.
        if m != Match::default() || rng.random_bool(0.5) {
            chain["filter_chain_match"] = m.json();
        }
        chains.push(chain);
        matches.push(m);
    }
    json["filter_chains"] = Value::Array(chains);
    if rng.random_bool(0.3) {
        json["default_filter_chain"] = json!({"name": "default", "filters": direct_response("default")});
    }
    GenListener { seed, name, addrs, json, ports, matches }
}

/// A bootstrap with `listeners` as static listeners and, when given, an admin endpoint on a
/// Unix socket (a path, not a port: nothing to collide with other tests).
pub fn bootstrap(listeners: &[&Value], admin_socket: Option<&str>) -> Value {
    let mut b = json!({
        "node": {"id": "xdsck-probe", "cluster": "xdsck-probe"},
        "static_resources": {"listeners": listeners},
    });
    if let Some(path) = admin_socket {
        b["admin"] = json!({"address": {"pipe": {"path": path}}});
    }
    b
}

/// What a probe sends after connecting.
#[derive(Clone, Debug, PartialEq)]
pub enum Client {
    /// A TLS ClientHello; no SNI extension when `sni` is `None`.
    Tls { sni: Option<String>, alpn: Vec<String> },
    /// `GET / HTTP/1.1`.
    Http1,
    /// The HTTP/2 connection preface and a SETTINGS frame.
    H2c,
    /// Bytes that are neither TLS nor HTTP.
    Raw,
}

/// One connection to make: from `src` (port `None`: the OS picks) to `dst`.
#[derive(Clone, Debug)]
pub struct Probe {
    pub src: (Ipv4Addr, Option<u16>),
    pub dst: (Ipv4Addr, u16),
    pub client: Client,
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let port = self.src.1.map_or_else(|| "*".to_owned(), |p| p.to_string());
        write!(f, "{}:{port} -> {}:{} {:?}", self.src.0, self.dst.0, self.dst.1, self.client)
    }
}

/// A name that a server_names entry matches: the name itself, or for `*.x` one or two labels
/// in front of `x`. Sometimes upper-cased, as clients may send it (Envoy lower-cases the SNI).
fn name_for(rng: &mut ChaCha8Rng, pattern: &str) -> String {
    let name = match pattern.strip_prefix("*.") {
        Some(suffix) => {
            let labels: &[&str] = &["w", "a", "b", "v.w"];
            format!("{}.{suffix}", labels.choose(rng).unwrap())
        }
        None => pattern.to_owned(),
    };
    if rng.random_bool(0.15) { name.to_uppercase() } else { name.to_ascii_lowercase() }
}

/// Probes for `l`: most aimed at what its chains ask for, with misses mixed in (names,
/// protocols and sources no chain lists).
pub fn probes(l: &GenListener, count: usize) -> Vec<Probe> {
    let mut rng = rng_for(l.seed, 2);
    let mut names: Vec<&str> =
        l.matches.iter().flat_map(|m| m.server_names.iter().copied()).filter(|n| SERVER_NAMES.contains(n)).collect();
    if names.is_empty() {
        names = SERVER_NAMES.to_vec();
    }
    let mut out: Vec<Probe> = Vec::new();
    for _ in 0..count * 2 {
        if out.len() == count {
            break;
        }
        let dst = *l.addrs.choose(&mut rng).unwrap();
        let src_ip = if rng.random_bool(0.25) { dst.0 } else { *SRC_IPS.choose(&mut rng).unwrap() };
        let src_port = rng.random_bool(0.3).then(|| *l.ports.source.choose(&mut rng).unwrap());
        let client = match rng.random_range(0..10) {
            0..5 => {
                let sni = match rng.random_range(0..10) {
                    0 => None,
                    1 => Some("other.org".to_owned()),
                    2 => Some("example.com".to_owned()),
                    _ => {
                        let pattern = *names.choose(&mut rng).unwrap();
                        Some(name_for(&mut rng, pattern))
                    }
                };
                let mut alpn: Vec<String> = Vec::new();
                for _ in 0..rng.random_range(0..=2) {
                    let a = (*[ALPNS, &["http/1.0"]].concat().choose(&mut rng).unwrap()).to_owned();
                    if !alpn.contains(&a) {
                        alpn.push(a);
                    }
                }
                Client::Tls { sni, alpn }
            }
            5..7 => Client::Http1,
            7..9 => Client::H2c,
            _ => Client::Raw,
        };
        let probe = Probe { src: (src_ip, src_port), dst, client };
        // A fixed source port can be used once per destination: the same 4-tuple right after
        // Envoy closed it would meet Envoy's TIME_WAIT entry. Drop such repeats.
        if src_port.is_some() && out.iter().any(|p| p.src == probe.src && p.dst == probe.dst) {
            continue;
        }
        out.push(probe);
    }
    out
}
