//! `xdsck trace`: which listener a connection reaches, what Envoy's matcher sees, and the chain
//! it lands on — asked of the same [`ListenerMatch`] the checks use, whichever engine (the
//! filter-chain index or `filter_chain_matcher`) the listener selects with.

use std::net::{IpAddr, SocketAddr};

use crate::chain_match::matcher::MatcherStep;
use crate::chain_match::select::{ListenerMatch, SelectError};
use crate::chain_match::trace::{Client, Connection, Outcome, Trace};
use crate::model::{Address, Listener, ListenerState, Snapshot};
use crate::source::Sources;

/// How the question describes the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attributes {
    /// What the client sends; the listener's own listener filters decide what Envoy sees.
    Client(Client),
    /// The attributes exactly as the matcher sees them.
    Exact {
        /// What the listener filters set: `tls` from a TLS inspector, `raw_buffer` otherwise
        /// (or what a filter xdsck does not model would set).
        transport_protocol: String,
        /// The SNI as given; lower-cased before matching, as Envoy's socket stores it.
        server_name: String,
        /// The ALPN list, in the client's order.
        application_protocols: Vec<String>,
    },
}

/// The kind of client a question describes (`--client`, the page's client field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    /// A TLS ClientHello, with an SNI and an ALPN list.
    Tls,
    /// Plaintext HTTP/1.1.
    Http1,
    /// Plaintext HTTP/2 with prior knowledge.
    H2c,
    /// Bytes that are neither TLS nor HTTP.
    Raw,
}

/// What a question's client fields ask, as the matcher's [`Attributes`]: the one translation
/// `xdsck trace` and the page share. `transport_protocol` asks for exact attributes (then
/// `client` must be absent); otherwise the client is `client`, or a TLS one when an SNI or ALPN
/// is given, an HTTP/1.1 one when an HTTP request is traced (`http_request`), else raw bytes.
/// Empty values are absent (a form's empty field); ALPN entries are trimmed.
pub fn attributes(
    client: Option<ClientKind>,
    transport_protocol: Option<&str>,
    sni: Option<&str>,
    alpn: &[String],
    http_request: bool,
) -> Result<Attributes, String> {
    let sni = sni.map(str::trim).unwrap_or_default().to_owned();
    let alpn: Vec<String> = alpn.iter().map(|a| a.trim().to_owned()).filter(|a| !a.is_empty()).collect();
    if let Some(t) = transport_protocol.map(str::trim).filter(|t| !t.is_empty()) {
        if client.is_some() {
            return Err("give a client or a transport protocol, not both".to_owned());
        }
        return Ok(Attributes::Exact {
            transport_protocol: t.to_owned(),
            server_name: sni,
            application_protocols: alpn,
        });
    }
    let described = !sni.is_empty() || !alpn.is_empty();
    let kind = client.unwrap_or(match (described, http_request) {
        (true, _) => ClientKind::Tls,
        // An HTTP request without TLS: an HTTP/1.1 client.
        (false, true) => ClientKind::Http1,
        (false, false) => ClientKind::Raw,
    });
    if kind != ClientKind::Tls && described {
        return Err("an SNI and ALPN describe a TLS ClientHello: give them with a TLS client or a transport protocol"
            .to_owned());
    }
    Ok(Attributes::Client(match kind {
        ClientKind::Tls => Client::Tls { sni, alpn },
        ClientKind::Http1 => Client::Http1,
        ClientKind::H2c => Client::H2c,
        ClientKind::Raw => Client::Raw,
    }))
}

/// A trace question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The listener to trace, by name (`--listener`); `None`: the live listener bound to
    /// `destination`. Naming it is how a warming or draining listener is traced.
    pub listener: Option<String>,
    /// The local address the connection arrives on: picks the listener and is matched against
    /// `destination_port` and `prefix_ranges`.
    pub destination: SocketAddr,
    /// The client's address; `None` when not given, so a listener with source criteria answers
    /// that it needs it instead of guessing.
    pub source: Option<SocketAddr>,
    /// The TCP peer when it differs from `source` (behind the PROXY protocol); `None`: the same.
    pub direct_source: Option<IpAddr>,
    /// What the client sends, or what the matcher sees.
    pub attributes: Attributes,
}

