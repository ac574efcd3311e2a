//! `Listener.filter_chain_matcher`: Envoy's unified xDS matcher, parsed and evaluated.
//!
//! The tree is read from the JSON as written (snake_case or lowerCamelCase) and evaluated the way
//! Envoy 1.40's matcher classes do (envoy-matching.md §3): `matcher_list` first match wins and
//! moves on when a nested matcher fails; `exact_match_map` falls back to its own `on_no_match`;
//! `prefix_match_map` tries the longest prefix first and then shorter ones; the
//! `ServerNameMatcher` tries the exact name, `*.suffix` longest first, then `*`; the `IPMatcher`
//! tries ranges longest first, skipping `exclusive` ones after the first. An action (or a nested
//! match) with `keep_matching` counts as no match. What xdsck does not model is an error value,
//! never a guess.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use serde_json::{Map, Value};

use super::trace::Connection;
use crate::model::Casing;
use crate::source::{join_index, join_token};

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
    const ALL: [(Input, &'static str); 9] = [
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

    /// What Envoy's input yields for `c`: `Ok(None)` is "no data"; an error when the question
    /// did not give the source this input reads.
    pub fn value(self, c: &Connection) -> Result<Option<String>, NeedsInput> {
        let source = || c.source.ok_or(NeedsInput(self));
        Ok(match self {
            Input::DestinationIp => c.destination.map(|d| ip_string(d.ip())),
            Input::DestinationPort => c.destination.map(|d| d.port().to_string()),
            Input::SourceIp => Some(ip_string(source()?.ip())),
            Input::SourcePort => Some(source()?.port().to_string()),
            Input::DirectSourceIp => Some(ip_string(c.direct_source.map_or_else(|| source().map(|s| s.ip()), Ok)?)),
            Input::SourceType => {
                let src = source()?.ip();
                let local = src == IpAddr::V4(Ipv4Addr::LOCALHOST)
                    || src == IpAddr::V6(Ipv6Addr::LOCALHOST)
                    || c.destination.is_some_and(|d| d.ip() == src);
                local.then(|| "local".to_owned())
            }
            Input::ServerName => (!c.server_name.is_empty()).then(|| c.server_name.clone()),
            Input::TransportProtocol => (!c.transport_protocol.is_empty()).then(|| c.transport_protocol.clone()),
            Input::ApplicationProtocol => {
                (!c.application_protocols.is_empty()).then(|| format!("'{}'", c.application_protocols.join("','")))
            }
        })
    }
}

fn ip_string(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => crate::model::CanonicalIpv6(v6).to_string(),
    }
}

/// `xds.type.matcher.v3.Matcher`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    pub tree: Tree,
    pub on_no_match: Option<Box<OnMatch>>,
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

// ---------------------------------------------------------------------------------------------
// Parsing

/// The value of a field, spelled either way.
pub fn field<'v>(obj: &'v Map<String, Value>, snake: &str) -> Option<&'v Value> {
    obj.get(snake).or_else(|| obj.get(&*Casing::Camel.field(snake)))
}

/// The message name of an `Any`: `type.googleapis.com/a.b.C` → `a.b.C`.
pub fn type_name(any: &Value) -> Option<&str> {
    let url = any.get("@type")?.as_str()?;
    Some(url.rsplit('/').next().unwrap_or(url))
}

fn object<'v>(v: &'v Value, what: &str) -> Result<&'v Map<String, Value>, String> {
    v.as_object().ok_or_else(|| format!("{what} is not an object"))
}

fn boolean(obj: &Map<String, Value>, snake: &str) -> bool {
    match field(obj, snake) {
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(w)) => w.get("value").and_then(Value::as_bool).unwrap_or(false),
        _ => false,
    }
}

impl Matcher {
    /// Parses the matcher JSON as the listener holds it.
    pub fn parse(json: &str) -> Result<Matcher, String> {
        let v: Value = serde_json::from_str(json).map_err(|e| format!("filter_chain_matcher is not JSON: {e}"))?;
        Matcher::from_value(&v)
    }

    pub fn from_value(v: &Value) -> Result<Matcher, String> {
        let obj = object(v, "a matcher")?;
        let on_no_match = match field(obj, "on_no_match") {
            Some(m) => Some(Box::new(OnMatch::from_value(m)?)),
            None => None,
        };
        let tree = if let Some(list) = field(obj, "matcher_list") {
            let list = object(list, "matcher_list")?;
            let items = field(list, "matchers").and_then(Value::as_array).ok_or("matcher_list has no matchers")?;
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let item = object(item, "a field matcher")?;
                let predicate = field(item, "predicate").ok_or("a field matcher has no predicate")?;
                let on_match = field(item, "on_match").ok_or("a field matcher has no on_match")?;
                out.push((Predicate::from_value(predicate)?, OnMatch::from_value(on_match)?));
            }
            Tree::List(out)
        } else if let Some(t) = field(obj, "matcher_tree") {
            Tree::from_value(object(t, "matcher_tree")?)?
        } else {
            return Err("a matcher has neither matcher_list nor matcher_tree".to_owned());
        };
        Ok(Matcher { tree, on_no_match })
    }
}

