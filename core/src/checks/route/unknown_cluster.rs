//! `unknown-cluster`: a route sends requests to (or mirrors them to) a cluster that the run's
//! cluster list does not have. Envoy validates a route table's clusters when it builds it
//! (`validate_clusters`, true by default for an inline table, false for an RDS one) and refuses
//! the table at the first unknown one; every one is reported here.
//!
//! Only where the run holds the clusters: a bootstrap's `static_resources.clusters`, a
//! config_dump's clusters, a CDS response. Without a cluster list nothing can be said, and the
//! report says so once ([`not_checked`]) instead of passing the routes as clean.

use std::collections::HashMap;

use rustc_hash::FxHashSet;

use crate::checks::{Check, Context, Reads, TableCx, envoy_text};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::hashing::InputSet;
use crate::model::route::{Action, Mirrors, RouteTable, TableOrigin};
use crate::model::{InputKind, ListenerState, Snapshot};
use crate::source::{SourceId, join_index, join_token};

declare_rule! {
    pub(crate) static RULE for UnknownCluster = {
        code: "XDS117",
        name: "unknown-cluster",
        severity: Severity::Error,
        summary: "A route names a cluster (as its target, a weighted cluster or a mirror) that the run's cluster list does not have: Envoy rejects the route table.",
        explanation: "unknown_cluster.md",
    }
}

pub(crate) struct UnknownCluster;

/// How a route uses a cluster, which Envoy's text names.
#[derive(Clone, Copy)]
pub(crate) enum Use {
    /// `route.cluster`.
    Target,
    /// One of `route.weighted_clusters.clusters`.
    Weighted,
    /// A `request_mirror_policies` entry (Envoy's "shadow").
    Mirror,
}

/// The clusters of each Envoy of the run, as Envoy validates routes against them: every input
/// is an Envoy of its own, unless the run says they are one ([`Snapshot::one_envoy`]).
struct Known<'s> {
    /// The sets of names `all` and `statics` refer to, by position: seeded
    /// ([`crate::hashing`]), not SipHash: a name is probed per route (with SipHash, 2% of a run
    /// of 10k listeners with inline route tables).
    sets: Vec<InputSet<&'s str>>,
    /// Each Envoy's clusters (CiliumEnvoyConfigs' excepted, see the explanation), by
    /// [`Known::envoy`].
    all: HashMap<Option<usize>, usize>,
    /// The Envoys of which some input lists every cluster Envoy has (not only the static ones).
    complete: FxHashSet<Option<usize>>,
    /// Each input's static clusters, for its own static listeners: a bootstrap builds them
    /// before CDS has delivered anything (checked with envoy 1.40, live).
    statics: HashMap<usize, usize>,
    one_envoy: bool,
}

impl<'s> Known<'s> {
    /// The run's cluster lists; with `names`, what they hold too (without, every set is empty:
    /// enough to tell which tables the run can check, without hashing 100k names again).
    fn of(snapshot: &'s Snapshot<'_>, names: bool) -> Self {
        let mut k = Known {
            sets: Vec::new(),
            all: HashMap::new(),
            complete: FxHashSet::default(),
            statics: HashMap::new(),
            one_envoy: snapshot.one_envoy,
        };
        for (i, input) in snapshot.inputs.iter().enumerate() {
            let Some(list) = &input.clusters else { continue };
            let envoy = k.envoy(i);
            if !list.partial {
                k.complete.insert(envoy);
            }
            // An input that is an Envoy of its own and lists static clusters only (a
            // bootstrap's) has one set for both: at tenant scale each was 300k names.
            let shared = envoy.is_some() && list.names.iter().all(|c| c.is_static);
            let statics = k.new_set();
            k.statics.insert(i, statics);
            let all = match k.all.get(&envoy) {
                _ if shared => statics,
                Some(&all) => all,
                None => k.new_set(),
            };
            k.all.insert(envoy, all);
            if !names {
                continue;
            }
            // Sized once: a growing table holds its old one beside it while it rehashes.
            k.sets[all].reserve(list.names.len());
            if !shared {
                k.sets[statics].reserve(list.names.iter().filter(|c| c.is_static).count());
            }
            for c in &list.names {
                k.sets[all].insert(&c.name);
                if c.is_static && !shared {
                    k.sets[statics].insert(&c.name);
                }
            }
        }
        k
    }

