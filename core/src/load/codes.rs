//! The input problems (`XDS0xx`): an input that cannot be read as Envoy configuration.
//! Each is a [`Rule`] so `xdsck rules` and `xdsck explain` describe them like the checks.

use crate::diagnostic::{Rule, Severity};

pub static UNREADABLE: Rule = Rule {
    code: "XDS001",
    name: "unreadable-input",
    severity: Severity::Error,
    summary: "The input could not be read (missing file, permission denied, I/O error).",
    explanation: "## What it finds\nA path that cannot be opened or read.\n\n## Why it matters\nNothing was checked.\n\n## Example\n`xdsck check missing.json`\n\n## Fix\nPass a readable file, or `-` for standard input.\n",
};

pub static EMPTY: Rule = Rule {
    code: "XDS002",
    name: "empty-input",
    severity: Severity::Error,
    summary: "The input is empty or holds only whitespace and comments.",
    explanation: "## What it finds\nAn input with no document in it.\n\n## Why it matters\nAn empty dump usually means the command that produced it failed (an admin endpoint that was not reachable, a `kubectl` that matched nothing).\n\n## Example\n`curl -s --unix-socket admin.sock http://x/config_dump > dump.json` against a stopped proxy.\n\n## Fix\nCheck the command that produced the file.\n",
};

pub static INVALID_UTF8: Rule = Rule {
    code: "XDS003",
    name: "invalid-utf8",
    severity: Severity::Error,
    summary: "The input is not valid UTF-8 text.",
    explanation: "## What it finds\nBytes that are not UTF-8: a binary file, a protobuf dump, or text in another encoding.\n\n## Why it matters\nEnvoy's JSON and YAML are UTF-8; xdsck cannot read anything else as text.\n\n## Example\nA `config_dump` saved with `?format=proto`, or a UTF-16 file from an editor.\n\n## Fix\nFetch the JSON form (`/config_dump`), or convert the file to UTF-8.\n",
};

pub static JSON_SYNTAX: Rule = Rule {
    code: "XDS004",
    name: "json-syntax",
    severity: Severity::Error,
    summary: "The input is not well-formed JSON (syntax error or truncated file).",
    explanation: "## What it finds\nA JSON syntax error: a missing comma or bracket, a stray character, or a file that ends in the middle of a value.\n\n## Why it matters\nEnvoy would refuse the same file; a truncated dump means the fetch was cut short.\n\n## Example\n`{\"configs\": [` (the file ends there).\n\n## Fix\nRe-fetch or fix the file at the line and column shown.\n",
};

pub static YAML_SYNTAX: Rule = Rule {
    code: "XDS005",
    name: "yaml-syntax",
    severity: Severity::Error,
    summary: "The input is not well-formed YAML.",
    explanation: "## What it finds\nA YAML syntax error: bad indentation, an unclosed quote or flow collection, a tab used for indentation.\n\n## Why it matters\n`kubectl apply` and Envoy would refuse the same file.\n\n## Example\n```yaml\nfilterChains:\n - name: a\n  filters: []\n```\n\n## Fix\nFix the YAML at the line and column shown.\n",
};

pub static WRONG_TYPE: Rule = Rule {
    code: "XDS006",
    name: "invalid-field",
    severity: Severity::Error,
    summary: "A field xdsck reads has the wrong type or an invalid value.",
    explanation: "## What it finds\nA field of a Listener, FilterChainMatch or their containers whose value has the wrong JSON type (a list where an object belongs, text where a number belongs) or an unknown enum value.\n\n## Why it matters\nEnvoy's proto3 JSON parser refuses the same document, so the configuration would never be applied.\n\n## Example\n```json\n{\"filter_chain_match\": {\"transport_protocol\": [\"tls\"]}}\n```\n`transport_protocol` is one string. (A single value where a list belongs is fine: Envoy reads `server_names: api.example.com` as a list of one.)\n\n## Fix\nGive the field the type the Envoy API defines (see the JSON pointer in the message).\n",
};

pub static NOT_ENVOY: Rule = Rule {
    code: "XDS007",
    name: "not-envoy-config",
    severity: Severity::Error,
    summary: "Well-formed JSON or YAML, but not an Envoy configuration xdsck reads.",
    explanation: "## What it finds\nA document that is none of: an Envoy admin `/config_dump`, a bootstrap, a Listener or a list of them, an xDS DiscoveryResponse, a CiliumEnvoyConfig or CiliumClusterwideEnvoyConfig.\n\n## Why it matters\nA Gateway API resource, a Service or a Helm values file says nothing about what Envoy runs; checking it would silently check nothing.\n\n## Example\n`kubectl get gateway -o yaml | xdsck -`\n\n## Fix\nCheck what the controller rendered: `kubectl get cec -A -o yaml | xdsck -`, or the proxy's `/config_dump`.\n",
};

pub static TEMPLATE: Rule = Rule {
    code: "XDS008",
    name: "unrendered-template",
    severity: Severity::Error,
    summary: "The input is a Helm or Go template, not rendered YAML.",
    explanation: "## What it finds\nTemplate actions such as `{{ .Values.x }}` in the input.\n\n## Why it matters\nA template is not the configuration Envoy gets; its values are only known after rendering.\n\n## Example\nCilium's `bootstrap-config.yaml` from the Helm chart.\n\n## Fix\nRender it first: `helm template ... | xdsck -`, or check the live proxy with `xdsck attach`.\n",
};

pub static TOO_COMPLEX: Rule = Rule {
    code: "XDS009",
    name: "input-limit",
    severity: Severity::Error,
    summary: "The input exceeds a safety limit (nesting depth, YAML alias expansion, size).",
    explanation: "## What it finds\nDocuments nested deeper than any Envoy configuration is, YAML aliases that would expand to far more nodes than the file holds (a \"billion laughs\" document), or an input over the size limit.\n\n## Why it matters\nSuch input would exhaust memory or stack; real Envoy configuration never needs it.\n\n## Example\n```yaml\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n```\n\n## Fix\nExpand aliases with another tool if the input is legitimate, or check where the file came from.\n",
};

pub static DUPLICATE_KEY: Rule = Rule {
    code: "XDS010",
    name: "duplicate-key",
    severity: Severity::Error,
    summary: "A key appears twice in one object (or a field is given in both casings).",
    explanation: "## What it finds\nAn object with the same key twice, or with one field spelled both ways (`filter_chains` and `filterChains`).\n\n## Why it matters\nEnvoy's proto3 JSON parser and YAML loaders refuse it, and tools disagree on which copy wins.\n\n## Example\n```json\n{\"name\": \"a\", \"name\": \"b\"}\n```\n\n## Fix\nKeep one of the two.\n",
};

/// Every input rule, in code order.
pub static ALL: &[&Rule] = &[
    &UNREADABLE,
    &EMPTY,
    &INVALID_UTF8,
    &JSON_SYNTAX,
    &YAML_SYNTAX,
    &WRONG_TYPE,
    &NOT_ENVOY,
    &TEMPLATE,
    &TOO_COMPLEX,
    &DUPLICATE_KEY,
];