impl Tree {
    fn from_value(t: &Map<String, Value>) -> Result<Tree, String> {
        let input = Input::from_value(field(t, "input").ok_or("matcher_tree has no input")?)?;
        let map = |m: &Value| -> Result<Vec<(String, OnMatch)>, String> {
            let m = object(m, "a match map")?;
            let entries = field(m, "map").and_then(Value::as_object).ok_or("a match map has no map")?;
            entries.iter().map(|(k, v)| Ok((k.clone(), OnMatch::from_value(v)?))).collect()
        };
        if let Some(m) = field(t, "exact_match_map") {
            return Ok(Tree::Exact { input, map: map(m)? });
        }
        if let Some(m) = field(t, "prefix_match_map") {
            return Ok(Tree::Prefix { input, map: map(m)? });
        }
        let custom =
            field(t, "custom_match").ok_or("matcher_tree has no exact_match_map, prefix_match_map or custom_match")?;
        let config =
            field(object(custom, "custom_match")?, "typed_config").ok_or("custom_match has no typed_config")?;
        let cfg = object(config, "custom_match typed_config")?;
        match type_name(config) {
            Some("xds.type.matcher.v3.ServerNameMatcher") => {
                let mut domain_matchers = Vec::new();
                for dm in field(cfg, "domain_matchers").and_then(Value::as_array).into_iter().flatten() {
                    let dm = object(dm, "a domain matcher")?;
                    let domains = field(dm, "domains")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|d| d.as_str().map(str::to_owned).ok_or("a domain is not a string"))
                        .collect::<Result<Vec<_>, _>>()?;
                    let on_match =
                        OnMatch::from_value(field(dm, "on_match").ok_or("a domain matcher has no on_match")?)?;
                    domain_matchers.push((domains, on_match));
                }
                if let Some(err) =
                    server_name_errors(&domain_matchers.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>())
                        .into_iter()
                        .next()
                {
                    return Err(format!("Envoy rejects this ServerNameMatcher: {}", err.envoy_text()));
                }
                Ok(Tree::ServerName { input, domain_matchers })
            }
            Some("xds.type.matcher.v3.IPMatcher") => {
                let mut range_matchers = Vec::new();
                for rm in field(cfg, "range_matchers").and_then(Value::as_array).into_iter().flatten() {
                    let rm = object(rm, "a range matcher")?;
                    let mut ranges = Vec::new();
                    for r in field(rm, "ranges").and_then(Value::as_array).into_iter().flatten() {
                        ranges.push(cidr(object(r, "a range")?)?);
                    }
                    let on_match =
                        OnMatch::from_value(field(rm, "on_match").ok_or("a range matcher has no on_match")?)?;
                    range_matchers.push(RangeMatcher { ranges, exclusive: boolean(rm, "exclusive"), on_match });
                }
                Ok(Tree::Ip { input, range_matchers })
            }
            other => Err(format!("custom_match {} is not supported", other.unwrap_or("(no @type)"))),
        }
    }
}

fn cidr(r: &Map<String, Value>) -> Result<IpNet, String> {
    let addr = field(r, "address_prefix").and_then(Value::as_str).unwrap_or_default();
    let ip: IpAddr = addr.parse().map_err(|_| format!("malformed IP address: {addr}"))?;
    let len = match field(r, "prefix_len") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n.as_u64().ok_or_else(|| format!("bad prefix_len {n}"))?,
        Some(Value::String(s)) => s.parse().map_err(|_| format!("bad prefix_len {s:?}"))?,
        Some(Value::Object(w)) => w.get("value").and_then(Value::as_u64).unwrap_or(0),
        Some(other) => return Err(format!("bad prefix_len {other}")),
    };
    let len = u8::try_from(len).map_err(|_| format!("prefix_len {len} is out of range"))?;
    IpNet::new(ip, len).map(|n| n.trunc()).map_err(|_| format!("prefix_len {len} is out of range for {addr}"))
}

impl Input {
    fn from_value(v: &Value) -> Result<Input, String> {
        let config = v.get("typed_config").or_else(|| v.get("typedConfig")).ok_or("an input has no typed_config")?;
        let name = type_name(config).ok_or("an input has no @type")?;
        let short = name
            .strip_prefix("envoy.extensions.matching.common_inputs.network.v3.")
            .ok_or_else(|| format!("input {name} is not supported"))?;
        Input::ALL
            .iter()
            .find(|(_, n)| *n == short)
            .map(|(i, _)| *i)
            .ok_or_else(|| format!("input {name} is not supported"))
    }
}

impl OnMatch {
    fn from_value(v: &Value) -> Result<OnMatch, String> {
        let obj = object(v, "on_match")?;
        let keep_matching = boolean(obj, "keep_matching");
        if let Some(m) = field(obj, "matcher") {
            return Ok(OnMatch { then: Then::Matcher(Box::new(Matcher::from_value(m)?)), keep_matching });
        }
        let action = field(obj, "action").ok_or("on_match has neither matcher nor action")?;
        let config = field(object(action, "action")?, "typed_config").ok_or("an action has no typed_config")?;
        match type_name(config) {
            Some("google.protobuf.StringValue") => {
                let name = config.get("value").and_then(Value::as_str).unwrap_or_default();
                Ok(OnMatch { then: Then::Action(name.to_owned()), keep_matching })
            }
            other => Err(format!(
                "action {} is not a filter chain name (google.protobuf.StringValue)",
                other.unwrap_or("(no @type)")
            )),
        }
    }
}

