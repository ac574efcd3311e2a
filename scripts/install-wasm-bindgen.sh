#!/usr/bin/env bash
# Installs wasm-bindgen-cli (wasm-bindgen and wasm-bindgen-test-runner) into ~/.cargo/bin at
# exactly the version of the wasm-bindgen crate in Cargo.lock: the CLI refuses a module built
# with another version. `--locked` is not used: one of its pinned dependencies is not served.
# `--debug`, without debug info: ~5 minutes to build instead of ~8.5 on a 2-core machine, and
# each run then takes ~2 s instead of ~0.5 s on xdsck's module.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
[[ -n $want ]] || { echo "error: no wasm-bindgen in Cargo.lock" >&2; exit 1; }
have=$(command -v wasm-bindgen >/dev/null && wasm-bindgen --version | awk '{print $2}' || true)
runner=$(command -v wasm-bindgen-test-runner >/dev/null && wasm-bindgen-test-runner --version | awk '{print $2}' || true)
if [[ $have == "$want" && $runner == "$want" ]]; then
  exit 0
fi
echo "installing wasm-bindgen-cli $want (found '${have:-none}'); this takes ~5 minutes" >&2
CARGO_PROFILE_DEV_DEBUG=0 cargo install --debug --force wasm-bindgen-cli --version "$want" >&2
