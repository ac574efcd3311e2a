//! The texts Envoy 1.40 prints for what the reader finds, built from the walk's path. A
//! finding's `envoy_error` is compared with the real Envoy's output (whitespace collapsed,
//! protobuf's `near L:C (offset N)` left out: it counts positions in Envoy's own JSON rendering
//! of the input, which xdsck replaces with the input's line and column).

use std::fmt::Write as _;

use super::{Comp, PgvIndex, PgvLink, Walk};

/// The last step of a PGV text.
pub(super) enum Leaf<'a> {
    /// `ListenerValidationError.Address: <reason>`.
    Field { message: &'a str, field: &'a str, index: Option<String> },
    /// A map key's rule: PGV's C++ writes `key for ` over its buffer's initial `invalid `.
    Key { message: &'a str, field: &'a str, key: String },
    /// A required oneof none of whose fields is set.
    Oneof(&'a str),
}

impl Walk<'_> {
    /// protobuf's `MessagePath::Describe`: the root message, then ` @ ` and the path with the
    /// kind (and type) of its last component.
    pub(super) fn describe(&self) -> String {
        let st = self.st.borrow();
        let root = st.comps.iter().rposition(Comp::parse_root).unwrap_or(0);
        let comps = &st.comps[root..];
        let Some(first) = comps.first() else { return String::new() };
        let mut out = first.type_name(self.schema).to_owned();
        if comps.len() == 1 {
            return out;
        }
        out.push_str(" @ ");
        for (i, c) in comps[1..].iter().enumerate() {
            if i > 0 {
                out.push('.');
            }
            out.push_str(&c.name);
            if c.index >= 0 {
                let _ = write!(out, "[{}]", c.index);
            }
        }
        let last = &comps[comps.len() - 1];
        out.push_str(": ");
        out.push_str(last.kind(self.schema));
        let type_name = last.type_name(self.schema);
        if !type_name.is_empty() {
            out.push(' ');
            out.push_str(type_name);
        }
        out
    }

    /// The full name of the message Envoy's parser started with.
    pub(super) fn parse_root_name(&self) -> &'static str {
        let st = self.st.borrow();
        st.comps.iter().rev().find(|c| c.parse_root()).map_or("", |c| c.type_name(self.schema))
    }

    /// `Unable to parse JSON as proto (...)`: what Envoy says when protobuf's parser refuses a
    /// value even with unknown fields ignored.
    pub(super) fn parse_error(&self, message: &str) -> String {
        format!("Unable to parse JSON as proto (INVALID_ARGUMENT: invalid JSON in {}: {message})", self.describe())
    }

    /// A parse error protobuf reports without a place (`could not find @type`).
    pub(super) fn bare_parse_error(message: &str) -> String {
        format!("Unable to parse JSON as proto (INVALID_ARGUMENT: {message})")
    }

    /// What the strict parse of static configuration says about an unknown key, which Envoy
    /// then refuses the configuration for.
    pub(super) fn unknown_field_error(&self, key: &str) -> String {
        format!(
            "Protobuf message (type {} reason INVALID_ARGUMENT: invalid JSON in {}: no such field: '{key}') has unknown fields",
            self.parse_root_name(),
            self.describe()
        )
    }

    /// The same for an enum name the enum lacks (protobuf gives no place for it).
    pub(super) fn unknown_enum_error(&self, name: &str) -> String {
        format!(
            "Protobuf message (type {} reason INVALID_ARGUMENT: unknown enum value: '{name}') has unknown fields",
            self.parse_root_name()
        )
    }

    /// The warning Envoy logs instead for an xDS resource.
    pub(super) fn unknown_field_warning(&self, reason: &str) -> String {
        format!("Envoy logs: Unknown field: type {} reason INVALID_ARGUMENT: {reason}", self.parse_root_name())
    }

    /// `Proto constraint validation failed (...)`: PGV's chain from the nearest validation root
    /// down to the field at fault. `upto` is how many of the current path's components belong
    /// to the chain before `leaf`.
    pub(super) fn pgv_error(&self, upto: usize, leaf: Leaf<'_>, reason: &str) -> String {
        let st = self.st.borrow();
        let upto = upto.min(st.comps.len());
        let root = st.comps[..upto].iter().rposition(|c| matches!(c.pgv(self.schema), PgvLink::Root)).unwrap_or(0);
        let mut out = String::from("Proto constraint validation failed (");
        for c in &st.comps[root..upto] {
            if let PgvLink::Field { message, field, index } = c.pgv(self.schema) {
                let _ = write!(out, "{message}ValidationError.{field}");
                push_index(&mut out, index);
                out.push_str(": embedded message failed validation | caused by ");
            }
        }
        match leaf {
            Leaf::Field { message, field, index } => {
                let _ = write!(out, "{message}ValidationError.{field}");
                if let Some(i) = index {
                    let _ = write!(out, "[{i}]");
                }
                let _ = write!(out, ": {reason}");
            }
            Leaf::Key { message, field, key } => {
                let _ = write!(out, "key for {message}ValidationError.{field}[{key}]: {reason}");
            }
            Leaf::Oneof(name) => {
                let _ = write!(out, "field: \"{name}\", reason: is required");
            }
        }
        out.push(')');
        out
    }

    /// How many components the current path has.
    pub(super) fn depth(&self) -> usize {
        self.st.borrow().comps.len()
    }

    /// The PGV step of component `i` (a field's own component, whose rules are being checked).
    pub(super) fn pgv_leaf_of(&self, i: usize) -> Option<(&'static str, &'static str, Option<String>)> {
        let st = self.st.borrow();
        match st.comps.get(i)?.pgv(self.schema) {
            PgvLink::Field { message, field, index } => Some((message, field, index.map(index_text))),
            _ => None,
        }
    }
}

fn push_index(out: &mut String, index: Option<&PgvIndex<'_>>) {
    if let Some(i) = index {
        let _ = write!(out, "[{}]", index_text(i));
    }
}

fn index_text(i: &PgvIndex<'_>) -> String {
    match i {
        PgvIndex::Item(n) => n.to_string(),
        PgvIndex::Key(k) => k.to_string(),
    }
}
