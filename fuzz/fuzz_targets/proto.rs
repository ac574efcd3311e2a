//! Protobuf DiscoveryResponse bytes (what `xdsck attach grpc://…` decodes) into the model, then
//! every check.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xdsck_core::load::proto::load_discovery_response;
use xdsck_core::{SourceFile, SourceId, Sources, analyze_inputs};

fuzz_target!(|data: &[u8]| {
    let mut sources = Sources::new();
    let id: SourceId = sources.add(SourceFile::new("fuzz", String::new()));
    let (input, problems) = load_discovery_response(id, data);
    let _ = analyze_inputs(&sources, vec![input], problems);
});
