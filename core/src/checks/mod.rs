//! The checks. Each lives in its own file and reads top to bottom: its [`Rule`], how it builds
//! its diagnostic, then its logic. The files are in a folder per group of
//! [`crate::codes::Group`] (`schema/`, `listener/`, `matcher/`, `route/`); what several rules
//! share (Envoy's words, CIDR parsing, the schema problems' walk, repeated listener names,
//! BoringSSL's refusals) is beside the folders, never in one. [`crate::codes`] is the one
//! explicit registry, in code order.
//!
//! Codes: `XDS1xx` Envoy rejects the configuration (severity error); `XDS2xx` Envoy accepts it
//! but connections are lost or misrouted (warning); `XDS3xx` worth knowing (info).

pub(crate) mod listener;
pub(crate) mod matcher;
pub(crate) mod route;
pub(crate) mod schema;

pub(crate) mod boringssl;
pub(crate) mod cidr_ranges;
pub(crate) mod envoy_text;
pub(crate) mod repeated_listener_names;
pub(crate) mod schema_problems;

use std::ops::Range;

use crate::chain_match::MatchGraph;
use crate::chain_match::select::ListenerMatch;
use crate::diagnostic::{Diagnostic, Rule};
use crate::model::{FilterChain, Input, Listener, Snapshot, TextOffset};
use crate::parallel::par_map;
use crate::source::{Location, Locator, SourceId, Sources};

/// What a check is given.
#[derive(Debug, Clone, Copy)]
pub struct Context<'s, 'a> {
    /// Every input of the run, for the checks that look past live listeners (rejected updates,
    /// skipped documents, inputs without listeners).
    pub snapshot: &'s Snapshot<'a>,
    /// The texts the inputs were loaded from, to locate what a check reports.
    pub sources: &'s Sources,
    /// The live listeners the check is handed: all of them, or for a check that reads the
    /// filter-chain indexes one batch of them (see [`Reads::graphs`]).
    listeners: &'s [ListenerCx<'s, 'a>],
    /// The place of `listeners[0]` among the run's live listeners (0 but in a batch).
    first: usize,
    /// Whether `listeners` is one batch of the run's: [`Self::route_tables`] is the whole run's
    /// and is not handed out then (a check would find each table once per batch).
    batch: bool,
    /// The route tables and HCMs of every input, indexed; `None` when no check of the run
    /// [`Reads::routes`].
    routes: Option<&'s crate::model::route::RouteTables<'s, 'a>>,
    /// [`Self::route_tables`], found once for every check that asks (finding a chain's HCMs
    /// builds the chain's pointer: once per chain, not once per chain and check).
    tables: &'s [TableCx<'s, 'a>],
}

/// What a check reads besides the model, declared so that the runner builds only what the
/// checks it runs read (as biome's rules declare their query): `--select` of a route rule on a
/// tenant gateway builds no filter-chain index. A check that reads what it did not declare
/// panics on the first fixture of its spec tests, which run it alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reads {
    /// Each live listener's filter-chain index or matcher ([`ListenerCx::matching`],
    /// [`ListenerCx::graph`]). A check that reads them is run once per batch of listeners
    /// ([`Context::listeners`] is the batch, all else is the run's): each batch's indexes are
    /// built, checked and dropped before the next's, so that a run with a listener per tenant
    /// does not hold 100k indexes at once. Its findings are therefore each listener's own.
    pub graphs: bool,
    /// The route tables and HCMs ([`Context::routes`], [`Context::route_tables`]).
    pub routes: bool,
}

impl Reads {
    /// The model alone (listeners, chains, the loader's problems).
    pub const MODEL: Self = Self { graphs: false, routes: false };
    /// The filter-chain indexes.
    pub const GRAPHS: Self = Self { graphs: true, routes: false };
    /// The route tables.
    pub const ROUTES: Self = Self { graphs: false, routes: true };
    /// Both.
    pub const GRAPHS_AND_ROUTES: Self = Self { graphs: true, routes: true };

