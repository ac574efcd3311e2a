//! The CI glue the repository ships, run as a user's CI would run it, on a fixture repository:
//! the pre-commit hook (`.pre-commit-hooks.yaml`) through a real pre-commit
//! (`scripts/install-pre-commit.sh`), and the GitHub Action (`action.yml`) by running its steps
//! as a runner does — each `run:` in bash with the runner's files (`GITHUB_OUTPUT`,
//! `GITHUB_PATH`), its `if:` and `${{ }}` expressions evaluated — up to the upload, whose input
//! must be the SARIF report the check wrote.
//!
//! Both build xdsck from this repository as a user's would: `cargo run` in pre-commit's clone,
//! `cargo install --path` from the action's checkout. Neither may relink the `target/debug/xdsck`
//! the other tests run meanwhile (a probe once found it missing), and neither should build more
//! than it must: the suite's longest tests were these two builds.
//! - The action builds from this checkout with the `release` profile into this test build's
//!   target directory: the same build, features and paths as the instruction-count gate's
//!   (`scripts/instructions.py`), which then finds it done.
//! - pre-commit's `try-repo` clones the repository afresh for every run, and a clone at another
//!   path rebuilds the workspace's own crates: in `release` (one codegen unit, thin LTO) that was
//!   about four minutes a run on two cores. The hook builds with `dev`, its binary in a target
//!   directory of its own (`ci-glue-hook` inside this one) so that nothing the other tests run
//!   is relinked, and what it compiles in this test build's build directory
//!   (`CARGO_BUILD_BUILD_DIR`): the dependencies `cargo test` compiled with the same features
//!   are reused (after a fresh clone's `cargo test` build, 1m09 for the first clone instead of
//!   2m43 with a build directory of its own), then about half a minute a clone.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use support::{describe, text, workspace};

/// The target directory this test was built into (the xdsck binary's profile directory's
/// parent), whatever `CARGO_TARGET_DIR` says.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_xdsck")).parent().and_then(Path::parent).expect("target/<profile>/xdsck").to_owned()
}

/// `cmd` without what `cargo test` sets in this process's environment for the test itself
/// (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`, …), which neither a runner nor a developer's shell
/// has. A build script that watches one of them (ring's watches both) would rebuild its crate
/// and every crate above it, and the instruction-count gate's build after this one would
/// rebuild them once more.
fn as_outside_cargo_test(cmd: &mut Command) -> &mut Command {
    const SET_FOR_TESTS: [&str; 5] = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_BIN_", "CARGO_PRIMARY_"];
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name == "CARGO" || SET_FOR_TESTS.iter().any(|p| name.starts_with(p)) {
            cmd.env_remove(&*name);
        }
    }
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// A listener whose two chains have the same matching rules: Envoy rejects it.
const REJECTED: &str = r#"name: tls
address: {socket_address: {address: 0.0.0.0, port_value: 443}}
listener_filters: [{name: envoy.filters.listener.tls_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}}]
filter_chains:
- name: a
  filter_chain_match: {server_names: [api.example.com]}
  filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: a, cluster: a}}]
- name: b
  filter_chain_match: {server_names: [api.example.com]}
  filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: b, cluster: b}}]
"#;

/// A fixture repository: one listener Envoy rejects (`gateway/tls.yaml`), files that hold no
/// Envoy configuration, and an excluded directory whose listener is wrong on purpose.
fn fixture_repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |path: &str, body: &str| {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    };
    write("gateway/tls.yaml", REJECTED);
    write("legacy/old.yaml", REJECTED);
    write("xdsck.toml", "exclude = [\"legacy/**\"]\n");
    write("package.json", "{\"name\": \"site\", \"version\": \"1.0.0\"}\n");
    write(".github/workflows/ci.yml", "on: [push]\njobs: {}\n");
    let git = |args: &[&str]| {
        let out = run(Command::new("git").args(args).current_dir(root));
        assert!(out.status.success(), "{}", describe("git", &out));
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    dir
}

/// The listener with its second chain matching another name: Envoy accepts it.
fn fix(root: &Path) {
    let fixed = REJECTED.replacen("server_names: [api.example.com]}\n  filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: b",
        "server_names: [www.example.com]}\n  filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: b", 1);
    assert_ne!(fixed, REJECTED);
    std::fs::write(root.join("gateway/tls.yaml"), fixed).unwrap();
    let out = run(Command::new("git").args(["add", "-A"]).current_dir(root));
    assert!(out.status.success(), "{}", describe("git add", &out));
}

