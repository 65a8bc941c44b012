/** CHECK (C2.6): every attachment of the record, in order, against its cached result. */
import type { CniRequest } from "../cni/env";
import { asCniError, CniError, Code } from "../cni/errors";
import { versionAtLeast } from "../cni/version";
import type { PlexusConf } from "../config/plugin-conf";
import { vetRecorded } from "../gate/gate";
import { checkNetworkList } from "../libcni/conflist";
import { callDeadline, describeAttachment, runtimeConfFor } from "../nodestate/runtime-conf";
import type { Deps } from "./deps";
import { withContainerLock } from "../nodestate/lock";
import { podOf, type Attachment } from "../nodestate/record";

export async function cmdCheck(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  // CHECK exists from 0.4.0 on: a runtime that sends it with an older config gets what libcni's
  // skel answers (code 1). Older delegate networks are another matter (checkNetworkList skips
  // them).
  if (!versionAtLeast(conf.cniVersion, "0.4.0"))
    throw new CniError(
      Code.IncompatibleVersion,
      `config version does not allow CHECK: Plexus's config has cniVersion ${conf.cniVersion}, ` +
        `CHECK needs 0.4.0 or later`,
    );
  await deps.netns.assertUsable(req.netns);
  // Under the container's lock: a CHECK never reads a record an ADD or DEL is rewriting.
  return withContainerLock(
    { verb: "CHECK", req, conf, deps, deadlineAt: callDeadline("DEL", conf).at },
    (locked) => checkLocked(req, conf, locked),
  );
}

async function checkLocked(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  const read = await deps.records.read(req.containerId, req.ifName);
  if (read.state === "missing") {
    // A pod Multus attached before the node switched to Plexus: CHECK from Multus's cache (M14).
    const { multusAttachedForCheck } = await import("../migration/multus-migrate");
    const fromMultus = await multusAttachedForCheck(req, conf, deps);
    if (fromMultus) return checkAttachments(fromMultus.attachments, req, conf, fromMultus.deps);
  }
  if (read.state !== "found") {
    throw new CniError(
      Code.UnknownContainer,
      read.state === "missing"
        ? `CHECK of container ${req.containerId}: no record of an ADD for interface ${req.ifName}`
        : `CHECK of container ${req.containerId}: record ${read.path} is unreadable ` +
            `(${read.reason})`,
    );
  }
  await checkAttachments(read.record.attachments, req, conf, deps);
}

async function checkAttachments(
  attachments: readonly Attachment[],
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
): Promise<void> {
  const ctx = { containerId: req.containerId, netns: req.netns, cniArgs: req.rawArgs };
  const podNamespace = podOf(req.args)?.namespace;
  for (const att of attachments) {
    const run = async () => {
      const vetted = vetRecorded(att, { policy: conf, podNamespace });
      await checkNetworkList(vetted, runtimeConfFor(att, ctx, req, conf, deps), deps);
    };
    await run().catch((err: unknown) => {
      throw asCniError(err).withContext(`CHECK of ${describeAttachment(att)} failed`);
    });
  }
}
