//! xdsck-xds-client: fetch what a running Envoy serves, without disturbing it.
//!
//! Two ways in, both read-only:
//! * the admin API's `/config_dump` over HTTP/1.1, on TCP (`http://127.0.0.1:9901`) or on a Unix
//!   socket (`unix:///var/run/cilium/envoy/sockets/admin.sock`, as Cilium runs it) — [`admin`];
//! * an xDS observer over gRPC (`grpc://`, `grpcs://`, `grpc+unix://`) subscribing to the
//!   Listeners, the route tables they name and the Clusters — per-type streams or ADS, state of
//!   the world or incremental (delta, on ADS) — which ACKs everything and never NACKs — [`xds`],
//!   with the protocols in the sans-io [`protocol`] and what is held, and when it is whole, in
//!   the sans-io [`observe`].
//!
//! A bare socket path is probed: an HTTP/1.1 answer means admin, anything else gRPC.
//! No checks happen here; the caller hands the bytes or the resources to xdsck-core.
//!
//! ```
//! use xdsck_xds_client::Target;
//! let t: Target = "grpc+unix:///var/run/cilium/envoy/sockets/xds.sock".parse().unwrap();
//! assert!(matches!(t, Target::Grpc(_)));
//! let t: Target = "unix:///run/admin.sock?resource=dynamic_listeners".parse().unwrap();
//! assert_eq!(t.to_string(), "unix:///run/admin.sock");
//! ```

pub mod admin;
mod error;
pub mod observe;
pub mod protocol;
pub mod xds;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

pub use error::Error;

/// Where to attach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Envoy's admin API: GET `/config_dump`.
    Admin(AdminTarget),
    /// An xDS server (or Envoy's own xDS socket, as Cilium's agent serves it).
    Grpc(GrpcTarget),
    /// A bare socket path: admin or gRPC, decided by [`detect`].
    Socket(PathBuf),
}

/// A transport: TCP to `host:port`, or a Unix socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { authority: String },
    Unix { path: PathBuf },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminTarget {
    pub endpoint: Endpoint,
    /// Path and query sent: `/config_dump` plus whatever query the address carried.
    pub path_and_query: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcTarget {
    pub endpoint: Endpoint,
    /// `Some` for `grpcs://`.
    pub tls: Option<TlsOptions>,
}

/// TLS for `grpcs://`: the CA to trust (the system's roots when absent), an optional client
/// certificate and key, and the name to verify when it differs from the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub server_name: Option<String>,
}

impl FromStr for Target {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = |why: &str| Error::Address { address: s.to_owned(), reason: why.to_owned() };
        let authority = |rest: &str| -> Result<String, Error> {
            let a = rest.split(['/', '?']).next().unwrap_or_default();
            if a.is_empty() || !a.contains(':') {
                return Err(bad("expected host:port"));
            }
            Ok(a.to_owned())
        };
        let config_dump_path = |rest: &str| -> Result<String, Error> {
            let (path, query) = match rest.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (rest, None),
            };
            let path = if path.is_empty() || path == "/" { "/config_dump" } else { path };
            let path_and_query = match query {
                Some(q) if !q.is_empty() => format!("{path}?{q}"),
                _ => path.to_owned(),
            };
            // What the request line can carry (no spaces, no control characters).
            match hyper::http::uri::PathAndQuery::try_from(path_and_query.as_str()) {
                Ok(_) => Ok(path_and_query),
                Err(_) => Err(bad("the path and query must be URL-encoded (no spaces, no control characters)")),
            }
        };
        if let Some(rest) = s.strip_prefix("grpc+unix://") {
            if !rest.starts_with('/') {
                return Err(bad("grpc+unix:// needs an absolute path: grpc+unix:///path/to/xds.sock"));
            }
            return Ok(Target::Grpc(GrpcTarget { endpoint: Endpoint::Unix { path: rest.into() }, tls: None }));
        }
        if let Some(rest) = s.strip_prefix("grpc://") {
            let endpoint = Endpoint::Tcp { authority: authority(rest)? };
            return Ok(Target::Grpc(GrpcTarget { endpoint, tls: None }));
        }
        if let Some(rest) = s.strip_prefix("grpcs://") {
            let endpoint = Endpoint::Tcp { authority: authority(rest)? };
            return Ok(Target::Grpc(GrpcTarget { endpoint, tls: Some(TlsOptions::default()) }));
        }
        if let Some(rest) = s.strip_prefix("unix://") {
            if !rest.starts_with('/') {
                return Err(bad("unix:// needs an absolute path: unix:///path/to/admin.sock"));
            }
            let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
            let path_and_query = config_dump_path(&format!("?{query}"))?;
            return Ok(Target::Admin(AdminTarget { endpoint: Endpoint::Unix { path: path.into() }, path_and_query }));
        }
        if let Some(rest) = s.strip_prefix("http://") {
            let a = authority(rest)?;
            let path_and_query = config_dump_path(&rest[a.len()..])?;
            return Ok(Target::Admin(AdminTarget { endpoint: Endpoint::Tcp { authority: a }, path_and_query }));
        }
        if s.starts_with("https://") {
            return Err(bad("the admin API is plain HTTP; for xDS over TLS use grpcs://"));
        }
        if s.contains("://") {
            return Err(bad("use grpc://, grpcs://, grpc+unix://, http://, unix:// or a socket path"));
        }
        if s.is_empty() {
            return Err(bad("empty"));
        }
        // `127.0.0.1:9901`, `[::1]:15000`, `localhost:9901`: an address, not a socket path.
        if !s.contains('/')
            && let Some((host, port)) = s.rsplit_once(':')
            && !host.is_empty()
            && port.parse::<u16>().is_ok()
        {
            return Err(bad(&format!(
                "a host:port needs a scheme: http://{s} for Envoy's admin API, grpc://{s} for an xDS server"
            )));
        }
        Ok(Target::Socket(s.into()))
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp { authority } => f.write_str(authority),
            Endpoint::Unix { path } => write!(f, "{}", path.display()),
        }
    }
}

