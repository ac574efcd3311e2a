//! `xdsck webhook`: a validating admission webhook for CiliumEnvoyConfig and
//! CiliumClusterwideEnvoyConfig (`admission.k8s.io/v1` AdmissionReview over HTTPS).
//!
//! The object under review is checked as `xdsck check` checks a CEC file. Only errors — what
//! Envoy rejects — can deny, and only with `--strict`; everything else, and errors without
//! `--strict`, comes back as warnings (kubectl prints them). CECs owned by a Gateway are never
//! denied unless `--deny-gateway-owned`: the Cilium operator writes those and would retry a
//! denied write forever. Requests are bounded in size (`--max-request-bytes`) and in time
//! (`--request-timeout`: TLS handshake, head and body), so a slow or hostile client holds one
//! task for that long at most. A rotated certificate is picked up at the next handshake.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use xdsck_core::gateway::cilium::admission;
use xdsck_core::{Severity, SourceFile, Sources};

use crate::args::WebhookArgs;

/// Kubernetes shows each warning as one line; longer ones are cut (its own limit is 4 KiB for
/// all of them together).
const WARNING_CHARS: usize = 240;
const MAX_WARNINGS: usize = 12;

#[derive(Debug, Clone)]
struct Policy {
    strict: bool,
    deny_gateway_owned: bool,
    max_bytes: usize,
    timeout: Duration,
}

pub fn run(args: &WebhookArgs) -> Result<u8> {
    if !(args.request_timeout.is_finite() && args.request_timeout > 0.0) {
        bail!("--request-timeout must be a positive number of seconds");
    }
    let policy = Policy {
        strict: args.strict,
        deny_gateway_owned: args.deny_gateway_owned,
        max_bytes: args.max_request_bytes,
        timeout: Duration::from_secs_f64(args.request_timeout),
    };
    let tls = tls_config(&args.tls_cert, &args.tls_key)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("--listen {}: cannot listen there", args.listen))?;
        let bound = listener.local_addr()?;
        crate::attach::warn(&format!("webhook listening on https://{bound}"));
        let acceptor = TlsAcceptor::from(Arc::new(tls));
        let policy = Arc::new(policy);
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        loop {
            let stream = tokio::select! {
                _ = &mut ctrl_c => return Ok(crate::CLEAN),
                accepted = listener.accept() => match accepted {
                    Ok((s, _)) => s,
                    // Out of file descriptors and the like: try again shortly, do not spin.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let (acceptor, policy) = (acceptor.clone(), policy.clone());
            tokio::spawn(async move {
                let Ok(Ok(tls)) = tokio::time::timeout(policy.timeout, acceptor.accept(stream)).await else {
                    return;
                };
                let timeout = policy.timeout;
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let policy = policy.clone();
                    async move { Ok::<_, Infallible>(handle(req, &policy).await) }
                });
                // The API server keeps connections open between reviews; each request's head
                // must arrive within the timeout, its body too (in `handle`).
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(timeout)
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    })
}

fn tls_config(cert: &Path, key: &Path) -> Result<tokio_rustls::rustls::ServerConfig> {
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let resolver = Reloading::new(cert, key, provider.clone())?;
    let mut config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS setup")?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The certificate and key, read again when either file changes: cert-manager (or a person)
/// rotates the Secret, the kubelet swaps the mounted files, and the next handshake presents the
/// new certificate without a restart. A pair that does not load (half-written, mismatched)
/// leaves the previous one in use.
#[derive(Debug)]
struct Reloading {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    current: Mutex<(Stamps, Arc<CertifiedKey>)>,
}

type Stamps = (Option<SystemTime>, Option<SystemTime>);

impl Reloading {
    fn new(cert: &Path, key: &Path, provider: Arc<CryptoProvider>) -> Result<Reloading> {
        let stamps = stamps(cert, key);
        let loaded = load(cert, key, &provider)?;
        Ok(Reloading {
            cert: cert.to_owned(),
            key: key.to_owned(),
            provider,
            current: Mutex::new((stamps, Arc::new(loaded))),
        })
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let now = stamps(&self.cert, &self.key);
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if now != current.0
            && let Ok(loaded) = load(&self.cert, &self.key, &self.provider)
        {
            *current = (now, Arc::new(loaded));
        }
        Some(current.1.clone())
    }
}

fn stamps(cert: &Path, key: &Path) -> Stamps {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    (modified(cert), modified(key))
}

fn load(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("--tls-cert {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("--tls-cert {}: not a PEM certificate chain", cert.display()))?;
    if certs.is_empty() {
        bail!("--tls-cert {}: no certificate in it", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("--tls-key {}: no PEM private key", key.display()))?;
    CertifiedKey::from_der(certs, key, provider).context("--tls-cert and --tls-key do not make a usable pair")
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(format!("{body}\n"))))
        .expect("a static status and header")
}

async fn handle(req: Request<Incoming>, policy: &Policy) -> Response<Full<Bytes>> {
    // The probes of the Deployment in deploy/kubernetes/webhook.
    if req.method() == Method::GET && req.uri().path() == "/healthz" {
        return text(StatusCode::OK, "ok");
    }
    if req.method() != Method::POST {
        return text(StatusCode::METHOD_NOT_ALLOWED, "POST an admission.k8s.io/v1 AdmissionReview");
    }
    let length = req.headers().get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if length.is_some_and(|n| n > policy.max_bytes) {
        return text(StatusCode::PAYLOAD_TOO_LARGE, &format!("over --max-request-bytes ({} bytes)", policy.max_bytes));
    }
    let body =
        match tokio::time::timeout(policy.timeout, Limited::new(req.into_body(), policy.max_bytes).collect()).await {
            Err(_) => return text(StatusCode::REQUEST_TIMEOUT, "the request body did not arrive in time"),
            Ok(Err(e)) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("over --max-request-bytes ({} bytes)", policy.max_bytes),
                );
            }
            Ok(Err(e)) => return text(StatusCode::BAD_REQUEST, &format!("reading the request: {e}")),
            Ok(Ok(b)) => b.to_bytes(),
        };
    let policy = policy.clone();
    // The analysis is CPU work: off the thread that accepts and reads the other requests.
    let answer = tokio::task::spawn_blocking(move || review(&body, &policy)).await;
    match answer {
        Ok(Ok(v)) => Response::builder()
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(v.to_string())))
            .expect("a static header"),
        Ok(Err(why)) => text(StatusCode::BAD_REQUEST, &why),
        Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "the check failed"),
    }
}

