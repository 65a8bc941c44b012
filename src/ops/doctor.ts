/**
 * `plexus doctor`: the node's health for Plexus in one screen. Each line is ok, warning or error,
 * with what to do: which config the runtime picks and whether it runs Plexus (and any file the
 * runtime would load before Plexus's config, conf-dir-check.ts), the default network
 * it points at (and its plugins' keys that no plugin reads), the readiness file, the kubeconfig
 * and its token's expiry, the API server, the daemon socket and its caches, stale or corrupt
 * container records, free space under cniDir.
 */
import { existsSync, statfsSync } from "node:fs";
import { request } from "node:http";
import { dirname } from "node:path";
import { isPlainObject } from "../cni/json";
import { escapeText } from "../cni/quote";
import { DEFAULT_CONF_DIR, PLEXUS_KEYS } from "../config/plugin-conf";
import type { ConfList } from "../cni/conf";
import { delegateKeyWarnings, reportUnknownKeys } from "../config/unknown-keys";
import { loadKubeApi } from "../kubeapi/index";
import { readCredentialFile, readKubeconfig } from "../kubeapi/kubeconfig";
import { resolveDefaultNetworks } from "../npwg/default-network";
import { auxiliaryChainDir, loadAuxiliaryChain } from "../planning/aux-chain";
import { FsNetworkSource } from "../planning/network-source";
import { RecordStore } from "../nodestate/record";
import type { CommonFlags, OpsContext, Output } from "./context";
import { messageOf, opsContext, processOutput, runOps, wantsJson } from "./context";
import { checkRuntimeConfig } from "./conf-dir-check";
import { doctorMultus } from "./multus-leftovers";
import { checkNodeScope } from "./node-scope-check";
import { listRecords } from "./records";
import type { Finding } from "./validate";
import { missingPluginBinaries, pluginDirs } from "./plugin-binaries";
import { ExitCode } from "../command/exit-codes";

export interface Check extends Finding {
  subject: string;
}

type Add = (level: Check["level"], subject: string, msg: string) => void;

/** The `exp` claim of a JWT (a projected service-account token), or undefined. */
function tokenExpiry(token: string): Date | undefined {
  const payload = token.trim().split(".")[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as {
      exp?: unknown;
    };
    return typeof claims.exp === "number" ? new Date(claims.exp * 1000) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The token the kubeconfig's current user sends, read as the plugin reads it
 * (kubeapi/kubeconfig.ts).
 */
async function tokenOf(kubeconfig: string): Promise<{ token?: string; from: string }> {
  const raw = await readKubeconfig(kubeconfig);
  const ctxName = raw["current-context"];
  const ctx = (Array.isArray(raw.contexts) ? raw.contexts : []).find(
    (c) => isPlainObject(c) && c.name === ctxName,
  ) as Record<string, unknown> | undefined;
  const userName = isPlainObject(ctx?.context) ? ctx.context.user : undefined;
  const users = Array.isArray(raw.users) ? raw.users : [];
  const entry = (users.find((u) => isPlainObject(u) && u.name === userName) ?? users[0]) as
    | Record<string, unknown>
    | undefined;
  const user = isPlainObject(entry?.user) ? entry.user : {};
  if (typeof user.token === "string")
    return { token: user.token, from: `${kubeconfig} (inline token)` };
  // readKubeconfig made `tokenFile` or `token-file` one absolute `token-file`.
  const path = user["token-file"];
  if (typeof path === "string")
    return { token: readCredentialFile(path).toString("utf8"), from: path };
  return { from: `${kubeconfig} (no token: client certificate or credential plugin)` };
}

async function checkToken(kubeconfig: string, add: Add, now = Date.now()): Promise<void> {
  let t: Awaited<ReturnType<typeof tokenOf>>;
  try {
    t = await tokenOf(kubeconfig);
  } catch (err) {
    return add(
      "error",
      "kubeconfig",
      `${kubeconfig} cannot be used: ${messageOf(err)}; the installer (plexus install) writes ` +
        `it, check its log`,
    );
  }
  add("ok", "kubeconfig", `${kubeconfig} is readable`);
  if (!t.token) return add("ok", "token", t.from);
  const exp = tokenExpiry(t.token);
  if (!exp) return add("ok", "token", `${t.from}: not a JWT with an expiry`);
  const left = Math.round((exp.getTime() - now) / 1000);
  if (left <= 0)
    add(
      "error",
      "token",
      `${t.from} expired at ${exp.toISOString()}: is plexus install running (it copies the ` +
        `rotated service-account token)?`,
    );
  else if (left < 600)
    add(
      "warning",
      "token",
      `${t.from} expires in ${left} s (${exp.toISOString()}): the installer should replace it ` +
        `soon`,
    );
  else add("ok", "token", `${t.from} valid until ${exp.toISOString()}`);
}

function socketGet(socketPath: string, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: "GET", timeout: 2000 }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("timeout", () => req.destroy(new Error("no answer within 2 s")));
    req.on("error", reject);
    req.end();
  });
}

