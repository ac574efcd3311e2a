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

use std::cell::RefCell;
use std::net::{IpAddr, SocketAddr};

use serde::Deserialize;
use wasm_bindgen::prelude::*;
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

impl AnalyzeOptions {
    /// The rule selection, as the CLI's flags make it.
    fn settings(&self) -> Result<xdsck_core::settings::Settings, String> {
        xdsck_core::settings::Settings::from_lists(
            self.select.as_deref(),
            &self.extend_select,
            &self.ignore,
            &self.severity,
        )
        .map_err(|e| e.to_string())
    }
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
    let settings = options.settings()?;
    let sources = sources(text, options.source);
    let report = xdsck_core::analyze(&sources, &Options { settings, ..Options::default() });
    Ok(report::render(Format::Json, &report, &sources, RenderOptions::default()))
}

/// [`check`] for Rust callers: [`analyze_json`]'s report into `report` and [`summary_json`]'s
/// listener view into `summary`, from one reading of the input; bytes that are not UTF-8 are an
/// `XDS003` finding, as they are for the CLI. The report is written and its findings dropped
/// before the view is made, and both are written as they are made: on a tenant-scale dump
/// neither answer is ever whole in the module's memory, which never shrinks. `Ok(false)`, with
/// nothing written, for Gateway API input ([`xdsck_core::gateway::holds_gateway_api`]), which the
/// page answers with [`gateway`] instead.
pub fn check_json(
    input: Vec<u8>,
    options_json: &str,
    report: &mut dyn std::io::Write,
    summary: &mut dyn std::io::Write,
) -> Result<bool, String> {
    let options = options(options_json)?;
    let settings = options.settings()?;
    // Bytes, as the CLI reads a file: what is not UTF-8 is its finding, not a silent U+FFFD; and
    // owned: the bytes the page handed over are the text the model borrows, not a copy of it.
    let (mut sources, mut failed) = (Sources::new(), Vec::new());
    let name = options.source.unwrap_or_else(|| DEFAULT_SOURCE.to_owned());
    xdsck_core::add_bytes(&mut sources, &mut failed, name, input, false);
    let options = Options { settings, ..Options::default() };
    if sources.iter().any(|(id, file)| xdsck_core::gateway::holds_gateway_api(id, file, &options.limits)) {
        return Ok(false);
    }
    xdsck_core::analyze_then(&sources, &options, failed, |snapshot, found| {
        report::write(Format::Json, &found, &sources, RenderOptions::default(), report)?;
        // Every part of the report is handed on before the first of the view: the page shows
        // the findings while the view is made.
        report.flush()?;
        drop(found);
        report::summary::write(snapshot, &sources, summary)
    })
    .map_err(|e| e.to_string())?;
    Ok(true)
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
    Ok(report::summary::json(&snapshot, &sources))
}

// ---- the JavaScript surface ----

/// The report of `xdsck --format json` for one input. `options_json`: `{"source": "name"}` or "".
#[wasm_bindgen]
pub fn analyze(text: &str, options_json: &str) -> Result<String, JsError> {
    install_panic_hook();
    analyze_json(text, options_json).map_err(|e| JsError::new(&e))
}

/// What [`check`] hands its answers to, a part at a time: `{report(part), summary(part)}`, each
/// called with consecutive parts of one string; every part of the report comes before the first
/// of the summary.
#[wasm_bindgen]
extern "C" {
    pub type Answer;
    #[wasm_bindgen(method)]
    fn report(this: &Answer, part: &str);
    #[wasm_bindgen(method)]
    fn summary(this: &Answer, part: &str);
}

/// [`analyze`] and [`summary`] of one input (its bytes, as read from a file: a `Uint8Array`) read
/// once: the report and the listener view go to `answer` in parts as they are written (see
/// [`check_json`]). The bytes are copied into the module once, not turned into a string first.
/// `false`, with no answer, for Gateway API input: the page asks [`gateway`] then.
#[wasm_bindgen]
pub fn check(input: Vec<u8>, options_json: &str, answer: &Answer) -> Result<bool, JsError> {
    install_panic_hook();
    let mut report = Parts::new(|part| answer.report(part));
    let mut summary = Parts::new(|part| answer.summary(part));
    let checked = check_json(input, options_json, &mut report, &mut summary).map_err(|e| JsError::new(&e))?;
    report.finish();
    summary.finish();
    Ok(checked)
}

/// Bytes written as UTF-8 text, handed on a megabyte at a time, each part cut on a character
/// boundary so that it is a string of its own.
struct Parts<F: FnMut(&str)> {
    buffer: Vec<u8>,
    hand: F,
}

impl<F: FnMut(&str)> Parts<F> {
    const SIZE: usize = 1 << 20;

    fn new(hand: F) -> Self {
        Self { buffer: Vec::with_capacity(Self::SIZE), hand }
    }

    /// Hands on all the whole characters buffered; keeps the start of a cut one.
    fn hand_whole(&mut self) {
        let Self { buffer, hand } = self;
        match std::str::from_utf8(buffer) {
            Ok(text) => {
                if !text.is_empty() {
                    hand(text);
                }
                buffer.clear();
            }
            Err(e) => {
                let whole = e.valid_up_to();
                if whole > 0 {
                    hand(std::str::from_utf8(&buffer[..whole]).expect("valid up to there"));
                    buffer.drain(..whole);
                }
            }
        }
    }

    fn finish(mut self) {
        self.hand_whole();
        debug_assert!(self.buffer.is_empty(), "the writers write UTF-8");
    }
}

impl<F: FnMut(&str)> std::io::Write for Parts<F> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= Self::SIZE {
            self.hand_whole();
        }
        Ok(bytes.len())
    }

    /// Hands on what is buffered: at the end of what was written, every character is whole.
    fn flush(&mut self) -> std::io::Result<()> {
        self.hand_whole();
        Ok(())
    }
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
