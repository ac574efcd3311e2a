//! A long YAML text translated on every core: cut into pieces, each translated on its own, and
//! joined into what the whole text translates to.
//!
//! saphyr reads YAML on one thread at about 100 MB/s; a 30 MB bootstrap or a stream of 10k
//! CiliumEnvoyConfigs spent most of its run there while the other cores waited. Two kinds of
//! cut are made:
//!
//! - a stream of documents, at its `---` lines: saphyr starts a document at every `---` at the
//!   left margin, whatever came before (a plain or block scalar ends there; a quoted scalar or a
//!   flow collection is an error, and the piece that ends inside it fails on its own);
//! - one document, between the items of its longest block sequence (a bootstrap's listeners, a
//!   `kind: List`'s items): a piece is whole items, each starting with `- ` at the sequence's
//!   column with everything else indented deeper, so nothing in an item reaches into the next,
//!   and the text around the sequence, read with one stand-in item in its place, must read that
//!   stand-in as a one-item block sequence (not a block scalar's text, nor a flow's content).
//!
//! Whatever does not fit is translated whole: a piece or the text around that fails to
//! translate, a piece that does not read as its sequence's items, directives, byte-order marks
//! and carriage returns, anchors outside the pieces, and depth or alias budgets that the pieces
//! only overrun together. So an error is always the whole translation's, and a success is
//! byte for byte the whole translation's (the unit tests compare the two).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Doc, Node, Resolution, Translator, YamlJson, alias_byte_budget, u32_of};
use crate::load::Limits;

/// The least piece: below it a piece's own parser and tables cost more than another core
/// saves. Smaller in the unit tests, so that small texts are cut too.
const PIECE_BYTES: usize = if cfg!(test) { 1 << 8 } else { 1 << 18 };

/// The translation of `yaml` made from pieces, or `None` when it is to be translated whole.
pub(super) fn translate(yaml: &str, limits: &Limits, resolution: Resolution) -> Option<YamlJson> {
    // Without the pool (wasm) a piece would only cost more.
    if !cfg!(any(feature = "parallel", test)) || yaml.len() < 2 * PIECE_BYTES || !plain(yaml.as_bytes()) {
        return None;
    }
    let starts = document_starts(yaml.as_bytes());
    if !starts.is_empty() {
        return documents(yaml, &cuts(starts, 0, yaml.len()), limits, resolution);
    }
    sequence(yaml, limits, resolution)
}

/// No directive (`%` at the left margin: it belongs to the document after it, which a cut could
/// part it from), byte-order mark (saphyr accepts one only where a document starts) or carriage
/// return (a line break of its own to saphyr, not to the line scan here).
fn plain(b: &[u8]) -> bool {
    b.first() != Some(&b'%')
        && memchr::memchr(b'\r', b).is_none()
        && memchr::memmem::find(b, b"\n%").is_none()
        && memchr::memmem::find(b, "\u{feff}".as_bytes()).is_none()
}

/// Where the `---` lines after the first byte start.
fn document_starts(b: &[u8]) -> Vec<usize> {
    memchr::memmem::find_iter(b, b"\n---")
        .filter(|&i| matches!(b.get(i + 4), None | Some(b' ' | b'\t' | b'\n')))
        .map(|i| i + 1)
        .collect()
}

/// `start..end` cut at some of `at` (increasing, inside it) into pieces of at least
/// [`PIECE_BYTES`] (the last may be shorter).
fn cuts(at: impl IntoIterator<Item = usize>, start: usize, end: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut from = start;
    for cut in at {
        if cut - from >= PIECE_BYTES && end - cut >= PIECE_BYTES / 2 {
            out.push(from..cut);
            from = cut;
        }
    }
    out.push(from..end);
    out
}

/// What a piece translated to.
struct Piece {
    out: Vec<u8>,
    nodes: Vec<Node>,
    aliases: Vec<(u32, u32)>,
    docs: Vec<Doc>,
    alias_nodes: usize,
    alias_bytes: usize,
    deepest: usize,
    /// The stand-in sequence's node and depth, when one was asked for and found.
    stood_in: Option<(usize, usize)>,
    anchored: bool,
    empty_block_last: bool,
}

