//! `xdsck trace`'s answers, for a person and as JSON: the connection's ([`Answer`]) and the
//! request's past the chain ([`HttpAnswer`]), and the traced listener's index drawn with the
//! connection's path. The CLI and the page print these bytes; `trace` and `routing::trace`
//! return data.

use std::fmt::Write as _;

use crate::chain_match::select::ListenerMatch;
use crate::chain_match::trace::Outcome;
use crate::model::Snapshot;
use crate::model::route::Action;
use crate::routing::trace::HttpAnswer;
use crate::trace::Answer;

/// A value the question did not give, as a trace prints it.
const NOT_GIVEN: &str = "(not given)";
/// A value the client does not send (no SNI, no ALPN), as a trace prints it.
const NONE: &str = "(none)";

fn outcome(answer: &Answer) -> &'static str {
    match answer.trace.outcome {
        Outcome::Chain(_) => "filter_chain",
        Outcome::Default => "default_filter_chain",
        Outcome::Closed => "closed",
        Outcome::NeedsInput(_) => "needs_input",
    }
}

/// The answer as one JSON object.
pub fn json(answer: &Answer) -> String {
    let mut out = serde_json::to_string_pretty(&value(answer)).expect("JSON values serialise");
    out.push('\n');
    out
}

/// [`json`]'s object, for a caller that adds to it ([`with_http`]).
fn value(answer: &Answer) -> serde_json::Value {
    let c = &answer.connection;
    serde_json::json!({
        "source": answer.source,
        "proxy": answer.proxy,
        "listener": answer.listener,
        "filter_chain": answer.filter_chain,
        "outcome": outcome(answer),
        "tcp_proxy": answer.tcp_proxy.as_ref().map(|c| serde_json::json!({"clusters": c})),
        "connection": {
            "destination": c.destination.map(|d| d.to_string()),
            "source": c.source.map(|s| s.to_string()),
            "direct_source": c.direct_source.map(|s| s.to_string()),
            "transport_protocol": c.transport_protocol,
            "server_name": c.server_name,
            "application_protocols": c.application_protocols,
        },
        "levels": answer.trace.steps.iter().map(|s| serde_json::json!({
            "level": s.level.as_str(),
            "value": s.value,
            "chosen": s.chosen,
            "ambiguous": s.ambiguous,
            "lost": s.lost.iter().map(|(k, why)| serde_json::json!({"key": k, "why": why})).collect::<Vec<_>>(),
            "unmatched": s.unmatched,
            "unmatched_keys": s.unmatched_keys,
        })).collect::<Vec<_>>(),
        "notes": answer.notes,
    })
}

