//! End-to-end: the built `xdsck` binary, its exit codes, its stdin, each output format, colour.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn xdsck() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xdsck"));
    // Run from the workspace root so fixture paths read as they do in the docs.
    cmd.current_dir(workspace()).env_remove("NO_COLOR");
    cmd
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn run(args: &[&str]) -> Output {
    xdsck().args(args).output().unwrap()
}

fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child =
        xdsck().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

fn codes(report: &Value) -> Vec<&str> {
    report["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect()
}

/// A small file in a temp dir that lives as long as the returned guard.
fn temp_file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

const CLEAN: &str = "testdata/listeners/listeners.json";
/// A real Envoy dump with two rejected updates (XDS110, errors).
const REJECTED: &str = "testdata/envoy/config_dump.json";

// ---- exit codes (these need the loader and the checks) ----

#[test]
fn clean_input_exits_0() {
    let out = run(&[CLEAN]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).ends_with("no findings\n"), "{}", stdout(&out));
}

#[test]
fn findings_exit_1_and_fail_on_sets_the_bar() {
    assert_eq!(code(&run(&["check", REJECTED])), 1);
    assert_eq!(code(&run(&[REJECTED, "--fail-on", "error"])), 1);
    assert_eq!(code(&run(&[REJECTED, "--fail-on", "never"])), 0);
}

#[test]
fn check_subcommand_and_bare_paths_agree() {
    assert_eq!(run(&["check", "--format", "json", REJECTED]).stdout, run(&["--format", "json", REJECTED]).stdout);
}

#[test]
fn stdin_is_read_for_dash() {
    let bytes = std::fs::read(workspace().join(CLEAN)).unwrap();
    let out = run_stdin(&["--format", "json", "-"], &bytes);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let report = json(&out);
    assert_eq!(report["inputs"][0]["source"], "<stdin>");
    assert_eq!(report["inputs"][0]["kind"], "listeners");
}

#[test]
fn an_unloadable_input_exits_2_and_the_others_are_still_checked() {
    let out = run(&["--format", "json", "testdata/malformed/json-syntax.json", CLEAN]);
    assert_eq!(code(&out), 2);
    let report = json(&out);
    assert_eq!(codes(&report), ["XDS004"]);
    assert_eq!(report["inputs"][1]["listeners"], 2);
}

// ---- reading failures (no loader involved) ----

#[test]
fn a_missing_file_is_xds001_and_exits_2() {
    let out = run(&["--format", "json", "no/such/file.json"]);
    assert_eq!(code(&out), 2);
    let report = json(&out);
    assert_eq!(codes(&report), ["XDS001"]);
    assert_eq!(
        report["inputs"][0],
        serde_json::json!({
            "source": "no/such/file.json", "kind": null, "listeners": 0, "filter_chains": 0,
            "default_filter_chains": 0, "inline_route_tables": 0, "warming": 0, "draining": 0, "failed": 0, "route_tables": 0, "clusters": 0, "other_resources": 0,
            "skipped_documents": 0
        })
    );
    assert_eq!(report["findings"][0]["location"]["line"], Value::Null);
    assert!(out.stderr.is_empty(), "findings go to stdout only");
}

