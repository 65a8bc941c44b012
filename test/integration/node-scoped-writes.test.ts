/**
 * Node-scoped writes (docs/node-scoped-writes.md) at the boundary: a token issued for node A, as
 * the DaemonSet's pod-bound projected token is, against the fake API server enforcing the shipped
 * admission policies (test/support/fake-apiserver/admission.ts). Plexus's own client (src/kubeapi),
 * dist/plexus and a plain HTTPS request (what someone holding the stolen token would send) each try
 * what the policy must refuse; Plexus's own ADD, DEL and daemon flows on node A must pass.
 *
 * Every case runs twice: with the policy, and on a cluster without it (`admission: false`), where
 * the same writes go through. That second run is what shows each refusal is the policy's.
 */
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { dirname, join, relative } from "node:path";
import { dump, loadAll } from "js-yaml";
import { describe, expect, it, onTestFinished } from "vitest";
import { isCniError } from "../../src/cni/errors";
import { loadKubeApi } from "../../src/kubeapi/index";
import type { RestKube } from "../../src/kubeapi/rest-kube";
import { doctor } from "../../src/ops/doctor";
import {
  clientCertFiles,
  DEPLOY_DIR,
  type FakeApiServer,
  type KubeObject,
  startFakeApiServer,
  writeKubeconfig,
} from "../support/fake-apiserver";
import { cniError, PLEXUS_BIN, unixSocketStatus } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const STATUS = "k8s.v1.cni.cncf.io/network-status";
const podArgs = (name: string) =>
  `IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=${name};K8S_POD_UID=uid-${name}`;

/**
 * A cluster with pods `web-a` (node-a, with a label and an annotation) and `web-b` (node-b) in
 * `app`.
 */
async function cluster(policy: boolean): Promise<FakeApiServer> {
  const api = await startFakeApiServer({ node: "node-a", ...(policy ? {} : { admission: false }) });
  onTestFinished(() => api.close());
  return addWebPods(api);
}

function addWebPods(api: FakeApiServer): FakeApiServer {
  for (const [name, node] of [
    ["web-a", "node-a"],
    ["web-b", "node-b"],
  ] as const)
    api.addPod({
      metadata: {
        namespace: "app",
        name,
        uid: `uid-${name}`,
        labels: { app: "web" },
        annotations: { team: "a" },
      },
      spec: { nodeName: node, containers: [{ name: "main", image: "busybox" }] },
    });
  return api;
}

/** The installer's kubeconfig on node A: a token file holding a bound token issued for the node. */
function nodeKubeconfig(
  api: FakeApiServer,
  options: { node?: string; name?: string } = {},
): string {
  const token = api.issueToken(
    options.node === undefined
      ? { node: "node-a", pod: "plexus-a" }
      : { node: options.node || undefined },
  );
  return writeKubeconfig(api, {
    dir: ctx.sb.root,
    token,
    tokenFile: true,
    fileName: options.name ?? "node-a",
  });
}

async function client(kubeconfig: string): Promise<RestKube> {
  const retry = { requestTimeoutMs: 2000, totalTimeoutMs: 4000 };
  const kube = (await loadKubeApi({ kubeconfig }, { client: { retry } }))!;
  onTestFinished(() => kube.close());
  return kube;
}

/** What a holder of the token can send without Plexus: a merge patch of a pod's status. */
function patchStatus(
  api: FakeApiServer,
  options: { kubeconfigToken: string; pod: string; patch: unknown },
) {
  return send(api, {
    method: "PATCH",
    path: `/api/v1/namespaces/app/pods/${options.pod}/status`,
    token: options.kubeconfigToken,
    contentType: "application/merge-patch+json",
    body: options.patch,
  });
}

/** A request as a holder of the token sends it, without Plexus. */
function send(
  api: FakeApiServer,
  options: { method: string; path: string; token: string; contentType: string; body: unknown },
) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = request(
      `${api.url}${options.path}`,
      {
        method: options.method,
        ca: api.caPem,
        agent: false,
        headers: {
          authorization: `Bearer ${options.token}`,
          "content-type": options.contentType,
        },
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(options.body));
  });
}

