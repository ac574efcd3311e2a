//! `invalid-config-source`: a bootstrap whose CDS or ADS source names a cluster Envoy cannot
//! reach it through: CDS's `api_config_source` needs a static cluster that is not EDS (the
//! clusters come from it, so it cannot come from them), ADS's gRPC service a cluster its client
//! knows. Texts checked with envoy 1.40 `--mode validate`, which builds CDS and ADS but not LDS
//! (an LDS source naming a missing cluster passes validation and fails at start-up).

use crate::checks::{Check, Context};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::build::{ConfigSourceKind, Discovery};
use crate::source::Location;

declare_rule! {
    pub(crate) static RULE for InvalidConfigSource = {
        code: "XDS127",
        name: "invalid-config-source",
        severity: Severity::Error,
        summary: "A bootstrap's CDS or ADS source names a cluster that is not a static, non-EDS cluster of the bootstrap: Envoy refuses it.",
        explanation: "invalid_config_source.md",
    }
}

pub(crate) struct InvalidConfigSource;

impl Check for InvalidConfigSource {
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for input in &cx.snapshot.inputs {
            let Some(bootstrap) = &input.bootstrap else { continue };
            let text = cx.locator(input);
            let cluster = |name: &str| input.cluster_builds.iter().find(|c| c.name == name);
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
                out.push(Diagnostic::new(&RULE, message).at(at).envoy_error(envoy));
            }
        }
    }
}
