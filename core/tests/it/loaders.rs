//! Every fixture in testdata/ loads into the inventory and the places recorded in its snapshot;
//! every malformed input fails with one located error. Each input's snapshot is beside it
//! (`testdata/envoy/config_dump.json.snap`), as the check fixtures' are.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use xdsck_core::load;
use xdsck_core::model::{FilterChain, Input, Listener, NetworkFilterKind};
use xdsck_core::source::{Location, Locator, SourceFile, SourceId, Sources};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("core/ has a parent").join("testdata")
}

/// The directories whose inputs have a loader snapshot each.
const SNAPSHOT_DIRS: &[&str] = &["envoy", "envoy/src", "cilium", "listeners", "edge", "malformed", "peers"];

/// Asserts `body` against the snapshot beside `path` (`<file>.snap`).
fn snapshot_beside(path: &Path, body: &str) {
    let file = path.file_name().and_then(|n| n.to_str()).expect("UTF-8 file name").to_owned();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(path.parent().expect("input has a directory"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(path);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(file, body));
}

fn files(dir: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(testdata().join(dir))
        .unwrap_or_else(|e| panic!("testdata/{dir}: {e}"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "yaml" | "yml")))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no fixtures in testdata/{dir}");
    out
}

fn source(path: &Path) -> SourceFile {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = format!("testdata/{}", path.strip_prefix(testdata()).unwrap_or(path).display());
    SourceFile::new(name, text)
}

fn at(file: &SourceFile, loc: &Location) -> String {
    match loc.offset {
        Some(o) => {
            let lc = file.line_column(o);
            format!("{}:{} {}", lc.line, lc.column, if loc.pointer.is_empty() { "\"\"" } else { &loc.pointer })
        }
        None => format!("?:? {}", loc.pointer),
    }
}

fn chain_summary(c: &FilterChain<'_>) -> String {
    let mut s = String::new();
    if let Some(m) = &c.filter_chain_match {
        let mut parts = Vec::new();
        if let Some(p) = m.destination_port {
            parts.push(format!("port={p}"));
        }
        if !m.server_names.is_empty() {
            parts.push(format!("sni={}", m.server_names.join(",")));
        }
        if !m.transport_protocol.is_empty() {
            parts.push(format!("transport={}", m.transport_protocol));
        }
        if !m.application_protocols.is_empty() {
            parts.push(format!("alpn={}", m.application_protocols.join(",")));
        }
        if !m.prefix_ranges().is_empty() {
            parts.push(format!("dst={}", m.prefix_ranges().len()));
        }
        if !m.source_prefix_ranges().is_empty() || !m.source_ports().is_empty() {
            parts.push(format!("src={}/{}", m.source_prefix_ranges().len(), m.source_ports().len()));
        }
        write!(s, "match{{{}}}", parts.join(" ")).unwrap();
    } else {
        s.push_str("no match");
    }
    for f in &c.filters {
        match &f.kind {
            NetworkFilterKind::TcpProxy { clusters, .. } => {
                write!(s, " tcp_proxy({})", clusters.as_slice().join(",")).unwrap()
            }
            NetworkFilterKind::HttpConnectionManager(hcm) => write!(s, " hcm({})", hcm_summary(hcm)).unwrap(),
            NetworkFilterKind::Other => write!(s, " {}", f.name).unwrap(),
        }
    }
    if c.terminates_tls() {
        s.push_str(" +tls");
    }
    s
}

/// Where an HCM's routes are, and an inline table's virtual hosts with their domains.
fn hcm_summary(hcm: &xdsck_core::model::route::Hcm<'_>) -> String {
    use xdsck_core::model::route::HcmRoutes;
    match &hcm.routes {
        HcmRoutes::Inline(t) => format!("inline {}", table_summary(t)),
        HcmRoutes::Rds(name) => format!("rds {name}"),
        HcmRoutes::Scoped => "scoped".to_owned(),
        HcmRoutes::None => "none".to_owned(),
    }
}

