//! `unrouted-server-name`: a TLS-terminating chain accepts a server name that no virtual host of
//! its own route table takes. The client sends that name as its Host too, and Envoy picks the
//! virtual host by Host alone, so every request for it gets a 404.
//!
//! Decided only where the table is in the input (inline, or the RDS table by name) and has no
//! `vhds`. A Host may carry the listener's port (a client connecting to a port other than the
//! scheme's default sends it), so a name counts as routed when either form reaches a virtual host.

use std::borrow::Cow;
use std::cell::OnceCell;

use rustc_hash::FxHashMap;

use crate::chain_match::key::ascii_lower;
use crate::checks::{Check, Context, ListenerCx, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::route::{Hcm, RouteTable, RouteTables};
use crate::model::{Address, FilterChain, Text};
use crate::routing::{Bucket, DomainIndex, domain_key, port_start, strip_port};
use crate::source::Location;

declare_rule! {
    pub(crate) static RULE for UnroutedServerName = {
        code: "XDS213",
        name: "unrouted-server-name",
        severity: Severity::Warning,
        summary: "A TLS-terminating chain accepts a server name that no virtual host of its route table takes: every request for it gets a 404.",
        explanation: "unrouted_server_name.md",
    }
}

pub(crate) struct UnroutedServerName;

/// The Host forms a client of this chain may send after `name`: none, or the listener's port,
/// each as the HCM leaves it.
fn tails(hcm: &Hcm, table: &RouteTable, port: Option<u16>) -> Vec<String> {
    let mut out = vec![String::new()];
    if let Some(p) = port.filter(|&p| p != 0)
        && !table.ignore_port_in_host_matching
        && strip_port(&format!("x:{p}"), hcm.strip_any_host_port, hcm.strip_matching_host_port, Some(p)).is_none()
    {
        out.push(format!(":{p}"));
    }
    out
}

/// A table's domains as this check asks them: built once per table, however many chains use it
/// (a shared RDS table serves every tenant's chain).
struct Domains {
    index: DomainIndex,
    ends: Ends,
    /// Where the table is, found for its first finding (a walk from the top of its file).
    at: OnceCell<Location>,
}

/// What a wildcard server name asks of a table's domains ([`Ends::reached`]).
struct Ends {
    /// A `*` or a prefix domain: some Host reaches a virtual host whatever the suffix.
    any: bool,
    /// The exact domains, lower-cased, each reversed, sorted: the domains that end with a
    /// suffix are those that start with it reversed, next to one another.
    exact: Vec<Vec<u8>>,
    /// What follows the `*` of the suffix domains, the same way.
    suffix: Vec<Vec<u8>>,
}

impl Ends {
    fn of(table: &RouteTable) -> Self {
        let mut ends = Ends { any: false, exact: Vec::new(), suffix: Vec::new() };
        for d in table.virtual_hosts.iter().flat_map(|vh| &vh.domains) {
            let (bucket, key) = domain_key(d);
            if table.ignore_port_in_host_matching && bucket != Bucket::Default && port_start(&key).is_some() {
                continue;
            }
            let reversed = || key.bytes().rev().collect::<Vec<u8>>();
            match bucket {
                Bucket::Default | Bucket::Prefix => ends.any = true,
                Bucket::Exact => ends.exact.push(reversed()),
                Bucket::Suffix => ends.suffix.push(reversed()),
            }
        }
        ends.exact.sort_unstable();
        ends.suffix.sort_unstable();
        ends
    }

    /// Whether some Host `<at least one character><suffix>` (suffix `.example.com` or
    /// `.example.com:8443`) reaches a virtual host. Any virtual host counts: which one wins does
    /// not matter here. A prefix domain is taken to reach one: a Host `<prefix>a<suffix>` exists.
    fn reached(&self, suffix: &str) -> bool {
        let s: Vec<u8> = suffix.bytes().rev().collect();
        // The first key after `s` in order starts with `s` if any key longer than `s` does.
        let longer = |keys: &[Vec<u8>]| keys.get(keys.partition_point(|k| *k <= s)).is_some_and(|k| k.starts_with(&s));
        let found = |keys: &[Vec<u8>], key: &[u8]| keys.binary_search_by(|k| k.as_slice().cmp(key)).is_ok();
        self.any
            // An exact domain that ends with the suffix and has something before it.
            || longer(&self.exact)
            // A suffix key that ends with the suffix and is longer...
            || longer(&self.suffix)
            // ...or that the suffix ends with (or is).
            || (1..=s.len()).any(|n| found(&self.suffix, &s[..n]))
    }
}

/// Whether a server name (lower-cased) reaches a virtual host of the table.
fn reached(domains: &Domains, table: &RouteTable, name: &str, tails: &[String]) -> bool {
    // The first tail is empty: the name is its own Host, asked without writing it out again.
    fn joined<'h>(head: &'h str, tail: &str) -> Cow<'h, str> {
        match tail {
            "" => Cow::Borrowed(head),
            _ => Cow::Owned(format!("{head}{tail}")),
        }
    }
    match name.strip_prefix('*') {
        Some(rest) => tails.iter().any(|t| domains.ends.reached(&joined(rest, t))),
        None => tails.iter().any(|t| domains.index.domain_for(table, &joined(name, t)).is_some()),
    }
}

fn listener_port(l: &ListenerCx<'_, '_>) -> Option<u16> {
    match &l.listener.address {
        Some(Address::Socket(s)) => s.port_value.and_then(|p| u16::try_from(p).ok()),
        _ => None,
    }
}

