//! Envoy's schema against the real Envoy 1.40 (no mocks): configurations Envoy accepts, each
//! changed in one place by a seeded mutation (a misspelled or unknown key, a value of the wrong
//! type, an enum name, a duration, a number out of range, a constraint broken, a type URL, a
//! typed config removed, and forms Envoy's lenient parser takes), are given to `envoy --mode
//! validate` and to xdsck. Every mutant Envoy rejects for its schema (while parsing, validating
//! or looking up an extension) must be an xdsck error, with Envoy's own words in `envoy_error`
//! for nearly all of them; no mutant Envoy accepts may be one. A mutation can also make Envoy
//! refuse what it builds from a valid config (a STATIC cluster without an address, a TLS
//! context without a certificate): xdsck checks those docs/schema.md lists, and the test holds
//! the ones it misses to at most 2% of the rejected mutants.
//!
//! The seeds are the bootstraps of `testdata/schema/seeds/` and `testdata/envoy/src/` (each must
//! be clean for both tools first). `XDSCK_MUTANTS=N` sets how many mutants (a sample of 160 by
//! default, as CI runs it; thousands by hand), `XDSCK_MUTANT_SEED=S` the seed, and
//! `XDSCK_MUTANT_SEEDS=DIR:DIR` adds directories of seed bootstraps (YAML or JSON). Envoy comes
//! from `scripts/install-envoy.sh` (`$XDSCK_ENVOY` wins); the test fails, never skips, without it.

// The tally of mutants and verdicts is the test's report.
#![allow(clippy::print_stderr)]

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use xdsck_core::{Options, Severity, SourceFile, Sources};

use support::envoy::{normalise, verdict as envoy_verdict};
use support::{mutate, workspace};

/// xdsck's errors on the same text: their `envoy_error`s, normalised (`""` for one without).
fn xdsck_errors(name: &str, json: &str) -> Vec<(String, String)> {
    let mut sources = Sources::new();
    sources.add(SourceFile::new(name, json));
    let report = xdsck_core::analyze(&sources, &Options::default());
    report
        .findings
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| (d.rule.name.to_owned(), d.envoy_error().map(normalise).unwrap_or_default()))
        .collect()
}

/// The seed bootstraps, as JSON values, by name.
fn seeds() -> Vec<(String, Value)> {
    let mut dirs = vec![workspace().join("testdata/schema/seeds")];
    if let Ok(extra) = std::env::var("XDSCK_MUTANT_SEEDS") {
        dirs.extend(extra.split(':').filter(|d| !d.is_empty()).map(PathBuf::from));
    }
    let mut files: Vec<PathBuf> = vec![workspace().join("testdata/envoy/src/bootstrap.yaml")];
    for dir in dirs {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json")))
            .collect();
        found.sort();
        files.extend(found);
    }
    files
        .into_iter()
        .map(|f| {
            let raw = std::fs::read_to_string(&f).unwrap();
            let json = if f.extension().is_some_and(|e| e == "json") {
                raw
            } else {
                xdsck_core::load::yaml::translate(&raw, &Default::default())
                    .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
                    .json()
                    .to_owned()
            };
            let value: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (f.file_name().unwrap().to_string_lossy().into_owned(), value)
        })
        .collect()
}

#[derive(Debug, Default)]
struct Tally {
    rejected: usize,
    accepted: usize,
    /// Rejected by Envoy, an xdsck error with Envoy's words.
    agree: usize,
    /// Rejected by Envoy, an xdsck error, other words.
    worded: Vec<String>,
    /// Rejected by Envoy while parsing or validating its schema, no xdsck error.
    missed: Vec<String>,
    /// Rejected by Envoy when it builds what it validated, no xdsck error.
    missed_building: Vec<String>,
    /// Rejected by Envoy when it builds what it validated.
    building: usize,
    /// Accepted by Envoy, an xdsck error.
    false_errors: Vec<String>,
}

/// Whether Envoy's refusal is of its schema: the JSON parser's, proto validation's, the
/// extension registry's (the words each stage starts with). Anything else Envoy says comes from
/// building what it validated: a cluster, a TLS context, a Lua script, a health check.
fn schema_stage(envoy_says: &str) -> bool {
    [
        "Unable to parse JSON as proto",
        "Protobuf message (type",
        "Proto constraint validation failed",
        "Didn't find a registered implementation",
    ]
    .iter()
    .any(|p| envoy_says.contains(p))
}

