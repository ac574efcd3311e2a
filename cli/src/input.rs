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
                    read_file(f, max_bytes, size)
                }),
            )
        };
        match bytes {
            Ok(bytes) if bytes.len() > max_bytes => {
                let id = sources.add(SourceFile::new(name, String::new()));
                let e = xdsck_core::load::size_limit_error(bytes.len(), max_bytes, true, Location::new(id, "", None));
                failed.push(e.to_diagnostic());
            }
            Ok(bytes) => xdsck_core::add_bytes(&mut sources, &mut failed, name, bytes, walked),
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

/// Files at least this large are read on every core.
#[cfg(any(unix, test))]
const PARALLEL_READ_BYTES: usize = 8 << 20;

/// [`read_at_most`] of a file; a large one is read in one piece per core, each into its part of
/// one buffer. Reading 200 MB on one core is mostly faulting in the buffer's fresh pages, which
/// the cores can do at once: a tenth of a 100k-tenant run's wall time was this read, on one core.
#[cfg(unix)]
fn read_file(f: std::fs::File, max: usize, size: Option<u64>) -> std::io::Result<Vec<u8>> {
    let Some(len) = size.and_then(|n| usize::try_from(n).ok()).filter(|&n| (PARALLEL_READ_BYTES..=max).contains(&n))
    else {
        return read_at_most(f, max, size);
    };
    match read_in_pieces(&f, len) {
        Ok(mut bytes) => {
            // The file may have grown since its size was read: the rest is read as any input's,
            // up to the limit and one byte past it.
            let rest = (max - len) as u64 + 1;
            std::io::Seek::seek(&mut &f, std::io::SeekFrom::Start(len as u64))?;
            (&f).take(rest).read_to_end(&mut bytes)?;
            Ok(bytes)
        }
        // It shrank: read again from its start, as a stream.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            std::io::Seek::seek(&mut &f, std::io::SeekFrom::Start(0))?;
            read_at_most(f, max, None)
        }
        Err(e) => Err(e),
    }
}

/// The first `len` bytes of `f`, read in as many pieces as there are cores at once.
#[cfg(unix)]
fn read_in_pieces(f: &std::fs::File, len: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get).min(8);
    let piece = len.div_ceil(cores);
    // Zeroed by the allocator as fresh pages, not written here: each reader faults in its own.
    let mut bytes = vec![0u8; len];
    std::thread::scope(|s| {
        let readers = bytes
            .chunks_mut(piece)
            .enumerate()
            .map(|(i, part)| {
                std::thread::Builder::new().spawn_scoped(s, move || f.read_exact_at(part, (i * piece) as u64))
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        readers.into_iter().try_for_each(|r| r.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })?;
    Ok(bytes)
}

/// [`read_at_most`] of a file, as a stream.
#[cfg(not(unix))]
fn read_file(f: std::fs::File, max: usize, size: Option<u64>) -> std::io::Result<Vec<u8>> {
    read_at_most(f, max, size)
}

/// Reads up to `max + 1` bytes: enough to tell that an input is over the limit. A file's size
/// sizes the buffer once, so a large file is not regrown (and copied) while it is read.
fn read_at_most(reader: impl Read, max: usize, size: Option<u64>) -> std::io::Result<Vec<u8>> {
    let expected = size.and_then(|n| usize::try_from(n).ok()).map_or(0, |n| n.min(max).saturating_add(1));
    let mut buf = Vec::with_capacity(expected);
    reader.take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1)).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file large enough to be read in pieces, whose every byte says where it is.
    fn large_file() -> (tempfile::NamedTempFile, Vec<u8>) {
        let bytes: Vec<u8> = (0..PARALLEL_READ_BYTES + 12_345).map(|i| b'a' + (i % 26) as u8).collect();
        let mut f = tempfile::NamedTempFile::new().expect("a temporary file");
        std::io::Write::write_all(&mut f, &bytes).expect("written");
        (f, bytes)
    }

    #[test]
    fn a_large_file_read_in_pieces_is_the_file() {
        let (f, bytes) = large_file();
        let read = read_file(f.reopen().unwrap(), usize::MAX, Some(bytes.len() as u64)).unwrap();
        assert!(read == bytes, "the pieces are the file, in order");
    }

    #[test]
    fn a_file_that_grew_or_shrank_after_its_size_was_read_is_read_whole() {
        let (f, bytes) = large_file();
        // Told smaller than it is (it grew): the rest is read after the pieces.
        let read = read_file(f.reopen().unwrap(), usize::MAX, Some(PARALLEL_READ_BYTES as u64)).unwrap();
        assert!(read == bytes);
        // Told larger than it is (it shrank): read again as a stream.
        let read = read_file(f.reopen().unwrap(), usize::MAX, Some(bytes.len() as u64 + 100)).unwrap();
        assert!(read == bytes);
        // Over the limit by growing: one byte past the limit tells the caller so.
        let max = PARALLEL_READ_BYTES + 10;
        let read = read_file(f.reopen().unwrap(), max, Some(PARALLEL_READ_BYTES as u64)).unwrap();
        assert_eq!(read.len(), max + 1);
        assert!(read[..] == bytes[..=max]);
    }
}
