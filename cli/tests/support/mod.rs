//! What the tests against a real Envoy share: finding and running Envoy (`envoy`), a seeded
//! listener generator (`generate`) and a client that asks a live Envoy which chain a connection
//! reaches (`client`). Each test crate uses the parts it needs.
#![allow(dead_code)]

pub mod client;
pub mod envoy;
pub mod generate;
pub mod proto_build;
pub mod xds_server;
