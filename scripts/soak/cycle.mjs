// One soak cycle: a pod with 0–4 extra networks is ADDed with at most one fault, then torn down
// by the runtime's DEL sequence (DEL with the netns, retried as the kubelet retries a failing
// DEL, then DEL with CNI_NETNS=""). Everything a cycle does follows from (seed, cycle index), so
// a cycle that leaked can be replayed alone with `--seed S --start I --cycles 1`.
import { MAX_EXTRA, NAMESPACE, PLEXUS, ifName } from "./world.mjs";
import { ipJson } from "./account.mjs";
import { sleep, start } from "./proc.mjs";

/** Fault kinds and their weights (out of 100); "none" is a plain ADD/DEL. */
export const FAULTS = [
  ["none", 40],
  ["kill-add", 7],
  ["kill-del", 5],
  ["delegate-hang", 3],
  ["delegate-crash", 4],
  ["delegate-garbage", 4],
  ["delegate-sleep-past-kill", 6],
  ["concurrent-add-add", 4],
  ["concurrent-add-del", 4],
  ["api-5xx", 3],
  ["api-reset", 3],
  ["api-hang", 2],
  ["api-409", 2],
  ["daemon-kill", 3],
  // DEL's own faults: a delegate DEL that fails once its state is gone, DELs slower than the DEL
  // deadline, a grandchild that leaves its session to attach late, a full cniDir, a runtime that
  // calls DEL once (podman).
  ["del-non-idempotent", 2],
  ["del-slow", 2],
  ["delegate-setsid", 2],
  ["full-cnidir", 2],
  ["runtime-del-once", 2],
];

/** Fault kinds after which ADD must still succeed (the daemon's absence has a fallback). */
const ADD_MUST_SUCCEED = new Set(["none", "daemon-kill", "del-non-idempotent", "del-slow"]);