/// The answer for a person.
pub fn text(answer: &Answer) -> String {
    let mut out = String::new();
    let c = &answer.connection;
    let _ = match &answer.proxy {
        Some(proxy) => writeln!(out, "listener {} ({}, proxy {proxy})", answer.listener_display, answer.source),
        None => writeln!(out, "listener {} ({})", answer.listener_display, answer.source),
    };
    // Spelt as the levels below spell them: `(not given)` for what the question left out,
    // `(none)` for what the client does not send.
    let _ = writeln!(
        out,
        "connection: dst {} src {} transport {} sni {} alpn {}",
        c.destination.map_or(NOT_GIVEN.into(), |d| d.to_string()),
        c.source.map_or(NOT_GIVEN.into(), |s| s.to_string()),
        c.transport_protocol,
        if c.server_name.is_empty() { NONE } else { &c.server_name },
        if c.application_protocols.is_empty() { NONE.to_owned() } else { c.application_protocols.join(",") },
    );
    for s in &answer.trace.steps {
        let chosen = s.chosen.as_deref().unwrap_or("nothing matches");
        let _ = writeln!(
            out,
            "  {:<21} {:<28} -> {}{}",
            s.level.as_str(),
            s.value,
            chosen,
            if s.ambiguous { "  (undefined choice)" } else { "" }
        );
        for (k, why) in &s.lost {
            let _ = writeln!(out, "  {:<21} {:<28}    not {k}: {why}", "", "");
        }
        if s.chosen.is_none() {
            for k in &s.unmatched_keys {
                let _ = writeln!(out, "  {:<21} {:<28}    not {k}: does not match {}", "", "", s.value);
            }
            let more = s.unmatched.saturating_sub(s.unmatched_keys.len());
            if more > 0 {
                let _ = writeln!(out, "  {:<21} {:<28}    and {more} more, none of which matches", "", "");
            }
        }
    }
    let proxied = answer.tcp_proxy.as_ref().map_or_else(String::new, |c| {
        format!(": tcp_proxy passes the connection to {}", crate::trace::describe_tcp_proxy(c))
    });
    let _ = match (&answer.trace.outcome, &answer.filter_chain) {
        (Outcome::Chain(_), Some(name)) => writeln!(out, "=> filter chain {name}{proxied}"),
        (Outcome::Default, Some(name)) => {
            writeln!(out, "=> no chain matches: default_filter_chain {name}{proxied}")
        }
        (Outcome::NeedsInput(_), _) => writeln!(out, "=> undecided"),
        _ => writeln!(out, "=> no chain matches and there is no default chain: Envoy closes the connection"),
    };
    for n in &answer.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The request's decision as the `http` object of `trace --format json`.
pub fn http_json(http: &HttpAnswer) -> serde_json::Value {
    serde_json::json!({
        "route_config": http.route_config,
        "virtual_host": http.virtual_host,
        "route": http.route,
        "action": http.action.as_ref().map(action_json),
        "undecided": http.undecided,
        "tcp_proxy": http.tcp_proxy.as_ref().map(|c| serde_json::json!({"clusters": c})),
        "steps": http.steps.iter().map(|(s, t)| serde_json::json!({"stage": s, "detail": t})).collect::<Vec<_>>(),
    })
}

/// The connection's answer ([`json`]) with the request's decision as one more key, `http`,
/// last: what `xdsck trace --host` prints and the page shows.
pub fn with_http(answer: &Answer, http: &HttpAnswer) -> serde_json::Value {
    let mut value = value(answer);
    if let Some(o) = value.as_object_mut() {
        o.insert("http".to_owned(), http_json(http));
    }
    value
}

/// The request's decision as lines following the connection's trace ([`text`]).
pub fn http_text(http: &HttpAnswer) -> String {
    let mut out = String::new();
    for (stage, text) in &http.steps {
        let _ = writeln!(out, "  {stage:<21} {text}");
    }
    let _ = match (&http.route, &http.action) {
        (Some(r), Some(a)) => writeln!(out, "=> route {r}: {a}"),
        (None, Some(a)) => writeln!(out, "=> {a}"),
        _ if http.undecided => writeln!(out, "=> undecided"),
        _ if let Some(c) = &http.tcp_proxy => {
            writeln!(out, "=> not routed: tcp_proxy passes the connection to {}", crate::trace::describe_tcp_proxy(c))
        }
        _ => writeln!(out, "=> no route: Envoy answers 404"),
    };
    out
}

/// An action as the `action` object of `trace --format json`: its kind and its target.
pub fn action_json(action: &Action) -> serde_json::Value {
    use serde_json::json;
    match action {
        Action::Cluster(c) => json!({"kind": "cluster", "cluster": c}),
        Action::WeightedClusters(w) => json!({
            "kind": "weighted_clusters",
            "clusters": w.iter().map(|(n, weight)| json!({"name": n, "weight": weight})).collect::<Vec<_>>(),
        }),
        Action::ClusterHeader(h) => json!({"kind": "cluster_header", "header": h}),
        Action::ClusterPlugin => json!({"kind": "cluster_specifier_plugin"}),
        Action::Redirect(to) => json!({"kind": "redirect", "redirect": to}),
        Action::DirectResponse { status, body } => json!({"kind": "direct_response", "status": status, "body": body}),
        Action::Other(k) => json!({"kind": k}),
        Action::Missing => json!({"kind": "none"}),
    }
}

/// The traced listener's match graph as SVG, the connection's path drawn in colour level by
/// level; `None` for a listener that selects chains with `filter_chain_matcher` (no index) or
/// whose graph is too big to draw (see [`super::graph::svg`]).
pub fn graph_svg(snapshot: &Snapshot<'_>, answer: &Answer) -> Option<String> {
    let (_, listener) = crate::trace::select_listener(snapshot, Some(&answer.listener), None).ok()?;
    // The graph is built the same way every time, so the trace's node indices are this one's.
    super::graph::listener_svg(&ListenerMatch::build(listener), &answer.trace.path)
}
