//! xdsck-core: read Envoy listener configuration, build Envoy's own filter-chain match index,
//! and find the chains that collide, shadow each other or can never be reached.
//!
//! No I/O and no printing happen here: text in, a [`report::Report`] out.
//!
//! ```
//! use xdsck_core::{Options, SourceFile, Sources, analyze};
//!
//! // Two chains claim api.example.com: Envoy rejects the listener.
//! let yaml = r#"
//! name: edge
//! address: {socket_address: {address: 127.0.0.1, port_value: 443}}
//! listener_filters:
//! - name: envoy.filters.listener.tls_inspector
//!   typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}
//! filter_chains:
//! - name: a
//!   filter_chain_match: {server_names: [api.example.com, www.example.com]}
//! - name: b
//!   filter_chain_match: {server_names: [API.example.com]}
//! "#;
//! let mut sources = Sources::new();
//! sources.add(SourceFile::new("edge.yaml", yaml));
//! let report = analyze(&sources, &Options::default());
//! let finding = &report.findings[0];
//! assert_eq!(finding.code(), "XDS102");
//! assert_eq!(
//!     finding.envoy_error(),
//!     Some("error adding listener '127.0.0.1:443': multiple filter chains with overlapping matching rules are defined")
//! );
//! ```

// Nothing public is public by accident, and what is public says what it promises where it is
// declared.
#![warn(unreachable_pub, missing_docs)]

pub mod baseline;
pub mod chain_match;
pub mod checks;
pub mod codes;
pub mod diagnostic;
pub mod diff;
pub mod gateway;
mod hashing;
pub mod load;
pub mod model;
mod parallel;
pub mod report;
pub mod routing;
pub mod schema;
pub mod settings;
mod short_list;
pub mod source;
#[cfg(test)]
mod test_support;
pub mod trace;

pub use diagnostic::{Diagnostic, Note, Related, Rule, Severity};
pub use source::{Location, SourceFile, SourceId, Sources};

use load::Limits;
use model::Snapshot;
use report::{InputSummary, Report};

/// The Envoy release whose matching and validation rules the verdicts follow (the conformance
/// tests run this version).
pub const ENVOY_VERSION: &str = "1.40";

/// Options for [`analyze`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// How much input the loaders accept before refusing it (`XDS009`).
    pub limits: Limits,
    /// Which findings to report, at which severity.
    pub settings: settings::Settings,
    /// The inputs are one Envoy's ([`model::Snapshot::one_envoy`]).
    pub one_envoy: bool,
    /// The model is left allocated when the run ends, for a process that exits right after it
    /// (the CLI's `check`): freeing a tenant gateway's millions of allocations piece by piece
    /// would only cost time (some 2% of such a run).
    pub keep_model: bool,
}

/// Loads every source, runs the checks of the rules `options.settings` select (building only
/// what they read), and returns the sorted report. An input that cannot be loaded contributes
/// one `XDS0xx` finding and no listeners; the others are still checked.
pub fn analyze(sources: &Sources, options: &Options) -> Report {
    analyze_except(sources, options, Vec::new())
}

/// Like [`analyze`], for a caller that already knows some sources cannot be loaded (a file that
/// could not be read, bytes that are not UTF-8, see [`SourceFile::from_bytes`]): each of `failed`
/// is reported as the failure of the source its location names, and that source is not loaded.
/// The caller still adds such a source (with whatever text it has) so findings can show it.
pub fn analyze_except(sources: &Sources, options: &Options, failed: Vec<Diagnostic>) -> Report {
    analyze_then(sources, options, failed, |_, report| report)
}

/// Adds one input read as bytes (a file, stdin, a config_dump fetched from an admin API, a file
/// opened in the page); bytes that are not UTF-8 become an `XDS003` finding on it in `failed`,
/// for [`analyze_except`].
pub fn add_bytes(sources: &mut Sources, failed: &mut Vec<Diagnostic>, name: String, bytes: Vec<u8>, walked: bool) {
    let (file, bad_byte) = SourceFile::from_bytes(name.clone(), bytes);
    let id = sources.add(if walked { file.found_by_walk() } else { file });
    if let Some(offset) = bad_byte {
        let at = sources.get(id).line_column(offset);
        failed.push(
            Diagnostic::new(
                &load::rules::INVALID_UTF8,
                format!("{name} is not UTF-8: invalid byte at line {}, column {}", at.line, at.column),
            )
            .at(Location::new(id, "", Some(offset))),
        );
    }
}

