#!/usr/bin/env python3
"""Times xdsck, `envoy --mode validate` and a bare serde_json parse on the same generated files,
with peak memory, and prints the four ratios issue 6 sets as targets, for each input shape:
minified (one line of JSON, what `json.dump`, `json.Marshal` and `jq -c` write) and pretty
(indented, as Envoy's admin interface writes).

    python3 scripts/compare-envoy.py            # 10k and 100k tenants, both shapes (minutes)
    python3 scripts/compare-envoy.py --small 1000 --large 10000 --shapes minified
    python3 scripts/compare-envoy.py --data /tmp/xdsck-inputs   # generate once, reuse after
    python3 scripts/compare-envoy.py --routes    # each TLS chain's HCM with an inline route table
    python3 scripts/compare-envoy.py --layout per-tenant   # a listener per tenant (Istio's, Envoy Gateway's shape)
    python3 scripts/compare-envoy.py --baseline /tmp/base-build/release   # another build beside this one

Every number comes from one invocation on this machine (xdsck and the floor: the fastest of
`--runs`, default 3; Envoy: one run); the inputs are Envoy bootstraps made by
`xdsck-gen` (Cilium's TenantGateway layout, one shared 443 listener), which both Envoy and
xdsck read. With `--routes` every tenant's TLS-terminating chain carries an inline route table
(a virtual host per server name, five routes each) and the bootstrap the clusters they name,
so `check` does its route analysis too, and the same layout without tables (each chain's HCM
names an RDS table the input does not hold) is timed beside it at the small size, for the goal
that tables cost at most 2x. With `--layout per-tenant` each tenant has a listener
of its own (on its own address) instead of a chain set in one shared listener: 10k tenants are
10k listeners, the shape of a gateway that renders a listener per route or per tenant. Envoy runs only on the small input: at 100k tenants it takes many minutes.
Binaries are taken from `$CARGO_TARGET_DIR/release` (default `target/release`).

`--baseline DIR` times a second build's `xdsck` (DIR holds it, as built from another checkout
into a build directory of its own: `git worktree add /tmp/base REV && cd /tmp/base &&
CARGO_TARGET_DIR=/tmp/base-build cargo build --release -p xdsck`, then `--baseline
/tmp/base-build/release`) in the same run, each of its runs next to one of this build's, and prints
each ratio as `baseline -> this`: both divided by the same Envoy run and the same floor, so the
comparison does not move with Envoy's own time (which varies by a quarter from run to run).
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"), "release")
SHAPES = ("minified", "pretty")


def run(cmd, stdout=None):
    """Wall time and peak RSS (bytes) of one command, run in a fresh child process, its output
    written to the file `stdout` (or discarded)."""
    probe = (
        "import os, resource, subprocess, sys, time\n"
        "out = open(os.environ['XDSCK_COMPARE_OUT'], 'wb') if os.environ.get('XDSCK_COMPARE_OUT') else subprocess.DEVNULL\n"
        "t = time.monotonic()\n"
        "p = subprocess.run(sys.argv[1:], stdout=out, stderr=subprocess.PIPE)\n"
        "e = time.monotonic() - t\n"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "sys.stderr.write(p.stderr.decode(errors='replace')[-2000:] if p.returncode not in (0, 1) else '')\n"
        "print(e, r * 1024, p.returncode)\n"
    )
    env = dict(os.environ, XDSCK_COMPARE_OUT=stdout or "")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True, env=env)
    if out.returncode != 0 or not out.stdout.strip():
        sys.exit(f"compare-envoy: {' '.join(cmd)} failed:\n{out.stderr}")
    elapsed, rss, code = out.stdout.split()
    if int(code) not in (0, 1):
        sys.exit(f"compare-envoy: {' '.join(cmd)} exited {code}:\n{out.stderr}")
    return float(elapsed), int(rss)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=10_000, help="tenants of the input Envoy also validates")
    ap.add_argument("--large", type=int, default=100_000, help="tenants of the scaling input")
    ap.add_argument("--runs", type=int, default=3, help="runs per xdsck/floor measurement; the fastest counts")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: minified, pretty")
    ap.add_argument("--routes", action="store_true", help="inline route tables per TLS chain (and their clusters)")
    ap.add_argument("--layout", default="shared", choices=("shared", "per-tenant"), help="one shared listener, or a listener per tenant")
    ap.add_argument("--data", help="directory for the generated inputs, kept and reused (default: a temporary one)")
    ap.add_argument("--baseline", help="directory of another build's xdsck binary, timed beside this build's")
    args = ap.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    baseline = os.path.join(args.baseline, "xdsck") if args.baseline else None
    if baseline and not os.access(baseline, os.X_OK):
        sys.exit(f"compare-envoy: --baseline: no executable {baseline}")
    if not shapes or any(s not in SHAPES for s in shapes):
        sys.exit(f"compare-envoy: --shapes takes {', '.join(SHAPES)}")

    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "xdsck", "-p", "xdsck-benches"], cwd=ROOT, check=True)
    envoy = subprocess.run([os.path.join(ROOT, "scripts", "install-envoy.sh")], capture_output=True, text=True, check=True).stdout.strip()

    with tempfile.TemporaryDirectory(prefix="xdsck-compare-") as tmp:
        data = os.path.abspath(args.data) if args.data else tmp
        os.makedirs(data, exist_ok=True)
        files = {}
        layout = "per-tenant-" if args.layout == "per-tenant" else ""
        # With --routes, "plain" is the small input without its tables: what they cost.
        inputs = [("small", args.small, args.routes), ("large", args.large, args.routes)]
        inputs += [("plain", args.small, False)] if args.routes else []
        for shape in shapes:
            for size, tenants, routes in inputs:
                path = os.path.join(data, f"bootstrap-{'routes-' if routes else ''}{layout}{tenants}-{shape}.json")
                if not (args.data and os.path.exists(path)):
                    flags = ["--minified"] if shape == "minified" else []
                    flags += ["--routes", "inline"] if routes else []
                    flags += ["--layout", args.layout]
                    subprocess.run([os.path.join(RELEASE, "xdsck-gen"), "--tenants", str(tenants), "--format", "bootstrap-json", *flags, "--out", path], check=True)
                files[(shape, size)] = (tenants, path, os.path.getsize(path))

        # Run from the temporary directory: no checkout's xdsck.toml applies (a baseline build
        # may not know its settings), so every build reads the defaults.
        os.chdir(tmp)
        # `--format json` to a file, as the goals say: all findings written out.
        out = os.path.join(tmp, "report.json")
        check = lambda binary: lambda p: ([binary, "check", p, "--format", "json", "--fail-on", "never"], out)
        xdsck = check(os.path.join(RELEASE, "xdsck"))
        floor = lambda p: ([os.path.join(RELEASE, "xdsck-floor"), p], None)
        pairs = [("xdsck", xdsck)] + ([("baseline", check(baseline))] if baseline else [])
        fastest = lambda runs: min(runs, key=lambda r: r[0])
        results = {}
        # The fastest of a few runs: what the code costs, not what else the machine was doing.
        # Envoy runs once (a quarter of a minute); one run only flatters xdsck's ratio less.
        # Shapes alternate within each measurement, so both see the same machine; a baseline's
        # runs alternate with this build's.
        for size in [size for size, _, _ in inputs]:
            for shape in shapes:
                path = files[(shape, size)][1]
                runs = {tool: [] for tool, _ in pairs}
                for _ in range(max(1, args.runs)):
                    for tool, cmd in pairs:
                        runs[tool].append(run(*cmd(path)))
                for tool, r in runs.items():
                    results[(shape, size, tool)] = fastest(r)
            for shape in shapes if size != "plain" else ():
                path = files[(shape, size)][1]
                results[(shape, size, "floor")] = fastest([run(*floor(path)) for _ in range(max(1, args.runs))])
        for shape in shapes:
            path = files[(shape, "small")][1]
            results[(shape, "small", "envoy")] = run([envoy, "--mode", "validate", "--disable-hot-restart", "-l", "error", "-c", path])

    names = {
        "envoy": "envoy --mode validate",
        "baseline": "xdsck check (baseline)",
        "xdsck": "xdsck check",
        "floor": "serde_json IgnoredAny",
    }
    print(f"{'input':<44} {'tool':<22} {'seconds':>9} {'peak MB':>9}")
    for size in [size for size, _, _ in inputs]:
        for shape in shapes:
            tenants, path, bytes_ = files[(shape, size)]
            label = f"{tenants} tenants {shape}{', no tables' if size == 'plain' else ''} ({bytes_ / 1e6:.0f} MB)"
            for tool in ("envoy", "baseline", "xdsck", "floor"):
                if (shape, size, tool) in results:
                    t, rss = results[(shape, size, tool)]
                    print(f"{label:<44} {names[tool]:<22} {t:>9.2f} {rss / 1e6:>9.0f}")

    print()
    # Each ratio of one xdsck build `x`, from the results `r` and file sizes `f` of one shape.
    rows = [
        (f"envoy / xdsck at {args.small} tenants", lambda r, f, x: r["small", "envoy"][0] / r["small", x][0], ">= 200", lambda v: v >= 200),
        (f"xdsck / bare parse at {args.large} tenants", lambda r, f, x: r["large", x][0] / r["large", "floor"][0], "<= 1.5", lambda v: v <= 1.5),
        (f"xdsck time {args.large} / {args.small}", lambda r, f, x: r["large", x][0] / r["small", x][0], "<= 12", lambda v: v <= 12),
        (f"xdsck peak RSS / file size at {args.large}", lambda r, f, x: r["large", x][1] / f["large"][2], "<= 2", lambda v: v <= 2),
    ]
    if args.routes:
        rows.append((f"with tables / without at {args.small}", lambda r, f, x: r["small", x][0] / r["plain", x][0], "<= 2", lambda v: v <= 2))
    width = 20 if baseline else 9
    print(f"{'ratio':<44} " + " ".join(f"{s:>{width}}" for s in shapes) + "  target")
    for label, ratio, target, ok in rows:
        cells = []
        for shape in shapes:
            r = {k[1:]: v for k, v in results.items() if k[0] == shape}
            f = {k[1]: v for k, v in files.items() if k[0] == shape}
            v = ratio(r, f, "xdsck")
            cell = f"{ratio(r, f, 'baseline'):.2f} -> {v:.2f}" if baseline else f"{v:.2f}"
            cells.append(f"{cell:>{width - 1}}{' ' if ok(v) else '!'}")
        print(f"{label:<44} " + " ".join(cells) + f"  {target}")
    print("(! = target missed)")


if __name__ == "__main__":
    main()
