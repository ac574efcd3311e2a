//! Deflates the schema files (`core/schema/`) and the rules' explanations (every `.md` under
//! `src/`, by file name and by folder and file name: `diagnostic::explanation!`) for the wasm32 build: the web page downloads
//! its .wasm, and the compiled schema deflates to a fraction. Native builds embed the files
//! as they are (nothing to inflate on each run).

use std::path::PathBuf;

/// What the page reads of `core/schema/`: the schema compiled ahead of time (the descriptors and
/// tables it is compiled from are read by the `compile` feature only, which the page has not).
const FILES: [&str; 1] = ["schema.postcard"];

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
    let explanations = out.join("explanations");
    std::fs::create_dir_all(&explanations).expect("OUT_DIR is writable");
    let mut markdown = Vec::new();
    find_markdown(std::path::Path::new("src"), &mut markdown);
    let mut seen = std::collections::BTreeSet::new();
    for path in markdown {
        println!("cargo::rerun-if-changed={}", path.display());
        let name = path.file_name().expect("a file").to_string_lossy().into_owned();
        // Found by file name alone: two explanations of one name would be one.
        assert!(seen.insert(name.clone()), "two explanations are called {name}");
        let raw = std::fs::read(&path).expect("src/ is readable");
        let deflated = miniz_oxide::deflate::compress_to_vec(&raw, 10);
        std::fs::write(explanations.join(format!("{name}.deflate")), &deflated).expect("OUT_DIR is writable");
        // A rule declared beside a folder of explanations names it with the folder
        // (`rules/unreadable.md`).
        let parent = path.parent().and_then(|p| p.file_name()).expect("under src/");
        std::fs::create_dir_all(explanations.join(parent)).expect("OUT_DIR is writable");
        std::fs::write(explanations.join(parent).join(format!("{name}.deflate")), &deflated)
            .expect("OUT_DIR is writable");
    }
}

fn find_markdown(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    println!("cargo::rerun-if-changed={}", dir.display());
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("src/ is readable").map(|e| e.expect("a directory entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            find_markdown(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}
