/**
 * Upgrade and uninstall with the arguments deploy/ really passes: the install container's command
 * from the rendered DaemonSet (`kubectl kustomize deploy/`), and the uninstall container's from
 * that DaemonSet with deploy/uninstall/daemonset-patch.yaml applied (`kubectl patch --local`), run
 * through the real dist/plexus against a temp directory standing in for the node's `/` (and for
 * the container's own files: the service-account token and CA). The installer copies itself
 * (dist/plexus) as the image's installer does.
 *
 * - Upgrade: a rolling update SIGTERMs the old installer before the new one starts; the config
 *   must still be there after that SIGTERM, or pods created in between get the primary network
 *   only.
 * - Uninstall: config, kubeconfig with its credential copies, and binary go; the primary network's
 *   config and everything else in the conf dir stay untouched; the state dir stays unless asked.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Manifest, patchLocally, renderKustomization } from "../support/deploy-render";
import {
  isAlive,
  PLEXUS_BIN,
  requirePlexusBinary,
  TEST_PATH,
  waitFor,
} from "../support/plexus-bin";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** Flags whose value is a path inside the installer's container: moved under the temp root. */
const CONTAINER_PATH_FLAGS = new Set([
  "--host-prefix",
  "--cni-conf-dir",
  "--cni-bin-dir",
  "--token-file",
  "--ca-file",
]);
/** Flags whose value is a node path (the installer resolves it under --host-prefix): kept. */
const NODE_PATH_FLAGS = new Set([
  "--kubeconfig-file-host",
  "--cni-dir",
  "--readiness-indicator-file",
  "--log-file",
  "--additional-bin-dir",
]);

/**
 * A container's arguments after `/usr/local/bin/plexus <verb>`, its container paths under `root`.
 */
function rebase(command: string[], root: string): string[] {
  return command.slice(2).map((arg) => {
    const eq = arg.indexOf("=");
    const [flag, value] = eq < 0 ? [arg, undefined] : [arg.slice(0, eq), arg.slice(eq + 1)];
    if (value === undefined || NODE_PATH_FLAGS.has(flag)) return arg;
    if (CONTAINER_PATH_FLAGS.has(flag)) return `${flag}=${join(root, value)}`;
    if (value.startsWith("/"))
      throw new Error(`${arg}: classify ${flag} as a container or a node path in this test`);
    return arg;
  });
}

function container(ds: Manifest, name: string): { command: string[] } {
  return ds.spec.template.spec.containers.find((c: { name: string }) => c.name === name);
}

const daemonSet = renderKustomization(".").find((d) => d.kind === "DaemonSet")!;
const installCommand = container(daemonSet, "install").command;
const uninstallCommand = container(
  patchLocally(daemonSet, "uninstall/daemonset-patch.yaml"),
  "install",
).command;

const PRIMARY = JSON.stringify({
  cniVersion: "1.0.0",
  name: "primary-net",
  plugins: [
    { type: "bridge", bridge: "cni0", ipam: { type: "host-local", subnet: "10.244.0.0/24" } },
  ],
});

/** The node (`<root>/host`) with a primary network, and the container's token and CA. */
function node() {
  const root = mkdtempSync(join(tmpdir(), "plx-lifecycle-"));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  const host = (p: string) => join(root, "host", p);
  for (const d of ["/etc/cni/net.d", "/opt/cni/bin"]) mkdirSync(host(d), { recursive: true });
  writeFileSync(host("/etc/cni/net.d/10-primary.conflist"), PRIMARY);
  writeFileSync(
    host("/etc/cni/net.d/99-other.conf"),
    '{"cniVersion":"1.0.0","name":"other","type":"bridge"}',
  );
  writeFileSync(host("/opt/cni/bin/bridge"), "#!/bin/sh\n", { mode: 0o755 });
  for (const flag of ["--token-file", "--ca-file"]) {
    const path = join(root, installCommand.find((a) => a.startsWith(`${flag}=`))!.split("=")[1]!);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, flag === "--token-file" ? "token-1" : "ca-1");
  }
  return { root, host };
}

