//! Reading the inputs. A file that cannot be read, or whose bytes are not UTF-8, becomes a
//! finding on that input (and exit status 2) rather than stopping the run: the other inputs are
//! still checked and everything is reported in the chosen format.

use std::io::Read;
use std::path::{Path, PathBuf};

use xdsck_core::load::rules;
use xdsck_core::{Diagnostic, Location, SourceFile, Sources};

/// The display name of standard input.
pub const STDIN: &str = "<stdin>";

/// The extensions of the files a directory walk reads.
const WALKED: [&str; 3] = ["json", "yaml", "yml"];

/// The files a run reads, each with whether a directory walk found it: a path named is read as
/// it is; a directory is walked past hidden files and what `.gitignore` leaves out (as ripgrep
/// does) and past what `excluded` says (`exclude` in `xdsck.toml`), following links, for its
/// `.json`, `.yaml` and `.yml` files, in name order. A directory with none of them is named
/// itself, so that reading it says so. With `found` (`--found`), a file named is read as a
/// walk's: the paths were found by something else (pre-commit, a glob), not chosen one by one.
pub fn expand(paths: &[PathBuf], excluded: &dyn Fn(&str) -> bool, found: bool) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    for path in paths {
        if path == Path::new("-") || !path.is_dir() {
            let walked = found && path != Path::new("-");
            // An excluded file is passed by as the walk passes it: the user's own choice.
            if walked && path.ancestors().any(|a| !a.as_os_str().is_empty() && excluded(&a.display().to_string())) {
                continue;
            }
            out.push((path.clone(), walked));
            continue;
        }
        let before = out.len();
        // Symbolic links are followed: a Kubernetes volume's files are links into `..data/`.
        let walk = ignore::WalkBuilder::new(path)
            .require_git(false)
            .follow_links(true)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        // A file is passed by when it or a directory it is in is excluded.
        let excluded_at =
            |p: &Path| p.ancestors().take_while(|a| *a != path).any(|a| excluded(&a.display().to_string()));
        for entry in walk {
            let entry = match entry {
                Ok(entry) => entry,
                // What the walk cannot read (a directory without permission, a broken link) is
                // named to the read below, which says why: nothing is left out without a word.
                Err(e) => {
                    out.push((error_path(&e).unwrap_or_else(|| path.clone()), false));
                    continue;
                }
            };
            let p = entry.path();
            if entry.file_type().is_some_and(|t| t.is_file())
                && p.extension().and_then(|x| x.to_str()).is_some_and(|x| WALKED.contains(&x))
                && !excluded_at(p)
            {
                out.push((p.strip_prefix("./").unwrap_or(p).to_path_buf(), true));
            }
        }
        if out.len() == before {
            out.push((path.clone(), false));
        }
    }
    out
}

/// The path a walk error is about, when it says.
fn error_path(e: &ignore::Error) -> Option<PathBuf> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => error_path(err),
        ignore::Error::Loop { child, .. } => Some(child.clone()),
        _ => None,
    }
}

/// Every input as a source, and the failures found while reading them. No more than
/// `max_bytes + 1` bytes are read from any input: one over the limit is an `XDS009` finding, and
/// a 50 GB stream on stdin does not fill memory on the way there.
pub fn read_sources(paths: &[impl AsRef<Path>], max_bytes: usize) -> (Sources, Vec<Diagnostic>) {
    let named: Vec<(PathBuf, bool)> = paths.iter().map(|p| (p.as_ref().to_path_buf(), false)).collect();
    read_expanded(&named, max_bytes)
}

/// [`read_sources`] of what [`expand`] found: a walked file's source is marked so.
pub fn read_expanded(paths: &[(PathBuf, bool)], max_bytes: usize) -> (Sources, Vec<Diagnostic>) {
    let mut sources = Sources::new();
    let mut failed = Vec::new();
    for (path, walked) in paths {
        let (path, walked) = (path.as_path(), *walked);
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
            Ok(bytes) => add_bytes(&mut sources, &mut failed, name, bytes, walked),
            Err(e) => {
                let id = sources.add(SourceFile::new(name.clone(), String::new()));
                failed.push(
                    Diagnostic::new(&rules::UNREADABLE, format!("cannot read {name}: {e}"))
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
pub fn add_bytes(sources: &mut Sources, failed: &mut Vec<Diagnostic>, name: String, bytes: Vec<u8>, walked: bool) {
    let (file, bad_byte) = SourceFile::from_bytes(name.clone(), bytes);
    let id = sources.add(if walked { file.found_by_walk() } else { file });
    if let Some(offset) = bad_byte {
        let at = sources.get(id).line_column(offset);
        failed.push(
            Diagnostic::new(
                &rules::INVALID_UTF8,
                format!("{name} is not UTF-8: invalid byte at line {}, column {}", at.line, at.column),
            )
            .at(Location::new(id, "", Some(offset))),
        );
    }
}
