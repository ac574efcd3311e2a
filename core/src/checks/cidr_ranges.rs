//! What `invalid-cidr` and `misleading-cidr` share: the range lists of a filter chain match,
//! and what is wrong with one range, read as Envoy reads it. One walk classifies every range;
//! each rule reports the problems of its severity.

use std::net::IpAddr;

use crate::checks::{Context, ListenerCx};
use crate::model::{CidrRange, FilterChain};

/// The three range lists.
pub(super) const LISTS: [&str; 3] = ["prefix_ranges", "source_prefix_ranges", "direct_source_prefix_ranges"];

/// What is wrong with one range.
pub(super) enum Problem {
    Rejected(Rejected),
    Accepted(Accepted),
}

/// A range Envoy rejects the listener for when it builds the match (PGV's limits, an empty
/// address and a length over 128, are `constraint-violation`'s: the schema reader checks them).
pub(super) enum Rejected {
    NotAnIp,
}

/// A range Envoy accepts that matches more than it says, or only on some hosts.
pub(super) enum Accepted {
    /// An IPv6 zone naming an interface: valid only on a host that has it.
    NamedZone(String),
    NoLength(IpAddr),
    HostBits {
        ip: IpAddr,
        len: u32,
        network: IpAddr,
    },
    Ipv4Over32(u32),
}

fn classify(r: &CidrRange<'_>, validated: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    // PGV refuses an empty address or a length over 128 before anything is built.
    if !validated || r.address_prefix.is_empty() || r.prefix_len.is_some_and(|l| l > 128) {
        return out;
    }
    let (ip, zone) = match parse_ip(&r.address_prefix) {
        Some(parsed) => parsed,
        None => {
            out.push(Problem::Rejected(Rejected::NotAnIp));
            return out;
        }
    };
    if let Some(zone) = zone {
        out.push(Problem::Accepted(Accepted::NamedZone(zone.to_owned())));
    }
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    match r.prefix_len {
        None if !ip.is_unspecified() => out.push(Problem::Accepted(Accepted::NoLength(ip))),
        None => {}
        Some(len) if len > 128 => {}
        Some(len) => {
            if ip.is_ipv4() && len > 32 {
                out.push(Problem::Accepted(Accepted::Ipv4Over32(len)));
            }
            let len = len.min(bits);
            let network = mask(ip, len);
            if network != ip {
                out.push(Problem::Accepted(Accepted::HostBits { ip, len, network }));
            }
        }
    }
    out
}

/// Parses an address as Envoy does (getaddrinfo with AI_NUMERICHOST): an IPv6 literal may carry
/// a zone, `%<number>` (accepted while it fits in 32 bits) or `%<interface>` (accepted when the
/// host has that interface, which xdsck cannot know: returned for a warning). Checked with envoy
/// 1.40: `fe80::1%1` and `fe80::1%lo` pass, `fe80::1%nosuchif` and `10.0.0.1%1` do not.
pub(super) fn parse_ip(text: &str) -> Option<(IpAddr, Option<&str>)> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some((ip, None));
    }
    let (addr, zone) = text.split_once('%')?;
    let ip = addr.parse::<std::net::Ipv6Addr>().ok()?;
    if zone.is_empty() {
        return None;
    }
    if zone.bytes().all(|b| b.is_ascii_digit()) {
        return zone.parse::<u32>().ok().map(|_| (IpAddr::V6(ip), None));
    }
    Some((IpAddr::V6(ip), Some(zone)))
}

pub(super) fn mask(ip: IpAddr, len: u32) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            IpAddr::V4((u32::from(v4) & m).into())
        }
        IpAddr::V6(v6) => {
            let m = if len == 0 { 0 } else { u128::MAX << (128 - len) };
            IpAddr::V6((u128::from(v6) & m).into())
        }
    }
}

/// One range of a chain, with where it is: its list and its index.
pub(super) struct Range<'r, 'a> {
    pub(super) chain: &'r FilterChain<'a>,
    pub(super) list: &'static str,
    pub(super) index: usize,
    pub(super) range: &'r CidrRange<'a>,
}

/// Calls `f` for every problem of every range of every live listener, in input order.
pub(super) fn walk(cx: Context<'_, '_>, mut f: impl FnMut(&ListenerCx<'_, '_>, &Range<'_, '_>, Problem)) {
    for l in cx.listeners() {
        // Envoy parses the ranges only in legacy mode, and never those of the default chain
        // (its match is ignored); PGV checks every range regardless.
        let legacy = l.listener.filter_chain_matcher.is_none();
        let chains = l.listener.filter_chains.iter().map(|c| (c, legacy));
        for (chain, validated) in chains.chain(l.listener.default_filter_chain.as_deref().map(|c| (c, false))) {
            let Some(m) = &chain.filter_chain_match else { continue };
            let lists = [m.prefix_ranges(), m.source_prefix_ranges(), m.direct_source_prefix_ranges()];
            for (list, ranges) in LISTS.into_iter().zip(lists) {
                for (index, range) in ranges.iter().enumerate() {
                    for p in classify(range, validated) {
                        f(&l, &Range { chain, list, index, range }, p);
                    }
                }
            }
        }
    }
}
