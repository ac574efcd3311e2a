//! The tokio driver around the sans-io [`crate::protocol`] and [`crate::observe`]: dial, open
//! the streams, ACK, follow the listeners' route tables, reconnect.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use envoy_types::pb::envoy::service::cluster::v3::cluster_discovery_service_client::ClusterDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use envoy_types::pb::envoy::service::listener::v3::listener_discovery_service_client::ListenerDiscoveryServiceClient;
use envoy_types::pb::envoy::service::route::v3::route_discovery_service_client::RouteDiscoveryServiceClient;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

use crate::error::chain_text;
use crate::observe::{Held, Store, View};
use crate::protocol::{Backoff, CLUSTER_TYPE_URL, DeltaState, LISTENER_TYPE_URL, ROUTE_TYPE_URL, SotwState};
use crate::{Detected, Endpoint, Error, GrpcTarget};

/// Which xDS service to subscribe with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// A stream per type: `ListenerDiscoveryService/StreamListeners`, `RouteDiscoveryService`,
    /// `ClusterDiscoveryService` (Cilium's default "split" mode). A server that does not serve
    /// routes or clusters is observed without them.
    #[default]
    Lds,
    /// One `AggregatedDiscoveryService` stream for the three types.
    Ads,
}

/// How to subscribe.
#[derive(Debug, Clone)]
pub struct Options {
    pub api: Api,
    /// The incremental protocol (`DeltaAggregatedResources`); ADS only.
    pub delta: bool,
    pub node_id: String,
    /// Bounds dialing, the wait for the first Listener response, and the wait for the route
    /// tables and clusters after it: at that point the set is checked with what came, and what
    /// did not is said.
    pub timeout: Duration,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// Largest response accepted, encoded (`--max-bytes`): a gateway with many tenants sends
    /// Listener responses far beyond tonic's 4 MB default. A larger one is refused from its
    /// length prefix, before it is buffered: [`Error::TooLarge`].
    pub max_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            api: Api::Lds,
            delta: false,
            node_id: crate::protocol::DEFAULT_NODE_ID.to_owned(),
            timeout: Duration::from_secs(10),
            backoff_initial: Duration::from_millis(250),
            backoff_max: Duration::from_secs(30),
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// What [`watch`] reports.
#[derive(Debug)]
pub enum Event {
    /// The first stream of a connection is open (the server answered its opening) and the
    /// subscriptions are sent.
    Connected,
    /// The configuration to check: whole, or at the deadline with what came (its
    /// [`View::unanswered`] names the route tables that did not). Every response in it is ACKed.
    Update(Box<View>),
    /// What was odd about responses (ACKed all the same) or a type the server does not serve.
    Problems(Vec<String>),
    /// The stream or the connection failed; the next attempt follows after `retry_in`.
    Disconnected { error: Error, retry_in: Duration },
}

/// The default [`Options::max_bytes`], 1 GiB: xdsck-core's default input limit.
pub const DEFAULT_MAX_BYTES: usize = 1 << 30;

/// Requests queued for a stream; more ACKs wait in [`Outbox`], one per type.
const REQUEST_QUEUE: usize = 64;

async fn channel(target: &GrpcTarget, timeout: Duration) -> Result<Channel, Error> {
    let at = target.endpoint.to_string();
    let uri = match (&target.endpoint, &target.tls) {
        (Endpoint::Unix { path }, _) => format!("unix://{}", path.display()),
        (Endpoint::Tcp { authority }, None) => format!("http://{authority}"),
        (Endpoint::Tcp { authority }, Some(_)) => format!("https://{authority}"),
    };
    let mut endpoint = tonic::transport::Endpoint::from_shared(uri)
        .map_err(|e| Error::Address { address: at.clone(), reason: chain_text(&e) })?
        .connect_timeout(timeout)
        .tcp_nodelay(true);
    if let Some(tls) = &target.tls {
        let read = |p: &std::path::PathBuf| {
            std::fs::read(p).map_err(|e| Error::Tls(format!("cannot read {}: {e}", p.display())))
        };
        let mut cfg = ClientTlsConfig::new();
        cfg = match &tls.ca {
            Some(ca) => cfg.ca_certificate(Certificate::from_pem(read(ca)?)),
            None => cfg.with_enabled_roots(),
        };
        match (&tls.cert, &tls.key) {
            (Some(c), Some(k)) => cfg = cfg.identity(Identity::from_pem(read(c)?, read(k)?)),
            (None, None) => {}
            _ => return Err(Error::Tls("a client certificate needs both --tls-cert and --tls-key".into())),
        }
        if let Some(name) = &tls.server_name {
            cfg = cfg.domain_name(name.clone());
        }
        endpoint = endpoint.tls_config(cfg).map_err(|e| Error::Tls(chain_text(&e)))?;
    }
    match endpoint.connect().await {
        Ok(c) => Ok(c),
        Err(e) => Err(classify(target, &e).await),
    }
}

/// Names a failure: an I/O error behind it, or a server that answers HTTP/1.1 (an admin port).
async fn classify(target: &GrpcTarget, e: &tonic::transport::Error) -> Error {
    let at = target.endpoint.to_string();
    if let Some(io) = Error::from_chain(&at, e)
        && !matches!(io, Error::Io { .. })
    {
        return io;
    }
    let text = chain_text(e);
    if target.tls.is_none()
        && let Ok(Detected::Admin) = crate::admin::probe(&target.endpoint, Duration::from_secs(2)).await
    {
        return Error::WrongProtocol {
            at,
            detail: "answers HTTP/1.1, not gRPC: it is an admin endpoint; attach to it with unix:// or http://".into(),
        };
    }
    Error::Stream { at, detail: text }
}

/// A request of either protocol, known by its type.
trait Request: Send + 'static {
    fn type_url(&self) -> &str;
}

