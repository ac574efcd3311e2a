//! How Envoy routes one HTTP request in a route table: the virtual host by Host alone, then the
//! first route of that virtual host whose match holds (docs/envoy-routing.md).
//!
//! The domain index is built once per table and reports what makes Envoy refuse the table (a
//! repeated domain, a second `*`) instead of stopping at the first, as Envoy does.

pub mod trace;

use crate::hashing::InputMap;

use crate::model::route::{HeaderMatch, HeaderMatcher, PathSpec, Route, RouteTable, VirtualHost};

/// The four kinds of domain Envoy indexes, in the order it searches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Bucket {
    Exact,
    /// `*x`: the key is what follows the `*`.
    Suffix,
    /// `x*`: the key is what precedes the `*`.
    Prefix,
    /// The one `*`.
    Default,
}

impl Bucket {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Bucket::Exact => "exact",
            Bucket::Suffix => "suffix wildcard",
            Bucket::Prefix => "prefix wildcard",
            Bucket::Default => "default (*)",
        }
    }
}

/// The bucket a domain goes to and its key there, as Envoy files it: lower-cased; exactly `*` is
/// the default; a leading `*` makes a suffix (tried before a trailing one); a trailing `*` a
/// prefix; a `*` anywhere else is an ordinary character.
pub(crate) fn domain_key(domain: &str) -> (Bucket, String) {
    let d = domain.to_ascii_lowercase();
    if d == "*" {
        (Bucket::Default, String::new())
    } else if let Some(rest) = d.strip_prefix('*') {
        (Bucket::Suffix, rest.to_owned())
    } else if let Some(rest) = d.strip_suffix('*') {
        (Bucket::Prefix, rest.to_owned())
    } else {
        (Bucket::Exact, d)
    }
}

/// A place of one domain: virtual host index, domain index.
pub(crate) type DomainAt = (usize, usize);

/// Why Envoy refuses a table's domains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DomainProblem {
    /// A key already in its bucket. `key` is the lower-cased domain as Envoy prints it.
    Duplicate { at: DomainAt, first: DomainAt, domain: String },
    /// A second `*`.
    SecondWildcard { at: DomainAt, first: DomainAt },
}

/// A table's domains, indexed as Envoy indexes them (first entry wins where Envoy would refuse).
#[derive(Debug, Clone, Default)]
pub(crate) struct DomainIndex {
    /// Seeded ([`crate::hashing`]): a table's domains are the input's.
    exact: InputMap<String, DomainAt>,
    /// `*x` keys, each with the first place it was given.
    suffix: Wildcards,
    /// `x*` keys, each with the first place it was given.
    prefix: Wildcards,
    default: Option<DomainAt>,
    pub(crate) problems: Vec<DomainProblem>,
}

impl DomainIndex {
    /// Indexes every domain of every virtual host, in Envoy's order (virtual hosts in order,
    /// domains in order).
    pub(crate) fn build(table: &RouteTable) -> Self {
        let mut index = DomainIndex::default();
        for (v, vh) in table.virtual_hosts.iter().enumerate() {
            for (d, domain) in vh.domains.iter().enumerate() {
                let at = (v, d);
                let (bucket, key) = domain_key(domain);
                let map = match bucket {
                    Bucket::Default => {
                        match index.default {
                            Some(first) => index.problems.push(DomainProblem::SecondWildcard { at, first }),
                            None => index.default = Some(at),
                        }
                        continue;
                    }
                    Bucket::Exact => &mut index.exact,
                    Bucket::Suffix => index.suffix.of_length(key.len()),
                    Bucket::Prefix => index.prefix.of_length(key.len()),
                };
                match map.get(&key) {
                    Some(&first) => {
                        index.problems.push(DomainProblem::Duplicate { at, first, domain: domain.to_ascii_lowercase() })
                    }
                    None => {
                        map.insert(key, at);
                    }
                }
            }
        }
        index
    }

    /// The virtual host Envoy picks for a Host (already rewritten by the HCM, if it strips
    /// ports), with the steps of the search.
    pub(crate) fn select(&self, table: &RouteTable, host: &str) -> Selection {
        let mut steps = Vec::new();
        let domain = self.search(table, host, Some(&mut steps));
        Selection { virtual_host: domain.map(|at| at.0), domain, steps }
    }

