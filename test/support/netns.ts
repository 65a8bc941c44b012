/**
 * Helpers for the end-to-end tier (modelled on the reference
 * plugins' `pkg/testutils/netns_linux.go`): real network namespaces, host bridges and veths, `ip
 * -j` read inside a namespace, and a per-test {@link E2eScope} that tracks everything a test
 * creates and removes it even when the test fails, then reports what could still be left behind
 * (namespaces, links, host-local reservations, Plexus records and cached results, processes).
 *
 * Prerequisites: root, `ip` (iproute2) and the reference plugins in /usr/lib/cni. Outside CI a
 * missing one skips the e2e files with a loud printed reason; under CI=true it fails the run.
 * The only skip CI allows is a kernel without a link type a test needs (ipvlan here).
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  accessSync,
  constants,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { isIP } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { TEST_NAME_PREFIX } from "./leftovers";
import { requirePlexusBinary, runPlexus, TEST_PATH, type RunResult } from "./plexus-bin";

export const CNI_BIN_DIR = "/usr/lib/cni";
export const NETNS_DIR = "/var/run/netns";
/**
 * Every namespace, bridge and veth these tests make starts with this, so a stray one is
 * recognisable.
 */
const NAME_PREFIX = TEST_NAME_PREFIX;
/** Plugins every e2e file uses; others (macvlan, tuning, static, ipvlan) are probed where used. */
const REQUIRED_PLUGINS = ["bridge", "host-local"];

export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString("hex");
}

// ------------------------------------------------------------------------------------------------
// Prerequisites

/** Reasons the e2e tier cannot run here; empty when it can. */
function missingPrerequisites(): string[] {
  const reasons: string[] = [];
  if (typeof process.getuid !== "function" || process.getuid() !== 0) {
    reasons.push("not running as root (network namespaces need it): run `sudo npm test`");
  }
  const ipv = spawnSync("ip", ["-V"], { encoding: "utf8" });
  if (ipv.error || ipv.status !== 0) reasons.push("no `ip` command (install iproute2)");
  for (const p of REQUIRED_PLUGINS) {
    try {
      accessSync(join(CNI_BIN_DIR, p), constants.X_OK);
    } catch {
      reasons.push(`no ${CNI_BIN_DIR}/${p} (install containernetworking-plugins)`);
    }
  }
  return reasons;
}

export const isCi = (): boolean => process.env.CI === "true" || process.env.CI === "1";

/**
 * `describe` for an e2e file. With every prerequisite present it is a plain `describe` that also
 * fails (not skips) when dist/plexus is missing. Otherwise: outside CI the suite is skipped and
 * the reason printed loudly; under CI=true the suite becomes one failing test naming the reason.
 */
/**
 * A program an e2e file needs beyond the common prerequisites, and the Debian package that has it.
 */
export interface E2eTool {
  /** A command found through PATH, or an absolute path. */
  command: string;
  pkg: string;
}

