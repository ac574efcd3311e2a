//! `duplicate-filter-chain-match`: two chains of one listener whose `filter_chain_match` is
//! protobuf-equal, which Envoy rejects.

use std::fmt::Write as _;

use crate::chain_match::Excluded;
use crate::checks::{Check, Context, ListenerCx, Reads, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::{CidrRange, FilterChain, FilterChainMatch, SourceType};

declare_rule! {
    pub(crate) static RULE for DuplicateFilterChainMatch = {
        code: "XDS101",
        name: "duplicate-filter-chain-match",
        severity: Severity::Error,
        summary: "Two filter chains of a listener have exactly the same filter_chain_match; Envoy rejects the listener.",
        explanation: "duplicate_filter_chain_match.md",
    }
}

pub(crate) struct DuplicateFilterChainMatch;

fn diagnostic(l: &ListenerCx<'_, '_>, chain: &FilterChain<'_>, first: &FilterChain<'_>, json: &str) -> Diagnostic {
    // Envoy prints the chain names as written, so an unnamed chain shows as ''.
    let envoy = envoy_text::adding_listener(
        l.listener,
        format_args!(
            "filter chain '{}' has the same matching rules defined as '{}'. duplicate matcher is: {json}",
            chain.name, first.name,
        ),
    );
    Diagnostic::new(
        &RULE,
        format!(
            "filter chain '{}' has the same filter_chain_match as '{}'",
            chain.display_name(),
            first.display_name()
        ),
    )
    .at(l.chain_location(chain))
    .listener(l.listener.display_name().into_owned())
    .chain(chain.display_name().into_owned())
    .chain(first.display_name().into_owned())
    .related("the first chain with this match", l.chain_location(first))
    .with_envoy_error(envoy)
    .note("Envoy rejects the whole listener; an update is NACKed and the previous version keeps serving")
}

impl Check for DuplicateFilterChainMatch {
    fn reads(&self) -> Reads {
        Reads::GRAPHS
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            // The match graph already grouped the chains by protobuf equality of their match (as
            // Envoy does before indexing; none with a filter_chain_matcher): only the duplicates
            // it found need Envoy's rendering of the match.
            for (i, excluded) in l.graph().excluded.iter().enumerate() {
                if let Some(Excluded::SameRulesAs(earlier)) = *excluded {
                    let chain = &l.listener.filter_chains[i];
                    let json = envoy_json(chain.filter_chain_match.as_ref());
                    out.push(diagnostic(&l, chain, &l.listener.filter_chains[earlier as usize], &json));
                }
            }
        }
    }
}

/// A `FilterChainMatch` as Envoy prints it after "duplicate matcher is: " (protobuf's JSON
/// printer with proto field names): fields in field-number order, proto3 defaults left out,
/// wrappers as plain numbers, enums by name, no spaces. Verified against envoy 1.40 with every
/// field set.
pub(crate) fn envoy_json(m: Option<&FilterChainMatch<'_>>) -> String {
    let mut out = String::from("{");
    let Some(m) = m else {
        out.push('}');
        return out;
    };
    let mut sep = Sep(false);
    // Field numbers: prefix_ranges 3, address_suffix 4, suffix_len 5, source_prefix_ranges 6,
    // source_ports 7, destination_port 8, transport_protocol 9, application_protocols 10,
    // server_names 11, source_type 12, direct_source_prefix_ranges 13.
    cidrs(&mut out, &mut sep, "prefix_ranges", m.prefix_ranges());
    if let Some(u) = m.unimplemented() {
        if !u.address_suffix.is_empty() {
            sep.key(&mut out, "address_suffix");
            string(&mut out, &u.address_suffix);
        }
        if let Some(n) = u.suffix_len {
            sep.key(&mut out, "suffix_len");
            let _ = write!(out, "{n}");
        }
    }
    cidrs(&mut out, &mut sep, "source_prefix_ranges", m.source_prefix_ranges());
    if !m.source_ports().is_empty() {
        sep.key(&mut out, "source_ports");
        out.push('[');
        for (i, p) in m.source_ports().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{p}");
        }
        out.push(']');
    }
    if let Some(p) = m.destination_port {
        sep.key(&mut out, "destination_port");
        let _ = write!(out, "{p}");
    }
    if !m.transport_protocol.is_empty() {
        sep.key(&mut out, "transport_protocol");
        string(&mut out, &m.transport_protocol);
    }
    strings(&mut out, &mut sep, "application_protocols", &m.application_protocols);
    strings(&mut out, &mut sep, "server_names", &m.server_names);
    if m.source_type != SourceType::Any {
        sep.key(&mut out, "source_type");
        string(&mut out, m.source_type.as_str());
    }
    cidrs(&mut out, &mut sep, "direct_source_prefix_ranges", m.direct_source_prefix_ranges());
    out.push('}');
    out
}

/// Writes `,` before every field but the first.
struct Sep(bool);

