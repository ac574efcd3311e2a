//! The unified `filter_chain_matcher` (`xds.type.matcher.v3.Matcher`), typed.
//!
//! The loaders read it once into these types (`load::matcher`); `graph::matcher` evaluates and
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
    /// know). Whether Envoy accepts what is written is `graph::matcher`'s to say
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
    pub name: String,
    pub pointer: Pointer,
}

/// A `ServerNameMatcher`: per domain matcher, its domains with their pointers (relative to the
/// matcher).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerNameMatcherParts {
    /// Whether its input is `ServerNameInput` (lower-cased by Envoy).
    pub reads_server_name: bool,
    pub domain_matchers: Vec<Vec<(String, Pointer)>>,
}

/// A matcher input of `envoy.extensions.matching.common_inputs.network.v3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Input {
    DestinationIp,
    DestinationPort,
    SourceIp,
    SourcePort,
    DirectSourceIp,
    SourceType,
    ServerName,
    TransportProtocol,
    ApplicationProtocol,
}

impl Input {
    pub(crate) const ALL: [(Input, &'static str); 9] = [
        (Input::DestinationIp, "DestinationIPInput"),
        (Input::DestinationPort, "DestinationPortInput"),
        (Input::SourceIp, "SourceIPInput"),
        (Input::SourcePort, "SourcePortInput"),
        (Input::DirectSourceIp, "DirectSourceIPInput"),
        (Input::SourceType, "SourceTypeInput"),
        (Input::ServerName, "ServerNameInput"),
        (Input::TransportProtocol, "TransportProtocolInput"),
        (Input::ApplicationProtocol, "ApplicationProtocolInput"),
    ];

    /// The proto message name, e.g. `ServerNameInput`.
    pub fn as_str(self) -> &'static str {
        Input::ALL.iter().find(|(i, _)| *i == self).map_or("?", |(_, n)| n)
    }

    /// Whether the input reads the connection's source, which a trace question may leave out.
    pub fn needs_source(self) -> bool {
        matches!(self, Input::SourceIp | Input::SourcePort | Input::DirectSourceIp | Input::SourceType)
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
    pub tree: Tree,
    pub on_no_match: Option<Box<OnMatch>>,
    pub at: Pointer,
}

/// The matcher's `matcher_list` or `matcher_tree`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tree {
    List(Vec<(Predicate, OnMatch)>),
    Exact {
        input: Input,
        map: Vec<(String, OnMatch)>,
    },
    Prefix {
        input: Input,
        map: Vec<(String, OnMatch)>,
    },
    /// `xds.type.matcher.v3.ServerNameMatcher`: `(domains, on_match)` per domain matcher.
    ServerName {
        input: Input,
        domain_matchers: Vec<(Vec<String>, OnMatch)>,
    },
    /// `xds.type.matcher.v3.IPMatcher`.
    Ip {
        input: Input,
        range_matchers: Vec<RangeMatcher>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeMatcher {
    /// Truncated to their prefix length, as Envoy's `CidrRange` does.
    pub ranges: Vec<IpNet>,
    pub exclusive: bool,
    pub on_match: OnMatch,
}

/// `Matcher.OnMatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnMatch {
    pub then: Then,
    pub keep_matching: bool,
    /// Where it is, relative to the `filter_chain_matcher` (see [`Matcher`]).
    pub at: Pointer,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    Matcher(Box<Matcher>),
    /// The chain name a `google.protobuf.StringValue` action holds.
    Action(String),
}

/// A `matcher_list` predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Predicate {
    Single { input: Input, matcher: StringMatcher },
    Or(Vec<Predicate>),
    And(Vec<Predicate>),
    Not(Box<Predicate>),
}

/// `xds.type.matcher.v3.StringMatcher` (no `safe_regex`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringMatcher {
    pub kind: StringMatch,
    pub pattern: String,
    pub ignore_case: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringMatch {
    Exact,
    Prefix,
    Suffix,
    Contains,
}

impl StringMatcher {
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