impl Predicate {
    fn from_value(v: &Value) -> Result<Predicate, String> {
        let obj = object(v, "a predicate")?;
        if let Some(s) = field(obj, "single_predicate") {
            let s = object(s, "single_predicate")?;
            let input = Input::from_value(field(s, "input").ok_or("single_predicate has no input")?)?;
            let vm =
                field(s, "value_match").ok_or("single_predicate has no value_match (custom_match is not supported)")?;
            let vm = object(vm, "value_match")?;
            let ignore_case = boolean(vm, "ignore_case");
            for (key, kind) in [
                ("exact", StringMatch::Exact),
                ("prefix", StringMatch::Prefix),
                ("suffix", StringMatch::Suffix),
                ("contains", StringMatch::Contains),
            ] {
                if let Some(p) = vm.get(key) {
                    let pattern = p.as_str().ok_or_else(|| format!("value_match.{key} is not a string"))?.to_owned();
                    return Ok(Predicate::Single { input, matcher: StringMatcher { kind, pattern, ignore_case } });
                }
            }
            return Err("value_match: only exact, prefix, suffix and contains are supported".to_owned());
        }
        let list = |key: &str| -> Result<Option<Vec<Predicate>>, String> {
            let Some(l) = field(obj, key) else { return Ok(None) };
            let preds = field(object(l, key)?, "predicate")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{key} has no predicate list"))?;
            preds.iter().map(Predicate::from_value).collect::<Result<_, _>>().map(Some)
        };
        if let Some(p) = list("or_matcher")? {
            return Ok(Predicate::Or(p));
        }
        if let Some(p) = list("and_matcher")? {
            return Ok(Predicate::And(p));
        }
        if let Some(n) = field(obj, "not_matcher") {
            return Ok(Predicate::Not(Box::new(Predicate::from_value(n)?)));
        }
        Err("a predicate has none of single_predicate, or_matcher, and_matcher, not_matcher".to_owned())
    }
}

// ---------------------------------------------------------------------------------------------
// ServerNameMatcher validation

/// Why Envoy refuses a ServerNameMatcher domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainError {
    Duplicate(String),
    Empty,
    /// `*` not at the start, not followed by `.`, or nothing after `*.`.
    BadWildcard(String),
    MultipleWildcards(String),
}

impl DomainError {
    /// Envoy's own text (`domain_matcher.h`).
    pub fn envoy_text(&self) -> String {
        match self {
            DomainError::Duplicate(d) => format!("Duplicate domain in ServerNameMatcher: {d}"),
            DomainError::Empty => "Empty domain in ServerNameMatcher".to_owned(),
            DomainError::BadWildcard(d) => {
                format!("Invalid wildcard domain format: {d}. Only '*' and '*.domain' patterns are supported")
            }
            DomainError::MultipleWildcards(d) => {
                format!("Invalid wildcard domain format: {d}. Multiple wildcards are not supported")
            }
        }
    }
}

/// Envoy's check of one domain's format.
pub fn domain_format_error(d: &str) -> Option<DomainError> {
    if d == "*" {
        return None;
    }
    if d.is_empty() {
        return Some(DomainError::Empty);
    }
    let pos = d.find('*')?;
    if pos != 0 || d.len() < 3 || d.as_bytes()[1] != b'.' {
        return Some(DomainError::BadWildcard(d.to_owned()));
    }
    d[1..].contains('*').then(|| DomainError::MultipleWildcards(d.to_owned()))
}

/// Every domain Envoy would refuse, in Envoy's order (per domain: repeated, then format), with
/// the index of the domain matcher and of the domain. Envoy stops at the first.
pub fn server_name_errors(domain_matchers: &[Vec<String>]) -> Vec<DomainError> {
    server_name_errors_at(domain_matchers).into_iter().map(|(_, _, e)| e).collect()
}

pub fn server_name_errors_at(domain_matchers: &[Vec<String>]) -> Vec<(usize, usize, DomainError)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (i, domains) in domain_matchers.iter().enumerate() {
        for (j, d) in domains.iter().enumerate() {
            if !seen.insert(d.as_str()) {
                out.push((i, j, DomainError::Duplicate(d.clone())));
            } else if let Some(e) = domain_format_error(d) {
                out.push((i, j, e));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The raw JSON, for the checks: every action and every ServerNameMatcher, with JSON pointers
// (relative to the matcher, spelled as the input spells them). Tolerant of what `parse` refuses,
// so one unsupported branch does not hide the rest.

/// An action's chain name and the pointer of its `value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawAction<'v> {
    pub name: &'v str,
    pub pointer: String,
}

/// A `ServerNameMatcher`: per domain matcher, its domains with their pointers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawServerNameMatcher<'v> {
    /// Whether its input is `ServerNameInput` (lower-cased by Envoy).
    pub reads_server_name: bool,
    pub domain_matchers: Vec<Vec<(&'v str, String)>>,
}

/// What the checks read of a matcher.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RawParts<'v> {
    pub actions: Vec<RawAction<'v>>,
    pub server_name_matchers: Vec<RawServerNameMatcher<'v>>,
}

/// The key an object spells a field with, and its value.
fn keyed<'v>(obj: &'v Map<String, Value>, snake: &str) -> Option<(&'v str, &'v Value)> {
    obj.get_key_value(snake).or_else(|| obj.get_key_value(&*Casing::Camel.field(snake))).map(|(k, v)| (k.as_str(), v))
}

