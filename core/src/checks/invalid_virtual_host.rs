//! `invalid-virtual-host`: a virtual host or route that breaks a constraint of Envoy's proto
//! validation (PGV), which runs over the whole message before anything is built: a virtual host
//! without a name or without domains, a route without an action, a direct response status
//! outside 200..599. Envoy names the first it meets; every one is reported.

use crate::checks::{Check, Context, TableCx, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::route::{Action, TableOrigin, VirtualHost};

declare_rule! {
    pub(crate) static RULE for InvalidVirtualHost = {
        code: "XDS116",
        name: "invalid-virtual-host",
        severity: Severity::Error,
        summary: "A virtual host or route breaks Envoy's proto validation (no name, no domains, no action, a direct response status outside 200..599): Envoy refuses it.",
        explanation: "invalid_virtual_host.md",
    }
}

pub(crate) struct InvalidVirtualHost;

/// The constraints broken in one virtual host: where, what xdsck says, PGV's cause.
fn problems(vh: &VirtualHost<'_>) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    if vh.name.is_empty() {
        out.push((
            vh.pointer(),
            "a virtual host has no name".to_owned(),
            "Name: value length must be at least 1 characters".to_owned(),
        ));
    }
    if vh.domains.is_empty() {
        out.push((
            vh.pointer(),
            format!("virtual host '{}' has no domains", vh.name),
            "Domains: value must contain at least 1 item(s)".to_owned(),
        ));
    }
    for r in &vh.routes {
        let route = format!("Routes[{}]: embedded message failed validation | caused by ", r.index);
        match r.action {
            Action::Missing => out.push((
                r.pointer(),
                format!("route {} of virtual host '{}' has no action", r.display_name(), vh.name),
                format!("{route}field: \"action\", reason: is required"),
            )),
            Action::DirectResponse { status, .. } if !(200..600).contains(&status) => out.push((
                r.pointer(),
                format!(
                    "route {} of virtual host '{}' answers with status {status}, outside 200..599",
                    r.display_name(),
                    vh.name
                ),
                format!(
                    "{route}RouteValidationError.DirectResponse: embedded message failed validation | caused by DirectResponseActionValidationError.Status: value must be inside range [200, 600)"
                ),
            )),
            _ => {}
        }
    }
    out
}

fn diagnostic(t: &TableCx<'_, '_>, v: usize, pointer: &str, what: String, cause: String) -> Diagnostic {
    let inline = t.table.origin == TableOrigin::Inline;
    let d = Diagnostic::new(&RULE, format!("{what} (route table '{}')", t.table.display_name()))
        .at(t.location(pointer))
        .envoy_error(envoy_text::pgv_virtual_host(inline, v, cause))
        .note(if inline {
            "proto validation refuses the http_connection_manager, and with it the listener"
        } else {
            "proto validation refuses the RouteConfiguration: the RDS update is dropped"
        });
    t.attach(d)
}

impl Check for InvalidVirtualHost {
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for t in cx.route_tables() {
            for (v, vh) in t.table.virtual_hosts.iter().enumerate() {
                for (pointer, what, cause) in problems(vh) {
                    out.push(diagnostic(&t, v, &pointer, what, cause));
                }
            }
        }
    }
}