#[test]
fn invalid_utf8_is_xds003_at_the_first_bad_byte() {
    // Line 3, after "  " and the two-byte 'é': the bad byte is the 4th character.
    let (_dir, path) = temp_file("latin1.yaml", b"a: 1\nb: 2\n  \xc3\xa9\xe9t\xe9\n");
    let out = run(&["--format", "json", path.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    let report = json(&out);
    assert_eq!(codes(&report), ["XDS003"]);
    let loc = &report["findings"][0]["location"];
    assert_eq!((loc["line"].as_u64(), loc["column"].as_u64()), (Some(3), Some(4)));

    let text = stdout(&run(&[path.to_str().unwrap()]));
    assert!(text.contains("error[XDS003]"), "{text}");
    assert!(text.contains("latin1.yaml:3:4"), "{text}");
}

#[test]
fn invalid_utf8_on_stdin() {
    let out = run_stdin(&["--format", "github", "-"], b"{\"x\":\xff}\n");
    assert_eq!(code(&out), 2);
    assert_eq!(
        stdout(&out),
        "::error file=<stdin>,line=1,col=6,title=XDS003 invalid-utf8::<stdin> is not UTF-8: invalid byte at line 1, column 6\n"
    );
}

/// Every file of testdata/malformed/ exits 2 with exactly one finding, located to a line.
#[test]
fn each_malformed_input_exits_2_with_one_located_finding() {
    let dir = workspace().join("testdata/malformed");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !matches!(path.extension().and_then(|e| e.to_str()), Some("json" | "yaml" | "yml")) {
            continue;
        }
        let out = run(&["--format", "json", path.to_str().unwrap()]);
        assert_eq!(code(&out), 2, "{}: {}", path.display(), stdout(&out));
        let report = json(&out);
        let findings = report["findings"].as_array().unwrap();
        assert_eq!(findings.len(), 1, "{}: {}", path.display(), stdout(&out));
        assert!(findings[0]["location"]["line"].is_u64(), "{}: {}", path.display(), stdout(&out));
        assert!(out.stderr.is_empty(), "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
        checked += 1;
    }
    assert!(checked >= 15, "{checked}");
}

#[test]
fn an_input_over_max_bytes_is_xds009_naming_the_limit() {
    let bytes = std::fs::read(workspace().join("testdata/listeners/listener.json")).unwrap();
    let (_dir, path) = temp_file("big.json", &bytes);
    let limit = (bytes.len() - 1).to_string();
    for out in [
        run(&["--format", "json", "--max-bytes", &limit, path.to_str().unwrap()]),
        run_stdin(&["--format", "json", "--max-bytes", &limit, "-"], &bytes),
    ] {
        assert_eq!(code(&out), 2, "{}", stdout(&out));
        let report = json(&out);
        assert_eq!(codes(&report), ["XDS009"]);
        let message = report["findings"][0]["message"].as_str().unwrap();
        assert_eq!(message, format!("the input is more than {limit} bytes, over the size limit of {limit} bytes"));
    }
    // At the limit exactly, it loads.
    let at_limit = bytes.len().to_string();
    assert_ne!(code(&run(&["--max-bytes", &at_limit, path.to_str().unwrap()])), 2);
}

// ---- formats ----

/// The keys of the pretty-printed objects at one indentation, in output order (`Value` would
/// sort them, and key order is part of the contract).
fn keys_at(text: &str, indent: usize, from: usize) -> Vec<String> {
    let prefix = format!("{}\"", " ".repeat(indent));
    let mut keys = Vec::new();
    for line in text.lines().skip(from) {
        if line.len() - line.trim_start().len() < indent {
            break;
        }
        if let Some(rest) = line.strip_prefix(&prefix) {
            keys.push(rest.split('"').next().unwrap().to_owned());
        }
    }
    keys
}

#[test]
fn json_has_the_documented_shape() {
    let out = run(&["--format", "json", REJECTED]);
    let text = stdout(&out);
    assert_eq!(keys_at(&text, 2, 1), ["version", "inputs", "findings", "summary"]);
    let first_finding = text.lines().position(|l| l == "  \"findings\": [").unwrap() + 2;
    assert_eq!(
        keys_at(&text, 6, first_finding),
        [
            "code",
            "rule",
            "severity",
            "message",
            "envoy_error",
            "listener",
            "filter_chains",
            "location",
            "related",
            "example",
            "notes"
        ]
    );
    let location = text.lines().position(|l| l == "      \"location\": {").unwrap() + 1;
    assert_eq!(keys_at(&text, 8, location), ["source", "pointer", "line", "column"]);

    let report = json(&out);
    assert_eq!(report["version"], 1);
    // Two rejected updates at least; other checks may find more in the same dump.
    assert!(report["summary"]["error"].as_u64().unwrap() >= 2, "{}", report["summary"]);
    assert_eq!(report["findings"][0]["location"]["source"], REJECTED);
    assert!(report["findings"][0]["location"]["line"].as_u64().unwrap() > 1);
}

#[test]
fn sarif_is_valid_against_the_official_schema() {
    let out = run(&["--format", "sarif", REJECTED, "no/such/file.json"]);
    assert_eq!(code(&out), 2);
    let log = json(&out);
    let text = std::fs::read_to_string(workspace().join("core/tests/data/sarif-schema-2.1.0.json")).unwrap();
    // The official schema's `language` pattern has a stray `]` the Rust regex engines refuse;
    // escaping it keeps its meaning (see core/tests/data/README.md).
    let text = text.replace(r#"-[a-zA-Z]{2}]?$""#, r#"-[a-zA-Z]{2}\\]?$""#);
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&log).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let findings =
        json(&run(&["--format", "json", REJECTED, "no/such/file.json"]))["findings"].as_array().unwrap().len();
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), findings);
    assert!(results.iter().any(|r| r["ruleId"] == "XDS001"));
    assert!(results.iter().any(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == REJECTED));
}

