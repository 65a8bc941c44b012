/**
 * What a DEL does with the attachments whose delegates failed (M7, B62, K5): keep them in the
 * record for a retry, and make sure no attachment can fail the pod's DEL forever, nor be forgotten
 * while it may still hold an interface or an IP reservation.
 *
 * `retryDeleteOnError` (Multus's key): off (the default), a failing attachment is reported once
 * (the DEL fails); when the runtime's next DEL fails on it again, that DEL answers 0 so the runtime
 * can delete the pod, but the attachment stays in the record, pending: housekeeping (pending.ts)
 * retries it with a budget of its own until it is torn down, or abandons it once
 * `failedDelRetrySeconds` have passed (a `TeardownAbandoned` warning event on the pod and an error
 * log naming what may have leaked). Two runtime calls a second apart are no evidence that the
 * teardown cannot succeed. On, every DEL fails until its delegates succeed.
 *
 * Only a DEL that ran counts: an attachment whose DEL never started (the call's deadline passed
 * first, teardown.ts) stays in the record uncounted, and the DEL fails until it has run. A record
 * kept after a failed DEL is "pending" from then on (it names when the first DEL failed).
 *
 * Either way, a NAD attachment whose recorded config fails is also tried with the NAD's current
 * config (orchestrate/del-current-nad.ts): an admin who fixes a broken NAD un-wedges its pods
 * (B33 still holds: the recorded bytes are tried first).
 */
import type { CniRequest } from "../cni/env";
import { asCniError, CniError, oneError } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import type { ContainerRecord, RecordStore } from "./record";
import { describeAttachment } from "./runtime-conf";
import { failedAttachments, type TeardownDeps, type TeardownFailure } from "./teardown";

/** What giving up on attachments uses: its log, the result cache, Kubernetes for the event. */
export type AbandonDeps = Pick<TeardownDeps, "log" | "cache" | "kube">;

/** What ending a DEL uses: the above, and the record it keeps or removes. */
export interface SettleDeps extends AbandonDeps {
  records: Pick<RecordStore, "delete" | "write" | "markPending">;
}

const TEARDOWN_ABANDONED = "TeardownAbandoned";

/**
 * Ends a DEL: success, or an error after keeping what failed in the record (see the file's doc).
 */
export async function settleDel(
  failures: TeardownFailure[],
  record: ContainerRecord,
  req: CniRequest,
  conf: PlexusConf,
  deps: SettleDeps,
): Promise<void> {
  const counted = failures.map((f) =>
    f.notRun
      ? f
      : { ...f, attachment: { ...f.attachment, failedDels: (f.attachment.failedDels ?? 0) + 1 } },
  );
  if (counted.length === 0) return removeRecord(req, deps);
  try {
    await keepForRetry(counted, record, deps);
  } catch (err) {
    const e = asCniError(err);
    if (conf.retryDeleteOnError) throw delError(counted, req, [e]);
    // Nothing could keep them for a retry: abandoning what ran is the only way the pod can go.
    // What never ran stays in the record as it was, for the next DEL.
    const what = "cannot keep the failed attachments for a retry; abandoning them now";
    deps.log.error({ err: e.message }, what);
    await abandon(
      counted.filter((f) => !f.notRun),
      record.pod,
      req,
      deps,
    );
    const notRun = counted.filter((f) => f.notRun);
    if (notRun.length > 0) throw delError(notRun, req);
    return removeRecord(req, deps);
  }
  const firstOrNotRun = (f: TeardownFailure) => f.notRun || (f.attachment.failedDels ?? 0) < 2;
  const failsTheDel = conf.retryDeleteOnError || counted.some(firstOrNotRun);
  if (failsTheDel) throw delError(counted, req);
  for (const f of counted)
    deps.log.warn(
      { network: f.attachment.network, ifName: f.attachment.ifName, err: f.error.message },
      "DEL failed again: it succeeds so the pod can be deleted, and this attachment stays " +
        "pending; housekeeping retries it until failedDelRetrySeconds have passed",
    );
}

/** Nothing is left to tear down (or to keep): the record goes. */
async function removeRecord(req: CniRequest, deps: SettleDeps): Promise<void> {
  await deps.records.delete(req.containerId, req.ifName).catch((err: unknown) => {
    // A record left behind is removed by the next ADD or a GC.
    const why = asCniError(err).message;
    deps.log.warn({ err: why }, "container torn down, but its record could not be removed");
  });
}

/**
 * The record with only what failed, pending from the first failed DEL on. The record is what makes
 * it pending; the index entry is rebuilt from it should its write fail here (pending.ts).
 */
async function keepForRetry(
  kept: readonly TeardownFailure[],
  record: ContainerRecord,
  deps: SettleDeps,
): Promise<void> {
  const delFailedAt = record.delFailedAt ?? new Date().toISOString();
  await deps.records.write({ ...record, attachments: failedAttachments(kept), delFailedAt });
  await deps.records.markPending(record.containerId, record.ifName).catch((err: unknown) => {
    deps.log.warn(
      { err: asCniError(err).message },
      "cannot index the record for a retry; housekeeping finds it from the record itself",
    );
  });
}

/** The DEL's error for what failed (also for a pod Multus attached, ./multus-migrate). */
export function delError(
  kept: readonly TeardownFailure[],
  req: CniRequest,
  extra: CniError[] = [],
): CniError {
  const errors = [...kept.map((f) => f.error), ...extra];
  return withoutNotFound(
    oneError(errors, `DEL of container ${req.containerId}: ${kept.length} networks failed`)!,
  );
}

/**
 * Dropped from the record: each is logged, its cached result removed, and one event names them all.
 */
export async function abandon(
  failures: readonly TeardownFailure[],
  pod: ContainerRecord["pod"],
  req: Pick<CniRequest, "containerId">,
  deps: AbandonDeps,
): Promise<void> {
  const lines: string[] = [];
  for (const { attachment: att, error } of failures) {
    const plugins = att.conf.plugins.map((p) => p.type).join(", ");
    deps.log.error(
      { network: att.network, ifName: att.ifName, plugins, err: error.message },
      "its DEL kept failing: giving up on this attachment; its interface and IP reservations " +
        "may have leaked (retryDeleteOnError: true keeps retrying)",
    );
    lines.push(`${describeAttachment(att)}, plugins ${plugins}: ${error.message}`);
    await deps.cache
      .delete({ networkName: att.conf.name, containerId: req.containerId, ifName: att.ifName })
      .catch(() => {});
  }
  if (!pod) return;
  const message =
    `Plexus stopped retrying the teardown of ${lines.join("; ")}. Its interface and ` +
    `IP reservations may have leaked; set retryDeleteOnError to keep retrying.`;
  try {
    const kube = await deps.kube?.();
    await kube?.recordEvent(pod, { type: "Warning", reason: TEARDOWN_ABANDONED, message });
  } catch (err) {
    deps.log.warn(
      { err: asCniError(err).message },
      `could not record the ${TEARDOWN_ABANDONED} event`,
    );
  }
}

/**
 * K5, B62: containerd (go-cni) takes a DEL error whose text contains "not found" as success and
 * forgets the sandbox, so a delegate's own wording ("Link not found" from macvlan whose master is
 * gone) would turn a failed teardown into a leak. The state is not gone, so the words are changed.
 */
function withoutNotFound(err: CniError): CniError {
  const clean = (s: string) => s.replace(/not found/gi, "missing");
  return new CniError(
    err.code,
    clean(err.message),
    err.details === undefined ? undefined : clean(err.details),
    {
      cause: err,
    },
  );
}
