//! `xdsck diff`: what a configuration change does to traffic. Listeners of the two versions are
//! paired (by name, else by address); for each pair, the classes of connections whose filter
//! chain changes ([`connections`]) and, on the chains both versions reach, the classes of
//! requests whose virtual host, route or action changes ([`requests`]); and the findings the
//! change adds and fixes, by fingerprint (docs/diff.md).

pub mod connections;
pub mod requests;

use std::collections::{BTreeMap, BTreeSet};

use crate::chain_match::select::ListenerMatch;
use crate::diagnostic::{Diagnostic, Severity};
use crate::model::route::RouteTables;
use crate::model::{Address, Listener, Snapshot};
use crate::source::{Locator, Sources};

pub use connections::{Class, Moved, Side, Witness};
pub use requests::{Landing, MovedRequest, RequestClass};

use crate::chain_match::trace::Outcome;
use requests::Routed;

/// One version: its model, its inputs, and the findings `check` gives on them (as one Envoy's).
#[derive(Debug, Clone, Copy)]
pub struct Version<'v, 'a> {
    /// The model of the version's inputs, one Envoy's.
    pub snapshot: &'v Snapshot<'a>,
    /// Its inputs.
    pub sources: &'v Sources,
    /// What `check --one-envoy` finds in them (its report's findings).
    pub findings: &'v [Diagnostic],
}

/// What became of a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Only the new version has it.
    Added,
    /// Only the old version has it.
    Removed,
    /// Some connection or request lands elsewhere (or the pair could not be compared: notes).
    Changed,
    /// Nothing lands elsewhere.
    Unchanged,
    /// Envoy rejects the new version of it and keeps serving the old: nothing moves.
    Rejected,
}

impl Status {
    /// As the JSON `status` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Removed => "removed",
            Status::Changed => "changed",
            Status::Unchanged => "unchanged",
            Status::Rejected => "rejected",
        }
    }
}

/// One listener of either version, and what the change does to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerDiff {
    /// Its name (the new version's, when the pair was made by address).
    pub name: String,
    /// The old version's name, when it differs (the pair was made by address).
    pub old_name: Option<String>,
    /// What became of it.
    pub status: Status,
    /// The classes of connections that land on another chain.
    pub connections: Vec<Moved>,
    /// The classes of requests that land on another virtual host, route or action.
    pub requests: Vec<MovedRequest>,
    /// What could not be compared, and why; how the pair was made.
    pub notes: Vec<String>,
}

/// What a change does: per listener, and to the findings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Diff {
    /// Every listener of either version, by name.
    pub listeners: Vec<ListenerDiff>,
    /// The new version's findings the old one does not have: indexes into its findings.
    pub new_findings: Vec<usize>,
    /// The old version's findings the new one does not have: indexes into its findings.
    pub fixed_findings: Vec<usize>,
}

impl Diff {
    /// Whether any connection or request lands elsewhere, or a listener comes or goes.
    pub fn moves_traffic(&self) -> bool {
        self.listeners.iter().any(|l| !matches!(l.status, Status::Unchanged | Status::Rejected))
    }
}

/// A side's live listeners by name, each with its input's index and what locates its text.
type Listeners<'v, 'a> = BTreeMap<&'v str, (usize, &'v Listener<'a>, Locator<'v>)>;

fn listeners<'v, 'a>(v: &Version<'v, 'a>) -> Listeners<'v, 'a> {
    let mut out = BTreeMap::new();
    for (i, input) in v.snapshot.inputs.iter().enumerate() {
        let locator = input.locator(v.sources.get(input.source));
        for l in input.listeners.iter().filter(|l| l.state.is_live()) {
            out.entry(&*l.name).or_insert((i, l, locator));
        }
    }
    out
}

/// The listeners Envoy refuses in a version: those an error finding names.
fn rejected(findings: &[Diagnostic]) -> BTreeSet<&str> {
    findings.iter().filter(|d| d.severity == Severity::Error).filter_map(|d| d.listener.as_deref()).collect()
}

fn address(l: &Listener<'_>) -> Option<String> {
    match l.address.as_ref()? {
        Address::Socket(s) => Some(format!("{}:{}", s.address, s.port_value.unwrap_or(0))),
        _ => None,
    }
}

