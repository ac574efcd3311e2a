//! HTTP routing conformance against a live Envoy 1.40 (no mocks): seeded random route tables —
//! domains drawn to collide and shadow each other, routes drawn to overlap — each inline in a
//! listener of one Envoy, whose routes answer with a `direct_response` naming their virtual
//! host and route. HTTP/1.1 requests with chosen Host, path and headers go to the live Envoy and
//! the same requests to xdsck's trace (`xdsck_core::trace` then `routing::trace::trace_http`,
//! what `xdsck trace --host --path` runs); the virtual host and route must be the same, and a
//! 404 must be a request xdsck routes nowhere.
//!
//! A table xdsck says Envoy rejects (`duplicate-domain`) is not served: it is run alone through
//! `envoy --mode validate`, which must reject it with the text of one of xdsck's errors.
//!
//! `XDSCK_ROUTE_SEEDS=N` runs N seeds (default 200); `XDSCK_ROUTE_SEED=S` just seed S.

// The counts of probes and seeds are the test's report.
#![allow(clippy::print_stderr)]

use crate::support;

use std::net::Ipv4Addr;

use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use support::client;
use support::envoy::{self, LiveEnvoy};
use xdsck_core::routing::Request;
use xdsck_core::trace::{Attributes, Query};
use xdsck_core::{Options, SourceFile, Sources};

const PROBES_PER_TABLE: usize = 12;

fn seeds() -> Vec<u64> {
    if let Ok(one) = std::env::var("XDSCK_ROUTE_SEED") {
        return vec![one.parse().expect("XDSCK_ROUTE_SEED is a number")];
    }
    let n = std::env::var("XDSCK_ROUTE_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(200);
    (0..n).collect()
}

/// Domain parts drawn from a small alphabet so that exact, suffix and prefix keys meet.
const LABELS: &[&str] = &["a", "b", "api", "www", "shop"];
const ZONES: &[&str] = &["example.com", "example.org", "a.example.com"];

fn domain(rng: &mut ChaCha8Rng) -> String {
    let label = *LABELS.choose(rng).unwrap();
    let zone = *ZONES.choose(rng).unwrap();
    let d = match rng.random_range(0..10) {
        0..=3 => format!("{label}.{zone}"),
        4..=5 => format!("*.{zone}"),
        6 => format!("*{zone}"),
        7 => format!("{label}.*"),
        8 => format!("{label}.{zone}:{}", [80, 8080].choose(rng).unwrap()),
        _ => "*".to_owned(),
    };
    // Case variants collide with their lower-case form in Envoy's index.
    if rng.random_bool(0.15) { d.to_ascii_uppercase() } else { d }
}

const PATHS: &[&str] = &["/", "/api", "/api/v1", "/api/v1/users", "/static", "/Static/x", "/health"];

fn route_json(rng: &mut ChaCha8Rng, vh: &str, i: usize) -> Value {
    let p = *PATHS.choose(rng).unwrap();
    let mut m = match rng.random_range(0..10) {
        0..=4 => json!({"prefix": p}),
        5..=6 => json!({"path": p}),
        7..=8 => json!({"path_separated_prefix": if p == "/" { "/api" } else { p }}),
        _ => json!({"safe_regex": {"regex": format!("{}(/[a-z0-9]+)*", regex_escape(p.trim_end_matches('/')))}}),
    };
    if rng.random_bool(0.2) && m.get("safe_regex").is_none() {
        m["case_sensitive"] = json!(false);
    }
    if rng.random_bool(0.2) {
        m["headers"] = json!([{"name": "x-canary", "string_match": {"exact": "1"}}]);
    }
    if rng.random_bool(0.25) {
        let q = [
            json!({"name": "v", "string_match": {"exact": "1"}}),
            json!({"name": "v", "string_match": {"exact": "a", "ignore_case": true}}),
            json!({"name": "v", "string_match": {"prefix": "a"}}),
            json!({"name": "v", "present_match": true}),
            json!({"name": "v", "present_match": false}),
            json!({"name": "v"}),
        ];
        m["query_parameters"] = json!([q.choose(rng).unwrap()]);
    }
    let mut r = json!({
        "match": m,
        "direct_response": {"status": 200, "body": {"inline_string": format!("vh={vh} route={}", route_name(vh, i))}},
    });
    if rng.random_bool(0.7) {
        r["name"] = json!(route_name(vh, i));
    }
    r
}

/// What the body says for a route: its name, or `routes[N]` as xdsck names an unnamed one.
fn route_name(vh: &str, i: usize) -> String {
    format!("{vh}-r{i}")
}

fn regex_escape(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '/' { c.to_string() } else { format!("\\{c}") }).collect()
}

/// A generated listener: its name, port, JSON, and the hosts/paths worth asking.
struct Gen {
    seed: u64,
    name: String,
    port: u16,
    json: Value,
    hosts: Vec<String>,
}

