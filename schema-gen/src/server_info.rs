//! What the Envoy build says about itself on its admin `/server_info`: its version and the
//! extensions compiled in, with the config types each one takes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Error;

const TYPE_URL_PREFIX: &str = "type.googleapis.com/";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// `major.minor.patch revision-sha`, e.g. `1.40.0 9e5580933739775e8bce696a57a2e1bc99368f23`.
    pub version: String,
    /// One per (category, name), sorted by them.
    pub extensions: Vec<Extension>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extension {
    pub category: String,
    pub name: String,
    /// Full message names, without `type.googleapis.com/`, sorted.
    pub type_urls: Vec<String>,
}

impl ServerInfo {
    /// `extensions.tsv`: a header naming the build, then `category\tname\ttype,type` lines.
    pub fn extensions_tsv(&self) -> String {
        let mut out =
            format!("# Envoy {}, from /server_info; regenerate with cargo run -p xdsck-schema-gen\n", self.version);
        for e in &self.extensions {
            out.push_str(&format!("{}\t{}\t{}\n", e.category, e.name, e.type_urls.join(",")));
        }
        out
    }
}

/// Kills Envoy when dropped, on every way out of [`fetch`] (an error, a panic), so that no
/// Envoy outlives the run.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `envoy` with nothing but an admin listener on a Unix socket, asks `/server_info`
/// once it answers, and stops Envoy.
pub fn fetch(envoy: &Path, timeout: Duration) -> Result<ServerInfo, Error> {
    let dir = tempfile::Builder::new().prefix("xdsck-schema-gen").tempdir().map_err(Error::TempDir)?;
    let socket = dir.path().join("admin.sock");
    let bootstrap = dir.path().join("bootstrap.json");
    let config = serde_json::json!({"admin": {"address": {"pipe": {"path": socket.to_string_lossy()}}}});
    std::fs::write(&bootstrap, config.to_string()).map_err(|source| Error::Io { path: bootstrap.clone(), source })?;
    let log = dir.path().join("envoy.log");
    let stderr = File::create(&log).map_err(|source| Error::Io { path: log.clone(), source })?;

    // Declared after `dir`, so dropped before it: Envoy is gone before its socket's folder.
    let mut envoy_process = Running(
        Command::new(envoy)
            .arg("-c")
            .arg(&bootstrap)
            .args(["--disable-hot-restart", "-l", "error"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|source| Error::Spawn { path: envoy.to_owned(), source })?,
    );

    let started = Instant::now();
    let body = loop {
        if let Some(status) =
            envoy_process.0.try_wait().map_err(|source| Error::Spawn { path: envoy.to_owned(), source })?
        {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(Error::EnvoyExited { status, log: tail(&log, 20) });
        }
        let last_error = match get(&socket, "/server_info") {
            Ok(body) => break body,
            Err(e) => e,
        };
        if started.elapsed() >= timeout {
            return Err(Error::AdminTimeout { seconds: timeout.as_secs(), last_error });
        }
        thread::sleep(Duration::from_millis(50));
    };
    drop(envoy_process);
    parse(&body)
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// One HTTP/1.1 GET over the admin socket; the response's body, or why there is none yet.
fn get(socket: &Path, path: &str) -> Result<Vec<u8>, String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| format!("connect {}: {e}", socket.display()))?;
    let timeout = Some(Duration::from_secs(10));
    stream.set_read_timeout(timeout).and_then(|()| stream.set_write_timeout(timeout)).map_err(|e| e.to_string())?;
    // `Connection: close`: the body ends at the end of the stream at the latest.
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("write request: {e}"))?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).map_err(|e| format!("read response: {e}"))?;
    body(&response)
}

/// The body of a raw HTTP/1.1 response with status 200, chunked or not.
fn body(response: &[u8]) -> Result<Vec<u8>, String> {
    let split = find(response, b"\r\n\r\n").ok_or("incomplete response headers")?;
    let head = std::str::from_utf8(&response[..split]).map_err(|_| "response headers are not UTF-8")?;
    let rest = &response[split + 4..];
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    if status.split(' ').nth(1) != Some("200") {
        return Err(format!("response status: {status}"));
    }
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        } else if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| format!("bad content-length: {value}"))?);
        }
    }
    if chunked {
        dechunk(rest)
    } else if let Some(length) = length {
        rest.get(..length).map(<[u8]>::to_vec).ok_or_else(|| "response body shorter than its content-length".into())
    } else {
        Ok(rest.to_vec())
    }
}

fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = find(data, b"\r\n").ok_or("truncated chunk size")?;
        let line = std::str::from_utf8(&data[..line_end]).map_err(|_| "chunk size is not UTF-8")?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| format!("bad chunk size: {line:?}"))?;
        data = &data[line_end + 2..];
        if size == 0 {
            // Trailers, if any, carry nothing wanted here.
            return Ok(out);
        }
        let chunk = data.get(..size).ok_or("truncated chunk")?;
        out.extend_from_slice(chunk);
        data = data.get(size..).and_then(|d| d.strip_prefix(b"\r\n")).ok_or("chunk not followed by CRLF")?;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads the version and the extensions out of `/server_info`'s JSON.
pub fn parse(json: &[u8]) -> Result<ServerInfo, Error> {
    let shape = |what: &str| Error::ServerInfo(what.to_owned());
    let info: Value = serde_json::from_slice(json).map_err(|e| Error::ServerInfo(format!("not JSON: {e}")))?;
    let node = &info["node"];
    let build = &node["user_agent_build_version"];
    // Proto3 JSON may leave out a zero (patch 0).
    let number = |key: &str| build["version"][key].as_u64().unwrap_or(0);
    if build["version"].as_object().is_none() {
        return Err(shape("no node.user_agent_build_version.version"));
    }
    let sha = build["metadata"]["revision.sha"]
        .as_str()
        .ok_or_else(|| shape("no node.user_agent_build_version.metadata[\"revision.sha\"]"))?;
    let version = format!("{}.{}.{} {sha}", number("major_number"), number("minor_number"), number("patch"));

    let mut extensions: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for extension in node["extensions"].as_array().ok_or_else(|| shape("no node.extensions list"))? {
        let text = |key: &str| {
            extension[key].as_str().map(str::to_owned).ok_or_else(|| shape(&format!("an extension without {key}")))
        };
        let key = (text("category")?, text("name")?);
        let mut type_urls = Vec::new();
        for url in extension["type_urls"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let url = url.as_str().ok_or_else(|| shape("a type_urls entry that is not a string"))?;
            type_urls.push(url.strip_prefix(TYPE_URL_PREFIX).unwrap_or(url).to_owned());
        }
        // Envoy keeps them in a set; sorted here so that the file never depends on its order.
        type_urls.sort();
        type_urls.dedup();
        if let Some(seen) = extensions.get(&key) {
            if *seen != type_urls {
                return Err(Error::ServerInfo(format!(
                    "extension {} {} is listed twice with different type URLs",
                    key.0, key.1
                )));
            }
        }
        extensions.insert(key, type_urls);
    }
    let extensions =
        extensions.into_iter().map(|((category, name), type_urls)| Extension { category, name, type_urls }).collect();
    Ok(ServerInfo { version, extensions })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_chunked_and_sized_bodies() {
        let chunked = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
                        4\r\n{\"a\"\r\n3;x=y\r\n:1}\r\n0\r\n\r\n";
        assert_eq!(body(chunked).unwrap(), b"{\"a\":1}");
        let sized = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(body(sized).unwrap(), b"{}");
        assert!(body(b"HTTP/1.1 503 Service Unavailable\r\n\r\n").unwrap_err().contains("503"));
        assert!(body(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab").is_err());
    }

    #[test]
    fn an_envoy_that_exits_is_reported_not_waited_for() {
        let err = fetch(Path::new("false"), Duration::from_secs(30)).unwrap_err();
        assert!(matches!(err, Error::EnvoyExited { .. }), "{err}");
    }

    #[test]
    fn parses_version_and_extensions() {
        let json = br#"{"node": {
            "user_agent_build_version": {"version": {"major_number": 1, "minor_number": 40},
                                         "metadata": {"revision.sha": "abc"}},
            "extensions": [
                {"name": "b", "category": "envoy.filters", "type_urls": ["z.Z", "type.googleapis.com/a.A"]},
                {"name": "a", "category": "envoy.filters"},
                {"name": "c", "category": "envoy.access_loggers", "type_urls": []}
            ]}}"#;
        let info = parse(json).unwrap();
        assert_eq!(info.version, "1.40.0 abc");
        assert_eq!(
            info.extensions_tsv(),
            "# Envoy 1.40.0 abc, from /server_info; regenerate with cargo run -p xdsck-schema-gen\n\
             envoy.access_loggers\tc\t\nenvoy.filters\ta\t\nenvoy.filters\tb\ta.A,z.Z\n"
        );
    }
}
