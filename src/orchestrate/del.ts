/**
 * DEL (C2.5, N7.2, M7, B5, B47, B62, B65): from the container record, every attachment in reverse,
 * past failures; idempotent; works with CNI_NETNS="" (the delegates release IPAM without a netns).
 */
import type { CniRequest } from "../cni/env";
import { AggregateCniError, asCniError, CniError, Code } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import type { Deps, RuntimeFor } from "./deps";
import { planDefaultsOnly, planForPod } from "./pod-plan";
import type { Attachment, RecordRead } from "./record";
import { teardown } from "./teardown";

export async function cmdDel(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  const read = await deps.records.read(req.containerId, req.ifName);
  const { attachments, unresolved } = await attachmentsToDelete(read, req, conf, deps);
  const ctx: RuntimeFor =
    read.state === "found"
      ? { containerId: req.containerId, netns: req.netns, cniArgs: req.rawArgs || read.record.cniArgs }
      : { containerId: req.containerId, netns: req.netns, cniArgs: req.rawArgs };
  const errors = await teardown(attachments, ctx, req, conf, deps);
  if (unresolved) errors.push(unresolved);
  if (errors.length > 0) {
    // The record stays, so the runtime's retry tears down what is left (B62).
    const err =
      errors.length === 1 ? errors[0]! : new AggregateCniError(errors, `DEL of container ${req.containerId}: ${errors.length} of ${attachments.length} networks failed`);
    throw withoutNotFound(err);
  }
  await deps.records.delete(req.containerId, req.ifName);
}

/**
 * With a record (M7), its attachments, and no API call. Without one (DEL without ADD, B65, or an
 * ADD that died before writing it, B64), the networks are worked out as ADD would: from the API
 * for a pod of a cluster (a pod the API no longer has gets its default networks, B38), else the
 * configured delegates. A corrupt record (B47) falls back the same way, and is an error when there
 * is nothing to fall back to. When the pod's own networks cannot be determined (the API is down),
 * the default networks are still torn down and the DEL fails, to be retried: never silent success.
 */
async function attachmentsToDelete(read: RecordRead, req: CniRequest, conf: PlexusConf, deps: Deps): Promise<{ attachments: Attachment[]; unresolved?: CniError }> {
  if (read.state === "found") return { attachments: read.record.attachments };
  const kube = deps.kube ?? (async () => undefined);
  let attachments: Attachment[];
  let unresolved: CniError | undefined;
  try {
    attachments = (await planForPod(req, conf, { kube, log: deps.log })).attachments;
  } catch (err) {
    const e = asCniError(err);
    const podGone = e.code === Code.UnknownContainer;
    attachments = await planDefaultsOnly(req, conf, podGone ? await kube().catch(() => undefined) : undefined, deps.log);
    if (podGone) deps.log.info({ err: e.message }, "DEL without a record for a pod the API no longer has: tearing down the default network(s)");
    else unresolved = e.withContext(`DEL of container ${req.containerId}: the pod's networks could not be determined, so only its default network(s) were torn down`);
  }
  if (read.state === "corrupt") {
    if (attachments.length === 0) {
      throw new CniError(
        Code.IoFailure,
        `DEL of container ${req.containerId}: record ${read.path} is unreadable (${read.reason}) and the config lists no delegates to fall back to; remove the file after cleaning up by hand`,
      );
    }
    deps.log.warn({ path: read.path, reason: read.reason }, "container record is corrupt; tearing down the networks worked out from the config instead");
  } else {
    deps.log.info({ containerId: req.containerId }, "no container record; tearing down the networks worked out from the config");
  }
  return unresolved ? { attachments, unresolved } : { attachments };
}

/**
 * K5, B62: containerd (go-cni) takes a DEL error whose text contains "not found" as success and
 * forgets the sandbox, so a delegate's own wording ("Link not found" from macvlan whose master is
 * gone) would turn a failed teardown into a leak. The state is not gone, so the words are changed.
 */
function withoutNotFound(err: CniError): CniError {
  const clean = (s: string) => s.replace(/not found/gi, "missing");
  return new CniError(err.code, clean(err.message), err.details === undefined ? undefined : clean(err.details), { cause: err });
}
