//! Requests: for a pair of chains (old, new) that connections reach, every class of HTTP
//! requests whose virtual host, route or action changes, each with one witness request.
//!
//! As for connections, the keys of both versions cut the request into cells, and one request
//! per combination is asked of both tables with the routing `xdsck trace --host` uses. The Host
//! cells come from every domain of both tables: each exact domain, what each suffix wildcard
//! (`*x`) and prefix wildcard (`x*`) takes besides longer ones and exact domains, alone and
//! together, and any other Host. Within one pair of virtual hosts, the path cells come from
//! both virtual hosts' path specifiers (each string, each string followed by more, in both
//! cases where a route ignores case, one path none names), and the header and query cells from
//! their matchers (absent, each value that passes one test, a value that passes none). A
//! route that matches by a regular expression is evaluated on these requests, but its own cells
//! are not enumerated: the listener says so.

use std::collections::BTreeMap;

use crate::diff::connections::Witness;
use crate::hashing::InputSet;
use crate::model::FilterChain;
use crate::model::route::{Action, HcmRoutes, HeaderMatch, PathSpec, RouteTable, RouteTables, VirtualHost};
use crate::routing::trace::{HttpAnswer, route_in_table};
use crate::routing::{Bucket, DomainIndex, Request, domain_key};

/// The route tables of one version: to look up a chain's RDS table.
#[derive(Debug, Clone, Copy)]
pub struct Tables<'t, 'r, 'a> {
    /// Every table of the version.
    pub tables: &'t RouteTables<'r, 'a>,
    /// The input (one Envoy) the listener is in.
    pub envoy: usize,
}

/// Where a request lands: what `xdsck trace --host` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landing {
    /// The virtual host; `None`: no domain takes the Host (Envoy answers 404).
    pub virtual_host: Option<String>,
    /// The route, by name or `routes[N]`; `None`: no route matches (404).
    pub route: Option<String>,
    /// What the route does.
    pub action: Option<Action<'static>>,
    /// The answer depends on what xdsck does not evaluate.
    pub undecided: bool,
}

impl Landing {
    fn of(a: &HttpAnswer) -> Self {
        Landing {
            virtual_host: a.virtual_host.clone(),
            route: a.route.clone(),
            action: a.action.clone(),
            undecided: a.undecided,
        }
    }
}

/// A class of requests that lands elsewhere in the new version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestClass {
    /// The Host cells of the class: exact domains, `*x` / `x*` wildcards (what they take that
    /// no more specific domain of either version does), `*` (any other Host).
    pub hosts: Vec<String>,
    /// One request of the class, with the first of its Hosts.
    pub request: Request,
    /// The other requests (method, path and headers) that land as it does with these Hosts:
    /// each stands for a cell of paths, headers and query parameters the keys cut.
    pub also: Vec<String>,
    /// Where the old version sends it.
    pub old: Landing,
    /// Where the new version sends it.
    pub new: Landing,
}

/// A class of requests that lands elsewhere, with the connections it arrives on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedRequest {
    /// The chains the requests arrive on, (old, new) by display name: every pair of chains some
    /// connection reaches whose route tables are the two compared.
    pub chains: Vec<(String, String)>,
    /// A connection that reaches the first pair.
    pub connection: Witness,
    /// The requests.
    pub class: RequestClass,
}

/// A chain's route table as a request meets it: the table, and whether the chain terminates
/// TLS (a plaintext request to a `require_tls` virtual host is redirected).
#[derive(Debug, Clone, Copy)]
pub struct Routed<'t, 'a> {
    /// The table.
    pub table: &'t RouteTable<'a>,
    /// Whether the chain terminates TLS.
    pub terminates_tls: bool,
}

/// Why a chain's requests are not compared.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Uncompared {
    /// Its http_connection_manager names an RDS table the inputs do not hold.
    MissingRds(String),
    /// It routes by `scoped_routes`, or names no table: a note of its own.
    Other(String),
}

/// The chain's route table; `None` when it routes no HTTP; `Err` when its table cannot be
/// compared.
pub fn table_of<'t, 'a>(
    chain: &'t FilterChain<'a>,
    tables: Tables<'t, '_, 'a>,
) -> Option<Result<Routed<'t, 'a>, Uncompared>> {
    let hcm = RouteTables::hcms_of_chain(chain).next()?;
    let terminates_tls = chain.terminates_tls();
    Some(match &hcm.routes {
        HcmRoutes::Inline(t) => Ok(Routed { table: t, terminates_tls }),
        HcmRoutes::Rds(name) => match tables.tables.rds(tables.envoy, name) {
            Some(table) => Ok(Routed { table, terminates_tls }),
            None => Err(Uncompared::MissingRds(name.to_string())),
        },
        HcmRoutes::Scoped => Err(Uncompared::Other(format!(
            "chain '{}' routes with scoped_routes: its requests are not compared",
            chain.display_name()
        ))),
        HcmRoutes::None => Err(Uncompared::Other(format!("chain '{}' names no route table", chain.display_name()))),
    })
}

