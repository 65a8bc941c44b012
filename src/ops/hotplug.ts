/**
 * `plexus hotplug NAMESPACE/NAME`: one hot-plug reconcile of a running pod of this node
 * (orchestrate/hotplug.ts), as the node daemon runs it: a process of its own, as a runtime runs a
 * CNI call, so the delegates' process handling (subreaper, leftover processes, the container
 * lock) never touches the daemon. Prints one JSON report; exit 0 when the pod is as its
 * annotation asks (or has no sandbox), 1 when the reconcile failed (rolled back), 3 when it could
 * not run. `plexus explain POD --hot-plug` runs it as a dry run.
 */
import { cmdHotplug, type HotplugReport } from "../orchestrate/hotplug";
import { cniPathOf, exitCodeOf, messageOf, processOutput, UsageError } from "./context";
import type { CommonFlags, Output } from "./context";
import { nodePassDeps } from "./loaders";
import { ExitCode } from "../config/exit-codes";

export interface HotplugFlags extends CommonFlags {
  uid?: string | undefined;
  dryRun?: boolean | undefined;
  /** explain's own flags, which a hot-plug dry run refuses. */
  file?: string | undefined;
  nads?: string | undefined;
}

function parseTarget(pod: string | undefined): { namespace: string; name: string } {
  const [namespace, name, ...rest] = (pod ?? "").split("/");
  if (!namespace || !name || rest.length > 0)
    throw new UsageError(`pod ${JSON.stringify(pod ?? "")}: expected NAMESPACE/NAME`);
  return { namespace, name };
}

export async function hotplugMain(
  pod: string | undefined,
  flags: HotplugFlags,
  out: Output = processOutput,
): Promise<number> {
  try {
    if (flags.dryRun && (flags.file !== undefined || flags.nads !== undefined))
      throw new UsageError(
        "--hot-plug reconciles a running pod on this node: --file and --nads are not for it",
      );
    const target = { ...parseTarget(pod), uid: flags.uid };
    const bindings = { component: "hotplug", pod };
    const { conf, deps } = await nodePassDeps({ flags, bindings });
    const path = cniPathOf(flags.cniPath, process.env);
    const report = await cmdHotplug(target, { path, dryRun: flags.dryRun === true }, conf, deps);
    const json = flags.output === "json" || !flags.dryRun;
    out.out(json ? `${JSON.stringify(report)}\n` : describeReport(report));
    return report.state === "failed" ? ExitCode.Problem : ExitCode.Ok;
  } catch (err) {
    out.err(`plexus hotplug: ${messageOf(err)}\n`);
    return exitCodeOf(err);
  }
}

/** The dry run's text: what a reconcile would do. */
function describeReport(report: HotplugReport): string {
  const none = "no sandbox of this pod on this node; nothing to reconcile";
  if (report.state === "no-sandbox") return `${report.pod}: ${none}\n`;
  const lines = [`${report.pod} (container ${report.containerId}): a hot-plug reconcile would`];
  for (const d of report.detached) lines.push(`  detach ${d.network} from ${d.ifName}`);
  for (const a of report.attached) lines.push(`  attach ${a.network} on ${a.ifName}`);
  for (const f of report.refused) lines.push(`  refuse ${f.network} on ${f.ifName}: ${f.reason}`);
  const nothing = "  do nothing: the pod has the networks its annotation asks for";
  if (lines.length === 1) lines.push(nothing);
  return `${lines.join("\n")}\n`;
}
