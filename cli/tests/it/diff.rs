//! `xdsck diff` against two live Envoys: one on each version of a listener whose chains answer
//! with their own names. Every witness `diff` reports lands, on the old Envoy, on the chain it
//! names as old and, on the new one, on the chain it names as new; connections drawn at random
//! that land differently are each inside a reported class; a reorder moves nothing.

use crate::support;

use std::net::Ipv4Addr;
use std::process::Command;

use serde_json::{Value, json};
use support::client::{self, Answer};
use support::envoy::{self, LiveEnvoy};
use support::generate::{self, Client, Probe};

/// A chain answering with its name, for these server names and ALPN.
fn chain(name: &str, names: &[&str], alpn: &[&str]) -> Value {
    json!({"name": name, "filter_chain_match": {"server_names": names, "application_protocols": alpn},
        "filters": generate::direct_response(name)})
}

fn listener(ip: Ipv4Addr, port: u16, chains: &[Value], default: bool, inspector: bool) -> Value {
    let filters = if inspector { vec![generate::tls_inspector()] } else { Vec::new() };
    let mut l = json!({"name": "edge",
        "address": {"socket_address": {"address": ip.to_string(), "port_value": port}},
        "listener_filters": filters,
        "listener_filters_timeout": "1s",
        "filter_chains": chains});
    if default {
        l["default_filter_chain"] = json!({"name": "fallback", "filters": generate::direct_response("fallback")});
    }
    l
}

/// A small deterministic generator (xorshift), so a failing seed can be run again.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

const NAMES: [&str; 6] =
    ["api.example.com", "*.example.com", "www.example.com", "*.api.example.com", "shop.example.org", "*.org"];

/// A random version of the listener's chains, and one seeded change of it: a chain dropped or
/// added, an ALPN list, the default chain, a reorder, a server name, a transport protocol, a
/// destination range; whether the new version drops the tls_inspector.
fn pair(seed: u64) -> (Vec<Value>, bool, Vec<Value>, bool, bool) {
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut chains = Vec::new();
    let mut used = Vec::new();
    for i in 0..3 + r.below(3) {
        let name = NAMES[r.below(NAMES.len())];
        if used.contains(&name) {
            continue;
        }
        used.push(name);
        let alpn: &[&str] = match r.below(6) {
            0 => &["h2"],
            1 => &["http/1.1"],
            _ => &[],
        };
        chains.push(chain(&format!("c{i}"), &[name], alpn));
    }
    let default = r.below(2) == 0;
    let mut new = chains.clone();
    let mut new_default = default;
    match r.below(9) {
        0 if new.len() > 1 => {
            new.remove(r.below(new.len()));
        }
        1 => {
            let unused: Vec<&str> = NAMES.iter().copied().filter(|n| !used.contains(n)).collect();
            if let Some(n) = unused.get(r.below(unused.len().max(1))) {
                new.push(chain("added", &[n], &[]));
            }
        }
        2 => {
            let i = r.below(new.len());
            let alpn = match new[i]["filter_chain_match"]["application_protocols"].as_array().map(Vec::len) {
                Some(0) => json!(["h2"]),
                _ if r.below(2) == 0 => json!(["http/1.1"]),
                _ => json!([]),
            };
            new[i]["filter_chain_match"]["application_protocols"] = alpn;
        }
        3 => new_default = !new_default,
        4 => new.reverse(),
        5 => {
            let i = r.below(new.len());
            new[i]["filter_chain_match"]["server_names"] = json!([NAMES[r.below(NAMES.len())]]);
        }
        6 => {
            let i = r.below(new.len());
            let transport = ["tls", "raw_buffer"][r.below(2)];
            new[i]["filter_chain_match"]["transport_protocol"] = json!(transport);
        }
        7 => {
            // A range the connections are in wins over no range; one they are not in drops the chain.
            let i = r.below(new.len());
            let range = ["127.0.0.0", "10.0.0.0"][r.below(2)];
            new[i]["filter_chain_match"]["prefix_ranges"] = json!([{"address_prefix": range, "prefix_len": 8}]);
        }
        _ => return (chains, default, new, new_default, false),
    }
    (chains, default, new, new_default, true)
}

