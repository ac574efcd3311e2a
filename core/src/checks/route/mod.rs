//! The rules of route tables: domains, routes that shadow each other, the clusters routes name,
//! and requests that reach a table other than the one they were meant for.

pub(crate) mod duplicate_domain;
pub(crate) mod h2_coalescing_misroute;
pub(crate) mod matcher_and_routes;
pub(crate) mod route_not_analysed;
pub(crate) mod shadowed_route;
pub(crate) mod unknown_cluster;
pub(crate) mod unmatchable_domain;
pub(crate) mod unrouted_server_name;
