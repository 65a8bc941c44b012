/** CNI_* environment parsing and validation (C2.1, B1–B10). */
import { readFileSync, readlinkSync, realpathSync, statfsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseCniArgs, type CniArgs } from "./args";
import { CniError, Code } from "./errors";
import { validateContainerId, validateInterfaceName } from "./validate";

export const COMMANDS = ["ADD", "DEL", "CHECK", "VERSION", "STATUS", "GC"] as const;
export type Command = (typeof COMMANDS)[number];

export interface CniRequest {
  command: Command;
  /** Empty for VERSION, STATUS and GC, which have no attachment. */
  containerId: string;
  /** May be "" on DEL (B5: containerd passes "" once the netns is closed). */
  netns: string;
  ifName: string;
  args: CniArgs;
  /** CNI_ARGS as given, passed to delegates unchanged (C4.1). */
  rawArgs: string;
  /** CNI_PATH split on ':', empty entries dropped. */
  path: string[];
}

type Env = Readonly<Record<string, string | undefined>>;

const REQUIRED: Record<Command, readonly string[]> = {
  ADD: ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"],
  CHECK: ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"],
  DEL: ["CNI_CONTAINERID", "CNI_IFNAME"],
  VERSION: [],
  STATUS: [],
  GC: ["CNI_PATH"],
};

export function parseCommand(raw: string | undefined): Command {
  if (raw === undefined || raw === "") {
    throw new CniError(Code.InvalidEnv, `CNI_COMMAND is not set; expected one of ${COMMANDS.join(", ")}`);
  }
  if (!(COMMANDS as readonly string[]).includes(raw)) {
    throw new CniError(
      Code.InvalidEnv,
      `CNI_COMMAND ${JSON.stringify(raw.slice(0, 40))} is not a CNI command; expected one of ${COMMANDS.join(", ")} (upper case)`,
    );
  }
  return raw as Command;
}

export function parseEnv(env: Env): CniRequest {
  const command = parseCommand(env.CNI_COMMAND);
  for (const key of REQUIRED[command]) {
    // DEL may have an empty CNI_NETNS, but CNI_IFNAME/CONTAINERID must be non-empty; CNI_PATH must be set.
    if (env[key] === undefined || env[key] === "") {
      throw new CniError(Code.InvalidEnv, `${key} is required for ${command} but is not set`);
    }
  }
  const hasAttachment = command === "ADD" || command === "CHECK" || command === "DEL";
  const containerId = hasAttachment ? validateContainerId(env.CNI_CONTAINERID ?? "") : (env.CNI_CONTAINERID ?? "");
  const ifName = hasAttachment ? validateInterfaceName(env.CNI_IFNAME ?? "") : (env.CNI_IFNAME ?? "");
  const rawArgs = env.CNI_ARGS ?? "";
  return {
    command,
    containerId,
    netns: env.CNI_NETNS ?? "",
    ifName,
    args: parseCniArgs(rawArgs),
    rawArgs,
    path: (env.CNI_PATH ?? "").split(":").filter((p) => p !== ""),
  };
}

const NSFS_MAGIC = 0x6e736673;
const PROC_SUPER_MAGIC = 0x9fa0;

/**
 * B4: CNI_NETNS must name a network namespace that exists, checked before any delegate runs
 * (the reference plugins' `ns.GetNS` accepts nsfs and procfs files the same way).
 */
export async function assertNetnsUsable(netns: string): Promise<void> {
  let type: number;
  try {
    type = Number(statfsSync(netns).type);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new CniError(Code.InvalidEnv, `CNI_NETNS ${JSON.stringify(netns)} cannot be opened (${reason}); expected a network namespace path such as /var/run/netns/<name>`);
  }
  if (type !== NSFS_MAGIC && type !== PROC_SUPER_MAGIC) {
    throw new CniError(
      Code.InvalidEnv,
      `CNI_NETNS ${JSON.stringify(netns)} is not a network namespace (file system type 0x${type.toString(16)}); expected a bind-mounted netns or /proc/<pid>/ns/net`,
    );
  }
  // An nsfs file of another kind (/proc/<pid>/ns/uts, a bind-mounted mount namespace) passes the
  // file-system check but makes the delegates fail half-way, after the bridge plugin made its bridge.
  const kind = await namespaceKind(netns);
  if (kind !== undefined && kind !== "net") {
    throw new CniError(Code.InvalidEnv, `CNI_NETNS ${JSON.stringify(netns)} is a ${kind} namespace, not a network namespace; expected a bind-mounted netns or /proc/<pid>/ns/net`);
  }
}

const NS_LINK = /^([a-z_]+):\[\d+\]$/;

/**
 * The kind ("net", "uts", …) of the namespace an nsfs path refers to, or undefined when it cannot
 * be told: /proc/<pid>/ns/* are links reading `kind:[inode]`; a bind mount such as
 * /var/run/netns/<name> has `kind:[inode]` as its root in /proc/self/mountinfo.
 */
async function namespaceKind(path: string): Promise<string | undefined> {
  let p = path;
  for (let hops = 0; hops < 8; hops++) {
    let target: string;
    try {
      target = readlinkSync(p);
    } catch {
      break;
    }
    const m = NS_LINK.exec(target);
    if (m) return m[1];
    p = resolve(dirname(p), target);
  }
  try {
    const mountPoint = realpathSync(p);
    let kind: string | undefined;
    for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
      const f = line.split(" ");
      // The last mount on a mount point is the visible one.
      if (f[4] !== undefined && f[4].replaceAll("\\040", " ") === mountPoint) kind = NS_LINK.exec(f[3] ?? "")?.[1];
    }
    return kind;
  } catch {
    return undefined;
  }
}
