//! `matcher-and-routes`: a virtual host that sets both `routes` and a `matcher` tree. Envoy
//! refuses the whole route table when it builds it.

use crate::checks::{Check, Context, Reads, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::source::join_token;

declare_rule! {
    pub(crate) static RULE for MatcherAndRoutes = {
        code: "XDS115",
        name: "matcher-and-routes",
        severity: Severity::Error,
        summary: "A virtual host sets both routes and matcher: Envoy refuses the route table.",
        explanation: "matcher_and_routes.md",
    }
}

pub(crate) struct MatcherAndRoutes;

impl Check for MatcherAndRoutes {
    fn reads(&self) -> Reads {
        Reads::ROUTES
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for t in cx.route_tables() {
            for vh in t.table.virtual_hosts.iter().filter(|vh| vh.has_matcher && !vh.routes.is_empty()) {
                let d = Diagnostic::new(
                    &RULE,
                    format!(
                        "virtual host '{}' of route table '{}' sets both routes and matcher",
                        vh.name,
                        t.table.display_name()
                    ),
                )
                .at(t.location(&join_token(&t.table.vh_pointer(vh), "matcher")))
                .related("its routes", t.location(&join_token(&t.table.vh_pointer(vh), "routes")))
                .with_envoy_error(envoy_text::MATCHER_AND_ROUTES)
                .note("a virtual host chooses its route either by the ordered routes or by the matcher tree, not both")
                .note("keep one: move the routes into the matcher as Route actions, or drop the matcher");
                out.push(t.attach(d));
            }
        }
    }
}