/// Translates `text`, a piece of a text `whole_len` bytes long; `stand_in` is where a sequence
/// is to start in it.
fn piece(
    text: &str,
    limits: &Limits,
    resolution: Resolution,
    whole_len: usize,
    stand_in: Option<Range<usize>>,
) -> Option<Piece> {
    let mut t = Translator::new(text, limits, resolution, whole_len);
    t.stand_in = stand_in;
    t.run().ok()?;
    Some(Piece {
        out: t.out,
        nodes: t.nodes,
        aliases: t.aliases,
        docs: t.docs,
        alias_nodes: t.alias_nodes,
        alias_bytes: t.alias_bytes,
        deepest: t.deepest,
        stood_in: t.stood_in,
        anchored: t.anchored,
        empty_block_last: t.empty_block_last,
    })
}

/// Whether what stands at the piece's end (`len`) stands where the whole translation puts it.
/// saphyr places an empty value at the next token, which for a piece's last node lies in the
/// text after the piece: an empty plain value (`null`) is placed by the rules in [`documents`]
/// and [`sequence`]; an empty block scalar (`key: |` with no text) after the blank lines that
/// follow it, which a piece cannot know, so a piece that ends in one, or in anything else at
/// its very end, is not trusted.
fn ends_plainly(p: &Piece, len: usize) -> bool {
    !p.empty_block_last
        && p.nodes.iter().all(|n| {
            let value = n.yaml as usize != len || p.out.get(n.json as usize..).is_some_and(|j| j.starts_with(b"null"));
            let key = n.key_yaml as usize != len || n.key_yaml == n.yaml;
            value && key
        })
}

/// Translates the pieces of `yaml` at `ranges` on every core and gives each to `join` with its
/// index, in order, as soon as it and those before it are done: joining overlaps translating,
/// and a piece is let go once joined. `false` when a piece failed to translate or `join`
/// refused one (the pieces not yet begun are then not translated).
fn translate_in_order(
    yaml: &str,
    ranges: &[Range<usize>],
    limits: &Limits,
    resolution: Resolution,
    stand_in: Option<Range<usize>>,
    mut join: impl FnMut(usize, Piece) -> bool,
) -> bool {
    let failed = AtomicBool::new(false);
    let mut joined = true;
    crate::parallel::pipeline(
        |hand| (0..ranges.len()).for_each(hand),
        |i| {
            if failed.load(Ordering::Relaxed) {
                return None;
            }
            let p = piece(&yaml[ranges[i].clone()], limits, resolution, yaml.len(), stand_in.clone());
            if p.is_none() {
                failed.store(true, Ordering::Relaxed);
            }
            p.map(|p| (i, p))
        },
        |got| {
            if !joined {
                return;
            }
            if !got.is_some_and(|(i, p)| join(i, p)) {
                joined = false;
                failed.store(true, Ordering::Relaxed);
            }
        },
    );
    joined
}

/// What the pieces spent of the budgets the whole translation counts over the whole text.
#[derive(Default)]
struct Spent {
    alias_nodes: usize,
    alias_bytes: usize,
    deepest: usize,
}

impl Spent {
    fn add(&mut self, p: &Piece) {
        self.alias_nodes = self.alias_nodes.saturating_add(p.alias_nodes);
        self.alias_bytes = self.alias_bytes.saturating_add(p.alias_bytes);
        self.deepest = self.deepest.max(p.deepest);
    }

    /// Whether the aliases of all the pieces together stay within what the whole translation
    /// allows (it fails when its count passes the limit).
    fn within(&self, limits: &Limits, whole_len: usize) -> bool {
        self.alias_nodes <= limits.max_alias_nodes && self.alias_bytes <= alias_byte_budget(limits, whole_len)
    }
}

