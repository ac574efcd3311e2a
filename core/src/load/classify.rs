//! From parsed documents to listeners: decide what each document is, walk it, and give every
//! listener its state, its Envoy name and its JSON pointer.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use super::Documents;
use super::error::LoadError;
use super::protojson::ParseScope;
use super::raw::{RawListenerState, RawObject, RawUpdateFailure, object_offset};
use super::route::place;
use super::rules;
use crate::model::build::{BootstrapBuild, ClusterBuild, ClusterPlace, ConfigSourceKind, ConfigSourceUse};
use crate::model::route::{HcmRoutes, NotAnalysed, RouteTable, TableOrigin};
use crate::model::{
    Casing, ClusterList, ClusterName, ErrorState, FilterChain, IgnoreAnnotation, Input, InputKind, Listener,
    ListenerState, NetworkFilterKind, Skipped, SkippedKind, text_of,
};
use crate::parallel::{par_map_cheap, par_map_mut_cheap};
use crate::source::{Location, Locator, SourceId, join_field, join_field_index, join_index, join_token};

const LISTENER_TYPE: &str = "envoy.config.listener.v3.Listener";
const CLUSTER_TYPE: &str = "envoy.config.cluster.v3.Cluster";
const ROUTE_TYPE: &str = "envoy.config.route.v3.RouteConfiguration";
const GATEWAY_API_GROUP: &str = "gateway.networking.k8s.io/";

pub(super) fn classify<'a>(
    id: SourceId,
    text: Locator<'a>,
    documents: Documents<'a>,
    split: Vec<super::raw::PartList<'a>>,
) -> Result<Input<'a>, LoadError> {
    let split = Rc::new(RefCell::new(split));
    let mut walk = Walk::new(id, &split);
    let kind = match documents {
        Documents::Unread(what) => return Err(not_envoy(id, text, "", what)),
        Documents::Proxies(proxies) => {
            let proxies = proxies.into_iter().map(|p| proxy(id, text, p, &split)).collect();
            return Ok(Input {
                kind: InputKind::Proxies,
                proxies,
                ..Walk::new(id, &split).into_input(InputKind::Proxies, text)
            });
        }
        Documents::One(obj) => match walk.document(*obj, String::new()) {
            Ok(kind) => kind,
            Err(refused) if refused.kubernetes => {
                walk.skip_document(String::new(), refused);
                InputKind::Kubernetes
            }
            Err(refused) => return Err(not_envoy(id, text, "", &refused.message())),
        },
        Documents::Many(docs) => {
            let mut kinds: Vec<InputKind> = Vec::new();
            let mut refused: Vec<(String, Refused<'a>)> = Vec::new();
            for (i, doc) in docs.into_iter().enumerate() {
                // An empty YAML document (`---` with nothing after it) holds nothing to read.
                let Some(obj) = doc else { continue };
                let pointer = format!("/{i}");
                match walk.document(obj, pointer.clone()) {
                    Ok(kind) => kinds.push(kind),
                    Err(r) => refused.push((pointer, r)),
                }
            }
            // In a list of Listeners every element is a Listener, whatever fields it gives:
            // Envoy reads `{name: x}` there as a Listener (and rejects it for its missing
            // address), so xdsck does too instead of dropping it.
            if kinds.contains(&InputKind::Listeners) {
                let before = walk.listeners.len();
                refused.retain_mut(|(pointer, r)| match r.obj.take() {
                    Some(obj) if obj.is_plain() => {
                        walk.listener(*obj, pointer.clone(), ListenerState::Declared, None);
                        false
                    }
                    other => {
                        r.obj = other;
                        true
                    }
                });
                // Back into document order: which of two same-named listeners is the later one
                // decides what Envoy keeps.
                if walk.listeners.len() > before {
                    walk.listeners.sort_by_key(|l| document_index(&l.pointer));
                }
            }
            match kinds.first() {
                None => match refused.iter().position(|(_, r)| !r.kubernetes) {
                    Some(i) => {
                        let (pointer, r) = &refused[i];
                        return Err(not_envoy(id, text, pointer, &r.message()));
                    }
                    // `[]`: a list with no listener in it (Envoy Gateway writes such files).
                    None if refused.is_empty() => InputKind::Listeners,
                    None => {
                        for (pointer, r) in refused {
                            walk.skip_document(pointer, r);
                        }
                        InputKind::Kubernetes
                    }
                },
                Some(&k) => {
                    for (pointer, r) in refused {
                        walk.skip_document(pointer, r);
                    }
                    if kinds.iter().all(|&x| x == k) { k } else { InputKind::Mixed }
                }
            }
        }
    };
    Ok(walk.into_input(kind, text))
}

/// One proxy of a peer's output: an input of its own.
fn proxy<'a>(id: SourceId, text: Locator<'a>, p: super::peers::ProxyDocuments<'a>, split: &Split<'a>) -> Input<'a> {
    let mut walk = Walk::new(id, split);
    let mut kinds: Vec<InputKind> = Vec::new();
    for (pointer, message, obj) in p.parts {
        match message {
            Some(m) => {
                walk.typed_resource(obj, pointer, m);
                kinds.push(InputKind::Resources);
            }
            None => match walk.document(obj, pointer.clone()) {
                Ok(k) => kinds.push(k),
                Err(r) => walk.skip_document(pointer, r),
            },
        }
    }
    for (pointer, what, at) in p.skipped {
        let offset = object_offset(Some(at)).map(|o| o + 1);
        let skipped =
            Skipped { kind: SkippedKind::Document, what: what.to_owned(), note: None, pointer: pointer.into(), offset };
        walk.skipped.push(skipped);
    }
    let kind = match kinds.first() {
        Some(&k) if kinds.iter().all(|&x| x == k) => k,
        Some(_) => InputKind::Mixed,
        None => InputKind::Resources,
    };
    Input { proxy: Some(p.proxy), ..walk.into_input(kind, text) }
}