async function checkDaemon(socket: string, add: Add): Promise<void> {
  if (!socket)
    return add(
      "ok",
      "daemon",
      'daemonSocket is "": thin mode, every ADD reads from the API server',
    );
  if (!existsSync(socket))
    return add(
      "warning",
      "daemon",
      `no socket at ${socket}: plexus daemon is not running on this node; ADDs fall back to the ` +
        `API server (thin mode)`,
    );
  try {
    const ready = await socketGet(socket, "/readyz");
    const metrics = (await socketGet(socket, "/metrics")).text;
    const count = (kind: string) =>
      new RegExp(`^plexus_daemon_cache_objects\\{kind="${kind}"\\} (\\d+)`, "m").exec(
        metrics,
      )?.[1] ?? "?";
    if (ready.status === 200)
      add(
        "ok",
        "daemon",
        `${socket}: caches synced (${count("pod")} pod(s) of this node, ${count("nad")} NAD(s))`,
      );
    else
      add(
        "warning",
        "daemon",
        `${socket}: caches not synced yet (${ready.text.trim()}); ADDs read from the API server ` +
          `meanwhile; see the daemon container's log`,
      );
  } catch (err) {
    add(
      "error",
      "daemon",
      `${socket} does not answer (${messageOf(err)}): restart the daemon container; ADDs fall ` +
        `back to the API server after a 1 s timeout each`,
    );
  }
}

async function checkApi(ctx: OpsContext, add: Add): Promise<void> {
  const { conf } = ctx;
  if (conf.fileClusterDir)
    return add(
      "ok",
      "kubernetes",
      `manifest directory ${conf.fileClusterDir} (fileClusterDir) instead of an API server`,
    );
  if (!conf.kubeconfig && !(ctx.env.KUBERNETES_SERVICE_HOST && ctx.env.KUBERNETES_SERVICE_PORT)) {
    if (conf.withoutKubernetes)
      return add(
        "ok",
        "kubernetes",
        "withoutKubernetes: this node runs without Kubernetes; pods get their default " +
          "network(s) only",
      );
    return add(
      "error",
      "kubernetes",
      "no kubeconfig, fileClusterDir or in-cluster environment: every ADD of a pod fails (code " +
        '7); is plexus install running? (set "withoutKubernetes": true for a node without ' +
        "Kubernetes)",
    );
  }
  if (conf.kubeconfig) await checkToken(conf.kubeconfig, add);
  try {
    const api = await loadKubeApi(conf, {
      env: ctx.env,
      log: ctx.log,
      client: {
        retry: {
          requestTimeoutMs: conf.apiRequestTimeoutMs,
          totalTimeoutMs: conf.apiTotalTimeoutMs,
        },
      },
    });
    try {
      await api?.getNad(conf.multusNamespace, "plexus-doctor-probe");
      add(
        "ok",
        "api server",
        "reachable, and the credentials may read NetworkAttachmentDefinitions",
      );
    } finally {
      await api?.close();
    }
  } catch (err) {
    add("error", "api server", `${messageOf(err)}`);
  }
}

