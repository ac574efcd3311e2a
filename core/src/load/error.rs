//! Why an input could not be loaded, and where.

use crate::diagnostic::{Diagnostic, Rule};
use crate::source::Location;

/// An input that is not readable Envoy configuration. Carries one of the `XDS0xx` rules
/// ([`super::codes`]) and the place in the input (offset into the original text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", rule.code)]
pub struct LoadError {
    pub rule: &'static Rule,
    pub message: String,
    pub location: Location,
    pub notes: Vec<String>,
}

impl LoadError {
    pub fn new(rule: &'static Rule, message: impl Into<String>, location: Location) -> Self {
        Self { rule, message: message.into(), location, notes: Vec::new() }
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// The same problem as a diagnostic, for the renderers.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::new(self.rule, self.message.clone()).at(self.location.clone());
        d.notes = self.notes.clone();
        d
    }
}
