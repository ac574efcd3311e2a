//! Conformance with a real Envoy 1.40, on random listeners (no mocks).
//!
//! For every seed a listener is generated ([`support::generate`]) and
//! 1. `envoy --mode validate` and `xdsck` judge it: Envoy rejects it exactly when xdsck has an
//!    error-severity finding (severity `error` means "Envoy rejects this", see docs/envoy-matching.md);
//! 2. if Envoy accepts it, it runs in a live Envoy (a batch of listeners per process) whose
//!    chains answer with their own names; connections from chosen sources with chosen
//!    ClientHellos, HTTP requests or raw bytes ask Envoy which chain they reach, and
//!    `xdsck trace` on that Envoy's own `/config_dump` must name the same chain (or `null`
//!    where Envoy closes the connection).
//!
//! `XDSCK_CONFORMANCE_SEEDS=<n>` runs seeds `0..n` (default 200); `XDSCK_CONFORMANCE_SEED=<s>`
//! runs the one seed a failure names (its ports, and Envoy's pick where its choice is
//! undefined, may differ from run to run); `XDSCK_CONFORMANCE_KEEP=1` keeps each live Envoy's
//! bootstrap, log and config dump and prints where. `prober_follows_envoy_matching_doc` checks
//! the prober itself against Envoy on fixed listeners, without xdsck.
//!
//! Envoy comes from `scripts/install-envoy.sh`; if it cannot be had, these tests fail.

// The agreement counts and every disagreement are this test's output.
#![allow(clippy::print_stderr)]

use crate::support;

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::Value;

use support::client::{self, Answer};
use support::envoy::{self, LiveEnvoy};
use support::generate::{self, Client, GenListener, Ports, Probe};

const DEFAULT_SEEDS: u64 = 200;
/// Listeners per live Envoy: few processes, and a failure still names a small bootstrap.
const BATCH: usize = 25;
const PROBES_PER_LISTENER: usize = 12;
/// A probe mostly waits: on Envoy, then on an `xdsck trace` process.
const PROBE_WORKERS: usize = 8;
/// `envoy --mode validate` is CPU-bound (~80 ms); the machine has 2 cores.
const VALIDATE_WORKERS: usize = 3;
/// Probe disagreements printed with their listener's JSON; the rest get one line each.
const SHOW: usize = 25;

const LOOPBACKS: [Ipv4Addr; 3] =
    [Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3)];
/// Every source address a probe may bind to (generate.rs `SRC_IPS` and the listener IPs).
const SOURCE_IPS: [Ipv4Addr; 4] = [
    Ipv4Addr::new(127, 0, 0, 1),
    Ipv4Addr::new(127, 0, 0, 2),
    Ipv4Addr::new(127, 0, 0, 3),
    Ipv4Addr::new(127, 0, 0, 9),
];

fn seeds() -> Vec<u64> {
    if let Ok(one) = std::env::var("XDSCK_CONFORMANCE_SEED") {
        return vec![one.trim().parse().unwrap_or_else(|e| panic!("XDSCK_CONFORMANCE_SEED={one:?}: {e}"))];
    }
    let n = std::env::var("XDSCK_CONFORMANCE_SEEDS")
        .map(|v| v.trim().parse().unwrap_or_else(|e| panic!("XDSCK_CONFORMANCE_SEEDS={v:?}: {e}")))
        .unwrap_or(DEFAULT_SEEDS);
    (0..n).collect()
}

/// `f` over `items` on `workers` threads; results in item order.
fn parallel<T: Sync, R: Send>(items: &[T], workers: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers.min(items.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    results.lock().unwrap()[i] = Some(r);
                }
            });
        }
    });
    results.into_inner().unwrap().into_iter().map(|r| r.expect("every item ran")).collect()
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

// ---------------------------------------------------------------------------------------------
// xdsck

/// An error-severity finding: xdsck predicts that Envoy rejects the config.
#[derive(Debug)]
struct Rejection {
    code: String,
    message: String,
    envoy_error: Option<String>,
}

