//! From parsed documents to listeners: decide what each document is, walk it, and give every
//! listener its state, its Envoy name and its JSON pointer.

use std::borrow::Cow;

use super::Documents;
use super::codes;
use super::error::LoadError;
use super::raw::{RawListenerState, RawObject, RawUpdateFailure};
use crate::model::{Casing, ErrorState, IgnoreAnnotation, Input, InputKind, Listener, ListenerState, push_pointer};
use crate::source::{Location, SourceFile, SourceId};

const LISTENER_TYPE: &str = "envoy.config.listener.v3.Listener";
const GATEWAY_API_GROUP: &str = "gateway.networking.k8s.io/";

pub(super) fn classify<'a>(
    id: SourceId,
    file: &'a SourceFile,
    documents: Documents<'a>,
) -> Result<Input<'a>, LoadError> {
    let mut walk = Walk { listeners: Vec::new(), error_states: Vec::new(), skipped: Vec::new() };
    let kind = match documents {
        Documents::One(obj) => match walk.document(*obj, String::new()) {
            Ok(kind) => kind,
            Err(what) => return Err(not_envoy(id, file, "", &what)),
        },
        Documents::Many(docs) => {
            let mut kinds: Vec<InputKind> = Vec::new();
            let mut first_refused: Option<(String, String)> = None;
            for (i, doc) in docs.into_iter().enumerate() {
                let pointer = format!("/{i}");
                let Some(obj) = doc else {
                    walk.skipped.push(format!("document {i}: empty"));
                    continue;
                };
                match walk.document(obj, pointer.clone()) {
                    Ok(kind) => kinds.push(kind),
                    Err(what) => {
                        walk.skipped.push(format!("document {i}: {what}"));
                        first_refused.get_or_insert((pointer, what));
                    }
                }
            }
            match (kinds.first(), first_refused) {
                (None, Some((pointer, what))) => return Err(not_envoy(id, file, &pointer, &what)),
                (None, None) => {
                    return Err(LoadError::new(
                        &codes::EMPTY,
                        "the input holds no document (an empty list or stream)",
                        Location::new(id, "", Some(0)),
                    ));
                }
                (Some(&k), _) if kinds.iter().all(|&x| x == k) => k,
                (Some(_), _) => InputKind::Mixed,
            }
        }
    };
    Ok(Input {
        source: id,
        kind,
        listeners: walk.listeners,
        error_states: walk.error_states,
        skipped_documents: walk.skipped,
    })
}

fn not_envoy(id: SourceId, file: &SourceFile, pointer: &str, what: &str) -> LoadError {
    let offset = match file.yaml() {
        Some(y) => y.pointer_offset(pointer),
        None => super::locate::pointer_offset(file.json_text(), pointer),
    };
    LoadError::new(
        &codes::NOT_ENVOY,
        format!("not Envoy configuration: {what}"),
        Location::new(id, pointer, offset.or(Some(0))),
    )
    .note(
        "xdsck reads an Envoy admin /config_dump, a bootstrap, Listener(s), an xDS \
         DiscoveryResponse, or CiliumEnvoyConfig / CiliumClusterwideEnvoyConfig",
    )
}

struct Walk<'a> {
    listeners: Vec<Listener<'a>>,
    error_states: Vec<ErrorState<'a>>,
    skipped: Vec<String>,
}

/// The pointer of a field of an object written in `casing`.
fn child(pointer: &str, casing: Casing, field: &str) -> String {
    let mut p = pointer.to_owned();
    push_pointer(&mut p, &casing.field(field));
    p
}

fn index(pointer: &str, i: usize) -> String {
    format!("{pointer}/{i}")
}

fn casing_of(obj: &RawObject<'_>) -> Casing {
    if obj.camel { Casing::Camel } else { Casing::Snake }
}

