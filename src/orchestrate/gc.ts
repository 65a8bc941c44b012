/**
 * GC (C2.9): first every pending record (a container whose DEL failed, nodestate/pending.ts) is
 * retried, each with a budget of its own, and the index of pending records is rebuilt from the
 * records;
 * then every container record whose (container ID, interface) the runtime no longer lists is torn
 * down (one that fails becomes pending, so it is abandoned in time like a failed DEL); then GC is
 * forwarded to every delegate network with the delegate-level attachments that are still valid.
 * Keeps going on errors and reports them all at the end.
 */
import type { CniRequest } from "../cni/env";
import { asCniError, CniError, Code, failIfAny } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { vetRecorded, type GateSubject } from "../gate/gate";
import { gcNetworkList, type GcAttachment } from "../libcni/conflist";
import { runtimeConfFor } from "../nodestate/runtime-conf";
import type { Deps } from "./deps";
import { housekeep } from "../nodestate/pending";
import type { ContainerRecord } from "../nodestate/record";
import { withContainerLock } from "../nodestate/lock";
import { failedAttachments, teardown } from "../nodestate/teardown";

/** How long GC waits for one container's lock before leaving it to the next GC. */
const GC_LOCK_WAIT_MS = 1000;

export async function cmdGc(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  if (!conf.validAttachments) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `GC needs "cni.dev/valid-attachments" in the config (a list of {containerID, ifname}); ` +
        `without it every attachment would be released`,
    );
  }
  const valid = new Set(conf.validAttachments.map((a) => `${a.containerID}\n${a.ifname}`));
  const reads = await deps.records.list();
  const errors = await housekeep(req, conf, deps, reads);
  const kept: ContainerRecord[] = [];
  for (const read of reads) {
    if (read.state !== "found") {
      if (read.state === "corrupt")
        deps.log.warn(
          { path: read.path, reason: read.reason },
          "GC: skipping unreadable container record",
        );
      continue;
    }
    const rec = read.record;
    if (valid.has(`${rec.containerId}\n${rec.ifName}`)) kept.push(rec);
    // A pending record was retried just above (or its container is busy): not twice in one GC,
    // and what it still holds is housekeeping's, not the delegates' GC's.
    else if (rec.delFailedAt) kept.push(rec);
    else {
      const gc = await gcRecord(rec, req, conf, deps);
      // B96: a container whose lock is held (an ADD or DEL running) is not stale: everything it
      // has counts as valid in the rest of this GC, so no delegate releases what it holds.
      if (gc.busy) kept.push(rec);
      errors.push(...gc.errors);
    }
  }
  errors.push(...(await gcNetworks(kept, req, conf, deps)));
  failIfAny(errors, `GC: ${errors.length} failures`);
}

/** Tears down a container the runtime no longer lists; what fails stays in its record, pending. */
async function gcRecord(
  rec: ContainerRecord,
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
): Promise<{ busy: boolean; errors: CniError[] }> {
  deps.log.info(
    { containerId: rec.containerId, ifName: rec.ifName },
    "GC: tearing down stale container",
  );
  let busy = false;
  // Under that container's lock, waited for briefly: a container busy with an ADD or DEL is
  // not stale after all, and the next GC looks again.
  const errs = await withContainerLock(
    {
      verb: "GC",
      req: rec,
      conf,
      deps,
      deadlineAt: Date.now() + GC_LOCK_WAIT_MS,
      killsOrphans: false,
    },
    async (locked) => {
      const ctx = { containerId: rec.containerId, netns: "", cniArgs: rec.cniArgs };
      const failures = await teardown(rec.attachments, ctx, req, conf, locked);
      const failed = failures.map((f) => f.error);
      try {
        if (failed.length === 0) await locked.records.delete(rec.containerId, rec.ifName);
        else {
          const delFailedAt = rec.delFailedAt ?? new Date().toISOString();
          await locked.records.write({
            ...rec,
            attachments: failedAttachments(failures),
            delFailedAt,
          });
          await locked.records.markPending(rec.containerId, rec.ifName);
        }
      } catch (e) {
        failed.push(asCniError(e));
      }
      return failed;
    },
  ).catch((e: unknown) => {
    const err = asCniError(e);
    busy = err.code === Code.TryAgainLater;
    if (busy) deps.log.info({ containerId: rec.containerId }, "GC: container busy; kept as valid");
    return busy ? [] : [err];
  });
  return { busy, errors: errs.map((e) => e.withContext(`GC of container ${rec.containerId}`)) };
}

/** Delegate networks: configured ones and the ones live records use, each forwarded GC once. */
async function gcNetworks(
  kept: ContainerRecord[],
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
): Promise<CniError[]> {
  const errors: CniError[] = [];
  const networks = new Map<string, GateSubject>();
  for (const d of conf.delegates)
    networks.set(d.name, { network: d.name, ifName: "", isDefault: false, conf: d });
  for (const rec of kept)
    for (const att of rec.attachments)
      if (!networks.has(att.conf.name)) networks.set(att.conf.name, att);
  for (const [name, subject] of networks) {
    const stillValid: GcAttachment[] = kept.flatMap((rec) =>
      rec.attachments
        .filter((a) => a.conf.name === name)
        .map((a) => ({ containerID: rec.containerId, ifname: a.ifName })),
    );
    const att = { network: name, ifName: "", isDefault: false, conf: subject.conf };
    try {
      await gcNetworkList(
        vetRecorded(subject, { policy: conf }),
        stillValid,
        runtimeConfFor(att, { containerId: "", netns: "", cniArgs: "" }, req, conf, deps),
        deps,
      );
    } catch (err) {
      errors.push(asCniError(err).withContext(`GC of network ${JSON.stringify(name)}`));
    }
  }
  return errors;
}