/// Why a question has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// `--listener` names no listener in the input; the second field lists those there are.
    #[error("no listener named '{0}' (listeners: {1})")]
    NoSuchListener(String, String),
    /// The third field names the warming and draining listeners bound there, which Envoy does
    /// not serve but `--listener` can trace.
    #[error("no listener is bound to {0}; name one with --listener (listeners: {1}){2}")]
    NoListenerOnAddress(SocketAddr, String, String),
    /// More than one live listener is bound to the address and none binds it exactly (an
    /// exact address beats a wildcard one): the count, the address, and their names.
    #[error("{0} listeners could take {1}: {2}; name one with --listener")]
    AmbiguousListener(usize, SocketAddr, String),
    /// The listener's `filter_chain_matcher` uses something xdsck does not model (the second
    /// field says what); a guessed answer would be worse than none.
    #[error("listener '{0}' selects chains with filter_chain_matcher, which xdsck cannot trace: {1}")]
    MatcherNotSupported(String, String),
    /// The inputs hold several proxies of a peer's map (`egctl config envoy-proxy all`): a
    /// connection goes through one of them. The field lists them.
    #[error("the input holds several proxies: {0}; name one with --proxy")]
    SeveralProxies(String),
    /// `--proxy` names none of the proxies the inputs hold (the second field lists them).
    #[error("no proxy named '{0}' (proxies: {1})")]
    NoSuchProxy(String, String),
}

/// Keeps in `snapshot` the one Envoy a connection goes through: of a peer's map of proxies, the
/// one named `proxy` (with the inputs that are no proxy's, the other files of that Envoy); a map
/// of several with none named is an error, not the first proxy's answer.
pub fn one_proxy(snapshot: &mut Snapshot<'_>, proxy: Option<&str>) -> Result<(), TraceError> {
    let mut names: Vec<&str> = Vec::new();
    for name in snapshot.inputs.iter().filter_map(|i| i.proxy.as_ref()?.name.as_deref()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let list = names.join(", ");
    match proxy {
        Some(p) if !names.contains(&p) => Err(TraceError::NoSuchProxy(p.to_owned(), list)),
        Some(p) => {
            let p = p.to_owned();
            snapshot.inputs.retain(|i| i.proxy.as_ref().and_then(|x| x.name.as_deref()).is_none_or(|n| n == p));
            Ok(())
        }
        None if names.len() > 1 => Err(TraceError::SeveralProxies(list)),
        None => Ok(()),
    }
}

/// The answer.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The name of the input the listener was read from (file name or xDS source).
    pub source: String,
    /// The proxy of a peer's map the listener is one of (`ns/pod`).
    pub proxy: Option<String>,
    /// The traced listener's name.
    pub listener: String,
    /// How the report names it ([`Listener::display_name`]: `listeners[2]` when unnamed).
    pub listener_display: String,
    /// What Envoy's matcher sees, after the listener's own listener filters: the trace's input,
    /// printed so a user can tell a missing TLS inspector from a wrong SNI.
    pub connection: Connection,
    /// The decision level by level and where the connection ended.
    pub trace: Trace,
    /// The chain reached: its name (`filter_chains[N]` when unnamed; the default chain's name),
    /// `None` when Envoy closes the connection.
    pub filter_chain: Option<String>,
    /// The clusters the chain's `tcp_proxy` passes the connection's bytes to, when it has one
    /// (no HTTP is read on such a chain).
    pub tcp_proxy: Option<Vec<String>>,
    /// For a listener with `filter_chain_matcher`: the matcher's decisions, each at the pointer
    /// (from the document's root) of the node it was taken at. The notes say the same in words.
    pub matcher_steps: Vec<MatcherStep>,
    /// Things worth saying that are not a step: the listener is warming or draining, a listener
    /// filter is missing, the matcher's decisions in words.
    pub notes: Vec<String>,
}

/// How a trace names a tcp_proxy's clusters: `cluster 'a'`, `weighted clusters 'a', 'b'`.
pub fn describe_tcp_proxy(clusters: &[String]) -> String {
    let quoted: Vec<String> = clusters.iter().map(|c| format!("'{c}'")).collect();
    match quoted.len() {
        1 => format!("cluster {}", quoted[0]),
        _ => format!("weighted clusters {}", quoted.join(", ")),
    }
}

