//! The web page's module must not drag the gRPC client in: xdsck-core builds for
//! wasm32-unknown-unknown without tonic, tokio, hyper or envoy-types (docs/architecture.md). This
//! asks cargo what the wasm crate compiles for that target and fails on any of them. `prost`
//! and `prost-types` are allowed: the schema's descriptors are decoded with `prost-reflect`,
//! which the page needs as much as the CLI.

#![cfg(not(target_arch = "wasm32"))]

use std::process::Command;

const FORBIDDEN: &[&str] = &["tonic", "tokio", "hyper", "hyper-util", "h2", "envoy-types", "mio", "xdsck-xds-client"];

#[test]
fn the_wasm_crate_builds_without_tonic_tokio_or_envoy_types() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["tree", "--locked", "-p", "xdsck-wasm", "--target", "wasm32-unknown-unknown", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout).expect("UTF-8");
    let crates: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(crates.contains(&"xdsck-core"), "cargo tree lists xdsck-core:\n{tree}");
    let found: Vec<&str> = crates.iter().copied().filter(|c| FORBIDDEN.contains(c)).collect();
    assert!(found.is_empty(), "the wasm crate compiles {found:?} for wasm32:\n{tree}");
}