impl<'v> RawParts<'v> {
    pub fn of(matcher: &'v Value) -> RawParts<'v> {
        let mut parts = RawParts::default();
        parts.scan(matcher, String::new(), None);
        parts
    }

    fn scan(&mut self, v: &'v Value, pointer: String, key: Option<&str>) {
        match v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.scan(item, format!("{pointer}/{i}"), None);
                }
            }
            Value::Object(obj) => {
                if key == Some("action") {
                    if let Some((k, config)) = keyed(obj, "typed_config") {
                        if type_name(config) == Some("google.protobuf.StringValue") {
                            let name = config.get("value").and_then(Value::as_str).unwrap_or_default();
                            self.actions
                                .push(RawAction { name, pointer: join_token(&join_token(&pointer, k), "value") });
                        }
                    }
                }
                if let Some((ck, custom)) = keyed(obj, "custom_match") {
                    let config = custom.as_object().and_then(|c| keyed(c, "typed_config"));
                    if let Some((tk, config)) =
                        config.filter(|(_, c)| type_name(c) == Some("xds.type.matcher.v3.ServerNameMatcher"))
                    {
                        let reads_server_name = field(obj, "input")
                            .and_then(|i| i.get("typed_config").or_else(|| i.get("typedConfig")))
                            .and_then(type_name)
                            .is_some_and(|t| t.ends_with(".network.v3.ServerNameInput"));
                        let base = join_token(&join_token(&pointer, ck), tk);
                        let mut domain_matchers = Vec::new();
                        if let Some((dk, Value::Array(dms))) =
                            config.as_object().and_then(|c| keyed(c, "domain_matchers"))
                        {
                            for (i, dm) in dms.iter().enumerate() {
                                let dm_pointer = join_index(&join_token(&base, dk), i);
                                let mut domains = Vec::new();
                                if let Some((dsk, Value::Array(ds))) = dm.as_object().and_then(|d| keyed(d, "domains"))
                                {
                                    for (j, d) in ds.iter().enumerate() {
                                        if let Some(d) = d.as_str() {
                                            domains.push((d, join_index(&join_token(&dm_pointer, dsk), j)));
                                        }
                                    }
                                }
                                domain_matchers.push(domains);
                            }
                        }
                        self.server_name_matchers.push(RawServerNameMatcher { reads_server_name, domain_matchers });
                    }
                }
                for (k, child) in obj {
                    if k != "@type" {
                        self.scan(child, join_token(&pointer, k), Some(k));
                    }
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/// One decision the matcher took, for `xdsck trace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatcherStep {
    /// The input read (`ServerNameInput`), or `on_no_match`.
    pub input: &'static str,
    /// What the input yielded, `(no data)` when nothing.
    pub value: String,
    /// The key or branch taken and what came of it.
    pub chosen: String,
}

impl fmt::Display for MatcherStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.input, self.value, self.chosen)
    }
}

/// Where the matcher sent a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    /// The chain name of the action reached; `None` when the tree did not match (Envoy then uses
    /// `default_filter_chain`, or closes the connection).
    pub action: Option<String>,
    pub steps: Vec<MatcherStep>,
}

/// The question left out an attribute the matcher reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedsInput(pub Input);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Res {
    Match(String),
    NoMatch,
}

struct Walk<'c> {
    c: &'c Connection,
    steps: Vec<MatcherStep>,
}

impl Matcher {
    /// The chain name the matcher's action names for `c`, or `None` when the tree does not match.
    pub fn evaluate(&self, c: &Connection) -> Result<Option<String>, String> {
        self.evaluate_traced(c)
            .map(|e| e.action)
            .map_err(|NeedsInput(i)| format!("the matcher reads {}, which the question does not give", i.as_str()))
    }

    /// Like [`Self::evaluate`], with the steps taken.
    pub fn evaluate_traced(&self, c: &Connection) -> Result<Evaluation, NeedsInput> {
        let mut w = Walk { c, steps: Vec::new() };
        let res = w.matcher(self)?;
        Ok(Evaluation {
            action: match res {
                Res::Match(a) => Some(a),
                Res::NoMatch => None,
            },
            steps: w.steps,
        })
    }

    /// Every action's chain name, in document order (repeats kept).
    pub fn actions(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_actions(&mut out);
        out
    }

