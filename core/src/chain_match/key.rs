//! The keys of Envoy's filter-chain index, normalised the way Envoy normalises them.

use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::model::{CidrRange, SourceType};

/// One level of Envoy's index, in the order Envoy walks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// `destination_port`: the local port the connection arrived on (original destination).
    DestinationPort,
    /// `prefix_ranges`: the local address the connection arrived on, longest prefix wins.
    DestinationIp,
    /// `server_names`: the TLS SNI, exact names before the longest wildcard suffix.
    ServerName,
    /// `transport_protocol`: `tls` or `raw_buffer` as set by a listener filter (TLS inspector).
    TransportProtocol,
    /// `application_protocols`: the ALPN list offered by the client; any one offered may match.
    ApplicationProtocol,
    /// `direct_source_prefix_ranges`: the peer address of the socket itself, not a PROXY-protocol
    /// address.
    DirectSourceIp,
    /// `source_type`: whether the peer is local (same host) or external.
    SourceType,
    /// `source_prefix_ranges`: the client address (after the PROXY protocol, if any).
    SourceIp,
    /// `source_ports`: the client's port, the last and most specific level.
    SourcePort,
}

impl Level {
    /// Every level in Envoy's walk order; a level's index here is its discriminant, which
    /// [`Level::next`] relies on.
    pub const ALL: [Level; 9] = [
        Level::DestinationPort,
        Level::DestinationIp,
        Level::ServerName,
        Level::TransportProtocol,
        Level::ApplicationProtocol,
        Level::DirectSourceIp,
        Level::SourceType,
        Level::SourceIp,
        Level::SourcePort,
    ];

    /// The `FilterChainMatch` field this level reads, as written in Envoy's API (and so in
    /// findings and trace output).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::DestinationPort => "destination_port",
            Level::DestinationIp => "destination_ip",
            Level::ServerName => "server_name",
            Level::TransportProtocol => "transport_protocol",
            Level::ApplicationProtocol => "application_protocol",
            Level::DirectSourceIp => "direct_source_ip",
            Level::SourceType => "source_type",
            Level::SourceIp => "source_ip",
            Level::SourcePort => "source_port",
        }
    }

    /// The level Envoy consults after this one; `None` after [`Level::SourcePort`], where a
    /// surviving chain is the one selected.
    pub fn next(self) -> Option<Level> {
        Level::ALL.get(self as usize + 1).copied()
    }
}

/// A key at one level. `Any` is Envoy's wildcard key: the criterion was not set.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key<'a> {
    /// Unset criterion (port 0, `""`, ANY): matches when nothing more specific is present.
    Any,
    /// A destination or source port (`destination_port`, `source_ports`).
    Port(u32),
    /// A CIDR range with its host bits cleared, as Envoy keys its prefix tries.
    Cidr(IpNet),
    /// An exact server name, lower-cased.
    Name(Cow<'a, str>),
    /// A wildcard server name stored as Envoy stores it: `*.example.com` → `.example.com`.
    Suffix(Cow<'a, str>),
    /// A transport or application protocol (compared case-sensitively, as Envoy does).
    Protocol(Cow<'a, str>),
    /// A non-`ANY` `source_type` (local or external); `ANY` is [`Key::Any`].
    SourceType(SourceType),
}

impl Key<'_> {
    /// The key as text, written in pieces: what `Display` shows, and, into a `String`, without
    /// the formatting machinery, which cost more than the words where a finding per tenant names
    /// its keys.
    pub fn write_to<W: fmt::Write + ?Sized>(&self, w: &mut W) -> fmt::Result {
        match self {
            Key::Any => w.write_str("(any)"),
            Key::Port(p) => w.write_str(itoa::Buffer::new().format(*p)),
            Key::Cidr(n) => write!(w, "{n}"),
            Key::Name(n) => w.write_str(n),
            Key::Suffix(s) => {
                w.write_str("*")?;
                w.write_str(s)
            }
            Key::Protocol(p) => w.write_str(p),
            Key::SourceType(t) => w.write_str(t.as_str()),
        }
    }
}

impl fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}

/// Why a CIDR of a chain cannot be indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CidrProblem {
    /// `address_prefix` is not an IP literal: Envoy rejects the listener.
    Malformed,
}

