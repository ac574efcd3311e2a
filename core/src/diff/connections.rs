//! Connections: for a listener in two versions, every class of connections whose filter chain
//! changes, each with one witness connection.
//!
//! Exact, not sampled. Envoy's filter-chain index tells connections apart only by the keys it
//! holds at each level, so the keys of both versions' indexes, taken together, cut every level's
//! values into cells that both versions treat alike: each exact server name, what each wildcard
//! takes besides them, any other name; for ALPN, no protocol either version names, each named
//! one, and each ordered pair of them (a client's list acts, at each node, as the first of its
//! protocols that node names, so a pair is what sends one client to `h2` in one version and to
//! `http/1.1` in the other); each CIDR's addresses that no narrower CIDR takes, and those outside
//! all; each port named, any other. One connection from every combination of cells is asked of
//! both versions with the same [`Connection::detect`] and selection ([`ListenerMatch::outcome`],
//! the untraced twin of what `xdsck trace` asks), so each version's own listener filters decide what Envoy sees. Chains are
//! compared by what they do (their JSON without `name`, `filter_chain_match` and an
//! http_connection_manager's inline `route_config`, whose changes are the requests' part): a
//! reorder or a rename moves no connection.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::IpNet;
use serde_json::Value;

use crate::chain_match::key::{Key, Level};
use crate::chain_match::select::ListenerMatch;
use crate::chain_match::trace::{Client, Connection, Outcome};
use crate::model::{Address, FilterChain, Listener, TextOffset};
use crate::source::Locator;

/// A listener of one version: the listener, its index and where its text is.
#[derive(Debug, Clone, Copy)]
pub struct Side<'s, 'l, 'a> {
    /// The listener.
    pub listener: &'l Listener<'a>,
    /// Its chain selection, as `xdsck trace` asks it.
    pub matching: &'s ListenerMatch<'l, 'a>,
    /// Where its input's JSON text is: chains are compared by it.
    pub locator: Locator<'s>,
}

/// A class of connections that lands elsewhere in the new version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// What the class is, by the match keys of the two versions.
    pub class: Class,
    /// One connection of the class, as `xdsck trace` takes it.
    pub connection: Witness,
    /// The chain the old version sends them to (its display name); `None`: closed.
    pub old: Option<String>,
    /// The chain the new version sends them to; `None`: closed.
    pub new: Option<String>,
}

/// A class of connections, by the cells of the two versions' keys it is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    /// The narrowest destination range of either version that holds the class; `None`: outside
    /// every range either names.
    pub destination_range: Option<IpNet>,
    /// The listener's port.
    pub destination_port: u16,
    /// The narrowest source range (direct or PROXY-protocol) of either version that holds it.
    pub source_range: Option<IpNet>,
    /// A source port either version names; `None`: any other.
    pub source_port: Option<u16>,
    /// What the client sends: `tls`, `http1`, `h2c`, `raw`.
    pub client: &'static str,
    /// For TLS: the server names of the class, each an exact name, a wildcard (`*.example.com`:
    /// the names under it that no more specific key of either version takes) or `*` (any other
    /// name, or none).
    pub server_names: Vec<String>,
    /// For TLS: the ALPN cells of the class, each a list read as "the first protocol either
    /// version names is this one" (`[]`: none of them), or for two, "this one before that one".
    /// Every cell there is: any ALPN at all.
    pub application_protocols: Vec<Vec<String>>,
    /// Whether `application_protocols` holds every ALPN cell (the class does not depend on
    /// ALPN).
    pub any_alpn: bool,
}

/// One connection: where it goes, where it comes from, what the client sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    /// The local address it arrives on.
    pub destination: SocketAddr,
    /// The client's address.
    pub source: SocketAddr,
    /// What the client sends.
    pub client: Client,
}

/// What the two versions do with the listener's connections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connections {
    /// The classes that land elsewhere, in a stable order.
    pub moved: Vec<Moved>,
    /// Every pair of chains (old, new) some class of connections reaches in both versions, with
    /// one witness: the chains whose requests are compared next.
    pub reached: Vec<(Outcome, Outcome, Witness)>,
}

/// Whether a pair of chains does the same, and their display names (`None`: closed).
type Verdict = (bool, Option<String>, Option<String>);

/// A chain as it is compared: its display name and its text (`None`: closed).
type Behaviour<'s> = Option<(String, Option<&'s str>)>;

