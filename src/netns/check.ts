/**
 * B4: the namespace CNI_NETNS names, checked before any delegate runs. Reads the file system
 * (statfs, the nsfs link, /proc/self/mountinfo), so it lives here and not in the pure protocol
 * layer (cni/); verbs reach it through `Deps.netns`.
 */
import { readFileSync, readlinkSync, realpathSync, statfsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { CniError, Code } from "../cni/errors";

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
    throw new CniError(
      Code.InvalidEnv,
      `CNI_NETNS ${JSON.stringify(netns)} cannot be opened (${reason}); expected a network ` +
        `namespace path such as /var/run/netns/<name>`,
      undefined,
      { cause: err },
    );
  }
  if (type !== NSFS_MAGIC && type !== PROC_SUPER_MAGIC) {
    throw new CniError(
      Code.InvalidEnv,
      `CNI_NETNS ${JSON.stringify(netns)} is not a network namespace (file system type ` +
        `0x${type.toString(16)}); expected a bind-mounted netns or /proc/<pid>/ns/net`,
    );
  }
  // An nsfs file of another kind (/proc/<pid>/ns/uts, a bind-mounted mount namespace) passes the
  // file-system check but makes the delegates fail half-way, after the bridge plugin made its
  // bridge.
  const kind = await namespaceKind(netns);
  if (kind !== undefined && kind !== "net") {
    throw new CniError(
      Code.InvalidEnv,
      `CNI_NETNS ${JSON.stringify(netns)} is a ${kind} namespace, not a network namespace; ` +
        `expected a bind-mounted netns or /proc/<pid>/ns/net`,
    );
  }
  // B97: the plugin's own namespace is the node's: a delegate there (or a rollback's DEL) would
  // configure, or remove, the node's own interfaces.
  if (isOwnNetns(netns)) {
    throw new CniError(
      Code.InvalidEnv,
      `CNI_NETNS ${JSON.stringify(netns)} is Plexus's own network namespace (the node's), not a ` +
        "pod's; nothing was run. The runtime must create a namespace for the pod",
    );
  }
}

/** Whether `netns` is the namespace this process runs in (same nsfs inode); false if unknown. */
export function isOwnNetns(netns: string): boolean {
  if (netns === "") return false;
  try {
    const own = statSync("/proc/thread-self/ns/net");
    const other = statSync(netns);
    return own.ino === other.ino && own.dev === other.dev;
  } catch {
    return false;
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
      if (f[4] !== undefined && f[4].replaceAll("\\040", " ") === mountPoint)
        kind = NS_LINK.exec(f[3] ?? "")?.[1];
    }
    return kind;
  } catch {
    return undefined;
  }
}