/// The virtual hosts a Host picks in the old table and in the new one.
type VirtualHosts = (Option<usize>, Option<usize>);

/// The classes of requests whose landing changes between two route tables; `notes` gets what
/// is not compared exactly.
pub fn requests(old: Routed<'_, '_>, new: Routed<'_, '_>, notes: &mut Vec<String>) -> Vec<RequestClass> {
    let (io, inew) = (DomainIndex::build(old.table), DomainIndex::build(new.table));
    // Hosts, grouped by the pair of virtual hosts they pick.
    let mut by_pair: BTreeMap<VirtualHosts, Vec<(String, String)>> = BTreeMap::new();
    for (host, cell) in host_cells(old.table, new.table) {
        let pair = (io.domain_for(old.table, &host).map(|d| d.0), inew.domain_for(new.table, &host).map(|d| d.0));
        by_pair.entry(pair).or_default().push((host, cell));
    }
    let land = |side: Routed<'_, '_>, index: &DomainIndex, req: &Request| {
        let mut out = HttpAnswer::default();
        route_in_table(side.table, index, side.terminates_tls, &req.host, req, &mut out);
        Landing::of(&out)
    };
    let mut moved: BTreeMap<(String, String), RequestClass> = BTreeMap::new();
    // Per class, the Host cells and requests it already lists.
    type Listed = (InputSet<String>, InputSet<String>);
    let mut seen: BTreeMap<(String, String), Listed> = BTreeMap::new();
    for ((vo, vn), hosts) in by_pair {
        let vhs: Vec<&VirtualHost<'_>> = (vo.map(|v| &old.table.virtual_hosts[v]).into_iter())
            .chain(vn.map(|v| &new.table.virtual_hosts[v]))
            .collect();
        let cells = RequestCells::of(&vhs, notes);
        for req in cells.requests() {
            let mut landed: Option<(Landing, Landing)> = None;
            for (host, cell) in &hosts {
                let req = Request { host: host.clone(), ..req.clone() };
                // Routes read the Host only through an `:authority` matcher: else every Host of
                // the group lands as the first did.
                if landed.is_none() || cells.reads_host {
                    landed = Some((land(old, &io, &req), land(new, &inew, &req)));
                }
                let Some((lo, ln)) = &landed else { continue };
                if lo == ln {
                    continue;
                }
                // One class per way of moving: its Hosts and its requests gathered.
                let class = moved.entry((format!("{lo:?}"), format!("{ln:?}"))).or_insert_with(|| RequestClass {
                    hosts: Vec::new(),
                    request: req.clone(),
                    also: Vec::new(),
                    old: lo.clone(),
                    new: ln.clone(),
                });
                let seen = seen.entry((format!("{lo:?}"), format!("{ln:?}"))).or_default();
                if seen.0.insert(cell.clone()) {
                    class.hosts.push(cell.clone());
                }
                let this = req.without_host();
                if this != class.request.without_host() && seen.1.insert(this.clone()) {
                    class.also.push(this);
                }
            }
        }
    }
    moved.into_values().collect()
}