fn diagnostic(
    cx: &Context<'_, '_>,
    l: &ListenerCx<'_, '_>,
    chain: &FilterChain<'_>,
    i: usize,
    name: &str,
    table: &RouteTable,
    domains: &Domains,
) -> Diagnostic {
    let at = l.chain_field_location(chain, &["filter_chain_match", "server_names", &i.to_string()]);
    let table_at = domains
        .at
        .get_or_init(|| {
            let text = cx.locator_of(table.source);
            Location::new(table.source, table.pointer.clone(), text.locate_pointer(&table.pointer))
        })
        .clone();
    Diagnostic::new(
        &RULE,
        format!(
            "server name '{name}' of chain '{}' reaches no virtual host of route table '{}': every request for it gets a 404",
            chain.display_name(),
            table.display_name(),
        ),
    )
    .at(at)
    .related("the route table the chain's http_connection_manager uses", table_at)
    .note("Envoy picks the virtual host by the Host header alone, and a client sends the name it connected to")
    .note("add the name (or a wildcard that takes it) to a virtual host's domains, or drop it from server_names")
    .listener(l.listener.display_name().into_owned())
    .chain(chain.display_name().into_owned())
}

impl Check for UnroutedServerName {
    fn reads(&self) -> Reads {
        Reads::ROUTES
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        // A table's domains are indexed once, for the first chain that uses it, and dropped
        // after the last: a shared RDS table is not indexed again for every tenant's chain, and
        // 100k inline tables are not all held at once. By the table's address: a table is in
        // the model once, however many chains use it.
        let mut uses: FxHashMap<*const RouteTable, usize> = FxHashMap::default();
        each_table_of_names(&cx, |_, _, _, _, table| *uses.entry(std::ptr::from_ref(table)).or_default() += 1);
        let mut indexed: FxHashMap<*const RouteTable, Domains> = FxHashMap::default();
        each_table_of_names(&cx, |l, chain, names, hcm, table| {
            let key = std::ptr::from_ref(table);
            let domains = indexed.entry(key).or_insert_with(|| Domains {
                index: DomainIndex::build(table),
                ends: Ends::of(table),
                at: OnceCell::new(),
            });
            let tails = tails(hcm, table, listener_port(l));
            for (i, name) in names.iter().enumerate() {
                let lower = ascii_lower(name);
                // `""` is no server name at all (misleading-server-name says so).
                if !lower.is_empty() && !reached(domains, table, &lower, &tails) {
                    out.push(diagnostic(&cx, l, chain, i, name, table, domains));
                }
            }
            let left = uses.get_mut(&key).expect("counted in the first pass");
            *left -= 1;
            if *left == 0 {
                indexed.remove(&key);
            }
        });
    }
}

/// Calls `f` with each TLS-terminating chain's server names and the route table of each of its
/// HCMs, where the table is in the input and has no `vhds`, in input order. Under a
/// filter_chain_matcher the chains' filter_chain_match is ignored: no server names select them.
fn each_table_of_names<'s>(
    cx: &Context<'s, '_>,
    mut f: impl FnMut(&ListenerCx<'s, '_>, &FilterChain<'_>, &[Text<'_>], &Hcm, &'s RouteTable),
) {
    for l in cx.listeners().filter(|l| l.listener.filter_chain_matcher.is_none()) {
        for chain in &l.listener.filter_chains {
            let Some(m) = chain.filter_chain_match.as_ref().filter(|m| !m.server_names.is_empty()) else {
                continue;
            };
            if !chain.terminates_tls() {
                continue;
            }
            for hcm in RouteTables::hcms_of_chain(chain) {
                if let Some(table) = cx.routes().table_of(l.envoy, hcm).filter(|t| !t.vhds) {
                    f(&l, chain, &m.server_names, hcm, table);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`Ends::reached`] replaces: every domain of the table tried against the suffix.
    fn each_domain(table: &RouteTable, suffix: &str) -> bool {
        table.virtual_hosts.iter().flat_map(|vh| &vh.domains).any(|d| {
            let (bucket, key) = domain_key(d);
            if table.ignore_port_in_host_matching && bucket != Bucket::Default && port_start(&key).is_some() {
                return false;
            }
            match bucket {
                Bucket::Default | Bucket::Prefix => true,
                Bucket::Exact => key.len() > suffix.len() && key.ends_with(suffix),
                Bucket::Suffix => key.ends_with(suffix) || suffix.ends_with(key.as_str()),
            }
        })
    }

    #[test]
    fn wildcard_names_reach_a_table_as_trying_each_domain_would() {
        let mut next = crate::test_support::draws(0x1234_5678_9abc_def1_u64);
        let mut word =
            |max: u64| -> String { (0..=next(max)).map(|_| ['a', 'B', '.', ':'][next(4) as usize]).collect() };
        let (mut reached, mut compared) = (0, 0);
        for round in 0..300 {
            let domains: Vec<String> = (0..12)
                .map(|_| match word(3).len() {
                    1 => format!("*{}", word(5)),
                    // A prefix domain or `*` reaches every suffix: only now and then.
                    2 if round % 10 == 0 => format!("{}*", word(2)),
                    _ => word(6),
                })
                .collect();
            let names: Vec<&str> = domains.iter().map(String::as_str).collect();
            let table = crate::routing::tests::table(&[("v", &names)], round % 2 == 0);
            let ends = Ends::of(&table);
            for _ in 0..40 {
                let suffix = word(4).to_ascii_lowercase();
                let want = each_domain(&table, &suffix);
                assert_eq!(ends.reached(&suffix), want, "{suffix:?} in {domains:?}");
                reached += usize::from(want);
                compared += 1;
            }
        }
        assert!(reached > 1000 && compared - reached > 1000, "{reached} of {compared}");
    }
}
