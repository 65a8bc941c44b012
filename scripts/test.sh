#!/usr/bin/env bash
# The test command (README, .ci/run): bootstrap, typecheck, build the Bun executable, run all
# three tiers. Under CI=true an end-to-end prerequisite that is missing fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/node_modules/.bin:$PATH"
echo "test: node $(node --version), typecheck, layers and build" >&2
tsc --noEmit -p tsconfig.json
# Formatting and lint (Biome): an unformatted file or a lint error fails the run. `npm run format` fixes the first.
biome check .
# Layers point down, no import cycles (.dependency-cruiser.cjs): an upward import fails here.
npm run --silent lint:deps
node esbuild.config.mjs
node scripts/build-bun.mjs
mkdir -p .vitest-results
rc=0
vitest run --reporter=default --reporter=json --outputFile.json=.vitest-results/results.json "$@" || rc=$?
# One plain closing line with the counts, whatever the reporter printed above.
node -e '
  const r = JSON.parse(require("fs").readFileSync(".vitest-results/results.json", "utf8"));
  const skipped = r.numPendingTests + r.numTodoTests;
  console.log(`Tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
' || true
exit "$rc"
