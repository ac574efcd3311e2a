//! `invalid-config-source`: a bootstrap whose xDS sources Envoy cannot subscribe to: CDS's
//! `api_config_source` needs a static cluster that is not EDS (the clusters come from it, so it
//! cannot come from them), ADS's gRPC service a cluster its client knows, and every subscription
//! the node's `id` and `cluster`. Texts checked with envoy 1.40 `--mode validate`, which builds
//! CDS, ADS, EDS and SDS but not LDS (an LDS source naming a missing cluster passes validation
//! and fails at start-up).

use crate::checks::{Check, Context, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::Casing;
use crate::model::build::{BootstrapBuild, ConfigSourceKind, Discovery};
use crate::source::{Location, join_field};

declare_rule! {
    pub(crate) static RULE for InvalidConfigSource = {
        code: "XDS127",
        name: "invalid-config-source",
        severity: Severity::Error,
        summary: "A bootstrap's CDS or ADS source names a cluster that is not a static, non-EDS cluster of it, CDS's is of an aggregated type, or it subscribes to xDS without a node id and cluster: Envoy refuses it.",
        explanation: "invalid_config_source.md",
    }
}

pub(crate) struct InvalidConfigSource;

impl Check for InvalidConfigSource {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for input in &cx.snapshot.inputs {
            let Some(bootstrap) = &input.bootstrap else { continue };
            let text = cx.locator(input);
            let cluster = |name: &str| input.cluster_builds.iter().find(|c| c.name == name);
            if let Some((number, pointer)) = &bootstrap.cds_api_type
                && let Some(name) = aggregated(*number)
            {
                // CDS is one subscription of its own; the aggregated types belong to `ads_config`
                // (checked with envoy 1.40: LDS takes them, CDS does not).
                let at = Location::new(input.source, pointer.clone(), text.locate_pointer(pointer));
                out.push(
                    Diagnostic::new(
                        &RULE,
                        format!("cds_config's api_config_source has api_type {name}, which CDS cannot use"),
                    )
                    .at(at)
                    .with_envoy_error(format!("Unsupported config source {name}"))
                    .note("for CDS over ADS, write `cds_config: {ads: {}}` and give the stream in `ads_config`"),
                );
            }
            for u in &bootstrap.config_sources {
                let found = cluster(&u.cluster);
                let (message, envoy) = match u.source {
                    ConfigSourceKind::Cds if found.is_none_or(|c| c.discovery == Some(Discovery::Eds)) => (
                        format!(
                            "CDS is fetched through cluster '{}', which is not a static, non-EDS cluster of the bootstrap",
                            u.cluster
                        ),
                        format!(
                            "envoy.config.core.v3.ApiConfigSource must have a statically defined non-EDS cluster: '{}' does not exist, was added via api, or is an EDS cluster",
                            u.cluster
                        ),
                    ),
                    ConfigSourceKind::Ads if found.is_none() => (
                        format!(
                            "ADS is fetched through cluster '{}', which is not a static cluster of the bootstrap",
                            u.cluster
                        ),
                        format!("Unknown gRPC client cluster '{}'", u.cluster),
                    ),
                    _ => continue,
                };
                let at = Location::new(input.source, u.pointer.clone(), text.locate_pointer(&u.pointer));
                out.push(Diagnostic::new(&RULE, message).at(at).with_envoy_error(envoy));
            }
            if let Some(what) = first_subscription(input, bootstrap)
                && (bootstrap.node.0.is_empty() || bootstrap.node.1.is_empty())
            {
                let pointer = join_field(&bootstrap.pointer, Casing::Snake, "node");
                let offset = text.locate_pointer(&pointer).or_else(|| text.locate_pointer(&bootstrap.pointer));
                out.push(
                    Diagnostic::new(&RULE, "the bootstrap subscribes to xDS and its node has no id or no cluster")
                        .at(Location::new(input.source, pointer, offset))
                        .with_envoy_error(format!(
                            "{what}: node 'id' and 'cluster' are required. Set it either in 'node' config or via --service-node and --service-cluster options."
                        ))
                        .note("unless Envoy is started with --service-node and --service-cluster"),
                );
            }
        }
    }
}

/// The name of an aggregated `ApiConfigSource.ApiType`, by its number in Envoy's schema.
fn aggregated(number: u32) -> Option<&'static str> {
    let schema = crate::schema::Schema::get();
    let e = schema.find_enum("envoy.config.core.v3.ApiConfigSource.ApiType")?;
    let name = schema.enumeration(e).name_of(i32::try_from(number).ok()?)?;
    ["AGGREGATED_GRPC", "AGGREGATED_DELTA_GRPC"].into_iter().find(|n| *n == name)
}

/// The subscription Envoy creates first, which names itself in the error for a node without an
/// id or cluster: a static EDS cluster's, a static cluster's SDS, CDS, then a listener's SDS.
fn first_subscription(input: &crate::model::Input<'_>, bootstrap: &BootstrapBuild<'_>) -> Option<&'static str> {
    if input.cluster_builds.iter().any(|c| c.discovery == Some(Discovery::Eds)) {
        return Some("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment");
    }
    if input.cluster_builds.iter().any(|c| c.tls.as_ref().is_some_and(|t| t.by_sds)) {
        return Some("TlsCertificateSdsApi");
    }
    if bootstrap.cds {
        return Some("type.googleapis.com/envoy.config.cluster.v3.Cluster");
    }
    let listener_sds = input.listeners.iter().any(|l| {
        l.chains().any(|c| c.transport_socket.as_ref().and_then(|t| t.certificates.as_ref()).is_some_and(|t| t.by_sds))
    });
    listener_sds.then_some("TlsCertificateSdsApi")
}