fn pre_commit() -> PathBuf {
    let script = workspace().join("scripts/install-pre-commit.sh");
    let out = run(Command::new(&script).current_dir(workspace()));
    assert!(out.status.success(), "{}", describe("scripts/install-pre-commit.sh", &out));
    PathBuf::from(text(&out.stdout).trim())
}

/// `pre-commit try-repo` runs the hook of this repository (its working tree, uncommitted
/// changes of tracked files included) on the fixture repository's files, as
/// `repo: <this repository>` in a `.pre-commit-config.yaml` would.
#[test]
fn pre_commit_hook_refuses_what_envoy_rejects_and_passes_the_rest() {
    let repo = fixture_repository();
    let home = tempfile::tempdir().unwrap();
    let hook = |root: &Path| {
        run(as_outside_cargo_test(&mut Command::new(pre_commit()))
            .args(["try-repo", &workspace().display().to_string(), "xdsck", "--all-files", "--verbose"])
            .current_dir(root)
            .env("PRE_COMMIT_HOME", home.path())
            // `dev`, the binary in a target directory of its own (see the module's comment): a
            // `dev` build into this test build's directory would relink `target/debug/xdsck`.
            // What is compiled goes where this test build's was, to reuse its dependencies.
            .env("CARGO_TARGET_DIR", target_dir().join("ci-glue-hook"))
            .env("CARGO_BUILD_BUILD_DIR", target_dir())
            .env("XDSCK_HOOK_PROFILE", "dev")
            .env("NO_COLOR", "1"))
    };
    let out = hook(repo.path());
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", describe("pre-commit", &out));
    assert!(said.contains("gateway/tls.yaml"), "{said}");
    assert!(said.contains("has the same matching rules defined as"), "{said}");
    // Excluded by xdsck.toml, and the files of no Envoy configuration are infos.
    assert!(!said.contains("legacy/old.yaml"), "{said}");
    assert!(said.contains("package.json"), "{said}");
    assert!(said.contains("info[XDS302]") && !said.contains("error[XDS007]"), "{said}");

    fix(repo.path());
    let out = hook(repo.path());
    assert_eq!(out.status.code(), Some(0), "{}", describe("pre-commit after the fix", &out));
    assert!(text(&out.stdout).contains("0 errors, 0 warnings"), "{}", text(&out.stdout));
}

/// What a step's `${{ }}` expressions can see.
struct Context {
    action_path: String,
    inputs: BTreeMap<String, String>,
    outputs: BTreeMap<String, BTreeMap<String, String>>,
    failed: bool,
    /// Each step's status and output, for the assertions' messages.
    log: String,
}

impl Context {
    /// The value of one expression of the few forms the action uses; any other form fails the
    /// test, so that a change to the action is a change to this runner too.
    fn value(&self, e: &str) -> String {
        let e = e.trim();
        if e == "github.action_path" {
            return self.action_path.clone();
        }
        if let Some(name) = e.strip_prefix("inputs.") {
            return self.inputs.get(name).unwrap_or_else(|| panic!("no input {name}")).clone();
        }
        if let Some(rest) = e.strip_prefix("steps.") {
            let (id, name) = rest.split_once(".outputs.").unwrap_or_else(|| panic!("expression {e}"));
            return self.outputs.get(id).and_then(|o| o.get(name)).cloned().unwrap_or_default();
        }
        panic!("an expression this runner does not evaluate: {e}")
    }

