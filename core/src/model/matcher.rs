//! The unified `filter_chain_matcher` (`xds.type.matcher.v3.Matcher`), typed.
//!
//! The loaders read it once into these types (`load::matcher`); `chain_match::matcher` evaluates and
//! validates it; the checks and `xdsck trace` read it here. What xdsck does not model (an input
//! or extension it does not know) leaves the tree as the reason why, never a guess, while the
//! actions and `ServerNameMatcher`s around it stay readable for the checks.

use std::fmt;

use ipnet::IpNet;

use crate::source::Pointer;

/// A listener's `filter_chain_matcher`, as the loader read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterChainMatcher {
    /// The typed tree as written, or why xdsck cannot model it (the first thing it does not
    /// know). Whether Envoy accepts what is written is `chain_match::matcher`'s to say
    /// (`Matcher::rejection`).
    pub tree: Result<Matcher, String>,
    /// Every action naming a filter chain (`google.protobuf.StringValue`), in document order,
    /// also those in branches the tree could not type.
    pub actions: Vec<MatcherAction>,
    /// Every `ServerNameMatcher`, in document order.
    pub server_name_matchers: Vec<ServerNameMatcherParts>,
    /// Byte offset of the matcher object in the source's JSON text (none for a protobuf).
    pub offset: Option<usize>,
}

/// An action's chain name and the pointer of its `value`, relative to the matcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatcherAction {
    /// The filter chain it names.
    pub name: String,
    /// Where its `value` is, relative to the matcher.
    pub pointer: Pointer,
}

/// A `ServerNameMatcher`: per domain matcher, its domains with their pointers (relative to the
/// matcher).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerNameMatcherParts {
    /// Whether its input is `ServerNameInput` (lower-cased by Envoy).
    pub reads_server_name: bool,
    /// Per domain matcher, each domain with its pointer relative to the matcher.
    pub domain_matchers: Vec<Vec<(String, Pointer)>>,
}

/// A matcher input of `envoy.extensions.matching.common_inputs.network.v3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchInput {
    /// `DestinationIPInput`.
    DestinationIp,
    /// `DestinationPortInput`.
    DestinationPort,
    /// `SourceIPInput`.
    SourceIp,
    /// `SourcePortInput`.
    SourcePort,
    /// `DirectSourceIPInput`: the peer's address, before any PROXY protocol.
    DirectSourceIp,
    /// `SourceTypeInput`: `local` for a same-host source, else empty.
    SourceType,
    /// `ServerNameInput`: the SNI, lower-cased.
    ServerName,
    /// `TransportProtocolInput`.
    TransportProtocol,
    /// `ApplicationProtocolInput`: the ALPN list, joined with commas.
    ApplicationProtocol,
}

impl MatchInput {
    /// The input a matcher's `typed_config` names by its full type name
    /// (`envoy.extensions.matching.common_inputs.network.v3.ServerNameInput`); the error is the
    /// text `xdsck trace` shows for one Envoy's filter chain matcher does not take.
    pub(crate) fn from_type_name(name: &str) -> Result<MatchInput, String> {
        name.strip_prefix("envoy.extensions.matching.common_inputs.network.v3.")
            .and_then(|short| MatchInput::ALL.iter().find(|(_, n)| *n == short))
            .map(|(i, _)| *i)
            .ok_or_else(|| format!("input {name} is not supported"))
    }

    pub(crate) const ALL: [(MatchInput, &'static str); 9] = [
        (MatchInput::DestinationIp, "DestinationIPInput"),
        (MatchInput::DestinationPort, "DestinationPortInput"),
        (MatchInput::SourceIp, "SourceIPInput"),
        (MatchInput::SourcePort, "SourcePortInput"),
        (MatchInput::DirectSourceIp, "DirectSourceIPInput"),
        (MatchInput::SourceType, "SourceTypeInput"),
        (MatchInput::ServerName, "ServerNameInput"),
        (MatchInput::TransportProtocol, "TransportProtocolInput"),
        (MatchInput::ApplicationProtocol, "ApplicationProtocolInput"),
    ];

    /// The proto message name, e.g. `ServerNameInput`.
    pub fn as_str(self) -> &'static str {
        MatchInput::ALL.iter().find(|(i, _)| *i == self).map_or("?", |(_, n)| n)
    }

    /// Whether the input reads the connection's source, which a trace question may leave out.
    pub fn needs_source(self) -> bool {
        matches!(
            self,
            MatchInput::SourceIp | MatchInput::SourcePort | MatchInput::DirectSourceIp | MatchInput::SourceType
        )
    }
}

