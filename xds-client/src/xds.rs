//! The tokio driver around [`crate::protocol::SotwState`]: dial, stream, ACK, reconnect.

use std::collections::BTreeMap;
use std::time::Duration;

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::envoy::service::listener::v3::listener_discovery_service_client::ListenerDiscoveryServiceClient;
use tokio::sync::mpsc;
use tokio::time::Instant;
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
    /// Bounds dialing, and the wait for the first Listener response ([`fetch_once`]; in
    /// [`watch`], until one has arrived).
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
    /// A stream is open and the subscription sent.
    Connected,
    /// A response, already ACKed.
    Response(Box<Response>),
    /// The stream or the connection failed; the next attempt follows after `retry_in`.
    Disconnected { error: Error, retry_in: Duration },
}

/// The default [`Options::max_bytes`], 1 GiB: xdsck-core's default input limit.
pub const DEFAULT_MAX_BYTES: usize = 1 << 30;

/// Requests queued for the stream; more ACKs wait in [`Acks`], one per type.
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

/// Requests on their way to the server. A request waits here, not in the stream, when the
/// stream has no room (a server that sends faster than it reads); the ACK of a later response of
/// the same type replaces it, since a server heeds only the nonce it sent last. So xdsck always
/// goes on reading responses — a server flooding responses while not reading requests cannot
/// block it — and what waits is at most one request per type.
#[derive(Debug)]
struct Acks {
    tx: mpsc::Sender<DiscoveryRequest>,
    waiting: BTreeMap<String, DiscoveryRequest>,
}

impl Acks {
    async fn push(&mut self, request: DiscoveryRequest) {
        self.waiting.insert(request.type_url.clone(), request);
        self.send_ready();
        if !self.waiting.is_empty() {
            // The stream's task (same runtime) may just not have run yet while responses keep
            // coming: give it a turn before the next ACK of this type replaces this one.
            tokio::task::yield_now().await;
            self.send_ready();
        }
    }

    /// Moves what fits into the stream.
    fn send_ready(&mut self) {
        while let Some(entry) = self.waiting.first_entry() {
            match self.tx.try_reserve() {
                Ok(permit) => permit.send(entry.remove()),
                Err(mpsc::error::TrySendError::Full(())) => return,
                // The request stream is gone; the response stream reports why.
                Err(mpsc::error::TrySendError::Closed(())) => return self.waiting.clear(),
            }
        }
    }

    /// Waits for room in the stream and sends one waiting request (cancel-safe: nothing is taken
    /// before there is room). Pending forever when nothing waits.
    async fn send_one(&mut self) {
        if self.waiting.is_empty() {
            return std::future::pending().await;
        }
        match self.tx.reserve().await {
            Ok(permit) => {
                if let Some((_, r)) = self.waiting.pop_first() {
                    permit.send(r);
                }
            }
            Err(_) => self.waiting.clear(),
        }
    }

    /// Sends everything still waiting.
    async fn flush(&mut self) {
        while !self.waiting.is_empty() {
            self.send_one().await;
        }
    }
}

/// Opens a stream and sends the subscription. Returns the requests and the responses.
async fn open(
    channel: Channel,
    options: &Options,
    state: &mut SotwState,
) -> Result<(Acks, tonic::Streaming<DiscoveryResponse>), tonic::Status> {
    let (tx, rx) = mpsc::channel(REQUEST_QUEUE);
    let mut acks = Acks { tx, waiting: BTreeMap::new() };
    for r in state.start_stream() {
        acks.push(r).await;
    }
    let requests = ReceiverStream::new(rx);
    let stream = match options.api {
        Api::Lds => {
            ListenerDiscoveryServiceClient::new(channel)
                .max_decoding_message_size(options.max_bytes)
                .stream_listeners(requests)
                .await?
        }
        Api::Ads => {
            AggregatedDiscoveryServiceClient::new(channel)
                .max_decoding_message_size(options.max_bytes)
                .stream_aggregated_resources(requests)
                .await?
        }
    };
    Ok((acks, stream.into_inner()))
}

