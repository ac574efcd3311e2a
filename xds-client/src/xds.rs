//! The tokio driver around [`crate::protocol::SotwState`]: dial, stream, ACK, reconnect.

use std::time::Duration;

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::envoy::service::listener::v3::listener_discovery_service_client::ListenerDiscoveryServiceClient;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

use crate::error::chain_text;
use crate::protocol::{Backoff, LISTENER_TYPE_URL, Response, SotwState};
use crate::{Detected, Endpoint, Error, GrpcTarget};

/// Which xDS service to subscribe with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// `ListenerDiscoveryService/StreamListeners`: Cilium's default "split" mode.
    #[default]
    Lds,
    /// `AggregatedDiscoveryService/StreamAggregatedResources`.
    Ads,
}

/// How to subscribe.
#[derive(Debug, Clone)]
pub struct Options {
    pub api: Api,
    pub node_id: String,
    /// Bounds dialing, and in [`fetch_once`] the wait for the first response.
    pub timeout: Duration,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            api: Api::Lds,
            node_id: crate::protocol::DEFAULT_NODE_ID.to_owned(),
            timeout: Duration::from_secs(10),
            backoff_initial: Duration::from_millis(250),
            backoff_max: Duration::from_secs(30),
        }
    }
}

/// What [`watch`] reports.
#[derive(Debug)]
pub enum Event {
    /// A stream is open and the subscription sent.
    Connected,
    /// A response, already ACKed.
    Response(Box<Response>),
    /// The stream or the connection failed; the next attempt follows after `retry_in`.
    Disconnected { error: Error, retry_in: Duration },
}

/// Largest message accepted: a gateway with many tenants sends Listener responses far beyond
/// tonic's 4 MB default.
const MAX_MESSAGE: usize = 1 << 30;

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

/// Opens a stream and sends the subscription. Returns the request sender and the responses.
async fn open(
    channel: Channel,
    api: Api,
    state: &mut SotwState,
) -> Result<(mpsc::Sender<DiscoveryRequest>, tonic::Streaming<DiscoveryResponse>), tonic::Status> {
    let (tx, rx) = mpsc::channel(16);
    for r in state.start_stream() {
        tx.try_send(r).expect("the channel has room for the first requests");
    }
    let requests = ReceiverStream::new(rx);
    let stream = match api {
        Api::Lds => {
            ListenerDiscoveryServiceClient::new(channel)
                .max_decoding_message_size(MAX_MESSAGE)
                .stream_listeners(requests)
                .await?
        }
        Api::Ads => {
            AggregatedDiscoveryServiceClient::new(channel)
                .max_decoding_message_size(MAX_MESSAGE)
                .stream_aggregated_resources(requests)
                .await?
        }
    };
    Ok((tx, stream.into_inner()))
}

fn status_error(target: &GrpcTarget, api: Api, s: &tonic::Status) -> Error {
    let at = target.endpoint.to_string();
    if s.code() == tonic::Code::Unimplemented {
        let (other, flag) = match api {
            Api::Lds => ("ADS", "--type ads"),
            Api::Ads => ("per-type LDS", "--type lds"),
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

fn new_state(options: &Options) -> SotwState {
    let mut state = SotwState::new(&options.node_id);
    state.subscribe(LISTENER_TYPE_URL, Vec::new());
    state
}

/// Subscribes, waits for the first Listener response, ACKs it, and closes the stream politely
/// (half-close, then waits briefly for the server to end it) so the ACK is delivered.
pub async fn fetch_once(target: &GrpcTarget, options: &Options) -> Result<Response, Error> {
    let at = target.endpoint.to_string();
    let timeout = options.timeout;
    let mut state = new_state(options);
    let work = async {
        let channel = channel(target, timeout).await?;
        let (tx, mut stream) =
            open(channel, options.api, &mut state).await.map_err(|s| status_error(target, options.api, &s))?;
        // Problems of responses before the Listener one (another type) are not lost.
        let mut earlier = Vec::new();
        loop {
            match stream.message().await {
                Ok(Some(resp)) => {
                    let mut r = state.on_response(resp);
                    let _ = tx.send(r.ack.clone()).await;
                    earlier.append(&mut r.problems);
                    if r.type_url == LISTENER_TYPE_URL {
                        r.problems = std::mem::take(&mut earlier);
                        drop(tx);
                        let _ = tokio::time::timeout(Duration::from_millis(500), async {
                            while let Ok(Some(_)) = stream.message().await {}
                        })
                        .await;
                        return Ok(r);
                    }
                }
                Ok(None) => return Err(Error::Closed { at: at.clone() }),
                Err(s) => return Err(status_error(target, options.api, &s)),
            }
        }
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => {
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
            Err(Error::Timeout { at, what: "the first Listener response", secs: timeout.as_secs() })
        }
    }
}

/// Subscribes and reports every response (ACKed) until `events` is closed, reconnecting with
/// exponential backoff and jitter whenever the stream or the connection fails. Returns when the
/// receiver is gone, or with the error when retrying cannot help (bad TLS setup, permission).
pub async fn watch(target: &GrpcTarget, options: &Options, events: mpsc::Sender<Event>) -> Result<(), Error> {
    let at = target.endpoint.to_string();
    let mut state = new_state(options);
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let mut backoff = Backoff::new(options.backoff_initial, options.backoff_max, seed);
    loop {
        let error = match channel(target, options.timeout).await {
            Err(e) => e,
            Ok(channel) => match open(channel, options.api, &mut state).await {
                Err(s) => status_error(target, options.api, &s),
                Ok((tx, mut stream)) => {
                    if events.send(Event::Connected).await.is_err() {
                        return Ok(());
                    }
                    loop {
                        match stream.message().await {
                            Ok(Some(resp)) => {
                                backoff.reset();
                                let r = state.on_response(resp);
                                let _ = tx.send(r.ack.clone()).await;
                                if events.send(Event::Response(Box::new(r))).await.is_err() {
                                    return Ok(());
                                }
                            }
                            Ok(None) => break Error::Closed { at: at.clone() },
                            Err(s) => break status_error(target, options.api, &s),
                        }
                    }
                }
            },
        };
        state.on_disconnect();
        if !error.is_transient() {
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
