/**
 * The fake API server's router and its errors (test/support/fake-apiserver/router.ts, status.ts,
 * faults.ts), pinned to kube-apiserver's: the request attributes its RequestInfoFactory reads from
 * a path, the handler chain's order (401 before 403 before faults before the handler), every error
 * a metav1.Status with the code's reason and details, a path no handler serves a plain-text 404,
 * PATCH by content type (415 for one not implemented), and Events created, never stored.
 */
import type { IncomingMessage } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, type FakeApiServer, startFakeApiServer } from "../../support/fake-apiserver";
import { createFakeAdmission } from "../../support/fake-apiserver/admission";
import { FaultRules } from "../../support/fake-apiserver/faults";
import { serviceAccountUser } from "../../support/fake-apiserver/rbac";
import {
  type Call,
  requestInfo,
  route,
  type ServerContext,
} from "../../support/fake-apiserver/router";
import { HttpError, statusBody } from "../../support/fake-apiserver/status";
import { ObjectStore } from "../../support/fake-apiserver/store";
import type { KubeObject, LoggedRequest } from "../../support/fake-apiserver/types";
import { WatchHub } from "../../support/fake-apiserver/watch";

const info = (method: string, path: string) =>
  requestInfo(method, path, new URLSearchParams(path.split("?")[1] ?? ""));

describe("request attributes (RequestInfoFactory)", () => {
  it("reads group, version, namespace, resource, name, subresource and the verb", () => {
    expect(info("GET", "/api/v1/namespaces/ns1/pods/p1")).toEqual({
      verb: "get",
      apiGroup: "",
      apiVersion: "v1",
      namespace: "ns1",
      resource: "pods",
      name: "p1",
      subresource: "",
    });
    expect(info("PATCH", "/api/v1/namespaces/ns1/pods/p1/status")).toMatchObject({
      verb: "patch",
      subresource: "status",
    });
    expect(info("GET", "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions")).toMatchObject({
      verb: "list",
      apiGroup: "k8s.cni.cncf.io",
      namespace: "",
    });
    expect(info("GET", "/apis/resource.k8s.io/v1/resourceslices?watch=true")).toMatchObject({
      verb: "watch",
    });
    expect(info("DELETE", "/api/v1/namespaces/ns1/pods")).toMatchObject({
      verb: "deletecollection",
    });
    expect(info("POST", "/api/v1/namespaces/ns1/events")).toMatchObject({
      verb: "create",
      name: "",
    });
    // A namespace's own object is not a namespaced path.
    expect(info("GET", "/api/v1/namespaces/ns1")).toMatchObject({
      resource: "namespaces",
      name: "ns1",
      namespace: "",
    });
  });

  it("has none for a non-resource path", () => {
    for (const path of ["/version", "/healthz", "/api", "/apis/k8s.cni.cncf.io"])
      expect(info("GET", path)).toBeUndefined();
  });
});

describe("metav1.Status", () => {
  it("carries the code's reason, the details and an expired continuation's token", () => {
    expect(statusBody(404, 'pods "p" not found', undefined, { name: "p", kind: "pods" })).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'pods "p" not found',
      reason: "NotFound",
      details: { name: "p", kind: "pods" },
      code: 404,
    });
    expect(statusBody(410, "gone", undefined, undefined, "tok")).toMatchObject({
      reason: "Expired",
      metadata: { continue: "tok" },
    });
    expect(statusBody(418, "teapot").reason).toBe("Unknown");
  });
});

