/**
 * Running one network (a conflist) the way libcni's `AddNetworkList`/`DelNetworkList`/… do
 * (C3.1, C3.2, C3.3, N7.1): `name` and `cniVersion` injected into every plugin, `prevResult`
 * chained on ADD, DEL in reverse with the cached result, `runtimeConfig` derived from capabilities.
 */
import type { ConfList, PluginConf } from "../cni/conf";
import { decodeJson, isPlainObject } from "../cni/json";
import { asCniError, CniError, Code, failIfAny } from "../cni/errors";
import { convertResult } from "../cni/result/convert";
import { KeySet, withKeysFold, withoutKeysFold } from "../cni/keys";
import { decodeResult } from "../cni/result/decode";
import type { AnyResult } from "../cni/result/types";
import { versionAtLeast } from "../cni/version";
import type { Logger } from "../log/logger";
import type { ResultCache } from "./cache";
import type { Env, PluginExec } from "../invoke/plugin-exec";
import { assertVouched, type VettedAttach, type VettedList } from "./vouch";

export interface RuntimeConf {
  containerId: string;
  netns: string;
  ifName: string;
  /** CNI_ARGS as the runtime gave it (C4.1: delegates get the same env). */
  args: string;
  /** CNI_PATH directories, binDir first. */
  path: readonly string[];
  /** Capability values the runtime supplied (`runtimeConfig` of Plexus's own config). */
  capabilityArgs: Readonly<Record<string, unknown>>;
  /**
   * The environment delegates inherit, without CNI_* (those are set per call): the node's, and
   * whatever the caller adds for its delegates (the container lock's call mark).
   */
  baseEnv: Readonly<Env>;
  /** Per-delegate deadline (B52). */
  deadlineMs: number;
  /**
   * The whole call's deadline (epoch ms) and the config key that sets it: no plugin runs past it.
   */
  callDeadline?: { at: number; key: string };
}

export interface ExecDeps {
  exec: PluginExec;
  cache: ResultCache;
  log: Logger;
  /**
   * The container's lock, held for this call: every delegate inherits its descriptor as fd 3
   * (undefined: no lock here).
   */
  lock?: { readonly fd: number | undefined };
  /**
   * M20: told of every delegate process run, once it has ended (not of the built-in passthru,
   * which runs no process, nor of a plugin never started: no binary, the deadline already past).
   */
  observe?: (run: DelegateRun) => void;
}

type Verb = "ADD" | "DEL" | "CHECK" | "STATUS" | "GC" | "VERSION";

/** M20: one delegate run, as {@link ExecDeps.observe} is told of it. */
export interface DelegateRun {
  pluginType: string;
  verb: Verb;
  durationMs: number;
  /** "success", or the CNI error code the run failed with (the delegate's own, or Plexus's). */
  result: "success" | number;
}

function describe(plugin: PluginConf, list: ConfList, verb: Verb): string {
  const type = JSON.stringify(plugin.type);
  return `plugin type=${type} network=${JSON.stringify(list.name)} (${verb})`;
}

/**
 * The keys libcni owns in a plugin's stdin: it injects `name` and `cniVersion`, derives
 * `runtimeConfig` and `prevResult`, and removes `capabilities`. Removed in every spelling a Go
 * plugin reads as the same field (keys.ts foldKey), so none carries a value from the config.
 */
const RUNTIME_OWNED = ["name", "cniVersion", "capabilities", "runtimeConfig", "prevResult"];
const RUNTIME_OWNED_KEYS = new KeySet(RUNTIME_OWNED);

/** C3.2: runtimeConfig = declared capabilities ∩ supplied values; `capabilities` itself removed. */
export function buildPluginConf(
  list: ConfList,
  plugin: PluginConf,
  capabilityArgs: Readonly<Record<string, unknown>>,
  prevResult?: AnyResult,
): Record<string, unknown> {
  const conf = withoutKeysFold(plugin, RUNTIME_OWNED_KEYS);
  conf.name = list.name;
  conf.cniVersion = list.cniVersion;
  const runtimeConfig: Record<string, unknown> = {};
  for (const [cap, declared] of Object.entries(plugin.capabilities ?? {})) {
    if (declared && Object.hasOwn(capabilityArgs, cap)) runtimeConfig[cap] = capabilityArgs[cap];
  }
  if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
  if (prevResult) conf.prevResult = convertResult(prevResult, list.cniVersion);
  return conf;
}