/// One Host per cell of both tables' domains, with the cell's description.
fn host_cells(old: &RouteTable<'_>, new: &RouteTable<'_>) -> Vec<(String, String)> {
    let keys = |t: &RouteTable<'_>, bucket: Bucket| -> InputSet<String> {
        t.virtual_hosts
            .iter()
            .flat_map(|v| &v.domains)
            .map(|d| domain_key(d))
            .filter(|(b, _)| *b == bucket)
            .map(|(_, k)| k)
            .collect()
    };
    let (old_suffix, new_suffix) = (keys(old, Bucket::Suffix), keys(new, Bucket::Suffix));
    let exact: InputSet<String> = keys(old, Bucket::Exact).into_iter().chain(keys(new, Bucket::Exact)).collect();
    let suffixes: InputSet<&str> = old_suffix.iter().chain(&new_suffix).map(String::as_str).collect();
    let prefixes: InputSet<String> = keys(old, Bucket::Prefix).into_iter().chain(keys(new, Bucket::Prefix)).collect();
    let sorted = |set: &InputSet<&str>| -> Vec<String> {
        let mut v: Vec<String> = set.iter().map(|s| (*s).to_owned()).collect();
        v.sort();
        v
    };
    let (suffix, prefix) = (sorted(&suffixes), sorted(&prefixes.iter().map(String::as_str).collect()));
    // The longest key of a kind that takes a Host (a wildcard takes a Host longer than itself):
    // each tail (head) of the Host looked up, longest first.
    let longest_suffix = |host: &str| -> Option<String> {
        (1..host.len())
            .filter(|&i| host.is_char_boundary(i))
            .map(|i| &host[i..])
            .find(|t| suffixes.contains(t))
            .map(str::to_owned)
    };
    let longest_prefix = |host: &str| -> Option<String> {
        (1..host.len())
            .rev()
            .filter(|&i| host.is_char_boundary(i))
            .map(|i| &host[..i])
            .find(|h| prefixes.contains(*h))
            .map(str::to_owned)
    };
    let mut out: Vec<(String, String)> = {
        let mut e: Vec<&String> = exact.iter().collect();
        e.sort();
        e.into_iter().map(|e| (e.clone(), e.clone())).collect()
    };
    let with_none = |keys: &[String]| -> Vec<Option<String>> {
        std::iter::once(None).chain(keys.iter().cloned().map(Some)).collect()
    };
    for s in with_none(&suffix) {
        // Suffixes are searched before prefixes: a suffix both tables hold decides the virtual
        // host alone, and its Hosts are one cell whatever they start with. Otherwise the table
        // without it falls to its prefixes: one cell per prefix too.
        let in_both = s.as_ref().is_some_and(|s| old_suffix.contains(s) && new_suffix.contains(s));
        let prefix_cells = if in_both { vec![None] } else { with_none(&prefix) };
        for p in prefix_cells {
            let (pre, suf) = (p.clone().unwrap_or_default(), s.clone().unwrap_or_default());
            // A Host in this cell: exactly these longest wildcards, and no exact domain.
            let found = ["xdsck-diff", "xdsck-diff-0", "xdsck-diff.0", "0.xdsck-diff", "q"]
                .iter()
                .map(|mid| {
                    let tail = if s.is_none() && p.is_none() { ".invalid" } else { "" };
                    format!("{pre}{mid}{tail}{suf}")
                })
                .find(|h| !exact.contains(h) && longest_suffix(h) == s && (in_both || longest_prefix(h) == p));
            let Some(host) = found else { continue };
            let cell = match (&p, &s) {
                (None, None) => "*".to_owned(),
                (None, Some(s)) => format!("*{s}"),
                (Some(p), None) => format!("{p}*"),
                (Some(p), Some(s)) => format!("{p}* and *{s}"),
            };
            out.push((host, cell));
        }
    }
    out
}

/// The cells of the requests one pair of virtual hosts tells apart.
struct RequestCells {
    paths: Vec<String>,
    methods: Vec<String>,
    /// Per header name, the values to try (`None`: absent).
    headers: Vec<(String, Vec<Option<String>>)>,
    /// Per query parameter, the values to try (`None`: absent).
    query: Vec<(String, Vec<Option<String>>)>,
    /// A route tests the Host itself (an `:authority` or `host` header matcher).
    reads_host: bool,
}

/// How many requests one pair of virtual hosts is asked at most: past it, the combinations of
/// header and query cells are cut (and the listener says so).
const MAX_REQUESTS: usize = 4096;

