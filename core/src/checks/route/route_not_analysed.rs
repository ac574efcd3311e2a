//! `route-not-analysed`: route configuration xdsck reads but does not analyse (`scoped_routes`,
//! VHDS, a virtual host's `matcher` tree), named where it is, so that no finding is never read
//! as "all clear" for it; and, where the run holds an Envoy's RDS answer, the RDS tables it
//! asked for and did not get.

use crate::checks::{Check, Context, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::route::HcmRoutes;
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
    fn reads(&self) -> Reads {
        Reads::ROUTES
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for n in &cx.routes().not_analysed {
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
        for (hcm, pointer) in &cx.routes().unanswered {
            let HcmRoutes::Rds(name) = &hcm.routes else { continue };
            let text = cx.locator_of(hcm.source);
            // At the name, as the HCM spells it; at the HCM when neither spelling is found.
            let at = ["/rds/route_config_name", "/rds/routeConfigName"]
                .iter()
                .map(|f| format!("{pointer}{f}"))
                .find_map(|p| text.locate_pointer(&p).map(|o| Location::new(hcm.source, p, Some(o))))
                .unwrap_or_else(|| Location::new(hcm.source, pointer.clone(), text.locate_pointer(pointer)));
            let message = format!(
                "this http_connection_manager takes its routes from RDS table '{name}', which the run's RDS answer does not hold"
            );
            out.push(Diagnostic::new(&RULE, message).at(at).note(
                "the table was asked for and not answered (by the deadline, when attached): its routes are not checked, \
                 and Envoy serves this listener only once it arrives (or, after its initial fetch timeout, with no routes)",
            ));
        }
    }
}
