/**
 * Records whose DEL failed (M7, K1): kubelet retries a failed DEL without end, but podman (CNI
 * backend) calls DEL once and removes the container; its record and lock file would stay for a
 * retry that never comes. Such a record is "pending" (del-failures.ts marks it) and is retried:
 * - by every ADD and DEL on the node, after its own work: the least recently retried record
 *   alone, skipped when its container's lock is busy, and not again within a retry interval
 *   (bounded work: at most one teardown per call, under a budget of its own that never runs past
 *   the calling ADD's or DEL's deadline);
 * - by GC, every pending record.
 * A retry that succeeds removes the record, its lock file and cached results. One that fails after
 * `failedDelRetrySeconds` since the first failed DEL abandons the record (del-failures.ts
 * `abandon`: an error log per attachment, and a TeardownAbandoned event when the record names a
 * pod) and removes it. With `retryDeleteOnError` a record is retried but never abandoned: the
 * admin chose to keep retrying, `plexus records list` shows it, `plexus records rm` removes it.
 */
import type { CniRequest } from "../cni/env";
import { asCniError, type CniError } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { abandon } from "./del-failures";
import type { Deps, RuntimeFor } from "./deps";
import { withContainerLock } from "./lock";
import type { ContainerRecord, PendingEntry } from "./record";
import { failedAttachments, teardown } from "./teardown";

/** Most time one retry's delegates get, whatever `delTimeoutSeconds` says: it rides on another call. */
const RETRY_BUDGET_MS = 10_000;
/** Less time than this left of the calling ADD's or DEL's deadline: no retry is started. */
const MIN_RETRY_MS = 1_000;
/** A record is not retried again by ADD and DEL within this long (at most `failedDelRetrySeconds`). */
const RETRY_INTERVAL_MS = 10_000;

/**
 * Retries pending records (see the file's doc); never throws. Returns the errors of the retries
 * that failed (GC reports them).
 */
export async function retryPendingDels(
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
  opts: {
    limit: number;
    exclude?: { containerId: string; ifName: string };
    /** The calling ADD's or DEL's own deadline: a retry never runs past it (the runtime would kill the call). */
    deadlineAt?: number;
  },
): Promise<CniError[]> {
  const errors: CniError[] = [];
  try {
    const interval = opts.limit === Number.POSITIVE_INFINITY ? 0 : Math.min(RETRY_INTERVAL_MS, conf.failedDelRetryMs);
    const due = deps.records
      .listPending({ dueAt: Date.now() - interval, limit: opts.limit + 1 })
      .filter((e) => !(e.containerId === opts.exclude?.containerId && e.ifName === opts.exclude.ifName))
      .slice(0, opts.limit);
    for (const entry of due) {
      // Each retry's budget of its own, within what is left of the calling call's deadline.
      const untilAt = Math.min(opts.deadlineAt ?? Number.POSITIVE_INFINITY, Date.now() + RETRY_BUDGET_MS);
      if (untilAt - Date.now() < MIN_RETRY_MS) break;
      errors.push(...(await retryOne({ entry, req, conf, deps, untilAt })));
    }
  } catch (err) {
    deps.log.warn({ err: asCniError(err).message }, "retrying the records of failed DELs failed");
  }
  return errors;
}

async function retryOne(o: {
  entry: PendingEntry;
  req: CniRequest;
  conf: PlexusConf;
  deps: Deps;
  untilAt: number;
}): Promise<CniError[]> {
  const { entry, req, conf, deps, untilAt } = o;
  const target = { containerId: entry.containerId, ifName: entry.ifName };
  // The lock is tried once: a container busy with a call of its own is that call's to finish.
  return withContainerLock(
    { verb: "RETRY", req: target, conf, deps, deadlineAt: Date.now(), killsOrphans: false },
    async (locked) => {
      const read = await locked.records.read(entry.containerId, entry.ifName);
      if (read.state !== "found" || !read.record.delFailedAt) {
        // A record that succeeded meanwhile, or was replaced by a new ADD: not pending any more.
        await locked.records.unmarkPending(entry.containerId, entry.ifName);
        return [];
      }
      return retryRecord(read.record, req, conf, locked, untilAt);
    },
  ).catch((err: unknown) => {
    deps.log.debug({ ...target, err: asCniError(err).message }, "pending record not retried now");
    // Its turn is over: a container that stays busy must not keep the others from theirs.
    deps.records.touchPending(entry.containerId, entry.ifName);
    return [];
  });
}

async function retryRecord(
  record: ContainerRecord,
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
  untilAt: number,
): Promise<CniError[]> {
  const { containerId, ifName } = record;
  const deadline = { at: Math.min(Date.now() + conf.delTimeoutMs, untilAt), key: "delTimeoutSeconds" };
  const ctx: RuntimeFor = { containerId, netns: "", cniArgs: record.cniArgs, deadline };
  const failures = await teardown(record.attachments, ctx, req, conf, deps);
  if (failures.length === 0) {
    deps.log.info({ containerId, ifName }, "the retry of a failed DEL succeeded; container record removed");
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
  return failures.map((f) => f.error.withContext(`retry of the failed DEL of container ${containerId}`));
}
