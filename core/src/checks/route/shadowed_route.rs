//! `shadowed-route`: a route that never matches because an earlier route of the same virtual
//! host takes every request it would. Routes are tried in order and the first match wins.
//!
//! Decided only where it is certain: the earlier route tests nothing xdsck cannot compare (no
//! `runtime_fraction`, gRPC or TLS predicates, no regex path), its header and query parameter
//! matchers are all among the later route's, and its path takes every path of the later one.
//!
//! [`covers`] says it for one pair of routes. A long virtual host's routes are not tried in
//! pairs ([`Earlier`] finds the first route that covers each one), because a virtual host may
//! hold thousands: pairwise, a virtual host of 5k routes of distinct prefixes took 0.23 s and one
//! of 20k 3.75 s (one thread); with the index, 0.01 s and 0.04 s. A short one's are (up to
//! [`PAIRWISE`]): building the index's maps and tries for a gateway's few routes a host cost
//! some seven times what comparing them does.

use crate::checks::{Check, Context, Reads, TableCx};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::hashing::InputMap;
use crate::model::route::{
    HeaderMatch, HeaderMatcher, PathSpec, QueryParameterMatcher, Route, RouteMatch, RouteTable, VirtualHost,
};
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

/// Up to this many routes, a virtual host's are compared pair by pair (at most 120 pairs)
/// rather than indexed: both find the same first covering route (a unit test draws routes and
/// compares them).
const PAIRWISE: usize = 16;

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
    let (ecs, lcs) = (e.case_sensitive(), l.case_sensitive());
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
    e.unevaluated().is_empty()
        && e.headers.iter().all(|h| l.headers.contains(h))
        && e.query_parameters().iter().all(|q| l.query_parameters().contains(q))
        && !matches!(l.path, PathSpec::Missing | PathSpec::Connect | PathSpec::Policy)
        && path_covers(e, l)
}

/// A path that never matches: the query string is removed before matching.
fn never(s: &str) -> bool {
    s.contains(['?', '#'])
}

/// The routes of one virtual host seen so far, indexed to find the first that covers a later
/// one: what [`covers`] asks of each earlier route, asked of all at once. An earlier route
/// covers a later one when its condition set (its header and query parameter matchers) is a
/// subset of the later one's and its path takes every path of the later one; the routes are
/// grouped by condition set, and each group's paths are in tries walked along the later path.
#[derive(Default)]
struct Earlier<'v, 'a> {
    /// Every header and query parameter matcher seen, by id (headers even, parameters odd).
    headers: InputMap<&'v HeaderMatcher<'a>, usize>,
    queries: InputMap<&'v QueryParameterMatcher<'a>, usize>,
    /// The groups, by condition set (its ids sorted): an index into `groups`.
    group_of: InputMap<Box<[usize]>, usize>,
    groups: Vec<(Box<[usize]>, Paths)>,
}

/// The paths of one group's routes. Each kind twice: case-sensitive routes by the text as
/// written, case-insensitive ones by the text lower-cased.
#[derive(Default)]
struct Paths {
    prefix: [Trie; 2],
    separated: [Trie; 2],
    exact: [InputMap<String, usize>; 2],
}

/// Path texts byte by byte; each node holds the first route whose text ends there.
#[derive(Default)]
struct Trie {
    nodes: Vec<TrieNode>,
}

#[derive(Default)]
struct TrieNode {
    first: Option<usize>,
    children: Vec<(u8, usize)>,
}

impl Trie {
    fn insert(&mut self, text: impl Iterator<Item = u8>, route: usize) {
        if self.nodes.is_empty() {
            self.nodes.push(TrieNode::default());
        }
        let mut at = 0;
        for b in text {
            at = match self.nodes[at].children.iter().find(|&&(c, _)| c == b) {
                Some(&(_, next)) => next,
                None => {
                    let next = self.nodes.len();
                    self.nodes.push(TrieNode::default());
                    self.nodes[at].children.push((b, next));
                    next
                }
            };
        }
        self.nodes[at].first.get_or_insert(route);
    }

    /// Each node along `text` from the root, with how many bytes of it lead there, for as long
    /// as the trie follows the text.
    fn along(&self, text: &[u8], mut visit: impl FnMut(usize, &TrieNode)) {
        let Some(mut node) = self.nodes.first() else { return };
        visit(0, node);
        for (k, b) in text.iter().enumerate() {
            match node.children.iter().find(|&&(c, _)| c == *b) {
                Some(&(_, next)) => node = &self.nodes[next],
                None => return,
            }
            visit(k + 1, node);
        }
    }
}