    fn union(self, other: Self) -> Self {
        Self { graphs: self.graphs || other.graphs, routes: self.routes || other.routes }
    }
}

/// One live listener with the source it came from and how it selects chains, built once for
/// every check that asks it.
#[derive(Debug, Clone, Copy)]
pub struct ListenerCx<'s, 'a> {
    /// The input the listener is in.
    pub source: SourceId,
    /// The Envoy it is in: the index of its input in the snapshot. One source may hold several
    /// (a peer's map of proxies); what one Envoy holds at once is checked together.
    pub envoy: usize,
    /// Where places in the listener's input are.
    pub locator: Locator<'s>,
    /// The listener as the loader read it.
    pub listener: &'s Listener<'a>,
    /// The engine `xdsck trace` asks too; `None` when no check of the run [`Reads::graphs`].
    matching: Option<&'s ListenerMatch<'s, 'a>>,
}

impl<'s, 'a> ListenerCx<'s, 'a> {
    /// The engine `xdsck trace` asks too: the index or the `filter_chain_matcher`.
    ///
    /// # Panics
    /// In a check that does not declare [`Reads::graphs`].
    pub fn matching(&self) -> &'s ListenerMatch<'s, 'a> {
        self.matching.expect("a check that reads the filter-chain index declares Reads::graphs")
    }

    /// The filter-chain index, `matching().graph()`: empty when the matcher selects.
    ///
    /// # Panics
    /// In a check that does not declare [`Reads::graphs`].
    pub fn graph(&self) -> &'s MatchGraph<'s, 'a> {
        self.matching().graph()
    }
}

impl<'s, 'a> Context<'s, 'a> {
    /// The route tables and HCMs of every input, indexed.
    ///
    /// # Panics
    /// In a check that does not declare [`Reads::routes`].
    pub fn routes(&self) -> &'s crate::model::route::RouteTables<'s, 'a> {
        self.routes.expect("a check that reads route tables declares Reads::routes")
    }

    /// Where places in one of the snapshot's inputs are.
    pub fn locator(&self, input: &Input<'a>) -> Locator<'s> {
        input.locator(self.sources.get(input.source))
    }

    /// [`Self::locator`] for the input loaded from `source` (a route table or a part that is
    /// not a listener names only its source).
    pub fn locator_of(&self, source: SourceId) -> Locator<'s> {
        match self.snapshot.inputs.iter().find(|i| i.source == source) {
            Some(input) => self.locator(input),
            None => Locator::new(self.sources.get(source), None),
        }
    }

    /// Every live listener (static, active or declared), in input order; for a check that reads
    /// the filter-chain indexes, those of its batch (see [`Reads::graphs`]).
    pub fn listeners(&self) -> impl Iterator<Item = ListenerCx<'s, 'a>> + 's {
        self.listeners.iter().copied()
    }

    /// What `find` finds on each live listener, in input order; on every core when there are
    /// many. For a check whose work is per listener and large at tenant scale: checks run side
    /// by side, and one that keeps a core busy over 10k listeners kept the other waiting.
    /// `find` is handed the listener's place among the run's live listeners, which
    /// [`Self::listener_at`] takes back (a check keeps it for its findings made later, see
    /// [`Check::run_deferred`]).
    pub(crate) fn per_listener<R: Send>(
        &self,
        find: impl Fn(usize, ListenerCx<'s, 'a>, &mut Vec<R>) + Sync + Send,
    ) -> Vec<R> {
        let places: Vec<usize> = (self.first..self.first + self.listeners.len()).collect();
        crate::parallel::par_extend_cheap(&places, |&i, found| find(i, self.listener_at(i), found))
    }

    /// The live listener at `place` in the run's order (see [`Self::per_listener`]): the same
    /// listener in every context of one run.
    pub(crate) fn listener_at(&self, place: usize) -> ListenerCx<'s, 'a> {
        self.listeners[place - self.first]
    }

    /// The live listeners that select chains with a `filter_chain_matcher` (Envoy then builds no
    /// index and ignores `filter_chain_match`).
    pub fn matcher_listeners(&self) -> impl Iterator<Item = ListenerCx<'s, 'a>> + 's {
        self.listeners().filter(|l| l.listener.filter_chain_matcher.is_some())
    }

    /// Every `server_names` entry Envoy's filter-chain index reads, with its listener, chain
    /// and index in the list: the chains of listeners without a `filter_chain_matcher` (with
    /// one, Envoy ignores and does not validate `filter_chain_match`).
    pub(crate) fn index_server_names(
        &self,
    ) -> impl Iterator<Item = (ListenerCx<'s, 'a>, &'s FilterChain<'a>, usize, &'s str)> + 's {
        self.listeners().filter(|l| l.listener.filter_chain_matcher.is_none()).flat_map(|l| {
            l.listener.filter_chains.iter().flat_map(move |chain| {
                let names = chain.filter_chain_match.iter().flat_map(|m| m.server_names.iter());
                names.enumerate().map(move |(i, name)| (l, chain, i, &**name))
            })
        })
    }
}

