// (b) ADD+DEL through Plexus with N bridge delegates, against the same delegates invoked directly
// in sequence (the floor any meta-plugin pays). Real netns, real /usr/lib/cni plugins; root only.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import {
  CNI_PATH,
  cni,
  fmt,
  max,
  median,
  needsRoot,
  rel,
  relMiB,
  runDirect,
  table,
  RUNTIME_ENV,
} from "./lib.mjs";

function delegateConf(index, dataDir) {
  return {
    cniVersion: "1.0.0",
    name: `plxbench${index}`,
    type: "bridge",
    bridge: `plxb${index}`,
    isGateway: true,
    ipam: { type: "host-local", subnet: `10.231.${index}.0/24`, dataDir },
  };
}

/** One N's figures: Plexus with N delegates against the same delegates run directly, medians. */
async function benchDelegatesAt({ K, tmp, netns, runs }) {
  const dataDir = join(tmp, `ipam-${K}`);
  const delegates = Array.from({ length: K }, (_, k) => delegateConf(k, dataDir));
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "plexus-bench",
    type: "plexus",
    cniDir: join(tmp, `cni-${K}`),
    delegates,
  });
  const base = {
    ...RUNTIME_ENV,
    CNI_CONTAINERID: `bench${K}`,
    CNI_NETNS: netns,
    CNI_PATH,
    CNI_ARGS: "IgnoreUnknown=1",
  };
  const m = { pAdd: [], pDel: [], dAdd: [], dDel: [], rss: [] };
  for (let i = 0; i < runs + 1; i++) {
    const a = await cni("dist/plexus", { ...base, CNI_COMMAND: "ADD", CNI_IFNAME: "eth0" }, conf);
    const d = await cni("dist/plexus", { ...base, CNI_COMMAND: "DEL", CNI_IFNAME: "eth0" }, conf);
    const direct = await runDirect(delegates, base);
    if (i === 0) continue;
    m.pAdd.push(a.ms);
    m.pDel.push(d.ms);
    m.dAdd.push(direct.add);
    m.dDel.push(direct.del);
    m.rss.push(a.rssKiB ?? 0, d.rssKiB ?? 0);
  }
  const own = median(m.pAdd) + median(m.pDel) - median(m.dAdd) - median(m.dDel);
  const ownAdd = median(m.pAdd) - median(m.dAdd);
  const row = [
    K,
    rel(median(m.pAdd)),
    rel(median(m.pDel)),
    rel(median(m.dAdd)),
    rel(median(m.dDel)),
    rel(ownAdd),
    rel(median(m.pDel) - median(m.dDel)),
    rel(own),
    relMiB(max(m.rss) / 1024),
  ];
  return { own, ownAdd, row };
}

function printDelegates(rows, perK) {
  console.log(
    "== ADD+DEL with N bridge+host-local delegates: Plexus vs the same delegates run directly " +
      "(ms, × node -e 0)",
  );
  table(
    [
      "N",
      "plexus ADD",
      "plexus DEL",
      "direct ADD",
      "direct DEL",
      "own ADD",
      "own DEL",
      "own ADD+DEL",
      "peak RSS MiB",
    ],
    rows,
  );
  const ks = Object.keys(perK).map(Number);
  if (ks.length >= 2) {
    const lo = Math.min(...ks.filter((k) => k >= 2));
    const hi = Math.max(...ks);
    const slope = (perK[hi].ownAdd - perK[lo].ownAdd) / (hi - lo);
    console.log(
      `own ADD overhead per extra delegate (N=${lo}→${hi}): ${fmt(slope)} ms (target ≤ 3 ms)`,
    );
  }
  console.log("");
}

export async function benchDelegates(runs, counts = [1, 2, 4, 8]) {
  if (!needsRoot("delegates")) return;
  const tmp = mkdtempSync(join(tmpdir(), "plx-bench-"));
  const netnsName = `plx-bench-${process.pid}`;
  const netns = `/var/run/netns/${netnsName}`;
  execFileSync("ip", ["netns", "add", netnsName]);
  const rows = [];
  const perK = {};
  try {
    for (const K of counts) {
      const { own, ownAdd, row } = await benchDelegatesAt({ K, tmp, netns, runs });
      perK[K] = { own, ownAdd };
      rows.push(row);
    }
  } finally {
    execFileSync("ip", ["netns", "del", netnsName]);
    for (const K of counts)
      for (let k = 0; k < K; k++) {
        try {
          execFileSync("ip", ["link", "del", `plxb${k}`], { stdio: "ignore" });
        } catch {}
      }
    rmSync(tmp, { recursive: true, force: true });
  }
  printDelegates(rows, perK);
  return perK;
}
