/**
 * Housekeeping of records whose DEL failed (M7, K1). A record with `delFailedAt` is "pending":
 * del-failures.ts keeps it when a DEL fails, also when that DEL answers 0 so the runtime can delete
 * the pod. Kubelet retries a failed DEL, but podman (CNI backend) calls DEL once, and a DEL that
 * answered 0 is not called again: what it could not tear down would leak. So it is retried:
 * - by the node daemon's timer (daemon/main.ts) and by CNI GC: every pending record, each with a
 *   budget of its own (`delTimeoutSeconds`, at least HOUSEKEEPING_DEL_MS), never a share of a
 *   runtime call's deadline;
 * - by a DEL, after its own work and only while no daemon housekeeper runs on the node: the least
 *   recently retried record alone, within what is left of that DEL's deadline, not again within a
 *   retry interval. Never by ADD or CHECK: a pod's start never waits for another pod's cleanup.
 * A retry that succeeds removes the record, its lock file and cached results. One that fails after
 * `failedDelRetrySeconds` since the first failed DEL abandons the record (del-failures.ts
 * `abandon`: an error log per attachment, and a TeardownAbandoned event when the record names a
 * pod) and removes it. With `retryDeleteOnError` a record is retried but never abandoned: the
 * admin chose to keep retrying, `plexus records list` shows it, `plexus records rm` removes it.
 *
 * The record is the one source of truth. `pending/` is an index for the DEL path (one readdir
 * instead of reading every record): housekeeping rebuilds it from the records (record.ts
 * `syncPending`), and so does a DEL when the last rebuild is older than SYNC_INTERVAL_MS.
 */
import type { CniRequest } from "../cni/env";
import { asCniError, type CniError } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { abandon, type AbandonDeps } from "./del-failures";
import { withContainerLock, type LockDeps } from "./lock";
import type { ContainerRecord, RecordRead, RecordStore } from "./record";
import type { RuntimeFor } from "./runtime-conf";
import { failedAttachments, teardown, type TeardownDeps } from "./teardown";

/** What housekeeping uses: a teardown's, the lock's, and the records with their pending index. */
export interface PendingDeps extends TeardownDeps, AbandonDeps, LockDeps {
  records: Pick<
    RecordStore,
    | "list"
    | "listPending"
    | "read"
    | "write"
    | "delete"
    | "markPending"
    | "unmarkPending"
    | "touchPending"
    | "syncPending"
    | "syncedAt"
    | "housekeeperAlive"
  >;
}

/** Least time housekeeping gives one record's teardown, whatever `delTimeoutSeconds` says. */
const HOUSEKEEPING_DEL_MS = 60_000;
/** Less time than this left of the calling DEL's deadline: no retry is started. */
const MIN_RETRY_MS = 1_000;
/** A record is not retried again by a DEL within this long (at most `failedDelRetrySeconds`). */
const RETRY_INTERVAL_MS = 10_000;
/** A DEL rebuilds the index from the records when its last rebuild is older than this. */
const SYNC_INTERVAL_MS = 10 * 60_000;

type Target = { containerId: string; ifName: string };
/** A DEL that has done its own work, and its deadline. */
type DelCall = { req: CniRequest; conf: PlexusConf; deps: PendingDeps; deadlineAt: number };

/**
 * Every pending record, each with its own budget (GC, the daemon's timer); never throws. `reads`
 * is the node's records when the caller has listed them already. Returns the errors of the
 * retries that failed.
 */
export async function housekeep(
  req: CniRequest,
  conf: PlexusConf,
  deps: PendingDeps,
  reads?: readonly RecordRead[],
): Promise<CniError[]> {
  const errors: CniError[] = [];
  try {
    const all = reads ?? (await deps.records.list());
    const records = found(all);
    await syncIndex(records, deps);
    for (const rec of records.filter((r) => r.delFailedAt)) {
      const untilAt = Date.now() + Math.max(conf.delTimeoutMs, HOUSEKEEPING_DEL_MS);
      errors.push(...(await retryOne({ target: rec, req, conf, deps, untilAt })));
    }
  } catch (err) {
    const why = asCniError(err).message;
    deps.log.warn({ err: why }, "housekeeping of the records of failed DELs failed");
  }
  return errors;
}