/// A route table a check looks at: an inline one with the live listener and chain it serves,
/// or an RDS one (listener `None`), each table once.
#[derive(Debug, Clone, Copy)]
pub struct TableCx<'s, 'a> {
    /// The route table, as the loader read it.
    pub table: &'s crate::model::route::RouteTable<'a>,
    /// The Envoy that builds it: the index of its input in the snapshot.
    pub envoy: usize,
    /// Where places are in the input the table was read from (for an RDS table, not the
    /// listener's).
    pub locator: Locator<'s>,
    /// For an inline table, the listener and the chain whose HCM holds it. The listener by
    /// reference: a table's context is 64 bytes, not 112, and a tenant bootstrap has 100k.
    pub listener: Option<(&'s ListenerCx<'s, 'a>, &'s FilterChain<'a>)>,
    /// The HCM holding an inline table (its Host rewriting applies before the table).
    pub hcm: Option<&'s crate::model::route::Hcm<'a>>,
}

impl<'s, 'a> Context<'s, 'a> {
    /// Every route table Envoy would build: the inline tables of live listeners' chains, then
    /// every RDS table of the run, in input order.
    ///
    /// # Panics
    /// In a check that does not declare [`Reads::routes`].
    pub fn route_tables(&self) -> impl Iterator<Item = TableCx<'s, 'a>> + 's {
        assert!(self.routes.is_some(), "a check that reads route tables declares Reads::routes");
        assert!(
            !self.batch,
            "a check that reads the filter-chain indexes is handed a batch of listeners, not every table"
        );
        self.tables.iter().copied()
    }

    fn find_route_tables(&self) -> Vec<TableCx<'s, 'a>> {
        use crate::model::NetworkFilterKind;
        use crate::model::route::{HcmRoutes, TableOrigin};
        let mut out = Vec::new();
        for l in self.listeners {
            let of_chain = move |chain: &'s FilterChain<'a>| {
                let hcms = chain.filters.iter().filter_map(|f| match &f.kind {
                    NetworkFilterKind::HttpConnectionManager(hcm) => Some(hcm),
                    _ => None,
                });
                hcms.filter_map(move |hcm| match &hcm.routes {
                    HcmRoutes::Inline(table) => Some(TableCx {
                        table,
                        envoy: l.envoy,
                        locator: l.locator,
                        listener: Some((l, chain)),
                        hcm: Some(hcm),
                    }),
                    _ => None,
                })
            };
            // On every core: a tenant listener's chains are too many to pass over on one. No
            // list per chain (with them, finding 100k tables took 55 MiB more, now 17).
            append(&mut out, crate::parallel::par_flat_map_cheap(&l.listener.filter_chains, of_chain));
            out.extend(l.listener.default_filter_chain.as_deref().into_iter().flat_map(of_chain));
        }
        for (envoy, input) in self.snapshot.inputs.iter().enumerate() {
            let text = self.locator(input);
            for t in input.route_tables.iter().filter(|t| t.origin == TableOrigin::Rds) {
                out.push(TableCx { table: t, envoy, locator: text, listener: None, hcm: None });
            }
        }
        out
    }
}

