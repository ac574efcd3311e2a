//! The page's view of an input: every listener with its chains, their matches, route tables
//! and which wildcard covers each server name, as compact JSON (`summary` of the wasm module).
//! Written straight from borrowing structs: a tenant-scale dump has 100k+ chains, and a
//! `serde_json::Value` tree of them, pretty-printed, cost the 100 MB dump's check in the page
//! ~560 MiB of wasm memory and ~30 s.

use std::borrow::Cow;
use std::cell::Cell;
use std::io::Write;

use serde::Serialize;

use crate::model::route::{HcmRoutes, RouteTables};
use crate::model::{CidrRange, FilterChain, FilterChainMatch, Snapshot, Text};
use crate::source::Sources;

/// The summary of a loaded snapshot: `{"version": 1, "inputs": [{source, kind, listeners}]}`.
pub fn json(snapshot: &Snapshot<'_>, sources: &Sources) -> String {
    let mut out = Vec::new();
    write(snapshot, sources, &mut out).expect("writing into memory does not fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// [`json`], written as it is made: only the chain being written and its listener's wildcard
/// coverage are held, not the summaries of a tenant-scale dump's 132k chains (in the page, tens
/// of megabytes of wasm memory that never shrinks). The objects around the listeners are
/// written here, compact as serde_json writes them:
/// `{"version":1,"inputs":[{"source":…,"kind":…,"listeners":[…]}]}`.
pub fn write(snapshot: &Snapshot<'_>, sources: &Sources, out: &mut dyn Write) -> std::io::Result<()> {
    // Every HCM, with or without its table in this input: the view says which RDS names the
    // input does not hold, as the trace does.
    let routes = RouteTables::of(snapshot);
    let line = |offset: Option<usize>, id| offset.map(|o| sources.get(id).line_column(o).line);
    let no_match = FilterChainMatch::default();
    // serde_json writes a token at a time: buffered here rather than each a call through `dyn`.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    out.write_all(br#"{"version":1,"inputs":["#)?;
    for (i, input) in snapshot.inputs.iter().enumerate() {
        let file = sources.get(input.source);
        let text = input.locator(file);
        // `InputSummary` with its listeners written one by one.
        out.write_all(if i == 0 { b"{" } else { b",{" })?;
        out.write_all(br#""source":"#)?;
        serde_json::to_writer(&mut out, file.name())?;
        out.write_all(br#","kind":"#)?;
        serde_json::to_writer(&mut out, input.kind.as_str())?;
        out.write_all(br#","listeners":["#)?;
        for (j, l) in input.listeners.iter().enumerate() {
            let all = || {
                l.filter_chains.iter().map(|c| (c, false)).chain(l.default_filter_chain.as_deref().map(|c| (c, true)))
            };
            let server_names =
                |c: &'_ FilterChain<'_>| c.filter_chain_match.as_ref().map_or(0, |m| m.server_names.len());
            // Which wildcard covers each server name: core's answer, handed out per chain
            // in the order of its names (the page holds no Envoy rule of its own).
            let names: Vec<&str> = all()
                .flat_map(|(c, _)| c.filter_chain_match.as_ref().unwrap_or(&no_match).server_names.iter())
                .map(|n| &**n)
                .collect();
            let covering = crate::chain_match::key::covering_wildcards(&names);
            drop(names);
            let mut first_name = 0;
            // Each chain's summary is made as it is written: a tenant gateway's one listener
            // has 100k+ chains.
            let chains = Lazily(Cell::new(Some(all().map(|(c, default)| {
                let at = line(l.chain_location(input.source, text, c).offset, input.source);
                let mut summary = ChainSummary::new(c, default, at, &no_match);
                summary.route_tables = route_tables(&routes, c);
                let covered = &covering[first_name..first_name + server_names(c)];
                first_name += covered.len();
                if covered.iter().any(Option::is_some) {
                    summary.covered_by = covered.to_vec();
                }
                summary
            }))));
            let listener = ListenerSummary {
                name: &l.name,
                display_name: l.display_name(),
                state: l.state.as_str(),
                address: l.envoy_address_list(),
                line: line(l.location(input.source, text).offset, input.source),
                listener_filters: l.listener_filters.iter().map(|f| &*f.name).collect(),
                filter_chain_matcher: l.filter_chain_matcher.is_some(),
                chains,
            };
            if j > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut out, &listener)?;
        }
        out.write_all(b"]}")?;
    }
    out.write_all(b"]}\n")?;
    out.flush()
}

/// A list serialized from an iterator, once: its items are made as they are written.
struct Lazily<I>(Cell<Option<I>>);

impl<I: Iterator<Item: Serialize>> Serialize for Lazily<I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.take().expect("serialized once"))
    }
}

#[derive(Serialize)]
#[serde(bound = "")]
struct ListenerSummary<'a, C: Iterator<Item = ChainSummary<'a>>> {
    /// What a trace selects the listener by.
    name: &'a str,
    /// What findings and the page call it (`listeners[2]` for an unnamed one).
    display_name: Cow<'a, str>,
    state: &'a str,
    address: String,
    line: Option<usize>,
    listener_filters: Vec<&'a str>,
    filter_chain_matcher: bool,
    chains: Lazily<C>,
}

#[derive(Serialize)]
struct ChainSummary<'a> {
    name: Cow<'a, str>,
    default: bool,
    line: Option<usize>,
    terminates_tls: bool,
    tcp_proxy: bool,
    filters: Vec<&'a str>,
    r#match: MatchSummary<'a>,
    /// One per HCM of the chain; absent for a chain with none, which keeps a tenant-scale dump
    /// of TCP chains as small as before.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    route_tables: Vec<RouteTableSummary<'a>>,
    /// For each of `match.server_names`, the wildcard server name of the listener that covers
    /// it; absent when none is covered (a tenant-scale dump stays as small as it was).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    covered_by: Vec<Option<&'a str>>,
}