/// `xdsck --format json --fail-on never PATH`: its error findings, or why it failed.
fn xdsck_rejections(path: &Path) -> Result<Vec<Rejection>, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["--format", "json", "--fail-on", "never"])
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run xdsck: {e}"))?;
    if !out.status.success() {
        return Err(format!("xdsck exited with {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()));
    }
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("xdsck output is not JSON: {e}"))?;
    let findings = report["findings"].as_array().ok_or("xdsck output has no findings[]")?;
    Ok(findings
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| Rejection {
            code: f["code"].as_str().unwrap_or_default().to_owned(),
            message: f["message"].as_str().unwrap_or_default().to_owned(),
            envoy_error: f["envoy_error"].as_str().map(str::to_owned),
        })
        .collect())
}

/// What `xdsck trace` says about one connection.
#[derive(Debug)]
struct Trace {
    /// The chain reached; `None` when Envoy closes the connection.
    chain: Option<String>,
    /// Some level had two equally specific keys (an explicit `0.0.0.0/0` next to an unset
    /// range list, envoy-matching.md §4.3): Envoy's choice is undefined, so no single answer
    /// can be predicted.
    ambiguous: bool,
}

/// The `xdsck trace` arguments after the input path that describe `probe`'s connection.
fn trace_args(listener: &str, probe: &Probe, src_port: u16) -> Vec<String> {
    let mut args = vec![
        "--listener".to_owned(),
        listener.to_owned(),
        "--dst".to_owned(),
        format!("{}:{}", probe.dst.0, probe.dst.1),
        "--src".to_owned(),
        format!("{}:{src_port}", probe.src.0),
        "--client".to_owned(),
    ];
    match &probe.client {
        Client::Tls { sni, alpn } => {
            args.push("tls".to_owned());
            if let Some(sni) = sni {
                args.extend(["--sni".to_owned(), sni.clone()]);
            }
            if !alpn.is_empty() {
                args.extend(["--alpn".to_owned(), alpn.join(",")]);
            }
        }
        Client::Http1 => args.push("http1".to_owned()),
        Client::H2c => args.push("h2c".to_owned()),
        Client::Raw => args.push("raw".to_owned()),
    }
    args
}

/// `xdsck trace` for `probe` (from source port `src_port`). The contract: `trace DUMP
/// --listener NAME --dst IP:PORT --src IP:PORT --client tls|http1|h2c|raw [--sni S]
/// [--alpn a,b] --format json` prints an object whose `filter_chain` is the chain's name or
/// null, and whose `levels[].ambiguous` marks an undefined choice.
fn xdsck_trace(dump: &Path, listener: &str, probe: &Probe, src_port: u16) -> Result<Trace, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xdsck"));
    cmd.arg("trace").arg(dump).args(trace_args(listener, probe, src_port)).args(["--format", "json"]);
    let out = cmd.output().map_err(|e| format!("cannot run xdsck: {e}"))?;
    // 0: a chain takes the connection; 1: Envoy closes it (checked against filter_chain below).
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(format!(
            "`xdsck trace` exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!("`xdsck trace` output is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout).trim())
    })?;
    let chain = match v.get("filter_chain") {
        Some(Value::String(name)) => Some(name.clone()),
        Some(Value::Null) => None,
        _ => return Err(format!("`xdsck trace` output has no \"filter_chain\" string or null: {v}")),
    };
    if (out.status.code() == Some(1)) != (v["outcome"] == "closed") {
        return Err(format!("`xdsck trace` exited with {} for outcome {}", out.status, v["outcome"]));
    }
    let ambiguous = v["levels"].as_array().is_some_and(|ls| ls.iter().any(|l| l["ambiguous"] == true));
    Ok(Trace { chain, ambiguous })
}

// ---------------------------------------------------------------------------------------------
// Verdicts

struct Verdict {
    listener: GenListener,
    envoy: Result<(), String>,
    xdsck: Result<Vec<Rejection>, String>,
}

impl Verdict {
    fn agrees(&self) -> bool {
        matches!((&self.envoy, &self.xdsck), (Ok(()), Ok(r)) if r.is_empty())
            || matches!((&self.envoy, &self.xdsck), (Err(_), Ok(r)) if !r.is_empty())
    }

    /// Both reject, but no finding carries Envoy's message (a weaker disagreement: reported,
    /// not failed on).
    fn text_differs(&self) -> bool {
        match (&self.envoy, &self.xdsck) {
            (Err(e), Ok(r)) if !r.is_empty() => {
                !r.iter().any(|f| f.envoy_error.as_deref().is_some_and(|x| !x.is_empty() && e.contains(x)))
            }
            _ => false,
        }
    }

