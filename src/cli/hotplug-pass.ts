/**
 * The daemon's hot-plug reconcile (daemon/hotplug.ts): `plexus hotplug NAMESPACE/NAME` run as a
 * process of its own, as housekeeping-pass.ts runs `plexus records retry` and for the same reason:
 * the delegates it runs get their own parent (subreaper, leftover processes killed, the container
 * lock), never the daemon. Its log goes to the daemon's stderr; its one-line JSON report (stdout)
 * feeds the daemon's metrics and says which Warning events it recorded on the pod, which the next
 * reconcile of the pod is told (`--sent-events`) so as not to record them again.
 */
import { spawn } from "node:child_process";
import type { HotplugOutcome, HotplugPass } from "../daemon/hotplug";
import { selfArgs } from "./self-command";

/** A report is a few lines of JSON: more is not one. */
const MAX_REPORT_BYTES = 256 * 1024;
/** The child has its own deadlines (addTimeoutSeconds, delTimeoutSeconds, the API's); a guard. */
const GUARD_MS = 10 * 60 * 1000;

export function hotplugPass(flags: Record<string, string | boolean | undefined>): HotplugPass {
  return ({ namespace, name, uid, sentEvents }) =>
    new Promise<HotplugOutcome>((resolve, reject) => {
      const report = ["-o", "json"];
      const target = ["hotplug", `${namespace}/${name}`, ...report, ...(uid ? ["--uid", uid] : [])];
      if (sentEvents.length > 0) target.push("--sent-events", sentEvents.join(","));
      const args = selfArgs({ command: target, flags });
      const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
      const guard = setTimeout(() => child.kill("SIGKILL"), GUARD_MS);
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        if (out.length < MAX_REPORT_BYTES) out += chunk.toString("utf8");
      });
      child.once("error", (err) => {
        clearTimeout(guard);
        reject(err);
      });
      child.once("close", (code, signal) => {
        clearTimeout(guard);
        resolve(outcomeOf(out, code === 0, signal ?? `exit status ${code}`));
      });
    });
}

/** The counts from the child's report; a missing or partial report counts nothing. */
function outcomeOf(stdout: string, ok: boolean, how: string): HotplugOutcome {
  let report: { attached?: unknown[]; detached?: unknown[]; error?: unknown; warned?: unknown } =
    {};
  try {
    report = JSON.parse(stdout.trim().split("\n").pop() ?? "") as typeof report;
  } catch {
    // No report: the process failed before it could write one (its log says why).
  }
  const attached = Array.isArray(report.attached) ? report.attached.length : 0;
  const detached = Array.isArray(report.detached) ? report.detached.length : 0;
  const warned = Array.isArray(report.warned)
    ? { warned: report.warned.filter((k): k is string => typeof k === "string") }
    : {};
  if (ok) return { ok, attached, detached, ...warned };
  const why = typeof report.error === "string" ? report.error : `plexus hotplug ended with ${how}`;
  return { ok, attached, detached, error: why, ...warned };
}
