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
# The release executables run on the CPU each is for (test/e2e/release.test.ts): qemu-user runs the
# arm64 one with Debian's arm64 glibc and the baseline amd64 one on a CPU model without AVX2.
# readelf (binutils) lists the glibc files `npm run image` puts beside the executable.
command -v qemu-aarch64-static >/dev/null 2>&1 && command -v qemu-x86_64-static >/dev/null 2>&1 ||
  need_apt+=(qemu-user-static)
command -v readelf >/dev/null 2>&1 || need_apt+=(binutils)
if ! dpkg-query -W -f='${Status}' libc6:arm64 2>/dev/null | grep -q "ok installed"; then
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  need_apt+=(libc6:arm64)
fi
# kubectl renders deploy/ offline (`kubectl kustomize`, `kubectl patch --local`) for the manifest
# and install tests: Debian's kubernetes-client.
command -v kubectl >/dev/null 2>&1 || need_apt+=(kubernetes-client)
# Go builds the peers the tests compare against (Go's encoding/json, a grpc-go pod-resources
# server, Multus from its source snapshot), offline.
command -v go >/dev/null 2>&1 || need_apt+=(golang-go)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap: apt-get install ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq "${need_apt[@]}" >&2
fi

# npm ci when node_modules is missing or older than the lock file. The pinned Node 24 (the
# devDependency "node") then comes first on PATH for every npm run. Never through a symlinked
# node_modules (a git worktree sharing another checkout's install): npm ci empties the target.
if [ -L node_modules ]; then
  [ -x node_modules/.bin/node ] || { echo "bootstrap: node_modules is a symlink to an incomplete install" >&2; exit 1; }
elif [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "bootstrap: npm ci" >&2
  npm ci --no-audit --no-fund >&2
fi
