//! One engine for both kinds of listener: "which chain takes this connection", asked the same
//! way whether the listener selects with its filter-chain index ([`MatchGraph`]) or with the
//! unified `filter_chain_matcher` ([`super::matcher`]).
//!
//! Envoy uses exactly one of the two per listener: with a `filter_chain_matcher` it ignores every
//! `filter_chain_match` (envoy-matching.md §3). [`ListenerMatch::build`] decides which, once,
//! and [`ListenerMatch::select`] answers with the same [`Selection`] for both, so `xdsck trace`
//! and the checks never branch on the kind of listener themselves.

use super::MatchGraph;
use super::key::Level;
use super::matcher::{MatcherStep, NeedsInput};
use super::trace::{Connection, Outcome, Trace};
use crate::model::matcher::{FilterChainMatcher, MatchInput};
use crate::model::{FilterChain, Listener};
use crate::source::{Pointer, join_field};

/// How one listener picks a filter chain.
#[derive(Debug)]
pub struct ListenerMatch<'l, 'a> {
    /// The index Envoy builds from `filter_chain_match`; empty when the matcher selects (Envoy
    /// builds none then), so the checks about the index find nothing to say.
    graph: MatchGraph<'l, 'a>,
    /// The listener's `filter_chain_matcher`, when it has one: it alone selects.
    matcher: Option<&'l FilterChainMatcher>,
}

/// Which engine a listener's connections go through.
#[derive(Debug, Clone, Copy)]
pub enum Engine<'g, 'l, 'a> {
    /// The filter-chain index (legacy `filter_chain_match`).
    Index(&'g MatchGraph<'l, 'a>),
    /// The unified matcher.
    Matcher(&'l FilterChainMatcher),
}

/// Where a connection lands and how it got there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The outcome; for the index also its level-by-level steps and its path through the graph
    /// (both empty for a matcher, whose decisions are [`Self::matcher_steps`]).
    pub trace: Trace,
    /// The matcher's decisions, in order, each with the place in the matcher it took.
    pub matcher_steps: Vec<MatcherStep>,
    /// What a person should know about the answer (Envoy rejects the listener, the question
    /// left out an attribute, an action names a missing chain), in the order it happened.
    pub notes: Vec<String>,
}

/// Why a listener's selection cannot be modelled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// The matcher has something xdsck does not model (an input or extension it does not know,
    /// or a ServerNameMatcher Envoy rejects); the text says what.
    #[error("{0}")]
    Unmodelled(String),
}

impl<'l, 'a> ListenerMatch<'l, 'a> {
    /// Builds what Envoy builds for the listener: its index, or nothing but the matcher.
    pub fn build(listener: &'l Listener<'a>) -> Self {
        ListenerMatch { graph: MatchGraph::build(listener), matcher: listener.filter_chain_matcher.as_deref() }
    }

    /// The listener this was built from, whichever way it selects chains.
    pub fn listener(&self) -> &'l Listener<'a> {
        self.graph.listener
    }

