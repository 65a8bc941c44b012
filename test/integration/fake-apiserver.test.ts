/**
 * The fake API server's own protocol, over real HTTPS, checked against what kube-apiserver answers:
 * Status bodies, bearer tokens, RBAC from deploy/ (403 as kube-apiserver words it), PUT's UID
 * precondition (409) vs PATCH's validation (422 for a changed UID), GuaranteedUpdate's internal
 * retry of a racing write, merge vs strategic merge patch, the status subresource, NADs, events,
 * LIST's resourceVersion semantics (watch cache vs quorum read, 410 Expired continue tokens),
 * faults and clean shutdown. The client tests rely on all of this.
 *
 * Requests Plexus never makes (PUT of a pod, events.k8s.io, nodes) go with the administrator's
 * token (system:masters); everything else with the service account's, under the shipped RBAC.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "node:https";
import { dump, loadAll } from "js-yaml";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  ADMIN_TOKEN,
  clientCertFiles,
  DEPLOY_DIR,
  startFakeApiServer,
  type FakeApiServer,
} from "../support/fake-apiserver";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

function call(
  server: FakeApiServer,
  method: string,
  path: string,
  options: { body?: unknown; contentType?: string; token?: string | null } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (options.token !== null) headers.authorization = `Bearer ${options.token ?? server.token}`;
    if (options.body !== undefined)
      headers["content-type"] = options.contentType ?? "application/json";
    const req = request(
      `${server.url}${path}`,
      { method, headers, ca: server.caPem, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            /* keep text */
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body === undefined ? undefined : JSON.stringify(options.body));
  });
}

const POD = "/api/v1/namespaces/ns1/pods/p1";

// The service account's writes here change labels and make bare Events: the protocol, not what
// the node-scoped-writes policy lets a node write (test/integration/node-scoped-writes.test.ts).
async function withPod(fn: (s: FakeApiServer) => Promise<void>) {
  await using s = await startFakeApiServer({ admission: false });
  s.addPod({ metadata: { name: "p1", namespace: "ns1", annotations: { keep: "me" } } });
  await fn(s);
}

describe("fake API server: errors are metav1.Status", () => {
  it("401 without the bearer token", async () => {
    await withPod(async (s) => {
      const r = await call(s, "GET", POD, { token: null });
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        reason: "Unauthorized",
        code: 401,
      });
      expect((await call(s, "GET", POD, { token: "wrong" })).status).toBe(401);
    });
  });

  it("404 NotFound with details for a missing pod and an unknown path", async () => {
    await withPod(async (s) => {
      const r = await call(s, "GET", "/api/v1/namespaces/ns1/pods/nope");
      expect(r.status).toBe(404);
      expect(r.body).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: 'pods "nope" not found',
        reason: "NotFound",
        details: { name: "nope", kind: "pods" },
        code: 404,
      });
      expect((await call(s, "GET", "/api/v1/nodes", { token: ADMIN_TOKEN })).body).toMatchObject({
        kind: "Status",
        code: 404,
      });
    });
  });
});

describe("fake API server: an API group it does not serve", () => {
  it("as kube-apiserver's notfoundhandler: a plain-text 404, no Status; a missing object's names it", async () => {
    await using s = await startFakeApiServer({ unserved: ["resource.k8s.io/v1"] });
    for (const path of [
      "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/c1",
      "/apis/resource.k8s.io/v1/resourceslices",
      "/apis/resource.k8s.io/v1/resourceslices?watch=true",
    ]) {
      const r = await call(s, "GET", path, { token: ADMIN_TOKEN });
      expect(r.status, path).toBe(404);
      expect(r.headers["content-type"], path).toBe("text/plain; charset=utf-8");
      expect(r.headers["x-content-type-options"], path).toBe("nosniff");
      expect(r.body, path).toBe("404 page not found\n");
    }
    // A served group's missing object: NewNotFound's Status, the resource as kind and its group.
    const nad = await call(
      s,
      "GET",
      "/apis/k8s.cni.cncf.io/v1/namespaces/ns1/network-attachment-definitions/nope",
    );
    expect(nad.status).toBe(404);
    expect(nad.body).toMatchObject({
      reason: "NotFound",
      message: 'network-attachment-definitions.k8s.cni.cncf.io "nope" not found',
      details: { name: "nope", group: "k8s.cni.cncf.io", kind: "network-attachment-definitions" },
    });
  });
});