/** The CNI_* environment a plugin is run with (C4.1); exported for `plexus explain`. */
export function envFor(verb: Verb, rt: RuntimeConf): Env {
  const env: Env = { ...rt.baseEnv, CNI_COMMAND: verb, CNI_PATH: rt.path.join(":") };
  if (verb === "ADD" || verb === "DEL" || verb === "CHECK") {
    env.CNI_CONTAINERID = rt.containerId;
    env.CNI_NETNS = rt.netns;
    env.CNI_IFNAME = rt.ifName;
    env.CNI_ARGS = rt.args;
  }
  return env;
}

/**
 * M12: the first plugin of an auxiliary chain, as Multus builds it. Plexus answers for it itself,
 * as Multus's `passthru` binary does (an empty result on ADD, nothing else), so no such binary has
 * to be installed; every other plugin runs its binary.
 */
export const PASSTHRU_PLUGIN: Readonly<PluginConf> = { type: "passthru", name: "passthru-cni" };

export function isBuiltinPassthru(plugin: PluginConf): boolean {
  return plugin.type === PASSTHRU_PLUGIN.type && plugin.name === PASSTHRU_PLUGIN.name;
}

function passthruOutput(verb: Verb, list: ConfList): Uint8Array {
  if (verb !== "ADD") return new Uint8Array();
  const empty = versionAtLeast(list.cniVersion, "0.3.0")
    ? { cniVersion: list.cniVersion, interfaces: [], ips: [], routes: [], dns: {} }
    : { cniVersion: list.cniVersion, dns: {} };
  return Buffer.from(JSON.stringify(empty));
}

async function runPlugin(
  verb: Verb,
  list: ConfList,
  plugin: PluginConf,
  conf: Record<string, unknown>,
  rt: RuntimeConf,
  deps: Pick<ExecDeps, "exec" | "log" | "lock" | "observe">,
  onStart?: () => void,
): Promise<Uint8Array> {
  const what = describe(plugin, list, verb);
  assertVouched(list, verb);
  if (isBuiltinPassthru(plugin)) {
    onStart?.();
    return passthruOutput(verb, list);
  }
  const path = await deps.exec.findInPath(plugin.type, rt.path).catch((err: unknown) => {
    throw err instanceof CniError ? err.withContext(`network ${JSON.stringify(list.name)}`) : err;
  });
  const deadlineMs = remainingMs(rt, what);
  onStart?.();
  deps.log.debug({ delegate: what, path, ifName: rt.ifName }, "running delegate");
  const inheritFd = deps.lock?.fd;
  const run = () =>
    deps.exec.execPlugin({
      path,
      stdin: Buffer.from(JSON.stringify(conf)),
      env: envFor(verb, rt),
      deadlineMs,
      what,
      ...(inheritFd === undefined ? {} : { inheritFd }),
    });
  return deps.observe ? observed(run, { pluginType: plugin.type, verb }, deps.observe) : run();
}

/** M20: the run's end and time told to `observe`; its outcome passes through untouched. */
async function observed(
  run: () => Promise<Uint8Array>,
  what: Pick<DelegateRun, "pluginType" | "verb">,
  observe: (run: DelegateRun) => void,
): Promise<Uint8Array> {
  const started = performance.now();
  const tell = (result: DelegateRun["result"]) => {
    try {
      observe({ ...what, durationMs: performance.now() - started, result });
    } catch {
      // Counting a run never changes what the run did.
    }
  };
  try {
    const out = await run();
    tell("success");
    return out;
  } catch (err) {
    tell(asCniError(err).code);
    throw err;
  }
}

/**
 * The delegate's own deadline, cut to what is left of the call's; none left: 101 before it starts.
 */
function remainingMs(rt: RuntimeConf, what: string): number {
  if (!rt.callDeadline) return rt.deadlineMs;
  const left = Math.floor(rt.callDeadline.at - Date.now());
  if (left <= 0) {
    throw new CniError(
      Code.DelegateTimeout,
      `${what}: not run, the call's deadline passed (${rt.callDeadline.key} in Plexus's config)`,
    );
  }
  return Math.min(rt.deadlineMs, left);
}

