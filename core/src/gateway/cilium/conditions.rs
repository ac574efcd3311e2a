//! The listener conditions Cilium's operator sets (`setListenerStatus`, `validateListener`,
//! the conflict rules of [`ConflictRule`]) and the Gateway's own conditions.

use super::hostnames::sni_intersect;
use super::versions::{Behaviour, ConflictRule};
use crate::gateway::api::{Gateway, Listener, Objects};

/// One status condition, as Cilium writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// The condition type: `Accepted`, `Programmed`, `ResolvedRefs` or `Conflicted`.
    pub kind: &'static str,
    /// `true` is `status: "True"`, `false` is `"False"` (the model never writes `Unknown`).
    pub status: bool,
    /// Cilium's reason (`Accepted`, `Invalid`, `ProtocolConflict`, `RefNotPermitted`, ...),
    /// word for word: scripts match on it.
    pub reason: String,
    /// Cilium's message, word for word (its trailing spaces included).
    pub message: String,
}

impl Condition {
    fn new(kind: &'static str, status: bool, reason: &str, message: impl Into<String>) -> Self {
        Condition { kind, status, reason: reason.to_owned(), message: message.into() }
    }
}

/// A listener Cilium marks Conflicted, and with whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// The listener named in the message (the last partner in spec order).
    pub(crate) partner: String,
    /// Every listener it conflicts with, in spec order.
    pub(crate) partners: Vec<String>,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

/// What Cilium sets on one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerStatus {
    /// The listener's `name` in the Gateway spec (`status.listeners[].name`).
    pub name: String,
    /// The conditions Cilium writes under `status.listeners[]`, in Cilium's order.
    pub conditions: Vec<Condition>,
    /// Accepted=True: the listener is valid.
    pub(crate) accepted: bool,
    pub(crate) conflict: Option<Conflict>,
}

pub(crate) const LISTENER_NOT_VALID: &str = "Listener not valid. ";
const PENDING: &str = "Address not ready yet";

/// Route kinds a protocol takes (group gateway.networking.k8s.io).
pub(crate) fn supported_kinds(protocol: &str) -> &'static [&'static str] {
    match protocol {
        "HTTP" | "HTTPS" => &["HTTPRoute", "GRPCRoute"],
        "TLS" => &["TLSRoute"],
        "TCP" => &["TCPRoute"],
        "UDP" => &["UDPRoute"],
        _ => &[],
    }
}

fn is_passthrough(l: &Listener) -> bool {
    l.protocol == "TLS" && l.tls_mode() == "Passthrough"
}

fn is_l4(l: &Listener) -> bool {
    matches!(l.protocol.as_str(), "TCP" | "UDP")
}

/// Why two listeners of one Gateway conflict under `rule`, if they do: reason and message tail.
fn pair_conflict(rule: ConflictRule, a: &Listener, b: &Listener) -> Option<(&'static str, String)> {
    if rule == ConflictRule::None || a.port != b.port {
        return None;
    }
    let https_pass = (a.protocol == "HTTPS" && is_passthrough(b)) || (b.protocol == "HTTPS" && is_passthrough(a));
    let cross = || format!("same port {} has overlapping HTTPS and TLS passthrough hostnames.", a.port);
    match rule {
        ConflictRule::None => None,
        ConflictRule::SamePortCrossProtocol => {
            (https_pass && sni_intersect(a.host(), b.host())).then(|| ("ProtocolConflict", cross()))
        }
        ConflictRule::ListenerPair => {
            if (is_l4(a) || is_l4(b)) && !(is_l4(a) && is_l4(b) && a.protocol != b.protocol) {
                return Some(("ProtocolConflict", format!("same port {} has incompatible protocols.", a.port)));
            }
            if https_pass {
                return sni_intersect(a.host(), b.host()).then(|| ("ProtocolConflict", cross()));
            }
            (a.protocol == b.protocol && a.host() == b.host())
                .then(|| ("HostnameConflict", format!("same port {} has overlapping hostnames.", a.port)))
        }
    }
}

fn conflicts(gw: &Gateway, rule: ConflictRule) -> Vec<Option<Conflict>> {
    let ls = &gw.spec.listeners;
    let mut out: Vec<Option<Conflict>> = vec![None; ls.len()];
    for i in 0..ls.len() {
        for j in i + 1..ls.len() {
            let Some((reason, tail)) = pair_conflict(rule, &ls[i], &ls[j]) else { continue };
            for (me, other) in [(i, j), (j, i)] {
                let message = format!("Listener conflicts with listener \"{}\": {tail}", ls[other].name);
                let slot = out[me].get_or_insert_with(|| Conflict {
                    partner: String::new(),
                    partners: Vec::new(),
                    reason,
                    message: String::new(),
                });
                // A later pair overwrites the message: the last partner is named.
                slot.partner = ls[other].name.clone();
                slot.partners.push(ls[other].name.clone());
                slot.reason = reason;
                slot.message = message;
            }
        }
    }
    out
}

