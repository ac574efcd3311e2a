//! Prints what xdsck loads from each file given: kind, listeners (state, name, pointer, chains).
//! `cargo run -p xdsck-core --example inventory -- FILE...`
#![allow(clippy::print_stdout)]

use xdsck_core::{SourceFile, Sources, load};

fn main() {
    let mut sources = Sources::new();
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).expect("readable UTF-8 file");
        sources.add(SourceFile::new(path, text));
    }
    for (id, file) in sources.iter() {
        match load::load(id, file) {
            Ok(input) => {
                println!("{}: {} {:?}", file.name(), input.kind.as_str(), input.inventory());
                for l in &input.listeners {
                    let at = l.offset.map(|o| file.line_column(file.original_offset(o)));
                    println!(
                        "  {} {:?} {} chains={} at={:?} ptr={}",
                        l.state.as_str(),
                        l.name,
                        l.envoy_address_list(),
                        l.filter_chains.len(),
                        at.map(|p| (p.line, p.column)),
                        l.pointer
                    );
                }
                for e in &input.error_states {
                    println!("  error_state {:?} active={} {}", e.listener_name, e.has_active_state, e.details);
                }
                for s in &input.skipped_documents {
                    println!("  skipped {s}");
                }
            }
            Err(e) => {
                let at = e.location.offset.map(|o| file.line_column(o));
                println!(
                    "{}: ERROR {} at {:?} ptr={:?}",
                    file.name(),
                    e,
                    at.map(|p| (p.line, p.column)),
                    e.location.pointer
                );
            }
        }
    }
}
