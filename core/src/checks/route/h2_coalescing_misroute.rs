//! `h2-coalescing-misroute`: two TLS-terminating chains of one listener serve names one
//! certificate may cover, the first offers `h2`, and their route tables treat the second's name
//! differently. A browser that holds an HTTP/2 connection for the first name reuses it for the
//! second (connection coalescing, RFC 9113 §9.1.1); Envoy chose the chain once, by SNI, and
//! routes that request with the first chain's table (envoyproxy/envoy#6767).
//!
//! xdsck cannot see certificates (they often come by SDS), so it takes a chain's certificate to
//! cover what its `server_names` cover, with a certificate's wildcard reach: `*.example.com`
//! covers `api.example.com`, not `a.b.example.com`. Which chain a connection reaches is asked of
//! the listener's own filter-chain index ([`crate::chain_match::MatchGraph::reach`], what
//! [`crate::chain_match::select::ListenerMatch`] selects with) with the address the
//! first chain is reached on, so both connections are to the same IP and port. Reported only
//! where it is certain that the two answers differ: both tables are in the input, the request
//! reaches different virtual hosts that route differently (or one reaches none), and the first
//! table does not already answer the name with a 421.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

use crate::chain_match::key::ascii_lower;
use crate::chain_match::trace::{Client, Connection, Outcome};
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::hashing::InputSet;
use crate::model::route::{Action, Hcm, HcmRoutes, RouteTable, RouteTables, VirtualHost};
use crate::model::{Address, FilterChain, Protocol, Text, text_of};
use crate::parallel::sort_unstable_cheap;
use crate::routing::{DomainIndex, Request, RouteOutcome, select_route, strip_port};

declare_rule! {
    pub(crate) static RULE for H2CoalescingMisroute = {
        code: "XDS214",
        name: "h2-coalescing-misroute",
        severity: Severity::Warning,
        summary: "An HTTP/2 connection opened for one TLS chain's name may carry requests for a name another chain serves (connection coalescing): they are routed by the first chain's route table.",
        explanation: "h2_coalescing_misroute.md",
    }
}

pub(crate) struct H2CoalescingMisroute;

/// What browsers offer in ALPN: Envoy's chain selection compares it with `application_protocols`.
const BROWSER_ALPN: [&str; 2] = ["h2", "http/1.1"];

/// A chain's one HTTP connection manager and the table it routes with, when the input holds it.
#[derive(Clone, Copy)]
struct Http<'s> {
    hcm: &'s Hcm<'s>,
    table: &'s RouteTable<'s>,
}

fn http_of<'s>(cx: &Context<'s, '_>, envoy: usize, chain: &'s FilterChain<'s>) -> Option<Http<'s>> {
    let mut hcms = RouteTables::hcms_of_chain(chain);
    let hcm = hcms.next()?;
    if hcms.next().is_some() {
        return None;
    }
    let table = cx.routes().table_of(envoy, hcm).filter(|t| !t.vhds)?;
    Some(Http { hcm, table })
}

/// Whether the two managers route with the same table (one RDS name, or one inline table).
fn same_table(a: Http<'_>, b: Http<'_>) -> bool {
    std::ptr::eq(a.table, b.table)
        || matches!((&a.hcm.routes, &b.hcm.routes), (HcmRoutes::Rds(x), HcmRoutes::Rds(y)) if x == y)
}

/// The `h2` a client can negotiate with the chain, and a manager that speaks it.
fn offers_h2(chain: &FilterChain<'_>, http: Http<'_>) -> bool {
    chain.terminates_tls()
        && chain.transport_socket.as_ref().is_some_and(|t| t.alpn_protocols.iter().any(|p| p == "h2"))
        && http.hcm.codec_type.speaks_http2()
}

/// A Host under a wildcard server name `*.y` that is no exact server name of the listener:
/// `www.y`, else `www1.y`, ...
fn under_wildcard(parent: &str, exact: &ExactNames<'_>) -> String {
    let mut label = "www".to_owned();
    let mut n = 0;
    loop {
        let host = format!("{label}.{parent}");
        if !exact.contains(&host) {
            return host;
        }
        n += 1;
        label = format!("www{n}");
    }
}

