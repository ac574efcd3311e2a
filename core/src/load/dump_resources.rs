//! The resources an admin `/config_dump` lists — listeners, route tables, clusters — by name,
//! with the version Envoy accepted each at: what `attach --watch` compares between two dumps to
//! say which resources were added, removed or updated. Static ones have no version.
//!
//! A small typed read of the dump's layout, apart from the loader: the loader builds the model
//! to check, this only names what is there, and a dump it cannot read names nothing (the
//! loader's findings say why).

use serde::Deserialize;

/// One resource of a dump.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DumpResource {
    /// `Listener`, `RouteConfiguration` or `Cluster`.
    pub type_name: &'static str,
    /// Its `name`.
    pub name: String,
    /// The `version_info` Envoy accepted it at (a listener: its active state's, else the one it
    /// is warming or draining); empty for a static resource and a listener only ever refused.
    pub version: String,
}

#[derive(Deserialize)]
struct Dump {
    #[serde(default)]
    configs: Vec<Config>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Config {
    dynamic_listeners: Vec<DynamicListener>,
    static_listeners: Vec<ListenerBody>,
    dynamic_route_configs: Vec<DynamicRoute>,
    static_route_configs: Vec<RouteBody>,
    dynamic_active_clusters: Vec<DynamicCluster>,
    dynamic_warming_clusters: Vec<DynamicCluster>,
    static_clusters: Vec<ClusterBody>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Named {
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Version {
    version_info: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DynamicListener {
    name: String,
    active_state: Option<Version>,
    warming_state: Option<Version>,
    draining_state: Option<Version>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DynamicRoute {
    version_info: String,
    route_config: Named,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DynamicCluster {
    version_info: String,
    cluster: Named,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ListenerBody {
    listener: Named,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RouteBody {
    route_config: Named,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ClusterBody {
    cluster: Named,
}

/// The resources a config_dump's text lists, sorted; none when it is not a readable dump.
pub fn dump_resources(text: &str) -> Vec<DumpResource> {
    let Ok(dump) = serde_json::from_str::<Dump>(text) else { return Vec::new() };
    let mut out = Vec::new();
    let mut push = |type_name, name: String, version: String| out.push(DumpResource { type_name, name, version });
    for c in dump.configs {
        for l in c.dynamic_listeners {
            let state = l.active_state.or(l.warming_state).or(l.draining_state);
            let version = state.map(|s| s.version_info).unwrap_or_default();
            push("Listener", l.name, version);
        }
        for l in c.static_listeners {
            push("Listener", l.listener.name, String::new());
        }
        for r in c.dynamic_route_configs {
            push("RouteConfiguration", r.route_config.name, r.version_info);
        }
        for r in c.static_route_configs {
            push("RouteConfiguration", r.route_config.name, String::new());
        }
        for cl in c.dynamic_active_clusters.into_iter().chain(c.dynamic_warming_clusters) {
            push("Cluster", cl.cluster.name, cl.version_info);
        }
        for cl in c.static_clusters {
            push("Cluster", cl.cluster.name, String::new());
        }
    }
    // An entry without its resource (a dump cut by a filter) names nothing.
    out.retain(|r| !r.name.is_empty());
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_names_its_resources_with_their_versions() {
        let dump = r#"{"configs": [
            {"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
             "static_listeners": [{"listener": {"name": "admin", "address": {}}}],
             "dynamic_listeners": [{"name": "web", "active_state": {"version_info": "3", "listener": {}}},
                                   {"name": "new", "warming_state": {"version_info": "4"}}]},
            {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
             "static_clusters": [{"cluster": {"name": "xds"}}],
             "dynamic_active_clusters": [{"version_info": "7", "cluster": {"name": "api", "type": "EDS"}}]},
            {"@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
             "dynamic_route_configs": [{"version_info": "2", "route_config": {"name": "http"}}]}]}"#;
        let got: Vec<(String, String, String)> =
            dump_resources(dump).into_iter().map(|r| (r.type_name.to_owned(), r.name, r.version)).collect();
        let want = [
            ("Cluster", "api", "7"),
            ("Cluster", "xds", ""),
            ("Listener", "admin", ""),
            ("Listener", "new", "4"),
            ("Listener", "web", "3"),
            ("RouteConfiguration", "http", "2"),
        ];
        assert_eq!(got, want.map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned())));
        assert!(dump_resources("not json").is_empty());
    }
}
