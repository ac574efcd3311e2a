//! `xdsck attach`: check a running proxy. The admin path feeds the fetched config_dump through
//! the same loader as `check` (a source named after the address), so its findings are those of
//! `xdsck check` on the same dump; the xDS path loads the Listener protobufs. `--watch` prints
//! the findings that appear and disappear at each update.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use xdsck_core::report::{self, Report};
use xdsck_core::{Location, SourceFile, Sources};
use xdsck_xds_client::observe::View;
use xdsck_xds_client::protocol::Backoff;
use xdsck_xds_client::{AdminTarget, Error, GrpcTarget, Target, TlsOptions, admin, xds};

use crate::args::{AttachArgs, Format, XdsType};
use crate::config::Reporting;
use crate::metrics::{self, Metrics};
use crate::{FAILED, exit_code, print, write_report};

pub fn run(args: &AttachArgs) -> Result<u8> {
    if args.watch
        && matches!(args.report.format, Format::Sarif | Format::Github | Format::Openreports | Format::Concise)
    {
        bail!("--watch prints text, or json with one object per line and update");
    }
    if args.watch && args.report.statistics {
        bail!("--statistics counts one run's findings; leave out --watch");
    }
    if args.watch && args.report.output.is_some() {
        bail!("--watch writes each update to standard output as it comes; leave out --output");
    }
    crate::check_report_args(&args.report)?;
    let reporting = Arc::new(Reporting::from_args(&args.report)?);
    crate::config::check_watch(&reporting, args.watch)?;
    let reporting = &reporting;
    let timeout = seconds(args.timeout, "--timeout")?;
    let mut target: Target = args.address.parse()?;
    let tls_flags =
        args.tls_ca.is_some() || args.tls_cert.is_some() || args.tls_key.is_some() || args.tls_server_name.is_some();
    match &mut target {
        Target::Grpc(GrpcTarget { tls: Some(tls), .. }) => {
            *tls = TlsOptions {
                ca: args.tls_ca.clone(),
                cert: args.tls_cert.clone(),
                key: args.tls_key.clone(),
                server_name: args.tls_server_name.clone(),
            };
        }
        _ if tls_flags => bail!("--tls-ca, --tls-cert, --tls-key and --tls-server-name apply to grpcs:// only"),
        _ => {}
    }
    if args.delta && args.xds_type != XdsType::Ads {
        bail!("--delta speaks the incremental protocol over ADS: add --type ads");
    }
    let options = xds::Options {
        delta: args.delta,
        api: match args.xds_type {
            XdsType::Lds => xds::Api::Lds,
            XdsType::Ads => xds::Api::Ads,
        },
        node_id: args.node_id.clone(),
        timeout,
        max_bytes: args.report.outcome.max_bytes,
        ..xds::Options::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let metrics = match args.metrics {
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("--metrics {addr}: cannot listen there"))?;
                let bound = listener.local_addr()?;
                warn(&format!("serving metrics on http://{bound}/metrics"));
                let m = Arc::new(Metrics::new());
                tokio::spawn(metrics::serve(listener, m.clone()));
                Some(m)
            }
            None => None,
        };
        let spinner = Spinner::start(&args.address);
        let target = match xdsck_xds_client::resolve(target, timeout).await {
            Ok(t) => t,
            Err(e) => {
                spinner.stop();
                return Err(e.into());
            }
        };
        match (target, args.watch) {
            (Target::Admin(a), false) => {
                let r = admin::fetch(&a, timeout, args.report.outcome.max_bytes).await;
                spinner.stop();
                let snapshot = match r {
                    Err(Error::TooLarge { size, at_least, limit, .. }) => {
                        Snapshot::too_large(&args.address, size, at_least, limit, "the config_dump")
                    }
                    r => Snapshot::from_dump(&args.address, r?, args.report.outcome.max_bytes, reporting)?,
                };
                one_shot(args, &snapshot)
            }
            (Target::Grpc(g), false) => {
                let r = xds::fetch_once(&g, &options).await;
                spinner.stop();
                let snapshot = match r {
                    Err(Error::TooLarge { size, at_least, limit, .. }) => {
                        Snapshot::too_large(&args.address, size, at_least, limit, "the DiscoveryResponse (encoded)")
                    }
                    r => {
                        let fetched = r?;
                        for p in &fetched.problems {
                            warn(&format!("{}: {p} (ACKed)", args.address));
                        }
                        Snapshot::from_xds(&args.address, &fetched.view, reporting)?
                    }
                };
                one_shot(args, &snapshot)
            }
            (Target::Admin(a), true) => watch_admin(args, &a, timeout, spinner, metrics, reporting).await,
            (Target::Grpc(g), true) => watch_xds(args, &g, &options, spinner, metrics, reporting).await,
            (Target::Socket(_), _) => unreachable!("resolve() decides what a socket is"),
        }
    })
}