/// The seeds to run: `XDSCK_DIFF_SEEDS=N` runs N of them (8 by default, CI's).
fn seeds() -> Vec<u64> {
    let n = std::env::var("XDSCK_DIFF_SEEDS").map_or(8, |n| n.parse().expect("XDSCK_DIFF_SEEDS is a number"));
    (1..=n).collect()
}

/// `xdsck diff --format json` of two versions of one listener (each written to a file, as a
/// list of one), with `more` flags: the exit status and the answer.
fn diff_listeners(old: &Value, new: &Value, more: &[&str]) -> (i32, Value) {
    let dir = tempfile::tempdir().unwrap();
    let (po, pn) = (dir.path().join("old.json"), dir.path().join("new.json"));
    std::fs::write(&po, serde_json::to_vec_pretty(&json!([old])).unwrap()).unwrap();
    std::fs::write(&pn, serde_json::to_vec_pretty(&json!([new])).unwrap()).unwrap();
    let mut args = vec!["diff", po.to_str().unwrap(), pn.to_str().unwrap(), "--format", "json"];
    args.extend(more);
    let (code, out) = xdsck(&args);
    (code, serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}")))
}

/// The real Envoy refuses a listener `diff` says it rejects.
fn assert_envoy_rejects(bin: &std::path::Path, listener: &Value, seed: u64) {
    let b = generate::bootstrap(&[listener], None);
    let started = LiveEnvoy::start(bin, tempfile::tempdir().unwrap(), &b);
    assert!(started.is_err(), "seed {seed}: Envoy accepts what diff says it rejects: {listener}");
}

