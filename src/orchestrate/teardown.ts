/**
 * Tearing attachments down in reverse (N7.2): every one is tried, failures are collected.
 * Shared by DEL, by ADD's rollback and by GC.
 */
import type { CniRequest } from "../cni/env";
import { asCniError, type CniError } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { delNetworkList } from "../exec/conflist";
import { describeAttachment, runtimeConfFor, type Deps, type RuntimeFor } from "./deps";
import type { Attachment } from "./record";

export async function teardown(attachments: readonly Attachment[], ctx: RuntimeFor, req: CniRequest, conf: PlexusConf, deps: Deps): Promise<CniError[]> {
  const errors: CniError[] = [];
  for (const att of [...attachments].reverse()) {
    try {
      await delNetworkList(att.conf, runtimeConfFor(att, ctx, req, conf, deps), deps);
      deps.log.debug({ network: att.network, ifName: att.ifName }, "detached");
    } catch (err) {
      const e = asCniError(err).withContext(`DEL of ${describeAttachment(att)}`);
      deps.log.error({ network: att.network, ifName: att.ifName, err: e.message }, "detach failed");
      errors.push(e);
    }
  }
  return errors;
}
