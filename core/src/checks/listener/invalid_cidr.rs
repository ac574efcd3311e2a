//! `invalid-cidr`: a `CidrRange` in a filter chain match that Envoy rejects when it builds the
//! listener's match: an address that is not an IP literal. (An empty address or a length over 128
//! break PGV rules, `constraint-violation`'s; ranges Envoy accepts but that match more than they
//! say are `misleading-cidr`'s.)

use crate::checks::cidr_ranges::{self, Problem, Range, Rejected};
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};

declare_rule! {
    pub(crate) static RULE for InvalidCidr = {
        code: "XDS104",
        name: "invalid-cidr",
        severity: Severity::Error,
        summary: "A prefix range in filter_chain_match whose address is not an IP literal: Envoy rejects the listener.",
        explanation: "invalid_cidr.md",
    }
}

pub(crate) struct InvalidCidr;

fn diagnostic(l: &ListenerCx<'_, '_>, r: &Range<'_, '_>, p: Rejected) -> Diagnostic {
    let Range { chain, list, index, range } = *r;
    let idx = index.to_string();
    let chain_name = chain.display_name();
    let addr = &range.address_prefix;
    let d = |message: String, leaf: &[&str]| {
        let path: Vec<&str> = ["filter_chain_match", list, &idx].into_iter().chain(leaf.iter().copied()).collect();
        Diagnostic::new(&RULE, message)
            .at(l.chain_field_location(chain, &path))
            .listener(l.listener.display_name().into_owned())
            .chain(chain_name.to_string())
    };
    match p {
        Rejected::NotAnIp => {
            let mut d =
                d(format!("address_prefix {addr:?} in chain '{chain_name}' is not an IP address"), &["address_prefix"])
                    .with_envoy_error(format!("malformed IP address: {addr}"))
                    .note("Envoy rejects the whole listener");
            if let Some((ip, len)) = addr.split_once('/') {
                d = d.note(format!("write the length apart: {{address_prefix: {ip}, prefix_len: {len}}}"));
            }
            d
        }
    }
}

impl Check for InvalidCidr {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        cidr_ranges::walk(cx, |l, r, p| {
            if let Problem::Rejected(p) = p {
                out.push(diagnostic(l, r, p));
            }
        });
    }
}
