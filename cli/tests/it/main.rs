//! xdsck's integration tests, one binary: every test module links the same tokio, tonic and
//! rustls once (twenty binaries each linking them were most of a fresh clone's build). Run one
//! module with `cargo test -p xdsck --test it <module>::`, e.g. `--test it envoy_validate::`.

mod support;

mod attach;
mod ci_glue;
mod cilium_layouts;
mod cli;
mod deploy;
mod diff;
mod envoy_clusters;
mod envoy_fixtures;
mod envoy_h2_coalescing;
mod envoy_matcher;
mod envoy_probe;
mod envoy_routes;
mod envoy_schema;
mod envoy_validate;
mod gateway;
mod metrics;
mod readme;
mod route_trace;
mod selection;
mod trace;
mod usage;
mod watch;
mod webhook;