async function refusal(pending: Promise<unknown>): Promise<string | undefined> {
  try {
    await pending;
    return undefined;
  } catch (err) {
    if (!isCniError(err)) throw err;
    return err.message;
  }
}

const annotationsOf = (api: FakeApiServer, name: string) =>
  api.getPod("app", name)!.metadata.annotations as Record<string, string>;

/** `plexus doctor` on a node whose plugin config names `kubeconfig`. */
function doctorWith(kubeconfig: string) {
  const { sb } = ctx;
  const confDir = join(sb.root, "net.d");
  mkdirSync(confDir, { recursive: true });
  const plexus = {
    type: "plexus",
    clusterNetwork: "default-net",
    confDir,
    cniDir: sb.cniDir,
    daemonSocket: "",
    kubeconfig,
  };
  const conflist = { cniVersion: "1.0.0", name: "plexus-net", plugins: [plexus] };
  writeFileSync(join(confDir, "00-plexus.conflist"), JSON.stringify(conflist));
  return doctor({ cniConfDir: confDir }, { PATH: process.env.PATH });
}

function addThrough(kubeconfig: string, pod: string, extra: Record<string, unknown> = {}) {
  const { sb } = ctx;
  const conf = sb.config([sb.delegate("net-a")], {
    kubeconfig,
    apiTotalTimeoutSeconds: 4,
    ...extra,
  });
  return { conf, run: (cmd: string) => sb.run(cmd, conf, { CNI_ARGS: podArgs(pod) }) };
}