/// The classes of connections to this listener whose chain changes from `old` to `new`, the
/// witnesses' addresses inside `prefer` where a class reaches into it; `Err` when a version
/// selects with `filter_chain_matcher`, which this does not take apart.
pub fn connections(old: &Side<'_, '_, '_>, new: &Side<'_, '_, '_>, prefer: &[IpNet]) -> Result<Connections, String> {
    for side in [old, new] {
        if side.matching.matcher().is_some() {
            return Err(format!(
                "listener '{}' selects with filter_chain_matcher: its connections are not compared",
                side.listener.name
            ));
        }
    }
    let cells = Cells::of(old, new, prefer);
    // Where each client lands in each version, from every address cell: on every core.
    let mut landed: Vec<(&SocketAddr, &SocketAddr, usize, Outcome, Outcome)> = Vec::new();
    for destination in &cells.destinations {
        for source in &cells.sources {
            let outcomes = crate::parallel::par_map(&cells.clients, |(client, _)| {
                let ask = |side: &Side<'_, '_, '_>| {
                    let (c, _) = Connection::detect(side.listener, client, Some(*destination), Some(*source));
                    side.matching.outcome(&c).unwrap_or(Outcome::Closed)
                };
                (ask(old), ask(new))
            });
            landed.extend(outcomes.into_iter().enumerate().map(|(i, (o, n))| (destination, source, i, o, n)));
        }
    }
    // Whether the two chains of each pair met do the same, once per pair, on every core.
    let mut pairs: Vec<(Outcome, Outcome)> = landed.iter().map(|&(_, _, _, o, n)| (o, n)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let verdicts = crate::parallel::par_map(&pairs, |&(o, n)| {
        let (bo, bn) = (chain_behaviour(old, o), chain_behaviour(new, n));
        let name = |b: &Behaviour<'_>| b.as_ref().map(|(n, _)| n.clone());
        (alike(&bo, &bn), name(&bo), name(&bn))
    });
    let verdict: BTreeMap<(Outcome, Outcome), Verdict> = pairs.into_iter().zip(verdicts).collect();

    let mut reached: BTreeMap<(Outcome, Outcome), Witness> = BTreeMap::new();
    // Grouped by what moves and by every attribute but the server name.
    let mut moved: BTreeMap<(String, String, String), Moved> = BTreeMap::new();
    for (destination, source, i, o, n) in landed {
        let (client, name_cell) = &cells.clients[i];
        let witness = || Witness { destination: *destination, source: *source, client: client.clone() };
        if !matches!(o, Outcome::Closed) && !matches!(n, Outcome::Closed) {
            // A plaintext HTTP/1.1 witness where one reaches the pair: the simplest request.
            let w = reached.entry((o, n)).or_insert_with(witness);
            if matches!(client, Client::Http1) && !matches!(w.client, Client::Http1) {
                *w = witness();
            }
        }
        let (alike, old_name, new_name) = &verdict[&(o, n)];
        if *alike {
            continue;
        }
        let mut rest = client.clone();
        if let Client::Tls { sni, .. } = &mut rest {
            sni.clear();
        }
        let key = (format!("{destination} {source} {rest:?}"), format!("{old_name:?}"), format!("{new_name:?}"));
        let entry = moved.entry(key).or_insert_with(|| Moved {
            class: cells.class(destination, source, client),
            connection: witness(),
            old: old_name.clone(),
            new: new_name.clone(),
        });
        if !name_cell.is_empty() {
            entry.class.server_names.push(name_cell.clone());
        }
    }
    Ok(Connections {
        moved: merge_alpn(moved.into_values().collect(), cells.alpn_cells),
        reached: reached.into_iter().map(|((o, n), w)| (o, n, w)).collect(),
    })
}

/// One class for the ALPN cells that move alike: classes that differ in their ALPN cell alone
/// are one, its witness the first's (an Istio listener names half a dozen protocols: 37 cells).
fn merge_alpn(classes: Vec<Moved>, cells: usize) -> Vec<Moved> {
    let mut out: Vec<Moved> = Vec::new();
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    for m in classes {
        let c = &m.class;
        let key = format!(
            "{:?} {:?} {:?} {:?} {:?} {} {:?} {:?} {:?}",
            c.destination_range,
            c.destination_port,
            c.source_range,
            c.source_port,
            (m.connection.destination, m.connection.source),
            c.client,
            c.server_names,
            m.old,
            m.new
        );
        match at.get(&key) {
            Some(&i) => out[i].class.application_protocols.extend(m.class.application_protocols),
            None => {
                at.insert(key, out.len());
                out.push(m);
            }
        }
    }
    for m in &mut out {
        m.class.application_protocols.sort();
        m.class.any_alpn = m.class.client == "tls" && m.class.application_protocols.len() == cells;
    }
    out
}