    /// The domain (and so the virtual host) Envoy picks for a Host, without the steps: what the
    /// checks ask for every name of every table, where nothing is explained unless it is found.
    pub(crate) fn domain_for(&self, table: &RouteTable, host: &str) -> Option<DomainAt> {
        self.search(table, host, None)
    }

    /// The search, each step written to `steps` when given.
    fn search(&self, table: &RouteTable, host: &str, mut steps: Option<&mut Vec<String>>) -> Option<DomainAt> {
        let mut step = |text: &dyn Fn() -> String| {
            if let Some(s) = steps.as_deref_mut() {
                s.push(text());
            }
        };
        let mut key = host.to_ascii_lowercase();
        if table.ignore_port_in_host_matching
            && let Some(p) = port_start(&key)
        {
            step(&|| format!("ignore_port_in_host_matching: Host {key:?} is searched as {:?}", &key[..p]));
            key.truncate(p);
        }
        let vh = |at: DomainAt| &table.virtual_hosts[at.0];
        if let Some(&at) = self.exact.get(&key) {
            step(&|| format!("exact domain {:?} matches: virtual host {}", vh(at).domains[at.1], vh(at).name));
            return Some(at);
        }
        step(&|| format!("no exact domain is {key:?}"));
        for (bucket, list) in [(Bucket::Suffix, &self.suffix), (Bucket::Prefix, &self.prefix)] {
            if let Some(at) = list.find(bucket, &key) {
                step(&|| {
                    format!(
                        "{} {:?} matches (longest first): virtual host {}",
                        bucket.as_str(),
                        vh(at).domains[at.1],
                        vh(at).name
                    )
                });
                return Some(at);
            }
            if !list.by_length.is_empty() {
                step(&|| {
                    let tried = list.shorter_than(key.len());
                    format!("no {} matches ({} tried; a key must be shorter than the Host)", bucket.as_str(), tried)
                });
            }
        }
        match self.default {
            Some(at) => step(&|| format!("default domain \"*\": virtual host {}", vh(at).name)),
            None => step(&|| "no virtual host takes this Host and there is no \"*\": Envoy answers 404".to_owned()),
        }
        self.default
    }
}

/// The keys of one wildcard bucket, by length, longest first. Envoy tries the longest key
/// first; of the keys of one length at most one can be the Host's end (or start), so a search
/// looks up one piece of the Host per length instead of trying every key.
#[derive(Debug, Clone, Default)]
struct Wildcards {
    /// Seeded ([`crate::hashing`]): the keys are the input's.
    by_length: Vec<(usize, InputMap<String, DomainAt>)>,
}

impl Wildcards {
    /// The keys of one length, a place made for them if there were none.
    fn of_length(&mut self, length: usize) -> &mut InputMap<String, DomainAt> {
        let i = match self.by_length.binary_search_by(|(l, _)| length.cmp(l)) {
            Ok(i) => i,
            Err(i) => {
                self.by_length.insert(i, (length, InputMap::default()));
                i
            }
        };
        &mut self.by_length[i].1
    }

    /// The longest key that ends (`Suffix`) or starts (`Prefix`) `host` and is shorter than it:
    /// a wildcard stands for at least one character.
    fn find(&self, bucket: Bucket, host: &str) -> Option<DomainAt> {
        self.by_length.iter().filter(|(length, _)| *length < host.len()).find_map(|(length, keys)| {
            let piece = match bucket {
                Bucket::Suffix => host.get(host.len() - length..),
                _ => host.get(..*length),
            };
            keys.get(piece?).copied()
        })
    }

    /// How many keys a search for a Host of `length` bytes tries.
    fn shorter_than(&self, length: usize) -> usize {
        self.by_length.iter().filter(|(l, _)| *l < length).map(|(_, keys)| keys.len()).sum()
    }
}

/// Where a `:port` starts in a Host, as Envoy finds it: the last `:` not inside `[...]`.
pub(crate) fn port_start(host: &str) -> Option<usize> {
    let colon = host.rfind(':')?;
    match host.rfind(']') {
        Some(close) if close > colon => None,
        _ => Some(colon),
    }
}

/// The Host after the HCM's `strip_any_host_port` / `strip_matching_host_port` (a numeric port
/// only; the matching form only when it is the listener's port).
pub(crate) fn strip_port(host: &str, any: bool, matching: bool, listener_port: Option<u16>) -> Option<String> {
    if !any && !matching {
        return None;
    }
    let p = port_start(host)?;
    let port: u32 = host[p + 1..].parse().ok()?;
    if !any && Some(port) != listener_port.map(u32::from) {
        return None;
    }
    Some(host[..p].to_owned())
}