describe.each([
  ["with the node-scoped-writes policy", true],
  ["without it (the same writes pass)", false],
])("a token issued for node A, %s", (_title, policy) => {
  it("M16 dist/plexus ADD of a pod on node B cannot write its network-status (104, the pod untouched)", async () => {
    const api = await cluster(policy);
    const r = await addThrough(nodeKubeconfig(api), "web-b").run("ADD");
    if (!policy)
      return void expect(JSON.parse(annotationsOf(api, "web-b")[STATUS]!)).not.toHaveLength(0);
    expect(r.code, r.stderr).not.toBe(0);
    expect(cniError(r)).toMatchObject({
      code: 104,
      msg: expect.stringContaining("is not on node node-a"),
    });
    expect(annotationsOf(api, "web-b")).toEqual({ team: "a" });
  });

  it("M16 Plexus's client cannot write the network-status of a node B pod, nor record an Event about it", async () => {
    const api = await cluster(policy);
    const kube = await client(nodeKubeconfig(api));
    const write = await refusal(
      kube.setNetworkStatus({ namespace: "app", name: "web-b", uid: "uid-web-b" }, "[]"),
    );
    const event = { type: "Normal" as const, reason: "AddedInterface", message: "forged" };
    const about = await refusal(
      kube.recordEvent({ namespace: "app", name: "web-b", uid: "uid-web-b" }, event),
    );
    if (!policy) {
      expect([write, about]).toEqual([undefined, undefined]);
      return void expect(api.events()).toHaveLength(1);
    }
    expect(write).toMatch(/HTTP 403 Forbidden.*pod app\/web-b is not on node node-a/);
    expect(about).toMatch(
      /HTTP 403 Forbidden.*Event about pod app\/web-b, which is not on node node-a/,
    );
    expect(api.events()).toEqual([]);
  });

  it("M16 an Event in a namespace without a node A pod, or about a pod that is not one, is refused", async () => {
    const api = await cluster(policy);
    api.addPod({ metadata: { namespace: "other", name: "db" }, spec: { nodeName: "node-b" } });
    const kube = await client(nodeKubeconfig(api));
    const event = { type: "Warning" as const, reason: "NoNetworkFound", message: "forged" };
    const empty = await refusal(kube.recordEvent({ namespace: "nobody", name: "web-a" }, event));
    const otherNs = await refusal(kube.recordEvent({ namespace: "other", name: "db" }, event));
    if (!policy) return void expect([empty, otherNs]).toEqual([undefined, undefined]);
    expect(empty).toMatch(/HTTP 422 .*no params found for policy binding/);
    expect(otherNs).toMatch(
      /HTTP 403 Forbidden.*Event about pod other\/db, which is not on node node-a/,
    );
    expect(api.events()).toEqual([]);
  });

  it("M16 with the stolen token, no other annotation, label, spec or status field of a node A pod can be changed", async () => {
    const api = await cluster(policy);
    const token = api.issueToken({ node: "node-a", pod: "plexus-a" });
    const patches = [
      { metadata: { annotations: { team: "b" } } },
      { metadata: { annotations: { "k8s.v1.cni.cncf.io/networks": "evil" } } },
      { metadata: { annotations: { team: null } } },
      { metadata: { labels: { app: "evil" } } },
      { metadata: { labels: { extra: "x" } } },
      { metadata: { finalizers: ["example.com/hold"] } },
      { status: { podIP: "10.66.6.6" } },
      { metadata: { annotations: { [STATUS]: "[]", team: "b" } } },
    ];
    for (const patch of patches) {
      const r = await patchStatus(api, { kubeconfigToken: token, pod: "web-a", patch });
      expect(r.status, JSON.stringify(patch)).toBe(policy ? 403 : 200);
      if (policy) expect(r.body).toMatchObject({ kind: "Status", reason: "Forbidden", code: 403 });
    }
    const ok = await patchStatus(api, {
      kubeconfigToken: token,
      pod: "web-a",
      patch: { metadata: { annotations: { [STATUS]: "[]" } } },
    });
    expect(ok.status).toBe(200);
    if (policy)
      expect(api.getPod("app", "web-a")!.metadata).toMatchObject({
        labels: { app: "web" },
        annotations: { team: "a", [STATUS]: "[]" },
      });
  });

  it("M16 a token that names no node writes nothing (the default switch), even to a node A pod", async () => {
    const api = await cluster(policy);
    const r = await addThrough(nodeKubeconfig(api, { node: "", name: "legacy" }), "web-a").run(
      "ADD",
    );
    if (!policy) return void expect(r.code, r.stderr).toBe(0);
    expect(cniError(r)).toMatchObject({ code: 104, msg: expect.stringContaining("names no node") });
  });

  it("M16 Plexus's own ADD and DEL on node A work unchanged: network-status written, the Event recorded", async () => {
    const api = await cluster(policy);
    const { run } = addThrough(nodeKubeconfig(api), "web-a");
    const add = await run("ADD");
    expect(add.code, add.stderr).toBe(0);
    expect(JSON.parse(annotationsOf(api, "web-a")[STATUS]!)).not.toHaveLength(0);
    expect(annotationsOf(api, "web-a").team).toBe("a");
    expect(
      api.events().map((e: KubeObject) => (e.involvedObject as { name: string }).name),
    ).toEqual(["web-a"]);
    const del = await run("DEL");
    expect(del.code, del.stderr).toBe(0);
  });

  it("M16 the daemon on node A (its own projected token) serves the binary's ADD: status and Event pass", async () => {
    const api = await cluster(policy);
    const { sb } = ctx;
    const kubeconfig = nodeKubeconfig(api);
    const socket = join(sb.root, "run", "plexus.sock");
    const daemon = spawn(
      PLEXUS_BIN,
      ["daemon", "--kubeconfig", kubeconfig, "--node-name", "node-a", "--socket", socket],
      {
        cwd: "/",
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    const exited = new Promise((resolve) => daemon.once("exit", resolve));
    try {
      await expect
        .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 15_000, interval: 20 })
        .toBe(200);
      const before = api.requests.length;
      const r = await addThrough(kubeconfig, "web-a", { daemonSocket: socket }).run("ADD");
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/daemon unavailable/);
      await expect
        .poll(() =>
          api.requests
            .slice(before)
            .filter((q) => q.method !== "GET")
            .map((q) => `${q.method} ${q.path} ${q.user}`),
        )
        .toEqual([
          "PATCH /api/v1/namespaces/app/pods/web-a/status " +
            "system:serviceaccount:kube-system:plexus",
          "POST /api/v1/namespaces/app/events system:serviceaccount:kube-system:plexus",
        ]);
      await expect.poll(() => api.events().length).toBe(1);
      expect(annotationsOf(api, "web-a")[STATUS]).toBeDefined();
    } finally {
      daemon.kill("SIGTERM");
      await exited;
    }
  });

  it("M16 plexus doctor says the token names node A and whether the policies are installed and bound", async () => {
    const api = await cluster(policy);
    const checks = await doctorWith(nodeKubeconfig(api));
    expect(checks.find((c) => c.subject === "token node")).toMatchObject({
      level: "ok",
      msg: expect.stringContaining("was issued on node node-a"),
    });
    expect(checks.find((c) => c.subject === "node-scoped writes")).toMatchObject(
      policy
        ? {
            level: "ok",
            msg: expect.stringContaining("writes with credentials that name no node are refused"),
          }
        : { level: "warning", msg: expect.stringContaining("not installed") },
    );
  });
});

