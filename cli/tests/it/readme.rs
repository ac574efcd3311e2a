//! The README's sample outputs are what xdsck prints: every fenced block after a
//! `<!-- readme-test: xdsck ARGS (exit N) -->` line is compared with the output of running
//! `xdsck ARGS` from the repository root, and the exit status with N.

use crate::support;

use std::process::Command;

use support::{text, workspace};

/// `(args, exit status, expected output)` of every marked sample.
fn samples(readme: &str) -> Vec<(Vec<String>, i32, String)> {
    let mut out = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(spec) = line.strip_prefix("<!-- readme-test: xdsck ").and_then(|l| l.strip_suffix(" -->")) else {
            continue;
        };
        let (args, exit) = spec.rsplit_once(" (exit ").expect("`(exit N)` after the arguments");
        let exit: i32 = exit.trim_end_matches(')').parse().expect("a numeric exit status");
        let fence = lines.next().expect("a fenced block after the marker");
        assert!(fence.starts_with("```"), "a fenced block must follow the marker, found {fence:?}");
        let mut block = String::new();
        for l in lines.by_ref() {
            if l == "```" {
                break;
            }
            block.push_str(l);
            block.push('\n');
        }
        out.push((args.split_whitespace().map(str::to_owned).collect(), exit, block));
    }
    out
}

#[test]
fn readme_samples_are_what_xdsck_prints() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let samples = samples(&readme);
    assert!(samples.len() >= 2, "the README lost its checked samples");
    let mut wrong = Vec::new();
    for (args, exit, want) in samples {
        let out = Command::new(env!("CARGO_BIN_EXE_xdsck"))
            .args(&args)
            .current_dir(workspace())
            .env("NO_COLOR", "1")
            .output()
            .expect("xdsck runs");
        let got = text(&out.stdout);
        if got != want || out.status.code() != Some(exit) {
            wrong.push(format!(
                "xdsck {} (exit {:?}, README says {exit}):\n--- README ---\n{want}--- actual ---\n{got}",
                args.join(" "),
                out.status.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "README samples out of date:\n{}", wrong.join("\n"));
}