/// The virtual host chosen, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selection {
    pub(crate) virtual_host: Option<usize>,
    pub(crate) domain: Option<DomainAt>,
    pub(crate) steps: Vec<String>,
}

/// An HTTP request as the route table sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// The Host (`:authority`) header, port included if sent: it alone picks the virtual host.
    pub host: String,
    /// With its query string, as sent.
    pub path: String,
    /// As sent (`GET`, `CONNECT`, ...); header matchers read it as the `:method` pseudo-header.
    pub method: String,
    /// Names as given (compared case-insensitively).
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// A `NAME:VALUE` header as `trace --header` and the page take it: the name trimmed and
    /// not empty, the value without leading blanks. `None` when it is not of that form.
    pub fn header(text: &str) -> Option<(String, String)> {
        let (name, value) = text.split_once(':')?;
        let name = name.trim();
        (!name.is_empty()).then(|| (name.to_owned(), value.trim_start().to_owned()))
    }

    /// The request without its Host, on one line: `GET /path?query name: value`.
    pub fn without_host(&self) -> String {
        let headers: String = self.headers.iter().map(|(n, v)| format!(" {n}: {v}")).collect();
        format!("{} {}{headers}", self.method, self.path)
    }

    /// The values of a header, pseudo-headers included (`:authority`, `:path`, `:method`).
    fn values(&self, name: &str) -> Vec<&str> {
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            ":authority" | "host" => vec![self.host.as_str()],
            ":path" => vec![self.path.as_str()],
            ":method" => vec![self.method.as_str()],
            _ => self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(&name)).map(|(_, v)| v.as_str()).collect(),
        }
    }

    /// The path without query and fragment: what every path specifier is tested against.
    pub(crate) fn bare_path(&self) -> &str {
        let end = self.path.find(['?', '#']).unwrap_or(self.path.len());
        &self.path[..end]
    }

    /// The query string's parameters in order, as Envoy's route matching parses them: what
    /// follows the first `?` up to a `#`, split on `&` (empty pieces skipped), each `key=value`
    /// or a bare `key` (an empty value); nothing percent-decoded.
    pub(crate) fn query_parameters(&self) -> Vec<(&str, &str)> {
        let Some(start) = self.path.find('?') else { return Vec::new() };
        let query = &self.path[start + 1..];
        let query = &query[..query.find('#').unwrap_or(query.len())];
        query.split('&').filter(|p| !p.is_empty()).map(|p| p.split_once('=').unwrap_or((p, ""))).collect()
    }
}

/// Whether one route takes a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RouteVerdict {
    Matches,
    /// Why it does not.
    Misses(String),
    /// The route tests what xdsck does not evaluate.
    Undecided(String),
}

/// Tests one route's match against a request.
pub(crate) fn route_matches(route: &Route, req: &Request) -> RouteVerdict {
    let m = &route.matcher;
    let path = req.bare_path();
    let fold = |s: &str| if m.case_sensitive() { s.to_owned() } else { s.to_ascii_lowercase() };
    let (p, spec) = (fold(path), &m.path);
    let path_ok = match spec {
        PathSpec::Prefix(x) => p.starts_with(&fold(x)),
        PathSpec::Path(x) => p == fold(x),
        PathSpec::PathSeparatedPrefix(x) => {
            let x = fold(x);
            p.starts_with(&x) && matches!(p.as_bytes().get(x.len()), None | Some(b'/'))
        }
        PathSpec::SafeRegex(r) => match full_match(r, path) {
            Some(ok) => ok,
            None => return RouteVerdict::Undecided(format!("safe_regex {r:?} is not evaluated by this build")),
        },
        PathSpec::Connect => req.method.eq_ignore_ascii_case("CONNECT"),
        PathSpec::Policy => return RouteVerdict::Undecided("path_match_policy is not evaluated".to_owned()),
        PathSpec::Missing => return RouteVerdict::Misses("the match has no path specifier".to_owned()),
    };
    if !path_ok {
        return RouteVerdict::Misses(format!(
            "{} does not match path {path:?}",
            describe_path(spec, m.case_sensitive())
        ));
    }
    for h in &m.headers {
        match header_matches(h, req) {
            Some(true) => {}
            Some(false) => return RouteVerdict::Misses(format!("header {} {}", h.name, describe_header(h))),
            None => {
                return RouteVerdict::Undecided(format!("header {} {} is not evaluated", h.name, describe_header(h)));
            }
        }
    }
    if !m.query_parameters().is_empty() {
        let query = req.query_parameters();
        for q in m.query_parameters() {
            // Envoy tests the first value of a parameter given more than once.
            let value = query.iter().find(|(k, _)| *k == q.name).map(|(_, v)| *v);
            let holds = match (&q.kind, value) {
                (HeaderMatch::Present(p), v) => v.is_some() == *p,
                (_, None) => false,
                (kind, Some(v)) => match string_matches(kind, v) {
                    Some(ok) => ok,
                    None => {
                        return RouteVerdict::Undecided(format!(
                            "query parameter {} {} is not evaluated",
                            q.name,
                            describe_string(kind, "")
                        ));
                    }
                },
            };
            if !holds {
                return RouteVerdict::Misses(format!("query parameter {} {}", q.name, describe_string(&q.kind, "")));
            }
        }
    }
    if let Some(f) = m.unevaluated().first() {
        return RouteVerdict::Undecided(format!("{f} is not evaluated"));
    }
    RouteVerdict::Matches
}

