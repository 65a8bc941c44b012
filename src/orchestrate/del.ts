/**
 * DEL (C2.5, N7.2, M7, B5, B47, B62, B65): from the container record, every attachment in reverse,
 * past failures; idempotent; works with CNI_NETNS="" (the delegates release IPAM without a netns).
 */
import type { CniRequest } from "../cni/env";
import { AggregateCniError, CniError, Code } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import type { Deps, RuntimeFor } from "./deps";
import { planFromDelegates } from "./plan";
import type { Attachment, RecordRead } from "./record";
import { teardown } from "./teardown";

export async function cmdDel(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  const read = await deps.records.read(req.containerId, req.ifName);
  const attachments = attachmentsToDelete(read, req, conf, deps);
  const ctx: RuntimeFor =
    read.state === "found"
      ? { containerId: req.containerId, netns: req.netns, cniArgs: req.rawArgs || read.record.cniArgs }
      : { containerId: req.containerId, netns: req.netns, cniArgs: req.rawArgs };
  const errors = await teardown(attachments, ctx, req, conf, deps);
  if (errors.length > 0) {
    // The record stays, so the runtime's retry tears down what is left (B62).
    const err =
      errors.length === 1 ? errors[0]! : new AggregateCniError(errors, `DEL of container ${req.containerId}: ${errors.length} of ${attachments.length} networks failed`);
    throw withoutNotFound(err);
  }
  await deps.records.delete(req.containerId, req.ifName);
}

/**
 * With a record, its attachments. Without one (DEL without ADD, B65), the config's delegates:
 * DEL of a network that was never added succeeds, and a half-done ADD that died before its
 * record was written (B64) still gets its delegates run. A corrupt record (B47) falls back the
 * same way, and is an error when there is nothing to fall back to: never silent success.
 */
function attachmentsToDelete(read: RecordRead, req: CniRequest, conf: PlexusConf, deps: Deps): Attachment[] {
  if (read.state === "found") return read.record.attachments;
  const fallback = planFromDelegates(conf, req.ifName);
  if (read.state === "corrupt") {
    if (fallback.length === 0) {
      throw new CniError(
        Code.IoFailure,
        `DEL of container ${req.containerId}: record ${read.path} is unreadable (${read.reason}) and the config lists no delegates to fall back to; remove the file after cleaning up by hand`,
      );
    }
    deps.log.warn({ path: read.path, reason: read.reason }, "container record is corrupt; tearing down the configured delegates instead");
  } else {
    deps.log.info({ containerId: req.containerId }, "no container record; running DEL on the configured delegates");
  }
  return fallback;
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
