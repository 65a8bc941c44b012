/**
 * Hot-plug (docs/hot-plug.md): a running pod's networks annotation changed, and its networks
 * follow, as a list of named steps: find the sandbox's record, take its container lock (the one
 * the runtime's ADD and DEL take), plan as ADD plans (the same NAD reads, policy checks and
 * delegate configs), diff (hotplug-diff.ts), detach, attach, then the record, network-status and
 * one Event per change. A failed attach rolls back what this reconcile attached; a pod without a
 * sandbox (no record, or its DEL already failed) is left alone. The daemon runs it as a process
 * of its own (`plexus hotplug`), as a runtime runs a CNI call.
 */
import { parseCniArgs } from "../cni/args";
import type { CniRequest } from "../cni/env";
import { asCniError, type CniError } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import type { KubeApi, PodEvent } from "../cluster/kube-api";
import { vetAttach } from "../gate/gate";
import { addNetworkList, pluginsStartedOf } from "../libcni/conflist";
import {
  buildNetworkStatusAnnotation,
  checkAnnotationBudget,
  networkStatusEntries,
} from "../npwg/status";
import { NETWORK_STATUS_ANNOTATION, type NetworkStatus, type Pod } from "../npwg/types";
import { callDeadline, describeAttachment, runtimeConfFor } from "../nodestate/runtime-conf";
import type { RuntimeFor } from "../nodestate/runtime-conf";
import type { Deps } from "./deps";
import { deviceInfoAfterAdd, prepareDeviceInfo } from "../nodestate/device-info";
import { diffHotplug, isSelected, type HotplugDiff } from "./hotplug-diff";
import { withContainerLock } from "../nodestate/lock";
import { planForPod } from "../planning/pod-plan";
import { claimsOf, syncClaimStatus } from "../nodestate/claim-status";
import { addedInterfaceMessage, networkStatuses, type Attached } from "./publish";
import type { Attachment, ContainerRecord } from "../nodestate/record";
import { failedAttachments, teardown } from "../nodestate/teardown";

export interface HotplugTarget {
  namespace: string;
  name: string;
  /** The pod's UID: a record of an earlier pod of the same name is not this one's. */
  uid?: string | undefined;
}

type Change = { network: string; ifName: string };

/** What one reconcile did (or, with dryRun, would do). */
export interface HotplugReport {
  pod: string;
  /** no-sandbox: nothing to reconcile (no record, or its DEL failed: the sandbox is going). */
  state: "no-sandbox" | "reconciled" | "planned" | "failed";
  containerId?: string;
  attached: Change[];
  detached: Change[];
  refused: Array<Change & { reason: string }>;
  /** Why the reconcile failed (its attaches rolled back); the daemon retries it. */
  error?: string;
}

const change = (attachment: Attachment): Change => ({
  network: attachment.network,
  ifName: attachment.ifName,
});

/** The sandbox's record of this pod: pending ones (DEL failed) are a sandbox being removed. */
async function findPodRecord(target: HotplugTarget, deps: Pick<Deps, "records">) {
  for (const read of await deps.records.list()) {
    if (read.state !== "found") continue;
    const { pod, delFailedAt } = read.record;
    if (!pod || delFailedAt) continue;
    if (pod.namespace !== target.namespace || pod.name !== target.name) continue;
    if (target.uid && pod.uid && pod.uid !== target.uid) continue;
    return read.record;
  }
  return undefined;
}

function requestOf(rec: ContainerRecord, path: string[]): CniRequest {
  const args = parseCniArgs(rec.cniArgs);
  const { containerId, netns, ifName } = rec;
  return { command: "ADD", containerId, netns, ifName, args, rawArgs: rec.cniArgs, path };
}

export async function cmdHotplug(
  target: HotplugTarget,
  call: { path: string[]; dryRun?: boolean },
  conf: PlexusConf,
  deps: Deps,
): Promise<HotplugReport> {
  const pod = `${target.namespace}/${target.name}`;
  const none: HotplugReport = { pod, state: "no-sandbox", attached: [], detached: [], refused: [] };
  const found = await findPodRecord(target, deps);
  if (!found) return none;
  const req = requestOf(found, call.path);
  // A dry run (plexus explain --hot-plug) changes nothing: it never holds up the runtime's calls.
  if (call.dryRun) return reconcileLocked({ req, record: found, pod, dryRun: true }, conf, deps);
  const deadlineAt = callDeadline("ADD", conf).at;
  return withContainerLock({ verb: "HOTPLUG", req, conf, deps, deadlineAt }, async (locked) => {
    // Under the lock: the runtime's DEL may have removed the sandbox while this call waited.
    const read = await locked.records.read(req.containerId, req.ifName);
    if (read.state !== "found" || read.record.delFailedAt) return none;
    if (
      !(await locked.netns.assertUsable(req.netns).then(
        () => true,
        () => false,
      ))
    )
      return none;
    return reconcileLocked({ req, record: read.record, pod, dryRun: false }, conf, locked);
  });
}