/** ADD: plugins in order, each given the previous result; the final result is cached (C3.3). */
export async function addNetworkList(
  list: VettedAttach,
  rt: RuntimeConf,
  deps: ExecDeps,
): Promise<AnyResult> {
  let prev: AnyResult | undefined;
  let started = 0;
  try {
    for (const plugin of list.plugins) {
      const conf = buildPluginConf(list, plugin, rt.capabilityArgs, prev);
      const out = await runPlugin("ADD", list, plugin, conf, rt, deps, () => started++);
      const result = decodeResult(out, list.cniVersion, describe(plugin, list, "ADD"));
      prev = convertResult(result, list.cniVersion);
    }
  } catch (err) {
    throw markPluginsStarted(err, started);
  }
  if (!prev)
    throw new CniError(
      Code.InvalidNetworkConfig,
      `network ${JSON.stringify(list.name)} has no plugins`,
    );
  await deps.cache.set({
    networkName: list.name,
    containerId: rt.containerId,
    ifName: rt.ifName,
    config: JSON.stringify(list),
    netns: rt.netns,
    cniArgs: rt.args,
    capabilityArgs: { ...rt.capabilityArgs },
    result: prev,
  });
  return prev;
}

const STARTED = Symbol("pluginsStarted");

function markPluginsStarted(err: unknown, started: number): unknown {
  if (err !== null && typeof err === "object") (err as Record<symbol, number>)[STARTED] = started;
  return err;
}

/**
 * How many plugins of a failed ADD were actually executed (C4.1): only those get a DEL. A plugin
 * whose binary was never found has no state to remove, and DELing it would fail for the same
 * reason, keeping the record (and the runtime's sandbox) stuck. Undefined when unknown.
 */
export function pluginsStartedOf(err: unknown): number | undefined {
  return err !== null && typeof err === "object"
    ? (err as Record<symbol, number | undefined>)[STARTED]
    : undefined;
}

async function cachedResult(
  list: ConfList,
  rt: RuntimeConf,
  deps: ExecDeps,
): Promise<AnyResult | undefined> {
  const entry = await deps.cache.get({
    networkName: list.name,
    containerId: rt.containerId,
    ifName: rt.ifName,
  });
  return entry?.result;
}

/**
 * DEL: plugins in reverse with the cached result as `prevResult` (≥ 0.4.0, as libcni). Unlike
 * libcni, a failing plugin does not stop the others: an IPAM reservation behind a failed
 * meta-plugin is still released. The cache entry is removed only when every plugin succeeded,
 * so a retried DEL still has it (B62).
 */
export async function delNetworkList(
  list: VettedList,
  rt: RuntimeConf,
  deps: ExecDeps,
): Promise<void> {
  // An entry that exists but cannot be read (a FIFO or directory planted in results/) must not fail
  // every DEL of the pod: DEL goes on without prevResult, as for a missing entry (B72).
  const prev = versionAtLeast(list.cniVersion, "0.4.0")
    ? await cachedResult(list, rt, deps).catch((err: unknown) => {
        deps.log.warn(
          { network: list.name, err: asCniError(err).message },
          "cached result unreadable; DEL without it",
        );
        return undefined;
      })
    : undefined;
  const errors: CniError[] = [];
  for (const plugin of [...list.plugins].reverse()) {
    const conf = buildPluginConf(list, plugin, rt.capabilityArgs, prev);
    try {
      await runPlugin("DEL", list, plugin, conf, rt, deps);
    } catch (err) {
      errors.push(asCniError(err));
    }
  }
  failIfAny(errors, `network ${JSON.stringify(list.name)}: ${errors.length} plugins failed DEL`);
  await deps.cache.delete({
    networkName: list.name,
    containerId: rt.containerId,
    ifName: rt.ifName,
  });
}

/**
 * CHECK (C2.6): skipped when `disableCheck`; needs the cached result. A network older than 0.4.0
 * has no CHECK, so Plexus, acting as its runtime, does not send one (libcni refuses to): one
 * 0.3.1 NAD must not fail every CHECK of the pod.
 */
