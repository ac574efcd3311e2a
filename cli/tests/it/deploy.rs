//! deploy/kubernetes with real tools: every kustomization renders with `kubectl kustomize`, every
//! rendered object validates against the Kubernetes schemas (PyPI's kubernetes-validate,
//! `--strict`: an unknown field fails) or, for the Prometheus Operator's kinds, against their
//! vendored CRDs (tests/data/README.md); the DaemonSet's arguments are ones `xdsck` accepts and
//! runs with; the PrometheusRule's alerts pass `promtool check rules` and fire, in
//! `promtool test rules`, on the series the agent exports. The tools come from
//! `$XDSCK_KUBECTL`, `$XDSCK_KUBERNETES_VALIDATE` and `$XDSCK_PROMETHEUS_DIR` (scripts/test.sh
//! sets them through scripts/install-k8s-tools.sh and scripts/install-prometheus.sh) or PATH;
//! a missing tool fails the test, it never skips.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `$env` if set, else `name` in `$dir_env` or on PATH; a missing tool panics with the fix.
fn tool(env: &str, dir_env: Option<&str>, name: &str, install: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "{env}={} is not a file", p.display());
        return p;
    }
    let dirs: Vec<PathBuf> = match dir_env.and_then(std::env::var_os) {
        Some(d) => vec![PathBuf::from(d)],
        None => std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect(),
    };
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not found (set {env}, or run {install})"))
}

fn kubectl() -> PathBuf {
    tool("XDSCK_KUBECTL", None, "kubectl", "scripts/install-k8s-tools.sh")
}

fn kubernetes_validate() -> PathBuf {
    tool("XDSCK_KUBERNETES_VALIDATE", None, "kubernetes-validate", "scripts/install-k8s-tools.sh")
}

