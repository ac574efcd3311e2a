//! The CiliumEnvoyConfig layouts the Cilium operator and agent produce, as the project's own
//! fixtures in testdata/cilium/ (written for xdsck after Cilium's output, never copied): each
//! loads through the binary with its listener, chain and other-resource counts; Gateway API
//! input and a Helm template are refused with one located finding and exit 2.

use crate::support;

use std::process::Command;

use support::workspace;

fn run(file: &str) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .arg(workspace().join(file))
        .args(["--format", "json", "--fail-on", "never"])
        .output()
        .expect("xdsck runs");
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{file}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().expect("exit code"), report)
}

#[test]
fn cilium_envoy_configs_load_with_their_counts() {
    // Counted by hand from the YAML: listeners among spec.resources, their filterChains, the
    // route tables (checked) and the clusters beside them (a CEC's clusters are not all the
    // agent's, so they stay other resources, not checked).
    let expected = [
        ("cec-tenant-gateway.yaml", 1, 5, 2, 5),
        ("cec-per-port.yaml", 3, 5, 2, 4),
        ("cec-multi-port.yaml", 4, 4, 2, 4),
        ("cec-stream.yaml", 3, 6, 4, 4),
        ("cec-list.yaml", 5, 11, 4, 10),
        ("cec-no-kind.yaml", 1, 4, 2, 3),
    ];
    for (file, listeners, chains, route_tables, others) in expected {
        let (code, report) = run(&format!("testdata/cilium/{file}"));
        assert_eq!(code, 0, "{file}: {report:#}");
        let input = &report["inputs"][0];
        assert_eq!(input["kind"], "CiliumEnvoyConfig", "{file}");
        assert_eq!(input["listeners"], listeners, "{file}");
        assert_eq!(input["filter_chains"], chains, "{file}");
        assert_eq!(input["route_tables"], route_tables, "{file}");
        assert_eq!(input["clusters"], 0, "{file}");
        assert_eq!(input["other_resources"], others, "{file}");
    }
}

#[test]
fn gateway_api_inputs_pass_with_an_info_that_says_what_to_do() {
    // No Envoy configuration: a glob over a repository's manifests passes on them.
    for (file, count) in [("bad-lone-gateway.yaml", 1), ("bad-gateway-api-stream.yaml", 2)] {
        let (exit, report) = run(&format!("testdata/checks/skipped-document/{file}"));
        assert_eq!(exit, 0, "{file}: {report:#}");
        let findings = report["findings"].as_array().expect("findings");
        assert_eq!(findings.len(), count, "{file}: one info per object: {report:#}");
        for f in findings {
            assert_eq!(f["code"], "XDS302", "{file}");
            assert!(f["message"].as_str().unwrap().contains("a Gateway API"), "{file}: {f}");
            assert!(f["notes"].to_string().contains("xdsck gateway"), "{file}: {f}");
        }
    }
}

#[test]
fn templates_are_refused() {
    let expected = [("helm-template.yaml", "XDS008", "Helm/Go template")];
    for (file, code, words) in expected {
        let (exit, report) = run(&format!("testdata/malformed/{file}"));
        assert_eq!(exit, 2, "{file}: {report:#}");
        let findings = report["findings"].as_array().expect("findings");
        assert_eq!(findings.len(), 1, "{file}: one clear diagnostic: {report:#}");
        assert_eq!(findings[0]["code"], code, "{file}");
        let message = findings[0]["message"].as_str().expect("message");
        assert!(message.contains(words), "{file}: {message}");
        assert!(findings[0]["location"]["line"].as_u64().is_some(), "{file}: located: {report:#}");
    }
}
