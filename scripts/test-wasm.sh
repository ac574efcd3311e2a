#!/usr/bin/env bash
# The web page's tests (wasm/): clippy for wasm32, the adapter's wasm-bindgen tests in headless
# Chromium, the page's build (wasm/build.sh) and its end-to-end test (Node + playwright-core
# driving Debian's Chromium). Installs what they need when missing: the wasm32 target,
# wasm-bindgen-cli (cached in ~/.cargo/bin), Debian's chromium + chromium-driver, and the e2e's
# npm packages. Needs: cargo, npm; root (or sudo) when Chromium must be installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Each step says how long the run has taken so far (from test.sh's start when it ran this).
export XDSCK_TEST_STARTED=${XDSCK_TEST_STARTED:-$(date +%s)}
step() { printf '\n== %s  [%s]\n' "$*" "$(elapsed)" >&2; }
elapsed() { local s=$(($(date +%s) - XDSCK_TEST_STARTED)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

step "wasm: toolchain (wasm32 target, wasm-bindgen-cli, Chromium)"
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown >&2
fi
scripts/install-wasm-bindgen.sh
if [[ ! -x /usr/bin/chromium || ! -x /usr/bin/chromedriver ]]; then
  sudo=$([[ $(id -u) == 0 ]] || echo sudo)
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >&2
fi
/usr/bin/chromium --version >&2

step "wasm: cargo clippy --target wasm32-unknown-unknown"
# --no-deps: core is linted by the workspace clippy above; here only the adapter's wasm32 code.
cargo clippy -p xdsck-wasm --target wasm32-unknown-unknown --all-targets --locked --no-deps -- -D warnings

step "wasm: adapter tests in headless Chromium (wasm-bindgen-test)"
CHROMEDRIVER=/usr/bin/chromedriver cargo test -p xdsck-wasm --target wasm32-unknown-unknown --locked

step "wasm: build the page (wasm/build.sh)"
wasm/build.sh

step "wasm: end-to-end test of the page in Chromium"
# The same build `cargo test --workspace` made (features unified the same way): no rebuild after it.
cargo build --workspace --tests --locked
(cd wasm/e2e && npm ci --no-audit --no-fund --loglevel=error)
tdir=$(scripts/target-dir.sh)
(cd wasm/e2e && XDSCK_BIN="$tdir/debug/xdsck" XDSCK_E2E_ARTIFACTS="$tdir/e2e" npm test)
