//! Helpers of `envoy_probe.rs`: a seeded listener generator, a real Envoy, and a prober that
//! asks that Envoy which chain a connection reaches.

pub mod client;
pub mod envoy;
pub mod generate;
