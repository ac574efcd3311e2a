//! `shadowed-route`: a route that never matches because an earlier route of the same virtual
//! host takes every request it would. Routes are tried in order and the first match wins.
//!
//! Decided only where it is certain: the earlier route tests nothing xdsck cannot compare (no
//! `runtime_fraction`, query parameters, gRPC or TLS predicates, no regex path), its header
//! matchers are all among the later route's, and its path takes every path of the later one.

use crate::checks::{Check, Context, Reads, TableCx};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::route::{HeaderMatch, PathSpec, Route, RouteMatch, RouteTable, VirtualHost};
use crate::routing::{Bucket, DomainIndex, describe_path, domain_key};

declare_rule! {
    pub(crate) static RULE for ShadowedRoute = {
        code: "XDS211",
        name: "shadowed-route",
        severity: Severity::Warning,
        summary: "A route can never match: an earlier route of the same virtual host takes every request it would.",
        explanation: "shadowed_route.md",
    }
}

pub(crate) struct ShadowedRoute;

/// Whether paths starting with (or equal to) `later` under `later_cs` all start with (equal)
/// `earlier` under `earlier_cs`.
fn text_covers(earlier: &str, earlier_cs: bool, later: &str, later_cs: bool, prefix: bool) -> bool {
    let test = |e: &str, l: &str| if prefix { l.starts_with(e) } else { l == e };
    if !earlier_cs {
        test(&earlier.to_ascii_lowercase(), &later.to_ascii_lowercase())
    } else if later_cs || !later.bytes().any(|b| b.is_ascii_alphabetic()) {
        test(earlier, later)
    } else {
        // A case-insensitive later route takes spellings a case-sensitive earlier one misses.
        false
    }
}

/// Whether every path the later match takes, the earlier one takes too.
fn path_covers(e: &RouteMatch, l: &RouteMatch) -> bool {
    let (ecs, lcs) = (e.case_sensitive, l.case_sensitive);
    let never = |s: &str| s.contains(['?', '#']);
    match (&e.path, &l.path) {
        // The query string is removed before matching: a prefix with `?` never matches.
        (PathSpec::Prefix(p), _) if never(p) => false,
        (_, PathSpec::Prefix(q) | PathSpec::Path(q) | PathSpec::PathSeparatedPrefix(q)) if never(q) => false,
        // An empty prefix takes every request that has a path.
        (PathSpec::Prefix(p), PathSpec::SafeRegex(_)) => p.is_empty(),
        (PathSpec::Prefix(p), PathSpec::Prefix(q) | PathSpec::Path(q) | PathSpec::PathSeparatedPrefix(q)) => {
            text_covers(p, ecs, q, lcs, true)
        }
        (PathSpec::Path(p), PathSpec::Path(q)) => text_covers(p, ecs, q, lcs, false),
        (PathSpec::PathSeparatedPrefix(p), PathSpec::Path(q) | PathSpec::PathSeparatedPrefix(q)) => {
            text_covers(p, ecs, q, lcs, false) || text_covers(&format!("{p}/"), ecs, q, lcs, true)
        }
        (PathSpec::PathSeparatedPrefix(p), PathSpec::Prefix(q)) => text_covers(&format!("{p}/"), ecs, q, lcs, true),
        _ => false,
    }
}

/// Whether the earlier route takes every request the later one takes.
fn covers(earlier: &Route, later: &Route) -> bool {
    let (e, l) = (&earlier.matcher, &later.matcher);
    e.unevaluated.is_empty()
        && e.headers.iter().all(|h| l.headers.contains(h))
        && e.query_parameters.iter().all(|q| l.query_parameters.contains(q))
        && !matches!(l.path, PathSpec::Missing | PathSpec::Connect | PathSpec::Policy)
        && path_covers(e, l)
}

/// A Host that picks this virtual host (index `v`) in its table: one of its domains, a wildcard
/// filled in. Hosts with a port come last (a table may ignore ports), and are left out when the
/// HCM strips ports before routing.
fn witness_host(index: &DomainIndex, table: &RouteTable, v: usize, strips_ports: bool) -> Option<String> {
    let mut candidates: Vec<String> = table.virtual_hosts[v]
        .domains
        .iter()
        .map(|d| {
            let (bucket, key) = domain_key(d);
            match bucket {
                Bucket::Exact => key,
                Bucket::Suffix => format!("x{key}"),
                Bucket::Prefix => format!("{key}x"),
                Bucket::Default => "unlisted.example".to_owned(),
            }
        })
        .collect();
    if strips_ports {
        candidates.retain(|h| crate::routing::port_start(h).is_none());
    }
    candidates.sort_by_key(|h| h.contains(':'));
    candidates.into_iter().find(|h| index.domain_for(table, h).map(|(i, _)| i) == Some(v))
}