    fn describe(&self) -> String {
        let envoy = match &self.envoy {
            Ok(()) => "accepts".to_owned(),
            Err(e) => format!("rejects: {e}"),
        };
        let xdsck = match &self.xdsck {
            Ok(r) if r.is_empty() => "no error finding (predicts: accepted)".to_owned(),
            Ok(r) => r
                .iter()
                .map(|f| {
                    format!("{}: {} [envoy_error: {}]", f.code, f.message, f.envoy_error.as_deref().unwrap_or("-"))
                })
                .collect::<Vec<_>>()
                .join("\n         "),
            Err(e) => format!("failed: {e}"),
        };
        format!(
            "seed {seed} (XDSCK_CONFORMANCE_SEED={seed})\n  envoy: {envoy}\n  xdsck: {xdsck}\n  listener:\n{}",
            pretty(&self.listener.json),
            seed = self.listener.seed
        )
    }
}

fn verdict(envoy_bin: &Path, seed: u64) -> Verdict {
    let listener = generate::listener(seed, Ports::NOMINAL);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bootstrap.json");
    std::fs::write(&path, pretty(&generate::bootstrap(&[&listener.json], None))).unwrap();
    Verdict { envoy: envoy::validate(envoy_bin, &path), xdsck: xdsck_rejections(&path), listener }
}

// ---------------------------------------------------------------------------------------------
// Live probes

struct ProbeResult {
    listener: usize,
    probe: Probe,
    src_port: u16,
    envoy: Answer,
    xdsck: Result<Trace, String>,
}

impl ProbeResult {
    fn agrees(&self) -> bool {
        match (&self.envoy, &self.xdsck) {
            (Answer::Chain(c), Ok(t)) => t.chain.as_ref() == Some(c),
            (Answer::Closed, Ok(t)) => t.chain.is_none(),
            _ => false,
        }
    }

    /// Envoy answered, and xdsck says that answer is one of several Envoy may give.
    fn undefined(&self) -> bool {
        matches!((&self.envoy, &self.xdsck), (Answer::Chain(_) | Answer::Closed, Ok(t)) if t.ambiguous)
    }
}

/// One live Envoy with the `seeds`' listeners, probed. Ports are taken fresh from the kernel;
/// if one was grabbed between the check and Envoy's bind, the batch is retried on new ports.
fn run_batch(envoy_bin: &Path, seeds: &[u64]) -> (Vec<GenListener>, Vec<ProbeResult>) {
    let mut attempt = 0;
    let (listeners, mut live, hold_source) = loop {
        attempt += 1;
        let (listen, hold_listen) = envoy::free_ports(2 * seeds.len(), &LOOPBACKS);
        let (source, hold_source) = envoy::reserve_source_ports(2 * seeds.len(), &SOURCE_IPS);
        let listeners: Vec<GenListener> = seeds
            .iter()
            .enumerate()
            .map(|(i, &seed)| {
                let ports =
                    Ports { listen: [listen[2 * i], listen[2 * i + 1]], source: [source[2 * i], source[2 * i + 1]] };
                generate::listener(seed, ports)
            })
            .collect();
        let dir = tempfile::tempdir().expect("temp dir");
        let admin = LiveEnvoy::admin_socket(dir.path());
        let jsons: Vec<&Value> = listeners.iter().map(|l| &l.json).collect();
        let bootstrap = generate::bootstrap(&jsons, Some(admin.to_str().unwrap()));
        drop(hold_listen);
        match LiveEnvoy::start(envoy_bin, dir, &bootstrap) {
            Ok(live) => break (listeners, live, hold_source),
            Err(e) if attempt < 3 && e.contains("cannot bind") => eprintln!("retrying batch on new ports: {e}"),
            Err(e) => panic!("live Envoy for seeds {seeds:?} did not start: {e}"),
        }
    };
    let dump = live.dir().join("config_dump.json");
    let body = live.get("/config_dump").unwrap_or_else(|e| panic!("{e}\n{}", live.log_tail()));
    std::fs::write(&dump, body).unwrap();
    if std::env::var_os("XDSCK_CONFORMANCE_KEEP").is_some() {
        eprintln!("seeds {seeds:?}: bootstrap, config_dump.json and envoy.log kept in {}", live.keep_dir().display());
    }

    let work: Vec<(usize, Probe)> = listeners
        .iter()
        .enumerate()
        .flat_map(|(i, l)| generate::probes(l, PROBES_PER_LISTENER).into_iter().map(move |p| (i, p)))
        .collect();
    let results = parallel(&work, PROBE_WORKERS, |(i, probe)| {
        let (answer, src_port) = client::run(probe);
        let xdsck = xdsck_trace(&dump, &listeners[*i].name, probe, src_port);
        ProbeResult { listener: *i, probe: probe.clone(), src_port, envoy: answer, xdsck }
    });
    drop((live, hold_source));
    (listeners, results)
}