#[test]
fn github_prints_one_command_per_finding() {
    let out = stdout(&run(&["--format", "github", REJECTED]));
    let findings = json(&run(&["--format", "json", REJECTED]))["findings"].as_array().unwrap().len();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), findings, "{out}");
    assert!(lines.iter().all(|l| ["::error ", "::warning ", "::notice "].iter().any(|c| l.starts_with(c))), "{out}");
    assert!(lines.iter().any(|l| l.starts_with(&format!("::error file={REJECTED},line="))), "{out}");
}

// ---- colour ----

#[test]
fn no_colour_when_not_a_terminal_and_colour_when_forced() {
    let (_dir, path) = temp_file("bad.json", b"\xff");
    let path = path.to_str().unwrap();
    assert!(!stdout(&run(&[path])).contains('\x1b'));
    assert!(stdout(&run(&["--color", "always", path])).contains("\x1b["));
    assert!(!stdout(&run(&["--color", "never", path])).contains('\x1b'));
}

/// `auto` on a real terminal: coloured, unless NO_COLOR is set and not empty. `script` gives
/// the binary a pseudo-terminal; without it (not Linux util-linux) the test has nothing to run.
#[test]
fn no_color_is_respected_on_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let (_dir, path) = temp_file("bad.json", b"\xff");
    let on_tty = |no_color: Option<&str>| {
        let mut cmd = Command::new("script");
        cmd.args(["-qec", &format!("{} {}", env!("CARGO_BIN_EXE_xdsck"), path.display()), "/dev/null"]);
        cmd.env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        String::from_utf8(cmd.stdin(Stdio::null()).output().unwrap().stdout).unwrap()
    };
    let plain = on_tty(Some("1"));
    assert!(plain.contains("XDS003") && !plain.contains('\x1b'), "{plain:?}");
    let coloured = on_tty(None);
    assert!(coloured.contains("\x1b["), "{coloured:?}");
    // NO_COLOR="" means not set.
    assert!(on_tty(Some("")).contains("\x1b["));
}

// ---- rules and explain ----