impl Paths {
    fn add(&mut self, m: &RouteMatch, route: usize) {
        let slot = usize::from(!m.case_sensitive());
        let text = |p: &str| if slot == 1 { p.to_ascii_lowercase() } else { p.to_owned() };
        match &m.path {
            PathSpec::Prefix(p) if !never(p) => self.prefix[slot].insert(text(p).bytes(), route),
            PathSpec::PathSeparatedPrefix(p) if !never(p) => self.separated[slot].insert(text(p).bytes(), route),
            PathSpec::Path(p) if !never(p) => {
                self.exact[slot].entry(text(p)).or_insert(route);
            }
            _ => {}
        }
    }

    /// The first of the group's routes whose path takes every path of `l` (`lower`: its path
    /// text lower-cased).
    fn first_covering(&self, l: &RouteMatch, lower: &str) -> Option<usize> {
        let (q, is_path, is_prefix) = match &l.path {
            PathSpec::Prefix(q) => (q, false, true),
            PathSpec::Path(q) => (q, true, false),
            PathSpec::PathSeparatedPrefix(q) => (q, false, false),
            // An empty prefix takes every request that has a path.
            PathSpec::SafeRegex(_) => {
                let root = |t: &Trie| t.nodes.first().and_then(|n| n.first);
                return self.prefix.iter().filter_map(root).min();
            }
            _ => return None,
        };
        if never(q) {
            return None;
        }
        let mut best: Option<usize> = None;
        let mut take = |r: Option<usize>| {
            if let Some(r) = r {
                best = Some(best.map_or(r, |b| b.min(r)));
            }
        };
        // A case-sensitive earlier route covers a case-insensitive later one only when the
        // later text has no letters: otherwise the later one takes spellings it misses.
        let sensitive = l.case_sensitive() || !q.bytes().any(|b| b.is_ascii_alphabetic());
        for (slot, text) in [(0, &**q), (1, lower)] {
            if slot == 0 && !sensitive {
                continue;
            }
            let (text, whole) = (text.as_bytes(), text);
            self.prefix[slot].along(text, |_, n| take(n.first));
            // `p` takes `p` itself (unless the later route is a prefix) and `p/...`.
            self.separated[slot].along(text, |k, n| {
                if (k == text.len() && !is_prefix) || text.get(k) == Some(&b'/') {
                    take(n.first);
                }
            });
            if is_path {
                take(self.exact[slot].get(whole).copied());
            }
        }
        best
    }
}

