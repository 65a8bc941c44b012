/**
 * Routes inside a pod's network namespace, for `default-route` (M4): the attachment that asks for
 * it carries the pod's default route, so the default routes of the family its gateway belongs to
 * are replaced. Done with the node's `nsenter` and `ip` (util-linux and iproute2, on every
 * Kubernetes node), through node:child_process, without a shell, each command with a deadline.
 */
import { spawn } from "node:child_process";
import { CniError, Code } from "../cni/errors";

/** How long one `ip` command may take before it is killed (SIGTERM) and counted as failed. */
const IP_TIMEOUT_MS = 10_000;
/** After `ip` exited, how long its stderr may stay open (a child holding it) before we stop reading. */
const PIPE_GRACE_MS = 200;

export interface DefaultRoute {
  gateway: string;
  ifName: string;
}

function ipInNetns(netns: string, args: string[]): Promise<{ ok: boolean; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("nsenter", [`--net=${netns}`, "ip", ...args], {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: IP_TIMEOUT_MS,
      killSignal: "SIGKILL",
    });
    const stderr: Buffer[] = [];
    const finish = (ok: boolean, text = Buffer.concat(stderr).toString("utf8").trim()) => resolve({ ok, stderr: text });
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.on("error", (err) => finish(false, err.message));
    child.on("close", (code) => finish(code === 0));
    // Bounded also when something it started holds stderr open: shortly after the exit, stop reading.
    child.on("exit", (code) =>
      setTimeout(() => {
        child.stderr.destroy();
        finish(code === 0);
      }, PIPE_GRACE_MS).unref(),
    );
  });
}

export async function setDefaultRoutes(netns: string, routes: readonly DefaultRoute[]): Promise<void> {
  for (const family of ["-4", "-6"] as const) {
    const wanted = routes.filter((r) => r.gateway.includes(":") === (family === "-6"));
    if (wanted.length === 0) continue;
    // Remove the family's default routes (those of the default network included), then add ours.
    for (let i = 0; i < 16; i++) {
      if (!(await ipInNetns(netns, [family, "route", "del", "default"])).ok) break;
    }
    for (const [i, r] of wanted.entries()) {
      const args = [family, "route", i === 0 ? "replace" : "append", "default", "via", r.gateway, "dev", r.ifName];
      const res = await ipInNetns(netns, args);
      if (!res.ok) {
        throw new CniError(
          Code.VerificationFailed,
          `default-route: cannot route the pod's default traffic via ${r.gateway} on ${r.ifName}: ${res.stderr || "ip route failed"} (is the gateway in that network's subnet?)`,
        );
      }
    }
  }
}
