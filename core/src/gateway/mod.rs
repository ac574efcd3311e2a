//! Gateway API in, Cilium's verdict out: the listener and Gateway conditions a Cilium version
//! sets, the CiliumEnvoyConfig it renders, and the Envoy-level findings of the existing checks
//! on that CiliumEnvoyConfig (loaded through the ordinary loader, checked unchanged).
//!
//! `api` types the objects, `load` reads them from YAML or JSON, [`cilium`] is the versioned
//! model of the operator, `render` writes the CiliumEnvoyConfig, [`json`] is the JSON answer.

pub(crate) mod api;
pub mod cilium;
pub mod json;
pub(crate) mod load;
pub use load::holds_gateway_api;
pub(crate) mod render;
pub(crate) mod rules;

use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::load::{Document, Limits};
use crate::report::Report;
use crate::source::{Location, SourceFile, SourceId, Sources};
use api::{At, Objects};
use cilium::{Condition, ListenerStatus, Version};

/// One Gateway listener as a verdict is shown: its spec fields, where it is, what Cilium sets.
#[derive(Debug, Clone)]
pub struct ListenerVerdict {
    /// The name and conditions Cilium sets on the listener.
    pub status: ListenerStatus,
    /// `spec.listeners[].port`: the port Cilium's Envoy listener (or `listener-<port>`) binds.
    pub port: u32,
    /// `spec.listeners[].protocol` as written (`HTTP`, `HTTPS`, `TLS`, `TCP`, ...).
    pub protocol: String,
    /// `spec.listeners[].hostname`, `*` when absent (it then matches every SNI and Host).
    pub hostname: String,
    /// `spec.listeners[].tls.mode` (`Terminate` when `tls` has no mode), `None` without `tls`.
    pub tls_mode: Option<String>,
    /// Where the listener is written: its `spec/listeners/<i>` pointer in the input.
    pub location: Location,
    /// Whether the listener reaches the rendered Envoy configuration.
    pub translated: bool,
}

/// What the chosen Cilium version makes of one Gateway.
#[derive(Debug, Clone)]
pub struct GatewayVerdict {
    /// The Gateway's namespace (`default` when the object has none, as kubectl applies it).
    pub namespace: String,
    /// The Gateway's name; the rendered CiliumEnvoyConfig is `cilium-gateway-<name>`.
    pub name: String,
    /// Where the Gateway object is written in the input.
    pub location: Location,
    /// The Gateway's own conditions (`status.conditions`), as Cilium sets them.
    pub conditions: Vec<Condition>,
    /// One verdict per `spec.listeners[]` entry, in spec order.
    pub listeners: Vec<ListenerVerdict>,
    /// The rendered CiliumEnvoyConfig and the source it was added as.
    pub rendered: Option<(Value, SourceId)>,
}

/// The whole answer of `xdsck gateway`.
#[derive(Debug)]
pub struct Evaluation {
    /// The Cilium version whose operator was modelled.
    pub version: Version,
    /// Every Gateway of a Cilium GatewayClass (or every Gateway, without GatewayClasses), in
    /// input order.
    pub gateways: Vec<GatewayVerdict>,
    /// How many objects of the input the model does not read (each is an `XDS401` finding).
    pub not_modelled: usize,
    /// Load problems, the `XDS4xx` findings and the Envoy-level findings on the rendered
    /// CiliumEnvoyConfigs, sorted.
    pub report: Report,
}

