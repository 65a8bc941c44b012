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
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { isCniError } from "../../src/cni/errors";
import { loadKubeApi } from "../../src/kubeapi/index";
import type { RestKube } from "../../src/kubeapi/rest-kube";
import { doctor } from "../../src/ops/doctor";
import {
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

/** A cluster with pods `web-a` (node-a, with a label and an annotation) and `web-b` (node-b) in `app`. */
async function cluster(policy: boolean): Promise<FakeApiServer> {
  const api = await startFakeApiServer({ node: "node-a", ...(policy ? {} : { admission: false }) });
  onTestFinished(() => api.close());
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
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = request(
      `${api.url}/api/v1/namespaces/app/pods/${options.pod}/status`,
      {
        method: "PATCH",
        ca: api.caPem,
        agent: false,
        headers: {
          authorization: `Bearer ${options.kubeconfigToken}`,
          "content-type": "application/merge-patch+json",
        },
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(options.patch));
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
          "PATCH /api/v1/namespaces/app/pods/web-a/status system:serviceaccount:kube-system:plexus",
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
            msg: expect.stringContaining("writes with a token that names no node are refused"),
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
