// The accounting after every cycle: once the runtime's DEL sequence has run, nothing of the
// container may be left. Each kind of leftover is listed separately (netns links, host bridge
// ports, host-local reservations, records, result-cache files, temp files, lock files and held
// locks under cniDir, processes); scrub() then removes whatever was found so the next cycle
// starts clean and is judged on its own.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { isIP } from "node:net";
import { join, relative } from "node:path";
import { killPids, settle } from "./proc.mjs";

export const LEAK_KINDS = [
  "netns-link",
  "bridge-port",
  "ip-reservation",
  "record",
  "cache-file",
  "temp-file",
  "lock-file",
  "lock-held",
  "pending-file",
  "other-file",
  "process",
];

function reservationText(path) {
  try {
    return JSON.stringify(readFileSync(path, "utf8").slice(0, 80));
  } catch (err) {
    return `(unreadable: ${err.code ?? err.message})`;
  }
}

function walk(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

export function ipJson(args) {
  try {
    const out = execFileSync("ip", ["-j", ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }).trim();
    return out ? JSON.parse(out) : [];
  } catch {
    return [];
  }
}

/** Inodes of files someone holds a POSIX or flock lock on right now (/proc/locks). */
function lockedInodes() {
  const out = new Set();
  for (const line of readFileSync("/proc/locks", "utf8").split("\n")) {
    const m = /\s(\w\w):(\w\w):(\d+)\s/.exec(line);
    if (m) out.add(Number(m[3]));
  }
  return out;
}

/** Leftovers of the world right now, as [kind, detail] pairs; empty when nothing is left. */
function leftovers(world, netnsName, procs) {
  const found = [];
  const add = (kind, detail) => found.push([kind, detail]);
  if (netnsName)
    for (const l of ipJson(["-n", netnsName, "link", "show"]))
      if (l.ifname !== "lo") add("netns-link", `${netnsName}/${l.ifname}`);
  const bridges = new Set(world.bridges);
  for (const l of ipJson(["link", "show"]))
    if (bridges.has(l.master)) add("bridge-port", `${l.master}/${l.ifname}`);
  for (const f of walk(world.dataDir)) {
    const rel = relative(world.dataDir, f);
    // With what the file holds: a complete reservation (container and interface) points at a DEL
    // that never ran; an empty one at host-local killed between creating and writing it.
    if (isIP(rel.split("/").pop() ?? "") !== 0)
      add("ip-reservation", `${rel} holding ${reservationText(f)}`);
  }
  const held = lockedInodes();
  for (const f of walk(world.cniDir)) {
    const rel = relative(world.cniDir, f);
    if (/\.tmp-/.test(rel)) add("temp-file", rel);
    else if (rel.startsWith("records/")) add("record", rel);
    else if (rel.startsWith("results/")) add("cache-file", rel);
    else if (rel.startsWith("pending/")) add("pending-file", rel);
    // Node-wide stamps of housekeeping (when pending/ was last rebuilt), no container's state.
    else if (rel.startsWith("housekeeping/")) continue;
    else if (rel.startsWith("locks/")) {
      let ino;
      try {
        ino = statSync(f).ino;
      } catch {}
      if (ino !== undefined && held.has(ino)) add("lock-held", rel);
      else add("lock-file", rel);
    } else add("other-file", rel);
  }
  for (const f of walk(world.dataDir))
    if (/\.tmp|~$/.test(f)) add("temp-file", relative(world.root, f));
  for (const p of procs) add("process", `${p.pid} ${p.cmd.slice(0, 160)}`);
  return found;
}

/** The world's processes present in two scans 100 ms apart (not one caught starting or exiting). */
async function lingering(world) {
  const first = new Map(world.processes().map((p) => [p.pid, p.cmd]));
  if (first.size === 0) return [];
  await new Promise((r) => setTimeout(r, 100));
  return world.processes().filter((p) => first.get(p.pid) === p.cmd);
}

/**
 * Waits for the cycle's processes to end (an orphaned delegate finishes on its own; bounded by
 * `settleMs`), then takes the inventory.
 */
export async function account(world, netnsName, settleMs) {
  await settle(() => world.processes(), settleMs);
  return leftovers(world, netnsName, await lingering(world));
}

/** Removes every leftover so the next cycle starts from nothing. */
export function scrub(world, found) {
  killPids(world.processes().map((p) => p.pid));
  for (const [kind, detail] of found) {
    if (kind === "bridge-port") {
      try {
        execFileSync("ip", ["link", "del", detail.split("/")[1]], { stdio: "ignore" });
      } catch {}
    }
  }
  for (const f of walk(world.dataDir))
    if (isIP(f.split("/").pop() ?? "") !== 0) rmSync(f, { force: true });
  // cniDir is a mount point (world.mjs): its contents go, it stays.
  for (const name of existsSync(world.cniDir) ? readdirSync(world.cniDir) : [])
    rmSync(join(world.cniDir, name), { recursive: true, force: true });
}
