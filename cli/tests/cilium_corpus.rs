//! The real Cilium output in shared/corpus/cilium (beside the repository, never committed into
//! it): every CiliumEnvoyConfig loads with its listener and chain counts; the Gateway API
//! inputs, the status file and the Helm template are refused with exit 2.

use std::path::PathBuf;
use std::process::Command;

fn corpus() -> PathBuf {
    let dir = match std::env::var_os("XDSCK_SHARED") {
        Some(d) => PathBuf::from(d).join("corpus/cilium"),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/cilium"),
    };
    assert!(
        dir.is_dir(),
        "{} is missing: the shared/ folder must sit beside the repository (or set XDSCK_SHARED)",
        dir.display()
    );
    dir
}

fn run(file: &str) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .arg(corpus().join(file))
        .args(["--format", "json", "--fail-on", "never"])
        .output()
        .expect("xdsck runs");
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{file}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().expect("exit code"), report)
}

#[test]
fn cilium_envoy_configs_load_with_their_counts() {
    // Counted independently from the YAML (listeners among spec.resources, their filterChains).
    let expected = [
        ("01-cec-gateway-tlsroute-mixed.yaml", 1, 3),
        ("03-cec-multi-port-https-with-multi-port-tls-passthrough.yaml", 4, 4),
        ("06-cec-cross-protocol-same-hostname.yaml", 2, 2),
        ("07-cec-gw-tlsroute-empty-hostname-x-4.yaml", 1, 3),
        ("08-cec-http-listener-isolation-with-hostname-intersection.yaml", 1, 1),
        ("09-ingress-host-rules-output-cec.yaml", 1, 2),
        ("11-cec-listenerset-tls-protocol-conflict.yaml", 1, 2),
        ("16-cec-multi-port-tls-passthrough.yaml", 2, 2),
    ];
    for (file, listeners, chains) in expected {
        let (code, report) = run(file);
        assert_eq!(code, 0, "{file}: {report:#}");
        let input = &report["inputs"][0];
        assert_eq!(input["kind"], "CiliumEnvoyConfig", "{file}");
        assert_eq!(input["listeners"], listeners, "{file}");
        assert_eq!(input["filter_chains"], chains, "{file}");
    }
}

#[test]
fn gateway_api_inputs_status_and_templates_are_refused() {
    let expected = [
        ("02-input-tlsroute-mixed-protocol-listeners.yaml", "XDS007", "a Gateway API `Gateway`"),
        ("04-input-cross-protocol-same-port-same-hostname.yaml", "XDS007", "a Gateway API `Gateway`"),
        ("05-status-cross-protocol-same-port-same-hostname.yaml", "XDS007", "a Gateway API `Gateway`"),
        ("10-input-listenerset-tls-protocol-conflict.yaml", "XDS007", "a Gateway API `Gateway`"),
        ("15-helm-cilium-envoy-bootstrap-config.yaml.tmpl", "XDS008", "Helm/Go template"),
    ];
    for (file, code, words) in expected {
        let (exit, report) = run(file);
        assert_eq!(exit, 2, "{file}: {report:#}");
        let findings = report["findings"].as_array().expect("findings");
        assert_eq!(findings.len(), 1, "{file}: one clear diagnostic: {report:#}");
        assert_eq!(findings[0]["code"], code, "{file}");
        let message = findings[0]["message"].as_str().expect("message");
        assert!(message.contains(words), "{file}: {message}");
        assert!(findings[0]["location"]["line"].as_u64().is_some(), "{file}: located: {report:#}");
    }
}
