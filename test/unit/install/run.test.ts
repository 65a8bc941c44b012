/**
 * The installer's lifecycle in-process on temp dirs standing in for /etc/cni/net.d and
 * /opt/cni/bin (M11, N6.1, B49): waiting for the primary network and the readiness file, the
 * watch cases (primary changed or gone, Plexus's config deleted, renamed or edited, token
 * rotated), the bounded wait, and cleanup on termination. Short poll intervals keep it fast.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  resolveOptions,
  type InstallFlags,
  type InstallOptions,
} from "../../../src/install/options";
import { runInstall } from "../../../src/install/run";
import { waitFor } from "../../support/plexus-bin";
import { recordingLogger } from "./recording-logger";

let root: string;
let confDir: string;
let binDir: string;
let saDir: string;
const running: Array<{ abort: AbortController; done: Promise<number> }> = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "plx-install-"));
  confDir = join(root, "net.d");
  binDir = join(root, "bin");
  saDir = join(root, "sa");
  for (const d of [confDir, binDir, saDir]) mkdirSync(d);
  writeFileSync(join(root, "plexus-src"), "#!/bin/sh\necho fake plexus\n");
  writeFileSync(join(saDir, "token"), "token-1");
  writeFileSync(join(saDir, "ca.crt"), "ca-1");
});

afterEach(async () => {
  for (const r of running.splice(0)) {
    r.abort.abort();
    await r.done;
  }
  rmSync(root, { recursive: true, force: true });
});

function options(flags: Partial<InstallFlags> = {}): InstallOptions {
  const f: InstallFlags = {
    cniConfDir: confDir,
    cniBinDir: binDir,
    hostPrefix: "",
    kubeconfigFileHost: join(confDir, "plexus.d", "plexus.kubeconfig"),
    tokenFile: join(saDir, "token"),
    caFile: join(saDir, "ca.crt"),
    binFile: join(root, "plexus-src"),
    networkName: "plexus-cni-network",
    primaryConfigTimeout: "10",
    pollInterval: "40",
    installerLogLevel: "info",
    ...flags,
  };
  return resolveOptions(f, {
    KUBERNETES_SERVICE_HOST: "10.96.0.1",
    KUBERNETES_SERVICE_PORT: "443",
  });
}

function start(options: InstallOptions) {
  const log = recordingLogger();
  const abort = new AbortController();
  const done = runInstall(options, { log, signal: abort.signal });
  running.push({ abort, done });
  return { log, abort, done };
}

const primaryText = (cniVersion = "1.0.0", extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    cniVersion,
    name: "mynet",
    plugins: [
      { type: "bridge", bridge: "plx0", ...extra },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
  });
const plexusConf = () => join(confDir, "00-plexus.conflist");
const readConf = () =>
  JSON.parse(readFileSync(plexusConf(), "utf8")) as {
    cniVersion: string;
    plugins: Array<Record<string, unknown>>;
  };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("plexus install (in-process, temp dirs)", () => {
  it("M11 --once installs binary (0755), config (0600) and kubeconfig with a token file, then exits 0", async () => {
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText("0.4.0"));
    const { done, log } = start(options({ once: true, cniDir: join(root, "state") }));
    expect(await done).toBe(0);
    expect(statSync(join(binDir, "plexus")).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(binDir, "plexus"), "utf8")).toContain("fake plexus");
    expect(statSync(plexusConf()).mode & 0o777).toBe(0o600);
    const c = readConf();
    expect(c.cniVersion).toBe("0.4.0");
    expect(c.plugins[0]).toMatchObject({
      type: "plexus",
      clusterNetwork: join(confDir, "10-bridge.conflist"),
      kubeconfig: join(confDir, "plexus.d", "plexus.kubeconfig"),
      capabilities: { portMappings: true },
      cniDir: join(root, "state"),
    });
    expect(readFileSync(join(confDir, "plexus.d", "token"), "utf8")).toBe("token-1");
    expect(
      JSON.parse(readFileSync(join(confDir, "plexus.d", "plexus.kubeconfig"), "utf8")).users[0].user
        .tokenFile,
    ).toBe(join(confDir, "plexus.d", "token"));
    expect(existsSync(join(root, "state"))).toBe(true);
    expect(log.text()).toMatch(/config installed/);
  });

  it("M11 N6.1 with no primary config it waits (logged) and proceeds when one appears", async () => {
    const { done, log } = start(options({ once: true }));
    await sleep(250);
    expect(existsSync(plexusConf())).toBe(false);
    expect(log.text()).toMatch(/waiting for the primary network.*no usable primary network config/);
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText());
    expect(await done).toBe(0);
    expect(readConf().plugins[0]!.clusterNetwork).toBe(join(confDir, "10-bridge.conflist"));
  });

  it("M11 the wait is bounded: no primary within --primary-config-timeout → exit 1 with an error line", async () => {
    const { done, log } = start(options({ once: true, primaryConfigTimeout: "0.3" }));
    expect(await done).toBe(1);
    expect(
      log.lines.some(
        (l) => l.level === "error" && /not ready within --primary-config-timeout/.test(l.msg),
      ),
    ).toBe(true);
    expect(existsSync(plexusConf())).toBe(false);
  });

  it("B49 bad primary configs are refused with a clear log line each, and no config is written from them", async () => {
    writeFileSync(join(confDir, "01-empty.conf"), "");
    writeFileSync(join(confDir, "02-garbage.conflist"), "{oops");
    writeFileSync(
      join(confDir, "03-noplugins.conflist"),
      JSON.stringify({ cniVersion: "1.0.0", name: "x", plugins: [] }),
    );
    writeFileSync(
      join(confDir, "04-plexus-copy.conflist"),
      JSON.stringify({ cniVersion: "1.0.0", name: "p", plugins: [{ type: "plexus" }] }),
    );
    writeFileSync(join(confDir, ".00-plexus.conflist.tmp-1-1-x.conflist"), primaryText());
    const { done, log } = start(options({ once: true, primaryConfigTimeout: "0.4" }));
    expect(await done).toBe(1);
    const refused = log.lines.filter(
      (l) => l.level === "warn" && l.msg.startsWith("primary config candidate refused"),
    );
    for (const name of [
      "01-empty.conf",
      "02-garbage.conflist",
      "03-noplugins.conflist",
      "04-plexus-copy.conflist",
      ".00-plexus.conflist.tmp-1-1-x.conflist",
    ]) {
      expect(
        refused.filter((l) => l.msg.includes(name)),
        `one log line for ${name}`,
      ).toHaveLength(1);
    }
    expect(existsSync(plexusConf())).toBe(false);
  });

  it("N6.1 the config appears only once the primary config AND the readiness file exist, and goes when the file goes", async () => {
    const ready = join(root, "ready");
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText());
    const { log } = start(options({ readinessIndicatorFile: ready }));
    await sleep(250);
    expect(existsSync(plexusConf())).toBe(false);
    expect(log.text()).toMatch(/readiness indicator file .*ready does not exist/);
    writeFileSync(ready, "");
    await waitFor(() => existsSync(plexusConf()), 3000, "config after the readiness file appeared");
    expect(readConf().plugins[0]!.readinessindicatorfile).toBe(ready);
    unlinkSync(ready);
    await waitFor(
      () => !existsSync(plexusConf()),
      3000,
      "config removed after the readiness file went",
    );
    expect(log.text()).toMatch(/Plexus config removed until it is \(N6\.1\)/);
  });

  it("N6.1 a stale config from before a reboot is removed while the primary network is not ready", async () => {
    writeFileSync(
      plexusConf(),
      JSON.stringify({ cniVersion: "1.0.0", name: "old", plugins: [{ type: "plexus" }] }),
    );
    const { log } = start(options());
    await waitFor(() => !existsSync(plexusConf()), 3000, "stale config removed");
    expect(log.text()).toMatch(/primary network not ready/);
  });

  it("M11 watch: primary changed → regenerated; replaced by another file → regenerated; primary gone → config removed", async () => {
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText("0.4.0"));
    const { log } = start(options());
    await waitFor(() => existsSync(plexusConf()), 3000, "config");
    expect(readConf().cniVersion).toBe("0.4.0");
    writeFileSync(
      join(confDir, "10-bridge.conflist"),
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "mynet",
        plugins: [{ type: "bridge", capabilities: { ips: true } }],
      }),
    );
    await waitFor(() => readConf().cniVersion === "1.0.0", 3000, "regenerated config");
    expect(readConf().plugins[0]!.capabilities).toEqual({ ips: true });
    expect(log.text()).toMatch(/primary config .*10-bridge\.conflist changed: config regenerated/);
    // Another agent (the primary CNI's own installer) renames its config: Plexus follows it.
    renameSync(join(confDir, "10-bridge.conflist"), join(confDir, "05-renamed.conflist"));
    await waitFor(
      () => readConf().plugins[0]!.clusterNetwork === join(confDir, "05-renamed.conflist"),
      3000,
      "config following the renamed primary",
    );
    expect(log.text()).toMatch(/primary config is now .*05-renamed\.conflist/);
    unlinkSync(join(confDir, "05-renamed.conflist"));
    await waitFor(() => !existsSync(plexusConf()), 3000, "config removed with the primary gone");
  });

  it("M11 watch: Plexus's config deleted, renamed or edited by another agent → restored, and logged", async () => {
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText());
    const { log } = start(options());
    await waitFor(() => existsSync(plexusConf()), 3000, "config");
    const good = readFileSync(plexusConf(), "utf8");
    unlinkSync(plexusConf());
    await waitFor(() => existsSync(plexusConf()), 3000, "config restored after deletion");
    expect(readFileSync(plexusConf(), "utf8")).toBe(good);
    expect(log.text()).toMatch(/deleted or renamed by another agent: restored/);
    renameSync(plexusConf(), join(confDir, "00-plexus.conflist.bak"));
    await waitFor(() => existsSync(plexusConf()), 3000, "config restored after a rename");
    writeFileSync(plexusConf(), "{}");
    await waitFor(
      () => readFileSync(plexusConf(), "utf8") === good,
      3000,
      "config restored after an edit",
    );
    expect(log.text()).toMatch(/modified by another agent: restored/);
    // The kubeconfig too.
    unlinkSync(join(confDir, "plexus.d", "plexus.kubeconfig"));
    await waitFor(
      () => existsSync(join(confDir, "plexus.d", "plexus.kubeconfig")),
      3000,
      "kubeconfig restored",
    );
  });

  it("M11 watch: a rotated service-account token is copied to the node's token file (the kubeconfig stays the same)", async () => {
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText());
    const { log } = start(options());
    const tokenCopy = join(confDir, "plexus.d", "token");
    await waitFor(() => existsSync(tokenCopy), 3000, "token copy");
    const kubeconfig = readFileSync(join(confDir, "plexus.d", "plexus.kubeconfig"), "utf8");
    // A projected volume swaps the file; write-then-rename stands in for that.
    writeFileSync(join(saDir, ".token.new"), "token-2");
    renameSync(join(saDir, ".token.new"), join(saDir, "token"));
    await waitFor(
      () => readFileSync(tokenCopy, "utf8") === "token-2",
      3000,
      "refreshed token copy",
    );
    expect(statSync(tokenCopy).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(confDir, "plexus.d", "plexus.kubeconfig"), "utf8")).toBe(kubeconfig);
    expect(log.text()).toMatch(/token rotated: copy refreshed/);
  });

  it("M11 termination with --cleanup-config-on-exit removes the config; without it the config stays", async () => {
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText());
    const a = start(options({ cleanupConfigOnExit: true }));
    await waitFor(() => existsSync(plexusConf()), 3000, "config");
    a.abort.abort();
    expect(await a.done).toBe(0);
    expect(existsSync(plexusConf())).toBe(false);
    expect(existsSync(join(binDir, "plexus"))).toBe(true);
    const b = start(options());
    await waitFor(() => existsSync(plexusConf()), 3000, "config");
    b.abort.abort();
    expect(await b.done).toBe(0);
    expect(existsSync(plexusConf())).toBe(true);
  });

  it("M11 a missing --cni-bin-dir fails at once with exit 1 naming the flag", async () => {
    const { done, log } = start(options({ cniBinDir: join(root, "nope"), once: true }));
    expect(await done).toBe(1);
    expect(log.text()).toMatch(/--cni-bin-dir .*nope is not a directory/);
  });
});

describe("M1 the installer names unknown keys of the configs it reads", () => {
  it("M1 a conflist-level key of the primary config that libcni does not read is logged with a suggestion", async () => {
    writeFileSync(
      join(confDir, "10-bridge.conflist"),
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "mynet",
        disableChek: true,
        plugins: [{ type: "bridge" }],
      }),
    );
    const { done, log } = start(options({ once: true }));
    expect(await done).toBe(0);
    expect(log.text()).toMatch(
      /`disableChek` is not a conflist key \(libcni reads no such key\); did you mean `disableCheck`\?/,
    );
  });
});

describe("M11 no silent default network only: credentials", () => {
  it.each([
    [
      "the token",
      () => unlinkSync(join(saDir, "token")),
      /service-account token .*token is missing or empty/,
    ],
    [
      "the CA",
      () => unlinkSync(join(saDir, "ca.crt")),
      /service-account CA .*ca\.crt is missing or empty/,
    ],
  ])(
    "M11 without %s: exit 1 naming what is missing, and no Plexus config written",
    async (_what, remove, message) => {
      writeFileSync(join(confDir, "10-bridge.conflist"), primaryText());
      remove();
      const { done, log } = start(options({ once: true }));
      expect(await done).toBe(1);
      expect(log.text()).toMatch(message);
      expect(log.text()).toMatch(/no Plexus config written \(pass --without-kubernetes/);
      expect(existsSync(plexusConf())).toBe(false);
    },
  );

  it("M11 without an API server (no --api-server, no in-cluster env): exit 1 naming both, no config", async () => {
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText());
    const f = { ...options({ once: true }) };
    delete f.apiServer;
    const { done, log } = start(f);
    expect(await done).toBe(1);
    expect(log.text()).toMatch(
      /no Kubernetes API server: neither --api-server nor KUBERNETES_SERVICE_HOST/,
    );
    expect(existsSync(plexusConf())).toBe(false);
  });

  it("M11 --without-kubernetes: no credentials needed; the config says withoutKubernetes and has no kubeconfig", async () => {
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText());
    unlinkSync(join(saDir, "token"));
    const { done, log } = start(options({ once: true, withoutKubernetes: true }));
    expect(await done).toBe(0);
    expect(readConf().plugins[0]).toMatchObject({ type: "plexus", withoutKubernetes: true });
    expect(readConf().plugins[0]).not.toHaveProperty("kubeconfig");
    expect(log.text()).toMatch(/--without-kubernetes: the plugin config has no kubeconfig/);
  });

  it("M11 token gone after install: the config keeps its kubeconfig (the last copy), logged as an error", async () => {
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText());
    const { log } = start(options());
    await waitFor(() => existsSync(plexusConf()), 3000, "config");
    unlinkSync(join(saDir, "token"));
    writeFileSync(join(confDir, "10-bridge.conflist"), primaryText("0.4.0"));
    await waitFor(() => readConf().cniVersion === "0.4.0", 3000, "regenerated config");
    expect(readConf().plugins[0]!.kubeconfig).toBe(join(confDir, "plexus.d", "plexus.kubeconfig"));
    expect(log.text()).toMatch(
      /token .* is missing or empty; the kubeconfig keeps the last token copied/,
    );
  });
});

describe("M11 a user-supplied config (--plexus-conf-file, Multus's --multus-conf-file)", () => {
  const userFile = () => join(root, "my-plexus.conf");
  const writeUser = (value: Record<string, unknown>) =>
    writeFileSync(userFile(), JSON.stringify(value));

  it("M11 M1 a valid single config is validated and installed as 00-plexus.conflist; unknown keys are logged with a suggestion", async () => {
    writeUser({
      CNIVersion: "1.0.0",
      name: "mine",
      Type: "plexus",
      ClusterNetwork: "/etc/cni/net.d/10-bridge.conflist",
      kubeconfig: join(confDir, "plexus.d", "plexus.kubeconfig"),
      clusterNetwrok: "typo",
      socketDir: "/run/multus",
    });
    const { done, log } = start(options({ once: true, plexusConfFile: userFile() }));
    expect(await done).toBe(0);
    const installed = JSON.parse(readFileSync(plexusConf(), "utf8"));
    expect(installed).toMatchObject({
      cniVersion: "1.0.0",
      name: "mine",
      plugins: [{ Type: "plexus" }],
    });
    expect(log.text()).toMatch(
      /`clusterNetwrok` is not a Plexus key; did you mean `clusterNetwork`\?/,
    );
    expect(log.text()).toMatch(
      /`socketDir` is a key of Multus's thick-plugin daemon: accepted, has no effect here/,
    );
    expect(log.text()).toMatch(/user-supplied Plexus config validated and installed/);
  });

  it.each([
    ["not JSON", "{nope", /is not valid JSON/],
    [
      "not a Plexus config",
      JSON.stringify({ cniVersion: "1.0.0", name: "x", type: "bridge" }),
      /not a Plexus config/,
    ],
    [
      "no network",
      JSON.stringify({ cniVersion: "1.0.0", name: "x", type: "plexus", kubeconfig: "/k" }),
      /names no network/,
    ],
    [
      "an auxiliary chain that can never run",
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "x",
        type: "plexus",
        clusterNetwork: "cbr0",
        auxiliaryCNIChainName: "c",
        withoutKubernetes: true,
      }),
      /needs .{1,3}clusterNetwork.{1,3} to be a file path/,
    ],
    [
      "no way to Kubernetes",
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "x",
        type: "plexus",
        clusterNetwork: "/a/b.conf",
      }),
      /has no .{1,3}kubeconfig.{1,3} \(nor .{1,3}fileClusterDir/,
    ],
    [
      "a kubeconfig that is not there",
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "x",
        type: "plexus",
        clusterNetwork: "/a/b.conf",
        kubeconfig: "/nope/kc",
      }),
      /its kubeconfig \/nope\/kc does not exist on the node/,
    ],
  ])(
    "M11 one that cannot work (%s) is refused: exit 1, nothing installed",
    async (_what, text, message) => {
      writeFileSync(userFile(), text);
      const { done, log } = start(options({ once: true, plexusConfFile: userFile() }));
      expect(await done).toBe(1);
      expect(log.text()).toMatch(message);
      expect(existsSync(plexusConf())).toBe(false);
    },
  );
});