it("M16 plexus doctor, when the credentials may not read the policies, says it could not tell", async () => {
  await using api = await startFakeApiServer({ clientCertificates: true });
  const kubeconfig = writeKubeconfig(api, {
    dir: ctx.sb.root,
    clientCertificate: { name: "other", as: "data" },
  });
  const checks = await doctorWith(kubeconfig);
  expect(checks.find((c) => c.subject === "node-scoped writes")).toMatchObject({
    level: "warning",
    msg: expect.stringMatching(
      /^could not tell whether the policies are installed: the credentials may not read/,
    ),
  });
  expect(checks.find((c) => c.subject === "token node")).toBeUndefined();
});

it("M16 with the switch (allow-tokens-without-node), a token that names no node writes, with a Warning the binary logs and an audit entry", async () => {
  const { sb } = ctx;
  const deployDir = join(sb.root, "deploy");
  cpSync(DEPLOY_DIR, deployDir, { recursive: true });
  const k = join(deployDir, "kustomization.yaml");
  const withSwitch = readFileSync(k, "utf8").replace(
    "  - components/node-scoped-writes\n",
    "  - components/node-scoped-writes\n  - components/allow-tokens-without-node\n",
  );
  expect(withSwitch).toContain("allow-tokens-without-node");
  writeFileSync(k, withSwitch);
  await using api = await startFakeApiServer({ node: "node-a", admission: { deployDir } });
  api.addPod({
    metadata: { namespace: "app", name: "web-a", uid: "uid-web-a" },
    spec: { nodeName: "node-a" },
  });
  const logFile = join(sb.root, "plexus.log");
  const kubeconfig = nodeKubeconfig(api, { node: "", name: "legacy" });
  const r = await addThrough(kubeconfig, "web-a", { logFile, logLevel: "warn" }).run("ADD");
  expect(r.code, r.stderr).toBe(0);
  expect(annotationsOf(api, "web-a")[STATUS]).toBeDefined();
  const patch = api.requests.find((q) => q.method === "PATCH")!;
  expect(patch.warnings).toEqual([expect.stringContaining("plexus-node-claim-required")]);
  expect(api.admissionAudit()).not.toHaveLength(0);
  const logged = readFileSync(logFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { msg: string; warning?: string });
  expect(logged.find((l) => l.msg === "the API server answered with a warning")?.warning).toContain(
    "names no node",
  );
  // A token that names another node is still refused.
  const other = await addThrough(nodeKubeconfig(api, { node: "node-b", name: "b" }), "web-a").run(
    "ADD",
  );
  expect(cniError(other)).toMatchObject({
    code: 104,
    msg: expect.stringContaining("is not on node node-b"),
  });
});

// ---------------------------------------------------------------------------------------------
// Identities other than the shipped service account, and Events that name more than their pod.
// ---------------------------------------------------------------------------------------------

type Doc = Record<string, any>;

