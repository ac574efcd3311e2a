//! A listener's filter-chain index drawn as Graphviz DOT, Mermaid or SVG, for `xdsck graph`,
//! `xdsck trace --format svg` and the web page. The engine hands over the tree
//! ([`MatchGraph::nodes`], [`MatchGraph::edges`], [`MatchGraph::children`]); the drawing is
//! here. The SVG is laid out here too (a tree, one column per level) so it needs no Graphviz
//! and no network: the graph is a tree from the listener to its chains.

use std::fmt::Write as _;

use petgraph::graph::NodeIndex;

use crate::chain_match::select::{Engine, ListenerMatch};
use crate::chain_match::{Level, MatchGraph, Node};

fn label(g: &MatchGraph<'_, '_>, node: NodeIndex) -> String {
    match g.node(node) {
        Node::Root => format!("listener {}", g.listener.name),
        Node::Key { level, key } => format!("{}: {}", level.as_str(), key),
        Node::Chain(c) => format!("chain {}", g.listener.filter_chains[c].display_name()),
    }
}

/// Graphviz DOT, left to right, chains as boxes.
pub fn dot(g: &MatchGraph<'_, '_>) -> String {
    let mut out = String::from("digraph filter_chains {\n  rankdir=LR;\n  node [shape=ellipse, fontsize=10];\n");
    for n in g.nodes() {
        let shape = match g.node(n) {
            Node::Chain(_) => ", shape=box",
            Node::Root => ", shape=doubleoctagon",
            Node::Key { .. } => "",
        };
        let _ = writeln!(out, "  n{} [label={}{}];", n.index(), quote(&label(g, n)), shape);
    }
    for (a, b) in g.edges() {
        let _ = writeln!(out, "  n{} -> n{};", a.index(), b.index());
    }
    out.push_str("}\n");
    out
}

/// A Mermaid flowchart.
pub fn mermaid(g: &MatchGraph<'_, '_>) -> String {
    let mut out = String::from("flowchart LR\n");
    for n in g.nodes() {
        let label = label(g, n).replace('"', "#quot;");
        let _ = match g.node(n) {
            Node::Chain(_) => writeln!(out, "  n{}[\"{}\"]", n.index(), label),
            _ => writeln!(out, "  n{}([\"{}\"])", n.index(), label),
        };
    }
    for (a, b) in g.edges() {
        let _ = writeln!(out, "  n{} --> n{}", a.index(), b.index());
    }
    out
}

/// The index a listener selects chains with, as [`svg`]; `None` for a `filter_chain_matcher`
/// (no index to draw) or an index too big to draw.
pub fn listener_svg(matching: &ListenerMatch<'_, '_>, path: &[NodeIndex]) -> Option<String> {
    match matching.engine() {
        Engine::Index(g) => svg(g, path),
        Engine::Matcher(_) => None,
    }
}

/// Graphs with more nodes than this are not drawn: a picture of 40k chains helps nobody, and
/// the DOT output is there for them.
pub const MAX_SVG_NODES: usize = 2000;

const ROW: f64 = 26.0;
const BOX_HEIGHT: f64 = 20.0;
const GAP: f64 = 36.0;
const CHAR: f64 = 6.6;
const MARGIN: f64 = 10.0;
const HEADER: f64 = 24.0;
/// Labels longer than this are cut (with `…`) so one long server name does not widen a column.
const MAX_LABEL: usize = 40;

