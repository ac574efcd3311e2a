//! xdsck in the browser: a wasm-bindgen adapter over [`xdsck_core`]. Bindings only translate —
//! deserialize the arguments, call core, serialize the answer — so the page shows exactly what
//! the CLI prints: [`analyze`] is `xdsck --format json`, [`trace`] is `xdsck trace --format
//! json`, [`rules`] is `xdsck rules --format json`. There is no Envoy logic here.
//!
//! Every export has a plain-Rust twin (`*_json`) returning `Result<String, String>`, which the
//! native tests call; the `#[wasm_bindgen]` functions only turn an `Err` into a thrown `Error`.
//!
//! ```
//! let report = xdsck_wasm::analyze_json("{}", r#"{"source": "empty.json"}"#).unwrap();
//! assert!(report.starts_with("{\n  \"version\": 1,"));
//! ```

use std::borrow::Cow;
use std::cell::RefCell;
use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use xdsck_core::model::route::{HcmRoutes, RouteTables};
use xdsck_core::model::{CidrRange, FilterChain, FilterChainMatch};
use xdsck_core::report::{self, Format, RenderOptions};
use xdsck_core::trace::{Attributes, Query};
use xdsck_core::{Options, SourceFile, Sources};

/// The display name of an input when the options give none (a pasted text).
pub const DEFAULT_SOURCE: &str = "input";

/// `analyze`'s and `summary`'s options, as JSON. Every field is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnalyzeOptions {
    /// The input's display name (a file name); findings name it. Default [`DEFAULT_SOURCE`].
    pub source: Option<String>,
    /// Rule selection, as the CLI's flags: `select` (replaces the default, every rule),
    /// `extend_select`, `ignore` (codes, prefixes such as `XDS3`, names, `ALL`) and `severity`
    /// (`["XDS301=warning"]`).
    pub select: Option<Vec<String>>,
    pub extend_select: Vec<String>,
    pub ignore: Vec<String>,
    pub severity: Vec<String>,
}

/// A trace question, as JSON: the arguments of `xdsck trace`.
///
/// `{"dst": "10.0.0.1:443", "listener": "l", "proxy": "ns/pod", "src": "192.0.2.1:5000", "direct_src": "192.0.2.9",
///   "client": "tls" | "http1" | "h2c" | "raw", "sni": "a.example.com", "alpn": ["h2"],
///   "transport_protocol": "tls", "source": "dump.json"}` — only `dst` is required; `client`
/// defaults to `tls` when `sni` or `alpn` is given, else `raw`; `transport_protocol` gives the
/// matcher's attributes exactly (as `--transport-protocol`) and excludes `client`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceQuery {
    pub dst: String,
    #[serde(default)]
    pub listener: Option<String>,
    /// The proxy of a peer's map of several (`xdsck trace --proxy`).
    #[serde(default)]
    pub proxy: Option<String>,
    #[serde(default)]
    pub src: Option<String>,
    #[serde(default)]
    pub direct_src: Option<String>,
    #[serde(default)]
    pub client: Option<ClientKind>,
    #[serde(default)]
    pub sni: Option<String>,
    #[serde(default)]
    pub alpn: Vec<String>,
    #[serde(default)]
    pub transport_protocol: Option<String>,
    /// The input's display name, as in [`AnalyzeOptions::source`].
    #[serde(default)]
    pub source: Option<String>,
    /// An HTTP request's Host (`xdsck trace --host`): the trace then follows it to its route.
    #[serde(default)]
    pub host: Option<String>,
    /// Its path (default `/`).
    #[serde(default)]
    pub path: Option<String>,
    /// Its headers, each `NAME:VALUE`.
    #[serde(default)]
    pub headers: Vec<String>,
}

/// `--client`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientKind {
    Tls,
    Http1,
    H2c,
    Raw,
}

fn sources(text: &str, name: Option<String>) -> Sources {
    let mut sources = Sources::new();
    sources.add(SourceFile::new(name.unwrap_or_else(|| DEFAULT_SOURCE.to_owned()), text));
    sources
}

fn options(options_json: &str) -> Result<AnalyzeOptions, String> {
    if options_json.trim().is_empty() {
        return Ok(AnalyzeOptions::default());
    }
    serde_json::from_str(options_json).map_err(|e| format!("invalid options: {e}"))
}

/// `gateway`'s options, as JSON: `{"source": "gw.yaml", "cilium": "1.19.6"}` (both optional;
/// `cilium` defaults to the newest modelled version, as `xdsck gateway` does).
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayOptions {
    pub source: Option<String>,
    pub cilium: Option<String>,
}

