#!/usr/bin/env bash
# Print the absolute path of a pre-commit command (the pre-commit hook's test runs it),
# installing pre-commit from PyPI under <repo>/.tools/pre-commit if needed.
#
# Order: $XDSCK_PRE_COMMIT (if set and executable), else pre-commit==4.7.0 installed with pip
# into .tools/pre-commit and run through a wrapper there. Idempotent; on success stdout is
# exactly one line (the path), everything else goes to stderr.
set -euo pipefail

PRE_COMMIT_VERSION=4.7.0

die() {
  echo "install-pre-commit.sh: error: $*" >&2
  exit 1
}

if [[ -n "${XDSCK_PRE_COMMIT:-}" ]]; then
  [[ -x "$XDSCK_PRE_COMMIT" ]] || die "XDSCK_PRE_COMMIT=$XDSCK_PRE_COMMIT is not an executable file"
  printf '%s\n' "$XDSCK_PRE_COMMIT"
  exit 0
fi

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo_root=$(cd "$script_dir/.." && pwd -P)
target="$repo_root/.tools/pre-commit"
bin="$target/bin/pre-commit"
stamp="$target/.pre-commit-$PRE_COMMIT_VERSION"

if [[ ! -x "$bin" || ! -e "$stamp" ]]; then
  py=$(command -v python3 || command -v python || true)
  [[ -n "$py" ]] || die "python3 not found; it is needed to pip-install pre-commit==$PRE_COMMIT_VERSION (or set XDSCK_PRE_COMMIT)"
  rm -rf "$target"
  mkdir -p "$target/lib" "$target/bin"
  log="$repo_root/.tools/pre-commit-pip.log"
  if ! "$py" -m pip install --quiet --disable-pip-version-check --no-input \
      --target "$target/lib" "pre-commit==$PRE_COMMIT_VERSION" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    rm -rf "$target"
    die "pip install pre-commit==$PRE_COMMIT_VERSION failed (full log: $log); set XDSCK_PRE_COMMIT to a pre-commit command instead"
  fi
  rm -f "$log"
  cat >"$bin" <<WRAPPER
#!/bin/sh
PYTHONPATH="$target/lib\${PYTHONPATH:+:\$PYTHONPATH}" exec "$py" -m pre_commit "\$@"
WRAPPER
  chmod +x "$bin"
  touch "$stamp"
fi

"$bin" --version >&2 || die "'$bin --version' failed"
printf '%s\n' "$bin"