/**
 * deploy/ as `kubectl kustomize` renders it from an operator's overlay (with its `namespace:`
 * when given), edited by `edit`, plus `extra` objects: one flat file the fake API server reads as
 * its deploy/ (RBAC, service account and admission alike).
 */
function renderedDeploy(
  options: { namespace?: string; extra?: Doc[]; edit?: (docs: Doc[]) => void } = {},
): string {
  const overlay = mkdtempSync(join(ctx.sb.root, "overlay-"));
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    ...(options.namespace ? { namespace: options.namespace } : {}),
    resources: [relative(overlay, DEPLOY_DIR)],
  };
  writeFileSync(join(overlay, "kustomization.yaml"), dump(kustomization));
  const rendered = execFileSync("kubectl", ["kustomize", overlay], { encoding: "utf8" });
  const docs = (loadAll(rendered) as Doc[]).filter(Boolean);
  options.edit?.(docs);
  const out = mkdtempSync(join(ctx.sb.root, "deploy-"));
  const all = [...docs, ...(options.extra ?? [])].map((d) => dump(d)).join("---\n");
  writeFileSync(join(out, "all.yaml"), all);
  writeFileSync(
    join(out, "kustomization.yaml"),
    dump({ apiVersion: kustomization.apiVersion, kind: "Kustomization", resources: ["all.yaml"] }),
  );
  return out;
}

/** An operator's binding of `subject` (a User or Group) to a cluster role. */
function binding(name: string, subject: { kind: string; name: string }, role = "plexus"): Doc {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", ...subject }],
  };
}

async function serverOf(deployDir: string): Promise<FakeApiServer> {
  const api = await startFakeApiServer({
    node: "node-a",
    clientCertificates: true,
    rbac: { deployDir },
    admission: { deployDir },
  });
  onTestFinished(() => api.close());
  return addWebPods(api);
}

const TLS_DIR = dirname(clientCertFiles("other").cert);

/** A client certificate for `subject` (`/O=group/CN=user`) signed by the fake server's CA. */
function signedCertificate(subject: string, name: string): { cert: string; key: string } {
  const at = (ext: string) => join(ctx.sb.root, `${name}.${ext}`);
  writeFileSync(
    at("ext"),
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n" +
      "extendedKeyUsage=clientAuth\n",
  );
  const openssl = (args: string[]) => execFileSync("openssl", args, { stdio: "ignore" });
  const newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl(["req", ...newKey, "-keyout", at("key"), "-out", at("csr"), "-subj", subject]);
  openssl([
    ...["x509", "-req", "-in", at("csr"), "-days", "1", "-out", at("crt"), "-extfile", at("ext")],
    ...["-CA", join(TLS_DIR, "ca.crt"), "-CAkey", join(TLS_DIR, "ca.key")],
    ...["-set_serial", `0x${randomBytes(8).toString("hex")}`],
  ]);
  return { cert: at("crt"), key: at("key") };
}

function certificateKubeconfig(api: FakeApiServer, files: { cert: string; key: string }): string {
  const path = `${files.cert}.kubeconfig`;
  const cluster = {
    server: api.url,
    "certificate-authority-data": Buffer.from(api.caPem).toString("base64"),
  };
  const kubeconfig = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "fake", cluster }],
    users: [{ name: "node", user: { "client-certificate": files.cert, "client-key": files.key } }],
    contexts: [{ name: "fake", context: { cluster: "fake", user: "node" } }],
    "current-context": "fake",
  };
  writeFileSync(path, dump(kubeconfig));
  return path;
}

const webA = { namespace: "app", name: "web-a", uid: "uid-web-a" };
const webB = { namespace: "app", name: "web-b", uid: "uid-web-b" };
const forged = { type: "Normal" as const, reason: "AddedInterface", message: "forged" };