async function checkRecords(cniDir: string, add: Add): Promise<void> {
  const store = new RecordStore(cniDir);
  const list = await listRecords(store);
  const stale = list.filter((r) => r.state === "stale");
  const corrupt = list.filter((r) => r.state === "corrupt");
  if (stale.length)
    add(
      "warning",
      "records",
      `${stale.length} of ${list.length} record(s) outlived their network namespace ` +
        `(${stale.map((r) => r.id).join(", ")}): the runtime's DEL keeps failing for them; see ` +
        `plexus records show ID, then plexus records rm ID --teardown`,
    );
  if (corrupt.length)
    add(
      "error",
      "records",
      `${corrupt.length} corrupt record(s) ` +
        `(${corrupt.map((r) => `${r.id}: ${r.why}`).join("; ")}): remove with plexus records rm ` +
        `ID`,
    );
  if (!stale.length && !corrupt.length)
    add("ok", "records", `${list.length} container record(s) in ${store.dir}, none stale`);
}

function checkDisk(cniDir: string, add: Add): void {
  let dir = cniDir;
  while (!existsSync(dir) && dir !== dirname(dir)) dir = dirname(dir);
  try {
    const s = statfsSync(dir);
    const free = Number(s.bavail) * Number(s.bsize);
    const mib = Math.floor(free / 1024 / 1024);
    if (mib < 64)
      add(
        "error",
        "disk",
        `${mib} MiB free under ${dir}: ADD cannot write its records; free some space`,
      );
    else if (mib < 512) add("warning", "disk", `${mib} MiB free under ${dir}`);
    else add("ok", "disk", `${mib} MiB free under ${dir} (cniDir ${cniDir})`);
  } catch (err) {
    add("error", "disk", `cannot stat ${dir}: ${messageOf(err)}`);
  }
}

/** M1: every key Plexus does not read, with the nearest known one (Go would ignore it silently). */
function checkKeys(ctx: OpsContext, add: Add): void {
  for (const r of reportUnknownKeys(ctx.conf.unknownKeys, PLEXUS_KEYS.names, ctx.path))
    add("warning", "config keys", r.msg);
}

/**
 * The keys of a network's plugins that the plugin of that type does not read (a `mastr` for
 * `master`): Go's decoder ignores them, so the plugin runs as if they were not there.
 */
function checkDelegateKeys(conf: ConfList, where: string, add: Add): void {
  for (const msg of delegateKeyWarnings(conf, where)) add("warning", "plugin keys", msg);
}

/** What a network whose plugin binary is missing means. */
const FAILS = "every ADD fails";

async function checkDefaultNetwork(ctx: OpsContext, add: Add): Promise<void> {
  const { conf } = ctx;
  const kube = await ctx.kube().catch(() => undefined);
  try {
    const d = await resolveDefaultNetworks(
      undefined,
      { ...conf, defaultNetworks: [] },
      new FsNetworkSource(conf.confDir, kube),
    );
    const plugins = d.clusterNetwork.conf.plugins.map((p) => p.type).join(" → ");
    // A primary network whose plugin binary is missing fails every ADD: looked up as a call would.
    const dirs = pluginDirs(conf, ctx.cniPath);
    const primary = d.clusterNetwork;
    const missing = await missingPluginBinaries(primary.conf, dirs);
    const why = missing.map((e) => e.message).join("; ");
    const network = `${primary.network} (${plugins})`;
    if (why) return add("error", "default network", `${network}: ${why}: ${FAILS}`);
    add("ok", "default network", `${d.clusterNetwork.network}: ${plugins}`);
    checkDelegateKeys(primary.conf, `default network ${primary.network}`, add);
  } catch (err) {
    add("error", "default network", messageOf(err));
  }
}

