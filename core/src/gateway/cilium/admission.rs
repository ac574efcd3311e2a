//! What an admission webhook for Cilium's Envoy configurations needs to know of Cilium and
//! Kubernetes: which kinds are Cilium's, how the agent names an object's listeners, and which
//! objects Cilium's own operator writes.

use serde_json::Value;

/// The kinds whose `spec.resources` Cilium's agent gives to Envoy.
pub const KINDS: [&str; 2] = ["CiliumEnvoyConfig", "CiliumClusterwideEnvoyConfig"];

/// Gives a namespaced CiliumEnvoyConfig the request's namespace where the object leaves it out
/// (the API server fills it in after admission): the agent names the object's listeners
/// `namespace/name/listener`, and the loader tells the two kinds apart by it.
pub fn with_request_namespace(kind: &str, object: &mut Value, namespace: Option<&str>) {
    if kind == "CiliumEnvoyConfig"
        && object["metadata"]["namespace"].is_null()
        && let Some(ns) = namespace
        && let Some(meta) = object["metadata"].as_object_mut()
    {
        meta.insert("namespace".into(), ns.into());
    }
}

/// Whether a Gateway API `Gateway` owns the object: Cilium's operator renders such
/// CiliumEnvoyConfigs from the Gateway, and retries a denied write forever.
pub fn gateway_owned(object: &Value) -> bool {
    object["metadata"]["ownerReferences"].as_array().is_some_and(|refs| {
        refs.iter().any(|r| {
            r["kind"] == "Gateway"
                && r["apiVersion"].as_str().is_some_and(|a| a.starts_with("gateway.networking.k8s.io/"))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_namespaced_object_without_one_takes_the_requests() {
        let mut cec = json!({"metadata": {"name": "a"}});
        with_request_namespace("CiliumEnvoyConfig", &mut cec, Some("team"));
        assert_eq!(cec["metadata"]["namespace"], "team");
        let mut ccec = json!({"metadata": {"name": "a"}});
        with_request_namespace("CiliumClusterwideEnvoyConfig", &mut ccec, Some("team"));
        assert!(ccec["metadata"]["namespace"].is_null(), "cluster-wide objects have none");
        let mut given = json!({"metadata": {"name": "a", "namespace": "own"}});
        with_request_namespace("CiliumEnvoyConfig", &mut given, Some("team"));
        assert_eq!(given["metadata"]["namespace"], "own");
    }

    #[test]
    fn only_a_gateway_api_gateway_owns() {
        let owned = |kind: &str, api: &str| {
            gateway_owned(&json!({"metadata": {"ownerReferences": [{"kind": kind, "apiVersion": api, "name": "g"}]}}))
        };
        assert!(owned("Gateway", "gateway.networking.k8s.io/v1"));
        assert!(!owned("Gateway", "networking.istio.io/v1"));
        assert!(!owned("Deployment", "apps/v1"));
        assert!(!gateway_owned(&json!({"metadata": {}})));
    }
}
