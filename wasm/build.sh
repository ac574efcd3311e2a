#!/usr/bin/env bash
# Builds the web page into wasm/dist/ (static files, index.html at its root):
#   1. the adapter crate for wasm32-unknown-unknown with the `wasm-release` profile (opt-level 3,
#      SIMD: .cargo/config.toml);
#   2. wasm-bindgen-cli at exactly the version of the wasm-bindgen crate in Cargo.lock
#      (`cargo install`ed when missing or different; takes ~5 minutes the first time);
#   3. wasm-opt -O1 from npm's binaryen (installed into .tools/node), skipped with a message
#      when it cannot be installed or run;
#   4. the page's own files from wasm/web/.
# Open it with e.g. `python3 -m http.server -d wasm/dist` and http://localhost:8000/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BINARYEN_VERSION=132.0.0
# The budget catches a change that bloats the page: every file of it together (what a browser
# downloads to open it) under 6.5 MiB (about 2 MiB as servers send it, gzip-compressed).
# Envoy's schema reader took the .wasm from 1.4 MiB to 3.9 MiB: its generic code is compiled
# once per typed reader, and its descriptor set is carried deflated. Built for speed (opt-level
# 3) rather than size it is 6.4 MiB: a 97 MiB dump's findings show in half the time.
#
# wasm-opt -O1, not -O3: npm's binaryen is itself WebAssembly run by node, on one core; on the
# 2-core CI machine -O3 took 166 s (-O2 93 s, -O1 37 s) for a page no faster (the 97 MiB dump,
# two runs each: findings shown after 3.01 / 3.95 s with -O3, 3.07 / 3.57 with -O2, 3.19 / 3.09
# with -O1, 3.37 / 3.65 without) and 2.5% smaller (6.51 MB against 6.68), though not as a
# server sends it: gzip-compressed, -O1's is the smaller, 2.00 MB against 2.03. A native
# binaryen was no way out: Debian's (108) and the wasm-opt crate's (116) cannot read what
# rustc writes. Should the budget below bite, -O2 makes the .wasm 90 KB smaller for 56 s more.
MAX_PAGE_BYTES=$((6656 * 1024))
out=wasm/dist
say() { printf '%s\n' "$*" >&2; }

if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown >&2
fi
scripts/install-wasm-bindgen.sh

cargo build --locked --profile wasm-release --target wasm32-unknown-unknown -p xdsck-wasm
# Wherever cargo put it (CARGO_TARGET_DIR may point outside the repository).
wasm="$(scripts/target-dir.sh)/wasm32-unknown-unknown/wasm-release/xdsck_wasm.wasm"

rm -rf "$out"
mkdir -p "$out/pkg"
wasm-bindgen --target web --no-typescript --out-dir "$out/pkg" "$wasm"

bg="$out/pkg/xdsck_wasm_bg.wasm"
wasm_opt=.tools/node/node_modules/.bin/wasm-opt
if [[ ! -x $wasm_opt ]]; then
  mkdir -p .tools/node
  npm install --prefix .tools/node --no-save --no-audit --no-fund --loglevel=error "binaryen@$BINARYEN_VERSION" >&2 ||
    say "note: could not install binaryen from npm; the .wasm is not run through wasm-opt"
fi
if [[ -x $wasm_opt ]] && "$wasm_opt" -O1 --strip-debug --strip-producers "$bg" -o "$bg.opt" 2>/dev/null; then
  mv "$bg.opt" "$bg"
elif [[ -x $wasm_opt ]]; then
  rm -f "$bg.opt"
  say "note: wasm-opt failed; the .wasm is not optimised further"
fi

cp wasm/web/index.html wasm/web/app.js wasm/web/worker.js wasm/web/style.css "$out/"

size=$(stat -c %s "$bg")
page=$(find "$out" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
say "built $out/ — $(basename "$bg") is $size bytes ($((size / 1024)) KiB), the whole page $page bytes ($((page / 1024)) KiB)"
if ((page > MAX_PAGE_BYTES)); then
  say "error: the page is over its $((MAX_PAGE_BYTES / 1024)) KiB budget"
  exit 1
fi