fn xdsck(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn start(bin: &std::path::Path, l: &Value) -> LiveEnvoy {
    let dir = tempfile::tempdir().unwrap();
    let admin = LiveEnvoy::admin_socket(dir.path());
    let b = generate::bootstrap(&[l], Some(admin.to_str().unwrap()));
    LiveEnvoy::start(bin, dir, &b).unwrap_or_else(|e| panic!("{e}"))
}

fn ask(ip: Ipv4Addr, port: u16, client: Client) -> Option<String> {
    let (answer, _) = client::run(&Probe { src: (Ipv4Addr::LOCALHOST, None), dst: (ip, port), client });
    match answer {
        Answer::Chain(c) => Some(c),
        Answer::Closed => None,
        other => panic!("probe {ip}:{port}: {other}"),
    }
}

fn tls(sni: &str, alpn: &[String]) -> Client {
    Client::Tls { sni: (!sni.is_empty()).then(|| sni.to_owned()), alpn: alpn.to_vec() }
}

#[test]
fn every_witness_lands_where_diff_says_and_every_move_is_reported() {
    let bin = envoy::binary();
    let (old_ip, new_ip) = (Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3));
    let seeds = seeds();
    let mut witnessed = 0;
    for seed in seeds {
        let (ports, hold) = envoy::free_ports(1, &[old_ip, new_ip]);
        let port = ports[0];
        let (old_chains, old_default, new_chains, new_default, inspector) = pair(seed);
        let old = listener(old_ip, port, &old_chains, old_default, true);
        let new = listener(new_ip, port, &new_chains, new_default, inspector);
        // Witnesses from loopback, where the probes come from.
        let (code, answer) = diff_listeners(&old, &new, &["--prefer-addresses", "127.0.0.0/8"]);
        let listener = &answer["listeners"][0];
        let classes = listener["connections"].as_array().unwrap();
        for c in classes {
            let source: std::net::SocketAddr = c["connection"]["source"].as_str().unwrap().parse().unwrap();
            assert!(source.ip().is_loopback(), "seed {seed}: a witness from outside 127.0.0.0/8: {c}");
        }
        drop(hold);
        if listener["status"] == "rejected" {
            // Envoy refuses the new version (a duplicate match): it keeps the old one, and
            // nothing moves; the real Envoy refuses it too.
            assert!(classes.is_empty(), "seed {seed}: {answer}");
            assert!(!answer["findings"]["new"].as_array().unwrap().is_empty(), "seed {seed}: {answer}");
            assert_envoy_rejects(&bin, &new, seed);
            continue;
        }
        // Held to the end of the seed: dropping one stops its Envoy.
        let _envoys = (start(&bin, &old), start(&bin, &new));

        // Each witness, on both Envoys.
        for c in classes {
            let conn = &c["connection"];
            let alpn: Vec<String> = serde_json::from_value(conn["application_protocols"].clone()).unwrap();
            let client = match conn["client"].as_str().unwrap() {
                "tls" => tls(conn["server_name"].as_str().unwrap(), &alpn),
                "http1" => Client::Http1,
                "h2c" => Client::H2c,
                _ => Client::Raw,
            };
            let (o, n) = (ask(old_ip, port, client.clone()), ask(new_ip, port, client.clone()));
            assert_eq!(o.as_deref(), c["old"].as_str(), "seed {seed}: {client:?} on the old Envoy: {c}");
            assert_eq!(n.as_deref(), c["new"].as_str(), "seed {seed}: {client:?} on the new Envoy: {c}");
            witnessed += 1;
        }
        // A reorder moves nothing, and says so.
        if new_chains.len() == old_chains.len()
            && old_default == new_default
            && inspector
            && new_chains.iter().all(|c| old_chains.contains(c))
        {
            assert!(classes.is_empty(), "seed {seed}: a reorder: {answer}");
            assert_eq!(listener["status"], "unchanged");
            assert_eq!(code, 0, "seed {seed}");
        }
        // Connections of every kind: each that lands elsewhere is in a reported class with the
        // same old and new chains, the same kind of client and, for TLS, whose server names
        // hold its name's cell (its exact name, the longest wildcard that takes it, or `*`).
        let named: Vec<String> = old_chains
            .iter()
            .chain(&new_chains)
            .flat_map(|c| c["filter_chain_match"]["server_names"].as_array().cloned().unwrap_or_default())
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect();
        let cell = |sni: &str| -> String {
            if named.iter().any(|n| n == sni) {
                return sni.to_owned();
            }
            named
                .iter()
                .filter(|n| n.starts_with('*') && sni.ends_with(&n[1..]) && sni.len() > n.len() - 1)
                .max_by_key(|n| n.len())
                .cloned()
                .unwrap_or_else(|| "*".to_owned())
        };
        let mut names: Vec<String> = NAMES.iter().map(|n| n.replace('*', "z")).collect();
        names.extend(["other.net".to_owned(), String::new(), "deep.api.example.com".to_owned()]);
        let (h2, h1) = ("h2".to_owned(), "http/1.1".to_owned());
        let alpns = [vec![], vec![h2.clone()], vec![h1.clone()], vec![h2.clone(), h1.clone()], vec![h1, h2]];
        let mut clients: Vec<Client> = names.iter().flat_map(|n| alpns.iter().map(move |a| tls(n, a))).collect();
        clients.extend([Client::Http1, Client::H2c, Client::Raw]);
        for client in clients {
            let (o, n) = (ask(old_ip, port, client.clone()), ask(new_ip, port, client.clone()));
            if o == n {
                continue;
            }
            let covered = classes.iter().any(|c| {
                let class = &c["match"];
                c["old"].as_str() == o.as_deref()
                    && c["new"].as_str() == n.as_deref()
                    && match &client {
                        Client::Tls { sni, .. } => {
                            let want = cell(sni.as_deref().unwrap_or_default());
                            class["client"] == "tls" && class["server_names"].as_array().unwrap().contains(&json!(want))
                        }
                        Client::Http1 => class["client"] == "http1",
                        Client::H2c => class["client"] == "h2c",
                        Client::Raw => class["client"] == "raw",
                    }
            });
            assert!(
                covered,
                "seed {seed}: {client:?} moves {o:?} -> {n:?}, in no reported class: {answer}\nold {old}\nnew {new}"
            );
        }
        assert_eq!(
            code,
            if classes.is_empty() && answer["findings"]["new"].as_array().unwrap().is_empty() { 0 } else { 1 },
            "seed {seed}"
        );
    }
    // The seeds are chosen so that classes move: the check above is not vacuous.
    assert!(witnessed > 0, "no seed moved a connection");
}

