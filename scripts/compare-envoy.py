#!/usr/bin/env python3
"""Times xdsck, `envoy --mode validate` and a bare serde_json parse on the same generated files,
with peak memory, and prints the four ratios issue 6 sets as targets.

    python3 scripts/compare-envoy.py            # 10k and 100k tenants (a few minutes)
    python3 scripts/compare-envoy.py --small 1000 --large 10000

Every number comes from one invocation on this machine (xdsck and the floor: the fastest of
`--runs`, default 3; Envoy: one run); the inputs are Envoy bootstraps made by
`xdsck-gen` (Cilium's TenantGateway layout, one shared 443 listener), which both Envoy and
xdsck read. Envoy runs only on the small input: at 100k tenants it takes many minutes.
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(ROOT, "target", "release")


def run(cmd):
    """Wall time and peak RSS (bytes) of one command, run in a fresh child process."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.monotonic()\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
        "e = time.monotonic() - t\n"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "sys.stderr.write(p.stderr.decode(errors='replace')[-2000:] if p.returncode not in (0, 1) else '')\n"
        "print(e, r * 1024, p.returncode)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True)
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
    args = ap.parse_args()

    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "xdsck", "-p", "xdsck-benches"], cwd=ROOT, check=True)
    envoy = subprocess.run([os.path.join(ROOT, "scripts", "install-envoy.sh")], capture_output=True, text=True, check=True).stdout.strip()

    with tempfile.TemporaryDirectory(prefix="xdsck-compare-") as tmp:
        files = {}
        for name, tenants in (("small", args.small), ("large", args.large)):
            path = os.path.join(tmp, f"bootstrap-{tenants}.json")
            subprocess.run([os.path.join(RELEASE, "xdsck-gen"), "--tenants", str(tenants), "--format", "bootstrap-json", "--out", path], check=True)
            files[name] = (tenants, path, os.path.getsize(path))

        xdsck = lambda p: [os.path.join(RELEASE, "xdsck"), "check", p, "--format", "json", "--fail-on", "never"]
        floor = lambda p: [os.path.join(RELEASE, "xdsck-floor"), p]
        rows = []
        results = {}
        # The fastest of a few runs: what the code costs, not what else the machine was doing.
        # Envoy runs once (a quarter of a minute); one run only flatters xdsck's ratio less.
        best = lambda cmd: min((run(cmd) for _ in range(max(1, args.runs))), key=lambda r: r[0])
        for name in ("small", "large"):
            tenants, path, size = files[name]
            results[(name, "xdsck")] = best(xdsck(path))
            results[(name, "floor")] = best(floor(path))
        tenants, path, size = files["small"]
        results[("small", "envoy")] = run([envoy, "--mode", "validate", "--disable-hot-restart", "-l", "error", "-c", path])

    print(f"{'input':<28} {'tool':<22} {'seconds':>9} {'peak MB':>9}")
    for name in ("small", "large"):
        tenants, path, size = files[name]
        label = f"{tenants} tenants ({size / 1e6:.0f} MB)"
        for tool in ("envoy", "xdsck", "floor"):
            if (name, tool) in results:
                t, rss = results[(name, tool)]
                tool_label = {"envoy": "envoy --mode validate", "xdsck": "xdsck check", "floor": "serde_json IgnoredAny"}[tool]
                print(f"{label:<28} {tool_label:<22} {t:>9.2f} {rss / 1e6:>9.0f}")

    es, _ = results[("small", "envoy")]
    xs, _ = results[("small", "xdsck")]
    xl, rl = results[("large", "xdsck")]
    fl, _ = results[("large", "floor")]
    size_l = files["large"][2]
    ratios = [
        (f"envoy / xdsck at {args.small} tenants", es / xs, ">= 200", es / xs >= 200),
        (f"xdsck / bare parse at {args.large} tenants", xl / fl, "<= 1.5", xl / fl <= 1.5),
        (f"xdsck time {args.large} / {args.small}", xl / xs, "<= 12", xl / xs <= 12),
        (f"xdsck peak RSS / file size at {args.large}", rl / size_l, "<= 2", rl / size_l <= 2),
    ]
    print()
    for label, value, target, ok in ratios:
        print(f"{label:<44} {value:>8.2f}  target {target:<7} {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
