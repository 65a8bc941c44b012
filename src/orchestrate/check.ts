/** CHECK (C2.6): every attachment of the record, in order, against its cached result. */
import { assertNetnsUsable, type CniRequest } from "../cni/env";
import { asCniError, CniError, Code } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { checkNetworkList } from "../exec/conflist";
import { describeAttachment, runtimeConfFor, type Deps } from "./deps";

export async function cmdCheck(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  await assertNetnsUsable(req.netns);
  const read = await deps.records.read(req.containerId, req.ifName);
  if (read.state !== "found") {
    throw new CniError(
      Code.UnknownContainer,
      read.state === "missing"
        ? `CHECK of container ${req.containerId}: no record of an ADD for interface ${req.ifName}`
        : `CHECK of container ${req.containerId}: record ${read.path} is unreadable (${read.reason})`,
    );
  }
  const ctx = { containerId: req.containerId, netns: req.netns, cniArgs: req.rawArgs };
  for (const att of read.record.attachments) {
    await checkNetworkList(att.conf, runtimeConfFor(att, ctx, req, conf, deps), deps).catch((err: unknown) => {
      throw asCniError(err).withContext(`CHECK of ${describeAttachment(att)} failed`);
    });
  }
}