/// Compares two versions; witnesses' addresses are chosen inside `prefer` where their class
/// reaches into it (so that they can be replayed from there).
pub fn diff(old: &Version<'_, '_>, new: &Version<'_, '_>, prefer: &[ipnet::IpNet]) -> Diff {
    let (lo, ln) = (listeners(old), listeners(new));
    let (old_rejected, new_rejected) = (rejected(old.findings), rejected(new.findings));
    let (to, tn) = (RouteTables::of(old.snapshot), RouteTables::of(new.snapshot));

    // Pairs: by name, then the rest by address.
    let mut pairs: Vec<(Option<&str>, Option<&str>)> = Vec::new();
    let names: BTreeSet<&str> = lo.keys().chain(ln.keys()).copied().collect();
    let (mut only_old, mut only_new) = (Vec::new(), Vec::new());
    for name in names {
        match (lo.contains_key(name), ln.contains_key(name)) {
            (true, true) => pairs.push((Some(name), Some(name))),
            (true, false) => only_old.push(name),
            (false, true) => only_new.push(name),
            (false, false) => {}
        }
    }
    // The unpaired new listeners by address, each taken once.
    let mut by_address: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for &n in only_new.iter().rev() {
        if let Some(at) = address(ln[n].1) {
            by_address.entry(at).or_default().push(n);
        }
    }
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    for o in only_old {
        let partner = address(lo[o].1).and_then(|at| by_address.get_mut(&at)?.pop());
        if let Some(n) = partner {
            taken.insert(n);
        }
        pairs.push((Some(o), partner));
    }
    pairs.extend(only_new.into_iter().filter(|n| !taken.contains(n)).map(|n| (None, Some(n))));

    let mut out = Diff::default();
    for (o, n) in pairs {
        let blank = |name: &str, status| ListenerDiff {
            name: name.to_owned(),
            old_name: None,
            status,
            connections: Vec::new(),
            requests: Vec::new(),
            notes: Vec::new(),
        };
        let d = match (o, n) {
            (Some(o), None) => blank(o, Status::Removed),
            (None, Some(n)) if new_rejected.contains(n) => {
                let mut d = blank(n, Status::Rejected);
                d.notes.push("Envoy rejects the new listener: it is not added".to_owned());
                d
            }
            (None, Some(n)) => blank(n, Status::Added),
            (Some(o), Some(n)) => {
                let mut d = if new_rejected.contains(n) && old_rejected.contains(o) {
                    let mut d = blank(n, Status::Unchanged);
                    d.notes.push("Envoy rejects both versions of this listener: neither serves".to_owned());
                    d
                } else if new_rejected.contains(n) {
                    let mut d = blank(n, Status::Rejected);
                    d.notes.push(
                        "Envoy rejects the new version of this listener and keeps serving the old one: no connection moves"
                            .to_owned(),
                    );
                    d
                } else if old_rejected.contains(o) {
                    // Envoy never served the old version: the listener appears with the new one.
                    let mut d = blank(n, Status::Added);
                    d.notes.push("Envoy rejects the old version of this listener: it was not serving".to_owned());
                    d
                } else {
                    compare(lo[o], &to, ln[n], &tn, prefer)
                };
                d.name = n.to_owned();
                if o != n {
                    d.old_name = Some(o.to_owned());
                    d.notes.push(format!(
                        "paired by address {}: the old version names it '{o}'",
                        address(ln[n].1).unwrap_or_default()
                    ));
                }
                d
            }
            (None, None) => continue,
        };
        out.listeners.push(d);
    }
    out.listeners.sort_by(|a, b| a.name.cmp(&b.name));
    // A listener paired by address keeps its findings: the old ones are fingerprinted under
    // the new name.
    let renamed: BTreeMap<&str, &str> =
        out.listeners.iter().filter_map(|l| Some((l.old_name.as_deref()?, l.name.as_str()))).collect();
    let (fo, fnew) = (fingerprints(old.findings, &renamed), fingerprints(new.findings, &BTreeMap::new()));
    out.new_findings = fnew.iter().filter(|(k, _)| !fo.contains_key(*k)).map(|(_, &i)| i).collect();
    out.fixed_findings = fo.iter().filter(|(k, _)| !fnew.contains_key(*k)).map(|(_, &i)| i).collect();
    out.new_findings.sort_unstable();
    out.fixed_findings.sort_unstable();
    out
}

/// Each finding by its fingerprint and its rank among equal ones (a finding that only moved
/// to another line or file keeps both).
fn fingerprints(findings: &[Diagnostic], renamed: &BTreeMap<&str, &str>) -> BTreeMap<(String, usize), usize> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (i, d) in findings.iter().enumerate() {
        let f = match d.listener.as_deref().and_then(|l| renamed.get(l)) {
            Some(name) => d.clone().listener(*name).fingerprint(),
            None => d.fingerprint(),
        };
        let rank = seen.entry(f.clone()).or_default();
        out.insert((f, *rank), i);
        *rank += 1;
    }
    out
}

/// One pair of listeners, both served.
fn compare(
    (io, lo, loc_o): (usize, &Listener<'_>, Locator<'_>),
    to: &RouteTables<'_, '_>,
    (inew, ln, loc_n): (usize, &Listener<'_>, Locator<'_>),
    tn: &RouteTables<'_, '_>,
    prefer: &[ipnet::IpNet],
) -> ListenerDiff {
    let (mo, mn) = (ListenerMatch::build(lo), ListenerMatch::build(ln));
    let old = Side { listener: lo, matching: &mo, locator: loc_o };
    let new = Side { listener: ln, matching: &mn, locator: loc_n };
    let mut d = ListenerDiff {
        name: ln.name.to_string(),
        old_name: None,
        status: Status::Unchanged,
        connections: Vec::new(),
        requests: Vec::new(),
        notes: Vec::new(),
    };
    match connections::connections(&old, &new, prefer) {
        Ok(c) => {
            d.connections = c.moved;
            d.requests = requests_of(&c.reached, (&mo, to, io), (&mn, tn, inew), &mut d.notes);
            if d.connections.is_empty() && d.requests.is_empty() {
                d.status = Status::Unchanged;
            } else {
                d.status = Status::Changed;
            }
        }
        Err(why) => {
            d.notes.push(why);
            d.status = Status::Changed;
        }
    }
    d.notes.sort();
    d.notes.dedup();
    d
}