/// Normalises a CIDR as Envoy's `CidrRange` does: unset length is 0, IPv4 lengths above 32 are
/// clamped, host bits are masked.
pub fn cidr(range: &CidrRange<'_>) -> Result<IpNet, CidrProblem> {
    let addr: IpAddr = range.address_prefix.parse().map_err(|_| CidrProblem::Malformed)?;
    let len = range.prefix_len.unwrap_or(0);
    let len = match addr {
        IpAddr::V4(_) => len.min(32),
        IpAddr::V6(_) => len.min(128),
    };
    let len = u8::try_from(len).map_err(|_| CidrProblem::Malformed)?;
    IpNet::new(addr, len).map(|n| n.trunc()).map_err(|_| CidrProblem::Malformed)
}

/// Whether a server name is one Envoy refuses (`*` anywhere but a leading `*.`).
pub fn is_partial_wildcard(name: &str) -> bool {
    name.contains('*') && !name.starts_with("*.")
}

/// A name as Envoy compares server names and domains: ASCII lower-cased, borrowed when it
/// already is (nearly every name: most checks ask it of every name of a run).
pub fn ascii_lower(name: &str) -> Cow<'_, str> {
    // Folded over every byte rather than stopped at the first upper-case one: nearly every name
    // has none, and without the early exit the loop is vectorised (about 240 instructions a
    // tenant's name with `any`, byte by byte).
    if name.bytes().fold(false, |upper, b| upper | b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// The server-name key Envoy stores: lower-cased; `*.x` and `.x` both become the suffix `.x`;
/// `""` is the wildcard key.
pub fn server_name(name: &str) -> Key<'_> {
    let lower = ascii_lower(name);
    if lower.is_empty() {
        return Key::Any;
    }
    match lower {
        Cow::Borrowed(s) => match s.strip_prefix('*') {
            Some(rest) => Key::Suffix(Cow::Borrowed(rest)),
            None if s.starts_with('.') => Key::Suffix(Cow::Borrowed(s)),
            None => Key::Name(Cow::Borrowed(s)),
        },
        Cow::Owned(s) => match s.strip_prefix('*') {
            Some(rest) => Key::Suffix(Cow::Owned(rest.to_owned())),
            None if s.starts_with('.') => Key::Suffix(Cow::Owned(s)),
            None => Key::Name(Cow::Owned(s)),
        },
    }
}

/// The wildcard suffixes Envoy tries for a server name, longest first: for `a.b.example.com`,
/// `.b.example.com`, `.example.com`, `.com`. Never the name itself, never a bare `.`.
pub fn suffixes(sni: &str) -> impl Iterator<Item = &str> {
    sni.char_indices().skip(1).filter(|&(_, c)| c == '.').map(move |(i, _)| &sni[i..]).filter(|s| s.len() > 1)
}

/// Which wildcard server name takes each name of a listener when no exact one does, as Envoy
/// looks it up (the longest `*.suffix` strictly above the name, compared lower-cased): for the
/// page's list of a listener's names, which shows each under the wildcard that covers it.
/// `names` are as written; the answer is in their order, `None` for a name no wildcard covers.
pub fn covering_wildcards<'n>(names: &[&'n str]) -> Vec<Option<&'n str>> {
    let keys: Vec<Key<'_>> = names.iter().map(|n| server_name(n)).collect();
    // The first of the names that spell one wildcard (Envoy refuses the second one's chain).
    let mut wildcards: std::collections::HashMap<&str, &'n str> = std::collections::HashMap::new();
    for (k, n) in keys.iter().zip(names) {
        if let Key::Suffix(s) = k {
            wildcards.entry(&**s).or_insert(*n);
        }
    }
    keys.iter()
        .map(|k| {
            // A wildcard's own suffix starts at its first byte, which `suffixes` never yields:
            // a wildcard is covered by a wider one, never by itself.
            let name = match k {
                Key::Name(n) | Key::Suffix(n) => &**n,
                _ => return None,
            };
            suffixes(name).find_map(|s| wildcards.get(s).copied())
        })
        .collect()
}

