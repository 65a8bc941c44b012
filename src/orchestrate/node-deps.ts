/**
 * What every verb run on this node uses, wired one way for the CNI verbs (cli/verb-deps.ts) and
 * for the ops commands that run one (ops/records.ts): the delegate runner, the result cache and the
 * records under `cniDir`, the container lock, and the environment delegates inherit.
 */
import { RawExec } from "../invoke/raw-exec";
import { ResultCache } from "../libcni/cache";
import type { Logger } from "../log/logger";
import { logCompressorPids } from "../log/rotate";
import { acquireContainerLock } from "../store/container-lock";
import { baseEnvOf, type Deps } from "./deps";
import { RecordStore } from "../nodestate/record";

export type NodeDeps = Pick<Deps, "exec" | "cache" | "records" | "log" | "baseEnv" | "locks">;

export function nodeDeps(
  conf: { cniDir: string },
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
): NodeDeps {
  return {
    // The log's compressors are this process's children too, not a delegate's leftovers.
    exec: new RawExec(log, { sparePids: logCompressorPids() }),
    cache: new ResultCache(conf.cniDir),
    records: new RecordStore(conf.cniDir),
    log,
    baseEnv: baseEnvOf(env),
    locks: acquireContainerLock,
  };
}
