//! `unmatchable-domain`: a domain no Host can ever match, because the port it spells is removed
//! from every Host before the table is searched.

use crate::checks::{Check, Context, Reads, TableCx};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::routing::{Bucket, domain_key, port_start};
use crate::source::{join_index, join_token};

declare_rule! {
    pub(crate) static RULE for UnmatchableDomain = {
        code: "XDS212",
        name: "unmatchable-domain",
        severity: Severity::Warning,
        summary: "A domain with a port can never match: the route table ignores ports (ignore_port_in_host_matching) or the HTTP connection manager strips them first.",
        explanation: "unmatchable_domain.md",
    }
}

pub(crate) struct UnmatchableDomain;

/// Why a domain cannot match, if it cannot.
fn why(t: &TableCx<'_, '_>, domain: &str) -> Option<&'static str> {
    let (bucket, key) = domain_key(domain);
    if bucket == Bucket::Default || port_start(&key).is_none() {
        return None;
    }
    if t.table.ignore_port_in_host_matching {
        // Every `:port` is cut from the Host, so no Host searched has a `:` outside brackets.
        return Some(
            "the route table sets ignore_port_in_host_matching: Envoy drops the Host's port before it compares",
        );
    }
    let strips_any = t.hcm.is_some_and(|h| h.strip_any_host_port);
    let numeric = key.rsplit_once(':').is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if strips_any && bucket == Bucket::Exact && numeric {
        return Some("the http_connection_manager sets strip_any_host_port: the Host's port is removed before routing");
    }
    None
}

impl Check for UnmatchableDomain {
    fn reads(&self) -> Reads {
        Reads::ROUTES
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for t in cx.route_tables() {
            for vh in &t.table.virtual_hosts {
                for (i, domain) in vh.domains.iter().enumerate() {
                    let Some(why) = why(&t, domain) else { continue };
                    let pointer = join_index(&join_token(&t.table.vh_pointer(vh), "domains"), i);
                    let d = Diagnostic::new(
                        &RULE,
                        format!("domain '{domain}' of virtual host '{}' never matches a request", vh.name),
                    )
                    .at(t.location(&pointer))
                    .note(why)
                    .note("write the domain without its port");
                    out.push(t.attach(d));
                }
            }
        }
    }
}