impl fmt::Display for Target {
    /// The address without the query: how sources and messages name it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Admin(AdminTarget { endpoint: Endpoint::Tcp { authority }, .. }) => write!(f, "http://{authority}"),
            Target::Admin(AdminTarget { endpoint: Endpoint::Unix { path }, .. }) => {
                write!(f, "unix://{}", path.display())
            }
            Target::Grpc(GrpcTarget { endpoint: Endpoint::Unix { path }, .. }) => {
                write!(f, "grpc+unix://{}", path.display())
            }
            Target::Grpc(GrpcTarget { endpoint: Endpoint::Tcp { authority }, tls }) => {
                write!(f, "{}://{authority}", if tls.is_some() { "grpcs" } else { "grpc" })
            }
            Target::Socket(path) => write!(f, "{}", path.display()),
        }
    }
}

/// What a bare socket speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    /// HTTP/1.1: Envoy's admin API.
    Admin,
    /// Not HTTP/1.1 (an HTTP/2-only server, as gRPC is): xDS.
    Grpc,
}

/// Resolves a bare socket path by asking it an HTTP/1.1 question; other targets are returned
/// as they are. Envoy's admin answers `HTTP/1.1 ...`; a gRPC server refuses the request as a bad
/// HTTP/2 preface (a GOAWAY frame or a closed connection).
pub async fn resolve(target: Target, timeout: std::time::Duration) -> Result<Target, Error> {
    let Target::Socket(path) = target else { return Ok(target) };
    // A file given where a socket was meant: `check` reads files.
    if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
        return Err(Error::NotASocket { at: path.display().to_string() });
    }
    let endpoint = Endpoint::Unix { path };
    Ok(match admin::probe(&endpoint, timeout).await? {
        Detected::Admin => Target::Admin(AdminTarget { endpoint, path_and_query: "/config_dump".to_owned() }),
        Detected::Grpc => Target::Grpc(GrpcTarget { endpoint, tls: None }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Target {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn a_host_and_port_without_a_scheme_says_which_to_add() {
        for s in ["127.0.0.1:9901", "localhost:15000", "[::1]:9901"] {
            let e = s.parse::<Target>().unwrap_err().to_string();
            assert!(e.contains(&format!("http://{s}")) && e.contains(&format!("grpc://{s}")), "{e}");
        }
        assert_eq!(t("admin.sock"), Target::Socket("admin.sock".into()));
    }

    #[test]
    fn addresses_parse() {
        assert_eq!(
            t("unix:///run/a.sock"),
            Target::Admin(AdminTarget {
                endpoint: Endpoint::Unix { path: "/run/a.sock".into() },
                path_and_query: "/config_dump".into()
            })
        );
        assert_eq!(
            t("unix:///run/a.sock?resource=dynamic_listeners&include_eds"),
            Target::Admin(AdminTarget {
                endpoint: Endpoint::Unix { path: "/run/a.sock".into() },
                path_and_query: "/config_dump?resource=dynamic_listeners&include_eds".into()
            })
        );
        let Target::Admin(a) = t("http://127.0.0.1:9901/config_dump?resource=dynamic_listeners") else { panic!() };
        assert_eq!(a.path_and_query, "/config_dump?resource=dynamic_listeners");
        assert_eq!(a.endpoint, Endpoint::Tcp { authority: "127.0.0.1:9901".into() });
        let Target::Admin(a) = t("http://[::1]:9901") else { panic!() };
        assert_eq!(a.path_and_query, "/config_dump");
        assert!(matches!(t("grpc://localhost:18000"), Target::Grpc(GrpcTarget { tls: None, .. })));
        assert!(matches!(t("grpcs://cp:443"), Target::Grpc(GrpcTarget { tls: Some(_), .. })));
        assert_eq!(
            t("/var/run/cilium/envoy/sockets/admin.sock"),
            Target::Socket("/var/run/cilium/envoy/sockets/admin.sock".into())
        );
        for bad in [
            "grpc://nohost",
            "unix://relative.sock",
            "https://x:1",
            "ftp://x:1",
            "",
            "http://127.0.0.1:9901/config dump",
            "unix:///run/a.sock?resource=a b",
            "http://127.0.0.1:9901/\u{7f}",
        ] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
        assert_eq!(t("grpc+unix:///x.sock").to_string(), "grpc+unix:///x.sock");
    }
}
