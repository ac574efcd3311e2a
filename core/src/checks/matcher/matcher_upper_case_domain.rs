//! `matcher-upper-case-domain`: a `ServerNameMatcher` domain with upper-case letters. Envoy
//! lower-cases the SNI but compares the domains as written, so it never matches.

use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::source::Location;

declare_rule! {
    pub(crate) static RULE for MatcherUpperCaseDomain = {
        code: "XDS210",
        name: "matcher-upper-case-domain",
        severity: Severity::Warning,
        summary: "A ServerNameMatcher domain has upper-case letters: it never matches.",
        explanation: "matcher_upper_case_domain.md",
        fingerprint: "XDS204",
    }
}

pub(crate) struct MatcherUpperCaseDomain;

fn diagnostic(l: &ListenerCx<'_, '_>, at: Location, domain: &str) -> Diagnostic {
    Diagnostic::new(&RULE, format!("ServerNameMatcher domain '{domain}' has upper-case letters and never matches"))
        .at(at)
        .listener(l.listener.display_name().into_owned())
        .note(format!(
            "Envoy lower-cases the SNI but compares ServerNameMatcher domains as written: write '{}'",
            domain.to_ascii_lowercase()
        ))
}

impl Check for MatcherUpperCaseDomain {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            let Some(parts) = &l.listener.filter_chain_matcher else { continue };
            for snm in parts.server_name_matchers.iter().filter(|s| s.reads_server_name) {
                for (domain, pointer) in snm.domain_matchers.iter().flatten() {
                    if domain.bytes().any(|b| b.is_ascii_uppercase()) {
                        out.push(diagnostic(&l, l.matcher_location(pointer), domain));
                    }
                }
            }
        }
    }
}