fn table_summary(t: &xdsck_core::model::route::RouteTable<'_>) -> String {
    let vhs: Vec<String> = t
        .virtual_hosts
        .iter()
        .map(|v| format!("{}[{}] {} routes", v.name, v.domains.join(","), v.routes.len()))
        .collect();
    format!("{}: {}", t.name.as_deref().unwrap_or("(no name)"), vhs.join("; "))
}

fn listener_summary(out: &mut String, id: SourceId, text: Locator<'_>, l: &Listener<'_>) {
    let file = text.file();
    writeln!(
        out,
        "listener {} {:?} @ {} [{}]",
        l.state.as_str(),
        l.name,
        at(file, &l.location(id, text)),
        l.envoy_address_list()
    )
    .unwrap();
    if !l.listener_filters.is_empty() {
        let names: Vec<_> = l.listener_filters.iter().map(|f| f.name.as_ref()).collect();
        writeln!(out, "  listener_filters: {}", names.join(", ")).unwrap();
    }
    for c in l.chains() {
        writeln!(
            out,
            "  chain {} @ {}: {}",
            c.display_name(),
            at(file, &l.chain_location(id, text, c)),
            chain_summary(c)
        )
        .unwrap();
    }
    if l.filter_chain_matcher.is_some() {
        writeln!(out, "  filter_chain_matcher: set").unwrap();
    }
}

fn describe(input: &Input<'_>, file: &SourceFile) -> String {
    let text = input.locator(file);
    let mut out = String::new();
    let inv = input.inventory();
    writeln!(
        out,
        "{}: {}, listeners={} filter_chains={} warming={} draining={} failed={}",
        file.name(),
        input.kind.as_str(),
        inv.listeners,
        inv.filter_chains,
        inv.warming,
        inv.draining,
        inv.failed
    )
    .unwrap();
    for l in &input.listeners {
        listener_summary(&mut out, input.source, text, l);
    }
    for e in &input.error_states {
        let loc = Location::new(input.source, e.pointer.clone(), e.offset.map(|o| text.node_offset(o)));
        writeln!(out, "error_state {:?} (active: {}) @ {}", e.listener_name, e.has_active_state, at(file, &loc))
            .unwrap();
        writeln!(out, "  details: {}", e.details).unwrap();
    }
    for t in &input.route_tables {
        writeln!(out, "route table @ {}: {}", t.pointer, table_summary(t)).unwrap();
    }
    if let Some(list) = &input.clusters {
        let names: Vec<String> =
            list.names.iter().map(|c| format!("{}{}", c.name, if c.is_static { " (static)" } else { "" })).collect();
        let partial = if list.partial { " (partial)" } else { "" };
        writeln!(out, "clusters{partial}: [{}]", names.join(", ")).unwrap();
    }
    for s in &input.skipped {
        let loc = Location::new(input.source, s.pointer.clone(), s.offset.map(|o| text.node_offset(o)));
        writeln!(out, "skipped {:?} {} @ {}", s.kind, s.what, at(file, &loc)).unwrap();
    }
    for p in &input.problems {
        writeln!(out, "problem {} @ {}", p.message, p.pointer).unwrap();
    }
    out
}

/// The fixtures of `testdata/<dir>` as sources, and their paths in the same order.
fn sources_of(dir: &str) -> (Sources, Vec<PathBuf>) {
    let mut sources = Sources::new();
    let paths = files(dir);
    for path in &paths {
        sources.add(source(path));
    }
    (sources, paths)
}

fn snapshot_dir(dir: &str) {
    let (sources, paths) = sources_of(dir);
    for ((id, file), path) in sources.iter().zip(&paths) {
        let document = load::Document::new(id, file);
        let input = document.load().unwrap_or_else(|e| panic!("{}: {e} at {:?}", file.name(), e.location));
        snapshot_beside(path, &describe(&input, file));
    }
}

#[test]
fn envoy_made_dumps() {
    snapshot_dir("envoy");
}