impl TableCx<'_, '_> {
    /// A place in the table's source by pointer.
    pub fn location(&self, pointer: &str) -> Location {
        Location::new(self.table.source, pointer.to_owned(), self.offset(pointer))
    }

    /// The offset of a node of the table: for an inline table only its listener is read again
    /// (a finding costs the listener, not the file: tenant layouts have one listener each).
    pub fn offset(&self, pointer: &str) -> Option<usize> {
        match &self.listener {
            Some((l, _)) => l.locate_in_listener(pointer),
            None => self.locator.locate_pointer(pointer),
        }
    }

    /// Names the listener and chain on a finding about an inline table.
    pub fn attach(&self, d: Diagnostic) -> Diagnostic {
        match &self.listener {
            Some((l, chain)) => {
                d.listener(l.listener.display_name().into_owned()).chain(chain.display_name().into_owned())
            }
            None => d,
        }
    }
}

impl ListenerCx<'_, '_> {
    /// Where the listener is.
    pub fn location(&self) -> Location {
        self.listener.location(self.source, self.locator)
    }

    /// Where one of its chains is.
    pub fn chain_location(&self, chain: &FilterChain<'_>) -> Location {
        self.listener.chain_location(self.source, self.locator, chain)
    }

    /// A place inside the listener's `filter_chain_matcher`, `suffix` being a pointer relative to
    /// it (e.g. `/matcher_tree/custom_match`). Found by reading the matcher again, like
    /// [`Self::chain_field_location`].
    pub fn matcher_location(&self, suffix: &str) -> Location {
        let anchor = format!("{}/{}", self.listener.pointer, self.listener.casing.field("filter_chain_matcher"));
        let pointer = format!("{anchor}{suffix}");
        // The loader kept where the matcher starts: only it is read again.
        let start = self.listener.filter_chain_matcher.as_ref().and_then(|m| m.offset);
        let offset = self.locator.locate_pointer_below(&anchor, start, &pointer).or_else(|| self.location().offset);
        Location::new(self.source, pointer, offset)
    }

    /// The offset of a node below the listener (a pointer starting with the listener's),
    /// reading only the listener again, and only up to the node.
    pub fn locate_in_listener(&self, pointer: &str) -> Option<usize> {
        self.locator.locate_pointer_below(
            &self.listener.pointer,
            self.listener.offset.map(crate::model::TextOffset::get),
            pointer,
        )
    }

    /// A place below a chain, e.g. `["filter_chain_match", "server_names", "2"]` (snake_case
    /// field names; spelled as the input spells them). Its offset is found by reading the chain
    /// again, up to the value: the cost of a finding is the chain's, not the file's.
    pub fn chain_field_location(&self, chain: &FilterChain<'_>, path: &[&str]) -> Location {
        let mut pointer = self.listener.chain_pointer(chain);
        let mut casing = chain.casing;
        for (i, token) in path.iter().enumerate() {
            pointer = crate::source::join_field(&pointer, casing, token);
            // Below filter_chain_match the match object's own casing applies.
            if i == 0 && *token == "filter_chain_match" {
                casing = chain.filter_chain_match.as_ref().map_or(casing, |m| m.casing);
            }
        }
        let anchor = self.listener.chain_pointer(chain);
        let offset = self
            .locator
            .locate_pointer_below(&anchor, chain.offset.map(TextOffset::get), &pointer)
            .or_else(|| self.chain_location(chain).offset);
        Location::new(self.source, pointer, offset)
    }
}

pub use crate::diagnostic::HasRule;
pub(crate) use schema::skipped_document::walked_past;