/// The graph as a standalone SVG document: one column per level (the listener, then
/// destination_port … source_port, then the chains), each node a box, the nodes of `path`
/// (a trace's [`crate::chain_match::trace::Trace::path`]) and the edges between them drawn in colour.
/// `None` when the graph has more than [`MAX_SVG_NODES`] nodes. Styles are attributes, not
/// a stylesheet, so the document shows the same as an `<img>` under a strict CSP.
pub fn svg(g: &MatchGraph<'_, '_>, path: &[NodeIndex]) -> Option<String> {
    if g.node_count() > MAX_SVG_NODES {
        return None;
    }
    // Columns: the root is 0, a key its level's place + 1, the chains the last; a chain
    // whose leaf is above the last level is joined to it across the levels it does not
    // look at (as in Envoy's index: it matches anything there).
    let columns = Level::ALL.len() + 2;
    let column = |n: NodeIndex| match g.node(n) {
        Node::Root => 0,
        Node::Key { level, .. } => Level::ALL.iter().position(|&l| l == level).map_or(0, |i| i + 1),
        Node::Chain(_) => columns - 1,
    };
    let mut col = vec![0usize; g.node_count()];
    let mut row = vec![0f64; g.node_count()];
    let mut labels = vec![String::new(); g.node_count()];
    let mut widths = vec![0f64; columns];
    // Depth first, children in chain order: leaves take the next row, a parent sits level
    // with the middle of its children.
    let mut next_row = 0f64;
    let mut stack = vec![(g.root(), false)];
    while let Some((n, done)) = stack.pop() {
        let children = g.children(n);
        if done {
            let (first, last) = (children.first().map(|c| row[c.index()]), children.last().map(|c| row[c.index()]));
            row[n.index()] = match (first, last) {
                (Some(a), Some(b)) => (a + b) / 2.0,
                _ => row[n.index()],
            };
            continue;
        }
        let c = column(n);
        col[n.index()] = c;
        // The column heading names the level: a key's box shows the key alone.
        let mut label = match g.node(n) {
            Node::Key { key, .. } => key.to_string(),
            _ => label(g, n),
        };
        if label.chars().count() > MAX_LABEL {
            label = label.chars().take(MAX_LABEL - 1).chain(['…']).collect();
        }
        widths[c] = widths[c].max(box_width(&label));
        labels[n.index()] = label;
        if children.is_empty() {
            row[n.index()] = next_row;
            next_row += 1.0;
            continue;
        }
        stack.push((n, true));
        for child in children.into_iter().rev() {
            stack.push((child, false));
        }
    }
    // A used column is at least as wide as its heading.
    let headings: Vec<&str> =
        std::iter::once("listener").chain(Level::ALL.iter().map(|l| l.as_str())).chain(["chain"]).collect();
    for (w, h) in widths.iter_mut().zip(&headings) {
        if *w > 0.0 {
            *w = w.max(h.len() as f64 * CHAR);
        }
    }
    let mut x = vec![0f64; columns];
    let mut at = MARGIN;
    for (i, w) in widths.iter().enumerate() {
        x[i] = at;
        if *w > 0.0 {
            at += w + GAP;
        }
    }
    let width = at - GAP + MARGIN;
    let height = HEADER + next_row.max(1.0) * ROW + MARGIN;
    let y = |n: NodeIndex| HEADER + row[n.index()] * ROW;
    let on_path: std::collections::HashSet<NodeIndex> = path.iter().copied().collect();

    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"monospace\" font-size=\"11\">\n"
    );
    let _ = writeln!(out, "<title>{}</title>", escape(&format!("match graph of listener {}", g.listener.name)));
    // Column headings: the levels, in Envoy's order.
    for (i, h) in headings.iter().enumerate() {
        if widths[i] > 0.0 {
            let _ = writeln!(out, "<text x=\"{:.1}\" y=\"14\" fill=\"#6b7280\">{}</text>", x[i], escape(h));
        }
    }
    for (a, b) in g.edges() {
        // From the right edge of the parent's box to the left edge of the child's.
        let (x1, y1) = (x[col[a.index()]] + box_width(&labels[a.index()]), y(a) + BOX_HEIGHT / 2.0);
        let (x2, y2) = (x[col[b.index()]], y(b) + BOX_HEIGHT / 2.0);
        let mid = (x1 + x2) / 2.0;
        let (stroke, w) =
            if on_path.contains(&a) && on_path.contains(&b) { ("#d97706", 2.5) } else { ("#9ca3af", 1.0) };
        let _ = writeln!(
            out,
            "<path d=\"M{x1:.1} {y1:.1} C{mid:.1} {y1:.1} {mid:.1} {y2:.1} {x2:.1} {y2:.1}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{w}\"/>"
        );
    }
    for n in g.nodes() {
        let (bx, by) = (x[col[n.index()]], y(n));
        let w = box_width(&labels[n.index()]);
        let (fill, stroke) = match (g.node(n), on_path.contains(&n)) {
            (_, true) => ("#fef3c7", "#d97706"),
            (Node::Chain(_), false) => ("#ecfdf5", "#059669"),
            _ => ("#f9fafb", "#9ca3af"),
        };
        let rx = if matches!(g.node(n), Node::Chain(_)) { 2 } else { 9 };
        let path_attr = if on_path.contains(&n) { " data-path=\"1\"" } else { "" };
        let _ = writeln!(
            out,
            "<g{path_attr}><rect x=\"{bx:.1}\" y=\"{by:.1}\" width=\"{w:.1}\" height=\"{BOX_HEIGHT}\" rx=\"{rx}\" fill=\"{fill}\" stroke=\"{stroke}\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#111827\">{}</text></g>",
            bx + 6.0,
            by + 14.0,
            escape(&labels[n.index()])
        );
    }
    out.push_str("</svg>\n");
    Some(out)
}

fn box_width(label: &str) -> f64 {
    label.chars().count() as f64 * CHAR + 12.0
}

/// Text for XML: the five characters that could end it.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
