/** Everything after VERSION: parse env and config, build the dependencies, dispatch the verb. */
import { type CniRequest, type Command, parseEnv } from "../cni/env";
import { asCniError } from "../cni/errors";
import { decodeJson, isPlainObject, MAX_STDIN_BYTES } from "../cni/json";
import { isSupportedVersion } from "../cni/version";
import { parsePlexusConf, PLEXUS_KEYS, type PlexusConf } from "../config/plugin-conf";
import { createLogger, type Logger } from "../log/logger";
import { VERBS } from "./routes";
import { readStdin, type MainIo } from "./stdio";
import { verbDeps } from "./verb-deps";

export async function runVerb(
  io: MainIo,
  setErrorVersion: (v: string) => void,
  afterAnswer: Array<() => Promise<void>>,
): Promise<unknown> {
  // stdin first, so that even an error in the environment is answered in the config's cniVersion;
  // an environment error still wins over a config that does not decode (4 before 6).
  const input = await readStdin(io.stdin, MAX_STDIN_BYTES);
  let decoded: { value: unknown } | { error: unknown };
  try {
    // B92: inline delegates get their numbers as written; Plexus reads its own through shape.ts.
    decoded = { value: decodeJson(input, { what: "stdin config", exactNumbers: true }) };
  } catch (error) {
    decoded = { error };
  }
  if (
    "value" in decoded &&
    isPlainObject(decoded.value) &&
    isSupportedVersion(decoded.value.cniVersion)
  )
    setErrorVersion(decoded.value.cniVersion);
  const req = parseEnv(io.env);
  if ("error" in decoded) throw decoded.error;
  const raw = decoded.value;
  const conf = parsePlexusConf(raw, {
    requireNetworks: req.command !== "DEL" && req.command !== "GC",
  });

  const log = await createLogger(conf, {
    cmd: req.command,
    containerId: req.containerId || undefined,
    ifName: req.ifName || undefined,
  });
  if (conf.unknownKeys.length) await reportUnknownKeys(conf, log);
  const deps = verbDeps(conf, log, io.env);
  try {
    return await dispatch(req, conf, deps);
  } catch (err) {
    const e = asCniError(err);
    log.error({ code: e.code, err: e.message }, `${req.command} failed`);
    throw e;
  } finally {
    await deps.kube.close();
    // M20: the runs go to the daemon once the runtime has its answer, never before it.
    afterAnswer.push(() => deps.delegateRuns.handOff());
  }
}

type VerbArgs = [req: CniRequest, conf: PlexusConf, deps: ReturnType<typeof verbDeps>];

/** Each verb's own module, loaded for the verb alone through its row in routes.ts. */
const RUN: { [C in Command]?: (...a: VerbArgs) => Promise<unknown> } = {
  ADD: async (...a) => (await (await VERBS.ADD.load()).cmdAdd(...a)).result,
  DEL: async (...a) => void (await (await VERBS.DEL.load()).cmdDel(...a)),
  CHECK: async (...a) => void (await (await VERBS.CHECK.load()).cmdCheck(...a)),
  STATUS: async (...a) => void (await (await VERBS.STATUS.load()).cmdStatus(...a)),
  GC: async (...a) => void (await (await VERBS.GC.load()).cmdGc(...a)),
};

async function dispatch(...a: VerbArgs): Promise<unknown> {
  const run = RUN[a[0].command];
  return run ? await run(...a) : undefined;
}

/**
 * M1: unknown keys are never silent. At a level that shows warnings they go to the call's log; when
 * it shows none (Multus's default `panic`), they still go to the log file, if one is configured.
 * Costs nothing for a config without unknown keys.
 */
async function reportUnknownKeys(conf: PlexusConf, log: Logger): Promise<void> {
  const { reportUnknownKeys: report } = await import("../config/unknown-keys");
  const lines = report(conf.unknownKeys, PLEXUS_KEYS.names).map((r) => r.msg);
  let target = log;
  if (!isWarnShown(log.level)) {
    if (!conf.logFile) return;
    target = await createLogger(
      { ...conf, logLevel: "warn", logToStderr: false },
      { cmd: "config" },
    );
  }
  for (const msg of lines) target.warn({ keys: conf.unknownKeys }, msg);
}

function isWarnShown(level: string): boolean {
  return ["trace", "debug", "info", "warn"].includes(level);
}