describe("routing to handlers", () => {
  function context(): ServerContext {
    const store = new ObjectStore();
    const later = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
    const user = serviceAccountUser("kube-system", "plexus");
    return {
      store,
      watches: new WatchHub({ store, later }),
      admission: createFakeAdmission({
        docs: [],
        user,
        pods: () => store.objects("pods").values(),
      }),
      rbac: undefined,
      authn: {
        clientCertificates: false,
        token: () => "t",
        tokenUser: user,
        boundToken: () => undefined,
      },
      faults: new FaultRules(),
      requests: [],
      sockets: new Set(),
      started: 0,
      latencyMs: undefined,
      unserved: undefined,
      later,
    };
  }
  function call(
    method: string,
    path: string,
    extra: { body?: string; contentType?: string } = {},
  ): Call {
    const q = new URLSearchParams(path.split("?")[1] ?? "");
    const req = { headers: { "content-type": extra.contentType } } as unknown as IncomingMessage;
    const logged = { method, path } as LoggedRequest;
    const user = serviceAccountUser("kube-system", "plexus");
    return {
      method,
      info: requestInfo(method, path.split("?")[0]!, q)!,
      q,
      req,
      body: extra.body ?? "",
      fault: undefined,
      logged,
      user,
    };
  }
  function routeError(ctx: ServerContext, request: Call): HttpError {
    try {
      route(ctx, request);
    } catch (err) {
      if (err instanceof HttpError) return err;
      throw err;
    }
    throw new Error("expected an HttpError");
  }

  it("answers an unknown resource or subresource 404, a write to a collection 405", () => {
    const ctx = context();
    const notFound = routeError(ctx, call("GET", "/api/v1/namespaces/ns1/secrets/s"));
    expect([notFound.code, notFound.message]).toEqual([
      404,
      "the server could not find the requested resource",
    ]);
    expect(routeError(ctx, call("GET", "/api/v1/namespaces/ns1/pods/p/exec")).code).toBe(404);
    // A namespaced kind named without a namespace, and a cluster-scoped one with one.
    expect(routeError(ctx, call("GET", "/api/v1/pods/p")).code).toBe(404);
    expect(
      routeError(ctx, call("GET", "/apis/resource.k8s.io/v1/namespaces/ns1/resourceslices/s")).code,
    ).toBe(404);
    const notAllowed = routeError(ctx, call("POST", "/api/v1/namespaces/ns1/pods", { body: "{}" }));
    expect([notAllowed.code, notAllowed.message]).toEqual([405, "method POST not allowed"]);
    expect(
      routeError(
        ctx,
        call("PUT", "/apis/k8s.cni.cncf.io/v1/namespaces/ns1/network-attachment-definitions/n"),
      ).code,
    ).toBe(405);
  });

  it("names a missing object as NewNotFound does: the resource as kind, its group beside it", () => {
    const ctx = context();
    const nad = routeError(
      ctx,
      call("GET", "/apis/k8s.cni.cncf.io/v1/namespaces/ns1/network-attachment-definitions/net-a"),
    );
    expect([nad.code, nad.message]).toEqual([
      404,
      'network-attachment-definitions.k8s.cni.cncf.io "net-a" not found',
    ]);
    expect(nad.details).toEqual({
      name: "net-a",
      group: "k8s.cni.cncf.io",
      kind: "network-attachment-definitions",
    });
    const pod = routeError(ctx, call("GET", "/api/v1/namespaces/ns1/pods/p1"));
    expect([pod.message, pod.details]).toEqual([
      'pods "p1" not found',
      { name: "p1", kind: "pods" },
    ]);
  });

  it("patches by content type: merge and strategic merge; JSON patch is 415, a body not JSON 400", () => {
    const ctx = context();
    ctx.store.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const path = "/api/v1/namespaces/ns1/pods/p1/status";
    const body = JSON.stringify({ metadata: { annotations: { a: "b" } } });
    const [code, patched] = route(
      ctx,
      call("PATCH", path, { body, contentType: "application/merge-patch+json; charset=utf-8" }),
    ) as [number, KubeObject];
    expect(code).toBe(200);
    expect(patched.metadata.annotations).toEqual({ a: "b" });
    const strategic = route(
      ctx,
      call("PATCH", path, { body, contentType: "application/strategic-merge-patch+json" }),
    );
    expect((strategic as [number, unknown])[0]).toBe(200);
    const jsonPatch = routeError(
      ctx,
      call("PATCH", path, { body: "[]", contentType: "application/json-patch+json" }),
    );
    expect([jsonPatch.code, jsonPatch.message]).toEqual([
      415,
      'the fake API server does not implement patch type "application/json-patch+json"',
    ]);
    expect(
      routeError(
        ctx,
        call("PATCH", path, { body: "x", contentType: "application/merge-patch+json" }),
      ).code,
    ).toBe(400);
    expect(routeError(ctx, call("PATCH", path, { body: "{}", contentType: "toString" })).code).toBe(
      415,
    );
  });

  it("PUT of another kind is 400; its UID becomes a storage precondition (409)", () => {
    const ctx = context();
    ctx.store.addPod({ metadata: { name: "p1", namespace: "ns1" } });
    const path = "/api/v1/namespaces/ns1/pods/p1";
    expect(
      routeError(ctx, call("PUT", path, { body: '{"kind":"Node","metadata":{}}' })).message,
    ).toBe("kind Node does not match Pod");
    expect(routeError(ctx, call("PUT", path, { body: '{"metadata":{"uid":"other"}}' })).code).toBe(
      409,
    );
  });

  it("creates Events (201, a generated name) without storing them as objects; a namespace mismatch is 400", () => {
    const ctx = context();
    const path = "/apis/events.k8s.io/v1/namespaces/ns1/events";
    const body = JSON.stringify({ metadata: { generateName: "p1." }, reason: "Added" });
    const [code, created] = route(ctx, call("POST", path, { body })) as [number, KubeObject];
    expect(code).toBe(201);
    expect(created).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { namespace: "ns1" },
    });
    expect(created.metadata.name).toMatch(/^p1\.[0-9a-z]+$/);
    expect(ctx.store.events).toEqual([created]);
    const mismatch = routeError(
      ctx,
      call("POST", path, { body: '{"metadata":{"namespace":"ns2"}}' }),
    );
    expect([mismatch.code, mismatch.message]).toEqual([
      400,
      "the namespace of the provided object does not match the namespace sent on the request",
    ]);
  });
});