/// Finds the listener a query is about: by name, or by the address it is bound to.
pub fn select_listener<'s, 'a>(
    snapshot: &'s Snapshot<'a>,
    name: Option<&str>,
    destination: Option<SocketAddr>,
) -> Result<(&'s crate::model::Input<'a>, &'s Listener<'a>), TraceError> {
    let live: Vec<_> = snapshot
        .inputs
        .iter()
        .flat_map(|i| i.listeners.iter().filter(|l| l.state.is_live()).map(move |l| (i, l)))
        .collect();
    let names = || {
        let mut n: Vec<&str> = live.iter().map(|(_, l)| &*l.name).collect();
        n.truncate(20);
        n.join(", ")
    };
    if let Some(name) = name {
        // The served listener of that name, else one Envoy holds without serving it (warming,
        // draining): it can still be asked about, and the answer says it does not serve.
        let held = || {
            snapshot
                .inputs
                .iter()
                .flat_map(|i| i.listeners.iter().filter(|l| !l.state.is_live()).map(move |l| (i, l)))
                .find(|(_, l)| l.name == name)
        };
        return live
            .iter()
            .find(|(_, l)| l.name == name)
            .copied()
            .or_else(held)
            .ok_or_else(|| TraceError::NoSuchListener(name.to_owned(), names()));
    }
    let dst = destination.expect("a query without a listener name has a destination");
    let bound: Vec<_> = live.iter().copied().filter(|(_, l)| l.addresses().any(|a| binds(a, dst))).collect();
    match bound.len() {
        0 => {
            let held: Vec<String> = snapshot
                .inputs
                .iter()
                .flat_map(|i| i.listeners.iter())
                .filter(|l| !l.state.is_live() && l.addresses().any(|a| binds(a, dst)))
                .map(|l| format!("'{}' ({})", l.name, l.state.as_str()))
                .collect();
            let held = if held.is_empty() {
                String::new()
            } else {
                format!("; bound there but not served: {} (trace it with --listener)", held.join(", "))
            };
            Err(TraceError::NoListenerOnAddress(dst, names(), held))
        }
        1 => Ok(bound[0]),
        n => {
            // An exact address beats a wildcard one, as the kernel would pick.
            let exact: Vec<_> = bound
                .iter()
                .copied()
                .filter(|(_, l)| l.addresses().any(|a| matches!(a, Address::Socket(s) if s.address.parse::<IpAddr>().ok() == Some(dst.ip()) && s.port_value == Some(u32::from(dst.port())))))
                .collect();
            if exact.len() == 1 {
                return Ok(exact[0]);
            }
            Err(TraceError::AmbiguousListener(
                n,
                dst,
                bound.iter().map(|(_, l)| &*l.name).collect::<Vec<_>>().join(", "),
            ))
        }
    }
}

fn binds(a: &Address<'_>, dst: SocketAddr) -> bool {
    let Address::Socket(s) = a else { return false };
    if s.port_value != Some(u32::from(dst.port())) {
        return false;
    }
    match s.address.parse::<IpAddr>() {
        Ok(ip) if ip == dst.ip() => true,
        Ok(ip) if ip.is_unspecified() => {
            ip.is_ipv4() == dst.is_ipv4() || (s.ipv4_compat && dst.is_ipv4()) || ip.is_ipv6()
        }
        _ => false,
    }
}

