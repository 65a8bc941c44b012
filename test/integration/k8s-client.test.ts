/**
 * The API-server KubeApi (src/kubeapi/rest-kube.ts; client-node only for credential plugins)
 * against the fake API server over HTTPS: config loading (M1, B15, B50), name validation (B20),
 * every API failure of docs/conformance.md B34–B43, the UID precondition (M8) and events (M9).
 * Short timeouts (200 ms per request) keep each fault test well under a second.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { Code } from "../../src/cni/errors";
import type { KubeClientOptions as ClientNodeOptions } from "../../src/kubeapi/rest-kube";
import { hasKubernetesConfig, loadKubeApi } from "../../src/kubeapi/index";
import type { KubeApi } from "../../src/cluster/kube-api";
import { SERVICE_ACCOUNT_DIR } from "../../src/config/defaults";
import { loadKubeSource } from "../../src/kubeapi/kubeconfig";
import { NETWORK_STATUS_ANNOTATION } from "../../src/npwg/types";
import {
  clientCertFiles,
  type FakeApiServer,
  otherCaPem,
  startFakeApiServer,
  writeKubeconfig,
} from "../support/fake-apiserver";
import { recordingLogger } from "../fakes/fake-exec";
import { bunKubeApi } from "../support/bun-kube";

/**
 * Quick retries, and a request timeout no loaded machine reaches: a test that counts requests
 * must not see a retry because one request was slow. Tests of the timeout itself use SHORT.
 */
const FAST: ClientNodeOptions = {
  retry: {
    requestTimeoutMs: 5_000,
    totalTimeoutMs: 10_000,
    baseDelayMs: 10,
    maxDelayMs: 40,
    maxAttempts: 4,
  },
};
/** A request timeout short enough to test hangs with. */
const SHORT = { ...FAST.retry, requestTimeoutMs: 200, totalTimeoutMs: 1500 };
const POD_PATH = "/api/v1/namespaces/ns1/pods/p1";
const STATUS_PATH = `${POD_PATH}/status`;

const opened: KubeApi[] = [];
afterEach(async () => {
  for (const k of opened.splice(0)) await k.close?.();
});

/**
 * Where the client runs: in this Node process (node:https), or in a Bun process as the executable
 * builds it for a CNI call (Bun's fetch, test/support/bun-kube.ts). The transport's suites run on
 * both.
 */
type Runtime = "node" | "bun";
let runtime: Runtime = "node";

function describeBothRuntimes(name: string, body: (rt: Runtime) => void): void {
  for (const rt of ["node", "bun"] as const)
    describe(`${name} [${rt === "node" ? "Node's https" : "Bun's fetch, as the executable"}]`, () => {
      beforeAll(() => {
        runtime = rt;
      });
      afterAll(() => {
        runtime = "node";
      });
      body(rt);
    });
}

async function clientFor(
  server: Pick<FakeApiServer, "url" | "caPem" | "token">,
  options: ClientNodeOptions = FAST,
  kubeconfig = writeKubeconfig(server),
): Promise<KubeApi> {
  const kube =
    runtime === "bun"
      ? await bunKubeApi(kubeconfig, options)
      : await loadKubeApi({ kubeconfig }, { client: options });
  if (!kube) throw new Error("no client");
  opened.push(kube);
  return kube;
}

async function withCluster(
  fn: (s: FakeApiServer, kube: KubeApi) => Promise<void>,
  options: ClientNodeOptions = FAST,
) {
  await using s = await startFakeApiServer();
  s.addPod({
    metadata: { name: "p1", namespace: "ns1", uid: "uid-1", annotations: { keep: "me" } },
  });
  s.addNad({
    metadata: { name: "net-a", namespace: "ns1" },
    spec: { config: '{"cniVersion":"1.0.0","type":"bridge"}' },
  });
  await fn(s, await clientFor(s, options));
}

/** Resolves to the rejection (so a test can inspect code and message), fails if it resolved. */
async function failure(pending: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await pending;
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error("expected a failure");
}

const elapsed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const r = await fn();
  return [r, performance.now() - t0];
};