    /// A new empty set, by its position.
    fn new_set(&mut self) -> usize {
        self.sets.push(InputSet::default());
        self.sets.len() - 1
    }

    /// The Envoy the snapshot's input `input` (its index) is: the input itself, or the run's one.
    fn envoy(&self, input: usize) -> Option<usize> {
        (!self.one_envoy).then_some(input)
    }

    /// The clusters a table is validated against, or `None` when the run does not have them.
    fn for_table(&self, t: &TableCx<'_, '_>) -> Option<&InputSet<&'s str>> {
        let set = match &t.listener {
            Some((l, _)) if l.listener.state == ListenerState::Static => self.statics.get(&t.envoy),
            _ => {
                let envoy = self.envoy(t.envoy);
                self.complete.contains(&envoy).then(|| self.all.get(&envoy)).flatten()
            }
        };
        set.map(|&s| &self.sets[s])
    }
}

/// Whether a table comes from an input whose verdict is already made (a config_dump: Envoy
/// accepted what it lists) or made by someone else (a CiliumEnvoyConfig: the agent adds
/// clusters of its own before Envoy sees it).
fn not_ours(kind: InputKind, pointer: &str) -> bool {
    match kind {
        InputKind::CiliumEnvoyConfig => true,
        // A stream mixing kinds: the place of the table tells.
        InputKind::Mixed if pointer.contains("/spec/resources/") => true,
        _ => kind.is_record_at(pointer),
    }
}

fn diagnostic(t: &TableCx<'_, '_>, at: &[String], what: Use, cluster: &str, whose: String) -> Diagnostic {
    // The first spelling of the field that is in the text (an input may be camelCase).
    let (pointer, offset) =
        at.iter().find_map(|p| Some((p, t.offset(p)?))).map_or((&at[0], None), |(p, o)| (p, Some(o)));
    let role = match what {
        Use::Target => "sends requests to",
        Use::Weighted => "splits requests to",
        Use::Mirror => "mirrors requests to",
    };
    let message = format!(
        "{whose} {role} cluster '{cluster}', which no cluster list of this run defines (route table '{}')",
        t.table.display_name()
    );
    let at = crate::source::Location::new(t.table.source, pointer.clone(), offset);
    let d = Diagnostic::new(&RULE, message).at(at).with_envoy_error(envoy_text::unknown_cluster(what, cluster));
    let d = match (&t.listener, &t.table.origin) {
        (Some((l, _)), _) if l.listener.state == ListenerState::Static => d.note(
            "the table is inline in a static listener: Envoy builds it before CDS delivers any cluster, so only the bootstrap's static_resources.clusters count, and it rejects the bootstrap",
        ),
        (_, TableOrigin::Inline | TableOrigin::DumpStatic) => d.note(
            "the table is inline in the listener's http_connection_manager: Envoy rejects the listener; add the cluster, or set validate_clusters: false to have such requests answered 503",
        ),
        (_, TableOrigin::Rds) => d.note(
            "validate_clusters is true on this RDS table: Envoy rejects the update and keeps the table it had (a fresh Envoy has none)",
        ),
    };
    t.attach(d)
}

impl Check for UnknownCluster {
    fn reads(&self) -> Reads {
        Reads::ROUTES
    }

