#!/usr/bin/env bash
# Builds Multus v4.0.2 (thin: multus; thick: multus-daemon + multus-shim) from source with the Go
# toolchain on PATH (Debian bookworm's golang-go, Go 1.19, builds it from its vendored modules, no
# module download), into the cache dir `npm run bench` looks in. Multus's code never enters this
# repository: the source is unpacked into a temp dir and removed.
#
#   scripts/bench/multus-peer.sh                       # git clone from GitHub (network)
#   MULTUS_GIT_DIR=/path/to/multus-cni.git scripts/bench/multus-peer.sh   # from a local clone/mirror
#   MULTUS_SRC=/path/to/multus-cni-4.0.2 scripts/bench/multus-peer.sh     # from an unpacked tree
#
# Cache dir: $PLEXUS_BENCH_CACHE/multus-v4.0.2 (default ~/.cache/plexus-bench/multus-v4.0.2).
set -euo pipefail
TAG=v4.0.2
CACHE="${PLEXUS_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plexus-bench}/multus-$TAG"
command -v go >/dev/null || { echo "multus-peer: no Go toolchain on PATH (Debian: apt-get install golang-go)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src="$work/src"
if [[ -n "${MULTUS_SRC:-}" ]]; then
  src="$MULTUS_SRC"
elif [[ -n "${MULTUS_GIT_DIR:-}" ]]; then
  mkdir -p "$src"
  git --git-dir="$MULTUS_GIT_DIR" archive "$TAG" | tar -x -C "$src"
else
  git clone --quiet --depth 1 --branch "$TAG" https://github.com/k8snetworkplumbingwg/multus-cni "$src"
fi
mkdir -p "$CACHE"
cd "$src"
# Vendored modules only, no network; the same flags as Multus's own build (hack/build-go.sh):
# static, no cgo, not stripped, the thin plugin with the no_openssl tag.
export GOFLAGS=-mod=vendor CGO_ENABLED=0 GOPROXY=off GOCACHE="$work/gocache" GOPATH="$work/gopath"
LDFLAGS="-X gopkg.in/k8snetworkplumbingwg/multus-cni.v4/pkg/multus.version=$TAG"
go build -o "$CACHE/multus" -tags no_openssl -ldflags "$LDFLAGS" ./cmd/multus
go build -o "$CACHE/multus-daemon" -ldflags "$LDFLAGS" ./cmd/multus-daemon
go build -o "$CACHE/multus-shim" -ldflags "$LDFLAGS" ./cmd/multus-shim
go version >"$CACHE/BUILT-WITH"
echo "multus-peer: built $(ls "$CACHE" | tr '\n' ' ')in $CACHE"
