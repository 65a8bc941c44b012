// npm run bench: prints figures, asserts nothing (targets are compared in the printed table).
// Needs dist/ built (npm run build) and root for the netns sections.
import { existsSync } from "node:fs";
import { benchVersion } from "./bench/version.mjs";
import { benchDelegates } from "./bench/delegates.mjs";
import { benchPods } from "./bench/pods.mjs";
import { benchPodsApi } from "./bench/pods-api.mjs";

const runs = Number(process.env.BENCH_RUNS ?? 20);
if (!existsSync("dist/plexus")) {
  console.error("bench: dist/plexus is missing; run `npm run build` first");
  process.exit(1);
}
const only = process.argv.slice(2);
const want = (name) => only.length === 0 || only.includes(name);
console.log(`Plexus benchmarks: node ${process.versions.node}, ${runs} interleaved runs per figure, medians\n`);
const version = want("version") ? await benchVersion(runs) : undefined;
const delegates = want("delegates") ? await benchDelegates(runs) : undefined;
if (want("pods")) await benchPods(runs);
if (want("pods-api")) await benchPodsApi(runs);
if (version && delegates?.[2]) {
  const ratio = delegates[2].ownAdd / version.floor;
  console.log(`own ADD overhead at N=2: ${delegates[2].ownAdd.toFixed(1)} ms = ${ratio.toFixed(2)}× the bare-Node floor (target ≤ 1.5×)`);
}