pub(crate) fn seconds(v: f64, flag: &str) -> Result<Duration> {
    if !(v.is_finite() && v > 0.0) {
        bail!("{flag} must be a positive number of seconds");
    }
    Ok(Duration::from_secs_f64(v))
}

/// The set received over xDS as one input named after the address: the list of the responses
/// (listeners, the route tables they name, clusters) as the JSON they transcode to, which is
/// one Envoy's.
fn view_sources(address: &str, view: &View) -> (Sources, Vec<xdsck_core::Diagnostic>) {
    let mut sources = Sources::new();
    let resources: Vec<Vec<_>> = view
        .types()
        .map(|held| {
            (held.resources.iter())
                .map(|r| xdsck_core::load::proto::Resource { type_url: &r.any.type_url, value: &r.any.value })
                .collect()
        })
        .collect();
    let parts: Vec<_> = view
        .types()
        .zip(&resources)
        .map(|(held, resources)| xdsck_core::load::proto::ResponseParts {
            version_info: &held.version,
            type_url: &held.type_url,
            resources,
        })
        .collect();
    let failed = match xdsck_core::load::proto::add_responses(&mut sources, address, &parts) {
        Ok(_) => Vec::new(),
        Err(e) => vec![e.to_diagnostic()],
    };
    (sources, failed)
}

/// One reading of a running proxy as `xdsck diff` takes a side: its admin `/config_dump`, or
/// over xDS (ADS) its listeners, their route tables and the clusters; one source named after
/// the address.
pub(crate) fn read_once(
    address: &str,
    timeout: Duration,
    max_bytes: usize,
) -> Result<(Sources, Vec<xdsck_core::Diagnostic>)> {
    let target: Target = address.parse()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        match xdsck_xds_client::resolve(target, timeout).await? {
            Target::Admin(a) => {
                let bytes = admin::fetch(&a, timeout, max_bytes).await?;
                let (mut sources, mut failed) = (Sources::new(), Vec::new());
                xdsck_core::add_bytes(&mut sources, &mut failed, address.to_owned(), bytes, false);
                Ok((sources, failed))
            }
            Target::Grpc(g) => {
                let options = xds::Options { timeout, max_bytes, ..xds::Options::default() };
                let fetched = xds::fetch_once(&g, &options).await?;
                for p in &fetched.problems {
                    warn(&format!("{address}: {p} (ACKed)"));
                }
                Ok(view_sources(address, &fetched.view))
            }
            Target::Socket(_) => unreachable!("resolve() decides what a socket is"),
        }
    })
}

/// One fetched state, checked.
struct Snapshot {
    sources: Sources,
    report: Report,
    /// The version of the latest xDS response, or `None` (admin: each dump carries its
    /// listeners' own).
    version: Option<String>,
    /// Every resource received or listed, by type and name: its version and, over xDS, a
    /// digest of its bytes (a resource can change without a new version).
    resources: BTreeMap<Key, Stamp>,
    /// How long loading and checking took.
    took: Duration,
    /// The file `--save` writes the input to: what it is.
    save_as: &'static str,
}

impl Snapshot {
    fn from_dump(address: &str, bytes: Vec<u8>, max_bytes: usize, reporting: &Reporting) -> Result<Snapshot> {
        let start = Instant::now();
        let mut sources = Sources::new();
        let mut failed = Vec::new();
        xdsck_core::add_bytes(&mut sources, &mut failed, address.to_owned(), bytes, false);
        let mut report = xdsck_core::analyze_except(&sources, &one_proxy(reporting.options(max_bytes)), failed);
        reporting.finish(&mut report)?;
        let resources = (sources.iter())
            .flat_map(|(_, f)| xdsck_core::load::dump_resources::dump_resources(f.text()))
            .map(|r| ((r.type_name.to_owned(), r.name), (r.version, 0)))
            .collect();
        Ok(Snapshot { sources, report, version: None, resources, took: start.elapsed(), save_as: "config_dump.json" })
    }

