//! `invalid-tls-context`: what Envoy refuses when it builds a TLS context from text BoringSSL
//! cannot read: an inline certificate chain, private key or trusted CA with no PEM block (or an
//! empty trusted CA, which Envoy does not read at all), and a subject alt name matcher of type
//! OTHER_NAME whose `oid` is not an object identifier. Read
//! only where Envoy builds the context from the input (a bootstrap, an xDS resource), not from
//! a config_dump, which records contexts Envoy built (and redacts their keys). Texts checked
//! with envoy 1.40 `--mode validate`.

use crate::checks::boringssl::{oid_refused, pem_has_no_block};
use crate::checks::{Check, Context, Reads};
use crate::diagnostic::{Diagnostic, Severity, declare_rule};
use crate::model::build::{PemHolds, TlsCertificates};
use crate::model::{Casing, InputKind};
use crate::source::{Location, Locator, SourceId, join_field};

declare_rule! {
    pub(crate) static RULE for InvalidTlsContext = {
        code: "XDS128",
        name: "invalid-tls-context",
        severity: Severity::Error,
        summary: "A TLS context's inline certificate, key or CA holds no PEM block, or an OTHER_NAME SAN matcher's oid is no object identifier: Envoy refuses it.",
        explanation: "invalid_tls_context.md",
    }
}

pub(crate) struct InvalidTlsContext;

/// What is wrong with one context: the pointer below its transport socket, xdsck's words,
/// Envoy's.
fn problems<'c>(certs: &'c TlsCertificates<'_>) -> Vec<(&'c str, String, String)> {
    let mut out = Vec::new();
    for pem in certs.pem.iter().filter(|p| p.text.is_empty() && p.holds == PemHolds::TrustedCa) {
        // An empty chain or key is `missing-certificate`'s: Envoy says it is incomplete.
        out.push((&*pem.pointer, "the inline trusted CA is empty".to_owned(), "DataSource cannot be empty".to_owned()));
    }
    for pem in certs.pem.iter().filter(|p| !p.text.is_empty() && pem_has_no_block(&p.text)) {
        let (what, envoy) = match pem.holds {
            PemHolds::CertificateChain => ("certificate chain", "Failed to load certificate chain from <inline>"),
            PemHolds::PrivateKey => (
                "private key",
                "Failed to load private key from <inline>, Cause: error:0900006e:PEM routines:OPENSSL_internal:NO_START_LINE",
            ),
            PemHolds::TrustedCa => ("trusted CA", "Failed to load trusted CA certificates from <inline>"),
        };
        let message = format!("the inline {what} holds no PEM block (no `-----BEGIN ...-----` line)");
        out.push((&*pem.pointer, message, envoy.to_owned()));
    }
    for (pointer, oid) in &certs.other_name_oids {
        if oid_refused(oid) == Some(true) {
            let message =
                format!("OTHER_NAME subject alt name matcher with oid {oid:?}, which is no object identifier");
            out.push((&**pointer, message, format!("Failed to create SAN matcher for OTHER_NAME with OID: {oid}")));
        }
    }
    out
}

fn report(
    certs: &TlsCertificates<'_>,
    base: &str,
    source: SourceId,
    locate: &dyn Fn(&str) -> Option<usize>,
    place: &dyn Fn(Diagnostic) -> Diagnostic,
    out: &mut Vec<Diagnostic>,
) {
    for (suffix, message, envoy) in problems(certs) {
        let pointer = format!("{base}{suffix}");
        let offset = locate(&pointer).or_else(|| locate(base));
        out.push(place(
            Diagnostic::new(&RULE, message).at(Location::new(source, pointer, offset)).with_envoy_error(envoy),
        ));
    }
}

impl Check for InvalidTlsContext {
    fn reads(&self) -> Reads {
        Reads::MODEL
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        let kinds: Vec<(SourceId, InputKind)> = cx.snapshot.inputs.iter().map(|i| (i.source, i.kind)).collect();
        let built = |source: SourceId, pointer: &str| {
            kinds.iter().find(|(s, _)| *s == source).is_some_and(|(_, k)| !k.is_record_at(pointer))
        };
        for l in cx.listeners().filter(|l| built(l.source, &l.listener.pointer)) {
            for chain in l.listener.chains() {
                let Some(certs) = chain.transport_socket.as_ref().and_then(|t| t.certificates.as_ref()) else {
                    continue;
                };
                let base = join_field(&l.listener.chain_pointer(chain), chain.casing, "transport_socket");
                let place = |d: Diagnostic| {
                    d.listener(l.listener.display_name().into_owned()).chain(chain.display_name().to_string())
                };
                report(certs, &base, l.source, &|p| l.locate_in_listener(p), &place, out);
            }
        }
        for input in &cx.snapshot.inputs {
            let text: Locator<'_> = cx.locator(input);
            for c in &input.cluster_builds {
                if let Some(certs) = &c.tls {
                    let base = join_field(&c.pointer(), Casing::Snake, "transport_socket");
                    report(certs, &base, input.source, &|p| text.locate_pointer(p), &|d| d, out);
                }
            }
        }
    }
}
