//! An in-process xDS server (envoy-types' generated tonic services) for the attach tests: it
//! serves Listeners, RouteConfigurations (by the names asked) and Clusters over per-type LDS,
//! RDS and CDS and over ADS, state of the world and incremental (delta, ADS), on TCP or a Unix
//! socket; the served set can change, the server can be restarted (streams cut mid-way), made to
//! stall, to close streams, to send garbage, to flood a stream with responses of a type nobody
//! asked for, or (through [`CutRelay`]) to lose the connection in the middle of a message. It
//! records every request it receives, so a test can assert that a client only ever ACKed. A real Envoy accepts it as its LDS source (see
//! tests/attach.rs), which is what makes it a fair stand-in for a control plane.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use envoy_types::pb::envoy::service::cluster::v3::cluster_discovery_service_server::{
    ClusterDiscoveryService, ClusterDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_server::{
    AggregatedDiscoveryService, AggregatedDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse, Resource,
};
use envoy_types::pb::envoy::service::listener::v3::listener_discovery_service_server::{
    ListenerDiscoveryService, ListenerDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::route::v3::route_discovery_service_server::{
    RouteDiscoveryService, RouteDiscoveryServiceServer,
};
use envoy_types::pb::google::protobuf::Any;
use std::collections::{BTreeMap, BTreeSet};
use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

pub use super::proto_build::LISTENER_TYPE;
pub const ROUTE_TYPE: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
pub const CLUSTER_TYPE: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

/// What the server does on a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Send the current state on subscription and on every change.
    Serve,
    /// Never answer.
    Stall,
    /// End the stream without answering.
    Close,
}

/// The served state: version and resources. Changing it pushes to every open stream.
#[derive(Debug, Clone, Default)]
pub struct State {
    pub version: String,
    /// The listeners.
    pub resources: Vec<Any>,
    /// RouteConfigurations, served by the names asked for.
    pub routes: Vec<Any>,
    /// Clusters (an empty list is served when there are none, as a control plane does).
    pub clusters: Vec<Any>,
    /// Sent before the listeners on each new stream: a response of a type nobody asked for.
    pub extra_type_first: Option<String>,
    /// Sent before the listeners on each new stream (after `extra_type_first`).
    pub flood: Option<Flood>,
}

/// Many responses of a type nobody asked for, each with its own nonce and version `x1`.
#[derive(Debug, Clone)]
pub struct Flood {
    pub type_url: String,
    pub count: usize,
    /// The size of the one resource in each response.
    pub resource_bytes: usize,
    /// Whether requests are read while the flood is sent (as go-control-plane's servers do,
    /// from their own goroutine), or only after it.
    pub read_requests: bool,
}

#[derive(Debug)]
struct Shared {
    state: watch::Sender<State>,
    requests: Mutex<Vec<DiscoveryRequest>>,
    delta_requests: Mutex<Vec<DeltaDiscoveryRequest>>,
    mode: Mutex<Mode>,
    nonce: Mutex<u64>,
    /// Bumped by `stop`: every open stream ends with UNAVAILABLE (aborting the accept loop
    /// alone leaves tonic's connection tasks running).
    generation: watch::Sender<u64>,
}