impl Request for DiscoveryRequest {
    fn type_url(&self) -> &str {
        &self.type_url
    }
}

impl Request for DeltaDiscoveryRequest {
    fn type_url(&self) -> &str {
        &self.type_url
    }
}

/// Requests on their way to the server, to the stream of their type (one stream for all on
/// ADS). An ACK waits here, not in the stream, when the stream has no room (a server that sends
/// faster than it reads); the ACK of a later response of the same type replaces it, since a
/// server heeds only the nonce it sent last. So xdsck always goes on reading responses — a server
/// flooding responses while not reading requests cannot block it — and what waits is at most one
/// ACK per type. A subscription change is never replaced: it goes first, in order.
#[derive(Debug)]
struct Outbox<R> {
    /// By type; the key `""` is the one stream of ADS.
    streams: BTreeMap<&'static str, mpsc::Sender<R>>,
    subscriptions: VecDeque<R>,
    /// By type: the ACK, and the per-type stream it goes back on when that is not its type's
    /// (a response of a type not asked for, on the LDS stream).
    acks: BTreeMap<String, (Option<&'static str>, R)>,
}

impl<R: Request> Outbox<R> {
    fn new() -> Self {
        Outbox { streams: BTreeMap::new(), subscriptions: VecDeque::new(), acks: BTreeMap::new() }
    }

    fn sender(&self, type_url: &str) -> Option<&mpsc::Sender<R>> {
        let via = self.acks.get(type_url).and_then(|(via, _)| *via).filter(|_| self.subscriptions.is_empty());
        via.and_then(|v| self.streams.get(v)).or_else(|| self.streams.get(type_url)).or_else(|| self.streams.get(""))
    }

    fn is_empty(&self) -> bool {
        self.subscriptions.is_empty() && self.acks.is_empty()
    }

    /// Queues an ACK, to go on the stream of `via` (the per-type stream the response came on)
    /// or of its type.
    async fn ack(&mut self, request: R, via: Option<&'static str>) {
        self.acks.insert(request.type_url().to_owned(), (via, request));
        self.settle().await;
    }

    async fn subscribe(&mut self, request: R) {
        self.subscriptions.push_back(request);
        self.settle().await;
    }

    async fn settle(&mut self) {
        self.send_ready();
        if !self.is_empty() {
            // The stream's task may just not have run yet while responses keep coming: give it
            // a turn before the next ACK of this type replaces this one.
            tokio::task::yield_now().await;
            self.send_ready();
        }
    }