fn generate(seed: u64, port: u16) -> Gen {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut vhosts = Vec::new();
    let mut hosts = Vec::new();
    let ignore_port = rng.random_bool(0.2);
    for v in 0..rng.random_range(1..=4) {
        let name = format!("vh{v}");
        let domains: Vec<String> = (0..rng.random_range(1..=3)).map(|_| domain(&mut rng)).collect();
        for d in &domains {
            // Hosts each domain takes, and near misses.
            let h = d.replace("*.", "x.").replace('*', "z");
            hosts.push(h.clone());
            hosts.push(h.to_ascii_uppercase());
            hosts.push(format!("{h}:8080"));
        }
        let routes: Vec<Value> = (0..rng.random_range(0..=5)).map(|i| route_json(&mut rng, &name, i)).collect();
        vhosts.push(json!({"name": name, "domains": domains, "routes": routes}));
    }
    hosts.extend(["api.example.com", "other.test", "api.example.com:80", "a.example.com."].map(str::to_owned));
    hosts.sort();
    hosts.dedup();
    let name = format!("routes-{seed}");
    let mut table = json!({"name": format!("rt-{seed}"), "virtual_hosts": vhosts});
    if ignore_port {
        table["ignore_port_in_host_matching"] = json!(true);
    }
    let mut hcm = json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": format!("s{seed}"),
        "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
        "route_config": table,
    });
    if rng.random_bool(0.15) {
        hcm["strip_any_host_port"] = json!(true);
    }
    let json = json!({
        "name": name,
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}]}],
    });
    Gen { seed, name, port, json, hosts }
}

fn requests(g: &Gen) -> Vec<Request> {
    let mut rng = ChaCha8Rng::seed_from_u64(g.seed ^ 0x5eed);
    let extra = ["/api/v1/users/7", "/api?x=1", "/apix", "/static/", "/HEALTH", "/nothing"];
    (0..PROBES_PER_TABLE)
        .map(|_| {
            let path =
                if rng.random_bool(0.6) { *PATHS.choose(&mut rng).unwrap() } else { *extra.choose(&mut rng).unwrap() };
            // Query strings for the routes' query_parameters: first values, bare keys, case,
            // encoding (never decoded), empty pieces.
            let query =
                ["?v=1", "?v=2", "?v", "?v=", "?x=1&v=1", "?v=2&v=1", "?V=1", "?v=A", "?v=abc", "?v=%31", "?&v=1"];
            let path = if !path.contains('?') && rng.random_bool(0.4) {
                format!("{path}{}", query.choose(&mut rng).unwrap())
            } else {
                path.to_owned()
            };
            let headers = if rng.random_bool(0.3) { vec![("x-canary".to_owned(), "1".to_owned())] } else { Vec::new() };
            Request { host: g.hosts.choose(&mut rng).unwrap().clone(), path, method: "GET".into(), headers }
        })
        .collect()
}

/// What xdsck says: `vh=<virtual host> route=<route>` as the body would, or None for a 404.
fn ask_xdsck(sources: &Sources, g: &Gen, req: &Request) -> Result<Option<String>, String> {
    let documents = xdsck_core::read_documents(sources, &Options::default());
    let (snapshot, _) = xdsck_core::load_all(&documents);
    let query = Query {
        listener: Some(g.name.clone()),
        destination: format!("127.0.0.1:{}", g.port).parse().unwrap(),
        source: None,
        direct_source: None,
        attributes: Attributes::Client(xdsck_core::chain_match::trace::Client::Http1),
    };
    let answer = xdsck_core::trace::trace(&snapshot, sources, &query).map_err(|e| e.to_string())?;
    let http = xdsck_core::routing::trace::trace_http(&snapshot, &answer, req);
    if http.undecided {
        return Err(format!("undecided: {:?}", http.steps));
    }
    Ok(match (&http.virtual_host, &http.route) {
        (Some(vh), Some(r)) => {
            // An unnamed route is `routes[N]` to xdsck; the body names it by its index too.
            let r = match r.strip_prefix("routes[").and_then(|x| x.strip_suffix(']')) {
                Some(i) => route_name(vh, i.parse().unwrap()),
                None => r.clone(),
            };
            Some(format!("vh={vh} route={r}"))
        }
        _ => None,
    })
}

/// A shadowed-route finding's witness request, and the route it must not reach.
struct Witness {
    seed: u64,
    port: u16,
    request: Request,
    vh: String,
    route: usize,
}

fn witness(g: &Gen, d: &xdsck_core::Diagnostic) -> Option<Witness> {
    let pointer = &d.location.as_ref()?.pointer;
    let mut tokens = pointer.rsplit('/');
    let route = tokens.next()?.parse().ok()?;
    tokens.next();
    let vh: usize = tokens.next()?.parse().ok()?;
    let host = d.example().get("host")?.as_str()?.to_owned();
    let path = d.example().get("path")?.as_str()?.to_owned();
    // Generated header matchers all ask for `x-canary: 1`; the shadowed route is taken either way.
    let headers = vec![("x-canary".to_owned(), "1".to_owned())];
    Some(Witness {
        seed: g.seed,
        port: g.port,
        request: Request { host, path, method: "GET".into(), headers },
        vh: format!("vh{vh}"),
        route,
    })
}