/// A path specifier as a trace prints it.
pub(crate) fn describe_path(spec: &PathSpec, case_sensitive: bool) -> String {
    let ci = if case_sensitive { "" } else { " (case-insensitive)" };
    match spec {
        PathSpec::Prefix(x) => format!("prefix {x:?}{ci}"),
        PathSpec::Path(x) => format!("path {x:?}{ci}"),
        PathSpec::PathSeparatedPrefix(x) => format!("path_separated_prefix {x:?}{ci}"),
        PathSpec::SafeRegex(r) => format!("safe_regex {r:?}"),
        PathSpec::Connect => "connect_matcher".to_owned(),
        PathSpec::Policy => "path_match_policy".to_owned(),
        PathSpec::Missing => "no path specifier".to_owned(),
    }
}

fn describe_header(h: &HeaderMatcher) -> String {
    describe_string(&h.kind, if h.invert_match { "not " } else { "" })
}

/// A string test as a trace prints it, `not` before it when inverted.
fn describe_string(kind: &HeaderMatch, not: &str) -> String {
    let ic = |i: bool| if i { " (ignore case)" } else { "" };
    match kind {
        HeaderMatch::Exact { value, ignore_case } => format!("{not}== {value:?}{}", ic(*ignore_case)),
        HeaderMatch::Prefix { value, ignore_case } => format!("{not}starts with {value:?}{}", ic(*ignore_case)),
        HeaderMatch::Suffix { value, ignore_case } => format!("{not}ends with {value:?}{}", ic(*ignore_case)),
        HeaderMatch::Contains { value, ignore_case } => format!("{not}contains {value:?}{}", ic(*ignore_case)),
        HeaderMatch::Regex(r) => format!("{not}matches {r:?}"),
        HeaderMatch::Present(true) => format!("{not}present"),
        HeaderMatch::Present(false) => format!("{not}absent"),
        HeaderMatch::Other(k) => format!("{not}{k}"),
    }
}

/// `None` when the matcher is of a kind xdsck does not evaluate.
fn header_matches(h: &HeaderMatcher, req: &Request) -> Option<bool> {
    let mut values = req.values(&h.name);
    if values.is_empty() {
        if let HeaderMatch::Present(p) = h.kind {
            // present_match: false holds for an absent header.
            return Some(p == h.invert_match);
        }
        if !h.treat_missing_header_as_empty {
            // A string matcher never matches an absent header, inverted or not.
            return Some(false);
        }
        values.push("");
    }
    let mut any = false;
    for v in values {
        any |= string_matches(&h.kind, v)?;
    }
    Some(any != h.invert_match)
}

