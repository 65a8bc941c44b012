#!/usr/bin/env bash
# Installs what Plexus's demo and tests need on a fresh Debian/Ubuntu machine, then returns.
# Idempotent and quiet when everything is there. Needs root (network namespaces, apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "bootstrap: run as root (sudo): the demo and the end-to-end tests create network namespaces" >&2
  exit 1
fi

need_apt=()
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || need_apt+=(containernetworking-plugins)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v ping >/dev/null 2>&1 || need_apt+=(iputils-ping)
# A real container runtime for the end-to-end tests (podman's CNI backend runs dist/plexus), runc
# as its OCI runtime, and a static busybox as the one-file image the tests import.
command -v podman >/dev/null 2>&1 || need_apt+=(podman)
command -v runc >/dev/null 2>&1 || need_apt+=(runc)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q "ok installed" || need_apt+=(busybox-static)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap: apt-get install ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq "${need_apt[@]}" >&2
fi

# npm ci when node_modules is missing or older than the lock file. The pinned Node 24 (the
# devDependency "node") then comes first on PATH for every npm run.
if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "bootstrap: npm ci" >&2
  npm ci --no-audit --no-fund >&2
fi