fn status_error(target: &GrpcTarget, options: &Options, s: &tonic::Status) -> Error {
    let at = target.endpoint.to_string();
    if let Some(e) = too_large(&at, options.max_bytes, s) {
        return e;
    }
    if s.code() == tonic::Code::Unimplemented {
        let (other, flag) = match options.api {
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
        let (mut acks, mut stream) =
            open(channel, options, &mut state).await.map_err(|s| status_error(target, options, &s))?;
        // Problems of responses before the Listener one (another type) are not lost; each kind
        // is reported once by the state machine, so this stays short.
        let mut earlier = Vec::new();
        loop {
            let message = tokio::select! {
                () = acks.send_one() => continue,
                m = stream.message() => m,
            };
            match message {
                Ok(Some(resp)) => {
                    let mut r = state.on_response(resp);
                    acks.push(r.ack.clone()).await;
                    earlier.append(&mut r.problems);
                    if r.type_url == LISTENER_TYPE_URL {
                        r.problems = std::mem::take(&mut earlier);
                        // Deliver the ACK, half-close, and give the server a moment to end the
                        // stream, reading (and dropping) whatever it still sends.
                        let _ = tokio::time::timeout(Duration::from_millis(500), async {
                            let drain = async { while let Ok(Some(_)) = stream.message().await {} };
                            tokio::pin!(drain);
                            tokio::select! {
                                () = acks.flush() => {}
                                () = &mut drain => return,
                            }
                            drop(acks);
                            drain.await;
                        })
                        .await;
                        return Ok(r);
                    }
                }
                Ok(None) => return Err(Error::Closed { at: at.clone() }),
                Err(s) => return Err(status_error(target, options, &s)),
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
            Err(Error::Timeout { at, what: "the first Listener response", after: timeout })
        }
    }
}

/// Subscribes and reports every response (ACKed) until `events` is closed, reconnecting with
/// exponential backoff and jitter whenever the stream or the connection fails, and when no
/// Listener response has come yet `options.timeout` after a stream opened (once one has, a quiet
/// stream is a control plane with nothing new to say: a server may skip resending the version a
/// new stream presents). Returns when the receiver is gone, or with the error when retrying
/// cannot help (bad TLS setup, permission).
pub async fn watch(target: &GrpcTarget, options: &Options, events: mpsc::Sender<Event>) -> Result<(), Error> {
    let at = target.endpoint.to_string();
    let mut state = new_state(options);
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let mut backoff = Backoff::new(options.backoff_initial, options.backoff_max, seed);
    let mut have_listeners = false;
    loop {
        let error = match channel(target, options.timeout).await {
            Err(e) => e,
            Ok(channel) => match open(channel, options, &mut state).await {
                Err(s) => status_error(target, options, &s),
                Ok((mut acks, mut stream)) => {
                    if events.send(Event::Connected).await.is_err() {
                        return Ok(());
                    }
                    let deadline = Instant::now() + options.timeout;
                    loop {
                        let message = tokio::select! {
                            () = acks.send_one() => continue,
                            () = tokio::time::sleep_until(deadline), if !have_listeners => {
                                break Error::Timeout {
                                    at: at.clone(),
                                    what: "the first Listener response",
                                    after: options.timeout,
                                };
                            }
                            m = stream.message() => m,
                        };
                        match message {
                            Ok(Some(resp)) => {
                                backoff.reset();
                                let r = state.on_response(resp);
                                acks.push(r.ack.clone()).await;
                                have_listeners |= r.type_url == LISTENER_TYPE_URL;
                                if events.send(Event::Response(Box::new(r))).await.is_err() {
                                    return Ok(());
                                }
                            }
                            Ok(None) => break Error::Closed { at: at.clone() },
                            Err(s) => break status_error(target, options, &s),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(type_url: &str, nonce: &str) -> DiscoveryRequest {
        DiscoveryRequest { type_url: type_url.into(), response_nonce: nonce.into(), ..DiscoveryRequest::default() }
    }

    #[tokio::test]
    async fn acks_wait_one_per_type_while_the_stream_is_full_and_the_latest_is_sent() {
        let (tx, mut rx) = mpsc::channel(1);
        let mut acks = Acks { tx, waiting: BTreeMap::new() };
        // Nobody reads: the first fits, the rest wait, the latest of each type only.
        for (t, n) in [("A", "1"), ("A", "2"), ("B", "3"), ("A", "4"), ("B", "5")] {
            acks.push(ack(t, n)).await;
        }
        assert_eq!(rx.try_recv().unwrap().response_nonce, "1");
        assert_eq!(acks.waiting.len(), 2);
        // Room again: what waited goes, in order of type.
        acks.send_one().await;
        assert_eq!(rx.try_recv().unwrap().response_nonce, "4");
        acks.send_one().await;
        assert_eq!(rx.try_recv().unwrap().response_nonce, "5");
        assert!(acks.waiting.is_empty());
        // While the reader keeps up, every ACK goes, none replaced.
        for n in 0..100 {
            acks.push(ack("A", &n.to_string())).await;
            assert_eq!(rx.try_recv().unwrap().response_nonce, n.to_string());
        }
        // The stream gone: nothing waits, nothing blocks.
        drop(rx);
        acks.push(ack("A", "x")).await;
        acks.flush().await;
        assert!(acks.waiting.is_empty());
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