/// The chain an outcome names, and its text.
fn chain_behaviour<'s>(side: &Side<'s, '_, '_>, outcome: Outcome) -> Behaviour<'s> {
    let chain = side.matching.chain(outcome)?;
    Some((chain.display_name().into_owned(), chain_text(side.locator, chain)))
}

/// The JSON text of a chain (`None` for one read from protobuf, which has none).
fn chain_text<'s>(locator: Locator<'s>, chain: &FilterChain<'_>) -> Option<&'s str> {
    let text = locator.json_text();
    // The chain's offset is its first key's; its object opens at the brace before it.
    let at = chain.offset.map(TextOffset::get).filter(|&o| o < text.len()).and_then(|o| text[..o].rfind('{'))?;
    let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<serde::de::IgnoredAny>();
    values.next()?.ok()?;
    Some(&text[at..at + values.byte_offset()])
}

/// Whether two chains (or closed, `None`) do the same with a connection. The same text is the
/// same chain (the common case, decided without parsing); else their JSON without `name`,
/// `filter_chain_match` and inline route tables is compared, in one form; a chain without text
/// is known by its name alone.
fn alike(a: &Behaviour<'_>, b: &Behaviour<'_>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some((_, Some(x))), Some((_, Some(y)))) => x == y || chain_value(x) == chain_value(y),
        (Some((x, _)), Some((y, _))) => x == y,
        _ => false,
    }
}

/// A chain's JSON without what only names or selects it, and without the inline route tables
/// of its http_connection_managers (their changes are the requests' part), in one form: a side
/// may be written by hand and the other be Envoy's own dump or a transcoded xDS answer, which
/// leave defaults out and print durations their way.
fn chain_value(text: &str) -> Value {
    let mut v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    canonical(&mut v);
    if let Value::Object(o) = &mut v {
        for k in ["name", "filter_chain_match", "filterChainMatch"] {
            o.remove(k);
        }
        for filter in o.get_mut("filters").and_then(Value::as_array_mut).into_iter().flatten() {
            let key = if filter.get("typed_config").is_some() { "typed_config" } else { "typedConfig" };
            if let Some(Value::Object(hcm)) = filter.get_mut(key) {
                hcm.remove("route_config");
                hcm.remove("routeConfig");
            }
        }
    }
    v
}

/// Leaves out what proto3 leaves out (defaults: `null`, `false`, `0`, `""`, empty lists and
/// objects) and writes a duration (`"1.500s"`) without trailing zeros, recursively.
fn canonical(v: &mut Value) -> bool {
    match v {
        Value::Object(o) => {
            o.retain(|_, x| !canonical(x));
            o.is_empty()
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                canonical(x);
            }
            a.is_empty()
        }
        Value::String(s) => {
            let seconds =
                s.strip_suffix('s').filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit() || b == b'.'));
            if let Some(n) = seconds.filter(|n| n.contains('.')) {
                *s = format!("{}s", n.trim_end_matches('0').trim_end_matches('.'));
            }
            s.is_empty()
        }
        Value::Null => true,
        Value::Bool(b) => !*b,
        Value::Number(n) => n.as_f64() == Some(0.0),
    }
}

/// The values to try at each level: one from every cell.
struct Cells {
    destinations: Vec<SocketAddr>,
    sources: Vec<SocketAddr>,
    /// Each client with the server-name cell it stands for (empty for a plaintext one).
    clients: Vec<(Client, String)>,
    destination_ranges: Vec<IpNet>,
    source_ranges: Vec<IpNet>,
    source_ports: Vec<u16>,
    /// How many ALPN cells there are.
    alpn_cells: usize,
}

impl Cells {
    fn of(old: &Side<'_, '_, '_>, new: &Side<'_, '_, '_>, prefer: &[IpNet]) -> Cells {
        let keys = |level: Level| -> Vec<Key<'_>> {
            let mut out = Vec::new();
            for side in [old, new] {
                let g = side.matching.graph();
                out.extend(g.nodes_at(level).filter_map(|n| g.key(n)));
            }
            out.sort();
            out.dedup();
            out
        };
        let cidrs = |level: Level| -> Vec<IpNet> {
            keys(level)
                .into_iter()
                .filter_map(|k| match k {
                    Key::Cidr(n) => Some(n),
                    _ => None,
                })
                .collect()
        };