function missingTools(tools: readonly E2eTool[]): string[] {
  const found = (c: string) => {
    const paths = c.startsWith("/") ? [c] : TEST_PATH.split(":").map((d) => join(d, c));
    return paths.some((p) => {
      try {
        accessSync(p, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  };
  return tools
    .filter((t) => !found(t.command))
    .map((t) => `no ${t.command} (install ${t.pkg}; "scripts/bootstrap.sh test" does)`);
}

export function describeE2e(
  name: string,
  fn: () => void,
  options: { tools?: readonly E2eTool[] } = {},
): void {
  const missing = [...missingPrerequisites(), ...missingTools(options.tools ?? [])];
  if (missing.length === 0) {
    describe(name, () => {
      beforeAll(() => requirePlexusBinary());
      fn();
    });
    return;
  }
  const reason = `e2e prerequisites missing: ${missing.join("; ")}`;
  if (isCi()) {
    describe(name, () => {
      test("e2e prerequisites are present", () => {
        throw new Error(`${reason} (CI=true: a missing e2e prerequisite is a failure, not a skip)`);
      });
    });
    return;
  }
  console.warn(`\n*** SKIPPING e2e suite "${name}": ${reason} ***\n`);
  describe.skip(name, fn);
}

const linkTypeProbe = new Map<string, string | undefined>();

/**
 * Whether this kernel can create a link of `type` (ipvlan, macvlan, …): tries it on a veth in a
 * throwaway namespace. Returns undefined when it can, else the reason to print ("kernel has no
 * ipvlan").
 */
export function kernelLacksLinkType(type: string): string | undefined {
  if (linkTypeProbe.has(type)) return linkTypeProbe.get(type);
  const ns = `${NAME_PREFIX}-probe-${randomHex(4)}`;
  let reason: string | undefined;
  ip(["netns", "add", ns]);
  try {
    ip(["link", "add", "pv0", "type", "veth", "peer", "name", "pv1"], { netns: ns });
    const r = ipTry(["link", "add", "probe0", "link", "pv0", "type", type], { netns: ns });
    // Only a kernel that does not know the type is a reason to skip: the kernel's own answer for an
    // unregistered link kind, with no such module loaded. Any other failure (permissions, a broken
    // namespace, "not supported" for another reason) is a failure, under CI too.
    const unknown =
      r.status !== 0 && /Unknown device type/.test(r.stderr) && !existsSync(`/sys/module/${type}`);
    if (unknown) reason = `kernel has no ${type}`;
    else if (r.status !== 0)
      throw new Error(`probing for ${type} links failed: ${r.stderr.trim()}`);
  } finally {
    ipTry(["netns", "del", ns]);
  }
  linkTypeProbe.set(type, reason);
  return reason;
}

// ------------------------------------------------------------------------------------------------
// ip(8)

export interface IpOptions {
  netns?: string;
}

function ipArgs(args: readonly string[], options: IpOptions): string[] {
  return options.netns ? ["-n", options.netns, ...args] : [...args];
}

/** Runs `ip`, returning status and output without throwing. */
export function ipTry(
  args: readonly string[],
  options: IpOptions = {},
): { status: number; stdout: string; stderr: string } {
  const r = spawnSync("ip", ipArgs(args, options), { encoding: "utf8", timeout: 10_000 });
  return {
    status: r.status ?? -1,
    stdout: r.stdout ?? "",
    stderr: r.stderr ?? String(r.error ?? ""),
  };
}

/** Runs `ip` and throws with its stderr on failure. */
export function ip(args: readonly string[], options: IpOptions = {}): string {
  const r = ipTry(args, options);
  if (r.status !== 0)
    throw new Error(
      `ip ${ipArgs(args, options).join(" ")} failed (${r.status}): ${r.stderr.trim()}`,
    );
  return r.stdout;
}

/** `ip -j …` parsed. */
function ipJson<T>(args: readonly string[], options: IpOptions = {}): T[] {
  const out = ip(["-j", ...args], options).trim();
  return out === "" ? [] : (JSON.parse(out) as T[]);
}

interface RawLink {
  ifindex: number;
  ifname: string;
  address?: string;
  mtu?: number;
  operstate?: string;
  master?: string;
  link_type?: string;
  linkinfo?: { info_kind?: string };
  addr_info?: Array<{ family: string; local: string; prefixlen: number; scope?: string }>;
}

/** One interface as `ip -j addr` shows it. */
export interface LinkInfo {
  name: string;
  index: number;
  mac: string;
  mtu: number;
  /** "UP", "DOWN", "UNKNOWN", … */
  state: string;
  master?: string;
  /** veth, bridge, macvlan, … (`ip -d`), undefined for plain devices. */
  kind?: string;
  /** Global IPv4 and IPv6 addresses in CIDR form, link-local ones left out. */
  addresses: string[];
}

function toLinkInfo(raw: RawLink): LinkInfo {
  const info: LinkInfo = {
    name: raw.ifname,
    index: raw.ifindex,
    mac: (raw.address ?? "").toLowerCase(),
    mtu: raw.mtu ?? 0,
    state: raw.operstate ?? "",
    addresses: (raw.addr_info ?? [])
      .filter((a) => a.scope !== "link" && a.scope !== "host")
      .map((a) => `${a.local}/${a.prefixlen}`),
  };
  if (raw.master) info.master = raw.master;
  if (raw.linkinfo?.info_kind) info.kind = raw.linkinfo.info_kind;
  return info;
}

/**
 * Every link of a namespace (or the host when `netns` is undefined), with MAC, MTU and addresses.
 */
export function links(netns?: string): LinkInfo[] {
  const o = netns ? { netns } : {};
  const details = new Map(ipJson<RawLink>(["-d", "link", "show"], o).map((l) => [l.ifname, l]));
  return ipJson<RawLink>(["addr", "show"], o).map((l) => {
    const d = details.get(l.ifname);
    return toLinkInfo({ ...l, master: d?.master, linkinfo: d?.linkinfo });
  });
}

export function linkExists(name: string, netns?: string): boolean {
  return ipTry(["link", "show", "dev", name], netns ? { netns } : {}).status === 0;
}

/** Links enslaved to a host bridge (the host ends of the bridge plugin's veths). */
function bridgePorts(bridge: string): string[] {
  if (!linkExists(bridge)) return [];
  return ipJson<RawLink>(["link", "show", "master", bridge]).map((l) => l.ifname);
}

export interface RouteInfo {
  /** "default" or a CIDR (`ip` prints host routes without /32; they are given /32 here). */
  dst: string;
  gateway?: string;
  dev: string;
  scope?: string;
}

/** IPv4 routes of a namespace's main table. */
export function routes(netns: string): RouteInfo[] {
  return ipJson<{ dst: string; gateway?: string; dev: string; scope?: string }>(
    ["-4", "route", "show", "table", "main"],
    { netns },
  ).map((r) => {
    const out: RouteInfo = {
      dst: r.dst === "default" || r.dst.includes("/") ? r.dst : `${r.dst}/32`,
      dev: r.dev,
    };
    if (r.gateway) out.gateway = r.gateway;
    if (r.scope) out.scope = r.scope;
    return out;
  });
}

export function netnsExists(name: string): boolean {
  return existsSync(join(NETNS_DIR, name));
}

// ------------------------------------------------------------------------------------------------
// The per-test scope

/** What an attachment could leave behind; every list is empty once DEL has done its job. */
export interface AttachmentLeftovers {
  /** `<netns>/<ifname>` for every link but `lo` in a namespace of this test that still exists. */
  netnsLinks: string[];
  /**
   * Ports of this test's bridges (host veth ends) and this test's links the test did not create
   * itself.
   */
  hostLinks: string[];
  /** host-local reservation files (`<network>/<ip>`) under this test's dataDir. */
  ipReservations: string[];
  /** Files under `<cniDir>/records`. */
  records: string[];
  /** Files under `<cniDir>/results` (the delegates' result cache). */
  cacheFiles: string[];
  /** Container lock files (`<cniDir>/locks/`): gone once the container has no record. */
  lockFiles: string[];
  /** Entries of records whose DEL failed (`<cniDir>/pending/`): gone with their record. */
  pendingFiles: string[];
  /** Live processes started on behalf of this test (plexus, delegates, their children). */
  processes: string[];
}

export const NOTHING_LEFT: AttachmentLeftovers = {
  netnsLinks: [],
  hostLinks: [],
  ipReservations: [],
  records: [],
  cacheFiles: [],
  lockFiles: [],
  pendingFiles: [],
  processes: [],
};

/** What is still there after {@link E2eScope.dispose}: must be all empty. */
export interface DisposeReport {
  netns: string[];
  hostLinks: string[];
  tempDir: string[];
  processes: string[];
}

export interface Netns {
  name: string;
  /** The path given as CNI_NETNS. */
  path: string;
}

export class E2eScope {
  readonly root: string;
  readonly cniDir: string;
  /** host-local's `dataDir` for every network of this test. */
  readonly dataDir: string;
  /**
   * Put into the environment of every plexus run; delegates inherit it, so leftovers are findable.
   */
  readonly marker: string;
  private readonly netnses = new Set<string>();
  /** Links the test created itself (masters, bridges made up front). */
  private readonly ownLinks = new Set<string>();
  /**
   * Bridges named for the bridge plugin to create: removed at the end, their ports are leftovers.
   */
  private readonly bridges = new Set<string>();
  private readonly tag = randomHex(2);
  private seq = 0;

  constructor() {
    this.root = mkdtempSync(join(tmpdir(), `${NAME_PREFIX}-e2e-`));
    this.cniDir = join(this.root, "cni");
    this.dataDir = join(this.root, "ipam");
    this.marker = `PLX_E2E_MARK=${randomHex(8)}`;
  }

  /** A unique `plx<tag><n><suffix>` link name (≤ 15 bytes). */
  linkName(suffix = ""): string {
    const name = `${NAME_PREFIX}${this.tag}${(this.seq++).toString(36)}${suffix}`;
    if (name.length > 15) throw new Error(`link name ${name} is longer than 15 bytes`);
    return name;
  }

  /** A bridge name for the bridge plugin to create (or already created by {@link addBridge}). */
  bridgeName(): string {
    const name = this.linkName("b");
    this.bridges.add(name);
    return name;
  }

  /** A new namespace `plx-<random>`. */
  addNetns(): Netns {
    const name = `${NAME_PREFIX}-${randomHex(5)}`;
    this.netnses.add(name);
    ip(["netns", "add", name]);
    ip(["link", "set", "lo", "up"], { netns: name });
    return { name, path: join(NETNS_DIR, name) };
  }

  /** Deletes a namespace of this test now (as a runtime does after StopPodSandbox). */
  deleteNetns(ns: Netns): void {
    ip(["netns", "del", ns.name]);
  }

  /** A host bridge, up. */
  addBridge(): string {
    const name = this.bridgeName();
    this.ownLinks.add(name);
    ip(["link", "add", name, "type", "bridge"]);
    ip(["link", "set", name, "up"]);
    return name;
  }

  /**
   * A host veth pair, both ends up; returns [end, peer] (one end makes a macvlan/ipvlan master).
   */
  addVethPair(): [string, string] {
    const a = this.linkName("v");
    const b = `${a}p`;
    this.ownLinks.add(a);
    this.ownLinks.add(b);
    ip(["link", "add", a, "type", "veth", "peer", "name", b]);
    ip(["link", "set", a, "up"]);
    ip(["link", "set", b, "up"]);
    return [a, b];
  }

  /** The CNI environment for one plexus call (K2-like: cwd /, CNI_PATH the plugin dir). */
  env(
    command: string,
    extra: Record<string, string | undefined> = {},
  ): Record<string, string | undefined> {
    const [mk, mv] = this.marker.split("=") as [string, string];
    return {
      PATH: TEST_PATH,
      [mk]: mv,
      CNI_COMMAND: command,
      CNI_PATH: CNI_BIN_DIR,
      CNI_ARGS: "IgnoreUnknown=1",
      ...extra,
    };
  }

  /** Runs dist/plexus with `conf` on stdin. */
  run(
    command: string,
    conf: unknown,
    env: Record<string, string | undefined> = {},
  ): Promise<RunResult> {
    return runPlexus({
      env: this.env(command, env),
      stdin: typeof conf === "string" ? conf : JSON.stringify(conf),
      timeoutMs: 30_000,
    });
  }

  ipReservations(): string[] {
    return walk(this.dataDir)
      .filter((p) => isIP(p.split("/").pop() ?? "") !== 0)
      .sort();
  }

  recordFiles(): string[] {
    return walk(join(this.cniDir, "records")).sort();
  }

  lockFiles(): string[] {
    return walk(join(this.cniDir, "locks")).sort();
  }

  cacheFiles(): string[] {
    return walk(join(this.cniDir, "results")).sort();
  }

  /** Live processes carrying this test's marker in their environment. */
  processes(): string[] {
    const needle = Buffer.from(this.marker);
    const out: string[] = [];
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
      try {
        if (!readFileSync(`/proc/${pid}/environ`).includes(needle)) continue;
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
        out.push(
          `${pid} ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim()}`,
        );
      } catch {
        // Exited meanwhile.
      }
    }
    return out;
  }

  attachmentLeftovers(): AttachmentLeftovers {
    const netnsLinks: string[] = [];
    for (const ns of this.netnses) {
      if (!netnsExists(ns)) continue;
      for (const l of links(ns)) if (l.name !== "lo") netnsLinks.push(`${ns}/${l.name}`);
    }
    const hostLinks: string[] = [];
    for (const br of this.bridges)
      for (const port of bridgePorts(br))
        if (!this.ownLinks.has(port)) hostLinks.push(`${br}/${port}`);
    return {
      netnsLinks,
      hostLinks,
      ipReservations: this.ipReservations(),
      records: this.recordFiles(),
      cacheFiles: this.cacheFiles(),
      lockFiles: this.lockFiles(),
      pendingFiles: walk(join(this.cniDir, "pending")).sort(),
      processes: this.processes(),
    };
  }

  /**
   * Removes everything this test made (processes, namespaces, links, the temp dir), whatever state
   * the test left, and returns what survived (all lists empty when clean).
   */
  async dispose(): Promise<DisposeReport> {
    for (let i = 0; i < 50 && this.processes().length > 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    const processes = this.processes();
    for (const p of processes) {
      try {
        process.kill(Number(p.split(" ")[0]), "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
    for (const ns of this.netnses) if (netnsExists(ns)) ipTry(["netns", "del", ns]);
    for (const l of [...this.bridges, ...this.ownLinks])
      if (linkExists(l)) ipTry(["link", "del", l]);
    rmSync(this.root, { recursive: true, force: true });
    return {
      netns: [...this.netnses].filter(netnsExists),
      hostLinks: [...this.bridges, ...this.ownLinks].filter((l) => linkExists(l)),
      tempDir: existsSync(this.root) ? [this.root] : [],
      processes,
    };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

function walk(dir: string): string[] {
  const out: string[] = [];
  const visit = (d: string): void => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      try {
        if (statSync(p).isDirectory()) visit(p);
        else out.push(relative(dir, p));
      } catch {
        // Vanished meanwhile.
      }
    }
  };
  visit(dir);
  return out;
}

/**
 * A fresh {@link E2eScope} per test. After each test: if it passed, nothing an attachment makes
 * may be left (every test ends with its DELs); then, passed or failed, everything is removed and
 * the removal itself is checked (no namespace, link, temp dir or process of the test survives).
 */
export function useE2eScope(): { readonly scope: E2eScope } {
  const holder = { scope: undefined as unknown as E2eScope };
  beforeEach(() => {
    holder.scope = new E2eScope();
  });
  afterEach(async (ctx) => {
    const scope = holder.scope;
    const passed = ctx.task.result?.state !== "fail";
    const left = passed ? scope.attachmentLeftovers() : NOTHING_LEFT;
    const report = await scope.dispose();
    if (passed) expect(left, "left behind by the test's DELs").toEqual(NOTHING_LEFT);
    expect(report, "still there after cleanup").toEqual({
      netns: [],
      hostLinks: [],
      tempDir: [],
      processes: [],
    });
  });
  return holder;
}
