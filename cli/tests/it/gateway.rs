//! `xdsck gateway` through the binary, on the project's own Gateway API fixtures
//! (testdata/gateway/): the listener conditions and rendered chains per Cilium version, every
//! version difference the model has, the TenantGateway layouts of the seed story, and the
//! rendered CiliumEnvoyConfigs through the real `envoy --mode validate`.

use crate::support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use support::{describe, text, workspace};

const VERSIONS: [&str; 4] = ["1.19.5", "1.19.6", "1.20", "main"];

fn gateway(version: &str, file: &str, extra: &[&str]) -> (i32, Vec<u8>) {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["gateway", "--cilium", version, "--color", "never"])
        .args(extra)
        .arg(workspace().join("testdata/gateway").join(file))
        .output()
        .expect("xdsck runs");
    (out.status.code().expect("exit code"), out.stdout)
}

fn json(version: &str, file: &str) -> Value {
    let (_, out) = gateway(version, file, &["--format", "json"]);
    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{file} {version}: {e}: {}", text(&out)))
}

/// `(type, status, reason)` of every condition but Programmed (always Pending without an address).
fn conditions(l: &Value) -> Vec<(String, String, String)> {
    l["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] != "Programmed")
        .map(|c| {
            (
                c["type"].as_str().unwrap().into(),
                c["status"].as_str().unwrap().into(),
                c["reason"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn listener<'v>(report: &'v Value, name: &str) -> &'v Value {
    report["gateways"][0]["listeners"].as_array().unwrap().iter().find(|l| l["name"] == name).unwrap()
}

fn conflicted(report: &Value, name: &str) -> bool {
    conditions(listener(report, name)).iter().any(|c| c.0 == "Conflicted" && c.1 == "True" && c.2 == "ProtocolConflict")
}

/// Each rendered Envoy listener: its name and its chains' `(transportProtocol, serverNames)`.
fn chains(report: &Value) -> Vec<(String, Vec<(String, Value)>)> {
    report["rendered"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|cec| cec["spec"]["resources"].as_array().unwrap().iter())
        .filter(|r| r.get("filterChains").is_some())
        .map(|l| {
            let cs = l["filterChains"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    let m = &c["filterChainMatch"];
                    (
                        m["transportProtocol"].as_str().unwrap().to_owned(),
                        m.get("serverNames").cloned().unwrap_or(Value::Null),
                    )
                })
                .collect();
            (l["name"].as_str().unwrap().to_owned(), cs)
        })
        .collect()
}

fn codes(report: &Value) -> Vec<String> {
    report["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect()
}

const DNS01_CONFLICTED: [&str; 4] = ["https", "tls-api", "tls-vm-exportproxy", "tls-cdi-uploadproxy"];

#[test]
fn dns01_accepted_on_1_19_5_conflicted_but_served_on_1_19_6_dropped_on_1_20() {
    let old = json("1.19.5", "tenant-dns01.yaml");
    for name in DNS01_CONFLICTED.iter().chain(&["https-apex"]) {
        assert!(!conflicted(&old, name), "{name} on 1.19.5: {old:#}");
        assert_eq!(listener(&old, name)["translated"], true);
    }
    for v in ["1.19.6", "1.19.7"] {
        let r = json(v, "tenant-dns01.yaml");
        for name in DNS01_CONFLICTED {
            assert!(conflicted(&r, name), "{name} on {v}");
            let accepted = conditions(listener(&r, name)).into_iter().find(|c| c.0 == "Accepted").unwrap();
            assert_eq!((accepted.1.as_str(), accepted.2.as_str()), ("False", "Invalid"), "{name} on {v}");
            assert_eq!(listener(&r, name)["translated"], true, "{name} is still served on {v}");
        }
        assert!(!conflicted(&r, "https-apex"));
        // Still served: the same five chains as 1.19.5.
        assert_eq!(chains(&r), chains(&old), "{v}");
    }
    let new = json("1.20", "tenant-dns01.yaml");
    for name in DNS01_CONFLICTED {
        assert!(conflicted(&new, name));
        assert_eq!(listener(&new, name)["translated"], false, "{name} is dropped on 1.20");
    }
    // Only the apex is served: the cleartext chain and one TLS chain for the apex alone.
    let served = chains(&new);
    assert_eq!(served.len(), 1);
    assert_eq!(
        served[0].1,
        [("raw_buffer".to_owned(), Value::Null), ("tls".to_owned(), json!(["tenant1.example.org"]))]
    );
    // 1.19.5: one combined listener; the wildcard chain shares its Secret with the apex, then
    // the three passthrough chains.
    assert_eq!(chains(&old)[0].1.len(), 5);
    assert_eq!(chains(&old)[0].1[1].1, json!(["*.tenant1.example.org", "tenant1.example.org"]));
    // The conflict findings name the partner and the versions.
    let r = json("1.19.6", "tenant-dns01.yaml");
    let f = r["findings"].as_array().unwrap();
    let conflict = f.iter().find(|f| f["code"] == "XDS402" && f["listener"] == "tls-api").expect("XDS402 for tls-api");
    assert!(conflict["message"].as_str().unwrap().contains("listener \"https\""), "{conflict:#}");
    assert_eq!(codes(&r).iter().filter(|c| *c == "XDS403").count(), 3, "one pair finding per passthrough listener");
}

#[test]
fn http01_rendered_listener_is_rejected_by_envoy_on_1_19_and_not_on_1_20() {
    for v in ["1.19.5", "1.19.6"] {
        let r = json(v, "tenant-http01.yaml");
        let envoy = envoy_errors(&r);
        assert!(
            envoy.iter().any(|e| e.contains("filter chain '' has the same matching rules defined as ''")),
            "{v}: {r:#}"
        );
        let (code, _) = gateway(v, "tenant-http01.yaml", &[]);
        assert_eq!(code, 1, "{v}");
    }
    let r = json("1.20", "tenant-http01.yaml");
    assert!(conflicted(&r, "https-api") && conflicted(&r, "tls-api"));
    assert_eq!(listener(&r, "https-api")["translated"], false);
    assert_eq!(listener(&r, "tls-api")["translated"], false);
    assert!(r["findings"].as_array().unwrap().iter().all(|f| f["severity"] != "error"), "{r:#}");
    let served = chains(&r);
    let names: Vec<&Value> = served[0].1.iter().map(|c| &c.1).collect();
    // One chain per Secret, by Secret name: apex-tls, then dashboard-tls.
    assert_eq!(names, [&Value::Null, &json!(["tenant1.example.org"]), &json!(["dashboard.tenant1.example.org"])]);
}

#[test]
fn per_port_listeners_since_1_19_6() {
    let old = json("1.19.5", "multi-port-https.yaml");
    let names = |r: &Value| chains(r).into_iter().map(|c| c.0).collect::<Vec<_>>();
    assert_eq!(names(&old), ["listener"]);
    for v in ["1.19.6", "1.20", "main"] {
        let r = json(v, "multi-port-https.yaml");
        assert_eq!(names(&r), ["listener", "listener-443", "listener-8443"], "{v}");
        let services = &r["rendered"][0]["spec"]["services"];
        assert_eq!(
            services[1],
            json!({"name": "cilium-gateway-shop", "namespace": "shop", "ports": [443], "listener": "listener-443"})
        );
    }
}

/// A TLS listener also yields an HTTP entry, so its port stays in spec.services without a
/// route and the combined listener keeps only the cleartext chain, on every version (Cilium's
/// own test data shows this for passthrough-only Gateways whose routes do not attach).
#[test]
fn an_unrouted_passthrough_listener_keeps_its_port_on_every_version() {
    for v in VERSIONS {
        let r = json(v, "passthrough-unrouted.yaml");
        assert_eq!(r["rendered"][0]["spec"]["services"][0]["ports"], json!([80, 8443]), "{v}");
        assert_eq!(chains(&r), [("listener".to_owned(), vec![("raw_buffer".to_owned(), Value::Null)])], "{v}");
    }
}

#[test]
fn listener_pair_conflicts_since_1_20() {
    for v in ["1.19.5", "1.19.6"] {
        let r = json(v, "protocol-conflicts.yaml");
        for name in ["http", "tcp", "https-a", "https-a-again"] {
            assert!(conditions(listener(&r, name)).iter().all(|c| c.0 != "Conflicted"), "{name} on {v}");
        }
        // Two Secrets for one hostname: two identical chains, which Envoy rejects.
        assert!(codes(&r).contains(&"XDS101".to_owned()), "{v}: {r:#}");
    }
    for v in ["1.20", "main"] {
        let r = json(v, "protocol-conflicts.yaml");
        assert!(conflicted(&r, "tcp") && conflicted(&r, "http"), "{v}");
        assert!(conditions(listener(&r, "https-a")).contains(&(
            "Conflicted".into(),
            "True".into(),
            "HostnameConflict".into()
        )));
        assert_eq!(r["gateways"][0]["conditions"][0]["reason"], "ListenersNotValid");
        // The conflicted listeners are filtered out; the only other one is invalid but, with no
        // valid listener left, not filtered: an unsupported protocol renders nothing either.
        assert_eq!(r["rendered"], json!([]), "{v}");
        assert_eq!(listener(&r, "sctp")["translated"], true);
    }
    let reason = |v: &str| conditions(listener(&json(v, "protocol-conflicts.yaml"), "sctp"))[0].2.clone();
    assert_eq!(reason("1.20"), "Invalid");
    assert_eq!(reason("main"), "UnsupportedProtocol");
}

#[test]
fn kubectl_lists_namespaces_selectors_and_unmodelled_objects() {
    for v in VERSIONS {
        let r = json(v, "kubectl-list.yaml");
        let f = r["findings"].as_array().unwrap();
        let unmodelled: Vec<&Value> = f.iter().filter(|f| f["code"] == "XDS401").collect();
        assert_eq!(unmodelled.len(), 1, "{v}");
        assert_eq!(r["not_modelled"], 1, "{v}");
        assert!(unmodelled[0]["message"].as_str().unwrap().contains("`Deployment` `frontend`"));
        assert_eq!(unmodelled[0]["location"]["pointer"], "/items/4");
        assert_eq!(unmodelled[0]["location"]["line"], 59);
        // Only the route from the namespace the selector admits is routed.
        let routes = r["rendered"][0]["spec"]["resources"].as_array().unwrap();
        let vhosts: Vec<&str> = routes
            .iter()
            .filter_map(|x| x.get("virtualHosts"))
            .flat_map(|v| v.as_array().unwrap())
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(vhosts, ["www.example.com"], "{v}");
    }
}

#[test]
fn a_certificate_in_another_namespace_without_a_grant_is_not_permitted() {
    for v in VERSIONS {
        let r = json(v, "cross-namespace-secret.yaml");
        assert_eq!(
            conditions(listener(&r, "https"))[0],
            ("ResolvedRefs".into(), "False".into(), "RefNotPermitted".into())
        );
        assert_eq!(r["gateways"][0]["conditions"][0]["message"], "No Accepted Listeners");
        // The listener is still translated, without the Secret it may not use: cleartext HTTP
        // on port 443.
        assert_eq!(chains(&r), [("listener".to_owned(), vec![("raw_buffer".to_owned(), Value::Null)])], "{v}");
        assert_eq!(r["rendered"][0]["spec"]["services"][0]["ports"], json!([443]));
    }
}

#[test]
fn text_output_names_each_listener_with_its_place() {
    let (code, out) = gateway("1.19.6", "tenant-dns01.yaml", &[]);
    assert_eq!(code, 1);
    let out = text(&out);
    assert!(out.contains("Gateway tenant1/tenant1 on Cilium 1.19.6"), "{out}");
    assert!(out.contains("listener tls-api (TLS api.tenant1.example.org Passthrough port 443) at "), "{out}");
    assert!(out.contains("tenant-dns01.yaml:40:7"), "{out}");
    assert!(out.contains("warning[XDS402]"), "{out}");
}

#[test]
fn bad_input_is_located_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec:\n  listeners:\n  - name: a\n    port: many\n    protocol: HTTP\n").unwrap();
    let out =
        Command::new(env!("CARGO_BIN_EXE_xdsck")).args(["gateway", "--format", "json"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", describe("xdsck", &out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["findings"][0]["location"]["pointer"], "/spec/listeners/0/port", "{r:#}");
    assert_eq!(r["findings"][0]["location"]["line"], 7, "{r:#}");
    let unknown =
        Command::new(env!("CARGO_BIN_EXE_xdsck")).args(["gateway", "--cilium", "1.18"]).arg(&bad).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn render_pipes_into_xdsck() {
    let (code, rendered) = gateway("1.19.5", "tenant-http01.yaml", &["--render"]);
    assert_eq!(code, 0);
    let mut child = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["-", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&rendered).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["findings"].as_array().unwrap().iter().any(|f| f["code"] == "XDS101"), "{r:#}");
}

/// The rendered listeners as Envoy runs them once the cilium-agent has them: an address each
/// (the agent assigns proxy ports), route tables inline (the agent serves them by RDS), and a
/// real certificate where the CEC names an SDS secret.
fn bootstrap(cec: &Value, dir: &Path) -> Value {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap().self_signed(&key).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
    let resources = cec["spec"]["resources"].as_array().unwrap();
    let routes: Vec<&Value> = resources
        .iter()
        .filter(|r| r.get("virtualHosts").is_some() || r["@type"].as_str().unwrap().ends_with("RouteConfiguration"))
        .collect();
    let mut clusters = Vec::new();
    let mut listeners = Vec::new();
    for (i, r) in resources.iter().enumerate() {
        let mut r = r.clone();
        let ty = r["@type"].as_str().unwrap().to_owned();
        r.as_object_mut().unwrap().remove("@type");
        if ty.ends_with("Cluster") {
            let name = r["name"].clone();
            clusters.push(json!({"name": name, "type": "STATIC", "connect_timeout": "1s"}));
        } else if ty.ends_with("Listener") {
            r["address"] = json!({"socket_address": {"address": "127.0.0.1", "port_value": 20000 + i}});
            for chain in r["filterChains"].as_array_mut().unwrap() {
                for f in chain["filters"].as_array_mut().unwrap() {
                    if let Some(rds) = f["typedConfig"].get("rds").cloned() {
                        let name = rds["routeConfigName"].as_str().unwrap();
                        let mut table = (*routes.iter().find(|t| t["name"] == name).unwrap()).clone();
                        table.as_object_mut().unwrap().remove("@type");
                        let tc = f["typedConfig"].as_object_mut().unwrap();
                        tc.remove("rds");
                        tc.insert("routeConfig".into(), table);
                    }
                }
                if chain.get("transportSocket").is_some() {
                    chain["transportSocket"]["typedConfig"]["commonTlsContext"] = json!({"tlsCertificates": [{
                        "certificateChain": {"filename": dir.join("tls.crt")},
                        "privateKey": {"filename": dir.join("tls.key")}
                    }]});
                }
            }
            listeners.push(r);
        }
    }
    json!({"static_resources": {"listeners": listeners, "clusters": clusters}})
}

#[test]
fn rendered_configs_through_the_real_envoy() {
    let envoy = support::envoy::binary();
    let dir = tempfile::tempdir().unwrap();
    let files = [
        "tenant-dns01.yaml",
        "tenant-http01.yaml",
        "multi-port-https.yaml",
        "passthrough-unrouted.yaml",
        "kubectl-list.yaml",
    ];
    let mut rejected = Vec::new();
    for file in files {
        for v in VERSIONS {
            let r = json(v, file);
            for cec in r["rendered"].as_array().unwrap() {
                let config = dir.path().join("bootstrap.json");
                std::fs::write(&config, serde_json::to_string_pretty(&bootstrap(cec, dir.path())).unwrap()).unwrap();
                let out = Command::new(&envoy)
                    .args(["--mode", "validate", "-l", "critical", "--disable-hot-restart", "-c"])
                    .arg(&config)
                    .output()
                    .unwrap();
                let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
                let check = Command::new(env!("CARGO_BIN_EXE_xdsck"))
                    .args(["--format", "json", "--fail-on", "never"])
                    .arg(&config)
                    .output()
                    .unwrap();
                let report: Value = serde_json::from_slice(&check.stdout).unwrap();
                let errors = envoy_errors(&report);
                if out.status.success() {
                    assert!(errors.is_empty(), "{file} {v}: Envoy accepts, xdsck: {errors:?}");
                } else {
                    assert!(errors.iter().any(|e| all.contains(e)), "{file} {v}: Envoy: {all}\nxdsck: {errors:?}");
                    rejected.push((file, v, all));
                }
            }
        }
    }
    let http01: Vec<&str> = rejected.iter().filter(|r| r.0 == "tenant-http01.yaml").map(|r| r.1).collect();
    assert_eq!(http01, ["1.19.5", "1.19.6"], "{rejected:#?}");
    assert!(
        rejected.iter().all(|r| r.2.contains("filter chain '' has the same matching rules defined as ''")),
        "{rejected:#?}"
    );
    assert_eq!(rejected.len(), 2, "only http01 on 1.19.x is rejected: {rejected:#?}");
}

/// cilium#48269: with two routed passthrough ports, one of them an HTTPS port too, the per-port
/// layout has two Envoy listeners `listener-443`; the existing checks find the duplicate name.
#[test]
fn per_port_duplicate_listener_name_since_1_19_6() {
    let duplicate = |v: &str| {
        json(v, "per-port-duplicate-name.yaml")["findings"].as_array().unwrap().iter().any(|f| {
            f["code"] == "XDS109" && f["message"].as_str().unwrap().contains("cilium-gateway-dual/listener-443")
        })
    };
    assert!(!duplicate("1.19.5"), "one combined listener on 1.19.5");
    for v in ["1.19.6", "1.20", "main"] {
        assert!(duplicate(v), "{v}");
    }
}

/// The Envoy texts of a JSON report's error findings: what Envoy would say rejecting it.
fn envoy_errors(report: &Value) -> Vec<&str> {
    let findings = report["findings"].as_array().expect("a JSON report has findings");
    findings.iter().filter(|f| f["severity"] == "error").filter_map(|f| f["envoy_error"].as_str()).collect()
}

/// `gateway` has `check`'s linter surface: selection and severity flags, the findings alone in
/// SARIF, concise and GitHub form, statistics; the objects the model does not read one finding
/// per kind; a ListenerSet said once, as a note.
#[test]
fn gateway_selects_grades_and_formats_findings_as_check_does() {
    let pair = std::fs::read_to_string(workspace().join("testdata/gateway/https-passthrough-pair.yaml")).unwrap();
    let extra = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: web}\n\
                 ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: web}\n\
                 ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: web}\n\
                 ---\napiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XListenerSet\n\
                 metadata: {name: more, namespace: web}\nspec: {parentRef: {name: edge}, listeners: []}\n";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gw.yaml");
    std::fs::write(&file, format!("{pair}{extra}")).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
            .args(["gateway", "--cilium", "1.20", "--no-config"])
            .args(args)
            .arg(&file)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("xdsck runs");
        (out.status.code().expect("exit code"), text(&out.stdout))
    };

    let (code, out) = run(&["--format", "concise"]);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with("xdsck: note:")).collect();
    let codes: Vec<&str> = lines.iter().filter_map(|l| l.split(' ').nth(1)).collect();
    assert_eq!(codes.iter().filter(|c| **c == "XDS402").count(), 2, "{out}");
    assert_eq!(codes.iter().filter(|c| **c == "XDS403").count(), 1, "{out}");
    // One XDS401 per kind: the three ConfigMaps are one finding that names them all.
    let unread: Vec<&&str> = lines.iter().filter(|l| l.contains("XDS401")).collect();
    assert_eq!(unread.len(), 2, "{out}");
    assert!(
        unread
            .iter()
            .any(|l| l.contains("3 `ConfigMap` objects (v1) are not part of the Cilium model; not read: a, b, c")),
        "{out}"
    );
    assert_eq!(out.matches("XListenerSet is not modelled").count(), 1, "{out}");

    let (code, out) = run(&["--select", "XDS403", "--severity", "XDS403=info", "--format", "concise"]);
    assert_eq!(code, 0, "an info does not fail the run: {out}");
    let findings: Vec<&str> = out.lines().filter(|l| !l.starts_with("xdsck: note:")).collect();
    assert_eq!(findings.len(), 1, "{out}");
    assert!(findings[0].contains("XDS403 [info]"), "{out}");

    let (_, out) = run(&["--ignore", "XDS402", "--format", "sarif"]);
    let sarif: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let rules: Vec<&str> =
        sarif["runs"][0]["results"].as_array().unwrap().iter().map(|r| r["ruleId"].as_str().unwrap()).collect();
    assert!(!rules.contains(&"XDS402") && rules.contains(&"XDS403"), "{rules:?}");

    let (_, out) = run(&["--statistics"]);
    assert!(out.contains("XDS402") && out.contains("XDS401"), "{out}");
    assert!(!out.contains("Gateway web/edge"), "statistics print the counts alone: {out}");

    let baseline = dir.path().join("baseline.json");
    let (code, _) = run(&["--write-baseline", &baseline.display().to_string()]);
    assert_eq!(code, 0);
    let (code, out) = run(&["--baseline", &baseline.display().to_string(), "--format", "concise"]);
    assert_eq!(code, 0, "every finding is in the baseline: {out}");
}