/// Answers a query.
pub fn trace(snapshot: &Snapshot<'_>, sources: &Sources, query: &Query) -> Result<Answer, TraceError> {
    let (input, listener) = select_listener(snapshot, query.listener.as_deref(), Some(query.destination))?;
    let (mut connection, mut notes) = match &query.attributes {
        Attributes::Client(client) => Connection::detect(listener, client, Some(query.destination), query.source),
        Attributes::Exact { transport_protocol, server_name, application_protocols } => (
            Connection {
                destination: Some(query.destination),
                source: query.source,
                direct_source: None,
                transport_protocol: transport_protocol.clone(),
                server_name: server_name.to_ascii_lowercase(),
                application_protocols: application_protocols.clone(),
            },
            Vec::new(),
        ),
    };
    connection.direct_source = query.direct_source;
    match listener.state {
        ListenerState::Warming => notes.push(format!(
            "listener '{}' is warming: Envoy does not serve it yet (connections go to its active version, if any); this is where they will go once it does",
            listener.name
        )),
        ListenerState::Draining => notes.push(format!(
            "listener '{}' is draining: Envoy sends it no new connections; this is where they went",
            listener.name
        )),
        _ => {}
    }
    // A dump that records a refused update: the connection goes where the version Envoy kept
    // sends it, which the user may not expect.
    if matches!(listener.state, ListenerState::Active | ListenerState::Warming)
        && let Some(e) = input.error_states.iter().find(|e| *e.listener_name == *listener.name)
    {
        let when = e.last_update_attempt.as_deref().map_or_else(String::new, |t| format!(" at {t}"));
        notes.push(format!(
            "Envoy rejected the last update of listener '{}'{when} ({}): this is the version it kept, not the one that was sent",
            listener.name, e.details
        ));
    }
    // One engine for both kinds of listener: the index, or the filter_chain_matcher.
    let matching = ListenerMatch::build(listener);
    let selection = matching
        .select(&connection)
        .map_err(|SelectError::Unmodelled(why)| TraceError::MatcherNotSupported(listener.name.to_string(), why))?;
    notes.extend(selection.notes);
    let chain = matching.chain(selection.trace.outcome);
    let filter_chain = chain.map(|c| c.display_name().into_owned());
    let tcp_proxy = chain.and_then(|c| c.tcp_proxy_clusters()).map(|cs| cs.iter().map(|c| c.to_string()).collect());
    Ok(Answer {
        source: sources.get(input.source).name().to_owned(),
        proxy: input.proxy.as_ref().and_then(|p| p.name.clone()),
        listener: listener.name.to_string(),
        listener_display: listener.display_name().into_owned(),
        connection,
        trace: selection.trace,
        filter_chain,
        tcp_proxy,
        matcher_steps: selection.matcher_steps,
        notes,
    })
}

impl Answer {
    /// Whether Envoy closes the connection (`xdsck trace` then exits 1).
    pub fn is_closed(&self) -> bool {
        matches!(self.trace.outcome, Outcome::Closed)
    }
}

#[cfg(test)]
mod tests {
    use super::{Attributes, ClientKind, attributes};
    use crate::chain_match::trace::Client;

    fn alpn(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_client_fields_mean_one_thing_for_the_cli_and_the_page() {
        // An SNI or ALPN is a TLS client; an HTTP request without them an HTTP/1.1 one; else raw.
        let tls = attributes(None, None, Some("API.example.com"), &alpn(&[" h2 ", ""]), true).unwrap();
        assert_eq!(tls, Attributes::Client(Client::Tls { sni: "API.example.com".into(), alpn: alpn(&["h2"]) }));
        assert_eq!(attributes(None, None, None, &[], true).unwrap(), Attributes::Client(Client::Http1));
        assert_eq!(attributes(None, None, Some(" "), &alpn(&[""]), false).unwrap(), Attributes::Client(Client::Raw));
        assert_eq!(attributes(Some(ClientKind::H2c), None, None, &[], true).unwrap(), Attributes::Client(Client::H2c));
        // Exact attributes, as a listener filter xdsck does not model would leave them.
        let exact = attributes(None, Some("raw_buffer"), Some("a"), &[], false).unwrap();
        assert!(
            matches!(exact, Attributes::Exact { ref transport_protocol, .. } if transport_protocol == "raw_buffer")
        );
        // An empty transport protocol field is absent.
        assert_eq!(attributes(None, Some(""), None, &[], false).unwrap(), Attributes::Client(Client::Raw));
        // What contradicts itself is refused, with the same words everywhere.
        assert!(attributes(Some(ClientKind::Tls), Some("tls"), None, &[], false).unwrap_err().contains("not both"));
        let e = attributes(Some(ClientKind::Http1), None, Some("a.example.com"), &[], false).unwrap_err();
        assert!(e.contains("describe a TLS ClientHello"), "{e}");
    }
}
