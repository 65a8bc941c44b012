/**
 * N6.1.2: while the cluster default network is not ready (its readiness indicator file is
 * missing), pod operations wait, for a bounded and configurable time (Multus polls for 45 s).
 * STATUS reports the same condition as code 50 without waiting.
 */
import { access } from "node:fs/promises";
import { CniError, Code } from "../cni/errors";
import type { Logger } from "../log/logger";

export async function isReady(file: string | undefined): Promise<boolean> {
  if (!file) return true;
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

export async function waitForReadiness(
  file: string | undefined,
  timeoutMs: number,
  log: Logger,
): Promise<void> {
  if (await isReady(file)) return;
  log.warn(
    { file, timeoutMs },
    "default network not ready yet: waiting for its readiness indicator file",
  );
  const deadline = Date.now() + timeoutMs;
  let delay = 50;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(0, deadline - Date.now()))));
    if (await isReady(file)) return;
    delay = Math.min(delay * 2, 1000);
  }
  throw new CniError(
    Code.TryAgainLater,
    `the cluster default network is not ready: readiness indicator file ${file} did not appear ` +
      `within ${Math.round(timeoutMs / 1000)} s (config "readinessindicatorfile")`,
  );
}