describe("the handler chain over HTTP", () => {
  let server: FakeApiServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  const get = (path: string, token?: string) =>
    fetch(`${server!.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  it("401 Unauthorized before anything else, a Status", async () => {
    server = await startFakeApiServer({ tls: false });
    server.inject({}, { kind: "status", code: 500 });
    const res = await get("/api/v1/namespaces/ns1/pods/p1");
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(statusBody(401, "Unauthorized"));
    expect(server.requests[0]!.user).toBeUndefined();
  });

  it("403 Forbidden in kube-apiserver's words, with the details it gives", async () => {
    server = await startFakeApiServer({ tls: false });
    const res = await get("/api/v1/namespaces/ns1/secrets/s1", server.token);
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual(
      statusBody(
        403,
        `secrets "s1" is forbidden: User "${server.user.name}" cannot get resource "secrets" in ` +
          `API group "" in the namespace "ns1"`,
        "Forbidden",
        { name: "s1", kind: "secrets" },
      ),
    );
  });

  it("an unserved group version is a plain-text 404 without a Status; an injected status keeps its Retry-After", async () => {
    server = await startFakeApiServer({ tls: false, unserved: ["resource.k8s.io/v1"] });
    const res = await get("/apis/resource.k8s.io/v1/resourceslices", ADMIN_TOKEN);
    expect([res.status, res.headers.get("content-type"), await res.text()]).toEqual([
      404,
      "text/plain; charset=utf-8",
      "404 page not found\n",
    ]);
    server.inject(
      { path: "/api/v1/namespaces/ns1/pods/p1", times: 1 },
      { kind: "status", code: 429, retryAfter: "2" },
    );
    const limited = await get("/api/v1/namespaces/ns1/pods/p1", ADMIN_TOKEN);
    expect([limited.status, limited.headers.get("retry-after")]).toEqual([429, "2"]);
    expect(await limited.json()).toMatchObject({
      reason: "TooManyRequests",
      message: "injected 429",
    });
    expect((await get("/api/v1/namespaces/ns1/pods/p1", ADMIN_TOKEN)).status).toBe(404);
  });
});

describe("fault rules", () => {
  it("every matching delay, then at most one other fault, each for its `times`", () => {
    const rules = new FaultRules();
    rules.inject({ method: "get" }, { kind: "delay", ms: 1 });
    rules.inject({ path: /pods/, watch: false, times: 1 }, { kind: "reset" });
    rules.inject({ query: /watch/ }, { kind: "hang" });
    const request = { method: "GET", path: "/api/v1/pods", isWatch: false, query: "" };
    expect(rules.take(request).map((f) => f.kind)).toEqual(["delay", "reset"]);
    expect(rules.take(request).map((f) => f.kind)).toEqual(["delay"]);
    expect(rules.take({ ...request, isWatch: true, query: "?watch=1" }).map((f) => f.kind)).toEqual(
      ["delay", "hang"],
    );
    rules.clear();
    expect(rules.take(request)).toEqual([]);
  });
});