/// Whether `v` passes a string test (`Present(p)` holds for a present value when `p`); `None`
/// when the test is of a kind xdsck does not evaluate.
fn string_matches(kind: &HeaderMatch, v: &str) -> Option<bool> {
    let cmp = |x: &str, ignore: bool, f: fn(&str, &str) -> bool| {
        if ignore { f(&v.to_ascii_lowercase(), &x.to_ascii_lowercase()) } else { f(v, x) }
    };
    Some(match kind {
        HeaderMatch::Exact { value, ignore_case } => cmp(value, *ignore_case, |a, b| a == b),
        HeaderMatch::Prefix { value, ignore_case } => cmp(value, *ignore_case, |a, b| a.starts_with(b)),
        HeaderMatch::Suffix { value, ignore_case } => cmp(value, *ignore_case, |a, b| a.ends_with(b)),
        HeaderMatch::Contains { value, ignore_case } => cmp(value, *ignore_case, |a, b| a.contains(b)),
        HeaderMatch::Regex(r) => full_match(r, v)?,
        HeaderMatch::Present(p) => *p,
        HeaderMatch::Other(_) => return None,
    })
}

/// An RE2 full match. The `regex` crate agrees with RE2 on the syntax both accept (neither has
/// backreferences or lookaround) once the Perl classes are written out as RE2 means them
/// (`\d` is `[0-9]` to RE2, every script's digits to the crate); without the `regex` feature
/// (the web page) it is not tried.
///
/// Each pattern is compiled once per thread: `h2-coalescing-misroute` and `diff` route many
/// requests through the same tables, and compiling (with the rewriting) costs far more than
/// matching.
#[cfg(feature = "regex")]
fn full_match(pattern: &str, text: &str) -> Option<bool> {
    thread_local! {
        static COMPILED: std::cell::RefCell<RegexCache> = std::cell::RefCell::default();
    }
    COMPILED.with_borrow_mut(|compiled| compiled.get(pattern).map(|re| re.is_match(text)))
}

/// Compiled patterns by their text (`None`: one the `regex` crate refuses), at most
/// [`RegexCache::MOST`]: `attach --watch` runs for days while the control plane sends ever new
/// tables, and a cache that only grew would hold every pattern it ever saw.
#[cfg(feature = "regex")]
#[derive(Default)]
struct RegexCache(InputMap<String, Option<regex::Regex>>);

#[cfg(feature = "regex")]
impl RegexCache {
    /// Far more distinct patterns than a run's tables hold; past it the cache starts over.
    const MOST: usize = 1024;

    fn get(&mut self, pattern: &str) -> Option<&regex::Regex> {
        if !self.0.contains_key(pattern) {
            if self.0.len() >= Self::MOST {
                self.0.clear();
            }
            let written = crate::schema::re2::for_engine(pattern).unwrap_or_else(|| pattern.to_owned());
            self.0.insert(pattern.to_owned(), regex::Regex::new(&format!("^(?:{written})$")).ok());
        }
        self.0.get(pattern)?.as_ref()
    }
}

#[cfg(not(feature = "regex"))]
fn full_match(_pattern: &str, _text: &str) -> Option<bool> {
    None
}

/// What the routes of a virtual host give a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteOutcome {
    /// The first route that matches.
    Route(usize),
    /// None matches: Envoy answers 404.
    NoRoute,
    /// This route tests what xdsck does not evaluate; the answer depends on it.
    Undecided(usize),
}

/// The routes tried, in order, and what came of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RouteChoice {
    pub(crate) outcome: RouteOutcome,
    pub(crate) tried: Vec<(usize, RouteVerdict)>,
}