/// Like [`analyze_except`], and lends the model the findings were made on to `then` with the
/// report, so that a caller that also needs the model (`xdsck diff`) does not load the inputs
/// a second time. (The model borrows from what was read, so it is lent rather than returned.)
pub fn analyze_then<R>(
    sources: &Sources,
    options: &Options,
    failed: Vec<Diagnostic>,
    then: impl FnOnce(&Snapshot<'_>, Report) -> R,
) -> R {
    let mut failed = failed;
    // A source whose failure the caller already knows is not read: its documents entry is `None`.
    let mut known = Vec::new();
    let documents: Vec<Option<load::Document<'_>>> = sources
        .iter()
        .map(|(id, file)| match failed.iter().position(|d| d.location.as_ref().is_some_and(|l| l.source == id)) {
            Some(i) => {
                known.push(failed.swap_remove(i));
                None
            }
            None => Some(load::Document::with_limits(id, file, &options.limits)),
        })
        .collect();
    let mut known = known.into_iter();
    let mut report = Report::default();
    let mut snapshot = Snapshot { one_envoy: options.one_envoy, ..Snapshot::default() };
    for (document, (id, _)) in documents.iter().zip(sources.iter()) {
        let Some(document) = document else {
            report.inputs.push(InputSummary::failed(id, false));
            report.failed_inputs += 1;
            report.findings.extend(known.next());
            continue;
        };
        match document.load() {
            Ok(input) => {
                let before = snapshot.inputs.len();
                snapshot.push(input);
                report.inputs.extend(snapshot.inputs[before..].iter().map(InputSummary::of));
            }
            // A file a directory walk met that is not Envoy configuration (a package.json, a
            // Helm template): passed by with an info, as ruff passes by files it does not read.
            Err(e) if sources.get(id).walked() && e.is_not_envoy() => {
                report.inputs.push(InputSummary::failed(id, document.is_yaml()));
                report.findings.push(checks::walked_past(&e.to_diagnostic()));
            }
            Err(e) => {
                report.inputs.push(InputSummary::failed(id, document.is_yaml()));
                report.failed_inputs += 1;
                report.findings.push(e.to_diagnostic());
            }
        }
    }
    // A failure naming no loaded source still reaches the output rather than vanishing.
    report.findings.extend(failed);
    check_into(&mut report, &snapshot, sources, &options.settings);
    let out = then(&snapshot, report);
    if options.keep_model {
        std::mem::forget(snapshot);
    } else {
        free(snapshot);
    }
    out
}

/// What `xdsck diff` prints and decides, for the CLI and the page alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffRun {
    /// The answer as text ([`report::diff::text`]); a side that cannot be read: its failures,
    /// as `check` prints them.
    pub text: String,
    /// The answer as JSON ([`report::diff::json`]); empty when a side cannot be read.
    pub json: String,
    /// Some connection or request lands elsewhere, or a listener comes or goes.
    pub moves_traffic: bool,
    /// How many findings the new version adds.
    pub new_findings: usize,
    /// A side could not be read: there is no comparison.
    pub unreadable: bool,
}

/// Compares two versions, each a set of sources read as one Envoy's (`failed`: sources the
/// caller already knows cannot be read, as for [`analyze_except`]). Each side is loaded and
/// checked once; the comparison reads the model its findings were made on. `paths` name the
/// sides in the witnesses' `xdsck trace` commands; witnesses' addresses are inside `prefer`
/// where their class allows.
pub fn diff(
    (old, old_failed): (&Sources, Vec<Diagnostic>),
    (new, new_failed): (&Sources, Vec<Diagnostic>),
    (old_paths, new_paths): (&str, &str),
    prefer: &[ipnet::IpNet],
) -> DiffRun {
    let options = Options { one_envoy: true, ..Options::default() };
    analyze_then(old, &options, old_failed, |old_snapshot, old_report| {
        analyze_then(new, &options, new_failed, |new_snapshot, new_report| {
            for (report, sources) in [(&old_report, old), (&new_report, new)] {
                if report.failed_inputs > 0 {
                    let text = report::render(report::Format::Text, report, sources, report::RenderOptions::default());
                    return DiffRun {
                        text,
                        json: String::new(),
                        moves_traffic: false,
                        new_findings: 0,
                        unreadable: true,
                    };
                }
            }
            let d = diff::diff(
                &diff::Version { snapshot: old_snapshot, sources: old, findings: &old_report.findings },
                &diff::Version { snapshot: new_snapshot, sources: new, findings: &new_report.findings },
                prefer,
            );
            let old_side = report::diff::Side { report: &old_report, sources: old, paths: old_paths };
            let new_side = report::diff::Side { report: &new_report, sources: new, paths: new_paths };
            DiffRun {
                text: report::diff::text(&d, old_side, new_side),
                json: report::diff::json(&d, old_side, new_side),
                moves_traffic: d.moves_traffic(),
                new_findings: d.new_findings.len(),
                unreadable: false,
            }
        })
    })
}

/// Drops the model, a tenant listener's chains on every core: freed on one core, the 40k
/// chains of 10k tenants were a one-core phase of a few percent of a run.
fn free(snapshot: Snapshot<'_>) {
    let mut chains = Vec::new();
    let mut inputs = snapshot.inputs;
    while let Some(mut input) = inputs.pop() {
        for listener in &mut input.listeners {
            chains.push(std::mem::take(&mut listener.filter_chains));
        }
        inputs.append(&mut input.proxies);
    }
    parallel::drop_all(chains);
}