function run(args: string[]): {
  child: ChildProcess;
  exit: Promise<number | null>;
  stderr: () => string;
} {
  let stderr = "";
  const child = spawn(PLEXUS_BIN, args, {
    env: { PATH: TEST_PATH, KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stderr!.on("data", (b) => (stderr += b));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  cleanups.push(() => {
    if (child.pid && isAlive(child.pid)) child.kill("SIGKILL");
  });
  return { child, exit, stderr: () => stderr };
}

/** Runs the installer with deploy/'s arguments until its config is written, then SIGTERMs it. */
async function installThenSigterm(
  nodeSetUp: ReturnType<typeof node>,
  extra: string[] = [],
): Promise<string> {
  const conflist = nodeSetUp.host("/etc/cni/net.d/00-plexus.conflist");
  const p = run([
    "install",
    ...rebase(installCommand, nodeSetUp.root),
    "--poll-interval=50",
    ...extra,
  ]);
  await waitFor(
    () =>
      existsSync(conflist) &&
      existsSync(nodeSetUp.host("/etc/cni/net.d/plexus.d/plexus.kubeconfig")),
    20_000,
    "the installer's config",
  ).catch((err) => {
    throw new Error(`${err.message}\n${p.stderr()}`);
  });
  const written = readFileSync(conflist, "utf8");
  p.child.kill("SIGTERM");
  expect(await p.exit, p.stderr()).toBe(0);
  expect(p.stderr()).toContain("terminating");
  return written;
}

describe("upgrade: the installer's SIGTERM with deploy/'s arguments", () => {
  it("M11 leaves 00-plexus.conflist, its kubeconfig and the binary in place (no window of primary-network-only pods)", async () => {
    requirePlexusBinary();
    expect(installCommand.slice(0, 2)).toEqual(["/usr/local/bin/plexus", "install"]);
    const n = node();
    const written = await installThenSigterm(n);
    expect(JSON.parse(written).plugins[0].type).toBe("plexus");
    expect(readFileSync(n.host("/etc/cni/net.d/00-plexus.conflist"), "utf8")).toBe(written);
    expect(existsSync(n.host("/etc/cni/net.d/plexus.d/plexus.kubeconfig"))).toBe(true);
    expect(existsSync(n.host("/opt/cni/bin/plexus"))).toBe(true);
  });

  it("M11 the check is live: the same run with --cleanup-config-on-exit added loses the config at SIGTERM", async () => {
    requirePlexusBinary();
    const n = node();
    await installThenSigterm(n, ["--cleanup-config-on-exit"]);
    expect(existsSync(n.host("/etc/cni/net.d/00-plexus.conflist"))).toBe(false);
  });
});

describe("uninstall: `plexus uninstall` with deploy/uninstall/'s arguments", () => {
  it("M11 removes the config, the kubeconfig with its token and CA copies and the binary; the primary config and other files stay byte for byte; the state dir stays", async () => {
    requirePlexusBinary();
    const n = node();
    await installThenSigterm(n);
    const record = n.host("/var/lib/cni/plexus/records/abc-eth0.json");
    mkdirSync(dirname(record), { recursive: true });
    writeFileSync(record, "{}");
    const confDir = n.host("/etc/cni/net.d");
    expect(readdirSync(confDir).sort()).toEqual([
      "00-plexus.conflist",
      "10-primary.conflist",
      "99-other.conf",
      "plexus.d",
    ]);
    expect(readdirSync(join(confDir, "plexus.d")).sort()).toEqual([
      "ca.crt",
      "plexus.kubeconfig",
      "token",
    ]);
    // A temp file an installer killed mid-write left behind goes too.
    writeFileSync(join(confDir, ".00-plexus.conflist.tmp-12345-1-abc"), "partial");

    const args = rebase(uninstallCommand, n.root).filter((a) => a !== "--wait");
    const u = run(["uninstall", ...args]);
    expect(await u.exit, u.stderr()).toBe(0);
    expect(readdirSync(confDir).sort()).toEqual(["10-primary.conflist", "99-other.conf"]);
    expect(readFileSync(join(confDir, "10-primary.conflist"), "utf8")).toBe(PRIMARY);
    expect(readdirSync(n.host("/opt/cni/bin"))).toEqual(["bridge"]);
    expect(readFileSync(record, "utf8")).toBe("{}");
    expect(u.stderr()).toMatch(/state dir kept/);
    expect(u.stderr()).toContain("Plexus removed from this node");

    // Again: nothing left to do, still 0. Then --remove-state takes the records too.
    const again = run(["uninstall", ...args, "--remove-state"]);
    expect(await again.exit, again.stderr()).toBe(0);
    expect(existsSync(n.host("/var/lib/cni/plexus"))).toBe(false);
    expect(readdirSync(confDir).sort()).toEqual(["10-primary.conflist", "99-other.conf"]);
  });

  it("M11 as deploy/uninstall/ runs it (--wait): removes at once, then keeps running until SIGTERM, exit 0", async () => {
    requirePlexusBinary();
    const n = node();
    await installThenSigterm(n);
    const u = run(["uninstall", ...rebase(uninstallCommand, n.root)]);
    await waitFor(
      () => u.stderr().includes("waiting for SIGTERM"),
      10_000,
      "the uninstall to wait",
    );
    expect(existsSync(n.host("/etc/cni/net.d/00-plexus.conflist"))).toBe(false);
    expect(existsSync(n.host("/opt/cni/bin/plexus"))).toBe(false);
    expect(isAlive(u.child.pid!)).toBe(true);
    u.child.kill("SIGTERM");
    expect(await u.exit, u.stderr()).toBe(0);
  });

  it("a credentials dir holding someone else's file is left in place, with a warning; a relative path is a usage error (2)", async () => {
    requirePlexusBinary();
    const n = node();
    await installThenSigterm(n);
    writeFileSync(n.host("/etc/cni/net.d/plexus.d/notes.txt"), "mine");
    const args = rebase(uninstallCommand, n.root).filter((a) => a !== "--wait");
    const u = run(["uninstall", ...args]);
    expect(await u.exit, u.stderr()).toBe(0);
    expect(readdirSync(n.host("/etc/cni/net.d/plexus.d"))).toEqual(["notes.txt"]);
    expect(u.stderr()).toContain("holds files Plexus did not write");
    const bad = run(["uninstall", ...args, "--cni-conf-dir=etc/cni/net.d"]);
    expect(await bad.exit).toBe(2);
    expect(bad.stderr()).toContain("--cni-conf-dir must be an absolute path");
  });
});

describe("the installer never blocks on what sits at a path it reads (B72)", () => {
  const CREDENTIALS = "/etc/cni/net.d/plexus.d";
  const CONFLIST = "/etc/cni/net.d/00-plexus.conflist";
  const KUBECONFIG = `${CREDENTIALS}/plexus.kubeconfig`;
  /** Each path the installer reads, as (container path under the temp root, extra flags). */
  type Where = (n: ReturnType<typeof node>) => { fifo: string; extra: string[] };
  const cases: Array<[string, Where]> = [
    ["its conflist output", (n) => ({ fifo: n.host(CONFLIST), extra: [] })],
    ["its kubeconfig output", (n) => ({ fifo: n.host(KUBECONFIG), extra: [] })],
    ["its token copy", (n) => ({ fifo: n.host(`${CREDENTIALS}/token`), extra: [] })],
    ["--token-file", (n) => ({ fifo: flagPath(n, "--token-file"), extra: [] })],
    ["--ca-file", (n) => ({ fifo: flagPath(n, "--ca-file"), extra: [] })],
    [
      "--plexus-conf-file",
      (n) => {
        const fifo = join(n.root, "user.conf");
        return { fifo, extra: [`--plexus-conf-file=${fifo}`] };
      },
    ],
  ];

  function flagPath(nodeSetUp: ReturnType<typeof node>, flag: string): string {
    return join(
      nodeSetUp.root,
      installCommand.find((a) => a.startsWith(`${flag}=`))!.split("=")[1]!,
    );
  }

  it.each(cases)("B80 a FIFO at %s: SIGTERM ends the installer at once", async (_what, where) => {
    requirePlexusBinary();
    const n = node();
    const { fifo, extra } = where(n);
    mkdirSync(dirname(fifo), { recursive: true });
    rmSync(fifo, { force: true });
    execFileSync("mkfifo", [fifo]);
    const p = run(["install", ...rebase(installCommand, n.root), "--poll-interval=50", ...extra]);
    // Past start-up (flags read, first pass begun): the log's first line.
    await waitFor(() => p.stderr().length > 0, 20_000, "the installer's first log line");
    await new Promise((res) => setTimeout(res, 500));
    const signalled = Date.now();
    p.child.kill("SIGTERM");
    const hung = new Promise((res) => setTimeout(() => res("hung"), 5000));
    const code = await Promise.race([p.exit, hung]);
    expect(code, p.stderr()).not.toBe("hung");
    expect(Date.now() - signalled).toBeLessThan(5000);
    if (fifo.includes("/host/")) {
      // An output: replaced by the file the installer writes, the FIFO never read.
      expect(statSync(fifo).isFile(), p.stderr()).toBe(true);
      expect(code, p.stderr()).toBe(0);
    } else {
      // An input: refused with what was found there, never waited on.
      expect(p.stderr()).toContain("it is a FIFO, not a regular file");
    }
  });
});
