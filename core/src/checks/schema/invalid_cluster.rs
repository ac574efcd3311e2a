//! `invalid-cluster`: a cluster whose discovery type and load balancer, or endpoints, do not go
//! together, which Envoy refuses when it builds the cluster: ORIGINAL_DST takes only the
//! `CLUSTER_PROVIDED` policy and no load assignment, no other built-in type provides a load
//! balancer, and LOGICAL_DNS resolves exactly one endpoint; and an HTTP health check whose
//! status ranges are not within [100, 600) with start below end, which Envoy refuses when it
//! builds the health checker. Texts checked with envoy 1.40 `--mode validate`.

use crate::checks::{Check, Context, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::build::{ClusterBuild, Discovery, StatusRange};
use crate::source::{Location, join_field};

declare_rule! {
    pub(crate) static RULE for InvalidCluster = {
        code: "XDS125",
        name: "invalid-cluster",
        severity: Severity::Error,
        summary: "A cluster's type does not go with its load balancing policy or its endpoints (ORIGINAL_DST, CLUSTER_PROVIDED, LOGICAL_DNS), or a health check's status range is out of order or bounds: Envoy refuses it.",
        explanation: "invalid_cluster.md",
    }
}

pub(crate) struct InvalidCluster;

/// `Cluster.LbPolicy.CLUSTER_PROVIDED`.
const CLUSTER_PROVIDED: i32 = 6;

/// The name of an `lb_policy` number, as Envoy prints it.
fn lb_policy_name(n: i32) -> String {
    let schema = crate::schema::Schema::get();
    schema
        .find_enum("envoy.config.cluster.v3.Cluster.LbPolicy")
        .and_then(|e| schema.enumeration(e).name_of(n).map(str::to_owned))
        .unwrap_or_else(|| n.to_string())
}

/// What Envoy refuses of one cluster: the field it is about (`None`: the cluster), xdsck's
/// words, Envoy's.
fn problems(c: &ClusterBuild<'_>) -> Vec<(Option<&'static str>, String, String)> {
    let mut out = Vec::new();
    let Some(discovery) = c.discovery else { return out };
    match (discovery, c.lb_policy) {
        (Discovery::OriginalDst, Some(p)) if p != CLUSTER_PROVIDED => {
            let name = lb_policy_name(p);
            out.push((
                Some("lb_policy"),
                format!("ORIGINAL_DST cluster '{}' has lb_policy {name}: it takes CLUSTER_PROVIDED only", c.name),
                format!(
                    "cluster: LB policy {name} is not valid for Cluster type ORIGINAL_DST. Only 'CLUSTER_PROVIDED' is allowed with cluster type 'ORIGINAL_DST'"
                ),
            ));
        }
        (Discovery::OriginalDst, _) => {}
        (_, Some(CLUSTER_PROVIDED)) => out.push((
            Some("lb_policy"),
            format!("cluster '{}' asks for the load balancer its type provides, and its type provides none", c.name),
            format!(
                "cluster manager: cluster provided LB specified but cluster '{}' did not provide one. Check cluster documentation.",
                c.name
            ),
        )),
        _ => {}
    }
    if discovery == Discovery::OriginalDst && c.load_assignment {
        out.push((
            Some("load_assignment"),
            format!(
                "ORIGINAL_DST cluster '{}' has a load_assignment: its hosts are the connections' destinations",
                c.name
            ),
            "ORIGINAL_DST clusters must have no load assignment configured".to_owned(),
        ));
    }
    if discovery == Discovery::LogicalDns && !c.load_assignment {
        out.push((
            None,
            format!("LOGICAL_DNS cluster '{}' has no load_assignment: it has no host to resolve", c.name),
            "LOGICAL_DNS clusters must have a single host".to_owned(),
        ));
    }
    if discovery == Discovery::LogicalDns && c.load_assignment && !(c.localities == 1 && c.endpoints.len() == 1) {
        out.push((
            Some("load_assignment"),
            format!("LOGICAL_DNS cluster '{}' does not have exactly one endpoint", c.name),
            "LOGICAL_DNS clusters must have a single locality_lb_endpoint and a single lb_endpoint".to_owned(),
        ));
    }
    out
}

/// What Envoy refuses of an HTTP health check's status range, in its order: Envoy compares the
/// bounds as unsigned 64-bit numbers (a negative `start` prints, and compares, as 2^64 less it).
fn status_range(r: &StatusRange, cluster: &str) -> Option<(String, String)> {
    let (start, end) = (r.start as u64, r.end as u64);
    let which = if r.retriable { "retriable" } else { "expected" };
    let what = |s: &str| format!("cluster '{cluster}': the {which} status range [{}, {}) {s}", r.start, r.end);
    let envoy = |s: String| format!("Invalid http {which} status range: {s}");
    if start >= end {
        Some((
            what("is empty: its start is not below its end"),
            envoy(format!("expecting start < end, but found start={start} and end={end}")),
        ))
    } else if start < 100 {
        Some((what("starts below 100"), envoy(format!("expecting start >= 100, but found start={start}"))))
    } else if end > 600 {
        Some((what("ends above 600"), envoy(format!("expecting end <= 600, but found end={end}"))))
    } else {
        None
    }
}

impl Check for InvalidCluster {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for input in &cx.snapshot.inputs {
            let text = cx.locator(input);
            for c in &input.cluster_builds {
                for (field, message, envoy) in problems(c) {
                    let cluster = c.pointer();
                    let pointer = match field {
                        Some(f) => join_field(&cluster, crate::model::Casing::Snake, f),
                        None => cluster.clone(),
                    };
                    let offset = text.locate_pointer(&pointer).or_else(|| text.locate_pointer(&cluster));
                    out.push(
                        Diagnostic::new(&RULE, message)
                            .at(Location::new(input.source, pointer, offset))
                            .with_envoy_error(envoy),
                    );
                }
                for r in &c.status_ranges {
                    let Some((message, envoy)) = status_range(r, &c.name) else { continue };
                    let cluster = c.pointer();
                    let pointer = format!("{cluster}{}", r.pointer);
                    let offset = text.locate_pointer(&pointer).or_else(|| text.locate_pointer(&cluster));
                    out.push(
                        Diagnostic::new(&RULE, message)
                            .at(Location::new(input.source, pointer, offset))
                            .with_envoy_error(envoy),
                    );
                }
            }
        }
    }
}