/// Names on each finding the proxy of a peer's map it is in: the proxy whose part of the file
/// its place is in.
fn name_proxies(report: &mut Report, snapshot: &Snapshot<'_>) {
    // By the proxies' places, each finding looked up by the pointers that hold its own: a map of
    // a thousand pods costs no more per finding than a map of one.
    let proxies: hashing::InputMap<(SourceId, &str), &str> = snapshot
        .inputs
        .iter()
        .filter_map(|i| i.proxy.as_ref().and_then(|p| Some(((i.source, p.pointer.as_str()), p.name.as_deref()?))))
        .collect();
    if proxies.is_empty() {
        return;
    }
    for d in &mut report.findings {
        let Some(at) = &d.location else { continue };
        let name = source::pointer_and_ancestors(&at.pointer).find_map(|p| proxies.get(&(at.source, p)));
        if let Some(name) = name {
            d.set_proxy(*name);
        }
    }
}

/// What every run does once its inputs are loaded, whichever front end loaded them: the checks
/// of the selected rules on the snapshot, their findings and notes into `report`, then the
/// settings and annotations applied and the findings sorted.
fn check_into(report: &mut Report, snapshot: &Snapshot<'_>, sources: &Sources, settings: &settings::Settings) {
    // Every finding's location becomes a line and column when the report is rendered: the line
    // index of a 300 MB input (a tenth of a second) is built meanwhile.
    let (found, ()) = parallel::join(
        || checks::run_selected(snapshot, sources, |r| settings.is_selected(r)),
        || {
            for (_, file) in sources.iter() {
                file.line_index();
            }
        },
    );
    checks::append(&mut report.findings, found.findings);
    report.notes.extend(found.notes);
    suppress(report, snapshot, sources, settings);
}

/// Applies the settings and the inputs' `xdsck.io/ignore` annotations, then sorts.
fn suppress(report: &mut Report, snapshot: &Snapshot<'_>, sources: &Sources, settings: &settings::Settings) {
    name_proxies(report, snapshot);
    let (annotations, problems) = settings::Annotations::of(snapshot, sources);
    report.findings.extend(problems);
    settings.apply(report, sources, &annotations);
    report.sort();
}

/// Runs the selected checks on inputs the caller has already loaded (listeners decoded from a
/// live xDS stream, see `load::proto`), with the problems found while loading them as extra
/// findings.
/// Each input's source must be in `sources` (its text may be empty: findings then carry a
/// pointer and no line).
pub fn analyze_inputs(sources: &Sources, inputs: Vec<model::Input<'_>>, problems: Vec<Diagnostic>) -> Report {
    analyze_inputs_with(sources, inputs, problems, &settings::Settings::default())
}

/// [`analyze_inputs`] with [`settings::Settings`].
pub fn analyze_inputs_with(
    sources: &Sources,
    inputs: Vec<model::Input<'_>>,
    problems: Vec<Diagnostic>,
    settings: &settings::Settings,
) -> Report {
    let mut report = Report::default();
    for input in &inputs {
        report.inputs.push(InputSummary::of(input));
    }
    // What one run renders (a Gateway's CiliumEnvoyConfigs) is one Envoy's configuration.
    let snapshot = Snapshot { inputs, one_envoy: true };
    report.findings.extend(problems);
    check_into(&mut report, &snapshot, sources, settings);
    report
}

/// Reads every source into a document (see [`load::Document`]); [`load_all`] then loads them. The documents
/// hold what the inputs borrow, so the caller keeps them beside the snapshot.
pub fn read_documents<'s>(sources: &'s Sources, options: &Options) -> Vec<load::Document<'s>> {
    sources.iter().map(|(id, file)| load::Document::with_limits(id, file, &options.limits)).collect()
}

/// Loads every document; the inputs that fail to load come back as their `XDS0xx` diagnostics.
pub fn load_all<'d>(documents: &'d [load::Document<'_>]) -> (Snapshot<'d>, Vec<Diagnostic>) {
    let mut snapshot = Snapshot::default();
    let mut failed = Vec::new();
    for document in documents {
        match document.load() {
            Ok(input) => snapshot.push(input),
            Err(e) => failed.push(e.to_diagnostic()),
        }
    }
    (snapshot, failed)
}

/// Every rule xdsck knows, in code order ([`codes::ALL`]).
pub fn rules() -> impl Iterator<Item = &'static Rule> {
    codes::ALL.iter().map(|c| c.rule)
}

/// A rule by code (`XDS101`, any case) or name (`duplicate-filter-chain-match`).
pub fn rule(code_or_name: &str) -> Option<&'static Rule> {
    rules().find(|r| r.code.eq_ignore_ascii_case(code_or_name) || r.name == code_or_name)
}