        // Where connections arrive: the listener's own address (a wildcard one: one address
        // per destination cell), on its port.
        let bound = socket(new.listener).or_else(|| socket(old.listener));
        let port = bound.map_or(443, |a| a.port());
        let destination_ranges = cidrs(Level::DestinationIp);
        let destinations = match bound {
            Some(a) if !a.ip().is_unspecified() => vec![a],
            _ => {
                let v6 = bound.is_some_and(|a| a.is_ipv6());
                let fallback = if v6 {
                    IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1))
                } else {
                    IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))
                };
                region_witnesses(&destination_ranges, fallback, prefer)
                    .into_iter()
                    .map(|ip| SocketAddr::new(ip, port))
                    .collect()
            }
        };

        // Where they come from: one address per source cell (direct and PROXY-protocol ranges
        // alike), a local one when a chain asks for the source type, one port per port cell.
        let mut source_ranges = cidrs(Level::SourceIp);
        source_ranges.extend(cidrs(Level::DirectSourceIp));
        source_ranges.sort();
        source_ranges.dedup();
        let mut source_ips = region_witnesses(&source_ranges, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7)), prefer);
        if keys(Level::SourceType).iter().any(|k| !matches!(k, Key::Any)) {
            source_ips.push(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        source_ips.sort();
        source_ips.dedup();
        let source_ports: Vec<u16> = keys(Level::SourcePort)
            .into_iter()
            .filter_map(|k| if let Key::Port(p) = k { u16::try_from(p).ok() } else { None })
            .collect();
        let mut spare = 40000;
        while source_ports.contains(&spare) {
            spare += 1;
        }
        let sources = source_ips
            .iter()
            .flat_map(|ip| source_ports.iter().chain([&spare]).map(move |p| SocketAddr::new(*ip, *p)))
            .collect();

        // What the client sends: TLS with one server name per name cell and one ALPN list per
        // protocol cell; plaintext HTTP/1.1 and HTTP/2; other bytes.
        let server_names = keys(Level::ServerName);
        let exact: crate::hashing::InputSet<&str> =
            server_names.iter().filter_map(|k| if let Key::Name(n) = k { Some(&**n) } else { None }).collect();
        let suffixes: crate::hashing::InputSet<&str> =
            server_names.iter().filter_map(|k| if let Key::Suffix(s) = k { Some(&**s) } else { None }).collect();
        let mut names: Vec<(String, String)> = server_names
            .iter()
            .filter_map(|k| if let Key::Name(n) = k { Some((n.to_string(), n.to_string())) } else { None })
            .collect();
        for k in &server_names {
            if let Key::Suffix(s) = k {
                // A name under this wildcard and under no longer one, exact or wildcard.
                let mut w = format!("xdsck-diff{s}");
                while exact.contains(w.as_str()) || longer_suffix(&suffixes, s, &w) {
                    w.insert(0, 'x');
                }
                names.push((w, format!("*{s}")));
            }
        }
        names.push(("xdsck-diff.invalid".to_owned(), "*".to_owned()));
        let protocols: Vec<String> = keys(Level::ApplicationProtocol)
            .into_iter()
            .filter_map(|k| if let Key::Protocol(p) = k { Some(p.to_string()) } else { None })
            .collect();
        let mut alpns: Vec<Vec<String>> = vec![Vec::new()];
        alpns.extend(protocols.iter().map(|p| vec![p.clone()]));
        for a in &protocols {
            alpns.extend(protocols.iter().filter(|b| *b != a).map(|b| vec![a.clone(), b.clone()]));
        }
        let mut clients: Vec<(Client, String)> = names
            .iter()
            .flat_map(|(sni, cell)| {
                alpns.iter().map(move |alpn| (Client::Tls { sni: sni.clone(), alpn: alpn.clone() }, cell.clone()))
            })
            .collect();
        clients.extend([Client::Http1, Client::H2c, Client::Raw].map(|c| (c, String::new())));
        let alpn_cells = alpns.len();
        Cells { destinations, sources, clients, destination_ranges, source_ranges, source_ports, alpn_cells }
    }

    /// The class a cell's witness stands for (its server names are added as they are met).
    fn class(&self, destination: &SocketAddr, source: &SocketAddr, client: &Client) -> Class {
        let alpn = match client {
            Client::Tls { alpn, .. } => alpn.clone(),
            _ => Vec::new(),
        };
        Class {
            destination_range: narrowest(&self.destination_ranges, destination.ip()),
            destination_port: destination.port(),
            source_range: narrowest(&self.source_ranges, source.ip()),
            source_port: self.source_ports.contains(&source.port()).then_some(source.port()),
            client: client.kind(),
            server_names: Vec::new(),
            application_protocols: vec![alpn],
            any_alpn: false,
        }
    }
}

