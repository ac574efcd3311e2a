//! `invalid-cidr`: a `CidrRange` in a filter chain match that Envoy rejects: not an IP literal,
//! an empty address, a length over 128. (Ranges Envoy accepts but that match more than they
//! say are `misleading-cidr`'s.)

use crate::checks::cidr_ranges::{self, Problem, Range, Rejected};
use crate::checks::{Check, Context, ListenerCx, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::FilterChain;

declare_rule! {
    pub(crate) static RULE for InvalidCidr = {
        code: "XDS104",
        name: "invalid-cidr",
        severity: Severity::Error,
        summary: "A prefix range in filter_chain_match is not a valid CIDR: Envoy rejects the listener.",
        explanation: "invalid_cidr.md",
    }
}

pub(crate) struct InvalidCidr;

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

fn diagnostic(l: &ListenerCx<'_, '_>, r: &Range<'_, '_>, p: Rejected) -> Diagnostic {
    let Range { chain, list: (list, pgv_list), index, range } = *r;
    let idx = index.to_string();
    let chain_name = chain.display_name();
    let addr = &range.address_prefix;
    let d = |message: String, leaf: &[&str]| {
        let path: Vec<&str> = ["filter_chain_match", list, &idx].into_iter().chain(leaf.iter().copied()).collect();
        Diagnostic::new(&RULE, message)
            .at(l.chain_field_location(chain, &path))
            .listener(l.listener.name.to_string())
            .chain(chain_name.to_string())
    };
    let pgv_note = "proto validation (PGV) fails before Envoy reads the listener; Envoy prints a dump of the message, then this text";
    match p {
        // An empty address_prefix may be absent from the input: point at the range.
        Rejected::EmptyAddress => d(format!("{list}[{index}] of chain '{chain_name}' has no address_prefix"), &[])
            .envoy_error(pgv_error(chain, pgv_list, index, "AddressPrefix: value length must be at least 1 characters"))
            .note(pgv_note),
        Rejected::LengthOver128(len) => {
            d(format!("prefix_len {len} in chain '{chain_name}' is over 128"), &["prefix_len"])
                .envoy_error(pgv_error(chain, pgv_list, index, "PrefixLen: value must be less than or equal to 128"))
                .note(pgv_note)
        }
        Rejected::NotAnIp => {
            let mut d =
                d(format!("address_prefix {addr:?} in chain '{chain_name}' is not an IP address"), &["address_prefix"])
                    .envoy_error(format!("malformed IP address: {addr}"))
                    .note("Envoy rejects the whole listener");
            if let Some((ip, len)) = addr.split_once('/') {
                d = d.note(format!("write the length apart: {{address_prefix: {ip}, prefix_len: {len}}}"));
            }
            d
        }
    }
}

impl Check for InvalidCidr {
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        cidr_ranges::walk(cx, |l, r, p| {
            if let Problem::Rejected(p) = p {
                out.push(diagnostic(l, r, p));
            }
        });
    }
}
