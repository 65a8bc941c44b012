/**
 * DEL (C2.5, N7.2, M7, K1, B5, B47, B62, B65): from the container record, every attachment in
 * reverse, past failures; idempotent; works with CNI_NETNS="" (the delegates release IPAM without
 * a netns).
 *
 * No input, failure or state may make a DEL fail forever (M7, K1): the kubelet retries it without
 * end, and meanwhile the pod hangs in Terminating with its netns and IPs leaked. So:
 * - without a record, either the container's earlier DEL succeeded or Plexus ran no delegate for
 *   it (ADD writes the record first). The networks are worked out as ADD would, as a bounded best
 *   effort, falling back to the default network(s), and torn down as a precaution: the DEL exits 0
 *   whatever those delegates answer, and writes nothing. (Failing it, or keeping a record of it,
 *   made a plugin that is not idempotent, whose second DEL fails once its state is gone, flip the
 *   DEL between failure and success for ever.) What cannot be worked out (an invalid annotation, a
 *   missing NAD, the API server down) is logged;
 * - an unreadable record is handled the same way, then removed;
 * - only a recorded delegate's own DEL failure fails a DEL, and nodestate/del-failures.ts decides
 *   how often.
 *
 * After its own work, while no daemon housekeeper runs on the node, a DEL retries the least
 * recently retried record whose DEL failed earlier, within its own deadline (nodestate/pending.ts).
 */
import type { CniRequest } from "../cni/env";
import { asCniError, Code } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { settleDel } from "../nodestate/del-failures";
import { retryWithCurrentNads } from "./del-current-nad";
import { callDeadline, type RuntimeFor } from "../nodestate/runtime-conf";
import type { Deps } from "./deps";
import { planDefaultsOnly, planForPod } from "../planning/pod-plan";
import { withContainerLock } from "../nodestate/lock";
import { retryAfterDel } from "../nodestate/pending";
import type { Attachment, RecordRead } from "../nodestate/record";
import { teardown } from "../nodestate/teardown";

export async function cmdDel(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  const deadline = callDeadline("DEL", conf);
  try {
    return await withContainerLock(
      { verb: "DEL", req, conf, deps, deadlineAt: deadline.at },
      (locked) => delLocked(req, conf, locked, deadline),
    );
  } finally {
    await retryAfterDel({ req, conf, deps, deadlineAt: deadline.at });
  }
}

async function delLocked(
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
  deadline: RuntimeFor["deadline"],
): Promise<void> {
  // A record that cannot even be read (an I/O error) is handled as an unreadable one: failing here
  // would fail every DEL for as long as the file system is broken.
  const read: RecordRead = await deps.records
    .read(req.containerId, req.ifName)
    .catch((err: unknown) => ({
      state: "corrupt",
      path: deps.records.path(req.containerId, req.ifName),
      reason: asCniError(err).message,
    }));
  // The runtime's CNI_ARGS, never the recorded ones: args a plugin refused must not come back on
  // every DEL.
  const ctx: RuntimeFor = {
    containerId: req.containerId,
    netns: podNetnsForDel(req, deps),
    cniArgs: req.rawArgs,
    deadline,
  };
  if (read.state === "found") {
    const { record } = read;
    const failures = await teardown(record.attachments, ctx, req, conf, deps);
    return settleDel(
      await retryWithCurrentNads(failures, ctx, req, conf, deps),
      record,
      req,
      conf,
      deps,
    );
  }
  if (read.state === "missing") {
    // A pod Multus attached before the node switched to Plexus: DEL from Multus's cache (M14).
    const { delMultusAttached } = await import("../migration/multus-migrate");
    if (await delMultusAttached({ ...req, netns: ctx.netns }, conf, deps)) return;
  }
  return delWithoutRecord({ read, ctx, req, conf, deps });
}

