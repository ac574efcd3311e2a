//! A loaded input's text: the [`SourceFile`] as given and, for YAML, the JSON it stands for
//! with the way back. The model's strings borrow from this text, so the caller keeps the
//! [`Document`] alive beside the [`Input`] made from it; its [`Locator`] turns the places the
//! loaders recorded (offsets into the JSON text, JSON pointers) into offsets into the input.

use super::yaml::YamlJson;
use super::{Limits, LoadError};
use crate::model::Input;
use crate::source::{Locator, SourceFile, SourceId, Translation};

/// One input read for loading: the first loader step (size limit, empty input, templates, the
/// YAML translation) done, the parse not yet. [`Self::load`] parses it into an [`Input`] that
/// borrows from it.
#[derive(Debug)]
pub struct Document<'s> {
    id: SourceId,
    file: &'s SourceFile,
    /// What the first step found, or the error it stopped at (returned by [`Self::load`]).
    read: Result<Read, LoadError>,
}

#[derive(Debug)]
pub(super) struct Read {
    /// The translation of a YAML input; `None` for JSON.
    pub(super) yaml: Option<YamlJson>,
    /// Where the text starts after a byte-order mark.
    pub(super) body_start: usize,
    /// Offset of the first significant byte.
    pub(super) first_offset: usize,
}

impl<'s> Document<'s> {
    /// Reads a source with default limits.
    pub fn new(id: SourceId, file: &'s SourceFile) -> Self {
        Self::with_limits(id, file, &Limits::default())
    }

    /// Reads a source: everything before the parse, the YAML translation included.
    pub fn with_limits(id: SourceId, file: &'s SourceFile, limits: &Limits) -> Self {
        Self { id, file, read: super::read(id, file, limits) }
    }

    /// The id findings from this input carry.
    pub fn id(&self) -> SourceId {
        self.id
    }

    /// The input as given, whose text locations point into.
    pub fn file(&self) -> &'s SourceFile {
        self.file
    }

    /// Whether the text was YAML (and was translated).
    pub fn is_yaml(&self) -> bool {
        self.yaml().is_some()
    }

    fn yaml(&self) -> Option<&YamlJson> {
        self.read.as_ref().ok().and_then(|r| r.yaml.as_ref())
    }

    /// Where places in this document are.
    pub fn locator(&self) -> Locator<'_> {
        Locator::new(self.file, self.yaml().map(|y| y as &dyn Translation))
    }

    /// The first step's outcome for a front end that parses the JSON text itself (Gateway API
    /// objects): where places in the document are, or the error the step stopped at.
    pub fn read(&self) -> Result<Locator<'_>, LoadError> {
        match &self.read {
            Ok(_) => Ok(self.locator()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Parses the document into the model; the error of the first step if it stopped.
    pub fn load(&self) -> Result<Input<'_>, LoadError> {
        match &self.read {
            Ok(read) => super::parse_document(self.id, self.locator(), read),
            Err(e) => Err(e.clone()),
        }
    }
}
