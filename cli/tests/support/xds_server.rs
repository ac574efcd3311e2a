//! An in-process xDS server (envoy-types' generated tonic services) for the attach tests: it
//! serves Listener resources over per-type LDS and ADS, state of the world, on TCP or a Unix
//! socket; the served set can change, the server can be restarted (streams cut mid-way), made to
//! stall, to close streams, or to send garbage. It records every request it receives, so a test
//! can assert that a client only ever ACKed. A real Envoy accepts it as its LDS source (see
//! tests/attach.rs), which is what makes it a fair stand-in for a control plane.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_server::{
    AggregatedDiscoveryService, AggregatedDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use envoy_types::pb::envoy::service::listener::v3::listener_discovery_service_server::{
    ListenerDiscoveryService, ListenerDiscoveryServiceServer,
};
use envoy_types::pb::google::protobuf::Any;
use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

pub use super::proto_build::LISTENER_TYPE;

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
    pub resources: Vec<Any>,
    /// Sent before the listeners on each new stream: a response of a type nobody asked for.
    pub extra_type_first: Option<String>,
}

#[derive(Debug)]
struct Shared {
    state: watch::Sender<State>,
    requests: Mutex<Vec<DiscoveryRequest>>,
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

impl Svc {
    fn stream(&self, mut requests: Streaming<DiscoveryRequest>) -> RespStream {
        let shared = self.0.clone();
        let (tx, rx) = mpsc::channel(16);
        let mode = *shared.mode.lock().unwrap();
        tokio::spawn(async move {
            let mut state = shared.state.subscribe();
            let mut generation = shared.generation.subscribe();
            generation.borrow_and_update();
            // The first request opens the subscription.
            match requests.message().await {
                Ok(Some(r)) => shared.requests.lock().unwrap().push(r),
                _ => return,
            }
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
            let next_nonce = || {
                let mut n = shared.nonce.lock().unwrap();
                *n += 1;
                format!("nonce-{n}")
            };
            let snapshot = state.borrow_and_update().clone();
            if let Some(t) = &snapshot.extra_type_first {
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
            let mut current = Some(snapshot);
            loop {
                if let Some(s) = current.take() {
                    let r = DiscoveryResponse {
                        version_info: s.version.clone(),
                        type_url: LISTENER_TYPE.into(),
                        nonce: next_nonce(),
                        resources: s.resources.clone(),
                        ..Default::default()
                    };
                    if tx.send(Ok(r)).await.is_err() {
                        return;
                    }
                }
                tokio::select! {
                    m = requests.message() => match m {
                        Ok(Some(r)) => shared.requests.lock().unwrap().push(r),
                        _ => return,
                    },
                    _ = generation.changed() => {
                        let _ = tx.send(Err(Status::unavailable("the server stopped"))).await;
                        return;
                    }
                    c = state.changed() => {
                        if c.is_err() { return; }
                        current = Some(state.borrow_and_update().clone());
                    }
                }
            }
        });
        Box::pin(ReceiverStream::new(rx))
    }
}

#[tonic::async_trait]
impl ListenerDiscoveryService for Svc {
    type StreamListenersStream = RespStream;
    type DeltaListenersStream = DeltaStream;

    async fn stream_listeners(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<RespStream>, Status> {
        Ok(Response::new(self.stream(request.into_inner())))
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
        Ok(Response::new(self.stream(request.into_inner())))
    }

    async fn delta_aggregated_resources(
        &self,
        _: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<DeltaStream>, Status> {
        Err(Status::unimplemented("delta xDS is not served here"))
    }
}

/// A running server; stopped (every stream cut) on drop.
#[derive(Debug)]
pub struct XdsServer {
    shared: Arc<Shared>,
    bind: Bind,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl XdsServer {
    /// Starts serving `state` on `bind` (TCP port 0 picks a free port). Needs a tokio runtime.
    pub async fn start(bind: Bind, state: State) -> XdsServer {
        let shared = Arc::new(Shared {
            state: watch::Sender::new(state),
            requests: Mutex::new(Vec::new()),
            mode: Mutex::new(Mode::Serve),
            nonce: Mutex::new(0),
            generation: watch::Sender::new(0),
        });
        let mut server = XdsServer { shared, bind, task: None };
        server.listen().await;
        server
    }

    async fn listen(&mut self) {
        let svc = Svc(self.shared.clone());
        let router = tonic::transport::Server::builder()
            .add_service(ListenerDiscoveryServiceServer::new(svc.clone()))
            .add_service(AggregatedDiscoveryServiceServer::new(svc));
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
