//! `attach --watch --metrics ADDR`: the node agent's Prometheus endpoint.
//!
//! The watch loop records each analysis here; a scrape only encodes what was recorded, so a
//! scrape never analyses and costs the same whatever the size of the config. The exposition is
//! the Prometheus text format (0.0.4) of the `prometheus` crate: it is what every Prometheus
//! scrapes and what `promtool check metrics` lints (`prometheus-client` writes OpenMetrics only,
//! whose `_total` counter samples promtool 2.x does not pair with their `# TYPE` line).
//!
//! Labels are bounded by the config's own structure (listener names, rule codes, severities,
//! fixed reasons): a listener label only on errors and warnings, so a node with 10k listeners
//! has a series per listener only where something is wrong. SNI names, domains and messages
//! stay in the log lines `--watch` prints.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus::{Encoder, Gauge, Histogram, HistogramOpts, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};
use xdsck_core::Severity;
use xdsck_core::report::Report;

/// Analysis times from a small listener set (milliseconds) to a 10k-tenant node (seconds).
const DURATION_BUCKETS: &[f64] = &[0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// How long a scrape connection may take to send its request head, and to be served in all:
/// a stalled client holds one task, not the agent.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct Metrics {
    /// Held while recording and while encoding, so a scrape never sees half an update (the
    /// per-listener families are cleared and refilled at each analysis).
    lock: Mutex<()>,
    registry: Registry,
    build_info: IntGaugeVec,
    findings: IntGaugeVec,
    listeners: IntGaugeVec,
    predicted_rejection: IntGaugeVec,
    last_analysis: Gauge,
    duration: Histogram,
    source_up: IntGauge,
    fetch_errors: IntCounterVec,
}

/// The states `xdsck_listeners` always has, even at 0, so that an alert on one finds a series.
const STATES: [&str; 4] = ["active", "warming", "draining", "error"];

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new_custom(Some("xdsck".to_owned()), None).expect("a valid prefix");
        fn gauges(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
            let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric names");
            r.register(Box::new(g.clone())).expect("each metric registered once");
            g
        }
        let build_info = gauges(
            &registry,
            "build_info",
            "Always 1: the xdsck version, and the version of the Envoy attached to (admin only; empty until known).",
            &["version", "envoy_version"],
        );
        let findings = gauges(
            &registry,
            "findings",
            "Findings of the last analysis, by rule, severity and listener (Envoy's listener name; empty for infos and for findings about no listener).",
            &["code", "rule", "severity", "listener"],
        );
        let listeners = gauges(
            &registry,
            "listeners",
            "Listeners in the last analysed config, by state: active (static and active), warming, draining, error (a rejected update).",
            &["state"],
        );
        let predicted_rejection = gauges(
            &registry,
            "predicted_rejection",
            "1 for each listener with an error finding: Envoy rejects (or, XDS110, rejected) its configuration. Listeners without one have no series.",
            &["listener"],
        );
        let last_analysis = Gauge::with_opts(Opts::new(
            "last_analysis_timestamp_seconds",
            "Unix time at which the served findings were last known current: an analysis, or a fetch identical to the last analysed one.",
        ))
        .expect("valid metric name");
        registry.register(Box::new(last_analysis.clone())).expect("registered once");
        let duration = Histogram::with_opts(
            HistogramOpts::new("analysis_duration_seconds", "Time to load and check one fetched config.")
                .buckets(DURATION_BUCKETS.to_vec()),
        )
        .expect("valid buckets");
        registry.register(Box::new(duration.clone())).expect("registered once");
        let source_up = IntGauge::with_opts(Opts::new(
            "source_up",
            "1 when the last fetch from the attached address succeeded (xDS: while the stream is open), else 0.",
        ))
        .expect("valid metric name");
        registry.register(Box::new(source_up.clone())).expect("registered once");
        let fetch_errors = IntCounterVec::new(
            Opts::new("fetch_errors_total", "Failed fetches from the attached address, by reason."),
            &["reason"],
        )
        .expect("valid metric name");
        registry.register(Box::new(fetch_errors.clone())).expect("registered once");
        let m = Metrics {
            lock: Mutex::new(()),
            registry,
            build_info,
            findings,
            listeners,
            predicted_rejection,
            last_analysis,
            duration,
            source_up,
            fetch_errors,
        };
        m.set_envoy_version("");
        for s in STATES {
            m.listeners.with_label_values(&[s]).set(0);
        }
        m
    }

    fn guard(&self) -> MutexGuard<'_, ()> {
        // A panic while holding the lock leaves nothing inconsistent that a scrape cannot show.
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_envoy_version(&self, envoy_version: &str) {
        let _g = self.guard();
        self.build_info.reset();
        self.build_info.with_label_values(&[env!("CARGO_PKG_VERSION"), envoy_version]).set(1);
    }

    /// Records one analysis: its findings, the listener states and how long it took.
    pub fn record(&self, report: &Report, took: Duration) {
        let mut findings: BTreeMap<(&str, &str, Severity, &str), i64> = BTreeMap::new();
        let mut rejected: BTreeMap<&str, ()> = BTreeMap::new();
        for d in &report.findings {
            // Infos are legal configurations (XDS301 is on every listener of a tenant-per-
            // listener node): counted per rule, or they would be a series per listener.
            let listener = match d.severity {
                Severity::Info => "",
                _ => d.listener.as_deref().unwrap_or_default(),
            };
            *findings.entry((d.rule.code, d.rule.name, d.severity, listener)).or_default() += 1;
            if d.severity == Severity::Error && !listener.is_empty() {
                rejected.insert(listener, ());
            }
        }
        let mut states = [0usize; 4];
        for i in &report.inputs {
            let inv = &i.inventory;
            for (n, c) in states.iter_mut().zip([inv.listeners, inv.warming, inv.draining, inv.failed]) {
                *n += c;
            }
        }
        let _g = self.guard();
        self.findings.reset();
        for ((code, rule, severity, listener), n) in findings {
            self.findings.with_label_values(&[code, rule, severity.as_str(), listener]).set(n);
        }
        self.predicted_rejection.reset();
        for listener in rejected.keys() {
            self.predicted_rejection.with_label_values(&[listener]).set(1);
        }
        for (s, n) in STATES.iter().zip(states) {
            self.listeners.with_label_values(&[s]).set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        self.duration.observe(took.as_secs_f64());
        self.last_analysis.set(now());
        self.source_up.set(1);
    }

    /// A fetch gave the config already analysed: the served findings are still current.
    pub fn confirm(&self) {
        let _g = self.guard();
        self.last_analysis.set(now());
        self.source_up.set(1);
    }

    pub fn up(&self) {
        self.source_up.set(1);
    }

    pub fn fetch_failed(&self, reason: &str) {
        let _g = self.guard();
        self.source_up.set(0);
        self.fetch_errors.with_label_values(&[reason]).inc();
    }

    /// The exposition, in the Prometheus text format.
    pub fn encode(&self) -> Vec<u8> {
        let families = {
            let _g = self.guard();
            self.registry.gather()
        };
        let mut out = Vec::new();
        prometheus::TextEncoder::new().encode(&families, &mut out).expect("writing into memory does not fail");
        out
    }
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or_default()
}