    fn notes(&self, cx: Context<'_, '_>) -> Vec<&'static str> {
        not_checked(&cx)
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        let known = Known::of(cx.snapshot, true);
        let kinds: HashMap<SourceId, InputKind> = cx.snapshot.inputs.iter().map(|i| (i.source, i.kind)).collect();
        let kind_of = |s: SourceId| kinds.get(&s).copied();
        for t in cx.route_tables() {
            let table = t.table;
            if kind_of(table.source).is_none_or(|k| not_ours(k, &table.pointer))
                || !table.validate_clusters.unwrap_or(table.origin == TableOrigin::Inline)
            {
                continue;
            }
            let Some(clusters) = known.for_table(&t) else { continue };
            let unknown = |c: &str| !c.is_empty() && !clusters.contains(c);
            // The mirror list each route uses: its own, else its virtual host's, else the
            // table's (a virtual host without routes uses none). A list is reported once, where
            // it is written.
            let mut table_used = false;
            for vh in &table.virtual_hosts {
                let mut host_used = false;
                for r in &vh.routes {
                    let whose = || format!("route '{}' of virtual host '{}'", r.display_name(), vh.name);
                    // Spelled out only for a finding: every route of the run passes here.
                    let action = || join_token(&table.route_pointer(vh, r), "route");
                    match &r.action {
                        Action::Cluster(c) if unknown(c) => {
                            out.push(diagnostic(&t, &[join_token(&action(), "cluster")], Use::Target, c, whose()));
                        }
                        Action::WeightedClusters(w) => {
                            for (i, (c, _)) in w.iter().enumerate().filter(|(_, (c, _))| unknown(c)) {
                                let at = ["weighted_clusters", "weightedClusters"].map(|k| {
                                    join_token(
                                        &join_index(&join_token(&join_token(&action(), k), "clusters"), i),
                                        "name",
                                    )
                                });
                                out.push(diagnostic(&t, &at, Use::Weighted, c, whose()));
                            }
                        }
                        _ => {}
                    }
                    match (&r.mirrors, &vh.mirrors) {
                        (Some(m), _) if m.clusters.iter().any(|c| unknown(c)) => {
                            mirrors(&t, m, &join_token(&action(), m.key), &whose(), &unknown, out)
                        }
                        (Some(_), _) => {}
                        (None, Some(_)) => host_used = true,
                        (None, None) => table_used = true,
                    }
                }
                if let Some(m) = vh.mirrors.as_ref().filter(|_| host_used) {
                    let whose = format!("virtual host '{}'", vh.name);
                    mirrors(&t, m, &join_token(&table.vh_pointer(vh), m.key), &whose, &unknown, out);
                }
            }
            if let Some(m) = table.mirrors.as_ref().filter(|_| table_used) {
                mirrors(&t, m, &join_token(&table.pointer, m.key), "the route table", &unknown, out);
            }
        }
    }
}

fn mirrors(
    t: &TableCx<'_, '_>,
    m: &Mirrors<'_>,
    list: &str,
    whose: &str,
    unknown: &dyn Fn(&str) -> bool,
    out: &mut Vec<Diagnostic>,
) {
    for (i, c) in m.clusters.iter().enumerate().filter(|(_, c)| unknown(c)) {
        let at = join_token(&join_index(list, i), "cluster");
        out.push(diagnostic(t, &[at], Use::Mirror, c, whose.to_owned()));
    }
}

/// What the report says, once for the run, about routes whose clusters Envoy validates but
/// this run could not: a route table Envoy validates that names a cluster (as a target, a
/// weighted cluster or a mirror) with no cluster list to compare it with, or one in a
/// CiliumEnvoyConfig. Empty when every such cluster was checked or there is none.
fn not_checked(cx: &Context<'_, '_>) -> Vec<&'static str> {
    let known = Known::of(cx.snapshot, false);
    let kinds: HashMap<SourceId, InputKind> = cx.snapshot.inputs.iter().map(|i| (i.source, i.kind)).collect();
    let (mut unlisted, mut cilium) = (false, false);
    for t in cx.route_tables() {
        let table = t.table;
        let Some(kind) = kinds.get(&table.source).copied() else { continue };
        if !table.validate_clusters.unwrap_or(table.origin == TableOrigin::Inline) || !names_a_cluster(table) {
            continue;
        }
        if kind == InputKind::CiliumEnvoyConfig
            || (kind == InputKind::Mixed && table.pointer.contains("/spec/resources/"))
        {
            cilium = true;
        } else if !not_ours(kind, &table.pointer) && known.for_table(&t).is_none() {
            unlisted = true;
        }
    }
    let mut notes = Vec::new();
    if unlisted {
        notes.push(
            "routes' clusters not checked (XDS117): no input holds a cluster list (bootstrap static_resources.clusters, config_dump clusters, CDS response)",
        );
    }
    if cilium {
        notes.push(
            "routes' clusters not checked (XDS117) in CiliumEnvoyConfigs: the cilium-agent adds clusters of its own",
        );
    }
    notes
}