/// The AdmissionReview answering `body`, or why `body` is not one.
fn review(body: &[u8], policy: &Policy) -> Result<Value, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    if v["apiVersion"] != "admission.k8s.io/v1" || v["kind"] != "AdmissionReview" {
        return Err("expected an admission.k8s.io/v1 AdmissionReview".into());
    }
    let request = &v["request"];
    let uid = request["uid"].as_str().ok_or("the AdmissionReview has no request.uid")?;
    let answer = |allowed: bool, status: Option<Value>, warnings: Vec<String>| {
        let mut response = json!({"uid": uid, "allowed": allowed});
        if let Some(s) = status {
            response["status"] = s;
        }
        if !warnings.is_empty() {
            response["warnings"] = json!(warnings);
        }
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
    };
    let kind = request["kind"]["kind"].as_str().unwrap_or_default();
    let object = &request["object"];
    if !admission::KINDS.contains(&kind) {
        return Ok(answer(
            true,
            None,
            vec![format!("xdsck checks {} only, not {kind:?}", admission::KINDS.join(" and "))],
        ));
    }
    // DELETE (no object): nothing to check.
    if !object.is_object() {
        return Ok(answer(true, None, Vec::new()));
    }
    let mut object = object.clone();
    admission::with_request_namespace(kind, &mut object, request["namespace"].as_str());
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let source_name = match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    let mut sources = Sources::new();
    sources.add(SourceFile::new(source_name, object.to_string()));
    let mut options = xdsck_core::Options::default();
    options.limits.max_bytes = policy.max_bytes;
    let report = xdsck_core::analyze(&sources, &options);

    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for d in &report.findings {
        let line = xdsck_core::report::line::admission(d);
        match d.severity {
            Severity::Error => errors.push(line),
            Severity::Warning => warnings.push(line),
            Severity::Info => {}
        }
    }
    let gateway_owned = admission::gateway_owned(&object);
    let deny = policy.strict && !errors.is_empty() && (!gateway_owned || policy.deny_gateway_owned);
    if deny {
        let message = format!("xdsck: Envoy would reject {name}: {}", errors.join("; "));
        let status = json!({"code": 422, "reason": "Invalid", "message": message});
        return Ok(answer(false, Some(status), bounded(warnings)));
    }
    let mut all: Vec<String> = errors.into_iter().map(|e| format!("error {e}")).collect();
    if gateway_owned && policy.strict && !all.is_empty() {
        all.push(
            "not denied: owned by a Gateway (its operator would retry forever); --deny-gateway-owned denies".into(),
        );
    }
    all.extend(warnings.into_iter().map(|w| format!("warning {w}")));
    Ok(answer(true, None, bounded(all)))
}

/// At most [`MAX_WARNINGS`] warnings of at most [`WARNING_CHARS`] characters each.
fn bounded(mut warnings: Vec<String>) -> Vec<String> {
    if warnings.len() > MAX_WARNINGS {
        let more = warnings.len() - (MAX_WARNINGS - 1);
        warnings.truncate(MAX_WARNINGS - 1);
        warnings.push(format!("... and {more} more (xdsck check on the object lists them all)"));
    }
    for w in &mut warnings {
        if w.chars().count() > WARNING_CHARS {
            *w = w.chars().take(WARNING_CHARS - 3).chain("...".chars()).collect();
        }
    }
    warnings
}