#[test]
fn random_route_tables_agree_with_live_envoy() {
    let envoy_bin = envoy::binary();
    let seeds = seeds();
    let (ports, hold) = envoy::free_ports(seeds.len(), &[Ipv4Addr::LOCALHOST]);
    let gens: Vec<Gen> = seeds.iter().zip(&ports).map(|(&s, &p)| generate(s, p)).collect();

    // xdsck's verdict on each table, alone.
    let mut served = Vec::new();
    let mut rejected = 0;
    let mut problems = Vec::new();
    let mut witnesses = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    for g in &gens {
        let b = support::generate::bootstrap(&[&g.json], None);
        let text = serde_json::to_string_pretty(&b).unwrap();
        let mut sources = Sources::new();
        sources.add(SourceFile::new(format!("{}.json", g.name), text.clone()));
        let report = xdsck_core::analyze(&sources, &Options::default());
        let errors: Vec<String> = report
            .findings
            .iter()
            .filter(|d| d.severity == xdsck_core::Severity::Error)
            .filter_map(|d| d.envoy_error().map(str::to_owned))
            .collect();
        if errors.is_empty() {
            witnesses.extend(report.findings.iter().filter(|d| d.code() == "XDS211").filter_map(|d| witness(g, d)));
            served.push((g, sources));
            continue;
        }
        rejected += 1;
        let path = dir.path().join(format!("{}.json", g.name));
        std::fs::write(&path, &text).unwrap();
        match envoy::validate(&envoy_bin, &path) {
            Ok(()) => problems.push(format!("seed {}: Envoy accepts; xdsck: {errors:?}", g.seed)),
            Err(e) if errors.iter().any(|x| x.trim_end() == e.trim_end()) => {}
            Err(e) => problems.push(format!("seed {}: Envoy says {e:?}; xdsck: {errors:?}", g.seed)),
        }
    }

    let live_dir = tempfile::tempdir().unwrap();
    let admin = LiveEnvoy::admin_socket(live_dir.path());
    let listeners: Vec<&Value> = served.iter().map(|(g, _)| &g.json).collect();
    let bootstrap = support::generate::bootstrap(&listeners, Some(admin.to_str().unwrap()));
    drop(hold);
    let live =
        LiveEnvoy::start(&envoy_bin, live_dir, &bootstrap).unwrap_or_else(|e| panic!("Envoy did not start: {e}"));

    let (mut probes, mut routed) = (0, 0);
    for (g, sources) in &served {
        for req in requests(g) {
            probes += 1;
            let (status, body) = client::http1((Ipv4Addr::LOCALHOST, g.port), &req);
            let envoy_says = match status {
                200 => {
                    routed += 1;
                    Some(body.clone())
                }
                404 => None,
                other => {
                    problems.push(format!("seed {}: {req:?}: Envoy answered {other} {body:?}", g.seed));
                    continue;
                }
            };
            match ask_xdsck(sources, g, &req) {
                Ok(x) if x == envoy_says => {}
                Ok(x) => problems.push(format!(
                    "seed {}: {} {} (headers {:?}): Envoy {envoy_says:?}, xdsck {x:?}\n{}",
                    g.seed,
                    req.host,
                    req.path,
                    req.headers,
                    serde_json::to_string(&g.json["filter_chains"][0]["filters"][0]["typed_config"]["route_config"])
                        .unwrap()
                )),
                Err(e) => problems.push(format!("seed {}: {req:?}: xdsck {e}", g.seed)),
            }
        }
    }
    // Every shadowed-route witness goes to an earlier route of the same virtual host.
    let shadowed = witnesses.len();
    for w in &witnesses {
        let (status, body) = client::http1((Ipv4Addr::LOCALHOST, w.port), &w.request);
        let earlier = body
            .strip_prefix(&format!("vh={} route={}-r", w.vh, w.vh))
            .and_then(|i| i.parse::<usize>().ok())
            .is_some_and(|i| i < w.route);
        if status != 200 || !earlier {
            problems.push(format!(
                "seed {}: shadowed-route witness {:?} for {} route {}: Envoy answered {status} {body:?}",
                w.seed, w.request, w.vh, w.route
            ));
        }
    }
    drop(live);
    eprintln!("{shadowed} shadowed-route witnesses sent to the live Envoy");
    eprintln!(
        "{} seeds: {} tables served, {probes} live probes ({routed} routed, the rest 404); {rejected} tables rejected, checked with --mode validate; {} disagreement(s)",
        gens.len(),
        served.len(),
        problems.len()
    );
    assert!(served.len() > gens.len() / 4, "too few tables served to test anything: {}", served.len());
    assert!(routed > probes / 5 && routed < probes, "probes too one-sided: {routed} of {probes} routed");
    assert!(problems.is_empty(), "{} disagreement(s) with Envoy:\n{}", problems.len(), problems.join("\n"));
}
