//! Keeping xdsck in CI: rule selection (`--select`, `--ignore`, `--extend-select`,
//! `--severity`), `--statistics`, `--quiet`, the `xdsck.toml` config file found upward, the
//! `xdsck.io/ignore` annotation of a CiliumEnvoyConfig, and baselines — each through the built
//! binary, with every suppression counted in the summary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Runs xdsck in `dir`.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xdsck")).current_dir(dir).args(args).env_remove("NO_COLOR").output().unwrap()
}

/// Runs xdsck at the workspace root, with no config file.
fn run(args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.push("--no-config");
    run_in(&workspace(), &all)
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(out), stderr(out)))
}

fn codes(report: &Value) -> Vec<String> {
    report["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect()
}

/// A real Envoy dump: two XDS110 (errors), two XDS301 (infos), one of them on
/// `gateway/cilium-gateway-tenant1/listener`.
const DUMP: &str = "testdata/envoy/config_dump.json";
const CEC: &str = "testdata/cilium/cec-tenant-gateway.yaml";

/// A rule's old name still selects: `malformed-cidr` was split into invalid-cidr (XDS104, the
/// ranges Envoy rejects) and misleading-cidr (XDS206, those it accepts), and names both, on the
/// command line and in `xdsck.toml`; `xdsck explain` says where the name went.
#[test]
fn an_old_rule_name_selects_the_rules_that_carry_it() {
    let both = "testdata/checks/invalid-cidr/bad-not-an-ip.yaml";
    let widening = "testdata/checks/misleading-cidr/bad-accepted-widening.yaml";
    let report = json(&run(&["check", "--format", "json", both, widening]));
    let all = codes(&report);
    assert!(all.contains(&"XDS104".to_owned()) && all.contains(&"XDS206".to_owned()), "{all:?}");

    let out = run(&["check", "--format", "json", "--select", "malformed-cidr", both, widening]);
    let selected = codes(&json(&out));
    assert!(!selected.is_empty() && selected.iter().all(|c| c == "XDS104" || c == "XDS206"), "{selected:?}");
    assert_eq!(selected.len(), all.iter().filter(|c| *c == "XDS104" || *c == "XDS206").count());

    let dir = project("[rules]\nignore = [\"malformed-cidr\"]\n");
    std::fs::copy(workspace().join(widening), dir.path().join("w.yaml")).unwrap();
    let out = run_in(dir.path(), &["check", "--format", "json", "w.yaml"]);
    let left = codes(&json(&out));
    assert!(!left.iter().any(|c| c == "XDS206"), "{left:?}");
    // A rule not selected is not run: nothing of it is found, so nothing of it is counted.
    assert_eq!(json(&out)["summary"]["suppressed"], 0);

    let out = run_in(&workspace(), &["explain", "malformed-cidr"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("# XDS104 invalid-cidr") && stdout(&out).contains("# XDS206 misleading-cidr"));
}

#[test]
fn ignored_rules_by_code_prefix_or_name_are_not_run() {
    let out = run(&["check", "--ignore", "XDS301", DUMP, "--format", "json"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(codes(&report), ["XDS110", "XDS110"]);
    // Ignored rules are not run (as in ruff): their findings are not looked for, not hidden.
    assert_eq!(report["summary"]["suppressed"], 0);

    let out = run(&[DUMP, "--ignore", "XDS1,wildcard-overlap"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).ends_with("no findings\n"), "{}", stdout(&out));

    let out = run(&[DUMP, "--ignore", "xds3", "--format", "json"]);
    assert_eq!(codes(&json(&out)), ["XDS110", "XDS110"]);
}

#[test]
fn select_replaces_the_default_and_extend_select_adds() {
    let report = json(&run(&[DUMP, "--select", "XDS3", "--format", "json"]));
    assert_eq!(codes(&report), ["XDS301", "XDS301"]);
    let report = json(&run(&[DUMP, "--select", "XDS3", "--extend-select", "rejected-update", "--format", "json"]));
    assert_eq!(codes(&report).len(), 4);
    // The more specific selector wins: XDS1 selected, XDS110 itself ignored.
    let report = json(&run(&[DUMP, "--select", "XDS1", "--ignore", "XDS110", "--format", "json"]));
    assert!(codes(&report).is_empty());
}

#[test]
fn severity_overrides_change_the_finding_and_the_exit_status() {
    let out = run(&[DUMP, "--severity", "XDS110=warning", "--fail-on", "error", "--format", "json"]);
    assert_eq!(code(&out), 0);
    let report = json(&out);
    assert_eq!(report["summary"]["error"], 0);
    assert_eq!(report["summary"]["warning"], 2);
    let out = run(&[DUMP, "--severity", "XDS3=warning", "--fail-on", "warning", "--ignore", "XDS110"]);
    assert_eq!(code(&out), 1);
    assert!(stdout(&out).contains("warning[XDS301]"), "{}", stdout(&out));
}

#[test]
fn unknown_rules_and_input_problems_are_usage_errors() {
    let out = run(&[DUMP, "--ignore", "wildcard-overlp"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("did you mean XDS301 (wildcard-overlap)?"), "{}", stderr(&out));
    let out = run(&[DUMP, "--ignore", "XDS001"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("always reported"), "{}", stderr(&out));
    let out = run(&[DUMP, "--severity", "XDS301=loud"]);
    assert_eq!(code(&out), 2);
    // A run that selects only infos still reports an input it could not read.
    let out = run(&["missing.json", "--select", "XDS3", "--format", "json"]);
    assert_eq!(code(&out), 2);
    assert_eq!(codes(&json(&out)), ["XDS001"]);
}

#[test]
fn statistics_count_per_rule_in_text_and_json() {
    let out = run(&[DUMP, "--statistics"]);
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    assert!(
        text.starts_with("2  XDS110  error    rejected-update\n2  XDS301  info     wildcard-overlap\n\n"),
        "{text}"
    );
    assert!(text.ends_with("2 errors, 0 warnings, 2 infos\n"), "{text}");
    let report = json(&run(&[DUMP, "--statistics", "--format", "json", "--ignore", "XDS110"]));
    assert_eq!(
        report["statistics"],
        serde_json::json!([{"code": "XDS301", "rule": "wildcard-overlap", "severity": "info", "count": 2}])
    );
    assert!(report.get("findings").is_none());
    assert_eq!(code(&run(&[DUMP, "--statistics", "--format", "sarif"])), 2);
}

#[test]
fn quiet_prints_the_findings_only() {
    let loud = stdout(&run(&[DUMP]));
    let quiet = stdout(&run(&[DUMP, "-q"]));
    assert!(loud.starts_with(&quiet) && loud.len() > quiet.len());
    assert!(!quiet.contains("2 errors"), "{quiet}");
    assert!(quiet.contains("error[XDS110]"), "{quiet}");
}

/// A temp directory holding `xdsck.toml` and the dump in `deploy/`.
fn project(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("xdsck.toml"), config).unwrap();
    std::fs::create_dir(dir.path().join("deploy")).unwrap();
    std::fs::copy(workspace().join(DUMP), dir.path().join("deploy/dump.json")).unwrap();
    dir
}

#[test]
fn the_config_file_is_found_upward_and_flags_override_it() {
    let dir = project("[rules]\nignore = [\"XDS110\"]\nseverity = { XDS301 = \"warning\" }\n");
    let deploy = dir.path().join("deploy");
    let out = run_in(&deploy, &["dump.json", "--format", "json"]);
    assert_eq!(code(&out), 1);
    let report = json(&out);
    assert_eq!(codes(&report), ["XDS301", "XDS301"]);
    assert_eq!(report["summary"]["warning"], 2);
    // --select replaces the file's selection; --no-config reads no file.
    let report = json(&run_in(&deploy, &["dump.json", "--format", "json", "--select", "XDS110"]));
    assert_eq!(codes(&report), ["XDS110", "XDS110"]);
    let report = json(&run_in(&deploy, &["dump.json", "--format", "json", "--no-config"]));
    assert_eq!(report["summary"]["info"], 2);
    assert_eq!(report["summary"]["suppressed"], 0);
}

#[test]
fn scoped_ignores_by_listener_and_path_globs() {
    let dir = project(
        "[[ignore]]\nrule = \"XDS301\"\nlistener = \"gateway/*\"\nreason = \"tenants share the wildcard\"\n\n\
         [[ignore]]\nrule = [\"rejected-update\"]\npath = \"deploy/*.json\"\n",
    );
    let out = run_in(&dir.path().join("deploy"), &["dump.json", "--format", "json"]);
    let report = json(&out);
    assert_eq!(codes(&report), ["XDS301"]);
    assert_eq!(report["findings"][0]["listener"], "gateway-https");
    assert_eq!(report["summary"]["suppressed_by"]["ignore"], 3);
    // Paths are relative to the config file, wherever xdsck runs below it.
    let report = json(&run_in(dir.path(), &["deploy/dump.json", "--format", "json"]));
    assert_eq!(report["summary"]["suppressed_by"]["ignore"], 3);
    let text = stdout(&run_in(dir.path(), &["./deploy/dump.json"]));
    assert!(text.ends_with("0 errors, 0 warnings, 1 info (3 suppressed: 3 by [[ignore]])\n"), "{text}");
}

#[test]
fn a_bad_config_file_is_located_and_exits_2() {
    let dir = project("[rules]\nselect = [\"XDS1\", \"XDS2O2\"]\n");
    let out = run_in(dir.path(), &["deploy/dump.json"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("xdsck.toml:2:19: `XDS2O2` is not a rule code"), "{err}");
    let dir = project("[[ignore]]\nrule = \"XDS301\"\nlistener = \"gateway/[\"\n");
    let out = run_in(dir.path(), &["deploy/dump.json"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("xdsck.toml:3:12: `gateway/[` is not a glob"), "{}", stderr(&out));
    let out = run(&[DUMP, "--config", "no/such/xdsck.toml"]);
    assert_eq!(code(&out), 2);
}

/// The tenant-gateway CEC with an `xdsck.io/ignore` annotation.
fn annotated(value: &str) -> (tempfile::TempDir, PathBuf) {
    let text = std::fs::read_to_string(workspace().join(CEC)).unwrap();
    let text = text.replacen("  annotations:\n", &format!("  annotations:\n    xdsck.io/ignore: \"{value}\"\n"), 1);
    assert!(text.contains("xdsck.io/ignore"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cec.yaml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn a_cec_annotation_silences_its_listeners() {
    let report = json(&run(&[CEC, "--format", "json"]));
    assert_eq!(codes(&report), ["XDS301"], "the fixture has one finding to silence");

    let (_dir, path) = annotated("XDS301, XDS202");
    let out = run(&[path.to_str().unwrap(), "--format", "json", "--fail-on", "info"]);
    assert_eq!(code(&out), 0);
    let report = json(&out);
    assert!(codes(&report).is_empty());
    assert_eq!(report["summary"]["suppressed_by"]["annotation"], 1);

    // A misspelt entry is a located warning; the rest of the annotation still applies.
    let (_dir, path) = annotated("XDS2O2,wildcard-overlap");
    let out = run(&[path.to_str().unwrap(), "--format", "json"]);
    let report = json(&out);
    assert_eq!(codes(&report), ["XDS020"]);
    let finding = &report["findings"][0];
    assert_eq!(finding["severity"], "warning");
    assert_eq!(finding["listener"], "tenant1/cilium-gateway-tenant1/listener");
    assert_eq!(finding["location"]["pointer"], "/metadata/annotations/xdsck.io~1ignore");
    assert_eq!(finding["location"]["line"], 9);
    assert_eq!(report["summary"]["suppressed_by"]["annotation"], 1);
}

#[test]
fn a_baseline_fails_only_on_new_findings() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let baseline_arg = baseline.to_str().unwrap();

    // Writing records every finding and passes.
    let out = run(&[DUMP, "--write-baseline", baseline_arg]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).ends_with("no findings (4 suppressed: 4 in the baseline)\n"), "{}", stdout(&out));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    let entries = written["findings"].as_array().unwrap();
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[0]["code"], "XDS110");
    assert_eq!(entries[0]["listener"], "gateway/cilium-gateway-tenant1/listener-9443");
    assert_eq!(entries[0]["fingerprint"].as_str().unwrap().len(), 16);

    let out = run(&[DUMP, "--baseline", baseline_arg, "--format", "json"]);
    assert_eq!(code(&out), 0);
    assert_eq!(json(&out)["summary"]["suppressed_by"]["baseline"], 4);

    // A baseline of the dump accepts nothing of the CEC: its finding is new.
    let out = run(&[DUMP, CEC, "--baseline", baseline_arg, "--format", "json"]);
    assert_eq!(code(&out), 0, "an info does not fail");
    let report = json(&out);
    assert_eq!(codes(&report), ["XDS301"]);
    assert_eq!(report["findings"][0]["listener"], "tenant1/cilium-gateway-tenant1/listener");

    let out = run(&[DUMP, "--baseline", "no/such/baseline.json"]);
    assert_eq!(code(&out), 2);
    std::fs::write(&baseline, "{\"version\": 7, \"findings\": []}").unwrap();
    let out = run(&[DUMP, "--baseline", baseline_arg]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("baseline version 7"), "{}", stderr(&out));
}

#[test]
fn fingerprints_survive_moved_lines_and_match_sarif() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let baseline_arg = baseline.to_str().unwrap();
    assert_eq!(code(&run(&[CEC, "--write-baseline", baseline_arg])), 0);

    // The same listener, twenty lines lower and in another file: still accepted.
    let text = std::fs::read_to_string(workspace().join(CEC)).unwrap();
    let moved = dir.path().join("moved.yaml");
    std::fs::write(&moved, format!("{}{text}", "# padding\n".repeat(20))).unwrap();
    let report = json(&run(&[moved.to_str().unwrap(), "--baseline", baseline_arg, "--format", "json"]));
    assert!(codes(&report).is_empty());
    assert_eq!(report["summary"]["suppressed_by"]["baseline"], 1);

    // SARIF's partialFingerprints are the baseline's fingerprints, line shift or not.
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    let recorded = written["findings"][0]["fingerprint"].clone();
    for input in [CEC, moved.to_str().unwrap()] {
        let sarif = json(&run(&[input, "--format", "sarif"]));
        let result = &sarif["runs"][0]["results"][0];
        assert_eq!(result["partialFingerprints"]["xdsck/v1"], recorded, "{input}");
    }
    let sarif = json(&run(&[moved.to_str().unwrap(), "--format", "sarif"]));
    let line = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"];
    assert_eq!(line, 95, "the finding did move");
}