/// `n` moved `json` bytes on in the JSON, its YAML offsets mapped by `yaml`: a piece's node
/// into the whole translation.
fn moved(n: &Node, json: usize, yaml: impl Fn(u32) -> usize) -> Node {
    Node {
        json: u32_of(n.json as usize + json),
        yaml: u32_of(yaml(n.yaml)),
        size: n.size,
        key_json: u32_of(n.key_json as usize + json),
        key_yaml: u32_of(yaml(n.key_yaml)),
    }
}

/// A stream cut between documents: the pieces' documents one after another.
fn documents(yaml: &str, ranges: &[Range<usize>], limits: &Limits, resolution: Resolution) -> Option<YamlJson> {
    if ranges.len() < 2 {
        return None;
    }
    let last = ranges.len() - 1;
    // Only the joined tables are given to it, to finish as the whole translation does.
    let mut t = Translator::new("", limits, resolution, yaml.len());
    t.out.reserve(yaml.len() + yaml.len() / 4);
    let mut spent = Spent::default();
    let joined = translate_in_order(yaml, ranges, limits, resolution, None, |i, p| {
        // An empty value at a piece's end stands at the next piece's `---`, as in the whole;
        // the last piece ends where the whole does.
        if i < last && !ends_plainly(&p, ranges[i].len()) {
            return false;
        }
        spent.add(&p);
        // The comma the whole translation writes before every document but the first.
        let comma = !t.docs.is_empty() && !p.docs.is_empty();
        let json = t.out.len() + usize::from(comma);
        let node_base = t.nodes.len();
        for (k, d) in p.docs.iter().enumerate() {
            let json_before = if k == 0 { t.out.len() } else { d.json_before + json };
            t.docs.push(Doc { json_before, node_start: d.node_start + node_base, empty: d.empty });
        }
        if comma {
            t.out.push(b',');
        }
        t.out.extend_from_slice(&p.out);
        t.nodes.extend(p.nodes.iter().map(|n| moved(n, json, |o| o as usize + ranges[i].start)));
        let base = u32_of(node_base);
        t.aliases.extend(p.aliases.iter().map(|&(a, b)| (a + base, b + base)));
        true
    });
    if !joined || !spent.within(limits, yaml.len()) {
        return None;
    }
    t.finish().ok()
}

/// A block sequence's items: the lines from `start` to `end`, each item starting at its line
/// in `items` with `- ` at `column`.
struct Region {
    start: usize,
    end: usize,
    column: usize,
    items: Vec<usize>,
}

/// The longest run of lines in `within` that reads as a block sequence's items, by indentation
/// alone: it starts at a line `- ` at some column and goes on over blank and comment lines,
/// lines indented deeper, and lines `- ` at the same column, to the first other line. Text that
/// only looks so (a block scalar's lines) is caught when the text around it is read.
fn longest_sequence(b: &[u8], within: Range<usize>) -> Option<Region> {
    fn keep(r: Region, best: &mut Option<Region>) {
        if best.as_ref().is_none_or(|x| r.end - r.start > x.end - x.start) {
            *best = Some(r);
        }
    }
    let mut best: Option<Region> = None;
    let mut cur: Option<Region> = None;
    let mut pos = within.start;
    while pos < within.end {
        let end = memchr::memchr(b'\n', &b[pos..within.end]).map_or(within.end, |i| pos + i);
        let line = &b[pos..end];
        let column = indent(line);
        let rest = &line[column..];
        if !rest.is_empty() && rest[0] != b'#' {
            let item = rest[0] == b'-' && matches!(rest.get(1), None | Some(b' ' | b'\t'));
            match cur.take() {
                Some(mut r) if column > r.column || (column == r.column && item) => {
                    if item && column == r.column {
                        r.items.push(pos);
                    }
                    cur = Some(r);
                }
                Some(mut r) => {
                    r.end = pos;
                    keep(r, &mut best);
                }
                None => {}
            }
            if cur.is_none() && item {
                cur = Some(Region { start: pos, end: within.end, column, items: vec![pos] });
            }
        }
        pos = end + 1;
    }
    if let Some(r) = cur {
        keep(r, &mut best);
    }
    best
}

/// How deep the search for a sequence to cut goes into a sequence of one long item (a
/// bootstrap's one listener, then its filter chains): a bound, so that a text of ever deeper
/// one-item sequences is not scanned once per level.
const DESCENT: usize = 4;

