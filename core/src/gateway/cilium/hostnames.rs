//! Hostname arithmetic as Cilium's operator does it: `SNIHostnamesIntersect` (the conflict and
//! split tests) and `ComputeHosts` (which route hostnames a listener serves).

/// Whether two listener hostnames (empty or `*` = any) can both match one SNI.
pub(crate) fn sni_intersect(a: &str, b: &str) -> bool {
    let a = if a.is_empty() { "*" } else { a };
    let b = if b.is_empty() { "*" } else { b };
    if a == "*" || b == "*" || a == b {
        return true;
    }
    match (a.strip_prefix("*."), b.strip_prefix("*.")) {
        (Some(sa), None) => wildcard_covers(sa, b),
        (None, Some(sb)) => wildcard_covers(sb, a),
        (Some(sa), Some(sb)) if !sa.is_empty() && !sb.is_empty() => {
            // From the right until either side runs out: one matched label and no mismatch.
            let mut matched = 0;
            for (x, y) in sa.rsplit('.').zip(sb.rsplit('.')) {
                if x != y {
                    return false;
                }
                matched += 1;
            }
            matched > 0
        }
        _ => false,
    }
}

/// `*.suffix` against an exact name: at least one character before `.suffix`.
fn wildcard_covers(suffix: &str, exact: &str) -> bool {
    exact.len() > suffix.len() + 1 && exact.ends_with(suffix) && exact[..exact.len() - suffix.len()].ends_with('.')
}

fn labels(h: &str) -> usize {
    h.split('.').count()
}

/// Whether hostname `h` (exact) is matched by listener hostname `l` (exact or `*.x`).
fn host_matches(l: &str, h: &str) -> bool {
    l == "*" || l == h || l.strip_prefix("*.").is_some_and(|s| wildcard_covers(s, h))
}

/// Cilium's `ComputeHosts`: the hostnames a route serves on a listener with hostname
/// `listener` (`*` for none), given the other listeners' hostnames of the same protocol (a more
/// specific listener owns its names). Sorted most specific first; empty drops the route.
pub(crate) fn compute_hosts(route: &[String], listener: &str, others: &[&str]) -> Vec<String> {
    if route.is_empty() {
        return vec![listener.to_owned()];
    }
    let mut out: Vec<String> = Vec::new();
    for h in route {
        let kept = if listener == "*" || h == listener {
            Some(h.clone())
        } else if let Some(hs) = h.strip_prefix("*.") {
            if let Some(ls) = listener.strip_prefix("*.") {
                // Both wildcards: the one with more labels, if one covers the other.
                if wildcard_covers(ls, &format!("x.{hs}")) || hs == ls {
                    Some(h.clone())
                } else if wildcard_covers(hs, &format!("x.{ls}")) {
                    Some(listener.to_owned())
                } else {
                    None
                }
            } else if wildcard_covers(hs, listener) {
                Some(listener.to_owned())
            } else {
                None
            }
        } else if host_matches(listener, h) {
            Some(h.clone())
        } else {
            None
        };
        let Some(kept) = kept else { continue };
        // Isolation: a more specific listener of the same protocol owns this name.
        if listener != kept
            && others
                .iter()
                .any(|o| *o != listener && (*o == kept || (more_specific(o, listener) && host_matches(o, &kept))))
        {
            continue;
        }
        if listener == "*" && others.iter().any(|o| *o != "*" && host_matches(o, &kept)) {
            continue;
        }
        if !out.contains(&kept) {
            out.push(kept);
        }
    }
    out.sort_by(|a, b| specificity(b).cmp(&specificity(a)).then_with(|| a.cmp(b)));
    out
}

fn more_specific(a: &str, than: &str) -> bool {
    specificity(a) > specificity(than)
}

/// Exact names before wildcards, more labels first.
fn specificity(h: &str) -> (bool, usize) {
    (!h.starts_with('*'), labels(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersections_follow_cilium() {
        assert!(sni_intersect("", "api.x"));
        assert!(sni_intersect("*.x", "api.x"));
        assert!(sni_intersect("*.x", "a.b.x"));
        assert!(!sni_intersect("*.x", "x"));
        assert!(sni_intersect("*.a.x", "*.x"));
        assert!(!sni_intersect("*.a.x", "*.b.x"));
        assert!(!sni_intersect("a.x", "b.x"));
        assert!(sni_intersect("a.x", "a.x"));
    }

    #[test]
    fn hosts_are_computed_with_isolation() {
        let r = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(compute_hosts(&[], "*.x", &[]), r(&["*.x"]));
        assert_eq!(compute_hosts(&r(&["a.x", "b.y"]), "*.x", &[]), r(&["a.x"]));
        assert_eq!(compute_hosts(&r(&["a.x", "b.x"]), "*.x", &["a.x", "*.x"]), r(&["b.x"]));
        assert_eq!(compute_hosts(&r(&["*.x"]), "a.x", &[]), r(&["a.x"]));
        assert!(compute_hosts(&r(&["a.y"]), "a.x", &[]).is_empty());
    }
}