/**
 * B97: a CNI_NETNS that is Plexus's own namespace (the node's) is never handed to a delegate: the
 * DEL goes on as with CNI_NETNS="" (the delegates release IPAM and touch no interface), so it
 * neither removes the node's interfaces nor fails for ever.
 */
function podNetnsForDel(req: CniRequest, deps: Deps): string {
  if (!deps.netns.isOwn(req.netns)) return req.netns;
  deps.log.warn(
    { netns: req.netns },
    "CNI_NETNS is Plexus's own network namespace (the node's), not a pod's: DEL goes on as " +
      'with CNI_NETNS="", so no delegate touches the node\'s interfaces',
  );
  return "";
}

/** No usable record: a precautionary teardown of the planned networks, then the record files go. */
async function delWithoutRecord(input: {
  read: Exclude<RecordRead, { state: "found" }>;
  ctx: RuntimeFor;
  req: CniRequest;
  conf: PlexusConf;
  deps: Deps;
}): Promise<void> {
  const { read, ctx, req, conf, deps } = input;
  if (read.state === "corrupt") {
    deps.log.warn(
      { path: read.path, reason: read.reason },
      "container record is unreadable; tearing down the networks worked out from the config " +
        "instead, then removing it",
    );
  } else {
    deps.log.info(
      { containerId: req.containerId },
      "no container record (its DEL succeeded already, or Plexus ran no delegate for it); " +
        "tearing down the networks worked out from the config as a precaution",
    );
  }
  // B88: nothing recorded means Plexus made no interface here (ADD records before any delegate
  // runs), so the precaution releases what IPAM may hold and touches no interface: a name the
  // pod's annotation gives may be one another component made (a KubeVirt tap0).
  const noInterfaces = { ...ctx, netns: "" };
  const planned = await plannedAttachments(req, conf, deps);
  for (const f of await teardown(planned, noInterfaces, req, conf, deps))
    deps.log.warn(
      {
        network: f.attachment.network,
        ifName: f.attachment.ifName,
        code: f.error.code,
        err: f.error.message,
      },
      "DEL without a record: this precautionary DEL failed; nothing recorded it as attached, so " +
        "the DEL succeeds",
    );
  // An unreadable record goes; so do the temp files of a writer killed mid-ADD before its record
  // was renamed into place (B64): removing is not writing, and nothing else would ever take them.
  await deps.records.delete(req.containerId, req.ifName).catch((err: unknown) => {
    deps.log.warn({ err: asCniError(err).message }, "cannot remove the container's record files");
  });
}

/**
 * The networks of a container with no record, as ADD would work them out (the pod's own through the
 * API, B65, B38), else the default network(s) alone, else none. Never throws: each step is a best
 * effort, and an API server that did not answer is not asked again (the call's total API budget
 * bounds what it can cost, `apiTotalTimeoutSeconds`).
 */
async function plannedAttachments(
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
): Promise<Attachment[]> {
  const kube = deps.kube ?? (async () => undefined);
  let apiAnswered = true;
  try {
    return (
      await planForPod(req, conf, {
        kube,
        log: deps.log,
        podDevices: deps.podDevices,
        devicesBestEffort: true,
        load: deps.load,
      })
    ).attachments;
  } catch (err) {
    const e = asCniError(err);
    apiAnswered = e.code !== Code.ApiFailure && e.code !== Code.TryAgainLater;
    deps.log.warn(
      { code: e.code, err: e.message },
      "DEL without a record: the pod's networks could not be worked out; tearing down the " +
        "default network(s) only",
    );
  }
  for (const withKube of apiAnswered ? [true, false] : [false]) {
    try {
      return await planDefaultsOnly(
        req,
        conf,
        withKube ? await kube().catch(() => undefined) : undefined,
        deps.log,
      );
    } catch (err) {
      deps.log.warn(
        { err: asCniError(err).message, withKubernetes: withKube },
        "DEL without a record: the default network(s) could not be worked out",
      );
    }
  }
  return [];
}
