//! Gateway API YAML (a stream, or `kubectl get … -o yaml` Lists) into [`Objects`], detected
//! from each document's `apiVersion` and `kind`, never from a file name.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::api::{At, Objects, Route, RouteKind, Unmodelled};
use crate::load::{Document, Limits, LoadError, rules};
use crate::source::{Location, Locator, SourceFile, SourceId, join_field, join_index, join_token};

const GATEWAY_GROUP: &str = "gateway.networking.k8s.io/";

/// Whether an input holds a Gateway API object: a document, or an item of a `…List`, whose own
/// `apiVersion` is in the group, which the page answers as `xdsck gateway` rather than `xdsck
/// check`. Only its own: a CiliumEnvoyConfig that Cilium rendered names its Gateway in
/// `ownerReferences`, and is Envoy configuration to check. The text is searched for the
/// group's name first (memchr's searcher): a 100 MB dump without it is not read a second time
/// (an input with it is: its YAML translated here, and again by the front end that takes it).
pub fn holds_gateway_api(id: SourceId, file: &SourceFile, limits: &Limits) -> bool {
    if memchr::memmem::find(file.text().as_bytes(), GATEWAY_GROUP.as_bytes()).is_none() {
        return false;
    }
    // A document that does not read is the other front end's to report.
    let input = Document::with_limits(id, file, limits);
    let Ok(file) = input.read() else { return false };
    let Ok(value) = serde_json::from_str::<Value>(file.json_text().trim_start_matches('\u{feff}')) else {
        return false;
    };
    fn own(doc: &Value) -> bool {
        match list_items(doc) {
            Some(items) => items.iter().any(own),
            None => doc.get("apiVersion").and_then(Value::as_str).is_some_and(|v| v.starts_with(GATEWAY_GROUP)),
        }
    }
    match &value {
        Value::Array(docs) => docs.iter().any(own),
        doc => own(doc),
    }
}

/// The items of a `kind: List` (or `…List` with `items`), as `kubectl get … -o yaml` writes them.
fn list_items(doc: &Value) -> Option<&[Value]> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    let items = doc.get("items");
    if kind == "List" || kind.ends_with("List") && items.is_some_and(Value::is_array) {
        Some(items.and_then(Value::as_array).map_or(&[][..], Vec::as_slice))
    } else {
        None
    }
}

/// Reads one source into `objects`, after the loaders' first step (size limit, empty input,
/// templates, the YAML translation). A document that does not decode as the object its kind
/// names is an error located at the field that failed.
pub(crate) fn load_into(input: &Document<'_>, objects: &mut Objects) -> Result<(), LoadError> {
    let id = input.id();
    let file = input.read()?;
    let json = file.json_text();
    let value: Value = serde_json::from_str(json.trim_start_matches('\u{feff}')).map_err(|e| {
        let offset = input.file().line_start(e.line()).unwrap_or(0);
        LoadError::new(&rules::JSON_SYNTAX, e.to_string(), Location::new(id, "", Some(offset)))
    })?;
    match value {
        Value::Array(docs) => {
            for (i, doc) in docs.into_iter().enumerate() {
                document(id, file, doc, join_index("", i), objects)?;
            }
        }
        doc => document(id, file, doc, String::new(), objects)?,
    }
    Ok(())
}

