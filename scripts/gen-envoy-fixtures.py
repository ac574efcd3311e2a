#!/usr/bin/env python3
"""Regenerate the Envoy-made fixtures in testdata/envoy/, or validate fixtures.

Default mode (generate):
  1. find Envoy through scripts/install-envoy.sh ($XDSCK_ENVOY wins);
  2. `envoy --mode validate` the bootstraps in testdata/envoy/src/;
  3. run Envoy from a fresh temp dir (admin on the Unix socket ./admin.sock,
     file-based LDS watching ./lds/) with src/bootstrap.yaml and src/lds.yaml;
  4. GET /config_dump over the socket  -> testdata/envoy/config_dump_initial.json;
  5. atomically rename src/lds-update.yaml over lds/lds.yaml; Envoy rejects
     part of it (see the comments in that file); poll until the error_state
     entries show up, then GET /config_dump -> config_dump.json and
     /config_dump?resource=dynamic_listeners -> dynamic_listeners.json;
  6. stop Envoy; start it once more on src/bootstrap.json and check that Envoy
     reads it to the same bootstrap as bootstrap.yaml.
  --out DIR writes the three JSON files into DIR (created if missing) instead
  of testdata/envoy/; the inputs are still read from testdata/envoy/src/.
  The JSON files are written byte for byte as Envoy returned them, except
  that bootstrap.node.extensions (Envoy's list of its 516 compiled-in
  extensions, ~87 KB) is cut out of the two full dumps; see
  drop_node_extensions() and --keep-node-extensions.

--validate-only:
  run `envoy --mode validate` on the bootstraps, on every listener of the
  LDS files in testdata/envoy/src/ (lds-update.yaml has two listeners that
  must be rejected, with the expected error), on every listener in
  testdata/listeners/ and on the listeners and clusters of every CEC in
  testdata/cilium/ (after the changes the cilium-agent makes: qualified
  names, a 127.0.0.1 address where none is set, ADS config sources where
  none are set). Also checks the README.md tables in testdata/listeners/
  and testdata/cilium/ (listener names and chain counts) against the files.

Python 3.11, standard library only. YAML inputs are read with a small
block-style YAML reader (below); it rejects constructs it does not know
instead of guessing.
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENVOY_DIR = REPO / "testdata" / "envoy"
SRC = ENVOY_DIR / "src"
LISTENERS_DIR = REPO / "testdata" / "listeners"
CILIUM_DIR = REPO / "testdata" / "cilium"

LISTENER_TYPE = "type.googleapis.com/envoy.config.listener.v3.Listener"
CLUSTER_TYPE = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
ROUTE_TYPE = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

# Listeners of src/lds-update.yaml that Envoy must reject, with the part of the
# error text we rely on.
EXPECTED_LDS_REJECTIONS = {
    "gateway/cilium-gateway-tenant1/listener-9443": "filter chain 'b' has the same matching rules defined as 'a'",
    "gateway/cilium-gateway-tenant2/listener": "multiple filter chains with overlapping matching rules are defined",
}

STARTUP_TIMEOUT_S = 20.0
UPDATE_TIMEOUT_S = 20.0


class Failure(Exception):
    """A step failed; the message says which and why."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Envoy binary and processes