impl<'v, 'a> Earlier<'v, 'a> {
    /// The ids of a route's conditions, sorted; matchers not seen before get one.
    fn intern(&mut self, m: &'v RouteMatch<'a>) -> Vec<usize> {
        let mut ids = Vec::with_capacity(m.headers.len() + m.query_parameters().len());
        for h in &m.headers {
            let next = 2 * self.headers.len();
            ids.push(*self.headers.entry(h).or_insert(next));
        }
        for q in m.query_parameters() {
            let next = 2 * self.queries.len() + 1;
            ids.push(*self.queries.entry(q).or_insert(next));
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The ids of a route's conditions that earlier routes have, sorted (no earlier route has
    /// the others).
    fn known(&self, m: &RouteMatch<'a>) -> Vec<usize> {
        let headers = m.headers.iter().filter_map(|h| self.headers.get(h));
        let mut ids: Vec<usize> =
            headers.chain(m.query_parameters().iter().filter_map(|q| self.queries.get(q))).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    fn add(&mut self, r: &'v Route<'a>, route: usize) {
        let m = &r.matcher;
        if !m.unevaluated().is_empty() {
            return;
        }
        let key: Box<[usize]> = self.intern(m).into();
        let at = match self.group_of.get(&key) {
            Some(&at) => at,
            None => {
                self.groups.push((key.clone(), Paths::default()));
                self.group_of.insert(key, self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        self.groups[at].1.add(m, route);
    }

    /// The first earlier route that takes every request `r` takes.
    fn first_covering(&self, r: &Route<'a>) -> Option<usize> {
        let l = &r.matcher;
        if self.groups.is_empty() {
            return None;
        }
        let have = self.known(l);
        let lower = match &l.path {
            PathSpec::Prefix(q) | PathSpec::Path(q) | PathSpec::PathSeparatedPrefix(q) => q.to_ascii_lowercase(),
            _ => String::new(),
        };
        let first = |paths: &Paths| paths.first_covering(l, &lower);
        // The groups whose conditions are a subset of the later route's: each subset looked
        // up when there are fewer subsets than groups, else each group tried.
        if have.len() < usize::BITS as usize - 1 && 1usize << have.len() <= self.groups.len() {
            (0..1usize << have.len())
                .filter_map(|bits| {
                    let key: Vec<usize> =
                        (have.iter().enumerate()).filter(|&(i, _)| bits & (1 << i) != 0).map(|(_, &id)| id).collect();
                    self.group_of.get(key.as_slice()).and_then(|&at| first(&self.groups[at].1))
                })
                .min()
        } else {
            (self.groups.iter())
                .filter(|(key, _)| key.iter().all(|id| have.binary_search(id).is_ok()))
                .filter_map(|(_, paths)| first(paths))
                .min()
        }
    }
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
    for q in later.matcher.query_parameters() {
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
            describe_path(&m.path, m.case_sensitive()),
        ),
    )
    .at(t.location(&t.table.route_pointer(vh, later)))
    .related("the earlier route that wins", t.location(&t.table.route_pointer(vh, earlier)));
    if let (Some(path), Some(host)) = (witness_path(later), host) {
        let headers = if later.matcher.headers.is_empty() { "" } else { " (with the headers it asks for)" };
        d = d
            .note(format!(
                "e.g. Host {host:?}, path {path:?}{headers} goes to {} and never to {}",
                earlier.display_name(),
                later.display_name()
            ))
            .with_example("host", host)
            .with_example("path", path);
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
                let mut earlier = Earlier::default();
                let pairwise = vh.routes.len() <= PAIRWISE;
                for (j, later) in vh.routes.iter().enumerate() {
                    let first = match pairwise {
                        true => vh.routes[..j].iter().position(|e| covers(e, later)),
                        false => earlier.first_covering(later),
                    };
                    if let Some(i) = first {
                        let first = &vh.routes[i];
                        debug_assert!(covers(first, later), "route {i} does not cover route {j}");
                        let index = index.get_or_insert_with(|| DomainIndex::build(t.table));
                        let strips = t.hcm.is_some_and(|h| h.strip_any_host_port || h.strip_matching_host_port);
                        let host = witness_host(index, t.table, v, strips);
                        out.push(diagnostic(&t, vh, host, first, later));
                    }
                    if !pairwise {
                        earlier.add(later, j);
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
        RouteMatch::of_path(path, cs)
    }

    /// The index finds, for every route, the first earlier route [`covers`] says takes all of
    /// it, or none when no earlier one does: on routes drawn from few letters, so that prefixes,
    /// cases, separators, query strings and condition sets meet often.
    #[test]
    fn the_index_finds_the_first_covering_route_as_pairs_do() {
        use crate::model::route::Action;
        let mut next = crate::test_support::draws(0x9e37_79b9_7f4a_7c15_u64);
        let texts = ["", "/", "/a", "/A", "/a/", "/a/b", "/ab", "/a/B", "/b", "/a?x", "/a/b/c", "/1", "/1/2"];
        let headers: Vec<HeaderMatcher> = ["x", "y", "z"]
            .into_iter()
            .map(|n| HeaderMatcher {
                name: n.into(),
                kind: HeaderMatch::Present(true),
                invert_match: false,
                treat_missing_header_as_empty: false,
            })
            .collect();
        let query = QueryParameterMatcher { name: "q".into(), kind: HeaderMatch::Present(true) };
        let (mut found, mut routes_seen) = (0, 0);
        for _ in 0..300 {
            let routes: Vec<Route> = (0..40)
                .map(|i| {
                    let t: crate::model::Text = texts[next(texts.len() as u64) as usize].into();
                    let path = match next(7) {
                        0 | 1 => PathSpec::Prefix(t),
                        2 | 3 => PathSpec::Path(t),
                        4 | 5 => PathSpec::PathSeparatedPrefix(t),
                        _ => [PathSpec::SafeRegex(".*".into()), PathSpec::Connect, PathSpec::Missing][next(3) as usize]
                            .clone(),
                    };
                    // Arguments are evaluated in order, as the fields were: the same draws.
                    let matcher = RouteMatch::new(
                        path,
                        next(3) != 0,
                        headers.iter().filter(|_| next(4) == 0).cloned().collect(),
                        std::iter::once(query.clone()).filter(|_| next(5) == 0).collect(),
                        if next(12) == 0 { thin_vec::thin_vec!["runtime_fraction"] } else { thin_vec::ThinVec::new() },
                    );
                    Route { name: None, index: i, matcher, action: Action::Cluster("c".into()), mirrors: None }
                })
                .collect();
            let mut earlier = Earlier::default();
            for (j, later) in routes.iter().enumerate() {
                let want = routes[..j].iter().position(|e| covers(e, later));
                assert_eq!(earlier.first_covering(later), want, "route {j}: {later:?}\nafter {:?}", &routes[..j]);
                found += usize::from(want.is_some());
                routes_seen += 1;
                earlier.add(later, j);
            }
        }
        // Both answers are common: the comparison means something.
        assert!(found > routes_seen / 10 && found < routes_seen * 9 / 10, "{found} of {routes_seen}");
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