/// One check.
pub trait Check: HasRule + Sync {
    /// Appends this check's findings for the run to `out`, in input order (the report sorts them
    /// afterwards).
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>);

    /// What [`Self::run`] reads besides the model.
    fn reads(&self) -> Reads;

    /// What the check could not look at for want of input, said once for the run (a check
    /// that had nothing to run on is not "no findings"); most checks have nothing to say.
    fn notes(&self, _cx: Context<'_, '_>) -> Vec<&'static str> {
        Vec::new()
    }

    /// What the runner calls instead of [`Self::run`] when the check reads the filter-chain
    /// indexes: the findings it appends to `out` now, and those it makes once the indexes are
    /// dropped, from what it kept of them (names and ids, not the indexes). A check with a
    /// finding per tenant (`wildcard-overlap`) defers them: at tenant scale the indexes and
    /// 100k findings held together were a run's peak. Most checks make them all now.
    fn run_deferred(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) -> Option<Deferred> {
        self.run(cx, out);
        None
    }
}

/// Findings a check makes after the filter-chain indexes are dropped (see
/// [`Check::run_deferred`]): handed the run's context without them, in which listeners are
/// where they were ([`Context::listener_at`]).
///
/// How many there will be is known before they are made: the runner sizes the list once for
/// every batch's, and they are written into it where they are made (100k findings of 256 bytes
/// grew it by doubling, copied at each step, and then were copied again, beside the first).
pub struct Deferred {
    /// How many findings `make` appends.
    pub(crate) len: usize,
    /// Appends them to the list it is handed.
    pub(crate) make: MakeLater,
}

/// How a [`Deferred`]'s findings are made: from the run's context, into the list handed.
pub(crate) type MakeLater = Box<dyn for<'s, 'a> FnOnce(Context<'s, 'a>, &mut Vec<Diagnostic>) + Send>;

impl Deferred {
    /// Makes the findings into `out`, with room for them made first (none is made when the
    /// caller sized `out` for several).
    pub(crate) fn append_to(self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        out.reserve_exact(self.len);
        (self.make)(cx, out);
    }
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deferred").field("len", &self.len).finish_non_exhaustive()
    }
}

/// What the checks found in a snapshot.
#[derive(Debug, Default)]
pub struct Checked {
    /// The findings, in registry order.
    pub findings: Vec<Diagnostic>,
    /// What the checks run could not check, said once for the run ([`Check::notes`]).
    pub notes: Vec<String>,
    /// What the run built for its checks besides the model: the union of their [`Reads`].
    pub built: Reads,
}

/// Runs every check on a snapshot.
pub fn run_all(snapshot: &Snapshot<'_>, sources: &Sources) -> Checked {
    run_checks(&crate::codes::checks().collect::<Vec<_>>(), snapshot, sources)
}

/// Runs the checks whose rules are `selected`, building only what they read. A check not
/// selected is not run: its findings are not looked for, so not counted as suppressed.
pub fn run_selected(snapshot: &Snapshot<'_>, sources: &Sources, selected: impl Fn(&Rule) -> bool) -> Checked {
    let checks: Vec<&dyn Check> = crate::codes::checks().filter(|c| selected(c.rule())).collect();
    run_checks(&checks, snapshot, sources)
}

/// Runs one check (graphs included), for profiling.
pub fn run_one(check: &dyn Check, snapshot: &Snapshot<'_>, sources: &Sources) -> Vec<Diagnostic> {
    run_checks(&[check], snapshot, sources).findings
}

/// Appends `found` to `out`; into an empty `out` (with no more room) the list itself is moved.
/// At tenant scale one list has most of the items (100k findings of `wildcard-overlap`, 25 MB
/// of `Diagnostic`s before what they hold; 100k route tables): moved, they are not copied, and
/// the peak of a run is not two copies of them.
pub(crate) fn append<T>(out: &mut Vec<T>, mut found: Vec<T>) {
    if out.is_empty() && found.capacity() >= out.capacity() {
        *out = found;
    } else {
        out.append(&mut found);
    }
}