/// The requests that land elsewhere on the chains connections reach in both versions: each
/// pair of route tables compared once, its classes listing every pair of chains that reaches
/// it (a shared RDS table is one comparison, not one per tenant chain).
fn requests_of(
    reached: &[(Outcome, Outcome, Witness)],
    (mo, to, io): (&ListenerMatch<'_, '_>, &RouteTables<'_, '_>, usize),
    (mn, tn, inew): (&ListenerMatch<'_, '_>, &RouteTables<'_, '_>, usize),
    notes: &mut Vec<String>,
) -> Vec<MovedRequest> {
    // In the order connections first reach them: the output's order does not hang on addresses.
    type TableKey = (*const (), bool, *const (), bool);
    let mut first: std::collections::HashMap<TableKey, usize> = std::collections::HashMap::new();
    // Each pair of tables, the pairs of chains that reach it, and a connection that does.
    struct Compared<'t, 'a> {
        old: Routed<'t, 'a>,
        new: Routed<'t, 'a>,
        chains: Vec<(String, String)>,
        connection: Witness,
    }
    let mut by_tables: Vec<Compared<'_, '_>> = Vec::new();
    let mut missing: BTreeSet<String> = BTreeSet::new();
    for (o, n, witness) in reached {
        let (Some(co), Some(cn)) = (mo.chain(*o), mn.chain(*n)) else { continue };
        let tables = (
            requests::table_of(co, requests::Tables { tables: to, envoy: io }),
            requests::table_of(cn, requests::Tables { tables: tn, envoy: inew }),
        );
        let (ro, rn) = match tables {
            (Some(Ok(ro)), Some(Ok(rn))) => (ro, rn),
            (Some(Err(why)), _) | (_, Some(Err(why))) => {
                match why {
                    requests::Uncompared::MissingRds(name) => {
                        missing.insert(name);
                    }
                    requests::Uncompared::Other(why) => notes.push(why),
                }
                continue;
            }
            // A chain that routes no HTTP on either side: what changes is the connection's.
            _ => continue,
        };
        let key = (
            std::ptr::from_ref(ro.table).cast::<()>(),
            ro.terminates_tls,
            std::ptr::from_ref(rn.table).cast::<()>(),
            rn.terminates_tls,
        );
        let chains = (co.display_name().into_owned(), cn.display_name().into_owned());
        let i = *first.entry(key).or_insert_with(|| {
            by_tables.push(Compared { old: ro, new: rn, chains: Vec::new(), connection: witness.clone() });
            by_tables.len() - 1
        });
        by_tables[i].chains.push(chains);
    }
    // One note for every RDS table the inputs lack (a Cilium tenant listener names thousands).
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(3).map(String::as_str).collect();
        let more = missing.len() - shown.len();
        notes.push(format!(
            "{} RDS route table{} the chains name {} not among the inputs ({}{}): the requests on {} are not compared; give the tables too (a config_dump or RDS response)",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            if missing.len() == 1 { "is" } else { "are" },
            shown.join(", "),
            if more > 0 { format!(", and {more} more") } else { String::new() },
            if missing.len() == 1 { "it" } else { "them" },
        ));
    }
    let mut out = Vec::new();
    for c in by_tables {
        // The same table met the same way routes every request the same: not asked (a tenant
        // listener has one table per tenant, and a change touches a few).
        if c.old.terminates_tls == c.new.terminates_tls && c.old.table == c.new.table {
            continue;
        }
        for class in requests::requests(c.old, c.new, notes) {
            out.push(MovedRequest { chains: c.chains.clone(), connection: c.connection.clone(), class });
        }
    }
    out
}

/// Two versions of a one-file configuration, loaded, lent to a test.
#[cfg(test)]
fn loaded<R>(old: &str, new: &str, then: impl FnOnce((&Snapshot<'_>, &Sources), (&Snapshot<'_>, &Sources)) -> R) -> R {
    use crate::source::SourceFile;
    let (mut so, mut sn) = (Sources::new(), Sources::new());
    so.add(SourceFile::new("old.json", old));
    sn.add(SourceFile::new("new.json", new));
    let (dold, dnew) = (
        crate::read_documents(&so, &crate::Options::default()),
        crate::read_documents(&sn, &crate::Options::default()),
    );
    let ((o, fo), (n, fnew)) = (crate::load_all(&dold), crate::load_all(&dnew));
    assert!(fo.is_empty() && fnew.is_empty(), "{fo:?} {fnew:?}");
    then((&o, &so), (&n, &sn))
}