/// The document a pointer into a list or stream starts in (`/3/...` is document 3).
fn document_index(pointer: &str) -> usize {
    pointer.split('/').nth(1).and_then(|i| i.parse().ok()).unwrap_or(usize::MAX)
}

fn not_envoy(id: SourceId, text: Locator<'_>, pointer: &str, what: &str) -> LoadError {
    let offset = text.locate_pointer(pointer);
    LoadError::new(
        &rules::NOT_ENVOY,
        format!("not Envoy configuration: {what}"),
        Location::new(id, pointer, offset.or(Some(0))),
    )
    .note(
        "xdsck reads an Envoy admin /config_dump, a bootstrap, Listener(s), an xDS \
         DiscoveryResponse, or CiliumEnvoyConfig / CiliumClusterwideEnvoyConfig",
    )
}

/// The chain lists the schema walk read in parts, by handle (see `raw::Chains`): shared by the
/// walks of a text's proxies, each taking its listeners' own.
type Split<'a> = Rc<RefCell<Vec<super::raw::PartList<'a>>>>;

struct Walk<'a> {
    source: SourceId,
    split: Split<'a>,
    listeners: Vec<Listener<'a>>,
    error_states: Vec<ErrorState<'a>>,
    skipped: Vec<Skipped>,
    clusters: Option<ClusterList<'a>>,
    route_tables: Vec<RouteTable<'a>>,
    route_answers: bool,
    not_analysed: Vec<NotAnalysed>,
    cluster_builds: Vec<ClusterBuild<'a>>,
    bootstrap: Option<BootstrapBuild<'a>>,
}

/// A document that is none of the kinds xdsck reads: what it is instead, and the object itself
/// when the caller may still read it by its position.
struct Refused<'a> {
    what: String,
    obj: Option<Box<RawObject<'a>>>,
    /// A Kubernetes object of another kind: no Envoy configuration, which a glob over a
    /// repository's manifests meets and passes (a `skipped-document` info), not input xdsck
    /// cannot read.
    kubernetes: bool,
    /// What to do with it instead.
    note: Option<&'static str>,
}

impl Refused<'_> {
    fn new(what: String) -> Self {
        Refused { what, obj: None, kubernetes: false, note: None }
    }

    /// Its words as a load error's.
    fn message(&self) -> String {
        match self.note {
            Some(n) => format!("{}. {n}", self.what),
            None => self.what.clone(),
        }
    }
}

/// What to do with a Gateway API object instead of giving it to `check`.
const GATEWAY_API_NOTE: &str = "xdsck checks what the controller renders from it: the CiliumEnvoyConfig \
     (`kubectl get cec -A -o yaml`) or the proxy's /config_dump; `xdsck gateway` models what Cilium renders \
     from Gateway API YAML";

/// What a config_dump entry (an element of `configs`) is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// `ListenersConfigDump` (or any other config type).
    Dump,
    /// `ListenersConfigDump.DynamicListener`, as `?resource=dynamic_listeners` lists them.
    Dynamic,
    /// `ListenersConfigDump.StaticListener`, as `?resource=static_listeners` lists them.
    Static,
}

impl<'a> Walk<'a> {
    fn new(source: SourceId, split: &Split<'a>) -> Self {
        Walk {
            source,
            split: Rc::clone(split),
            listeners: Vec::new(),
            error_states: Vec::new(),
            skipped: Vec::new(),
            clusters: None,
            route_tables: Vec::new(),
            route_answers: false,
            not_analysed: Vec::new(),
            cluster_builds: Vec::new(),
            bootstrap: None,
        }
    }

