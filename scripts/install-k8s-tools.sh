#!/usr/bin/env bash
# Makes sure the tools of the manifests test (cli/tests/it/deploy.rs) are installed: kubectl (its
# built-in kustomize renders deploy/kubernetes; Debian's `kubernetes-client` when missing, root
# or sudo) and PyPI's kubernetes-validate (pinned, pip-installed under <repo>/.tools/k8s-py).
# Idempotent. Prints two lines: the kubectl binary, then the kubernetes-validate launcher; the
# test reads them from $XDSCK_KUBECTL and $XDSCK_KUBERNETES_VALIDATE, which scripts/test.sh sets.
set -euo pipefail

KUBERNETES_VALIDATE_VERSION=1.37.0

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)

if ! command -v kubectl >/dev/null; then
  sudo=$([[ $(id -u) == 0 ]] || echo sudo)
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends kubernetes-client >&2
fi
kubectl=$(command -v kubectl)

target="$repo_root/.tools/k8s-py"
stamp="$target/.kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
if [[ ! -e "$stamp" ]]; then
  rm -rf "$target"
  mkdir -p "$target"
  python3 -m pip install --quiet --disable-pip-version-check --no-input --target "$target/lib" \
    "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" >&2
  cat >"$target/kubernetes-validate" <<LAUNCHER
#!/bin/sh
PYTHONPATH="$target/lib" exec python3 -m kubernetes_validate "\$@"
LAUNCHER
  chmod +x "$target/kubernetes-validate"
  touch "$stamp"
fi
printf '%s\n%s\n' "$kubectl" "$target/kubernetes-validate"
