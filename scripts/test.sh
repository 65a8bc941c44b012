#!/usr/bin/env bash
# The test command (README, .ci/run): bootstrap, typecheck, build the single executable, run all
# three tiers. Under CI=true an end-to-end prerequisite that is missing fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/node_modules/.bin:$PATH"
echo "test: node $(node --version), typecheck and build" >&2
tsc --noEmit -p tsconfig.json
node esbuild.config.mjs
node scripts/build-sea.mjs
exec vitest run "$@"
