//! `missing-certificate`: a TLS context Envoy cannot build: a server context (a listener's
//! DownstreamTlsContext) that names no certificate, or an inline certificate without its chain
//! or its key, or an SDS secret named without an `sds_config`, which Envoy looks up among the
//! bootstrap's static secrets, that is not one of them. Texts checked with envoy 1.40
//! `--mode validate`. (Whether the files exist and hold PEM, Envoy finds out by reading them:
//! xdsck does not.)

use crate::checks::{Check, Context, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::build::{Source, TlsCertificates};
use crate::model::{Casing, TransportSocket};
use crate::source::{Location, Locator, SourceId, join_field};

declare_rule! {
    pub(crate) static RULE for MissingCertificate = {
        code: "XDS126",
        name: "missing-certificate",
        severity: Severity::Error,
        summary: "A listener's TLS context has no certificate, or names a static secret the bootstrap does not have: Envoy refuses the configuration.",
        explanation: "missing_certificate.md",
    }
}

pub(crate) struct MissingCertificate;

/// The static-secret names of a TLS context that the bootstrap lacks, as findings.
fn unknown_secrets(
    certs: &TlsCertificates<'_>,
    secrets: &[std::borrow::Cow<'_, str>],
    base: &str,
    source: SourceId,
    locate: &dyn Fn(&str) -> Option<usize>,
    out: &mut Vec<Diagnostic>,
) {
    for (suffix, name) in &certs.static_secrets {
        if secrets.iter().any(|s| s == name) {
            continue;
        }
        let pointer = format!("{base}{suffix}");
        out.push(
            Diagnostic::new(&RULE, format!("the TLS context names secret '{name}' without an sds_config, and the bootstrap has no static secret of that name"))
                .at(Location::new(source, pointer.clone(), locate(&pointer)))
                .with_envoy_error(format!("Unknown static secret: {name}"))
                .note("without sds_config, Envoy takes the secret from static_resources.secrets"),
        );
    }
}

impl Check for MissingCertificate {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for l in cx.listeners() {
            let input = cx.snapshot.inputs.get(l.envoy);
            let secrets = input.and_then(|i| i.bootstrap.as_ref()).map(|b| &b.static_secrets[..]);
            for chain in l.listener.chains() {
                let Some(ts @ TransportSocket { certificates: Some(certs), .. }) = chain.transport_socket.as_deref()
                else {
                    continue;
                };
                let base = join_field(&l.listener.chain_pointer(chain), chain.casing, "transport_socket");
                if ts.terminates_tls() {
                    for (suffix, cert_chain, key) in &certs.inline {
                        // As envoy 1.40 goes about it: a certificate needs one of the two, then
                        // its key, then its chain; a source given as `{}` is PGV's to refuse.
                        let (what, envoy) = match (cert_chain, key) {
                            (Source::Unset, _) | (_, Source::Unset) | (Source::Given, Source::Given) => continue,
                            (Source::Absent, Source::Absent) => {
                                ("has neither", "Server TlsCertificates must have a certificate specified")
                            }
                            (_, Source::Absent | Source::Empty) => {
                                ("has no private_key", "Failed to load incomplete private key from path: ")
                            }
                            _ => (
                                "has no certificate_chain",
                                "Failed to load incomplete certificate from : certificate chain not set",
                            ),
                        };
                        let pointer = format!("{base}{suffix}");
                        out.push(
                            Diagnostic::new(&RULE, format!("filter chain '{}': a TLS certificate {what} of a certificate chain and a private key", chain.display_name()))
                                .at(Location::new(l.source, pointer.clone(), l.locate_in_listener(&pointer)))
                                .listener(l.listener.display_name().into_owned())
                                .chain(chain.display_name().to_string())
                                .with_envoy_error(envoy),
                        );
                    }
                }
                if ts.terminates_tls() && !certs.any {
                    let at = Location::new(l.source, base.clone(), l.locate_in_listener(&base));
                    out.push(
                        Diagnostic::new(
                            &RULE,
                            format!("filter chain '{}': the TLS context has no certificate", chain.display_name()),
                        )
                        .at(at)
                        .listener(l.listener.display_name().into_owned())
                        .chain(chain.display_name().to_string())
                        .with_envoy_error("No TLS certificates found for server context")
                        .note("give tls_certificates, tls_certificate_sds_secret_configs or a certificate provider"),
                    );
                }
                if let Some(secrets) = secrets {
                    unknown_secrets(certs, secrets, &base, l.source, &|p| l.locate_in_listener(p), out);
                }
            }
        }
        for input in &cx.snapshot.inputs {
            let Some(bootstrap) = &input.bootstrap else { continue };
            let text: Locator<'_> = cx.locator(input);
            for c in &input.cluster_builds {
                if let Some(certs) = &c.tls {
                    let base = join_field(&c.pointer(), Casing::Snake, "transport_socket");
                    unknown_secrets(
                        certs,
                        &bootstrap.static_secrets,
                        &base,
                        input.source,
                        &|p| text.locate_pointer(p),
                        out,
                    );
                }
            }
        }
    }
}
