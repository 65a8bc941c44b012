// npm run bench: prints figures, asserts nothing (targets are compared in the printed tables).
// Needs dist/ built (npm run build) and root for the netns sections. `npm run bench -- pods-api`
// runs one section; BENCH_RUNS sets the interleaved rounds per figure (default 20).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchVersion } from "./bench/version.mjs";
import { benchDelegates } from "./bench/delegates.mjs";
import { benchPods } from "./bench/pods.mjs";
import { benchPodsApi } from "./bench/pods-api.mjs";
import { benchParallel } from "./bench/parallel.mjs";
import { benchDaemon } from "./bench/daemon.mjs";

const runs = Number(process.env.BENCH_RUNS ?? 20);
// A runtime runs Plexus without it; with it every TLS context of every Node process here would
// also parse that bundle (some CI images set it), which no node pays in production.
delete process.env.NODE_EXTRA_CA_CERTS;
const started = Date.now() - 1000;
// Interrupted (Ctrl-C, a CI timeout): the sections' finally blocks do not run, so remove what any
// of them makes here: namespaces ending in this pid and the bench bridges (plxb*, plxq*, plxa*,
// plxpar*) and temp dirs. The pods' veths go with their namespaces; stray `plexus daemon`s get SIGTERM.
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    const quiet = { stdio: ["ignore", "pipe", "ignore"], encoding: "utf8" };
    // Children first (CNI calls, daemons), then a moment for delegates already running to end.
    try { execFileSync("pkill", ["-TERM", "-P", String(process.pid)], quiet); } catch {}
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    const lines = (args) => { try { return execFileSync("ip", args, quiet).split("\n"); } catch { return []; } };
    for (const l of lines(["netns", "list"])) {
      const name = l.split(" ")[0];
      if (name && /^plx-bench/.test(name) && name.includes(String(process.pid))) try { execFileSync("ip", ["netns", "del", name], quiet); } catch {}
    }
    for (const l of lines(["-o", "link", "show"])) {
      const name = /^\d+: ([^:@]+)/.exec(l)?.[1];
      if (name && /^plx(b|q|a|par)\d+$/.test(name)) try { execFileSync("ip", ["link", "del", name], quiet); } catch {}
    }
    // The sections' temp dirs (plx-bench*), made since this run started.
    for (const d of readdirSync(tmpdir())) {
      const path = join(tmpdir(), d);
      try { if (d.startsWith("plx-bench") && statSync(path).ctimeMs >= started) rmSync(path, { recursive: true, force: true }); } catch {}
    }
    console.error(`bench: interrupted (${signal}); its namespaces and bridges are removed`);
    process.exit(130);
  });
}
if (Number(process.versions.node.split(".")[0]) < 24) {
  console.error(`bench: Node ${process.versions.node}; run it as \`npm run bench\` (the project's pinned Node 24 is the floor it measures)`);
  process.exit(1);
}
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
const api = want("pods-api") ? await benchPodsApi(runs) : undefined;
const parallel = want("parallel") ? await benchParallel(Math.max(3, Math.round(runs / 4))) : undefined;
const daemon = want("daemon") ? await benchDaemon() : undefined;

// The issue targets against the reference figures (Multus v4.0.2, this machine kind).
const lines = [];
const ok = (good) => (good ? "met" : "NOT met");
if (version && delegates?.[2]) {
  const ratio = delegates[2].ownAdd / version.floor;
  lines.push(`own ADD overhead at N=2 delegates (no API): ${delegates[2].ownAdd.toFixed(1)} ms = ${ratio.toFixed(2)}× the bare-Node floor (target ≤ 1.5×): ${ok(ratio <= 1.5)}`);
}
const at = (K) => api?.find((r) => r.latencyMs === 0 && r.K === K);
for (const [K, thin, thick] of [[0, 86, 55], [2, 78, 61], [8, 525, 519]]) {
  const r = at(K);
  if (!r) continue;
  const thinTarget = K === 8 ? 0.3 * thin : 1.5 * thin;
  const daemonTarget = K === 8 ? 0.25 * thick : 1.5 * thick;
  lines.push(`K=${K}: thin own ${r.thinOwn.toFixed(0)} ms (target ≤ ${thinTarget.toFixed(0)}): ${ok(r.thinOwn <= thinTarget)}; daemon own ${r.daemonOwn.toFixed(0)} ms (target ≤ ${daemonTarget.toFixed(0)}): ${ok(r.daemonOwn <= daemonTarget)}`);
}
if (api?.length) {
  const worst = api.reduce((a, r) => Math.max(a, r.delOver), 0);
  lines.push(`DEL from the record over bare Node + its delegates: worst ${worst.toFixed(1)} ms (target ≤ 15): ${ok(worst <= 15)}`);
  lines.push(`API requests per ADD: thin ≤ 3+K: ${ok(api.every((r) => r.tReads + r.tWrites <= 3 + r.K))}; daemon 0 reads, ≤ 2 writes: ${ok(api.every((r) => r.dReads === 0 && r.dWrites <= 2))}`);
}
if (parallel?.daemon10) lines.push(`10 pods in parallel, daemon mode: ${parallel.daemon10.wall.toFixed(0)} ms in all (target ≤ 500): ${ok(parallel.daemon10.wall <= 500)}`);
if (daemon) lines.push(`daemon RSS at 10,000 NADs: ${daemon.rssMiB.toFixed(0)} MiB (target ≤ 150): ${ok(daemon.rssMiB <= 150)}; requests during churn: ${daemon.requestsDuringChurn}`);
if (lines.length) console.log(`== targets\n${lines.map((l) => `- ${l}`).join("\n")}`);