fn promtool() -> PathBuf {
    tool("XDSCK_PROMTOOL", Some("XDSCK_PROMETHEUS_DIR"), "promtool", "scripts/install-prometheus.sh")
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn describe(out: &Output) -> String {
    format!("{}\n{}{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A YAML stream (or one document) as JSON values, read by xdsck's own YAML translation.
fn yaml_docs(text: &str) -> Vec<Value> {
    let json = xdsck_core::load::yaml::translate(text, &xdsck_core::load::Limits::default()).unwrap();
    let v: Value = serde_json::from_str(json.json()).unwrap();
    if json.is_stream() { v.as_array().unwrap().clone() } else { vec![v] }
}

/// `kubectl kustomize dir`: the objects, and the rendered text.
fn kustomize(dir: &str) -> (Vec<Value>, String) {
    let out = run(Command::new(kubectl()).arg("kustomize").arg(workspace().join(dir)));
    assert!(out.status.success(), "kubectl kustomize {dir}: {}", describe(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    (yaml_docs(&text), text)
}

/// kubernetes-validate --strict on `objects`, written as one YAML (JSON) stream. Returns the
/// kinds it has no schema for.
fn validate(objects: &[Value], dir: &Path) -> Result<Vec<String>, String> {
    let path = dir.join("objects.yaml");
    let stream: Vec<String> = objects.iter().map(|o| serde_json::to_string(o).unwrap()).collect();
    std::fs::write(&path, stream.join("\n---\n")).unwrap();
    let out = run(Command::new(kubernetes_validate()).args(["--strict"]).arg(&path));
    let text = describe(&out);
    if !out.status.success() {
        return Err(text);
    }
    let unknown = text
        .lines()
        .filter_map(|l| l.split("Couldn't find schema for kind ").nth(1))
        .filter_map(|rest| rest.split(' ').next())
        .map(str::to_owned)
        .collect();
    Ok(unknown)
}

/// The `openAPIV3Schema` of a vendored Prometheus Operator CRD, strict about unknown fields
/// (the API server prunes what a structural schema does not declare).
fn crd_schema(file: &str, version: &str) -> Value {
    fn strict(v: &mut Value) {
        match v {
            Value::Object(o) => {
                if o.contains_key("properties") && !o.contains_key("additionalProperties") {
                    o.insert("additionalProperties".into(), false.into());
                }
                o.values_mut().for_each(strict);
            }
            Value::Array(a) => a.iter_mut().for_each(strict),
            _ => {}
        }
    }
    let text = std::fs::read_to_string(workspace().join(file)).unwrap();
    // One pattern is Go's RE2 with an inline flag, `^(?i)(abort|warn)?$`, which ECMAScript
    // (and so draft-07's meta-schema) does not have: spelled out case by case, same meaning.
    let text = text.replace("^(?i)(abort|warn)?$", "^([aA][bB][oO][rR][tT]|[wW][aA][rR][nN])?$");
    let crd = yaml_docs(&text).remove(0);
    let version = crd["spec"]["versions"].as_array().unwrap().iter().find(|v| v["name"] == version).unwrap();
    let mut schema = version["schema"]["openAPIV3Schema"].clone();
    strict(&mut schema);
    schema
}

fn assert_valid_crd_object(object: &Value, file: &str) {
    let schema = crd_schema(&format!("cli/tests/data/{file}"), "v1");
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(object).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{file}: {errors:#?}\n{object:#}");
    let mut broken = object.clone();
    broken["spec"]["unknownField"] = json!(1);
    assert!(!validator.is_valid(&broken), "{file}: the schema refuses an unknown field");
}

fn by_kind<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    objects.iter().find(|o| o["kind"] == kind).unwrap_or_else(|| panic!("no {kind} rendered"))
}

#[test]
fn the_manifests_render_and_validate() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, _) = kustomize("deploy/kubernetes");
    let kinds: Vec<&str> = base.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Namespace", "ServiceAccount", "Service", "DaemonSet"], "{kinds:?}");
    assert_eq!(validate(&base, tmp.path()).unwrap(), Vec::<String>::new());

    // kubernetes-validate does refuse a broken object.
    let mut broken = base.clone();
    let ds = broken.iter_mut().find(|o| o["kind"] == "DaemonSet").unwrap();
    ds["spec"]["template"]["spec"]["tolerationz"] = json!([]);
    assert!(validate(&broken, tmp.path()).is_err(), "an unknown field is refused");

    let (monitoring, _) = kustomize("deploy/kubernetes/prometheus-operator");
    let mut unknown = validate(&monitoring, tmp.path()).unwrap();
    unknown.sort();
    assert_eq!(unknown, ["PodMonitor", "PrometheusRule"], "only the operator's kinds lack a Kubernetes schema");
    assert_valid_crd_object(by_kind(&monitoring, "PodMonitor"), "monitoring.coreos.com_podmonitors.yaml");
    assert_valid_crd_object(by_kind(&monitoring, "PrometheusRule"), "monitoring.coreos.com_prometheusrules.yaml");
    for o in &monitoring {
        assert_eq!(o["metadata"]["namespace"].as_str().unwrap_or("xdsck"), "xdsck", "{o}");
    }

    let (webhook, _) = kustomize("deploy/kubernetes/webhook");
    assert_eq!(validate(&webhook, tmp.path()).unwrap(), Vec::<String>::new());
    let config = by_kind(&webhook, "ValidatingWebhookConfiguration");
    for hook in config["webhooks"].as_array().unwrap() {
        assert_eq!(hook["failurePolicy"], "Ignore", "a broken webhook never blocks a CEC");
        assert!(hook["timeoutSeconds"].as_u64().unwrap() <= 5, "{hook}");
        assert_eq!(hook["sideEffects"], "None");
        assert_eq!(hook["rules"][0]["resources"], json!(["ciliumenvoyconfigs", "ciliumclusterwideenvoyconfigs"]));
        assert_eq!(hook["clientConfig"]["service"]["name"], by_kind(&webhook, "Service")["metadata"]["name"]);
    }
    // The Deployment's arguments are ones `xdsck webhook` takes (it stops at the missing
    // certificate, a setup error, not at a usage error).
    let args: Vec<String> = by_kind(&webhook, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let out = run(Command::new(env!("CARGO_BIN_EXE_xdsck")).args(&args));
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tls-cert /tls/tls.crt"), "{}", describe(&out));
}

/// `check --format openreports` on CECs of two namespaces and a config_dump: a `v1` List that
/// `kubectl apply -f` takes, each Report valid against OpenReports' vendored CRD (the one
/// core/tests/data/README.md describes), each in its CEC's namespace.
#[test]
fn openreports_output_is_valid_for_the_cluster() {
    let out = run(Command::new(env!("CARGO_BIN_EXE_xdsck")).current_dir(workspace()).args([
        "check",
        "--format",
        "openreports",
        "testdata/cilium/cec-tenant-gateway.yaml",
        "testdata/checks/duplicate-listener-in-update/bad-cec.yaml",
        "testdata/envoy/config_dump.json",
    ]));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&list["apiVersion"], &list["kind"]), (&json!("v1"), &json!("List")));
    let schema = crd_schema("core/tests/data/openreports.io_reports.yaml", "v1alpha1");
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let items = list["items"].as_array().unwrap();
    for item in items {
        assert_eq!(item["kind"], "Report", "{item}");
        let errors: Vec<String> =
            validator.iter_errors(item).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{errors:#?}\n{item:#}");
    }
    let namespaces: Vec<&str> = items.iter().map(|i| i["metadata"]["namespace"].as_str().unwrap_or("")).collect();
    assert_eq!(namespaces, ["tenant1", "default", ""], "{list:#}");
    // The config_dump's rejected updates are failures of the report with no namespace.
    assert!(items[2]["summary"]["fail"].as_u64().unwrap() >= 2, "{:#}", items[2]);
}

/// What the DaemonSet promises: every node, the sockets read-only, not root, nothing writable.
#[test]
fn the_daemonset_runs_the_agent_as_documented() {
    let (base, _) = kustomize("deploy/kubernetes");
    let ds = by_kind(&base, "DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod["tolerations"], json!([{"operator": "Exists"}]));
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["supplementalGroups"], json!([1337]), "Cilium's proxy group owns the socket");
    assert_eq!(pod["automountServiceAccountToken"], false);
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(
        c["volumeMounts"],
        json!([{"name": "envoy-sockets", "mountPath": "/var/run/cilium/envoy/sockets", "readOnly": true}])
    );
    assert_eq!(pod["volumes"][0]["hostPath"]["path"], "/var/run/cilium/envoy/sockets");
    assert!(c["resources"]["requests"]["cpu"].is_string() && c["resources"]["limits"]["memory"].is_string(), "{c}");
    assert_eq!(c["image"], "xdsck:0.1.0");

    // The container's arguments are ones xdsck takes: run them (on a free port), and the agent
    // starts serving and keeps trying the socket, which does not exist here.
    let args: Vec<String> = c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    let port = c["ports"][0]["containerPort"].as_u64().unwrap();
    assert!(args.contains(&format!("--metrics=0.0.0.0:{port}")), "{args:?}");
    assert!(args.contains(&"unix:///var/run/cilium/envoy/sockets/admin.sock".to_owned()), "{args:?}");
    let args: Vec<String> = args
        .into_iter()
        .map(|a| if a.starts_with("--metrics=") { "--metrics=127.0.0.1:0".into() } else { a })
        .collect();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(agent.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let second = lines.next().unwrap().unwrap();
    let _ = agent.kill();
    let _ = agent.wait();
    assert!(first.starts_with("xdsck: serving metrics on http://127.0.0.1:"), "{first}");
    assert!(second.contains("no such socket: /var/run/cilium/envoy/sockets/admin.sock"), "{second}");
    // Retried with the xDS path's backoff (from 250 ms, jittered), not at the poll interval.
    assert!(second.contains("; retrying in 0."), "{second}");
}

/// The PrometheusRule's rules, through Prometheus' own rule engine.
#[test]
fn the_alerts_fire_on_the_agents_series() {
    let (monitoring, _) = kustomize("deploy/kubernetes/prometheus-operator");
    let rule = by_kind(&monitoring, "PrometheusRule");
    let tmp = tempfile::tempdir().unwrap();
    let rules = tmp.path().join("rules.json");
    std::fs::write(&rules, serde_json::to_vec(&json!({"groups": rule["spec"]["groups"]})).unwrap()).unwrap();
    let out = run(Command::new(promtool()).args(["check", "rules"]).arg(&rules));
    assert!(out.status.success(), "promtool check rules: {}", describe(&out));

    let test = json!({
        "rule_files": [rules],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": "xdsck_predicted_rejection{node=\"n1\",listener=\"dup\",pod=\"a\"}", "values": "1x30"},
                {"series": "xdsck_findings{node=\"n2\",code=\"XDS001\",rule=\"unreadable-input\",severity=\"error\",listener=\"\"}", "values": "2x30"},
                {"series": "xdsck_findings{node=\"n1\",code=\"XDS101\",rule=\"duplicate-filter-chain-match\",severity=\"error\",listener=\"dup\"}", "values": "1x30"},
                // n1 analyses every minute; n3's last analysis was at time 0 and it is up.
                {"series": "xdsck_last_analysis_timestamp_seconds{node=\"n1\"}", "values": "0+60x30"},
                {"series": "xdsck_last_analysis_timestamp_seconds{node=\"n3\"}", "values": "0x30"},
                {"series": "xdsck_source_up{node=\"n1\"}", "values": "1x30"},
                {"series": "xdsck_source_up{node=\"n3\"}", "values": "1x30"},
            ],
            "alert_rule_test": [
                // Not before `for`.
                {"eval_time": "1m", "alertname": "XdsckPredictedRejection", "exp_alerts": []},
                {"eval_time": "5m", "alertname": "XdsckPredictedRejection", "exp_alerts": [{
                    "exp_labels": {"severity": "critical", "node": "n1", "listener": "dup"},
                    "exp_annotations": {
                        "summary": "Envoy on n1 rejects the configuration of listener dup",
                        "description": "The agent's log on that node (JSON lines) has the findings, with Envoy's error text."}}]},
                // Only the error about no listener (the listener one is XdsckPredictedRejection's).
                {"eval_time": "10m", "alertname": "XdsckErrorFindings", "exp_alerts": [{
                    "exp_labels": {"severity": "warning", "node": "n2", "code": "XDS001", "rule": "unreadable-input"},
                    "exp_annotations": {"summary": "2 XDS001 (unreadable-input) findings on n2"}}]},
                {"eval_time": "15m", "alertname": "XdsckStaleAnalysis", "exp_alerts": []},
                {"eval_time": "25m", "alertname": "XdsckStaleAnalysis", "exp_alerts": [{
                    "exp_labels": {"severity": "warning", "node": "n3"},
                    "exp_annotations": {"summary": "The xdsck agent on n3 has not analysed its Envoy's config for 10 minutes"}}]},
            ],
        }],
    });
    let test_file = tmp.path().join("test.json");
    std::fs::write(&test_file, serde_json::to_vec_pretty(&test).unwrap()).unwrap();
    let out = run(Command::new(promtool()).args(["test", "rules"]).arg(&test_file));
    assert!(out.status.success(), "promtool test rules: {}", describe(&out));
    // The test does test: a wrong expectation fails.
    let mut wrong = test.clone();
    wrong["tests"][0]["alert_rule_test"][1]["exp_alerts"][0]["exp_labels"]["listener"] = json!("edge");
    std::fs::write(&test_file, serde_json::to_vec_pretty(&wrong).unwrap()).unwrap();
    let out = run(Command::new(promtool()).args(["test", "rules"]).arg(&test_file));
    assert!(!out.status.success(), "promtool test rules accepted a wrong expectation");
}
