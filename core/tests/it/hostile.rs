//! Hostile and malformed input generated in code (issue 7): size limit, huge numbers, very long
//! strings, a dump truncated at every structural point, a wrong type in every field the loaders
//! read. An input that cannot be read is exactly one located `LoadError`; a value of the wrong
//! type is one located finding with Envoy's words; never a panic or a hang.

use xdsck_core::Diagnostic;
use xdsck_core::load::{self, Limits, LoadError};
use xdsck_core::source::{SourceFile, SourceId, Sources};

fn load_text(text: &str) -> Result<usize, LoadError> {
    let file = SourceFile::new("t", text);
    load::Document::new(SourceId(0), &file).load().map(|i| i.listeners.len())
}

/// The findings of the schema rules (XDS118-XDS123) for `text`, which must load.
fn schema_findings(text: &str) -> Vec<Diagnostic> {
    let mut sources = Sources::new();
    sources.add(SourceFile::new("t", text));
    let report = xdsck_core::analyze(&sources, &xdsck_core::Options::default());
    assert_eq!(report.failed_inputs, 0, "not loaded: {:?}", report.findings);
    report.findings.into_iter().filter(|d| ("XDS118"..="XDS123").contains(&d.code())).collect()
}

/// Loads `text` and returns the one error, checking it is located inside the text.
fn error_of(text: &str) -> LoadError {
    let e = match load_text(text) {
        Ok(n) => panic!("loaded ({n} listeners): {}", &text[..text.len().min(300)]),
        Err(e) => e,
    };
    let offset = e.location.offset.unwrap_or_else(|| panic!("no offset: {e:?}"));
    assert!(offset <= text.len(), "offset {offset} past the end ({}): {e:?}", text.len());
    e
}

const LISTENER: &str = r#"{"name": "l", "address": {"socket_address": {"address": "0.0.0.0", "port_value": 443}},
  "filter_chains": [{"filter_chain_match": {"server_names": ["a.example.com"]}, "filters": []}]}"#;

#[test]
fn an_input_over_max_bytes_is_xds009_before_parsing() {
    // Not even JSON: the limit is checked first.
    let text = "{".repeat(100);
    let file = SourceFile::new("t", text.as_str());
    let limits = Limits { max_bytes: 64, ..Limits::default() };
    let e = load::Document::with_limits(SourceId(0), &file, &limits).load().unwrap_err();
    assert_eq!(e.rule.code, "XDS009");
    assert_eq!(e.message, "the input is 100 bytes, over the size limit of 64 bytes");
    assert_eq!(e.location.offset, Some(64));
    // The limit is a char boundary even inside a multi-byte character.
    let file = SourceFile::new("t", "ééé");
    let e = load::Document::with_limits(SourceId(0), &file, &Limits { max_bytes: 3, ..Limits::default() })
        .load()
        .unwrap_err();
    assert_eq!(e.location.offset, Some(2));
    // At the limit exactly, it loads.
    let file = SourceFile::new("t", LISTENER);
    assert!(
        load::Document::with_limits(SourceId(0), &file, &Limits { max_bytes: LISTENER.len(), ..Limits::default() })
            .load()
            .is_ok()
    );
    assert_eq!(Limits::default().max_bytes, 1 << 30);
}

