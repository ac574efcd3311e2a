//! Any text through the whole pipeline as `xdsck check` runs it: detection, the JSON and YAML
//! loaders (config_dump, bootstrap, listeners, DiscoveryResponse, CEC), every check, every
//! renderer. Seeds: testdata/ (see README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;
use xdsck_core::report::{Format, RenderOptions, render};
use xdsck_core::{Options, SourceFile, Sources, analyze};

fuzz_target!(|data: &[u8]| {
    let (file, _) = SourceFile::from_bytes("fuzz", data.to_vec());
    let mut sources = Sources::new();
    sources.add(file);
    let report = analyze(&sources, &Options::default());
    for format in [Format::Text, Format::Json, Format::Sarif, Format::Github] {
        let _ = render(format, &report, &sources, RenderOptions::default());
    }
});
