//! The adapter's tests. Natively they run with `cargo test`; for wasm32 they run in headless
//! Chromium (`CHROMEDRIVER=/usr/bin/chromedriver cargo test -p xdsck-wasm --target
//! wasm32-unknown-unknown`, with wasm-bindgen-test-runner on PATH), where they go through the
//! `#[wasm_bindgen]` exports and JavaScript strings.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use serde_json::Value;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const SAME_SNI: &str = include_str!("../../testdata/checks/duplicate-filter-chain-match/bad-same-sni.yaml");
const BLACKHOLE: &str = include_str!("../../testdata/checks/match-blackhole/bad-exact-sni-requires-h2.yaml");

/// The message a JavaScript caller sees when an export throws.
#[cfg(target_arch = "wasm32")]
fn message(e: wasm_bindgen::JsError) -> String {
    String::from(js_sys::Error::from(wasm_bindgen::JsValue::from(e)).message())
}

#[cfg(target_arch = "wasm32")]
fn analyze(text: &str, options: &str) -> Result<String, String> {
    super::analyze(text, options).map_err(message)
}
#[cfg(not(target_arch = "wasm32"))]
fn analyze(text: &str, options: &str) -> Result<String, String> {
    super::analyze_json(text, options)
}

#[cfg(target_arch = "wasm32")]
fn diff(before: &str, after: &str) -> Result<String, String> {
    super::diff(before, after).map_err(message)
}
#[cfg(not(target_arch = "wasm32"))]
fn diff(before: &str, after: &str) -> Result<String, String> {
    super::diff_json(before, after)
}

#[cfg(target_arch = "wasm32")]
fn trace(text: &str, query: &str) -> Result<String, String> {
    super::trace(text, query).map_err(message)
}
#[cfg(not(target_arch = "wasm32"))]
fn trace(text: &str, query: &str) -> Result<String, String> {
    super::trace_json(text, query)
}

/// `check`'s report and listener view, each its parts joined.
#[cfg(target_arch = "wasm32")]
fn check(text: &str, options: &str) -> Result<(String, String), String> {
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;
    let (report, summary) = (Rc::new(RefCell::new(String::new())), Rc::new(RefCell::new(String::new())));
    let collect = |into: &Rc<RefCell<String>>| {
        let into = Rc::clone(into);
        Closure::<dyn FnMut(String)>::new(move |part: String| into.borrow_mut().push_str(&part))
    };
    let (on_report, on_summary) = (collect(&report), collect(&summary));
    let answer = js_sys::Object::new();
    js_sys::Reflect::set(&answer, &"report".into(), on_report.as_ref()).unwrap();
    js_sys::Reflect::set(&answer, &"summary".into(), on_summary.as_ref()).unwrap();
    assert!(super::check(text.as_bytes().to_vec(), options, answer.unchecked_ref()).map_err(message)?);
    Ok((report.take(), summary.take()))
}
#[cfg(not(target_arch = "wasm32"))]
fn check(text: &str, options: &str) -> Result<(String, String), String> {
    let (mut report, mut summary) = (Vec::new(), Vec::new());
    assert!(super::check_json(text.as_bytes().to_vec(), options, &mut report, &mut summary)?);
    Ok((String::from_utf8(report).unwrap(), String::from_utf8(summary).unwrap()))
}

/// A listener of `tenants` pairs of chains, `*.tN.example.com` and `a.tN.example.com` (one
/// `wildcard-overlap` info each), with names in two-byte characters: its report and listener
/// view are each more than a megabyte (more than one part in the page).
fn tenants(tenants: usize) -> String {
    let mut yaml = String::from(
        "name: lístener\naddress: {socket_address: {address: 127.0.0.1, port_value: 10443}}\nlistener_filters:\n\
         - name: envoy.filters.listener.tls_inspector\n  typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}\n\
         filter_chains:\n",
    );
    let filters = "  filters: [{name: envoy.filters.network.direct_response, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.network.direct_response.v3.Config}}]\n";
    for i in 0..tenants {
        for (kind, name) in [("wïldcard", "*"), ("exäct", "a")] {
            yaml.push_str(&format!(
                "- name: {kind}-{i}\n  filter_chain_match: {{server_names: ['{name}.t{i}.example.com']}}\n{filters}"
            ));
        }
    }
    yaml
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).expect("valid JSON")
}

