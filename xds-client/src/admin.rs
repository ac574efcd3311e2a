//! Envoy's admin API over HTTP/1.1, on TCP or on a Unix socket (Cilium's `admin.sock`).
//!
//! The body is appended frame by frame into one buffer (sized from Content-Length when Envoy
//! sends one; it streams big dumps chunked): a 100 MB dump is read once into the bytes the
//! loader then uses as its text, with no intermediate copies. No more than the size limit
//! (`--max-bytes`) is ever buffered: a Content-Length over it is refused before the body is
//! read, and a chunked body is dropped, with the connection, at the frame that crosses it. The
//! timeout bounds the wait for the connection, for the response head and for each piece of the
//! body, so a slow but moving 100 MB transfer completes and a stalled one does not hang.

use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

use crate::error::chain_text;
use crate::{AdminTarget, Detected, Endpoint, Error};

/// Any host works for Envoy's admin; Cilium sends this one.
const HOST: &str = "envoy-admin";

/// What is kept of the body of an error answer: enough for Envoy's message.
const ERROR_BODY: usize = 2000;

trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

async fn dial(endpoint: &Endpoint, timeout: Duration) -> Result<Box<dyn Io>, Error> {
    let at = endpoint.to_string();
    let connect = async {
        Ok::<Box<dyn Io>, std::io::Error>(match endpoint {
            Endpoint::Tcp { authority } => {
                let s = TcpStream::connect(authority.as_str()).await?;
                s.set_nodelay(true)?;
                Box::new(s)
            }
            Endpoint::Unix { path } => Box::new(UnixStream::connect(path).await?),
        })
    };
    match tokio::time::timeout(timeout, connect).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(Error::io(at, e)),
        Err(_) => Err(Error::Timeout { at, what: "a connection", after: timeout }),
    }
}

/// GET `target.path_and_query` and return the body, of at most `max_bytes` bytes (a larger one is
/// [`Error::TooLarge`]). Non-200 answers are errors with Envoy's text.
pub async fn fetch(target: &AdminTarget, timeout: Duration, max_bytes: usize) -> Result<Vec<u8>, Error> {
    let at = target.endpoint.to_string();
    let wrong = |detail: String| Error::WrongProtocol {
        at: at.clone(),
        detail: format!(
            "does not answer HTTP/1.1 ({detail}): is it an xDS (gRPC) socket? Attach to it with grpc+unix:// or grpc://"
        ),
    };
    let host = match &target.endpoint {
        Endpoint::Tcp { authority } => authority.as_str(),
        Endpoint::Unix { .. } => HOST,
    };
    // The path is checked when an address is parsed; one built by hand may still be wrong.
    let req = hyper::Request::get(target.path_and_query.as_str())
        .header(hyper::header::HOST, host)
        .header(hyper::header::ACCEPT, "application/json")
        .body(Empty::<Bytes>::new())
        .map_err(|e| Error::Address { address: target.path_and_query.clone(), reason: chain_text(&e) })?;
    let io = dial(&target.endpoint, timeout).await?;
    let head = async {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
        tokio::spawn(async move {
            // Errors surface through the request; the connection task has nothing to add.
            let _ = conn.await;
        });
        sender.send_request(req).await
    };
    let resp = match tokio::time::timeout(timeout, head).await {
        Err(_) => return Err(Error::Timeout { at, what: "the admin response", after: timeout }),
        // Before any response: an I/O error with a name (refused, ...) is that; anything else is
        // a peer that did not answer HTTP/1.1 (an HTTP/2-only server cancels or garbles it).
        Ok(Err(e)) => {
            return Err(match Error::from_chain(&at, &e) {
                Some(io) if !matches!(io, Error::Io { .. }) => io,
                _ => wrong(chain_text(&e)),
            });
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    let length = resp.headers().get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let too_large = |size: usize, at_least: bool| Error::TooLarge {
        at: at.clone(),
        what: "the admin response",
        size,
        at_least,
        limit: max_bytes,
    };
    // An error answer is read only as far as its message.
    let limit = if status.is_success() { max_bytes } else { ERROR_BODY };
    if let Some(n) = length
        && n > max_bytes
        && status.is_success()
    {
        return Err(too_large(n, false));
    }
    let mut body = resp.into_body();
    let mut buf = Vec::with_capacity(length.unwrap_or(1 << 20).min(limit));
    loop {
        let frame = match tokio::time::timeout(timeout, body.frame()).await {
            Err(_) => {
                return Err(Error::Timeout { at: at.clone(), what: "the rest of the admin response", after: timeout });
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(Error::Body { at: at.clone(), detail: chain_text(&e) }),
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else { continue };
        if buf.len() + data.len() > limit {
            if status.is_success() {
                // Dropping the body drops the connection: the rest is never read.
                return Err(too_large(buf.len() + data.len(), true));
            }
            buf.extend_from_slice(&data[..limit - buf.len()]);
            break;
        }
        buf.extend_from_slice(&data);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&buf).trim().to_owned();
        return Err(Error::Status { at, status: status.as_u16(), body: text });
    }
    Ok(buf)
}

/// Asks a socket one HTTP/1.1 question and looks at the first bytes of the answer.
pub async fn probe(endpoint: &Endpoint, timeout: Duration) -> Result<Detected, Error> {
    let at = endpoint.to_string();
    let mut io = dial(endpoint, timeout).await?;
    let ask = format!("GET /ready HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n");
    io.write_all(ask.as_bytes()).await.map_err(|e| Error::io(&at, e))?;
    let mut head = [0u8; 8];
    let mut n = 0;
    let read = async {
        while n < head.len() {
            match io.read(&mut head[n..]).await {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
    };
    // An HTTP/2-only server answers at once (SETTINGS, GOAWAY) or closes; silence is a busy
    // or stuck server, not an answer.
    if tokio::time::timeout(timeout, read).await.is_err() && n == 0 {
        return Err(Error::Timeout { at, what: "an answer to an HTTP/1.1 probe", after: timeout });
    }
    Ok(if head[..n].starts_with(b"HTTP/1.") { Detected::Admin } else { Detected::Grpc })
}
