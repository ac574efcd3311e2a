//! `malformed-cidr`: a `CidrRange` in a filter chain match that Envoy rejects (not an IP
//! literal, an empty address, a length over 128) or that matches more than it says (no length,
//! host bits, an IPv4 length over 32).

use std::net::IpAddr;

use crate::checks::{Check, Context, ListenerCx, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{CidrRange, FilterChain};

declare_rule! {
    pub static RULE for MalformedCidr = {
        code: "XDS104",
        name: "malformed-cidr",
        severity: Severity::Error,
        summary: "A prefix range in filter_chain_match is not a valid CIDR (Envoy rejects the listener) or matches more than it appears to.",
        explanation: "malformed_cidr.md",
    }
}

pub struct MalformedCidr;

/// The three range lists, with the PGV field name Envoy's validation messages use.
const LISTS: [(&str, &str); 3] = [
    ("prefix_ranges", "PrefixRanges"),
    ("source_prefix_ranges", "SourcePrefixRanges"),
    ("direct_source_prefix_ranges", "DirectSourcePrefixRanges"),
];

/// PGV's message for one range: the part from "Proto constraint validation failed" on, as a
/// Listener resource (LDS) reports it. A bootstrap adds the path from the Bootstrap down to the
/// listener in front of `ListenerValidationError`; both put a text dump of the message first.
fn pgv_error(chain: &FilterChain<'_>, list: &str, index: usize, detail: &str) -> String {
    envoy_text::pgv_filter_chain_match(
        chain,
        format_args!(
            "{list}[{index}]: embedded message failed validation | caused by CidrRangeValidationError.{detail}"
        ),
    )
}

enum Problem {
    /// PGV: `address_prefix` shorter than 1 character.
    EmptyAddress,
    /// PGV: `prefix_len` > 128.
    LengthOver128(u32),
    NotAnIp,
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
    // PGV runs on every chain, matcher mode and default chain included.
    if r.address_prefix.is_empty() {
        out.push(Problem::EmptyAddress);
    }
    if let Some(len) = r.prefix_len.filter(|&l| l > 128) {
        out.push(Problem::LengthOver128(len));
    }
    if !validated || r.address_prefix.is_empty() {
        return out;
    }
    let (ip, zone) = match parse_ip(&r.address_prefix) {
        Some(parsed) => parsed,
        None => {
            out.push(Problem::NotAnIp);
            return out;
        }
    };
    if let Some(zone) = zone {
        out.push(Problem::NamedZone(zone.to_owned()));
    }
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    match r.prefix_len {
        None if !ip.is_unspecified() => out.push(Problem::NoLength(ip)),
        None => {}
        Some(len) if len > 128 => {}
        Some(len) => {
            if ip.is_ipv4() && len > 32 {
                out.push(Problem::Ipv4Over32(len));
            }
            let len = len.min(bits);
            let network = mask(ip, len);
            if network != ip {
                out.push(Problem::HostBits { ip, len, network });
            }
        }
    }
    out
}

/// Parses an address as Envoy does (getaddrinfo with AI_NUMERICHOST): an IPv6 literal may carry
/// a zone, `%<number>` (accepted while it fits in 32 bits) or `%<interface>` (accepted when the
/// host has that interface, which xdsck cannot know: returned for a warning). Checked with envoy
/// 1.40: `fe80::1%1` and `fe80::1%lo` pass, `fe80::1%nosuchif` and `10.0.0.1%1` do not.
fn parse_ip(text: &str) -> Option<(IpAddr, Option<&str>)> {
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

fn mask(ip: IpAddr, len: u32) -> IpAddr {
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

fn diagnostic(
    l: &ListenerCx<'_, '_>,
    chain: &FilterChain<'_>,
    (list, pgv_list): (&str, &str),
    index: usize,
    r: &CidrRange<'_>,
    p: Problem,
) -> Diagnostic {
    let idx = index.to_string();
    let chain_name = chain.display_name();
    let addr = &r.address_prefix;
    let field = |leaf: &str| l.chain_field_location(chain, &["filter_chain_match", list, &idx, leaf]);
    let d = |message: String, leaf: &str| {
        Diagnostic::new(&RULE, message)
            .at(field(leaf))
            .listener(l.listener.name.to_string())
            .chain(chain_name.to_string())
    };
    let pgv_note = "proto validation (PGV) fails before Envoy reads the listener; Envoy prints a dump of the message, then this text";
    match p {
        Problem::EmptyAddress => {
            // An empty address_prefix may be absent from the input: point at the range.
            Diagnostic::new(&RULE, format!("{list}[{index}] of chain '{chain_name}' has no address_prefix"))
                .at(l.chain_field_location(chain, &["filter_chain_match", list, &idx]))
                .listener(l.listener.name.to_string())
                .chain(chain_name.to_string())
                .envoy_error(pgv_error(chain, pgv_list, index, "AddressPrefix: value length must be at least 1 characters"))
                .note(pgv_note)
        }
        Problem::LengthOver128(len) => d(format!("prefix_len {len} in chain '{chain_name}' is over 128"), "prefix_len")
            .envoy_error(pgv_error(chain, pgv_list, index, "PrefixLen: value must be less than or equal to 128"))
            .note(pgv_note),
        Problem::NotAnIp => {
            let mut d = d(format!("address_prefix {addr:?} in chain '{chain_name}' is not an IP address"), "address_prefix")
                .envoy_error(format!("malformed IP address: {addr}"))
                .note("Envoy rejects the whole listener");
            if let Some((ip, len)) = addr.split_once('/') {
                d = d.note(format!("write the length apart: {{address_prefix: {ip}, prefix_len: {len}}}"));
            }
            d
        }
        Problem::NamedZone(zone) => {
            d(format!("address_prefix {addr:?} in chain '{chain_name}' names the interface {zone:?}"), "address_prefix")
                .severity(Severity::Warning)
                .note(format!(
                    "Envoy resolves the zone on its own host: where no interface {zone:?} exists it rejects the listener with `malformed IP address: {addr}`"
                ))
                .note("the zone plays no part in matching; leave it out")
        }
        Problem::NoLength(ip) => {
            let family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
            let host = if ip.is_ipv4() { 32 } else { 128 };
            d(format!("{addr} in chain '{chain_name}' has no prefix_len: it matches every {family} address"), "address_prefix")
                .severity(Severity::Warning)
                .note(format!("an unset prefix_len is 0, so Envoy reads this as {}/0", mask(ip, 0)))
                .note(format!("for this one address write prefix_len: {host}"))
        }
        Problem::HostBits { ip, len, network } => {
            d(format!("{ip}/{len} in chain '{chain_name}' has host bits set: it is {network}/{len}"), "address_prefix")
                .severity(Severity::Warning)
                .note(format!("Envoy masks the address to {network}/{len}, so the range is wider than {ip} suggests"))
        }
        Problem::Ipv4Over32(len) => {
            d(format!("IPv4 prefix_len {len} in chain '{chain_name}' is over 32"), "prefix_len")
                .severity(Severity::Warning)
                .note("Envoy accepts it and clamps the length to 32")
        }
    }
}

impl Check for MalformedCidr {
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            // Envoy parses the ranges only in legacy mode, and never those of the default chain
            // (its match is ignored); PGV checks every range regardless.
            let legacy = l.listener.filter_chain_matcher.is_none();
            let chains = l.listener.filter_chains.iter().map(|c| (c, legacy));
            for (chain, validated) in chains.chain(l.listener.default_filter_chain.iter().map(|c| (c, false))) {
                let Some(m) = &chain.filter_chain_match else { continue };
                let lists = [&m.prefix_ranges, &m.source_prefix_ranges, &m.direct_source_prefix_ranges];
                for (names, ranges) in LISTS.into_iter().zip(lists) {
                    for (i, r) in ranges.iter().enumerate() {
                        for p in classify(r, validated) {
                            out.push(diagnostic(&l, chain, names, i, r, p));
                        }
                    }
                }
            }
        }
    }
}
