//! A small HTTP/1.1 server on real sockets (TCP or a Unix socket) standing in for Envoy's admin
//! API where a real Envoy cannot be made to misbehave: it answers every request with what the
//! test chose — a body with Content-Length or chunked (as Envoy streams a big /config_dump), a
//! connection cut in the middle of the body, a stall before or during the answer, an error
//! status. It counts the body bytes it managed to write, so a test can tell how far a client
//! read before it hung up. xdsck's own client (hyper) is what talks to it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub use super::xds_server::Bind;

/// Pieces the body is written in (and counted by).
const PIECE: usize = 256 << 10;

/// How the server answers.
#[derive(Debug, Clone)]
pub enum Answer {
    /// 200 with a Content-Length.
    Length(Arc<Vec<u8>>),
    /// 200, chunked, in pieces of 256 KiB.
    Chunked(Arc<Vec<u8>>),
    /// 200 announcing the Content-Length of the whole body, then the connection is closed after
    /// this many bytes of it.
    CutAfter(Arc<Vec<u8>>, usize),
    /// 200, chunked, this many bytes of the body, then nothing more (the connection stays open).
    StallAfter(Arc<Vec<u8>>, usize),
    /// The request is read and never answered.
    Silent,
    /// This status with this body (Content-Length).
    Status(u16, Arc<Vec<u8>>),
}

#[derive(Debug)]
struct Shared {
    answer: Mutex<Answer>,
    requests: Mutex<Vec<String>>,
    written: AtomicU64,
    connections: AtomicUsize,
}

/// A running server; stopped on drop.
#[derive(Debug)]
pub struct AdminServer {
    shared: Arc<Shared>,
    bind: Bind,
    task: tokio::task::JoinHandle<()>,
}

impl AdminServer {
    /// Starts answering on `bind` (TCP port 0 picks a free port). Needs a tokio runtime.
    pub async fn start(bind: Bind, answer: Answer) -> AdminServer {
        let shared = Arc::new(Shared {
            answer: Mutex::new(answer),
            requests: Mutex::new(Vec::new()),
            written: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
        });
        let s = shared.clone();
        let (bind, task) = match bind {
            Bind::Tcp(addr) => {
                let l = tokio::net::TcpListener::bind(addr).await.expect("bind the admin server");
                let bind = Bind::Tcp(l.local_addr().unwrap());
                let task = tokio::spawn(async move {
                    while let Ok((conn, _)) = l.accept().await {
                        tokio::spawn(serve(s.clone(), conn));
                    }
                });
                (bind, task)
            }
            Bind::Unix(path) => {
                let _ = std::fs::remove_file(&path);
                let l = tokio::net::UnixListener::bind(&path).expect("bind the admin socket");
                let task = tokio::spawn(async move {
                    while let Ok((conn, _)) = l.accept().await {
                        tokio::spawn(serve(s.clone(), conn));
                    }
                });
                (Bind::Unix(path), task)
            }
        };
        AdminServer { shared, bind, task }
    }

    /// `http://127.0.0.1:PORT` or `unix:///path`.
    pub fn url(&self) -> String {
        match &self.bind {
            Bind::Tcp(a) => format!("http://{a}"),
            Bind::Unix(p) => format!("unix://{}", p.display()),
        }
    }

    /// Answers the next requests with `answer`.
    pub fn set(&self, answer: Answer) {
        *self.shared.answer.lock().unwrap() = answer;
    }

    /// The request lines received so far (`GET /config_dump HTTP/1.1`).
    pub fn requests(&self) -> Vec<String> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Body bytes written to clients so far (what the kernel took, not what a client read).
    pub fn body_bytes_written(&self) -> u64 {
        self.shared.written.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Resets [`Self::body_bytes_written`].
    pub fn reset_written(&self) {
        self.shared.written.store(0, Ordering::SeqCst);
    }
}

impl Drop for AdminServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(shared: Arc<Shared>, mut conn: impl AsyncRead + AsyncWrite + Unpin) {
    shared.connections.fetch_add(1, Ordering::SeqCst);
    // The request head; there is no request body.
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > 64 << 10 {
            return;
        }
    }
    let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_owned();
    shared.requests.lock().unwrap().push(line);
    let answer = shared.answer.lock().unwrap().clone();
    let written = &shared.written;
    let _ = match answer {
        Answer::Length(body) => length(&mut conn, 200, &body, body.len(), written).await,
        Answer::Status(status, body) => length(&mut conn, status, &body, body.len(), written).await,
        Answer::CutAfter(body, cut) => length(&mut conn, 200, &body, cut, written).await,
        Answer::Chunked(body) => chunked(&mut conn, &body, body.len(), true, written).await,
        Answer::StallAfter(body, after) => {
            let _ = chunked(&mut conn, &body, after, false, written).await;
            hold(&mut conn).await;
            Ok(())
        }
        Answer::Silent => {
            hold(&mut conn).await;
            Ok(())
        }
    };
    let _ = conn.shutdown().await;
}

/// Announces the whole body's length and writes `send` bytes of it.
async fn length(
    conn: &mut (impl AsyncWrite + Unpin),
    status: u16,
    body: &[u8],
    send: usize,
    written: &AtomicU64,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await?;
    for piece in body[..send.min(body.len())].chunks(PIECE) {
        conn.write_all(piece).await?;
        written.fetch_add(piece.len() as u64, Ordering::SeqCst);
    }
    conn.flush().await
}

/// Writes `send` bytes of the body in chunks, and the last chunk if `finish`.
async fn chunked(
    conn: &mut (impl AsyncWrite + Unpin),
    body: &[u8],
    send: usize,
    finish: bool,
    written: &AtomicU64,
) -> std::io::Result<()> {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    conn.write_all(head.as_bytes()).await?;
    for piece in body[..send.min(body.len())].chunks(PIECE) {
        conn.write_all(format!("{:x}\r\n", piece.len()).as_bytes()).await?;
        conn.write_all(piece).await?;
        conn.write_all(b"\r\n").await?;
        written.fetch_add(piece.len() as u64, Ordering::SeqCst);
    }
    if finish {
        conn.write_all(b"0\r\n\r\n").await?;
    }
    conn.flush().await
}

/// Keeps the connection open, saying nothing, until the client goes.
async fn hold(conn: &mut (impl AsyncRead + Unpin)) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = conn.read(&mut buf).await {
        if n == 0 {
            return;
        }
    }
}