fn document(
    id: SourceId,
    file: Locator<'_>,
    doc: Value,
    pointer: String,
    objects: &mut Objects,
) -> Result<(), LoadError> {
    if doc.is_null() {
        return Ok(());
    }
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_owned();
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
    let here = At { source: id, pointer: pointer.clone() };
    if let Some(items) = list_items(&doc) {
        let base = join_field(&pointer, crate::source::Casing::Snake, "items");
        for (i, item) in items.iter().cloned().enumerate() {
            document(id, file, item, join_index(&base, i), objects)?;
        }
        return Ok(());
    }
    let gateway_api = api_version.starts_with(GATEWAY_GROUP);
    let core = api_version == "v1";
    match (gateway_api, core, kind.as_str()) {
        (true, _, "Gateway") => {
            let mut g: super::api::Gateway = decode(id, file, doc, &pointer)?;
            g.at = Some(here);
            objects.gateways.push(g);
        }
        (true, _, "HTTPRoute" | "GRPCRoute" | "TLSRoute") => {
            let mut r: Route = decode(id, file, doc, &pointer)?;
            r.kind = match kind.as_str() {
                "HTTPRoute" => RouteKind::Http,
                "GRPCRoute" => RouteKind::Grpc,
                _ => RouteKind::Tls,
            };
            r.at = Some(here);
            objects.routes.push(r);
        }
        (true, _, "ReferenceGrant") => objects.grants.push(decode(id, file, doc, &pointer)?),
        (true, _, "GatewayClass") => objects.classes.push(decode(id, file, doc, &pointer)?),
        (_, true, "Namespace") => objects.namespaces.push(decode(id, file, doc, &pointer)?),
        (_, true, "Service") => objects.services.push(decode(id, file, doc, &pointer)?),
        (_, true, "Secret") => objects.secrets.push(decode(id, file, doc, &pointer)?),
        _ => {
            let name = doc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
            objects.unmodelled.push(Unmodelled { kind, api_version, name, at: here });
        }
    }
    Ok(())
}

fn decode<T: DeserializeOwned>(id: SourceId, file: Locator<'_>, doc: Value, pointer: &str) -> Result<T, LoadError> {
    serde_path_to_error::deserialize(doc).map_err(|e| {
        let mut field = pointer.to_owned();
        for segment in e.path().iter() {
            field = match segment {
                serde_path_to_error::Segment::Seq { index } => join_index(&field, *index),
                serde_path_to_error::Segment::Map { key } => join_token(&field, key),
                _ => field,
            };
        }
        let offset = file.locate_pointer(&field).or_else(|| file.locate_pointer(pointer));
        LoadError::new(&rules::INVALID_FIELD, format!("{}: {}", field, e.inner()), Location::new(id, field, offset))
    })
}

#[cfg(test)]
mod tests {
    use super::holds_gateway_api;
    use crate::load::Limits;
    use crate::source::{SourceFile, Sources};

    fn holds(text: &str) -> bool {
        let mut sources = Sources::new();
        let id = sources.add(SourceFile::new("in.yaml", text));
        holds_gateway_api(id, sources.get(id), &Limits::default())
    }

    #[test]
    fn an_input_holds_gateway_api_when_a_document_is_in_the_group_itself() {
        for yes in [
            "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n",
            "kind: Secret\napiVersion: v1\n---\n\"apiVersion\":  'gateway.networking.k8s.io/v1beta1'\nkind: HTTPRoute",
            r#"{"kind":"Gateway","apiVersion":"gateway.networking.k8s.io/v1"}"#,
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n- apiVersion: gateway.networking.k8s.io/v1\n  kind: Gateway",
        ] {
            assert!(holds(yes), "{yes:?}");
        }
        for no in [
            "",
            "apiVersion: cilium.io/v2\nkind: CiliumEnvoyConfig\nmetadata:\n  ownerReferences:\n  - apiVersion: gateway.networking.k8s.io/v1\n    kind: Gateway",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: cilium.io/v2\n  kind: CiliumEnvoyConfig\n  metadata:\n    labels: {gateway.networking.k8s.io/gateway-name: a}",
            "apiVersion: gateway.networking.k8s.io.example/v1\nkind: Gateway",
            "name: l\nmetadata: {apiVersion: gateway.networking.k8s.io/v1}",
            "apiVersion: gateway.networking.k8s.io/v1\nkind: [unclosed",
        ] {
            assert!(!holds(no), "{no:?}");
        }
    }
}
