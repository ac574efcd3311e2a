//! `filter_chain_matcher` against a real Envoy 1.40: which chain a connection reaches.
//!
//! One live Envoy runs four matcher listeners whose chains are `direct_response`s answering
//! their own names. Each case sends a TLS ClientHello (or plain bytes) and compares what Envoy
//! answers with what the case expects (written from envoy-matching.md §3 and Envoy's matcher
//! source) and with `filter_chain` of `xdsck trace --format json` on the same bootstrap.
//! Covered: ServerNameMatcher order and backtracking into wildcards, `*` and `on_no_match`;
//! upper-case domains; exact_match_map falling back to its own `on_no_match`; actions naming a
//! missing chain or the default chain (closed, no default); prefix_match_map retrying shorter
//! prefixes; IPMatcher longest-first with `exclusive` ranges; no match → default chain.
//!
//! Envoy comes from `scripts/install-envoy.sh`; if it cannot be had, this test fails.

use crate::support;

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use support::client::{self, Answer};
use support::envoy::{self, LiveEnvoy};
use support::generate::{self, Client, Probe};

const CLOSED: &str = "closed";

fn input(name: &str) -> Value {
    json!({"name": "in", "typed_config": {
        "@type": format!("type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.{name}")}})
}

fn action(chain: &str) -> Value {
    json!({"action": {"name": "chain", "typed_config": {
        "@type": "type.googleapis.com/google.protobuf.StringValue", "value": chain}}})
}

/// A nested matcher: `input`'s value must be `key`, then `chain`; otherwise no match.
fn only(input_name: &str, key: &str, chain: &str) -> Value {
    json!({"matcher": {"matcher_tree": {"input": input(input_name), "exact_match_map": {"map": {key: action(chain)}}}}})
}

fn chains(names: &[&str]) -> Value {
    names.iter().map(|n| json!({"name": n, "filters": generate::direct_response(n)})).collect()
}

fn listener(name: &str, port: u16, matcher: Value, chain_names: &[&str], default: bool) -> Value {
    let mut l = generate::listener_json(name, &[(Ipv4Addr::LOCALHOST, port)], vec![generate::tls_inspector()]);
    l["filter_chain_matcher"] = matcher;
    l["filter_chains"] = chains(chain_names);
    if default {
        l["default_filter_chain"] = json!({"name": "default", "filters": generate::direct_response("default")});
    }
    l
}

fn tls(sni: Option<&str>, alpn: &[&str]) -> Client {
    Client::Tls { sni: sni.map(str::to_owned), alpn: alpn.iter().map(|a| (*a).to_owned()).collect() }
}

/// `filter_chain` of `xdsck trace --format json` (`closed` for null).
fn xdsck_trace(config: &Path, listener: &str, probe: &Probe, src_port: u16) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xdsck"));
    cmd.arg("trace").arg(config).args(["--format", "json", "--listener", listener]);
    cmd.arg("--dst").arg(format!("{}:{}", probe.dst.0, probe.dst.1));
    cmd.arg("--src").arg(format!("{}:{src_port}", probe.src.0));
    match &probe.client {
        Client::Tls { sni, alpn } => {
            cmd.args(["--client", "tls"]);
            if let Some(s) = sni {
                cmd.arg("--sni").arg(s);
            }
            if !alpn.is_empty() {
                cmd.arg("--alpn").arg(alpn.join(","));
            }
        }
        Client::Raw => {
            cmd.args(["--client", "raw"]);
        }
        other => panic!("not used here: {other:?}"),
    }
    let out = cmd.output().expect("run xdsck");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("xdsck trace prints JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    // Exit 1 exactly when Envoy closes the connection.
    let want = if v["outcome"] == "closed" { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(want), "xdsck trace: {v}");
    v["filter_chain"].as_str().unwrap_or(CLOSED).to_owned()
}

