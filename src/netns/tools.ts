/**
 * The host tools the Node fallbacks of this folder run (development, unit tests): found only at
 * fixed absolute paths, probed in a fixed order, never through $PATH. A module of its own so that
 * what needs a tool's path does not load the route machinery with it.
 */
import { accessSync, constants, statSync } from "node:fs";
import { CniError, Code } from "../cni/errors";

/** Where util-linux and iproute2 install these on the distributions Kubernetes nodes run. */
export const TOOL_PATHS = {
  nsenter: ["/usr/bin/nsenter", "/bin/nsenter", "/usr/sbin/nsenter", "/sbin/nsenter"],
  ip: ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"],
} as const;

type RouteTool = keyof typeof TOOL_PATHS;

/** The first executable regular file among `candidates`, else a CNI error naming the tool. */
export function findTool(
  tool: RouteTool,
  candidates: readonly string[] = TOOL_PATHS[tool],
): string {
  for (const path of candidates) {
    try {
      if (!statSync(path).isFile()) continue;
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not there, or not executable: the next one
    }
  }
  const pkg = tool === "ip" ? "iproute2" : "util-linux";
  throw new CniError(
    Code.Internal,
    `default-route: this node has no ${tool} (${pkg}), needed to change the pod's default route; ` +
      `looked at ${candidates.join(", ")} (never $PATH). Install ${pkg} on the node, or remove ` +
      `"default-route" from the pod's network selection`,
  );
}
