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
    /// The group whose checks are in `checks/<folder>/`: a check's folder is its group, so the
    /// two cannot disagree (an unknown folder stops the build).
    const fn of_folder(folder: &str) -> Self {
        match folder.as_bytes() {
            b"schema" => Self::Schema,
            b"listener" => Self::Listener,
            b"matcher" => Self::Matcher,
            b"route" => Self::Route,
            _ => panic!("a folder of checks/ that is no group"),
        }
    }

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

/// A check's row: its file's `RULE`, the check, and the group its folder names.
macro_rules! check {
    ($folder:ident :: $module:ident :: $check:ident) => {
        Code {
            rule: &checks::$folder::$module::RULE,
            group: Group::of_folder(stringify!($folder)),
            check: Some(&checks::$folder::$module::$check),
        }
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
    check!(listener::duplicate_filter_chain_match::DuplicateFilterChainMatch),
    check!(listener::overlapping_filter_chain_match::OverlappingFilterChainMatch),
    check!(listener::partial_wildcard_server_name::PartialWildcardServerName),
    check!(listener::invalid_cidr::InvalidCidr),
    check!(schema::unimplemented_field::UnimplementedField),
    check!(listener::no_filter_chains::NoFilterChains),
    check!(matcher::matcher_chain_name::MatcherChainName),
    check!(listener::duplicate_listener_address::DuplicateListenerAddress),
    check!(listener::duplicate_listener_in_update::DuplicateListenerInUpdate),
    check!(listener::rejected_update::RejectedUpdate),
    check!(matcher::matcher_server_name_domain::MatcherServerNameDomain),
    check!(listener::missing_address::MissingAddress),
    check!(route::duplicate_domain::DuplicateDomain),
    check!(route::matcher_and_routes::MatcherAndRoutes),
    check!(route::unknown_cluster::UnknownCluster),
    check!(schema::unknown_field::UnknownField),
    check!(schema::invalid_value::InvalidValue),
    check!(schema::constraint_violation::ConstraintViolation),
    check!(schema::unknown_extension::UnknownExtension),
    check!(schema::invalid_setting::InvalidSetting),
    check!(schema::cilium_protojson::CiliumProtojson),
    check!(schema::invalid_address::InvalidAddress),
    check!(schema::invalid_cluster::InvalidCluster),
    check!(schema::missing_certificate::MissingCertificate),
    check!(schema::invalid_config_source::InvalidConfigSource),
    check!(schema::invalid_tls_context::InvalidTlsContext),
    check!(listener::match_blackhole::MatchBlackhole),
    check!(listener::unreachable_filter_chain::UnreachableFilterChain),
    check!(listener::ambiguous_catch_all::AmbiguousCatchAll),
    check!(matcher::matcher_missing_chain::MatcherMissingChain),
    check!(listener::misleading_server_name::MisleadingServerName),
    check!(listener::misleading_cidr::MisleadingCidr),
    check!(listener::duplicate_static_listener::DuplicateStaticListener),
    check!(matcher::matcher_unused_chain::MatcherUnusedChain),
    check!(matcher::matcher_ignored_match::MatcherIgnoredMatch),
    check!(matcher::matcher_upper_case_domain::MatcherUpperCaseDomain),
    check!(route::shadowed_route::ShadowedRoute),
    check!(route::unmatchable_domain::UnmatchableDomain),
    check!(route::unrouted_server_name::UnroutedServerName),
    check!(route::h2_coalescing_misroute::H2CoalescingMisroute),
    check!(schema::ignored_field::IgnoredField),
    check!(schema::repeated_field::RepeatedField),
    check!(listener::wildcard_overlap::WildcardOverlap),
    check!(schema::skipped_document::SkippedDocument),
    check!(listener::no_listeners::NoListeners),
    check!(route::route_not_analysed::RouteNotAnalysed),
    check!(schema::unvalidated_payload::UnvalidatedPayload),
    Code::gateway(&gateway::rules::NOT_MODELLED),
    Code::gateway(&gateway::rules::LISTENER_CONFLICTED),
    Code::gateway(&gateway::rules::TERMINATE_PASSTHROUGH_PAIR),
];

/// The row of a rule: a binary search, as the table is in code order (the registry test holds
/// it there). Asked per finding where selection applies, so not a scan of the table.
pub fn of(rule: &Rule) -> Option<&'static Code> {
    ALL.binary_search_by(|c| c.rule.code.cmp(rule.code)).ok().map(|i| &ALL[i])
}

/// Whether a rule is an input problem ([`Group::Input`]), which selection never leaves out.
pub fn is_input_problem(rule: &Rule) -> bool {
    of(rule).is_some_and(|c| c.group == Group::Input)
}

/// Every check, in code order: what a run runs.
pub fn checks() -> impl Iterator<Item = &'static dyn Check> {
    ALL.iter().filter_map(|c| c.check)
}