/// The sequence to cut and its pieces: the longest, or when that is one long item, the longest
/// inside it.
fn sequence_to_cut(b: &[u8]) -> Option<(Region, Vec<Range<usize>>)> {
    let mut within = 0..b.len();
    for _ in 0..DESCENT {
        let region = longest_sequence(b, within)?;
        let ranges = cuts(region.items.iter().skip(1).copied(), region.start, region.end);
        if ranges.len() >= 2 {
            return Some((region, ranges));
        }
        // Below the item's first line.
        let first = memchr::memchr(b'\n', &b[region.start..region.end]).map_or(region.end, |i| region.start + i + 1);
        within = first..region.end;
    }
    None
}

/// How many spaces `b` starts with.
fn indent(b: &[u8]) -> usize {
    b.iter().take_while(|&&c| c == b' ').count()
}

/// Where saphyr's token for the item whose `-` is at `dash` stands: after the `-`, the blanks
/// after it and a comment to the end of its line.
fn after_dash(b: &[u8], dash: usize) -> usize {
    let mut i = dash + 1;
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    if b.get(i) == Some(&b'#') {
        i += memchr::memchr(b'\n', &b[i..]).unwrap_or(b.len() - i);
    }
    i
}

/// One document cut between the items of its longest block sequence.
fn sequence(yaml: &str, limits: &Limits, resolution: Resolution) -> Option<YamlJson> {
    let (Region { start, end, column, .. }, ranges) = sequence_to_cut(yaml.as_bytes())?;
    // The text around the sequence, with one item in its place: short beside the sequence,
    // translated first, on this thread.
    let stand_in = format!("{}- 0\n", " ".repeat(column));
    let around = [&yaml[..start], &stand_in, &yaml[end..]].concat();
    let around = piece(&around, limits, resolution, yaml.len(), Some(start + column..start + stand_in.len()))?;
    let (seq, depth) = around.stood_in?;
    let at = around.nodes[seq].json as usize;
    // Anchors around the sequence might name it (now the stand-in) or be named inside it.
    if around.anchored || around.nodes[seq].size != 2 || around.out.get(at..at + 3) != Some(b"[0]") {
        return None;
    }
    let mut out = Vec::with_capacity(yaml.len() + yaml.len() / 4);
    out.extend_from_slice(&around.out[..at + 1]);
    let mut nodes: Vec<Node> = around.nodes[..=seq].to_vec();
    // saphyr places a sequence at its first `-`, unless it is written at its key's column:
    // then after that `-` and what follows it on its line, which differs from the stand-in's.
    let dash = start + column;
    match nodes[seq].yaml as usize {
        y if y == dash => {}
        y if y == dash + 2 => nodes[seq].yaml = u32_of(after_dash(yaml.as_bytes(), dash)),
        _ => return None,
    }
    let mut aliases = Vec::new();
    let mut spent = Spent::default();
    // A piece's sequence is its root, at its first `-`.
    let joined = translate_in_order(yaml, &ranges, limits, resolution, Some(column..column + 1), |i, p| {
        let range = &ranges[i];
        // Each piece is items of the sequence, and only those: one document, a sequence at
        // its first line's `- `.
        if p.docs.len() != 1
            || p.stood_in != Some((0, 0))
            || p.nodes[0].size as usize != p.nodes.len()
            || !ends_plainly(&p, range.len())
        {
            return false;
        }
        spent.add(&p);
        if i > 0 {
            out.push(b',');
        }
        // A piece's JSON is `[items]`: its items go in, its brackets and root node do not.
        let json = out.len() - 1;
        out.extend_from_slice(&p.out[1..p.out.len() - 1]);
        let base = u32_of(nodes.len()) - 1;
        // An empty value (`key:` or `-` with nothing after it) stands where saphyr finds the
        // next token: in the piece at its end; in the whole at the next item's `-` (where the
        // containers in the item end), after that `-` and the blanks and comment behind it for
        // an empty item of the sequence itself, or at the first token after the sequence.
        let last = i + 1 == ranges.len();
        let next_dash = ranges.get(i + 1).map_or(0, |r| r.start + column);
        let after = if last { end + indent(&yaml.as_bytes()[end..]) } else { next_dash };
        let after_item = if last { after } else { after_dash(yaml.as_bytes(), next_dash) };
        let mut item = 1;
        for (k, n) in p.nodes.iter().enumerate().skip(1) {
            let next = if k == item { after_item } else { after };
            if k == item {
                item += n.size.max(1) as usize;
            }
            nodes.push(moved(n, json, |o| if o as usize == range.len() { next } else { o as usize + range.start }));
        }
        aliases.extend(p.aliases.iter().map(|&(a, b)| (a + base, b + base)));
        true
    });
    // As deep in the whole as the stand-in stands.
    if !joined || !spent.within(limits, yaml.len()) || depth + spent.deepest >= limits.max_depth {
        return None;
    }
    out.push(b']');
    // The items' nodes replace the stand-in's one item.
    let added = nodes.len() - seq - 1;
    let json_delta = out.len() - (at + 3);
    out.extend_from_slice(&around.out[at + 3..]);
    let yaml_delta = (end - start) - stand_in.len();
    let after = start + stand_in.len();
    nodes.extend(
        around.nodes[seq + 2..]
            .iter()
            .map(|n| moved(n, json_delta, |o| if o as usize >= after { o as usize + yaml_delta } else { o as usize })),
    );
    // The sequence and the containers around it hold the items instead of the stand-in.
    for (i, n) in nodes[..=seq].iter_mut().enumerate() {
        if i + n.size as usize > seq {
            n.size = u32_of(n.size as usize + added - 1);
        }
    }
    let docs = around
        .docs
        .iter()
        .map(|d| Doc {
            json_before: if d.json_before > at { d.json_before + json_delta } else { d.json_before },
            node_start: if d.node_start > seq { d.node_start + added - 1 } else { d.node_start },
            empty: d.empty,
        })
        .collect();
    let mut t = Translator::new("", limits, resolution, yaml.len());
    (t.out, t.nodes, t.aliases, t.docs) = (out, nodes, aliases, docs);
    t.finish().ok()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What a translation made, comparable.
    type Made = (String, Vec<(u32, u32, u32, u32, u32)>, Vec<(u32, u32)>, bool);

    fn made(y: &YamlJson) -> Made {
        let nodes = y.nodes.iter().map(|n| (n.json, n.yaml, n.size, n.key_json, n.key_yaml)).collect();
        (y.json.clone(), nodes, y.aliases.clone(), y.stream)
    }

    /// The translation in pieces, when made, checked against the whole one.
    fn apart_is_whole(yaml: &str) -> bool {
        let limits = Limits::default();
        let resolution = Resolution::of(yaml);
        let Some(apart) = translate(yaml, &limits, resolution) else { return false };
        match super::super::whole(yaml, &limits, resolution) {
            Ok(whole) => {
                let (a, w) = (made(&apart), made(&whole));
                if a != w {
                    let json_at = a.0.bytes().zip(w.0.bytes()).position(|(x, y)| x != y);
                    let node_at = a.1.iter().zip(&w.1).position(|(x, y)| x != y);
                    let node = node_at.map(|i| (a.1[i], w.1[i]));
                    panic!(
                        "json from {json_at:?} (lengths {} {}), node {node_at:?} {node:?} of {} {}, aliases {:?} {:?}, stream {} {}\n{yaml}",
                        a.0.len(),
                        w.0.len(),
                        a.1.len(),
                        w.1.len(),
                        a.2,
                        w.2,
                        a.3,
                        w.3
                    );
                }
            }
            Err(e) => panic!("translated in pieces, but whole: {e:?}\n{yaml}"),
        }
        true
    }

    fn listener(i: usize, column: usize) -> String {
        let pad = " ".repeat(column);
        format!(
            "{pad}- name: l{i}\n{pad}  # a comment\n{pad}  address: {{socket_address: {{address: 10.0.0.{i}, port_value: 443}}}}\n\
             {pad}  filter_chains:\n{pad}  - filters:\n{pad}    - name: tcp\n{pad}      note: |\n{pad}        - not an item\n\
             {pad}        ---\n\n{pad}  stat_prefix: \"s{i}\"\n"
        )
    }

    #[test]
    fn a_bootstrap_is_cut_between_its_listeners() {
        for column in [0, 2, 4] {
            let key = if column == 0 {
                "listeners:\n".to_string()
            } else {
                format!("{}listeners:\n", " ".repeat(column - 2))
            };
            let head = if column == 0 { String::new() } else { "node: {id: x}\nstatic_resources:\n".to_string() };
            let items: String = (0..40).map(|i| listener(i, column)).collect();
            let yaml = format!("{head}{key}{items}{}clusters: []\n", " ".repeat(column.saturating_sub(2)));
            assert!(apart_is_whole(&yaml), "not cut: {yaml}");
        }
    }

    #[test]
    fn a_long_item_is_cut_between_the_items_of_its_own_sequence() {
        let chains: String = (0..100).map(|i| format!("    - name: c{i}\n      filters: []\n")).collect();
        assert!(apart_is_whole(&format!(
            "listeners:\n- name: one\n  filter_chains:\n{chains}  after: 1\nclusters: []\n"
        )));
    }

    #[test]
    fn a_stream_is_cut_between_its_documents() {
        let docs: String = (0..40).map(|i| format!("---\nkind: Doc\nname: d{i}\nlist:\n- a\n- {i}\n...\n")).collect();
        assert!(apart_is_whole(&format!("# head\n{docs}---\n")));
        let with_empty: String = (0..40).map(|i| format!("a: {i}\nb: |\n  text\n---\n---\n")).collect();
        assert!(apart_is_whole(&with_empty));
    }

    #[test]
    fn a_piece_that_ends_in_an_empty_block_scalar_is_translated_whole() {
        let items: String = (0..200).map(|i| format!("- k: {i}\n  b: |\n")).collect();
        assert!(!apart_is_whole(&format!("list:\n{items}")));
        let docs: String = (0..200).map(|i| format!("---\nk: {i}\nb: |\n")).collect();
        assert!(!apart_is_whole(&docs));
    }

    #[test]
    fn what_only_looks_like_items_is_translated_whole() {
        // The longest run of `- ` lines is a block scalar's text.
        let lines: String = (0..200).map(|i| format!("  - line {i}\n")).collect();
        assert!(!apart_is_whole(&format!("a: 1\nscript: |\n{lines}b: 2\n")));
        // An anchor before the sequence may be aliased inside it.
        let items: String = (0..100).map(|i| format!("- x: *a\n  i: {i}\n")).collect();
        assert!(!apart_is_whole(&format!("top: &a 1\nlist:\n{items}")));
        // Anchors named inside their item are fine; an item's anchor named by a later item is
        // not (a piece does not know it).
        let items: String = (0..100).map(|i| format!("- [&i{i} x, *i{i}]\n")).collect();
        assert!(apart_is_whole(&format!("list:\n{items}")));
        let items: String = (0..100).map(|i| format!("- &i{i} x\n- {{y: {i}}}\n")).collect();
        assert!(!apart_is_whole(&format!("list:\n{items}- *i0\n")));
    }

    /// Items to build sequences from, `{p}` their column: every scalar style over several lines,
    /// flows over several lines, nested sequences, anchors named inside their item, comments
    /// and blank lines between items.
    const ITEMS: &[&str] = &[
        "{p}- plain item",
        "{p}- name: x\n{p}  value: 1",
        "{p}- block: |\n{p}    - not an item\n{p}    ---\n{p}    # text\n\n{p}  after: 1",
        "{p}- folded: >\n{p}   a\n\n{p}   b",
        "{p}- quoted: \"a\n{p}   b\"",
        "{p}- 'k': \"a\n\n{p}   b\"",
        "{p}- single: 'a\n{p}   - b'",
        "{p}- flow: [a,\n{p}   b]",
        "{p}- flow: {a: 1,\n{p}   b: [2,\n{p}   3]}",
        "{p}- nested:\n{p}  - a\n{p}  - b: [1]",
        "{p}- pair: [&a x, *a]",
        "{p}- &m\n{p}  k: v\n{p}  again: 1",
        "# comment at the margin",
        "{p}  # comment inside",
        "",
        "{p}- - a\n{p}  - b",
        "{p}-\n{p}  k: v",
        "{p}- plain that\n{p}  continues",
        "{p}- \"str\": 1\n{p}  'k': 2",
        "{p}- k: |\n{p}      x\n\n{p}      y",
        "{p}- k: !!str 1",
        "{p}- |\n{p}  - text\n{p}  ---",
        "{p}- >-\n\n{p}  folded",
        "{p}-",
        "{p}- # an empty item",
        "{p}-   ",
        "{p}- k:",
        "{p}- k: # empty\n{p}  # more",
        "{p}- - ",
        "{p}- |",
        "{p}- k: >-",
        "{p}- k: |\n\n",
        "{p}- - |",
        "{p}- k: |+\n{p}    x\n\n",
        "{p}- k: |2\n{p}     x",
        "{p}- k: >\n{p}    x\n{p}  # c",
        "{p}- k: |-\n\n{p}    x\n\n\n",
        "{p}- k: # c\n\n",
        "{p}- ? k\n{p}  : v",
    ];

    /// Lines that break a sequence, or the way a text may be cut.
    const BREAKERS: &[&str] = &[
        "---",
        "...",
        "--- |",
        "x: 1",
        "{p} - misaligned",
        "{p}\tk: v",
        "%TAG ! tag:x,2000:",
        "{p}- *a",
        "{p}  ? complex",
        "{p}- \"open",
        "{p}- [open",
        "- at the margin",
        "\u{feff}- bom",
        "{p}- quoted: \"a\nb\"",
        "{p}- flow: [a,\n{p} b]",
        "{p}- k: |\n{p}      x\n{p}    y",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Random sequences and streams of those items, now and then broken: whenever they are
        /// translated in pieces, the translation is the whole one's.
        #[test]
        fn pieces_translate_as_the_whole(
            picks in proptest::collection::vec((0..ITEMS.len(), proptest::option::weighted(0.003, 0..BREAKERS.len())), 1..400),
            column in 0usize..3,
            head in 0usize..6,
            stream in proptest::bool::weighted(0.2),
        ) {
            // The last head makes the sequence one long item's own.
            let p = " ".repeat(column * 2 + if head == 5 { 2 } else { 0 });
            let heads = ["", "a: 1\nlist:\n", "top:\n  list:\n", "---\n", "top:\n  list: &s\n", "- one: 1\n  list:\n"];
            let mut yaml = heads[head].to_string();
            for (n, (item, breaker)) in picks.into_iter().enumerate() {
                if stream && n % 7 == 6 {
                    yaml.push_str(["---\n", "...\n---\n", "--- # c\n", "---\n---\n"][n % 4]);
                }
                for text in std::iter::once(ITEMS[item]).chain(breaker.map(|b| BREAKERS[b])) {
                    yaml.push_str(&text.replace("{p}", &p));
                    yaml.push('\n');
                }
            }
            // About half of them are cut (the rest break somewhere, or are short).
            apart_is_whole(&yaml);
        }
    }

    #[test]
    fn every_item_shape_is_cut() {
        // (An empty block scalar at a piece's end is not trusted: see `ends_plainly`.)
        let empty_block = |s: &&&str| s.ends_with('|') || s.ends_with("|\n\n") || s.ends_with(">-");
        for shape in ITEMS.iter().filter(|s| s.contains("{p}-")).filter(|s| !empty_block(s)) {
            for (head, p) in [("a: 1\nlist:\n", ""), ("top:\n  list:\n", "  "), ("top:\n  list:\n", "    ")] {
                let items: String = (0..400).map(|_| format!("{}\n", shape.replace("{p}", p))).collect();
                assert!(apart_is_whole(&format!("{head}{items}end: 1\n")), "{shape:?} at {p:?}");
            }
        }
    }
}
