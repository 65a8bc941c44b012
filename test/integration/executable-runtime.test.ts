/**
 * The Node APIs dist/plexus relies on, proven on the executable itself (a Bun single executable,
 * so Node's semantics come from Bun's node: modules). What other files already prove through
 * dist/plexus is listed in docs/benchmarks.md ("What the executable relies on, proven on it");
 * this file adds what they did not:
 * - HTTPS with the kubeconfig's CA as the only trust anchor (passed with every connection)
 *   and the TLS SNI name (tls-server-name, the URL's host name, none for an IP);
 * - stdout written whole before process.exit through a pipe that is not read at once;
 * - the installer woken by fs.watch alone, SIGTERM ending it, and its copy of itself
 *   (process.execPath) when --bin-file is not given;
 * - `plexus daemon`: its unix-socket HTTP server, the CNI binary's client of it, SIGTERM.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  type FakeApiServer,
  otherCaPem,
  startFakeApiServer,
  writeKubeconfig,
} from "../support/fake-apiserver";
import {
  cniError,
  PLEXUS_BIN,
  singleJson,
  TEST_PATH,
  unixSocketStatus,
  waitFor,
} from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const STATUS = "k8s.v1.cni.cncf.io/network-status";
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";

async function apiWithPod(): Promise<FakeApiServer> {
  const api = await startFakeApiServer();
  onTestFinished(() => api.close());
  api.addPod({
    metadata: { namespace: "app", name: "web", uid: "uid-web" },
    spec: { nodeName: "node-1" },
  });
  return api;
}

/** Requests other than watches since `from`, as "METHOD path". */
function calls(api: FakeApiServer, from = 0): string[] {
  return api.requests
    .slice(from)
    .filter((r) => !/[?&]watch=(1|true)/.test(r.query))
    .map((r) => `${r.method} ${r.path}`);
}

/** A kubeconfig for `api` with its `server:` and extra cluster lines changed. */
function kubeconfigWith(
  api: FakeApiServer,
  name: string,
  options: { server?: string; caPem?: string; clusterLines?: string[] },
): string {
  const path = writeKubeconfig(
    { url: api.url, token: api.token, caPem: options.caPem ?? api.caPem },
    { dir: ctx.sb.root, fileName: name },
  );
  let text = readFileSync(path, "utf8");
  if (options.server) text = text.replace(`server: ${api.url}`, `server: ${options.server}`);
  if (options.clusterLines)
    text = text.replace(/^( {4}server: .*)$/m, (l) => [l, ...options.clusterLines!].join("\n"));
  writeFileSync(path, text);
  return path;
}

function addThrough(kubeconfig: string, extra: Record<string, unknown> = {}) {
  const { sb } = ctx;
  const conf = sb.config([sb.delegate("net-a")], {
    kubeconfig,
    apiRequestTimeoutSeconds: 2,
    apiTotalTimeoutSeconds: 4,
    ...extra,
  });
  return sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
}

/** A kubeconfig for `api` whose user runs `plugin` (an `exec` credential plugin). */
function execKubeconfig(api: FakeApiServer, name: string, plugin: string): string {
  const path = join(ctx.sb.root, name);
  const ca = Buffer.from(api.caPem).toString("base64");
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      `clusters: [{name: c, cluster: {server: "${api.url}", certificate-authority-data: ${ca}}}]`,
      `users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ` +
        `${plugin}, interactiveMode: Never}}}]`,
      "contexts: [{name: x, context: {cluster: c, user: u}}]",
      "current-context: x",
    ].join("\n"),
  );
  return path;
}