    /// The engine that selects.
    pub fn engine(&self) -> Engine<'_, 'l, 'a> {
        match self.matcher {
            Some(m) => Engine::Matcher(m),
            None => Engine::Index(&self.graph),
        }
    }

    /// The filter-chain index; empty for a listener that selects with its matcher.
    pub fn graph(&self) -> &MatchGraph<'l, 'a> {
        &self.graph
    }

    /// The `filter_chain_matcher`, when it is what selects.
    pub fn matcher(&self) -> Option<&'l FilterChainMatcher> {
        self.matcher
    }

    /// Whether Envoy rejects the listener for what its index holds (overlapping or repeated
    /// matches, values Envoy refuses). Always `false` for a matcher, which has no index.
    pub fn index_rejected(&self) -> bool {
        self.matcher.is_none() && (!self.graph.overlaps.is_empty() || self.graph.excluded.iter().any(Option::is_some))
    }

    /// Where Envoy sends `c`.
    pub fn select(&self, c: &Connection) -> Result<Selection, SelectError> {
        match self.engine() {
            Engine::Index(graph) => Ok(self.select_index(graph, c)),
            Engine::Matcher(m) => self.select_matcher(m, c),
        }
    }

    /// Where the connection goes, without the explanation: the index's hash probes
    /// ([`MatchGraph::reach`]) instead of a trace that looks at every key, for callers that ask
    /// once per cell of a 40k-chain listener (`xdsck diff`).
    pub fn outcome(&self, c: &Connection) -> Result<Outcome, SelectError> {
        match self.engine() {
            Engine::Index(graph) => Ok(graph.reach(c, None).outcome),
            Engine::Matcher(m) => self.select_matcher(m, c).map(|s| s.trace.outcome),
        }
    }

    fn select_index(&self, graph: &MatchGraph<'_, '_>, c: &Connection) -> Selection {
        let mut notes = Vec::new();
        if self.index_rejected() {
            notes.push(
                "Envoy rejects this listener (see `xdsck check`): this is where the connection would go if it did not"
                    .to_owned(),
            );
        }
        let trace = graph.trace(c);
        if let Outcome::NeedsInput(level) = trace.outcome {
            notes
                .push(format!("the listener matches on {}: give --src (and --direct-src) to trace it", level.as_str()));
        }
        Selection { trace, matcher_steps: Vec::new(), notes }
    }

    fn select_matcher(&self, m: &FilterChainMatcher, c: &Connection) -> Result<Selection, SelectError> {
        let listener = self.listener();
        let tree = m.tree.as_ref().map_err(|why| SelectError::Unmodelled(why.clone()))?;
        if let Some(why) = tree.rejection() {
            return Err(SelectError::Unmodelled(why));
        }
        let mut notes = Vec::new();
        let mut matcher_steps = Vec::new();
        let outcome = match tree.evaluate_traced(c) {
            Err(NeedsInput(i)) => {
                notes.push(format!(
                    "the listener's filter_chain_matcher reads {}: give --src (and --direct-src) to trace it",
                    i.as_str()
                ));
                Outcome::NeedsInput(level_of(i))
            }
            Ok(eval) => {
                notes.extend(eval.steps.iter().map(|s| format!("matcher: {s}")));
                // The steps' places, from the document's root: the listener's matcher, then the node.
                let base = join_field(&listener.pointer, listener.casing, "filter_chain_matcher");
                matcher_steps = eval
                    .steps
                    .into_iter()
                    .map(|s| MatcherStep { at: Pointer::from(format!("{base}{}", s.at)), ..s })
                    .collect();
                match eval.action {
                    Some(name) => match listener.filter_chains.iter().position(|c| c.name == name) {
                        Some(i) => Outcome::Chain(i),
                        None => {
                            notes.push(format!(
                                "the matcher's action names filter chain '{name}', which the listener does not have: Envoy closes the connection (it does not use default_filter_chain)"
                            ));
                            Outcome::Closed
                        }
                    },
                    None => {
                        notes.push("the matcher does not match: Envoy uses default_filter_chain, if any".to_owned());
                        if listener.default_filter_chain.is_some() { Outcome::Default } else { Outcome::Closed }
                    }
                }
            }
        };
        Ok(Selection { trace: Trace { steps: Vec::new(), outcome, path: Vec::new() }, matcher_steps, notes })
    }

    /// The chain an outcome names: a listed chain, the default chain, or none (closed,
    /// undecided).
    pub fn chain(&self, outcome: Outcome) -> Option<&'l FilterChain<'a>> {
        let listener = self.listener();
        match outcome {
            Outcome::Chain(i) => listener.filter_chains.get(i),
            Outcome::Default => listener.default_filter_chain.as_deref(),
            Outcome::Closed | Outcome::NeedsInput(_) => None,
        }
    }
}

