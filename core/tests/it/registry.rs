//! The rule registry holds together: codes and names are unique, `xdsck rules` lists them in code
//! order, every check has its fixtures, and every explanation has the four sections `xdsck
//! explain` and SARIF's help rely on.

use std::path::{Path, PathBuf};

use xdsck_core::codes::{self, Group};

/// Checks without an `ok-*` fixture, and why: any input that has a listener is an "ok" input for
/// `no-listeners`, so the other rules' `ok-*` fixtures are its passing cases.
const NO_OK_FIXTURE: &[&str] = &["no-listeners"];

fn fixture_dir(rule: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("core/ has a parent").join("testdata/checks").join(rule)
}

/// How many fixtures of `dir` start with `prefix` (snapshots not counted).
fn count(dir: &Path, prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .map(|e| e.expect("readable entry").file_name().into_string().expect("UTF-8 file name"))
        .filter(|n| n.starts_with(prefix) && !n.ends_with(".snap"))
        .count()
}

#[test]
fn codes_and_names_are_unique_and_listed_in_code_order() {
    let rules: Vec<_> = xdsck_core::rules().collect();
    assert!(!rules.is_empty() && codes::checks().next().is_some(), "the registry lists rules");
    let codes: Vec<&str> = rules.iter().map(|r| r.code).collect();
    let mut sorted = codes.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(codes, sorted, "rule codes must be unique and in code order");
    let mut names: Vec<&str> = rules.iter().map(|r| r.name).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "rule names must be unique");
    // A check's row carries the rule the check reports under.
    for row in codes::ALL {
        if let Some(check) = row.check {
            assert_eq!(check.rule(), row.rule, "{}: the row's rule is not its check's", row.rule.code);
        }
    }
    // The group says what the code family says: XDS0 input, XDS4 gateway, a check for the rest.
    for row in codes::ALL {
        let family = &row.rule.code[..4];
        match row.group {
            Group::Input => assert!(family == "XDS0" && row.check.is_none(), "{}", row.rule.code),
            Group::Gateway => assert!(family == "XDS4" && row.check.is_none(), "{}", row.rule.code),
            _ => assert!(!matches!(family, "XDS0" | "XDS4") && row.check.is_some(), "{}", row.rule.code),
        }
    }
}

#[test]
fn every_check_has_fixtures() {
    let mut problems = Vec::new();
    for check in codes::checks() {
        let name = check.rule().name;
        let dir = fixture_dir(name);
        if count(&dir, "bad-") == 0 {
            problems.push(format!("{name}: no bad-* fixture in {}", dir.display()));
        }
        let ok = count(&dir, "ok-");
        match (NO_OK_FIXTURE.contains(&name), ok) {
            (false, 0) => problems.push(format!("{name}: no ok-* fixture in {}", dir.display())),
            (true, n) if n > 0 => problems.push(format!("{name}: has ok-* fixtures; drop it from NO_OK_FIXTURE")),
            _ => {}
        }
    }
    for name in NO_OK_FIXTURE {
        assert!(codes::checks().any(|c| c.rule().name == *name), "NO_OK_FIXTURE names `{name}`, not a check");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_explanation_has_the_four_sections_in_order() {
    const HEADINGS: [&str; 4] = ["## What it finds\n", "## Why it matters\n", "## Example\n", "## Fix\n"];
    let mut problems = Vec::new();
    for rule in xdsck_core::rules() {
        let at: Vec<Option<usize>> = HEADINGS.iter().map(|h| rule.explanation().find(h)).collect();
        let missing: Vec<&str> = HEADINGS.iter().zip(&at).filter(|(_, a)| a.is_none()).map(|(h, _)| h.trim()).collect();
        if !missing.is_empty() {
            problems.push(format!("{} {}: missing {missing:?}", rule.code, rule.name));
        } else if !at.is_sorted() {
            problems.push(format!("{} {}: sections out of order", rule.code, rule.name));
        }
        if !rule.explanation().starts_with(HEADINGS[0]) || !rule.explanation().ends_with('\n') {
            problems
                .push(format!("{} {}: must start with its first heading and end with a newline", rule.code, rule.name));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
