//! The match graph of a listener as Graphviz DOT or Mermaid, for `xdsck graph`.

use std::fmt::Write as _;

use petgraph::visit::EdgeRef;

use super::{MatchGraph, Node};

impl MatchGraph<'_, '_> {
    fn label(&self, node: petgraph::graph::NodeIndex) -> String {
        match &self.graph[node] {
            Node::Root => format!("listener {}", self.listener.name),
            Node::Key { level, key } => format!("{}: {}", level.as_str(), key),
            Node::Chain(c) => format!("chain {}", self.listener.filter_chains[*c].display_name()),
        }
    }

    /// Graphviz DOT, left to right, chains as boxes.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph filter_chains {\n  rankdir=LR;\n  node [shape=ellipse, fontsize=10];\n");
        for n in self.graph.node_indices() {
            let shape = match self.graph[n] {
                Node::Chain(_) => ", shape=box",
                Node::Root => ", shape=doubleoctagon",
                Node::Key { .. } => "",
            };
            let _ = writeln!(out, "  n{} [label={}{}];", n.index(), quote(&self.label(n)), shape);
        }
        for e in self.graph.edge_references() {
            let _ = writeln!(out, "  n{} -> n{};", e.source().index(), e.target().index());
        }
        out.push_str("}\n");
        out
    }

    /// A Mermaid flowchart.
    pub fn to_mermaid(&self) -> String {
        let mut out = String::from("flowchart LR\n");
        for n in self.graph.node_indices() {
            let label = self.label(n).replace('"', "#quot;");
            let _ = match self.graph[n] {
                Node::Chain(_) => writeln!(out, "  n{}[\"{}\"]", n.index(), label),
                _ => writeln!(out, "  n{}([\"{}\"])", n.index(), label),
            };
        }
        for e in self.graph.edge_references() {
            let _ = writeln!(out, "  n{} --> n{}", e.source().index(), e.target().index());
        }
        out
    }
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