/// Whether a wildcard longer than `suffix` takes `name`: each longer tail of the name looked up.
fn longer_suffix(suffixes: &crate::hashing::InputSet<&str>, suffix: &str, name: &str) -> bool {
    (1..name.len().saturating_sub(suffix.len()))
        .filter(|&i| name.is_char_boundary(i))
        .any(|i| suffixes.contains(&name[i..]))
}

/// The narrowest of the ranges that holds the address.
fn narrowest(ranges: &[IpNet], ip: IpAddr) -> Option<IpNet> {
    ranges.iter().filter(|r| r.contains(&ip)).max_by_key(|r| r.prefix_len()).copied()
}

/// The listener's socket address, when it is an IP literal and port.
fn socket(l: &Listener<'_>) -> Option<SocketAddr> {
    match l.address.as_ref()? {
        Address::Socket(s) => Some(SocketAddr::new(s.address.parse().ok()?, u16::try_from(s.port_value?).ok()?)),
        _ => None,
    }
}

/// One address in every cell the ranges cut: for each range, an address no narrower range
/// takes (none when narrower ones cover it), and one outside them all (`outside` when no range
/// takes it). Inside a `prefer` range wherever the cell reaches into one.
fn region_witnesses(ranges: &[IpNet], outside: IpAddr, prefer: &[IpNet]) -> Vec<IpAddr> {
    let mut out = Vec::new();
    // The part of a cell (`range` without `holes`) inside a preferred range, else any of it.
    let pick = |range: IpNet, holes: &[IpNet]| -> Option<IpAddr> {
        prefer
            .iter()
            .find_map(|p| match () {
                () if p.contains(&range) => uncovered(range, holes),
                () if range.contains(p) => uncovered(*p, holes),
                () => None,
            })
            .or_else(|| uncovered(range, holes))
    };
    let whole: IpNet = if outside.is_ipv6() { "::/0" } else { "0.0.0.0/0" }.parse().expect("a CIDR");
    let preferred_outside = prefer.iter().find_map(|p| uncovered(*p, ranges));
    match preferred_outside {
        Some(a) => out.push(a),
        None if !ranges.iter().any(|r| r.contains(&outside)) => out.push(outside),
        None => out.extend(uncovered(whole, ranges)),
    }
    for r in ranges {
        let narrower: Vec<IpNet> = ranges.iter().filter(|n| *n != r && r.contains(*n)).copied().collect();
        out.extend(pick(*r, &narrower));
    }
    out.sort();
    out.dedup();
    out
}

/// An address of `range` that none of `holes` contains, if there is one.
fn uncovered(range: IpNet, holes: &[IpNet]) -> Option<IpAddr> {
    let inside: Vec<IpNet> = holes.iter().filter(|h| range.contains(*h) || h.contains(&range)).copied().collect();
    if inside.iter().any(|h| h.contains(&range)) {
        return None;
    }
    let free = |a: &IpAddr| !inside.iter().any(|h| h.contains(a));
    if let Some(a) = [pick(range), range.broadcast(), range.network()].into_iter().find(free) {
        return Some(a);
    }
    // Split in two and look in each half: at most the prefix length deep.
    range.subnets(range.prefix_len() + 1).ok()?.find_map(|half| uncovered(half, &inside))
}

/// An address in the range away from its edges where it can (not the network address).
fn pick(range: IpNet) -> IpAddr {
    match range {
        IpNet::V4(n) if n.prefix_len() < 31 => IpAddr::V4(Ipv4Addr::from(u32::from(n.network()) + 1)),
        IpNet::V6(n) if n.prefix_len() < 127 => IpAddr::V6(Ipv6Addr::from(u128::from(n.network()) + 1)),
        n => n.network(),
    }
}

#[cfg(test)]
mod tests;