impl RequestCells {
    fn of(vhs: &[&VirtualHost<'_>], notes: &mut Vec<String>) -> Self {
        let mut paths = vec!["/".to_owned(), "/xdsck-diff".to_owned()];
        let mut methods = vec!["GET".to_owned()];
        let mut headers: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
        let mut query: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
        let mut reads_host = false;
        let mut folded = false;
        for vh in vhs {
            for r in &vh.routes {
                let m = &r.matcher;
                folded |= !m.case_sensitive();
                match &m.path {
                    PathSpec::Prefix(x) | PathSpec::Path(x) => {
                        paths.extend([x.to_string(), format!("{x}xdsck-diff")]);
                    }
                    PathSpec::PathSeparatedPrefix(x) => {
                        paths.extend([x.to_string(), format!("{x}/xdsck-diff"), format!("{x}xdsck-diff")]);
                    }
                    PathSpec::Connect => methods.push("CONNECT".to_owned()),
                    PathSpec::SafeRegex(re) => notes.push(format!(
                        "virtual host '{}': route {} matches paths by safe_regex {re:?}; only the paths other routes name are compared on it",
                        vh.name,
                        r.display_name()
                    )),
                    PathSpec::Policy | PathSpec::Missing => {}
                }
                // A test whose passing values cannot be written out (a regular expression, a
                // matcher xdsck does not evaluate) is evaluated on the others' values only.
                let kinds = m
                    .headers
                    .iter()
                    .map(|h| (&h.name, &h.kind))
                    .chain(m.query_parameters().iter().map(|q| (&q.name, &q.kind)));
                for (name, kind) in kinds {
                    if matches!(kind, HeaderMatch::Regex(_) | HeaderMatch::Other(_)) {
                        notes.push(format!(
                            "virtual host '{}': route {} tests {name} by a pattern; only the values other routes name are compared on it",
                            vh.name,
                            r.display_name()
                        ));
                    }
                }
                for h in &m.headers {
                    let name = h.name.to_ascii_lowercase();
                    match name.as_str() {
                        ":authority" | "host" => reads_host = true,
                        ":method" => methods.extend(values(&h.kind).into_iter().flatten()),
                        ":path" => paths.extend(values(&h.kind).into_iter().flatten()),
                        _ => headers.entry(name).or_insert_with(|| vec![None]).extend(values(&h.kind)),
                    }
                }
                for q in m.query_parameters() {
                    query.entry(q.name.to_string()).or_insert_with(|| vec![None]).extend(values(&q.kind));
                }
            }
        }
        if folded {
            let more: Vec<String> =
                paths.iter().flat_map(|p| [p.to_ascii_uppercase(), p.to_ascii_lowercase()]).collect();
            paths.extend(more);
        }
        for v in [&mut paths, &mut methods] {
            v.sort();
            v.dedup();
        }
        let mut headers: Vec<(String, Vec<Option<String>>)> = headers.into_iter().collect();
        let mut query: Vec<(String, Vec<Option<String>>)> = query.into_iter().collect();
        for (_, v) in headers.iter_mut().chain(query.iter_mut()) {
            v.push(Some("xdsck-diff".to_owned()));
            v.sort();
            v.dedup();
        }
        let mut cells = RequestCells { paths, methods, headers, query, reads_host };
        if cells.count() > MAX_REQUESTS {
            notes.push(format!(
                "virtual hosts {}: their header and query matchers make more than {MAX_REQUESTS} request cells; only the combinations of the first are compared",
                vhs.iter().map(|v| format!("'{}'", v.name)).collect::<Vec<_>>().join(" and ")
            ));
            while cells.count() > MAX_REQUESTS {
                let widest = cells.headers.iter_mut().chain(cells.query.iter_mut()).max_by_key(|(_, v)| v.len());
                match widest {
                    Some((_, v)) if v.len() > 2 => {
                        v.pop();
                    }
                    _ => break,
                }
            }
        }
        cells
    }

    fn count(&self) -> usize {
        let product =
            |v: &[(String, Vec<Option<String>>)]| v.iter().fold(1usize, |n, (_, o)| n.saturating_mul(o.len()));
        self.paths
            .len()
            .saturating_mul(self.methods.len())
            .saturating_mul(product(&self.headers))
            .saturating_mul(product(&self.query))
    }

    /// Every combination of the cells, as requests without a Host.
    fn requests(&self) -> Vec<Request> {
        let mut out = Vec::new();
        for h in combinations(&self.headers) {
            for q in combinations(&self.query) {
                let query: Vec<String> = q.iter().map(|(k, v)| format!("{k}={v}")).collect();
                for path in &self.paths {
                    let path = if query.is_empty() { path.clone() } else { format!("{path}?{}", query.join("&")) };
                    for method in &self.methods {
                        out.push(Request {
                            host: String::new(),
                            path: path.clone(),
                            method: method.clone(),
                            headers: h.clone(),
                        });
                    }
                }
            }
        }
        out
    }
}

/// A value that passes the test, if one can be written (`None` stands for the absent header).
fn values(kind: &HeaderMatch<'_>) -> Vec<Option<String>> {
    match kind {
        HeaderMatch::Exact { value, .. } => vec![Some(value.to_string())],
        HeaderMatch::Prefix { value, .. } => vec![Some(format!("{value}-xdsck"))],
        HeaderMatch::Suffix { value, .. } => vec![Some(format!("xdsck-{value}"))],
        HeaderMatch::Contains { value, .. } => vec![Some(format!("xdsck-{value}-xdsck"))],
        HeaderMatch::Present(_) | HeaderMatch::Regex(_) | HeaderMatch::Other(_) => Vec::new(),
    }
}

/// Every choice of one value per name (absent names left out).
fn combinations(options: &[(String, Vec<Option<String>>)]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (name, values) in options {
        out = out
            .into_iter()
            .flat_map(|done| {
                values.iter().map(move |v| {
                    let mut next = done.clone();
                    if let Some(v) = v {
                        next.push((name.clone(), v.clone()));
                    }
                    next
                })
            })
            .collect();
    }
    out
}

#[cfg(test)]
mod tests;
