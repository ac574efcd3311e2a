//! The xDS protocols as plain state machines, no sockets, no clock: state of the world
//! ([`SotwState`]) and incremental ([`DeltaState`]).
//!
//! xdsck is an extra, read-only subscriber next to the real Envoy. It must never change what the
//! control plane believes about its proxies, so it ACKs every response — also one it cannot
//! decode, and one for a type it did not ask for — and never NACKs: a NACK from an extra client
//! posing as the node can make Cilium's agent roll back a policy or listener update. What cannot
//! be decoded goes to the caller ([`Response::problems`] and the caller's own decoding), never to
//! the server.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use envoy_types::pb::google::protobuf::Any;

/// `type.googleapis.com/envoy.config.listener.v3.Listener`.
pub const LISTENER_TYPE_URL: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";
/// `type.googleapis.com/envoy.config.route.v3.RouteConfiguration`.
pub const ROUTE_TYPE_URL: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
/// `type.googleapis.com/envoy.config.cluster.v3.Cluster`.
pub const CLUSTER_TYPE_URL: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

/// The name a delta subscription gives to mean every resource of the type.
const WILDCARD: &str = "*";

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

/// How many types not asked for are reported one by one; the rest are reported once together.
pub const MAX_REPORTED_TYPES: usize = 16;

/// Subscriptions of one stream (one type for per-type LDS, any number for ADS).
#[derive(Debug, Clone)]
pub struct SotwState {
    node: Node,
    subscriptions: BTreeMap<String, Subscription>,
    /// Types the server sent without being asked, already reported: each is reported once, not
    /// at every response (a server may send thousands), and never becomes a subscription.
    unasked: BTreeSet<String>,
    /// Whether more than [`MAX_REPORTED_TYPES`] were seen (and reported as such).
    unasked_overflow: bool,
}

impl SotwState {
    pub fn new(node_id: &str) -> Self {
        let node = Node { id: node_id.to_owned(), cluster: "xdsck".to_owned(), ..Node::default() };
        Self { node, subscriptions: BTreeMap::new(), unasked: BTreeSet::new(), unasked_overflow: false }
    }

    /// Subscribe to a type (empty `resource_names`: wildcard).
    pub fn subscribe(&mut self, type_url: &str, resource_names: Vec<String>) {
        self.subscriptions.entry(type_url.to_owned()).or_default().resource_names = resource_names;
    }

    pub fn subscription(&self, type_url: &str) -> Option<&Subscription> {
        self.subscriptions.get(type_url)
    }

    /// Changes a named subscription (the RDS names the listeners ask for): the request that says
    /// so — the whole new list, with the last version and nonce of the type, as Envoy sends it —
    /// or `None` when the list is the same. A new subscription's first request has no nonce.
    pub fn resubscribe(&mut self, type_url: &str, resource_names: Vec<String>) -> Option<DiscoveryRequest> {
        let new = !self.subscriptions.contains_key(type_url);
        let sub = self.subscriptions.entry(type_url.to_owned()).or_default();
        if !new && sub.resource_names == resource_names {
            return None;
        }
        sub.resource_names = resource_names;
        Some(DiscoveryRequest {
            version_info: sub.version_info.clone(),
            node: Some(self.node.clone()),
            resource_names: sub.resource_names.clone(),
            type_url: type_url.to_owned(),
            response_nonce: sub.nonce.clone(),
            ..DiscoveryRequest::default()
        })
    }

