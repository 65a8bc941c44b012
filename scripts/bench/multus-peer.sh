#!/usr/bin/env bash
# Builds Multus v4.0.2 (thin: multus; thick: multus-daemon + multus-shim) from source with the Go
# toolchain on PATH (Debian bookworm's golang-go, Go 1.19, builds it from its vendored modules, no
# module download), into the cache dir `npm run bench` looks in. Nothing is downloaded: the source
# is the project's snapshot of Multus (`git archive` of tag v4.0.2 with its vendored modules),
# checked against its SHA-256 and unpacked into a temp dir that is removed. Multus's code never
# enters this repository.
#
#   scripts/bench/multus-peer.sh     # from ../shared/peers/multus-cni-4.0.2.tar.gz
#   MULTUS_TARBALL=/path/to/multus-cni-4.0.2.tar.gz scripts/bench/multus-peer.sh
#   MULTUS_SRC=/path/to/multus-cni-4.0.2 scripts/bench/multus-peer.sh   # an unpacked tree
#
# Cache dir: $PLEXUS_BENCH_CACHE/multus-v4.0.2 (default ~/.cache/plexus-bench/multus-v4.0.2).
set -euo pipefail
TAG=v4.0.2
# k8snetworkplumbingwg/multus-cni, tag v4.0.2, commit f03765681fe81ee1e0633ee1734bf48ab3bccf2b.
TARBALL_SHA256=43e3f408ff41bdbb0b26c2fa5b0186cf53b8ef3c39fa529570adac4484ed0c13
repo="$(cd "$(dirname "$0")/../.." && pwd)"
TARBALL="${MULTUS_TARBALL:-$repo/../shared/peers/multus-cni-4.0.2.tar.gz}"
CACHE="${PLEXUS_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plexus-bench}/multus-$TAG"
command -v go >/dev/null || { echo "multus-peer: no Go toolchain on PATH (Debian: apt-get install golang-go)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src="$work/src"
if [[ -n "${MULTUS_SRC:-}" ]]; then
  src="$MULTUS_SRC"
else
  if [[ ! -f "$TARBALL" ]]; then
    echo "multus-peer: no Multus source snapshot at $TARBALL (set MULTUS_TARBALL or MULTUS_SRC)" >&2
    exit 1
  fi
  got=$(sha256sum "$TARBALL" | cut -d' ' -f1)
  if [[ "$got" != "$TARBALL_SHA256" ]]; then
    echo "multus-peer: $TARBALL has SHA-256 $got, expected $TARBALL_SHA256: refusing it" >&2
    exit 1
  fi
  mkdir -p "$src"
  tar -xzf "$TARBALL" -C "$src" --strip-components=1
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