/// The exact server names of a listener's chains as Envoy compares them (lower case; borrowed
/// where they already are), each once, in one list sorted by parent domain and then name: what
/// a wildcard's certificate covers (one label down) is a run of it, and a name is found by its
/// parent and itself. A sorted list, not a set and a map of lists: a tenant listener has 400k
/// exact names, and the hash tables were some 40 MB beside its index.
struct ExactNames<'c>(Vec<ByParent<'c>>);

/// A name ordered by its parent domain (none first), then by itself. Where its parent starts
/// is found once: the sort compares each name some twenty times.
#[derive(PartialEq, Eq)]
struct ByParent<'c> {
    /// Two words, not `Cow`'s three: 24 bytes a name with `parent`.
    name: Text<'c>,
    /// The byte after its first dot; 0 when it has none.
    parent: u32,
}

impl<'c> ByParent<'c> {
    fn new(name: Cow<'c, str>) -> Self {
        // A name with a parent has a dot before it, so its parent never starts at 0.
        let parent = parent_of(&name).map_or(0, |p| (name.len() - p.len()) as u32);
        ByParent { name: text_of(name), parent }
    }

    fn key(&self) -> (Option<&str>, &str) {
        let parent = (self.parent > 0).then(|| &self.name[self.parent as usize..]);
        (parent, &self.name)
    }
}

impl Ord for ByParent<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for ByParent<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<'c> ExactNames<'c> {
    fn of(chains: &'c [FilterChain<'_>]) -> Self {
        let every_name = chains.iter().flat_map(|c| c.filter_chain_match.iter().flat_map(|m| &m.server_names));
        let exact = every_name.map(|n| ascii_lower(n)).filter(|n| !n.is_empty() && !n.starts_with('*'));
        let mut names: Vec<ByParent<'c>> = exact.map(ByParent::new).collect();
        sort_unstable_cheap(&mut names);
        names.dedup();
        ExactNames(names)
    }

    fn contains(&self, host: &str) -> bool {
        self.0.binary_search_by(|n| n.key().cmp(&(parent_of(host), host))).is_ok()
    }

    /// The names one label under `parent`, in name order.
    fn under<'s>(&'s self, parent: &'s str) -> impl Iterator<Item = &'s str> {
        let start = self.0.partition_point(|n| n.key().0 < Some(parent));
        self.0[start..].iter().map(ByParent::key).take_while(move |k| k.0 == Some(parent)).map(|(_, name)| name)
    }
}

/// A chain's server names, as Envoy compares them.
fn names<'c>(c: &'c FilterChain<'_>) -> Vec<Cow<'c, str>> {
    c.filter_chain_match.iter().flat_map(|m| &m.server_names).map(|n| ascii_lower(n)).collect()
}

/// The domain a name is one label under (`example.com` for `api.example.com`).
fn parent_of(n: &str) -> Option<&str> {
    n.split_once('.').map(|(_, p)| p)
}

/// The address a client reaches chain `chain` on: its first destination range (a range holds
/// its own address) or the listener's IP, and its destination port or the listener's.
fn destination(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>) -> Option<SocketAddr> {
    let Some(Address::Socket(s)) = &l.listener.address else { return None };
    if s.protocol == Protocol::Udp {
        return None;
    }
    let m = chain.filter_chain_match.as_ref();
    let ip: IpAddr = match m.and_then(|m| m.prefix_ranges().first()) {
        Some(r) => r.address_prefix.parse().ok()?,
        None => s.address.parse().ok()?,
    };
    let port = m.and_then(|m| m.destination_port).or(s.port_value)?;
    Some(SocketAddr::new(ip, u16::try_from(port).ok()?))
}

