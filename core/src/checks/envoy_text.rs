//! The messages Envoy 1.40 prints when it rejects a listener, built in one place so every check
//! quotes Envoy the same way. A finding's `envoy_error` is compared with real Envoy's output
//! verbatim, so these texts must not be reworded.

use std::fmt::Display;

use crate::model::Listener;

/// `error adding listener '<addresses>': <reason>`: the listener manager's prefix, with the
/// addresses as Envoy lists them.
pub(crate) fn adding_listener(listener: &Listener<'_>, reason: impl Display) -> String {
    format!("error adding listener '{}': {reason}", listener.envoy_address_list())
}

/// A listener without an address: Envoy names it before it has addresses to print.
pub(crate) fn address_is_necessary(name: &str) -> String {
    format!("error adding listener named '{name}': address is necessary")
}

/// A listener whose address an earlier listener already has.
pub(crate) fn duplicate_address(listener: &Listener<'_>) -> String {
    format!(
        "error adding listener: '{}' has duplicate address '{}' as existing listener, to check if the listener has duplicated addresses with other listeners or 'enable_reuse_port' is set to 'false' for the listener",
        listener.name,
        listener.envoy_address_list()
    )
}

/// A domain whose key is already in its bucket of a route table (Envoy lower-cases it first). An
/// unnamed table ends the text with `in route ` and nothing after it. Checked with envoy 1.40.
pub(crate) fn duplicate_domain(domain: &str, route_config: &str) -> String {
    format!("Only unique values for domains are permitted. Duplicate entry of domain {domain} in route {route_config}")
}

/// A second `*` domain in one route table.
pub(crate) fn second_wildcard_domain(route_config: &str) -> String {
    format!("Only a single wildcard domain is permitted in route {route_config}")
}

/// A virtual host that sets both `routes` and `matcher`, refused when the table is built.
/// Checked with envoy 1.40.
pub(crate) const MATCHER_AND_ROUTES: &str = "cannot set both matcher and routes on virtual host";

/// A route naming a cluster the cluster manager does not have, when the table validates its
/// clusters: the same text for an inline table (the listener or bootstrap is refused) and an
/// RDS update (refused alone). Checked with envoy 1.40, `--mode validate` and live.
pub(crate) fn unknown_cluster(what: super::route::unknown_cluster::Use, cluster: &str) -> String {
    use super::route::unknown_cluster::Use;
    let kind = match what {
        Use::Target => "",
        Use::Weighted => "weighted ",
        Use::Mirror => "shadow ",
    };
    format!("route: unknown {kind}cluster '{cluster}'")
}
