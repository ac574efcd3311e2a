#!/usr/bin/env bash
# Makes sure Prometheus and promtool are installed (Debian's `prometheus` package), for the
# metrics test (cli/tests/it/metrics.rs), which scrapes `xdsck attach --metrics` with a real
# Prometheus and lints the exposition with promtool. Installs with apt-get when missing (root or
# sudo). Only the binaries are used: the test starts its own Prometheus on a loopback port; the
# package's systemd service is not needed. Prints the directory holding both binaries.
set -euo pipefail

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  sudo=$([[ $(id -u) == 0 ]] || echo sudo)
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >&2
fi
prometheus --version 2>&1 | head -1 >&2
dirname "$(command -v promtool)"
