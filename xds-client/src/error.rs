//! What can go wrong while attaching, in words an operator can act on.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid address {address:?}: {reason}")]
    Address { address: String, reason: String },
    #[error(
        "permission denied on {at}: the socket is only for its owner and group \
         (Cilium: run as root or with group 1337, the proxy GID)"
    )]
    PermissionDenied { at: String },
    #[error("connection refused by {at}: nothing is listening there (is the proxy or its control plane running?)")]
    Refused { at: String },
    #[error("no such socket: {at}")]
    NotFound { at: String },
    #[error("{at} is a file, not a socket: `xdsck check {at}` reads a file")]
    NotASocket { at: String },
    #[error("{at} {detail}")]
    WrongProtocol { at: String, detail: String },
    #[error("timed out after {} waiting for {what} from {at}", seconds(*after))]
    Timeout { at: String, what: &'static str, after: std::time::Duration },
    #[error("{at} answered HTTP {status}: {body}")]
    Status { at: String, status: u16, body: String },
    #[error("TLS setup: {0}")]
    Tls(String),
    #[error("the xDS stream from {at} failed: {detail}")]
    Stream { at: String, detail: String },
    #[error("the xDS server at {at} closed the stream")]
    Closed { at: String },
    #[error("reading the admin response from {at} failed: {detail}")]
    Body { at: String, detail: String },
    /// A response over the size limit. `at_least`: the reader stopped at the limit, so `size` is
    /// only what had arrived by then.
    #[error("{}", too_large(what, at, *size, *at_least, *limit))]
    TooLarge { at: String, what: &'static str, size: usize, at_least: bool, limit: usize },
    #[error("{at}: {source}")]
    Io {
        at: String,
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Maps an I/O error on `at` to the clear variants where there is one.
    pub fn io(at: impl Into<String>, e: io::Error) -> Error {
        let at = at.into();
        match e.kind() {
            io::ErrorKind::PermissionDenied => Error::PermissionDenied { at },
            io::ErrorKind::ConnectionRefused => Error::Refused { at },
            io::ErrorKind::NotFound => Error::NotFound { at },
            _ => Error::Io { at, source: e },
        }
    }

    /// The first I/O error in a chain of sources (tonic and hyper wrap them deeply).
    pub(crate) fn from_chain(at: &str, e: &(dyn std::error::Error + 'static)) -> Option<Error> {
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(err) = cur {
            if let Some(io) = err.downcast_ref::<io::Error>() {
                return Some(Error::io(at, io::Error::new(io.kind(), io.to_string())));
            }
            cur = err.source();
        }
        None
    }

    /// A short fixed name for the kind of failure (a metrics label: never the address or a
    /// message, which vary without bound).
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Address { .. } => "address",
            Error::PermissionDenied { .. } => "permission_denied",
            Error::Refused { .. } => "refused",
            Error::NotFound { .. } => "not_found",
            Error::NotASocket { .. } => "not_a_socket",
            Error::WrongProtocol { .. } => "wrong_protocol",
            Error::Timeout { .. } => "timeout",
            Error::Status { .. } => "http_status",
            Error::Tls(_) => "tls",
            Error::Stream { .. } => "stream",
            Error::Closed { .. } => "closed",
            Error::Body { .. } => "body",
            Error::TooLarge { .. } => "too_large",
            Error::Io { .. } => "io",
        }
    }

    /// Whether trying again later may help (the server restarting), as opposed to a setup error.
    pub fn is_transient(&self) -> bool {
        !matches!(
            self,
            Error::Address { .. } | Error::Tls(_) | Error::PermissionDenied { .. } | Error::NotASocket { .. }
        )
    }
}

fn too_large(what: &str, at: &str, size: usize, at_least: bool, limit: usize) -> String {
    let size = if at_least { format!("more than {limit}") } else { size.to_string() };
    format!(
        "{what} from {at} is {size} bytes, over the size limit of {limit} bytes; \
         raise the limit with --max-bytes N if it is legitimate"
    )
}

/// The full text of an error and its sources, `a: b: c`.
pub(crate) fn chain_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        cur = s.source();
    }
    out
}

/// `10 s`, `0.5 s`: `--timeout` as the user gave it (whole seconds were the only precision once,
/// and `--timeout 0.5` read "after 0 s").
fn seconds(d: std::time::Duration) -> String {
    if d.subsec_nanos() == 0 { format!("{} s", d.as_secs()) } else { format!("{} s", d.as_secs_f64()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_given() {
        let timeout = |ms| Error::Timeout { at: "x".into(), what: "y", after: std::time::Duration::from_millis(ms) };
        assert_eq!(timeout(10_000).to_string(), "timed out after 10 s waiting for y from x");
        assert_eq!(timeout(500).to_string(), "timed out after 0.5 s waiting for y from x");
        assert_eq!(timeout(1_250).to_string(), "timed out after 1.25 s waiting for y from x");
    }
}