/// [`gateway`] for Rust callers: `xdsck gateway --format json`.
pub fn gateway_json(text: &str, options_json: &str) -> Result<String, String> {
    let options: GatewayOptions = if options_json.trim().is_empty() {
        GatewayOptions::default()
    } else {
        serde_json::from_str(options_json).map_err(|e| format!("invalid options: {e}"))?
    };
    let version = match options.cilium.as_deref() {
        Some(v) => v.parse().map_err(|e: xdsck_core::gateway::cilium::versions::UnknownVersion| e.to_string())?,
        None => xdsck_core::gateway::cilium::Version::NEWEST,
    };
    let mut sources = sources(text, options.source);
    let eval = xdsck_core::gateway::evaluate(&mut sources, version, &Default::default());
    let answer = xdsck_core::gateway::json::to_json(&eval, &sources);
    serde_json::to_string_pretty(&answer).map_err(|e| e.to_string())
}

/// [`analyze`] for Rust callers.
pub fn analyze_json(text: &str, options_json: &str) -> Result<String, String> {
    let options = options(options_json)?;
    let settings = xdsck_core::settings::Settings::from_lists(
        options.select.as_deref(),
        &options.extend_select,
        &options.ignore,
        &options.severity,
    )
    .map_err(|e| e.to_string())?;
    let sources = sources(text, options.source);
    let report = xdsck_core::analyze(&sources, &Options { settings, ..Options::default() });
    Ok(report::render(Format::Json, &report, &sources, RenderOptions::default()))
}

/// [`diff`] for Rust callers: `{"text", "diff"}`, the answer of `xdsck diff` as text and as
/// its JSON object; a side that cannot be read is an error with its failures, as text.
pub fn diff_json(before: &str, after: &str) -> Result<String, String> {
    let (old, new) = (sources(before, Some("before".to_owned())), sources(after, Some("after".to_owned())));
    let run = xdsck_core::diff((&old, Vec::new()), (&new, Vec::new()), ("before", "after"), &[]);
    if run.unreadable {
        return Err(run.text);
    }
    let diff: serde_json::Value = serde_json::from_str(&run.json).map_err(|e| e.to_string())?;
    Ok(serde_json::json!({"text": run.text, "diff": diff}).to_string())
}

/// [`trace`] for Rust callers.
pub fn trace_json(text: &str, query_json: &str) -> Result<String, String> {
    let q: TraceQuery = serde_json::from_str(query_json).map_err(|e| format!("invalid query: {e}"))?;
    let sources = sources(text, q.source.clone());
    let documents = xdsck_core::read_documents(&sources, &Options::default());
    let (mut snapshot, failed) = xdsck_core::load_all(&documents);
    if !failed.is_empty() {
        // As the CLI does: the input's own problem, rendered, instead of a trace.
        let report = report::Report { findings: failed, failed_inputs: 1, ..Default::default() };
        return Err(report::render(Format::Text, &report, &sources, RenderOptions::default()));
    }
    xdsck_core::trace::one_proxy(&mut snapshot, q.proxy.as_deref()).map_err(|e| e.to_string())?;
    let query = query(&q)?;
    let answer = xdsck_core::trace::trace(&snapshot, &sources, &query).map_err(|e| e.to_string())?;
    let Some(host) = &q.host else { return Ok(xdsck_core::report::trace::json(&answer)) };
    // As `xdsck trace --host`: the connection's answer with an `http` object last.
    let mut headers = Vec::new();
    for h in q.headers.iter().filter(|h| !h.trim().is_empty()) {
        headers.push(xdsck_core::routing::Request::header(h).ok_or(format!("header {h:?}: expected NAME:VALUE"))?);
    }
    let path = q.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "/".to_owned());
    let req = xdsck_core::routing::Request { host: host.clone(), path, method: "GET".to_owned(), headers };
    let http = xdsck_core::routing::trace::trace_http(&snapshot, &answer, &req);
    Ok(xdsck_core::report::trace::with_http(&answer, &http).to_string())
}

