#!/usr/bin/env python3
"""The instruction-count gate: how many instructions `xdsck check` executes end to end on the
generated 10k-tenant gateway (one 443 listener, per tenant a `*.apex` terminate chain and three
passthrough names), written minified and pretty, counted by callgrind and compared with the
record in benches/instructions.json.

    python3 scripts/instructions.py                     # compare with the record (CI)
    python3 scripts/instructions.py --update "why"      # write the counts of this build

Wall-clock time moves by a tenth from run to run on a shared machine; an instruction count
moves by less than a thousandth (callgrind simulates the CPU: the same binary, input and
environment give the same count whatever else runs). So this catches a change that makes the
run 5% costlier, which no timing can. A count more than `tolerance` (5%) above the record fails;
the fix is to make the change cheaper, or to run with `--update` and say why in the record (a
new check that does more work, a new toolchain). A count far below the record is printed as
such: update the record so the gate guards the new level.

Counted: the release build of `xdsck check FILE --no-config --format json --fail-on never`
(every finding written as JSON), on one thread (`RAYON_NUM_THREADS=1`: work-stealing across
threads changes the count a little from run to run), with callgrind's defaults. Needs
valgrind (scripts/install-valgrind.sh) and builds what it runs (`cargo build --release`).
Wall times and memory stay with scripts/compare-envoy.py.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, "benches", "instructions.json")
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
RELEASE = os.path.join(TARGET, "release")
SHAPES = ("minified", "pretty")


def build():
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "-q", "-p", "xdsck", "-p", "xdsck-benches", "--bin", "xdsck", "--bin", "xdsck-gen"],
        cwd=ROOT,
        check=True,
    )


def rustc_version():
    return subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=True).stdout.strip()


class CountFailed(Exception):
    """A run under callgrind that gave no count: it failed, or did not finish in time."""


def count(valgrind, path, xdsck=None, timeout=None):
    """Instructions of one `xdsck check` of `path` under callgrind (`xdsck`: another build's
    binary; `timeout`: seconds, after which the run fails). Raises CountFailed: the caller says
    what the run was for, and whether the others go on."""
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    cmd = [
        valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null",
        xdsck or os.path.join(RELEASE, "xdsck"), "check", path, "--no-config", "--format", "json", "--fail-on", "never",
    ]
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CountFailed(f"{' '.join(cmd)} did not finish in {timeout} s") from None
    found = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or not found:
        raise CountFailed(f"{' '.join(cmd)} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    return int(found.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", metavar="WHY", help="write this build's counts to the record, saying why they changed")
    ap.add_argument("--valgrind", default="valgrind", help="the valgrind to count with")
    args = ap.parse_args()

    with open(RECORD) as f:
        record = json.load(f)
    tenants, tolerance = record["tenants"], record["tolerance"]
    build()
    with tempfile.TemporaryDirectory(prefix="xdsck-instructions-") as tmp:
        paths = []
        for shape in SHAPES:
            path = os.path.join(tmp, f"bootstrap-{tenants}-{shape}.json")
            flags = ["--minified"] if shape == "minified" else []
            gen = [os.path.join(RELEASE, "xdsck-gen"), "--tenants", str(tenants), "--format", "bootstrap-json", *flags, "--out", path]
            subprocess.run(gen, check=True)
            paths.append(path)
        # Both at once: a count does not depend on what runs beside it.
        with ThreadPoolExecutor(max_workers=len(paths)) as pool:
            try:
                counts = dict(zip(SHAPES, pool.map(lambda path: count(args.valgrind, path), paths)))
            except CountFailed as e:
                sys.exit(f"instructions: {e}")

    rustc = rustc_version()
    if args.update:
        record.update(counts=counts, rustc=rustc, why=args.update)
        with open(RECORD, "w") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
        print(f"instructions: record updated: {counts}")
        return 0

    print(f"instruction counts, {tenants} tenants, `xdsck check --format json` (record: {record['why']})")
    print(f"{'shape':<10} {'record':>15} {'this build':>15} {'change':>8}")
    failed = []
    for shape in SHAPES:
        was, now = record["counts"][shape], counts[shape]
        change = now / was - 1
        print(f"{shape:<10} {was:>15,} {now:>15,} {change:>+8.2%}")
        if change > tolerance:
            failed.append(f"{shape}: {change:+.2%} instructions, over the {tolerance:.0%} the record allows")
        elif change < -tolerance:
            print(f"  {shape}: {-change:.2%} fewer than the record: `--update` it so the gate guards the new level")
    if rustc != record["rustc"]:
        print(f"  (the record was made with {record['rustc']}; this is {rustc}: a new toolchain moves counts)")
    if failed:
        # On standard output, after the table it explains (test.sh merges the two streams).
        print("instructions: " + "; ".join(failed))
        print("  make the change cheaper, or record it: python3 scripts/instructions.py --update \"why\"")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