describe("fake API server: writes and preconditions", () => {
  it("PUT with the current resourceVersion succeeds and bumps it; a stale one is 409 Conflict", async () => {
    await withPod(async (s) => {
      const pod = (await call(s, "GET", POD)).body;
      const rv = pod.metadata.resourceVersion as string;
      const admin = { token: ADMIN_TOKEN };
      const put = await call(s, "PUT", POD, {
        ...admin,
        body: { ...pod, metadata: { ...pod.metadata, labels: { a: "1" } } },
      });
      expect(put.status).toBe(200);
      expect(Number(put.body.metadata.resourceVersion)).toBeGreaterThan(Number(rv));
      expect(put.body.metadata.labels).toEqual({ a: "1" });
      const stale = await call(s, "PUT", POD, {
        ...admin,
        body: { ...pod, metadata: { ...pod.metadata, labels: { a: "2" } } },
      });
      expect(stale.status).toBe(409);
      expect(stale.body).toMatchObject({
        kind: "Status",
        status: "Failure",
        reason: "Conflict",
        code: 409,
      });
      // An update's object carries its UID: a storage precondition, so another UID is 409 too.
      const current = s.getPod("ns1", "p1")!;
      const otherUid = await call(s, "PUT", POD, {
        ...admin,
        body: { ...current, metadata: { ...current.metadata, uid: "x" } },
      });
      expect(otherUid.status).toBe(409);
      expect(otherUid.body.message).toContain("Precondition failed: UID in precondition: x");
      expect(s.getPod("ns1", "p1")!.metadata.labels).toEqual({ a: "1" });
    });
  });

  it("a merge patch with another UID is 422 Invalid (field is immutable), as PATCH sets no storage precondition; a stale resourceVersion is 409; without them it applies", async () => {
    await withPod(async (s) => {
      const rv = s.getPod("ns1", "p1")!.metadata.resourceVersion as string;
      const merge = "application/merge-patch+json";
      const ok = await call(s, "PATCH", `${POD}/status`, {
        body: { metadata: { resourceVersion: rv, annotations: { x: "1" } } },
        contentType: merge,
      });
      expect(ok.status).toBe(200);
      const stale = await call(s, "PATCH", `${POD}/status`, {
        body: { metadata: { resourceVersion: rv, annotations: { x: "2" } } },
        contentType: merge,
      });
      expect(stale.status).toBe(409);
      const uid = await call(s, "PATCH", `${POD}/status`, {
        body: { metadata: { uid: "other", annotations: { x: "3" } } },
        contentType: merge,
      });
      expect(uid.status).toBe(422);
      expect(uid.body).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: 'Pod "p1" is invalid: metadata.uid: Invalid value: "other": field is immutable',
        reason: "Invalid",
        details: {
          name: "p1",
          kind: "Pod",
          causes: [
            {
              reason: "FieldValueInvalid",
              message: 'Invalid value: "other": field is immutable',
              field: "metadata.uid",
            },
          ],
        },
        code: 422,
      });
      expect(s.getPod("ns1", "p1")!.metadata.annotations).toEqual({ keep: "me", x: "1" });
      const same = await call(s, "PATCH", `${POD}/status`, {
        body: {
          metadata: {
            uid: s.getPod("ns1", "p1")!.metadata.uid,
            annotations: { x: "4", keep: null },
          },
        },
        contentType: merge,
      });
      expect(same.status).toBe(200);
      expect(s.getPod("ns1", "p1")!.metadata.annotations).toEqual({ x: "4" });
    });
  });

  it("a write that races another is retried inside the server (GuaranteedUpdate): a merge patch without resourceVersion lands, one with it is 409", async () => {
    await withPod(async (s) => {
      const merge = "application/merge-patch+json";
      s.inject({ method: "PATCH", times: 1 }, { kind: "racing-write" });
      const before = Number(s.resourceVersion());
      const r = await call(s, "PATCH", `${POD}/status`, {
        body: { metadata: { annotations: { y: "1" } } },
        contentType: merge,
      });
      expect(r.status).toBe(200);
      expect(s.storageRetries()).toBe(1);
      // The racer's write and this one: two revisions, one request.
      expect(Number(s.resourceVersion())).toBe(before + 2);
      expect(s.getPod("ns1", "p1")!.metadata.annotations).toEqual({ keep: "me", y: "1" });
      const rv = s.getPod("ns1", "p1")!.metadata.resourceVersion;
      s.inject({ method: "PATCH", times: 1 }, { kind: "racing-write" });
      const pinned = await call(s, "PATCH", `${POD}/status`, {
        body: { metadata: { resourceVersion: rv, annotations: { y: "2" } } },
        contentType: merge,
      });
      expect(pinned.status).toBe(409);
      expect(s.getPod("ns1", "p1")!.metadata.annotations).toEqual({ keep: "me", y: "1" });
    });
  });

  it("merge patch replaces a list; strategic merge patch merges it by name", async () => {
    await withPod(async (s) => {
      const patch = { spec: { containers: [{ name: "sidecar", image: "envoy" }] } };
      const admin = { token: ADMIN_TOKEN };
      await call(s, "PATCH", POD, {
        ...admin,
        body: patch,
        contentType: "application/strategic-merge-patch+json",
      });
      expect(
        (s.getPod("ns1", "p1")!.spec as { containers: { name: string }[] }).containers.map(
          (c) => c.name,
        ),
      ).toEqual(["main", "sidecar"]);
      await call(s, "PATCH", POD, {
        ...admin,
        body: patch,
        contentType: "application/merge-patch+json",
      });
      expect(
        (s.getPod("ns1", "p1")!.spec as { containers: { name: string }[] }).containers.map(
          (c) => c.name,
        ),
      ).toEqual(["sidecar"]);
      const json = await call(s, "PATCH", POD, {
        ...admin,
        body: [{ op: "add", path: "/x", value: 1 }],
        contentType: "application/json-patch+json",
      });
      expect(json.status).toBe(415);
      expect(json.body).toMatchObject({ kind: "Status", reason: "UnsupportedMediaType" });
    });
  });

  it("the status subresource keeps the spec; the main resource keeps the status", async () => {
    await withPod(async (s) => {
      await call(s, "PATCH", `${POD}/status`, {
        body: {
          metadata: { annotations: { a: "1" } },
          spec: { nodeName: "evil" },
          status: { phase: "Running" },
        },
        contentType: "application/merge-patch+json",
      });
      let pod = s.getPod("ns1", "p1")!;
      expect(pod.metadata.annotations).toMatchObject({ a: "1", keep: "me" });
      expect((pod.spec as { nodeName: string }).nodeName).toBe("node-1");
      expect((pod.status as { phase: string }).phase).toBe("Running");
      await call(s, "PATCH", POD, {
        token: ADMIN_TOKEN,
        body: { status: { phase: "Failed" } },
        contentType: "application/merge-patch+json",
      });
      pod = s.getPod("ns1", "p1")!;
      expect((pod.status as { phase: string }).phase).toBe("Running");
    });
  });
});