impl Sep {
    fn key(&mut self, out: &mut String, key: &str) {
        if self.0 {
            out.push(',');
        }
        self.0 = true;
        out.push('"');
        out.push_str(key);
        out.push_str("\":");
    }
}

fn strings(out: &mut String, sep: &mut Sep, key: &str, values: &[crate::model::Text<'_>]) {
    if values.is_empty() {
        return;
    }
    sep.key(out, key);
    out.push('[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, v);
    }
    out.push(']');
}

fn cidrs(out: &mut String, sep: &mut Sep, key: &str, ranges: &[CidrRange<'_>]) {
    if ranges.is_empty() {
        return;
    }
    sep.key(out, key);
    out.push('[');
    for (i, r) in ranges.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        let mut inner = Sep(false);
        if !r.address_prefix.is_empty() {
            inner.key(out, "address_prefix");
            string(out, &r.address_prefix);
        }
        if let Some(n) = r.prefix_len {
            inner.key(out, "prefix_len");
            let _ = write!(out, "{n}");
        }
        out.push('}');
    }
    out.push(']');
}

/// A JSON string escaped as protobuf's JSON printer escapes it: the short forms for `\b \t \n
/// \f \r " \\`, `\u00XX` (lower-case hex) for the other C0 and C1 controls, DEL, `<` and `>`
/// (HTML safety), and the invisible format characters; everything else, non-ASCII included,
/// is written as is. Checked against envoy 1.40 on each class.
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c as u32) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn needs_escape(cp: u32) -> bool {
    matches!(
        cp,
        0x00..=0x1f
            | 0x3c
            | 0x3e
            | 0x7f..=0x9f
            | 0xad
            | 0x600..=0x603
            | 0x6dd
            | 0x70f
            | 0x17b4
            | 0x17b5
            | 0x200b..=0x200f
            | 0x2028..=0x202e
            | 0x2060..=0x2064
            | 0x206a..=0x206f
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0xe0001
            | 0xe0020..=0xe007f
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MatchAddresses, OneOrList};
    use thin_vec::thin_vec;

    #[test]
    fn prints_like_envoy() {
        // The expected text is what envoy 1.40 printed for the same match.
        let m = FilterChainMatch {
            destination_port: Some(443),
            source_type: SourceType::External,
            server_names: ["a.example.com".into(), "*.b.example.com".into()].into_iter().collect(),
            transport_protocol: "tls".into(),
            application_protocols: thin_vec!["h2".into(), "http/1.1".into()],
            ..FilterChainMatch::default()
        }
        .with_addresses(MatchAddresses {
            prefix_ranges: thin_vec![
                CidrRange { address_prefix: "10.0.0.0".into(), prefix_len: Some(8) },
                CidrRange { address_prefix: "::".into(), prefix_len: Some(0) },
                CidrRange { address_prefix: "10.1.0.0".into(), prefix_len: None },
            ],
            direct_source_prefix_ranges: thin_vec![CidrRange {
                address_prefix: "192.168.0.0".into(),
                prefix_len: Some(16)
            }],
            source_prefix_ranges: thin_vec![CidrRange { address_prefix: "172.16.0.0".into(), prefix_len: Some(12) }],
            source_ports: thin_vec![1234, 5678],
            unimplemented: None,
        });
        assert_eq!(
            envoy_json(Some(&m)),
            r#"{"prefix_ranges":[{"address_prefix":"10.0.0.0","prefix_len":8},{"address_prefix":"::","prefix_len":0},{"address_prefix":"10.1.0.0"}],"source_prefix_ranges":[{"address_prefix":"172.16.0.0","prefix_len":12}],"source_ports":[1234,5678],"destination_port":443,"transport_protocol":"tls","application_protocols":["h2","http/1.1"],"server_names":["a.example.com","*.b.example.com"],"source_type":"EXTERNAL","direct_source_prefix_ranges":[{"address_prefix":"192.168.0.0","prefix_len":16}]}"#
        );
        assert_eq!(envoy_json(None), "{}");
        assert_eq!(envoy_json(Some(&FilterChainMatch::default())), "{}");
    }

    #[test]
    fn escapes_like_envoy() {
        let name = "\u{8}\t\n\u{b}\u{c}\r\u{1f} &=+/\u{80}\u{9f}\u{a0}\u{ad}\u{600}\u{2028}\u{2029}\u{200b}\u{feff}\u{fff9}\u{1F600}\u{7ff}<>'\"\\é\u{7f}";
        let m = FilterChainMatch { server_names: OneOrList::One(name.into()), ..FilterChainMatch::default() };
        assert_eq!(
            envoy_json(Some(&m)),
            "{\"server_names\":[\"\\b\\t\\n\\u000b\\f\\r\\u001f &=+/\\u0080\\u009f\u{a0}\\u00ad\\u0600\\u2028\\u2029\\u200b\\ufeff\\ufff9\u{1F600}\u{7ff}\\u003c\\u003e'\\\"\\\\é\\u007f\"]}"
        );
    }
}