describeBothRuntimes("reads and writes through the REST client", () => {
  it("getPod returns the trimmed pod; getNad the NAD, undefined on 404 (B28)", async () => {
    await withCluster(async (s, kube) => {
      const pod = await kube.getPod("ns1", "p1");
      expect(pod).toEqual({
        metadata: {
          name: "p1",
          namespace: "ns1",
          uid: "uid-1",
          resourceVersion: expect.any(String),
          annotations: { keep: "me" },
        },
        spec: { nodeName: "node-1" },
      });
      expect(await kube.getNad("ns1", "net-a")).toMatchObject({
        kind: "NetworkAttachmentDefinition",
        metadata: { name: "net-a", namespace: "ns1" },
        spec: { config: '{"cniVersion":"1.0.0","type":"bridge"}' },
      });
      expect(await kube.getNad("ns1", "missing")).toBeUndefined();
      expect(kube.requestCount).toBe(3);
      expect(s.requests.map((r) => r.path)).toEqual([
        POD_PATH,
        "/apis/k8s.cni.cncf.io/v1/namespaces/ns1/network-attachment-definitions/net-a",
        "/apis/k8s.cni.cncf.io/v1/namespaces/ns1/network-attachment-definitions/missing",
      ]);
    });
  });

  it("N5 with maxSockets 1 (as the CNI binary sets it) concurrent reads share one connection: one TLS handshake per call", async () => {
    await withCluster(
      async (s, kube) => {
        const nads = await Promise.all([
          kube.getNad("ns1", "net-a"),
          kube.getNad("ns1", "net-a"),
          kube.getPod("ns1", "p1"),
        ]);
        expect(nads.map((n) => n?.metadata.name)).toEqual(["net-a", "net-a", "p1"]);
        expect(s.requests).toHaveLength(3);
        expect(s.connectionCount()).toBe(1);
      },
      { ...FAST, maxSockets: 1 },
    );
  });

  it("N5 setNetworkStatus is one merge patch on pods/status with the UID precondition; other annotations stay", async () => {
    await withCluster(async (s, kube) => {
      await kube.setNetworkStatus(
        { namespace: "ns1", name: "p1", uid: "uid-1" },
        '[{"name":"net-a"}]',
      );
      expect(s.requests.map((r) => `${r.method} ${r.path} ${r.contentType}`)).toEqual([
        `PATCH ${STATUS_PATH} application/merge-patch+json`,
      ]);
      expect(JSON.parse(s.requests[0]!.body)).toEqual({
        metadata: {
          uid: "uid-1",
          annotations: { [NETWORK_STATUS_ANNOTATION]: '[{"name":"net-a"}]' },
        },
      });
      expect(s.getPod("ns1", "p1")!.metadata.annotations).toEqual({
        keep: "me",
        [NETWORK_STATUS_ANNOTATION]: '[{"name":"net-a"}]',
      });
    });
  });

  it("M8 a recreated pod (other UID) does not receive the status: the server's 422 Invalid on metadata.uid is code 3, nothing written", async () => {
    await withCluster(async (s, kube) => {
      const err = await failure(
        kube.setNetworkStatus({ namespace: "ns1", name: "p1", uid: "uid-of-the-old-pod" }, "[]"),
      );
      expect(err.code).toBe(Code.UnknownContainer);
      expect(err.message).toContain("uid-of-the-old-pod");
      expect(err.message).toContain("deleted and recreated");
      expect(err.message).toContain("HTTP 422 Invalid");
      expect(s.getPod("ns1", "p1")!.metadata.annotations).toEqual({ keep: "me" });
      // One refused patch, nothing else: a 422 is final.
      expect(s.requests.map((r) => r.method)).toEqual(["PATCH"]);
    });
  });

  it("M8 a 422 about another field (an annotation too large) is 104 naming the server's message, not code 3", async () => {
    await withCluster(async (s, kube) => {
      s.inject(
        { method: "PATCH", path: STATUS_PATH },
        {
          kind: "status",
          code: 422,
          message:
            'Pod "p1" is invalid: metadata.annotations: Too long: must have at most 262144 bytes',
          details: {
            name: "p1",
            kind: "Pod",
            causes: [{ reason: "FieldValueTooLong", field: "metadata.annotations" }],
          },
        },
      );
      const err = await failure(
        kube.setNetworkStatus({ namespace: "ns1", name: "p1", uid: "uid-1" }, "[]"),
      );
      expect(err.code).toBe(Code.ApiFailure);
      expect(err.message).toContain("metadata.annotations: Too long");
      expect(s.requests.map((r) => r.method)).toEqual(["PATCH"]);
    });
  });

  it("N5 a write that races another inside the server is retried there (GuaranteedUpdate): one PATCH, no 409 reaches the client", async () => {
    await withCluster(async (s, kube) => {
      s.inject({ method: "PATCH", path: STATUS_PATH, times: 1 }, { kind: "racing-write" });
      await kube.setNetworkStatus({ namespace: "ns1", name: "p1", uid: "uid-1" }, '["raced"]');
      expect(s.storageRetries()).toBe(1);
      expect(s.requests.map((r) => r.method)).toEqual(["PATCH"]);
      expect(s.getPod("ns1", "p1")!.metadata.annotations).toMatchObject({
        [NETWORK_STATUS_ANNOTATION]: '["raced"]',
      });
    });
  });

  it("M9 recordEvent writes a core/v1 Event on the pod: involvedObject with UID, reason, type, source plexus", async () => {
    await withCluster(async (s, kube) => {
      await kube.recordEvent(
        { namespace: "ns1", name: "p1", uid: "uid-1" },
        {
          type: "Normal",
          reason: "AddedInterface",
          message: "Add net1 [10.1.1.2/24] from ns1/net-a",
        },
      );
      await kube.recordEvent(
        { namespace: "ns1", name: "p1", uid: "uid-1" },
        {
          type: "Warning",
          reason: "NoNetworkFound",
          message: "cannot find a network-attachment-definition (net-x) in namespace (ns1)",
        },
      );
      const events = s.events();
      expect(events).toHaveLength(2);
      expect(events[0]).toMatchObject({
        apiVersion: "v1",
        kind: "Event",
        metadata: { namespace: "ns1", name: expect.stringMatching(/^p1\./) },
        involvedObject: {
          apiVersion: "v1",
          kind: "Pod",
          name: "p1",
          namespace: "ns1",
          uid: "uid-1",
        },
        reason: "AddedInterface",
        type: "Normal",
        message: "Add net1 [10.1.1.2/24] from ns1/net-a",
        source: { component: "plexus" },
        count: 1,
      });
      expect(events[1]).toMatchObject({ type: "Warning", reason: "NoNetworkFound" });
      expect(new Date(events[0]!.firstTimestamp as string).getTime()).toBeGreaterThan(
        Date.now() - 60_000,
      );
    });
  });
});

