//! What an observer holds of one proxy's configuration across the xDS types, and when it is
//! whole: the listeners, the route tables they ask RDS for, and the clusters. Sans-io like
//! [`crate::protocol`]: the driver feeds it responses and asks whether to check.

use std::collections::BTreeSet;
use std::sync::Arc;

use envoy_types::pb::envoy::config::listener::v3::{Listener, filter};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::http_connection_manager::RouteSpecifier;
use envoy_types::pb::google::protobuf::Any;
use prost::Message;

use crate::protocol::{CLUSTER_TYPE_URL, LISTENER_TYPE_URL, Named, ROUTE_TYPE_URL};

const HCM_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";

/// The three types an observer follows, in the order it checks them.
pub const TYPES: [&str; 3] = [LISTENER_TYPE_URL, ROUTE_TYPE_URL, CLUSTER_TYPE_URL];

/// One type's resources as last received: the whole list (state of the world), or what the
/// incremental protocol holds, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    pub type_url: String,
    /// The response's `version_info` (state of the world) or `system_version_info` (delta,
    /// which servers may leave empty).
    pub version: String,
    /// Resources in the order received (state of the world: duplicates and all, as Envoy sees
    /// them) or by name (delta).
    pub resources: Vec<Named>,
}

/// Listener, RouteConfiguration and Cluster all name themselves in field 1: enough to tell
/// resources apart without decoding them.
#[derive(Clone, PartialEq, Message)]
struct NameOnly {
    #[prost(string, tag = "1")]
    name: String,
}

impl Held {
    /// A state-of-the-world response: every resource at the response's version, named by its
    /// own `name` (empty when it does not decode: the checks say why).
    pub fn whole(type_url: &str, version: &str, resources: Vec<Any>) -> Held {
        let resources = resources
            .into_iter()
            .map(|any| Named {
                name: NameOnly::decode(any.value.as_slice()).map(|n| n.name).unwrap_or_default(),
                version: version.to_owned(),
                any,
            })
            .collect();
        Held { type_url: type_url.to_owned(), version: version.to_owned(), resources }
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.resources.iter().map(|r| r.name.as_str())
    }
}

/// The RDS table names the listeners' `http_connection_manager`s ask for, as Envoy asks for
/// them (`rds.route_config_name` of every filter chain, the default one included). A listener
/// or HCM that does not decode asks for nothing; the checks report it.
pub fn route_names(listeners: &Held) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for r in &listeners.resources {
        let Ok(l) = Listener::decode(r.any.value.as_slice()) else { continue };
        for chain in l.filter_chains.iter().chain(&l.default_filter_chain) {
            for f in &chain.filters {
                let Some(filter::ConfigType::TypedConfig(any)) = &f.config_type else { continue };
                if any.type_url != HCM_TYPE_URL {
                    continue;
                }
                let Ok(hcm) = HttpConnectionManager::decode(any.value.as_slice()) else { continue };
                if let Some(RouteSpecifier::Rds(rds)) = hcm.route_specifier {
                    names.insert(rds.route_config_name);
                }
            }
        }
    }
    names
}

/// What the observer has received, and what the listeners ask for.
#[derive(Debug, Default)]
pub struct Store {
    pub listeners: Option<Arc<Held>>,
    pub routes: Option<Arc<Held>>,
    pub clusters: Option<Arc<Held>>,
    /// The RDS names the listeners ask for.
    pub wanted_routes: BTreeSet<String>,
    /// Types the server does not serve (a per-type server without RDS or CDS): not waited for.
    pub unserved: BTreeSet<String>,
    /// The version of the latest response that gave one: the configuration's version (a delta
    /// server sends only the types that changed, with the new version).
    pub version: String,
}

impl Store {
    /// Records a type's new state. For listeners, returns the RDS names they ask for when these
    /// changed: the route subscription to make.
    pub fn set(&mut self, held: Held) -> Option<BTreeSet<String>> {
        if !held.version.is_empty() {
            self.version.clone_from(&held.version);
        }
        let held = Arc::new(held);
        match held.type_url.as_str() {
            LISTENER_TYPE_URL => {
                let names = route_names(&held);
                self.listeners = Some(held);
                (names != self.wanted_routes).then(|| {
                    self.wanted_routes = names.clone();
                    names
                })
            }
            ROUTE_TYPE_URL => {
                self.routes = Some(held);
                None
            }
            CLUSTER_TYPE_URL => {
                self.clusters = Some(held);
                None
            }
            _ => None,
        }
    }

    /// The RDS names asked for and not (yet) received.
    pub fn unanswered(&self) -> Vec<String> {
        if self.unserved.contains(ROUTE_TYPE_URL) {
            return self.wanted_routes.iter().cloned().collect();
        }
        let have: BTreeSet<&str> = self.routes.as_deref().map(|r| r.names().collect()).unwrap_or_default();
        self.wanted_routes.iter().filter(|n| !have.contains(n.as_str())).cloned().collect()
    }

    /// Whether the set is whole: listeners, every route table they ask for, and the clusters
    /// (unless the server does not serve them).
    pub fn ready(&self) -> bool {
        self.listeners.is_some()
            && (self.unserved.contains(ROUTE_TYPE_URL) || self.unanswered().is_empty())
            && (self.clusters.is_some() || self.unserved.contains(CLUSTER_TYPE_URL))
    }