/// The Host a browser sends for `name` on `port` (the port only when it is not 443), as the
/// manager rewrites it before the table sees it.
fn host_for(hcm: &Hcm<'_>, name: &str, port: u16) -> String {
    let authority = if port == 443 { name.to_owned() } else { format!("{name}:{port}") };
    strip_port(&authority, hcm.strip_any_host_port, hcm.strip_matching_host_port, Some(port)).unwrap_or(authority)
}

/// Two virtual hosts route alike when every route xdsck reads is the same, in the same order.
fn same_routes(a: &VirtualHost, b: &VirtualHost) -> bool {
    a.require_tls == b.require_tls
        && a.routes.len() == b.routes.len()
        && a.routes.iter().zip(&b.routes).all(|(x, y)| x.matcher == y.matcher && x.action == y.action)
}

/// What a table does with `GET /` for a Host: the witness a finding prints.
struct Answer<'s> {
    table: &'s RouteTable<'s>,
    vh: Option<&'s VirtualHost<'s>>,
    route: Option<(String, &'s Action<'s>)>,
}

/// Each table's domain index, built once, when first asked for (a tenant's table usually never
/// is: its names land on its own chain or on passthrough ones): one wildcard chain may cover
/// thousands of names, and one RDS table may serve thousands of chains. Shared by the blocks of
/// a listener's chains that are examined at once.
#[derive(Default)]
struct Indexes(Mutex<HashMap<usize, Arc<DomainIndex>>>);

impl Indexes {
    fn of(&self, table: &RouteTable<'_>) -> Arc<DomainIndex> {
        // Keyed by address: the tables outlive the run of the check and are never moved.
        let key = std::ptr::from_ref(table).addr();
        if let Some(index) = self.0.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return Arc::clone(index);
        }
        // Built outside the lock: a large table's index takes a while, and the other blocks go
        // on meanwhile. Two blocks may build the same one; the first kept is the same as the other.
        let built = Arc::new(DomainIndex::build(table));
        Arc::clone(self.0.lock().unwrap_or_else(PoisonError::into_inner).entry(key).or_insert(built))
    }
}

fn answer<'s>(indexes: &Indexes, http: Http<'s>, name: &str, port: u16) -> Answer<'s> {
    let host = host_for(http.hcm, name, port);
    let index = indexes.of(http.table);
    let vh = index.domain_for(http.table, &host).map(|(i, _)| &http.table.virtual_hosts[i]);
    let route = vh.and_then(|vh| {
        let req = Request { host, path: "/".into(), method: "GET".into(), headers: Vec::new() };
        match select_route(vh, &req).outcome {
            RouteOutcome::Route(i) => Some((vh.routes[i].display_name(), &vh.routes[i].action)),
            RouteOutcome::NoRoute | RouteOutcome::Undecided(_) => None,
        }
    });
    Answer { table: http.table, vh, route }
}

impl Answer<'_> {
    /// `virtual host 'x' of route table 't' (route: action)`, or `no virtual host of ... (404)`.
    fn describe(&self) -> String {
        let table = self.table.display_name();
        match (self.vh, &self.route) {
            (None, _) => format!("no virtual host of route table '{table}' (404)"),
            (Some(vh), Some((route, action))) => {
                format!("virtual host '{}' of route table '{table}' ({route}: {action})", vh.name)
            }
            (Some(vh), None) => format!("virtual host '{}' of route table '{table}'", vh.name),
        }
    }

    /// The table answers the request with 421 Misdirected Request: the client retries on a new
    /// connection, which reaches the right chain.
    fn misdirected(&self) -> bool {
        matches!(self.route, Some((_, Action::DirectResponse { status: 421, .. })))
    }
}

/// Which of `chain`'s server names takes `host`: the name itself, else the longest wildcard.
fn entry_for(chain: &FilterChain<'_>, host: &str) -> Option<usize> {
    let names = &chain.filter_chain_match.as_ref()?.server_names;
    let lower: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    lower.iter().position(|n| n == host).or_else(|| {
        let wild = lower.iter().enumerate().filter(|(_, n)| n.strip_prefix('*').is_some_and(|s| host.ends_with(s)));
        wild.max_by_key(|(_, n)| n.len()).map(|(i, _)| i)
    })
}

