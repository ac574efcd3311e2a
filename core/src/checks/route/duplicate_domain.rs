//! `duplicate-domain`: a route table gives one domain twice (after lower-casing, in the same
//! bucket), or has two `*` domains. Envoy refuses the whole table at the first one; every one
//! is reported here.

use crate::checks::envoy_text;
use crate::checks::{Check, Context, Reads, TableCx};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::route::TableOrigin;
use crate::routing::{DomainAt, DomainIndex, DomainProblem};
use crate::source::{join_index, join_token};

declare_rule! {
    pub(crate) static RULE for DuplicateDomain = {
        code: "XDS114",
        name: "duplicate-domain",
        severity: Severity::Error,
        summary: "A route table lists one domain twice (case-insensitively), or `*` twice: Envoy rejects the whole table.",
        explanation: "duplicate_domain.md",
    }
}

pub(crate) struct DuplicateDomain;

/// The pointer of one domain.
fn domain_pointer(t: &TableCx<'_, '_>, (v, d): DomainAt) -> String {
    let vh = &t.table.virtual_hosts[v];
    join_index(&join_token(&t.table.vh_pointer(vh), "domains"), d)
}

fn diagnostic(t: &TableCx<'_, '_>, problem: &DomainProblem) -> Diagnostic {
    let table = t.table;
    let name = table.envoy_name();
    let (at, first, message, envoy) = match problem {
        DomainProblem::Duplicate { at, first, domain } => (
            *at,
            *first,
            format!(
                "domain '{}' of virtual host '{}' is already given by virtual host '{}' in route table '{}'",
                table.virtual_hosts[at.0].domains[at.1],
                table.virtual_hosts[at.0].name,
                table.virtual_hosts[first.0].name,
                table.display_name()
            ),
            envoy_text::duplicate_domain(domain, name),
        ),
        DomainProblem::SecondWildcard { at, first } => (
            *at,
            *first,
            format!(
                "a second '*' domain (virtual host '{}'; the first is in '{}') in route table '{}'",
                table.virtual_hosts[at.0].name,
                table.virtual_hosts[first.0].name,
                table.display_name()
            ),
            envoy_text::second_wildcard_domain(name),
        ),
    };
    let d = Diagnostic::new(&RULE, message)
        .at(t.location(&domain_pointer(t, at)))
        .related("given first here", t.location(&domain_pointer(t, first)))
        .with_envoy_error(envoy);
    let d = match table.origin {
        TableOrigin::Inline | TableOrigin::DumpStatic => d.note(
            "the table is inline in the listener's http_connection_manager: Envoy rejects the listener, and every host it would serve goes unanswered",
        ),
        TableOrigin::Rds => d.note(
            "Envoy rejects this RDS update and keeps the table it had (a fresh Envoy has none and answers 404 to every request); /config_dump shows nothing, only the rds update_rejected counter and a log line do",
        ),
    };
    t.attach(d)
}

impl Check for DuplicateDomain {
    fn reads(&self) -> Reads {
        Reads::ROUTES
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for t in cx.route_tables() {
            for problem in &DomainIndex::build(t.table).problems {
                out.push(diagnostic(&t, problem));
            }
        }
    }
}