/// The route table one HCM uses, as the listener view shows it.
#[derive(Serialize)]
struct RouteTableSummary<'a> {
    /// The table's name (an RDS name as the HCM gives it); `None` for an unnamed inline table.
    route_config: Option<&'a str>,
    /// `inline`, `rds`, or `scoped`/`none` for an HCM without a table xdsck reads.
    source: &'static str,
    /// Whether the run holds the table (an inline table always; an RDS one when given).
    found: bool,
    virtual_hosts: Vec<VirtualHostSummary<'a>>,
}

#[derive(Serialize)]
struct VirtualHostSummary<'a> {
    name: &'a str,
    domains: &'a [std::borrow::Cow<'a, str>],
    routes: usize,
}

/// The route tables of one chain's HCMs, from the core's route reading.
fn route_tables<'a>(routes: &RouteTables<'a, 'a>, chain: &'a FilterChain<'a>) -> Vec<RouteTableSummary<'a>> {
    RouteTables::hcms_of_chain(chain)
        .map(|hcm| {
            let table = routes.table_of(0, hcm);
            let (route_config, kind) = match &hcm.routes {
                HcmRoutes::Inline(_) => (table.and_then(|t| t.name.as_deref()), "inline"),
                HcmRoutes::Rds(name) => (Some(&**name), "rds"),
                HcmRoutes::Scoped => (None, "scoped"),
                HcmRoutes::None => (None, "none"),
            };
            RouteTableSummary {
                route_config,
                source: kind,
                found: table.is_some(),
                virtual_hosts: table
                    .into_iter()
                    .flat_map(|t| &t.virtual_hosts)
                    .map(|v| VirtualHostSummary { name: &v.name, domains: &v.domains, routes: v.routes.len() })
                    .collect(),
            }
        })
        .collect()
}

impl<'a> ChainSummary<'a> {
    fn new(c: &'a FilterChain<'a>, default: bool, line: Option<usize>, no_match: &'a FilterChainMatch<'a>) -> Self {
        let m = c.filter_chain_match.as_ref().unwrap_or(no_match);
        ChainSummary {
            name: c.display_name(),
            default,
            line,
            terminates_tls: c.terminates_tls(),
            tcp_proxy: c.is_tcp_proxy(),
            filters: c.filters.iter().map(|f| &*f.name).collect(),
            route_tables: Vec::new(),
            covered_by: Vec::new(),
            r#match: MatchSummary {
                destination_port: m.destination_port,
                prefix_ranges: cidrs(m.prefix_ranges()),
                server_names: &m.server_names,
                transport_protocol: &m.transport_protocol,
                application_protocols: &m.application_protocols,
                direct_source_prefix_ranges: cidrs(m.direct_source_prefix_ranges()),
                source_type: m.source_type.as_str(),
                source_prefix_ranges: cidrs(m.source_prefix_ranges()),
                source_ports: m.source_ports(),
            },
        }
    }
}

#[derive(Serialize)]
struct MatchSummary<'a> {
    destination_port: Option<u32>,
    prefix_ranges: Vec<String>,
    server_names: &'a [Text<'a>],
    transport_protocol: &'a str,
    application_protocols: &'a [Text<'a>],
    direct_source_prefix_ranges: Vec<String>,
    source_type: &'a str,
    source_prefix_ranges: Vec<String>,
    source_ports: &'a [u32],
}

fn cidrs(ranges: &[CidrRange<'_>]) -> Vec<String> {
    ranges.iter().map(|r| format!("{}/{}", r.address_prefix, r.prefix_len.unwrap_or(0))).collect()
}
