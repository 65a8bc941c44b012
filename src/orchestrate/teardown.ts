/**
 * Tearing attachments down in reverse (N7.2): every one is tried, failures are collected (in
 * teardown order) with the attachment they belong to. Shared by DEL, by ADD's rollback and by GC.
 */
import type { CniRequest } from "../cni/env";
import { asCniError, type CniError } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { delNetworkList } from "../libcni/conflist";
import { describeAttachment, runtimeConfFor, type Deps, type RuntimeFor } from "./deps";
import { removeDeviceInfo } from "./devices";
import type { Attachment } from "./record";

/** One attachment whose DEL failed, and why. */
export interface TeardownFailure {
  attachment: Attachment;
  error: CniError;
}

export async function teardown(
  attachments: readonly Attachment[],
  ctx: RuntimeFor,
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
): Promise<TeardownFailure[]> {
  const failures: TeardownFailure[] = [];
  for (const att of [...attachments].reverse()) {
    try {
      await delNetworkList(att.conf, runtimeConfFor(att, ctx, req, conf, deps), deps);
      if (att.device) removeDeviceInfo(att, ctx, conf, deps.log); // M10: the device-info copy goes with it
      deps.log.debug({ network: att.network, ifName: att.ifName }, "detached");
    } catch (err) {
      const error = asCniError(err).withContext(`DEL of ${describeAttachment(att)}`);
      deps.log.error({ network: att.network, ifName: att.ifName, err: error.message }, "detach failed");
      failures.push({ attachment: att, error });
    }
  }
  return failures;
}

/** The failed attachments in attachment order (failures come in teardown order), for a record. */
export function failedAttachments(failures: readonly TeardownFailure[]): Attachment[] {
  return failures.map((f) => f.attachment).reverse();
}
