//! `xdsck trace --host/--path`: the request's way past the filter chain — the chain's
//! http_connection_manager, its route table, the virtual host and the route — as a step of its
//! own after the connection's trace ([`crate::trace::trace`]).

use crate::chain_match::trace::Outcome;
use crate::model::route::{Action, HcmRoutes, RequireTls, RouteTables};
use crate::model::{FilterChain, Snapshot};
use crate::routing::{DomainIndex, Request, RouteOutcome, RouteVerdict, describe_path, strip_port};
use crate::trace::Answer;

/// The HTTP part of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpAnswer {
    /// The name of the route table the chain's http_connection_manager routes by, once found.
    pub route_config: Option<String>,
    /// The name of the virtual host the Host picked; `None` is Envoy's 404 for an unknown host.
    pub virtual_host: Option<String>,
    /// Its name, or `routes[N]`.
    pub route: Option<String>,
    /// What the chosen route does with the request (cluster, redirect, direct response).
    pub action: Option<Action<'static>>,
    /// `(stage, what happened)`, in order; stages are `request`, `hcm`, `route_config`,
    /// `virtual_host`, `route`, `action`.
    pub steps: Vec<(&'static str, String)>,
    /// The answer depends on something xdsck does not evaluate.
    pub undecided: bool,
    /// The chain is a `tcp_proxy`'s, to these clusters: Envoy reads no HTTP request on it, it
    /// passes the bytes on.
    pub tcp_proxy: Option<Vec<String>>,
}

impl HttpAnswer {
    fn step(&mut self, stage: &'static str, text: impl Into<String>) {
        self.steps.push((stage, text.into()));
    }

    /// Whether Envoy answers without a route (404), which `trace` reports with exit status 1.
    pub fn is_unrouted(&self) -> bool {
        self.action.is_none() && !self.undecided && self.tcp_proxy.is_none()
    }
}

/// Follows the request from the chain the connection reached.
pub fn trace_http(snapshot: &Snapshot<'_>, answer: &Answer, req: &Request) -> HttpAnswer {
    let tables = RouteTables::of(snapshot);
    let mut out = HttpAnswer::default();
    let headers: String = req.headers.iter().map(|(n, v)| format!(", {n}: {v}")).collect();
    out.step("request", format!("{} {} Host {:?}{headers}", req.method, req.path, req.host));
    let Ok((input, listener)) = crate::trace::select_listener(snapshot, Some(&answer.listener), None) else {
        return out;
    };
    // The Envoy whose RDS tables the listener's HCM looks its table up in.
    let envoy = snapshot.inputs.iter().position(|i| std::ptr::eq(i, input)).unwrap_or(0);
    let chain: Option<&FilterChain<'_>> = match answer.trace.outcome {
        Outcome::Chain(i) => listener.filter_chains.get(i),
        Outcome::Default => listener.default_filter_chain.as_deref(),
        Outcome::Closed | Outcome::NeedsInput(_) => None,
    };
    let Some(chain) = chain else {
        out.step("hcm", "the connection reaches no filter chain: no HTTP request is read");
        out.undecided = !answer.is_closed();
        return out;
    };
    route_in_chain(&tables, envoy, chain, answer, req, &mut out);
    out
}

