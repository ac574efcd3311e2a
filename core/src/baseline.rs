//! A baseline: the findings a project has accepted, so CI fails only on new ones. Findings are
//! recorded by rule, listener, chain names and [`Diagnostic::fingerprint`] (never by line), and
//! matched by fingerprint and count: two accepted findings with one fingerprint cover two, a
//! third is new.
//!
//! Input problems (`XDS0xx`) are never recorded: an input that could not be read is not a
//! finding to live with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::codes::is_input_problem;
use crate::diagnostic::Diagnostic;
use crate::report::Report;

/// Bumped only when the file's shape changes incompatibly.
const VERSION: u32 = 1;

/// A baseline file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// The file is not JSON in the baseline's shape.
    #[error("not an xdsck baseline: {0}")]
    Syntax(#[from] serde_json::Error),
    /// A baseline written by an xdsck whose format this one does not read.
    #[error("baseline version {0}; this xdsck reads version {VERSION}")]
    Version(u32),
}

/// The accepted findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// The format's version, so a later xdsck can tell an old file from a new one.
    pub version: u32,
    /// The accepted findings, sorted so the file diffs well.
    pub findings: Vec<Entry>,
}

/// One accepted finding. Only `fingerprint` is matched; the rest tells a reader what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The rule's code, for a reader.
    pub code: String,
    /// The rule's name, for a reader.
    pub rule: String,
    /// The listener, for a reader.
    pub listener: Option<String>,
    /// The chains, for a reader.
    #[serde(default)]
    pub filter_chains: Vec<String>,
    /// What is matched: [`crate::diagnostic::Diagnostic::fingerprint`], stable across reformatting and
    /// reordering.
    pub fingerprint: String,
}

impl Baseline {
    /// The findings of `report` (input problems left out), sorted, so the same findings give
    /// the same file.
    pub fn of(report: &Report) -> Self {
        let mut findings: Vec<Entry> = report
            .findings
            .iter()
            .filter(|d| !is_input_problem(d.rule))
            .map(|d| Entry {
                code: d.rule.code.to_owned(),
                rule: d.rule.name.to_owned(),
                listener: d.listener.as_deref().map(str::to_owned),
                filter_chains: d.filter_chains.to_vec(),
                fingerprint: d.fingerprint(),
            })
            .collect();
        findings.sort_by(|a, b| {
            (&a.code, &a.listener, &a.filter_chains, &a.fingerprint).cmp(&(
                &b.code,
                &b.listener,
                &b.filter_chains,
                &b.fingerprint,
            ))
        });
        Self { version: VERSION, findings }
    }

    /// Reads a baseline written by `--write-baseline`.
    pub fn from_json(text: &str) -> Result<Self, BaselineError> {
        let baseline: Self = serde_json::from_str(text)?;
        if baseline.version != VERSION {
            return Err(BaselineError::Version(baseline.version));
        }
        Ok(baseline)
    }

    /// Pretty-printed, one entry per few lines, so a changed baseline reads well in a diff.
    pub fn to_json(&self) -> String {
        let mut out = serde_json::to_string_pretty(self).expect("plain data serializes");
        out.push('\n');
        out
    }

    /// Leaves the accepted findings out of `report`, counting them as suppressed.
    pub fn apply(&self, report: &mut Report) {
        let mut accepted: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &self.findings {
            *accepted.entry(e.fingerprint.as_str()).or_default() += 1;
        }
        let mut suppressed = 0;
        report.findings.retain(|d: &Diagnostic| {
            if is_input_problem(d.rule) {
                return true;
            }
            match accepted.get_mut(d.fingerprint().as_str()) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    suppressed += 1;
                    false
                }
                _ => true,
            }
        });
        report.suppressed.baseline += suppressed;
    }
}