    /// The next request to send: subscriptions first.
    fn next_type(&self) -> Option<String> {
        match self.subscriptions.front() {
            Some(r) => Some(r.type_url().to_owned()),
            None => self.acks.keys().next().cloned(),
        }
    }

    fn take(&mut self, type_url: &str) -> Option<R> {
        match self.subscriptions.front() {
            Some(r) if r.type_url() == type_url => self.subscriptions.pop_front(),
            Some(_) => None,
            None => self.acks.remove(type_url).map(|(_, r)| r),
        }
    }

    /// Moves what fits into the streams.
    fn send_ready(&mut self) {
        while let Some(t) = self.next_type() {
            let Some(tx) = self.sender(&t).cloned() else {
                // A type whose stream is gone (a per-type server that does not serve it).
                self.take(&t);
                continue;
            };
            match tx.try_reserve() {
                Ok(permit) => {
                    if let Some(r) = self.take(&t) {
                        permit.send(r);
                    }
                }
                Err(mpsc::error::TrySendError::Full(())) => return,
                // The request stream is gone; the response stream reports why.
                Err(mpsc::error::TrySendError::Closed(())) => {
                    self.take(&t);
                }
            }
        }
    }

    /// Waits for room and sends one waiting request (cancel-safe: nothing is taken before there
    /// is room). Pending forever when nothing waits.
    async fn send_one(&mut self) {
        let Some(t) = self.next_type() else { return std::future::pending().await };
        let Some(tx) = self.sender(&t).cloned() else {
            self.take(&t);
            return;
        };
        match tx.reserve().await {
            Ok(permit) => {
                if let Some(r) = self.take(&t) {
                    permit.send(r);
                }
            }
            Err(_) => {
                self.take(&t);
            }
        }
    }

