//! Conformance against the real Envoy 1.40 (no mocks): for every fixture under
//! `testdata/checks/` that holds listeners, Envoy rejects it exactly when `xdsck` has an
//! error-severity finding, and then Envoy's message holds the `envoy_error` of one of them
//! (Envoy stops at its first error; xdsck reports all), both read from the Bootstrap down.
//!
//! Each fixture's listeners become the static listeners of a minimal JSON bootstrap, its CDS
//! clusters static clusters (a fixture without any cluster gets an empty stub for every cluster
//! it names, so only a fixture that holds its clusters tests them); `envoy --mode validate` and
//! `xdsck --format json` both read that same file. So this tests the *bootstrap* behaviour: where LDS differs (a repeated
//! listener name rejects an LDS response but is skipped silently among static listeners), the
//! fixture says so and the LDS behaviour is covered by the unit fixtures only (see
//! testdata/checks/README.md). CiliumEnvoyConfig fixtures are skipped: the cilium-agent
//! rewrites them before Envoy sees them.
//!
//! Envoy comes from `scripts/install-envoy.sh` (`$XDSCK_ENVOY` wins); if that fails the test
//! fails: it never skips.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::{Map, Value, json};

use support::{describe, text, workspace};

/// Every `ok-*`/`bad-*` fixture under testdata/checks, sorted.
fn fixtures() -> Vec<PathBuf> {
    let root = workspace().join("testdata/checks");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if (name.starts_with("ok-") || name.starts_with("bad-"))
                && matches!(f.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
            {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

/// The fixture as JSON (a YAML stream becomes an array of its documents).
fn fixture_json(path: &Path) -> Value {
    let raw = std::fs::read_to_string(path).unwrap();
    let is_json = path.extension().is_some_and(|e| e == "json");
    let json = if is_json {
        raw
    } else {
        // xdsck's own YAML reader; both tools then read the same JSON, so a translation slip
        // would show as a difference in what they are given, never hide one (the loader tests
        // cover the translation itself).
        xdsck_core::load::yaml::translate(&raw, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .json()
            .to_owned()
    };
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn field<'v>(obj: &'v Map<String, Value>, snake: &str, camel: &str) -> Option<&'v Value> {
    obj.get(snake).or_else(|| obj.get(camel))
}

/// The bootstrap Envoy and xdsck are given, or why the fixture is not run.
fn bootstrap(doc: &Value) -> Result<Value, &'static str> {
    let docs: Vec<&Value> = match doc {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    let mut base: Option<Value> = None;
    let mut listeners: Vec<Value> = Vec::new();
    let mut cds: Vec<Value> = Vec::new();
    for d in docs {
        let Some(obj) = d.as_object() else { return Err("not an object") };
        if obj.contains_key("apiVersion") || obj.contains_key("kind") {
            return Err("CiliumEnvoyConfig: the cilium-agent rewrites it before Envoy sees it");
        }
        if obj.contains_key("configs") {
            return Err("config_dump: it records what Envoy already decided");
        }
        if field(obj, "static_resources", "staticResources").is_some() {
            base = Some(d.clone());
        } else if let Some(resources) = obj.get("resources").and_then(Value::as_array) {
            // An LDS DiscoveryResponse: its listeners, run as static ones.
            for r in resources {
                let mut r = r.clone();
                let type_is = |t: &str| r.get("@type").and_then(Value::as_str).is_some_and(|x| x.ends_with(t));
                let (route_table, cluster) = (type_is(".RouteConfiguration"), type_is(".cluster.v3.Cluster"));
                if let Some(o) = r.as_object_mut() {
                    o.remove("@type");
                    // Served inline below, an RDS table keeps RDS's default: its clusters are
                    // validated only when it asks (checked with envoy 1.40, live).
                    if route_table && !o.contains_key("validate_clusters") && !o.contains_key("validateClusters") {
                        o.insert("validate_clusters".to_owned(), json!(false));
                    }
                }
                if route_table {
                    // `--mode validate` does not fetch RDS; Envoy builds an RDS table as it
                    // builds an inline one (the same texts), so it is served inline here.
                    listeners.push(inline_route_listener(listeners.len(), r));
                } else if cluster {
                    // Nor CDS: the clusters of a CDS response become static ones.
                    cds.push(r);
                } else {
                    listeners.push(r);
                }
            }
        } else {
            listeners.push(d.clone());
        }
    }
    let mut b = base.unwrap_or_else(|| json!({"static_resources": {}}));
    let top = b.as_object_mut().ok_or("not an object")?;
    // One spelling, so the listeners can be added to it (Envoy reads either).
    if let Some(camel) = top.remove("staticResources") {
        top.insert("static_resources".to_owned(), camel);
    }
    let sr =
        top.get_mut("static_resources").and_then(Value::as_object_mut).ok_or("static_resources is not an object")?;
    let list = sr.entry("listeners").or_insert_with(|| json!([]));
    if let Some(l) = list.as_array_mut() {
        l.extend(listeners);
    }
    // A fixture that holds no cluster gets an empty STATIC stub for each cluster it names: its
    // routes are about something else. One that holds clusters is run as it is.
    let holds_clusters = sr.contains_key("clusters") || !cds.is_empty();
    let mut named = BTreeSet::new();
    if !holds_clusters {
        referenced_clusters(&sr["listeners"], &mut named);
    }
    let clusters = sr.entry("clusters").or_insert_with(|| json!([]));
    if let Some(c) = clusters.as_array_mut() {
        c.extend(cds);
        c.extend(named.into_iter().map(|n| json!({"name": n, "type": "STATIC", "connect_timeout": "1s"})));
    }
    // A listener that takes its table from RDS over ADS (the table, when the fixture has it,
    // is served inline above) needs a node and an ADS source; `--mode validate` fetches nothing.
    let ads = sr.get("listeners").is_some_and(|l| l.to_string().contains("\"ads\":{}"));
    if ads && !top.contains_key("node") && !top.contains_key("dynamic_resources") {
        if let Some(c) = top["static_resources"]["clusters"].as_array_mut() {
            c.push(json!({"name": "xds", "type": "STATIC", "connect_timeout": "1s",
                "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                    "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                    "explicit_http_config": {"http2_protocol_options": {}}}}}));
        }
        top.insert("node".to_owned(), json!({"id": "xdsck", "cluster": "xdsck"}));
        top.insert(
            "dynamic_resources".to_owned(),
            json!({"ads_config": {"api_type": "GRPC", "transport_api_version": "V3",
                "grpc_services": [{"envoy_grpc": {"cluster_name": "xds"}}]}}),
        );
    }
    Ok(b)
}

/// A listener whose one chain routes with `table` inline.
fn inline_route_listener(i: usize, table: Value) -> Value {
    json!({
        "name": format!("rds-{i}"),
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": 20000 + i}},
        "filter_chains": [{"filters": [{
            "name": "envoy.filters.network.http_connection_manager",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": "rds",
                "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
                "route_config": table,
            },
        }]}],
    })
}