    fn collect_actions<'m>(&'m self, out: &mut Vec<&'m str>) {
        let on = |m: &'m OnMatch, out: &mut Vec<&'m str>| match &m.then {
            Then::Action(a) => out.push(a),
            Then::Matcher(n) => n.collect_actions(out),
        };
        match &self.tree {
            Tree::List(l) => l.iter().for_each(|(_, m)| on(m, out)),
            Tree::Exact { map, .. } | Tree::Prefix { map, .. } => map.iter().for_each(|(_, m)| on(m, out)),
            Tree::ServerName { domain_matchers, .. } => domain_matchers.iter().for_each(|(_, m)| on(m, out)),
            Tree::Ip { range_matchers, .. } => range_matchers.iter().for_each(|r| on(&r.on_match, out)),
        }
        if let Some(m) = &self.on_no_match {
            on(m, out);
        }
    }
}

fn shown(v: &Option<String>) -> String {
    v.as_deref().map_or_else(|| "(no data)".to_owned(), |s| format!("{s:?}"))
}

impl Walk<'_> {
    fn input(&self, i: Input) -> Result<Option<String>, NeedsInput> {
        i.value(self.c)
    }

    fn step(&mut self, input: &'static str, value: &Option<String>, chosen: String) {
        self.steps.push(MatcherStep { input, value: shown(value), chosen });
    }

    /// Envoy's `handleRecursionAndSkips`.
    fn on_match(&mut self, m: &OnMatch) -> Result<Res, NeedsInput> {
        let res = match &m.then {
            Then::Action(a) => Res::Match(a.clone()),
            Then::Matcher(n) => self.matcher(n)?,
        };
        if m.keep_matching && res != Res::NoMatch {
            self.steps.push(MatcherStep {
                input: "keep_matching",
                value: "-".to_owned(),
                chosen: "the match is skipped: matching goes on".to_owned(),
            });
            return Ok(Res::NoMatch);
        }
        Ok(res)
    }

    fn no_match(&mut self, m: &Matcher) -> Result<Res, NeedsInput> {
        match &m.on_no_match {
            Some(o) => {
                self.steps.push(MatcherStep { input: "on_no_match", value: "-".to_owned(), chosen: describe(o) });
                self.on_match(o)
            }
            None => Ok(Res::NoMatch),
        }
    }

    fn matcher(&mut self, m: &Matcher) -> Result<Res, NeedsInput> {
        match &m.tree {
            Tree::List(list) => {
                for (i, (pred, on)) in list.iter().enumerate() {
                    if self.predicate(pred)? {
                        self.steps.push(MatcherStep {
                            input: "matcher_list",
                            value: format!("matchers[{i}]"),
                            chosen: format!("predicate matches: {}", describe(on)),
                        });
                        let r = self.on_match(on)?;
                        if r != Res::NoMatch {
                            return Ok(r);
                        }
                    }
                }
                self.no_match(m)
            }
            Tree::Exact { input, map } => {
                let v = self.input(*input)?;
                let Some(key) = &v else {
                    self.step(input.as_str(), &v, "no data: on_no_match".to_owned());
                    return self.no_match(m);
                };
                match map.iter().find(|(k, _)| k == key) {
                    Some((k, on)) => {
                        self.step(input.as_str(), &v, format!("exact key {k:?}: {}", describe(on)));
                        let r = self.on_match(on)?;
                        if r != Res::NoMatch {
                            return Ok(r);
                        }
                        self.step(input.as_str(), &v, format!("key {k:?} did not match: on_no_match"));
                    }
                    None => self.step(input.as_str(), &v, "no exact key: on_no_match".to_owned()),
                }
                self.no_match(m)
            }
            Tree::Prefix { input, map } => {
                let v = self.input(*input)?;
                let Some(key) = &v else {
                    self.step(input.as_str(), &v, "no data: on_no_match".to_owned());
                    return self.no_match(m);
                };
                let mut hits: Vec<&(String, OnMatch)> =
                    map.iter().filter(|(k, _)| key.starts_with(k.as_str())).collect();
                hits.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
                for (k, on) in hits {
                    self.step(input.as_str(), &v, format!("prefix {k:?}: {}", describe(on)));
                    let r = self.on_match(on)?;
                    if r != Res::NoMatch {
                        return Ok(r);
                    }
                }
                self.step(input.as_str(), &v, "no prefix matched: on_no_match".to_owned());
                self.no_match(m)
            }
            Tree::ServerName { input, domain_matchers } => {
                let v = self.input(*input)?;
                let name = match &v {
                    Some(n) if !n.is_empty() => n.clone(),
                    _ => {
                        self.step(input.as_str(), &v, "no server name: on_no_match".to_owned());
                        return self.no_match(m);
                    }
                };
                // Envoy keeps the first matcher of a domain (repeats are rejected anyway).
                let find = |d: &str| domain_matchers.iter().find(|(ds, _)| ds.iter().any(|x| x == d)).map(|(_, on)| on);
                let mut candidates: Vec<(String, &OnMatch)> = Vec::new();
                if let Some(on) = find(&name) {
                    candidates.push((name.clone(), on));
                }
                for (i, _) in name.match_indices('.') {
                    let wildcard = format!("*.{}", &name[i + 1..]);
                    if let Some(on) = find(&wildcard) {
                        candidates.push((wildcard, on));
                    }
                }
                if let Some(on) = find("*") {
                    candidates.push(("*".to_owned(), on));
                }
                for (d, on) in candidates {
                    self.step(input.as_str(), &v, format!("domain {d:?}: {}", describe(on)));
                    let r = self.on_match(on)?;
                    if r != Res::NoMatch {
                        return Ok(r);
                    }
                }
                self.step(input.as_str(), &v, "no domain matched: on_no_match".to_owned());
                self.no_match(m)
            }
            Tree::Ip { input, range_matchers } => {
                let v = self.input(*input)?;
                let Some(ip) = v.as_deref().and_then(|s| s.parse::<IpAddr>().ok()) else {
                    self.step(input.as_str(), &v, "not an IP address: on_no_match".to_owned());
                    return self.no_match(m);
                };
                // Every (range, matcher) containing the address, longest prefix first, then in
                // declaration order — Envoy's TrieNodeComparator.
                let mut hits: Vec<(u8, usize, IpNet, &RangeMatcher)> = Vec::new();
                for (i, rm) in range_matchers.iter().enumerate() {
                    for net in &rm.ranges {
                        if net.contains(&ip) && !hits.iter().any(|h| h.1 == i && h.0 == net.prefix_len()) {
                            hits.push((net.prefix_len(), i, *net, rm));
                        }
                    }
                }
                hits.sort_by_key(|h| (std::cmp::Reverse(h.0), h.1));
                let mut first = true;
                for (_, _, net, rm) in hits {
                    if !first && rm.exclusive {
                        self.step(input.as_str(), &v, format!("range {net} is exclusive and not the longest: skipped"));
                        continue;
                    }
                    self.step(input.as_str(), &v, format!("range {net}: {}", describe(&rm.on_match)));
                    let r = self.on_match(&rm.on_match)?;
                    if r != Res::NoMatch {
                        return Ok(r);
                    }
                    first = false;
                }
                self.step(input.as_str(), &v, "no range matched: on_no_match".to_owned());
                self.no_match(m)
            }
        }
    }

    fn predicate(&mut self, p: &Predicate) -> Result<bool, NeedsInput> {
        Ok(match p {
            Predicate::Single { input, matcher } => {
                let v = self.input(*input)?;
                // A string matcher never matches "no data".
                v.as_deref().is_some_and(|s| matcher.matches(s))
            }
            Predicate::Or(ps) => {
                for p in ps {
                    if self.predicate(p)? {
                        return Ok(true);
                    }
                }
                false
            }
            Predicate::And(ps) => {
                for p in ps {
                    if !self.predicate(p)? {
                        return Ok(false);
                    }
                }
                true
            }
            Predicate::Not(p) => !self.predicate(p)?,
        })
    }
}