describe("fake API server: NADs and events", () => {
  it("GET and LIST network-attachment-definitions per namespace", async () => {
    await using s = await startFakeApiServer();
    s.addNad({
      metadata: { name: "net-a", namespace: "ns1" },
      spec: { config: '{"cniVersion":"1.0.0"}' },
    });
    s.addNad({ metadata: { name: "net-b", namespace: "ns2" } });
    const base = "/apis/k8s.cni.cncf.io/v1/namespaces";
    const one = await call(s, "GET", `${base}/ns1/network-attachment-definitions/net-a`);
    expect(one.body).toMatchObject({
      apiVersion: "k8s.cni.cncf.io/v1",
      kind: "NetworkAttachmentDefinition",
      metadata: { name: "net-a", namespace: "ns1" },
      spec: { config: '{"cniVersion":"1.0.0"}' },
    });
    const list = await call(s, "GET", `${base}/ns1/network-attachment-definitions`);
    expect(list.body.kind).toBe("NetworkAttachmentDefinitionList");
    expect(list.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual([
      "net-a",
    ]);
    expect((await call(s, "GET", `${base}/ns1/network-attachment-definitions/net-b`)).status).toBe(
      404,
    );
  });

  it("POST events to core v1 and events.k8s.io/v1; a namespace mismatch is 400", async () => {
    await using s = await startFakeApiServer({ admission: false });
    const core = await call(s, "POST", "/api/v1/namespaces/ns1/events", {
      body: { metadata: { generateName: "p1." }, reason: "AddedInterface" },
    });
    expect(core.status).toBe(201);
    expect(core.body.metadata.name).toMatch(/^p1\./);
    const v1 = await call(s, "POST", "/apis/events.k8s.io/v1/namespaces/ns1/events", {
      token: ADMIN_TOKEN,
      body: { metadata: { name: "e1" }, reason: "X" },
    });
    expect(v1.status).toBe(201);
    expect(s.events().map((e) => e.apiVersion)).toEqual(["v1", "events.k8s.io/v1"]);
    const bad = await call(s, "POST", "/api/v1/namespaces/ns1/events", {
      body: { metadata: { namespace: "ns2" } },
    });
    expect(bad.status).toBe(400);
  });
});

describe("fake API server: faults, log and shutdown", () => {
  it("a fault applies `times` times to matching requests only, then normal answers resume", async () => {
    await withPod(async (s) => {
      s.inject(
        { method: "GET", path: POD, times: 2 },
        { kind: "status", code: 429, retryAfter: "3" },
      );
      const a = await call(s, "GET", POD);
      expect(a.status).toBe(429);
      expect(a.headers["retry-after"]).toBe("3");
      expect(a.body).toMatchObject({ kind: "Status", reason: "TooManyRequests", code: 429 });
      expect((await call(s, "GET", "/api/v1/namespaces/ns1/pods")).status).toBe(200);
      expect((await call(s, "GET", POD)).status).toBe(429);
      expect((await call(s, "GET", POD)).status).toBe(200);
      expect(s.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
        `GET ${POD}`,
        "GET /api/v1/namespaces/ns1/pods",
        `GET ${POD}`,
        `GET ${POD}`,
      ]);
    });
  });

  it("html, truncated, wrong-kind, huge and delayed answers look as advertised", async () => {
    await withPod(async (s) => {
      s.inject({ path: POD, times: 1 }, { kind: "html" });
      const html = await call(s, "GET", POD);
      expect(html.status).toBe(200);
      expect(html.headers["content-type"]).toContain("text/html");
      s.inject({ path: POD, times: 1 }, { kind: "truncated" });
      const cut = await call(s, "GET", POD);
      expect(typeof cut.body).toBe("string");
      expect(() => JSON.parse(cut.body)).toThrow();
      s.inject({ path: POD, times: 1 }, { kind: "wrong-kind" });
      expect((await call(s, "GET", POD)).body.kind).toBe("List");
      s.inject({ path: POD, times: 1 }, { kind: "huge-body", bytes: 1 << 20 });
      const huge = await call(s, "GET", POD);
      expect(Number(huge.headers["content-length"])).toBe(1 << 20);
      s.inject({ path: POD, times: 1 }, { kind: "delay", ms: 120 });
      const t0 = performance.now();
      expect((await call(s, "GET", POD)).status).toBe(200);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(110);
    });
  });

  it("reset closes the connection without an answer; close() destroys hung connections", async () => {
    const s = await startFakeApiServer();
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    s.inject({ path: POD, times: 1 }, { kind: "reset" });
    await expect(call(s, "GET", POD)).rejects.toMatchObject({
      code: expect.stringMatching(/ECONNRESET|EPIPE/),
    });
    s.inject({ path: POD }, { kind: "hang" });
    const hung = call(s, "GET", POD).then(
      () => "answered",
      (err: unknown) => err,
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(s.connectionCount()).toBe(1);
    await s.close();
    expect(await hung).toBeInstanceOf(Error);
    expect(s.connectionCount()).toBe(0);
  });

  it("plain HTTP mode serves the same protocol", async () => {
    await using s = await startFakeApiServer({ tls: false });
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    s.addPod({ metadata: { name: "p1" } });
    const r = await fetch(`${s.url}/api/v1/namespaces/default/pods/p1`, {
      headers: { authorization: `Bearer ${s.token}` },
    });
    expect(r.status).toBe(200);
    expect(((await r.json()) as { metadata: { namespace: string } }).metadata.namespace).toBe(
      "default",
    );
  });
});

describe("fake API server: RBAC from deploy/", () => {
  it("the token is the shipped service account's; what its ClusterRole grants passes, anything else is 403 worded as kube-apiserver words it", async () => {
    await withPod(async (s) => {
      expect(s.user.name).toBe("system:serviceaccount:kube-system:plexus");
      expect((await call(s, "GET", POD)).status).toBe(200);
      expect(
        (await call(s, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1")).status,
      ).toBe(200);
      const put = await call(s, "PUT", POD, { body: s.getPod("ns1", "p1") });
      expect(put.status).toBe(403);
      expect(put.body).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message:
          'pods "p1" is forbidden: User "system:serviceaccount:kube-system:plexus" cannot update ' +
          'resource "pods" in API group "" in the namespace "ns1"',
        reason: "Forbidden",
        details: { name: "p1", kind: "pods" },
        code: 403,
      });
      const secrets = await call(s, "GET", "/api/v1/secrets");
      expect(secrets.status).toBe(403);
      expect(secrets.body.message).toBe(
        'secrets is forbidden: User "system:serviceaccount:kube-system:plexus" cannot list ' +
          'resource "secrets" in API group "" at the cluster scope',
      );
      const ev = await call(s, "POST", "/apis/events.k8s.io/v1/namespaces/ns1/events", {
        body: { metadata: {} },
      });
      expect(ev.body.message).toContain(
        'events.events.k8s.io is forbidden: User "system:serviceaccount:kube-system:plexus" ' +
          'cannot create resource "events" in API group "events.k8s.io" in the namespace "ns1"',
      );
      expect(s.requests.map((r) => r.user)).toEqual(
        Array(5).fill("system:serviceaccount:kube-system:plexus"),
      );
      // The administrator (system:masters) is not subject to RBAC.
      expect((await call(s, "GET", "/api/v1/secrets", { token: ADMIN_TOKEN })).status).toBe(404);
    });
  });

  it("the rules are derived from the manifests, not written into the fake: a deploy/ without the pods/status rule denies the status write", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-deploy-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    cpSync(DEPLOY_DIR, dir, { recursive: true });
    const docs = loadAll(readFileSync(join(dir, "rbac.yaml"), "utf8")) as {
      kind: string;
      rules?: { resources?: string[] }[];
    }[];
    for (const d of docs)
      if (d.kind === "ClusterRole")
        d.rules = d.rules!.filter((r) => !r.resources?.includes("pods/status"));
    writeFileSync(join(dir, "rbac.yaml"), docs.map((d) => dump(d)).join("---\n"));
    await using s = await startFakeApiServer({ rbac: { deployDir: dir } });
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const patch = {
      body: { metadata: { annotations: { a: "1" } } },
      contentType: "application/merge-patch+json",
    };
    const denied = await call(s, "PATCH", `${POD}/status`, patch);
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain(
      'cannot patch resource "pods/status" in API group "" in the namespace "ns1"',
    );
    expect((await call(s, "GET", POD)).status).toBe(200);
  });

  it("with rbac: false nothing is enforced (only for tests about something else)", async () => {
    await using s = await startFakeApiServer({ rbac: false });
    expect(
      (
        await call(s, "POST", "/apis/events.k8s.io/v1/namespaces/ns1/events", {
          body: { metadata: {} },
        })
      ).status,
    ).toBe(201);
  });
});

