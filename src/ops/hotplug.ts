/**
 * `plexus hotplug NAMESPACE/NAME`: one hot-plug reconcile of a running pod of this node
 * (orchestrate/hotplug.ts), as the node daemon runs it: a process of its own, as a runtime runs a
 * CNI call, so the delegates' process handling (subreaper, leftover processes, the container
 * lock) never touches the daemon. Prints what it did as text, or with `-o json` one JSON report
 * (the daemon's: also when it fails, its error and the events it recorded; not a dry run's
 * failure); exit 0 when the pod is as its annotation asks (or has no sandbox), 1 when the
 * reconcile was refused (a NAD that does not exist: nothing changed) or failed (rolled back), 3
 * when it could not run. `plexus explain POD --hot-plug` runs it as a dry run.
 *
 * It learns a device network's device as ADD does (sources/pod-devices-lookup.ts: the daemon,
 * else kubelet's pod-resources socket; DRA claims through its Kubernetes access), and records a
 * Warning event the daemon's last reconcile of the pod recorded only once (hotplug-events.ts).
 */
import { podDevicesLookup } from "../sources/pod-devices-lookup";
import { cmdHotplug, type HotplugReport } from "../orchestrate/hotplug";
import { Code, isCniError } from "../cni/errors";
import { escapeText, quote } from "../cni/quote";
import { cniPathOf, exitCodeOf, messageOf, processOutput, UsageError, wantsJson } from "./context";
import type { CommonFlags, Output } from "./context";
import { nodePassDeps } from "./loaders";
import { ExitCode } from "../command/exit-codes";
import { parseSentEvents, SentEvents } from "./hotplug-events";

export interface HotplugFlags extends CommonFlags {
  uid?: string | undefined;
  dryRun?: boolean | undefined;
  /** The daemon's: the keys of the Warning events its last reconcile recorded on the pod. */
  sentEvents?: string | undefined;
  /** explain's own flags, which a hot-plug dry run refuses. */
  file?: string | undefined;
  nads?: string | undefined;
}

function parseTarget(pod: string | undefined): { namespace: string; name: string } {
  const [namespace, name, ...rest] = (pod ?? "").split("/");
  if (!namespace || !name || rest.length > 0)
    throw new UsageError(`pod ${quote(pod ?? "")}: expected NAMESPACE/NAME`);
  return { namespace, name };
}

export async function hotplugMain(
  pod: string | undefined,
  flags: HotplugFlags,
  out: Output = processOutput,
): Promise<number> {
  let events: SentEvents | undefined;
  let json = false;
  try {
    json = wantsJson(flags.output);
    if (flags.dryRun && (flags.file !== undefined || flags.nads !== undefined))
      throw new UsageError(
        "--hot-plug reconciles a running pod on this node: --file and --nads are not for it",
      );
    const target = { ...parseTarget(pod), uid: flags.uid };
    const bindings = { component: "hotplug", pod };
    const { conf, log, deps } = await nodePassDeps({ flags, bindings });
    events = new SentEvents(parseSentEvents(flags.sentEvents), log);
    // ADD's device sources: a device network hot-plugged gets its device as its ADD would.
    const podDevices = podDevicesLookup(conf, log);
    const wired = { ...deps, podDevices, ...(deps.kube ? { kube: events.wrap(deps.kube) } : {}) };
    const path = cniPathOf(flags.cniPath, process.env);
    const report = await cmdHotplug(target, { path, dryRun: flags.dryRun === true }, conf, wired);
    const warned = flags.dryRun ? {} : { warned: events.warned };
    out.out(json ? `${JSON.stringify({ ...report, ...warned })}\n` : describeReport(report));
    return report.state === "failed" ? ExitCode.Problem : ExitCode.Ok;
  } catch (err) {
    out.err(`plexus hotplug: ${messageOf(err)}\n`);
    // For the daemon: why, and the events recorded (a refusal before any delegate ran is one).
    if (events && !flags.dryRun && json) {
      const failed = { pod, state: "failed", error: messageOf(err), warned: events.warned };
      out.out(`${JSON.stringify(failed)}\n`);
    }
    // Past the setup (events is set), a CNI error is the reconcile's own: refused or failed.
    return events ? reconcileExitCode(err) : exitCodeOf(err);
  }
}

/** The codes of a reconcile that could not run: state unreadable, the API or the lock not had. */
const COULD_NOT_RUN: ReadonlySet<number> = new Set([
  Code.IoFailure,
  Code.TryAgainLater,
  Code.ApiFailure,
  Code.Internal,
]);

/**
 * 1 for a reconcile the planner refused (a NAD that does not exist, a malformed annotation, a
 * policy), as for one that failed: the pod is not as its annotation asks, and nothing changed.
 * 3 only when it could not run.
 */
function reconcileExitCode(err: unknown): number {
  return isCniError(err) && !COULD_NOT_RUN.has(err.code) ? ExitCode.Problem : exitCodeOf(err);
}

/** The text of a report: what a reconcile did, or (a dry run) would do. */
function describeReport(report: HotplugReport): string {
  const none = "no sandbox of this pod on this node; nothing to reconcile";
  if (report.state === "no-sandbox") return `${escapeText(report.pod)}: ${none}\n`;
  const head = `${report.pod} (container ${report.containerId})`;
  const verbs = report.state === "planned" ? VERBS.planned : VERBS.done;
  const lines = [report.state === "planned" ? `${head}: a hot-plug reconcile would` : `${head}:`];
  if (report.state === "failed") lines.push(`  failed: ${report.error ?? "(no reason given)"}`);
  for (const d of report.detached) lines.push(`  ${verbs.detach} ${d.network} from ${d.ifName}`);
  for (const a of report.attached) lines.push(`  ${verbs.attach} ${a.network} on ${a.ifName}`);
  for (const f of report.refused)
    lines.push(`  ${verbs.refuse} ${f.network} on ${f.ifName}: ${f.reason}`);
  const nothing = `  ${verbs.nothing}: the pod has the networks its annotation asks for`;
  if (lines.length === 1) lines.push(nothing);
  return `${lines.map(escapeText).join("\n")}\n`;
}

const VERBS = {
  planned: { detach: "detach", attach: "attach", refuse: "refuse", nothing: "do nothing" },
  done: { detach: "detached", attach: "attached", refuse: "refused", nothing: "nothing to do" },
} as const;
