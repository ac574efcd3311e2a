//! `misleading-cidr`: a `CidrRange` in a filter chain match that Envoy accepts but that matches
//! more than it says (no length, host bits, an IPv4 length over 32) or only on hosts with a
//! given interface. (Ranges Envoy rejects are `invalid-cidr`'s.)

use crate::checks::cidr_ranges::{self, Accepted, Problem, Range};
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};

declare_rule! {
    pub(crate) static RULE for MisleadingCidr = {
        code: "XDS206",
        name: "misleading-cidr",
        severity: Severity::Warning,
        summary: "A prefix range in filter_chain_match that Envoy accepts matches more than it appears to.",
        explanation: "misleading_cidr.md",
        fingerprint: "XDS104",
    }
}

pub(crate) struct MisleadingCidr;

fn diagnostic(l: &ListenerCx<'_, '_>, r: &Range<'_, '_>, p: Accepted) -> Diagnostic {
    let Range { chain, list, index, range } = *r;
    let idx = index.to_string();
    let chain_name = chain.display_name();
    let addr = &range.address_prefix;
    let d = |message: String, leaf: &str| {
        Diagnostic::new(&RULE, message)
            .at(l.chain_field_location(chain, &["filter_chain_match", list, &idx, leaf]))
            .listener(l.listener.display_name().into_owned())
            .chain(chain_name.to_string())
    };
    match p {
        Accepted::NamedZone(zone) => {
            d(format!("address_prefix {addr:?} in chain '{chain_name}' names the interface {zone:?}"), "address_prefix")
                .note(format!(
                    "Envoy resolves the zone on its own host: where no interface {zone:?} exists it rejects the listener with `malformed IP address: {addr}`"
                ))
                .note("the zone plays no part in matching; leave it out")
        }
        Accepted::NoLength(ip) => {
            let family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
            let host = if ip.is_ipv4() { 32 } else { 128 };
            d(format!("{addr} in chain '{chain_name}' has no prefix_len: it matches every {family} address"), "address_prefix")
                .note(format!("an unset prefix_len is 0, so Envoy reads this as {}/0", cidr_ranges::mask(ip, 0)))
                .note(format!("for this one address write prefix_len: {host}"))
        }
        Accepted::HostBits { ip, len, network } => {
            d(format!("{ip}/{len} in chain '{chain_name}' has host bits set: it is {network}/{len}"), "address_prefix")
                .note(format!("Envoy masks the address to {network}/{len}, so the range is wider than {ip} suggests"))
        }
        Accepted::Ipv4Over32(len) => {
            d(format!("IPv4 prefix_len {len} in chain '{chain_name}' is over 32"), "prefix_len")
                .note("Envoy accepts it and clamps the length to 32")
        }
    }
}

impl Check for MisleadingCidr {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        cidr_ranges::walk(cx, |l, r, p| {
            if let Problem::Accepted(p) = p {
                out.push(diagnostic(l, r, p));
            }
        });
    }
}