    /// Sends everything still waiting.
    async fn flush(&mut self) {
        while !self.is_empty() {
            self.send_one().await;
        }
    }
}

/// What the streams' tasks hand to the session.
enum Incoming {
    /// A stream is open: the server answered its opening with headers.
    Opened,
    /// A response, with the type of the per-type stream it came on (`None` on ADS).
    Sotw(DiscoveryResponse, Option<&'static str>),
    Delta(DeltaDiscoveryResponse),
    /// A stream ended: normally (`None`) or with a status.
    Ended(Option<&'static str>, Option<tonic::Status>),
}

/// The requests of one stream, as tonic takes them: the first one, which opened it, then the
/// rest as they are queued.
struct Requests<R> {
    first: Option<R>,
    rest: ReceiverStream<R>,
}

impl<R> tokio_stream::Stream for Requests<R> {
    type Item = R;

    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<R>> {
        match self.first.take() {
            Some(r) => std::task::Poll::Ready(Some(r)),
            None => std::pin::Pin::new(&mut self.rest).poll_next(cx),
        }
    }
}

impl<R> Unpin for Requests<R> {}
/// Opening a stream: what the generated client's call returns.
type Opening<T> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<tonic::Response<tonic::Streaming<T>>, tonic::Status>> + Send>,
>;

/// Runs one stream in a task of its own and forwards what it receives. The stream opens with
/// its first request (the RDS stream once the listeners ask for tables): opening waits for the
/// server's headers, which some servers send only with a response.
fn spawn_stream<R, T>(
    tasks: &mut tokio::task::JoinSet<()>,
    incoming: mpsc::Sender<Incoming>,
    stream_type: Option<&'static str>,
    mut requests: mpsc::Receiver<R>,
    open: impl FnOnce(Requests<R>) -> Opening<T> + Send + 'static,
    wrap: fn(T, Option<&'static str>) -> Incoming,
) where
    R: Send + 'static,
    T: Send + 'static,
{
    tasks.spawn(async move {
        let Some(first) = requests.recv().await else { return };
        let requests = Requests { first: Some(first), rest: ReceiverStream::new(requests) };
        let mut stream = match open(requests).await {
            Ok(s) => {
                if incoming.send(Incoming::Opened).await.is_err() {
                    return;
                }
                s.into_inner()
            }
            Err(status) => {
                let _ = incoming.send(Incoming::Ended(stream_type, Some(status))).await;
                return;
            }
        };
        let end = loop {
            match stream.message().await {
                Ok(Some(m)) => {
                    if incoming.send(wrap(m, stream_type)).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break None,
                Err(status) => break Some(status),
            }
        };
        let _ = incoming.send(Incoming::Ended(stream_type, end)).await;
    });
}

/// The protocol state of a subscription, kept across reconnections (versions, held resources).
enum Protocol {
    Sotw(SotwState),
    Delta(DeltaState),
}

impl Protocol {
    fn new(options: &Options) -> Self {
        if options.delta {
            let mut d = DeltaState::new(&options.node_id);
            d.subscribe_all(LISTENER_TYPE_URL);
            d.subscribe_all(CLUSTER_TYPE_URL);
            Protocol::Delta(d)
        } else {
            let mut s = SotwState::new(&options.node_id);
            s.subscribe(LISTENER_TYPE_URL, Vec::new());
            s.subscribe(CLUSTER_TYPE_URL, Vec::new());
            Protocol::Sotw(s)
        }
    }
}

/// The requests of the open streams.
enum Outboxes {
    Sotw(Outbox<DiscoveryRequest>),
    Delta(Outbox<DeltaDiscoveryRequest>),
}

impl Outboxes {
    async fn send_one(&mut self) {
        match self {
            Outboxes::Sotw(o) => o.send_one().await,
            Outboxes::Delta(o) => o.send_one().await,
        }
    }

    async fn flush(&mut self) {
        match self {
            Outboxes::Sotw(o) => o.flush().await,
            Outboxes::Delta(o) => o.flush().await,
        }
    }
}

/// Open streams: their tasks, what they receive, and the requests to send.
struct Streams {
    tasks: tokio::task::JoinSet<()>,
    incoming: mpsc::Receiver<Incoming>,
    outbox: Outboxes,
}

/// The aggregated discovery service's client on `channel`, taking answers up to `max` bytes.
fn ads(channel: Channel, max: usize) -> AggregatedDiscoveryServiceClient<Channel> {
    AggregatedDiscoveryServiceClient::new(channel).max_decoding_message_size(max)
}

/// Opens the streams of `options.api` and queues each type's first request.
async fn open(channel: Channel, options: &Options, protocol: &mut Protocol) -> Streams {
    let (in_tx, incoming) = mpsc::channel(16);
    let mut tasks = tokio::task::JoinSet::new();
    let max = options.max_bytes;
    let outbox = match protocol {
        Protocol::Delta(d) => {
            let (tx, rx) = mpsc::channel(REQUEST_QUEUE);
            spawn_stream(
                &mut tasks,
                in_tx,
                None,
                rx,
                move |r| Box::pin(async move { ads(channel, max).delta_aggregated_resources(r).await }),
                |m, _| Incoming::Delta(m),
            );
            let mut o = Outbox::new();
            o.streams.insert("", tx);
            for r in d.start_stream() {
                o.subscribe(r).await;
            }
            Outboxes::Delta(o)
        }
        Protocol::Sotw(s) => {
            let mut o = Outbox::new();
            match options.api {
                Api::Ads => {
                    let (tx, rx) = mpsc::channel(REQUEST_QUEUE);
                    spawn_stream(
                        &mut tasks,
                        in_tx,
                        None,
                        rx,
                        move |r| Box::pin(async move { ads(channel, max).stream_aggregated_resources(r).await }),
                        Incoming::Sotw,
                    );
                    o.streams.insert("", tx);
                }
                Api::Lds => {
                    for t in crate::observe::TYPES {
                        let (tx, rx) = mpsc::channel(REQUEST_QUEUE);
                        let ch = channel.clone();
                        let open = move |r: Requests<DiscoveryRequest>| -> Opening<DiscoveryResponse> {
                            Box::pin(async move {
                                match t {
                                    LISTENER_TYPE_URL => {
                                        let c = ListenerDiscoveryServiceClient::new(ch);
                                        c.max_decoding_message_size(max).stream_listeners(r).await
                                    }
                                    ROUTE_TYPE_URL => {
                                        let c = RouteDiscoveryServiceClient::new(ch);
                                        c.max_decoding_message_size(max).stream_routes(r).await
                                    }
                                    _ => {
                                        let c = ClusterDiscoveryServiceClient::new(ch);
                                        c.max_decoding_message_size(max).stream_clusters(r).await
                                    }
                                }
                            })
                        };
                        spawn_stream(&mut tasks, in_tx.clone(), Some(t), rx, open, Incoming::Sotw);
                        o.streams.insert(t, tx);
                    }
                }
            }
            for r in s.start_stream() {
                o.subscribe(r).await;
            }
            Outboxes::Sotw(o)
        }
    };
    Streams { tasks, incoming, outbox }
}

/// How a session ended.
enum Flow {
    /// The receiver of the events is gone, or the one view asked for was delivered.
    Done,
    Failed(Error),
}

/// The name of a type in messages.
fn kind(type_url: &str) -> &str {
    match type_url {
        ROUTE_TYPE_URL => "route tables (RDS)",
        CLUSTER_TYPE_URL => "clusters (CDS)",
        _ => "listeners (LDS)",
    }
}

/// One connection's streams, until they fail or the caller is done: every response ACKed and
/// kept, the route tables the listeners name asked for, and the set handed over whenever it is
/// whole — or, `options.timeout` after it became incomplete, with what came.
async fn session(
    target: &GrpcTarget,
    options: &Options,
    protocol: &mut Protocol,
    store: &mut Store,
    streams: &mut Streams,
    (events, once): (&mpsc::Sender<Event>, bool),
    backoff: &mut Backoff,
) -> Flow {
    let at = target.endpoint.to_string();
    let first = Instant::now() + options.timeout;
    let mut wait: Option<Instant> = None;
    let mut connected = false;
    loop {
        let mut problems = Vec::new();
        let mut timed_out = false;
        // Whether what is held changed: a response of another type (a flood of them) is
        // ACKed and changes nothing to check.
        let mut changed = false;
        let incoming = tokio::select! {
            () = streams.outbox.send_one() => continue,
            () = tokio::time::sleep_until(first), if store.listeners.is_none() => {
                return Flow::Failed(Error::Timeout { at, what: "the first Listener response", after: options.timeout });
            }
            () = tokio::time::sleep_until(wait.unwrap_or(first)), if wait.is_some() => None,
            m = streams.incoming.recv() => match m {
                Some(m) => Some(m),
                None => return Flow::Failed(Error::Closed { at }),
            },
        };
        match incoming {
            // Said once, when the first stream is open (not when it is only asked for: a
            // server that refuses the service is never "connected").
            Some(Incoming::Opened) => {
                if !std::mem::replace(&mut connected, true) && events.send(Event::Connected).await.is_err() {
                    return Flow::Done;
                }
                continue;
            }
            // The wait for the rest is over: what came is checked, and what did not is said.
            None => {
                wait = None;
                timed_out = true;
            }
            Some(Incoming::Ended(Some(t), Some(s)))
                if t != LISTENER_TYPE_URL && s.code() == tonic::Code::Unimplemented =>
            {
                store.unserved.insert(t.to_owned());
                if let Protocol::Sotw(sotw) = protocol {
                    sotw.unsubscribe(t);
                }
                problems.push(format!(
                    "the server does not serve {} on a stream of their own: they are not checked",
                    kind(t)
                ));
                changed = true;
            }
            Some(Incoming::Ended(_, Some(s))) => return Flow::Failed(status_error(target, options, &s)),
            Some(Incoming::Ended(_, None)) => return Flow::Failed(Error::Closed { at }),
            Some(Incoming::Sotw(response, stream_type)) => {
                backoff.reset();
                let Protocol::Sotw(sotw) = protocol else { continue };
                let Outboxes::Sotw(outbox) = &mut streams.outbox else { continue };
                let r = sotw.on_response_of(response, stream_type);
                outbox.ack(r.ack, stream_type).await;
                problems.extend(r.problems);
                if sotw.subscription(&r.type_url).is_some() {
                    changed = true;
                    let held = Held::whole(&r.type_url, &r.version_info, r.resources);
                    // Asking for no name at all is the wildcard in this protocol: tables no
                    // longer named are simply not needed.
                    // Nor asked again of a per-type server that said it does not serve them.
                    if let Some(names) = store.set(held).filter(|n| !n.is_empty())
                        && !store.unserved.contains(ROUTE_TYPE_URL)
                        && let Some(request) = sotw.resubscribe(ROUTE_TYPE_URL, names.into_iter().collect())
                    {
                        outbox.subscribe(request).await;
                    }
                }
            }
            Some(Incoming::Delta(response)) => {
                backoff.reset();
                let Protocol::Delta(delta) = protocol else { continue };
                let Outboxes::Delta(outbox) = &mut streams.outbox else { continue };
                let r = delta.on_response(response);
                outbox.ack(r.ack, None).await;
                problems.extend(r.problems);
                if let Some(sub) = delta.subscription(&r.type_url) {
                    changed = true;
                    let held = Held {
                        type_url: r.type_url.clone(),
                        version: r.system_version.clone(),
                        resources: sub.resources.values().cloned().collect(),
                    };
                    if let Some(names) = store.set(held)
                        && let Some(request) = delta.resubscribe(ROUTE_TYPE_URL, names)
                    {
                        outbox.subscribe(request).await;
                    }
                }
            }
        }
        if !problems.is_empty() && events.send(Event::Problems(problems)).await.is_err() {
            return Flow::Done;
        }
        let deliver = if timed_out {
            true
        } else if !changed {
            false
        } else if store.ready() {
            wait = None;
            true
        } else if store.listeners.is_some() && wait.is_none() {
            wait = Some(Instant::now() + options.timeout);
            false
        } else {
            false
        };
        if deliver && let Some(view) = store.view() {
            if events.send(Event::Update(Box::new(view))).await.is_err() {
                return Flow::Done;
            }
            if once {
                close(streams).await;
                return Flow::Done;
            }
        }
    }
}

/// Delivers the ACKs still waiting, half-closes the streams and gives the server a moment to
/// end them, reading (and dropping) whatever it still sends: an observer that leaves politely.
async fn close(streams: &mut Streams) {
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        let drain = async { while streams.incoming.recv().await.is_some() {} };
        tokio::pin!(drain);
        let outbox = &mut streams.outbox;
        tokio::select! {
            () = outbox.flush() => {}
            () = &mut drain => return,
        }
        match outbox {
            Outboxes::Sotw(o) => o.streams.clear(),
            Outboxes::Delta(o) => o.streams.clear(),
        }
        drain.await;
    })
    .await;
}

/// What [`fetch_once`] returns: the set, and what was odd about the responses (ACKed).
#[derive(Debug)]
pub struct Fetched {
    pub view: View,
    pub problems: Vec<String>,
}

/// Subscribes, waits for the set to be whole (or for `options.timeout` after the listeners
/// came), ACKs everything, and closes the streams politely.
pub async fn fetch_once(target: &GrpcTarget, options: &Options) -> Result<Fetched, Error> {
    let (tx, mut rx) = mpsc::channel(16);
    let run = run(target, options, tx, true);
    tokio::pin!(run);
    let mut problems = Vec::new();
    let mut view = None;
    let result = loop {
        tokio::select! {
            r = &mut run => break r,
            e = rx.recv() => match e {
                Some(Event::Update(v)) => view = Some(*v),
                Some(Event::Problems(p)) => problems.extend(p),
                Some(_) => {}
                None => break Ok(()),
            },
        }
    };
    while let Ok(e) = rx.try_recv() {
        match e {
            Event::Update(v) => view = Some(*v),
            Event::Problems(p) => problems.extend(p),
            _ => {}
        }
    }
    match (result, view) {
        (_, Some(view)) => Ok(Fetched { view, problems }),
        (Err(Error::Timeout { at, what, after }), None) => {
            // Envoy's admin also speaks HTTP/2 and holds a streaming request open without an
            // answer: ask it in HTTP/1.1 whether that is what is on the other end.
            if target.tls.is_none()
                && let Ok(Detected::Admin) = crate::admin::probe(&target.endpoint, Duration::from_secs(2)).await
            {
                return Err(Error::WrongProtocol {
                    at,
                    detail: "answers HTTP/1.1, not gRPC: it is an admin endpoint; attach to it with unix:// or http://"
                        .into(),
                });
            }
            Err(Error::Timeout { at, what, after })
        }
        (Err(e), None) => Err(e),
        (Ok(()), None) => Err(Error::Closed { at: target.endpoint.to_string() }),
    }
}

/// Subscribes and reports every whole set (and every problem) until `events` is closed,
/// reconnecting with exponential backoff and jitter whenever the stream or the connection
/// fails, and when no Listener response has come yet `options.timeout` after a stream opened
/// (once one has, a quiet stream is a control plane with nothing new to say: a server may skip
/// resending the versions a new stream presents). Returns when the receiver is gone, or with the
/// error when retrying cannot help (bad TLS setup, permission).
pub async fn watch(target: &GrpcTarget, options: &Options, events: mpsc::Sender<Event>) -> Result<(), Error> {
    run(target, options, events, false).await
}

async fn run(target: &GrpcTarget, options: &Options, events: mpsc::Sender<Event>, once: bool) -> Result<(), Error> {
    let mut protocol = Protocol::new(options);
    let mut store = Store::default();
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let mut backoff = Backoff::new(options.backoff_initial, options.backoff_max, seed);
    loop {
        let error = match channel(target, options.timeout).await {
            Err(e) => e,
            Ok(channel) => {
                let mut streams = open(channel, options, &mut protocol).await;
                let flow =
                    session(target, options, &mut protocol, &mut store, &mut streams, (&events, once), &mut backoff)
                        .await;
                streams.tasks.abort_all();
                match flow {
                    Flow::Done => return Ok(()),
                    Flow::Failed(e) => e,
                }
            }
        };
        if let Protocol::Sotw(s) = &mut protocol {
            s.on_disconnect();
        }
        if once || !error.is_transient() {
            return Err(error);
        }
        let retry_in = backoff.next_delay();
        if events.send(Event::Disconnected { error, retry_in }).await.is_err() {
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep(retry_in) => {}
            () = events.closed() => return Ok(()),
        }
    }
}

fn status_error(target: &GrpcTarget, options: &Options, s: &tonic::Status) -> Error {
    let at = target.endpoint.to_string();
    if let Some(e) = too_large(&at, options.max_bytes, s) {
        return e;
    }
    if s.code() == tonic::Code::Unimplemented {
        let (other, flag) = match (options.api, options.delta) {
            (Api::Lds, _) => ("ADS", "--type ads"),
            (Api::Ads, true) => ("the state-of-the-world protocol", "no --delta"),
            (Api::Ads, false) => ("per-type LDS", "--type lds"),
        };
        return Error::Stream {
            at,
            detail: format!("the server does not implement this service ({}); try {other} with {flag}", s.message()),
        };
    }
    if let Some(source) = std::error::Error::source(s)
        && let Some(e) = Error::from_chain(&at, source)
    {
        return e;
    }
    Error::Stream { at, detail: format!("{:?}: {}", s.code(), s.message()) }
}

/// tonic's own refusal of a message over `max_decoding_message_size` (raised by the client's
/// decoder from the length prefix, before the message is buffered), as [`Error::TooLarge`].
fn too_large(at: &str, limit: usize, s: &tonic::Status) -> Option<Error> {
    let message = s.message();
    let error =
        |size, at_least| Error::TooLarge { at: at.to_owned(), what: "a DiscoveryResponse", size, at_least, limit };
    match s.code() {
        // "Error, decoded message length too large: found N bytes, the limit is: M bytes"
        tonic::Code::OutOfRange if message.contains("message length too large") => {
            let size = message.split("found ").nth(1)?.split(' ').next()?.parse().ok()?;
            Some(error(size, false))
        }
        // A compressed message that grows past the limit.
        tonic::Code::ResourceExhausted if message.contains("exceeded while decompressing") => Some(error(limit, true)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(type_url: &str, nonce: &str) -> DiscoveryRequest {
        DiscoveryRequest { type_url: type_url.into(), response_nonce: nonce.into(), ..DiscoveryRequest::default() }
    }

    #[tokio::test]
    async fn acks_wait_one_per_type_while_the_stream_is_full_and_the_latest_is_sent() {
        let (tx, mut rx) = mpsc::channel(1);
        let mut acks = Outbox::new();
        acks.streams.insert("", tx);
        // Nobody reads: the first fits, the rest wait, the latest of each type only.
        for (t, n) in [("A", "1"), ("A", "2"), ("B", "3"), ("A", "4"), ("B", "5")] {
            acks.ack(ack(t, n), None).await;
        }
        assert_eq!(rx.try_recv().unwrap().response_nonce, "1");
        assert_eq!(acks.acks.len(), 2);
        // Room again: what waited goes, in order of type.
        acks.send_one().await;
        assert_eq!(rx.try_recv().unwrap().response_nonce, "4");
        acks.send_one().await;
        assert_eq!(rx.try_recv().unwrap().response_nonce, "5");
        assert!(acks.is_empty());
        // While the reader keeps up, every ACK goes, none replaced.
        for n in 0..100 {
            acks.ack(ack("A", &n.to_string()), None).await;
            assert_eq!(rx.try_recv().unwrap().response_nonce, n.to_string());
        }
        // The stream gone: nothing waits, nothing blocks.
        drop(rx);
        acks.ack(ack("A", "x"), None).await;
        acks.flush().await;
        assert!(acks.is_empty());
    }

    #[tokio::test]
    async fn a_subscription_change_is_never_replaced_and_goes_to_its_types_stream() {
        let (lds, mut lds_rx) = mpsc::channel(1);
        let (rds, mut rds_rx) = mpsc::channel(1);
        let mut out = Outbox::new();
        out.streams.insert("L", lds);
        out.streams.insert("R", rds);
        // The RDS stream is full: two subscription changes and an ACK wait, none lost.
        out.ack(ack("R", "0"), None).await;
        let sub = |names: &[&str]| DiscoveryRequest {
            type_url: "R".into(),
            resource_names: names.iter().map(|s| (*s).to_owned()).collect(),
            ..DiscoveryRequest::default()
        };
        out.subscribe(sub(&["a"])).await;
        out.subscribe(sub(&["a", "b"])).await;
        out.ack(ack("R", "1"), None).await;
        // An ACK of another type is not held up by the RDS stream (its own stream has room)...
        // but subscriptions go first, in order: it waits behind them.
        out.ack(ack("L", "9"), None).await;
        assert_eq!(rds_rx.try_recv().unwrap().response_nonce, "0");
        out.send_one().await;
        assert_eq!(rds_rx.try_recv().unwrap().resource_names, ["a"]);
        out.send_one().await;
        assert_eq!(rds_rx.try_recv().unwrap().resource_names, ["a", "b"]);
        out.flush().await;
        assert_eq!(lds_rx.try_recv().unwrap().response_nonce, "9");
        assert_eq!(rds_rx.try_recv().unwrap().response_nonce, "1");
        // A type not asked for goes back on the stream it came on.
        out.ack(ack("P", "3"), Some("L")).await;
        assert_eq!(lds_rx.try_recv().unwrap().response_nonce, "3");
        // A type with no stream of its own (a server that does not serve it) is dropped.
        out.ack(ack("C", "2"), None).await;
        assert!(out.is_empty());
    }

    #[test]
    fn tonic_refusing_a_large_message_is_too_large_naming_the_flag() {
        // tonic's decoder, from the length prefix (tonic 0.14's words).
        let s = tonic::Status::out_of_range(
            "Error, decoded message length too large: found 104863667 bytes, the limit is: 10000000 bytes",
        );
        let e = too_large("xds.sock", 10_000_000, &s).expect("mapped");
        assert!(matches!(e, Error::TooLarge { size: 104_863_667, at_least: false, limit: 10_000_000, .. }), "{e:?}");
        let text = e.to_string();
        assert!(text.contains("104863667 bytes, over the size limit of 10000000 bytes"), "{text}");
        assert!(text.contains("--max-bytes"), "{text}");
        let s = tonic::Status::resource_exhausted(
            "Error decompressing: size limit, of 10 bytes, exceeded while decompressing message",
        );
        assert!(matches!(too_large("x", 10, &s), Some(Error::TooLarge { at_least: true, .. })));
        // Anything else is not.
        assert!(too_large("x", 10, &tonic::Status::out_of_range("version out of range")).is_none());
        assert!(too_large("x", 10, &tonic::Status::unavailable("message length too large")).is_none());
    }
}
