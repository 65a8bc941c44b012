/**
 * Routes inside a pod's network namespace, for `default-route` (M4): the attachment that asks for
 * it carries the pod's default route, so the default routes of the family its gateway belongs to
 * are replaced.
 *
 * The executable does it over rtnetlink (rtnetlink.ts): no host tool, nothing looked up anywhere.
 * Under Node (development, unit tests) it uses the node's `nsenter` and `ip` (util-linux and
 * iproute2) through node:child_process, without a shell, each command with a deadline; the tools
 * are found only at fixed absolute paths, probed in a fixed order, never through $PATH (whatever
 * the runtime's environment holds would otherwise run as root in the pod's namespace), and run with
 * an empty environment. A node without them gets an error naming the tool and the paths looked at,
 * before any route changes.
 */
import { CniError, Code } from "../cni/errors";
import {
  type NetlinkError,
  netlinkAvailable,
  openRouteSocket,
  type RouteSocket,
} from "./rtnetlink";
import { findTool } from "./tools";

export interface Tools {
  nsenter: string;
  ip: string;
}

/** How long one `ip` command may take before it is killed (SIGTERM) and counted as failed. */
const IP_TIMEOUT_MS = 10_000;
/**
 * After `ip` exited, how long its stderr may stay open (a child holding it) before we stop reading.
 */
const PIPE_GRACE_MS = 200;

export interface DefaultRoute {
  gateway: string;
  ifName: string;
}

function ipInNetns(
  tools: Tools,
  netns: string,
  args: string[],
): Promise<{ ok: boolean; stderr: string }> {
  // Loaded on use: only this fallback path spawns, and every CNI call would pay for the module.
  const { spawn } = process.getBuiltinModule("node:child_process");
  return new Promise((resolve) => {
    const child = spawn(tools.nsenter, [`--net=${netns}`, tools.ip, ...args], {
      env: {},
      stdio: ["ignore", "ignore", "pipe"],
      timeout: IP_TIMEOUT_MS,
      killSignal: "SIGKILL",
    });
    const stderr: Buffer[] = [];
    const finish = (ok: boolean, text = Buffer.concat(stderr).toString("utf8").trim()) =>
      resolve({ ok, stderr: text });
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.on("error", (err) => finish(false, err.message));
    child.on("close", (code) => finish(code === 0));
    // Bounded also when something it started holds stderr open: shortly after the exit, stop
    // reading.
    child.on("exit", (code) =>
      setTimeout(() => {
        child.stderr.destroy();
        finish(code === 0);
      }, PIPE_GRACE_MS).unref(),
    );
  });
}

/**
 * M4: the default routes of each gateway's family replaced by these. The executable does it over
 * rtnetlink (no host tool at all); elsewhere (Node) with the node's tools at fixed paths.
 */
export async function setDefaultRoutes(
  netns: string,
  routes: readonly DefaultRoute[],
): Promise<void> {
  if (netlinkAvailable()) return setDefaultRoutesNetlink(netns, routes);
  return setDefaultRoutesWithTools(netns, routes, {
    nsenter: findTool("nsenter"),
    ip: findTool("ip"),
  });
}

const familyOf = (route: DefaultRoute): 4 | 6 => (route.gateway.includes(":") ? 6 : 4);

const cannotRoute = (route: DefaultRoute, why: string) =>
  new CniError(
    Code.VerificationFailed,
    `default-route: cannot route the pod's default traffic via ${route.gateway} on ` +
      `${route.ifName}: ${why} (is the gateway in that network's subnet?)`,
  );

function setDefaultRoutesNetlink(netns: string, routes: readonly DefaultRoute[]): void {
  let sock: RouteSocket;
  try {
    sock = openRouteSocket(
      netns,
      routes.map((r) => r.ifName),
    );
  } catch (err) {
    const e = err as Error & { errno?: number };
    const why = e.errno ? `${e.message} (${errnoName(e.errno)})` : e.message;
    throw new CniError(Code.Internal, `default-route: ${why}`, undefined, { cause: err });
  }
  try {
    for (const family of [4, 6] as const) {
      const wanted = routes.filter((r) => familyOf(r) === family);
      if (wanted.length === 0) continue;
      // Remove the family's default routes (those of the default network included), then add ours.
      try {
        for (let i = 0; i < 16 && sock.deleteDefault(family); i++);
      } catch (err) {
        const e = err as NetlinkError;
        throw new CniError(
          Code.Internal,
          `default-route: ${e.message} (${errnoName(e.errno)})`,
          undefined,
          {
            cause: err,
          },
        );
      }
      for (const [i, r] of wanted.entries()) {
        try {
          sock.addDefault({
            gateway: r.gateway,
            ifName: r.ifName,
            mode: i === 0 ? "replace" : "append",
          });
        } catch (err) {
          const e = err as NetlinkError;
          throw cannotRoute(r, `${e.message} (${errnoName(e.errno)})`);
        }
      }
    }
  } finally {
    sock.close();
  }
}

function errnoName(errno: number): string {
  try {
    // Loaded here, on a failure only: node:util weighs on every call that imports it.
    return process.getBuiltinModule("node:util").getSystemErrorName(-errno);
  } catch {
    return `errno ${errno}`;
  }
}

/** The same with `nsenter` and `ip` (Node: development and unit tests). */
export async function setDefaultRoutesWithTools(
  netns: string,
  routes: readonly DefaultRoute[],
  tools: Tools,
): Promise<void> {
  for (const family of ["-4", "-6"] as const) {
    const wanted = routes.filter((r) => familyOf(r) === (family === "-6" ? 6 : 4));
    if (wanted.length === 0) continue;
    for (let i = 0; i < 16; i++) {
      if (!(await ipInNetns(tools, netns, [family, "route", "del", "default"])).ok) break;
    }
    for (const [i, r] of wanted.entries()) {
      const args = [
        family,
        "route",
        i === 0 ? "replace" : "append",
        "default",
        "via",
        r.gateway,
        "dev",
        r.ifName,
      ];
      const res = await ipInNetns(tools, netns, args);
      if (!res.ok) throw cannotRoute(r, res.stderr || "ip route failed");
    }
  }
}