/// [`trace_graph`] for Rust callers: the traced listener's match graph as SVG with the
/// connection's path in colour, or `""` when it is not drawn (a filter_chain_matcher listener,
/// a graph too big to draw).
pub fn trace_graph_json(text: &str, query_json: &str) -> Result<String, String> {
    let q: TraceQuery = serde_json::from_str(query_json).map_err(|e| format!("invalid query: {e}"))?;
    let sources = sources(text, q.source.clone());
    let documents = xdsck_core::read_documents(&sources, &Options::default());
    let (mut snapshot, failed) = xdsck_core::load_all(&documents);
    if !failed.is_empty() {
        return Ok(String::new());
    }
    xdsck_core::trace::one_proxy(&mut snapshot, q.proxy.as_deref()).map_err(|e| e.to_string())?;
    let query = query(&q)?;
    let answer = xdsck_core::trace::trace(&snapshot, &sources, &query).map_err(|e| e.to_string())?;
    Ok(xdsck_core::report::trace::graph_svg(&snapshot, &answer).unwrap_or_default())
}

/// The core question a [`TraceQuery`] asks.
fn query(q: &TraceQuery) -> Result<Query, String> {
    Ok(Query {
        listener: q.listener.clone().filter(|l| !l.is_empty()),
        destination: parse_field::<SocketAddr>("dst", "IP:PORT", Some(&q.dst))?
            .ok_or("dst: give the destination as IP:PORT")?,
        source: parse_field("src", "IP:PORT", q.src.as_deref())?,
        direct_source: parse_field::<IpAddr>("direct_src", "an IP address", q.direct_src.as_deref())?,
        attributes: attributes(q)?,
    })
}

/// An optional field; empty means absent (a form's empty input).
fn parse_field<T: std::str::FromStr>(name: &str, what: &str, value: Option<&str>) -> Result<Option<T>, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| format!("{name}: `{v}` is not {what}")),
    }
}

/// The client fields as core's one translation of them (the CLI's flags go through it too).
fn attributes(q: &TraceQuery) -> Result<Attributes, String> {
    let client = q.client.map(|k| match k {
        ClientKind::Tls => xdsck_core::trace::ClientKind::Tls,
        ClientKind::Http1 => xdsck_core::trace::ClientKind::Http1,
        ClientKind::H2c => xdsck_core::trace::ClientKind::H2c,
        ClientKind::Raw => xdsck_core::trace::ClientKind::Raw,
    });
    let host = q.host.as_deref().is_some_and(|h| !h.trim().is_empty());
    xdsck_core::trace::attributes(client, q.transport_protocol.as_deref(), q.sni.as_deref(), &q.alpn, host)
}

/// [`rules`] for Rust callers: `{"version": 1, "rules": [{code, name, severity, summary,
/// explanation}]}`, as `xdsck rules --format json` prints it.
pub fn rules_json() -> String {
    xdsck_core::report::rules_json()
}

/// [`summary`] for Rust callers.
pub fn summary_json(text: &str, options_json: &str) -> Result<String, String> {
    let options = options(options_json)?;
    let sources = sources(text, options.source);
    let documents = xdsck_core::read_documents(&sources, &Options::default());
    let (snapshot, _) = xdsck_core::load_all(&documents);
    // Every HCM, with or without its table in this input: the view says which RDS names the
    // input does not hold, as the trace does.
    let routes = RouteTables::of(&snapshot);
    let line = |offset: Option<usize>, id| offset.map(|o| sources.get(id).line_column(o).line);
    let no_match = FilterChainMatch::default();
    let inputs: Vec<InputSummary<'_>> = snapshot
        .inputs
        .iter()
        .map(|input| {
            let file = sources.get(input.source);
            let text = input.locator(file);
            let listeners = input
                .listeners
                .iter()
                .map(|l| {
                    let chain = |c, default| {
                        let at = line(l.chain_location(input.source, text, c).offset, input.source);
                        let mut summary = ChainSummary::new(c, default, at, &no_match);
                        summary.route_tables = route_tables(&routes, c);
                        summary
                    };
                    let mut chains: Vec<ChainSummary<'_>> = l.filter_chains.iter().map(|c| chain(c, false)).collect();
                    chains.extend(l.default_filter_chain.iter().map(|c| chain(c, true)));
                    // Which wildcard covers each server name: core's answer, handed out per chain
                    // in the order of its names (the page holds no Envoy rule of its own).
                    let names: Vec<&str> = (l.filter_chains.iter().chain(&l.default_filter_chain))
                        .flat_map(|c| c.filter_chain_match.as_ref().unwrap_or(&no_match).server_names.iter())
                        .map(|n| &**n)
                        .collect();
                    let mut under = xdsck_core::graph::key::covering_wildcards(&names).into_iter();
                    for c in &mut chains {
                        c.covered_by = under.by_ref().take(c.r#match.server_names.len()).collect();
                        if c.covered_by.iter().all(Option::is_none) {
                            c.covered_by.clear();
                        }
                    }
                    ListenerSummary {
                        name: &l.name,
                        display_name: l.display_name(),
                        state: l.state.as_str(),
                        address: l.envoy_address_list(),
                        line: line(l.location(input.source, text).offset, input.source),
                        listener_filters: l.listener_filters.iter().map(|f| &*f.name).collect(),
                        filter_chain_matcher: l.filter_chain_matcher.is_some(),
                        chains,
                    }
                })
                .collect();
            InputSummary { source: file.name(), kind: input.kind.as_str(), listeners }
        })
        .collect();
    // Straight from these borrowing structs to compact text: a tenant-scale dump has 100k+
    // chains, and a `serde_json::Value` tree of them, pretty-printed, cost the 100 MB dump's
    // check in the page ~560 MiB of wasm memory and ~30 s.
    let mut out = serde_json::to_string(&Summary { version: 1, inputs }).map_err(|e| e.to_string())?;
    out.push('\n');
    Ok(out)
}

#[derive(Serialize)]
struct Summary<'a> {
    version: u32,
    inputs: Vec<InputSummary<'a>>,
}