/// One finding's facts.
struct Misroute<'x> {
    a: &'x FilterChain<'x>,
    a_entry: usize,
    sni: &'x str,
    b: &'x FilterChain<'x>,
    host: &'x str,
}

fn diagnostic(l: &ListenerCx<'_, '_>, m: &Misroute<'_>, on_a: &Answer<'_>, on_b: &Answer<'_>) -> Diagnostic {
    let (a, b) = (m.a.display_name(), m.b.display_name());
    let at = match entry_for(m.b, m.host) {
        Some(i) => l.chain_field_location(m.b, &["filter_chain_match", "server_names", &i.to_string()]),
        None => l.chain_location(m.b),
    };
    let a_name = &m.a.filter_chain_match.as_ref().map(|f| f.server_names[m.a_entry].to_string()).unwrap_or_default();
    let a_at = l.chain_field_location(m.a, &["filter_chain_match", "server_names", &m.a_entry.to_string()]);
    Diagnostic::new(
        &RULE,
        format!(
            "a request for {host} on an HTTP/2 connection opened for {sni} is routed by chain '{a}' to {}, not as chain '{b}' routes it, to {}",
            on_a.describe(),
            on_b.describe(),
            host = m.host,
            sni = m.sni,
        ),
    )
    .at(at)
    .related(
        if a_name.eq_ignore_ascii_case(m.host) {
            format!("chain '{a}' takes the connection and lists {} too", m.host)
        } else {
            format!("chain '{a}' takes the connection; its server name '{a_name}' covers {}", m.host)
        },
        a_at,
    )
    .note(format!(
        "a browser reuses an HTTP/2 connection for another name that resolves to the same address when the connection's certificate covers it (RFC 9113 §9.1.1); xdsck cannot see certificates and assumes that the one of chain '{a}' covers its server_names"
    ))
    .note("Envoy picks the filter chain once per connection, by SNI, and routes every request on it with that chain's route table (envoyproxy/envoy#6767)")
    .note(format!(
        "give the chains certificates that do not overlap (or separate addresses), or add a virtual host for {} to route table '{}' that answers 421 (direct_response), which makes the client retry on a connection of its own",
        m.host,
        on_a.table.display_name()
    ))
    .with_example("sni", m.sni)
    .with_example("host", m.host)
    .listener(l.listener.display_name().into_owned())
    .chain(b.into_owned())
}

/// Chains examined together on one core: each block makes its own connection to ask the
/// index with.
const CHAIN_BLOCK: usize = 1024;