#[test]
fn bootstraps() {
    snapshot_dir("envoy/src");
}

#[test]
fn cilium_envoy_configs() {
    snapshot_dir("cilium");
}

#[test]
fn listeners_and_discovery_responses() {
    snapshot_dir("listeners");
}

#[test]
fn edge_cases_that_load() {
    snapshot_dir("edge");
}

/// The peers' CLI outputs (egctl, kumactl, glooctl/kgateway, Emissary, istioctl), read as they
/// are printed: each proxy of a map is an input of its own, named and placed in the file; a
/// shape xdsck does not read is refused by what it is.
#[test]
fn peer_outputs() {
    let (sources, paths) = sources_of("peers");
    for ((id, file), path) in sources.iter().zip(&paths) {
        let document = load::Document::new(id, file);
        let body = match document.load() {
            Ok(input) => {
                let mut out = describe(&input, file);
                for proxy in &input.proxies {
                    let named = proxy.proxy.as_ref().expect("a proxy of a map has its place");
                    writeln!(
                        out,
                        "proxy {} ({}) @ {}",
                        named.name.as_deref().unwrap_or("-"),
                        named.shape,
                        if named.pointer.is_empty() { "\"\"" } else { &named.pointer }
                    )
                    .unwrap();
                    for line in describe(proxy, file).lines() {
                        writeln!(out, "  {line}").unwrap();
                    }
                }
                out
            }
            Err(e) => format!(
                "{}: {} {} @ {}\n  {}\n",
                file.name(),
                e.rule.code,
                e.rule.name,
                at(file, &e.location),
                e.message
            ),
        };
        snapshot_beside(path, &body);
    }
}

#[test]
fn malformed_inputs_fail_with_one_located_error() {
    let (sources, paths) = sources_of("malformed");
    for ((id, file), path) in sources.iter().zip(&paths) {
        let mut report = String::new();
        let document = load::Document::new(id, file);
        let err = match document.load() {
            Ok(input) => panic!("{} loaded: {}", file.name(), describe(&input, file)),
            Err(e) => e,
        };
        assert!(err.location.offset.is_some(), "{}: no offset in {err:?}", file.name());
        writeln!(report, "{}: {} {} @ {}", file.name(), err.rule.code, err.rule.name, at(file, &err.location)).unwrap();
        writeln!(report, "  {}", err.message).unwrap();
        for n in &err.notes {
            writeln!(report, "  note: {n}").unwrap();
        }
        snapshot_beside(path, &report);
    }
}

/// Every loader snapshot belongs to an input: one whose input was renamed or removed would
/// otherwise stay behind, showing what nothing loads.
#[test]
fn no_loader_snapshot_without_its_input() {
    let mut orphans = Vec::new();
    for dir in SNAPSHOT_DIRS {
        let inputs = files(dir);
        for f in std::fs::read_dir(testdata().join(dir)).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "snap") && !inputs.contains(&f.with_extension("")) {
                orphans.push(f.display().to_string());
            }
        }
    }
    assert!(orphans.is_empty(), "snapshots without their input: {orphans:?}");
}