fn describe(on: &OnMatch) -> String {
    let what = match &on.then {
        Then::Action(a) => format!("action {a:?}"),
        Then::Matcher(_) => "nested matcher".to_owned(),
    };
    if on.keep_matching { format!("{what} (keep_matching)") } else { what }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::net::SocketAddr;

    fn conn(sni: &str) -> Connection {
        Connection {
            destination: Some("10.0.0.1:443".parse().unwrap()),
            source: Some("192.168.1.5:40000".parse().unwrap()),
            direct_source: None,
            transport_protocol: if sni.is_empty() { "raw_buffer".into() } else { "tls".into() },
            server_name: sni.to_owned(),
            application_protocols: Vec::new(),
        }
    }

    fn input(name: &str) -> Value {
        json!({"name": "i", "typed_config": {"@type": format!("type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.{name}")}})
    }

    fn action(name: &str) -> Value {
        json!({"action": {"name": "a", "typed_config": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": name}}})
    }

    fn eval(m: &Value, c: &Connection) -> Option<String> {
        Matcher::from_value(m).unwrap().evaluate(c).unwrap()
    }

    fn sni_matcher(domains: Value, on_no_match: Option<Value>) -> Value {
        let mut m = json!({"matcher_tree": {"input": input("ServerNameInput"), "custom_match": {"name": "d", "typed_config": {
            "@type": "type.googleapis.com/xds.type.matcher.v3.ServerNameMatcher", "domain_matchers": domains}}}});
        if let Some(o) = on_no_match {
            m["on_no_match"] = o;
        }
        m
    }

    /// A nested matcher that matches only when the destination port is `port`.
    fn only_port(port: &str, then: &str) -> Value {
        json!({"matcher": {"matcher_tree": {"input": input("DestinationPortInput"),
            "exact_match_map": {"map": {port: action(then)}}}}})
    }

    #[test]
    fn exact_map_and_its_on_no_match() {
        let m = json!({"matcher_tree": {"input": input("ServerNameInput"), "exact_match_map": {"map": {
            "a.example.com": action("a"),
            "b.example.com": only_port("80", "b"),
        }}}, "on_no_match": action("fallback")});
        assert_eq!(eval(&m, &conn("a.example.com")).as_deref(), Some("a"));
        assert_eq!(eval(&m, &conn("x.example.com")).as_deref(), Some("fallback"));
        // The key matches, its subtree does not: this node's on_no_match.
        assert_eq!(eval(&m, &conn("b.example.com")).as_deref(), Some("fallback"));
        // No SNI is no data: on_no_match.
        assert_eq!(eval(&m, &conn("")).as_deref(), Some("fallback"));
        let mut no_default = m.clone();
        no_default.as_object_mut().unwrap().remove("on_no_match");
        assert_eq!(eval(&no_default, &conn("x.example.com")), None);
    }

    #[test]
    fn prefix_map_longest_first_then_shorter_on_subtree_miss() {
        let m = json!({"matcher_tree": {"input": input("ServerNameInput"), "prefix_match_map": {"map": {
            "api": action("short"),
            "api.v2": only_port("80", "long"),
            "": action("empty"),
        }}}});
        assert_eq!(eval(&m, &conn("api.v2.example")).as_deref(), Some("short"));
        let mut c = conn("api.v2.example");
        c.destination = Some("10.0.0.1:80".parse().unwrap());
        assert_eq!(eval(&m, &c).as_deref(), Some("long"));
        assert_eq!(eval(&m, &conn("zzz")).as_deref(), Some("empty"));
    }

    #[test]
    fn server_name_matcher_order_and_backtracking() {
        let m = sni_matcher(
            json!([
                {"domains": ["a.b.example.com"], "on_match": only_port("80", "exact")},
                {"domains": ["*.b.example.com"], "on_match": only_port("80", "long-wild")},
                {"domains": ["*.example.com"], "on_match": action("wild")},
                {"domains": ["*"], "on_match": action("star")},
            ]),
            Some(action("nomatch")),
        );
        let mut on80 = conn("a.b.example.com");
        on80.destination = Some("10.0.0.1:80".parse().unwrap());
        assert_eq!(eval(&m, &on80).as_deref(), Some("exact"));
        // The exact name's subtree fails: the longest wildcard's fails too: the next wildcard.
        assert_eq!(eval(&m, &conn("a.b.example.com")).as_deref(), Some("wild"));
        // `*.example.com` does not cover the apex; `*` does.
        assert_eq!(eval(&m, &conn("example.com")).as_deref(), Some("star"));
        assert_eq!(eval(&m, &conn("other.org")).as_deref(), Some("star"));
        assert_eq!(eval(&m, &conn("")).as_deref(), Some("nomatch"));
    }

    #[test]
    fn upper_case_domains_never_match() {
        let m = sni_matcher(json!([{"domains": ["A.example.com"], "on_match": action("a")}]), None);
        assert_eq!(eval(&m, &conn("a.example.com")), None);
    }

    #[test]
    fn server_name_validation_texts() {
        let d = |v: &[&[&str]]| {
            server_name_errors(&v.iter().map(|x| x.iter().map(|s| (*s).to_owned()).collect()).collect::<Vec<_>>())
                .iter()
                .map(DomainError::envoy_text)
                .collect::<Vec<_>>()
        };
        assert_eq!(d(&[&["a.com"], &["a.com"]]), ["Duplicate domain in ServerNameMatcher: a.com"]);
        assert_eq!(
            d(&[&["a.*.com", "*", "*.ok.com"]]),
            ["Invalid wildcard domain format: a.*.com. Only '*' and '*.domain' patterns are supported"]
        );
        assert_eq!(
            d(&[&["*.*.com"]]),
            ["Invalid wildcard domain format: *.*.com. Multiple wildcards are not supported"]
        );
        assert_eq!(d(&[&["*."], &["*x.com"]]).len(), 2);
        assert_eq!(d(&[&[""]]), ["Empty domain in ServerNameMatcher"]);
        assert!(
            Matcher::from_value(&sni_matcher(json!([{"domains": ["*.*.a"], "on_match": action("a")}]), None)).is_err()
        );
    }

    #[test]
    fn ip_matcher_longest_first_and_exclusive() {
        let m = |exclusive: bool| {
            json!({"matcher_tree": {"input": input("SourceIPInput"), "custom_match": {"name": "ip", "typed_config": {
                "@type": "type.googleapis.com/xds.type.matcher.v3.IPMatcher", "range_matchers": [
                    {"ranges": [{"address_prefix": "192.168.0.0", "prefix_len": 16}], "exclusive": exclusive, "on_match": action("wide")},
                    {"ranges": [{"address_prefix": "192.168.1.0", "prefixLen": 24}], "onMatch": only_port("80", "narrow")},
                ]}}}, "on_no_match": action("none")})
        };
        // The /24 fails deeper: the /16 is tried unless it is exclusive.
        assert_eq!(eval(&m(false), &conn("")).as_deref(), Some("wide"));
        assert_eq!(eval(&m(true), &conn("")).as_deref(), Some("none"));
        let mut other = conn("");
        other.source = Some("10.9.9.9:1".parse().unwrap());
        assert_eq!(eval(&m(false), &other).as_deref(), Some("none"));
    }

    #[test]
    fn matcher_list_predicates_and_keep_matching() {
        let single = |i: &str, vm: Value| json!({"single_predicate": {"input": input(i), "value_match": vm}});
        let m = json!({"matcher_list": {"matchers": [
            {"predicate": single("ServerNameInput", json!({"suffix": ".example.com"})),
             "on_match": {"keep_matching": true, "action": {"name": "x", "typed_config": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": "skipped"}}}},
            {"predicate": {"and_matcher": {"predicate": [
                single("TransportProtocolInput", json!({"exact": "TLS", "ignore_case": true})),
                {"not_matcher": single("ApplicationProtocolInput", json!({"contains": "'h2'"}))}]}},
             "on_match": only_port("80", "tls-not-h2-on-80")},
            {"predicate": {"or_matcher": {"predicate": [
                single("SourceTypeInput", json!({"exact": "local"})),
                single("ServerNameInput", json!({"prefix": "a."}))]}},
             "on_match": action("local-or-a")},
        ]}, "on_no_match": action("none")});
        let mut c = conn("a.example.com");
        assert_eq!(eval(&m, &c).as_deref(), Some("local-or-a"));
        c.destination = Some("10.0.0.1:80".parse().unwrap());
        assert_eq!(eval(&m, &c).as_deref(), Some("tls-not-h2-on-80"));
        c.application_protocols = vec!["h2".into(), "http/1.1".into()];
        assert_eq!(eval(&m, &c).as_deref(), Some("local-or-a"));
        let mut local = conn("z.org");
        local.source = Some("127.0.0.1:5".parse().unwrap());
        assert_eq!(eval(&m, &local).as_deref(), Some("local-or-a"));
        assert_eq!(eval(&m, &conn("z.org")).as_deref(), Some("none"));
    }

    #[test]
    fn inputs_yield_what_envoy_yields() {
        let mut c = conn("a.example.com");
        c.application_protocols = vec!["h2".into(), "http/1.1".into()];
        c.source = Some(SocketAddr::new("::1".parse().unwrap(), 7));
        assert_eq!(Input::ApplicationProtocol.value(&c), Ok(Some("'h2','http/1.1'".into())));
        assert_eq!(Input::SourceType.value(&c), Ok(Some("local".into())));
        assert_eq!(Input::DirectSourceIp.value(&c), Ok(Some("::1".into())));
        assert_eq!(Input::DestinationPort.value(&c), Ok(Some("443".into())));
        c.destination = None;
        assert_eq!(Input::DestinationIp.value(&c), Ok(None));
        c.source = None;
        assert_eq!(Input::SourcePort.value(&c), Err(NeedsInput(Input::SourcePort)));
        let m = json!({"matcher_tree": {"input": input("SourcePortInput"), "exact_match_map": {"map": {"1": action("a")}}}});
        assert!(Matcher::from_value(&m).unwrap().evaluate(&c).is_err());
    }

    #[test]
    fn unsupported_things_are_errors_not_panics() {
        let bad = [
            json!({}),
            json!({"matcher_tree": {"input": input("FilterStateInput"), "exact_match_map": {"map": {}}}}),
            json!({"matcher_tree": {"input": input("ServerNameInput"), "custom_match": {"typed_config": {"@type": "x/Other"}}}}),
            json!({"matcher_list": {"matchers": [{"predicate": {"single_predicate": {"input": input("ServerNameInput"), "value_match": {"safe_regex": {"regex": "."}}}}, "on_match": action("a")}]}}),
            json!({"matcher_tree": {"input": input("ServerNameInput"), "exact_match_map": {"map": {"a": {"action": {"typed_config": {"@type": "x/Y"}}}}}}}),
            json!([1, 2]),
        ];
        for b in bad {
            assert!(Matcher::from_value(&b).is_err(), "{b}");
        }
        assert!(Matcher::parse("{").is_err());
    }

    #[test]
    fn raw_parts_find_actions_and_domains_with_pointers() {
        let m =
            sni_matcher(json!([{"domains": ["a.com", "*.B.com"], "onMatch": only_port("80", "x")}]), Some(action("y")));
        let parts = RawParts::of(&m);
        let actions: Vec<_> = parts.actions.iter().map(|a| (a.name, a.pointer.as_str())).collect();
        assert_eq!(
            actions,
            [
                (
                    "x",
                    "/matcher_tree/custom_match/typed_config/domain_matchers/0/onMatch/matcher/matcher_tree/exact_match_map/map/80/action/typed_config/value"
                ),
                ("y", "/on_no_match/action/typed_config/value"),
            ]
        );
        assert_eq!(parts.server_name_matchers.len(), 1);
        assert!(parts.server_name_matchers[0].reads_server_name);
        assert_eq!(
            parts.server_name_matchers[0].domain_matchers[0][1],
            ("*.B.com", "/matcher_tree/custom_match/typed_config/domain_matchers/0/domains/1".to_owned())
        );
    }

    #[test]
    fn camel_case_is_read() {
        let m = json!({"matcherTree": {"input": input("ServerNameInput"), "exactMatchMap": {"map": {"a": action("a")}}},
            "onNoMatch": action("b")});
        assert_eq!(eval(&m, &conn("a")).as_deref(), Some("a"));
        assert_eq!(eval(&m, &conn("c")).as_deref(), Some("b"));
        assert_eq!(Matcher::from_value(&m).unwrap().actions(), ["a", "b"]);
    }
}
