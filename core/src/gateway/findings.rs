//! The `XDS402`/`XDS403` findings: listeners Cilium marks Conflicted, and the HTTPS +
//! passthrough pairs on one port, each told across every modelled version.

use super::ListenerVerdict;
use super::api::{Gateway, Objects};
use super::cilium::{self, Version, hostnames::sni_intersect};
use super::rules;
use crate::diagnostic::{Diagnostic, Rule};

/// What each version does with listener `i`: "1.19.5 accepted, served; 1.19.6 Conflicted, served; …".
fn across_versions(outcomes: &[(Version, cilium::Outcome)], i: usize) -> String {
    outcomes
        .iter()
        .map(|(v, o)| {
            let l = &o.listeners[i];
            let state = if l.conflict.is_some() {
                "Conflicted"
            } else if l.accepted {
                "accepted"
            } else {
                "not accepted"
            };
            let served = if o.translated[i] && o.cec.is_some() { "rendered" } else { "dropped" };
            format!("{v} {state}, {served}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A finding about `gw`: every `XDS402`/`XDS403` message opens with `Gateway <ns>/<name>: `.
fn about(gw: &Gateway, rule: &'static Rule, what: String) -> Diagnostic {
    Diagnostic::new(rule, format!("Gateway {}/{}: {what}", gw.metadata.ns(), gw.metadata.name))
}

pub(super) fn conflicts(
    gw: &Gateway,
    listeners: &[ListenerVerdict],
    version: Version,
    objects: &Objects,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let outcomes: Vec<(Version, cilium::Outcome)> =
        Version::ALL.iter().map(|v| (*v, cilium::reconcile(gw, objects, *v))).collect();
    for (i, l) in listeners.iter().enumerate() {
        let Some(c) = &l.status.conflict else { continue };
        let served = if l.translated {
            format!("Cilium {version} still renders it into the CiliumEnvoyConfig")
        } else {
            format!("Cilium {version} drops it from the CiliumEnvoyConfig: its routes are not served")
        };
        let mut d = about(
            gw,
            &rules::LISTENER_CONFLICTED,
            format!(
                "listener `{}` is Conflicted/{} and Accepted=False on Cilium {version}: {}",
                l.status.name, c.reason, c.message
            ),
        )
        .at(l.location.clone())
        .listener(l.status.name.clone())
        .note(served)
        .note(across_versions(&outcomes, i));
        for p in &c.partners {
            if let Some(o) = listeners.iter().find(|o| &o.status.name == p) {
                d = d.related(format!("conflicts with listener `{p}`"), o.location.clone());
            }
        }
        out.push(d);
    }
    let ls = &gw.spec.listeners;
    for i in 0..ls.len() {
        for j in i + 1..ls.len() {
            let (a, b) = (&ls[i], &ls[j]);
            let (https, pass) = match (a.protocol.as_str(), b.protocol.as_str()) {
                ("HTTPS", "TLS") if b.tls_mode() == "Passthrough" => (i, j),
                ("TLS", "HTTPS") if a.tls_mode() == "Passthrough" => (j, i),
                _ => continue,
            };
            if a.port != b.port || !sni_intersect(a.host(), b.host()) {
                continue;
            }
            let (h, p) = (&ls[https], &ls[pass]);
            let equal = h.host() == p.host();
            let mut d = about(
                gw,
                &rules::TERMINATE_PASSTHROUGH_PAIR,
                format!(
                    "HTTPS listener `{}` ({}) and TLS passthrough listener `{}` ({}) share port {}",
                    h.name,
                    h.host(),
                    p.name,
                    p.host(),
                    h.port
                ),
            )
            .at(listeners[https].location.clone())
            .related(format!("passthrough listener `{}`", p.name), listeners[pass].location.clone())
            .note(format!("`{}`: {}", h.name, across_versions(&outcomes, https)))
            .note(format!("`{}`: {}", p.name, across_versions(&outcomes, pass)));
            if equal {
                d = d.note("the hostnames are equal: on 1.19.x the rendered listener has two chains with the same match, which Envoy rejects");
            }
            d = d.note(format!(
                "options: a different port for `{}`; a domain for the passthrough services that `{}` does not cover; per-hostname HTTPS listeners instead of `{}`",
                p.name,
                h.host(),
                h.host()
            ));
            out.push(d);
        }
    }
    out
}