def find_envoy() -> str:
    script = REPO / "scripts" / "install-envoy.sh"
    proc = subprocess.run([str(script)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise Failure(f"{script} failed:\n{proc.stderr.strip()}")
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise Failure(f"{script} printed no path")
    return lines[-1]


def envoy_validate(envoy: str, config: Path, cwd: Path) -> tuple[bool, str]:
    """Run `envoy --mode validate`; return (accepted, last meaningful output)."""
    proc = subprocess.run(
        [envoy, "--mode", "validate", "-c", str(config), "-l", "warning", "--disable-hot-restart"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = (proc.stdout + proc.stderr).strip()
    return proc.returncode == 0, out


def validation_error(out: str) -> str:
    """The error text of a failed `--mode validate` run (Envoy's critical line)."""
    for line in out.splitlines():
        m = re.search(r"error initializing configuration '[^']*': (.*)$", line)
        if m:
            return m.group(1)
    return out.splitlines()[-1] if out else "(no output)"


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 5.0):
        # Any Host works for Envoy's admin; Cilium sends "envoy-admin".
        super().__init__("envoy-admin", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def admin_get(sock_path: Path, path: str) -> tuple[int, bytes]:
    conn = UnixHTTPConnection(str(sock_path))
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class EnvoyProcess:
    """One Envoy run in `workdir`, admin on workdir/admin.sock."""

    def __init__(self, envoy: str, workdir: Path, config: str):
        self.envoy = envoy
        self.workdir = workdir
        self.config = config
        self.sock = workdir / "admin.sock"
        self.log_path = workdir / "envoy.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        # --disable-hot-restart: no shared memory, so nothing clashes with
        # another Envoy on this machine; the base id is then unused, but keep it
        # distinct anyway in case someone drops the flag.
        base_id = 40000 + os.getpid() % 20000
        cmd = [
            self.envoy,
            "-c", self.config,
            "--base-id", str(base_id),
            "--disable-hot-restart",
            "--concurrency", "1",
            "-l", "info",
        ]
        self.logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, cwd=self.workdir, stdout=self.logf, stderr=subprocess.STDOUT)

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def get(self, path: str) -> bytes:
        status, body = admin_get(self.sock, path)
        if status != 200:
            raise Failure(f"GET {path} over {self.sock}: HTTP {status}: {body[:500]!r}")
        return body

    def wait(self, what: str, cond, timeout: float):
        """Poll cond() (returns a truthy value when done) until timeout."""
        deadline = time.monotonic() + timeout
        delay = 0.02
        last_err = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise Failure(f"Envoy exited with status {self.proc.returncode} while waiting for {what}")
            try:
                val = cond()
                if val:
                    return val
            except (OSError, http.client.HTTPException, ValueError) as e:
                last_err = e
            time.sleep(delay)
            delay = min(delay * 1.5, 0.2)
        raise Failure(f"timed out after {timeout:.0f}s waiting for {what} (last error: {last_err})")

    def wait_ready(self) -> None:
        def ready():
            status, body = admin_get(self.sock, "/ready")
            return status == 200 and body.strip() == b"LIVE"

        self.wait("Envoy to be LIVE", ready, STARTUP_TIMEOUT_S)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.logf.close()
        self.proc = None


# --------------------------------------------------------------------------
# Generation


def listener_ports(*texts: str) -> list[int]:
    ports: set[int] = set()
    for text in texts:
        ports.update(int(p) for p in re.findall(r"port_value:\s*(\d+)", text))
    return sorted(ports)


def check_ports_free(ports: list[int]) -> None:
    busy = []
    for port in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            busy.append(port)
        finally:
            s.close()
    if busy:
        raise Failure(
            f"127.0.0.1 port(s) {busy} are in use; the fixtures use fixed ports "
            "(see testdata/envoy/src/*.yaml) so that the dumps are reproducible"
        )


def check_ipv6_loopback() -> None:
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    try:
        s.bind(("::1", 0))
    except OSError as e:
        raise Failure(f"IPv6 loopback ::1 is not usable ({e}); the Cilium-style dynamic listener binds [::1]")
    finally:
        s.close()


def yaml_version(text: str) -> str:
    m = re.search(r"^version_info:\s*['\"]?([^'\"\s]+)", text, re.M)
    if not m:
        raise Failure("no version_info in LDS file")
    return m.group(1)


def listeners_dump(config_dump: dict) -> dict:
    for cfg in config_dump["configs"]:
        if cfg.get("@type", "").endswith("envoy.admin.v3.ListenersConfigDump"):
            return cfg
    raise Failure("config_dump has no ListenersConfigDump")


def prepare_workdir(workdir: Path, bootstrap: str) -> None:
    shutil.copy(SRC / bootstrap, workdir / bootstrap)
    (workdir / "lds").mkdir()
    shutil.copy(SRC / "lds.yaml", workdir / "lds" / "lds.yaml")


def generate(envoy: str, keep: bool, full_node: bool, out_dir: Path = ENVOY_DIR) -> None:
    t0 = time.monotonic()
    lds_initial = (SRC / "lds.yaml").read_text()
    lds_update = (SRC / "lds-update.yaml").read_text()
    bootstrap_yaml = (SRC / "bootstrap.yaml").read_text()
    check_ports_free(listener_ports(bootstrap_yaml, lds_initial, lds_update))
    check_ipv6_loopback()

    tmp = Path(tempfile.mkdtemp(prefix="xdsck-envoy-"))
    try:
        # Validate both bootstraps (validate mode does not read the LDS file,
        # but it must exist where the bootstrap points).
        vdir = tmp / "validate"
        vdir.mkdir()
        for name in ("bootstrap.yaml", "bootstrap.json"):
            shutil.copy(SRC / name, vdir / name)
        (vdir / "lds").mkdir()
        shutil.copy(SRC / "lds.yaml", vdir / "lds" / "lds.yaml")
        for name in ("bootstrap.yaml", "bootstrap.json"):
            ok, out = envoy_validate(envoy, vdir / name, vdir)
            if not ok:
                raise Failure(f"envoy --mode validate rejected src/{name}: {validation_error(out)}")
        log("validated src/bootstrap.yaml and src/bootstrap.json")

        run = tmp / "run"
        run.mkdir()
        prepare_workdir(run, "bootstrap.yaml")
        ep = EnvoyProcess(envoy, run, "bootstrap.yaml")
        try:
            ep.start()
            ep.wait_ready()
            v1 = yaml_version(lds_initial)

            def initial_loaded():
                d = json.loads(ep.get("/config_dump"))
                return d if listeners_dump(d).get("version_info") == v1 else None

            ep.wait("the initial LDS file", initial_loaded, STARTUP_TIMEOUT_S)
            initial = ep.get("/config_dump")
            log(f"Envoy up; initial dump {len(initial)} bytes")

            # Envoy's file watcher reacts to a rename (IN_MOVED_TO) into the
            # watched directory, so write beside it and rename into place.
            staging = run / ".lds-update.yaml"
            staging.write_text(lds_update)
            os.rename(staging, run / "lds" / "lds.yaml")
            v2 = yaml_version(lds_update)

            def update_seen():
                d = json.loads(ep.get("/config_dump?resource=dynamic_listeners"))
                errs = {c.get("name") for c in d.get("configs", []) if "error_state" in c}
                return set(EXPECTED_LDS_REJECTIONS) <= errs

            ep.wait("Envoy to reject the LDS update", update_seen, UPDATE_TIMEOUT_S)
            after = ep.get("/config_dump")
            dynamic = ep.get("/config_dump?resource=dynamic_listeners")
            if listeners_dump(json.loads(after)).get("version_info") != v2:
                raise Failure(f"listeners version_info is not {v2!r} after the update")
            check_error_details(json.loads(dynamic))
        except Exception:
            tail = ep.log_tail()
            ep.stop()
            log(f"--- Envoy log tail ({ep.log_path}) ---\n{tail}\n---")
            raise
        ep.stop()

        # Envoy must read bootstrap.json to the same bootstrap as bootstrap.yaml.
        run2 = tmp / "run-json"
        run2.mkdir()
        prepare_workdir(run2, "bootstrap.json")
        ep2 = EnvoyProcess(envoy, run2, "bootstrap.json")
        try:
            ep2.start()
            ep2.wait_ready()
            other = json.loads(ep2.get("/config_dump"))
        except Exception:
            tail = ep2.log_tail()
            ep2.stop()
            log(f"--- Envoy log tail ({ep2.log_path}) ---\n{tail}\n---")
            raise
        ep2.stop()
        mine = next(c for c in json.loads(after)["configs"] if c["@type"].endswith("BootstrapConfigDump"))
        theirs = next(c for c in other["configs"] if c["@type"].endswith("BootstrapConfigDump"))
        if mine["bootstrap"] != theirs["bootstrap"]:
            raise Failure("Envoy reads src/bootstrap.json differently from src/bootstrap.yaml; regenerate the JSON copy")
        log("src/bootstrap.json reads the same as src/bootstrap.yaml")

        if not full_node:
            initial, after = drop_node_extensions(initial), drop_node_extensions(after)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "config_dump_initial.json").write_bytes(initial)
        (out_dir / "config_dump.json").write_bytes(after)
        (out_dir / "dynamic_listeners.json").write_bytes(dynamic)
        shown = display_path(out_dir)
        log(f"wrote {shown}/{{config_dump_initial,config_dump,dynamic_listeners}}.json in {time.monotonic() - t0:.1f}s")
        summarize(json.loads(initial), "config_dump_initial.json")
        summarize(json.loads(after), "config_dump.json")
    finally:
        if keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def display_path(path: Path) -> str:
    """`path` relative to the repo if it is inside it, else as given."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def drop_node_extensions(raw: bytes) -> bytes:
    """Cut `bootstrap.node.extensions` out of Envoy's pretty JSON, byte for byte.

    Envoy lists every compiled-in extension there (516 entries, ~87 KB in
    1.40), which alone would push each dump past the fixture size budget and
    says nothing about listeners. Everything else stays exactly as Envoy wrote
    it (same key order, same indentation); the result is checked to parse to
    the full dump minus that one field.
    """
    lines = raw.decode("utf-8").split("\n")
    starts = [i for i, l in enumerate(lines) if l.strip() == '"extensions": [']
    if len(starts) != 1:
        raise Failure(f"expected one node 'extensions' array in the dump, found {len(starts)}")
    i = starts[0]
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    j = next((n for n in range(i + 1, len(lines)) if lines[n] in (indent + "]", indent + "],")), None)
    if j is None:
        raise Failure("unterminated 'extensions' array in the dump")
    kept = lines[:i] + lines[j + 1 :]
    if not lines[j].endswith(","):
        # It was the last member: drop the comma of the member before it.
        if not kept[i - 1].endswith(","):
            raise Failure("unexpected layout around 'extensions' in the dump")
        kept[i - 1] = kept[i - 1][:-1]
    out = "\n".join(kept).encode("utf-8")
    full = json.loads(raw)
    boot = next(c for c in full["configs"] if c["@type"].endswith("BootstrapConfigDump"))
    del boot["bootstrap"]["node"]["extensions"]
    if json.loads(out) != full:
        raise Failure("trimming node.extensions changed more than that field")
    return out


def check_error_details(dynamic: dict) -> None:
    for c in dynamic.get("configs", []):
        name = c.get("name")
        if name in EXPECTED_LDS_REJECTIONS and "error_state" in c:
            details = c["error_state"].get("details", "")
            if EXPECTED_LDS_REJECTIONS[name] not in details:
                raise Failure(f"unexpected error for {name}: {details}")


def chain_count(listener: dict) -> int:
    chains = listener.get("filter_chains", listener.get("filterChains", []))
    # Envoy reads a single chain object where the list belongs as a list of one.
    return 1 if isinstance(chains, dict) else len(chains)


def summarize(dump: dict, label: str) -> None:
    ld = listeners_dump(dump)
    log(f"{label}: listeners version_info={ld.get('version_info')!r}")
    for s in ld.get("static_listeners", []):
        lst = s["listener"]
        log(f"  static   {lst['name']}: {chain_count(lst)} chain(s)")
    for d in ld.get("dynamic_listeners", []):
        states = [k for k in ("active_state", "warming_state", "draining_state", "error_state") if k in d]
        parts = []
        for k in states:
            st = d[k]
            lst = st.get("listener") or st.get("failed_configuration")
            parts.append(f"{k.removesuffix('_state')}({chain_count(lst)} chains)")
        log(f"  dynamic  {d.get('name', '<unnamed>')}: {', '.join(parts)}")


# --------------------------------------------------------------------------
# A small YAML reader: block mappings/sequences, plain/quoted scalars, simple
# flow collections, literal/folded block scalars, comments, `---` streams.
# No anchors, tags, multi-line plain or quoted scalars, complex keys.


class YamlError(Exception):
    pass


_KEY_RE = re.compile(
    r"""^(?P<key>"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"\[\]{},&*!|>%@`-][^#]*?|-[^\s#][^#]*?)\s*:(?:\s+(?P<rest>.*))?$"""
)
_INT_RE = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_FLOAT_RE = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$")


def _plain(s: str):
    if s in ("", "~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if _INT_RE.match(s):
        return int(s)
    if re.match(r"^0[0-7]+$", s) or s.startswith("0x") or s.startswith("0o"):
        raise YamlError(f"ambiguous number {s!r}: quote it")
    if _FLOAT_RE.match(s):
        return float(s)
    return s


def _strip_comment(s: str) -> str:
    m = re.search(r"(^|\s)#", s)
    return s[: m.start()].rstrip() if m else s.rstrip()


def _quoted(s: str, pos: int) -> tuple[str, int]:
    """Parse a quoted scalar starting at s[pos]; return (value, end index)."""
    q = s[pos]
    i = pos + 1
    if q == "'":
        out = []
        while i < len(s):
            if s[i] == "'":
                if i + 1 < len(s) and s[i + 1] == "'":
                    out.append("'")
                    i += 2
                    continue
                return "".join(out), i + 1
            out.append(s[i])
            i += 1
        raise YamlError(f"unterminated quote in {s!r}")
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == '"':
            raw = s[pos : i + 1]
            try:
                return json.loads(raw), i + 1
            except json.JSONDecodeError as e:
                raise YamlError(f"unsupported escape in {raw}: {e}")
        i += 1
    raise YamlError(f"unterminated quote in {s!r}")


def _flow(s: str, pos: int):
    """Parse a flow node at s[pos]; return (value, end)."""
    while pos < len(s) and s[pos] == " ":
        pos += 1
    c = s[pos]
    if c in "[{":
        close = "]" if c == "[" else "}"
        out: list | dict = [] if c == "[" else {}
        pos += 1
        while True:
            while pos < len(s) and s[pos] == " ":
                pos += 1
            if pos >= len(s):
                raise YamlError(f"unterminated flow collection in {s!r}")
            if s[pos] == close:
                return out, pos + 1
            if c == "[":
                val, pos = _flow(s, pos)
                out.append(val)
            else:
                key, pos = _flow(s, pos)
                while pos < len(s) and s[pos] == " ":
                    pos += 1
                if pos >= len(s) or s[pos] != ":":
                    raise YamlError(f"expected ':' in flow mapping {s!r}")
                val, pos = _flow(s, pos + 1)
                out[key] = val
            while pos < len(s) and s[pos] == " ":
                pos += 1
            if pos < len(s) and s[pos] == ",":
                pos += 1
            elif pos < len(s) and s[pos] != close:
                raise YamlError(f"expected ',' or {close!r} in {s!r}")
    if c in "'\"":
        return _quoted(s, pos)
    end = pos
    while end < len(s) and s[end] not in ",]}" and not (s[end] == ":" and (end + 1 == len(s) or s[end + 1] == " ")):
        end += 1
    return _plain(s[pos:end].strip()), end


def _scalar(rest: str):
    rest = rest.strip()
    if rest.startswith(("'", '"')):
        val, end = _quoted(rest, 0)
        tail = rest[end:].strip()
        if tail and not tail.startswith("#"):
            raise YamlError(f"text after quoted scalar: {rest!r}")
        return val
    rest = _strip_comment(rest)
    if rest.startswith(("[", "{")):
        val, end = _flow(rest, 0)
        if rest[end:].strip():
            raise YamlError(f"text after flow collection: {rest!r}")
        return val
    if rest.startswith(("&", "*", "!", "|", ">", "%", "@", "`")):
        raise YamlError(f"unsupported YAML construct: {rest!r}")
    return _plain(rest)


class _Reader:
    def __init__(self, lines: list[str], where: str):
        self.lines = lines
        self.i = 0
        self.where = where

    def err(self, msg: str) -> YamlError:
        return YamlError(f"{self.where}:{self.i + 1}: {msg}")

    def _skip(self) -> None:
        while self.i < len(self.lines):
            s = self.lines[self.i].strip()
            if s and not s.startswith("#"):
                return
            self.i += 1

    def _cur(self):
        self._skip()
        if self.i >= len(self.lines):
            return None
        line = self.lines[self.i]
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise self.err("tab in indentation")
        return len(line) - len(line.lstrip(" ")), line.strip()

    @staticmethod
    def _is_item(content: str) -> bool:
        return content == "-" or content.startswith("- ")

    def node(self, indent: int):
        cur = self._cur()
        if cur is None:
            return None
        ind, content = cur
        if ind != indent:
            raise self.err(f"expected indentation {indent}, got {ind}")
        if self._is_item(content):
            return self.seq(ind)
        if _KEY_RE.match(content):
            return self.mapping(ind)
        self.i += 1
        val = _scalar(content)
        nxt = self._cur()
        if nxt is not None and nxt[0] > indent:
            raise self.err("multi-line scalars are not supported")
        return val

    def seq(self, indent: int) -> list:
        out = []
        while True:
            cur = self._cur()
            if cur is None or cur[0] != indent or not self._is_item(cur[1]):
                if cur is not None and cur[0] > indent:
                    raise self.err("bad indentation in sequence")
                return out
            content = cur[1]
            rest = content[1:].lstrip(" ")
            if rest == "" or rest.startswith("#"):
                self.i += 1
                nxt = self._cur()
                if nxt is not None and nxt[0] > indent:
                    out.append(self.node(nxt[0]))
                else:
                    out.append(None)
            else:
                col = indent + len(content) - len(rest)
                self.lines[self.i] = " " * col + rest
                out.append(self.node(col))

    def block_scalar(self, indent: int, header: str) -> str:
        style, chomp = header[0], header[1:]
        if chomp not in ("", "-", "+"):
            raise self.err(f"unsupported block scalar header {header!r}")
        body: list[str] = []
        block_indent = None
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() == "":
                body.append("")
                self.i += 1
                continue
            ind = len(line) - len(line.lstrip(" "))
            if ind <= indent:
                break
            if block_indent is None:
                block_indent = ind
            if ind < block_indent:
                raise self.err("bad indentation in block scalar")
            body.append(line[block_indent:])
            self.i += 1
        while body and body[-1] == "" and chomp != "+":
            body.pop()
            # trailing blank lines belong to the scalar only with '+'
        if style == "|":
            text = "\n".join(body)
        else:
            text = " ".join(b for b in body)  # simple folding; no nested indents
        if chomp == "-":
            return text
        return text + "\n" if body else ""

    def mapping(self, indent: int) -> dict:
        out: dict = {}
        while True:
            cur = self._cur()
            if cur is None or cur[0] != indent or self._is_item(cur[1]):
                if cur is not None and cur[0] > indent:
                    raise self.err("bad indentation in mapping")
                return out
            m = _KEY_RE.match(cur[1])
            if not m:
                raise self.err(f"expected 'key: value', got {cur[1]!r}")
            rawkey = m.group("key").strip()
            key = _quoted(rawkey, 0)[0] if rawkey[0] in "'\"" else rawkey
            if key in out:
                raise self.err(f"duplicate key {key!r}")
            rest = _strip_comment(m.group("rest") or "")
            self.i += 1
            if rest == "":
                nxt = self._cur()
                if nxt is not None and nxt[0] > indent:
                    out[key] = self.node(nxt[0])
                elif nxt is not None and nxt[0] == indent and self._is_item(nxt[1]):
                    out[key] = self.seq(indent)
                else:
                    out[key] = None
            elif rest[0] in "|>" and re.fullmatch(r"[|>][-+]?", rest):
                out[key] = self.block_scalar(indent, rest)
            else:
                out[key] = _scalar(m.group("rest") or "")
                nxt = self._cur()
                if nxt is not None and nxt[0] > indent:
                    raise self.err("multi-line scalars are not supported")


def yaml_load_all(text: str, where: str = "<yaml>") -> list:
    docs: list[list[str]] = [[]]
    for line in text.split("\n"):
        if re.match(r"^---\s*(#.*)?$", line):
            docs.append([])
        elif re.match(r"^\.\.\.\s*$", line) or line.startswith("%"):
            raise YamlError(f"{where}: unsupported directive/document end: {line!r}")
        else:
            docs[-1].append(line)
    out = []
    for lines in docs:
        r = _Reader(lines, where)
        cur = r._cur()
        if cur is None:
            continue
        val = r.node(cur[0])
        if r._cur() is not None:
            raise r.err("unexpected content after document")
        out.append(val)
    return out


def load_any(path: Path) -> list:
    """All documents of a JSON or YAML file."""
    text = path.read_text()
    if path.suffix == ".json":
        return [json.loads(text)]
    return yaml_load_all(text, str(path.relative_to(REPO)))


# --------------------------------------------------------------------------
# Validation of fixtures


def get(d: dict, snake: str):
    """Field by proto name or its lowerCamelCase JSON name."""
    if snake in d:
        return d[snake]
    parts = snake.split("_")
    return d.get(parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:]))


def listeners_of(doc, where: str) -> list[dict]:
    """Listeners in a bare Listener, an array, or a (Delta)DiscoveryResponse. Resources may be
    envoy.service.discovery.v3.Resource wrappers; resources of other types are left out."""
    if isinstance(doc, list):
        return [l for d in doc for l in listeners_of(d, where)]
    if not isinstance(doc, dict):
        raise Failure(f"{where}: unexpected document {type(doc).__name__}")
    if "resources" in doc:
        out = []
        for r in doc["resources"]:
            if isinstance(r.get("resource"), dict):
                r = r["resource"]
            if r.get("@type") == LISTENER_TYPE:
                out.append({k: v for k, v in r.items() if k != "@type"})
        return out
    return [{k: v for k, v in doc.items() if k != "@type"}]


def cec_objects(doc, where: str) -> list[dict]:
    if doc is None:
        return []
    if doc.get("kind") == "List":
        return [o for item in doc.get("items", []) for o in cec_objects(item, where)]
    if doc.get("kind", "CiliumEnvoyConfig") not in ("CiliumEnvoyConfig", "CiliumClusterwideEnvoyConfig"):
        raise Failure(f"{where}: unexpected kind {doc.get('kind')!r}")
    return [doc]


def qualify(ns: str, cec: str, name: str) -> str:
    # pkg/policy/api ResourceQualifiedName: names that already contain '/' stay.
    # An empty name stays empty (unnamed resources must not become named).
    return name if name == "" or "/" in name else f"{ns}/{cec}/{name}"


def _ads() -> dict:
    return {"ads": {}, "resourceApiVersion": "V3"}


def fill_cilium_sources(node) -> None:
    """Give RDS/SDS/EDS references without a config source an ADS source, as
    the cilium-agent fills in its own xDS source."""
    if isinstance(node, dict):
        for key in ("rds",):
            if key in node and isinstance(node[key], dict) and get(node[key], "config_source") is None:
                node[key]["configSource"] = _ads()
        for key in ("tlsCertificateSdsSecretConfigs", "tls_certificate_sds_secret_configs"):
            for sds in node.get(key, []) or []:
                if get(sds, "sds_config") is None:
                    sds["sdsConfig"] = _ads()
        for key in ("edsClusterConfig", "eds_cluster_config"):
            if key in node and get(node[key], "eds_config") is None:
                node[key]["edsConfig"] = _ads()
        for v in node.values():
            fill_cilium_sources(v)
    elif isinstance(node, list):
        for v in node:
            fill_cilium_sources(v)


def cec_listeners(obj: dict, port_alloc) -> tuple[list[dict], list[dict]]:
    md = obj.get("metadata", {})
    ns = md.get("namespace", "") if obj.get("kind") != "CiliumClusterwideEnvoyConfig" else ""
    cec = md["name"]
    listeners, clusters = [], []
    for r in obj.get("spec", {}).get("resources", []):
        t = r.get("@type")
        body = copy.deepcopy({k: v for k, v in r.items() if k != "@type"})
        if t == LISTENER_TYPE:
            body["name"] = qualify(ns, cec, body["name"])
            if get(body, "address") is None:
                port = port_alloc()
                body["address"] = {"socketAddress": {"address": "127.0.0.1", "portValue": port}}
            fill_cilium_sources(body)
            listeners.append(body)
        elif t == CLUSTER_TYPE:
            fill_cilium_sources(body)
            clusters.append(body)
        elif t == ROUTE_TYPE:
            pass
        else:
            raise Failure(f"CEC {ns}/{cec}: unsupported resource type {t!r}")
    return listeners, clusters


def referenced_clusters(node, out: set[str]) -> set[str]:
    """Cluster names used by tcp_proxy and route actions (`cluster`, `weighted_clusters`)."""
    if isinstance(node, dict):
        if isinstance(node.get("cluster"), str):
            out.add(node["cluster"])
        for v in node.values():
            referenced_clusters(v, out)
    elif isinstance(node, list):
        for v in node:
            referenced_clusters(v, out)
    return out


def wrap_bootstrap(listeners: list[dict], clusters: list[dict] | None = None, base: dict | None = None) -> dict:
    """A bootstrap with `listeners` as static listeners. Clusters the listeners
    name but nobody defines get an empty STATIC stub (Envoy checks that inline
    routes name known clusters; in production CDS provides them)."""
    b = copy.deepcopy(base) if base else {}
    b.setdefault("node", {"id": "host~127.0.0.1~no-id~localdomain", "cluster": "ingress-cluster"})
    b.pop("admin", None)
    b.pop("dynamic_resources", None)
    sr = b.setdefault("static_resources", {})
    sr["listeners"] = listeners
    sr["clusters"] = sr.get("clusters", []) + (clusters or [])
    known = {c["name"] for c in sr["clusters"]}
    for name in sorted(referenced_clusters(listeners, set()) - known):
        sr["clusters"].append({"name": name, "type": "STATIC", "connect_timeout": "1s"})
    return b


class Validator:
    def __init__(self, envoy: str, tmp: Path):
        self.envoy = envoy
        self.tmp = tmp
        self.n = 0
        self.failures: list[str] = []

    def run(self, label: str, bootstrap: dict, expect_error: str | None = None) -> None:
        self.n += 1
        path = self.tmp / f"v{self.n:03d}.json"
        path.write_text(json.dumps(bootstrap, indent=1))
        ok, out = envoy_validate(self.envoy, path, self.tmp)
        if expect_error is None:
            if ok:
                log(f"  ok       {label}")
            else:
                self.failures.append(f"{label}: rejected: {validation_error(out)}")
                log(f"  REJECTED {label}: {validation_error(out)}")
        else:
            err = validation_error(out)
            if not ok and expect_error in err:
                log(f"  rejected {label} (as expected): {err}")
            else:
                self.failures.append(f"{label}: expected rejection containing {expect_error!r}, got {'OK' if ok else err}")
                log(f"  UNEXPECTED {label}: {'accepted' if ok else err}")


def readme_rows(readme: Path) -> set[tuple[str, str, int]]:
    """Rows `| `file` | `listener` | chains | ... |` of the README tables."""
    rows = set()
    for line in readme.read_text().splitlines():
        m = re.match(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]*)`\s*\|\s*(\d+)\s*\|", line)
        if m:
            rows.add((m.group(1), m.group(2), int(m.group(3))))
    return rows


def check_readme(readme: Path, actual: set[tuple[str, str, int]], failures: list[str]) -> None:
    if not readme.exists():
        failures.append(f"{readme.relative_to(REPO)} is missing")
        return
    documented = readme_rows(readme)
    for row in sorted(actual - documented):
        failures.append(f"{readme.relative_to(REPO)}: no row for {row}")
    for row in sorted(documented - actual):
        failures.append(f"{readme.relative_to(REPO)}: row {row} does not match the files")
    if actual == documented:
        log(f"  {readme.relative_to(REPO)}: table matches ({len(actual)} listeners)")


def validate_all(envoy: str) -> None:
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="xdsck-validate-"))
    try:
        v = Validator(envoy, tmp)

        log("testdata/envoy/src: bootstraps")
        (tmp / "lds").mkdir()
        shutil.copy(SRC / "lds.yaml", tmp / "lds" / "lds.yaml")
        for name in ("bootstrap.yaml", "bootstrap.json"):
            shutil.copy(SRC / name, tmp / name)
            ok, out = envoy_validate(envoy, tmp / name, tmp)
            log(f"  {'ok      ' if ok else 'REJECTED'} src/{name}" + ("" if ok else f": {validation_error(out)}"))
            if not ok:
                v.failures.append(f"src/{name}: {validation_error(out)}")
        base = json.loads((SRC / "bootstrap.json").read_text())

        log("testdata/envoy/src: LDS listeners (wrapped as static listeners of bootstrap.json)")
        for lds in ("lds.yaml", "lds-update.yaml"):
            for doc in load_any(SRC / lds):
                for lst in listeners_of(doc, lds):
                    expect = EXPECTED_LDS_REJECTIONS.get(lst["name"]) if lds == "lds-update.yaml" else None
                    v.run(f"src/{lds} {lst['name']}", wrap_bootstrap([lst], base=base), expect)

        log("testdata/listeners")
        actual: set[tuple[str, str, int]] = set()
        for path in sorted(LISTENERS_DIR.glob("*")):
            if path.suffix not in (".json", ".yaml", ".yml"):
                continue
            rel = path.name
            lsts = [l for doc in load_any(path) for l in listeners_of(doc, rel)]
            for l in lsts:
                actual.add((rel, l.get("name", ""), chain_count(l)))
            v.run(f"{rel} ({len(lsts)} listener(s))", wrap_bootstrap(lsts, base=base))
        check_readme(LISTENERS_DIR / "README.md", actual, v.failures)

        log("testdata/cilium")
        actual = set()
        next_port = iter(range(23000, 24000))
        for path in sorted(CILIUM_DIR.glob("*.yaml")):
            rel = path.name
            lsts, clusters = [], []
            for doc in load_any(path):
                for obj in cec_objects(doc, rel):
                    l, c = cec_listeners(obj, lambda: next(next_port))
                    lsts += l
                    clusters += c
            for l in lsts:
                actual.add((rel, l["name"], chain_count(l)))
            # Cluster names repeat across CECs of one file only if the fixture
            # says so; Envoy would reject duplicates, so keep the first.
            seen, uniq = set(), []
            for c in clusters:
                if c["name"] not in seen:
                    seen.add(c["name"])
                    uniq.append(c)
            v.run(f"{rel} ({len(lsts)} listener(s), {len(uniq)} cluster(s))", wrap_bootstrap(lsts, uniq))
        check_readme(CILIUM_DIR / "README.md", actual, v.failures)

        log(f"{v.n + 2} Envoy validations in {time.monotonic() - t0:.1f}s")
        if v.failures:
            raise Failure("validation failed:\n  " + "\n  ".join(v.failures))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--validate-only", action="store_true", help="validate fixtures with `envoy --mode validate`; write nothing")
    ap.add_argument("--keep-temp", action="store_true", help="keep Envoy's temp dir (and its log) for inspection")
    ap.add_argument(
        "--keep-node-extensions",
        action="store_true",
        help="write the dumps with bootstrap.node.extensions (~87 KB each); by default that one field is cut out",
    )
    ap.add_argument(
        "--out",
        metavar="DIR",
        type=Path,
        default=ENVOY_DIR,
        help="write the three dumps into DIR (created if missing) instead of testdata/envoy/",
    )
    args = ap.parse_args()
    if args.validate_only and args.out != ENVOY_DIR:
        ap.error("--out has no effect with --validate-only (it writes nothing)")
    try:
        envoy = find_envoy()
        if args.validate_only:
            validate_all(envoy)
        else:
            generate(envoy, args.keep_temp, args.keep_node_extensions, args.out.resolve())
    except (Failure, YamlError) as e:
        log(f"gen-envoy-fixtures: error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