/// What the checks are handed of each live listener (its input, the Envoy it is in, where its
/// places are), with its index or matcher when one was built.
fn listener_cxs<'s, 'a>(
    live: &'s [(usize, SourceId, Locator<'s>, &'s Listener<'a>)],
    matchings: Option<&'s [ListenerMatch<'s, 'a>]>,
) -> Vec<ListenerCx<'s, 'a>> {
    live.iter()
        .enumerate()
        .map(|(i, &(envoy, source, locator, listener))| ListenerCx {
            source,
            envoy,
            locator,
            listener,
            matching: matchings.map(|m| &m[i]),
        })
        .collect()
}

/// Every live listener of the run in input order, with the Envoy it is in, its source and where
/// places in that source are.
fn live_listeners<'s, 'a>(
    snapshot: &'s Snapshot<'a>,
    sources: &'s Sources,
) -> Vec<(usize, SourceId, Locator<'s>, &'s Listener<'a>)> {
    snapshot
        .inputs
        .iter()
        .enumerate()
        .flat_map(|(envoy, input)| {
            let text = input.locator(sources.get(input.source));
            input.listeners.iter().filter(|l| l.state.is_live()).map(move |l| (envoy, input.source, text, l))
        })
        .collect()
}

/// The fewest chains a batch of listeners whose indexes are held together has (a listener
/// counts one more for itself), but the last: one tenant listener of 400k chains is one batch,
/// 100k listeners of four chains are sixteen.
const BATCH_CHAINS: usize = 1 << 15;

/// At most this many batches: a check may build per batch what serves listeners of several
/// (`h2-coalescing-misroute` indexes the domains of an RDS table many listeners share), so
/// their number grows with nothing but the input's size.
const MAX_BATCHES: usize = 16;

fn run_checks(checks: &[&dyn Check], snapshot: &Snapshot<'_>, sources: &Sources) -> Checked {
    run_in_batches(checks, snapshot, sources, BATCH_CHAINS)
}

/// The live listeners in consecutive groups of at least `min_chains` chains (the last may have
/// fewer), no more than [`MAX_BATCHES`] of them.
fn batches(live: &[(usize, SourceId, Locator<'_>, &Listener<'_>)], min_chains: usize) -> Vec<Range<usize>> {
    let weight = |l: &Listener<'_>| l.filter_chains.len() + 1;
    let total: usize = live.iter().map(|&(.., l)| weight(l)).sum();
    let size = min_chains.max(total.div_ceil(MAX_BATCHES)).max(1);
    let (mut out, mut start, mut chains) = (Vec::new(), 0, 0);
    for (i, &(.., l)) in live.iter().enumerate() {
        chains += weight(l);
        if chains >= size {
            out.push(start..i + 1);
            (start, chains) = (i + 1, 0);
        }
    }
    if start < live.len() {
        out.push(start..live.len());
    }
    out
}

