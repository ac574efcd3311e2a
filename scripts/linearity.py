#!/usr/bin/env python3
"""The linearity gate: each of the generator's shapes, written with n and 4n of what it grows
(virtual hosts with one domain, routes one covers, wildcard names, chains on one RDS table,
listeners on one address, names under one wildcard, chains told apart by port, names of one
chain, tenants), checked by `xdsck check` under callgrind. A run linear in its input costs
4x more at 4n; one quadratic in some dimension, 16x. What a run costs whatever its input (the
schema tables, the process) is taken off first: counted on the same shape with one element.

    python3 scripts/linearity.py              # every shape (CI)
    python3 scripts/linearity.py --shape same-domain --n 5000

A ratio over `--limit` (5: 4 and what n log n and noise add) fails. Instruction counts, not
time: the same binary and input give the same count on a loaded machine (see instructions.py,
whose counting this uses). A run that takes over `--timeout` seconds under callgrind fails too:
that is what a quadratic path looks like at 4n. Needs valgrind; builds what it runs.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from instructions import RELEASE, CountFailed, build, count  # noqa: E402

# (shape, format): the shared RDS table is written in a config_dump only.
SHAPES = (
    ("same-domain", "bootstrap-json"),
    ("covered-routes", "bootstrap-json"),
    ("wildcard-names", "bootstrap-json"),
    ("shared-table", "config-dump"),
    ("shared-address", "bootstrap-json"),
    ("wildcard-fanout", "bootstrap-json"),
    ("same-sni", "bootstrap-json"),
    ("many-names", "bootstrap-json"),
    ("tenants", "bootstrap-json"),
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--valgrind", default="valgrind", help="the valgrind to count with")
    ap.add_argument("--n", type=int, default=1000, help="the smaller size (the larger is 4n)")
    ap.add_argument("--limit", type=float, default=5.0, help="the largest ratio that passes")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one run may take under callgrind")
    ap.add_argument("--shape", action="append", help="only this shape (again for more)")
    ap.add_argument("--xdsck", help="count this binary instead of building the workspace's")
    args = ap.parse_args()

    shapes = [s for s in SHAPES if not args.shape or s[0] in args.shape]
    if not shapes:
        sys.exit(f"linearity: no shape is {args.shape}; the shapes: {', '.join(s for s, _ in SHAPES)}")
    build()
    print("instructions of `xdsck check --format json` (one thread), less the same shape with one element")
    print(f"{'shape':<16} {'one':>14} {'n = ' + str(args.n):>14} {'4n':>14} {'ratio':>6}")
    failed = []
    with tempfile.TemporaryDirectory(prefix="xdsck-linearity-") as tmp:
        runs = []
        for shape, fmt in shapes:
            for n in (1, args.n, 4 * args.n):
                path = os.path.join(tmp, f"{shape}-{n}.json")
                gen = [os.path.join(RELEASE, "xdsck-gen"), "--shape", shape, "--tenants", str(n), "--format", fmt, "--minified", "--out", path]
                subprocess.run(gen, check=True)
                runs.append(path)
        # One callgrind per core: a count does not depend on what runs beside it. A run that
        # gives no count fails its shape; the other shapes are still measured.
        def counted(path):
            try:
                return count(args.valgrind, path, args.xdsck, args.timeout)
            except CountFailed as e:
                return e

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            counts = list(pool.map(counted, runs))
    for i, (shape, _) in enumerate(shapes):
        one, small, large = counts[3 * i : 3 * i + 3]
        lost = next((c for c in (one, small, large) if isinstance(c, CountFailed)), None)
        if lost:
            print(f"{shape:<16} {'no count':>14}")
            failed.append(f"{shape}: {lost}")
            continue
        ratio = (large - one) / max(small - one, 1)
        print(f"{shape:<16} {one:>14,} {small:>14,} {large:>14,} {ratio:>6.2f}")
        if ratio > args.limit:
            failed.append(f"{shape}: {ratio:.2f}x the instructions at 4n, over {args.limit}")
    if failed:
        # On standard output, after the table it explains (test.sh merges the two streams).
        print("linearity: " + "; ".join(failed))
        print("  some dimension of that shape is read more than once per element: find it (perf, callgrind)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
