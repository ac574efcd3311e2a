//! The rules of `xdsck gateway` (`XDS4xx`): what Cilium's operator will do with Gateway API
//! input, as findings beside the Envoy-level ones on the CiliumEnvoyConfig it renders. The table
//! of every code, [`crate::codes`], lists them.

use crate::diagnostic::{Severity, declare_rule};

declare_rule! {
    /// `XDS401`: an object the Cilium model skips, so "no findings" never hides an unread input.
    pub(crate) static NOT_MODELLED = {
        code: "XDS401",
        name: "gateway-object-not-modelled",
        severity: Severity::Info,
        summary: "An object of Gateway API input that xdsck's Cilium model does not read.",
        explanation: "rules/not_modelled.md",
    }
}

declare_rule! {
    /// `XDS402`: a listener Cilium marks Conflicted; the routes behind it are lost on 1.20+.
    pub(crate) static LISTENER_CONFLICTED = {
        code: "XDS402",
        name: "cilium-listener-conflicted",
        severity: Severity::Warning,
        summary: "Cilium marks a Gateway listener Conflicted and Accepted=False (1.19.6+), and drops it from Envoy (1.20+).",
        explanation: "rules/listener_conflicted.md",
    }
}

declare_rule! {
    /// `XDS403`: HTTPS terminate and TLS passthrough on one port with intersecting hostnames:
    /// served on 1.19.5, Conflicted from 1.19.6, dropped from 1.20, so an upgrade loses traffic.
    pub(crate) static TERMINATE_PASSTHROUGH_PAIR = {
        code: "XDS403",
        name: "https-passthrough-same-port",
        severity: Severity::Warning,
        summary: "An HTTPS listener and a TLS passthrough listener share a port with overlapping hostnames.",
        explanation: "rules/terminate_passthrough_pair.md",
    }
}