/// Where a place in a Gateway API input is, through the document it was read from (its YAML
/// translation).
fn location(documents: &[Document<'_>], at: &At, pointer: &str) -> Location {
    let offset = documents
        .iter()
        .find(|d| d.id() == at.source)
        .and_then(|d| d.read().ok())
        .and_then(|text| text.locate_pointer(pointer))
        .or(Some(0));
    Location::new(at.source, pointer, offset)
}

/// Reads every source of `sources` as Gateway API input, runs `version`'s model, adds one
/// source per rendered CiliumEnvoyConfig to `sources` (named `rendered:<ns>/<name>`) and runs
/// every check on them.
pub fn evaluate(sources: &mut Sources, version: Version, limits: &Limits) -> Evaluation {
    evaluate_except(sources, version, limits, Vec::new(), &crate::settings::Settings::default())
}

/// [`evaluate`] for a caller that already knows some sources cannot be read (see
/// [`crate::analyze_except`]): each of `failed` is reported and its source is not loaded; the
/// findings are selected and graded by `settings`, as `check`'s are.
pub fn evaluate_except(
    sources: &mut Sources,
    version: Version,
    limits: &Limits,
    failed: Vec<Diagnostic>,
    settings: &crate::settings::Settings,
) -> Evaluation {
    let mut objects = Objects::default();
    let skip: Vec<SourceId> = failed.iter().filter_map(|d| d.location.as_ref().map(|l| l.source)).collect();
    let mut failed_count = failed.len();
    let mut problems: Vec<Diagnostic> = failed;
    // The documents' translations locate every Gateway API place; they are dropped before the
    // rendered CiliumEnvoyConfigs are added to `sources`.
    let documents: Vec<Document<'_>> = sources
        .iter()
        .filter(|(id, _)| !skip.contains(id))
        .map(|(id, file)| Document::with_limits(id, file, limits))
        .collect();
    for document in &documents {
        if let Err(e) = load::load_into(document, &mut objects) {
            problems.push(e.to_diagnostic());
            failed_count += 1;
        }
    }
    // One finding per kind the model does not read, at its first object, the others named:
    // a repository's manifests hold dozens of Services and Deployments.
    let mut kinds: Vec<(&str, &str, Vec<&api::Unmodelled>)> = Vec::new();
    for u in &objects.unmodelled {
        match kinds.iter_mut().find(|(k, v, _)| *k == u.kind && *v == u.api_version) {
            Some((_, _, list)) => list.push(u),
            None => kinds.push((&u.kind, &u.api_version, vec![u])),
        }
    }
    let mut notes = Vec::new();
    for (kind, api_version, list) in &kinds {
        let version = if api_version.is_empty() { String::new() } else { format!(" ({api_version})") };
        let names: Vec<&str> = list.iter().map(|u| u.name.as_str()).filter(|n| !n.is_empty()).collect();
        let message = match (*kind, list.as_slice()) {
            ("", [_]) => "a document without `kind` is not part of the Cilium model; not read".to_owned(),
            (kind, [one]) if one.name.is_empty() => {
                format!("a `{kind}`{version} is not part of the Cilium model; not read")
            }
            (kind, [one]) => format!("`{kind}` `{}`{version} is not part of the Cilium model; not read", one.name),
            ("", many) => format!("{} documents without `kind` are not part of the Cilium model; not read", many.len()),
            (kind, many) => format!(
                "{} `{kind}` objects{version} are not part of the Cilium model; not read: {}",
                many.len(),
                names.join(", ")
            ),
        };
        let mut d =
            Diagnostic::new(&rules::NOT_MODELLED, message).at(location(&documents, &list[0].at, &list[0].at.pointer));
        for u in &list[1..] {
            d = d.related(format!("`{}` too", u.name), location(&documents, &u.at, &u.at.pointer));
        }
        problems.push(d);
        // Listeners a Gateway takes from another kind change its conflicts and conditions,
        // which the model then cannot predict: said once, above the tally.
        if kind.ends_with("ListenerSet") {
            notes.push(format!(
                "{kind} is not modelled: the Gateway conditions and conflicts predicted here leave out the listeners {} adds",
                if list.len() == 1 { "it" } else { "they" }
            ));
        }
    }
    let not_modelled = objects.unmodelled.len();
    let mut gateways = Vec::new();
    let mut rendered_texts = Vec::new();
    for gw in objects.gateways.iter().filter(|g| is_cilium(g, &objects)) {
        let at = gw.at.clone().unwrap_or(At { source: SourceId(0), pointer: String::new() });
        let outcome = cilium::reconcile(gw, &objects, version);
        let listeners: Vec<ListenerVerdict> = gw
            .spec
            .listeners
            .iter()
            .zip(outcome.listeners)
            .zip(&outcome.translated)
            .enumerate()
            .map(|(i, ((l, status), translated))| ListenerVerdict {
                status,
                port: l.port,
                protocol: l.protocol.clone(),
                hostname: l.host().to_owned(),
                tls_mode: l.tls.as_ref().map(|_| l.tls_mode().to_owned()),
                location: location(&documents, &at, &format!("{}/spec/listeners/{i}", at.pointer)),
                translated: *translated,
            })
            .collect();
        problems.extend(findings::conflicts(gw, &listeners, version, &objects));
        let verdict = GatewayVerdict {
            namespace: gw.metadata.ns().to_owned(),
            name: gw.metadata.name.clone(),
            location: location(&documents, &at, &at.pointer),
            conditions: outcome.conditions,
            listeners,
            rendered: None,
        };
        rendered_texts.push(outcome.cec);
        gateways.push(verdict);
    }
    drop(documents);
    for (g, cec) in gateways.iter_mut().zip(rendered_texts) {
        if let Some(cec) = cec {
            let name = format!("rendered:{}/cilium-gateway-{}", g.namespace, g.name);
            let text = serde_json::to_string_pretty(&cec).unwrap_or_default();
            let id = sources.add(SourceFile::new(name, text));
            g.rendered = Some((cec, id));
        }
    }
    let rendered: Vec<SourceId> = gateways.iter().filter_map(|g| g.rendered.as_ref().map(|r| r.1)).collect();
    let sources = &*sources;
    let rendered: Vec<Document<'_>> =
        rendered.into_iter().map(|id| Document::with_limits(id, sources.get(id), limits)).collect();
    let mut inputs = Vec::new();
    for document in &rendered {
        match document.load() {
            Ok(input) => inputs.push(input),
            Err(e) => problems.push(e.to_diagnostic()),
        }
    }
    let mut report = crate::analyze_inputs_with(sources, inputs, problems, settings);
    report.failed_inputs += failed_count;
    report.notes.extend(notes);
    Evaluation { version, gateways, not_modelled, report }
}

/// A Gateway of a class whose controller is not Cilium's is not Cilium's to reconcile; without
/// GatewayClass objects in the input every Gateway is taken to be Cilium's.
fn is_cilium(gw: &api::Gateway, objects: &Objects) -> bool {
    objects
        .classes
        .iter()
        .find(|c| c.metadata.name == gw.spec.gateway_class_name)
        .is_none_or(|c| c.spec.controller_name == "io.cilium/gateway-controller")
}

mod findings;