    fn into_input(self, kind: InputKind, text: Locator<'a>) -> Input<'a> {
        Input {
            source: self.source,
            kind,
            listeners: self.listeners,
            error_states: self.error_states,
            skipped: self.skipped,
            clusters: self.clusters,
            route_tables: self.route_tables,
            route_answers: self.route_answers,
            not_analysed: self.not_analysed,
            translation: text.translation(),
            problems: Vec::new(),
            cluster_builds: self.cluster_builds,
            bootstrap: self.bootstrap,
            proxy: None,
            proxies: Vec::new(),
        }
    }

    /// One top-level document (or `kind: List` item). `Err` says what it is instead.
    fn document(&mut self, mut obj: RawObject<'a>, pointer: String) -> Result<InputKind, Refused<'a>> {
        let casing = Casing::from_camel(obj.camel);
        if obj.configs.is_some() {
            return Ok(self.config_dump(obj, &pointer));
        }
        if obj.static_resources.is_some() || obj.dynamic_resources.is_some() || obj.admin.is_some() {
            let cds = obj
                .dynamic_resources
                .as_ref()
                .is_some_and(|d| d.cds_config.is_some() || d.cds_resources_locator.is_some());
            let node = obj.node.as_ref().map_or((Cow::Borrowed(""), Cow::Borrowed("")), |n| {
                (
                    n.id.as_ref().map_or(Cow::Borrowed(""), |s| s.0.clone()),
                    n.cluster.as_ref().map_or(Cow::Borrowed(""), |s| s.0.clone()),
                )
            });
            let extensions = obj
                .bootstrap_extensions
                .take()
                .map(|l| l.0)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|e| e.typed_config.and_then(|t| t.type_url).map(|t| t.0))
                .collect();
            let admin_address = obj.admin.take().and_then(|a| {
                let at = join_field(&join_field(&pointer, casing, "admin"), Casing::from_camel(a.camel), "address");
                a.address.and_then(|x| x.into_model()).map(|x| (at, x))
            });
            let mut build = BootstrapBuild {
                cds,
                node,
                pointer: pointer.clone(),
                extensions,
                admin_address,
                ..BootstrapBuild::default()
            };
            if let Some(dynamic) = obj.dynamic_resources {
                let at = join_field(&pointer, casing, "dynamic_resources");
                let inner = Casing::from_camel(dynamic.camel);
                if let Some(api) = dynamic.cds_config.and_then(|c| {
                    let at = join_field(
                        &join_field(&at, inner, "cds_config"),
                        Casing::from_camel(c.camel),
                        "api_config_source",
                    );
                    c.api_config_source.map(|a| (a, at))
                }) {
                    let (api, at) = api;
                    build.cds_api_type = api.api_type.map(|t| (t.0, at.clone()));
                    build.config_sources.extend(
                        api.clusters(&at).into_iter().map(|(pointer, cluster)| ConfigSourceUse {
                            pointer,
                            cluster,
                            source: ConfigSourceKind::Cds,
                        }),
                    );
                }
                if let Some(ads) = dynamic.ads_config {
                    let at = join_field(&at, inner, "ads_config");
                    build.config_sources.extend(
                        ads.clusters(&at).into_iter().map(|(pointer, cluster)| ConfigSourceUse {
                            pointer,
                            cluster,
                            source: ConfigSourceKind::Ads,
                        }),
                    );
                }
            }
            if let Some(resources) = obj.static_resources {
                let inner = Casing::from_camel(resources.camel);
                let sr = join_field(&pointer, casing, "static_resources");
                let base = join_field(&sr, inner, "listeners");
                let listeners = resources.listeners.map(|l| l.take(&mut self.split.borrow_mut()));
                self.make_listeners(listeners.unwrap_or_default(), |i| ListenerAt {
                    pointer: join_index(&base, i),
                    state: ListenerState::Static,
                    version: None,
                });
                build.static_secrets = resources.secrets.unwrap_or_default().into_iter().map(|s| cow(s.name)).collect();
                // Without `clusters` the bootstrap is taken as listeners alone, not as one
                // that defines no cluster (what xdsck's own fixtures and extracts look like).
                if let Some(clusters) = resources.clusters.map(|l| l.take(&mut self.split.borrow_mut())) {
                    let list = self.clusters.get_or_insert_with(ClusterList::default);
                    list.partial |= cds;
                    let base: std::sync::Arc<str> = join_field(&sr, inner, "clusters").into();
                    // In place (a `BuiltCluster` is its build; the spare room of a long list's
                    // parse buffer is pages never written), and moved whole: a tenant bootstrap's
                    // 100k clusters are 40 MB of builds, which a copy into a growing list held
                    // twice over.
                    let mut builds: Vec<ClusterBuild<'a>> = clusters
                        .into_iter()
                        .enumerate()
                        .map(|(i, c)| ClusterBuild { place: ClusterPlace::Listed(base.clone(), i as u32), ..c.0 })
                        .collect();
                    list.names.extend(builds.iter().map(|b| ClusterName { name: b.name.clone(), is_static: true }));
                    if self.cluster_builds.is_empty() {
                        self.cluster_builds = builds;
                    } else {
                        self.cluster_builds.append(&mut builds);
                    }
                }
            }
            self.bootstrap = Some(build);
            return Ok(InputKind::Bootstrap);
        }
        if let Some(kind) = obj.kind.as_ref().map(|k| k.0.clone()) {
            let api_version = obj.api_version.as_ref().map(|v| v.0.to_string()).unwrap_or_default();
            return match &*kind {
                "List" => self.list(obj, &pointer).map_err(Refused::new),
                "CiliumEnvoyConfig" | "CiliumClusterwideEnvoyConfig" => {
                    let clusterwide = kind == "CiliumClusterwideEnvoyConfig";
                    Ok(self.cec(obj, &pointer, clusterwide))
                }
                other => Err(Refused {
                    what: describe_kind(other, &api_version),
                    obj: Some(Box::new(obj)),
                    kubernetes: true,
                    note: api_version.starts_with(GATEWAY_API_GROUP).then_some(GATEWAY_API_NOTE),
                }),
            };
        }
        if obj.metadata.is_some() && obj.spec.as_ref().is_some_and(|s| s.resources.is_some()) {
            // Cilium's own golden files omit apiVersion and kind; a namespace tells the kinds apart.
            let clusterwide = obj.metadata.as_ref().is_some_and(|m| m.namespace.is_none());
            return Ok(self.cec(obj, &pointer, clusterwide));
        }
        if obj.resources.is_some() {
            let delta = obj.system_version_info.is_some() || obj.removed_resources.is_some();
            let listener_type = obj.type_url.as_ref().is_some_and(|t| is_listener_type(&t.0));
            // A CDS response carries the cluster list even when it is empty; a delta one only
            // what changed.
            if obj.type_url.as_ref().is_some_and(|t| is_type(&t.0, CLUSTER_TYPE)) {
                self.clusters.get_or_insert_with(ClusterList::default).partial |= delta;
            }
            // A SotW RDS response answers every name asked; a delta one only what changed.
            self.route_answers |= !delta && obj.type_url.as_ref().is_some_and(|t| is_type(&t.0, ROUTE_TYPE));
            let base = join_field(&pointer, casing, "resources");
            let resources = obj.resources.map(|r| r.take(&mut self.split.borrow_mut()));
            for (i, r) in resources.unwrap_or_default().into_iter().enumerate() {
                self.resource(r, join_index(&base, i), listener_type, false);
            }
            if delta && let Some(c) = &mut self.clusters {
                c.partial = true;
            }
            return Ok(if delta { InputKind::DeltaDiscoveryResponse } else { InputKind::DiscoveryResponse });
        }
        if obj.active_state.is_some()
            || obj.error_state.is_some()
            || obj.warming_state.is_some()
            || obj.draining_state.is_some()
        {
            let mut jobs = Jobs::default();
            self.dynamic(Dynamic::from_object(obj), &pointer, &mut jobs);
            self.make_jobs(jobs);
            return Ok(InputKind::DynamicListenersDump);
        }
        if obj.listener.is_some() {
            self.static_entry(obj, &pointer);
            return Ok(InputKind::StaticListenersDump);
        }
        // One `configs` entry on its own (a `ListenersConfigDump`, a `RoutesConfigDump`), as
        // `egctl config envoy-proxy listener` prints it for each pod.
        if obj.is_dump_entry() {
            self.dump_entry(obj, &pointer);
            return Ok(InputKind::ConfigDump);
        }
        if is_listener(&obj) {
            self.listener(obj, pointer, ListenerState::Declared, None);
            return Ok(InputKind::Listeners);
        }
        if obj.keys == 0 {
            // `{}`: what Envoy's admin answers to `/config_dump?resource=...` when nothing is
            // there (no dynamic listeners, say).
            return Ok(InputKind::ConfigDump);
        }
        let what = match obj.type_url() {
            Some(t) => format!("a `{}` message", t.rsplit('/').next().unwrap_or(t)),
            None if obj.metadata.is_some() => "an object with `metadata` but no `kind`".to_owned(),
            None => "an object with none of the fields of a config_dump (`configs`), a bootstrap \
                     (`static_resources`), a Listener (`address`, `filter_chains`), a \
                     DiscoveryResponse (`resources`) or a CiliumEnvoyConfig (`kind`, `spec`)"
                .to_owned(),
        };
        Err(Refused { what, obj: Some(Box::new(obj)), kubernetes: false, note: None })
    }

    fn config_dump(&mut self, obj: RawObject<'a>, pointer: &str) -> InputKind {
        let mut entries: Vec<Entry> = Vec::new();
        for (i, entry) in obj.configs.unwrap_or_default().into_iter().enumerate() {
            let p = join_field_index(pointer, Casing::Snake, "configs", i);
            entries.push(self.dump_entry(entry, &p));
        }
        match entries.first() {
            Some(&Entry::Dynamic) if entries.iter().all(|&e| e == Entry::Dynamic) => InputKind::DynamicListenersDump,
            Some(&Entry::Static) if entries.iter().all(|&e| e == Entry::Static) => InputKind::StaticListenersDump,
            _ => InputKind::ConfigDump,
        }
    }

    /// One entry of a config_dump's `configs`.
    fn dump_entry(&mut self, entry: RawObject<'a>, p: &str) -> Entry {
        let casing = Casing::from_camel(entry.camel);
        if entry.static_listeners.is_some() || entry.dynamic_listeners.is_some() {
            let RawObject { static_listeners, dynamic_listeners, .. } = entry;
            let sp = join_field(p, casing, "static_listeners");
            for (j, s) in static_listeners.unwrap_or_default().into_iter().enumerate() {
                let lp = join_field(&join_index(&sp, j), Casing::Snake, "listener");
                if let Some(l) = s.listener {
                    self.listener(*l, lp, ListenerState::Static, None);
                }
            }
            let dp = join_field(p, casing, "dynamic_listeners");
            let dynamic_listeners = dynamic_listeners.map(|d| d.take(&mut self.split.borrow_mut()));
            let mut jobs = Jobs::default();
            for (j, d) in dynamic_listeners.unwrap_or_default().into_iter().enumerate() {
                let casing = Casing::from_camel(d.camel);
                let dynamic = Dynamic {
                    name: d.name.map(|n| n.0),
                    casing,
                    active: d.active_state,
                    warming: d.warming_state,
                    draining: d.draining_state,
                    error: d.error_state,
                };
                self.dynamic(dynamic, &join_index(&dp, j), &mut jobs);
            }
            self.make_jobs(jobs);
            Entry::Dump
        } else if entry.active_state.is_some()
            || entry.warming_state.is_some()
            || entry.draining_state.is_some()
            || entry.error_state.is_some()
        {
            let mut jobs = Jobs::default();
            self.dynamic(Dynamic::from_object(entry), p, &mut jobs);
            self.make_jobs(jobs);
            Entry::Dynamic
        } else if entry.listener.is_some() {
            self.static_entry(entry, p);
            Entry::Static
        } else {
            self.dump_clusters_and_routes(entry, p);
            Entry::Dump
        }
    }

    /// A config_dump's `ClustersConfigDump` (every cluster Envoy has: static, active and
    /// warming, all of which a route may name) and `RoutesConfigDump` (every table it has: the
    /// static ones are the bootstrap's inline tables again).
    fn dump_clusters_and_routes(&mut self, mut entry: RawObject<'a>, pointer: &str) {
        let casing = Casing::from_camel(entry.camel);
        for (list, field, origin) in [
            (entry.static_route_configs.take(), "static_route_configs", TableOrigin::DumpStatic),
            (entry.dynamic_route_configs.take(), "dynamic_route_configs", TableOrigin::Rds),
        ] {
            let base = join_field(pointer, casing, field);
            for (j, e) in list.unwrap_or_default().into_iter().enumerate() {
                let Some(rc) = e.route_config else { continue };
                let p = join_field(&join_index(&base, j), Casing::from_camel(e.camel), "route_config");
                self.table(rc.into_route_table(origin), p);
            }
        }
        let is_clusters = entry.type_url().is_some_and(|t| t.ends_with(".ClustersConfigDump"));
        if is_clusters
            || entry.static_clusters.is_some()
            || entry.dynamic_active_clusters.is_some()
            || entry.dynamic_warming_clusters.is_some()
        {
            let list = self.clusters.get_or_insert_with(ClusterList::default);
            for (entries, is_static) in [
                (entry.static_clusters, true),
                (entry.dynamic_active_clusters, false),
                (entry.dynamic_warming_clusters, false),
            ] {
                let names = entries.unwrap_or_default().into_iter().filter_map(|e| e.cluster);
                list.names.extend(names.map(|c| ClusterName { name: text_of(cow(c.name)), is_static }));
            }
        }
    }

    /// A `ListenersConfigDump.StaticListener` on its own (`?resource=static_listeners`).
    fn static_entry(&mut self, entry: RawObject<'a>, pointer: &str) {
        if let Some(l) = entry.listener {
            self.listener(*l, join_field(pointer, Casing::Snake, "listener"), ListenerState::Static, None);
        }
    }

    /// A resource a peer's wrapper names the type of (`listeners:`, a Kuma type URL key).
    fn typed_resource(&mut self, r: RawObject<'a>, pointer: String, message: &'static str) {
        match message {
            // A config_dump's entry on its own, known by its `@type`.
            m if m.starts_with("envoy.admin.v3.") => {
                self.dump_entry(r, &pointer);
            }
            LISTENER_TYPE => self.listener(r, pointer, ListenerState::Declared, None),
            ROUTE_TYPE => self.table(r.into_route_table(TableOrigin::Rds), pointer),
            CLUSTER_TYPE => self.cluster(r, pointer),
            other => {
                let what = other.rsplit('.').next().unwrap_or(other).to_owned();
                self.other_resource(&r, pointer, what);
            }
        }
    }

    /// A Cluster resource (CDS, a peer's list): its name for the routes, its parts for the
    /// cluster manager's checks.
    fn cluster(&mut self, r: RawObject<'a>, pointer: String) {
        let list = self.clusters.get_or_insert_with(ClusterList::default);
        list.names.push(ClusterName { name: text_of(cow(r.name.clone())), is_static: false });
        let mut build = r.into_cluster_parts().into_build();
        build.place = ClusterPlace::At(pointer.into_boxed_str());
        self.cluster_builds.push(build);
    }

    /// A resource of a type xdsck does not check, named so that it is not dropped unseen.
    fn other_resource(&mut self, r: &RawObject<'a>, pointer: String, what: String) {
        let offset = object_offset(r.first_key);
        self.skipped.push(Skipped { kind: SkippedKind::Resource, what, note: None, pointer: pointer.into(), offset });
    }

    /// One element of an xDS `resources` list (a DiscoveryResponse's, or a CiliumEnvoyConfig's
    /// `spec.resources`): a Listener, a `Resource` wrapper holding one, or a resource of another
    /// type, which is counted. Without an `@type`, a resource of a Listener response is a
    /// Listener by its place; elsewhere its fields decide.
    fn resource(&mut self, r: RawObject<'a>, pointer: String, listener_type: bool, cilium: bool) {
        let (r, pointer) = match r.resource {
            Some(inner) => (*inner, join_field(&pointer, Casing::Snake, "resource")),
            None => (r, pointer),
        };
        let listener = match r.type_url() {
            Some(t) => is_listener_type(t),
            None => listener_type || r.has_listener_fields(),
        };
        if !listener {
            let type_url = r.type_url().unwrap_or_default();
            if is_type(type_url, ROUTE_TYPE) {
                self.table(r.into_route_table(TableOrigin::Rds), pointer);
                return;
            }
            // A CiliumEnvoyConfig's clusters are not all the agent's: they stay other resources.
            if is_type(type_url, CLUSTER_TYPE) && !cilium {
                self.cluster(r, pointer);
                return;
            }
            let what = match r.type_url() {
                Some(t) => t.rsplit(['/', '.']).next().unwrap_or(t).to_owned(),
                None => "resource without `@type`".to_owned(),
            };
            self.other_resource(&r, pointer, what);
            return;
        }
        let start = self.listeners.len();
        self.listener(r, pointer, ListenerState::Declared, None);
        self.listeners[start].address_assigned_by_agent = cilium;
    }

    fn skip_document(&mut self, pointer: String, refused: Refused<'a>) {
        let offset = refused.obj.as_ref().and_then(|o| object_offset(o.first_key));
        let (what, note) = (refused.what, refused.note);
        self.skipped.push(Skipped { kind: SkippedKind::Document, what, note, pointer: pointer.into(), offset });
    }

    /// A DynamicListener entry: its listeners (one per state) go to `jobs`, to be made with the
    /// other entries'.
    fn dynamic(&mut self, d: Dynamic<'a>, pointer: &str, jobs: &mut Jobs<'a>) {
        let name = d.name.unwrap_or_default();
        let has_active = d.active.as_ref().is_some_and(|s| s.listener.is_some());
        for (state, field, value) in [
            (ListenerState::Active, "active_state", d.active),
            (ListenerState::Warming, "warming_state", d.warming),
            (ListenerState::Draining, "draining_state", d.draining),
        ] {
            let Some(s) = value else { continue };
            let sp = join_field(pointer, d.casing, field);
            let version = s.version_info.map(|v| v.0);
            if let Some(l) = s.listener {
                jobs.objs.push(*l);
                jobs.at.push(ListenerAt { pointer: join_field(&sp, Casing::Snake, "listener"), state, version });
            }
        }
        if let Some(e) = d.error {
            self.error_state(e, name, join_field(pointer, d.casing, "error_state"), has_active);
        }
    }

    fn error_state(&mut self, e: RawUpdateFailure<'a>, name: Cow<'a, str>, pointer: String, has_active: bool) {
        let casing = Casing::from_camel(e.camel);
        let failed = e.failed_configuration.map(|l| {
            let mut l =
                l.into_listener(join_field(&pointer, casing, "failed_configuration"), &mut self.split.borrow_mut());
            l.state = ListenerState::Declared;
            // What of a refused configuration is not analysed is not reported.
            place_routes(&mut l, self.source);
            l
        });
        let details = e.details.map(|d| d.0).unwrap_or_default();
        // Envoy 1.40 lists each rejected update twice: under the listener's entry and again in
        // an entry with no name that holds only the error_state. Name the anonymous one after
        // the listener it carries, and keep one copy.
        let name = match (&*name, &failed) {
            ("", Some(l)) => Cow::from(l.name.clone()),
            _ => name,
        };
        if self.error_states.iter().any(|x| x.listener_name == name && x.details == details) {
            return;
        }
        self.error_states.push(ErrorState {
            listener_name: name,
            details,
            last_update_attempt: e.last_update_attempt.map(|t| t.0),
            offset: e.first_key.and_then(super::protojson::offset_of).map(|o| o.saturating_sub(1)),
            pointer: pointer.into(),
            has_active_state: has_active,
            failed_configuration: failed,
        });
    }

    fn list(&mut self, obj: RawObject<'a>, pointer: &str) -> Result<InputKind, String> {
        let mut kinds = Vec::new();
        let mut refused = Vec::new();
        for (i, item) in obj.items.unwrap_or_default().into_iter().enumerate() {
            let p = join_field_index(pointer, Casing::Snake, "items", i);
            match self.document(item, p.clone()) {
                Ok(k) => kinds.push(k),
                Err(r) => refused.push((i, p, r)),
            }
        }
        match kinds.first() {
            // `kubectl get cec -A -o yaml` on a cluster without any: nothing to check, as an
            // empty JSON list (`no-listeners` says so), not input xdsck cannot read.
            None if refused.is_empty() => Ok(InputKind::Listeners),
            None if refused.iter().all(|(_, _, r)| r.kubernetes) => {
                for (_, p, r) in refused {
                    self.skip_document(p, r);
                }
                Ok(InputKind::Kubernetes)
            }
            None => {
                let what: Vec<String> = refused.iter().map(|(i, _, r)| format!("item {i}: {}", r.what)).collect();
                Err(format!("a `kind: List` of {}", what.join("; ")))
            }
            Some(&k) => {
                for (_, p, r) in refused {
                    self.skip_document(p, r);
                }
                Ok(if kinds.iter().all(|&x| x == k) { k } else { InputKind::Mixed })
            }
        }
    }

    fn cec(&mut self, obj: RawObject<'a>, pointer: &str, clusterwide: bool) -> InputKind {
        // The `xdsck.io/ignore` annotation goes onto each of the CEC's listeners.
        let ignore =
            obj.metadata.as_ref().and_then(|m| m.annotations.as_ref()).and_then(|a| a.xdsck_ignore.clone()).map(
                |value| {
                    let at = join_field(&join_field(pointer, Casing::Snake, "metadata"), Casing::Snake, "annotations");
                    Box::new(IgnoreAnnotation {
                        value: value.into_cow(),
                        pointer: join_token(&at, crate::settings::IGNORE_ANNOTATION).into(),
                    })
                },
            );
        let (cec_name, namespace) = match &obj.metadata {
            Some(m) => (
                m.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                if clusterwide {
                    String::new()
                } else {
                    m.namespace.as_ref().map(|n| n.0.to_string()).unwrap_or_default()
                },
            ),
            None => (String::new(), String::new()),
        };
        let Some(spec) = obj.spec else {
            return InputKind::CiliumEnvoyConfig;
        };
        let base = join_field(&join_field(pointer, Casing::Snake, "spec"), Casing::Snake, "resources");
        for (i, r) in spec.resources.map(|r| r.0).unwrap_or_default().into_iter().enumerate() {
            let (start, tables) = (self.listeners.len(), self.route_tables.len());
            self.resource(r, join_index(&base, i), false, true);
            // The agent names a CEC's resources, and the route tables its listeners ask RDS
            // for, within the CEC: `<namespace>/<cec>/<name>`.
            if let Some(l) = self.listeners.get_mut(start) {
                if let Some(name) = qualified_name(&namespace, &cec_name, &l.name) {
                    l.name = text_of(Cow::Owned(name));
                }
                l.ignore_annotation = ignore.clone();
                for f in
                    l.filter_chains.iter_mut().chain(l.default_filter_chain.as_deref_mut()).flat_map(|c| &mut c.filters)
                {
                    if let NetworkFilterKind::HttpConnectionManager(h) = &mut f.kind
                        && let HcmRoutes::Rds(name) = &mut h.routes
                        && let Some(qualified) = qualified_name(&namespace, &cec_name, name)
                    {
                        *name = Cow::Owned(qualified);
                    }
                }
            }
            for t in &mut self.route_tables[tables..] {
                if let Some(n) = &t.name
                    && let Some(qualified) = qualified_name(&namespace, &cec_name, n)
                {
                    t.name = Some(text_of(Cow::Owned(qualified)));
                }
            }
        }
        InputKind::CiliumEnvoyConfig
    }

    fn listener(&mut self, obj: RawObject<'a>, pointer: String, state: ListenerState, version: Option<Cow<'a, str>>) {
        self.make_jobs(Jobs { objs: vec![obj], at: vec![ListenerAt { pointer, state, version }] });
    }

    /// Makes the listeners `jobs` holds, in order (see [`Self::make_listeners`]).
    fn make_jobs(&mut self, jobs: Jobs<'a>) {
        let Jobs { objs, at } = jobs;
        self.make_listeners(objs, |i| at[i].clone());
    }

    /// Makes the listeners of `objs` (the `i`th at `at(i)`), their route tables placed, in
    /// order: on every core when there are many (made one after another, a tenant gateway's 10k
    /// listeners were a phase of the load with one core busy, about a tenth of the run with a
    /// route table each).
    fn make_listeners(&mut self, mut objs: Vec<RawObject<'a>>, at: impl Fn(usize) -> ListenerAt<'a> + Sync + Send) {
        {
            // What each needs of the lists read in parts is taken here, in order; the rest of a
            // listener's making reads nothing shared.
            let mut split = self.split.borrow_mut();
            for obj in &mut objs {
                obj.take_chains(&mut split);
            }
        }
        let source = self.source;
        // What is not analysed (scoped routes: rare), by listener.
        let not_analysed = std::sync::Mutex::new(Vec::new());
        // The listeners' offsets are their first keys' places in the text, which the other
        // cores must know too: without, a run of 1024 listeners or more had none, and each
        // finding's place was searched from the top of the file (quadratic in the listeners).
        let parsing = ParseScope::current();
        let mut made = par_map_mut_cheap(&mut objs, |i, obj| {
            let _scope = ParseScope::again(parsing);
            let ListenerAt { pointer, state, version } = at(i);
            // No part table: its chains were taken out above.
            let mut l = std::mem::take(obj).into_listener(pointer, &mut []);
            l.state = state;
            l.version_info = version.map(text_of);
            let found = place_routes(&mut l, source);
            if !found.is_empty() {
                not_analysed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((i, found));
            }
            l
        });
        let mut not_analysed = not_analysed.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        not_analysed.sort_unstable_by_key(|&(i, _)| i);
        self.not_analysed.extend(not_analysed.into_iter().flat_map(|(_, found)| found));
        // Moved whole when it is the first list (a bootstrap's): no copy of 100k listeners.
        if self.listeners.is_empty() {
            self.listeners = made;
        } else {
            self.listeners.append(&mut made);
        }
    }

    /// Adds a RouteConfiguration resource at `pointer`.
    fn table(&mut self, mut t: RouteTable<'a>, pointer: String) {
        place(&mut t, self.source, pointer, &mut self.not_analysed);
        self.route_tables.push(t);
    }
}

/// A DynamicListener entry, from either form it comes in.
struct Dynamic<'a> {
    name: Option<Cow<'a, str>>,
    casing: Casing,
    active: Option<RawListenerState<'a>>,
    warming: Option<RawListenerState<'a>>,
    draining: Option<RawListenerState<'a>>,
    error: Option<RawUpdateFailure<'a>>,
}

