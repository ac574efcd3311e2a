//! The state-of-the-world xDS protocol as a plain state machine: no sockets, no clock.
//!
//! xdsck is an extra, read-only subscriber next to the real Envoy. It must never change what the
//! control plane believes about its proxies, so it ACKs every response — also one it cannot
//! decode, and one for a type it did not ask for — and never NACKs: a NACK from an extra client
//! posing as the node can make Cilium's agent roll back a policy or listener update. What cannot
//! be decoded goes to the caller ([`Response::problems`] and the caller's own decoding), never to
//! the server.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::google::protobuf::Any;

/// `type.googleapis.com/envoy.config.listener.v3.Listener`.
pub const LISTENER_TYPE_URL: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

/// The node id Cilium's Envoy presents; Cilium keys every resource by the IP inside it.
pub const DEFAULT_NODE_ID: &str = "host~127.0.0.1~no-id~localdomain";

/// One type's subscription: what was asked and what was last accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    /// Resource names; empty is the wildcard (every resource of the type).
    pub resource_names: Vec<String>,
    /// `version_info` of the last response ACKed; sent again on a new stream so that a server
    /// which supports it can skip resending an unchanged state.
    pub version_info: String,
    /// Nonce of the last response; echoed in its ACK.
    pub nonce: String,
    /// Responses received on this type.
    pub responses: u64,
}

/// A response, as the state machine hands it to the caller, with the ACK to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub type_url: String,
    pub version_info: String,
    pub nonce: String,
    pub resources: Vec<Any>,
    /// What was odd about the response itself (a type not subscribed to, resources of another
    /// type). The response is ACKed regardless.
    pub problems: Vec<String>,
    /// The request that ACKs this response: same type, its version_info and nonce, no error.
    pub ack: DiscoveryRequest,
}

/// Subscriptions of one stream (one type for per-type LDS, any number for ADS).
#[derive(Debug, Clone)]
pub struct SotwState {
    node: Node,
    subscriptions: BTreeMap<String, Subscription>,
}

impl SotwState {
    pub fn new(node_id: &str) -> Self {
        let node = Node { id: node_id.to_owned(), cluster: "xdsck".to_owned(), ..Node::default() };
        Self { node, subscriptions: BTreeMap::new() }
    }

    /// Subscribe to a type (empty `resource_names`: wildcard).
    pub fn subscribe(&mut self, type_url: &str, resource_names: Vec<String>) {
        self.subscriptions.entry(type_url.to_owned()).or_default().resource_names = resource_names;
    }

    pub fn subscription(&self, type_url: &str) -> Option<&Subscription> {
        self.subscriptions.get(type_url)
    }

    /// The first requests of a new stream, one per subscribed type. A reconnect presents the
    /// version it last ACKed with no nonce: the server may resend or skip, both are fine.
    pub fn start_stream(&mut self) -> Vec<DiscoveryRequest> {
        // The node goes on every request, not only the first: harmless, and some servers read
        // each one.
        let node = self.node.clone();
        self.subscriptions
            .iter_mut()
            .map(|(type_url, sub)| {
                sub.nonce.clear();
                DiscoveryRequest {
                    version_info: sub.version_info.clone(),
                    node: Some(node.clone()),
                    resource_names: sub.resource_names.clone(),
                    type_url: type_url.clone(),
                    ..DiscoveryRequest::default()
                }
            })
            .collect()
    }

    /// A response arrived: record it and return it with its ACK. Never a NACK.
    pub fn on_response(&mut self, response: DiscoveryResponse) -> Response {
        let mut problems = Vec::new();
        // A per-type stream may omit type_url in responses; the only subscription is meant then.
        let type_url = if response.type_url.is_empty() && self.subscriptions.len() == 1 {
            self.subscriptions.keys().next().cloned().unwrap_or_default()
        } else {
            response.type_url.clone()
        };
        if !self.subscriptions.contains_key(&type_url) {
            problems.push(format!("the server sent resources of type {type_url:?}, which xdsck did not ask for"));
        }
        let sub = self.subscriptions.entry(type_url.clone()).or_default();
        sub.version_info = response.version_info.clone();
        sub.nonce = response.nonce.clone();
        sub.responses += 1;
        for (i, r) in response.resources.iter().enumerate() {
            if r.type_url != type_url {
                problems.push(format!("resource {i} has type {:?} in a response of type {type_url:?}", r.type_url));
            }
        }
        let ack = DiscoveryRequest {
            version_info: response.version_info.clone(),
            node: Some(self.node.clone()),
            resource_names: sub.resource_names.clone(),
            type_url: type_url.clone(),
            response_nonce: response.nonce.clone(),
            error_detail: None,
            ..DiscoveryRequest::default()
        };
        Response {
            type_url,
            version_info: response.version_info,
            nonce: response.nonce,
            resources: response.resources,
            problems,
            ack,
        }
    }

    /// The stream ended: the next one starts afresh (versions are kept).
    pub fn on_disconnect(&mut self) {
        for sub in self.subscriptions.values_mut() {
            sub.nonce.clear();
        }
    }
}

