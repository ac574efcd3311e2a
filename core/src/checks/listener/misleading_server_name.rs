//! `misleading-server-name`: a `server_names` entry Envoy accepts but that does not match what
//! it reads as: `*.`, a leading dot, `""`, a trailing dot. (A partial wildcard, which Envoy
//! rejects, is `partial-wildcard-server-name`'s.)

use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::FilterChain;

declare_rule! {
    pub(crate) static RULE for MisleadingServerName = {
        code: "XDS205",
        name: "misleading-server-name",
        severity: Severity::Warning,
        summary: "A server_names entry Envoy accepts matches differently from what it reads as, or never matches.",
        explanation: "misleading_server_name.md",
        fingerprint: "XDS103",
    }
}

pub(crate) struct MisleadingServerName;

/// What is wrong with one name.
enum Problem {
    StarDot,
    LeadingDot,
    Empty,
    TrailingDot,
}

fn classify(name: &str) -> Option<Problem> {
    // A partial wildcard is rejected: that finding is the other rule's, and the rest does not matter.
    if name.contains('*') && !name.starts_with("*.") {
        return None;
    }
    if name == "*." {
        return Some(Problem::StarDot);
    }
    if name.is_empty() {
        return Some(Problem::Empty);
    }
    if name.starts_with('.') {
        return Some(Problem::LeadingDot);
    }
    if name.ends_with('.') {
        return Some(Problem::TrailingDot);
    }
    None
}

fn diagnostic(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>, index: usize, name: &str, p: &Problem) -> Diagnostic {
    let at = l.chain_field_location(chain, &["filter_chain_match", "server_names", &index.to_string()]);
    let chain_name = chain.display_name();
    let d = |message: String| {
        Diagnostic::new(&RULE, message)
            .at(at.clone())
            .listener(l.listener.display_name().into_owned())
            .chain(chain_name.to_string())
    };
    match p {
        Problem::StarDot => d(format!("server name \"*.\" in chain '{chain_name}' can never match"))
            .note("Envoy accepts it but stores the suffix \".\", which no SNI ends with"),
        Problem::LeadingDot => {
            let star = format!("*{name}");
            d(format!("server name {name:?} in chain '{chain_name}' is a wildcard: it matches like {star:?}")).note(
                format!(
                    "Envoy stores {name:?} under the same key as {star:?}: it matches every subdomain, never {:?} itself",
                    &name[1..]
                ),
            )
        }
        Problem::Empty => d(format!("an empty server name in chain '{chain_name}' matches every connection"))
            .note("Envoy treats \"\" as no server_names at all: the chain also takes connections with any or no SNI"),
        Problem::TrailingDot => {
            d(format!("server name {name:?} in chain '{chain_name}' ends with a dot and never matches"))
                .note("clients send SNI without the trailing dot and Envoy does not normalise it")
        }
    }
}

impl Check for MisleadingServerName {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for (l, chain, i, name) in cx.index_server_names() {
            if let Some(p) = classify(name) {
                out.push(diagnostic(&l, chain, i, name, &p));
            }
        }
    }
}