/// A route table of one HCM chain whose routes answer with their own names; one seeded change
/// of it (a domain dropped or added, a route dropped, routes reordered, a prefix changed, a
/// header matcher added, an answer changed).
fn route_pair(seed: u64) -> (Value, Value) {
    let mut r = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    const DOMAINS: [&str; 7] =
        ["api.example.com", "*.example.com", "www.example.com", "shop.*", "*", "*.api.example.com", "example.org"];
    const PREFIXES: [&str; 5] = ["/", "/api", "/api/v1", "/static", "/health"];
    let mut vhosts = Vec::new();
    let mut used = Vec::new();
    for v in 0..1 + r.below(3) {
        let mut domains = Vec::new();
        for _ in 0..1 + r.below(2) {
            let d = DOMAINS[r.below(DOMAINS.len())];
            if !used.contains(&d) {
                used.push(d);
                domains.push(d);
            }
        }
        if domains.is_empty() {
            continue;
        }
        let routes: Vec<Value> = (0..1 + r.below(3)).map(|i| route(&mut r, &format!("vh{v}-r{i}"), PREFIXES)).collect();
        vhosts.push(json!({"name": format!("vh{v}"), "domains": domains, "routes": routes}));
    }
    let old = json!({"name": "rt", "virtual_hosts": vhosts});
    let mut new = old.clone();
    let v = r.below(vhosts.len());
    let vh = &mut new["virtual_hosts"][v];
    let domains = vh["domains"].as_array().unwrap().len();
    let change = r.below(7);
    if change == 0 && domains > 1 {
        vh["domains"].as_array_mut().unwrap().remove(0);
    }
    if change == 1
        && let Some(d) = DOMAINS.iter().find(|d| !used.contains(d))
    {
        vh["domains"].as_array_mut().unwrap().push(json!(d));
    }
    let routes = vh["routes"].as_array_mut().unwrap();
    match change {
        0 | 1 => {}
        2 if routes.len() > 1 => {
            routes.remove(r.below(routes.len()));
        }
        3 => routes.reverse(),
        4 => {
            let i = r.below(routes.len());
            routes[i]["match"] = json!({"prefix": PREFIXES[r.below(PREFIXES.len())]});
        }
        5 => {
            let i = r.below(routes.len());
            routes[i]["match"]["headers"] = json!([{"name": "x-canary", "string_match": {"exact": "1"}}]);
        }
        _ => {
            let i = r.below(routes.len());
            let name = routes[i]["name"].as_str().unwrap().to_owned();
            routes[i]["direct_response"]["body"]["inline_string"] = json!(format!("{name} v2"));
        }
    }
    (old, new)
}

fn route(r: &mut Rng, name: &str, prefixes: [&str; 5]) -> Value {
    let p = prefixes[r.below(prefixes.len())];
    let mut m = match r.below(4) {
        0 => json!({"path": p}),
        1 if p != "/" => json!({"path_separated_prefix": p}),
        _ => json!({"prefix": p}),
    };
    if r.below(5) == 0 {
        m["headers"] = json!([{"name": "x-canary", "string_match": {"exact": "1"}}]);
    }
    if r.below(6) == 0 {
        m["case_sensitive"] = json!(false);
    }
    json!({"name": name, "match": m, "direct_response": {"status": 200, "body": {"inline_string": name}}})
}

fn http_listener(ip: Ipv4Addr, port: u16, table: &Value) -> Value {
    json!({"name": "web",
        "address": {"socket_address": {"address": ip.to_string(), "port_value": port}},
        "filter_chains": [{"name": "http", "filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": "web",
            "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
            "route_config": table}}]}]})
}