/// Serves `/metrics` and `/healthz` on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            // Out of file descriptors and the like: try again shortly instead of spinning.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let response = respond(&metrics, &req);
                async move { Ok::<_, Infallible>(response) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            // A client error or a timeout ends only its own connection.
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
        });
    }
}

fn respond(metrics: &Metrics, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let answer = |status: StatusCode, content_type: &str, body: Vec<u8>| {
        Response::builder()
            .status(status)
            .header(hyper::header::CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(body)))
            .expect("a static status and header")
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return answer(StatusCode::METHOD_NOT_ALLOWED, "text/plain", b"GET only\n".to_vec());
    }
    match req.uri().path() {
        "/metrics" => answer(StatusCode::OK, prometheus::TEXT_FORMAT, metrics.encode()),
        // Liveness of the agent itself: a node whose Envoy is down is `xdsck_source_up 0`, not
        // a reason to restart the agent.
        "/healthz" => answer(StatusCode::OK, "text/plain", b"ok\n".to_vec()),
        _ => answer(StatusCode::NOT_FOUND, "text/plain", b"/metrics or /healthz\n".to_vec()),
    }
}

/// The Envoy version in `/server_info`'s `version` (`<sha>/1.40.0/Clean/RELEASE/BoringSSL`).
pub fn envoy_version(server_info: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(server_info).ok()?;
    let full = v.get("version")?.as_str()?;
    Some(full.split('/').nth(1).unwrap_or(full).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envoy_version_is_the_release_part() {
        let info = br#"{"version": "8d8c4ad0/1.40.0/Clean/RELEASE/BoringSSL", "state": "LIVE"}"#;
        assert_eq!(envoy_version(info).as_deref(), Some("1.40.0"));
        assert_eq!(envoy_version(b"not json"), None);
    }
}