/// Where the server listens.
#[derive(Debug, Clone)]
pub enum Bind {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

#[derive(Debug, Clone)]
struct Svc(Arc<Shared>);

type RespStream = Pin<Box<dyn Stream<Item = Result<DiscoveryResponse, Status>> + Send>>;
type DeltaStream = Pin<Box<dyn Stream<Item = Result<DeltaDiscoveryResponse, Status>> + Send>>;

/// Sends one response on the stream; while it waits for room, records the requests that come
/// if `read`. False when the client is gone.
async fn send_reading(
    tx: &mpsc::Sender<Result<DiscoveryResponse, Status>>,
    response: DiscoveryResponse,
    requests: &mut Streaming<DiscoveryRequest>,
    shared: &Shared,
    read: &mut bool,
    queued: &mut Vec<DiscoveryRequest>,
) -> bool {
    let permit = loop {
        tokio::select! {
            p = tx.reserve() => match p {
                Ok(p) => break p,
                Err(_) => return false,
            },
            m = requests.message(), if *read => match m {
                Ok(Some(r)) => {
                    shared.requests.lock().unwrap().push(r.clone());
                    queued.push(r);
                }
                // Half-closed: nothing more to read, the responses may still go.
                Ok(None) => *read = false,
                Err(_) => return false,
            },
        }
    };
    permit.send(Ok(response));
    true
}

impl Svc {
    /// A state-of-the-world stream: ADS, or a per-type one. What `extra_type_first` and
    /// `flood` ask for goes out on ADS and LDS streams only, and nonces count per stream, so a
    /// test can tell what came before what.
    fn stream(&self, mut requests: Streaming<DiscoveryRequest>, ads: bool) -> RespStream {
        let shared = self.0.clone();
        let (tx, rx) = mpsc::channel(16);
        let mode = *shared.mode.lock().unwrap();
        tokio::spawn(async move {
            let mut state = shared.state.subscribe();
            let mut generation = shared.generation.subscribe();
            generation.borrow_and_update();
            // The first request opens the subscription.
            let first = match requests.message().await {
                Ok(Some(r)) => {
                    shared.requests.lock().unwrap().push(r.clone());
                    r
                }
                _ => return,
            };
            match mode {
                Mode::Close => return,
                Mode::Stall => loop {
                    tokio::select! {
                        m = requests.message() => match m {
                            Ok(Some(r)) => shared.requests.lock().unwrap().push(r),
                            _ => return,
                        },
                        _ = generation.changed() => return,
                    }
                },
                Mode::Serve => {}
            }
            let counter = std::sync::atomic::AtomicU64::new(0);
            let next_nonce = || format!("nonce-{}", counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
            let extras = ads || first.type_url == LISTENER_TYPE;
            let mut snapshot = state.borrow_and_update().clone();
            if let Some(t) = snapshot.extra_type_first.as_ref().filter(|_| extras) {
                let r = DiscoveryResponse {
                    version_info: "x1".into(),
                    type_url: t.clone(),
                    nonce: next_nonce(),
                    resources: vec![Any { type_url: t.clone(), value: vec![1, 2, 3] }],
                    ..Default::default()
                };
                if tx.send(Ok(r)).await.is_err() {
                    return;
                }
            }
            // Requests read while the flood went out, answered after it.
            let mut queued = vec![first];
            if let Some(f) = snapshot.flood.take().filter(|_| extras) {
                let mut read = f.read_requests;
                for _ in 0..f.count {
                    let r = DiscoveryResponse {
                        version_info: "x1".into(),
                        type_url: f.type_url.clone(),
                        nonce: next_nonce(),
                        resources: vec![Any { type_url: f.type_url.clone(), value: vec![7; f.resource_bytes] }],
                        ..Default::default()
                    };
                    if !send_reading(&tx, r, &mut requests, &shared, &mut read, &mut queued).await {
                        return;
                    }
                }
            }
            // Per type: the names asked for (empty: all) on this stream.
            let mut subscribed: BTreeMap<String, Vec<String>> = BTreeMap::new();
            queued.reverse();
            loop {
                let request = match queued.pop() {
                    Some(r) => Some(r),
                    None => tokio::select! {
                        m = requests.message() => match m {
                            Ok(Some(r)) => {
                                shared.requests.lock().unwrap().push(r.clone());
                                Some(r)
                            }
                            _ => return,
                        },
                        _ = generation.changed() => {
                            let _ = tx.send(Err(Status::unavailable("the server stopped"))).await;
                            return;
                        }
                        c = state.changed() => {
                            if c.is_err() { return; }
                            snapshot = state.borrow_and_update().clone();
                            None
                        }
                    },
                };
                // A request answers with its type when it subscribes or changes the names; an
                // ACK or a NACK (the same names again) is only recorded. A new state goes to
                // every type subscribed.
                let send: Vec<String> = match request {
                    Some(r) => {
                        let type_url = if r.type_url.is_empty() { LISTENER_TYPE.to_owned() } else { r.type_url };
                        if subscribed.get(&type_url) == Some(&r.resource_names) {
                            continue;
                        }
                        subscribed.insert(type_url.clone(), r.resource_names);
                        vec![type_url]
                    }
                    None => subscribed.keys().cloned().collect(),
                };
                for type_url in send {
                    let names = &subscribed[&type_url];
                    let resources = match type_url.as_str() {
                        LISTENER_TYPE => snapshot.resources.clone(),
                        ROUTE_TYPE => named(&snapshot.routes, names),
                        CLUSTER_TYPE => snapshot.clusters.clone(),
                        _ => continue,
                    };
                    let r = DiscoveryResponse {
                        version_info: snapshot.version.clone(),
                        type_url,
                        nonce: next_nonce(),
                        resources,
                        ..Default::default()
                    };
                    if tx.send(Ok(r)).await.is_err() {
                        return;
                    }
                }
            }
        });
        Box::pin(ReceiverStream::new(rx))
    }

    fn delta(&self, mut requests: Streaming<DeltaDiscoveryRequest>) -> DeltaStream {
        let shared = self.0.clone();
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            let mut state = shared.state.subscribe();
            let mut generation = shared.generation.subscribe();
            generation.borrow_and_update();
            let mut snapshot = state.borrow_and_update().clone();
            // Per type: wildcard or the names, and what the client holds (name → version).
            let mut subs: BTreeMap<String, (bool, BTreeSet<String>)> = BTreeMap::new();
            let mut held: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            loop {
                let send: Vec<(String, bool)> = tokio::select! {
                    m = requests.message() => match m {
                        Ok(Some(r)) => {
                            shared.delta_requests.lock().unwrap().push(r.clone());
                            if !r.response_nonce.is_empty() && r.resource_names_subscribe.is_empty()
                                && r.resource_names_unsubscribe.is_empty() {
                                // An ACK or a NACK.
                                continue;
                            }
                            let first = !subs.contains_key(&r.type_url);
                            let sub = subs.entry(r.type_url.clone()).or_default();
                            if first && r.resource_names_subscribe.is_empty() {
                                sub.0 = true;
                            }
                            for n in r.resource_names_subscribe {
                                if n == "*" { sub.0 = true } else { sub.1.insert(n); }
                            }
                            let h = held.entry(r.type_url.clone()).or_default();
                            for n in r.resource_names_unsubscribe {
                                if n == "*" { sub.0 = false } else { sub.1.remove(&n); }
                                h.remove(&n);
                            }
                            h.extend(r.initial_resource_versions);
                            vec![(r.type_url, first)]
                        }
                        _ => return,
                    },
                    _ = generation.changed() => {
                        let _ = tx.send(Err(Status::unavailable("the server stopped"))).await;
                        return;
                    }
                    c = state.changed() => {
                        if c.is_err() { return; }
                        snapshot = state.borrow_and_update().clone();
                        subs.keys().map(|t| (t.clone(), false)).collect()
                    }
                };
                for (type_url, always) in send {
                    let (wildcard, names) = &subs[&type_url];
                    let all = match type_url.as_str() {
                        LISTENER_TYPE => &snapshot.resources,
                        ROUTE_TYPE => &snapshot.routes,
                        CLUSTER_TYPE => &snapshot.clusters,
                        _ => continue,
                    };
                    let current: BTreeMap<String, &Any> =
                        all.iter().map(|a| (name_of(a), a)).filter(|(n, _)| *wildcard || names.contains(n)).collect();
                    let h = held.entry(type_url.clone()).or_default();
                    let mut resources = Vec::new();
                    for (name, any) in &current {
                        let version = digest(&any.value);
                        if h.get(name) != Some(&version) {
                            h.insert(name.clone(), version.clone());
                            resources.push(Resource {
                                name: name.clone(),
                                version,
                                resource: Some((*any).clone()),
                                ..Default::default()
                            });
                        }
                    }
                    let removed: Vec<String> = h.keys().filter(|n| !current.contains_key(*n)).cloned().collect();
                    for n in &removed {
                        h.remove(n);
                    }
                    if resources.is_empty() && removed.is_empty() && !always {
                        continue;
                    }
                    let nonce = {
                        let mut n = shared.nonce.lock().unwrap();
                        *n += 1;
                        format!("nonce-{n}")
                    };
                    let r = DeltaDiscoveryResponse {
                        system_version_info: snapshot.version.clone(),
                        type_url,
                        nonce,
                        resources,
                        removed_resources: removed,
                        ..Default::default()
                    };
                    if tx.send(Ok(r)).await.is_err() {
                        return;
                    }
                }
            }
        });
        Box::pin(ReceiverStream::new(rx))
    }
}

