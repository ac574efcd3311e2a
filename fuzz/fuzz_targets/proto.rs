//! Protobuf DiscoveryResponse bytes (what `xdsck attach grpc://…` decodes) transcoded to JSON,
//! then every check.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xdsck_core::load::proto::add_discovery_response;
use xdsck_core::{Options, Sources, analyze_except};

fuzz_target!(|data: &[u8]| {
    let mut sources = Sources::new();
    let failed = match add_discovery_response(&mut sources, "fuzz", data) {
        Ok(_) => Vec::new(),
        Err(e) => vec![e.to_diagnostic()],
    };
    let _ = analyze_except(&sources, &Options::default(), failed);
});