fn run_in_batches(checks: &[&dyn Check], snapshot: &Snapshot<'_>, sources: &Sources, min_chains: usize) -> Checked {
    let reads = checks.iter().fold(Reads::MODEL, |r, c| r.union(c.reads()));
    let live = live_listeners(snapshot, sources);
    let run = |cx: Context<'_, '_>, check: &&dyn Check| {
        let mut out = Vec::new();
        check.run(cx, &mut out);
        out
    };
    // Three kinds: what reads only the model, what reads the filter-chain indexes (run batch
    // by batch), and what reads the route tables alone.
    let (early, late): (Vec<_>, Vec<_>) = checks.iter().enumerate().partition(|(_, c)| c.reads() == Reads::MODEL);
    let (indexed, unindexed): (Vec<_>, Vec<_>) = late.iter().partition(|(_, c)| c.reads().graphs);
    let routes = reads.routes.then(|| crate::model::route::RouteTables::of(snapshot));
    // Every context but a batch's lists the live listeners without their indexes.
    let listeners = listener_cxs(&live, None);
    let cx = Context {
        snapshot,
        sources,
        listeners: &listeners,
        first: 0,
        batch: false,
        routes: routes.as_ref(),
        tables: &[],
    };
    // The batches' indexes are built and checked on some cores while the checks that read none
    // run on the others (building the indexes keeps one core and a part of another busy).
    let (indexed_found, (early_found, (unindexed_found, notes))) = crate::parallel::join(
        || {
            let mut found: Vec<(Vec<Diagnostic>, Vec<Deferred>)> = indexed.iter().map(|_| Default::default()).collect();
            let batches = if reads.graphs { batches(&live, min_chains) } else { Vec::new() };
            for range in batches {
                let part = &live[range.clone()];
                let matchings = par_map(part, |&(.., l)| ListenerMatch::build(l));
                let listeners = listener_cxs(part, Some(&matchings));
                let cx = Context { listeners: &listeners, first: range.start, batch: true, ..cx };
                let batch = par_map(&indexed, |(_, check)| {
                    let mut out = Vec::new();
                    let deferred = check.run_deferred(cx, &mut out);
                    (out, deferred)
                });
                for ((out, deferred), (now, later)) in found.iter_mut().zip(batch) {
                    append(out, now);
                    deferred.extend(later);
                }
            }
            found
        },
        || {
            let early_found = par_map(&early, |(_, check)| run(Context { routes: None, ..cx }, check));
            let tables = if reads.routes { cx.find_route_tables() } else { Vec::new() };
            let cx = Context { tables: &tables, ..cx };
            let found = par_map(&unindexed, |(_, check)| run(cx, check));
            // Each check run says what it could not look at: a check not run says nothing.
            let notes: Vec<String> = checks.iter().flat_map(|c| c.notes(cx)).map(str::to_owned).collect();
            (early_found, (found, notes))
        },
    );
    // Deferred findings are made once every batch's index is dropped (see Check::run_deferred).
    let indexed_found = indexed_found.into_iter().map(|(mut out, deferred)| {
        out.reserve_exact(deferred.iter().map(|later| later.len).sum());
        for later in deferred {
            later.append_to(cx, &mut out);
        }
        out
    });
    // Checks are independent readers of the same graphs; their findings are concatenated in
    // registry order, so the output does not depend on which finished first or when it ran.
    let mut per_check: Vec<(usize, Vec<Diagnostic>)> = (early.iter().map(|&(i, _)| i).zip(early_found))
        .chain(indexed.iter().map(|(i, _)| *i).zip(indexed_found))
        .chain(unindexed.iter().map(|(i, _)| *i).zip(unindexed_found))
        .collect();
    per_check.sort_unstable_by_key(|&(i, _)| i);
    let mut findings = Vec::with_capacity(per_check.iter().map(|(_, f)| f.len()).sum());
    for (_, found) in per_check {
        append(&mut findings, found);
    }
    Checked { findings, notes, built: reads }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SourceFile;

    /// A listener with an inline route table, so that both what a run can build apply.
    const LISTENER: &str = r#"
name: edge
address: {socket_address: {address: 0.0.0.0, port_value: 443}}
listener_filters: [{name: envoy.filters.listener.tls_inspector}]
filter_chains:
- filter_chain_match: {server_names: ["*.example.com", api.example.com]}
  filters:
  - name: envoy.filters.network.http_connection_manager
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      stat_prefix: edge
      http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
      route_config:
        virtual_hosts:
        - {name: a, domains: [api.example.com], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}
        - {name: b, domains: [API.example.com], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}
"#;

    /// A tenant bootstrap with inline route tables has 100k of them, each with its context.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn a_table_context_is_as_small_as_its_fields() {
        assert_eq!(std::mem::size_of::<TableCx<'_, '_>>(), 64);
    }

    #[test]
    fn a_run_builds_only_what_its_selected_checks_read() {
        let mut sources = Sources::new();
        sources.add(SourceFile::new("edge.yaml", LISTENER));
        let documents = crate::read_documents(&sources, &crate::Options::default());
        let (snapshot, failed) = crate::load_all(&documents);
        assert!(failed.is_empty(), "{failed:?}");
        let only = |code: &'static str| run_selected(&snapshot, &sources, move |r: &Rule| r.code == code);
        // A route rule: route tables, no filter-chain index, and it still finds its duplicate.
        let duplicate_domain = only("XDS114");
        assert_eq!(duplicate_domain.built, Reads::ROUTES);
        assert!(duplicate_domain.findings.iter().all(|d| d.rule.code == "XDS114"));
        assert!(!duplicate_domain.findings.is_empty());
        // An index rule: the index only.
        let wildcard_overlap = only("XDS301");
        assert_eq!(wildcard_overlap.built, Reads::GRAPHS);
        assert!(!wildcard_overlap.findings.is_empty());
        // A rule of the model alone builds neither; every rule builds both.
        assert_eq!(only("XDS118").built, Reads::MODEL);
        assert_eq!(run_all(&snapshot, &sources).built, Reads::GRAPHS_AND_ROUTES);
    }

    #[test]
    fn deferred_findings_are_those_made_while_the_index_lives() {
        // The runner makes wildcard-overlap's findings after it dropped the indexes, in a
        // context without them (where asking for one panics): the same findings, in the same
        // order, as the check makes at once beside its index.
        let two = format!("{LISTENER}---\n{}", LISTENER.replace("name: edge", "name: edge-2"));
        let mut sources = Sources::new();
        sources.add(SourceFile::new("edge.yaml", two));
        let documents = crate::read_documents(&sources, &crate::Options::default());
        let (snapshot, failed) = crate::load_all(&documents);
        assert!(failed.is_empty(), "{failed:?}");
        let rule = crate::checks::listener::wildcard_overlap::WildcardOverlap;
        let deferred = run_one(&rule, &snapshot, &sources);
        let live = live_listeners(&snapshot, &sources);
        let matchings: Vec<_> = live.iter().map(|(_, _, _, l)| ListenerMatch::build(l)).collect();
        let listeners = listener_cxs(&live, Some(&matchings));
        let cx = Context {
            snapshot: &snapshot,
            sources: &sources,
            listeners: &listeners,
            first: 0,
            batch: false,
            routes: None,
            tables: &[],
        };
        let mut at_once = Vec::new();
        rule.run(cx, &mut at_once);
        assert_eq!(at_once.len(), 2, "{at_once:#?}");
        assert_ne!(at_once[0].listener, at_once[1].listener);
        assert_eq!(deferred, at_once);
    }

    #[test]
    fn findings_in_batches_are_those_of_one_batch() {
        // The fixtures of every rule of the registry that reads the filter-chain indexes, each
        // an input of its own: checked with every index held at once, and in as many batches
        // as the runner makes of them.
        let rules: Vec<&str> = crate::codes::checks().filter(|c| c.reads().graphs).map(|c| c.rule().name).collect();
        assert!(!rules.is_empty());
        let mut sources = Sources::new();
        for rule in &rules {
            let dir = format!("{}/../testdata/checks/{rule}", env!("CARGO_MANIFEST_DIR"));
            let mut files: Vec<_> =
                std::fs::read_dir(&dir).expect("fixtures").map(|e| e.expect("entry").path()).collect();
            files.sort();
            for path in files.iter().filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "json")) {
                let text = std::fs::read_to_string(path).expect("fixture");
                sources.add(SourceFile::new(path.display().to_string(), text));
            }
        }
        let documents = crate::read_documents(&sources, &crate::Options::default());
        let (snapshot, _) = crate::load_all(&documents);
        let checks: Vec<&dyn Check> = crate::codes::checks().collect();
        assert_eq!(batches(&live_listeners(&snapshot, &sources), usize::MAX).len(), 1);
        let many = batches(&live_listeners(&snapshot, &sources), 1).len();
        assert!((2..=MAX_BATCHES).contains(&many), "{many} batches");
        let whole = run_in_batches(&checks, &snapshot, &sources, usize::MAX);
        let batched = run_in_batches(&checks, &snapshot, &sources, 1);
        for rule in &rules {
            assert!(whole.findings.iter().any(|d| d.rule.name == *rule), "no finding of {rule}");
        }
        assert_eq!(batched.findings, whole.findings);
        assert_eq!(batched.notes, whole.notes);
    }
}