    /// Forgets a type's subscription (a per-type server that does not serve it): a new stream
    /// does not ask for it again.
    pub fn unsubscribe(&mut self, type_url: &str) {
        self.subscriptions.remove(type_url);
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
    ///
    /// A response of a type not subscribed to is ACKed too, reported the first time only, and
    /// leaves no state behind: a new stream does not subscribe to it.
    pub fn on_response(&mut self, response: DiscoveryResponse) -> Response {
        self.on_response_of(response, None)
    }

    /// [`Self::on_response`] for a response that came on a per-type stream of `stream_type`,
    /// which a response without `type_url` belongs to.
    pub fn on_response_of(&mut self, response: DiscoveryResponse, stream_type: Option<&str>) -> Response {
        let mut problems = Vec::new();
        // A per-type stream may omit type_url in responses; its type is meant then.
        let type_url = match stream_type {
            _ if !response.type_url.is_empty() => response.type_url.clone(),
            Some(t) => t.to_owned(),
            None if self.subscriptions.len() == 1 => self.subscriptions.keys().next().cloned().unwrap_or_default(),
            None => response.type_url.clone(),
        };
        let resource_names = match self.subscriptions.get_mut(&type_url) {
            Some(sub) => {
                sub.version_info = response.version_info.clone();
                sub.nonce = response.nonce.clone();
                sub.responses += 1;
                // One line per response, however many resources are off.
                let mut other = response.resources.iter().enumerate().filter(|(_, r)| r.type_url != type_url);
                if let Some((i, first)) = other.next() {
                    problems.push(match other.count() {
                        0 => format!("resource {i} has type {:?} in a response of type {type_url:?}", first.type_url),
                        more => format!(
                            "{} resources have another type than the response's {type_url:?} (the first: \
                             resource {i}, of type {:?})",
                            more + 1,
                            first.type_url
                        ),
                    });
                }
                sub.resource_names.clone()
            }
            None => {
                problems.extend(note_unasked(&mut self.unasked, &mut self.unasked_overflow, &type_url));
                Vec::new()
            }
        };
        let ack = DiscoveryRequest {
            version_info: response.version_info.clone(),
            node: Some(self.node.clone()),
            resource_names,
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

/// The report of a type not asked for, the first time it is seen; at most
/// [`MAX_REPORTED_TYPES`] of them, then one line for the rest.
fn note_unasked(unasked: &mut BTreeSet<String>, overflow: &mut bool, type_url: &str) -> Option<String> {
    if unasked.contains(type_url) {
        return None;
    }
    if unasked.len() < MAX_REPORTED_TYPES {
        unasked.insert(type_url.to_owned());
        return Some(format!("the server sent resources of type {type_url:?}, which xdsck did not ask for"));
    }
    if std::mem::replace(overflow, true) {
        return None;
    }
    Some(format!(
        "the server sent resources of more than {MAX_REPORTED_TYPES} types xdsck did not ask for \
         (the latest: {type_url:?}); the others are not reported"
    ))
}

/// One resource as the incremental protocol names it: its name, its version, its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    pub name: String,
    pub version: String,
    pub any: Any,
}

/// One type of an incremental subscription: what is asked and what is held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeltaSubscription {
    /// Every resource of the type (`*`), or only `names`.
    pub wildcard: bool,
    pub names: BTreeSet<String>,
    /// What the server has sent and not removed, by name.
    pub resources: BTreeMap<String, Named>,
    /// `system_version_info` of the last response (servers may leave it empty).
    pub system_version: String,
    pub responses: u64,
}

/// A delta response as the state machine hands it to the caller, with the ACK to send.
#[derive(Debug, Clone, PartialEq)]
pub struct DeltaResponse {
    pub type_url: String,
    pub system_version: String,
    /// Names of resources new to the subscription, replaced, and removed by this response.
    pub added: Vec<String>,
    pub updated: Vec<String>,
    pub removed: Vec<String>,
    pub problems: Vec<String>,
    /// Same type and nonce, no error: an ACK.
    pub ack: DeltaDiscoveryRequest,
}

/// The incremental (delta) protocol of one stream (ADS): per type the names subscribed to and
/// the resources held, which a new stream presents as `initial_resource_versions` so the server
/// sends only what changed meanwhile. Like [`SotwState`] it ACKs everything and never NACKs.
#[derive(Debug, Clone)]
pub struct DeltaState {
    node: Node,
    subscriptions: BTreeMap<String, DeltaSubscription>,
    unasked: BTreeSet<String>,
    unasked_overflow: bool,
}

impl DeltaState {
    pub fn new(node_id: &str) -> Self {
        let node = Node { id: node_id.to_owned(), cluster: "xdsck".to_owned(), ..Node::default() };
        Self { node, subscriptions: BTreeMap::new(), unasked: BTreeSet::new(), unasked_overflow: false }
    }

    /// Subscribes to every resource of a type.
    pub fn subscribe_all(&mut self, type_url: &str) {
        self.subscriptions.entry(type_url.to_owned()).or_default().wildcard = true;
    }

    pub fn subscription(&self, type_url: &str) -> Option<&DeltaSubscription> {
        self.subscriptions.get(type_url)
    }

    /// Asks for exactly `names` of a type: the request that subscribes the new ones and
    /// unsubscribes the others (whose resources are dropped), or `None` when nothing changes.
    pub fn resubscribe(&mut self, type_url: &str, names: BTreeSet<String>) -> Option<DeltaDiscoveryRequest> {
        let sub = self.subscriptions.entry(type_url.to_owned()).or_default();
        let subscribe: Vec<String> = names.difference(&sub.names).cloned().collect();
        let unsubscribe: Vec<String> = sub.names.difference(&names).cloned().collect();
        if subscribe.is_empty() && unsubscribe.is_empty() {
            return None;
        }
        for gone in &unsubscribe {
            sub.resources.remove(gone);
        }
        sub.names = names;
        Some(DeltaDiscoveryRequest {
            node: Some(self.node.clone()),
            type_url: type_url.to_owned(),
            resource_names_subscribe: subscribe,
            resource_names_unsubscribe: unsubscribe,
            ..DeltaDiscoveryRequest::default()
        })
    }

    /// The first requests of a new stream, one per type: what is subscribed to, and the
    /// versions held, so that the server sends only what changed.
    pub fn start_stream(&self) -> Vec<DeltaDiscoveryRequest> {
        self.subscriptions
            .iter()
            .filter(|(_, sub)| sub.wildcard || !sub.names.is_empty())
            .map(|(type_url, sub)| {
                let mut names: Vec<String> = sub.names.iter().cloned().collect();
                if sub.wildcard {
                    names.insert(0, WILDCARD.to_owned());
                }
                DeltaDiscoveryRequest {
                    node: Some(self.node.clone()),
                    type_url: type_url.clone(),
                    resource_names_subscribe: names,
                    initial_resource_versions: sub
                        .resources
                        .iter()
                        .map(|(name, r)| (name.clone(), r.version.clone()))
                        .collect(),
                    ..DeltaDiscoveryRequest::default()
                }
            })
            .collect()
    }

    /// A response arrived: apply it and return what changed with its ACK. Never a NACK.
    pub fn on_response(&mut self, response: DeltaDiscoveryResponse) -> DeltaResponse {
        let mut problems = Vec::new();
        let type_url = response.type_url;
        let (mut added, mut updated, mut removed) = (Vec::new(), Vec::new(), Vec::new());
        match self.subscriptions.get_mut(&type_url) {
            Some(sub) => {
                sub.responses += 1;
                sub.system_version = response.system_version_info.clone();
                let mut off_type = 0;
                let mut unnamed = 0;
                for r in response.resources {
                    let Some(any) = r.resource else {
                        // A name with no body: a server saying it has no such resource.
                        if sub.resources.remove(&r.name).is_some() {
                            removed.push(r.name);
                        }
                        continue;
                    };
                    if any.type_url != type_url {
                        off_type += 1;
                    }
                    if r.name.is_empty() {
                        unnamed += 1;
                        continue;
                    }
                    let named = Named { name: r.name.clone(), version: r.version, any };
                    match sub.resources.insert(r.name.clone(), named) {
                        Some(_) => updated.push(r.name),
                        None => added.push(r.name),
                    }
                }
                for name in response.removed_resources {
                    if sub.resources.remove(&name).is_some() {
                        removed.push(name);
                    }
                }
                if off_type > 0 {
                    problems.push(format!("{off_type} resources have another type than the response's {type_url:?}"));
                }
                if unnamed > 0 {
                    problems.push(format!("{unnamed} resources have no name, and are not kept"));
                }
            }
            None => problems.extend(note_unasked(&mut self.unasked, &mut self.unasked_overflow, &type_url)),
        }
        let ack = DeltaDiscoveryRequest {
            node: Some(self.node.clone()),
            type_url: type_url.clone(),
            response_nonce: response.nonce,
            error_detail: None,
            ..DeltaDiscoveryRequest::default()
        };
        DeltaResponse { type_url, system_version: response.system_version_info, added, updated, removed, problems, ack }
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
    fn a_type_not_asked_for_is_reported_once_and_never_subscribed_to() {
        let mut s = SotwState::new("n");
        s.subscribe(LISTENER_TYPE_URL, vec![]);
        s.start_stream();
        let policy = "type.googleapis.com/cilium.NetworkPolicy";
        let mut reported = 0;
        for i in 0..10_000 {
            let r = s.on_response(response(&i.to_string(), &format!("n{i}"), policy, 1));
            reported += r.problems.len();
            // Every one is ACKed, with its own version and nonce.
            assert_eq!((r.ack.type_url.as_str(), r.ack.response_nonce.as_str()), (policy, format!("n{i}").as_str()));
            assert!(r.ack.error_detail.is_none() && r.ack.resource_names.is_empty());
        }
        assert_eq!(reported, 1);
        assert!(s.subscription(policy).is_none());
        // The Listener subscription is untouched, and a new stream asks for Listeners only.
        let r = s.on_response(response("1", "l1", LISTENER_TYPE_URL, 1));
        assert!(r.problems.is_empty());
        s.on_disconnect();
        let reqs = s.start_stream();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].type_url, LISTENER_TYPE_URL);
        assert_eq!(reqs[0].version_info, "1");
        // Once per process, not per stream.
        assert!(s.on_response(response("2", "m", policy, 1)).problems.is_empty());
    }

    #[test]
    fn many_types_not_asked_for_are_reported_in_bounded_lines() {
        let mut s = SotwState::new("n");
        s.subscribe(LISTENER_TYPE_URL, vec![]);
        let mut lines = Vec::new();
        for round in 0..3 {
            for i in 0..10_000 {
                let r = s.on_response(response("1", &format!("{round}-{i}"), &format!("type.example/T{i}"), 0));
                assert_eq!(r.ack.type_url, format!("type.example/T{i}"));
                lines.extend(r.problems);
            }
        }
        assert_eq!(lines.len(), MAX_REPORTED_TYPES + 1, "{lines:?}");
        assert!(lines.last().unwrap().contains("the others are not reported"), "{lines:?}");
        assert_eq!(s.start_stream().len(), 1);
    }

    #[test]
    fn resources_of_another_type_are_one_line_per_response() {
        let mut s = SotwState::new("n");
        s.subscribe(LISTENER_TYPE_URL, vec![]);
        let mut resp = response("1", "a", LISTENER_TYPE_URL, 3);
        for _ in 0..5000 {
            resp.resources.push(Any { type_url: "type.googleapis.com/google.protobuf.Empty".into(), value: vec![] });
        }
        let r = s.on_response(resp);
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert!(r.problems[0].starts_with("5000 resources have another type") && r.problems[0].contains("resource 3"));
        assert_eq!(r.resources.len(), 5003);
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

    fn delta(type_url: &str, nonce: &str, add: &[(&str, &str)], remove: &[&str]) -> DeltaDiscoveryResponse {
        use envoy_types::pb::envoy::service::discovery::v3::Resource;
        DeltaDiscoveryResponse {
            system_version_info: format!("v-{nonce}"),
            type_url: type_url.into(),
            nonce: nonce.into(),
            resources: add
                .iter()
                .map(|(name, version)| Resource {
                    name: (*name).into(),
                    version: (*version).into(),
                    resource: Some(Any { type_url: type_url.into(), value: version.as_bytes().to_vec() }),
                    ..Resource::default()
                })
                .collect(),
            removed_resources: remove.iter().map(|s| (*s).to_owned()).collect(),
            ..DeltaDiscoveryResponse::default()
        }
    }

    #[test]
    fn delta_holds_what_was_added_updated_and_removed_and_acks_each_response() {
        let mut d = DeltaState::new("n");
        d.subscribe_all(LISTENER_TYPE_URL);
        let first = d.start_stream();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].resource_names_subscribe, ["*"]);
        assert!(first[0].initial_resource_versions.is_empty() && first[0].node.is_some());
        let r = d.on_response(delta(LISTENER_TYPE_URL, "1", &[("a", "1"), ("b", "1")], &[]));
        assert_eq!(
            (r.added.as_slice(), r.updated.len(), r.removed.len()),
            (&["a".to_owned(), "b".to_owned()][..], 0, 0)
        );
        assert_eq!((r.ack.response_nonce.as_str(), r.ack.type_url.as_str()), ("1", LISTENER_TYPE_URL));
        assert!(r.ack.error_detail.is_none() && r.ack.resource_names_subscribe.is_empty());
        let r = d.on_response(delta(LISTENER_TYPE_URL, "2", &[("a", "2")], &["b", "never-had"]));
        assert_eq!((r.updated, r.removed), (vec!["a".to_owned()], vec!["b".to_owned()]));
        let held = &d.subscription(LISTENER_TYPE_URL).unwrap().resources;
        assert_eq!(held.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(held["a"].version, "2");
        // A new stream presents what is held, so the server sends only what changed.
        let again = d.start_stream();
        assert_eq!(again[0].initial_resource_versions.get("a").map(String::as_str), Some("2"));
        assert_eq!(again[0].resource_names_subscribe, ["*"]);
        // A type not asked for: ACKed, reported once, not held.
        let other = "type.googleapis.com/cilium.NetworkPolicy";
        assert_eq!(d.on_response(delta(other, "3", &[("p", "1")], &[])).problems.len(), 1);
        let r = d.on_response(delta(other, "4", &[("p", "1")], &[]));
        assert!(r.problems.is_empty() && r.ack.response_nonce == "4" && r.ack.error_detail.is_none());
        assert!(d.subscription(other).is_none());
    }

    #[test]
    fn delta_names_are_subscribed_and_unsubscribed_by_difference() {
        let mut d = DeltaState::new("n");
        let names = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
        let r = d.resubscribe(ROUTE_TYPE_URL, names(&["web", "api"])).unwrap();
        assert_eq!(r.resource_names_subscribe, ["api", "web"]);
        assert!(r.resource_names_unsubscribe.is_empty());
        d.on_response(delta(ROUTE_TYPE_URL, "1", &[("web", "1"), ("api", "1")], &[]));
        assert!(d.resubscribe(ROUTE_TYPE_URL, names(&["api", "web"])).is_none(), "the same names: no request");
        let r = d.resubscribe(ROUTE_TYPE_URL, names(&["web", "admin"])).unwrap();
        assert_eq!(
            (r.resource_names_subscribe, r.resource_names_unsubscribe),
            (vec!["admin".into()], vec!["api".into()])
        );
        // What is no longer asked for is no longer held.
        let held = &d.subscription(ROUTE_TYPE_URL).unwrap().resources;
        assert_eq!(held.keys().collect::<Vec<_>>(), ["web"]);
        // A new stream asks for the names (no wildcard) with the versions held.
        let start = d.start_stream();
        assert_eq!(start[0].resource_names_subscribe, ["admin", "web"]);
        assert_eq!(start[0].initial_resource_versions.len(), 1);
    }

    #[test]
    fn sotw_resubscribe_sends_the_whole_list_with_the_last_nonce() {
        let mut s = SotwState::new("n");
        let first = s.resubscribe(ROUTE_TYPE_URL, vec!["web".into()]).expect("a new subscription");
        assert!(first.response_nonce.is_empty() && first.resource_names == ["web"]);
        s.on_response(response("1", "r1", ROUTE_TYPE_URL, 1));
        assert!(s.resubscribe(ROUTE_TYPE_URL, vec!["web".into()]).is_none());
        let more = s.resubscribe(ROUTE_TYPE_URL, vec!["api".into(), "web".into()]).unwrap();
        assert_eq!((more.version_info.as_str(), more.response_nonce.as_str()), ("1", "r1"));
        assert_eq!(more.resource_names, ["api", "web"]);
        // A per-type server that does not serve the type: forgotten, not asked again.
        s.unsubscribe(ROUTE_TYPE_URL);
        assert!(s.start_stream().iter().all(|r| r.type_url != ROUTE_TYPE_URL));
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
