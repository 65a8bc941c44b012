#!/usr/bin/env bash
# The README's main-job command, `sudo npm run demo`: install what the demo needs and is missing
# (`bootstrap.sh demo`: no podman, qemu or kubectl, no foreign architecture), build the single
# executable dist/plexus, then run two pods of a file-backed cluster through Plexus with the real
# reference plugins (scripts/demo-cluster.mjs), and show that nothing is left.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh demo
# The pinned Node 24 (devDependency "node") first, whatever Node the machine has.
export PATH="$PWD/node_modules/.bin:$PATH"
echo "demo: building dist/plexus with node $(node --version)" >&2
npm run -s build >&2
exec node scripts/demo-cluster.mjs "$@"
