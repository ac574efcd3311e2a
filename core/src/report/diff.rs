//! `xdsck diff`'s answer, as text (one block per listener that changes, each class a line with
//! its witness as an `xdsck trace` command) and as JSON.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::chain_match::trace::Client;
use crate::diff::{Class, Diff, Landing, ListenerDiff, Moved, MovedRequest, Status, Witness};
use crate::report::Report;
use crate::source::Sources;

/// One version as the answer names it: its report and its inputs.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// What `check` found in it.
    pub report: &'a Report,
    /// Its inputs.
    pub sources: &'a Sources,
    /// The paths that replay it, as `xdsck trace` takes them (space-separated, shell-quoted).
    pub paths: &'a str,
}

/// A word as a POSIX shell reads it back: quoted when it holds anything but plain characters.
fn shell(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:,=@%+".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The paths of a side, ready for a command line.
pub fn paths<'p>(paths: impl IntoIterator<Item = &'p str>) -> String {
    paths.into_iter().map(shell).collect::<Vec<_>>().join(" ")
}

/// The `xdsck trace` flags that send this connection.
fn connection_flags(listener: &str, w: &Witness) -> String {
    let mut f = format!("--listener {} --dst {} --src {}", shell(listener), w.destination, w.source);
    match &w.client {
        Client::Tls { sni, alpn } => {
            let _ = write!(f, " --sni {}", shell(sni));
            if !alpn.is_empty() {
                let _ = write!(f, " --alpn {}", shell(&alpn.join(",")));
            }
        }
        other => {
            let _ = write!(f, " --client {}", other.kind());
        }
    }
    f
}

fn request_flags(r: &crate::routing::Request) -> String {
    let mut f = format!(" --host {} --path {}", shell(&r.host), shell(&r.path));
    if r.method != "GET" {
        let _ = write!(f, " --method {}", shell(&r.method));
    }
    for (n, v) in &r.headers {
        let _ = write!(f, " --header {}", shell(&format!("{n}: {v}")));
    }
    f
}

fn chain_or_closed(c: Option<&str>) -> String {
    c.map_or_else(|| "closed".to_owned(), |n| format!("'{n}'"))
}

/// A class's keys in words: `tls, server names api.example.com, *.example.com, ALPN h2`.
fn describe_class(c: &Class) -> String {
    let mut out = c.client.to_owned();
    if let Some(r) = c.destination_range {
        let _ = write!(out, ", to {r}");
    }
    if let Some(r) = c.source_range {
        let _ = write!(out, ", from {r}");
    }
    if let Some(p) = c.source_port {
        let _ = write!(out, ", source port {p}");
    }
    if c.client == "tls" {
        let _ = write!(out, ", server names {}", c.server_names.join(", "));
        if c.any_alpn {
            if c.application_protocols.len() > 1 {
                let _ = write!(out, ", any ALPN");
            }
        } else {
            let cells: Vec<String> = c
                .application_protocols
                .iter()
                .map(|cell| match cell.as_slice() {
                    [] => "none named".to_owned(),
                    [one] => format!("{one} first"),
                    [a, b] => format!("{a} before {b}"),
                    more => more.join(","),
                })
                .collect();
            let _ = write!(out, ", ALPN {}", cells.join(" or "));
        }
    }
    out
}

fn describe_landing(l: &Landing) -> String {
    if l.undecided {
        return "undecided".to_owned();
    }
    match (&l.virtual_host, &l.route, &l.action) {
        (None, _, _) => "404 (no virtual host)".to_owned(),
        (Some(v), None, None) => format!("virtual host '{v}': 404 (no route)"),
        (Some(v), Some(r), Some(a)) => format!("virtual host '{v}' route {r}: {a}"),
        (Some(v), _, Some(a)) => format!("virtual host '{v}': {a}"),
        (Some(v), Some(r), None) => format!("virtual host '{v}' route {r}"),
    }
}