    /// An answer over `--max-bytes`: the `XDS009` finding `check` gives an input over the limit.
    fn too_large(address: &str, size: usize, at_least: bool, limit: usize, what: &str) -> Snapshot {
        let mut sources = Sources::new();
        let id = sources.add(SourceFile::new(address, String::new()));
        let error =
            xdsck_core::load::size_limit_error(size, limit, at_least, Location::new(id, "", None)).note(if at_least {
                format!("{what} was not read past the limit")
            } else {
                format!("{what} was refused from its announced length, unread")
            });
        let report = xdsck_core::analyze_except(&sources, &xdsck_core::Options::default(), vec![error.to_diagnostic()]);
        Snapshot {
            sources,
            report,
            version: None,
            resources: BTreeMap::new(),
            took: Duration::ZERO,
            save_as: "config_dump.json",
        }
    }

    /// The set as received: one input named after the address, the list of the responses
    /// (listeners, the route tables they name, clusters) as the JSON they transcode to, which
    /// is one Envoy's; `--save` writes that text.
    fn from_xds(address: &str, view: &View, reporting: &Reporting) -> Result<Snapshot> {
        let start = Instant::now();
        if !view.unanswered.is_empty() {
            warn(&format!(
                "{address}: no answer for route tables {}: checked without them",
                view.unanswered.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
            ));
        }
        let (sources, failed) = view_sources(address, view);
        let mut report = xdsck_core::analyze_except(&sources, &one_proxy(reporting.options(usize::MAX)), failed);
        reporting.finish(&mut report)?;
        let mut resources = BTreeMap::new();
        for held in view.types() {
            let type_name = held.type_url.rsplit('.').next().unwrap_or_default();
            for r in &held.resources {
                let digest = {
                    use std::hash::{Hash, Hasher};
                    let mut h = std::hash::DefaultHasher::new();
                    r.any.value.hash(&mut h);
                    h.finish()
                };
                resources.insert((type_name.to_owned(), r.name.clone()), (r.version.clone(), digest));
            }
        }
        Ok(Snapshot {
            sources,
            report,
            version: Some(view.version()),
            resources,
            took: start.elapsed(),
            save_as: "xds.json",
        })
    }

    /// Writes the input as received into `dir` (through a temporary file and a rename, so a
    /// reader never sees half of it). Nothing when nothing was read (an answer over the limit).
    fn save(&self, dir: &std::path::Path) -> Result<()> {
        let Some((_, file)) = self.sources.iter().next().filter(|(_, f)| !f.text().is_empty()) else {
            warn(&format!("--save: nothing was read to write into {}", dir.display()));
            return Ok(());
        };
        std::fs::create_dir_all(dir).with_context(|| format!("--save: cannot create {}", dir.display()))?;
        let path = dir.join(self.save_as);
        let partial = dir.join(format!(".{}.partial", self.save_as));
        std::fs::write(&partial, file.text()).with_context(|| format!("--save: cannot write {}", partial.display()))?;
        std::fs::rename(&partial, &path).with_context(|| format!("--save: cannot write {}", path.display()))?;
        Ok(())
    }

    fn listeners(&self) -> usize {
        self.report.inputs.iter().map(|i| i.inventory.listeners).sum()
    }

    /// The configuration's version: the DiscoveryResponse's `version_info`, or the distinct
    /// `version_info`s of a config_dump's listeners (`none` when it has none: static only).
    fn version(&self) -> String {
        if let Some(v) = &self.version {
            return v.clone();
        }
        let mut versions: Vec<&str> =
            self.report.inputs.iter().flat_map(|i| i.versions.iter().map(String::as_str)).collect();
        versions.sort_unstable();
        versions.dedup();
        if versions.is_empty() { "none".to_owned() } else { versions.join(",") }
    }
}

fn one_shot(args: &AttachArgs, s: &Snapshot) -> Result<u8> {
    if let Some(dir) = &args.save {
        s.save(dir)?;
    }
    write_report(&args.report, &s.report, &s.sources)
}

#[allow(clippy::print_stderr)]
pub(crate) fn warn(message: &str) {
    eprintln!("xdsck: {message}");
}