/// `xds.type.matcher.v3.Matcher`.
///
/// Every node keeps its place: `at` is the pointer of the matcher object (an [`OnMatch`] the
/// pointer of its `on_match`, map entry or domain matcher's `on_match`), relative to the
/// listener's `filter_chain_matcher` and spelled as the input spells its keys (snake_case for a
/// protobuf), so a finding or a trace step about a node can name where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    /// What it matches on.
    pub tree: Tree,
    /// What happens when nothing in `tree` matches; without it the connection gets no chain
    /// from this matcher.
    pub on_no_match: Option<Box<OnMatch>>,
    /// Where it is, relative to the `filter_chain_matcher`.
    pub at: Pointer,
}

/// The matcher's `matcher_list` or `matcher_tree`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tree {
    /// `matcher_list`: the first predicate that holds wins.
    List(Vec<(Predicate, OnMatch)>),
    /// `matcher_tree.exact_match_map`.
    Exact {
        /// What it reads.
        input: MatchInput,
        /// Value to what follows, in document order.
        map: Vec<(String, OnMatch)>,
    },
    /// `matcher_tree.prefix_match_map`: the longest matching prefix wins.
    Prefix {
        /// What it reads.
        input: MatchInput,
        /// Prefix to what follows, in document order.
        map: Vec<(String, OnMatch)>,
    },
    /// `xds.type.matcher.v3.ServerNameMatcher`: `(domains, on_match)` per domain matcher.
    ServerName {
        /// What it reads.
        input: MatchInput,
        /// Per domain matcher, its domains and what follows; the most specific domain wins.
        domain_matchers: Vec<(Vec<String>, OnMatch)>,
    },
    /// `xds.type.matcher.v3.IPMatcher`.
    Ip {
        /// What it reads.
        input: MatchInput,
        /// Its range matchers; the longest matching range wins.
        range_matchers: Vec<RangeMatcher>,
    },
}

/// One range matcher of an `IPMatcher`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeMatcher {
    /// Truncated to their prefix length, as Envoy's `CidrRange` does.
    pub ranges: Vec<IpNet>,
    /// `exclusive`: tried only as the longest matching range, never as a fallback after a
    /// longer one led nowhere.
    pub exclusive: bool,
    /// What follows a match.
    pub on_match: OnMatch,
}

/// `Matcher.OnMatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnMatch {
    /// What it leads to.
    pub then: Then,
    /// `keep_matching`, which Envoy rejects for filter chain matchers.
    pub keep_matching: bool,
    /// Where it is, relative to the `filter_chain_matcher` (see [`Matcher`]).
    pub at: Pointer,
}

/// What an `OnMatch` leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    /// A nested matcher.
    Matcher(Box<Matcher>),
    /// The chain name a `google.protobuf.StringValue` action holds.
    Action(String),
}

/// A `matcher_list` predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Predicate {
    /// `single_predicate`: one input compared with one string matcher.
    Single {
        /// What it reads.
        input: MatchInput,
        /// How the value is compared.
        matcher: StringMatcher,
    },
    /// `or_matcher`: any holds.
    Or(Vec<Predicate>),
    /// `and_matcher`: all hold.
    And(Vec<Predicate>),
    /// `not_matcher`.
    Not(Box<Predicate>),
}

/// `xds.type.matcher.v3.StringMatcher` (no `safe_regex`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringMatcher {
    /// How the pattern is compared.
    pub kind: StringMatch,
    /// The pattern.
    pub pattern: String,
    /// `ignore_case` (ASCII only, as in Envoy).
    pub ignore_case: bool,
}

/// Which comparison a `StringMatcher` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringMatch {
    /// `exact`.
    Exact,
    /// `prefix`.
    Prefix,
    /// `suffix`.
    Suffix,
    /// `contains`.
    Contains,
}

impl StringMatcher {
    /// Whether `value` matches, as Envoy compares.
    pub fn matches(&self, value: &str) -> bool {
        let (v, p) = if self.ignore_case {
            (value.to_ascii_lowercase(), self.pattern.to_ascii_lowercase())
        } else {
            (value.to_owned(), self.pattern.clone())
        };
        match self.kind {
            StringMatch::Exact => v == p,
            StringMatch::Prefix => v.starts_with(&p),
            StringMatch::Suffix => v.ends_with(&p),
            StringMatch::Contains => v.contains(&p),
        }
    }
}

impl fmt::Display for StringMatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            StringMatch::Exact => "exact",
            StringMatch::Prefix => "prefix",
            StringMatch::Suffix => "suffix",
            StringMatch::Contains => "contains",
        };
        write!(f, "{kind} {:?}{}", self.pattern, if self.ignore_case { " (ignore case)" } else { "" })
    }
}
