//! The Cilium operator's Gateway API translation, per version: listener conditions, the
//! Gateway's conditions, and the model the CiliumEnvoyConfig is rendered from. What differs
//! between versions is in [`versions`] only.

pub mod admission;
pub(crate) mod conditions;
pub(crate) mod hostnames;
pub(crate) mod ingest;
pub mod versions;

use serde_json::Value;

use crate::gateway::api::{Gateway, Objects};
use crate::gateway::render::{Owner, render};
pub use conditions::{Condition, ListenerStatus};
use versions::Behaviour;
pub use versions::Version;

/// What one Cilium version makes of one Gateway.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) conditions: Vec<Condition>,
    pub(crate) listeners: Vec<ListenerStatus>,
    /// Which listeners (by spec index) reach the model and so the rendered chains.
    pub(crate) translated: Vec<bool>,
    /// The CiliumEnvoyConfig the operator writes; `None` when it writes none.
    pub(crate) cec: Option<Value>,
}

/// Runs the reconcile steps of `version` on `gw`.
pub(crate) fn reconcile(gw: &Gateway, objects: &Objects, version: Version) -> Outcome {
    let b = Behaviour::of(version);
    let listeners = conditions::listener_statuses(gw, objects, b);
    let conditions = conditions::gateway_conditions(&listeners);
    // 1.20 filters the conflicted listeners out before translating (filterOutConflictedListeners),
    // then the invalid ones, but those only when some listener is valid: Cilium's own test data
    // has a CiliumEnvoyConfig built from every listener of a Gateway whose listeners are all
    // invalid for their certificate refs, on every snapshot.
    let any_valid = listeners.iter().any(|l| l.accepted);
    let translated: Vec<bool> = listeners
        .iter()
        .map(|l| !b.drop_invalid_before_translation || (l.conflict.is_none() && (!any_valid || l.accepted)))
        .collect();
    let model = ingest::ingest(gw, objects, &|i| translated[i]);
    let cec = render(Owner { namespace: gw.metadata.ns(), name: &gw.metadata.name }, &model, b);
    Outcome { conditions, listeners, translated, cec }
}
