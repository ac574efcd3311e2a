//! Every code xdsck reports, in one table, as ruff keeps its `codes.rs`: a rule is declared
//! where its findings are made (a check's file, the loader's `load/rules.rs`, the settings, the
//! Gateway model's `gateway/rules.rs`), and listed here once, in code order, with its group and
//! the check that finds it. `xdsck rules`, rule selectors, `xdsck explain`, the checks a run
//! runs and the registry test are all read off [`ALL`]; old names live beside it in
//! [`aliases`].

pub mod aliases;

use crate::checks::{self, Check};
use crate::diagnostic::Rule;
use crate::{gateway, load, settings};

/// What a rule is about. `Input` is also how selection treats it: an input problem says an
/// input was not read, and no selection leaves that out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// `XDS0xx`: an input that could not be read (or a suppression that could not be).
    Input,
    /// What Envoy's schema and its building of listeners, clusters and extensions reject or
    /// pass by: fields, values, constraints, addresses, TLS contexts.
    Schema,
    /// Listeners and their filter-chain index: collisions, shadows, holes.
    Listener,
    /// A listener's `filter_chain_matcher`.
    Matcher,
    /// Route tables, virtual hosts and the clusters routes name.
    Route,
    /// `xdsck gateway`'s model of Cilium's operator (`XDS4xx`).
    Gateway,
}

impl Group {
    /// The group's name in `xdsck rules --format json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Schema => "schema",
            Self::Listener => "listener",
            Self::Matcher => "matcher",
            Self::Route => "route",
            Self::Gateway => "gateway",
        }
    }
}

/// One row of the table.
#[derive(Clone, Copy)]
pub struct Code {
    /// The rule: code, name, severity, summary, explanation.
    pub rule: &'static Rule,
    /// What it is about.
    pub group: Group,
    /// The check that finds it; `None` for what the loader, the settings and the Gateway model
    /// report.
    pub check: Option<&'static dyn Check>,
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Code").field("code", &self.rule.code).field("group", &self.group).finish()
    }
}

impl Code {
    const fn input(rule: &'static Rule) -> Self {
        Self { rule, group: Group::Input, check: None }
    }

    const fn gateway(rule: &'static Rule) -> Self {
        Self { rule, group: Group::Gateway, check: None }
    }
}

/// A check's row: its file's `RULE` and the check.
macro_rules! check {
    ($module:ident :: $check:ident, $group:ident) => {
        Code { rule: &checks::$module::RULE, group: Group::$group, check: Some(&checks::$module::$check) }
    };
}

/// Every rule, in code order.
pub static ALL: &[Code] = &[
    Code::input(&load::rules::UNREADABLE),
    Code::input(&load::rules::EMPTY),
    Code::input(&load::rules::INVALID_UTF8),
    Code::input(&load::rules::JSON_SYNTAX),
    Code::input(&load::rules::YAML_SYNTAX),
    Code::input(&load::rules::INVALID_FIELD),
    Code::input(&load::rules::NOT_ENVOY),
    Code::input(&load::rules::TEMPLATE),
    Code::input(&load::rules::INPUT_LIMIT),
    Code::input(&load::rules::DUPLICATE_KEY),
    Code::input(&settings::INVALID_SUPPRESSION),
    check!(duplicate_filter_chain_match::DuplicateFilterChainMatch, Listener),
    check!(overlapping_filter_chain_match::OverlappingFilterChainMatch, Listener),
    check!(partial_wildcard_server_name::PartialWildcardServerName, Listener),
    check!(invalid_cidr::InvalidCidr, Listener),
    check!(unimplemented_field::UnimplementedField, Schema),
    check!(no_filter_chains::NoFilterChains, Listener),
    check!(matcher_chain_name::MatcherChainName, Matcher),
    check!(duplicate_listener_address::DuplicateListenerAddress, Listener),
    check!(duplicate_listener_in_update::DuplicateListenerInUpdate, Listener),
    check!(rejected_update::RejectedUpdate, Listener),
    check!(matcher_server_name_domain::MatcherServerNameDomain, Matcher),
    check!(missing_address::MissingAddress, Listener),
    check!(duplicate_domain::DuplicateDomain, Route),
    check!(matcher_and_routes::MatcherAndRoutes, Route),
    check!(unknown_cluster::UnknownCluster, Route),
    check!(unknown_field::UnknownField, Schema),
    check!(invalid_value::InvalidValue, Schema),
    check!(constraint_violation::ConstraintViolation, Schema),
    check!(unknown_extension::UnknownExtension, Schema),
    check!(invalid_setting::InvalidSetting, Schema),
    check!(cilium_protojson::CiliumProtojson, Schema),
    check!(invalid_address::InvalidAddress, Schema),
    check!(invalid_cluster::InvalidCluster, Schema),
    check!(missing_certificate::MissingCertificate, Schema),
    check!(invalid_config_source::InvalidConfigSource, Schema),
    check!(invalid_tls_context::InvalidTlsContext, Schema),
    check!(match_blackhole::MatchBlackhole, Listener),
    check!(unreachable_filter_chain::UnreachableFilterChain, Listener),
    check!(ambiguous_catch_all::AmbiguousCatchAll, Listener),
    check!(matcher_missing_chain::MatcherMissingChain, Matcher),
    check!(misleading_server_name::MisleadingServerName, Listener),
    check!(misleading_cidr::MisleadingCidr, Listener),
    check!(duplicate_static_listener::DuplicateStaticListener, Listener),
    check!(matcher_unused_chain::MatcherUnusedChain, Matcher),
    check!(matcher_ignored_match::MatcherIgnoredMatch, Matcher),
    check!(matcher_upper_case_domain::MatcherUpperCaseDomain, Matcher),
    check!(shadowed_route::ShadowedRoute, Route),
    check!(unmatchable_domain::UnmatchableDomain, Route),
    check!(unrouted_server_name::UnroutedServerName, Route),
    check!(h2_coalescing_misroute::H2CoalescingMisroute, Route),
    check!(ignored_field::IgnoredField, Schema),
    check!(repeated_field::RepeatedField, Schema),
    check!(wildcard_overlap::WildcardOverlap, Listener),
    check!(skipped_document::SkippedDocument, Schema),
    check!(no_listeners::NoListeners, Listener),
    check!(route_not_analysed::RouteNotAnalysed, Route),
    check!(unvalidated_payload::UnvalidatedPayload, Schema),
    Code::gateway(&gateway::rules::NOT_MODELLED),
    Code::gateway(&gateway::rules::LISTENER_CONFLICTED),
    Code::gateway(&gateway::rules::TERMINATE_PASSTHROUGH_PAIR),
];

/// The row of a rule.
pub fn of(rule: &Rule) -> Option<&'static Code> {
    ALL.iter().find(|c| c.rule == rule)
}

/// Whether a rule is an input problem ([`Group::Input`]), which selection never leaves out.
pub fn is_input_problem(rule: &Rule) -> bool {
    of(rule).is_some_and(|c| c.group == Group::Input)
}

/// Every check, in code order: what a run runs.
pub fn checks() -> impl Iterator<Item = &'static dyn Check> {
    ALL.iter().filter_map(|c| c.check)
}