function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function cycleSeed(seed, index) {
  let h = (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  return (h ^ (h >>> 15)) >>> 0;
}

function pick(random, weighted) {
  const total = weighted.reduce((s, [, w]) => s + w, 0);
  let x = random() * total;
  for (const [v, w] of weighted) if ((x -= w) < 0) return v;
  return weighted[0][0];
}

/** What cycle `index` of a run with `seed` does. */
export function planCycle(seed, index, faults = FAULTS) {
  const r = mulberry32(cycleSeed(seed, index));
  const k = Math.floor(r() * (MAX_EXTRA + 1));
  const kind = pick(r, faults);
  const mode = kind.startsWith("api-")
    ? "thin"
    : kind === "daemon-kill"
      ? "daemon"
      : r() < 0.5
        ? "thin"
        : "daemon";
  const target = Math.floor(r() * (k + 1));
  const p = { i: index, seed: cycleSeed(seed, index), k, kind, mode };
  planDelFault(p, r);
  // Roughly how long a clean ADD of k+1 networks takes here; kills land anywhere in it.
  const addMs = 60 + 45 * (k + 1);
  if (kind === "kill-add" || kind === "kill-del" || kind === "daemon-kill")
    p.killAfterMs = Math.round(r() * addMs);
  if (kind.startsWith("delegate-")) {
    p.target = ifName(target);
    const when = r() < 0.5 ? "before" : "after";
    // A sleeping delegate runs bridge after its sleep; the others misbehave before or after it.
    if (kind !== "delegate-sleep-past-kill") p.when = when;
  }
  if (kind === "delegate-sleep-past-kill") {
    p.sleepMs = Math.round(300 + r() * 300);
    // The sleeping delegate starts after Plexus and the delegates before it; the kill lands in its
    // sleep.
    p.killAfterMs = Math.round(50 + 45 * target + r() * (p.sleepMs - 100));
  }
  if (kind === "concurrent-add-add" || kind === "concurrent-add-del")
    p.gapMs = Math.round(r() * (kind === "concurrent-add-add" ? 30 : addMs));
  if (kind.startsWith("api-")) {
    const routes = ["pod", "status", "event", ...(k > 0 ? ["nad"] : [])];
    p.route = routes[Math.floor(r() * routes.length)];
    p.times = 1 + Math.floor(r() * 3);
    const code = [500, 503, 504][Math.floor(r() * 3)];
    if (kind === "api-5xx") p.code = code;
  }
  return p;
}

/**
 * The plan of the DEL fault classes (their mode picks a config of world.mjs where they need one).
 */
function planDelFault(plan, random) {
  const anyIf = () => ifName(Math.floor(random() * (plan.k + 1)));
  switch (plan.kind) {
    case "del-non-idempotent":
      plan.target = anyIf();
      break;
    case "del-slow":
      plan.k = Math.max(plan.k, 2);
      plan.mode = "delDeadline";
      plan.sleepS = 5;
      break;
    case "delegate-setsid":
      plan.target = anyIf();
      plan.sleepS = Number((1.5 + random()).toFixed(2));
      break;
    case "full-cnidir":
      plan.when = random() < 0.5 ? "before" : "after";
      break;
    case "runtime-del-once":
      plan.k = Math.max(plan.k, 1);
      plan.mode = "delOnce";
      plan.target = ifName(1 + Math.floor(random() * plan.k));
      plan.when = random() < 0.5 ? "before" : "after";
      // After a failure past bridge's ADD, the retry must succeed (abandoning it would leak by
      // design).
      plan.fixed = plan.when === "after" || random() < 0.5;
      break;
  }
}

export function describePlan(plan) {
  const extra = Object.entries(plan)
    .filter(([key]) => !["i", "seed", "kind", "k", "mode"].includes(key))
    .map(([key, v]) => `${key}=${v}`)
    .join(" ");
  return `${plan.kind} (${plan.k} extra networks, ${plan.mode}${extra ? `, ${extra}` : ""})`;
}

function apiFault(world, plan) {
  const pod = `p${plan.k}`;
  const path = {
    pod: `/api/v1/namespaces/${NAMESPACE}/pods/${pod}`,
    status: `/api/v1/namespaces/${NAMESPACE}/pods/${pod}/status`,
    event: /\/events$/,
    nad: /network-attachment-definitions/,
  }[plan.route];
  const method = { pod: "GET", status: "PATCH", event: "POST", nad: "GET" }[plan.route];
  const fault = {
    "api-5xx": { kind: "status", code: plan.code },
    "api-reset": { kind: "reset" },
    "api-hang": { kind: "hang" },
    "api-409": { kind: "status", code: 409, reason: "Conflict" },
  }[plan.kind];
  world.api.inject({ method, path, times: plan.times, watch: false }, fault);
}

const delegateFaultLine = (plugin, mode, arg = "-") =>
  `${plugin.target} ADD ${mode} ${plugin.when ?? "before"} ${arg}`;

/** The ADD phase of a cycle, faulted as planned. Returns the ADD results that finished. */
async function addPhase(world, plan, call) {
  switch (plan.kind) {
    case "kill-add": {
      const a = call("ADD");
      await sleep(plan.killAfterMs);
      a.kill();
      return [await a.done];
    }
    case "delegate-hang":
    case "delegate-crash":
    case "delegate-garbage":
      world.setFault([delegateFaultLine(plan, plan.kind.slice("delegate-".length))]);
      return [await call("ADD").done];
    case "delegate-sleep-past-kill": {
      world.setFault([delegateFaultLine(plan, "sleep", (plan.sleepMs / 1000).toFixed(3))]);
      const a = call("ADD");
      await sleep(plan.killAfterMs);
      a.kill();
      return [await a.done];
    }
    case "concurrent-add-add": {
      const a = call("ADD");
      await sleep(plan.gapMs);
      const b = call("ADD");
      return Promise.all([a.done, b.done]);
    }
    case "concurrent-add-del": {
      const a = call("ADD");
      await sleep(plan.gapMs);
      const d = call("DEL");
      return [(await Promise.all([a.done, d.done]))[0]];
    }
    case "delegate-setsid":
      world.setFault([`${plan.target} ADD setsid - ${plan.sleepS}`]);
      return [await call("ADD").done];
    case "full-cnidir":
      if (plan.when === "before") world.fillCniDir();
      return [await call("ADD").done];
    case "runtime-del-once":
      world.setFault([
        `${plan.target} ADD fail ${plan.when} -`,
        `${plan.target} DEL fail before -`,
      ]);
      return [await call("ADD").done];
    case "daemon-kill": {
      const a = call("ADD");
      await sleep(plan.killAfterMs);
      await world.killDaemon();
      const r = await a.done;
      await world.startDaemon();
      return [r];
    }
    default:
      if (plan.kind.startsWith("api-")) apiFault(world, plan);
      return [await call("ADD").done];
  }
}

/** DEL as the kubelet does it: retried while it fails (a few times here). */
async function runtimeDel(call, over, problems) {
  let r;
  for (let attempt = 0; attempt < 3; attempt++) {
    r = await call("DEL", over).done;
    if (r.code === 0) return;
    await sleep(50);
  }
  problems.push([
    "del-failed",
    `DEL${over.netns === "" ? ' with CNI_NETNS=""' : ""} exit ${r.code}: ` +
      `${r.stdout.slice(0, 300)}`,
  ]);
}

/** ADDs whose success must be visible: every interface the result puts in the sandbox exists. */
const RESULT_CHECKED = new Set([
  "none",
  "del-non-idempotent",
  "del-slow",
  "daemon-kill",
  "concurrent-add-add",
  "api-5xx",
  "api-reset",
  "api-hang",
  "api-409",
]);

function missingInterfaces(adds, netnsName) {
  const present = new Set(ipJson(["-n", netnsName, "link", "show"]).map((l) => l.ifname));
  const missing = [];
  for (const a of adds) {
    if (a.code !== 0) continue;
    let result;
    try {
      result = JSON.parse(a.stdout);
    } catch {
      missing.push(`ADD exit 0 with unparsable stdout: ${a.stdout.slice(0, 200)}`);
      continue;
    }
    for (const i of result.interfaces ?? [])
      if (i.sandbox && !present.has(i.name))
        missing.push(`ADD succeeded with ${i.name}, not in the netns`);
  }
  return missing;
}

/**
 * Runs the cycle `plan` in its own netns; returns the problems found by its own calls (a DEL
 * that kept failing, a must-succeed ADD that failed, a successful ADD whose interfaces are not
 * there). The caller does the accounting while the netns lives.
 */
export async function runCycle(world, plan, netns) {
  const ctx = { containerId: `soak${world.tag}c${plan.i}`, netns: netns.path, pod: `p${plan.k}` };
  const conf = world.confs[plan.mode];
  const call = (cmd, over = {}) =>
    start(PLEXUS, [], { env: world.env(cmd, { ...ctx, ...over }), stdin: conf });
  const problems = [];
  let adds = [];
  // The delegates' state of the cycle before (cleared now, not at its end: a grandchild that
  // survived it must still find its config and show up as the leak it is).
  world.clearState();
  if (
    plan.mode === "daemon" &&
    (!world.daemon || world.daemon.exitCode !== null || world.daemon.signalCode !== null)
  )
    await world.startDaemon();
  if (plan.kind === "kill-del") {
    const a = await call("ADD").done;
    if (a.code !== 0)
      problems.push(["add-failed", `ADD exit ${a.code}: ${a.stdout.slice(0, 300)}`]);
    const d = call("DEL");
    await sleep(plan.killAfterMs * 0.7);
    d.kill();
    await d.done;
  } else {
    adds = await addPhase(world, plan, call);
    if (ADD_MUST_SUCCEED.has(plan.kind))
      for (const a of adds)
        if (a.code !== 0)
          problems.push([
            "add-failed",
            `ADD exit ${a.code}: ${a.stdout.slice(0, 300)} ${a.stderr.slice(-300)}`,
          ]);
    if (RESULT_CHECKED.has(plan.kind))
      for (const m of missingInterfaces(adds, netns.name)) problems.push(["add-result-missing", m]);
  }
  world.setFault([]);
  if (plan.kind === "runtime-del-once")
    return runtimeDelsOnce(world, plan, { call, netns, problems });
  if (DEL_FAULTS.has(plan.kind)) return delFaultDels(world, plan, { call, netns, adds, problems });
  if (plan.kind === "concurrent-add-del") {
    // The racing DEL was the runtime's StopPodSandbox; it then removes the netns, and
    // RemovePodSandbox's DEL comes without one. What the ADD left must go with those two.
    world.deleteNetns(netns.name);
  } else await runtimeDel(call, {}, problems);
  world.api.clearFaults();
  await runtimeDel(call, { netns: "" }, problems);
  return problems;
}

const DEL_FAULTS = new Set(["del-non-idempotent", "del-slow", "full-cnidir"]);

/** One DEL that must exit 0 the first time (no retry hides a failure, or a flip-flop). */
async function delOnceOk(call, over, problems, what) {
  const r = await call("DEL", over).done;
  if (r.code !== 0)
    problems.push(["del-failed", `${what}: DEL exit ${r.code}: ${r.stdout.slice(0, 300)}`]);
}

/** The DEL phase of the DEL fault classes (each DEL is judged on its own, see delOnceOk). */
async function delFaultDels(world, plan, { call, netns, adds, problems }) {
  try {
    if (plan.kind === "full-cnidir") {
      checkFullAdd(plan, adds, problems);
      // Topped up before every DEL: what the one before freed must not make the next one easy.
      for (const over of [{}, { netns: "" }, { netns: "" }]) {
        world.fillCniDir();
        await delOnceOk(call, over, problems, "full cniDir");
      }
    } else if (plan.kind === "del-non-idempotent") {
      world.setFault([`${plan.target} DEL nonidem - -`]);
      await runtimeDel(call, {}, problems);
      for (const over of [{}, { netns: "" }, { netns: "" }])
        await delOnceOk(call, over, problems, `DEL without a record, ${plan.target}'s DEL failing`);
    } else {
      world.setFault(["net1", "net2"].map((n) => `${n} DEL sleeponce - ${plan.sleepS}`));
      await call("DEL").done;
      // Whatever the slow ones did, the default network's DEL got its turn within the deadline.
      const left = ipJson(["-n", netns.name, "link", "show"]).map((l) => l.ifname);
      if (left.includes("eth0"))
        problems.push(["del-failed", "slow DELs: the default network's DEL did not run"]);
      await runtimeDel(call, {}, problems);
      await runtimeDel(call, { netns: "" }, problems);
    }
  } finally {
    world.setFault([]);
    world.unfillCniDir();
  }
  return problems;
}

/** A full cniDir: an ADD must fail with 5 (an I/O error, never 999) and the DELs succeed. */
function checkFullAdd(plan, adds, problems) {
  if (plan.when !== "before") return;
  for (const a of adds) {
    let code;
    try {
      code = JSON.parse(a.stdout).code;
    } catch {}
    if (a.code === 0 || code !== 5)
      problems.push(["add-failed", `full cniDir: ADD exit ${a.code}, ${a.stdout.slice(0, 200)}`]);
  }
}

/**
 * podman's sequence: the failed ADD, one DEL (it may fail: nothing retries it), the container
 * removed; then another container is run and removed on the node, and must take the record of
 * the failed DEL with it (retried, or abandoned at once with failedDelRetrySeconds 0).
 */
async function runtimeDelsOnce(world, plan, { call, netns, problems }) {
  world.setFault([`${plan.target} DEL fail before -`]);
  await call("DEL").done;
  world.deleteNetns(netns.name); // podman rm: the sandbox and its netns go, no DEL comes again
  if (plan.fixed) world.setFault([]);
  const nextNs = `${netns.name}n`;
  const next = {
    containerId: `soak${world.tag}c${plan.i}n`,
    pod: "p0",
    netns: world.addNetns(nextNs),
  };
  try {
    const a = await call("ADD", next).done;
    if (a.code !== 0)
      problems.push([
        "add-failed",
        `next container's ADD exit ${a.code}: ${a.stdout.slice(0, 300)}`,
      ]);
    await runtimeDel(call, next, problems);
  } finally {
    world.deleteNetns(nextNs);
  }
  await runtimeDel(call, { ...next, netns: "" }, problems);
  world.setFault([]);
  return problems;
}