/**
 * After a DEL's own work (see the file's doc): at most one other pending record, within the DEL's
 * deadline, and none while the daemon's housekeeper runs. Never throws.
 */
export async function retryAfterDel(call: DelCall): Promise<void> {
  const { req, conf, deps, deadlineAt } = call;
  try {
    if (deps.records.housekeeperAlive()) return;
    if (Date.now() - deps.records.syncedAt() > SYNC_INTERVAL_MS) {
      await syncIndex(found(await deps.records.list()), deps);
    }
    const interval = Math.min(RETRY_INTERVAL_MS, conf.failedDelRetryMs);
    const due = deps.records
      .listPending({ dueAt: Date.now() - interval, limit: 2 })
      .filter((e) => !(e.containerId === req.containerId && e.ifName === req.ifName));
    const entry = due[0];
    if (!entry || deadlineAt - Date.now() < MIN_RETRY_MS) return;
    await retryOne({ target: entry, req, conf, deps, untilAt: deadlineAt });
  } catch (err) {
    deps.log.warn({ err: asCniError(err).message }, "retrying the record of a failed DEL failed");
  }
}

async function syncIndex(records: readonly ContainerRecord[], deps: PendingDeps): Promise<void> {
  const { added, removed } = await deps.records.syncPending(records).catch((err: unknown) => {
    deps.log.warn({ err: asCniError(err).message }, "cannot rebuild the index of pending records");
    return { added: 0, removed: 0 };
  });
  if (added + removed > 0) deps.log.info({ added, removed }, "pending/ rebuilt from the records");
}

const found = (reads: readonly RecordRead[]): ContainerRecord[] =>
  reads.flatMap((r) => (r.state === "found" ? [r.record] : []));

async function retryOne(retry: {
  target: Target;
  req: CniRequest;
  conf: PlexusConf;
  deps: PendingDeps;
  untilAt: number;
}): Promise<CniError[]> {
  const { req, conf, deps, untilAt } = retry;
  const target = { containerId: retry.target.containerId, ifName: retry.target.ifName };
  // The lock is tried once: a container busy with a call of its own is that call's to finish.
  return withContainerLock(
    { verb: "RETRY", req: target, conf, deps, deadlineAt: Date.now(), killsOrphans: false },
    async (locked) => {
      const read = await locked.records.read(target.containerId, target.ifName);
      if (read.state !== "found" || !read.record.delFailedAt) {
        // A record that succeeded meanwhile, or was replaced by a new ADD: not pending any more.
        await locked.records.unmarkPending(target.containerId, target.ifName);
        return [];
      }
      return retryRecord(read.record, req, conf, locked, untilAt);
    },
  ).catch((err: unknown) => {
    deps.log.debug({ ...target, err: asCniError(err).message }, "pending record not retried now");
    // Its turn is over: a container that stays busy must not keep the others from theirs.
    deps.records.touchPending(target.containerId, target.ifName);
    return [];
  });
}

async function retryRecord(
  record: ContainerRecord,
  req: CniRequest,
  conf: PlexusConf,
  deps: PendingDeps,
  untilAt: number,
): Promise<CniError[]> {
  const { containerId, ifName } = record;
  const deadline = { at: untilAt, key: "delTimeoutSeconds" };
  const ctx: RuntimeFor = { containerId, netns: "", cniArgs: record.cniArgs, deadline };
  const failures = await teardown(record.attachments, ctx, req, conf, deps);
  if (failures.length === 0) {
    deps.log.info(
      { containerId, ifName },
      "the retry of a failed DEL succeeded; container record removed",
    );
    await deps.records.delete(containerId, ifName);
    return [];
  }
  const since = Date.parse(record.delFailedAt ?? "") || 0;
  // What never started (no time left) is never abandoned: the record waits for a later retry.
  const allRan = failures.every((f) => !f.notRun);
  if (allRan && !conf.retryDeleteOnError && Date.now() - since >= conf.failedDelRetryMs) {
    await abandon(failures, record.pod, record, deps);
    await deps.records.delete(containerId, ifName);
    return [];
  }
  await deps.records.write({ ...record, attachments: failedAttachments(failures) });
  await deps.records.markPending(containerId, ifName);
  return failures.map((f) =>
    f.error.withContext(`retry of the failed DEL of container ${containerId}`),
  );
}
