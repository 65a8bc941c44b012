#!/usr/bin/env bash
# Builds Multus v4.0.2 (thin: multus; thick: multus-daemon + multus-shim) from the project's source
# snapshot into the cache dir `npm run bench` looks in: scripts/multus-build.sh does the work
# (checked tarball or MULTUS_SRC, vendored modules, nothing downloaded; see there).
#
#   scripts/bench/multus-peer.sh     # from ../shared/peers/multus-cni-4.0.2.tar.gz
#   MULTUS_TARBALL=/path/to/multus-cni-4.0.2.tar.gz scripts/bench/multus-peer.sh
#   MULTUS_SRC=/path/to/multus-cni-4.0.2 scripts/bench/multus-peer.sh   # an unpacked tree
#
# Cache dir: $PLEXUS_BENCH_CACHE/multus-v4.0.2 (default ~/.cache/plexus-bench/multus-v4.0.2).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="${PLEXUS_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plexus-bench}/multus-v4.0.2"
exec "$repo/scripts/multus-build.sh" "$CACHE" multus multus-daemon multus-shim
