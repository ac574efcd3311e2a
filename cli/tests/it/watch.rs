//! `xdsck attach --watch` as someone keeps it running: a line only when something changed,
//! stamped with the time and the configuration's own version, and — while the proxy is down —
//! retries spaced by exponential backoff with jitter, as the README promises.

use crate::support;

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::admin_server::{AdminServer, Answer, Bind};
use support::attach_watch;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn next(rx: &mpsc::Receiver<String>) -> String {
    rx.recv_timeout(Duration::from_secs(20)).expect("a line within 20 s")
}

/// `2026-12-01T10:40:00Z`: RFC 3339, UTC, to the second.
fn assert_timestamp(t: &str) {
    assert_eq!(t.len(), 20, "{t}");
    assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
    let digits: String = t.chars().filter(char::is_ascii_digit).collect();
    assert_eq!(digits.len(), 14, "{t}");
}

fn dump() -> String {
    std::fs::read_to_string(support::workspace().join("testdata/envoy/config_dump.json")).unwrap()
}

#[test]
fn watch_prints_only_changes_with_the_time_and_the_dumps_versions() {
    let rt = runtime();
    let text = dump();
    let server = rt.block_on(AdminServer::start(
        Bind::Tcp("127.0.0.1:0".parse().unwrap()),
        Answer::Length(Arc::new(text.clone().into_bytes())),
    ));
    let (_child, out, err) = attach_watch(&["--no-config"], &[&server.url(), "--interval", "0.1", "--format", "json"]);
    let first: Value = serde_json::from_str(&next(&out)).unwrap();
    assert_timestamp(first["time"].as_str().unwrap());
    // The dump's live (active) listeners carry version_info "1" — not a poll counter; the
    // warming one's "2" is not served yet.
    assert_eq!(first["version"], "1", "{first}");
    // The first line is the state: every finding new, every resource added.
    assert_eq!(first["findings"]["new"].as_array().unwrap().len(), 4);
    assert!(first["findings"]["fixed"].as_array().unwrap().is_empty());
    let listeners: Vec<&Value> =
        first["resources"]["added"].as_array().unwrap().iter().filter(|r| r["type"] == "Listener").collect();
    assert_eq!(listeners.len(), 8, "{first}");

    // New bytes (another last_updated), same versions and findings: polled, not printed.
    server.set(Answer::Length(Arc::new(
        text.replace("2026-11-30T23:04:37.149Z", "2026-12-01T00:00:00.000Z").into_bytes(),
    )));
    let before = server.requests().len();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(server.requests().len() >= before + 5, "it kept polling");
    assert!(out.try_recv().is_err(), "nothing changed, nothing printed");

    // A listener updated to version 3, with the same findings: a change of version is printed.
    let updated = text.replacen("\"version_info\": \"1\",", "\"version_info\": \"3\",", 1);
    assert_ne!(updated, text);
    server.set(Answer::Length(Arc::new(updated.into_bytes())));
    let next_update: Value = serde_json::from_str(&next(&out)).unwrap();
    assert_eq!(next_update["version"], "1,3", "{next_update}");
    assert!(next_update["findings"]["new"].as_array().unwrap().is_empty());
    assert!(next_update["findings"]["fixed"].as_array().unwrap().is_empty());
    let updated = next_update["resources"]["updated"].as_array().unwrap();
    assert_eq!(updated.len(), 1, "{next_update}");
    assert_eq!((updated[0]["type"].as_str(), updated[0]["version"].as_str()), (Some("Listener"), Some("3")));
    assert!(next_update["resources"]["added"].as_array().unwrap().is_empty());
    assert!(err.try_recv().is_err(), "no warnings");
}

#[test]
fn the_text_line_starts_with_the_time() {
    let rt = runtime();
    let server = rt.block_on(AdminServer::start(
        Bind::Tcp("127.0.0.1:0".parse().unwrap()),
        Answer::Length(Arc::new(dump().into_bytes())),
    ));
    let (_child, out, _err) = attach_watch(&["--no-config"], &[&server.url(), "--interval", "0.1"]);
    let line = next(&out);
    let (time, rest) = line.split_once(' ').unwrap();
    assert_timestamp(time);
    assert!(rest.starts_with("version 1: 5 listeners, 4 findings; resources +"), "{line}");
    assert!(rest.ends_with("-0 ~0, findings +4 -0"), "{line}");
    // Then the state's resources, `+ TYPE 'name' [version V]`, and its findings, `+ severity[code]`.
    let rest: Vec<String> = std::iter::from_fn(|| out.recv_timeout(Duration::from_secs(1)).ok()).collect();
    assert!(
        rest.iter().any(|l| l.starts_with("+ Listener 'gateway/cilium-gateway-tenant1/listener' version 1")),
        "{rest:#?}"
    );
    assert!(rest.iter().any(|l| l.starts_with("+ Cluster '")), "{rest:#?}");
    assert_eq!(rest.iter().filter(|l| l.starts_with("+ error[") || l.starts_with("+ info[")).count(), 4, "{rest:#?}");
}

/// The delays of the first `n` "retrying in X s" warnings.
fn retry_delays(err: &mpsc::Receiver<String>, n: usize) -> Vec<f64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut delays = Vec::new();
    while delays.len() < n {
        let line = err.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("a retry warning");
        let Some((_, rest)) = line.split_once("retrying in ") else { continue };
        delays.push(rest.split(' ').next().unwrap().parse::<f64>().unwrap());
    }
    delays
}

/// Backoff as the README says: attempt k waits between half of and the full 250 ms · 2^k
/// (capped at 30 s), at random within that range.
fn assert_exponential_with_jitter(delays: &[f64], what: &str) {
    for (k, d) in delays.iter().enumerate() {
        let step = (0.25 * f64::from(1u32 << k)).min(30.0);
        assert!(
            *d >= step / 2.0 - 0.005 && *d <= step + 0.005,
            "{what}: retry {k} after {d} s, step {step}: {delays:?}"
        );
    }
    let inside = delays.iter().enumerate().any(|(k, d)| {
        let step = 0.25 * f64::from(1u32 << k);
        *d > step / 2.0 + 0.005 && *d < step - 0.005
    });
    assert!(inside, "{what}: no jitter in {delays:?}");
}

#[test]
fn a_proxy_that_stays_down_is_retried_with_exponential_backoff_and_jitter() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for address in [format!("http://127.0.0.1:{port}"), format!("grpc://127.0.0.1:{port}")] {
        let (_child, out, err) = attach_watch(&["--no-config"], &[&address, "--interval", "0.1", "--timeout", "1"]);
        let delays = retry_delays(&err, 5);
        assert_exponential_with_jitter(&delays, &address);
        assert!(out.try_recv().is_err(), "{address}: no update while down");
    }
}