interface Reconcile {
  req: CniRequest;
  record: ContainerRecord;
  pod: string;
  dryRun: boolean;
}

/**
 * ADD's planner, for the annotation as it is now. What it refuses (a missing NAD, a policy, a
 * malformed annotation) changes nothing; it is a HotplugFailed event and the daemon's log.
 */
async function planNow(job: Reconcile, conf: PlexusConf, deps: Deps) {
  const kube = deps.kube ?? (async () => undefined);
  const ctx = { kube, log: deps.log, podDevices: deps.podDevices, load: deps.load };
  try {
    return await planForPod(job.req, conf, ctx);
  } catch (err) {
    const e = asCniError(err);
    const pod = job.record.pod;
    const api = job.dryRun || !pod ? undefined : await kube().catch(() => undefined);
    const message = `${e.message} (nothing changed)`;
    const event: PodEvent = { type: "Warning", reason: "HotplugFailed", message };
    await api?.recordEvent(pod!, event).catch(() => {});
    throw e.withContext("hot-plug");
  }
}

async function reconcileLocked(
  job: Reconcile,
  conf: PlexusConf,
  deps: Deps,
): Promise<HotplugReport> {
  const planned = await planNow(job, conf, deps);
  if (!planned.pod || !planned.kube)
    return { pod: job.pod, state: "no-sandbox", attached: [], detached: [], refused: [] };
  const diff = await refuseTakenNames(
    diffHotplug(job.record.attachments, planned.attachments.filter(isSelected), {
      deviceInfoDir: conf.deviceInfoDir,
      containerId: job.req.containerId,
    }),
    job.req.netns,
    deps,
  );
  const report: HotplugReport = {
    pod: job.pod,
    state: job.dryRun ? "planned" : "reconciled",
    containerId: job.req.containerId,
    attached: diff.attach.map(change),
    detached: diff.detach.map(change),
    refused: diff.refused.map((f) => ({ ...change(f.attachment), reason: f.reason })),
  };
  if (job.dryRun) return report;
  const events = new EventSink(planned.kube, planned.pod, deps);
  for (const f of diff.refused) await events.warn("HotplugRefused", `${job.pod}: ${f.reason}`);
  if (diff.attach.length === 0 && diff.detach.length === 0) return report;
  return applyDiff({ ...job, diff, report, pod: planned.pod, events }, conf, deps);
}

/**
 * B88: a new selection whose interface name the pod already has, and not from this reconcile's
 * detaches, is refused here (nothing changes for it); the gate refuses it again where it would run.
 */
async function refuseTakenNames(
  diff: HotplugDiff,
  netns: string,
  deps: Pick<Deps, "netns">,
): Promise<HotplugDiff> {
  const freed = new Set(diff.detach.map((d) => d.ifName));
  const attach: Attachment[] = [];
  const refused = [...diff.refused];
  for (const att of diff.attach) {
    const taken =
      !freed.has(att.ifName) && (await deps.netns.linkExists(netns, att.ifName).catch(() => false));
    if (!taken) attach.push(att);
    else
      refused.push({
        attachment: att,
        reason:
          `network ${att.network}: interface ${JSON.stringify(att.ifName)} already exists in ` +
          "the pod and Plexus did not create it; choose another name (network@name)",
      });
  }
  return { ...diff, attach, refused };
}