#[test]
fn mutants_of_accepted_configs_get_envoys_verdict_and_words() {
    let envoy = support::envoy::binary();
    let dir = tempfile::tempdir().unwrap();
    let seeds = seeds();
    // Every seed is clean for both first: a mutant's verdict is then the mutation's.
    for (name, seed) in &seeds {
        let path = dir.path().join(format!("seed-{name}.json"));
        std::fs::write(&path, serde_json::to_vec_pretty(seed).unwrap()).unwrap();
        assert_eq!(envoy_verdict(&envoy, &path), None, "Envoy refuses the seed {name}");
        let errors = xdsck_errors(name, &serde_json::to_string_pretty(seed).unwrap());
        assert!(errors.is_empty(), "xdsck has errors on the seed {name}: {errors:?}");
    }
    let count: usize = std::env::var("XDSCK_MUTANTS").ok().and_then(|n| n.parse().ok()).unwrap_or(160);
    let seed: u64 = std::env::var("XDSCK_MUTANT_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(22);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut mutants = Vec::new();
    let mut attempts = 0;
    while mutants.len() < count && attempts < count * 50 {
        attempts += 1;
        let (name, seed) = &seeds[mutants.len() % seeds.len()];
        if let Some(m) = mutate::mutate(seed, &mut rng) {
            mutants.push((name.clone(), m));
        }
    }
    // Envoy on both cores: it is the slow part (a quarter of a second a mutant).
    let paths: Vec<PathBuf> = (0..mutants.len()).map(|i| dir.path().join(format!("m{i}.json"))).collect();
    for (p, (_, m)) in paths.iter().zip(&mutants) {
        std::fs::write(p, serde_json::to_vec_pretty(&m.config).unwrap()).unwrap();
    }
    let verdicts: Vec<Option<String>> = std::thread::scope(|s| {
        let half = paths.len().div_ceil(2);
        let jobs: Vec<_> = paths
            .chunks(half.max(1))
            .map(|chunk| s.spawn(|| chunk.iter().map(|p| envoy_verdict(&envoy, p)).collect::<Vec<_>>()))
            .collect();
        jobs.into_iter().flat_map(|j| j.join().unwrap()).collect()
    });
    let mut tally = Tally::default();
    let mut by_class: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (((seed, m), path), verdict) in mutants.iter().zip(&paths).zip(&verdicts) {
        let json = std::fs::read_to_string(path).unwrap();
        let errors = xdsck_errors(&path.display().to_string(), &json);
        let what = format!("[{seed} {} at {}]", m.class, m.pointer);
        let e = by_class.entry(m.class).or_default();
        match verdict {
            Some(envoy_says) => {
                tally.rejected += 1;
                e.0 += 1;
                let building = !schema_stage(envoy_says);
                tally.building += usize::from(building);
                if errors.is_empty() {
                    let short: String = envoy_says.chars().take(400).collect();
                    let missed = if building { &mut tally.missed_building } else { &mut tally.missed };
                    missed.push(format!("{what}\n    envoy: {short}"));
                } else if errors.iter().any(|(_, x)| !x.is_empty() && envoy_says.contains(x.as_str())) {
                    tally.agree += 1;
                } else {
                    let short: String = envoy_says.chars().take(600).collect();
                    tally.worded.push(format!("{what}\n    envoy: {short}\n    xdsck: {errors:?}"));
                }
            }
            None => {
                tally.accepted += 1;
                e.1 += 1;
                if !errors.is_empty() {
                    tally.false_errors.push(format!("{what}\n    xdsck: {errors:?}"));
                }
            }
        }
    }
    let classes: Vec<String> = by_class.iter().map(|(c, (r, a))| format!("{c}: {r} rejected, {a} accepted")).collect();
    eprintln!(
        "{} mutants (seed {seed}): {} rejected by Envoy ({} of them when building, not for the schema), {} accepted\n  rejected with Envoy's words: {}, other words: {}, missed: {} (schema), {} (building)\n  accepted but an xdsck error: {}\n  by class: {}",
        mutants.len(),
        tally.rejected,
        tally.building,
        tally.accepted,
        tally.agree,
        tally.worded.len(),
        tally.missed.len(),
        tally.missed_building.len(),
        tally.false_errors.len(),
        classes.join("; ")
    );
    for w in tally.missed.iter().chain(&tally.false_errors).chain(&tally.worded).chain(&tally.missed_building).take(400)
    {
        eprintln!("{w}");
    }
    assert!(tally.rejected > 0 && tally.accepted > 0, "the mutants should include both verdicts");
    assert!(tally.missed.is_empty(), "{} mutants Envoy rejects for its schema have no xdsck error", tally.missed.len());
    // What Envoy refuses when it builds a cluster, a TLS context, a script... goes beyond the
    // schema: xdsck checks the refusals of that kind docs/schema.md lists, not every one.
    let building_missed = tally.missed_building.len() as f64 / tally.rejected as f64;
    assert!(
        building_missed <= 0.02,
        "{:.1}% of the rejected mutants are refused when Envoy builds them and have no xdsck error",
        building_missed * 100.0
    );
    assert!(tally.false_errors.is_empty(), "{} mutants Envoy accepts have an xdsck error", tally.false_errors.len());
    let worded = tally.worded.len() as f64 / tally.rejected as f64;
    assert!(worded <= 0.05, "{:.1}% of the rejected mutants lack Envoy's words", worded * 100.0);
}