/// The index level that reads the same attribute as a matcher input, for an undecided answer:
/// only the inputs a question may leave out (the source's) can leave it undecided.
fn level_of(input: MatchInput) -> Level {
    match input {
        MatchInput::SourcePort => Level::SourcePort,
        MatchInput::DirectSourceIp => Level::DirectSourceIp,
        MatchInput::SourceType => Level::SourceType,
        _ => Level::SourceIp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;
    use crate::source::{SourceFile, SourceId};

    fn conn(sni: &str, source: Option<&str>) -> Connection {
        Connection {
            destination: Some("10.0.0.1:443".parse().unwrap()),
            source: source.map(|s| s.parse().unwrap()),
            direct_source: None,
            transport_protocol: "tls".to_owned(),
            server_name: sni.to_owned(),
            application_protocols: Vec::new(),
        }
    }

    /// Loads one listener and answers `c` for it, by chain name.
    fn answer(yaml: &str, c: &Connection) -> Result<(Option<String>, Selection), SelectError> {
        let file = SourceFile::new("t.yaml", yaml);
        let document = load::Document::new(SourceId(0), &file);
        let input = document.load().expect("test listener loads");
        let m = ListenerMatch::build(&input.listeners[0]);
        let s = m.select(c)?;
        Ok((m.chain(s.trace.outcome).map(|c| c.name.to_string()), s))
    }

    const HEAD: &str = "name: l\naddress: {socket_address: {address: 10.0.0.1, port_value: 443}}\n";

    const INDEX: &str = "filter_chains:
- {name: a, filter_chain_match: {server_names: [a.example.com]}}
- {name: src, filter_chain_match: {server_names: [s.example.com], source_prefix_ranges: [{address_prefix: 192.0.2.0, prefix_len: 24}]}}
default_filter_chain: {name: d}
";

    const MATCHER: &str = "filter_chains: [{name: a}, {name: src}]
default_filter_chain: {name: d}
filter_chain_matcher:
  matcher_tree:
    input: {name: sni, typed_config: {'@type': type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.ServerNameInput}}
    exact_match_map:
      map:
        a.example.com: {action: {name: a, typed_config: {'@type': type.googleapis.com/google.protobuf.StringValue, value: a}}}
        gone.example.com: {action: {name: g, typed_config: {'@type': type.googleapis.com/google.protobuf.StringValue, value: gone}}}
        s.example.com:
          matcher:
            matcher_tree:
              input: {name: ip, typed_config: {'@type': type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.SourceIPInput}}
              exact_match_map: {map: {192.0.2.1: {action: {name: s, typed_config: {'@type': type.googleapis.com/google.protobuf.StringValue, value: src}}}}}
";

    /// The same questions, asked of a listener of each kind that routes the same way, get the
    /// same outcomes through the one interface.
    #[test]
    fn both_engines_answer_the_same_question() {
        for body in [INDEX, MATCHER] {
            let yaml = format!("{HEAD}{body}");
            let chain = |sni: &str, src: Option<&str>| answer(&yaml, &conn(sni, src)).unwrap().0;
            assert_eq!(chain("a.example.com", None).as_deref(), Some("a"), "{body}");
            assert_eq!(chain("s.example.com", Some("192.0.2.1:7")).as_deref(), Some("src"), "{body}");
            assert_eq!(chain("other.example.com", None).as_deref(), Some("d"), "{body}");
            let (_, undecided) = answer(&yaml, &conn("s.example.com", None)).unwrap();
            assert_eq!(undecided.trace.outcome, Outcome::NeedsInput(Level::SourceIp), "{body}");
            assert!(undecided.notes.last().unwrap().contains("give --src"), "{body}");
        }
    }

    #[test]
    fn an_index_answers_with_steps_and_a_path() {
        let (_, s) = answer(&format!("{HEAD}{INDEX}"), &conn("a.example.com", None)).unwrap();
        assert_eq!(s.trace.steps.len(), Level::ALL.len());
        assert!(s.trace.path.len() > 1);
        assert!(s.matcher_steps.is_empty() && s.notes.is_empty());
    }

    #[test]
    fn a_matcher_answers_with_its_steps_and_names_a_missing_chain() {
        let yaml = format!("{HEAD}{MATCHER}");
        let (chain, s) = answer(&yaml, &conn("a.example.com", None)).unwrap();
        assert_eq!(chain.as_deref(), Some("a"));
        assert!(s.trace.steps.is_empty() && s.trace.path.is_empty());
        assert_eq!(s.matcher_steps.len(), 1);
        assert_eq!(
            s.matcher_steps[0].at.as_str(),
            "/filter_chain_matcher/matcher_tree/exact_match_map/map/a.example.com"
        );
        // A nested matcher's steps name its own nodes; a miss below a key names the key again.
        let (_, nested) = answer(&yaml, &conn("s.example.com", Some("192.0.2.2:7"))).unwrap();
        let at: Vec<&str> = nested.matcher_steps.iter().map(|s| s.at.as_str()).collect();
        assert_eq!(
            at,
            [
                "/filter_chain_matcher/matcher_tree/exact_match_map/map/s.example.com",
                "/filter_chain_matcher/matcher_tree/exact_match_map/map/s.example.com/matcher",
                "/filter_chain_matcher/matcher_tree/exact_match_map/map/s.example.com",
            ]
        );
        assert_eq!(
            s.notes,
            ["matcher: ServerNameInput = \"a.example.com\": exact key \"a.example.com\": action \"a\""]
        );
        let (chain, s) = answer(&yaml, &conn("gone.example.com", None)).unwrap();
        assert_eq!((chain, s.trace.outcome), (None, Outcome::Closed));
        assert!(s.notes.last().unwrap().contains("'gone', which the listener does not have"));
    }

    #[test]
    fn an_unmodelled_matcher_is_an_error_and_a_rejected_index_a_note() {
        let unknown = format!(
            "{HEAD}filter_chains: [{{name: a}}]\nfilter_chain_matcher: {{matcher_tree: {{input: {{name: x, typed_config: {{'@type': type.googleapis.com/x.Other}}}}, exact_match_map: {{map: {{}}}}}}}}\n"
        );
        let err = answer(&unknown, &conn("a", None)).unwrap_err();
        assert_eq!(err, SelectError::Unmodelled("input x.Other is not supported".to_owned()));
        let overlapping = format!("{HEAD}filter_chains: [{{name: a}}, {{name: b}}]\n");
        let (chain, s) = answer(&overlapping, &conn("a", None)).unwrap();
        assert_eq!(chain.as_deref(), Some("a"));
        assert!(s.notes[0].starts_with("Envoy rejects this listener"));
    }
}