/// A path the later route takes, with a query string its query parameters take.
fn witness_path(later: &Route) -> Option<String> {
    let mut path = match &later.matcher.path {
        PathSpec::Prefix(q) | PathSpec::Path(q) | PathSpec::PathSeparatedPrefix(q) if !q.is_empty() => q.to_string(),
        PathSpec::Prefix(_) => "/".to_owned(),
        _ => return None,
    };
    let mut query = Vec::new();
    for q in &later.matcher.query_parameters {
        let value = match &q.kind {
            HeaderMatch::Exact { value, .. }
            | HeaderMatch::Prefix { value, .. }
            | HeaderMatch::Suffix { value, .. }
            | HeaderMatch::Contains { value, .. } => Some(value),
            HeaderMatch::Present(true) => None,
            HeaderMatch::Present(false) => continue,
            HeaderMatch::Regex(_) | HeaderMatch::Other(_) => return None,
        };
        query.push(match value {
            Some(v) => format!("{}={v}", q.name),
            None => q.name.to_string(),
        });
    }
    if !query.is_empty() {
        path = format!("{path}?{}", query.join("&"));
    }
    Some(path)
}

fn diagnostic(
    t: &TableCx<'_, '_>,
    vh: &VirtualHost,
    host: Option<String>,
    earlier: &Route,
    later: &Route,
) -> Diagnostic {
    let m = &earlier.matcher;
    let mut d = Diagnostic::new(
        &RULE,
        format!(
            "route {} of virtual host '{}' never matches: route {} before it ({}) takes every request it matches",
            later.display_name(),
            vh.name,
            earlier.display_name(),
            describe_path(&m.path, m.case_sensitive),
        ),
    )
    .at(t.location(&later.pointer()))
    .related("the earlier route that wins", t.location(&earlier.pointer()));
    if let (Some(path), Some(host)) = (witness_path(later), host) {
        let headers = if later.matcher.headers.is_empty() { "" } else { " (with the headers it asks for)" };
        d = d
            .note(format!(
                "e.g. Host {host:?}, path {path:?}{headers} goes to {} and never to {}",
                earlier.display_name(),
                later.display_name()
            ))
            .example("host", host)
            .example("path", path);
    }
    t.attach(d.note("routes are tried in order and the first match wins: move the more specific route up"))
}

impl Check for ShadowedRoute {
    fn reads(&self) -> Reads {
        Reads::ROUTES
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for t in cx.route_tables() {
            let mut index = None;
            for (v, vh) in t.table.virtual_hosts.iter().enumerate() {
                // Each route is reported once, against the first route that takes all of it.
                // Quadratic in the routes of one virtual host, which hold tens, not thousands.
                for (j, later) in vh.routes.iter().enumerate() {
                    if let Some(earlier) = vh.routes[..j].iter().find(|e| covers(e, later)) {
                        let index = index.get_or_insert_with(|| DomainIndex::build(t.table));
                        let strips = t.hcm.is_some_and(|h| h.strip_any_host_port || h.strip_matching_host_port);
                        let host = witness_host(index, t.table, v, strips);
                        out.push(diagnostic(&t, vh, host, earlier, later));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(path: PathSpec, cs: bool) -> RouteMatch {
        RouteMatch { path, case_sensitive: cs, ..RouteMatch::default() }
    }

    #[test]
    fn path_cover_follows_envoys_match_rules() {
        use PathSpec::*;
        let p = |s: &'static str| Prefix(s.into());
        assert!(path_covers(&m(p("/api"), true), &m(p("/api/v1"), true)));
        assert!(!path_covers(&m(p("/api/v1"), true), &m(p("/api"), true)));
        assert!(path_covers(&m(p("/API"), false), &m(Path("/api/x".into()), true)));
        assert!(!path_covers(&m(p("/API"), true), &m(p("/api"), false)));
        assert!(path_covers(&m(PathSeparatedPrefix("/a".into()), true), &m(p("/a/b"), true)));
        assert!(!path_covers(&m(PathSeparatedPrefix("/a".into()), true), &m(p("/ab"), true)));
        assert!(path_covers(&m(p(""), true), &m(SafeRegex(".*".into()), true)));
        assert!(!path_covers(&m(p("/a?"), true), &m(p("/a?b"), true)));
    }
}