    /// What to check now: the listeners (which must have come), the route tables when the
    /// listeners ask for any — an empty answer when none came, so that what was not answered
    /// is said where it is asked for — and the clusters when they came.
    pub fn view(&self) -> Option<View> {
        let listeners = self.listeners.clone()?;
        let routes = match &self.routes {
            _ if self.wanted_routes.is_empty() => None,
            Some(r) => Some(r.clone()),
            None => Some(Arc::new(Held { type_url: ROUTE_TYPE_URL.to_owned(), ..Held::default() })),
        };
        let version = self.version.clone();
        Some(View { listeners, routes, clusters: self.clusters.clone(), unanswered: self.unanswered(), version })
    }
}

/// One proxy's configuration as received, to be checked.
#[derive(Debug, Clone)]
pub struct View {
    pub listeners: Arc<Held>,
    pub routes: Option<Arc<Held>>,
    pub clusters: Option<Arc<Held>>,
    /// RDS names the listeners ask for that no answer held when the view was taken.
    pub unanswered: Vec<String>,
    /// The version of the latest response that gave one ([`Store::version`]).
    version: String,
}

impl View {
    /// Each type's resources, listeners first.
    pub fn types(&self) -> impl Iterator<Item = &Held> {
        std::iter::once(&*self.listeners).chain(self.routes.as_deref()).chain(self.clusters.as_deref())
    }

    /// The configuration's version: the latest response's (`none` when the server gives
    /// none). The types arrive one by one, each with its own; each resource's is in
    /// [`Held::resources`].
    pub fn version(&self) -> String {
        if self.version.is_empty() { "none".to_owned() } else { self.version.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::config::listener::v3::{Filter, FilterChain};
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::Rds;

    fn hcm_rds(name: &str) -> Filter {
        let hcm = HttpConnectionManager {
            route_specifier: Some(RouteSpecifier::Rds(Rds { route_config_name: name.into(), ..Rds::default() })),
            ..HttpConnectionManager::default()
        };
        Filter {
            name: "envoy.filters.network.http_connection_manager".into(),
            config_type: Some(filter::ConfigType::TypedConfig(Any {
                type_url: HCM_TYPE_URL.into(),
                value: hcm.encode_to_vec(),
            })),
        }
    }

    fn listener(name: &str, rds: &[&str], default_rds: Option<&str>) -> Any {
        let l = Listener {
            name: name.into(),
            filter_chains: rds
                .iter()
                .map(|n| FilterChain { filters: vec![hcm_rds(n)], ..FilterChain::default() })
                .collect(),
            default_filter_chain: default_rds
                .map(|n| FilterChain { filters: vec![hcm_rds(n)], ..FilterChain::default() }),
            ..Listener::default()
        };
        Any { type_url: LISTENER_TYPE_URL.into(), value: l.encode_to_vec() }
    }

    fn names(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn listeners_ask_for_the_rds_names_of_every_chain() {
        let held = Held::whole(
            LISTENER_TYPE_URL,
            "1",
            vec![listener("a", &["web", "api"], Some("fallback")), listener("b", &["web"], None)],
        );
        assert_eq!(held.names().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(route_names(&held), names(&["api", "fallback", "web"]));
        // Bytes that are not a Listener ask for nothing.
        let junk =
            Held::whole(LISTENER_TYPE_URL, "1", vec![Any { type_url: LISTENER_TYPE_URL.into(), value: vec![0xff] }]);
        assert!(route_names(&junk).is_empty());
    }

    #[test]
    fn the_set_is_whole_when_every_asked_table_and_the_clusters_came() {
        let mut s = Store::default();
        assert!(s.view().is_none() && !s.ready());
        let asked = s.set(Held::whole(LISTENER_TYPE_URL, "1", vec![listener("a", &["web", "api"], None)]));
        assert_eq!(asked, Some(names(&["api", "web"])));
        assert!(!s.ready());
        assert_eq!(s.unanswered(), ["api", "web"]);
        // Asked and not answered: an empty RDS answer stands in, so the names are said.
        let v = s.view().unwrap();
        assert!(v.routes.as_ref().unwrap().resources.is_empty());
        let route =
            |n: &str| Any { type_url: ROUTE_TYPE_URL.into(), value: NameOnly { name: n.into() }.encode_to_vec() };
        s.set(Held::whole(ROUTE_TYPE_URL, "1", vec![route("web")]));
        assert_eq!(s.unanswered(), ["api"]);
        s.set(Held::whole(ROUTE_TYPE_URL, "2", vec![route("web"), route("api")]));
        assert!(s.unanswered().is_empty() && !s.ready(), "the clusters have not come");
        s.set(Held::whole(CLUSTER_TYPE_URL, "1", vec![]));
        assert!(s.ready());
        assert_eq!(s.view().unwrap().version(), "1", "the latest response's: the clusters'");
        // The same listeners again: no new subscription.
        assert_eq!(s.set(Held::whole(LISTENER_TYPE_URL, "3", vec![listener("a", &["api", "web"], None)])), None);
        // Without RDS names there is no route table to check.
        s.set(Held::whole(LISTENER_TYPE_URL, "4", vec![listener("a", &[], None)]));
        assert!(s.view().unwrap().routes.is_none());
    }

    #[test]
    fn a_type_the_server_does_not_serve_is_not_waited_for() {
        let mut s = Store::default();
        s.set(Held::whole(LISTENER_TYPE_URL, "1", vec![listener("a", &["web"], None)]));
        s.unserved.insert(CLUSTER_TYPE_URL.into());
        assert!(!s.ready());
        s.unserved.insert(ROUTE_TYPE_URL.into());
        assert!(s.ready());
        assert_eq!(s.unanswered(), ["web"], "still said as not answered");
    }
}
