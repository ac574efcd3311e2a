//! The command line as a new user meets it: a mistyped subcommand, shell completions, the man
//! page, `--version`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xdsck")).current_dir(dir).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn a_mistyped_subcommand_gets_did_you_mean_not_a_file_error() {
    for (typed, meant) in [("rule", "rules"), ("trce", "trace"), ("explian", "explain"), ("completion", "completions")]
    {
        let out = run_in(&workspace(), &[typed]);
        assert_eq!(out.status.code(), Some(2), "{typed}");
        let err = text(&out.stderr);
        assert!(err.contains(&format!("unrecognized subcommand '{typed}'")), "{err}");
        assert!(err.contains(&format!("a similar subcommand exists: '{meant}'")), "{err}");
        assert!(out.stdout.is_empty());
    }
    // Nothing like a subcommand, or a real file of that name: an input, as before.
    let out = run_in(&workspace(), &["no-such-dump"]);
    assert!(text(&out.stdout).contains("error[XDS001]"), "{}", text(&out.stdout));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(workspace().join("testdata/listeners/listeners.json"), dir.path().join("rule")).unwrap();
    let out = run_in(dir.path(), &["rule"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).starts_with("rule: "), "{}", text(&out.stdout));
}

#[test]
fn completions_are_generated_from_the_clap_definition() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run_in(&workspace(), &["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        for word in ["attach", "explain", "--select", "--write-baseline"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    // The bash script is valid bash.
    let script = run_in(&workspace(), &["completions", "bash"]).stdout;
    let mut bash = Command::new("bash").arg("-n").stdin(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut bash.stdin.take().unwrap(), &script).unwrap();
    assert!(bash.wait().unwrap().success());
}

#[test]
fn the_man_page_is_roff_with_every_subcommand() {
    let out = run_in(&workspace(), &["manpage"]);
    assert_eq!(out.status.code(), Some(0));
    let page = text(&out.stdout);
    assert!(page.contains(".TH xdsck 1"), "{page}");
    for word in ["check", "attach", "trace", "completions", "Exit status"] {
        assert!(page.contains(word), "the man page lacks {word}");
    }
}

/// `xdsck manpage DIR` writes every page the main page names.
#[test]
fn the_man_pages_of_the_subcommands_are_written_into_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(&workspace(), &["manpage", &dir.path().display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let main = std::fs::read_to_string(dir.path().join("xdsck.1")).unwrap();
    for sub in ["check", "rules", "explain", "trace", "graph", "attach", "webhook", "gateway", "completions", "manpage"]
    {
        let page = dir.path().join(format!("xdsck-{sub}.1"));
        let body = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert!(body.contains(&format!(".TH xdsck-{sub} 1")), "{body}");
        assert!(main.contains(&format!("xdsck\\-{sub}(1)")), "xdsck.1 does not name xdsck-{sub}(1)");
    }
    assert!(!dir.path().join("xdsck-help.1").exists());
}

#[test]
fn version_names_the_envoy_release_the_rules_follow() {
    let out = run_in(&workspace(), &["--version"]);
    assert_eq!(out.status.code(), Some(0));
    let version = text(&out.stdout);
    assert_eq!(
        version,
        format!("xdsck {} (rules follow Envoy {})\n", env!("CARGO_PKG_VERSION"), xdsck_core::ENVOY_VERSION)
    );
}