/** M12: the auxiliary chain every ADD runs, as ADD would load it. */
async function checkAuxiliaryChain(ctx: OpsContext, add: Add): Promise<void> {
  const { conf } = ctx;
  if (!conf.auxiliaryCNIChainName) return;
  try {
    const chain = await loadAuxiliaryChain(conf, new FsNetworkSource(conf.confDir, undefined));
    if (!chain)
      return add(
        "warning",
        "auxiliary chain",
        `${auxiliaryChainDir(conf)} holds no .conf file: no auxiliary chain runs ` +
          `(auxiliaryCNIChainName ${conf.auxiliaryCNIChainName})`,
      );
    const dirs = pluginDirs(conf, ctx.cniPath);
    const missing = (await missingPluginBinaries(chain, dirs)).map((e) => e.message).join("; ");
    if (missing) return add("error", "auxiliary chain", `${missing}: ${FAILS}`);
    checkDelegateKeys(chain, `auxiliary chain ${chain.name}`, add);
    add(
      "ok",
      "auxiliary chain",
      `${chain.name}: ${chain.plugins.map((p) => p.type).join(" → ")} from ` +
        `${auxiliaryChainDir(conf)}, after every pod's networks`,
    );
  } catch (err) {
    add("error", "auxiliary chain", `${messageOf(err)}: every ADD fails`);
  }
}

function checkReadiness(conf: OpsContext["conf"], add: Add): void {
  if (!conf.readinessindicatorfile) return;
  if (existsSync(conf.readinessindicatorfile))
    add("ok", "readiness", `${conf.readinessindicatorfile} exists`);
  else
    add(
      "error",
      "readiness",
      `${conf.readinessindicatorfile} is missing: every ADD waits ` +
        `${conf.readinessTimeoutMs / 1000} s and fails; the primary network is not ready`,
    );
}

export async function doctor(flags: CommonFlags, env = process.env): Promise<Check[]> {
  const checks: Check[] = [];
  const add: Add = (level, subject, msg) => void checks.push({ level, subject, msg });
  checkRuntimeConfig(flags.cniConfDir ?? DEFAULT_CONF_DIR, add);
  let ctx: OpsContext;
  try {
    ctx = await opsContext(flags, env);
    add("ok", "plexus config", `${ctx.path} parses`);
  } catch (err) {
    add("error", "plexus config", messageOf(err));
    await doctorMultus(undefined, flags, add);
    return checks;
  }
  try {
    const { conf } = ctx;
    checkKeys(ctx, add);
    await checkDefaultNetwork(ctx, add);
    await checkAuxiliaryChain(ctx, add);
    checkReadiness(conf, add);
    await checkApi(ctx, add);
    await checkNodeScope({ ctx, add, readToken: tokenOf });
    if (conf.fileClusterDir) add("ok", "daemon", "not used: the cluster is the manifest directory");
    else await checkDaemon(conf.daemonSocket, add);
    await checkRecords(conf.cniDir, add);
    checkDisk(conf.cniDir, add);
    await doctorMultus(ctx, flags, add);
    add(
      "ok",
      "log",
      conf.logFile
        ? `the plugin logs to ${conf.logFile} at level ${conf.logLevel ?? "panic"}`
        : `the plugin logs to the runtime's stderr only, at level ` +
            `${conf.logLevel ?? "panic"} (set logFile and logLevel to keep a log)`,
    );
  } finally {
    await ctx.kube.close();
  }
  return checks;
}

/** One line per check; B98: a message quoting a file or an object is escaped to that line. */
function renderChecks(checks: readonly Check[]): string {
  const w = Math.max(...checks.map((c) => c.subject.length));
  const line = (c: Check) => `${c.level.padEnd(7)} ${c.subject.padEnd(w)}  ${escapeText(c.msg)}`;
  return `${checks.map(line).join("\n")}\n`;
}

export function doctorMain(flags: CommonFlags, out: Output = processOutput): Promise<number> {
  return runOps("doctor", out, async () => {
    const json = wantsJson(flags.output);
    const checks = await doctor(flags);
    out.out(json ? `${JSON.stringify(checks, null, 2)}\n` : renderChecks(checks));
    return checks.some((c) => c.level === "error") ? ExitCode.Problem : ExitCode.Ok;
  });
}