describe("B95 identities other than the shipped service account", () => {
  it("B95 rendered into another namespace (kustomize namespace:), the policies hold that namespace's service account to its node", async () => {
    const api = await serverOf(renderedDeploy({ namespace: "plexus-system" }));
    expect(api.user.name).toBe("system:serviceaccount:plexus-system:plexus");
    const kubeconfig = nodeKubeconfig(api);
    const kube = await client(kubeconfig);
    expect(await refusal(kube.setNetworkStatus(webA, "[]"))).toBeUndefined();
    expect(await refusal(kube.setNetworkStatus(webB, "[]"))).toMatch(
      /HTTP 403 Forbidden.*pod app\/web-b is not on node node-a/,
    );
    expect(await refusal(kube.recordEvent(webB, forged))).toMatch(
      /HTTP 403 Forbidden.*Event about pod app\/web-b, which is not on node node-a/,
    );
    expect(annotationsOf(api, "web-b")).toEqual({ team: "a" });
    const legacy = await client(nodeKubeconfig(api, { node: "", name: "legacy" }));
    expect(await refusal(legacy.setNetworkStatus(webA, "[]"))).toMatch(
      /HTTP 403 Forbidden.*plexus-node-claim-required.*the service-account token names no node/,
    );
    expect((await doctorWith(kubeconfig)).find((c) => c.subject === "write identity")).toEqual({
      level: "ok",
      subject: "write identity",
      msg: expect.stringContaining(
        "service-account token of system:serviceaccount:plexus-system:plexus names node node-a",
      ),
    });
  });

  it("B95 a per-node client certificate (user plexus:node:<node>, group plexus:nodes) bound to Plexus's role is held to its node", async () => {
    const group = binding("plexus-nodes", { kind: "Group", name: "plexus:nodes" });
    const api = await serverOf(renderedDeploy({ extra: [group] }));
    const files = signedCertificate("/O=plexus:nodes/CN=plexus:node:node-a", "node-a");
    const kubeconfig = certificateKubeconfig(api, files);
    const kube = await client(kubeconfig);
    expect(await refusal(kube.setNetworkStatus(webA, "[]"))).toBeUndefined();
    expect(await refusal(kube.recordEvent(webA, forged))).toBeUndefined();
    expect(await refusal(kube.setNetworkStatus(webB, "[]"))).toMatch(
      /HTTP 403 Forbidden.*pod app\/web-b is not on node node-a/,
    );
    expect(await refusal(kube.recordEvent(webB, forged))).toMatch(
      /HTTP 403 Forbidden.*Event about pod app\/web-b, which is not on node node-a/,
    );
    const writes = api.requests.filter((q) => q.method !== "GET");
    expect(new Set(writes.map((q) => `${q.user} ${q.authenticatedBy}`))).toEqual(
      new Set(["plexus:node:node-a client-certificate"]),
    );
    expect(annotationsOf(api, "web-b")).toEqual({ team: "a" });
    expect((await doctorWith(kubeconfig)).find((c) => c.subject === "write identity")).toEqual({
      level: "ok",
      subject: "write identity",
      msg: expect.stringContaining("client certificate of plexus:node:node-a names node node-a"),
    });
  });

  it("B95 any other client certificate bound to Plexus's role is held too: it names no node, so its writes are refused, and doctor says why", async () => {
    const user = binding("plexus-test-user", { kind: "User", name: "plexus-test-user" });
    const api = await serverOf(renderedDeploy({ extra: [user] }));
    const kubeconfig = writeKubeconfig(api, {
      dir: ctx.sb.root,
      fileName: "other",
      clientCertificate: { name: "other", as: "file" },
    });
    const kube = await client(kubeconfig);
    expect(await refusal(kube.setNetworkStatus(webA, "[]"))).toMatch(
      /HTTP 403 Forbidden.*the credentials of plexus-test-user name no node/,
    );
    expect(await refusal(kube.recordEvent(webA, forged))).toMatch(/name no node/);
    expect((await doctorWith(kubeconfig)).find((c) => c.subject === "write identity")).toEqual({
      level: "warning",
      subject: "write identity",
      msg: expect.stringContaining("client certificate of plexus-test-user names no node"),
    });
  });

  it("B95 a user allowed every verb (cluster-admin) is not held, even bound to Plexus's role too; doctor calls a system:masters certificate outside the policies", async () => {
    const everything = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "everything" },
      rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }],
    };
    const admin = { kind: "User", name: "plexus-test-user" };
    const api = await serverOf(
      renderedDeploy({
        extra: [everything, binding("admin", admin, "everything"), binding("also", admin)],
      }),
    );
    const other = {
      dir: ctx.sb.root,
      clientCertificate: { name: "other" as const, as: "file" as const },
    };
    const kube = await client(writeKubeconfig(api, { ...other, fileName: "admin" }));
    expect(await refusal(kube.setNetworkStatus(webB, "[]"))).toBeUndefined();
    const masters = signedCertificate("/O=system:masters/CN=node-admin", "masters");
    const checks = await doctorWith(certificateKubeconfig(api, masters));
    expect(checks.find((c) => c.subject === "write identity")).toEqual({
      level: "error",
      subject: "write identity",
      msg: expect.stringMatching(
        /^the client certificate of node-admin is in the group system:masters, which the node-/,
      ),
    });
  });

  it("B95 doctor: a token that policies naming only the shipped account (an older deploy/) do not hold is an error, and its writes do pass", async () => {
    const byName = "request.userInfo.username == 'system:serviceaccount:kube-system:plexus'";
    const older = (docs: Doc[]) => {
      for (const d of docs.filter((x) => x.kind === "ValidatingAdmissionPolicy"))
        for (const c of d.spec.matchConditions)
          if (c.name === "plexus-identity") c.expression = byName;
    };
    const api = await serverOf(renderedDeploy({ namespace: "plexus-system", edit: older }));
    const kubeconfig = nodeKubeconfig(api);
    expect(await refusal((await client(kubeconfig)).setNetworkStatus(webB, "[]"))).toBeUndefined();
    expect((await doctorWith(kubeconfig)).find((c) => c.subject === "write identity")).toEqual({
      level: "error",
      subject: "write identity",
      msg: expect.stringContaining(
        "system:serviceaccount:plexus-system:plexus is outside the installed node-scoped-writes",
      ),
    });
  });
});

