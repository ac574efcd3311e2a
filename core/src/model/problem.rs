//! What the reader found wrong with an input while reading it the way Envoy's parser and its
//! proto validation read it. Each problem becomes one finding of the schema rule its kind names
//! (`checks/schema_*.rs`); the reader only records them.

/// One problem the reader found, at a place of its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Which rule reports it.
    pub kind: ProblemKind,
    /// What is wrong, in xdsck's words.
    pub message: String,
    /// Envoy's own text for it, when Envoy refuses the configuration for it.
    pub envoy_error: Option<String>,
    /// More to say: what Envoy logs instead of refusing, how to fix it.
    pub notes: Vec<String>,
    /// JSON pointer of the key or value at fault, in the input's own spelling.
    pub pointer: String,
    /// Byte offset in the input's JSON text of the value at fault, when the reader saw it.
    pub offset: Option<usize>,
    /// The nearest enclosing place the reader knew the offset of: where the value is looked
    /// for when `offset` is unknown, so that locating it reads only that part of the text.
    pub anchor: Option<Anchor>,
    /// Another place the problem is about (the occurrence of a repeated field Envoy keeps):
    /// what it is, and its byte offset in the JSON text.
    pub related: Option<(String, usize)>,
}

/// A located ancestor of a problem's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// How many bytes of the problem's pointer are the ancestor's pointer.
    pub pointer_len: usize,
    /// Byte offset of the ancestor's value in the JSON text.
    pub offset: usize,
}

/// The kinds of problem, one per schema rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProblemKind {
    /// A key no field of the message has, or an enum name the enum lacks, where Envoy refuses
    /// the configuration for it (a bootstrap, a Listener file).
    UnknownField,
    /// The same, where Envoy ignores the key and logs a warning (an xDS resource).
    IgnoredField,
    /// A value protobuf's JSON parser refuses: the wrong JSON type, a number out of range, a
    /// malformed duration, an Any without `@type`, two members of one oneof.
    InvalidValue,
    /// A protoc-gen-validate constraint the value breaks.
    Constraint,
    /// A typed config Envoy has no extension for.
    UnknownExtension,
    /// A value Envoy checks after parsing and refuses: a negative duration, a regex RE2
    /// refuses, a virtual cluster without headers.
    InvalidSetting,
    /// A payload whose type Envoy's schema does not have (another proxy's extension): not
    /// validated.
    NotValidated,
    /// A form the Cilium agent's Go protojson decoder refuses in a CiliumEnvoyConfig.
    AgentRefuses,
    /// A field given more than once in one object: Envoy keeps the last value (or joins the
    /// lists), so an earlier one does not take effect.
    RepeatedField,
}
