//! The floor for "how fast can this file be read at all": one serde_json pass into
//! `IgnoredAny`, which validates the JSON and keeps nothing. xdsck's end-to-end time is compared
//! with this on the same file (`scripts/compare-envoy.sh`).

use anyhow::{Context, Result};
use serde::Deserialize;

fn main() -> Result<()> {
    let path = std::env::args().nth(1).context("usage: xdsck-floor FILE.json")?;
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let mut de = serde_json::Deserializer::from_str(&text);
    serde::de::IgnoredAny::deserialize(&mut de).with_context(|| format!("parsing {path}"))?;
    de.end()?;
    Ok(())
}
