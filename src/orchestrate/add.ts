/**
 * ADD as a list of named steps (N6.2, N7.2, N7.3, M7): check the netns, plan, record, attach
 * serially, verify, answer with the default network's result in the runtime's version.
 */
import type { CniRequest } from "../cni/env";
import { AggregateCniError, asCniError, CniError, Code, oneError } from "../cni/errors";
import { convertResult, toResult } from "../cni/result/convert";
import type { AnyResult } from "../cni/result/types";
import type { PlexusConf } from "../config/plugin-conf";
import type { KubeApi } from "../cluster/kube-api";
import { vetAttach } from "../gate/gate";
import { addNetworkList, pluginsStartedOf } from "../libcni/conflist";
import { withMissingHostLink } from "../npwg/node-links";
import type { Pod } from "../npwg/types";
import {
  callDeadline,
  describeAttachment,
  runtimeConfFor,
  type RuntimeFor,
} from "../nodestate/runtime-conf";
import type { Deps } from "./deps";
import { deviceInfoAfterAdd, prepareDeviceInfo } from "../nodestate/device-info";
import { planForPod } from "../planning/pod-plan";
import { waitForReadiness } from "./readiness";
import { newRecord, podOf, type Attachment, type ContainerRecord } from "../nodestate/record";
import { withContainerLock } from "../nodestate/lock";
import { failedAttachments, teardown, type TeardownFailure } from "../nodestate/teardown";

export interface AddOutcome {
  /**
   * The result printed to the runtime: the default network's, in the runtime's cniVersion (C2.4).
   */
  result: AnyResult;
  /** Every attachment's result, in attachment order (for network-status). */
  results: Array<{
    attachment: Attachment;
    result: AnyResult;
    deviceInfo?: Record<string, unknown>;
  }>;
}