// ---------------------------------------------------------------------------------------------
// --watch

/// What the previous update reported: its findings by fingerprint, its resources.
struct Watch<'a> {
    args: &'a AttachArgs,
    /// Each finding by its fingerprint and rank among those with the same one (a rule can say
    /// the same thing twice at one place), so that a finding that only moved (another line,
    /// another order) is not new.
    previous: BTreeMap<(String, usize), (Value, String)>,
    /// `None` until the first update, which is printed whole: the state.
    resources: Option<BTreeMap<Key, Stamp>>,
    updates: u64,
    last_code: Option<u8>,
    metrics: Option<Arc<Metrics>>,
}

/// A resource's identity: its type (`Listener`, `RouteConfiguration`, `Cluster`) and name.
type Key = (String, String);
/// What is compared of it: its version, and over xDS a digest of its bytes (0 from a dump).
type Stamp = (String, u64);

/// A resource as a change names it.
fn resource_value((type_name, name): &Key, (version, _): &Stamp) -> Value {
    json!({"type": type_name, "name": name, "version": version})
}

fn resource_line(sign: char, (type_name, name): &Key, (version, _): &Stamp) -> String {
    if version.is_empty() {
        format!("{sign} {type_name} '{name}'\n")
    } else {
        format!("{sign} {type_name} '{name}' version {version}\n")
    }
}

impl<'a> Watch<'a> {
    fn new(args: &'a AttachArgs, metrics: Option<Arc<Metrics>>) -> Self {
        Self { args, previous: BTreeMap::new(), resources: None, updates: 0, last_code: None, metrics }
    }

    /// Records the update for the metrics, and prints it: whole the first time (the state),
    /// then only what changed — resources added, removed or updated, findings new and fixed —
    /// and nothing when nothing did. Envoy prints the maps of a dump in no fixed order, so a
    /// dump can differ from the last one and still say nothing new.
    fn update(&mut self, s: &Snapshot) -> Result<()> {
        self.updates += 1;
        if let Some(dir) = &self.args.save {
            s.save(dir)?;
        }
        if let Some(m) = &self.metrics {
            m.record(&s.report, s.took);
        }
        self.last_code = Some(exit_code(&s.report, self.args.report.outcome.fail_on));
        let objects = report::json::finding_values(&s.report, &s.sources);
        let mut current = BTreeMap::new();
        for (d, obj) in s.report.findings.iter().zip(objects) {
            let fingerprint = d.fingerprint();
            let rank = current.range((fingerprint.clone(), 0)..=(fingerprint.clone(), usize::MAX)).count();
            current.insert((fingerprint, rank), (obj, report::line::watch(d)));
        }
        let new: Vec<&(Value, String)> =
            current.iter().filter(|(k, _)| !self.previous.contains_key(*k)).map(|(_, v)| v).collect();
        let fixed: Vec<&(Value, String)> =
            self.previous.iter().filter(|(k, _)| !current.contains_key(*k)).map(|(_, v)| v).collect();
        let empty = BTreeMap::new();
        let first = self.resources.is_none();
        let before = self.resources.as_ref().unwrap_or(&empty);
        let added: Vec<_> = s.resources.iter().filter(|(k, _)| !before.contains_key(*k)).collect();
        let removed: Vec<_> = before.iter().filter(|(k, _)| !s.resources.contains_key(*k)).collect();
        // Over xDS a resource is updated when its bytes change (a state-of-the-world response
        // gives every resource its version, changed or not); from a dump, when its version does.
        let changed = |old: &Stamp, new: &Stamp| match new.1 {
            0 => old.0 != new.0,
            digest => old.1 != digest,
        };
        let updated: Vec<_> =
            s.resources.iter().filter(|(k, v)| before.get(*k).is_some_and(|old| changed(old, v))).collect();
        if !first && new.is_empty() && fixed.is_empty() && added.is_empty() && removed.is_empty() && updated.is_empty()
        {
            return Ok(());
        }
        let time = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let version = s.version();
        let out = match self.args.report.format {
            Format::Json => {
                let list =
                    |v: &[(&Key, &Stamp)]| -> Vec<Value> { v.iter().map(|(k, r)| resource_value(k, r)).collect() };
                let obj = json!({
                    "time": time,
                    "version": version,
                    "resources": {"added": list(&added), "removed": list(&removed), "updated": list(&updated)},
                    "findings": {
                        "new": new.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>(),
                        "fixed": fixed.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>(),
                    },
                    "summary": report::json::summary_value(&s.report),
                });
                format!("{obj}\n")
            }
            _ => {
                let mut out = format!(
                    "{time} version {version}: {} listeners, {} findings; resources +{} -{} ~{}, findings +{} -{}\n",
                    s.listeners(),
                    current.len(),
                    added.len(),
                    removed.len(),
                    updated.len(),
                    new.len(),
                    fixed.len()
                );
                for (sign, list) in [('+', &added), ('-', &removed), ('~', &updated)] {
                    for (k, r) in list.iter() {
                        out.push_str(&resource_line(sign, k, r));
                    }
                }
                for (_, l) in &new {
                    out.push_str(&format!("+ {l}\n"));
                }
                for (_, l) in &fixed {
                    out.push_str(&format!("- {l}\n"));
                }
                out
            }
        };
        self.previous = current;
        self.resources = Some(s.resources.clone());
        print(&out)
    }

