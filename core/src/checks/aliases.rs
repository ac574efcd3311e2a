//! Names rules used to have. A rule that was split or renamed keeps its old name working in
//! `--select`/`--ignore`, `xdsck.toml`, `xdsck.io/ignore` annotations and `xdsck explain`, so a
//! configuration written against an older xdsck still selects what it meant. Codes never change
//! meaning; only names are kept here.

use crate::diagnostic::Rule;

use super::{duplicate_listener_in_update, duplicate_static_listener, invalid_cidr, misleading_cidr};
use super::{match_blackhole, matcher_ignored_match, matcher_missing_chain, matcher_unused_chain};
use super::{matcher_upper_case_domain, misleading_server_name, partial_wildcard_server_name};

/// An old rule name and the rules that now carry what it meant.
#[derive(Debug)]
pub struct Alias {
    /// The old name, e.g. `malformed-cidr`.
    pub name: &'static str,
    /// The rules it stands for, in code order.
    pub rules: &'static [&'static Rule],
    /// Why the name went: shown by `xdsck explain <old name>`.
    pub why: &'static str,
}

/// Every old name, sorted by name.
pub static ALL: &[Alias] = &[
    Alias {
        name: "duplicate-listener-name",
        rules: &[&duplicate_listener_in_update::RULE, &duplicate_static_listener::RULE],
        why: "it reported a rejected update (error) and a silently skipped static listener (warning); one rule has one severity",
    },
    Alias {
        name: "invalid-server-name",
        rules: &[&partial_wildcard_server_name::RULE, &misleading_server_name::RULE],
        why: "it reported names Envoy rejects (error) and names Envoy accepts that match otherwise (warning); one rule has one severity",
    },
    Alias {
        name: "malformed-cidr",
        rules: &[&invalid_cidr::RULE, &misleading_cidr::RULE],
        why: "it reported ranges Envoy rejects (error) and ranges Envoy accepts that match more (warning); one rule has one severity",
    },
    Alias {
        name: "matcher-action",
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
        rules: &[&match_blackhole::RULE],
        why: "it also finds port, prefix, source-type and source-port holes, not only server names",
    },
];

/// The alias with this name, if any (names are matched exactly, like rule names).
pub fn find(name: &str) -> Option<&'static Alias> {
    ALL.iter().find(|a| a.name == name)
}

/// An alias is its name: two are equal when they are the same entry.
impl PartialEq for Alias {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Alias {}
