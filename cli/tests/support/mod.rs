//! What the tests against a real Envoy share: finding and running Envoy (`envoy`), a seeded
//! listener generator (`generate`) and a client that asks a live Envoy which chain a connection
//! reaches (`client`). Each test crate uses the parts it needs.
#![allow(dead_code)]

pub mod admin_server;
pub mod client;
pub mod envoy;
pub mod generate;
pub mod proto_build;
pub mod xds_server;

use std::path::{Path, PathBuf};
use std::process::Output;

/// The repository root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Process output as text, for messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A failed command's status, stdout and stderr, for an assertion message.
pub fn describe(what: &str, out: &Output) -> String {
    format!("{what}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}", out.status, text(&out.stdout), text(&out.stderr))
}