impl<'a> Dynamic<'a> {
    fn from_object(obj: RawObject<'a>) -> Self {
        Dynamic {
            casing: Casing::from_camel(obj.camel),
            name: obj.name.map(|n| n.0),
            active: obj.active_state.map(|s| *s),
            warming: obj.warming_state.map(|s| *s),
            draining: obj.draining_state.map(|s| *s),
            error: obj.error_state.map(|s| *s),
        }
    }
}

fn is_listener(obj: &RawObject<'_>) -> bool {
    match obj.type_url() {
        Some(t) => is_listener_type(t),
        None => obj.has_listener_fields(),
    }
}

/// Any type URLs are `<prefix>/<full message name>`; the prefix is free-form.
fn is_listener_type(type_url: &str) -> bool {
    is_type(type_url, LISTENER_TYPE)
}

fn is_type(type_url: &str, message: &str) -> bool {
    type_url.rsplit('/').next() == Some(message)
}

fn cow<'a>(s: Option<super::protojson::Str<'a>>) -> Cow<'a, str> {
    s.map(super::protojson::Str::into_cow).unwrap_or_default()
}

/// The name the Cilium agent gives a CEC resource: `<namespace>/<cec>/<name>`, unless the name
/// already has a `/` or is empty (`ResourceQualifiedName` in cilium/pkg/policy/api).
/// `None` when the name stays as it is.
pub(crate) fn qualified_name(namespace: &str, cec: &str, name: &str) -> Option<String> {
    (!name.is_empty() && !name.contains('/')).then(|| format!("{namespace}/{cec}/{name}"))
}