// The credential plugins run in the executable's second bundle (the commands' one): the CNI
// path reaches it by name, and its failures keep their CNI code on the way back.
describe("M1 a credential plugin's kubeconfig through dist/plexus", () => {
  it("M1 the plugin's token authenticates the ADD; a plugin that fails is code 7 naming the file", async () => {
    const api = await apiWithPod();
    const plugin = join(ctx.sb.root, "cred.sh");
    const credential = { apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential" };
    const answer = JSON.stringify({ ...credential, status: { token: api.token } });
    writeFileSync(plugin, `#!/bin/sh\necho '${answer}'\n`, { mode: 0o755 });
    const r = await addThrough(execKubeconfig(api, "exec.kubeconfig", plugin));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(calls(api)).toContain("PATCH /api/v1/namespaces/app/pods/web/status");

    const before = api.requests.length;
    const failing = join(ctx.sb.root, "cred-fails.sh");
    writeFileSync(failing, "#!/bin/sh\necho 'no credentials here' >&2\nexit 1\n", { mode: 0o755 });
    const broken = execKubeconfig(api, "failing.kubeconfig", failing);
    const err = cniError(await addThrough(broken));
    expect(err.code).toBe(7);
    expect(err.msg).toContain(broken);
    expect(err.msg).toMatch(/credentials cannot be loaded/);
    expect(calls(api, before)).toEqual([]);
  });
});

describe("HTTPS to the API server from dist/plexus", () => {
  it("M1 the kubeconfig's CA is the only trust anchor: the pod is read and its status written; another CA is refused with 104 before any request", async () => {
    const api = await apiWithPod();
    const r = await addThrough(writeKubeconfig(api, { dir: ctx.sb.root }));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(calls(api)).toEqual([
      "GET /api/v1/namespaces/app/pods/web",
      "PATCH /api/v1/namespaces/app/pods/web/status",
      "POST /api/v1/namespaces/app/events",
    ]);
    expect(
      JSON.parse(
        (api.getPod("app", "web")!.metadata.annotations as Record<string, string>)[STATUS]!,
      ),
    ).toMatchObject([{ name: "net-a", interface: "eth0" }]);

    const dir = join(ctx.sb.root, "other-ca");
    mkdirSync(dir);
    const otherCa = otherCaPem(dir);
    const before = api.requests.length;
    const err = cniError(
      await addThrough(kubeconfigWith(api, "other-ca.kubeconfig", { caPem: otherCa })),
    );
    expect(err.code).toBe(104);
    expect(err.msg).toMatch(/certificate|self.signed|verify/i);
    expect(calls(api, before)).toEqual([]);

    // The runtime's environment cannot turn verification off (the token would go to an impostor).
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-b")], {
      kubeconfig: kubeconfigWith(api, "other-ca-2.kubeconfig", { caPem: otherCa }),
      apiRequestTimeoutSeconds: 2,
      apiTotalTimeoutSeconds: 4,
    });
    const insecureEnv = cniError(
      await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS, NODE_TLS_REJECT_UNAUTHORIZED: "0" }),
    );
    expect(insecureEnv.code).toBe(104);
    // Nor can the host's CA settings naming the CA that signed this server, which the kubeconfig
    // does not name (an impostor's): the kubeconfig's CA is the process's only trust anchor.
    const impostorCa = join(dir, "server-ca.pem");
    writeFileSync(impostorCa, api.caPem);
    const widened = cniError(
      await sb.run("ADD", conf, {
        CNI_ARGS: POD_ARGS,
        NODE_EXTRA_CA_CERTS: impostorCa,
        SSL_CERT_FILE: impostorCa,
      }),
    );
    expect(widened.code).toBe(104);
    expect(calls(api, before)).toEqual([]);
  });

  it("M1 proxy settings in the runtime's environment are not followed: the API server is reached directly", async () => {
    const api = await apiWithPod();
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a")], {
      kubeconfig: writeKubeconfig(api, { dir: sb.root, fileName: "proxy.kubeconfig" }),
      apiRequestTimeoutSeconds: 2,
      apiTotalTimeoutSeconds: 4,
    });
    // Port 9 on loopback: nothing listens there, so a request sent to this "proxy" fails.
    const proxy = "http://127.0.0.1:9";
    const r = await sb.run("ADD", conf, {
      CNI_ARGS: POD_ARGS,
      HTTPS_PROXY: proxy,
      https_proxy: proxy,
      HTTP_PROXY: proxy,
      http_proxy: proxy,
      ALL_PROXY: proxy,
    });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(calls(api)).toEqual([
      "GET /api/v1/namespaces/app/pods/web",
      "PATCH /api/v1/namespaces/app/pods/web/status",
      "POST /api/v1/namespaces/app/events",
    ]);
  });

  it("M1 SNI: tls-server-name is sent and checked against the certificate; a URL's host name is sent, an IP literal sends none; a name the certificate lacks is 104", async () => {
    const api = await apiWithPod();
    const port = new URL(api.url).port;
    const sniOfAdd = async (kubeconfig: string) => {
      const before = api.requests.length;
      const r = await addThrough(kubeconfig);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const seen = api.requests.slice(before);
      expect(seen.length).toBeGreaterThan(0);
      return [...new Set(seen.map((q) => q.servername ?? "(none)"))];
    };
    // The server's certificate is for IP:127.0.0.1 and DNS:localhost (test/support/tls/README.md).
    expect(await sniOfAdd(kubeconfigWith(api, "ip.kubeconfig", {}))).toEqual(["(none)"]);
    expect(
      await sniOfAdd(
        kubeconfigWith(api, "sni.kubeconfig", { clusterLines: ["    tls-server-name: localhost"] }),
      ),
    ).toEqual(["localhost"]);
    expect(
      await sniOfAdd(
        kubeconfigWith(api, "host.kubeconfig", { server: `https://localhost:${port}` }),
      ),
    ).toEqual(["localhost"]);
    const before = api.requests.length;
    const err = cniError(
      await addThrough(
        kubeconfigWith(api, "wrong.kubeconfig", {
          clusterLines: ["    tls-server-name: wrong.invalid"],
        }),
      ),
    );
    expect(err.code).toBe(104);
    expect(err.msg).toMatch(/wrong\.invalid|altname|hostname|certificate/i);
    expect(calls(api, before)).toEqual([]);
  });
});