/// Delays between reconnection attempts: exponential, capped, with full jitter (a random delay
/// between half the step and the step), so many observers do not hammer a restarting server in
/// step. Reset after a successful response.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial_ms: u64,
    max_ms: u64,
    attempt: u32,
    seed: u64,
}

impl Backoff {
    pub fn new(initial: std::time::Duration, max: std::time::Duration, seed: u64) -> Self {
        Self {
            initial_ms: initial.as_millis().max(1) as u64,
            max_ms: max.as_millis().max(1) as u64,
            attempt: 0,
            seed: seed | 1,
        }
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> std::time::Duration {
        let step = self.initial_ms.saturating_mul(1u64 << self.attempt.min(20)).min(self.max_ms);
        self.attempt = self.attempt.saturating_add(1);
        // xorshift64: plenty for jitter, no dependency.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let half = step / 2;
        std::time::Duration::from_millis(half + self.seed % (step - half + 1))
    }

    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn response(version: &str, nonce: &str, type_url: &str, n: usize) -> DiscoveryResponse {
        DiscoveryResponse {
            version_info: version.into(),
            nonce: nonce.into(),
            type_url: type_url.into(),
            resources: (0..n).map(|_| Any { type_url: type_url.into(), value: vec![] }).collect(),
            ..DiscoveryResponse::default()
        }
    }

    #[test]
    fn first_request_is_a_wildcard_subscription_with_the_node() {
        let mut s = SotwState::new(DEFAULT_NODE_ID);
        s.subscribe(LISTENER_TYPE_URL, vec![]);
        let reqs = s.start_stream();
        assert_eq!(reqs.len(), 1);
        let r = &reqs[0];
        assert_eq!(r.type_url, LISTENER_TYPE_URL);
        assert_eq!(r.node.as_ref().unwrap().id, DEFAULT_NODE_ID);
        assert!(r.resource_names.is_empty() && r.version_info.is_empty() && r.response_nonce.is_empty());
        assert!(r.error_detail.is_none());
    }

    #[test]
    fn every_response_is_acked_with_its_version_and_nonce() {
        let mut s = SotwState::new("n");
        s.subscribe(LISTENER_TYPE_URL, vec![]);
        s.start_stream();
        for (v, n) in [("1", "a"), ("2", "b"), ("2", "c")] {
            let r = s.on_response(response(v, n, LISTENER_TYPE_URL, 2));
            assert!(r.problems.is_empty());
            assert_eq!(r.ack.version_info, v);
            assert_eq!(r.ack.response_nonce, n);
            assert_eq!(r.ack.type_url, LISTENER_TYPE_URL);
            assert!(r.ack.error_detail.is_none(), "never a NACK");
        }
        assert_eq!(s.subscription(LISTENER_TYPE_URL).unwrap().responses, 3);
    }

    #[test]
    fn unexpected_types_are_reported_and_still_acked() {
        let mut s = SotwState::new("n");
        s.subscribe(LISTENER_TYPE_URL, vec![]);
        s.start_stream();
        let r = s.on_response(response("7", "x", "type.googleapis.com/cilium.NetworkPolicy", 1));
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert_eq!(r.ack.type_url, "type.googleapis.com/cilium.NetworkPolicy");
        assert_eq!(r.ack.response_nonce, "x");
        assert!(r.ack.error_detail.is_none());
        // A resource of another type inside a Listener response.
        let mut resp = response("8", "y", LISTENER_TYPE_URL, 1);
        resp.resources.push(Any { type_url: "type.googleapis.com/google.protobuf.Empty".into(), value: vec![] });
        let r = s.on_response(resp);
        assert_eq!(r.problems.len(), 1);
        assert_eq!((r.ack.version_info.as_str(), r.ack.response_nonce.as_str()), ("8", "y"));
    }

    #[test]
    fn a_response_without_type_url_belongs_to_the_only_subscription() {
        let mut s = SotwState::new("n");
        s.subscribe(LISTENER_TYPE_URL, vec![]);
        s.start_stream();
        let r = s.on_response(response("1", "a", "", 0));
        assert_eq!(r.ack.type_url, LISTENER_TYPE_URL);
        assert!(r.problems.is_empty());
    }

    #[test]
    fn a_new_stream_presents_the_last_version_without_a_nonce() {
        let mut s = SotwState::new("n");
        s.subscribe(LISTENER_TYPE_URL, vec![]);
        s.start_stream();
        s.on_response(response("5", "n5", LISTENER_TYPE_URL, 0));
        s.on_disconnect();
        let reqs = s.start_stream();
        assert_eq!(reqs[0].version_info, "5");
        assert_eq!(reqs[0].response_nonce, "");
    }

    #[test]
    fn backoff_grows_with_jitter_is_capped_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(1000), 42);
        let d: Vec<u64> = (0..8).map(|_| b.next_delay().as_millis() as u64).collect();
        for (i, &ms) in d.iter().enumerate() {
            let step = (100u64 << i).min(1000);
            assert!(ms >= step / 2 && ms <= step, "attempt {i}: {ms} ms for step {step}");
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }
}
