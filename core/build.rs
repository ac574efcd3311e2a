//! Deflates the schema files (`core/schema/`) for the wasm32 build: the web page downloads its
//! .wasm, and the 600 KB descriptor set deflates to a fifth. Native builds embed the files as
//! they are (nothing to inflate on each run).

use std::path::PathBuf;

const FILES: [&str; 3] = ["envoy.binpb", "extensions.tsv", "categories.tsv"];

fn main() {
    for name in FILES {
        println!("cargo::rerun-if-changed=schema/{name}");
    }
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("wasm32") {
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for name in FILES {
        let raw = std::fs::read(format!("schema/{name}")).expect("core/schema/ is readable");
        let deflated = miniz_oxide::deflate::compress_to_vec(&raw, 10);
        std::fs::write(out.join(format!("{name}.deflate")), deflated).expect("OUT_DIR is writable");
    }
}