describe("C2.2 stdout and the exit status", () => {
  it("C2.2 a 500 KiB ADD result is written whole before exit through a pipe whose reader starts 300 ms late; an error still exits 1 with one JSON document", async () => {
    const { sb } = ctx;
    const routes = Array.from({ length: 14_000 }, (_, i) => ({
      dst: `10.${(i >> 8) & 255}.${i & 255}.0/24`,
      gw: "10.1.2.1",
    }));
    const result = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", sandbox: "/proc/self/ns/net" }],
      ips: [{ address: "10.1.2.3/24", interface: 0 }],
      routes,
    };
    const conf = sb.config([
      sb.delegate("net-a", { behaviours: { ADD: { do: "result", result } } }),
    ]);
    const slowReader = (stdin: string) =>
      spawnSync("bash", ["-c", 'set -o pipefail; "$0" | { sleep 0.3; cat; }', PLEXUS_BIN], {
        input: stdin,
        env: sb.env("ADD") as NodeJS.ProcessEnv,
        cwd: sb.root,
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
        timeout: 20_000,
      });
    const ok = slowReader(JSON.stringify(conf));
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout.length).toBeGreaterThan(500 * 1024);
    expect((singleJson(ok.stdout).routes as unknown[]).length).toBe(14_000);

    const bad = slowReader("{not json");
    expect(bad.status).toBe(1);
    expect(singleJson(bad.stdout)).toMatchObject({ code: 6 });
  });
});

interface InstallDirs {
  confDir: string;
  binDir: string;
  primary: string;
}

function installDirs(): InstallDirs {
  const root = ctx.sb.root;
  const d = {
    confDir: join(root, "net.d"),
    binDir: join(root, "opt-bin"),
    primary: join(root, "net.d", "10-bridge.conflist"),
  };
  for (const p of [d.confDir, d.binDir, join(root, "sa")]) mkdirSync(p, { recursive: true });
  writeFileSync(join(root, "sa", "token"), "token-1");
  writeFileSync(join(root, "sa", "ca.crt"), "ca-1");
  writeFileSync(
    d.primary,
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "primary-net",
      plugins: [{ type: "bridge", bridge: "cni0" }],
    }),
  );
  return d;
}

function installArgs(dirs: InstallDirs, extra: string[]): string[] {
  const root = ctx.sb.root;
  return [
    "install",
    "--host-prefix=",
    `--cni-conf-dir=${dirs.confDir}`,
    `--cni-bin-dir=${dirs.binDir}`,
    `--kubeconfig-file-host=${join(dirs.confDir, "plexus.d", "plexus.kubeconfig")}`,
    `--token-file=${join(root, "sa", "token")}`,
    `--ca-file=${join(root, "sa", "ca.crt")}`,
    `--cni-dir=${join(root, "cni")}`,
    "--primary-config-timeout=10",
    ...extra,
  ];
}