#[test]
fn a_very_long_server_name_loads() {
    let long = "a".repeat(10 << 20);
    let text = LISTENER.replace("a.example.com", &long);
    assert_eq!(load_text(&text).unwrap(), 1);
    // And as the listener name, and in a field xdsck skips.
    let text = LISTENER.replacen(r#""name": "l""#, &format!(r#""name": "{long}", "stat_prefix": "{long}""#), 1);
    assert_eq!(load_text(&text).unwrap(), 1);
    // The same in YAML, plain and quoted (1 MB: the YAML scanner is slow in debug builds; it
    // is linear, 8 MB takes four times as long as 2 MB).
    let long = &long[..1 << 20];
    for quote in ["", "'", "\""] {
        let yaml =
            format!("name: l\nfilter_chains:\n- filter_chain_match:\n    server_names: [{quote}{long}{quote}]\n");
        assert_eq!(load_text(&yaml).unwrap(), 1);
    }
}

#[test]
fn a_number_with_ten_thousand_digits() {
    let digits = "9".repeat(10_000);
    // No numeric type holds it, and Envoy refuses it in any field (`invalid number`): the
    // input cannot be read, located at the key.
    let text = LISTENER.replace("443", &digits);
    let e = error_of(&text);
    assert_eq!((e.rule.code, e.message.as_str()), ("XDS006", "`port_value`: number out of range"));
    assert_eq!(e.location.pointer, "/address/socket_address/port_value");
    assert_eq!(e.location.offset, text.find("\"port_value\""));
    let e = error_of(&LISTENER.replace("443", "1e400"));
    assert_eq!((e.rule.code, e.location.pointer.as_str()), ("XDS006", "/address/socket_address/port_value"));
    // From YAML it is the string Envoy's YAML reader makes of it (yaml-cpp makes numbers of
    // 32-bit integers only): the input loads, and the port is refused as Envoy refuses it.
    let yaml = format!(
        "name: l\naddress: {{socket_address: {{address: 0.0.0.0, port_value: {digits}}}}}\nfilter_chains: []\n"
    );
    let found = schema_findings(&yaml);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code(), "XDS119");
    assert!(found[0].message.starts_with("`port_value`: invalid number: '9999"), "{}", found[0].message);
    // In a field no check reads, the same.
    for huge in [digits.clone(), "1e400".to_owned()] {
        let text = LISTENER.replacen(
            r#""name": "l""#,
            &format!(r#""name": "l", "per_connection_buffer_limit_bytes": {huge}"#),
            1,
        );
        let e = error_of(&text);
        assert_eq!((e.rule.code, e.location.pointer.as_str()), ("XDS006", "/per_connection_buffer_limit_bytes"));
        assert_eq!(e.location.offset, text.find("\"per_connection_buffer_limit_bytes\""));
    }
    // A long fraction that is a plain 0 loads, as Envoy takes it.
    let text = LISTENER.replacen(
        r#""name": "l""#,
        &format!(r#""name": "l", "per_connection_buffer_limit_bytes": 0.{digits}e-99999"#),
        1,
    );
    assert_eq!(load_text(&text).unwrap(), 1);
    assert!(schema_findings(&text).is_empty());
}

#[test]
fn a_long_string_of_the_wrong_type_gives_a_short_message() {
    let long = "a".repeat(10 << 20);
    // A string is one element of a repeated field (Envoy reads `filters: "x"` as `["x"]`),
    // and a filter is an object.
    let text = LISTENER.replace(r#""filters": []"#, &format!("\"filters\": \"{long}\""));
    let found = schema_findings(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    let d = &found[0];
    assert_eq!(d.code(), "XDS119");
    let at = d.location.as_ref().unwrap();
    assert_eq!(at.pointer, "/filter_chains/0/filters");
    assert_eq!(at.offset, text.find(&format!("\"{}", &long[..10])));
    assert_eq!(d.message, "`filters`: unexpected character: '\"'; expected '{'");
    assert!(d.envoy_error().is_some_and(|e| e.len() < 300), "{:?}", d.envoy_error());
}

fn listener_json() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/listeners/listener.json");
    std::fs::read_to_string(path).expect("testdata/listeners/listener.json")
}

/// `listener.json` cut after every byte up to its last `}` (so at every `{`, `[`, `,`, `:` and
/// inside every string and number): each prefix is one `XDS004`, located at or before the end.
#[test]
fn a_dump_truncated_anywhere_is_one_located_json_syntax_error() {
    let text = listener_json();
    let end = text.rfind('}').unwrap();
    let mut structural = 0;
    for cut in 1..end {
        if !text.is_char_boundary(cut) {
            continue;
        }
        let prefix = &text[..cut];
        if prefix.ends_with(['{', '[', ',', ':', '"']) {
            structural += 1;
        }
        let e = error_of(prefix);
        assert_eq!(e.rule.code, "XDS004", "cut at {cut}: {e:?}");
        assert!(e.location.offset.is_some_and(|o| o <= cut), "cut at {cut}: {e:?}");
    }
    assert!(structural > 100, "{structural}");
}

/// A chain with every FilterChainMatch field, a transport socket and a filter, added to
/// `listener.json` so that every field the loaders read is present.
fn full_listener() -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&listener_json()).unwrap();
    let chain = serde_json::json!({
        "name": "full",
        "filter_chain_match": {
            "destination_port": 8443,
            "prefix_ranges": [{"address_prefix": "10.0.0.0", "prefix_len": 8}],
            "address_suffix": "0.0.0.1",
            "suffix_len": 1,
            "direct_source_prefix_ranges": [{"address_prefix": "10.1.0.0", "prefix_len": 16}],
            "source_type": "EXTERNAL",
            "source_prefix_ranges": [{"address_prefix": "192.168.0.0", "prefix_len": 16}],
            "source_ports": [1234],
            "server_names": ["full.example.com"],
            "transport_protocol": "tls",
            "application_protocols": ["h2"]
        },
        "transport_socket": {
            "name": "envoy.transport_sockets.tls",
            "typed_config": {"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"}
        },
        "filters": [{
            "name": "envoy.filters.network.tcp_proxy",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
                "stat_prefix": "full", "cluster": "full"
            }
        }]
    });
    v["filter_chains"].as_array_mut().unwrap().push(chain);
    v
}

