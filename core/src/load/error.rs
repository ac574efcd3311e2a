//! Why an input could not be loaded, and where.

use std::borrow::Cow;

use crate::diagnostic::{Diagnostic, Note, Rule};
use crate::source::Location;

/// An input that is not readable Envoy configuration. Carries one of the `XDS0xx` rules
/// ([`super::rules`]) and the place in the input (offset into the original text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", rule.code)]
pub struct LoadError {
    /// Which kind of unreadable input this is (`XDS0xx`): what a suppression or `explain`
    /// names, and what sets the error's severity.
    pub rule: &'static Rule,
    /// What is wrong with the input, in words (Envoy's own text where Envoy has one).
    pub message: String,
    /// Where in the input: the file and the offset of the value at fault.
    pub location: Location,
    /// Hints printed under the message (what was expected, how to fix it).
    pub notes: Vec<Cow<'static, str>>,
}

impl LoadError {
    // Only the loaders say an input is unreadable; callers get a LoadError, never build one.
    pub(crate) fn new(rule: &'static Rule, message: impl Into<String>, location: Location) -> Self {
        Self { rule, message: message.into(), location, notes: Vec::new() }
    }

    /// Adds a hint below the message: the CLI says how to raise a size limit this way.
    pub fn note(mut self, note: impl Into<Cow<'static, str>>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Whether the input is not Envoy configuration at all (or a template of it), rather than
    /// Envoy configuration xdsck cannot read.
    pub fn is_not_envoy(&self) -> bool {
        std::ptr::eq(self.rule, &super::rules::NOT_ENVOY) || std::ptr::eq(self.rule, &super::rules::TEMPLATE)
    }

    /// The same problem as a diagnostic, for the renderers.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::new(self.rule, self.message.clone()).at(self.location.clone());
        d.notes = self.notes.iter().cloned().map(Note::from).collect();
        d
    }
}