/// The findings of chains `block` of listener `l` as the first chain (A), in chain order.
fn misroutes<'x>(
    cx: &Context<'x, '_>,
    l: &ListenerCx<'x, '_>,
    block: &'x [FilterChain<'x>],
    exact: &ExactNames<'_>,
    indexes: &Indexes,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // What Envoy's matcher sees of a browser's connection, made once per block (on the first
    // name asked): only the address and the SNI change from name to name (the listener has a
    // TLS inspector, so the SNI is seen, lower-cased).
    let seen = std::cell::OnceCell::new();
    let land = |dst: SocketAddr, sni: &str| {
        let mut c = seen
            .get_or_init(|| {
                let browser = Client::Tls { sni: String::new(), alpn: BROWSER_ALPN.map(str::to_owned).to_vec() };
                std::cell::RefCell::new(Connection::detect(l.listener, &browser, None, None).0)
            })
            .borrow_mut();
        c.destination = Some(dst);
        c.server_name.clear();
        c.server_name.push_str(sni);
        c.server_name.make_ascii_lowercase();
        // The index's hash probes, not a trace: a trace lists every key of a level, and
        // a wildcard chain covering thousands of names asks once per name.
        let chain = l.graph().reach(&c, None).outcome;
        match chain {
            Outcome::Chain(_) | Outcome::Default => l.matching().chain(chain),
            Outcome::Closed | Outcome::NeedsInput(_) => None,
        }
    };
    for a in block {
        let Some(http_a) = http_of(cx, l.envoy, a).filter(|&h| offers_h2(a, h)) else { continue };
        let Some(dst) = destination(l, a) else { continue };
        let a_names = names(a);
        // Each name of A as a concrete host, with the entry it came from.
        let concrete: Vec<(usize, String)> = a_names
            .iter()
            .enumerate()
            .filter_map(|(i, n)| match n.strip_prefix("*.") {
                Some(parent) => Some((i, under_wildcard(parent, exact))),
                None if !n.is_empty() && !n.contains('*') => Some((i, n.to_string())),
                None => None,
            })
            .collect();
        // A connection the client opened for one of A's names that Envoy gives to A.
        let Some(sni) = concrete.iter().map(|(_, h)| h).find(|h| land(dst, h).is_some_and(|c| c.index == a.index))
        else {
            continue;
        };
        // Every host A's certificate covers, with the server name that covers it.
        let mut covered: Vec<(usize, String)> = concrete.clone();
        for (i, n) in a_names.iter().enumerate() {
            if let Some(parent) = n.strip_prefix("*.") {
                // In name order.
                covered.extend(exact.under(parent).map(|h| (i, h.to_owned())));
            }
        }
        let mut seen = InputSet::default();
        for (a_entry, host) in covered {
            if !seen.insert(host.clone()) {
                continue;
            }
            let Some(b) = land(dst, &host).filter(|b| b.index != a.index && b.terminates_tls()) else {
                continue;
            };
            let Some(http_b) = http_of(cx, l.envoy, b).filter(|&h| !same_table(http_a, h)) else { continue };
            let on_a = answer(indexes, http_a, &host, dst.port());
            let on_b = answer(indexes, http_b, &host, dst.port());
            let alike = match (on_a.vh, on_b.vh) {
                (None, None) => true,
                (Some(x), Some(y)) => x.has_matcher || y.has_matcher || same_routes(x, y),
                // A virtual host chosen by a matcher tree is not evaluated.
                (Some(x), None) | (None, Some(x)) => x.has_matcher,
            };
            if alike || on_a.misdirected() {
                continue;
            }
            let m = Misroute { a, a_entry, sni, b, host: &host };
            out.push(diagnostic(l, &m, &on_a, &on_b));
        }
    }
    out
}