/// The disagreement; with the listener's JSON when `full`.
fn describe_probe(l: &GenListener, r: &ProbeResult, full: bool) -> String {
    let xdsck = match &r.xdsck {
        Ok(Trace { chain: Some(c), .. }) => format!("chain {c:?}"),
        Ok(Trace { chain: None, .. }) => "closed (filter_chain null)".to_owned(),
        Err(e) => format!("failed: {e}"),
    };
    let head = format!(
        "seed {seed} (XDSCK_CONFORMANCE_SEED={seed}) listener {name}\n  probe: {probe} (source port used: {port})\n  \
         envoy: {envoy}\n  xdsck: {xdsck}\n  as: xdsck trace config_dump.json {args}",
        seed = l.seed,
        name = l.name,
        probe = r.probe,
        port = r.src_port,
        envoy = r.envoy,
        args = trace_args(&l.name, &r.probe, r.src_port).join(" "),
    );
    if full { format!("{head}\n  listener:\n{}", pretty(&l.json)) } else { head }
}

#[test]
fn random_listeners_agree_with_envoy() {
    let started = Instant::now();
    let envoy_bin = envoy::binary();
    let seeds = seeds();

    let verdicts = parallel(&seeds, VALIDATE_WORKERS, |&seed| verdict(&envoy_bin, seed));
    let accepted: Vec<u64> = verdicts.iter().filter(|v| v.envoy.is_ok()).map(|v| v.listener.seed).collect();
    let validated = started.elapsed();

    let mut live = Vec::new();
    for batch in accepted.chunks(BATCH) {
        live.push(run_batch(&envoy_bin, batch));
    }

    let mut failures = Vec::new();
    let verdict_agree = verdicts.iter().filter(|v| v.agrees()).count();
    let bad_verdicts: Vec<&Verdict> = verdicts.iter().filter(|v| !v.agrees()).collect();
    for v in &bad_verdicts {
        eprintln!("VERDICT DISAGREEMENT {}\n", v.describe());
    }
    // Which Envoy errors the seeds ran into: how much of the rejection logic this run covers.
    let mut rejections = std::collections::BTreeMap::<&str, usize>::new();
    for v in &verdicts {
        if let Err(e) = &v.envoy {
            let kind = [
                "same matching rules",
                "overlapping matching rules",
                "no filter chains",
                "partial wildcards",
                "malformed IP",
            ]
            .into_iter()
            .find(|k| e.contains(k))
            .unwrap_or("other");
            *rejections.entry(kind).or_default() += 1;
        }
    }
    let text_differs: Vec<&Verdict> = verdicts.iter().filter(|v| v.text_differs()).collect();
    for v in text_differs.iter().take(5) {
        eprintln!("note: both reject, but no finding's envoy_error is in Envoy's message: {}\n", v.describe());
    }
    if !bad_verdicts.is_empty() {
        failures.push(format!("{} of {} verdicts disagree", bad_verdicts.len(), verdicts.len()));
    }

    let (mut probes, mut probe_agree, mut listeners, mut shown) = (0, 0, 0, 0);
    let (mut undefined, mut undefined_same) = (0, 0);
    let (mut setup_errors, mut trace_errors) = (Vec::new(), Vec::new());
    let mut answers = std::collections::BTreeMap::<String, usize>::new();
    for (ls, results) in &live {
        listeners += ls.len();
        for r in results {
            probes += 1;
            let l = &ls[r.listener];
            let kind = match r.envoy.chain() {
                Some("default") => "default chain".to_owned(),
                Some(_) => "a chain".to_owned(),
                None => r.envoy.to_string(),
            };
            *answers.entry(kind).or_default() += 1;
            if r.undefined() {
                // Not compared: any answer is right. Counted, to see which way Envoy goes.
                undefined += 1;
                undefined_same += usize::from(r.agrees());
                continue;
            }
            if r.agrees() {
                probe_agree += 1;
                continue;
            }
            match (&r.envoy, &r.xdsck) {
                (Answer::Timeout | Answer::Error(_), _) => setup_errors.push(describe_probe(l, r, false)),
                (_, Err(e)) => trace_errors.push(e.clone()),
                _ => {}
            }
            eprintln!("PROBE DISAGREEMENT {}\n", describe_probe(l, r, shown < SHOW));
            shown += 1;
        }
    }
    let compared = probes - undefined;
    eprintln!(
        "verdicts: {verdict_agree}/{} agree; probes: {probe_agree}/{compared} agree over {listeners} listeners \
         (+{undefined} where Envoy's choice is undefined, Envoy matched xdsck's pick in {undefined_same}; \
         Envoy answered: {answers:?}; Envoy rejected: {rejections:?}, {} rejection texts differ; \
         validate {:.1}s, total {:.1}s)",
        verdicts.len(),
        text_differs.len(),
        validated.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );

    if !setup_errors.is_empty() {
        failures.push(format!(
            "{} probes got no usable answer from Envoy (a prober problem, not xdsck's); first:\n{}",
            setup_errors.len(),
            setup_errors[0]
        ));
    }
    if compared > 0 && trace_errors.len() == compared {
        failures.push(format!(
            "`xdsck trace` failed on every probe — is the `trace` subcommand implemented? \
             The Envoy side ran: {probes} probes over {listeners} listeners. First error: {}",
            trace_errors[0]
        ));
    } else if probe_agree < compared {
        failures.push(format!(
            "{} of {compared} probes disagree ({} of them `xdsck trace` failures)",
            compared - probe_agree,
            trace_errors.len()
        ));
    }
    assert!(failures.is_empty(), "conformance with Envoy failed:\n- {}", failures.join("\n- "));
}

