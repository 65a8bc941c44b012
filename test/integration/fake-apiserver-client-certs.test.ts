/**
 * Client certificates in a kubeconfig, over real TLS against the fake API server (which asks for a
 * certificate, verifies it against the test CA and authenticates its CN/O, as kube-apiserver with
 * --client-ca-file): the CNI binary (dist/plexus) and `plexus daemon`, each with
 * `client-certificate-data`/`client-key-data` and with `client-certificate`/`client-key` paths.
 * Every request must be authenticated by the certificate, and must be one the shipped RBAC grants.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { type FakeApiServer, startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import { PLEXUS_BIN, unixSocketStatus } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const STATUS = "k8s.v1.cni.cncf.io/network-status";
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
const SA = "system:serviceaccount:kube-system:plexus";

async function apiWithPod(): Promise<FakeApiServer> {
  // A certificate names no node: the node-scoped-writes policy would refuse its writes by default
  // (docs/node-scoped-writes.md); these tests are about authentication.
  const api = await startFakeApiServer({ clientCertificates: true, admission: false });
  onTestFinished(() => api.close());
  api.addPod({
    metadata: { namespace: "app", name: "web", uid: "uid-web" },
    spec: { nodeName: "node-1" },
  });
  api.addNad({ metadata: { namespace: "app", name: "net-b" }, spec: { config: "{}" } });
  return api;
}

/** Who made each request, and how: [user, "client-certificate"|"token"|undefined]. */
const identities = (api: FakeApiServer) =>
  new Set(api.requests.map((r) => `${r.user} by ${r.authenticatedBy}`));

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null
      ? resolve(child.exitCode)
      : child.once("exit", (code) => resolve(code)),
  );
}

for (const as of ["data", "file"] as const) {
  const form =
    as === "data"
      ? "client-certificate-data/client-key-data"
      : "client-certificate/client-key paths";
  describe(`a kubeconfig with ${form}`, () => {
    it("M1 dist/plexus: the ADD reads the pod and writes its status, every request authenticated by the certificate", async () => {
      const { sb } = ctx;
      const api = await apiWithPod();
      const kubeconfig = writeKubeconfig(api, {
        dir: sb.root,
        clientCertificate: { name: "plexus", as },
      });
      const conf = sb.config([sb.delegate("net-a")], { kubeconfig });
      const r = await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(api.requests.map((q) => `${q.method} ${q.path}`)).toEqual([
        "GET /api/v1/namespaces/app/pods/web",
        "PATCH /api/v1/namespaces/app/pods/web/status",
        "POST /api/v1/namespaces/app/events",
      ]);
      expect(identities(api)).toEqual(new Set([`${SA} by client-certificate`]));
      expect(
        JSON.parse(
          (api.getPod("app", "web")!.metadata.annotations as Record<string, string>)[STATUS]!,
        ),
      ).toMatchObject([{ name: "net-a" }]);
    });

    it("M1 plexus daemon: its lists and watches (client-node) and its writes authenticate with the certificate; an ADD through it reads nothing from the API", async () => {
      const { sb } = ctx;
      const api = await apiWithPod();
      const kubeconfig = writeKubeconfig(api, {
        dir: sb.root,
        clientCertificate: { name: "plexus", as },
      });
      const socket = join(sb.root, "run", "plexus.sock");
      const daemon = spawn(
        PLEXUS_BIN,
        ["daemon", "--kubeconfig", kubeconfig, "--node-name", "node-1", "--socket", socket],
        {
          cwd: "/",
          stdio: ["ignore", "ignore", "pipe"],
        },
      );
      let stderr = "";
      daemon.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
      onTestFinished(async () => {
        if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill("SIGKILL");
        await exitOf(daemon);
      });
      await expect
        .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 15_000, interval: 20 })
        .toBe(200);
      // Pods, NADs, this node's ResourceSlices.
      await expect.poll(() => api.watchCount(), { timeout: 5000 }).toBe(3);
      const before = api.requests.length;
      const conf = sb.config([sb.delegate("net-a")], { kubeconfig, daemonSocket: socket });
      const r = await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
      expect(r.code, r.stdout + r.stderr).toBe(0);
      await expect
        .poll(() => api.requests.slice(before).map((q) => `${q.method} ${q.path}`))
        .toEqual([
          "PATCH /api/v1/namespaces/app/pods/web/status",
          "POST /api/v1/namespaces/app/events",
        ]);
      expect(api.requests.filter((q) => q.query.includes("watch=true")).length).toBe(3);
      expect(identities(api)).toEqual(new Set([`${SA} by client-certificate`]));
      daemon.kill("SIGTERM");
      expect(await exitOf(daemon), stderr).toBe(0);
    });
  });
}
