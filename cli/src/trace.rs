//! `xdsck trace` and `xdsck graph`: questions about one listener of one input.

use anyhow::{Result, bail};
use xdsck_core::chain_match::MatchGraph;
use xdsck_core::report::{self, RenderOptions, trace};
use xdsck_core::trace::Query;

use crate::args::{ClientKind, GraphArgs, GraphFormat, TraceArgs, TraceFormat};
use crate::{CLEAN, FAILED, FOUND, input, print};

/// Loads the inputs once and hands the model to `then`; when one cannot be loaded, prints why
/// (as `check` would) and gives up. (The model borrows from what was read, so it is lent to a
/// closure rather than returned.)
fn with_snapshot(
    paths: &[std::path::PathBuf],
    then: impl FnOnce(xdsck_core::model::Snapshot<'_>, &xdsck_core::Sources) -> Result<u8>,
) -> Result<u8> {
    let (sources, mut failed) = input::read_sources(paths, xdsck_core::load::DEFAULT_MAX_BYTES);
    let documents = xdsck_core::read_documents(&sources, &xdsck_core::Options::default());
    let (snapshot, load_failed) = xdsck_core::load_all(&documents);
    failed.extend(load_failed);
    if failed.is_empty() {
        return then(snapshot, &sources);
    }
    let failed_inputs = failed
        .iter()
        .filter_map(|d| d.location.as_ref().map(|l| l.source))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let report = report::Report { findings: failed, failed_inputs, ..Default::default() };
    print(&report::render(report::Format::Text, &report, &sources, RenderOptions::default()))?;
    Ok(FAILED)
}

pub fn run(args: &TraceArgs) -> Result<u8> {
    with_snapshot(&args.paths, |snapshot, sources| trace(args, snapshot, sources))
}

fn trace(args: &TraceArgs, mut snapshot: xdsck_core::model::Snapshot<'_>, sources: &xdsck_core::Sources) -> Result<u8> {
    // One connection goes through one Envoy: the files are its parts.
    snapshot.one_envoy = true;
    xdsck_core::trace::one_proxy(&mut snapshot, args.proxy.as_deref())?;
    let client = args.client.map(|k| match k {
        ClientKind::Tls => xdsck_core::trace::ClientKind::Tls,
        ClientKind::Http1 => xdsck_core::trace::ClientKind::Http1,
        ClientKind::H2c => xdsck_core::trace::ClientKind::H2c,
        ClientKind::Raw => xdsck_core::trace::ClientKind::Raw,
    });
    let attributes = xdsck_core::trace::attributes(
        client,
        args.transport_protocol.as_deref(),
        args.sni.as_deref(),
        &args.alpn,
        args.host.is_some(),
    )
    .map_err(anyhow::Error::msg)?;
    let query = Query {
        listener: args.listener.clone(),
        destination: args.dst,
        source: args.src,
        direct_source: args.direct_src,
        attributes,
    };
    let answer = xdsck_core::trace::trace(&snapshot, sources, &query)?;
    let http = match &args.host {
        Some(host) => Some(xdsck_core::routing::trace::trace_http(&snapshot, &answer, &request(args, host)?)),
        None => None,
    };
    print(&match (args.format, &http) {
        (TraceFormat::Text, None) => trace::text(&answer),
        (TraceFormat::Text, Some(h)) => trace::text(&answer) + &trace::http_text(h),
        (TraceFormat::Json, None) => trace::json(&answer),
        (TraceFormat::Json, Some(h)) => serde_json::to_string_pretty(&trace::with_http(&answer, h))? + "\n",
    })?;
    // Like grep without a match: the connection reaches no chain, or the request no route.
    let unrouted = http.as_ref().is_some_and(|h| h.is_unrouted());
    Ok(if answer.is_closed() || unrouted { FOUND } else { CLEAN })
}

/// The request `--host`, `--path`, `--method` and `--header` describe.
fn request(args: &TraceArgs, host: &str) -> Result<xdsck_core::routing::Request> {
    let mut headers = Vec::new();
    for h in &args.headers {
        let Some(header) = xdsck_core::routing::Request::header(h) else {
            bail!("--header {h:?}: expected NAME:VALUE");
        };
        headers.push(header);
    }
    Ok(xdsck_core::routing::Request {
        host: host.to_owned(),
        path: args.request_path.clone().unwrap_or_else(|| "/".to_owned()),
        method: args.method.clone(),
        headers,
    })
}

pub fn graph(args: &GraphArgs) -> Result<u8> {
    with_snapshot(std::slice::from_ref(&args.path), |snapshot, _| draw(args, snapshot))
}

fn draw(args: &GraphArgs, mut snapshot: xdsck_core::model::Snapshot<'_>) -> Result<u8> {
    xdsck_core::trace::one_proxy(&mut snapshot, args.proxy.as_deref())?;
    let listener = match &args.listener {
        Some(name) => xdsck_core::trace::select_listener(&snapshot, Some(name), None)?.1,
        None => {
            let live: Vec<_> = snapshot.live_listeners().collect();
            match live.as_slice() {
                [one] => *one,
                _ => bail!(
                    "the input has {} listeners; name one with --listener: {}",
                    live.len(),
                    live.iter().map(|l| &*l.name).collect::<Vec<_>>().join(", ")
                ),
            }
        }
    };
    let graph = MatchGraph::build(listener);
    print(&match args.format {
        GraphFormat::Dot => report::graph::dot(&graph),
        GraphFormat::Mermaid => report::graph::mermaid(&graph),
        GraphFormat::Svg => match report::graph::svg(&graph, &[]) {
            Some(svg) => svg,
            None => bail!(
                "listener '{}' has {} nodes, too many to draw (at most {}); use --format dot",
                listener.name,
                graph.node_count(),
                report::graph::MAX_SVG_NODES
            ),
        },
    })?;
    Ok(CLEAN)
}