describe("fake API server: LIST as the cacher serves it", () => {
  const LIST = "/api/v1/namespaces/ns1/pods";
  async function fivePods() {
    const s = await startFakeApiServer();
    for (let i = 0; i < 5; i++) s.addPod({ metadata: { name: `p${i}`, namespace: "ns1" } });
    return s;
  }
  const served = (s: FakeApiServer) => s.requests.map((r) => r.list?.servedFrom);

  it('resourceVersion unset is a quorum read from etcd (paged by limit); "0" comes from the watch cache with its limit ignored; N without limit from the cache, N with a limit from etcd', async () => {
    await using s = await fivePods();
    const rv = s.resourceVersion();
    const quorum = await call(s, "GET", `${LIST}?limit=2`);
    expect(quorum.body.items).toHaveLength(2);
    expect(quorum.body.metadata).toMatchObject({ resourceVersion: rv, remainingItemCount: 3 });
    const cached = await call(s, "GET", `${LIST}?resourceVersion=0&limit=2`);
    expect(cached.body.items).toHaveLength(5);
    expect(cached.body.metadata.continue).toBeUndefined();
    expect((await call(s, "GET", `${LIST}?resourceVersion=${rv}`)).body.items).toHaveLength(5);
    expect((await call(s, "GET", `${LIST}?resourceVersion=${rv}&limit=2`)).body.items).toHaveLength(
      2,
    );
    expect(
      (await call(s, "GET", `${LIST}?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`))
        .status,
    ).toBe(200);
    expect(served(s)).toEqual(["etcd", "watch-cache", "watch-cache", "etcd", "watch-cache"]);
  });

  it("pages of a paged list are of the first page's snapshot; once compacted the continue token is 410 Expired with an inconsistent token that resumes", async () => {
    await using s = await fivePods();
    const first = await call(s, "GET", `${LIST}?limit=2`);
    s.deletePod("ns1", "p3");
    const second = await call(s, "GET", `${LIST}?limit=2&continue=${first.body.metadata.continue}`);
    expect(second.body.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual([
      "p2",
      "p3",
    ]);
    expect(second.body.metadata.resourceVersion).toBe(first.body.metadata.resourceVersion);
    s.compactHistory();
    const expired = await call(
      s,
      "GET",
      `${LIST}?limit=2&continue=${second.body.metadata.continue}`,
    );
    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({ kind: "Status", reason: "Expired", code: 410 });
    expect(expired.body.message).toMatch(
      /^The provided continue parameter is too old to display a consistent list result/,
    );
    const rest = await call(s, "GET", `${LIST}?limit=2&continue=${expired.body.metadata.continue}`);
    expect(rest.body.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual([
      "p4",
    ]);
  });

  it("Exact at a compacted revision is 410; a future revision is 504 ResourceVersionTooLarge; bad combinations are refused as kube-apiserver refuses them", async () => {
    await using s = await fivePods();
    const old = Number(s.resourceVersion()) - 2;
    expect(
      (await call(s, "GET", `${LIST}?resourceVersion=${old}&resourceVersionMatch=Exact`)).body
        .items,
    ).toHaveLength(3);
    s.compactHistory();
    const gone = await call(s, "GET", `${LIST}?resourceVersion=${old}&resourceVersionMatch=Exact`);
    expect(gone.body).toMatchObject({
      code: 410,
      reason: "Expired",
      message: "The resourceVersion for the provided list is too old.",
    });
    const future = await call(
      s,
      "GET",
      `${LIST}?resourceVersion=${Number(s.resourceVersion()) + 10}`,
    );
    expect(future.status).toBe(504);
    expect(future.headers["retry-after"]).toBe("1");
    expect(future.body).toMatchObject({
      reason: "Timeout",
      details: { causes: [{ reason: "ResourceVersionTooLarge" }] },
    });
    expect((await call(s, "GET", `${LIST}?resourceVersionMatch=NotOlderThan`)).status).toBe(422);
    expect(
      (await call(s, "GET", `${LIST}?resourceVersion=0&resourceVersionMatch=Exact`)).status,
    ).toBe(422);
    expect((await call(s, "GET", `${LIST}?resourceVersion=5&continue=x`)).status).toBe(400);
  });
});

describe("fake API server: client certificates", () => {
  function callWithCert(
    server: FakeApiServer,
    name: "plexus" | "other" | "selfsigned",
  ): Promise<Answer> {
    const files = clientCertFiles(name);
    return new Promise((resolve, reject) => {
      const req = request(
        `${server.url}${POD}`,
        {
          ca: server.caPem,
          cert: readFileSync(files.cert),
          key: readFileSync(files.key),
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: JSON.parse(Buffer.concat(chunks).toString()),
            }),
          );
        },
      );
      req.on("error", reject);
      req.end();
    });
  }

  it("a certificate the test CA signed authenticates as its CN and O; RBAC applies to that user; an unverified one is 401", async () => {
    await using s = await startFakeApiServer({ clientCertificates: true });
    s.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    expect((await callWithCert(s, "plexus")).status).toBe(200);
    const other = await callWithCert(s, "other");
    expect(other.status).toBe(403);
    expect(other.body.message).toContain('User "plexus-test-user" cannot get resource "pods"');
    expect((await callWithCert(s, "selfsigned")).status).toBe(401);
    expect(s.requests.map((r) => [r.user, r.authenticatedBy])).toEqual([
      ["system:serviceaccount:kube-system:plexus", "client-certificate"],
      ["plexus-test-user", "client-certificate"],
      [undefined, undefined],
    ]);
    // The token still works beside certificates.
    expect((await call(s, "GET", POD)).status).toBe(200);
  });
});