#[test]
fn analyze_is_the_cli_json_report() {
    let report = parse(&analyze(SAME_SNI, r#"{"source": "bad-same-sni.yaml"}"#).unwrap());
    assert_eq!(report["version"], 1);
    assert_eq!(report["inputs"][0]["source"], "bad-same-sni.yaml");
    assert_eq!(report["inputs"][0]["listeners"], 1);
    let findings = report["findings"].as_array().unwrap();
    let codes: Vec<(&str, &str)> =
        findings.iter().map(|f| (f["code"].as_str().unwrap(), f["severity"].as_str().unwrap())).collect();
    assert!(codes.contains(&("XDS101", "error")), "{codes:?}");
    let dup = findings.iter().find(|f| f["code"] == "XDS101").unwrap();
    assert_eq!(dup["listener"], "gateway-443");
    assert_eq!(dup["location"]["source"], "bad-same-sni.yaml");
    assert!(dup["location"]["line"].as_u64().unwrap() > 1);
    // The same bytes as core's renderer gives the CLI.
    let mut sources = xdsck_core::Sources::new();
    sources.add(xdsck_core::SourceFile::new("bad-same-sni.yaml", SAME_SNI));
    let expected = xdsck_core::report::render(
        xdsck_core::report::Format::Json,
        &xdsck_core::analyze(&sources, &Default::default()),
        &sources,
        Default::default(),
    );
    assert_eq!(analyze(SAME_SNI, r#"{"source": "bad-same-sni.yaml"}"#).unwrap(), expected);
}

#[test]
fn analyze_takes_the_clis_rule_selection() {
    let report = parse(
        &analyze(SAME_SNI, r#"{"ignore": ["duplicate-filter-chain-match"], "severity": ["XDS1=warning"]}"#).unwrap(),
    );
    let findings = report["findings"].as_array().unwrap();
    assert!(!findings.iter().any(|f| f["code"] == "XDS101"), "{findings:?}");
    assert!(
        findings.iter().filter(|f| f["code"].as_str().unwrap().starts_with("XDS1")).all(|f| f["severity"] == "warning")
    );
    // The ignored rule was not run, so nothing of it is counted as suppressed.
    assert_eq!(report["summary"]["suppressed"], 0);
    let err = analyze(SAME_SNI, r#"{"select": ["XDS9"]}"#).unwrap_err();
    assert!(err.contains("`XDS9` is not a rule"), "{err}");
}

#[test]
fn analyze_defaults_the_name_and_reports_unreadable_input() {
    let report = parse(&analyze("this: [is not", "").unwrap());
    assert_eq!(report["inputs"][0]["source"], super::DEFAULT_SOURCE);
    assert_eq!(report["inputs"][0]["kind"], Value::Null);
    assert!(report["findings"][0]["code"].as_str().unwrap().starts_with("XDS0"));
}

#[test]
fn analyze_rejects_bad_options() {
    let err = analyze("{}", r#"{"sauce": 1}"#).unwrap_err();
    assert!(err.contains("invalid options"), "{err}");
}

#[test]
fn trace_reaches_the_chain() {
    let answer = parse(&trace(SAME_SNI, r#"{"dst": "10.0.0.1:443", "sni": "web.tenant1.example.com"}"#).unwrap());
    assert_eq!(answer["listener"], "gateway-443");
    assert_eq!(answer["filter_chain"], "other");
    assert_eq!(answer["outcome"], "filter_chain");
    assert_eq!(answer["connection"]["transport_protocol"], "tls");
    let levels = answer["levels"].as_array().unwrap();
    assert!(levels.iter().any(|l| l["level"] == "server_name" && l["chosen"] == "web.tenant1.example.com"));
}

#[test]
fn trace_closes_on_the_blackhole() {
    let q = r#"{"dst": "127.0.0.1:10443", "src": "192.0.2.1:50000", "client": "tls",
                "sni": "api.example.com", "alpn": ["http/1.1"]}"#;
    let answer = parse(&trace(BLACKHOLE, q).unwrap());
    assert_eq!(answer["filter_chain"], Value::Null);
    assert_eq!(answer["outcome"], "closed");
}

#[test]
fn trace_explains_bad_questions() {
    let err = trace(SAME_SNI, r#"{"dst": "10.0.0.1"}"#).unwrap_err();
    assert!(err.contains("IP:PORT"), "{err}");
    let err = trace(SAME_SNI, r#"{"dst": "10.0.0.1:80"}"#).unwrap_err();
    assert!(err.contains("no listener is bound"), "{err}");
    let err = trace(SAME_SNI, r#"{"dst": "10.0.0.1:443", "client": "http1", "sni": "x"}"#).unwrap_err();
    assert!(err.contains("TLS ClientHello"), "{err}");
    let err = trace("nope: [", r#"{"dst": "10.0.0.1:443"}"#).unwrap_err();
    assert!(err.contains("XDS0"), "{err}");
}

#[test]
fn rules_lists_every_rule_with_its_explanation() {
    let rules = parse(&super::rules_json());
    let rules = rules["rules"].as_array().unwrap();
    assert_eq!(rules.len(), xdsck_core::rules().count());
    let dup = rules.iter().find(|r| r["code"] == "XDS101").unwrap();
    assert_eq!(dup["name"], "duplicate-filter-chain-match");
    assert!(dup["explanation"].as_str().unwrap().contains("## What it finds"));
    // Which rules are input problems is the list's word, not the page's.
    assert_eq!(dup["input_problem"], false);
    assert_eq!(rules.iter().find(|r| r["code"] == "XDS001").unwrap()["input_problem"], true);
}

#[test]
fn summary_translates_the_model() {
    let summary = parse(&super::summary_json(SAME_SNI, "").unwrap());
    let listener = &summary["inputs"][0]["listeners"][0];
    assert_eq!(listener["name"], "gateway-443");
    let chains = listener["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 4);
    assert_eq!(chains[2]["name"], "other");
    assert_eq!(chains[2]["match"]["server_names"][0], "web.tenant1.example.com");
    assert_eq!(chains[2]["tcp_proxy"], true);
    assert_eq!(chains[2]["terminates_tls"], false);
    assert!(chains[2]["line"].as_u64().unwrap() > 1);
}

#[test]
fn trace_graph_draws_the_path_of_the_connection() {
    let query = r#"{"dst": "127.0.0.1:10443", "sni": "www.example.com"}"#;
    let svg = super::trace_graph_json(BLACKHOLE, query).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"));
    // The path: the listener, a key per level (a leaf above the last level stands for the rest), the chain.
    let on_path: Vec<&str> = svg.lines().filter(|l| l.starts_with("<g data-path")).collect();
    assert!(on_path.iter().any(|l| l.contains("&gt;listener edge<") || l.contains(">listener edge<")), "{on_path:?}");
    assert!(on_path.iter().any(|l| l.contains(">*.example.com<")), "{on_path:?}");
    assert!(on_path.last().unwrap().contains(">chain wildcard<"), "{on_path:?}");
    assert!(!on_path.iter().any(|l| l.contains("api-h2")), "{on_path:?}");
    assert!(svg.contains("stroke=\"#d97706\" stroke-width=\"2.5\""), "the path's edges are drawn in colour");
}

const DNS01: &str = include_str!("../../testdata/gateway/tenant-dns01.yaml");

#[cfg(target_arch = "wasm32")]
fn gateway(text: &str, options: &str) -> Result<String, String> {
    super::gateway(text, options).map_err(message)
}
#[cfg(not(target_arch = "wasm32"))]
fn gateway(text: &str, options: &str) -> Result<String, String> {
    super::gateway_json(text, options)
}

#[test]
fn gateway_answers_per_cilium_version_as_the_cli_does() {
    let conflicted = |v: &str| -> Vec<String> {
        let answer: Value =
            serde_json::from_str(&gateway(DNS01, &format!(r#"{{"source": "gw.yaml", "cilium": "{v}"}}"#)).unwrap())
                .unwrap();
        assert_eq!(answer["inputs"][0]["source"], format!("rendered:tenant1/cilium-gateway-tenant1"), "{answer:#}");
        answer["gateways"][0]["listeners"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["conditions"].as_array().unwrap().iter().any(|c| c["type"] == "Conflicted"))
            .map(|l| l["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(conflicted("1.19.5").is_empty());
    assert_eq!(conflicted("1.19.7"), ["https", "tls-api", "tls-vm-exportproxy", "tls-cdi-uploadproxy"]);
    let err = gateway(DNS01, r#"{"cilium": "1.18"}"#).unwrap_err();
    assert!(err.contains("unknown Cilium version"), "{err}");
}

const ROUTES: &str = include_str!("../../testdata/checks/shadowed-route/bad-catch-all-first.yaml");

#[test]
fn trace_with_a_host_follows_the_request_to_its_route() {
    let q = r#"{"dst": "127.0.0.1:8080", "host": "Reports.Admin.example.com", "path": "/reports/2026"}"#;
    let a = parse(&trace(ROUTES, q).unwrap());
    assert_eq!(a["http"]["virtual_host"], "admin");
    assert_eq!(a["http"]["route"], "routes[2]");
    assert_eq!(a["http"]["action"]["cluster"], "reports");
    // Without a host the answer is the connection's alone.
    let a = parse(&trace(ROUTES, r#"{"dst": "127.0.0.1:8080"}"#).unwrap());
    assert!(a.get("http").is_none());
}

#[test]
fn summary_shows_each_chains_route_tables() {
    let summary = parse(&super::summary_json(ROUTES, "").unwrap());
    let chain = &summary["inputs"][0]["listeners"][0]["chains"][0];
    let tables = chain["route_tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0]["route_config"], "ingress-routes");
    assert_eq!(tables[0]["source"], "inline");
    assert_eq!(tables[0]["found"], true);
    let hosts = tables[0]["virtual_hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[0]["name"], "api");
    assert_eq!(hosts[0]["domains"][0], "api.example.com");
    assert_eq!(hosts[0]["routes"], 3);
    assert_eq!(hosts[1]["domains"][0], "*.admin.example.com");
    assert_eq!(hosts[1]["routes"], 4);

    // An RDS name the input does not hold is named and marked as not found.
    let minified = include_str!("../../testdata/checks/duplicate-filter-chain-match/bad-minified.json");
    let summary = parse(&super::summary_json(minified, "").unwrap());
    let table = &summary["inputs"][0]["listeners"][0]["chains"][0]["route_tables"][0];
    assert_eq!(table["route_config"], "tenant-0/listener-secure");
    assert_eq!(table["source"], "rds");
    assert_eq!(table["found"], false);
    assert_eq!(table["virtual_hosts"].as_array().unwrap().len(), 0);

    // A chain without an HCM carries nothing.
    let summary = parse(&super::summary_json(SAME_SNI, "").unwrap());
    assert!(summary["inputs"][0]["listeners"][0]["chains"][2].get("route_tables").is_none());
}

#[test]
fn diff_says_which_connections_move_and_a_side_it_cannot_read() {
    // The black hole fixed: the exact name's chain no longer demands h2, so its HTTP/1.1
    // clients, closed before, now reach it.
    let fixed = BLACKHOLE.replace("application_protocols: [h2]", "application_protocols: []");
    assert_ne!(fixed, BLACKHOLE, "the fixture still demands h2 as written here");
    let answer: Value = serde_json::from_str(&diff(BLACKHOLE, &fixed).unwrap()).unwrap();
    let listeners = answer["diff"]["listeners"].as_array().unwrap();
    let moved: Vec<&Value> = listeners.iter().flat_map(|l| l["connections"].as_array().unwrap()).collect();
    assert!(!moved.is_empty(), "{answer}");
    assert!(moved.iter().all(|c| c["old"].is_null() && !c["new"].is_null()), "{answer}");
    assert!(answer["text"].as_str().unwrap().contains("xdsck trace after"), "{answer}");
    // Nothing moves between a version and itself.
    let same: Value = serde_json::from_str(&diff(SAME_SNI, SAME_SNI).unwrap()).unwrap();
    assert!(same["diff"]["listeners"].as_array().unwrap().iter().all(|l| l["status"] != "changed"), "{same}");
    // A side that is not configuration: its failure, as text.
    let e = diff(SAME_SNI, "{not json").unwrap_err();
    assert!(e.contains("after"), "{e}");
}

#[test]
fn the_summary_names_the_wildcard_that_covers_each_server_name() {
    let input = r#"[{"name": "edge",
        "address": {"socket_address": {"address": "10.0.0.1", "port_value": 443}},
        "filter_chains": [
            {"name": "wide", "filter_chain_match": {"server_names": ["*.example.com"]}, "filters": []},
            {"name": "api", "filter_chain_match": {"server_names": ["*.api.example.com", "x.api.example.com"]}, "filters": []}]}]"#;
    let s = parse(&super::summary_json(input, "").unwrap());
    let chains = &s["inputs"][0]["listeners"][0]["chains"];
    // None of the first chain's names is covered: the field is left out.
    assert!(chains[0].get("covered_by").is_none(), "{chains}");
    assert_eq!(chains[1]["covered_by"], serde_json::json!(["*.example.com", "*.api.example.com"]));
}

#[test]
fn check_is_analyze_and_summary_from_one_reading() {
    let big = tenants(3000);
    // Cilium's CiliumEnvoyConfigs name their Gateway in ownerReferences: Envoy configuration still.
    let cec = include_str!("../../testdata/cilium/cec-list.yaml");
    let inputs = [SAME_SNI, BLACKHOLE, ROUTES, cec, "{not json", "", &big];
    for (text, options) in inputs.iter().flat_map(|t| {
        [(*t, ""), (*t, r#"{"source": "dümp.yaml", "ignore": ["XDS3"], "severity": ["XDS101=warning"]}"#)]
    }) {
        let (report, summary) = check(text, options).unwrap();
        assert_eq!(report, analyze(text, options).unwrap(), "{options}");
        assert_eq!(summary, super::summary_json(text, options).unwrap(), "{options}");
    }
    let (report, summary) = check(&big, "").unwrap();
    assert!(report.len() > 1 << 20 && summary.len() > 1 << 20, "{} {}", report.len(), summary.len());
    assert_eq!(parse(&report)["summary"]["info"], 3000);
    assert_eq!(parse(&summary)["inputs"][0]["listeners"][0]["chains"].as_array().unwrap().len(), 6000);
    assert_eq!(check(SAME_SNI, "{\"select\": 1}").unwrap_err(), analyze(SAME_SNI, "{\"select\": 1}").unwrap_err());
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn parts_are_whole_characters_that_join_to_the_text() {
    use std::io::Write;
    // Two-byte and four-byte characters across every possible cut of the megabyte parts.
    let text: String = (0..700_000).map(|i| ["a", "é", "𝄞"][i % 3]).collect();
    let mut parts = Vec::new();
    let mut out = super::Parts::new(|p: &str| parts.push(p.to_owned()));
    for chunk in text.as_bytes().chunks(4093) {
        out.write_all(chunk).unwrap();
    }
    out.finish();
    assert!(parts.len() > 1, "{} parts", parts.len());
    assert!(parts.iter().all(|p| p.len() <= (1 << 20) + 4093));
    assert_eq!(parts.concat(), text);
}

#[test]
fn check_leaves_gateway_api_input_to_gateway() {
    let (mut report, mut summary) = (Vec::new(), Vec::new());
    assert!(!super::check_json(DNS01.as_bytes().to_vec(), "", &mut report, &mut summary).unwrap());
    assert!(report.is_empty() && summary.is_empty());
}

#[test]
fn check_finds_bytes_that_are_not_utf8_as_the_cli_does() {
    let mut report = Vec::new();
    assert!(
        super::check_json(b"name: caf\xe9\n".to_vec(), r#"{"source": "l.yaml"}"#, &mut report, &mut Vec::new())
            .unwrap()
    );
    let report = parse(std::str::from_utf8(&report).unwrap());
    assert_eq!(report["findings"][0]["code"], "XDS003");
    assert_eq!(report["findings"][0]["message"], "l.yaml is not UTF-8: invalid byte at line 1, column 10");
    assert_eq!(report["summary"]["error"], 1);
}
