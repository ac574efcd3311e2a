//! `matcher-server-name-domain`: a `ServerNameMatcher` in `filter_chain_matcher` with a domain
//! Envoy refuses (repeated, empty, or a wildcard other than `*` and `*.domain`).

use crate::chain_match::matcher::{DomainError, server_name_errors_at};
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::source::Location;

declare_rule! {
    pub(crate) static RULE for MatcherServerNameDomain = {
        code: "XDS111",
        name: "matcher-server-name-domain",
        severity: Severity::Error,
        summary: "A ServerNameMatcher in filter_chain_matcher lists a domain twice or a wildcard Envoy does not support; Envoy rejects the listener.",
        explanation: "matcher_server_name_domain.md",
    }
}

pub(crate) struct MatcherServerNameDomain;

fn diagnostic(l: &ListenerCx<'_, '_>, at: Location, first: Option<Location>, err: &DomainError) -> Diagnostic {
    let message = match err {
        DomainError::Duplicate(d) => format!("domain '{d}' is listed twice in a ServerNameMatcher"),
        DomainError::Empty => "a ServerNameMatcher lists an empty domain".to_owned(),
        DomainError::BadWildcard(d) => {
            format!("ServerNameMatcher domain '{d}' is a wildcard Envoy does not support (only '*' and '*.domain')")
        }
        DomainError::MultipleWildcards(d) => format!("ServerNameMatcher domain '{d}' has more than one wildcard"),
    };
    let mut d = Diagnostic::new(&RULE, message)
        .at(at)
        .listener(l.listener.display_name().into_owned())
        .with_envoy_error(format!("cannot create a filter chain matcher: {}", err.envoy_text()))
        .note("Envoy cannot build the filter_chain_matcher and rejects the whole listener");
    if let Some(first) = first {
        d = d.related("first listed here", first);
    }
    d
}

impl Check for MatcherServerNameDomain {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            let Some(fcm) = &l.listener.filter_chain_matcher else { continue };
            let locate = |p: &str| l.matcher_location(p);
            for snm in &fcm.server_name_matchers {
                let domains: Vec<Vec<String>> =
                    snm.domain_matchers.iter().map(|dm| dm.iter().map(|(d, _)| d.clone()).collect()).collect();
                for (i, j, err) in server_name_errors_at(&domains) {
                    let first = match &err {
                        DomainError::Duplicate(d) => {
                            snm.domain_matchers.iter().flatten().find(|(x, _)| x == d).map(|(_, p)| locate(p))
                        }
                        _ => None,
                    };
                    out.push(diagnostic(&l, locate(&snm.domain_matchers[i][j].1), first, &err));
                }
            }
        }
    }
}