#[derive(Serialize)]
struct InputSummary<'a> {
    source: &'a str,
    kind: &'a str,
    listeners: Vec<ListenerSummary<'a>>,
}

#[derive(Serialize)]
struct ListenerSummary<'a> {
    /// What a trace selects the listener by.
    name: &'a str,
    /// What findings and the page call it (`listeners[2]` for an unnamed one).
    display_name: Cow<'a, str>,
    state: &'a str,
    address: String,
    line: Option<usize>,
    listener_filters: Vec<&'a str>,
    filter_chain_matcher: bool,
    chains: Vec<ChainSummary<'a>>,
}

#[derive(Serialize)]
struct ChainSummary<'a> {
    name: Cow<'a, str>,
    default: bool,
    line: Option<usize>,
    terminates_tls: bool,
    tcp_proxy: bool,
    filters: Vec<&'a str>,
    r#match: MatchSummary<'a>,
    /// One per HCM of the chain; absent for a chain with none, which keeps a tenant-scale dump
    /// of TCP chains as small as before.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    route_tables: Vec<RouteTableSummary<'a>>,
    /// For each of `match.server_names`, the wildcard server name of the listener that covers
    /// it; absent when none is covered (a tenant-scale dump stays as small as it was).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    covered_by: Vec<Option<&'a str>>,
}

/// The route table one HCM uses, as the listener view shows it.
#[derive(Serialize)]
struct RouteTableSummary<'a> {
    /// The table's name (an RDS name as the HCM gives it); `None` for an unnamed inline table.
    route_config: Option<&'a str>,
    /// `inline`, `rds`, or `scoped`/`none` for an HCM without a table xdsck reads.
    source: &'static str,
    /// Whether the run holds the table (an inline table always; an RDS one when given).
    found: bool,
    virtual_hosts: Vec<VirtualHostSummary<'a>>,
}

#[derive(Serialize)]
struct VirtualHostSummary<'a> {
    name: &'a str,
    domains: &'a [std::borrow::Cow<'a, str>],
    routes: usize,
}

/// The route tables of one chain's HCMs, from the core's route reading.
fn route_tables<'a>(routes: &RouteTables<'a, 'a>, chain: &'a FilterChain<'a>) -> Vec<RouteTableSummary<'a>> {
    RouteTables::hcms_of_chain(chain)
        .map(|hcm| {
            let table = routes.table_of(0, hcm);
            let (route_config, kind) = match &hcm.routes {
                HcmRoutes::Inline(_) => (table.and_then(|t| t.name.as_deref()), "inline"),
                HcmRoutes::Rds(name) => (Some(name.as_str()), "rds"),
                HcmRoutes::Scoped => (None, "scoped"),
                HcmRoutes::None => (None, "none"),
            };
            RouteTableSummary {
                route_config,
                source: kind,
                found: table.is_some(),
                virtual_hosts: table
                    .into_iter()
                    .flat_map(|t| &t.virtual_hosts)
                    .map(|v| VirtualHostSummary { name: &v.name, domains: &v.domains, routes: v.routes.len() })
                    .collect(),
            }
        })
        .collect()
}