/** Events of one reconcile: best effort (a failed write is logged, never the pod's failure). */
class EventSink {
  private readonly ref: { namespace: string; name: string; uid?: string };
  constructor(
    readonly kube: KubeApi,
    pod: Pod,
    private readonly deps: Pick<Deps, "log">,
  ) {
    const { namespace, name, uid } = pod.metadata;
    this.ref = { namespace, name, ...(uid ? { uid } : {}) };
  }
  normal(reason: string, message: string) {
    return this.write({ type: "Normal", reason, message });
  }
  warn(reason: string, message: string) {
    return this.write({ type: "Warning", reason, message });
  }
  private async write(event: PodEvent): Promise<void> {
    await this.kube.recordEvent(this.ref, event).catch((err: unknown) => {
      const why = { err: asCniError(err).message, reason: event.reason };
      this.deps.log.warn(why, "could not record an event");
    });
  }
  writeStatus(value: string) {
    return this.kube.setNetworkStatus(this.ref, value);
  }
}

interface Apply extends Omit<Reconcile, "pod"> {
  diff: HotplugDiff;
  report: HotplugReport;
  pod: Pod;
  events: EventSink;
}

async function applyDiff(apply: Apply, conf: PlexusConf, deps: Deps): Promise<HotplugReport> {
  const name = apply.report.pod;
  const record = await detachRemoved(apply, conf, deps);
  const kept = apply.diff.detach.filter((d) =>
    record.attachments.some((k) => k.ifName === d.ifName),
  );
  apply.report.detached = apply.report.detached.filter(
    (d) => !kept.some((k) => k.ifName === d.ifName),
  );
  const outcome = await attachNew(apply, record, conf, deps);
  if (outcome.error) {
    apply.report.state = "failed";
    apply.report.attached = [];
    apply.report.error = outcome.error.message;
    const why = { pod: name, err: outcome.error.message };
    deps.log.error(why, "hot-plug failed; its attaches were rolled back");
    await apply.events.warn("HotplugFailed", `${name}: ${outcome.error.message} (rolled back)`);
  }
  if (kept.length > 0 && !apply.report.error) {
    apply.report.state = "failed";
    const which = kept.map(describeAttachment).join(", ");
    apply.report.error = `detaching ${which} failed; the record keeps it`;
  }
  if (apply.report.detached.length > 0 || outcome.attached.length > 0)
    await publishStatus(apply, outcome.attached, deps).catch(async (err: unknown) => {
      const e = asCniError(err).withContext("writing the network-status annotation failed");
      apply.report.state = "failed";
      apply.report.error = e.message;
      await apply.events.warn("HotplugFailed", `${name}: ${e.message}`);
    });
  await claimStatusAfterAttach(apply, { record, attached: outcome.attached }, deps);
  for (const d of apply.report.detached)
    await apply.events.normal(
      "RemovedInterface",
      `Remove ${d.ifName} from ${d.network} (hot-plug)`,
    );
  for (const attached of outcome.attached)
    await apply.events.normal("AddedInterface", `${addedInterfaceMessage(attached)} (hot-plug)`);
  return apply.report;
}

/** Detaches what the annotation no longer selects; what fails stays in the record (for DEL). */
async function detachRemoved(apply: Apply, conf: PlexusConf, deps: Deps): Promise<ContainerRecord> {
  if (apply.diff.detach.length === 0) return apply.record;
  const ctx = runtimeOf(apply, "DEL", conf);
  const keep = apply.record.attachments.filter((att) => !apply.diff.detach.includes(att));
  const failures = await teardown(apply.diff.detach, ctx, apply.req, conf, deps, { keep });
  for (const f of failures) {
    await apply.events.warn("HotplugFailed", `${apply.report.pod}: ${f.error.message}`);
  }
  const failed = new Map(failedAttachments(failures).map((f) => [f.ifName, f]));
  const attachments = apply.record.attachments.flatMap((att) => {
    if (!apply.diff.detach.includes(att)) return [att];
    const f = failed.get(att.ifName);
    return f ? [f] : [];
  });
  const record = { ...apply.record, attachments };
  await deps.records.write(record);
  return record;
}

function runtimeOf(
  apply: Pick<Apply, "record">,
  verb: "ADD" | "DEL",
  conf: PlexusConf,
): RuntimeFor {
  const { containerId, netns, cniArgs } = apply.record;
  return { containerId, netns, cniArgs, deadline: callDeadline(verb, conf) };
}

/**
 * Attaches the new selections one at a time, each in the record before its delegates run (M7: a
 * SIGKILL leaves it for DEL). A failure tears down what this reconcile attached (the failed one
 * with only the plugins that ran) and narrows the record to what could not be torn down.
 */
