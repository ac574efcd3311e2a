//! A finding on one line, for streams where it is one line among others: `attach --watch`'s
//! changes and the admission webhook's warnings and denial. (Whole reports are the other
//! modules' formats.)

use crate::diagnostic::{Diagnostic, Severity};

/// `error[XDS101] listener 'dup': message`: a finding in `attach --watch`'s text, after its
/// `+` or `-`.
pub fn watch(d: &Diagnostic) -> String {
    let listener = d.listener.as_deref().map(|l| format!(" listener '{l}':")).unwrap_or_default();
    format!("{}[{}]{listener} {}", d.severity, d.code(), d.message)
}

/// `XDS101 duplicate-filter-chain-match (listener dup): message (Envoy: words)`: a finding in
/// an admission response (a warning, or a reason to deny), where an error carries Envoy's words.
pub fn admission(d: &Diagnostic) -> String {
    let listener = d.listener.as_deref().map(|l| format!(" (listener {l})")).unwrap_or_default();
    match (&d.severity, d.envoy_error()) {
        (Severity::Error, Some(e)) => format!("{} {}{listener}: {} (Envoy: {e})", d.rule.code, d.rule.name, d.message),
        _ => format!("{} {}{listener}: {}", d.rule.code, d.rule.name, d.message),
    }
}