    fn exit(&self) -> u8 {
        self.last_code.unwrap_or(FAILED)
    }
}

async fn watch_xds(
    args: &AttachArgs,
    target: &GrpcTarget,
    options: &xds::Options,
    spinner: Spinner,
    metrics: Option<Arc<Metrics>>,
    reporting: &Arc<Reporting>,
) -> Result<u8> {
    let interval = seconds(args.interval, "--interval")?;
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let task = {
        let (target, options) = (target.clone(), options.clone());
        tokio::spawn(async move { xds::watch(&target, &options, tx).await })
    };
    let mut spinner = Some(spinner);
    let mut watch = Watch::new(args, metrics.clone());
    let mut connected = false;
    let mut tick = tokio::time::interval(interval);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            _ = &mut ctrl_c => break,
            // The server pushes every change: while the stream is open, the last analysis is
            // the current config's.
            _ = tick.tick() => if let Some(m) = &metrics && connected && watch.updates > 0 { m.confirm(); },
            event = rx.recv() => match event {
                Some(xds::Event::Update(view)) => {
                    if let Some(s) = spinner.take() { s.stop(); }
                    // Off the runtime's thread: the metrics endpoint keeps answering while a
                    // large config is checked.
                    let (address, reporting) = (args.address.clone(), reporting.clone());
                    let snapshot =
                        tokio::task::spawn_blocking(move || Snapshot::from_xds(&address, &view, &reporting)).await??;
                    watch.update(&snapshot)?;
                }
                // Reported once per kind by the state machine.
                Some(xds::Event::Problems(problems)) => {
                    for p in &problems {
                        warn(&format!("{}: {p} (ACKed)", args.address));
                    }
                }
                Some(xds::Event::Connected) => {
                    connected = true;
                    if let Some(m) = &metrics { m.up(); }
                }
                Some(xds::Event::Disconnected { error, retry_in }) => {
                    if let Some(s) = spinner.take() { s.stop(); }
                    connected = false;
                    if let Some(m) = &metrics { m.fetch_failed(error.reason()); }
                    let keep = if watch.updates > 0 { "; the last snapshot stands" } else { "" };
                    warn(&format!("{error}; retrying in {:.2} s{keep}", retry_in.as_secs_f64()));
                }
                None => {
                    if let Some(s) = spinner.take() { s.stop(); }
                    return match task.await {
                        Ok(Err(e)) => Err(e.into()),
                        _ => Ok(watch.exit()),
                    };
                }
            },
        }
    }
    task.abort();
    Ok(watch.exit())
}