/// Each field the loaders read, given a value of the wrong type: the input loads, and one
/// finding at its pointer says what Envoy says (each row was checked against envoy 1.40, which
/// refuses every one; the Envoy harness in cli/tests/it/envoy_schema.rs does so for mutants).
#[test]
fn every_field_read_with_a_wrong_type_is_one_finding_at_its_pointer() {
    let base = full_listener();
    let last = base["filter_chains"].as_array().unwrap().len() - 1;
    let full = |p: &str| format!("/filter_chains/{last}{p}");
    let m = |p: &str| full(&format!("/filter_chain_match{p}"));
    let j = |v: serde_json::Value| v;
    // (where, the wrong value, the rule, where the finding points when not there)
    let table: Vec<(String, serde_json::Value, &str, Option<String>)> = vec![
        ("/name".into(), j(7.into()), "XDS119", None),
        ("/address".into(), j("0.0.0.0:443".into()), "XDS119", None),
        ("/address/socket_address".into(), serde_json::json!([]), "XDS119", None),
        ("/address/socket_address/address".into(), j(0.into()), "XDS119", None),
        ("/address/socket_address/port_value".into(), j("https".into()), "XDS119", None),
        ("/address/socket_address/port_value".into(), j((-1).into()), "XDS119", None),
        ("/address/socket_address/port_value".into(), serde_json::json!(1.5), "XDS119", None),
        ("/address/socket_address/port_value".into(), serde_json::json!({}), "XDS119", None),
        ("/filter_chains".into(), j("a".into()), "XDS119", None),
        (full(""), j("chain".into()), "XDS119", None),
        (full("/name"), serde_json::json!([]), "XDS119", None),
        (m(""), serde_json::json!([]), "XDS119", None),
        (m("/destination_port"), j("x".into()), "XDS119", None),
        (m("/destination_port"), j(true.into()), "XDS119", None),
        // Wrapper messages take `{"value": N}`, but no other key, and their `null` value is
        // the default (0), which the port's range refuses.
        (m("/destination_port"), serde_json::json!({"value": 443, "x": 1}), "XDS118", Some(m("/destination_port/x"))),
        (m("/destination_port"), serde_json::json!({"value": null}), "XDS120", None),
        (m("/destination_port"), serde_json::json!([443]), "XDS119", None),
        ("/address/socket_address/port_value".into(), serde_json::json!({"value": 443}), "XDS119", None),
        (m("/prefix_ranges"), j("10.0.0.0/8".into()), "XDS119", None),
        (m("/prefix_ranges/0"), j("10.0.0.0/8".into()), "XDS119", None),
        (m("/prefix_ranges/0/address_prefix"), j(10.into()), "XDS119", None),
        (m("/prefix_ranges/0/prefix_len"), j("eight".into()), "XDS119", None),
        (m("/address_suffix"), j(1.into()), "XDS119", None),
        (m("/suffix_len"), serde_json::json!([]), "XDS119", None),
        (m("/direct_source_prefix_ranges/0"), j(1.into()), "XDS119", None),
        (m("/source_type"), serde_json::json!(["EXTERNAL"]), "XDS119", None),
        (m("/source_type"), j("OUTSIDE".into()), "XDS118", None),
        (m("/source_prefix_ranges"), j("192.168.0.0/16".into()), "XDS119", None),
        (m("/source_ports/0"), j("port".into()), "XDS119", None),
        (m("/server_names/0"), j(1.into()), "XDS119", None),
        (m("/server_names/0"), serde_json::json!({}), "XDS119", None),
        (m("/transport_protocol"), serde_json::json!(["tls"]), "XDS119", None),
        (m("/application_protocols/0"), j(2.into()), "XDS119", None),
        (full("/transport_socket"), j("tls".into()), "XDS119", None),
        (full("/transport_socket/typed_config"), j("tls".into()), "XDS119", None),
        (full("/filters/0"), j("tcp_proxy".into()), "XDS119", None),
        (full("/filters/0/name"), j(1.into()), "XDS119", None),
        (full("/filters/0/typed_config"), j("tcp".into()), "XDS119", None),
        (full("/filters/0/typed_config/cluster"), serde_json::json!(["a"]), "XDS119", None),
        ("/filter_chains/0/filters/0/typed_config".into(), serde_json::json!([]), "XDS119", None),
    ];
    let mut failures = Vec::new();
    for (pointer, wrong, code, at) in &table {
        let mut v = base.clone();
        *v.pointer_mut(pointer).unwrap_or_else(|| panic!("{pointer} not in the listener")) = wrong.clone();
        let text = serde_json::to_string_pretty(&v).unwrap();
        let found = schema_findings(&text);
        let want = at.as_ref().unwrap_or(pointer);
        let ok = matches!(&found[..], [d] if d.code() == *code
            && d.envoy_error().is_some()
            && d.location.as_ref().is_some_and(|l| &l.pointer == want && l.offset.is_some()));
        if !ok {
            failures.push(format!("{pointer} = {wrong}: {found:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // `{}` is a wrapper's default, not a wrong type: the prefix length is then 0 (Envoy takes it).
    let mut v = base.clone();
    *v.pointer_mut(&m("/source_prefix_ranges/0/prefix_len")).unwrap() = serde_json::json!({});
    assert!(schema_findings(&serde_json::to_string(&v).unwrap()).is_empty());
}

/// Inputs the fuzzers (fuzz/, cargo-fuzz) once crashed on: each must now load or fail with
/// diagnostics, and render in every format, without a panic.
#[test]
fn fuzz_regressions_render_without_panic() {
    use xdsck_core::report::{Format, RenderOptions, render};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/fuzz-regressions/text");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("testdata/fuzz-regressions/text") {
        let path = entry.expect("dir entry").path();
        let bytes = std::fs::read(&path).expect("readable");
        let (file, _) = xdsck_core::SourceFile::from_bytes(path.display().to_string(), bytes);
        let mut sources = xdsck_core::Sources::new();
        sources.add(file);
        let report = xdsck_core::analyze(&sources, &xdsck_core::Options::default());
        for format in [Format::Text, Format::Json, Format::Sarif, Format::Github] {
            assert!(!render(format, &report, &sources, RenderOptions::default()).is_empty());
        }
        n += 1;
    }
    assert!(n > 0, "no regression inputs in {}", dir.display());
}