impl<'a> Walk<'a> {
    /// One top-level document (or `kind: List` item). `Err` says what it is instead.
    fn document(&mut self, obj: RawObject<'a>, pointer: String) -> Result<InputKind, String> {
        let casing = casing_of(&obj);
        if obj.configs.is_some() {
            return Ok(self.config_dump(obj, &pointer));
        }
        if obj.static_resources.is_some() || obj.dynamic_resources.is_some() || obj.admin.is_some() {
            if let Some(resources) = obj.static_resources {
                let inner = if resources.camel { Casing::Camel } else { Casing::Snake };
                let base = child(&child(&pointer, casing, "static_resources"), inner, "listeners");
                for (i, l) in resources.listeners.unwrap_or_default().into_iter().enumerate() {
                    self.listener(l, index(&base, i), ListenerState::Static, None);
                }
            }
            return Ok(InputKind::Bootstrap);
        }
        if let Some(kind) = obj.kind.as_ref().map(|k| k.0.clone()) {
            let api_version = obj.api_version.as_ref().map(|v| v.0.to_string()).unwrap_or_default();
            return match &*kind {
                "List" => self.list(obj, &pointer),
                "CiliumEnvoyConfig" | "CiliumClusterwideEnvoyConfig" => {
                    let clusterwide = kind == "CiliumClusterwideEnvoyConfig";
                    Ok(self.cec(obj, &pointer, clusterwide))
                }
                other => Err(describe_kind(other, &api_version)),
            };
        }
        if obj.metadata.is_some() && obj.spec.as_ref().is_some_and(|s| s.resources.is_some()) {
            // Cilium's own golden files omit apiVersion and kind; a namespace tells the kinds apart.
            let clusterwide = obj.metadata.as_ref().is_some_and(|m| m.namespace.is_none());
            return Ok(self.cec(obj, &pointer, clusterwide));
        }
        if obj.resources.is_some() {
            let base = child(&pointer, casing, "resources");
            for (i, r) in obj.resources.unwrap_or_default().into_iter().enumerate() {
                if is_listener(&r) {
                    self.listener(r, index(&base, i), ListenerState::Declared, None);
                }
            }
            return Ok(InputKind::DiscoveryResponse);
        }
        if obj.active_state.is_some()
            || obj.error_state.is_some()
            || obj.warming_state.is_some()
            || obj.draining_state.is_some()
        {
            self.dynamic(Dynamic::from_object(obj), &pointer);
            return Ok(InputKind::DynamicListenersDump);
        }
        if is_listener(&obj) {
            self.listener(obj, pointer, ListenerState::Declared, None);
            return Ok(InputKind::Listeners);
        }
        Err(match obj.type_url() {
            Some(t) => format!("a `{}` message", t.rsplit('/').next().unwrap_or(t)),
            None if obj.metadata.is_some() => "an object with `metadata` but no `kind`".to_owned(),
            None => "an object with none of the fields of a config_dump (`configs`), a bootstrap \
                     (`static_resources`), a Listener (`address`, `filter_chains`), a \
                     DiscoveryResponse (`resources`) or a CiliumEnvoyConfig (`kind`, `spec`)"
                .to_owned(),
        })
    }

    fn config_dump(&mut self, obj: RawObject<'a>, pointer: &str) -> InputKind {
        let mut only_dynamic = true;
        for (i, entry) in obj.configs.unwrap_or_default().into_iter().enumerate() {
            let p = index(&child(pointer, Casing::Snake, "configs"), i);
            let casing = casing_of(&entry);
            if entry.static_listeners.is_some() || entry.dynamic_listeners.is_some() {
                only_dynamic = false;
                let RawObject { static_listeners, dynamic_listeners, .. } = entry;
                let sp = child(&p, casing, "static_listeners");
                for (j, s) in static_listeners.unwrap_or_default().into_iter().enumerate() {
                    let lp = child(&index(&sp, j), Casing::Snake, "listener");
                    if let Some(l) = s.listener {
                        self.listener(*l, lp, ListenerState::Static, None);
                    }
                }
                let dp = child(&p, casing, "dynamic_listeners");
                for (j, d) in dynamic_listeners.unwrap_or_default().into_iter().enumerate() {
                    let casing = if d.camel { Casing::Camel } else { Casing::Snake };
                    let dynamic = Dynamic {
                        name: d.name.map(|n| n.0),
                        casing,
                        active: d.active_state,
                        warming: d.warming_state,
                        draining: d.draining_state,
                        error: d.error_state,
                    };
                    self.dynamic(dynamic, &index(&dp, j));
                }
            } else if entry.active_state.is_some()
                || entry.warming_state.is_some()
                || entry.draining_state.is_some()
                || entry.error_state.is_some()
            {
                self.dynamic(Dynamic::from_object(entry), &p);
            } else {
                only_dynamic = false;
            }
        }
        if only_dynamic { InputKind::DynamicListenersDump } else { InputKind::ConfigDump }
    }