/// Tries the routes of a virtual host in order; the first that matches wins.
pub(crate) fn select_route(vh: &VirtualHost, req: &Request) -> RouteChoice {
    let mut tried = Vec::new();
    for (i, r) in vh.routes.iter().enumerate() {
        let v = route_matches(r, req);
        let stop = match &v {
            RouteVerdict::Matches => Some(RouteOutcome::Route(i)),
            RouteVerdict::Undecided(_) => Some(RouteOutcome::Undecided(i)),
            RouteVerdict::Misses(_) => None,
        };
        tried.push((i, v));
        if let Some(outcome) = stop {
            return RouteChoice { outcome, tried };
        }
    }
    RouteChoice { outcome: RouteOutcome::NoRoute, tried }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::route::{Action, RouteMatch, TableOrigin};

    #[cfg(feature = "regex")]
    #[test]
    fn safe_regex_classes_are_re2s() {
        // RE2's `\d` is `[0-9]`, its `\w` ASCII, its `\s` without `\v`.
        assert_eq!(full_match(r"v\d+", "v42"), Some(true));
        assert_eq!(full_match(r"v\d+", "v\u{663}"), Some(false));
        assert_eq!(full_match(r"\w+", "caf\u{e9}"), Some(false));
        assert_eq!(full_match(r"a\sb", "a\u{b}b"), Some(false));
        assert_eq!(full_match(r"a\sb", "a b"), Some(true));
    }

    #[cfg(feature = "regex")]
    #[test]
    fn the_compiled_patterns_are_bounded_and_still_answer() {
        let mut cache = RegexCache::default();
        for i in 0..RegexCache::MOST * 2 + 10 {
            let pattern = format!("/v{i}/[a-z]+");
            assert!(cache.get(&pattern).is_some_and(|re| re.is_match(&format!("/v{i}/abc"))));
            assert!(cache.0.len() <= RegexCache::MOST, "{} patterns held", cache.0.len());
        }
        // A pattern the crate refuses is remembered as refused, and answers nothing.
        assert!(cache.get("a{2,1}").is_none());
        assert!(cache.0.contains_key("a{2,1}"));
    }

    /// A table of virtual hosts (name, domains) and no routes.
    pub(crate) fn table<'a>(vhs: &[(&'a str, &[&'a str])], ignore_port: bool) -> RouteTable<'a> {
        RouteTable {
            source: crate::source::SourceId(0),
            name: Some("rt".into()),
            origin: TableOrigin::Inline,
            pointer: Box::default(),
            virtual_hosts: vhs
                .iter()
                .map(|(n, d)| VirtualHost {
                    name: (*n).into(),
                    index: 0,
                    domains: d.iter().map(|s| (*s).into()).collect(),
                    routes: Box::default(),
                    has_matcher: false,
                    require_tls: Default::default(),
                    mirrors: None,
                })
                .collect(),
            ignore_port_in_host_matching: ignore_port,
            vhds: false,
            validate_clusters: None,
            mirrors: None,
            vh_key: "virtual_hosts",
        }
    }

    fn pick(t: &RouteTable, host: &str) -> Option<String> {
        let i = DomainIndex::build(t);
        i.select(t, host).virtual_host.map(|v| t.virtual_hosts[v].name.to_string())
    }

    #[test]
    fn domains_file_into_envoys_buckets() {
        assert_eq!(domain_key("*"), (Bucket::Default, String::new()));
        assert_eq!(domain_key("*.A.com"), (Bucket::Suffix, ".a.com".into()));
        assert_eq!(domain_key("**"), (Bucket::Suffix, "*".into()));
        assert_eq!(domain_key("*foo*"), (Bucket::Suffix, "foo*".into()));
        assert_eq!(domain_key("host:*"), (Bucket::Prefix, "host:".into()));
        assert_eq!(domain_key("foo.*.com"), (Bucket::Exact, "foo.*.com".into()));
    }

    #[test]
    fn host_picks_exact_then_longest_suffix_then_prefix_then_default() {
        let t = table(
            &[
                ("exact", &["a.b.com"]),
                ("suf", &["*.b.com"]),
                ("longsuf", &["*.a.b.com"]),
                ("pre", &["a.*"]),
                ("def", &["*"]),
            ],
            false,
        );
        assert_eq!(pick(&t, "A.B.com").as_deref(), Some("exact"));
        assert_eq!(pick(&t, "x.a.b.com").as_deref(), Some("longsuf"));
        assert_eq!(pick(&t, "a.x.com").as_deref(), Some("pre"));
        // A suffix beats a prefix whatever their lengths.
        assert_eq!(pick(&t, "a.c.b.com").as_deref(), Some("suf"));
        // A wildcard covers at least one character.
        assert_eq!(pick(&t, ".b.com").as_deref(), Some("def"));
        assert_eq!(pick(&t, "a.b.com:80").as_deref(), Some("pre"));
    }

    #[test]
    fn ignore_port_strips_the_port_and_duplicates_are_all_found() {
        let t = table(&[("a", &["a.com", "*"]), ("b", &["A.com", "*", "a.com:80"])], true);
        assert_eq!(pick(&t, "a.com:8080").as_deref(), Some("a"));
        assert_eq!(pick(&t, "[::1]:80").as_deref(), Some("a"));
        let i = DomainIndex::build(&t);
        assert_eq!(
            i.problems,
            [
                DomainProblem::Duplicate { at: (1, 0), first: (0, 0), domain: "a.com".into() },
                DomainProblem::SecondWildcard { at: (1, 1), first: (0, 1) },
            ]
        );
        assert_eq!(strip_port("a.com:80", false, true, Some(80)).as_deref(), Some("a.com"));
        assert_eq!(strip_port("a.com:81", false, true, Some(80)), None);
        assert_eq!(strip_port("a.com:x", true, false, None), None);
    }

    #[test]
    fn wildcards_are_looked_up_by_length_as_trying_each_key_would() {
        let mut next = crate::test_support::draws(0x2545_f491_4f6c_dd1d_u64);
        // Few letters, so that keys of one length differ and hosts end and start with many keys.
        let mut word =
            |max: u64| -> String { (0..=next(max)).map(|_| ['a', 'B', '.', 'é'][next(4) as usize]).collect() };
        let mut compared = (0, 0);
        for _ in 0..200 {
            let domains: Vec<String> = (0..30)
                .map(|_| match word(1).len() {
                    1 => format!("*{}", word(5)),
                    _ => format!("{}*", word(5)),
                })
                .collect();
            let vhs: Vec<(String, Vec<&str>)> = domains
                .chunks(3)
                .enumerate()
                .map(|(i, d)| (format!("v{i}"), d.iter().map(String::as_str).collect()))
                .collect();
            let vhs: Vec<(&str, &[&str])> = vhs.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
            let t = table(&vhs, false);
            let index = DomainIndex::build(&t);
            for _ in 0..50 {
                let host = word(7).to_ascii_lowercase();
                // What the lookup replaces: every key of each bucket, longest first, then in the
                // order given; a key must be shorter than the Host.
                let each = |bucket: Bucket| {
                    let mut keys: Vec<(String, DomainAt)> = Vec::new();
                    for (v, vh) in t.virtual_hosts.iter().enumerate() {
                        for (d, domain) in vh.domains.iter().enumerate() {
                            let (b, key) = domain_key(domain);
                            if b == bucket && !keys.iter().any(|(k, _)| *k == key) {
                                keys.push((key, (v, d)));
                            }
                        }
                    }
                    keys.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.1.cmp(&b.1)));
                    let shorter: Vec<_> = keys.into_iter().filter(|(k, _)| k.len() < host.len()).collect();
                    let hit = shorter.iter().find(|(k, _)| match bucket {
                        Bucket::Suffix => host.ends_with(k.as_str()),
                        _ => host.starts_with(k.as_str()),
                    });
                    (hit.map(|(_, at)| *at), shorter.len())
                };
                for (bucket, list) in [(Bucket::Suffix, &index.suffix), (Bucket::Prefix, &index.prefix)] {
                    let (hit, tried) = each(bucket);
                    assert_eq!(list.find(bucket, &host), hit, "{host:?} in {domains:?}");
                    assert_eq!(list.shorter_than(host.len()), tried);
                    compared.0 += usize::from(hit.is_some());
                    compared.1 += 1;
                }
            }
        }
        // Both outcomes were compared many times.
        assert!(compared.0 > 2000 && compared.1 - compared.0 > 2000, "{compared:?}");
    }

    fn route(path: PathSpec<'_>, case_sensitive: bool) -> Route<'_> {
        Route {
            name: None,
            index: 0,
            matcher: RouteMatch::of_path(path, case_sensitive),
            action: Action::Missing,
            mirrors: None,
        }
    }

    #[test]
    fn paths_match_without_query_and_by_case_setting() {
        let req = |p: &str| Request { path: p.into(), method: "GET".into(), ..Request::default() };
        let m = |r: &Route, p: &str| route_matches(r, &req(p)) == RouteVerdict::Matches;
        assert!(m(&route(PathSpec::Path("/api".into()), true), "/api?x=1"));
        assert!(!m(&route(PathSpec::Prefix("/a?x".into()), true), "/a?x=1"));
        assert!(m(&route(PathSpec::Prefix("/API".into()), false), "/api/v1"));
        assert!(!m(&route(PathSpec::Prefix("/API".into()), true), "/api/v1"));
        let sep = route(PathSpec::PathSeparatedPrefix("/api".into()), true);
        assert!(m(&sep, "/api") && m(&sep, "/api/x") && m(&sep, "/api?q") && !m(&sep, "/apix"));
    }
}
