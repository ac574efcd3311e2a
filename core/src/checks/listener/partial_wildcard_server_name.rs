//! `partial-wildcard-server-name`: a `server_names` entry with a `*` that is not a whole leading
//! label. Envoy rejects the listener. (The names it accepts but that do not match as they read
//! are `misleading-server-name`'s.)

use crate::checks::{Check, Context, ListenerCx, Reads, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::FilterChain;

declare_rule! {
    pub(crate) static RULE for PartialWildcardServerName = {
        code: "XDS103",
        name: "partial-wildcard-server-name",
        severity: Severity::Error,
        summary: "A server_names entry is a partial wildcard: Envoy rejects the listener.",
        explanation: "partial_wildcard_server_name.md",
    }
}

pub(crate) struct PartialWildcardServerName;

fn diagnostic(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>, index: usize, name: &str) -> Diagnostic {
    let chain_name = chain.display_name();
    Diagnostic::new(&RULE, format!("server name {name:?} in chain '{chain_name}' is a partial wildcard"))
        .at(l.chain_field_location(chain, &["filter_chain_match", "server_names", &index.to_string()]))
        .listener(l.listener.display_name().into_owned())
        .chain(chain_name.to_string())
        .with_envoy_error(envoy_text::adding_listener(
            l.listener,
            "partial wildcards are not supported in \"server_names\"",
        ))
        .note("Envoy accepts a wildcard only as a leading `*.` label and rejects the whole listener")
        .note("for \"any server name\" leave server_names out; for subdomains use `*.example.com`")
}

impl Check for PartialWildcardServerName {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for (l, chain, i, name) in cx.index_server_names() {
            if crate::chain_match::key::is_partial_wildcard(name) {
                out.push(diagnostic(&l, chain, i, name));
            }
        }
    }
}