impl Check for H2CoalescingMisroute {
    fn reads(&self) -> Reads {
        Reads::GRAPHS_AND_ROUTES
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        // Under a filter_chain_matcher server_names are ignored and the names a chain serves are
        // in the matcher: only the filter-chain index is examined. A listener Envoy rejects
        // serves nothing (other checks say why); without a TLS inspector no chain sees an SNI.
        let listeners = cx.listeners().filter(|l| {
            l.listener.filter_chain_matcher.is_none()
                && !l.matching().index_rejected()
                && l.listener.has_tls_inspector()
        });
        for l in listeners {
            let chains = &l.listener.filter_chains;
            // A finding takes two chains that terminate TLS and route with a table the input
            // holds: the one the connection lands on and the one the request's name belongs to
            // (the default chain can be the second). A tenant's listener with one such chain
            // beside its passthrough chains asks nothing more.
            let routed = l.listener.chains().filter(|c| c.terminates_tls() && http_of(&cx, l.envoy, c).is_some());
            if routed.take(2).count() < 2 {
                continue;
            }
            // The exact server names of the listener, built when a chain offers HTTP/2: a tenant
            // listener whose chains route nothing over HTTP/2 (passthrough, or no route table)
            // never pays for them. Built here, on every core, before the blocks share them.
            if !chains.iter().any(|a| http_of(&cx, l.envoy, a).is_some_and(|h| offers_h2(a, h))) {
                continue;
            }
            let exact = ExactNames::of(chains);
            let indexes = Indexes::default();
            // A tenant listener's chains a block at a time on every core: at 100k tenants this
            // was the last check to finish, on one core, for a tenth of the run.
            let blocks: Vec<&[FilterChain<'_>]> = chains.chunks(CHAIN_BLOCK).collect();
            match blocks.len() {
                0 | 1 => blocks.iter().for_each(|block| out.extend(misroutes(&cx, &l, block, &exact, &indexes))),
                _ => out.extend(crate::parallel::par_flat_map(&blocks, |block| {
                    misroutes(&cx, &l, block, &exact, &indexes)
                })),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::source::{SourceFile, Sources};

    /// A TLS chain for `names` that routes every request with a table of its own, offering
    /// `h2`; its certificate comes by SDS.
    fn tls_chain(name: &str, names: &[&str]) -> serde_json::Value {
        serde_json::json!({
            "name": name,
            "filter_chain_match": {"server_names": names},
            "filters": [{
                "name": "envoy.filters.network.http_connection_manager",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    "stat_prefix": name,
                    "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
                    "route_config": {"name": name, "virtual_hosts": [{"name": name, "domains": names, "routes": [
                        {"match": {"prefix": "/"}, "direct_response": {"status": 200, "body": {"inline_string": name}}}
                    ]}]}
                }
            }],
            "transport_socket": {
                "name": "envoy.transport_sockets.tls",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
                    "common_tls_context": {
                        "alpn_protocols": ["h2", "http/1.1"],
                        "tls_certificate_sds_secret_configs": [{"name": name, "sds_config": {"ads": {}, "resource_api_version": "V3"}}]
                    }
                }
            }
        })
    }

    /// A passthrough chain for one name: a filler no request is routed by.
    fn passthrough(i: usize) -> serde_json::Value {
        serde_json::json!({
            "name": format!("pass-{i}"),
            "filter_chain_match": {"server_names": [format!("pass-{i}.example.net")]},
            "filters": [{"name": "envoy.filters.network.tcp_proxy", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
                "stat_prefix": "pass", "cluster": "pass"
            }}]
        })
    }

    /// `h2-coalescing-misroute`'s findings on one listener of these chains, as (chain B, message).
    fn findings(chains: Vec<serde_json::Value>) -> Vec<(String, String)> {
        let bootstrap = serde_json::json!({"static_resources": {"listeners": [{
            "name": "https",
            "address": {"socket_address": {"address": "127.0.0.1", "port_value": 443}},
            "listener_filters": [{"name": "envoy.filters.listener.tls_inspector", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"
            }}],
            "filter_chains": chains
        }]}});
        let mut sources = Sources::new();
        sources.add(SourceFile::new("bootstrap.json", bootstrap.to_string()));
        let report = crate::analyze(&sources, &crate::Options::default());
        let found = report.findings.iter().filter(|d| d.rule.code == super::RULE.code);
        found.map(|d| (d.filter_chains.iter().cloned().collect::<Vec<_>>().join(","), d.message.clone())).collect()
    }

    #[test]
    fn a_listener_of_many_blocks_finds_what_one_block_finds_in_chain_order() {
        // Two wildcard chains and the exact names they cover, far apart: with 3000 fillers the
        // chains are examined in three blocks on every core, and each pair spans two of them.
        let pairs = [
            ("wild-com", "*.example.com", "api-com", "api.example.com"),
            ("wild-org", "*.example.org", "api-org", "api.example.org"),
        ];
        let few = || -> Vec<serde_json::Value> {
            pairs.iter().flat_map(|(w, wn, a, an)| [tls_chain(w, &[wn]), tls_chain(a, &[an])]).collect()
        };
        let one_block = findings(few());
        assert_eq!(one_block.iter().map(|(b, _)| b.as_str()).collect::<Vec<_>>(), ["api-com", "api-org"]);
        let mut many: Vec<serde_json::Value> = (0..3000).map(passthrough).collect();
        for (at, chain) in [0, 1500, 1200, 2900].into_iter().zip(few()) {
            many.insert(at, chain);
        }
        assert!(many.len() > 2 * super::CHAIN_BLOCK);
        assert_eq!(findings(many), one_block);
    }
}