    /// A value with its `${{ }}` replaced.
    fn expand(&self, s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(at) = rest.find("${{") {
            out.push_str(&rest[..at]);
            let end = rest[at..].find("}}").expect("a closed ${{ }}") + at;
            out.push_str(&self.value(&rest[at + 3..end]));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        out
    }

    /// Whether a step with `if: cond` runs (no `if:` is `success()`).
    fn runs(&self, cond: Option<&str>) -> bool {
        let Some(cond) = cond else { return !self.failed };
        let cond = cond.trim().trim_start_matches("${{").trim_end_matches("}}");
        cond.split("&&").all(|term| match term.trim() {
            "!cancelled()" | "always()" => true,
            "success()" => !self.failed,
            "failure()" => self.failed,
            t => {
                let (left, right) =
                    t.split_once("==").unwrap_or_else(|| panic!("a condition this runner does not evaluate: {t}"));
                let right =
                    right.trim().strip_prefix('\'').and_then(|r| r.strip_suffix('\'')).expect("a quoted literal");
                self.value(left) == right
            }
        })
    }
}

/// Runs `action.yml`'s steps in `root` with `inputs` as a runner would; returns the `with:` of
/// the upload step (when it ran) and the context after the last step.
fn run_action(root: &Path, inputs: &[(&str, &str)]) -> (Option<BTreeMap<String, String>>, Context) {
    let yaml = std::fs::read_to_string(workspace().join("action.yml")).unwrap();
    let json = xdsck_core::load::yaml::translate(&yaml, &xdsck_core::load::Limits::default()).unwrap();
    let action: Value = serde_json::from_str(json.json()).unwrap();
    assert_eq!(action["runs"]["using"], "composite");
    let mut cx = Context {
        action_path: workspace().display().to_string(),
        inputs: action["inputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v["default"].as_str().unwrap_or_default().to_owned()))
            .collect(),
        outputs: BTreeMap::new(),
        failed: false,
        log: String::new(),
    };
    for (k, v) in inputs {
        assert!(cx.inputs.contains_key(*k), "the action has no input {k}");
        cx.inputs.insert((*k).to_owned(), (*v).to_owned());
    }
    let runner = tempfile::tempdir().unwrap();
    let path_file = runner.path().join("path");
    std::fs::write(&path_file, "").unwrap();
    let mut upload = None;
    for (i, step) in action["runs"]["steps"].as_array().unwrap().iter().enumerate() {
        if !cx.runs(step["if"].as_str()) {
            continue;
        }
        if let Some(uses) = step["uses"].as_str() {
            assert_eq!(uses, "github/codeql-action/upload-sarif@v3");
            let with = step["with"].as_object().unwrap();
            upload = Some(with.iter().map(|(k, v)| (k.clone(), cx.expand(v.as_str().unwrap()))).collect());
            continue;
        }
        assert_eq!(step["shell"], "bash", "step {i}");
        let output_file = runner.path().join(format!("output-{i}"));
        std::fs::write(&output_file, "").unwrap();
        // Earlier steps' GITHUB_PATH lines come first on PATH, as on a runner.
        let added: Vec<PathBuf> =
            std::fs::read_to_string(&path_file).unwrap().lines().rev().map(PathBuf::from).collect();
        let path =
            std::env::join_paths(added.into_iter().chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())))
                .unwrap();
        let mut cmd = Command::new("bash");
        as_outside_cargo_test(&mut cmd)
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &cx.expand(step["run"].as_str().unwrap())])
            .current_dir(root)
            .env("PATH", path)
            .env("RUNNER_TEMP", runner.path())
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_WORKSPACE", root)
            .env("CARGO_TARGET_DIR", target_dir())
            .env("NO_COLOR", "1");
        for (k, v) in step["env"].as_object().into_iter().flatten() {
            cmd.env(k, cx.expand(v.as_str().unwrap()));
        }
        let out = run(&mut cmd);
        cx.log.push_str(&describe(&format!("step {i} ({})", step["name"]), &out));
        if let Some(id) = step["id"].as_str() {
            let written = std::fs::read_to_string(&output_file).unwrap();
            let outputs = written.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned()));
            cx.outputs.insert(id.to_owned(), outputs.collect());
        }
        cx.failed |= !out.status.success();
    }
    (upload, cx)
}

#[test]
fn github_action_checks_uploads_sarif_and_fails_the_job() {
    let repo = fixture_repository();
    // `release` (see the module's comment): a `dev` install relinks the `target/debug/xdsck`
    // other tests run, and the instruction-count gate builds this same `release` afterwards.
    let (upload, cx) = run_action(repo.path(), &[("profile", "release")]);
    assert!(cx.failed, "the job passed on a listener Envoy rejects:\n{}", cx.log);
    assert_eq!(cx.value("steps.check.outputs.exit-code"), "1", "{}", cx.log);
    assert!(cx.log.contains("::error file=gateway/tls.yaml"), "no annotation in the log:\n{}", cx.log);
    let upload = upload.expect("the upload runs when the check failed");
    assert_eq!(upload["category"], "xdsck");
    let sarif_path = repo.path().join(&upload["sarif_file"]);
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(&sarif_path).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let errors: Vec<&Value> = results.iter().filter(|r| r["level"] == "error").collect();
    assert_eq!(errors.len(), 1, "{results:#?}");
    let uri = &errors[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
    assert_eq!(uri, "gateway/tls.yaml");
    assert!(results.iter().all(|r| !r.to_string().contains("legacy/")), "{results:#?}");

    fix(repo.path());
    let (upload, cx) = run_action(repo.path(), &[("profile", "release"), ("upload", "false")]);
    assert!(!cx.failed, "the job failed on a clean repository:\n{}", cx.log);
    assert_eq!(cx.value("steps.check.outputs.exit-code"), "0", "{}", cx.log);
    assert!(upload.is_none(), "uploaded with upload: false");
}
