#!/usr/bin/env bash
# Prints cargo's target directory for this workspace: `./target`, or wherever CARGO_TARGET_DIR
# (or a cargo config) puts it. Scripts ask cargo instead of assuming `./target`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])'
