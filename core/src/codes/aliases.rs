//! Names rules used to have. A rule that was split or renamed keeps its old name working in
//! `--select`/`--ignore`, `xdsck.toml`, `xdsck.io/ignore` annotations and `xdsck explain`, so a
//! configuration written against an older xdsck still selects what it meant. Codes never change
//! meaning; only names are kept here.

use crate::checks::listener::{
    duplicate_listener_in_update, duplicate_static_listener, invalid_cidr, match_blackhole, misleading_cidr,
    misleading_server_name, partial_wildcard_server_name,
};
use crate::checks::matcher::{
    matcher_ignored_match, matcher_missing_chain, matcher_unused_chain, matcher_upper_case_domain,
};
use crate::checks::schema::constraint_violation;
use crate::diagnostic::Rule;

/// An old rule name and the rules that now carry what it meant.
#[derive(Debug)]
pub struct Alias {
    /// The old name, e.g. `malformed-cidr`.
    pub name: &'static str,
    /// The old code, when the rule is gone (folded into another) rather than renamed or split:
    /// it selects what the name does.
    pub code: Option<&'static str>,
    /// The rules it stands for, in code order.
    pub rules: &'static [&'static Rule],
    /// Why the name went: shown by `xdsck explain <old name>`.
    pub why: &'static str,
}

/// Every old name, sorted by name. The first rule of a split is the one that kept the old
/// code.
pub static ALL: &[Alias] = &[
    Alias {
        name: "duplicate-listener-name",
        code: None,
        rules: &[&duplicate_listener_in_update::RULE, &duplicate_static_listener::RULE],
        why: "it reported a rejected update (error) and a silently skipped static listener (warning); one rule has one severity",
    },
    Alias {
        name: "invalid-port",
        code: Some("XDS112"),
        rules: &[&constraint_violation::RULE],
        why: "it checked two of the Envoy API's PGV rules (ports in 1..65535) by hand; every PGV rule of every message is now constraint-violation's, from Envoy's own descriptors",
    },
    Alias {
        name: "invalid-server-name",
        code: None,
        rules: &[&partial_wildcard_server_name::RULE, &misleading_server_name::RULE],
        why: "it reported names Envoy rejects (error) and names Envoy accepts that match otherwise (warning); one rule has one severity",
    },
    Alias {
        name: "invalid-virtual-host",
        code: Some("XDS116"),
        rules: &[&constraint_violation::RULE],
        why: "it checked a few of the Envoy API's PGV rules on virtual hosts and routes by hand; every PGV rule of every message is now constraint-violation's, from Envoy's own descriptors",
    },
    Alias {
        name: "malformed-cidr",
        code: None,
        rules: &[&invalid_cidr::RULE, &misleading_cidr::RULE],
        why: "it reported ranges Envoy rejects (error) and ranges Envoy accepts that match more (warning); one rule has one severity",
    },
    Alias {
        name: "matcher-action",
        code: None,
        rules: &[
            &matcher_missing_chain::RULE,
            &matcher_unused_chain::RULE,
            &matcher_ignored_match::RULE,
            &matcher_upper_case_domain::RULE,
        ],
        why: "it bundled four findings with four fixes; each is now its own rule, so one can be ignored without the others",
    },
    Alias {
        name: "sni-blackhole",
        code: None,
        rules: &[&match_blackhole::RULE],
        why: "it also finds port, prefix, source-type and source-port holes, not only server names",
    },
];

/// The alias with this name, or with this old code in any case, if any (names are matched
/// exactly, like rule names).
pub fn find(name: &str) -> Option<&'static Alias> {
    ALL.iter().find(|a| a.name == name || a.code.is_some_and(|c| c.eq_ignore_ascii_case(name)))
}

/// An alias is its name: two are equal when they are the same entry.
impl PartialEq for Alias {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Alias {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_off_rule_fingerprints_under_the_code_it_left() {
        assert_eq!(misleading_cidr::RULE.fingerprint, "XDS104");
        assert_eq!(invalid_cidr::RULE.fingerprint, "XDS104");
        assert_eq!(matcher_upper_case_domain::RULE.fingerprint, "XDS204");
        assert_eq!(duplicate_static_listener::RULE.fingerprint, "XDS109");
        // Renamed only: the code never changed.
        assert_eq!(match_blackhole::RULE.fingerprint, "XDS201");
        // A rule split off another is fingerprinted under the code that stayed with the first
        // rule of its alias; every other rule under its own.
        for rule in crate::codes::checks().map(|c| c.rule()) {
            let split = ALL.iter().filter(|a| a.rules.len() > 1).find(|a| a.rules.iter().any(|r| r.code == rule.code));
            assert_eq!(rule.fingerprint, split.map_or(rule.code, |a| a.rules[0].code), "{}", rule.name);
        }
        // Each alias lists the rule that kept the code first, then the rest in code order.
        for a in ALL {
            let codes: Vec<&str> = a.rules.iter().map(|r| r.code).collect();
            assert!(codes.is_sorted(), "{}: {codes:?}", a.name);
        }
        let names: Vec<&str> = ALL.iter().map(|a| a.name).collect();
        assert!(names.is_sorted(), "{names:?}");
        for a in ALL {
            assert!(crate::rule(a.name).is_none(), "`{}` is both a rule and an alias", a.name);
        }
    }
}