/// Cluster names used by tcp_proxy and route actions (`cluster`, weighted clusters' `name`).
fn referenced_clusters(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(c)) = o.get("cluster") {
                out.insert(c.clone());
            }
            if let Some(ws) = field(o, "weighted_clusters", "weightedClusters")
                .and_then(|w| w.get("clusters"))
                .and_then(Value::as_array)
            {
                out.extend(ws.iter().filter_map(|w| w.get("name")?.as_str().map(str::to_owned)));
            }
            o.values().for_each(|x| referenced_clusters(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| referenced_clusters(x, out)),
        _ => {}
    }
}

/// xdsck's error findings on the same file: their `envoy_error`s (`None` when one lacks it).
fn xdsck_errors(config: &Path) -> Result<Vec<Option<String>>, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["--format", "json", "--fail-on", "never"])
        .arg(config)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.code() != Some(0) {
        return Err(describe("xdsck failed", &out));
    }
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", text(&out.stdout)))?;
    Ok(report["findings"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter(|f| f["severity"] == "error")
                .map(|f| f["envoy_error"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

enum Outcome {
    Agree,
    Skipped(&'static str),
    Disagree(String),
}

fn run_one(envoy: &Path, fixture: &Path, dir: &Path) -> Outcome {
    let b = match bootstrap(&fixture_json(fixture)) {
        Ok(b) => b,
        Err(why) => return Outcome::Skipped(why),
    };
    let config = dir.join("bootstrap.json");
    std::fs::write(&config, serde_json::to_string_pretty(&b).unwrap()).unwrap();
    let verdict = support::envoy::verdict(envoy, &config);
    let errors = match xdsck_errors(&config) {
        Ok(e) => e,
        Err(e) => return Outcome::Disagree(e),
    };
    let listed = || {
        errors
            .iter()
            .map(|e| format!("  - {}", e.as_deref().unwrap_or("(no envoy_error)")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    match verdict {
        None if errors.is_empty() => Outcome::Agree,
        None => Outcome::Disagree(format!("Envoy accepts it; xdsck has {} error(s):\n{}", errors.len(), listed())),
        // Both texts normalised (whitespace, positions): Envoy's holds more around xdsck's
        // (the bootstrap's dump before a PGV failure, the input after a parse error).
        Some(msg) if errors.iter().flatten().any(|e| msg.contains(&support::envoy::normalise(e))) => Outcome::Agree,
        // Envoy aborts on a few inputs instead of refusing them (`panic: unset oneof`): a
        // refusal all the same, which xdsck reports without Envoy's words (it has none).
        Some(msg) if msg.contains("panic: ") && errors.iter().any(Option::is_none) => Outcome::Agree,
        Some(msg) if errors.is_empty() => {
            Outcome::Disagree(format!("Envoy rejects it; xdsck has no error:\n  envoy: {msg}"))
        }
        Some(msg) => Outcome::Disagree(format!(
            "Envoy rejects it with a message no xdsck error carries:\n  envoy: {msg}\n  xdsck:\n{}",
            listed()
        )),
    }
}

#[test]
fn envoy_and_xdsck_agree_on_every_check_fixture() {
    let envoy = support::envoy::binary();
    let fixtures = fixtures();
    assert!(!fixtures.is_empty(), "no fixtures under testdata/checks");
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    // Two workers: the CI machine has two cores, and each Envoy run is mostly start-up time.
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(f) = fixtures.get(i) else { break };
                    // One directory per fixture: runs never share a file.
                    let dir = tmp.path().join(i.to_string());
                    std::fs::create_dir_all(&dir).unwrap();
                    let outcome = run_one(&envoy, f, &dir);
                    results.lock().unwrap().push((i, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let rel = |i: usize| fixtures[i].strip_prefix(workspace()).unwrap_or(&fixtures[i]).display().to_string();
    let (mut agree, mut skipped, mut failures) = (0, Vec::new(), Vec::new());
    for (i, outcome) in results {
        match outcome {
            Outcome::Agree => agree += 1,
            Outcome::Skipped(why) => skipped.push(format!("{} ({why})", rel(i))),
            Outcome::Disagree(why) => failures.push(format!("{}: {why}", rel(i))),
        }
    }
    let run = fixtures.len() - skipped.len();
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{run} fixtures: {agree} agree ({:.1}s)", started.elapsed().as_secs_f64());
        for s in &skipped {
            eprintln!("skipped: {s}");
        }
    }
    assert!(failures.is_empty(), "{} disagreement(s) with Envoy:\n{}", failures.len(), failures.join("\n\n"));
}

/// The peers' CLI outputs (testdata/peers): for each proxy a file names, its listeners and RDS
/// tables, run through `envoy --mode validate` as one bootstrap (every cluster they name an
/// empty stub), and xdsck's errors on that proxy in the peer's file as printed: Envoy rejects
/// exactly the proxies xdsck has an error on, with the words of one of them.
///
/// `XDSCK_PEERS_DIR=DIR` runs it on every JSON and YAML file below DIR instead (a collection of
/// the peers' real outputs, say); files that are no peer's output are passed by.
#[test]
fn envoy_and_xdsck_agree_on_the_peers_outputs() {
    use xdsck_core::load::Document;
    use xdsck_core::model::InputKind;
    use xdsck_core::{SourceFile, SourceId};
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "yaml" | "yml")) {
                out.push(p);
            }
        }
    }
    let envoy = support::envoy::binary();
    let tmp = tempfile::tempdir().unwrap();
    let given = std::env::var_os("XDSCK_PEERS_DIR").map(PathBuf::from);
    let dir = given.clone().unwrap_or_else(|| workspace().join("testdata/peers"));
    let mut files = Vec::new();
    walk(&dir, &mut files);
    files.sort();
    let (mut proxies, mut failures) = (0, Vec::new());
    for path in &files {
        let rel = path.strip_prefix(workspace()).unwrap_or(path).display().to_string();
        let file = SourceFile::new(rel.clone(), std::fs::read_to_string(path).unwrap());
        let document = Document::new(SourceId(0), &file);
        // A shape refused by name (XDS007) holds no listener to ask Envoy about.
        let Ok(input) = document.load() else { continue };
        // A peer's map of proxies, or `istioctl proxy-config listener`'s list of listeners.
        if given.is_some() && !matches!(input.kind, InputKind::Proxies | InputKind::Listeners) {
            continue;
        }
        let json: Value = serde_json::from_str(document.locator().json_text()).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
            .args(["--format", "json", "--fail-on", "never"])
            .arg(&rel)
            .current_dir(workspace())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", describe(&rel, &out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let each = if input.proxies.is_empty() { std::slice::from_ref(&input) } else { &input.proxies[..] };
        for (i, proxy) in each.iter().enumerate() {
            let name = proxy.proxy.as_ref().and_then(|p| p.name.clone());
            let mut listeners: Vec<Value> = proxy
                .listeners
                .iter()
                .map(|l| {
                    let mut v = json.pointer(&l.pointer.to_string()).unwrap().clone();
                    v.as_object_mut().unwrap().remove("@type");
                    v
                })
                .collect();
            for t in &proxy.route_tables {
                let mut table = json.pointer(&t.pointer).unwrap().clone();
                let o = table.as_object_mut().unwrap();
                o.remove("@type");
                o.entry("validate_clusters").or_insert(json!(false));
                listeners.push(inline_route_listener(listeners.len(), table));
            }
            // The proxy's own clusters when its output lists them (by name: what the routes are
            // checked against), else a stub for every cluster named.
            let mut named = BTreeSet::new();
            match &proxy.clusters {
                Some(list) => named.extend(list.names.iter().map(|c| c.name.to_string())),
                None => referenced_clusters(&Value::Array(listeners.clone()), &mut named),
            }
            let clusters: Vec<Value> =
                named.into_iter().map(|n| json!({"name": n, "type": "STATIC", "connect_timeout": "1s"})).collect();
            let config = tmp.path().join(format!("{}-{i}.json", path.file_name().unwrap().to_string_lossy()));
            // An HCM with `rds` subscribes over ADS, which needs a node; `--mode validate`
            // fetches nothing, and the tables are served inline beside it.
            let b = json!({
                "node": {"id": "xdsck", "cluster": "xdsck"},
                "dynamic_resources": {"ads_config": {"api_type": "GRPC", "transport_api_version": "V3",
                    "grpc_services": [{"envoy_grpc": {"cluster_name": "xds"}}]}},
                "static_resources": {"listeners": listeners, "clusters": clusters.into_iter().chain([json!(
                    {"name": "xds", "type": "STATIC", "connect_timeout": "1s",
                     "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                         "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                         "explicit_http_config": {"http2_protocol_options": {}}}}}
                )]).collect::<Vec<_>>()},
            });
            std::fs::write(&config, serde_json::to_string_pretty(&b).unwrap()).unwrap();
            let verdict = support::envoy::verdict(&envoy, &config);
            let errors: Vec<Option<String>> = report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["severity"] == "error" && f["proxy"].as_str().map(str::to_owned) == name)
                .map(|f| f["envoy_error"].as_str().map(support::envoy::normalise))
                .collect();
            proxies += 1;
            let agrees = match &verdict {
                None => errors.is_empty(),
                Some(msg) => errors.iter().flatten().any(|e| msg.contains(e.as_str())),
            };
            if !agrees {
                failures.push(format!("{rel} proxy {name:?}: Envoy {verdict:?}, xdsck errors {errors:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{} files, {proxies} proxies: Envoy and xdsck agree", files.len());
    }
    assert!(given.is_some() || proxies >= 9, "only {proxies} proxies read in testdata/peers");
}