#[test]
fn matcher_listeners_agree_with_envoy() {
    let envoy_bin = envoy::binary();
    let lo = Ipv4Addr::LOCALHOST;
    let (lo2, lo3) = (Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3));
    let (ports, hold) = envoy::free_ports(4, &[lo]);
    let [p_sni, p_exact, p_prefix, p_ip] = ports[..] else { unreachable!() };

    let sni = listener(
        "sni",
        p_sni,
        json!({
            "matcher_tree": {"input": input("ServerNameInput"), "custom_match": {"name": "sni", "typed_config": {
                "@type": "type.googleapis.com/xds.type.matcher.v3.ServerNameMatcher",
                "domain_matchers": [
                    {"domains": ["a.b.example.com"], "on_match": only("ApplicationProtocolInput", "'h2'", "exact-h2")},
                    {"domains": ["*.b.example.com"], "on_match": only("ApplicationProtocolInput", "'http/1.1'", "wild-b-h1")},
                    {"domains": ["*.example.com"], "on_match": action("wild")},
                    {"domains": ["Up.example.com"], "on_match": action("upper")},
                    {"domains": ["*"], "on_match": only("ApplicationProtocolInput", "'x'", "star-x")},
                ]}}},
            "on_no_match": action("nomatch"),
        }),
        &["exact-h2", "wild-b-h1", "wild", "upper", "star-x", "nomatch"],
        false,
    );
    let exact = listener(
        "exact",
        p_exact,
        json!({
            "matcher_tree": {"input": input("ServerNameInput"), "exact_match_map": {"map": {
                "a.example.com": only("ApplicationProtocolInput", "'h2'", "a-h2"),
                "ghost.example.com": action("ghost"),
                "dflt.example.com": action("default"),
            }}},
            "on_no_match": action("fallback"),
        }),
        &["a-h2", "fallback"],
        true,
    );
    let prefix = listener(
        "prefix",
        p_prefix,
        json!({"matcher_tree": {"input": input("ServerNameInput"), "prefix_match_map": {"map": {
            "api": only("ApplicationProtocolInput", "'h2'", "api-h2"),
            "a": action("a"),
        }}}}),
        &["api-h2", "a"],
        true,
    );
    let ip = listener(
        "ip",
        p_ip,
        json!({
            "matcher_tree": {"input": input("SourceIPInput"), "custom_match": {"name": "ip", "typed_config": {
                "@type": "type.googleapis.com/xds.type.matcher.v3.IPMatcher",
                "range_matchers": [
                    {"ranges": [{"address_prefix": "127.0.0.0", "prefix_len": 16}], "exclusive": true, "on_match": action("lo16")},
                    {"ranges": [{"address_prefix": "127.0.0.0", "prefix_len": 8}], "on_match": action("lo8")},
                    {"ranges": [{"address_prefix": "127.0.0.2", "prefix_len": 32}], "on_match": only("DestinationPortInput", "1", "never")},
                ]}}},
            "on_no_match": action("nomatch"),
        }),
        &["lo16", "lo8", "never", "nomatch"],
        false,
    );

    let dir = tempfile::tempdir().unwrap();
    let admin = LiveEnvoy::admin_socket(dir.path());
    let bootstrap = generate::bootstrap(&[&sni, &exact, &prefix, &ip], Some(admin.to_str().unwrap()));
    let config = dir.path().join("matcher-bootstrap.json");
    std::fs::write(&config, serde_json::to_vec_pretty(&bootstrap).unwrap()).unwrap();
    envoy::validate(&envoy_bin, &config).unwrap_or_else(|e| panic!("Envoy rejects the matcher listeners: {e}"));
    drop(hold);
    let live = LiveEnvoy::start(&envoy_bin, dir, &bootstrap).unwrap_or_else(|e| panic!("{e}"));

    // (listener, port, source, client, the chain Envoy answers with, why)
    let cases: Vec<(&str, u16, Ipv4Addr, Client, &str, &str)> = vec![
        ("sni", p_sni, lo, tls(Some("a.b.example.com"), &["h2"]), "exact-h2", "exact domain first"),
        (
            "sni",
            p_sni,
            lo,
            tls(Some("a.b.example.com"), &["http/1.1"]),
            "wild-b-h1",
            "exact subtree fails: longest wildcard",
        ),
        ("sni", p_sni, lo, tls(Some("a.b.example.com"), &[]), "wild", "both fail: the shorter wildcard"),
        ("sni", p_sni, lo, tls(Some("A.B.Example.COM"), &["h2"]), "exact-h2", "the SNI is lower-cased"),
        ("sni", p_sni, lo, tls(Some("up.example.com"), &[]), "wild", "upper-case domains never match"),
        ("sni", p_sni, lo, tls(Some("example.com"), &["x"]), "star-x", "*.example.com does not cover the apex; * does"),
        ("sni", p_sni, lo, tls(Some("other.org"), &[]), "nomatch", "* subtree fails: on_no_match"),
        ("sni", p_sni, lo, tls(None, &["x"]), "nomatch", "no SNI: on_no_match, * is not tried"),
        ("sni", p_sni, lo, Client::Raw, "nomatch", "plaintext: no SNI"),
        ("exact", p_exact, lo, tls(Some("a.example.com"), &["h2"]), "a-h2", "exact key"),
        (
            "exact",
            p_exact,
            lo,
            tls(Some("a.example.com"), &["http/1.1"]),
            "fallback",
            "key subtree fails: this node's on_no_match",
        ),
        ("exact", p_exact, lo, tls(Some("z.example.com"), &[]), "fallback", "no key: on_no_match"),
        ("exact", p_exact, lo, tls(Some("ghost.example.com"), &[]), CLOSED, "missing chain: closed, default not used"),
        ("exact", p_exact, lo, tls(Some("dflt.example.com"), &[]), CLOSED, "actions cannot name the default chain"),
        ("prefix", p_prefix, lo, tls(Some("api.example.com"), &["h2"]), "api-h2", "longest prefix"),
        (
            "prefix",
            p_prefix,
            lo,
            tls(Some("api.example.com"), &[]),
            "a",
            "longest prefix's subtree fails: shorter prefix",
        ),
        (
            "prefix",
            p_prefix,
            lo,
            tls(Some("b.example.com"), &[]),
            "default",
            "no prefix, no on_no_match: default chain",
        ),
        ("prefix", p_prefix, lo, Client::Raw, "default", "no SNI: default chain"),
        ("ip", p_ip, lo2, Client::Raw, "lo8", "/32 fails; exclusive /16 skipped; /8 taken"),
        ("ip", p_ip, lo3, Client::Raw, "lo16", "exclusive /16 is the longest: tried"),
    ];
    let mut wrong = Vec::new();
    for (listener, port, src, client, want, why) in cases {
        let probe = Probe { src: (src, None), dst: (lo, port), client };
        let (answer, src_port) = client::run(&probe);
        let envoy_says = match &answer {
            Answer::Chain(c) => c.clone(),
            Answer::Closed => CLOSED.to_owned(),
            other => {
                wrong.push(format!("{probe}: Envoy gave no verdict: {other}"));
                continue;
            }
        };
        let xdsck_says = xdsck_trace(&config, listener, &probe, src_port);
        if envoy_says != want || xdsck_says != want {
            wrong.push(format!("{probe} ({why}): expected {want}, Envoy {envoy_says}, xdsck {xdsck_says}"));
        }
    }
    assert!(wrong.is_empty(), "filter_chain_matcher disagreements:\n{}\n{}", wrong.join("\n"), live.log_tail());
}