/// Whether a route of the table names a cluster Envoy would look up.
fn names_a_cluster(table: &RouteTable<'_>) -> bool {
    let listed = |m: &Option<Box<Mirrors<'_>>>| m.as_ref().is_some_and(|m| m.clusters.iter().any(|c| !c.is_empty()));
    table.virtual_hosts.iter().flat_map(|vh| vh.routes.iter().map(move |r| (vh, r))).any(|(vh, r)| {
        matches!(&r.action, Action::Cluster(c) if !c.is_empty())
            || matches!(&r.action, Action::WeightedClusters(w) if w.iter().any(|(c, _)| !c.is_empty()))
            || match (&r.mirrors, &vh.mirrors) {
                (Some(_), _) => listed(&r.mirrors),
                (None, Some(_)) => listed(&vh.mirrors),
                (None, None) => listed(&table.mirrors),
            }
    })
}

#[cfg(test)]
mod tests {
    use crate::{Options, SourceFile, Sources};

    const RDS: &str = r#"
type_url: type.googleapis.com/envoy.config.route.v3.RouteConfiguration
resources:
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: next
  validate_clusters: true
  virtual_hosts:
  - name: all
    domains: ["*"]
    routes:
    - {match: {prefix: /v2}, route: {cluster: api-v2}}
    - {match: {prefix: /}, route: {cluster: gone}}
"#;

    fn run(files: &[(&str, String)]) -> crate::report::Report {
        run_as(files, true)
    }

    fn run_as(files: &[(&str, String)], one_envoy: bool) -> crate::report::Report {
        let mut sources = Sources::new();
        for (name, text) in files {
            sources.add(SourceFile::new(*name, text.clone()));
        }
        crate::analyze(&sources, &Options { one_envoy, ..Options::default() })
    }

    #[test]
    fn inputs_that_are_not_one_envoy_lend_no_clusters() {
        let dump = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testdata/checks/unknown-cluster/ok-config-dump.yaml"
        ))
        .expect("fixture");
        let report = run_as(&[("dump.yaml", dump), ("next.yaml", RDS.to_owned())], false);
        assert!(report.findings.iter().all(|d| d.rule.code != "XDS117"), "{:?}", report.findings);
        // The RDS table's own input has no cluster list: the report says so.
        assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
    }

    #[test]
    fn a_config_dump_lends_its_clusters_to_the_other_inputs_of_one_envoy() {
        let dump = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testdata/checks/unknown-cluster/ok-config-dump.yaml"
        ))
        .expect("fixture");
        let report = run(&[("dump.yaml", dump), ("next.yaml", RDS.to_owned())]);
        let errors: Vec<_> = report.findings.iter().filter(|d| d.rule.code == "XDS117").collect();
        // `api-v2` is warming in the dump, which Envoy counts; `gone` is nowhere. The dump's own
        // table (naming `api-v1`, absent) was accepted by Envoy and is not checked again.
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].envoy_error(), Some("route: unknown cluster 'gone'"));
        assert!(report.notes.is_empty(), "{:?}", report.notes);
    }

    #[test]
    fn without_a_cluster_list_the_report_says_the_clusters_were_not_checked() {
        let report = run(&[("next.yaml", RDS.to_owned())]);
        assert!(report.findings.iter().all(|d| d.rule.code != "XDS117"));
        assert_eq!(report.notes.len(), 1);
        assert!(report.notes[0].contains("no input holds a cluster list"), "{:?}", report.notes);
    }
}
