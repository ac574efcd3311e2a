//! The rules of a listener's `filter_chain_matcher`: what Envoy rejects in it and what it
//! matches otherwise than it reads.

pub(crate) mod matcher_chain_name;
pub(crate) mod matcher_ignored_match;
pub(crate) mod matcher_missing_chain;
pub(crate) mod matcher_server_name_domain;
pub(crate) mod matcher_unused_chain;
pub(crate) mod matcher_upper_case_domain;