export async function cmdAdd(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<AddOutcome> {
  const deadline = callDeadline("ADD", conf);
  // No housekeeping of other containers here (nodestate/pending.ts): a pod's start never waits for
  // it.
  return withContainerLock({ verb: "ADD", req, conf, deps, deadlineAt: deadline.at }, (locked) =>
    addLocked(req, conf, locked, deadline),
  );
}

async function addLocked(
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
  deadline: RuntimeFor["deadline"],
): Promise<AddOutcome> {
  await deps.netns.assertUsable(req.netns);
  await waitForReadiness(conf.readinessindicatorfile, conf.readinessTimeoutMs, deps.log).catch(
    (err: unknown) => {
      throw inPod(req, err);
    },
  );
  const {
    pod,
    ref,
    kube,
    attachments: plan,
  } = await planForPod(req, conf, {
    kube: deps.kube ?? (async () => undefined),
    log: deps.log,
    podDevices: deps.podDevices,
    load: deps.load,
  });
  const ctx: RuntimeFor = {
    containerId: req.containerId,
    netns: req.netns,
    cniArgs: req.rawArgs,
    deadline,
  };
  await clearPreviousAttempt(req, conf, deps);
  const record = await writeRecord(req, conf, plan, deps);

  const progress: AddProgress = { done: [], failed: undefined, results: [] };
  const { done, results } = progress;
  try {
    await attachInOrder(plan, progress, { ctx, req, conf, deps });
    const first = results[0];
    if (!first)
      throw new CniError(
        Code.InvalidNetworkConfig,
        "no network to attach: the config names no default network",
      );
    assertDefaultHasIp(first.result, first.attachment);
    await setDefaultRoutes(results, req, deps);
    if (pod && kube) await publish(pod, ref?.uid, results, kube, deps);
    return { result: convertResult(first.result, conf.cniVersion), results };
  } catch (err) {
    const { failed } = progress;
    throw await rollBack({ cause: inPod(req, err), done, failed, record, ctx }, req, conf, deps);
  }
}

/** What an ADD ran so far, for its answer and for its rollback. */
interface AddProgress {
  /** The attachments to tear down should the ADD fail. */
  done: Attachment[];
  /** The attachment whose ADD failed, as it is in `done`, and that ADD's code. */
  failed: { attachment: Attachment; code: Code } | undefined;
  results: AddOutcome["results"];
}

/** Attaches the planned networks one at a time, in order (N7.3), recording each in `progress`. */
async function attachInOrder(
  plan: Attachment[],
  progress: AddProgress,
  call: { ctx: RuntimeFor; req: CniRequest; conf: PlexusConf; deps: Deps },
): Promise<void> {
  const { ctx, req, conf, deps } = call;
  const podNamespace = podOf(req.args)?.namespace;
  for (const att of plan) {
    // Vetted before it is counted as attached: what the gate refuses ran nothing, and no
    // rollback touches its interface (it may be one Plexus did not create).
    const vetted = await vetAttach(att, {
      policy: conf,
      podNamespace,
      netns: req.netns,
      links: deps.netns,
    }).catch((err: unknown) => {
      throw asCniError(err).withContext(`ADD of ${describeAttachment(att)} refused`);
    });
    progress.done.push(att); // C4.1: the delegate whose ADD fails is torn down too.
    if (att.device) prepareDeviceInfo(att, conf, deps.log); // M10
    const result = await addNetworkList(
      vetted,
      runtimeConfFor(att, ctx, req, conf, deps),
      deps,
    ).catch((err: unknown) => {
      const e = asCniError(err);
      progress.failed = keepWhatRan(att, pluginsStartedOf(err), progress.done, e.code);
      // A `master` the node lacks fails inside the plugin as "Link not found": named here.
      const named = withMissingHostLink(e, att.conf.plugins);
      throw named.withContext(`ADD of ${describeAttachment(att)} failed`);
    });
    const deviceInfo = att.device ? deviceInfoAfterAdd(att, deps.log) : undefined;
    progress.results.push({ attachment: att, result, ...(deviceInfo ? { deviceInfo } : {}) });
    if (att.selection) (await deps.load.publish()).verifySelection({ attachment: att, result });
    deps.log.info({ network: att.network, ifName: att.ifName }, "attached");
  }
}

/**
 * C4.1: the attachment whose ADD failed (the last in `done`) is torn down too, but only with its
 * plugins that were actually executed (`started`, undefined when unknown); none executed, it
 * leaves `done`. Returns the attachment as it is now in `done`, with that ADD's code.
 */
function keepWhatRan(
  att: Attachment,
  started: number | undefined,
  done: Attachment[],
  code: Code,
): { attachment: Attachment; code: Code } | undefined {
  done.pop();
  const ran =
    started === undefined
      ? att
      : started > 0
        ? { ...att, conf: { ...att.conf, plugins: att.conf.plugins.slice(0, started) } }
        : undefined;
  if (!ran) return undefined;
  done.push(ran);
  return { attachment: ran, code };
}

/**
 * Undoes a failed ADD (C4.1): tears down what was attached and returns the error to throw. What
 * could not be removed stays in the record, for the runtime's DEL (which follows a failed ADD,
 * K1). Should narrowing the record fail, it still names every attachment (DEL tries them all
 * again) and that failure is part of the error, not swallowed.
 */
async function rollBack(
  attempt: {
    cause: CniError;
    done: Attachment[];
    failed: { attachment: Attachment; code: Code } | undefined;
    record: ContainerRecord;
    ctx: RuntimeFor;
  },
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
): Promise<CniError> {
  // The rollback has a teardown's own deadline: an ADD that ran out of time must still undo itself.
  const ctx = { ...attempt.ctx, deadline: callDeadline("DEL", conf) };
  const rollback = (await teardown(attempt.done, ctx, req, conf, deps)).filter(
    (f) => !neverAttached(f, attempt.failed),
  );
  if (rollback.length === 0) {
    await deps.records.delete(req.containerId, req.ifName).catch(() => {});
    return attempt.cause;
  }
  const errors = rollback.map((f) => f.error);
  await deps.records
    .write({ ...attempt.record, attachments: failedAttachments(rollback) })
    .catch((err: unknown) => {
      errors.push(
        asCniError(err).withContext(
          "the record could not be narrowed to what is left (it still names every network)",
        ),
      );
    });
  deps.log.error(
    { errors: errors.map((e) => e.message) },
    "rollback after failed ADD left attachments; the record keeps them for DEL",
  );
  return oneError(errors, "rollback also failed", { lead: attempt.cause })!;
}

/** M4: an attachment with `default-route` carries the pod's default route. */
async function setDefaultRoutes(
  results: AddOutcome["results"],
  req: CniRequest,
  deps: Deps,
): Promise<void> {
  const routes = results.flatMap(({ attachment }) =>
    (attachment.selection?.defaultRoute ?? []).map((gateway) => ({
      gateway,
      ifName: attachment.ifName,
    })),
  );
  if (routes.length) await deps.netns.setDefaultRoutes(req.netns, routes);
}

/** N5, M6, M9: the pod's network-status and its event. */
async function publish(
  pod: Pod,
  uid: string | undefined,
  results: AddOutcome["results"],
  kube: KubeApi,
  deps: Deps,
): Promise<void> {
  const { publishNetworkStatus } = await deps.load.publish();
  await publishNetworkStatus(pod, uid, results, kube, deps.log).catch((err: unknown) => {
    throw asCniError(err).withContext("writing the network-status annotation failed");
  });
}

/**
 * The delegate whose ADD failed with a configuration error (codes 1–7), and whose DEL fails with
 * that same code, refused its config both times: it attached nothing, and keeping it in the record
 * would fail every DEL of the pod for a config that can never work.
 */
function neverAttached(
  failure: TeardownFailure,
  failed: { attachment: Attachment; code: Code } | undefined,
): boolean {
  return (
    failed !== undefined &&
    failure.attachment === failed.attachment &&
    failure.error.code === failed.code &&
    failed.code >= 1 &&
    failed.code <= 7
  );
}

/**
 * B48: a record for this (container, interface) means an earlier ADD was cut short (SIGKILLed
 * at the runtime's deadline, B64) or the runtime repeats ADD without DEL. Its attachments are torn
 * down first, from that record, so none of them leaks and the new ADD starts clean; if that
 * fails the ADD fails before touching anything else, and the record stays for DEL.
 */
async function clearPreviousAttempt(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  const prev = await deps.records.read(req.containerId, req.ifName);
  if (prev.state !== "found") return;
  deps.log.warn(
    { containerId: req.containerId, ifName: req.ifName },
    "ADD found the record of an earlier ADD; tearing its attachments down first",
  );
  const ctx: RuntimeFor = {
    containerId: req.containerId,
    netns: req.netns,
    cniArgs: prev.record.cniArgs,
    deadline: callDeadline("DEL", conf),
  };
  const errors = (await teardown(prev.record.attachments, ctx, req, conf, deps)).map(
    (f) => f.error,
  );
  if (errors.length > 0) {
    const message =
      `container ${req.containerId} still has attachments from an earlier ADD that ` +
      `could not be removed: ${errors.map((e) => e.message).join("; ")}`;
    throw new AggregateCniError(errors, message);
  }
  await deps.records.delete(req.containerId, req.ifName);
}

/**
 * M7, B44–B46: the record is on disk before any delegate runs, so an unwritable cniDir fails first.
 */
async function writeRecord(
  req: CniRequest,
  conf: PlexusConf,
  plan: Attachment[],
  deps: Deps,
): Promise<ContainerRecord> {
  const record = newRecord(req, conf.cniVersion, plan);
  await deps.records.write(record).catch((err: unknown) => {
    throw asCniError(err).withContext(
      `cannot record container ${req.containerId} before attaching (cniDir ${conf.cniDir})`,
    );
  });
  return record;
}

/**
 * The error, naming the pod (from CNI_ARGS) when there is one: the runtime's log and the pod's
 * events show it.
 */
export function inPod(req: CniRequest, err: unknown): CniError {
  const pod = podOf(req.args);
  return pod ? asCniError(err).withContext(`pod ${pod.namespace}/${pod.name}`) : asCniError(err);
}

/** B60, K5: a default network without an IP would fail later in the runtime, far from its cause. */
function assertDefaultHasIp(result: AnyResult, att: Attachment): void {
  const ips = toResult(result).ips ?? [];
  if (ips.length === 0) {
    throw new CniError(
      Code.VerificationFailed,
      `${describeAttachment(att)} returned no IP address; the runtime needs one on ` +
        `${att.ifName} (check the delegate's "ipam" section)`,
    );
  }
}