/// As text.
pub fn text(diff: &Diff, old: Side<'_>, new: Side<'_>) -> String {
    let mut out = String::new();
    // The listeners nothing happens to are counted, not listed (JSON lists them all).
    for l in diff.listeners.iter().filter(|l| l.status != Status::Unchanged || !l.notes.is_empty()) {
        let renamed = l.old_name.as_ref().map(|o| format!(" (was '{o}')")).unwrap_or_default();
        let _ = writeln!(out, "listener '{}'{renamed}: {}", l.name, l.status.as_str());
        for m in &l.connections {
            let _ = writeln!(
                out,
                "  connections: {}: {} -> {}",
                describe_class(&m.class),
                chain_or_closed(m.old.as_deref()),
                chain_or_closed(m.new.as_deref())
            );
            let _ = writeln!(out, "    xdsck trace {} {}", new.paths, connection_flags(&l.name, &m.connection));
        }
        for r in &l.requests {
            let chains: Vec<String> = r
                .chains
                .iter()
                .map(|(o, n)| if o == n { format!("'{o}'") } else { format!("'{o}' -> '{n}'") })
                .collect();
            let c = &r.class;
            let more = match c.also.as_slice() {
                [] => String::new(),
                [one] => format!(" and {one}"),
                [first, rest @ ..] => format!(" and {first} (and {} more)", rest.len()),
            };
            let _ = writeln!(
                out,
                "  requests: {} {}{more}, Host {} (chains {}): {} -> {}",
                c.request.method,
                c.request.path,
                c.hosts.join(", "),
                chains.join(", "),
                describe_landing(&c.old),
                describe_landing(&c.new)
            );
            let _ = writeln!(
                out,
                "    xdsck trace {} {}{}",
                new.paths,
                connection_flags(&l.name, &r.connection),
                request_flags(&c.request)
            );
        }
        for n in &l.notes {
            let _ = writeln!(out, "  note: {n}");
        }
    }
    let count = |status: Status| diff.listeners.iter().filter(|l| l.status == status).count();
    let listeners: Vec<String> = [Status::Changed, Status::Added, Status::Removed, Status::Rejected, Status::Unchanged]
        .into_iter()
        .map(|s| format!("{} {}", count(s), s.as_str()))
        .collect();
    let _ = writeln!(
        out,
        "{} listeners: {}; classes that land elsewhere: {} of connections, {} of requests; findings: {} new, {} fixed",
        diff.listeners.len(),
        listeners.join(", "),
        diff.listeners.iter().map(|l| l.connections.len()).sum::<usize>(),
        diff.listeners.iter().map(|l| l.requests.len()).sum::<usize>(),
        diff.new_findings.len(),
        diff.fixed_findings.len()
    );
    for &i in &diff.new_findings {
        let _ = writeln!(out, "+ {}", crate::report::line::watch(&new.report.findings[i]));
    }
    for &i in &diff.fixed_findings {
        let _ = writeln!(out, "- {}", crate::report::line::watch(&old.report.findings[i]));
    }
    out
}

fn witness_json(w: &Witness) -> Value {
    let (sni, alpn) = match &w.client {
        Client::Tls { sni, alpn } => (Some(sni.clone()), alpn.clone()),
        _ => (None, Vec::new()),
    };
    json!({
        "destination": w.destination.to_string(),
        "source": w.source.to_string(),
        "client": w.client.kind(),
        "server_name": sni,
        "application_protocols": alpn,
    })
}

fn connection_json(m: &Moved) -> Value {
    let c = &m.class;
    json!({
        "match": {
            "destination_range": c.destination_range.map(|r| r.to_string()),
            "destination_port": c.destination_port,
            "source_range": c.source_range.map(|r| r.to_string()),
            "source_port": c.source_port,
            "client": c.client,
            "server_names": c.server_names,
            "application_protocols": c.application_protocols,
            "any_application_protocol": c.any_alpn,
        },
        "connection": witness_json(&m.connection),
        "old": m.old,
        "new": m.new,
    })
}

fn landing_json(l: &Landing) -> Value {
    json!({
        "virtual_host": l.virtual_host,
        "route": l.route,
        "action": l.action.as_ref().map(crate::report::trace::action_json),
        "undecided": l.undecided,
    })
}

fn request_json(r: &MovedRequest) -> Value {
    let c = &r.class;
    json!({
        "chains": r.chains.iter().map(|(o, n)| json!({"old": o, "new": n})).collect::<Vec<_>>(),
        "match": {"hosts": c.hosts, "requests": std::iter::once(c.request.without_host()).chain(c.also.iter().cloned()).collect::<Vec<_>>()},
        "connection": witness_json(&r.connection),
        "request": {
            "host": c.request.host,
            "path": c.request.path,
            "method": c.request.method,
            "headers": c.request.headers.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
        },
        "old": landing_json(&c.old),
        "new": landing_json(&c.new),
    })
}

fn listener_json(l: &ListenerDiff) -> Value {
    json!({
        "name": l.name,
        "old_name": l.old_name,
        "status": l.status.as_str(),
        "connections": l.connections.iter().map(connection_json).collect::<Vec<_>>(),
        "requests": l.requests.iter().map(request_json).collect::<Vec<_>>(),
        "notes": l.notes,
    })
}

/// As JSON (`--format json`), one object, pretty-printed.
pub fn json(diff: &Diff, old: Side<'_>, new: Side<'_>) -> String {
    let pick = |side: Side<'_>, at: &[usize]| -> Vec<Value> {
        at.iter().map(|&i| crate::report::json::finding_value(&side.report.findings[i], side.sources)).collect()
    };
    let value = json!({
        "listeners": diff.listeners.iter().map(listener_json).collect::<Vec<_>>(),
        "findings": {"new": pick(new, &diff.new_findings), "fixed": pick(old, &diff.fixed_findings)},
    });
    serde_json::to_string_pretty(&value).expect("plain data serializes") + "\n"
}
