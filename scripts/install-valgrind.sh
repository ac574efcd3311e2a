#!/usr/bin/env bash
# Makes sure valgrind is installed (Debian's `valgrind` package), for the instruction-count gate
# (scripts/instructions.py), which counts with callgrind. Installs with apt-get when missing
# (root or sudo). Prints the path of valgrind.
set -euo pipefail

if ! command -v valgrind >/dev/null; then
  sudo=$([[ $(id -u) == 0 ]] || echo sudo)
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends valgrind >&2
fi
valgrind --version >&2
command -v valgrind