async fn watch_admin(
    args: &AttachArgs,
    target: &AdminTarget,
    timeout: Duration,
    spinner: Spinner,
    metrics: Option<Arc<Metrics>>,
    reporting: &Arc<Reporting>,
) -> Result<u8> {
    let interval = seconds(args.interval, "--interval")?;
    // Polled every --interval while it answers; after a failure, retried with the backoff the
    // xDS path uses (exponential from 250 ms to 30 s, jittered), reset by the next answer.
    let defaults = xds::Options::default();
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let mut backoff = Backoff::new(defaults.backoff_initial, defaults.backoff_max, seed);
    let mut spinner = Some(spinner);
    let mut watch = Watch::new(args, metrics.clone());
    // A digest, not the dump: holding a second copy of a 100 MB dump between fetches would
    // double the agent's memory for a comparison.
    let mut last_dump: Option<u64> = None;
    // Asked again after each failure: the Envoy that comes back may be an upgraded one.
    let mut envoy_version_known = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let fetched = tokio::select! {
            _ = &mut ctrl_c => break,
            r = admin::fetch(target, timeout, args.report.outcome.max_bytes) => r,
        };
        if let Some(s) = spinner.take() {
            s.stop();
        }
        let wait = match fetched {
            // An unchanged dump is not an update.
            Ok(bytes) if last_dump == Some(digest(&bytes)) => {
                backoff.reset();
                if let Some(m) = &metrics {
                    m.confirm();
                }
                interval
            }
            Ok(bytes) => {
                backoff.reset();
                if let Some(m) = &metrics
                    && !envoy_version_known
                {
                    envoy_version_known = ask_envoy_version(target, timeout, m).await;
                }
                // Off the runtime's thread: the metrics endpoint keeps answering while a large
                // config is checked.
                last_dump = Some(digest(&bytes));
                let (address, max_bytes, reporting) =
                    (args.address.clone(), args.report.outcome.max_bytes, reporting.clone());
                let snapshot =
                    tokio::task::spawn_blocking(move || Snapshot::from_dump(&address, bytes, max_bytes, &reporting))
                        .await??;
                watch.update(&snapshot)?;
                interval
            }
            Err(e) if !e.is_transient() => return Err(e.into()),
            Err(e) => {
                envoy_version_known = false;
                if let Some(m) = &metrics {
                    m.fetch_failed(e.reason());
                }
                let retry_in = backoff.next_delay();
                let keep = if watch.updates > 0 { "; the last snapshot stands" } else { "" };
                warn(&format!("{e}; retrying in {:.2} s{keep}", retry_in.as_secs_f64()));
                retry_in
            }
        };
        tokio::select! {
            _ = &mut ctrl_c => break,
            () = tokio::time::sleep(wait) => {}
        }
    }
    Ok(watch.exit())
}

/// What tells two dumps apart: SipHash (keyed the same in every process) of the dump with each
/// run of `"key": scalar` lines of one object sorted. Envoy prints the maps of a dump (node
/// metadata, build labels: protobuf Structs) in a different order at each request, and the
/// order of an object's keys means nothing in proto JSON, so two dumps of one config get one
/// digest and the config is not checked again. Anything else — a value, an array's order, an
/// object's nested fields — changes it (a nested map printed in another order only costs a
/// check).
fn digest(bytes: &[u8]) -> u64 {
    use std::hash::{DefaultHasher, Hasher};
    let mut h = DefaultHasher::new();
    let mut run: Vec<&[u8]> = Vec::new();
    let mut run_indent = usize::MAX;
    let flush = |run: &mut Vec<&[u8]>, h: &mut DefaultHasher| {
        run.sort_unstable();
        for l in run.drain(..) {
            h.write(l);
            h.write_u8(b'\n');
        }
    };
    for line in bytes.split(|&b| b == b'\n') {
        let (indent, kv) = scalar_entry(line);
        match kv {
            Some(kv) if indent == run_indent || run.is_empty() => {
                run_indent = indent;
                run.push(kv);
            }
            Some(kv) => {
                flush(&mut run, &mut h);
                run_indent = indent;
                run.push(kv);
            }
            None => {
                flush(&mut run, &mut h);
                run_indent = usize::MAX;
                h.write(line);
                h.write_u8(b'\n');
            }
        }
    }
    flush(&mut run, &mut h);
    h.finish()
}

/// A pretty-printed line `"key": value[,]` whose value is a scalar: its indentation and the
/// entry without the comma that only says whether it came last.
fn scalar_entry(line: &[u8]) -> (usize, Option<&[u8]>) {
    let indent = line.iter().take_while(|&&b| b == b' ').count();
    let rest = line[indent..].trim_ascii_end();
    let rest = rest.strip_suffix(b",").unwrap_or(rest);
    if rest.first() != Some(&b'"') {
        return (indent, None);
    }
    // The key's closing quote, escapes skipped.
    let mut i = 1;
    while i < rest.len() && rest[i] != b'"' {
        i += if rest[i] == b'\\' { 2 } else { 1 };
    }
    let after = rest.get(i + 1..).unwrap_or_default();
    let scalar = after.strip_prefix(b": ").is_some_and(|v| !v.is_empty() && !matches!(v[v.len() - 1], b'{' | b'['));
    (indent, scalar.then_some(rest))
}

