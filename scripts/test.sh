#!/usr/bin/env bash
# The test command (README, .ci/run): bootstrap, typecheck, build the Bun executable, run all
# three tiers. Under CI=true an end-to-end prerequisite that is missing fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh test
export PATH="$PWD/node_modules/.bin:$PATH"
echo "test: node $(node --version), typecheck, layers and build" >&2
tsc --noEmit -p tsconfig.json
# Formatting and lint (Biome): an unformatted file or a lint error fails the run. `npm run format` fixes the first.
biome check .
# Layers point down, no import cycles (.dependency-cruiser.cjs): an upward import fails here.
npm run --silent lint:deps
# No function in src/ over 60 lines, counted from signature to closing brace as a reader sees them
# (the shared structure tool beside the clone; its last line is "functions total=N over=N longest=N").
arch=../shared/tools/arch.cjs
if [ -f "$arch" ]; then
  count=$(node "$arch" functions 60)
  echo "$count" >&2
  if ! tail -n 1 <<<"$count" | grep -q ' over=0 '; then
    echo "test: functions in src/ over 60 lines (listed above): split them into named steps" >&2
    exit 1
  fi
elif [ "${CI:-}" = "true" ]; then
  echo "test: $arch is missing; under CI=true the function-length check cannot be skipped" >&2
  exit 1
else
  echo "test: WARNING: $arch is missing, function lengths NOT checked (CI fails on this)" >&2
fi
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