/// What Envoy answers a request: the direct response's body, or `None` for a 404.
fn get(ip: Ipv4Addr, port: u16, host: &str, path: &str, headers: &[(String, String)]) -> Option<String> {
    let req = xdsck_core::routing::Request {
        host: host.to_owned(),
        path: path.to_owned(),
        method: "GET".to_owned(),
        headers: headers.to_vec(),
    };
    match client::http1((ip, port), &req) {
        (200, body) => Some(body),
        (404, _) => None,
        (other, body) => panic!("GET {path} Host {host}: status {other}: {body}"),
    }
}

/// The body a landing answers with (every route is a direct response), `None` for a 404.
fn expected_body(landing: &Value) -> Option<String> {
    landing["action"]["body"].as_str().map(str::to_owned)
}

#[test]
fn every_request_witness_lands_where_diff_says_and_every_moved_request_is_reported() {
    let bin = envoy::binary();
    let (old_ip, new_ip) = (Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3));
    let seeds = seeds();
    let mut witnessed = 0;
    for seed in seeds {
        let (ports, hold) = envoy::free_ports(1, &[old_ip, new_ip]);
        let port = ports[0];
        let (old_table, new_table) = route_pair(seed);
        let (old, new) = (http_listener(old_ip, port, &old_table), http_listener(new_ip, port, &new_table));
        let (code, answer) = diff_listeners(&old, &new, &[]);
        let listener = &answer["listeners"][0];
        drop(hold);
        if listener["status"] == "rejected" {
            assert_envoy_rejects(&bin, &new, seed);
            continue;
        }
        let classes = listener["requests"].as_array().unwrap();
        assert!(listener["connections"].as_array().unwrap().is_empty(), "seed {seed}: {answer}");
        let _envoys = (start(&bin, &old), start(&bin, &new));
        for c in classes {
            let req = &c["request"];
            let headers: Vec<(String, String)> = req["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h["name"].as_str().unwrap().to_owned(), h["value"].as_str().unwrap().to_owned()))
                .collect();
            let (host, path) = (req["host"].as_str().unwrap(), req["path"].as_str().unwrap());
            let o = get(old_ip, port, host, path, &headers);
            let n = get(new_ip, port, host, path, &headers);
            assert_eq!(
                o,
                expected_body(&c["old"]),
                "seed {seed}: {host} {path} on the old Envoy: {c}\nold {old_table}"
            );
            assert_eq!(
                n,
                expected_body(&c["new"]),
                "seed {seed}: {host} {path} on the new Envoy: {c}\nnew {new_table}"
            );
            witnessed += 1;
        }
        // A reorder that moves nothing says so.
        if classes.is_empty() {
            assert_eq!(listener["status"], "unchanged", "seed {seed}: {answer}");
        }
        // Requests of every kind: each that lands elsewhere is in a class with the same answers.
        let hosts = [
            "api.example.com",
            "www.example.com",
            "a.example.com",
            "x.api.example.com",
            "shop.x",
            "example.org",
            "other.net",
            "API.example.com",
        ];
        let paths = ["/", "/api", "/api/v1", "/api/v1/x", "/apix", "/API", "/static/a", "/health", "/other"];
        let canary = [vec![], vec![("x-canary".to_owned(), "1".to_owned())]];
        for host in hosts {
            for path in paths {
                for headers in &canary {
                    let (o, n) = (get(old_ip, port, host, path, headers), get(new_ip, port, host, path, headers));
                    if o == n {
                        continue;
                    }
                    let covered =
                        classes.iter().any(|c| expected_body(&c["old"]) == o && expected_body(&c["new"]) == n);
                    assert!(
                        covered,
                        "seed {seed}: {host} {path} {headers:?} moves {o:?} -> {n:?}, in no class: {answer}\nold {old_table}\nnew {new_table}"
                    );
                }
            }
        }
        assert_eq!(code, if classes.is_empty() { 0 } else { 1 }, "seed {seed}: {answer}");
    }
    assert!(witnessed > 0, "no seed moved a request");
}