describe("B95 Events that name more than their pod", () => {
  /** A core/v1 Event in `app` about the pod `involved` names, with `extra` fields. */
  const event = (involved: Doc, extra: Doc = {}) => ({
    apiVersion: "v1",
    kind: "Event",
    metadata: { generateName: "forged.", namespace: "app" },
    involvedObject: { apiVersion: "v1", kind: "Pod", namespace: "app", ...involved },
    reason: "AddedInterface",
    message: "forged",
    type: "Normal",
    ...extra,
  });

  it.each([
    [
      "with `related` naming a node B pod",
      event({ name: "web-a", uid: "uid-web-a" }, { related: { kind: "Pod", ...webB } }),
      /may not record an Event with `related`/,
    ],
    [
      "naming no existing pod, with a node B pod's UID",
      event({ name: "ghost", uid: "uid-web-b" }),
      /Event naming pod app\/ghost with the UID of pod app\/web-b/,
    ],
    [
      "naming its own pod with a node B pod's UID",
      event({ name: "web-a", uid: "uid-web-b" }),
      /Event about pod app\/web-a with another UID|with the UID of pod app\/web-b/,
    ],
  ])("B95 with the stolen token, an Event %s is refused (403)", async (_what, body, why) => {
    const api = await cluster(true);
    const token = api.issueToken({ node: "node-a", pod: "plexus-a" });
    const post = (b: unknown) =>
      send(api, {
        method: "POST",
        path: "/api/v1/namespaces/app/events",
        token,
        contentType: "application/json",
        body: b,
      });
    const r = await post(body);
    expect(r.status, JSON.stringify(r.body)).toBe(403);
    expect(r.body.message).toMatch(why);
    expect(api.events()).toEqual([]);
    const own = await post(event({ name: "web-a", uid: "uid-web-a" }));
    expect(own.status, JSON.stringify(own.body)).toBe(201);
  });
});
