//! Reading the inputs. A file that cannot be read, or whose bytes are not UTF-8, becomes a
//! finding on that input (and exit status 2) rather than stopping the run: the other inputs are
//! still checked and everything is reported in the chosen format.

use std::io::Read;
use std::path::Path;

use xdsck_core::load::codes;
use xdsck_core::{Diagnostic, Location, SourceFile, Sources};

/// The display name of standard input.
pub const STDIN: &str = "<stdin>";

/// Every input as a source, and the failures found while reading them. No more than
/// `max_bytes + 1` bytes are read from any input: one over the limit is an `XDS009` finding, and
/// a 50 GB stream on stdin does not fill memory on the way there.
pub fn read_all(paths: &[impl AsRef<Path>], max_bytes: usize) -> (Sources, Vec<Diagnostic>) {
    let mut sources = Sources::new();
    let mut failed = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let (name, bytes) = if path == Path::new("-") {
            (STDIN.to_owned(), read_at_most(std::io::stdin().lock(), max_bytes, None))
        } else {
            (
                path.display().to_string(),
                std::fs::File::open(path).and_then(|f| {
                    let size = f.metadata().ok().map(|m| m.len());
                    read_at_most(f, max_bytes, size)
                }),
            )
        };
        match bytes {
            Ok(bytes) if bytes.len() > max_bytes => {
                let id = sources.add(SourceFile::new(name, String::new()));
                let e = xdsck_core::load::size_limit_error(bytes.len(), max_bytes, true, Location::new(id, "", None));
                failed.push(e.to_diagnostic());
            }
            Ok(bytes) => add_bytes(&mut sources, &mut failed, name, bytes),
            Err(e) => {
                let id = sources.add(SourceFile::new(name.clone(), String::new()));
                failed.push(
                    Diagnostic::new(&codes::UNREADABLE, format!("cannot read {name}: {e}"))
                        .at(Location::new(id, "", None)),
                );
            }
        }
    }
    (sources, failed)
}

/// Reads up to `max + 1` bytes: enough to tell that an input is over the limit. A file's size
/// sizes the buffer once, so a large file is not regrown (and copied) while it is read.
fn read_at_most(reader: impl Read, max: usize, size: Option<u64>) -> std::io::Result<Vec<u8>> {
    let expected = size.and_then(|n| usize::try_from(n).ok()).map_or(0, |n| n.min(max).saturating_add(1));
    let mut buf = Vec::with_capacity(expected);
    reader.take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1)).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Adds one input read as bytes (a file, stdin, a config_dump fetched from an admin API); bytes
/// that are not UTF-8 become an `XDS003` finding on it.
pub fn add_bytes(sources: &mut Sources, failed: &mut Vec<Diagnostic>, name: String, bytes: Vec<u8>) {
    let (file, bad_byte) = SourceFile::from_bytes(name.clone(), bytes);
    let id = sources.add(file);
    if let Some(offset) = bad_byte {
        let at = sources.get(id).line_column(offset);
        failed.push(
            Diagnostic::new(
                &codes::INVALID_UTF8,
                format!("{name} is not UTF-8: invalid byte at line {}, column {}", at.line, at.column),
            )
            .at(Location::new(id, "", Some(offset))),
        );
    }
}