fn xdsck_in_workspace(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck")).args(args).current_dir(support::workspace()).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The README's case: the dump against a copy without the `api.example.com` passthrough chain.
/// Its connections now fall to the wildcard's chain; the witness is that name, in JSON as in
/// text (the text is the README's checked sample).
#[test]
fn a_removed_exact_name_falls_to_the_wildcard_with_a_witness() {
    let (code, out) = xdsck_in_workspace(&[
        "diff",
        "testdata/envoy/config_dump.json",
        "testdata/diff/config_dump-without-api.json",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "{out}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    let listeners = answer["listeners"].as_array().unwrap();
    let changed: Vec<&Value> = listeners.iter().filter(|l| l["status"] == "changed").collect();
    assert_eq!(changed.len(), 1, "{answer}");
    assert_eq!(changed[0]["name"], "gateway-https");
    let classes = changed[0]["connections"].as_array().unwrap();
    assert_eq!(classes.len(), 1, "{answer}");
    let c = &classes[0];
    assert_eq!(c["match"]["server_names"], json!(["api.example.com"]));
    assert_eq!((c["old"].as_str(), c["new"].as_str()), (Some("tls-passthrough-api"), Some("https-example-com")));
    assert_eq!(c["connection"]["server_name"], "api.example.com");
    // The witness replays: `trace` on NEW lands on the new chain, on OLD on the old one.
    let flags = |path: &str| {
        vec![
            "trace".to_owned(),
            path.to_owned(),
            "--listener".to_owned(),
            "gateway-https".to_owned(),
            "--dst".to_owned(),
            c["connection"]["destination"].as_str().unwrap().to_owned(),
            "--src".to_owned(),
            c["connection"]["source"].as_str().unwrap().to_owned(),
            "--sni".to_owned(),
            "api.example.com".to_owned(),
            "--format".to_owned(),
            "json".to_owned(),
        ]
    };
    for (path, chain) in [
        ("testdata/envoy/config_dump.json", "tls-passthrough-api"),
        ("testdata/diff/config_dump-without-api.json", "https-example-com"),
    ] {
        let args = flags(path);
        let (_, out) = xdsck_in_workspace(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let trace: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(trace["filter_chain"], chain, "{path}: {trace}");
    }
}

/// Several inputs per side (a listener and its RDS answer): the requests a route change moves,
/// and nothing at all when a side is the other reformatted.
#[test]
fn old_and_new_take_several_inputs_and_a_reformatted_side_moves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let rds = std::fs::read_to_string(support::workspace().join("testdata/trace/rds.yaml")).unwrap();
    let canary = dir.path().join("rds-canary.yaml");
    std::fs::write(&canary, rds.replace("route: {cluster: api-beta}", "route: {cluster: api-canary}")).unwrap();
    let (code, out) = xdsck_in_workspace(&[
        "diff",
        "--old",
        "testdata/trace/lds.yaml",
        "testdata/trace/rds.yaml",
        "--new",
        "testdata/trace/lds.yaml",
        canary.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "{out}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    let requests = answer["listeners"][0]["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 1, "{answer}");
    let r = &requests[0];
    assert_eq!(r["old"]["action"], json!({"kind": "cluster", "cluster": "api-beta"}));
    assert_eq!(r["new"]["action"], json!({"kind": "cluster", "cluster": "api-canary"}));
    assert_eq!(r["request"]["host"], "api.example.com");
    assert!(r["request"]["path"].as_str().unwrap().contains("version=beta"), "{r}");

    // The README's dump minified onto one line: nothing moves, exit 0.
    let dump: Value = serde_json::from_str(
        &std::fs::read_to_string(support::workspace().join("testdata/envoy/config_dump.json")).unwrap(),
    )
    .unwrap();
    let minified = dir.path().join("dump.json");
    std::fs::write(&minified, serde_json::to_string(&dump).unwrap()).unwrap();
    let (code, out) = xdsck_in_workspace(&["diff", "testdata/envoy/config_dump.json", minified.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("5 listeners: 0 changed, 0 added, 0 removed, 0 rejected, 5 unchanged"), "{out}");
}

/// A running Envoy as the old side (its admin socket) against the file about to be applied.
#[test]
fn a_running_proxy_is_a_side() {
    let bin = envoy::binary();
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let (ports, hold) = envoy::free_ports(1, &[ip]);
    let old = listener(
        ip,
        ports[0],
        &[chain("api", &["api.example.com"], &[]), chain("wild", &["*.example.com"], &[])],
        false,
        true,
    );
    let new = listener(ip, ports[0], &[chain("wild", &["*.example.com"], &[])], false, true);
    drop(hold);
    let dir = tempfile::tempdir().unwrap();
    let admin = LiveEnvoy::admin_socket(dir.path()).to_str().unwrap().to_owned();
    let b = generate::bootstrap(&[&old], Some(&admin));
    let _envoy = LiveEnvoy::start(&bin, dir, &b).unwrap_or_else(|e| panic!("{e}"));
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_vec(&json!([new])).unwrap()).unwrap();
    let (code, out) = xdsck(&["diff", &format!("unix://{admin}"), file.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 1, "{out}");
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let edge = answer["listeners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "edge")
        .unwrap_or_else(|| panic!("{answer}"));
    let classes = edge["connections"].as_array().unwrap();
    assert_eq!(classes.len(), 1, "{answer}");
    assert_eq!((classes[0]["old"].as_str(), classes[0]["new"].as_str()), (Some("api"), Some("wild")));
    // The same file as both sides: nothing moves.
    let (code, out) = xdsck(&["diff", file.path().to_str().unwrap(), file.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
}

/// A listener renamed at the same address is paired by its address, and said so; nothing moves
/// when its chains do the same, and its findings are neither new nor fixed.
#[test]
fn a_renamed_listener_is_paired_by_its_address() {
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let chains = [chain("api", &["api.example.com"], &[]), chain("wild", &["*.example.com"], &[])];
    let old = listener(ip, 10443, &chains, false, true);
    let mut new = old.clone();
    new["name"] = json!("edge-v2");
    let (code, answer) = diff_listeners(&old, &new, &[]);
    assert_eq!(code, 0, "{answer}");
    let listeners = answer["listeners"].as_array().unwrap();
    assert_eq!(listeners.len(), 1, "{answer}");
    let l = &listeners[0];
    assert_eq!(
        (l["name"].as_str(), l["old_name"].as_str(), l["status"].as_str()),
        (Some("edge-v2"), Some("edge"), Some("unchanged"))
    );
    assert_eq!(l["notes"], json!(["paired by address 127.0.0.2:10443: the old version names it 'edge'"]));
}

/// A control plane as the old side (read once, as `attach` reads it over xDS) against a file.
#[test]
fn a_control_plane_is_a_side() {
    use support::xds_server::{Bind, State, XdsServer};
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ip = Ipv4Addr::new(127, 0, 0, 2);
    let old = listener(
        ip,
        10443,
        &[chain("api", &["api.example.com"], &[]), chain("wild", &["*.example.com"], &[])],
        false,
        true,
    );
    let new = listener(ip, 10443, &[chain("wild", &["*.example.com"], &[])], false, true);
    let state =
        State { version: "1".into(), resources: vec![support::proto_build::listener_any(&old)], ..State::default() };
    let server = rt.block_on(XdsServer::start(Bind::Tcp("127.0.0.1:0".parse().unwrap()), state));
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_vec(&json!([new])).unwrap()).unwrap();
    let (code, out) = xdsck(&["diff", &server.url(), file.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 1, "{out}");
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let edge = &answer["listeners"][0];
    assert_eq!(edge["status"], "changed", "{answer}");
    // Only the exact name's connections move: the wildcard's chain, transcoded from protobuf on
    // one side and written by hand on the other, is the same chain.
    let classes = edge["connections"].as_array().unwrap();
    assert_eq!(classes.len(), 1, "{answer}");
    assert_eq!(classes[0]["match"]["server_names"], json!(["api.example.com"]));
    assert_eq!((classes[0]["old"].as_str(), classes[0]["new"].as_str()), (Some("api"), Some("wild")));
}