fn route_in_chain(
    tables: &RouteTables,
    envoy: usize,
    chain: &FilterChain<'_>,
    answer: &Answer,
    req: &Request,
    out: &mut HttpAnswer,
) {
    if let Some(clusters) = chain.tcp_proxy_clusters() {
        let clusters: Vec<String> = clusters.iter().map(|c| c.to_string()).collect();
        out.step(
            "hcm",
            format!(
                "filter chain {} has a tcp_proxy, not an http_connection_manager: Envoy passes the connection's bytes to {} and reads no request",
                chain.display_name(),
                crate::trace::describe_tcp_proxy(&clusters)
            ),
        );
        out.tcp_proxy = Some(clusters);
        return;
    }
    let Some(hcm) = RouteTables::hcms_of_chain(chain).next() else {
        out.step(
            "hcm",
            format!("filter chain {} has no http_connection_manager: it does not route HTTP", chain.display_name()),
        );
        return;
    };
    let table = match &hcm.routes {
        HcmRoutes::Scoped => {
            out.step("hcm", "the http_connection_manager uses scoped_routes, which xdsck does not trace");
            out.undecided = true;
            return;
        }
        HcmRoutes::None => {
            out.step("hcm", "the http_connection_manager names no route table");
            return;
        }
        HcmRoutes::Rds(name) => {
            out.route_config = Some(name.to_string());
            match tables.rds(envoy, name) {
                Some(t) => {
                    out.step("route_config", format!("RDS route table {name}"));
                    t
                }
                None => {
                    out.step(
                        "route_config",
                        format!("RDS route table {name} is not among the inputs: give it too (a config_dump or RDS response)"),
                    );
                    out.undecided = true;
                    return;
                }
            }
        }
        HcmRoutes::Inline(i) => {
            let t: &crate::model::route::RouteTable<'_> = i;
            out.route_config = t.name.as_ref().map(|n| n.to_string());
            out.step("route_config", format!("inline route table {}", t.display_name()));
            t
        }
    };
    let mut host = req.host.clone();
    let port = answer.connection.destination.map(|d| d.port());
    if let Some(stripped) = strip_port(&host, hcm.strip_any_host_port, hcm.strip_matching_host_port, port) {
        let why = if hcm.strip_any_host_port { "strip_any_host_port" } else { "strip_matching_host_port" };
        out.step("hcm", format!("{why}: Host {host:?} becomes {stripped:?}"));
        host = stripped;
    }
    let index = DomainIndex::build(table);
    route_in_table(table, &index, chain.terminates_tls(), &host, req, out);
}

/// Follows the request (its Host already rewritten by the HCM) in a route table whose domains
/// `index` holds: the virtual host, then the route. `xdsck diff` asks it many requests of one
/// table, so the index is built by the caller.
pub(crate) fn route_in_table(
    table: &crate::model::route::RouteTable<'_>,
    index: &DomainIndex,
    terminates_tls: bool,
    host: &str,
    req: &Request,
    out: &mut HttpAnswer,
) {
    if !index.problems.is_empty() {
        out.step(
            "route_config",
            "Envoy rejects this route table (duplicate domains, see `xdsck check`): this is where the request would go if it did not",
        );
    }
    let selection = index.select(table, host);
    for s in selection.steps {
        out.step("virtual_host", s);
    }
    let Some(v) = selection.virtual_host else { return };
    let vh = &table.virtual_hosts[v];
    out.virtual_host = Some(vh.name.to_string());
    if vh.require_tls != RequireTls::None && !terminates_tls {
        // ALL, or EXTERNAL_ONLY with the default internal_address_config (loopback counts as
        // external): a plaintext request is redirected before any route.
        out.step("virtual_host", "require_tls: a request without TLS is redirected to https:// before any route");
        out.action = Some(Action::Redirect("https_redirect=true (require_tls, 301)".into()));
        return;
    }
    if vh.has_matcher {
        out.step("route", "the virtual host picks routes with a matcher tree, which xdsck does not trace");
        out.undecided = true;
        return;
    }
    let choice = crate::routing::select_route(vh, req);
    for (i, verdict) in &choice.tried {
        let r = &vh.routes[*i];
        let what = describe_path(&r.matcher.path, r.matcher.case_sensitive());
        let text = match verdict {
            RouteVerdict::Matches => format!("{} ({what}) matches", r.display_name()),
            RouteVerdict::Misses(why) => format!("{} does not match: {why}", r.display_name()),
            RouteVerdict::Undecided(why) => format!("{} is undecided: {why}", r.display_name()),
        };
        out.step("route", text);
    }
    match choice.outcome {
        RouteOutcome::Route(i) => {
            let r = &vh.routes[i];
            out.route = Some(r.display_name());
            out.step("action", r.action.to_string());
            out.action = Some(r.action.clone().into_owned());
        }
        RouteOutcome::NoRoute => {
            out.step("route", "no route matches: Envoy answers 404 (no other virtual host is tried)")
        }
        RouteOutcome::Undecided(_) => out.undecided = true,
    }
}