/// The same listener in both casings, in JSON and in YAML, loads to the same model.
#[test]
fn casing_and_format_do_not_change_the_model() {
    let snake = r#"{"name": "l", "address": {"socket_address": {"address": "::", "port_value": "443", "ipv4_compat": true}},
        "listener_filters": [{"name": "envoy.filters.listener.tls_inspector"}],
        "filter_chains": [{"name": "a", "filter_chain_match": {"server_names": ["A.example.com"], "transport_protocol": "tls",
            "prefix_ranges": [{"address_prefix": "10.0.0.0", "prefix_len": 8}], "source_type": "EXTERNAL", "source_ports": [1, "2"],
            "destination_port": 443, "application_protocols": ["h2"]}}]}"#;
    let camel = r#"{"name": "l", "address": {"socketAddress": {"address": "::", "portValue": 443, "ipv4Compat": true}},
        "listenerFilters": [{"name": "envoy.filters.listener.tls_inspector"}],
        "filterChains": [{"name": "a", "filterChainMatch": {"serverNames": ["A.example.com"], "transportProtocol": "tls",
            "prefixRanges": [{"addressPrefix": "10.0.0.0", "prefixLen": "8"}], "sourceType": 2, "sourcePorts": [1, 2],
            "destinationPort": "443", "applicationProtocols": ["h2"]}}]}"#;
    let yaml = "name: l\naddress:\n  socketAddress: {address: '::', portValue: 443, ipv4Compat: true}\nlistenerFilters:\n- name: envoy.filters.listener.tls_inspector\nfilterChains:\n- name: a\n  filterChainMatch:\n    serverNames: [A.example.com]\n    transportProtocol: tls\n    prefixRanges: [{addressPrefix: 10.0.0.0, prefixLen: 8}]\n    sourceType: EXTERNAL\n    sourcePorts: [1, 2]\n    destinationPort: 443\n    applicationProtocols: [h2]\n";
    let files = [SourceFile::new("snake", snake), SourceFile::new("camel", camel), SourceFile::new("yaml", yaml)];
    let documents: Vec<_> = files.iter().map(|f| load::Document::new(SourceId(0), f)).collect();
    let loaded: Vec<_> = documents.iter().map(|d| d.load().expect("loads")).collect();
    fn strip<'a>(
        i: &Input<'a>,
    ) -> (
        String,
        String,
        Vec<xdsck_core::model::ListenerFilter<'a>>,
        FilterChain<'a>,
        xdsck_core::model::FilterChainMatch<'a>,
    ) {
        let l = &i.listeners[0];
        let mut c = l.filter_chains[0].clone();
        c.offset = None;
        c.name_offset = None;
        c.casing = Default::default();
        let mut m = c.filter_chain_match.take().unwrap();
        m.offset = None;
        m.casing = Default::default();
        (l.name.to_string(), l.envoy_address_list(), l.listener_filters.to_vec(), c, m)
    }
    assert_eq!(strip(&loaded[0]), strip(&loaded[1]));
    assert_eq!(strip(&loaded[0]), strip(&loaded[2]));
    assert_eq!(loaded[0].listeners[0].chain_pointer(&loaded[0].listeners[0].filter_chains[0]), "/filter_chains/0");
    assert_eq!(loaded[1].listeners[0].chain_pointer(&loaded[1].listeners[0].filter_chains[0]), "/filterChains/0");
}

