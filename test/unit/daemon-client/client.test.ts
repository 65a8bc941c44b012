/**
 * The CNI binary's reads through the daemon (src/daemon-client/client.ts): pod, NAD and
 * ResourceClaim each asked over a real unix socket, the answer checked and trimmed, `null` read as
 * the daemon's "no such object" where that can be, and any other wrong answer a fallback to the API
 * (here a FakeKube) for the rest of the call.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ResourceClaim } from "../../../src/cluster/dra-objects";
import { DaemonKube } from "../../../src/daemon-client/client";
import { DAEMON_API } from "../../../src/daemon-client/protocol";
import { FakeKube } from "../../fakes/fake-kube";

/** FakeKube with the DRA read the daemon's fallback needs. */
class DraFakeKube extends FakeKube {
  readonly claims = new Map<string, ResourceClaim>();
  async getResourceClaim(namespace: string, name: string): Promise<ResourceClaim | undefined> {
    this.calls.push(`getResourceClaim ${namespace}/${name}`);
    return this.claims.get(`${namespace}/${name}`);
  }
}

interface FakeDaemon {
  /** The answer's JSON per route (DAEMON_API); a route without one answers 404. */
  answers: Map<string, unknown>;
  /** A CNI error per route, answered as the daemon answers one (HTTP 422). */
  errors: Map<string, { code: number; msg: string }>;
  /** Every request's path and query, in order. */
  asked: string[];
  kube: DaemonKube;
  direct: DraFakeKube;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

async function fakeDaemon(): Promise<FakeDaemon> {
  const dir = mkdtempSync(join(tmpdir(), "plx-daemon-client-"));
  const socketPath = join(dir, "plexus.sock");
  const answers = new Map<string, unknown>();
  const errors = new Map<string, { code: number; msg: string }>();
  const asked: string[] = [];
  const server: Server = createServer((req, res) => {
    asked.push(req.url ?? "");
    const route = new URL(req.url ?? "/", "http://plexus").pathname;
    const error = errors.get(route);
    if (error) {
      res.writeHead(422, { "content-type": "application/json" });
      res.end(JSON.stringify({ error }));
      return;
    }
    const answer = answers.get(route);
    res.writeHead(answer === undefined ? 404 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify(answer ?? {}));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  const direct = new DraFakeKube();
  const kube = new DaemonKube({
    socketPath,
    timeoutMs: 5_000,
    writeTimeoutMs: 5_000,
    direct: async () => direct,
  });
  cleanups.push(async () => {
    await kube.close();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  return { answers, errors, asked, kube, direct };
}

const rawPod = {
  kind: "Pod",
  metadata: { name: "web", namespace: "app", uid: "u1", labels: { a: "b" } },
  spec: { nodeName: "node-1", containers: [{ name: "c", image: "busybox" }] },
  status: { phase: "Running" },
};
const rawNad = {
  kind: "NetworkAttachmentDefinition",
  metadata: { name: "net-a", namespace: "app", managedFields: [{}] },
  spec: { config: '{"cniVersion":"1.0.0","type":"bridge"}' },
};
const rawClaim = {
  kind: "ResourceClaim",
  metadata: { name: "gpu", namespace: "app", uid: "c1", finalizers: ["x"] },
  spec: { devices: { requests: [{ name: "r" }] } },
};

describe("the daemon's client: ask, check, trim, fall back", () => {
  it("N5 M10 each read is one request naming the object, its answer trimmed; no API request", async () => {
    const d = await fakeDaemon();
    d.answers.set(DAEMON_API.pod, { pod: rawPod, source: "cache" });
    d.answers.set(DAEMON_API.nad, { nad: rawNad, source: "cache" });
    d.answers.set(DAEMON_API.resourceClaim, { claim: rawClaim });
    expect(await d.kube.getPod("app", "web", "u1")).toEqual({
      metadata: { name: "web", namespace: "app", uid: "u1" },
      spec: { nodeName: "node-1" },
    });
    expect(await d.kube.getNad("app", "net-a")).toEqual({
      apiVersion: "k8s.cni.cncf.io/v1",
      kind: "NetworkAttachmentDefinition",
      metadata: { name: "net-a", namespace: "app" },
      spec: { config: rawNad.spec.config },
    });
    expect(await d.kube.getResourceClaim("app", "gpu", { uid: "u1" })).toEqual({
      metadata: { name: "gpu", namespace: "app", uid: "c1" },
    });
    expect(d.asked).toEqual([
      "/v1/pod?namespace=app&name=web&uid=u1",
      "/v1/nad?namespace=app&name=net-a",
      "/v1/resource-claim?namespace=app&name=gpu&podUid=u1",
    ]);
    expect(d.kube.fallbackReason).toBeUndefined();
    expect(d.direct.calls).toEqual([]);
  });

  it("B28 M10 null is the daemon's 'no such NAD' or 'no such claim', believed without a second read", async () => {
    const d = await fakeDaemon();
    d.answers.set(DAEMON_API.nad, { nad: null, source: "api" });
    d.answers.set(DAEMON_API.resourceClaim, { claim: null });
    d.direct.addNad("app", "net-a", { type: "bridge" });
    expect(await d.kube.getNad("app", "net-a")).toBeUndefined();
    expect(await d.kube.getResourceClaim("app", "gpu")).toBeUndefined();
    expect(d.kube.fallbackReason).toBeUndefined();
    expect(d.direct.calls).toEqual([]);
  });

  it("a pod answer of null is no answer: thin mode, for this and every later read of the call", async () => {
    const d = await fakeDaemon();
    d.answers.set(DAEMON_API.pod, { pod: null, source: "cache" });
    d.answers.set(DAEMON_API.nad, { nad: rawNad, source: "cache" });
    d.direct.addPod("app", "web").addNad("app", "net-a", { type: "macvlan" });
    expect((await d.kube.getPod("app", "web")).metadata.name).toBe("web");
    expect(d.kube.fallbackReason).toBe("the daemon answered a pod request without a pod");
    expect((await d.kube.getNad("app", "net-a"))?.spec?.config).toBe('{"type":"macvlan"}');
    expect(d.asked).toEqual(["/v1/pod?namespace=app&name=web"]);
    expect(d.direct.calls).toEqual(["getPod app/web", "getNad app/net-a"]);
  });

  it.each([
    ["nad", DAEMON_API.nad, { nad: { ...rawNad, metadata: { name: "net-b" } } }, "NAD"],
    ["claim", DAEMON_API.resourceClaim, { claim: { ...rawClaim, kind: "Pod" } }, "claim"],
    ["claim", DAEMON_API.resourceClaim, { claim: "gpu" }, "claim"],
  ])(
    "an answer without the %s asked for (%j): thin mode, naming what was wrong",
    async (_, route, answer, noun) => {
      const d = await fakeDaemon();
      d.answers.set(route, answer);
      d.direct.addNad("app", "net-a", { type: "bridge" });
      d.direct.claims.set("app/gpu", { metadata: { name: "gpu", namespace: "app" } });
      const got =
        noun === "NAD"
          ? await d.kube.getNad("app", "net-a")
          : await d.kube.getResourceClaim("app", "gpu");
      expect(got?.metadata.name).toBe(noun === "NAD" ? "net-a" : "gpu");
      expect(d.kube.fallbackReason).toBe(`the daemon answered a ${noun} request without a ${noun}`);
      expect(d.direct.calls).toHaveLength(1);
    },
  );
});

describe("the daemon's client: a write for a pod the daemon served", () => {
  /** The daemon's write of the status, refused by the API server as its rest client words it. */
  const refused = {
    code: 3,
    msg:
      "write network-status of pod app/web: the pod was deleted and recreated: the API server " +
      "refused the runtime's K8S_POD_UID u1 as a change of the pod's UID (HTTP 422 Invalid)",
  };

  it("M8 without the runtime's K8S_POD_UID, a refused write names the pod the daemon served as replaced, not the runtime", async () => {
    const d = await fakeDaemon();
    d.answers.set(DAEMON_API.pod, { pod: rawPod, source: "cache" });
    d.errors.set(DAEMON_API.networkStatus, refused);
    const pod = await d.kube.getPod("app", "web");
    const write = d.kube.setNetworkStatus({ namespace: "app", name: "web", uid: "u1" }, "[]");
    const err = await write.then(
      () => undefined,
      (e: unknown) => e as { code: number; message: string },
    );
    expect(pod.metadata.uid).toBe("u1");
    expect(err?.code).toBe(3);
    expect(err?.message).toContain(
      "the pod the plexus daemon served this ADD (UID u1, from its cache)",
    );
    expect(err?.message).toContain("replaced by a new pod of that name");
    expect(err?.message).toContain("the runtime passed no K8S_POD_UID");
    expect(err?.message).not.toContain("the runtime's K8S_POD_UID");
  });

  it("M8 with the runtime's K8S_POD_UID the daemon's refusal is passed on as it is", async () => {
    const d = await fakeDaemon();
    d.answers.set(DAEMON_API.pod, { pod: rawPod, source: "cache" });
    d.errors.set(DAEMON_API.networkStatus, refused);
    await d.kube.getPod("app", "web", "u1");
    await expect(
      d.kube.setNetworkStatus({ namespace: "app", name: "web", uid: "u1" }, "[]"),
    ).rejects.toMatchObject({ code: 3, message: refused.msg });
  });
});