    fn dynamic(&mut self, d: Dynamic<'a>, pointer: &str) {
        let name = d.name.unwrap_or_default();
        let has_active = d.active.as_ref().is_some_and(|s| s.listener.is_some());
        for (state, field, value) in [
            (ListenerState::Active, "active_state", d.active),
            (ListenerState::Warming, "warming_state", d.warming),
            (ListenerState::Draining, "draining_state", d.draining),
        ] {
            let Some(s) = value else { continue };
            let sp = child(pointer, d.casing, field);
            let version = s.version_info.map(|v| v.0);
            if let Some(l) = s.listener {
                self.listener(*l, child(&sp, Casing::Snake, "listener"), state, version);
            }
        }
        if let Some(e) = d.error {
            self.error_state(e, name, child(pointer, d.casing, "error_state"), has_active);
        }
    }

    fn error_state(&mut self, e: RawUpdateFailure<'a>, name: Cow<'a, str>, pointer: String, has_active: bool) {
        let casing = if e.camel { Casing::Camel } else { Casing::Snake };
        let failed = e.failed_configuration.map(|l| {
            let mut l = l.into_listener(child(&pointer, casing, "failed_configuration"));
            l.state = ListenerState::Declared;
            l
        });
        let details = e.details.map(|d| d.0).unwrap_or_default();
        // Envoy 1.40 lists each rejected update twice: under the listener's entry and again in
        // an entry with no name that holds only the error_state. Name the anonymous one after
        // the listener it carries, and keep one copy.
        let name = match (&*name, &failed) {
            ("", Some(l)) => l.name.clone(),
            _ => name,
        };
        if self.error_states.iter().any(|x| x.listener_name == name && x.details == details) {
            return;
        }
        self.error_states.push(ErrorState {
            listener_name: name,
            details,
            last_update_attempt: e.last_update_attempt.map(|t| t.0),
            offset: e.first_key.and_then(super::protojson::offset_of).map(|o| o.saturating_sub(1)),
            pointer,
            has_active_state: has_active,
            failed_configuration: failed,
        });
    }

    fn list(&mut self, obj: RawObject<'a>, pointer: &str) -> Result<InputKind, String> {
        let mut kinds = Vec::new();
        let mut refused = Vec::new();
        for (i, item) in obj.items.unwrap_or_default().into_iter().enumerate() {
            let p = index(&child(pointer, Casing::Snake, "items"), i);
            match self.document(item, p) {
                Ok(k) => kinds.push(k),
                Err(what) => refused.push(format!("item {i}: {what}")),
            }
        }
        match kinds.first() {
            None if refused.is_empty() => Err("an empty `kind: List`".to_owned()),
            None => Err(format!("a `kind: List` of {}", refused.join("; "))),
            Some(&k) => {
                self.skipped.extend(refused);
                Ok(if kinds.iter().all(|&x| x == k) { k } else { InputKind::Mixed })
            }
        }
    }

