#!/usr/bin/env bash
# Installs what Plexus's demo or tests need on a fresh Debian/Ubuntu machine, then returns:
#   bash scripts/bootstrap.sh demo   what `npm run demo` needs, nothing more (scripts/demo.sh)
#   bash scripts/bootstrap.sh test   what `npm test` needs: the demo's packages and the tests' own
#                                    (scripts/test.sh)
# Idempotent and quiet when everything is there; it says what it installs, and before it changes
# the machine's package setup (a foreign dpkg architecture) it says so. Needs root (network
# namespaces, apt-get). docs/development.md lists the packages: keep it true.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
case "$mode" in
  demo | test) ;;
  *)
    echo "usage: bash scripts/bootstrap.sh demo|test" >&2
    exit 2
    ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  echo "bootstrap: run as root (sudo): the demo and the end-to-end tests create network namespaces" >&2
  exit 1
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

need_apt=()
# The demo: the reference plugins (/usr/lib/cni), ip for its namespaces, ping between its pods,
# npm for the pinned Node and Bun.
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || need_apt+=(containernetworking-plugins)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v ping >/dev/null 2>&1 || need_apt+=(iputils-ping)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)

if [ "$mode" = test ]; then
  # A real container runtime for the end-to-end tests (podman's CNI backend runs dist/plexus),
  # runc as its OCI runtime, and a static busybox as the one-file image the tests import.
  command -v podman >/dev/null 2>&1 || need_apt+=(podman)
  command -v runc >/dev/null 2>&1 || need_apt+=(runc)
  installed busybox-static || need_apt+=(busybox-static)
  # The release executables run on the CPU each is for (test/e2e/release.test.ts): qemu-user runs
  # the arm64 one with Debian's arm64 glibc and the baseline amd64 one on a CPU model without
  # AVX2. readelf (binutils) lists the glibc files `npm run image` puts beside the executable.
  command -v qemu-aarch64-static >/dev/null 2>&1 && command -v qemu-x86_64-static >/dev/null 2>&1 ||
    need_apt+=(qemu-user-static)
  command -v readelf >/dev/null 2>&1 || need_apt+=(binutils)
  if ! installed libc6:arm64; then
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
      echo "bootstrap: the tests need Debian's arm64 glibc (libc6:arm64) to run the arm64 release" \
        "executable under qemu: adding arm64 as a foreign dpkg architecture" \
        "(dpkg --add-architecture arm64; undo: dpkg --remove-architecture arm64)" >&2
      dpkg --add-architecture arm64
    fi
    need_apt+=(libc6:arm64)
  fi
  # kubectl renders deploy/ offline (`kubectl kustomize`, `kubectl patch --local`) for the
  # manifest and install tests: Debian packages it as kubernetes-client.
  command -v kubectl >/dev/null 2>&1 || need_apt+=(kubernetes-client)
  # Go builds the peers the tests compare against (Go's encoding/json, a grpc-go pod-resources
  # server, Multus from its source snapshot), offline.
  command -v go >/dev/null 2>&1 || need_apt+=(golang-go)
fi

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap ($mode): apt-get install ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq "${need_apt[@]}" >&2
fi

# deploy/ uses kustomize components (the node-scoped-writes policies on by default, the node
# layouts), which the kustomize inside kubectl 1.21 and later renders. Debian 12's own
# kubernetes-client is kubectl 1.20: say so now, not as a manifest test's failure later.
if [ "$mode" = test ] && ! kubectl kustomize deploy >/dev/null 2>&1; then
  echo "bootstrap: 'kubectl kustomize deploy' fails with this kubectl" \
    "($(kubectl version --client 2>/dev/null | head -n 1)): deploy/ needs kubectl 1.21 or later" \
    "(kustomize components); install a newer kubectl (Kubernetes's own apt repository, or a" \
    "cloud SDK's) and run the tests again" >&2
  exit 1
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
