// The ADD and DEL of a plain pod (default network: bridge + host-local, no Kubernetes) on a node
// with 0, 1 and 20 records of failed DELs pending, whose delegate's DEL is slow (it sleeps, then
// fails, so the records stay). Every entry is made due again before each call: a call that
// retried pending records would pay for one here. ADD never retries them; a DEL does (one, within
// its own deadline) only while no daemon housekeeper runs, and not at all with a fresh
// housekeeper stamp. Then a DEL with 20,000 junk entries in pending/: the first call removes them,
// the next finds none. Figures only, interleaved rounds, medians.
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CNI_PATH, cni, median, needsRoot, rel, RUNTIME_ENV, scratch, table } from "./lib.mjs";

const COUNTS = [0, 1, 20];
/** Seconds the pending records' delegate sleeps on DEL before it fails. */
const SLOW_S = 1;

/** A pending record as Plexus writes one (record.ts), and its entry, due long ago. */
function writePending(cniDir, index) {
  const containerId = `pending${index}`;
  const record = {
    kind: "plexusRecordV1",
    containerId,
    ifName: "eth0",
    netns: "",
    cniVersion: "1.0.0",
    cniArgs: "",
    attachments: [
      {
        network: "slow",
        ifName: "net1",
        isDefault: false,
        conf: { cniVersion: "1.0.0", name: "slow", plugins: [{ type: "slowdel" }] },
        failedDels: 2,
      },
    ],
    delFailedAt: new Date().toISOString(),
  };
  writeFileSync(join(cniDir, "records", `${containerId}-eth0.json`), JSON.stringify(record));
  const entry = JSON.stringify({ containerId, ifName: "eth0" });
  writeFileSync(join(cniDir, "pending", `${containerId}-eth0.json`), entry);
}

/** Every pending entry due (written long ago), as on a node where no call retried them lately. */
function makeDue(cniDir) {
  const old = new Date(Date.now() - 3600_000);
  const dir = join(cniDir, "pending");
  for (const n of readdirSync(dir)) utimesSync(join(dir, n), old, old);
}

function world(tmp, size, count) {
  const root = join(tmp, `n${count}`);
  const bin = join(root, "bin");
  const cniDir = join(root, "cni");
  const dirs = [bin, join(cniDir, "records"), join(cniDir, "pending")];
  for (const d of dirs) mkdirSync(d, { recursive: true });
  const script = `#!/bin/sh\n[ "$CNI_COMMAND" = DEL ] && sleep ${SLOW_S}\nexit 1\n`;
  writeFileSync(join(bin, "slowdel"), script);
  chmodSync(join(bin, "slowdel"), 0o755);
  for (let i = 0; i < count; i++) writePending(cniDir, i);
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    cniDir,
    // A retry abandons nothing: the records stay pending through every round.
    failedDelRetrySeconds: 86400,
    delegates: [
      {
        cniVersion: "1.0.0",
        name: "plain",
        type: "bridge",
        bridge: size.link(`plxk${count}`),
        ipam: { type: "host-local", subnet: `10.236.${count}.0/24`, dataDir: join(root, "ipam") },
      },
    ],
  });
  const env = {
    ...RUNTIME_ENV,
    CNI_CONTAINERID: `plain${count}`,
    CNI_NETNS: size.netns(`plx-benchk-${process.pid}-${count}`),
    CNI_IFNAME: "eth0",
    CNI_PATH: `${bin}:${CNI_PATH}`,
  };
  return { cniDir, conf, env };
}

async function addDel(world) {
  makeDue(world.cniDir);
  const a = await cni("dist/plexus", { ...world.env, CNI_COMMAND: "ADD" }, world.conf);
  makeDue(world.cniDir);
  const d = await cni("dist/plexus", { ...world.env, CNI_COMMAND: "DEL" }, world.conf);
  return { add: a.ms, del: d.ms };
}

/** DEL of a container never added, 20,000 junk entries in pending/: the first call, the next. */
async function junkDels(tmp) {
  const cniDir = join(tmp, "junk", "cni");
  const dir = join(cniDir, "pending");
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < 20_000; i++) writeFileSync(join(dir, `junk${i}-eth0.json`), "{");
  const conf = JSON.stringify({ cniVersion: "1.0.0", name: "plexus", type: "plexus", cniDir });
  const env = { ...RUNTIME_ENV, CNI_COMMAND: "DEL", CNI_CONTAINERID: "nothing", CNI_NETNS: "" };
  const first = await cni("dist/plexus", { ...env, CNI_IFNAME: "eth0", CNI_PATH }, conf);
  const second = await cni("dist/plexus", { ...env, CNI_IFNAME: "eth0", CNI_PATH }, conf);
  return { first: first.ms, second: second.ms, left: readdirSync(join(cniDir, "pending")).length };
}

export async function benchPending(runs) {
  if (!needsRoot("pending records")) return undefined;
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchpending-"));
  const s = scratch("plx-benchk");
  const out = {};
  try {
    const worlds = COUNTS.map((n) => world(tmp, s, n));
    const m = COUNTS.map(() => ({ add: [], del: [], delKept: [] }));
    // The DELs without a housekeeper pay for a slow retry each: fewer rounds of those.
    for (let r = 0; r < runs + 1; r++) {
      for (const [i, w] of worlds.entries()) {
        const { add, del } = await addDel(w);
        if (r === 0) continue;
        m[i].add.push(add);
        if (r <= Math.min(runs, 5)) m[i].del.push(del);
      }
    }
    // A fresh housekeeper stamp (the daemon's): DELs leave the records to it.
    for (const w of worlds) {
      mkdirSync(join(w.cniDir, "housekeeping"), { recursive: true });
      const stamp = join(w.cniDir, "housekeeping", "housekeeper");
      writeFileSync(stamp, "");
      utimesSync(stamp, new Date(), new Date(Date.now() + 3600_000));
    }
    for (let r = 0; r < runs + 1; r++) {
      for (const [i, w] of worlds.entries()) {
        const { del } = await addDel(w);
        if (r > 0) m[i].delKept.push(del);
      }
    }
    const cell = (xs) => rel(median(xs));
    const rows = COUNTS.map((n, i) => [n, cell(m[i].add), cell(m[i].del), cell(m[i].delKept)]);
    console.log(
      "== a plain pod's ADD and DEL with N records of failed DELs pending " +
        `(their delegate's DEL: ${SLOW_S} s, then fails), every entry due (ms, × node -e 0)`,
    );
    table(["N", "ADD", "DEL, no daemon", "DEL, daemon housekeeping"], rows);
    out.add = Object.fromEntries(COUNTS.map((n, i) => [n, median(m[i].add)]));
    const junk = await junkDels(tmp);
    const calls = `first call ${rel(junk.first)}, next call ${rel(junk.second)}`;
    const left = `entries left: ${junk.left}`;
    console.log(`DEL with 20,000 invalid entries in pending/: ${calls}; ${left}`);
    console.log("");
    out.junk = junk;
  } finally {
    s.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
  return out;
}