fn describe_kind(kind: &str, api_version: &str) -> String {
    if api_version.starts_with(GATEWAY_API_GROUP) {
        format!("a Gateway API `{kind}` ({api_version})")
    } else if api_version.is_empty() {
        format!("a Kubernetes `{kind}`")
    } else {
        format!("a Kubernetes `{kind}` ({api_version})")
    }
}

/// Where a listener to make is, and what the dump says of it.
#[derive(Clone)]
struct ListenerAt<'a> {
    pointer: String,
    state: ListenerState,
    version: Option<Cow<'a, str>>,
}

/// Listeners to make, and where each is.
#[derive(Default)]
struct Jobs<'a> {
    objs: Vec<RawObject<'a>>,
    at: Vec<ListenerAt<'a>>,
}

/// Gives a listener's http_connection_managers and their inline tables their places; what of
/// them xdsck does not analyse.
fn place_routes(l: &mut Listener<'_>, source: SourceId) -> Vec<NotAnalysed> {
    // Only a chain with an inline table or scopes needs its place spelled out (most chains have
    // neither: a tenant's HCM names an RDS table). On every core: a tenant listener's chains are
    // hundreds of megabytes to pass over.
    let needs_place = |c: &FilterChain<'_>| {
        c.filters.iter().any(|f| {
            matches!(&f.kind, NetworkFilterKind::HttpConnectionManager(h) if matches!(h.routes, HcmRoutes::Inline(_) | HcmRoutes::Scoped))
        })
    };
    let pointers: Vec<Option<String>> = par_map_cheap(&l.filter_chains, |c| needs_place(c).then(|| l.chain_pointer(c)));
    let default = l.default_filter_chain.as_ref().filter(|c| needs_place(c)).map(|c| l.chain_pointer(c));
    let mut found =
        par_map_mut_cheap(&mut l.filter_chains, |i, chain| place_chain(chain, pointers[i].as_deref(), source));
    if let Some(chain) = l.default_filter_chain.as_mut() {
        found.push(place_chain(chain, default.as_deref(), source));
    }
    found.into_iter().flatten().collect()
}

