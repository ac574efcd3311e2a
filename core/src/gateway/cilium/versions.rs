//! The Cilium versions xdsck models, and everything that differs between them, in one place.
//! Read it like a changelog: each version lists what it changed against the one before. Every
//! other file of the model asks `Behaviour` and never compares versions itself.

use std::fmt;
use std::str::FromStr;

/// A Cilium release line whose Gateway API translation xdsck reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// v1.19.5 (and the v1.19 releases before it for HTTP/HTTPS/TLS listeners).
    V1_19_5,
    /// v1.19.6 and v1.19.7.
    V1_19_6,
    /// v1.20.x.
    V1_20,
    /// cilium/cilium main.
    Main,
}

impl Version {
    /// Every modelled version, oldest first: the order of the per-version notes of `XDS402`
    /// and `XDS403`.
    pub const ALL: [Version; 4] = [Version::V1_19_5, Version::V1_19_6, Version::V1_20, Version::Main];
    /// The default of `xdsck gateway --cilium`: the newest.
    pub const NEWEST: Version = Version::Main;

    /// The name `--cilium` takes and the output prints (`1.19.5`, `1.19.6`, `1.20`, `main`).
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V1_19_5 => "1.19.5",
            Version::V1_19_6 => "1.19.6",
            Version::V1_20 => "1.20",
            Version::Main => "main",
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version string xdsck does not model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown Cilium version `{0}`: xdsck models 1.19.5, 1.19.6 (= 1.19.7), 1.20 and main")]
pub struct UnknownVersion(pub String);

impl FromStr for Version {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = s.trim().trim_start_matches('v');
        Ok(match v {
            "1.19.5" => Version::V1_19_5,
            "1.19.6" | "1.19.7" => Version::V1_19_6,
            "main" => Version::Main,
            _ if v == "1.20" || v.starts_with("1.20.") => Version::V1_20,
            _ => return Err(UnknownVersion(s.to_owned())),
        })
    }
}

/// How listeners on one port conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConflictRule {
    /// No conflict check at all.
    None,
    /// `samePortCrossProtocolConflictedListeners`: HTTPS next to TLS/Passthrough on one port
    /// with intersecting hostnames, both marked.
    SamePortCrossProtocol,
    /// `listenerPairConflict`: the above, plus TCP/UDP next to anything but each other, plus
    /// the same protocol with the same hostname.
    ListenerPair,
}

/// What one version does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Behaviour {
    pub(crate) conflicts: ConflictRule,
    /// Conflicted and invalid listeners are removed before translation (else they are still
    /// rendered: status and translation are independent).
    pub(crate) drop_invalid_before_translation: bool,
    /// `NeedsPerPortListeners`: more than one HTTPS port, more than one routed passthrough
    /// port, or a cross-port HTTPS/passthrough overlap renders one Envoy listener per port.
    pub(crate) per_port_listeners: bool,
    /// An unsupported listener protocol gives Accepted reason `UnsupportedProtocol` (else
    /// `Invalid`).
    pub(crate) unsupported_protocol_reason: bool,
}

impl Behaviour {
    pub(crate) fn of(version: Version) -> Self {
        // v1.19.5: one combined listener `listener`; no conflict check.
        let mut b = Behaviour {
            conflicts: ConflictRule::None,
            drop_invalid_before_translation: false,
            per_port_listeners: false,
            unsupported_protocol_reason: false,
        };
        if version >= Version::V1_19_6 {
            // v1.19.6 (cilium#46826, backporting #44889, #44962, #45693, #45949):
            // - samePortCrossProtocolConflictedListeners marks HTTPS + TLS/Passthrough pairs
            //   Conflicted/ProtocolConflict and Accepted=False, but they are still rendered;
            // - per-port Envoy listeners `listener-<port>` when a Gateway needs them (only
            //   passthrough ports with a route count, see render::needs_per_port).
            b.conflicts = ConflictRule::SamePortCrossProtocol;
            b.per_port_listeners = true;
        }
        if version >= Version::V1_20 {
            // v1.20 (#47306, #47457): listenerPairConflict (HostnameConflict, L4 protocol
            // conflicts); conflicted and invalid listeners are filtered out before
            // translation, so they have no filter chains.
            b.conflicts = ConflictRule::ListenerPair;
            b.drop_invalid_before_translation = true;
        }
        if version >= Version::Main {
            // main: reason `UnsupportedProtocol` for a listener protocol Cilium does not serve.
            b.unsupported_protocol_reason = true;
        }
        // main: otherwise as v1.20 for listeners and chains. Not modelled: the hashed SDS secret names
        // (36ad4fb681) and the shortened CEC names (12d31d310b).
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_with_their_aliases() {
        assert_eq!("1.19.7".parse(), Ok(Version::V1_19_6));
        assert_eq!("v1.19.5".parse(), Ok(Version::V1_19_5));
        assert_eq!("1.20.1".parse(), Ok(Version::V1_20));
        assert_eq!("main".parse(), Ok(Version::Main));
        assert!("1.18.0".parse::<Version>().is_err());
    }

    #[test]
    fn each_version_changes_what_its_changelog_says() {
        let [a, b, c, d] = Version::ALL.map(Behaviour::of);
        assert_eq!((a.conflicts, a.per_port_listeners), (ConflictRule::None, false));
        assert_eq!(
            (b.conflicts, b.per_port_listeners, b.drop_invalid_before_translation),
            (ConflictRule::SamePortCrossProtocol, true, false)
        );
        assert_eq!((c.conflicts, c.drop_invalid_before_translation), (ConflictRule::ListenerPair, true));
        assert!(d.unsupported_protocol_reason && !c.unsupported_protocol_reason);
    }
}
