/**
 * D1: the claims' device status follows the pod's attachments: written after ADD
 * (orchestrate/publish.ts) and after a hot-plug's attaches (orchestrate/hotplug.ts), and stated
 * again after every teardown (teardown.ts:
 * DEL, ADD's rollback, a hot-plug's detaches). Each write is Plexus's whole part of one claim
 * (server-side apply, cluster/kube-api.ts), so for every claim a change touches, the entries of
 * its attachments still up are sent again: those at hand with their results, the others with
 * their results from the libcni cache; a claim with none left loses Plexus's part. One request
 * per claim touched, and none for a pod without claim-backed attachments.
 *
 * A write refused or failed (RBAC, the API server's granular status authorization, an admission
 * policy, the API server down) is a warning and, where the pod is being set up, a Warning Event:
 * never the call's failure, as the pod's networks are up either way.
 */
import { statSync } from "node:fs";
import { asCniError } from "../cni/errors";
import type { AnyResult } from "../cni/result/types";
import type { KubeApi } from "../cluster/kube-api";
import { type ClaimBacked, claimDeviceStatuses } from "../dra/claim-status";
import type { ResultCache } from "../libcni/cache";
import type { Logger } from "../log/logger";
import type { Attachment } from "./record";

/** The claim whose device backs the attachment (a pod's own deviceID among them included). */
function claimOf(att: Attachment): string | undefined {
  return att.device?.claim?.name;
}

/** The claims of these attachments. */
export function claimsOf(attachments: Iterable<Attachment>): Set<string> {
  const out = new Set<string>();
  for (const att of attachments) {
    const claim = claimOf(att);
    if (claim) out.add(claim);
  }
  return out;
}

export interface ClaimStatusSync {
  kube: KubeApi;
  pod: { namespace: string; name: string; uid?: string | undefined };
  /** The claims whose part is stated again (the ones the change touched). */
  claims: ReadonlySet<string>;
  /** Attachments up, with their results at hand (orchestrate/publish.ts's Attached). */
  attached: readonly { attachment: Attachment; result: AnyResult }[];
  /** Other attachments still up, and the libcni cache of the container their results are in. */
  others?: {
    attachments: readonly Attachment[];
    containerId: string;
    cache: Pick<ResultCache, "get" | "path">;
  };
  log: Logger;
  /** A Warning Event on failure (a pod being set up); a teardown only logs. */
  warnEvent: boolean;
}

/** Every touched claim's part, one write each, in parallel; failures logged, never thrown. */
export async function syncClaimStatus(sync: ClaimStatusSync): Promise<void> {
  if (sync.claims.size === 0) return;
  const apply = sync.kube.applyClaimDeviceStatus?.bind(sync.kube);
  if (!apply) {
    sync.log.debug({ claims: [...sync.claims] }, "this Kubernetes access writes no claim status");
    return;
  }
  const now = new Date().toISOString();
  const backed = [
    ...sync.attached.flatMap(({ attachment, result }) =>
      backedBy(attachment, { result, since: now }),
    ),
    ...(
      await Promise.all((sync.others?.attachments ?? []).map((att) => cachedBacked(att, sync)))
    ).flat(),
  ];
  const entries = claimDeviceStatuses(backed, { pod: sync.pod, claims: sync.claims });
  await Promise.all(
    [...entries].map(async ([claim, devices]) => {
      const ref = { namespace: sync.pod.namespace, name: claim };
      try {
        const outcome = await apply(ref, devices);
        logOutcome(sync, { claim, devices: devices.length, outcome });
      } catch (err) {
        await reportFailure(sync, claim, err);
      }
    }),
  );
}

function backedBy(
  att: Attachment,
  at: { result: ClaimBacked["result"]; since: string },
): ClaimBacked[] {
  const c = att.device?.claim;
  if (!c) return [];
  const { name: claim, driver, pool, device } = c;
  return [{ claim, driver, pool, device, network: att.network, ifName: att.ifName, ...at }];
}

/** An attachment still up: its result and its time from its libcni cache entry. */
async function cachedBacked(att: Attachment, sync: ClaimStatusSync): Promise<ClaimBacked[]> {
  const claim = claimOf(att);
  const { others } = sync;
  if (!claim || !sync.claims.has(claim) || !others) return [];
  const key = { networkName: att.conf.name, containerId: others.containerId, ifName: att.ifName };
  const entry = await others.cache.get(key).catch(() => undefined);
  let since = att.hotpluggedAt;
  if (!since && entry)
    try {
      since = statSync(others.cache.path(key)).mtime.toISOString();
    } catch {
      // No time to be had: now, below.
    }
  return backedBy(att, { result: entry?.result, since: since ?? new Date().toISOString() });
}

function logOutcome(
  sync: ClaimStatusSync,
  what: { claim: string; devices: number; outcome: string },
): void {
  const fields = { claim: `${sync.pod.namespace}/${what.claim}`, devices: what.devices };
  if (what.outcome === "claim-missing")
    sync.log.info(fields, "the ResourceClaim is gone; no device status to write");
  else if (what.outcome === "without-network-data")
    sync.log.info(fields, "claim device status written without networkData (the driver's)");
  else sync.log.debug(fields, "claim device status written");
}

async function reportFailure(sync: ClaimStatusSync, claim: string, err: unknown): Promise<void> {
  const e = asCniError(err);
  const message =
    `the device status of ResourceClaim ${sync.pod.namespace}/${claim} was not written ` +
    `(the pod's networks are attached all the same): ${e.message}`;
  sync.log.warn({ claim: `${sync.pod.namespace}/${claim}`, code: e.code, err: e.message }, message);
  if (!sync.warnEvent) return;
  const pod = {
    namespace: sync.pod.namespace,
    name: sync.pod.name,
    ...(sync.pod.uid ? { uid: sync.pod.uid } : {}),
  };
  await sync.kube
    .recordEvent(pod, { type: "Warning", reason: "ClaimStatusNotWritten", message })
    .catch((failure: unknown) => {
      const why = asCniError(failure).message;
      sync.log.warn({ err: why }, "could not record the ClaimStatusNotWritten event");
    });
}

/**
 * After a teardown: the claims of the attachments torn down lose those devices' entries; what
 * stays up (the pod's other attachments, those whose DEL failed) is stated again. Kubernetes is
 * reached only when a torn-down attachment had a claim's device.
 */
export async function syncAfterTeardown(teardown: {
  torn: readonly Attachment[];
  stay: readonly Attachment[];
  containerId: string;
  pod: { namespace: string; name: string; uid?: string } | undefined;
  deps: {
    kube?: (() => Promise<KubeApi | undefined>) | undefined;
    cache: ResultCache;
    log: Logger;
  };
}): Promise<void> {
  const claims = claimsOf(teardown.torn);
  const { pod, deps } = teardown;
  if (claims.size === 0 || !pod) return;
  const kube = await deps.kube?.().catch((err: unknown) => {
    deps.log.warn({ err: asCniError(err).message }, "no Kubernetes access for the claims' status");
    return undefined;
  });
  if (!kube) return;
  await syncClaimStatus({
    kube,
    pod,
    claims,
    attached: [],
    others: { attachments: teardown.stay, containerId: teardown.containerId, cache: deps.cache },
    log: deps.log,
    warnEvent: false,
  });
}
