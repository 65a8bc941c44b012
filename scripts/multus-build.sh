#!/usr/bin/env bash
# Builds Multus v4.0.2 from the project's source snapshot (`git archive` of tag v4.0.2 with its
# vendored modules) with the Go toolchain on PATH: no clone, no module download. The tarball is
# checked against its SHA-256 and unpacked into a temp dir that is removed; Multus's code never
# enters this repository. Used by the bench peer (scripts/bench/multus-peer.sh) and the migration
# end-to-end test, which caches the result keyed by the tarball's SHA-256.
#
#   scripts/multus-build.sh OUT_DIR [multus|multus-daemon|multus-shim|thin_entrypoint ...]
#                                                  # default: multus, multus-daemon, multus-shim
#   MULTUS_TARBALL=/path/to/multus-cni-4.0.2.tar.gz scripts/multus-build.sh OUT_DIR multus
#   MULTUS_SRC=/path/to/multus-cni-4.0.2 scripts/multus-build.sh OUT_DIR   # an unpacked tree
set -euo pipefail
TAG=v4.0.2
# k8snetworkplumbingwg/multus-cni, tag v4.0.2, commit f03765681fe81ee1e0633ee1734bf48ab3bccf2b.
TARBALL_SHA256=43e3f408ff41bdbb0b26c2fa5b0186cf53b8ef3c39fa529570adac4484ed0c13
repo="$(cd "$(dirname "$0")/.." && pwd)"
TARBALL="${MULTUS_TARBALL:-$repo/../shared/peers/multus-cni-4.0.2.tar.gz}"
if [[ $# -lt 1 ]]; then
  echo "usage: multus-build.sh OUT_DIR [multus|multus-daemon|multus-shim|thin_entrypoint ...]" >&2
  exit 2
fi
out="$1"
shift
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(multus multus-daemon multus-shim)
if ! command -v go >/dev/null; then
  echo "multus-build: no Go toolchain on PATH (Debian: apt-get install golang-go)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src="$work/src"
if [[ -n "${MULTUS_SRC:-}" ]]; then
  src="$MULTUS_SRC"
else
  if [[ ! -f "$TARBALL" ]]; then
    echo "multus-build: no Multus source snapshot at $TARBALL" \
      "(set MULTUS_TARBALL or MULTUS_SRC)" >&2
    exit 1
  fi
  got=$(sha256sum "$TARBALL" | cut -d' ' -f1)
  if [[ "$got" != "$TARBALL_SHA256" ]]; then
    echo "multus-build: $TARBALL has SHA-256 $got, expected $TARBALL_SHA256: refusing it" >&2
    exit 1
  fi
  mkdir -p "$src"
  tar -xzf "$TARBALL" -C "$src" --strip-components=1
fi
mkdir -p "$out"
cd "$src"
# Vendored modules only, no network; the same flags as Multus's own build (hack/build-go.sh):
# static, no cgo, not stripped, the thin plugin with the no_openssl tag.
export GOFLAGS=-mod=vendor CGO_ENABLED=0 GOPROXY=off GOCACHE="$work/gocache" GOPATH="$work/gopath"
LDFLAGS="-X gopkg.in/k8snetworkplumbingwg/multus-cni.v4/pkg/multus.version=$TAG"
for t in "${targets[@]}"; do
  case "$t" in
    multus) tags=(-tags no_openssl) ;;
    # thin_entrypoint: what Multus's thin DaemonSet runs to render its config (the M18 e2e test).
    multus-daemon | multus-shim | thin_entrypoint) tags=() ;;
    *)
      echo "multus-build: unknown target $t" \
        "(multus, multus-daemon, multus-shim, thin_entrypoint)" >&2
      exit 2
      ;;
  esac
  # Built under a temp name and renamed, so a concurrent reader never sees half a binary.
  go build -o "$out/.$t.tmp" "${tags[@]}" -ldflags "$LDFLAGS" "./cmd/$t"
  mv -f "$out/.$t.tmp" "$out/$t"
done
go version >"$out/BUILT-WITH"
echo "multus-build: built ${targets[*]} in $out"