export async function checkNetworkList(
  list: VettedList,
  rt: RuntimeConf,
  deps: ExecDeps,
): Promise<void> {
  if (!versionAtLeast(list.cniVersion, "0.4.0")) {
    deps.log.debug(
      { network: list.name, cniVersion: list.cniVersion },
      "CHECK skipped: the network's cniVersion predates CHECK (0.4.0)",
    );
    return;
  }
  if (list.disableCheck) return;
  const prev = await cachedResult(list, rt, deps);
  if (!prev) {
    throw new CniError(
      Code.UnknownContainer,
      `network ${JSON.stringify(list.name)}: no cached result for container ` +
        `${rt.containerId} interface ${rt.ifName}; was it added?`,
    );
  }
  for (const plugin of list.plugins) {
    await runPlugin(
      "CHECK",
      list,
      plugin,
      buildPluginConf(list, plugin, rt.capabilityArgs, prev),
      rt,
      deps,
    );
  }
}

/** STATUS (C2.8): forwarded to every plugin of a ≥ 1.1.0 list; older plugins know no STATUS. */
export async function statusNetworkList(
  list: VettedList,
  rt: RuntimeConf,
  deps: ExecDeps,
): Promise<void> {
  if (!versionAtLeast(list.cniVersion, "1.1.0")) return;
  for (const plugin of list.plugins) {
    await runPlugin("STATUS", list, plugin, buildPluginConf(list, plugin, {}), rt, deps);
  }
}

/**
 * VERSION (C2.7) of one plugin of a vetted list, as a runtime asks it: the spec versions its
 * binary speaks. `plexus validate` asks it, so a binary the gate refuses is never run, not even
 * for VERSION.
 */
export async function pluginVersionsOf(
  list: VettedList,
  plugin: PluginConf,
  rt: Pick<RuntimeConf, "path" | "baseEnv" | "deadlineMs">,
  deps: Pick<ExecDeps, "exec" | "log">,
): Promise<string[]> {
  const blank = { containerId: "", netns: "", ifName: "", args: "", capabilityArgs: {} };
  const runtime: RuntimeConf = { ...rt, ...blank };
  const stdin = { cniVersion: list.cniVersion };
  const out = await runPlugin("VERSION", list, plugin, stdin, runtime, deps);
  const what = describe(plugin, list, "VERSION");
  const answer = decodeJson(out, { what: `${what}'s answer`, code: Code.Decoding });
  const versions = isPlainObject(answer) ? answer.supportedVersions : undefined;
  if (!Array.isArray(versions))
    throw new CniError(Code.Decoding, `${what} answered without supportedVersions`);
  return versions.map(String);
}

export interface GcAttachment {
  containerID: string;
  ifname: string;
}

/**
 * GC (C2.9), as libcni's `GCNetworkList`: DEL every cached attachment of this network that is not
 * valid, then (≥ 1.1.0) forward GC with `cni.dev/valid-attachments`. Keeps going, reports all.
 */
export async function gcNetworkList(
  list: VettedList,
  valid: readonly GcAttachment[],
  rt: RuntimeConf,
  deps: ExecDeps,
): Promise<void> {
  if (list.disableGC) return;
  const keep = new Set(valid.map((a) => `${a.containerID}\n${a.ifname}`));
  const errors: CniError[] = [];
  for (const entry of await deps.cache.list(list.name)) {
    if (keep.has(`${entry.containerId}\n${entry.ifName}`)) continue;
    deps.log.info(
      { network: list.name, containerId: entry.containerId, ifName: entry.ifName },
      "GC: releasing stale attachment",
    );
    try {
      await delNetworkList(
        list,
        {
          ...rt,
          containerId: entry.containerId,
          ifName: entry.ifName,
          netns: "",
          args: entry.cniArgs ?? "",
          capabilityArgs: entry.capabilityArgs ?? {},
        },
        deps,
      );
    } catch (err) {
      errors.push(asCniError(err));
    }
  }
  if (versionAtLeast(list.cniVersion, "1.1.0")) {
    for (const plugin of list.plugins) {
      const attachments = { "cni.dev/valid-attachments": valid };
      const conf = withKeysFold(buildPluginConf(list, plugin, {}), attachments);
      try {
        await runPlugin("GC", list, plugin, conf, rt, deps);
      } catch (err) {
        errors.push(asCniError(err));
      }
    }
  }
  failIfAny(errors, `network ${JSON.stringify(list.name)}: GC had ${errors.length} failures`);
}