async function attachNew(
  apply: Apply,
  before: ContainerRecord,
  conf: PlexusConf,
  deps: Deps,
): Promise<{ attached: Attached[]; error?: CniError }> {
  const ctx = runtimeOf(apply, "ADD", conf);
  const attached: Attached[] = [];
  const done: Attachment[] = [];
  try {
    const podNamespace = apply.pod.metadata.namespace;
    for (const att of apply.diff.attach) {
      const entry: Attachment = { ...att, hotpluggedAt: new Date().toISOString() };
      // Vetted before it is recorded as attached: what the gate refuses (an interface name the
      // pod already has, `lo` included) ran nothing, and no rollback ever touches it.
      const gate = { policy: conf, podNamespace, netns: apply.req.netns, links: deps.netns };
      const vetted = await vetAttach(entry, gate).catch((err: unknown) => {
        throw asCniError(err).withContext(`hot-plug ADD of ${describeAttachment(entry)} refused`);
      });
      done.push(entry);
      await deps.records.write({ ...before, attachments: [...before.attachments, ...done] });
      if (entry.device) prepareDeviceInfo(entry, conf, deps.log);
      const runtime = runtimeConfFor(entry, ctx, apply.req, conf, deps);
      const result = await addNetworkList(vetted, runtime, deps).catch((err: unknown) => {
        const started = pluginsStartedOf(err);
        if (started === 0) done.pop();
        else if (started !== undefined) done[done.length - 1] = ranPart(entry, started);
        throw asCniError(err).withContext(`hot-plug ADD of ${describeAttachment(entry)} failed`);
      });
      const deviceInfo = entry.device ? deviceInfoAfterAdd(entry, deps.log) : undefined;
      const one: Attached = { attachment: entry, result, ...(deviceInfo ? { deviceInfo } : {}) };
      attached.push(one);
      (await deps.load.publish()).verifySelection(one);
      deps.log.info({ network: entry.network, ifName: entry.ifName }, "hot-plugged");
    }
    return { attached };
  } catch (err) {
    const error = asCniError(err);
    const keep = before.attachments;
    const runtime = runtimeOf(apply, "DEL", conf);
    const failures = await teardown(done, runtime, apply.req, conf, deps, { keep });
    const left = failedAttachments(failures);
    await deps.records.write({ ...before, attachments: [...before.attachments, ...left] });
    if (left.length > 0) {
      const what = { left: left.map(change) };
      deps.log.error(what, "hot-plug rollback left attachments; DEL removes them");
    }
    return { attached: [], error };
  }
}

/** C4.1: the failed attachment is torn down with only its plugins that ran. */
function ranPart(att: Attachment, started: number): Attachment {
  return { ...att, conf: { ...att.conf, plugins: att.conf.plugins.slice(0, started) } };
}

/** D1: the hot-plugged devices' entries in their claims, beside the pod's other attachments'. */
async function claimStatusAfterAttach(
  apply: Apply,
  now: { record: ContainerRecord; attached: readonly Attached[] },
  deps: Deps,
): Promise<void> {
  const claims = claimsOf(now.attached.map((a) => a.attachment));
  if (claims.size === 0) return;
  const kube = apply.events.kube;
  const { namespace, name, uid } = apply.pod.metadata;
  await syncClaimStatus({
    kube,
    pod: { namespace, name, ...(uid ? { uid } : {}) },
    claims,
    attached: now.attached,
    others: {
      attachments: now.record.attachments,
      containerId: apply.req.containerId,
      cache: deps.cache,
    },
    log: deps.log,
    warnEvent: true,
  });
}

/** network-status: the pod's entries without the detached interfaces, then the attached ones. */
async function publishStatus(apply: Apply, attached: readonly Attached[], deps: Pick<Deps, "log">) {
  const gone = new Set(apply.report.detached.map((d) => d.ifName));
  const written = networkStatusEntries(apply.pod.metadata.annotations?.[NETWORK_STATUS_ANNOTATION]);
  // The entries that stay are written back as they were, whatever else they hold.
  const now = written.filter(
    (e) => !(typeof e.interface === "string" && gone.has(e.interface)),
  ) as unknown as NetworkStatus[];
  const value = buildNetworkStatusAnnotation([...now, ...networkStatuses(attached)]);
  checkAnnotationBudget(apply.pod.metadata.annotations ?? {}, value);
  await apply.events.writeStatus(value);
  deps.log.debug({ pod: apply.report.pod }, "network-status updated");
}