/// Listener, RouteConfiguration and Cluster all name themselves in field 1.
#[derive(Clone, PartialEq, prost::Message)]
struct NameOnly {
    #[prost(string, tag = "1")]
    name: String,
}

fn name_of(a: &Any) -> String {
    <NameOnly as prost::Message>::decode(a.value.as_slice()).map(|n| n.name).unwrap_or_default()
}

/// The resources with these names (all of them when none is named).
fn named(all: &[Any], names: &[String]) -> Vec<Any> {
    all.iter().filter(|a| names.is_empty() || names.contains(&name_of(a))).cloned().collect()
}

/// A resource's version in the delta protocol: a digest of its bytes (FNV-1a), so an unchanged
/// resource is not sent again.
fn digest(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[tonic::async_trait]
impl ListenerDiscoveryService for Svc {
    type StreamListenersStream = RespStream;
    type DeltaListenersStream = DeltaStream;

    async fn stream_listeners(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<RespStream>, Status> {
        Ok(Response::new(self.stream(request.into_inner(), false)))
    }

    async fn delta_listeners(
        &self,
        _: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<DeltaStream>, Status> {
        Err(Status::unimplemented("delta xDS is not served here"))
    }

    async fn fetch_listeners(&self, _: Request<DiscoveryRequest>) -> Result<Response<DiscoveryResponse>, Status> {
        Err(Status::unimplemented("fetch is not served here"))
    }
}

#[tonic::async_trait]
impl AggregatedDiscoveryService for Svc {
    type StreamAggregatedResourcesStream = RespStream;
    type DeltaAggregatedResourcesStream = DeltaStream;

    async fn stream_aggregated_resources(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<RespStream>, Status> {
        Ok(Response::new(self.stream(request.into_inner(), true)))
    }

    async fn delta_aggregated_resources(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<DeltaStream>, Status> {
        Ok(Response::new(self.delta(request.into_inner())))
    }
}

#[tonic::async_trait]
impl RouteDiscoveryService for Svc {
    type StreamRoutesStream = RespStream;
    type DeltaRoutesStream = DeltaStream;

    async fn stream_routes(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<RespStream>, Status> {
        Ok(Response::new(self.stream(request.into_inner(), false)))
    }

    async fn delta_routes(
        &self,
        _: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<DeltaStream>, Status> {
        Err(Status::unimplemented("per-type delta xDS is not served here"))
    }

    async fn fetch_routes(&self, _: Request<DiscoveryRequest>) -> Result<Response<DiscoveryResponse>, Status> {
        Err(Status::unimplemented("fetch is not served here"))
    }
}

#[tonic::async_trait]
impl ClusterDiscoveryService for Svc {
    type StreamClustersStream = RespStream;
    type DeltaClustersStream = DeltaStream;

    async fn stream_clusters(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<RespStream>, Status> {
        Ok(Response::new(self.stream(request.into_inner(), false)))
    }

    async fn delta_clusters(
        &self,
        _: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<DeltaStream>, Status> {
        Err(Status::unimplemented("per-type delta xDS is not served here"))
    }

    async fn fetch_clusters(&self, _: Request<DiscoveryRequest>) -> Result<Response<DiscoveryResponse>, Status> {
        Err(Status::unimplemented("fetch is not served here"))
    }
}

/// A running server; stopped (every stream cut) on drop.
#[derive(Debug)]
pub struct XdsServer {
    shared: Arc<Shared>,
    bind: Bind,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Serves the per-type LDS service alone (no RDS, CDS or ADS), as a listeners-only
    /// control plane does: the others answer UNIMPLEMENTED.
    listeners_only: bool,
}

impl XdsServer {
    /// Starts serving `state` on `bind` (TCP port 0 picks a free port). Needs a tokio runtime.
    pub async fn start(bind: Bind, state: State) -> XdsServer {
        Self::start_serving(bind, state, false).await
    }

    /// Starts a server of per-type LDS alone.
    pub async fn start_listeners_only(bind: Bind, state: State) -> XdsServer {
        Self::start_serving(bind, state, true).await
    }

    async fn start_serving(bind: Bind, state: State, listeners_only: bool) -> XdsServer {
        let shared = Arc::new(Shared {
            state: watch::Sender::new(state),
            requests: Mutex::new(Vec::new()),
            delta_requests: Mutex::new(Vec::new()),
            mode: Mutex::new(Mode::Serve),
            nonce: Mutex::new(0),
            generation: watch::Sender::new(0),
        });
        let mut server = XdsServer { shared, bind, task: None, listeners_only };
        server.listen().await;
        server
    }

    async fn listen(&mut self) {
        let svc = Svc(self.shared.clone());
        let router = tonic::transport::Server::builder().add_service(ListenerDiscoveryServiceServer::new(svc.clone()));
        let router = match self.listeners_only {
            true => router,
            false => router
                .add_service(RouteDiscoveryServiceServer::new(svc.clone()))
                .add_service(ClusterDiscoveryServiceServer::new(svc.clone()))
                .add_service(AggregatedDiscoveryServiceServer::new(svc)),
        };
        let task = match &self.bind {
            Bind::Tcp(addr) => {
                let l = tokio::net::TcpListener::bind(addr).await.expect("bind the xDS server");
                self.bind = Bind::Tcp(l.local_addr().unwrap());
                // serve_with_incoming ignores Server::tcp_nodelay: set it on the stream.
                let incoming = tonic::transport::server::TcpIncoming::from(l).with_nodelay(Some(true));
                tokio::spawn(async move {
                    let _ = router.serve_with_incoming(incoming).await;
                })
            }
            Bind::Unix(path) => {
                let _ = std::fs::remove_file(path);
                let l = tokio::net::UnixListener::bind(path).expect("bind the xDS socket");
                let incoming = tokio_stream::wrappers::UnixListenerStream::new(l);
                tokio::spawn(async move {
                    let _ = router.serve_with_incoming(incoming).await;
                })
            }
        };
        self.task = Some(task);
    }

    pub fn addr(&self) -> &Bind {
        &self.bind
    }

    /// `grpc://127.0.0.1:PORT` or `grpc+unix:///path`.
    pub fn url(&self) -> String {
        match &self.bind {
            Bind::Tcp(a) => format!("grpc://{a}"),
            Bind::Unix(p) => format!("grpc+unix://{}", p.display()),
        }
    }

    /// Serves a new state to every open stream (and to the next ones).
    pub fn set(&self, state: State) {
        self.shared.state.send_replace(state);
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<DiscoveryRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Every incremental (delta) request received so far.
    pub fn delta_requests(&self) -> Vec<DeltaDiscoveryRequest> {
        self.shared.delta_requests.lock().unwrap().clone()
    }

    /// Stops serving at once: open streams are cut, the address stops answering.
    pub fn stop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.shared.generation.send_modify(|g| *g += 1);
    }

    /// Stops and listens again on the same address, keeping state and recorded requests.
    pub async fn restart(&mut self) {
        self.stop();
        // Let the aborted task drop its listener before the address is bound again.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        self.listen().await;
    }
}

impl Drop for XdsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A TCP relay in front of a server that cuts both connections once `cut_after` bytes have gone
/// from the server to the client: a control plane lost in the middle of a (large) message.
#[derive(Debug)]
pub struct CutRelay {
    addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl CutRelay {
    pub async fn start(upstream: std::net::SocketAddr, cut_after: usize) -> CutRelay {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = l.accept().await {
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(upstream).await else { return };
                    let (mut cr, mut cw) = client.into_split();
                    let (mut sr, mut sw) = server.into_split();
                    let up = tokio::spawn(async move {
                        let _ = tokio::io::copy(&mut cr, &mut sw).await;
                    });
                    let mut left = cut_after;
                    let mut buf = vec![0u8; 64 << 10];
                    while left > 0 {
                        let n = match sr.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n.min(left),
                        };
                        if cw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                        left -= n;
                    }
                    // Both connections end here: the halves are dropped, the copier aborted.
                    up.abort();
                });
            }
        });
        CutRelay { addr, task }
    }

    /// `grpc://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("grpc://{}", self.addr)
    }
}

impl Drop for CutRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}
