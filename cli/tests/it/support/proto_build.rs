//! Proto3 JSON of a Listener → its protobuf, as an Any.
//!
//! Deliberately not xdsck's code: prost-reflect's own proto3 JSON parser, over Envoy's
//! descriptors (the committed core/schema/envoy.binpb), encodes the listener. The protobuf path
//! is compared with the JSON path on the same data, and the test xDS server serves listeners
//! written as JSON.

use std::sync::OnceLock;

use envoy_types::pb::google::protobuf::Any;
use prost::Message;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage};
use serde_json::Value;

pub const LISTENER_TYPE: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(&include_bytes!("../../../../core/schema/envoy.binpb")[..]).unwrap())
}

/// A Listener resource as an Any; the error is prost-reflect's for JSON that is not a Listener.
pub fn try_listener_any(l: &Value) -> Result<Any, String> {
    try_any("envoy.config.listener.v3.Listener", l)
}

/// A resource of Envoy's message `message` (full name) as an Any, from its proto3 JSON.
pub fn try_any(message: &str, l: &Value) -> Result<Any, String> {
    let desc = pool().get_message_by_name(message).ok_or_else(|| format!("no message {message}"))?;
    let mut l = l.clone();
    if let Value::Object(o) = &mut l {
        o.remove("@type");
    }
    let m = DynamicMessage::deserialize_with_options(desc, l, &DeserializeOptions::new()).map_err(|e| e.to_string())?;
    Ok(Any { type_url: format!("type.googleapis.com/{message}"), value: m.encode_to_vec() })
}

/// A RouteConfiguration resource as an Any.
pub fn route_any(r: &Value) -> Any {
    try_any("envoy.config.route.v3.RouteConfiguration", r)
        .unwrap_or_else(|e| panic!("not a RouteConfiguration: {e}: {r}"))
}

/// A Cluster resource as an Any.
pub fn cluster_any(c: &Value) -> Any {
    try_any("envoy.config.cluster.v3.Cluster", c).unwrap_or_else(|e| panic!("not a Cluster: {e}: {c}"))
}

/// A Listener resource as an Any, for listeners the test wrote.
pub fn listener_any(l: &Value) -> Any {
    try_listener_any(l).unwrap_or_else(|e| panic!("not a Listener: {e}: {l}"))
}

/// Rewrites every camelCase key to snake_case (proto3 JSON accepts both), except the keys of a
/// matcher's `map`, which are data.
pub fn snake_keys(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let old = std::mem::take(o);
            for (k, mut val) in old {
                if k != "map" {
                    snake_keys(&mut val);
                } else if let Value::Object(m) = &mut val {
                    for x in m.values_mut() {
                        snake_keys(x);
                    }
                }
                let key = if k.starts_with('@') {
                    k
                } else {
                    let mut out = String::new();
                    for c in k.chars() {
                        if c.is_ascii_uppercase() {
                            out.push('_');
                            out.push(c.to_ascii_lowercase());
                        } else {
                            out.push(c);
                        }
                    }
                    out
                };
                o.insert(key, val);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(snake_keys),
        _ => {}
    }
}
