use serde_json::{Value, json};

use super::{RequestClass, Routed, host_cells, requests};
use crate::model::route::RouteTables;

fn route(name: &str, m: Value, cluster: &str) -> Value {
    json!({"name": name, "match": m, "route": {"cluster": cluster}})
}

fn table(vhosts: Value) -> String {
    json!([{"name": "web",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": 8080}},
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": "web",
            "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
            "route_config": {"name": "rt", "virtual_hosts": vhosts}}}]}]}])
    .to_string()
}

/// The classes of requests that move between two versions of the one inline table.
fn classes(old: &str, new: &str) -> (Vec<RequestClass>, Vec<String>) {
    crate::diff::loaded(old, new, |(o, _), (n, _)| {
        let (to, tn) = (RouteTables::of(o), RouteTables::of(n));
        let (ro, rn) = (to.tables[0], tn.tables[0]);
        let mut notes = Vec::new();
        let out = requests(
            Routed { table: ro, terminates_tls: false },
            Routed { table: rn, terminates_tls: false },
            &mut notes,
        );
        (out, notes)
    })
}

fn vh(name: &str, domains: &[&str], routes: Vec<Value>) -> Value {
    json!({"name": name, "domains": domains, "routes": routes})
}

#[test]
fn every_host_cell_has_a_host_only_it_takes() {
    // The new version drops the suffix wildcard: its Hosts fall to the prefix wildcard where
    // they start with it, so that combination is a cell of its own.
    let old = table(json!([vh("a", &["api.example.com", "*.example.com", "shop.*", "*"], vec![])]));
    let new = table(json!([vh("a", &["api.example.com", "shop.*", "*"], vec![])]));
    let cells = crate::diff::loaded(&old, &new, |(o, _), (n, _)| {
        let (to, tn) = (RouteTables::of(o), RouteTables::of(n));
        host_cells(to.tables[0], tn.tables[0])
    });
    let names: Vec<&str> = cells.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(names, ["api.example.com", "*", "shop.*", "*.example.com", "shop.* and *.example.com"]);
    for (host, cell) in &cells {
        match cell.as_str() {
            "api.example.com" => assert_eq!(host, "api.example.com"),
            "*" => assert!(!host.ends_with(".example.com") && !host.starts_with("shop."), "{host}"),
            "*.example.com" => assert!(host.ends_with(".example.com") && !host.starts_with("shop."), "{host}"),
            "shop.*" => assert!(host.starts_with("shop.") && !host.ends_with(".example.com"), "{host}"),
            _ => assert!(host.starts_with("shop.") && host.ends_with(".example.com"), "{host}"),
        }
    }
}

#[test]
fn reordering_routes_that_do_not_overlap_moves_no_request() {
    let routes = vec![
        route("users", json!({"prefix": "/users"}), "users"),
        route("orders", json!({"path": "/orders"}), "orders"),
    ];
    let mut reversed = routes.clone();
    reversed.reverse();
    let (c, notes) = classes(&table(json!([vh("a", &["*"], routes)])), &table(json!([vh("a", &["*"], reversed)])));
    assert!(c.is_empty() && notes.is_empty(), "{c:#?} {notes:?}");
}

#[test]
fn a_header_matcher_moves_only_the_requests_that_send_the_header() {
    let old = vec![route("canary", json!({"prefix": "/"}), "canary"), route("all", json!({"prefix": "/"}), "main")];
    let mut new = old.clone();
    new[0]["match"]["headers"] = json!([{"name": "x-canary", "string_match": {"exact": "1"}}]);
    let (c, _) = classes(&table(json!([vh("a", &["*"], old)])), &table(json!([vh("a", &["*"], new)])));
    assert_eq!(c.len(), 1, "{c:#?}");
    // Without the header (or with another value) the request now reaches the second route.
    assert_eq!(c[0].old.route.as_deref(), Some("canary"));
    assert_eq!(c[0].new.route.as_deref(), Some("all"));
    assert!(c[0].request.headers.iter().all(|(n, v)| n != "x-canary" || v != "1"), "{c:#?}");
    assert_eq!(c[0].hosts, ["*"]);
}

#[test]
fn a_domain_removed_sends_its_hosts_to_the_next_wildcard() {
    let old = json!([
        vh("api", &["api.example.com"], vec![route("r", json!({"prefix": "/"}), "api")]),
        vh("rest", &["*.example.com"], vec![route("r", json!({"prefix": "/"}), "rest")])
    ]);
    let new = json!([
        vh("api", &["api2.example.com"], vec![route("r", json!({"prefix": "/"}), "api")]),
        vh("rest", &["*.example.com"], vec![route("r", json!({"prefix": "/"}), "rest")])
    ]);
    let (c, _) = classes(&table(old), &table(new));
    let moved: Vec<(Vec<String>, Option<&str>, Option<&str>)> =
        c.iter().map(|c| (c.hosts.clone(), c.old.virtual_host.as_deref(), c.new.virtual_host.as_deref())).collect();
    assert_eq!(
        moved,
        [
            (vec!["api.example.com".to_owned()], Some("api"), Some("rest")),
            (vec!["api2.example.com".to_owned()], Some("rest"), Some("api")),
        ],
        "{c:#?}"
    );
}

#[test]
fn a_suffix_both_versions_hold_is_one_cell_whatever_the_host_starts_with() {
    // Envoy tries suffix wildcards before prefix ones: a prefix matters only where a table lacks
    // the suffix.
    let t = table(json!([vh("a", &["*.example.com", "shop.*"], vec![])]));
    let cells = crate::diff::loaded(&t, &t, |(o, _), (n, _)| {
        let (to, tn) = (RouteTables::of(o), RouteTables::of(n));
        host_cells(to.tables[0], tn.tables[0])
    });
    let names: Vec<&str> = cells.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(names, ["*", "shop.*", "*.example.com"]);
}