    fn cec(&mut self, obj: RawObject<'a>, pointer: &str, clusterwide: bool) -> InputKind {
        // The `xdsck.io/ignore` annotation goes onto each of the CEC's listeners.
        let ignore =
            obj.metadata.as_ref().and_then(|m| m.annotations.as_ref()).and_then(|a| a.xdsck_ignore.clone()).map(
                |value| {
                    let mut at = child(&child(pointer, Casing::Snake, "metadata"), Casing::Snake, "annotations");
                    push_pointer(&mut at, crate::settings::IGNORE_ANNOTATION);
                    IgnoreAnnotation { value: value.into_cow(), pointer: at }
                },
            );
        let (cec_name, namespace) = match &obj.metadata {
            Some(m) => (
                m.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                if clusterwide {
                    String::new()
                } else {
                    m.namespace.as_ref().map(|n| n.0.to_string()).unwrap_or_default()
                },
            ),
            None => (String::new(), String::new()),
        };
        let Some(spec) = obj.spec else {
            return InputKind::CiliumEnvoyConfig;
        };
        let base = child(&child(pointer, Casing::Snake, "spec"), Casing::Snake, "resources");
        for (i, r) in spec.resources.unwrap_or_default().into_iter().enumerate() {
            if !is_listener(&r) {
                continue;
            }
            let start = self.listeners.len();
            self.listener(r, index(&base, i), ListenerState::Declared, None);
            let l = &mut self.listeners[start];
            l.name = qualified_name(&namespace, &cec_name, &l.name);
            l.ignore_annotation = ignore.clone();
        }
        InputKind::CiliumEnvoyConfig
    }

    fn listener(&mut self, obj: RawObject<'a>, pointer: String, state: ListenerState, version: Option<Cow<'a, str>>) {
        let mut l = obj.into_listener(pointer);
        l.state = state;
        l.version_info = version;
        self.listeners.push(l);
    }
}

/// A DynamicListener entry, from either form it comes in.
struct Dynamic<'a> {
    name: Option<Cow<'a, str>>,
    casing: Casing,
    active: Option<RawListenerState<'a>>,
    warming: Option<RawListenerState<'a>>,
    draining: Option<RawListenerState<'a>>,
    error: Option<RawUpdateFailure<'a>>,
}

impl<'a> Dynamic<'a> {
    fn from_object(obj: RawObject<'a>) -> Self {
        Dynamic {
            casing: casing_of(&obj),
            name: obj.name.map(|n| n.0),
            active: obj.active_state,
            warming: obj.warming_state,
            draining: obj.draining_state,
            error: obj.error_state,
        }
    }
}

fn is_listener(obj: &RawObject<'_>) -> bool {
    match obj.type_url() {
        // Any type URLs are `<prefix>/<full message name>`; the prefix is free-form.
        Some(t) => t.rsplit('/').next() == Some(LISTENER_TYPE),
        None => obj.has_listener_fields(),
    }
}

/// The name the Cilium agent gives a CEC resource: `<namespace>/<cec>/<name>`, unless the name
/// already has a `/` or is empty (`ResourceQualifiedName` in cilium/pkg/policy/api).
fn qualified_name<'a>(namespace: &str, cec: &str, name: &Cow<'a, str>) -> Cow<'a, str> {
    if name.is_empty() || name.contains('/') { name.clone() } else { Cow::Owned(format!("{namespace}/{cec}/{name}")) }
}

fn describe_kind(kind: &str, api_version: &str) -> String {
    if api_version.starts_with(GATEWAY_API_GROUP) {
        format!(
            "a Gateway API `{kind}` ({api_version}). xdsck checks what the controller renders \
             from it: the CiliumEnvoyConfig (`kubectl get cec -A -o yaml`) or the proxy's /config_dump"
        )
    } else if api_version.is_empty() {
        format!("a Kubernetes `{kind}`")
    } else {
        format!("a Kubernetes `{kind}` ({api_version})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cilium_qualifies_names_like_the_agent() {
        assert_eq!(qualified_name("ns", "cec", &"listener".into()), "ns/cec/listener");
        assert_eq!(qualified_name("", "ccec", &"listener".into()), "/ccec/listener");
        assert_eq!(qualified_name("ns", "cec", &"a/b".into()), "a/b");
        assert_eq!(qualified_name("ns", "cec", &"".into()), "");
    }
}