// ---------------------------------------------------------------------------------------------
// The prober, checked on its own

/// A chain with `filter_chain_match` `m`, answering with `name`.
fn chain(name: &str, m: Value) -> Value {
    serde_json::json!({"name": name, "filter_chain_match": m, "filters": generate::direct_response(name)})
}

fn tls(sni: Option<&str>, alpn: &[&str]) -> Client {
    Client::Tls { sni: sni.map(str::to_owned), alpn: alpn.iter().map(|a| (*a).to_owned()).collect() }
}

/// Envoy's answers on fixed listeners, written down from envoy-matching.md §2 — no xdsck
/// involved, so a failure here is the prober's (or the doc's) and not xdsck's.
#[test]
fn prober_follows_envoy_matching_doc() {
    use serde_json::json;
    let envoy_bin = envoy::binary();
    let lo = Ipv4Addr::new(127, 0, 0, 1);
    let lo2 = Ipv4Addr::new(127, 0, 0, 2);
    let lo3 = Ipv4Addr::new(127, 0, 0, 3);
    let (ports, hold) = envoy::free_ports(4, &[lo, lo2, lo3]);
    let [with_default, without_default, by_source, src_port] = ports[..] else { unreachable!() };

    // tls_inspector only: exact SNI + h2, a wildcard, a plaintext catch-all.
    let sni_chains = || {
        json!([
            chain("exact-h2", json!({"server_names": ["a.example.com"], "application_protocols": ["h2"]})),
            chain("wildcard", json!({"server_names": ["*.example.com"]})),
            chain("raw", json!({"transport_protocol": "raw_buffer"})),
        ])
    };
    let mut l1 = generate::listener_json("self-default", &[(lo, with_default)], vec![generate::tls_inspector()]);
    l1["filter_chains"] = sni_chains();
    l1["default_filter_chain"] = json!({"name": "default", "filters": generate::direct_response("default")});
    let mut l2 = generate::listener_json("self-closed", &[(lo, without_default)], vec![generate::tls_inspector()]);
    l2["filter_chains"] = sni_chains();
    // Source type: a LOCAL entry that exists but fails deeper (source port) is not retried as ANY.
    let mut l3 = generate::listener_json("self-source", &[(lo, by_source), (lo2, by_source)], vec![]);
    l3["filter_chains"] = json!([
        chain("local-port", json!({"source_type": "SAME_IP_OR_LOOPBACK", "source_ports": [src_port]})),
        chain("any", json!({})),
    ]);

    let dir = tempfile::tempdir().unwrap();
    let admin = LiveEnvoy::admin_socket(dir.path());
    let bootstrap = generate::bootstrap(&[&l1, &l2, &l3], Some(admin.to_str().unwrap()));
    drop(hold);
    let live = LiveEnvoy::start(&envoy_bin, dir, &bootstrap).unwrap_or_else(|e| panic!("{e}"));

    let closed = "closed";
    // (client, answer with the default chain, answer without it, why)
    let sni_cases: &[(Client, &str, &str, &str)] = &[
        (tls(Some("a.example.com"), &["h2"]), "exact-h2", "exact-h2", "exact SNI, ALPN h2"),
        (tls(Some("A.Example.COM"), &["h2"]), "exact-h2", "exact-h2", "the SNI is lower-cased"),
        (tls(Some("a.example.com"), &["http/1.1", "h2"]), "exact-h2", "exact-h2", "first client ALPN with an entry"),
        (tls(Some("a.example.com"), &["http/1.1"]), "default", closed, "exact SNI commits; no ALPN entry: black hole"),
        (tls(Some("a.example.com"), &[]), "default", closed, "no ALPN: no \"\" entry under the exact SNI"),
        (tls(Some("b.example.com"), &["http/1.1"]), "wildcard", "wildcard", "wildcard SNI"),
        (tls(Some("x.y.example.com"), &[]), "wildcard", "wildcard", "a wildcard covers several labels"),
        (tls(Some("example.com"), &[]), "default", closed, "no apex for *.example.com; \"\" SNI is raw_buffer only"),
        (tls(None, &["h2"]), "default", closed, "no SNI goes to the \"\" key, which wants raw_buffer"),
        (Client::Http1, "raw", "raw", "plaintext is raw_buffer"),
        (Client::Raw, "raw", "raw", "plaintext is raw_buffer"),
    ];
    let mut cases: Vec<(Probe, String, &str)> = Vec::new();
    for (client, with, without, why) in sni_cases {
        for (port, want) in [(with_default, with), (without_default, without)] {
            let probe = Probe { src: (lo, None), dst: (lo, port), client: client.clone() };
            cases.push((probe, (*want).to_owned(), why));
        }
    }
    let source_cases: &[(Ipv4Addr, Option<u16>, Ipv4Addr, &str, &str)] = &[
        (lo, Some(src_port), lo, "local-port", "loopback source on the listed port"),
        (lo, None, lo, closed, "local entry exists, fails on the port: no fall back to ANY"),
        (lo2, None, lo2, closed, "same IP on both ends is local too"),
        (lo3, None, lo2, "any", "127.0.0.3 -> 127.0.0.2 is not local: ANY"),
        (lo3, None, lo, "any", "only 127.0.0.1 itself, not all of 127/8, is loopback"),
    ];
    for &(src, sport, dst, want, why) in source_cases {
        cases.push((Probe { src: (src, sport), dst: (dst, by_source), client: Client::Raw }, want.to_owned(), why));
    }

    let answers = parallel(&cases, PROBE_WORKERS, |(probe, _, _)| client::run(probe).0);
    let mut wrong = Vec::new();
    for ((probe, want, why), got) in cases.iter().zip(&answers) {
        let ok = match got {
            Answer::Chain(c) => c == want,
            Answer::Closed => want == closed,
            Answer::Timeout | Answer::Error(_) => false,
        };
        if !ok {
            wrong.push(format!("{probe}: want {want} ({why}); Envoy: {got}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "Envoy disagrees with envoy-matching.md (or the prober is broken):\n{}",
        wrong.join("\n")
    );
    drop(live);
}
