// Processes for the soak: dist/plexus run as a runtime runs it (the runtime can SIGKILL it), and
// the processes the soak is answerable for: every one carrying its marker variable in its
// environment (dist/plexus passes its environment on to delegates, so orphans carry it too) or
// whose parent chain leads to the soak.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const OUTPUT_CAP = 64 * 1024;

/**
 * Starts `bin` with `stdin`; `done` resolves with exit code, signal, stdout and stderr (each
 * capped). `kill()` sends SIGKILL to that process only, as containerd does at its deadline.
 */
export function start(bin, args, { env, stdin = "" }) {
  const child = spawn(bin, args, { env, stdio: ["pipe", "pipe", "pipe"] });
  const out = [];
  const err = [];
  let outLen = 0;
  let errLen = 0;
  child.stdout.on("data", (c) => outLen < OUTPUT_CAP && (out.push(c), (outLen += c.length)));
  child.stderr.on("data", (c) => errLen < OUTPUT_CAP && (err.push(c), (errLen += c.length)));
  child.stdin.on("error", () => {});
  child.stdin.end(stdin);
  const t0 = performance.now();
  const done = new Promise((resolve) => {
    child.on("error", (e) =>
      resolve({
        code: -1,
        signal: null,
        stdout: "",
        stderr: String(e),
        ms: performance.now() - t0,
      }),
    );
    child.on("close", (code, signal) =>
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
        ms: performance.now() - t0,
      }),
    );
  });
  return {
    pid: child.pid,
    done,
    kill: () => {
      try {
        child.kill("SIGKILL");
      } catch {}
    },
  };
}

function stat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const rest = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return { state: rest[0], ppid: Number(rest[1]) };
  } catch {
    return undefined;
  }
}

function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
  } catch {
    return "";
  }
}

/**
 * Live (non-zombie) processes that carry `marker` ("NAME=value"), or descend from this process
 * and carry none of `foreign` (the markers of other lanes, whose calls are in flight right now);
 * `exclude` (pids: the daemons the soak runs on purpose) and this process are left out.
 */
export function ownedProcesses(marker, { exclude = new Set(), foreign = [] } = {}) {
  const needle = Buffer.from(marker);
  const others = foreign.map((m) => Buffer.from(m));
  const table = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(name);
    if (s) table.set(Number(name), s);
  }
  const descends = (pid) => {
    for (let p = pid, i = 0; p > 1 && i < 64; i++) {
      if (p === process.pid) return true;
      p = table.get(p)?.ppid ?? 0;
    }
    return false;
  };
  const out = [];
  for (const [pid, s] of table) {
    if (pid === process.pid || exclude.has(pid) || s.state === "Z") continue;
    let env;
    try {
      env = readFileSync(`/proc/${pid}/environ`);
    } catch {
      continue;
    }
    // An exiting process has no environment left to read: not a leftover (yet); a stuck one
    // shows up in the second scan (see account.mjs).
    if (env.length === 0) continue;
    const ours = env.includes(needle) || (descends(pid) && !others.some((o) => env.includes(o)));
    if (ours) out.push({ pid, cmd: cmdline(pid) });
  }
  return out;
}

/** Waits up to `ms` for `list()` to come back empty; returns what is left. */
export async function settle(list, ms) {
  const end = Date.now() + ms;
  let left = list();
  while (left.length > 0 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
    left = list();
  }
  return left;
}

export function killPids(pids) {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