impl<'a> ChainSummary<'a> {
    fn new(c: &'a FilterChain<'a>, default: bool, line: Option<usize>, no_match: &'a FilterChainMatch<'a>) -> Self {
        let m = c.filter_chain_match.as_ref().unwrap_or(no_match);
        ChainSummary {
            name: c.display_name(),
            default,
            line,
            terminates_tls: c.terminates_tls(),
            tcp_proxy: c.is_tcp_proxy(),
            filters: c.filters.iter().map(|f| &*f.name).collect(),
            route_tables: Vec::new(),
            covered_by: Vec::new(),
            r#match: MatchSummary {
                destination_port: m.destination_port,
                prefix_ranges: cidrs(&m.prefix_ranges),
                server_names: &m.server_names,
                transport_protocol: &m.transport_protocol,
                application_protocols: &m.application_protocols,
                direct_source_prefix_ranges: cidrs(&m.direct_source_prefix_ranges),
                source_type: m.source_type.as_str(),
                source_prefix_ranges: cidrs(&m.source_prefix_ranges),
                source_ports: &m.source_ports,
            },
        }
    }
}

#[derive(Serialize)]
struct MatchSummary<'a> {
    destination_port: Option<u32>,
    prefix_ranges: Vec<String>,
    server_names: &'a [Cow<'a, str>],
    transport_protocol: &'a str,
    application_protocols: &'a [Cow<'a, str>],
    direct_source_prefix_ranges: Vec<String>,
    source_type: &'a str,
    source_prefix_ranges: Vec<String>,
    source_ports: &'a [u32],
}

fn cidrs(ranges: &[CidrRange<'_>]) -> Vec<String> {
    ranges.iter().map(|r| format!("{}/{}", r.address_prefix, r.prefix_len.unwrap_or(0))).collect()
}

// ---- the JavaScript surface ----

/// The report of `xdsck --format json` for one input. `options_json`: `{"source": "name"}` or "".
#[wasm_bindgen]
pub fn analyze(text: &str, options_json: &str) -> Result<String, JsError> {
    install_panic_hook();
    analyze_json(text, options_json).map_err(|e| JsError::new(&e))
}

/// The answer of `xdsck trace --format json`; see [`TraceQuery`] for the query.
#[wasm_bindgen]
pub fn trace(text: &str, query_json: &str) -> Result<String, JsError> {
    install_panic_hook();
    trace_json(text, query_json).map_err(|e| JsError::new(&e))
}

/// Every rule: code, name, severity, summary and the explanation (Markdown).
/// The traced listener's match graph as SVG, the connection's path in colour (`""` when not
/// drawn); the query is [`trace`]'s.
#[wasm_bindgen]
pub fn trace_graph(text: &str, query_json: &str) -> Result<String, JsError> {
    install_panic_hook();
    trace_graph_json(text, query_json).map_err(|e| JsError::new(&e))
}

/// Gateway API YAML in: what a Cilium version sets on each Gateway and listener, the
/// CiliumEnvoyConfigs it renders and every check's findings on them (`xdsck gateway --format
/// json`, with the report's `inputs` and `summary`).
#[wasm_bindgen]
pub fn gateway(text: &str, options_json: &str) -> Result<String, JsError> {
    install_panic_hook();
    gateway_json(text, options_json).map_err(|e| JsError::new(&e))
}

/// What a change does to traffic (`xdsck diff before after`): see [`diff_json`].
#[wasm_bindgen]
pub fn diff(before: &str, after: &str) -> Result<String, JsError> {
    install_panic_hook();
    diff_json(before, after).map_err(|e| JsError::new(&e))
}

#[wasm_bindgen]
pub fn rules() -> String {
    install_panic_hook();
    rules_json()
}

/// Per input and listener: its addresses, listener filters and chains with their match fields,
/// as the model holds them (a translation of the model, no verdicts).
#[wasm_bindgen]
pub fn summary(text: &str, options_json: &str) -> Result<String, JsError> {
    install_panic_hook();
    summary_json(text, options_json).map_err(|e| JsError::new(&e))
}

/// The message of the last panic, if any. A panic aborts the call that hit it (JavaScript sees a
/// `RuntimeError: unreachable`); the page asks this for the reason, shows it, and starts a
/// fresh instance, since the one that panicked is not to be used again.
#[wasm_bindgen]
pub fn take_panic() -> Option<String> {
    LAST_PANIC.with(|p| p.borrow_mut().take())
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(message: &str);
}

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_panic_hook() {
    #[cfg(target_arch = "wasm32")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            std::panic::set_hook(Box::new(|info| {
                let message = format!("xdsck panicked: {info}");
                console_error(&message);
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(message));
            }));
        });
    }
}

/// Makes the module panic, for the page's and the tests' handling of it.
#[doc(hidden)]
#[wasm_bindgen]
pub fn __panic_for_test() {
    install_panic_hook();
    panic!("deliberate panic for the test");
}

#[cfg(test)]
mod tests;
