//! Which hash each of xdsck's tables uses, decided here once.
//!
//! A table whose keys come from an input (server names, domains, cluster names, a map's keys, a
//! chain's rules) is hashed with foldhash, seeded anew by every process. With a hash anyone can
//! compute ahead (FxHash, which these tables used before), an input can be written whose names
//! all fall into one bucket, and then every insertion scans the names before it: quadratic in
//! the input, from a file a webhook or a CI job is handed. Seeded, such names cannot be
//! written ahead; foldhash costs what FxHash did.
//!
//! Two kinds of table keep FxHash: those of Envoy's schema, fixed when xdsck is built (an
//! input's words are only looked up in them, never inserted), and those keyed by xdsck's own
//! numbers (an input's index, a graph's node), of which an input decides how many, not which.
//!
//! A seeded table's order changes from run to run, so nothing xdsck prints may follow it: these
//! tables are looked up, or their entries sorted before they are shown.

/// A map keyed by what an input says.
pub(crate) type InputMap<K, V> = foldhash::HashMap<K, V>;

/// A set of what an input says.
pub(crate) type InputSet<K> = foldhash::HashSet<K>;

/// The hasher of [`InputMap`] and [`InputSet`], for tables that keep their hashes themselves.
pub(crate) type InputHasher = foldhash::fast::RandomState;

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    /// What an input cannot know ahead: where its names fall. Two tables of one process hash
    /// the same names differently (a fixed hash, as FxHash, would place them alike).
    #[test]
    fn tables_are_seeded_each_their_own_way() {
        let (a, b) = (InputHasher::default(), InputHasher::default());
        let names = ["api.example.com", "*.example.com", "h2", "backend"];
        assert!(names.iter().all(|n| a.hash_one(n) == a.hash_one(n)), "one table hashes a name one way");
        assert!(names.iter().any(|n| a.hash_one(n) != b.hash_one(n)), "two tables placed every name alike");
        let map: InputMap<&str, usize> = names.iter().copied().zip(0..).collect();
        let set: InputSet<&str> = names.iter().copied().collect();
        assert!(names.iter().zip(0..).all(|(n, i)| map[n] == i && set.contains(n)));
    }
}
