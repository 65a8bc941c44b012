/**
 * The fake API server's own protocol (issue 3), over real HTTPS: Status bodies, bearer tokens,
 * resourceVersion and UID preconditions (409), merge vs strategic merge patch, the status
 * subresource, NADs, events, faults and clean shutdown. The client tests rely on all of this.
 */
import { request } from "node:https";
import { describe, expect, it } from "vitest";
import { startFakeApiServer, type FakeApiServer } from "../support/fake-apiserver";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

function call(
  s: FakeApiServer,
  method: string,
  path: string,
  o: { body?: unknown; contentType?: string; token?: string | null } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (o.token !== null) headers.authorization = `Bearer ${o.token ?? s.token}`;
    if (o.body !== undefined) headers["content-type"] = o.contentType ?? "application/json";
    const req = request(`${s.url}${path}`, { method, headers, ca: s.caPem, agent: false }, (res) => {
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
    });
    req.on("error", reject);
    req.end(o.body === undefined ? undefined : JSON.stringify(o.body));
  });
}

const POD = "/api/v1/namespaces/ns1/pods/p1";

async function withPod(fn: (s: FakeApiServer) => Promise<void>) {
  await using s = await startFakeApiServer();
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
      expect((await call(s, "GET", "/api/v1/nodes")).body).toMatchObject({ kind: "Status", code: 404 });
    });
  });
});

describe("fake API server: writes and preconditions", () => {
  it("PUT with the current resourceVersion succeeds and bumps it; a stale one is 409 Conflict", async () => {
    await withPod(async (s) => {
      const pod = (await call(s, "GET", POD)).body;
      const rv = pod.metadata.resourceVersion as string;
      const put = await call(s, "PUT", POD, { body: { ...pod, metadata: { ...pod.metadata, labels: { a: "1" } } } });
      expect(put.status).toBe(200);
      expect(Number(put.body.metadata.resourceVersion)).toBeGreaterThan(Number(rv));
      expect(put.body.metadata.labels).toEqual({ a: "1" });
      const stale = await call(s, "PUT", POD, { body: { ...pod, metadata: { ...pod.metadata, labels: { a: "2" } } } });
      expect(stale.status).toBe(409);
      expect(stale.body).toMatchObject({ kind: "Status", status: "Failure", reason: "Conflict", code: 409 });
      expect(s.getPod("ns1", "p1")!.metadata.labels).toEqual({ a: "1" });
    });
  });

  it("a merge patch carrying a stale resourceVersion or another UID is 409; without them it applies", async () => {
    await withPod(async (s) => {
      const rv = s.getPod("ns1", "p1")!.metadata.resourceVersion as string;
      const ok = await call(s, "PATCH", POD, {
        body: { metadata: { resourceVersion: rv, annotations: { x: "1" } } },
        contentType: "application/merge-patch+json",
      });
      expect(ok.status).toBe(200);
      const stale = await call(s, "PATCH", POD, {
        body: { metadata: { resourceVersion: rv, annotations: { x: "2" } } },
        contentType: "application/merge-patch+json",
      });
      expect(stale.status).toBe(409);
      const uid = await call(s, "PATCH", POD, {
        body: { metadata: { uid: "other", annotations: { x: "3" } } },
        contentType: "application/merge-patch+json",
      });
      expect(uid.status).toBe(409);
      expect(uid.body.message).toContain("Precondition failed: UID in precondition: other");
      const plain = await call(s, "PATCH", POD, {
        body: { metadata: { annotations: { x: "4", keep: null } } },
        contentType: "application/merge-patch+json",
      });
      expect(plain.status).toBe(200);
      expect(s.getPod("ns1", "p1")!.metadata.annotations).toEqual({ x: "4" });
    });
  });

  it("merge patch replaces a list; strategic merge patch merges it by name", async () => {
    await withPod(async (s) => {
      const patch = { spec: { containers: [{ name: "sidecar", image: "envoy" }] } };
      await call(s, "PATCH", POD, { body: patch, contentType: "application/strategic-merge-patch+json" });
      expect((s.getPod("ns1", "p1")!.spec as { containers: { name: string }[] }).containers.map((c) => c.name)).toEqual(
        ["main", "sidecar"],
      );
      await call(s, "PATCH", POD, { body: patch, contentType: "application/merge-patch+json" });
      expect((s.getPod("ns1", "p1")!.spec as { containers: { name: string }[] }).containers.map((c) => c.name)).toEqual(
        ["sidecar"],
      );
      const json = await call(s, "PATCH", POD, {
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
        body: { metadata: { annotations: { a: "1" } }, spec: { nodeName: "evil" }, status: { phase: "Running" } },
        contentType: "application/merge-patch+json",
      });
      let pod = s.getPod("ns1", "p1")!;
      expect(pod.metadata.annotations).toMatchObject({ a: "1", keep: "me" });
      expect((pod.spec as { nodeName: string }).nodeName).toBe("node-1");
      expect((pod.status as { phase: string }).phase).toBe("Running");
      await call(s, "PATCH", POD, {
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
    s.addNad({ metadata: { name: "net-a", namespace: "ns1" }, spec: { config: '{"cniVersion":"1.0.0"}' } });
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
    expect(list.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(["net-a"]);
    expect((await call(s, "GET", `${base}/ns1/network-attachment-definitions/net-b`)).status).toBe(404);
  });

  it("POST events to core v1 and events.k8s.io/v1; a namespace mismatch is 400", async () => {
    await using s = await startFakeApiServer();
    const core = await call(s, "POST", "/api/v1/namespaces/ns1/events", {
      body: { metadata: { generateName: "p1." }, reason: "AddedInterface" },
    });
    expect(core.status).toBe(201);
    expect(core.body.metadata.name).toMatch(/^p1\./);
    const v1 = await call(s, "POST", "/apis/events.k8s.io/v1/namespaces/ns1/events", {
      body: { metadata: { name: "e1" }, reason: "X" },
    });
    expect(v1.status).toBe(201);
    expect(s.events().map((e) => e.apiVersion)).toEqual(["v1", "events.k8s.io/v1"]);
    const bad = await call(s, "POST", "/api/v1/namespaces/ns1/events", { body: { metadata: { namespace: "ns2" } } });
    expect(bad.status).toBe(400);
  });
});

describe("fake API server: faults, log and shutdown", () => {
  it("a fault applies `times` times to matching requests only, then normal answers resume", async () => {
    await withPod(async (s) => {
      s.inject({ method: "GET", path: POD, times: 2 }, { kind: "status", code: 429, retryAfter: "3" });
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
    await expect(call(s, "GET", POD)).rejects.toMatchObject({ code: expect.stringMatching(/ECONNRESET|EPIPE/) });
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
    expect(((await r.json()) as { metadata: { namespace: string } }).metadata.namespace).toBe("default");
  });
});