/// The most specific prefix among `keys` that contains `addr`, with `Any` standing for the
/// zero-length prefix of both families. Returns every key of that length (more than one means
/// Envoy's choice is undefined).
pub fn longest_prefix<'k, 'a: 'k>(keys: impl Iterator<Item = &'k Key<'a>>, addr: IpAddr) -> Vec<&'k Key<'a>> {
    let mut best: Vec<&Key<'a>> = Vec::new();
    let mut best_len: i32 = -1;
    for key in keys {
        let len = match key {
            Key::Any => 0,
            Key::Cidr(net) if net.contains(&addr) => i32::from(net.prefix_len()),
            _ => continue,
        };
        if len > best_len {
            best_len = len;
            best.clear();
        }
        if len == best_len {
            best.push(key);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(a: &str, len: Option<u32>) -> CidrRange<'_> {
        CidrRange { address_prefix: a.into(), prefix_len: len }
    }

    #[test]
    fn cidrs_normalise_like_envoy() {
        assert_eq!(cidr(&range("10.1.2.3", Some(8))).unwrap().to_string(), "10.0.0.0/8");
        assert_eq!(cidr(&range("10.1.2.3", None)).unwrap().to_string(), "0.0.0.0/0");
        assert_eq!(cidr(&range("10.1.2.3", Some(64))).unwrap().to_string(), "10.1.2.3/32");
        assert_eq!(cidr(&range("2001:db8::1", Some(32))).unwrap().to_string(), "2001:db8::/32");
        assert_eq!(cidr(&range("10.0.0.0/8", None)), Err(CidrProblem::Malformed));
        assert_eq!(cidr(&range("", None)), Err(CidrProblem::Malformed));
    }

    #[test]
    fn each_name_is_under_the_longest_wildcard_above_it() {
        let names = [
            "*.example.com",
            "*.api.example.com",
            "x.api.example.com",
            "API.example.com",
            "*.API.example.com",
            "other.org",
        ];
        assert_eq!(
            covering_wildcards(&names),
            [
                None,
                Some("*.example.com"),
                Some("*.api.example.com"),
                Some("*.example.com"),
                Some("*.example.com"),
                None
            ]
        );
    }

    #[test]
    fn server_names_key_like_envoy() {
        assert_eq!(server_name("*.Example.com"), Key::Suffix(".example.com".into()));
        assert_eq!(server_name(".example.com"), Key::Suffix(".example.com".into()));
        assert_eq!(server_name("API.example.com"), Key::Name("api.example.com".into()));
        assert_eq!(server_name(""), Key::Any);
        assert_eq!(server_name("*."), Key::Suffix(".".into()));
        assert!(is_partial_wildcard("*"));
        assert!(is_partial_wildcard("www.*.example.com"));
        assert!(!is_partial_wildcard("*.*.example.com"));
    }

    #[test]
    fn keys_read_as_envoy_words() {
        let keys = [
            (Key::Any, "(any)"),
            (Key::Port(8443), "8443"),
            (Key::Cidr(cidr(&range("10.1.2.3", Some(8))).unwrap()), "10.0.0.0/8"),
            (Key::Name("api.example.com".into()), "api.example.com"),
            (Key::Suffix(".example.com".into()), "*.example.com"),
            (Key::Protocol("h2".into()), "h2"),
            (Key::SourceType(SourceType::SameIpOrLoopback), "SAME_IP_OR_LOOPBACK"),
        ];
        for (key, text) in keys {
            assert_eq!(key.to_string(), text);
            // Written into a string as it is: the same words, without `Display`.
            let mut written = String::from("<");
            key.write_to(&mut written).unwrap();
            assert_eq!(written, format!("<{text}"));
        }
    }

    #[test]
    fn suffixes_go_longest_first_and_skip_the_name_and_trailing_dot() {
        assert_eq!(suffixes("a.b.example.com").collect::<Vec<_>>(), [".b.example.com", ".example.com", ".com"]);
        assert_eq!(suffixes("example.com").collect::<Vec<_>>(), [".com"]);
        assert_eq!(suffixes("www.example.com.").collect::<Vec<_>>(), [".example.com.", ".com."]);
        assert_eq!(suffixes("localhost").count(), 0);
    }
}
