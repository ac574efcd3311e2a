//! `skipped-document`: a document of a stream or list that is not Envoy configuration, so
//! nothing in it was checked.

use crate::checks::{Check, Context};
use crate::diagnostic::{Diagnostic, Rule, Severity};
use crate::model::{Skipped, SkippedKind};
use crate::source::{Location, SourceFile, SourceId};

pub static RULE: Rule = Rule {
    code: "XDS302",
    name: "skipped-document",
    severity: Severity::Info,
    summary: "A document of the input is not Envoy configuration; xdsck did not check it.",
    explanation: "## What it finds\nA document in a YAML stream, a JSON list or a `kind: List` that is none of the things xdsck reads (a Gateway, a Service, a Secret), next to documents it does read. The other documents are checked; this one is named here so that nothing is left out without a word.\n\n## Why it matters\nA Gateway API object or a Service says nothing about what Envoy runs. If you expected listeners in it, they are not there: check what the controller rendered from it.\n\n## Example\n```yaml\napiVersion: cilium.io/v2\nkind: CiliumEnvoyConfig\n# ...\n---\napiVersion: v1\nkind: Service\n```\n\n## Fix\nNothing to fix if the document is there on purpose. Select only Envoy configuration (`kubectl get cec -A -o yaml`) to silence it.\n",
};

pub struct SkippedDocument;

fn diagnostic(s: &Skipped, source: SourceId, file: &SourceFile) -> Diagnostic {
    Diagnostic::new(&RULE, format!("not checked: {} is not Envoy configuration", s.what)).at(Location::new(
        source,
        s.pointer.clone(),
        s.offset.map(|o| file.node_offset(o)),
    ))
}

impl Check for SkippedDocument {
    fn rule(&self) -> &'static Rule {
        &RULE
    }

    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>) {
        for input in &cx.snapshot.inputs {
            let file = cx.sources.get(input.source);
            out.extend(
                input
                    .skipped
                    .iter()
                    .filter(|s| s.kind == SkippedKind::Document)
                    .map(|s| diagnostic(s, input.source, file)),
            );
        }
    }
}
