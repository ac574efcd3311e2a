//! `route-not-analysed`: route configuration xdsck reads but does not analyse (`scoped_routes`,
//! VHDS, a virtual host's `matcher` tree), named where it is, so that no finding is never read
//! as "all clear" for it.

use crate::checks::{Check, Context};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::source::Location;

declare_rule! {
    pub(crate) static RULE for RouteNotAnalysed = {
        code: "XDS304",
        name: "route-not-analysed",
        severity: Severity::Info,
        summary: "Route configuration in a form xdsck does not analyse (scoped_routes, VHDS, a virtual host matcher): its routes are not checked.",
        explanation: "route_not_analysed.md",
    }
}

pub(crate) struct RouteNotAnalysed;

impl Check for RouteNotAnalysed {
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for n in &cx.routes.not_analysed {
            let text = cx.locator_of(n.source);
            let (message, note) = match n.what {
                "scoped_routes" => (
                    "this http_connection_manager picks its route table with scoped_routes, which xdsck does not analyse",
                    "the scopes' route tables are not checked and `trace --host/--path` stops at this filter",
                ),
                "vhds" => (
                    "this route table receives virtual hosts on demand (VHDS), which xdsck does not analyse",
                    "only the virtual hosts given here are checked; those sent by VHDS are not",
                ),
                _ => (
                    "this virtual host picks its routes with a matcher tree, which xdsck does not analyse",
                    "its routes are not checked and `trace --host/--path` stops at this virtual host",
                ),
            };
            let at = Location::new(n.source, n.pointer.clone(), text.locate_pointer(&n.pointer));
            out.push(Diagnostic::new(&RULE, message).at(at).note(note));
        }
    }
}
