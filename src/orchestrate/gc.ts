/**
 * GC (C2.9): first every pending record (a container whose DEL failed, pending.ts) is retried,
 * each with a budget of its own, and the index of pending records is rebuilt from the records;
 * then every container record whose (container ID, interface) the runtime no longer lists is torn
 * down (one that fails becomes pending, so it is abandoned in time like a failed DEL); then GC is
 * forwarded to every delegate network with the delegate-level attachments that are still valid.
 * Keeps going on errors and reports them all at the end.
 */
import type { CniRequest } from "../cni/env";
import { asCniError, CniError, Code, failIfAny } from "../cni/errors";
import type { ConfList } from "../cni/conf";
import type { PlexusConf } from "../config/plugin-conf";
import { gcNetworkList, type GcAttachment } from "../libcni/conflist";
import { runtimeConfFor, type Deps } from "./deps";
import { housekeep } from "./pending";
import type { ContainerRecord } from "./record";
import { withContainerLock } from "./lock";
import { failedAttachments, teardown } from "./teardown";

/** How long GC waits for one container's lock before leaving it to the next GC. */
const GC_LOCK_WAIT_MS = 1000;

export async function cmdGc(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  if (!conf.validAttachments) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `GC needs "cni.dev/valid-attachments" in the config (a list of {containerID, ifname}); without it every attachment would be released`,
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
    // A pending record was retried just above (or its container is busy): not twice in one GC.
    else if (!rec.delFailedAt) errors.push(...(await gcRecord(rec, req, conf, deps)));
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
): Promise<CniError[]> {
  deps.log.info(
    { containerId: rec.containerId, ifName: rec.ifName },
    "GC: tearing down stale container",
  );
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
  ).catch((e: unknown) => [asCniError(e)]);
  return errs.map((e) => e.withContext(`GC of container ${rec.containerId}`));
}

/** Delegate networks: configured ones and the ones live records use, each forwarded GC once. */
async function gcNetworks(
  kept: ContainerRecord[],
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
): Promise<CniError[]> {
  const errors: CniError[] = [];
  const networks = new Map<string, ConfList>();
  for (const d of conf.delegates) networks.set(d.name, d);
  for (const rec of kept)
    for (const att of rec.attachments)
      if (!networks.has(att.conf.name)) networks.set(att.conf.name, att.conf);
  for (const [name, list] of networks) {
    const stillValid: GcAttachment[] = kept.flatMap((rec) =>
      rec.attachments
        .filter((a) => a.conf.name === name)
        .map((a) => ({ containerID: rec.containerId, ifname: a.ifName })),
    );
    const att = { network: name, ifName: "", isDefault: false, conf: list };
    try {
      await gcNetworkList(
        list,
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
