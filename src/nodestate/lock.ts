/**
 * A verb under its container's lock (B64, B81; store/container-lock.ts): ADD, DEL and CHECK
 * of one (container, interface) run one at a time, and their delegates inherit the lock. When the
 * call leaves no record behind (a DEL that finished, an ADD rolled back), the lock file goes too.
 */
import type { CniRequest } from "../cni/env";
import type { PlexusConf } from "../config/plugin-conf";
import { asCniError, Code } from "../cni/errors";
import type { Logger } from "../log/logger";
import { NO_LOCK, type ContainerLock, type LockFactory } from "../store/container-lock";
import type { RecordStore } from "./record";

/** What a locked call uses: the lock factory (none: no locking), its log, the record it leaves. */
export interface LockDeps {
  locks?: LockFactory;
  log: Logger;
  records: Pick<RecordStore, "read">;
}

export async function withContainerLock<D extends LockDeps, T>(
  call: {
    verb: string;
    req: Pick<CniRequest, "containerId" | "ifName">;
    conf: PlexusConf;
    deps: D;
    deadlineAt: number;
    /** See LockRequest.killsOrphans: false for housekeeping on another container's behalf. */
    killsOrphans?: boolean;
  },
  fn: (deps: D) => Promise<T>,
): Promise<T> {
  const { req, deps } = call;
  if (!deps.locks) return fn(deps);
  const lock: ContainerLock = await deps
    .locks({
      cniDir: call.conf.cniDir,
      containerId: req.containerId,
      ifName: req.ifName,
      deadlineAt: call.deadlineAt,
      verb: call.verb,
      log: deps.log,
      ...(call.killsOrphans === false ? { killsOrphans: false } : {}),
    })
    .catch((err: unknown) => {
      const e = asCniError(err);
      // A lock that cannot be taken for any reason but another call holding it (cniDir full,
      // read-only, or a file; too many open files) must not fail every DEL of the pod: DEL goes on
      // unlocked, logged. ADD and CHECK fail, before any delegate runs (B44, B45).
      if (call.verb !== "DEL" || e.code === Code.TryAgainLater) throw e;
      deps.log.warn({ err: e.message, code: e.code }, "DEL without the container's lock");
      return NO_LOCK;
    });
  try {
    return await fn({ ...deps, lock });
  } finally {
    const left = await deps.records.read(req.containerId, req.ifName).catch(() => undefined);
    lock.release({ remove: left?.state === "missing" });
  }
}
