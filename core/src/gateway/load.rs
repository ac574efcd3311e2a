//! Gateway API YAML (a stream, or `kubectl get … -o yaml` Lists) into [`Objects`], detected
//! from each document's `apiVersion` and `kind`, never from a file name.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::api::{At, Objects, Route, RouteKind, Unmodelled};
use crate::load::{Document, LoadError, rules};
use crate::source::{Location, Locator, SourceId, join_field, join_index, join_token};

const GATEWAY_GROUP: &str = "gateway.networking.k8s.io/";

/// Whether `text` holds a document of the Gateway API group, by a search of the text rather
/// than a parse: some `apiVersion: gateway.networking.k8s.io/…`, as YAML or JSON writes it
/// (the key and the value quoted or not, any white space around the colon), which is what the
/// page answers as `xdsck gateway` rather than `xdsck check`. The group's name is found with
/// memchr's searcher (a 100 MB dump is read in milliseconds, and holds it nowhere), and only
/// what stands before each hit is read.
pub fn is_gateway_api(text: &str) -> bool {
    // JavaScript's `\s`, which the page's test used: Unicode's white space without U+0085,
    // and U+FEFF.
    let space = |c: char| (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}';
    let quote = |c: char| c == '"' || c == '\'';
    memchr::memmem::find_iter(text.as_bytes(), GATEWAY_GROUP).any(|at| {
        let before = &text[..at];
        let before = before.strip_suffix(quote).unwrap_or(before).trim_end_matches(space);
        let Some(before) = before.strip_suffix(':') else { return false };
        let before = before.trim_end_matches(space);
        before.strip_suffix(quote).unwrap_or(before).ends_with("apiVersion")
    })
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
    if kind == "List" || kind.ends_with("List") && doc.get("items").is_some_and(Value::is_array) {
        let base = join_field(&pointer, crate::source::Casing::Snake, "items");
        if let Some(Value::Array(items)) = doc.get("items").cloned() {
            for (i, item) in items.into_iter().enumerate() {
                document(id, file, item, join_index(&base, i), objects)?;
            }
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
    use super::is_gateway_api;

    #[test]
    fn gateway_api_is_found_by_its_api_version_as_yaml_or_json_writes_it() {
        for yes in [
            "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n",
            "---\nkind: HTTPRoute\n\"apiVersion\":  'gateway.networking.k8s.io/v1beta1'",
            r#"{"kind":"Gateway","apiVersion":"gateway.networking.k8s.io/v1"}"#,
            "apiVersion :\n  gateway.networking.k8s.io/v1",
            "xapiVersion:\u{feff}gateway.networking.k8s.io/v1",
            "labels: {gateway.networking.k8s.io/gateway-name: a}\napiVersion: gateway.networking.k8s.io/v1",
        ] {
            assert!(is_gateway_api(yes), "{yes:?}");
        }
        for no in [
            "",
            "apiVersion: cilium.io/v2\nkind: CiliumEnvoyConfig\nlabels: {gateway.networking.k8s.io/gateway-name: a}",
            "apiVersion: gateway.networking.k8s.io.example/v1",
            "apiVersion: \"\"gateway.networking.k8s.io/v1",
            "apiVersion;gateway.networking.k8s.io/v1",
            "apiVersion:\u{85}gateway.networking.k8s.io/v1",
            "version: gateway.networking.k8s.io/v1",
        ] {
            assert!(!is_gateway_api(no), "{no:?}");
        }
    }
}