#[test]
fn rules_lists_every_rule() {
    let out = run(&["rules"]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    assert!(text.starts_with("CODE "), "{text}");
    assert!(text.lines().any(|l| l.starts_with("XDS003") && l.contains("invalid-utf8") && l.contains("error")));

    let rules = json(&run(&["rules", "--format", "json"]));
    let list = rules["rules"].as_array().unwrap();
    assert_eq!(list.len(), text.lines().count() - 1);
    assert!(list.iter().any(|r| r["code"] == "XDS001" && r["name"] == "unreadable-input"));
    // Input problems are marked as such (the page groups findings by it).
    assert!(list.iter().all(|r| r["input_problem"] == r["code"].as_str().unwrap().starts_with("XDS0")));
}

#[test]
fn explain_prints_the_explanation() {
    let out = run(&["explain", "XDS003"]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    assert!(text.starts_with("# XDS003 invalid-utf8\n"), "{text}");
    for heading in ["## What it finds", "## Why it matters", "## Example", "## Fix"] {
        assert!(text.contains(heading), "{heading} in {text}");
    }
    assert_eq!(stdout(&run(&["explain", "invalid-utf8"])), text);
}

#[test]
fn explain_an_unknown_rule_exits_2_with_close_matches() {
    let out = run(&["explain", "XDS03"]);
    assert_eq!(code(&out), 2);
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("unknown rule `XDS03`") && err.contains("XDS003"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(code(&run(&[])), 2);
    assert_eq!(code(&run(&["--format", "yaml", CLEAN])), 2);
    assert_eq!(code(&run(&["check"])), 2);
    assert_eq!(code(&run(&["--help"])), 0);
}

/// The findings of a report as (rule, source, pointer), sorted.
fn places(report: &Value) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let at = |k: &str| f["location"][k].as_str().unwrap_or_default().to_owned();
            (f["rule"].as_str().unwrap().to_owned(), at("source"), at("pointer"))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn unrelated_inputs_lend_each_other_no_clusters_unless_they_are_one_envoy() {
    // A CDS answer of one Envoy, an RDS answer of another whose table validates its clusters.
    let cds = r#"{"version_info": "1", "type_url": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        "resources": [{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "api", "type": "EDS",
        "eds_cluster_config": {"eds_config": {"ads": {}}}}]}"#;
    let rds = r#"{"version_info": "1", "type_url": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
        "resources": [{"@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", "name": "edge",
        "validate_clusters": true, "virtual_hosts": [{"name": "billing", "domains": ["billing.example.com"],
        "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "billing"}}]}]}]}"#;
    let (_c, c) = temp_file("cds.json", cds.as_bytes());
    let (_r, r) = temp_file("rds.json", rds.as_bytes());
    let (c, r) = (c.to_str().unwrap(), r.to_str().unwrap());
    let report = |args: &[&str]| json(&run(&[&["--format", "json", "--fail-on", "never"][..], args].concat()));
    let mut union = places(&report(&[c]));
    union.extend(places(&report(&[r])));
    union.sort();
    let together = report(&[c, r]);
    // Apart, neither has a finding: a CDS answer is clusters (no `no-listeners` info) and the
    // table's clusters are not checked without them. Together, the same.
    assert!(union.iter().all(|(_, source, _)| !source.is_empty()), "{union:?}");
    assert_eq!(places(&together), union);
    assert!(!codes(&together).contains(&"XDS117"), "{together}");
    // Said to be one Envoy's, the table is checked against the CDS answer's clusters.
    let one = report(&["--one-envoy", c, r]);
    assert!(codes(&one).contains(&"XDS117"), "{one}");
}

#[test]
fn a_glob_over_the_repositorys_manifests_passes_with_an_info_per_object() {
    let mut files = Vec::new();
    let mut dirs = vec![workspace().join("deploy/kubernetes")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml") {
                files.push(p.to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    assert!(files.len() > 5, "{files:?}");
    let args: Vec<&str> = ["--format", "json"].into_iter().chain(files.iter().map(String::as_str)).collect();
    let out = run(&args);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let report = json(&out);
    // Kustomizations among them: their `resources` are file names, not xDS resources.
    assert!(files.iter().any(|f| f.ends_with("kustomization.yaml")));
    assert!(codes(&report).iter().all(|c| *c == "XDS302"), "{report}");
    assert!(codes(&report).len() >= files.len(), "{report}");
}

#[test]
fn attach_to_a_file_or_a_bare_host_port_says_what_to_give_instead() {
    let out = run(&["attach", "README.md"]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("README.md is a file, not a socket: `xdsck check README.md` reads a file"), "{err}");
    let out = run(&["attach", "127.0.0.1:9901"]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("http://127.0.0.1:9901") && err.contains("grpc://127.0.0.1:9901"), "{err}");
}

#[test]
fn a_directory_is_walked_for_its_configuration_past_what_it_excludes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let put = |p: &str, text: &str| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    put("xdsck.toml", "exclude = [\"fixtures/**\"]\n");
    let duplicate =
        std::fs::read_to_string(workspace().join("testdata/checks/duplicate-filter-chain-match/bad-same-sni.yaml"))
            .unwrap();
    put("envoy/edge.yaml", &duplicate);
    put("envoy/notes.txt", "not read: not .json or .yaml");
    put("k8s/service.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n");
    put("package.json", "{\"name\": \"page\", \"version\": \"1.0.0\"}");
    put(".hidden/bad.json", "{\"configs\": 5}");
    put("fixtures/bad.json", "{\"configs\": 5}");
    let out = xdsck().current_dir(root).args(["--format", "json", "."]).output().unwrap();
    let report = json(&out);
    let sources: Vec<&str> =
        report["inputs"].as_array().unwrap().iter().map(|i| i["source"].as_str().unwrap()).collect();
    assert_eq!(sources, ["envoy/edge.yaml", "k8s/service.yaml", "package.json"], "{report}");
    // The listener's error fails the run; the Service and the package.json are infos.
    assert_eq!(code(&out), 1, "{report}");
    let codes = codes(&report);
    assert!(codes.contains(&"XDS101"), "{report}");
    assert_eq!(codes.iter().filter(|c| **c == "XDS302").count(), 2, "{report}");
    // Named on the command line, a file that is not Envoy configuration is still refused.
    let out = xdsck().current_dir(root).args(["--format", "json", "package.json"]).output().unwrap();
    assert_eq!(code(&out), 2);
}

#[test]
fn this_repository_walked_whole_passes() {
    let out = run(&["--format", "json", "."]);
    let report = json(&out);
    assert_eq!(code(&out), 0, "{report}");
    assert!(codes(&report).iter().all(|c| *c == "XDS302"), "{report}");
    assert!(report["inputs"].as_array().unwrap().len() > 10, "{report}");
}

#[test]
fn concise_is_one_line_per_finding_and_output_writes_a_file() {
    let out = run(&["--format", "concise", REJECTED]);
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    let json_out = run(&["--format", "json", REJECTED]);
    let findings = json(&json_out)["findings"].as_array().unwrap().len();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("xdsck: note:")).collect();
    assert_eq!(lines.len(), findings, "{text}");
    assert!(
        lines.contains(&"testdata/envoy/config_dump.json:1307:6: XDS110 [error] Envoy rejected the last update of listener 'gateway/cilium-gateway-tenant1/listener-9443'"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.sarif");
    let out = run(&["--format", "sarif", "--output", file.to_str().unwrap(), REJECTED]);
    assert_eq!(code(&out), 1, "the exit status is the report's");
    assert!(out.stdout.is_empty());
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
}

#[test]
fn options_before_a_subcommand_get_a_hint() {
    let out = run(&["--format", "json", "check", CLEAN]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`check` is a subcommand, read here as a file: options go after the subcommand"), "{err}");
}

#[test]
fn a_walk_follows_links_and_names_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("data")).unwrap();
    std::fs::copy(workspace().join(CLEAN), root.join("data/listeners.json")).unwrap();
    // As a Kubernetes volume lays out a ConfigMap: the file is a link into the data directory.
    std::os::unix::fs::symlink("data/listeners.json", root.join("listeners.json")).unwrap();
    std::os::unix::fs::symlink("data/gone.json", root.join("gone.json")).unwrap();
    let out = xdsck().current_dir(root).args(["--format", "json", "--no-config", "."]).output().unwrap();
    let report = json(&out);
    let sources: Vec<&str> =
        report["inputs"].as_array().unwrap().iter().map(|i| i["source"].as_str().unwrap()).collect();
    assert!(sources.contains(&"listeners.json") && sources.contains(&"data/listeners.json"), "{report}");
    // The broken link is not passed over in silence: it cannot be read, exit 2.
    assert_eq!(code(&out), 2, "{report}");
    assert!(codes(&report).contains(&"XDS001"), "{report}");
    assert!(report.to_string().contains("gone.json"), "{report}");
}
