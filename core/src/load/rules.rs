//! The input problems (`XDS0xx`): an input that cannot be read as Envoy configuration.
//! Each is a [`crate::Rule`] so `xdsck rules` and `xdsck explain` describe them like the checks; the
//! table of every code, [`crate::codes`], lists them.

use crate::diagnostic::{Severity, declare_rule};

declare_rule! {
    pub static UNREADABLE = {
        code: "XDS001",
        name: "unreadable-input",
        severity: Severity::Error,
        summary: "The input could not be read (missing file, permission denied, I/O error).",
        explanation: "rules/unreadable.md",
    }
}

declare_rule! {
    pub static EMPTY = {
        code: "XDS002",
        name: "empty-input",
        severity: Severity::Error,
        summary: "The input is empty or holds only whitespace and comments.",
        explanation: "rules/empty.md",
    }
}

declare_rule! {
    pub static INVALID_UTF8 = {
        code: "XDS003",
        name: "invalid-utf8",
        severity: Severity::Error,
        summary: "The input is not valid UTF-8 text.",
        explanation: "rules/invalid_utf8.md",
    }
}

declare_rule! {
    pub static JSON_SYNTAX = {
        code: "XDS004",
        name: "json-syntax",
        severity: Severity::Error,
        summary: "The input is not well-formed JSON (syntax error or truncated file).",
        explanation: "rules/json_syntax.md",
    }
}

declare_rule! {
    pub static YAML_SYNTAX = {
        code: "XDS005",
        name: "yaml-syntax",
        severity: Severity::Error,
        summary: "The input is not well-formed YAML.",
        explanation: "rules/yaml_syntax.md",
    }
}

declare_rule! {
    pub static INVALID_FIELD = {
        code: "XDS006",
        name: "invalid-field",
        severity: Severity::Error,
        summary: "A value the reader cannot take in at all (a number beyond any numeric type): the input is not loaded.",
        explanation: "rules/invalid_field.md",
    }
}

declare_rule! {
    pub static NOT_ENVOY = {
        code: "XDS007",
        name: "not-envoy-config",
        severity: Severity::Error,
        summary: "Well-formed JSON or YAML, but not an Envoy configuration xdsck reads.",
        explanation: "rules/not_envoy.md",
    }
}

declare_rule! {
    pub static TEMPLATE = {
        code: "XDS008",
        name: "unrendered-template",
        severity: Severity::Error,
        summary: "The input is a Helm or Go template, not rendered YAML.",
        explanation: "rules/template.md",
    }
}

declare_rule! {
    pub static INPUT_LIMIT = {
        code: "XDS009",
        name: "input-limit",
        severity: Severity::Error,
        summary: "The input exceeds a safety limit (nesting depth, YAML alias expansion, size).",
        explanation: "rules/input_limit.md",
    }
}

declare_rule! {
    pub static DUPLICATE_KEY = {
        code: "XDS010",
        name: "duplicate-key",
        severity: Severity::Error,
        summary: "A key appears twice in the Kubernetes part of an input (apiVersion, kind, metadata): kubectl refuses the manifest.",
        explanation: "rules/duplicate_key.md",
    }
}
