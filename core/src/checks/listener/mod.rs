//! The rules of listeners and their filter-chain index: chains that collide, shadow each other
//! or cannot be reached, values Envoy refuses in a `filter_chain_match`, listeners that clash.

pub(crate) mod ambiguous_catch_all;
pub(crate) mod duplicate_filter_chain_match;
pub(crate) mod duplicate_listener_address;
pub(crate) mod duplicate_listener_in_update;
pub(crate) mod duplicate_static_listener;
pub(crate) mod invalid_cidr;
pub(crate) mod match_blackhole;
pub(crate) mod misleading_cidr;
pub(crate) mod misleading_server_name;
pub(crate) mod missing_address;
pub(crate) mod no_filter_chains;
pub(crate) mod no_listeners;
pub(crate) mod overlapping_filter_chain_match;
pub(crate) mod partial_wildcard_server_name;
pub(crate) mod rejected_update;
pub(crate) mod unreachable_filter_chain;
pub(crate) mod wildcard_overlap;