/// Every Listener object in every fixture that loads is read: found here by a plain walk of the
/// JSON (YAML translated first) that knows only where Listeners sit — an `@type` naming the
/// Listener message, an element of a `listeners` list, a top-level document (or element of a
/// top-level list) that is no container — and checked against the model's listeners and
/// rejected updates, both ways.
#[test]
fn no_listener_is_lost() {
    use serde_json::Value;
    const LISTENER: &str = "envoy.config.listener.v3.Listener";
    const CONTAINERS: &[&str] = &[
        "configs",
        "static_resources",
        "staticResources",
        "dynamic_resources",
        "admin",
        "resources",
        "kind",
        "apiVersion",
        "metadata",
        "active_state",
        "warming_state",
        "draining_state",
        "error_state",
        "listener",
        "items",
    ];
    fn is_typed_listener(o: &serde_json::Map<String, Value>) -> bool {
        o.get("@type").and_then(Value::as_str).is_some_and(|t| t.rsplit('/').next() == Some(LISTENER))
    }
    fn walk(v: &Value, pointer: &str, listed: bool, out: &mut Vec<String>) {
        match v {
            Value::Object(o) if listed || is_typed_listener(o) => out.push(pointer.to_owned()),
            Value::Object(o) => {
                for (k, child) in o {
                    // A config_dump's BootstrapConfigDump repeats the static listeners that its
                    // ListenersConfigDump lists: those are the ones Envoy serves.
                    if k == "bootstrap" && pointer.starts_with("/configs/") {
                        continue;
                    }
                    let p = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                    match child {
                        Value::Array(items) => {
                            for (i, item) in items.iter().enumerate() {
                                walk(item, &format!("{p}/{i}"), k == "listeners", out);
                            }
                        }
                        _ => walk(child, &p, k == "listeners", out),
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{pointer}/{i}"), false, out);
                }
            }
            _ => {}
        }
    }
    fn top(v: &Value, pointer: &str, out: &mut Vec<String>) {
        // A Kubernetes object of another kind (a Gateway's `spec.listeners`) holds no Envoy
        // listener, whatever its keys are called.
        let kind = v.get("kind").and_then(Value::as_str);
        if v.get("apiVersion").is_some()
            && !matches!(kind, Some("CiliumEnvoyConfig" | "CiliumClusterwideEnvoyConfig" | "List"))
        {
            return;
        }
        match v {
            Value::Object(o) if o.keys().all(|k| !CONTAINERS.contains(&k.as_str())) && !o.is_empty() => {
                out.push(pointer.to_owned())
            }
            _ => walk(v, pointer, false, out),
        }
    }

    let mut dirs: Vec<String> = ["envoy", "envoy/src", "listeners", "cilium", "edge"].map(String::from).to_vec();
    for d in std::fs::read_dir(testdata().join("checks")).unwrap() {
        let d = d.unwrap().path();
        if d.is_dir() {
            dirs.push(format!("checks/{}", d.file_name().unwrap().to_string_lossy()));
        }
    }
    let mut checked = 0;
    for dir in dirs {
        for path in files(&dir) {
            let file = source(&path);
            let document = load::Document::new(SourceId(0), &file);
            let input = document.load().unwrap_or_else(|e| panic!("{}: {e}", file.name()));
            let json: Value =
                serde_json::from_str(document.locator().json_text().trim_start_matches('\u{feff}')).unwrap();
            let mut found = Vec::new();
            match &json {
                Value::Array(docs) => {
                    for (i, d) in docs.iter().enumerate() {
                        top(d, &format!("/{i}"), &mut found);
                    }
                }
                doc => top(doc, "", &mut found),
            }
            let mut read: Vec<String> = input.listeners.iter().map(|l| l.pointer.to_string()).collect();
            read.extend(
                input.error_states.iter().filter_map(|e| Some(e.failed_configuration.as_ref()?.pointer.to_string())),
            );
            // Envoy repeats each rejected update in a nameless entry; the model keeps one copy.
            let repeated = |p: &str| {
                let entry = p.trim_end_matches("/error_state/failed_configuration");
                p.ends_with("/error_state/failed_configuration")
                    && json.pointer(entry).is_some_and(|e| e.get("name").is_none())
            };
            let lost: Vec<&String> = found.iter().filter(|p| !read.contains(p) && !repeated(p)).collect();
            let invented: Vec<&String> = read.iter().filter(|p| !found.contains(p)).collect();
            assert!(lost.is_empty(), "{}: listeners not read: {lost:?}", file.name());
            assert!(invented.is_empty(), "{}: listeners not in the file: {invented:?}", file.name());
            checked += found.len();
        }
    }
    assert!(checked > 100, "only {checked} listener objects found in testdata/");
}

/// A list element read as a Listener by its place stays in document order: of two listeners
/// with one name, the later is the one Envoy refuses or skips.
#[test]
fn listeners_read_by_position_keep_document_order() {
    let text = r#"[{"name": "x", "statPrefix": "x"},
        {"name": "x", "address": {"socket_address": {"address": "0.0.0.0", "port_value": 80}}}]"#;
    let file = SourceFile::new("order.json", text);
    let document = load::Document::new(SourceId(0), &file);
    let input = document.load().expect("loads");
    let pointers: Vec<&str> = input.listeners.iter().map(|l| l.pointer.as_str()).collect();
    assert_eq!(pointers, ["/0", "/1"]);
}