/// Sets `xdsck_build_info`'s `envoy_version` from the admin's `/server_info`; whether it could.
async fn ask_envoy_version(target: &AdminTarget, timeout: Duration, metrics: &Metrics) -> bool {
    let info = AdminTarget { endpoint: target.endpoint.clone(), path_and_query: "/server_info".to_owned() };
    match admin::fetch(&info, timeout, 1 << 20).await.ok().and_then(|b| metrics::envoy_version(&b)) {
        Some(v) => {
            metrics.set_envoy_version(&v);
            true
        }
        None => false,
    }
}

// ---------------------------------------------------------------------------------------------

/// A spinner on stderr while nothing has arrived yet; only for a person at a terminal.
struct Spinner(Option<tokio::task::JoinHandle<()>>);

impl Spinner {
    fn start(address: &str) -> Spinner {
        if !std::io::stderr().is_terminal() {
            return Spinner(None);
        }
        let text = format!("waiting for {address}");
        Spinner(Some(tokio::spawn(async move {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            for i in 0usize.. {
                #[allow(clippy::print_stderr)]
                {
                    eprint!("\r{} {text}", FRAMES[i % FRAMES.len()]);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })))
    }

    fn stop(self) {
        if let Some(h) = self.0 {
            h.abort();
            #[allow(clippy::print_stderr)]
            {
                eprint!("\r\x1b[K");
            }
        }
    }
}

/// What attach reads is one proxy's configuration.
fn one_proxy(options: xdsck_core::Options) -> xdsck_core::Options {
    xdsck_core::Options { one_envoy: true, ..options }
}

#[cfg(test)]
mod tests {
    use super::digest;

    #[test]
    fn the_stream_and_the_loader_default_to_one_size_limit() {
        // The two crates do not depend on each other, so each states the default; this is the
        // one place that holds them to the same value (the CLI passes `--max-bytes` to both).
        assert_eq!(xdsck_xds_client::xds::DEFAULT_MAX_BYTES, xdsck_core::load::DEFAULT_MAX_BYTES);
        assert_eq!(xdsck_xds_client::xds::Options::default().max_bytes, xdsck_core::load::Limits::default().max_bytes);
    }

    const DUMP: &str = r#"{
 "configs": [
  {
   "bootstrap": {
    "node": {
     "metadata": {
      "revision.status": "Clean",
      "build.type": "RELEASE"
     },
     "id": "n"
    }
   }
  },
  {
   "dynamic_listeners": [
    {
     "name": "a",
     "ports": [
      1,
      2
     ]
    },
    {
     "name": "b"
    }
   ]
  }
 ]
}"#;

    #[test]
    fn a_dump_whose_maps_envoy_printed_in_another_order_is_the_same() {
        let reordered = DUMP.replace(
            "      \"revision.status\": \"Clean\",\n      \"build.type\": \"RELEASE\"\n",
            "      \"build.type\": \"RELEASE\",\n      \"revision.status\": \"Clean\"\n",
        );
        assert_ne!(reordered, DUMP);
        assert_eq!(digest(reordered.as_bytes()), digest(DUMP.as_bytes()));
    }

    #[test]
    fn any_other_difference_is_a_change() {
        let changes = [
            DUMP.replace("\"Clean\"", "\"Dirty\""),
            DUMP.replace("      1,\n      2\n", "      2,\n      1\n"),
            DUMP.replace("\"name\": \"a\"", "\"name\": \"c\""),
            // The listeners swapped: the same lines, in other objects.
            DUMP.replace("\"name\": \"a\",", "\"name\": \"x\",")
                .replace("\"name\": \"b\"", "\"name\": \"a\"")
                .replace("\"name\": \"x\",", "\"name\": \"b\","),
        ];
        for changed in changes {
            assert_ne!(changed, DUMP);
            assert_ne!(digest(changed.as_bytes()), digest(DUMP.as_bytes()), "{changed}");
        }
    }
}
