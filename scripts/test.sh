#!/usr/bin/env bash
# The test command (README, .ci/run): bootstrap, typecheck, build the Bun executable, run all
# three tiers. Under CI=true an end-to-end prerequisite that is missing fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh test
export PATH="$PWD/node_modules/.bin:$PATH"
echo "test: node $(node --version), typecheck, layers and build" >&2
# Real Multus thin, which the migration test runs, is built from the source snapshot now, on the
# core the typecheck and the build leave idle, into the cache the test looks in
# (test/support/multus-peer.ts); the tests start only once it is there. A failed build is the
# test's to report: it builds again and says why.
mkdir -p .vitest-results
multus_tarball=../shared/peers/multus-cni-4.0.2.tar.gz
multus_build=
if command -v go >/dev/null 2>&1 && [ -f "$multus_tarball" ]; then
  multus_dir="${TMPDIR:-/tmp}/plexus-multus-$(sha256sum "$multus_tarball" | cut -d' ' -f1)"
  if [ ! -x "$multus_dir/multus" ] || [ ! -x "$multus_dir/thin_entrypoint" ]; then
    echo "test: building Multus v4.0.2 thin and its entrypoint beside the build" \
      "(for the migration tests)" >&2
    setsid bash scripts/multus-build.sh "$multus_dir" multus thin_entrypoint \
      >.vitest-results/multus-build.log 2>&1 &
    multus_build=$!
    # A check that fails below ends the script: the build (its own process group, go and its
    # compilers with it) ends with it.
    trap 'kill -- "-$multus_build" 2>/dev/null || true' EXIT
  fi
fi
tsc --noEmit -p tsconfig.json
# Formatting and lint (Biome): an unformatted file or a lint error fails the run. `npm run format` fixes the first.
biome check .
# Layers point down, no import cycles (.dependency-cruiser.cjs): an upward import fails here.
npm run --silent lint:deps
# No dead code (knip.jsonc): an export nothing imports, a file nothing reaches, a dependency
# nothing uses.
npm run --silent lint:dead
# No function over 60 lines at the formatter's width, in src/, test/, scripts/ and bin/ alike,
# counted from signature to closing brace as a reader sees them (describe bodies aside).
node scripts/check-functions.mjs 60 src test scripts bin >&2
# Lines a reader can hold: comments and strings too, which the formatter does not wrap.
node scripts/check-width.mjs 100 src test scripts bin
node esbuild.config.mjs
node scripts/build-bun.mjs
if [ -n "$multus_build" ] && ! wait "$multus_build"; then
  echo "test: building Multus failed (.vitest-results/multus-build.log); its test will say why" >&2
fi
rc=0
vitest run --reporter=default --reporter=json --outputFile.json=.vitest-results/results.json "$@" || rc=$?
# One plain closing line with the counts, whatever the reporter printed above.
node -e '
  const r = JSON.parse(require("fs").readFileSync(".vitest-results/results.json", "utf8"));
  const skipped = r.numPendingTests + r.numTodoTests;
  console.log(`Tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
' || true
exit "$rc"