describe("M1 where the configuration comes from", () => {
  it("M1 no kubeconfig and no in-cluster env: no Kubernetes; the env alone is enough for in-cluster", () => {
    expect(hasKubernetesConfig({}, {})).toBe(false);
    expect(hasKubernetesConfig({ kubeconfig: "/x" }, {})).toBe(true);
    expect(
      hasKubernetesConfig(
        {},
        { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
      ),
    ).toBe(true);
    expect(hasKubernetesConfig({}, { KUBERNETES_SERVICE_HOST: "10.96.0.1" })).toBe(false);
  });

  it("M1 loadKubeApi returns undefined without any config", async () => {
    expect(await loadKubeApi({}, { env: {} })).toBeUndefined();
  });

  it("M1 in-cluster: service account token and CA from the (prefixed) service account directory", async () => {
    await using s = await startFakeApiServer({ token: "sa-token" });
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const root = mkdtempSync(join(tmpdir(), "plx-sa-"));
    mkdirSync(join(root, SERVICE_ACCOUNT_DIR), { recursive: true });
    writeFileSync(join(root, SERVICE_ACCOUNT_DIR, "token"), "sa-token");
    writeFileSync(join(root, SERVICE_ACCOUNT_DIR, "ca.crt"), s.caPem);
    const kube = await loadKubeApi(
      {},
      {
        env: { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(s.port) },
        inClusterRoot: root,
        client: FAST,
      },
    );
    opened.push(kube!);
    expect((await kube!.getPod("ns1", "p1")).metadata.name).toBe("p1");
    rmSync(root, { recursive: true, force: true });
  });

  it("M1 a kubeconfig whose server is plain http:// (kubectl proxy) works without insecure-skip-tls-verify, with one warning that credentials travel in clear", async () => {
    await using s = await startFakeApiServer({ tls: false });
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const path = writeKubeconfig(s);
    expect(readFileSync(path, "utf8")).not.toMatch(
      /insecure-skip-tls-verify|certificate-authority/,
    );
    const log = recordingLogger();
    const kube = await loadKubeApi({ kubeconfig: path }, { client: FAST, log });
    opened.push(kube!);
    expect((await kube!.getPod("ns1", "p1")).metadata.name).toBe("p1");
    const warnings = log.lines.filter((l) => l.level === "warn");
    expect(warnings).toEqual([
      expect.objectContaining({
        msg: expect.stringContaining("plain http"),
        obj: expect.objectContaining({ credentials: `kubeconfig ${path}` }),
      }),
    ]);
  });

  it("B15 a server URL with user:password@ is refused with 7, and the password appears nowhere in the error", async () => {
    await using s = await startFakeApiServer({ tls: false });
    // A copy of the server with another URL owns no temp dir that s.close() removes: write into one
    // that goes with the test.
    const dir = mkdtempSync(join(tmpdir(), "plx-kubeconfig-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const path = writeKubeconfig(
      { ...s, url: s.url.replace("http://", "http://admin:s3cr3t@") },
      { dir },
    );
    const err = await failure(loadKubeApi({ kubeconfig: path }, { client: FAST }));
    expect(err.code).toBe(7);
    expect(err.message).toContain("carries credentials");
    expect(err.message).not.toContain("s3cr3t");
    expect(s.requests).toEqual([]);
  });

  it("M11 a kubectl-style `tokenFile` relative to the kubeconfig is honoured", async () => {
    await using s = await startFakeApiServer();
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const path = writeKubeconfig(s, { tokenFile: true });
    const kube = await clientFor(s, FAST, path);
    expect((await kube.getPod("ns1", "p1")).metadata.name).toBe("p1");
  });
});

describe("M1 credential plugins go through client-node's KubeConfig", () => {
  it("M1 an `exec` user: the plugin's ExecCredential token authenticates the requests", async () => {
    await using s = await startFakeApiServer({ token: "exec-token" });
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const dir = mkdtempSync(join(tmpdir(), "plx-exec-"));
    const plugin = join(dir, "cred.sh");
    writeFileSync(
      plugin,
      `#!/bin/sh\necho ` +
        `'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token"}}'\n`,
      { mode: 0o755 },
    );
    const path = join(dir, "kubeconfig");
    writeFileSync(
      path,
      [
        "apiVersion: v1",
        "kind: Config",
        `clusters: [{name: c, cluster: {server: "${s.url}", certificate-authority-data: ` +
          `${Buffer.from(s.caPem).toString("base64")}}}]`,
        `users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ` +
          `${plugin}, interactiveMode: Never}}}]`,
        "contexts: [{name: x, context: {cluster: c, user: u}}]",
        "current-context: x",
      ].join("\n"),
    );
    try {
      const kube = await clientFor(s, FAST, path);
      expect((await kube.getPod("ns1", "p1")).metadata.name).toBe("p1");
      expect(s.requests).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("B15 unusable kubeconfig: code 7 naming the file, no request", () => {
  const cases: [string, (dir: string) => string][] = [
    ["missing", (dir) => join(dir, "nope.kubeconfig")],
    ["a directory (unreadable as a file)", (dir) => dir],
    [
      "invalid YAML",
      (dir) => (writeFileSync(join(dir, "k"), "clusters: [\n  - {name: x\n"), join(dir, "k")),
    ],
    [
      "not a mapping",
      (dir) => (writeFileSync(join(dir, "k"), "- just\n- a list\n"), join(dir, "k")),
    ],
    [
      "no current-context",
      (dir) => (
        writeFileSync(
          join(dir, "k"),
          "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n",
        ),
        join(dir, "k")
      ),
    ],
  ];
  for (const [what, make] of cases) {
    it(`B15 ${what}`, async () => {
      await using s = await startFakeApiServer();
      const dir = mkdtempSync(join(tmpdir(), "plx-b15-"));
      const path = make(dir);
      const err = await failure(loadKubeApi({ kubeconfig: path }, { client: FAST }));
      expect(err.code).toBe(Code.InvalidNetworkConfig);
      expect(err.message).toContain(path);
      expect(s.requests).toHaveLength(0);
      rmSync(dir, { recursive: true, force: true });
    });
  }

  it("B15 a CA file that cannot be read is 7 before any request", async () => {
    await using s = await startFakeApiServer();
    const dir = mkdtempSync(join(tmpdir(), "plx-b15-"));
    const path = writeKubeconfig(s, { dir });
    const text = (await import("node:fs"))
      .readFileSync(path, "utf8")
      .replace(/certificate-authority-data: .*/, "certificate-authority: missing-ca.crt");
    writeFileSync(path, text);
    const err = await failure(loadKubeApi({ kubeconfig: path }, { client: FAST }));
    expect(err.code).toBe(Code.InvalidNetworkConfig);
    expect(err.message).toContain(path);
    expect(s.requests).toHaveLength(0);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe("B15 kubeconfig fields Plexus does not implement: refused, naming the field and entry", () => {
  const cases: [string, string, string, string][] = [
    ["user", "as", "    as: admin", 'user "plexus" sets "as" (impersonation of another user)'],
    ["user", "as-uid", "    as-uid: 1234", 'user "plexus" sets "as-uid"'],
    ["user", "as-groups", "    as-groups: [system:masters]", 'user "plexus" sets "as-groups"'],
    [
      "user",
      "as-user-extra",
      "    as-user-extra: {scopes: [a]}",
      'user "plexus" sets "as-user-extra"',
    ],
    ["user", "As (Go's decoder matches keys case-insensitively)", "    As: admin", 'sets "as"'],
    [
      "cluster",
      "proxy-url",
      "    proxy-url: http://proxy:3128",
      'cluster "fake" sets "proxy-url" (a proxy',
    ],
  ];
  for (const [entry, field, line, expected] of cases) {
    it(`B15 ${entry} ${field}: 7 naming it, before any request`, async () => {
      await using s = await startFakeApiServer();
      const path = writeKubeconfig(s);
      const text = readFileSync(path, "utf8");
      const at = entry === "user" ? "  user:\n" : "  cluster:\n";
      writeFileSync(path, text.replace(at, `${at}${line}\n`));
      const err = await failure(loadKubeApi({ kubeconfig: path }, { client: FAST }));
      expect(err.code).toBe(Code.InvalidNetworkConfig);
      expect(err.message).toContain(path);
      expect(err.message).toContain(expected);
      expect(s.requests).toHaveLength(0);
    });
  }

  it("B15 impersonation on an exec user is refused too; extensions, namespace, disable-compression pass", async () => {
    await using s = await startFakeApiServer();
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const path = writeKubeconfig(s);
    const text = readFileSync(path, "utf8");
    writeFileSync(
      path,
      text
        .replace("    cluster: fake\n", "    cluster: fake\n    namespace: other\n")
        .replace(
          "  cluster:\n",
          "  cluster:\n    disable-compression: true\n    extensions: [{name: x, extension: {a: " +
            "1}}]\n",
        ),
    );
    expect((await (await clientFor(s, FAST, path)).getPod("ns1", "p1")).metadata.name).toBe("p1");
    writeFileSync(
      path,
      text.replace(
        / {4}token: .*\n/,
        "    as: admin\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: " +
          "/bin/false}\n",
      ),
    );
    const err = await failure(loadKubeApi({ kubeconfig: path }, { client: FAST }));
    expect(err.code).toBe(Code.InvalidNetworkConfig);
    expect(err.message).toContain('sets "as"');
  });
});

describe("B20 invalid names never become a request", () => {
  const bad = ["A", "-a", "a".repeat(64), ".", "..", "%2e", "a/b", "a%2fb", "", "a..b"];
  // Pod names are subdomains: dots between labels and up to 253 characters are fine.
  const badPodNames = [
    "A",
    "-a",
    "a".repeat(254),
    ".",
    "..",
    "%2e",
    "a/b",
    "a%2fb",
    "",
    "a..b",
    ".a",
  ];
  it("B20 namespace, pod name and NAD name: code 7, zero requests reach the server", async () => {
    await withCluster(async (s, kube) => {
      for (const name of bad) {
        expect((await failure(kube.getPod(name, "p1"))).code, `namespace ${name}`).toBe(
          Code.InvalidNetworkConfig,
        );
        expect((await failure(kube.getNad("ns1", name))).code, `nad ${name}`).toBe(
          Code.InvalidNetworkConfig,
        );
        expect((await failure(kube.getNad(name, "net-a"))).code, `nad namespace ${name}`).toBe(
          Code.InvalidNetworkConfig,
        );
        expect(
          (await failure(kube.setNetworkStatus({ namespace: name, name: "p1" }, "[]"))).code,
        ).toBe(Code.InvalidNetworkConfig);
        expect(
          (
            await failure(
              kube.recordEvent(
                { namespace: name, name: "p1" },
                { type: "Normal", reason: "R", message: "m" },
              ),
            )
          ).code,
        ).toBe(Code.InvalidNetworkConfig);
      }
      for (const name of badPodNames) {
        expect((await failure(kube.getPod("ns1", name))).code, `pod ${name}`).toBe(
          Code.InvalidNetworkConfig,
        );
        expect(
          (await failure(kube.setNetworkStatus({ namespace: "ns1", name }, "[]"))).code,
          `pod ${name}`,
        ).toBe(Code.InvalidNetworkConfig);
        expect(
          (
            await failure(
              kube.recordEvent(
                { namespace: "ns1", name },
                { type: "Normal", reason: "R", message: "m" },
              ),
            )
          ).code,
        ).toBe(Code.InvalidNetworkConfig);
      }
      expect(s.requests).toHaveLength(0);
      expect(kube.requestCount).toBe(0);
    });
  });

  it("B20 a pod name with dots is a valid DNS-1123 subdomain and is requested", async () => {
    await withCluster(async (s, kube) => {
      s.addPod({ metadata: { name: "web.0", namespace: "ns1" } });
      expect((await kube.getPod("ns1", "web.0")).metadata.name).toBe("web.0");
    });
  });
});

describeBothRuntimes("B34 connection refused / reset", () => {
  it("B34 refused: bounded attempts, then 104", async () => {
    const s = await startFakeApiServer();
    const dir = mkdtempSync(join(tmpdir(), "plx-refused-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const path = writeKubeconfig(s, { dir });
    await s.close();
    const kube = await clientFor(s, FAST, path);
    const [err, ms] = await elapsed(() => failure(kube.getPod("ns1", "p1")));
    expect(err.code).toBe(Code.ApiFailure);
    expect(err.message).toMatch(/ECONNREFUSED/);
    expect(err.message).toContain("4 attempt(s)");
    expect(kube.requestCount).toBe(4);
    expect(ms, "with its backoff between the attempts").toBeGreaterThan(0);
  });

  it("B34 reset every time: 4 attempts reach the server, then 104", async () => {
    await withCluster(async (s, kube) => {
      s.inject({ path: POD_PATH }, { kind: "reset" });
      const err = await failure(kube.getPod("ns1", "p1"));
      expect(err.code).toBe(Code.ApiFailure);
      expect(s.requests).toHaveLength(4);
    });
  });

  it("B34 reset twice: the third attempt succeeds", async () => {
    await withCluster(async (s, kube) => {
      s.inject({ path: POD_PATH, times: 2 }, { kind: "reset" });
      expect((await kube.getPod("ns1", "p1")).metadata.uid).toBe("uid-1");
      expect(s.requests).toHaveLength(3);
    });
  });
});

describeBothRuntimes("B35 5xx and 429", () => {
  it("B35 500 then 503 then OK: retried", async () => {
    await withCluster(async (s, kube) => {
      s.inject({ path: POD_PATH, times: 1 }, { kind: "status", code: 500 });
      s.inject({ path: POD_PATH, times: 1 }, { kind: "status", code: 503 });
      expect((await kube.getPod("ns1", "p1")).metadata.name).toBe("p1");
      expect(s.requests).toHaveLength(3);
    });
  });

  it("B35 503 forever: capped attempts, 104 naming the status", async () => {
    await withCluster(async (s, kube) => {
      s.inject({ path: POD_PATH }, { kind: "status", code: 503, message: "etcd is sad" });
      const err = await failure(kube.getPod("ns1", "p1"));
      expect(err.code).toBe(Code.ApiFailure);
      expect(err.message).toContain("503");
      expect(err.message).toContain("etcd is sad");
      expect(s.requests).toHaveLength(4);
    });
  });

  it("B35 the total budget caps many fast failures", async () => {
    const o: ClientNodeOptions = {
      retry: {
        requestTimeoutMs: 200,
        totalTimeoutMs: 300,
        baseDelayMs: 40,
        maxDelayMs: 80,
        maxAttempts: 1000,
      },
    };
    await withCluster(async (s, kube) => {
      s.inject({ path: POD_PATH }, { kind: "status", code: 500 });
      const err = await failure(kube.getPod("ns1", "p1"));
      expect(err.code).toBe(Code.ApiFailure);
      expect(err.message).toContain("deadline");
      // Counted, not timed: 1,000 attempts allowed, the 300 ms budget stops them after a few.
      expect(s.requests.length).toBeGreaterThan(2);
      expect(s.requests.length).toBeLessThan(15);
    }, o);
  });

  it("B35 the caller's deadline (deadlineAt, the ADD's budget) wins over a larger policy", async () => {
    const o: ClientNodeOptions = {
      ...FAST,
      retry: { ...SHORT, totalTimeoutMs: 10_000, maxAttempts: 1000 },
      deadlineAt: Date.now() + 250,
    };
    await withCluster(async (s, kube) => {
      s.inject({ path: POD_PATH }, { kind: "hang" });
      const err = await failure(kube.getPod("ns1", "p1"));
      expect(err.code).toBe(Code.ApiFailure);
      // A 10 s policy and 1,000 attempts, but the 250 ms deadline leaves room for two 200 ms
      // requests at most.
      expect(s.requests.length).toBeLessThanOrEqual(2);
    }, o);
  });

  it("B35 429 with Retry-After: the next attempt waits that long", async () => {
    const o: ClientNodeOptions = { retry: { ...FAST.retry, totalTimeoutMs: 3000 } };
    await withCluster(async (s, kube) => {
      s.inject({ path: POD_PATH, times: 1 }, { kind: "status", code: 429, retryAfter: "1" });
      expect((await kube.getPod("ns1", "p1")).metadata.name).toBe("p1");
      expect(s.requests).toHaveLength(2);
      expect(s.requests[1]!.time - s.requests[0]!.time).toBeGreaterThanOrEqual(990);
    }, o);
  });

  it("B35 429 with a Retry-After beyond the deadline: give up at once instead of sleeping past it", async () => {
    await withCluster(async (s, kube) => {
      s.inject({ path: POD_PATH }, { kind: "status", code: 429, retryAfter: "30" });
      const [err, ms] = await elapsed(() => failure(kube.getPod("ns1", "p1")));
      expect(err.code).toBe(Code.ApiFailure);
      expect(err.message).toContain("429");
      expect(s.requests).toHaveLength(1);
      expect(ms, "no 30 s sleep").toBeLessThan(30_000);
    });
  });
});

describeBothRuntimes("B36 hang / slow body: the request timeout fires, no socket left", (rt) => {
  const o: ClientNodeOptions = { retry: { ...SHORT, maxAttempts: 2 } };
  for (const fault of [
    { kind: "hang" },
    { kind: "hang-after-headers" },
    { kind: "slow-body", chunkBytes: 1, intervalMs: 50 },
  ] as const) {
    it(`B36 ${fault.kind}: 104 after 2 × 200 ms, the server sees its connections closed`, async () => {
      await withCluster(async (s, kube) => {
        s.inject({ path: POD_PATH }, fault);
        const [err, ms] = await elapsed(() => failure(kube.getPod("ns1", "p1")));
        expect(err.code).toBe(Code.ApiFailure);
        expect(err.message).toContain("request timeout");
        expect(ms).toBeGreaterThanOrEqual(390);
        expect(s.requests).toHaveLength(2);
        // The timed-out sockets were destroyed, not parked in the keep-alive pool.
        await expect.poll(() => s.connectionCount(), { timeout: 500, interval: 10 }).toBe(0);
      }, o);
    });
  }

  // Node's client releases its keep-alive socket on close(); Bun's fetch pools its one connection
  // until the CNI process exits, which is what close() does to the Bun process here.
  it(`B36 ${rt === "node" ? "close()" : "the CNI process's exit"} releases the keep-alive connection after successful requests`, async () => {
    await withCluster(async (s, kube) => {
      await kube.getPod("ns1", "p1");
      await kube.getNad("ns1", "net-a");
      expect(s.connectionCount()).toBe(1);
      await kube.close!();
      await expect.poll(() => s.connectionCount(), { timeout: 500, interval: 10 }).toBe(0);
    });
  });
});

describeBothRuntimes("B37 401/403", () => {
  it("B37 401 (expired token): 104 with the status and the kubeconfig path, not retried", async () => {
    await using s = await startFakeApiServer();
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const path = writeKubeconfig(s, { token: "expired" });
    const kube = await clientFor(s, FAST, path);
    const err = await failure(kube.getPod("ns1", "p1"));
    expect(err.code).toBe(Code.ApiFailure);
    expect(err.message).toContain("401");
    expect(err.message).toContain(path);
    expect(s.requests).toHaveLength(1);
  });

  it("B37 403 (RBAC): 104 with the status, the server's message and the kubeconfig path, not retried", async () => {
    // A user the shipped RBAC binds nothing to (client-other.crt: plexus-test-user): the fake's
    // RBAC answers.
    await using s = await startFakeApiServer({ clientCertificates: true });
    const path = writeKubeconfig(s, { clientCertificate: { name: "other", as: "data" } });
    const kube = await clientFor(s, FAST, path);
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const err = await failure(kube.setNetworkStatus({ namespace: "ns1", name: "p1" }, "[]"));
    expect(err.code).toBe(Code.ApiFailure);
    expect(err.message).toContain("403 Forbidden");
    expect(err.message).toContain(
      'User "plexus-test-user" cannot patch resource "pods/status" in API group "" in the ' +
        'namespace "ns1"',
    );
    expect(err.message).toContain(path);
    expect(s.requests).toHaveLength(1);
  });
});

describeBothRuntimes("B38 / B43 pod not found", () => {
  it("B38 404 pod on ADD's read: code 3", async () => {
    await withCluster(async (s, kube) => {
      const err = await failure(kube.getPod("ns1", "gone"));
      expect(err.code).toBe(Code.UnknownContainer);
      expect(err.message).toContain("ns1/gone");
      expect(s.requests).toHaveLength(1);
    });
  });

  it("B43 pod deleted mid-ADD: the status write's 404 is code 3 (the ADD tears down), not retried", async () => {
    await withCluster(async (s, kube) => {
      await kube.getPod("ns1", "p1");
      s.deletePod("ns1", "p1");
      const err = await failure(
        kube.setNetworkStatus({ namespace: "ns1", name: "p1", uid: "uid-1" }, "[]"),
      );
      expect(err.code).toBe(Code.UnknownContainer);
      expect(s.requests.map((r) => r.method)).toEqual(["GET", "PATCH"]);
    });
  });
});

describeBothRuntimes(
  "B38 a 404 is 'missing' only when its Status names the object; else 104",
  () => {
    const CLAIM_PATH = "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/c1";
    const NAD_PATH = "/apis/k8s.cni.cncf.io/v1/namespaces/ns1/network-attachment-definitions/net-a";

    it("B38 no resource.k8s.io/v1, no NAD CRD: claim, slices, NAD reads are 104 naming the API, once", async () => {
      await using s = await startFakeApiServer({
        unserved: ["resource.k8s.io/v1", "k8s.cni.cncf.io/v1"],
      });
      s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
      const kube = await clientFor(s);
      expect((await kube.getPod("ns1", "p1")).metadata.name).toBe("p1");
      const claim = await failure(kube.getResourceClaim!("ns1", "c1"));
      expect(claim.code).toBe(Code.ApiFailure);
      expect(claim.message).toContain("get ResourceClaim ns1/c1");
      expect(claim.message).toContain("does not serve resourceclaims of API resource.k8s.io/v1");
      expect(claim.message).toContain('"404 page not found"');
      const slices = await failure(
        kube.listResourceSlices!({ nodeName: "node-1", driver: "d.example.com" }),
      );
      expect(slices.code).toBe(Code.ApiFailure);
      expect(slices.message).toContain("does not serve resourceslices of API resource.k8s.io/v1");
      const nad = await failure(kube.getNad("ns1", "net-a"));
      expect(nad.code).toBe(Code.ApiFailure);
      expect(nad.message).toContain(
        "does not serve network-attachment-definitions of API k8s.cni.cncf.io/v1",
      );
      expect(nad.message).toContain("CRD");
      // Not retried: a 404 is an answer.
      expect(s.requests.map((r) => r.path)).toEqual([
        POD_PATH,
        CLAIM_PATH,
        "/apis/resource.k8s.io/v1/resourceslices",
        NAD_PATH,
      ]);
    });

    it("B38 served: a missing claim and a missing NAD are undefined (their Status names them)", async () => {
      await withCluster(async (s, kube) => {
        expect(await kube.getResourceClaim!("ns1", "c1")).toBeUndefined();
        expect(await kube.getNad("ns1", "missing")).toBeUndefined();
        expect(s.requests).toHaveLength(2);
      });
    });

    it("B38 a 404 whose Status names no object is 104 for the pod, not 'pod deleted' (3)", async () => {
      await withCluster(async (s, kube) => {
        s.inject(
          { path: POD_PATH, times: 1 },
          {
            kind: "status",
            code: 404,
            message: "the server could not find the requested resource",
          },
        );
        const err = await failure(kube.getPod("ns1", "p1"));
        expect(err.code).toBe(Code.ApiFailure);
        expect(err.message).toContain("does not serve pods of API v1");
        s.inject(
          { path: POD_PATH, times: 1 },
          {
            kind: "status",
            code: 404,
            message: 'pods "other" not found',
            details: { name: "other", kind: "pods" },
          },
        );
        expect((await failure(kube.getPod("ns1", "p1"))).code).toBe(Code.ApiFailure);
        expect(s.requests).toHaveLength(2);
      });
    });
  },
);

describeBothRuntimes("B40 a 200 that is not the object: code 6, not a crash", () => {
  for (const kind of ["html", "truncated", "wrong-kind"] as const) {
    it(`B40 ${kind} for a pod and for a NAD`, async () => {
      await withCluster(async (s, kube) => {
        s.inject({}, { kind });
        const pod = await failure(kube.getPod("ns1", "p1"));
        expect(pod.code).toBe(Code.Decoding);
        expect(pod.message).toContain("ns1/p1");
        const nad = await failure(kube.getNad("ns1", "net-a"));
        expect(nad.code).toBe(Code.Decoding);
        expect(s.requests).toHaveLength(2);
      });
    });
  }
});

describeBothRuntimes("B41 response size cap", () => {
  it("B41 a 10 MiB answer is refused (104 naming the limit) without reading it all", async () => {
    await withCluster(async (s, kube) => {
      s.inject({ path: POD_PATH }, { kind: "huge-body" });
      const err = await failure(kube.getPod("ns1", "p1"));
      expect(err.code).toBe(Code.ApiFailure);
      expect(err.message).toMatch(/10485760 bytes exceeds the 4194304-byte limit/);
      expect(s.requests).toHaveLength(1);
    });
  });

  it("B41 a body over the cap without a usable Content-Length is cut while streaming", async () => {
    await withCluster(
      async (s, kube) => {
        s.addPod({
          metadata: { name: "big", namespace: "ns1", annotations: { pad: "x".repeat(5000) } },
        });
        s.inject(
          { path: "/api/v1/namespaces/ns1/pods/big" },
          { kind: "slow-body", chunkBytes: 2048, intervalMs: 1, chunked: true },
        );
        const err = await failure(kube.getPod("ns1", "big"));
        expect(err.code).toBe(Code.ApiFailure);
        expect(err.message).toContain("response exceeds the 4096-byte limit");
      },
      { ...FAST, maxResponseBytes: 4096 },
    );
  });
});

// kube-apiserver never answers a merge patch without resourceVersion with 409 (it retries inside);
// these 409s are injected, standing for something between the client and the apiserver that does.
describeBothRuntimes("B42 an injected 409 fault on the status write", () => {
  it("B42 injected 409 forever: conflictRetries + 1 patches, then 104", async () => {
    await withCluster(
      async (s, kube) => {
        s.inject(
          { method: "PATCH", path: STATUS_PATH },
          { kind: "status", code: 409, message: "the object has been modified" },
        );
        const err = await failure(kube.setNetworkStatus({ namespace: "ns1", name: "p1" }, "[]"));
        expect(err.code).toBe(Code.ApiFailure);
        expect(err.message).toContain("409");
        expect(s.requests.filter((r) => r.method === "PATCH")).toHaveLength(4);
      },
      { ...FAST, conflictRetries: 3 },
    );
  });

  it("B42 injected 409 twice, then the write lands (the UID is re-checked after each conflict)", async () => {
    await withCluster(async (s, kube) => {
      s.inject({ method: "PATCH", path: STATUS_PATH, times: 2 }, { kind: "status", code: 409 });
      await kube.setNetworkStatus({ namespace: "ns1", name: "p1", uid: "uid-1" }, '["ok"]');
      expect(s.getPod("ns1", "p1")!.metadata.annotations).toMatchObject({
        [NETWORK_STATUS_ANNOTATION]: '["ok"]',
      });
      expect(s.requests.map((r) => r.method)).toEqual(["PATCH", "GET", "PATCH", "GET", "PATCH"]);
    });
  });
});

/** A process that swaps `path` between `dir`/v0 and v1 by rename until `dir`/stop exists. */
function startRenamer(path: string, dir: string) {
  const writer = spawn(
    process.execPath,
    [
      "-e",
      `const fs = require("node:fs"); const [path, dir] = process.argv.slice(1);
       const v = [fs.readFileSync(dir + "/v0"), fs.readFileSync(dir + "/v1")];
       let swaps = 0;
       process.stdout.write("started\\n");
       while (!fs.existsSync(dir + "/stop")) {
         fs.writeFileSync(path + ".tmp", v[swaps % 2]);
         fs.renameSync(path + ".tmp", path);
         swaps++;
       }
       process.stdout.write(String(swaps));`,
      path,
      dir,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  writer.stdout.on("data", (chunk) => {
    out += chunk;
  });
  return { writer, output: () => out };
}

describe("B50 kubeconfig replaced while it is read", () => {
  it("B50 atomic renames during 100 loads: every load sees the old or the new file whole", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-b50-"));
    const path = join(dir, "kubeconfig");
    const pad = `# ${"padding ".repeat(8_000)}\n`; // ~64 KiB: a torn read would cut YAML mid-way
    const versions = [
      { server: "https://127.0.0.1:1111", token: "token-old" },
      { server: "https://127.0.0.1:2222", token: "token-new" },
    ];
    const render = (v: (typeof versions)[number]) =>
      `${pad}apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: ` +
      `${v.server}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: ` +
      `${v.token}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: ` +
      `x\n${pad}`;
    writeFileSync(path, render(versions[0]!));
    writeFileSync(join(dir, "v0"), render(versions[0]!));
    writeFileSync(join(dir, "v1"), render(versions[1]!));
    // The writer is another process, so its renames land while a load reads, not only between
    // loads.
    const { writer, output } = startRenamer(path, dir);
    const exited = new Promise((resolve) => writer.once("exit", resolve));
    await new Promise((resolve) => writer.stdout.once("data", resolve));
    const seen = new Set<string>();
    let swaps = 0;
    try {
      for (let i = 0; i < 100; i++) {
        const src = await loadKubeSource({ kubeconfig: path, env: {} });
        if (!src || "plugin" in src) throw new Error("expected a token kubeconfig");
        const token = (await src.auth.headers()).authorization?.replace("Bearer ", "");
        const pair = `${src.server} ${token}`;
        expect(["https://127.0.0.1:1111 token-old", "https://127.0.0.1:2222 token-new"]).toContain(
          pair,
        );
        seen.add(pair);
      }
    } finally {
      writeFileSync(join(dir, "stop"), "");
      await exited;
      swaps = Number(output().split("\n").at(-1));
      chmodSync(dir, 0o755);
      rmSync(dir, { recursive: true, force: true });
    }
    expect(swaps).toBeGreaterThan(10);
    expect(seen.size).toBe(2);
  });
});

describeBothRuntimes("the kubeconfig CA as the CNI process's only trust anchor", () => {
  // The kubeconfig's CA is passed with every connection: trust is that CA, nothing else.
  it("the server signed by the kubeconfig's CA is trusted", async () => {
    await withCluster(async (_s, kube) => {
      expect((await kube.getPod("ns1", "p1")).metadata.uid).toBe("uid-1");
    }, FAST);
  });

  it("a kubeconfig naming another CA is refused: 104 naming the certificate problem, no request served", async () => {
    await using s = await startFakeApiServer();
    const dir = mkdtempSync(join(tmpdir(), "plx-otherca-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const otherCa = otherCaPem(dir);
    const other = { url: s.url, token: s.token, caPem: otherCa };
    const kube = await clientFor(other, FAST, writeKubeconfig(other, { dir }));
    const err = await failure(kube.getPod("ns1", "p1"));
    expect(err.code).toBe(Code.ApiFailure);
    expect(err.message).toMatch(/certificate|self.signed|verify/i);
    expect(s.requests).toEqual([]);
  });
});

describeBothRuntimes(
  "events are created once: a create is repeated only when it surely never reached the server",
  () => {
    const EVENTS = "/api/v1/namespaces/ns1/events";
    const event = { type: "Normal", reason: "AddedInterface", message: "Add net1" } as const;

    for (const fault of [
      { kind: "status", code: 500 },
      { kind: "status", code: 503 },
      { kind: "reset" },
    ] as const) {
      it(`M9 ${fault.kind === "status" ? `HTTP ${fault.code}` : "a reset"} on the event POST: one attempt, 104, no duplicate`, async () => {
        await withCluster(async (s, kube) => {
          s.inject({ method: "POST", path: EVENTS, times: 1 }, fault);
          const err = await failure(kube.recordEvent({ namespace: "ns1", name: "p1" }, event));
          expect(err.code).toBe(Code.ApiFailure);
          expect(s.requests.filter((r) => r.method === "POST")).toHaveLength(1);
        });
      });
    }

    it("M9 429 (the server did nothing) on the event POST: retried, one event", async () => {
      await withCluster(async (s, kube) => {
        s.inject(
          { method: "POST", path: EVENTS, times: 1 },
          { kind: "status", code: 429, retryAfter: "0" },
        );
        await kube.recordEvent({ namespace: "ns1", name: "p1" }, event);
        expect(s.requests.filter((r) => r.method === "POST")).toHaveLength(2);
        expect(s.events()).toHaveLength(1);
      });
    });

    it("M9 connection refused on the event POST: retried once (it never reached a server)", async () => {
      const s = await startFakeApiServer();
      const dir = mkdtempSync(join(tmpdir(), "plx-refused-"));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const path = writeKubeconfig(s, { dir });
      await s.close();
      const kube = await clientFor(s, FAST, path);
      const err = await failure(kube.recordEvent({ namespace: "ns1", name: "p1" }, event));
      expect(err.message).toMatch(/ECONNREFUSED/);
      expect(kube.requestCount).toBe(2);
    });
  },
);

describeBothRuntimes("client certificates in the kubeconfig, over TLS", () => {
  for (const as of ["data", "file"] as const) {
    it(`M1 client-certificate${as === "data" ? "-data / client-key-data" : " / client-key (paths)"}: the certificate authenticates every request (no token)`, async () => {
      // A certificate names no node: the node-scoped-writes policy would refuse its write by
      // default (docs/node-scoped-writes.md); this is about authentication.
      await using s = await startFakeApiServer({ clientCertificates: true, admission: false });
      s.addPod({ metadata: { name: "p1", namespace: "ns1", uid: "uid-1" } });
      const kubeconfig = writeKubeconfig(s, { clientCertificate: { name: "plexus", as } });
      expect(readFileSync(kubeconfig, "utf8")).not.toContain("token");
      const kube = await clientFor(s, FAST, kubeconfig);
      expect((await kube.getPod("ns1", "p1")).metadata.uid).toBe("uid-1");
      await kube.setNetworkStatus({ namespace: "ns1", name: "p1", uid: "uid-1" }, "[]");
      expect(s.requests.map((r) => [r.user, r.authenticatedBy])).toEqual([
        ["system:serviceaccount:kube-system:plexus", "client-certificate"],
        ["system:serviceaccount:kube-system:plexus", "client-certificate"],
      ]);
    });
  }

  it("M1 relative client-certificate / client-key paths are read relative to the kubeconfig", async () => {
    await using s = await startFakeApiServer({ clientCertificates: true });
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const dir = mkdtempSync(join(tmpdir(), "plx-cert-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const files = clientCertFiles("plexus");
    writeFileSync(join(dir, "node.crt"), readFileSync(files.cert));
    writeFileSync(join(dir, "node.key"), readFileSync(files.key));
    const path = writeKubeconfig(s, { dir, clientCertificate: { name: "plexus", as: "file" } });
    writeFileSync(
      path,
      readFileSync(path, "utf8").replace(files.cert, "node.crt").replace(files.key, "node.key"),
    );
    const kube = await clientFor(s, FAST, path);
    expect((await kube.getPod("ns1", "p1")).metadata.name).toBe("p1");
  });

  it("B37 a certificate the API server's CA did not sign: 401, 104 naming the kubeconfig", async () => {
    await using s = await startFakeApiServer({ clientCertificates: true });
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const path = writeKubeconfig(s, { clientCertificate: { name: "selfsigned", as: "data" } });
    const err = await failure((await clientFor(s, FAST, path)).getPod("ns1", "p1"));
    expect(err.code).toBe(Code.ApiFailure);
    expect(err.message).toContain("401 Unauthorized");
    expect(err.message).toContain(path);
  });

  it("B15 a client certificate without its key is 7 naming the user, before any request", async () => {
    await using s = await startFakeApiServer({ clientCertificates: true });
    const path = writeKubeconfig(s, { clientCertificate: { name: "plexus", as: "data" } });
    writeFileSync(path, readFileSync(path, "utf8").replace(/^ {4}client-key-data: .*\n/m, ""));
    const err = await failure(loadKubeApi({ kubeconfig: path }, { client: FAST }));
    expect(err.code).toBe(Code.InvalidNetworkConfig);
    expect(err.message).toContain(
      `kubeconfig ${path}: user "plexus" has client-certificate but no client-key`,
    );
    expect(s.requests).toHaveLength(0);
  });

  it("B15 a client-key file that cannot be read is 7 before any request", async () => {
    await using s = await startFakeApiServer({ clientCertificates: true });
    const path = writeKubeconfig(s, { clientCertificate: { name: "plexus", as: "file" } });
    writeFileSync(
      path,
      readFileSync(path, "utf8").replace(clientCertFiles("plexus").key, "/nonexistent/node.key"),
    );
    const err = await failure(loadKubeApi({ kubeconfig: path }, { client: FAST }));
    expect(err.code).toBe(Code.InvalidNetworkConfig);
    expect(err.message).toContain("client-key /nonexistent/node.key");
    expect(s.requests).toHaveLength(0);
  });
});
