#!/usr/bin/env bash
# The pre-commit hook (.pre-commit-hooks.yaml): builds xdsck from the clone of this repository
# pre-commit keeps in its cache — once; later runs find the build current — and runs
# `xdsck check --found` on the files pre-commit passes, in the project's working directory (so
# its xdsck.toml is the one in force). Arguments from the hook's `args:` come before the files.
#
# XDSCK_HOOK_PROFILE picks the cargo profile (default `release`); CARGO_TARGET_DIR, where the
# build goes, as for any cargo command.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
exec cargo run --quiet --locked --manifest-path "$repo/Cargo.toml" -p xdsck \
  --profile "${XDSCK_HOOK_PROFILE:-release}" -- check --found "$@"