const INSTALL_ENV = {
  PATH: TEST_PATH,
  KUBERNETES_SERVICE_HOST: "10.219.255.1",
  KUBERNETES_SERVICE_PORT: "443",
};
const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null
      ? resolve(child.exitCode)
      : child.once("exit", (code) => resolve(code)),
  );
}

function track(child: ChildProcess): { stderr: () => string } {
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exitOf(child);
    }
  });
  return { stderr: () => stderr };
}

describe("plexus install on the executable", () => {
  it("M11 without --bin-file a copy of the executable installs itself (process.execPath), whole and executable", async () => {
    const d = installDirs();
    const exe = join(ctx.sb.root, "elsewhere", "plexus-image-copy");
    mkdirSync(join(ctx.sb.root, "elsewhere"));
    copyFileSync(PLEXUS_BIN, exe);
    spawnSync("chmod", ["755", exe]);
    const r = spawnSync(exe, installArgs(d, ["--once"]), {
      env: INSTALL_ENV,
      cwd: "/",
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe("");
    const installed = join(d.binDir, "plexus");
    expect(sha(installed)).toBe(sha(exe));
    const v = spawnSync(installed, [], {
      env: { CNI_COMMAND: "VERSION" },
      input: "",
      encoding: "utf8",
    });
    expect(singleJson(v.stdout)).toHaveProperty("supportedVersions");
  });

  it("M11 fs.watch alone wakes the installer (poll interval 10 min): a changed primary config is regenerated within seconds; SIGTERM ends it with exit 0", async () => {
    const d = installDirs();
    const confPath = join(d.confDir, "00-plexus.conflist");
    const child = spawn(
      PLEXUS_BIN,
      installArgs(d, [`--bin-file=${PLEXUS_BIN}`, "--poll-interval=600000"]),
      {
        env: INSTALL_ENV,
        cwd: "/",
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const out = track(child);
    let stdout = "";
    child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
    await waitFor(
      () => existsSync(confPath),
      15_000,
      `the installer's first config (stderr: ${out.stderr()})`,
    );
    // Let the installer settle into its wait, then change the primary network.
    await new Promise((r) => setTimeout(r, 300));
    const primary = JSON.parse(readFileSync(d.primary, "utf8"));
    writeFileSync(d.primary, JSON.stringify({ ...primary, cniVersion: "0.4.0" }));
    await waitFor(
      () => JSON.parse(readFileSync(confPath, "utf8")).cniVersion === "0.4.0",
      5000,
      "the config regenerated on the file event",
    );
    child.kill("SIGTERM");
    expect(await exitOf(child)).toBe(0);
    expect(out.stderr()).toMatch(/signal received/);
    expect(stdout).toBe("");
  });
});

describe("plexus daemon on the executable", () => {
  it("its unix-socket HTTP server answers the CNI binary's client: an ADD reads nothing from the API; SIGTERM ends it with exit 0 and removes the socket", async () => {
    const { sb } = ctx;
    const api = await apiWithPod();
    const kubeconfig = writeKubeconfig(api, { dir: sb.root });
    const socket = join(sb.root, "run", "plexus.sock");
    const daemon = spawn(
      PLEXUS_BIN,
      [
        "daemon",
        "--kubeconfig",
        kubeconfig,
        "--node-name",
        "node-1",
        "--socket",
        socket,
        "--log-level",
        "info",
      ],
      { cwd: "/", stdio: ["ignore", "pipe", "pipe"] },
    );
    const out = track(daemon);
    await expect
      .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 15_000, interval: 20 })
      .toBe(200);

    const before = api.requests.length;
    const conf = sb.config([sb.delegate("net-a")], { kubeconfig, daemonSocket: socket });
    const r = await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/daemon unavailable/);
    await expect
      .poll(() => calls(api, before))
      .toEqual([
        "PATCH /api/v1/namespaces/app/pods/web/status",
        "POST /api/v1/namespaces/app/events",
      ]);

    daemon.kill("SIGTERM");
    expect(await exitOf(daemon), out.stderr()).toBe(0);
    expect(existsSync(socket)).toBe(false);
  });
});