/// `validateListener`: the ResolvedRefs condition it sets (if any) and the messages that make
/// the listener invalid, with the Accepted reason.
fn validate(
    gw: &Gateway,
    l: &Listener,
    objects: &Objects,
    main: bool,
) -> (Option<Condition>, Vec<String>, &'static str) {
    let mut resolved = None;
    let mut invalid = Vec::new();
    let mut reason = "Invalid";
    let supported = supported_kinds(&l.protocol);
    if supported.is_empty() {
        invalid.push("Unsupported Listener Protocol.".to_owned());
        if main {
            reason = "UnsupportedProtocol";
        }
    }
    let kinds = l.allowed_routes.as_ref().map_or(&[][..], |a| &a.kinds);
    if !kinds.is_empty() {
        let ok = |k: &crate::gateway::api::RouteGroupKind| {
            k.group.as_deref().unwrap_or("gateway.networking.k8s.io") == "gateway.networking.k8s.io"
                && supported.contains(&k.kind.as_str())
        };
        if kinds.iter().any(|k| !ok(k)) {
            resolved = Some(Condition::new(
                "ResolvedRefs",
                false,
                "InvalidRouteKinds",
                "Unsupported Route Kinds in allowedRoutes.kinds",
            ));
        }
        if !kinds.iter().any(ok) {
            invalid.push("None of the Allowed Route Kinds are supported.".to_owned());
        }
    }
    for r in l.certificate_refs() {
        let ns = r.namespace.as_deref().unwrap_or(gw.metadata.ns());
        let (cond_reason, cond_message, problem) = if !r.is_core_secret() {
            ("InvalidCertificateRef", "Invalid CertificateRef", "Invalid CertificateRef, must be a Secret.".to_owned())
        } else if ns != gw.metadata.ns()
            && !objects.grants.iter().any(|g| {
                g.metadata.ns() == ns
                    && g.permits("gateway.networking.k8s.io", "Gateway", gw.metadata.ns(), "Secret", &r.name)
            })
        {
            ("RefNotPermitted", "CertificateRef is not permitted", "Invalid CertificateRef, not permitted.".to_owned())
        } else {
            // Secrets are usually written by cert-manager, not kept with the Gateway: an input
            // without any Secret is read as "they exist"; with Secrets, the named one must be there.
            let found = objects.secrets.iter().find(|s| s.metadata.ns() == ns && s.metadata.name == r.name);
            match found {
                None if objects.secrets.is_empty() => continue,
                None => (
                    "InvalidCertificateRef",
                    "Invalid CertificateRef",
                    format!("Invalid CertificateRef, secrets \"{}\" not found", r.name),
                ),
                Some(s) if !s.has_tls_pair() => (
                    "InvalidCertificateRef",
                    "Invalid CertificateRef",
                    "Invalid CertificateRef, PEM format error in TLS Certificate".to_owned(),
                ),
                Some(_) => continue,
            }
        };
        resolved = Some(Condition::new("ResolvedRefs", false, cond_reason, cond_message));
        invalid.push(problem);
    }
    if l.protocol == "TLS" && l.tls_mode() == "Terminate" {
        invalid.push("Using TLSRoute with TLS.mode Terminate is unsupported.".to_owned());
        reason = "UnsupportedValue";
    }
    (resolved, invalid, reason)
}

/// The conditions of every listener of `gw`, in spec order.
pub(crate) fn listener_statuses(gw: &Gateway, objects: &Objects, b: Behaviour) -> Vec<ListenerStatus> {
    let conflicts = conflicts(gw, b.conflicts);
    gw.spec
        .listeners
        .iter()
        .zip(conflicts)
        .map(|(l, conflict)| {
            let (resolved, mut invalid, mut reason) = validate(gw, l, objects, b.unsupported_protocol_reason);
            let mut conditions = Vec::new();
            if let Some(c) = &conflict {
                conditions.push(Condition::new("Conflicted", true, c.reason, c.message.clone()));
                invalid.insert(0, c.message.clone());
                reason = "Invalid";
            } else if let Some(r) = resolved.clone() {
                conditions.push(r);
            }
            let accepted = invalid.is_empty();
            if accepted {
                if resolved.is_none() {
                    conditions.push(Condition::new("ResolvedRefs", true, "ResolvedRefs", "Resolved Refs"));
                }
                conditions.push(Condition::new("Accepted", true, "Accepted", "Listener Accepted"));
            } else {
                conditions.push(Condition::new(
                    "Accepted",
                    false,
                    reason,
                    format!("{LISTENER_NOT_VALID}{}", invalid.join(" ")),
                ));
            }
            conditions.push(Condition::new("Programmed", false, "Pending", PENDING));
            ListenerStatus { name: l.name.clone(), conditions, accepted, conflict }
        })
        .collect()
}

/// The Gateway's conditions, given its listeners'.
pub(crate) fn gateway_conditions(listeners: &[ListenerStatus]) -> Vec<Condition> {
    if listeners.iter().any(|l| l.accepted) {
        vec![
            Condition::new("Accepted", true, "Accepted", "Gateway successfully scheduled"),
            Condition::new("Programmed", false, "AddressNotAssigned", "Gateway waiting for address"),
        ]
    } else {
        vec![
            Condition::new("Accepted", false, "ListenersNotValid", "No Accepted Listeners"),
            Condition::new("Programmed", false, "ListenersNotValid", "No Accepted Listeners"),
        ]
    }
}
