//! `Listener.filter_chain_matcher`: Envoy's unified xDS matcher, validated and evaluated.
//!
//! The loaders type the tree ([`crate::model::matcher`]); it is evaluated here the way Envoy
//! 1.40's matcher classes do (envoy-matching.md §3): `matcher_list` first match wins and
//! moves on when a nested matcher fails; `exact_match_map` falls back to its own `on_no_match`;
//! `prefix_match_map` tries the longest prefix first and then shorter ones; the
//! `ServerNameMatcher` tries the exact name, `*.suffix` longest first, then `*`; the `IPMatcher`
//! tries ranges longest first, skipping `exclusive` ones after the first. An action (or a nested
//! match) with `keep_matching` counts as no match. What xdsck does not model is an error value,
//! never a guess.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use super::trace::Connection;
pub use crate::model::matcher::{
    FilterChainMatcher, MatchInput, Matcher, MatcherAction, OnMatch, Predicate, RangeMatcher, ServerNameMatcherParts,
    StringMatch, StringMatcher, Then, Tree,
};
use crate::source::Pointer;

impl MatchInput {
    /// What Envoy's input yields for `c`: `Ok(None)` is "no data"; an error when the question
    /// did not give the source this input reads.
    pub fn value(self, c: &Connection) -> Result<Option<String>, NeedsInput> {
        let source = || c.source.ok_or(NeedsInput(self));
        Ok(match self {
            MatchInput::DestinationIp => c.destination.map(|d| ip_string(d.ip())),
            MatchInput::DestinationPort => c.destination.map(|d| d.port().to_string()),
            MatchInput::SourceIp => Some(ip_string(source()?.ip())),
            MatchInput::SourcePort => Some(source()?.port().to_string()),
            MatchInput::DirectSourceIp => {
                Some(ip_string(c.direct_source.map_or_else(|| source().map(|s| s.ip()), Ok)?))
            }
            MatchInput::SourceType => {
                let src = source()?.ip();
                let local = src == IpAddr::V4(Ipv4Addr::LOCALHOST)
                    || src == IpAddr::V6(Ipv6Addr::LOCALHOST)
                    || c.destination.is_some_and(|d| d.ip() == src);
                local.then(|| "local".to_owned())
            }
            MatchInput::ServerName => (!c.server_name.is_empty()).then(|| c.server_name.clone()),
            MatchInput::TransportProtocol => (!c.transport_protocol.is_empty()).then(|| c.transport_protocol.clone()),
            MatchInput::ApplicationProtocol => {
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

// ---------------------------------------------------------------------------------------------
// ServerNameMatcher validation

/// Why Envoy refuses a ServerNameMatcher domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainError {
    /// The domain appears twice across the matcher's `server_name` map (in any of its domain
    /// lists); Envoy cannot tell which action it belongs to.
    Duplicate(String),
    /// An empty domain, which no SNI can carry.
    Empty,
    /// `*` not at the start, not followed by `.`, or nothing after `*.`.
    BadWildcard(String),
    /// More than one `*`: Envoy's ServerNameMatcher only has the one leading wildcard.
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

/// Every domain Envoy would refuse, in Envoy's order (per domain: repeated, then format). Envoy
/// stops at the first.
pub fn server_name_errors(domain_matchers: &[Vec<String>]) -> Vec<DomainError> {
    server_name_errors_at(domain_matchers).into_iter().map(|(_, _, e)| e).collect()
}

/// [`server_name_errors`] with the index of the domain matcher and of the domain, so a finding
/// can point at the domain itself.
pub(crate) fn server_name_errors_at(domain_matchers: &[Vec<String>]) -> Vec<(usize, usize, DomainError)> {
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
// Evaluation

/// One decision the matcher took, for `xdsck trace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatcherStep {
    /// The node the decision was taken at: the branch taken, or the matcher that did not match.
    /// Relative to the `filter_chain_matcher` as [`Matcher::evaluate_traced`] gives it; from
    /// the document's root in a [`super::select::Selection`].
    pub at: Pointer,
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
    /// Every decision on the way there, in the order the matcher took them: what `xdsck trace`
    /// prints to say why this chain (or none) was chosen.
    pub steps: Vec<MatcherStep>,
}

/// The question left out an attribute the matcher reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedsInput(pub MatchInput);

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

    /// Why Envoy refuses to build this matcher (a ServerNameMatcher domain it rejects): the
    /// first in the order Envoy builds the tree (a node's `on_no_match`, then its branches, a
    /// ServerNameMatcher after its own branches); `None` when it builds. The loaders type what
    /// is written; whether Envoy accepts it is decided here, with the evaluation.
    pub fn rejection(&self) -> Option<String> {
        let on = |o: &OnMatch| match &o.then {
            Then::Matcher(m) => m.rejection(),
            Then::Action(_) => None,
        };
        if let Some(r) = self.on_no_match.as_deref().and_then(on) {
            return Some(r);
        }
        match &self.tree {
            Tree::List(l) => l.iter().find_map(|(_, o)| on(o)),
            Tree::Exact { map, .. } | Tree::Prefix { map, .. } => map.iter().find_map(|(_, o)| on(o)),
            Tree::ServerName { domain_matchers, .. } => domain_matchers.iter().find_map(|(_, o)| on(o)).or_else(|| {
                let domains: Vec<Vec<String>> = domain_matchers.iter().map(|(d, _)| d.clone()).collect();
                let first = server_name_errors(&domains).into_iter().next()?;
                Some(format!("Envoy rejects this ServerNameMatcher: {}", first.envoy_text()))
            }),
            Tree::Ip { range_matchers, .. } => range_matchers.iter().find_map(|r| on(&r.on_match)),
        }
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
    fn input(&self, i: MatchInput) -> Result<Option<String>, NeedsInput> {
        i.value(self.c)
    }

    fn step(&mut self, at: &Pointer, input: &'static str, value: &Option<String>, chosen: String) {
        self.steps.push(MatcherStep { at: at.clone(), input, value: shown(value), chosen });
    }

    /// Envoy's `handleRecursionAndSkips`.
    fn on_match(&mut self, m: &OnMatch) -> Result<Res, NeedsInput> {
        let res = match &m.then {
            Then::Action(a) => Res::Match(a.clone()),
            Then::Matcher(n) => self.matcher(n)?,
        };
        if m.keep_matching && res != Res::NoMatch {
            self.steps.push(MatcherStep {
                at: m.at.clone(),
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
                self.steps.push(MatcherStep {
                    at: o.at.clone(),
                    input: "on_no_match",
                    value: "-".to_owned(),
                    chosen: describe(o),
                });
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
                            at: on.at.clone(),
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
                    self.step(&m.at, input.as_str(), &v, "no data: on_no_match".to_owned());
                    return self.no_match(m);
                };
                match map.iter().find(|(k, _)| k == key) {
                    Some((k, on)) => {
                        self.step(&on.at, input.as_str(), &v, format!("exact key {k:?}: {}", describe(on)));
                        let r = self.on_match(on)?;
                        if r != Res::NoMatch {
                            return Ok(r);
                        }
                        self.step(&on.at, input.as_str(), &v, format!("key {k:?} did not match: on_no_match"));
                    }
                    None => self.step(&m.at, input.as_str(), &v, "no exact key: on_no_match".to_owned()),
                }
                self.no_match(m)
            }
            Tree::Prefix { input, map } => {
                let v = self.input(*input)?;
                let Some(key) = &v else {
                    self.step(&m.at, input.as_str(), &v, "no data: on_no_match".to_owned());
                    return self.no_match(m);
                };
                let mut hits: Vec<&(String, OnMatch)> =
                    map.iter().filter(|(k, _)| key.starts_with(k.as_str())).collect();
                hits.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
                for (k, on) in hits {
                    self.step(&on.at, input.as_str(), &v, format!("prefix {k:?}: {}", describe(on)));
                    let r = self.on_match(on)?;
                    if r != Res::NoMatch {
                        return Ok(r);
                    }
                }
                self.step(&m.at, input.as_str(), &v, "no prefix matched: on_no_match".to_owned());
                self.no_match(m)
            }
            Tree::ServerName { input, domain_matchers } => {
                let v = self.input(*input)?;
                let name = match &v {
                    Some(n) if !n.is_empty() => n.clone(),
                    _ => {
                        self.step(&m.at, input.as_str(), &v, "no server name: on_no_match".to_owned());
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
                    self.step(&on.at, input.as_str(), &v, format!("domain {d:?}: {}", describe(on)));
                    let r = self.on_match(on)?;
                    if r != Res::NoMatch {
                        return Ok(r);
                    }
                }
                self.step(&m.at, input.as_str(), &v, "no domain matched: on_no_match".to_owned());
                self.no_match(m)
            }
            Tree::Ip { input, range_matchers } => {
                let v = self.input(*input)?;
                let Some(ip) = v.as_deref().and_then(|s| s.parse::<IpAddr>().ok()) else {
                    self.step(&m.at, input.as_str(), &v, "not an IP address: on_no_match".to_owned());
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
                        self.step(
                            &rm.on_match.at,
                            input.as_str(),
                            &v,
                            format!("range {net} is exclusive and not the longest: skipped"),
                        );
                        continue;
                    }
                    self.step(&rm.on_match.at, input.as_str(), &v, format!("range {net}: {}", describe(&rm.on_match)));
                    let r = self.on_match(&rm.on_match)?;
                    if r != Res::NoMatch {
                        return Ok(r);
                    }
                    first = false;
                }
                self.step(&m.at, input.as_str(), &v, "no range matched: on_no_match".to_owned());
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
    use serde_json::Value;
    use serde_json::json;
    use std::net::SocketAddr;

    /// The matcher as the loader types it.
    fn typed(v: &Value) -> FilterChainMatcher {
        crate::load::matcher::read(v, None)
    }

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
        typed(m).tree.unwrap().evaluate(c).unwrap()
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
        // The loader types what is written; the engine says Envoy refuses it, and trace does not
        // evaluate it.
        let rejected = typed(&sni_matcher(json!([{"domains": ["*.*.a"], "on_match": action("a")}]), None));
        assert_eq!(
            rejected.tree.unwrap().rejection().as_deref(),
            Some(
                "Envoy rejects this ServerNameMatcher: Invalid wildcard domain format: *.*.a. Multiple wildcards are not supported"
            )
        );
        // Nested below another ServerNameMatcher's branch, the inner one is built (and refused) first.
        let inner = sni_matcher(json!([{"domains": ["a", "a"], "on_match": action("x")}]), None);
        let outer = sni_matcher(json!([{"domains": ["", "b"], "on_match": {"matcher": inner}}]), None);
        assert_eq!(
            typed(&outer).tree.unwrap().rejection().as_deref(),
            Some("Envoy rejects this ServerNameMatcher: Duplicate domain in ServerNameMatcher: a")
        );
        assert_eq!(
            typed(&sni_matcher(json!([{"domains": ["a"], "on_match": action("a")}]), None)).tree.unwrap().rejection(),
            None
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
        assert_eq!(MatchInput::ApplicationProtocol.value(&c), Ok(Some("'h2','http/1.1'".into())));
        assert_eq!(MatchInput::SourceType.value(&c), Ok(Some("local".into())));
        assert_eq!(MatchInput::DirectSourceIp.value(&c), Ok(Some("::1".into())));
        assert_eq!(MatchInput::DestinationPort.value(&c), Ok(Some("443".into())));
        c.destination = None;
        assert_eq!(MatchInput::DestinationIp.value(&c), Ok(None));
        c.source = None;
        assert_eq!(MatchInput::SourcePort.value(&c), Err(NeedsInput(MatchInput::SourcePort)));
        let m = json!({"matcher_tree": {"input": input("SourcePortInput"), "exact_match_map": {"map": {"1": action("a")}}}});
        assert!(typed(&m).tree.unwrap().evaluate(&c).is_err());
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
            assert!(typed(&b).tree.is_err(), "{b}");
        }
    }

    #[test]
    fn raw_parts_find_actions_and_domains_with_pointers() {
        let m =
            sni_matcher(json!([{"domains": ["a.com", "*.B.com"], "onMatch": only_port("80", "x")}]), Some(action("y")));
        let parts = typed(&m);
        let actions: Vec<_> = parts.actions.iter().map(|a| (a.name.as_str(), a.pointer.as_str())).collect();
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
            ("*.B.com".to_owned(), "/matcher_tree/custom_match/typed_config/domain_matchers/0/domains/1".into())
        );
    }

    #[test]
    fn camel_case_is_read() {
        let m = json!({"matcherTree": {"input": input("ServerNameInput"), "exactMatchMap": {"map": {"a": action("a")}}},
            "onNoMatch": action("b")});
        assert_eq!(eval(&m, &conn("a")).as_deref(), Some("a"));
        assert_eq!(eval(&m, &conn("c")).as_deref(), Some("b"));
        assert_eq!(typed(&m).tree.unwrap().actions(), ["a", "b"]);
    }

    /// Every typed node keeps its place, spelled as the input spells its keys.
    #[test]
    fn typed_nodes_carry_their_pointers() {
        let m = json!({"matcherTree": {"input": input("ServerNameInput"), "exactMatchMap": {"map": {
            "a/b": {"matcher": {"matcher_list": {"matchers": [
                {"predicate": {"single_predicate": {"input": input("ServerNameInput"), "value_match": {"exact": "x"}}},
                 "onMatch": action("x")}]}}}}}},
            "onNoMatch": action("b")});
        let tree = typed(&m).tree.unwrap();
        assert_eq!(tree.at.as_str(), "");
        assert_eq!(tree.on_no_match.as_ref().unwrap().at.as_str(), "/onNoMatch");
        let Tree::Exact { map, .. } = &tree.tree else { panic!("an exact map") };
        assert_eq!(map[0].1.at.as_str(), "/matcherTree/exactMatchMap/map/a~1b");
        let Then::Matcher(nested) = &map[0].1.then else { panic!("a nested matcher") };
        assert_eq!(nested.at.as_str(), "/matcherTree/exactMatchMap/map/a~1b/matcher");
        let Tree::List(list) = &nested.tree else { panic!("a matcher list") };
        assert_eq!(
            list[0].1.at.as_str(),
            "/matcherTree/exactMatchMap/map/a~1b/matcher/matcher_list/matchers/0/onMatch"
        );
        let mut c = conn("a/b");
        c.server_name = "a/b".to_owned();
        let steps = tree.evaluate_traced(&c).unwrap().steps;
        assert_eq!(steps[0].at.as_str(), "/matcherTree/exactMatchMap/map/a~1b");
        assert_eq!(steps.last().unwrap().at.as_str(), "/onNoMatch");
    }
}