/// Gives the HCMs of a chain their input, and their inline route tables and scopes their
/// places (the chain being at `chain_pointer`, given when it has either); what of them xdsck
/// does not analyse.
fn place_chain(chain: &mut FilterChain<'_>, chain_pointer: Option<&str>, source: SourceId) -> Vec<NotAnalysed> {
    let mut not_analysed = Vec::new();
    for j in 0..chain.filters.len() {
        // An HCM keeps no pointer of its own: spelt here only for what it places.
        let pointer = match &chain.filters[j].kind {
            NetworkFilterKind::HttpConnectionManager(h) => match (&h.routes, chain_pointer) {
                (HcmRoutes::Inline(_) | HcmRoutes::Scoped, Some(at)) => chain.filter_pointer(at, j),
                _ => String::new(),
            },
            _ => continue,
        };
        let NetworkFilterKind::HttpConnectionManager(h) = &mut chain.filters[j].kind else { continue };
        h.source = source;
        match &mut h.routes {
            HcmRoutes::Inline(t) => place(t, source, join_token(&pointer, h.table_key), &mut not_analysed),
            HcmRoutes::Scoped => {
                let key = if h.table_key == "routeConfig" { "scopedRoutes" } else { "scoped_routes" };
                not_analysed.push(NotAnalysed { source, pointer: join_token(&pointer, key), what: "scoped_routes" });
            }
            HcmRoutes::Rds(_) | HcmRoutes::None => {}
        }
    }
    not_analysed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cluster's name and whether it is static, and whether the list is partial.
    type Names = (Vec<(String, bool)>, bool);

    fn clusters(text: &str) -> (Option<Names>, usize) {
        let mut sources = crate::source::Sources::new();
        let id = sources.add(crate::source::SourceFile::new("t.yaml", text));
        let document = crate::load::Document::new(id, sources.get(id));
        let input = document.load().expect("loads");
        let list = input
            .clusters
            .as_ref()
            .map(|c| (c.names.iter().map(|n| (n.name.to_string(), n.is_static)).collect::<Vec<_>>(), c.partial));
        (list, input.inventory().route_tables)
    }

    #[test]
    fn cluster_lists_are_read_from_every_shape_that_holds_one() {
        // A bootstrap: static, partial when CDS may add more; without `clusters`, no list.
        let b = "static_resources: {clusters: [{name: a}, {name: b}]}\ndynamic_resources: {cds_config: {ads: {}}}\n";
        assert_eq!(clusters(b).0, Some((vec![("a".into(), true), ("b".into(), true)], true)));
        assert_eq!(clusters("static_resources: {listeners: []}\n").0, None);
        // A config_dump: static, active and warming clusters; route configs counted.
        let dump = r#"{"configs": [
            {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
             "static_clusters": [{"cluster": {"name": "s"}}],
             "dynamic_active_clusters": [{"version_info": "1", "cluster": {"@type": "x", "name": "act"}}],
             "dynamic_warming_clusters": [{"cluster": {"name": "warm"}}]},
            {"@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
             "dynamic_route_configs": [{"route_config": {"name": "r1"}}, {"route_config": {"name": "r2"}}]}]}"#;
        let (list, tables) = clusters(dump);
        assert_eq!(list, Some((vec![("s".into(), true), ("act".into(), false), ("warm".into(), false)], false)));
        assert_eq!(tables, 2);
        // A CDS response, even an empty one, carries the list; a delta one only changes.
        let cds = "type_url: type.googleapis.com/envoy.config.cluster.v3.Cluster\nresources:\n- {'@type': type.googleapis.com/envoy.config.cluster.v3.Cluster, name: c}\n";
        assert_eq!(clusters(cds).0, Some((vec![("c".into(), false)], false)));
        let empty = "type_url: type.googleapis.com/envoy.config.cluster.v3.Cluster\nresources: []\n";
        assert_eq!(clusters(empty).0, Some((vec![], false)));
        // A delta one's resources are `Resource` wrappers around each Any.
        let delta = "system_version_info: '1'\ntype_url: type.googleapis.com/envoy.config.cluster.v3.Cluster\nresources:\n- {name: c, version: '1', resource: {'@type': type.googleapis.com/envoy.config.cluster.v3.Cluster, name: c}}\n";
        assert_eq!(clusters(delta).0, Some((vec![("c".into(), false)], true)));
        // A CiliumEnvoyConfig's clusters are not the agent's whole list.
        let cec = "apiVersion: cilium.io/v2\nkind: CiliumEnvoyConfig\nmetadata: {name: x, namespace: ns}\nspec:\n  resources:\n  - {'@type': type.googleapis.com/envoy.config.cluster.v3.Cluster, name: c}\n  - {'@type': type.googleapis.com/envoy.config.route.v3.RouteConfiguration, name: r}\n";
        assert_eq!(clusters(cec), (None, 1));
    }

    #[test]
    fn cilium_qualifies_names_like_the_agent() {
        assert_eq!(qualified_name("ns", "cec", "listener").as_deref(), Some("ns/cec/listener"));
        assert_eq!(qualified_name("", "ccec", "listener").as_deref(), Some("/ccec/listener"));
        assert_eq!(qualified_name("ns", "cec", "a/b"), None);
        assert_eq!(qualified_name("ns", "cec", ""), None);
    }
}
