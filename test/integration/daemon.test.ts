/**
 * `plexus daemon` in-process against the fake API server over HTTPS, and the CNI side's
 * DaemonKube through the real unix socket: reads from the watch caches (0 API reads), live reads
 * on a miss (a pod created just before its ADD, a recreated pod), writes through the daemon, the
 * caches recovering from dropped watches and 410 Expired, and the binary side falling back to the
 * API when the daemon is missing, refusing, hanging, answering garbage or failing; and the optional
 * --health-address listener (health and metrics over TCP, never the /v1 API).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Code } from "../../src/cni/errors";
import { DaemonKube } from "../../src/daemon-client/client";
import {
  bounded,
  parseHealthAddress,
  type RunningDaemon,
  startDaemon,
} from "../../src/daemon/main";
import { kubeFactory } from "../../src/sources/kube-factory";
import type { KubeApi } from "../../src/cluster/kube-api";
import { silentLogger } from "../../src/log/logger";
import { NETWORK_STATUS_ANNOTATION } from "../../src/npwg/types";
import { recordingLogger } from "../unit/install/recording-logger";
import { type FakeApiServer, startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import { PLEXUS_BIN, runPlexus, unixSocketStatus } from "../support/plexus-bin";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const FAST = {
  retry: {
    requestTimeoutMs: 300,
    totalTimeoutMs: 1500,
    baseDelayMs: 10,
    maxDelayMs: 40,
    maxAttempts: 3,
  },
};
const NAD_CONF = JSON.stringify({ cniVersion: "1.0.0", type: "bridge" });

async function cluster() {
  const s = await startFakeApiServer();
  cleanups.push(() => s.close());
  const dir = mkdtempSync(join(tmpdir(), "plx-daemon-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = writeKubeconfig(s, { dir, tokenFile: true });
  s.addPod({
    metadata: {
      name: "web",
      namespace: "app",
      uid: "uid-web",
      annotations: { "k8s.v1.cni.cncf.io/networks": "net-a" },
    },
    spec: { nodeName: "node-1" },
  });
  s.addPod({ metadata: { name: "elsewhere", namespace: "app" }, spec: { nodeName: "node-2" } });
  s.addNad({ metadata: { name: "net-a", namespace: "app" }, spec: { config: NAD_CONF } });
  return { s, dir, kubeconfig, socket: join(dir, "plexus.sock") };
}

async function daemon(
  paths: { kubeconfig: string; socket: string },
  healthAddress?: string,
): Promise<RunningDaemon> {
  const d = await startDaemon(
    {
      kubeconfig: paths.kubeconfig,
      nodeName: "node-1",
      socket: paths.socket,
      apiRequestTimeout: "1",
      apiTotalTimeout: "3",
      healthAddress,
    },
    {},
    silentLogger(),
  );
  cleanups.push(() => d.stop());
  return d;
}

function client(
  socket: string,
  direct: () => Promise<KubeApi | undefined> = async () => undefined,
  log = silentLogger(),
  timeoutMs = 300,
): DaemonKube {
  const k = new DaemonKube({ socketPath: socket, timeoutMs, writeTimeoutMs: 2000, direct, log });
  cleanups.push(() => k.close());
  return k;
}

/** GET on the daemon socket (health, metrics). */
async function daemonGet(socket: string, path: string): Promise<{ status: number; text: string }> {
  const { request } = await import("node:http");
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path, method: "GET" }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end();
  });
}

const reads = (server: FakeApiServer) =>
  server.requests.filter(
    (r) =>
      r.method === "GET" &&
      !new URLSearchParams(r.query).has("watch") &&
      !/\/pods$|network-attachment-definitions$/.test(r.path),
  ).length;
const ready = (socket: string) =>
  expect.poll(async () => (await daemonGet(socket, "/readyz")).status, { timeout: 5000 }).toBe(200);

describe("plexus daemon: watch caches behind a unix socket", () => {
  it("serves pod and NAD from its caches with 0 API reads; writes status and one event through its client", async () => {
    const c = await cluster();
    await daemon(c);
    await ready(c.socket);
    expect(statSync(c.socket).mode & 0o777).toBe(0o600);
    const k = client(c.socket);
    const before = reads(c.s);
    const pod = await k.getPod("app", "web", "uid-web");
    expect(pod.metadata).toMatchObject({
      name: "web",
      namespace: "app",
      uid: "uid-web",
      annotations: { "k8s.v1.cni.cncf.io/networks": "net-a" },
    });
    expect(pod.spec?.nodeName).toBe("node-1");
    expect((await k.getNad("app", "net-a"))?.spec?.config).toBe(NAD_CONF);
    expect(reads(c.s) - before).toBe(0);

    const writesBefore = c.s.requests.length;
    await k.setNetworkStatus(
      { namespace: "app", name: "web", uid: "uid-web" },
      '[{"name":"cbr0"}]',
    );
    // M9: the daemon answers the event at once and writes it in the background (the CNI call
    // waits only for its status write): an API server slow to take the event costs it nothing.
    c.s.inject({ method: "POST", path: /\/events$/, times: 1 }, { kind: "delay", ms: 500 });
    const eventsBefore = c.s.events().length;
    const t0 = performance.now();
    await k.recordEvent(
      { namespace: "app", name: "web", uid: "uid-web" },
      { type: "Normal", reason: "AddedInterface", message: "eth0" },
    );
    expect(performance.now() - t0).toBeLessThan(250);
    expect(c.s.events().length).toBe(eventsBefore);
    await expect.poll(() => c.s.events().length, { timeout: 5000 }).toBe(eventsBefore + 1);
    expect(c.s.requests.slice(writesBefore).map((r) => `${r.method} ${r.path}`)).toEqual([
      "PATCH /api/v1/namespaces/app/pods/web/status",
      "POST /api/v1/namespaces/app/events",
    ]);
    expect(
      (c.s.getPod("app", "web")!.metadata.annotations as Record<string, string>)[
        NETWORK_STATUS_ANNOTATION
      ],
    ).toBe('[{"name":"cbr0"}]');
    expect(k.requestCount).toBe(0);
    expect(k.fallbackReason).toBeUndefined();

    const metrics = (await daemonGet(c.socket, "/metrics")).text;
    expect(metrics).toContain('plexus_daemon_cache_objects{kind="pod"} 1');
    expect(metrics).toContain('plexus_daemon_cache_objects{kind="nad"} 1');
    expect(metrics).toContain('plexus_daemon_cache_total{kind="pod",result="hit"} 1');
    expect(metrics).toMatch(/plexus_daemon_request_duration_seconds_count\{route="\/v1\/pod"\} 1/);
    expect((await daemonGet(c.socket, "/healthz")).status).toBe(200);
  });

  it("a pod created just before its ADD, and a recreated pod with a new UID: a live read, never a stale answer", async () => {
    const c = await cluster();
    await daemon(c);
    await ready(c.socket);
    const k = client(c.socket);
    c.s.addPod({
      metadata: { name: "fresh", namespace: "app", uid: "uid-fresh" },
      spec: { nodeName: "node-1" },
    });
    expect((await k.getPod("app", "fresh", "uid-fresh")).metadata.uid).toBe("uid-fresh");
    c.s.deletePod("app", "web");
    c.s.addPod({
      metadata: { name: "web", namespace: "app", uid: "uid-web-2" },
      spec: { nodeName: "node-1" },
    });
    expect((await k.getPod("app", "web", "uid-web-2")).metadata.uid).toBe("uid-web-2");
    c.s.addNad({ metadata: { name: "net-new", namespace: "app" }, spec: { config: NAD_CONF } });
    expect((await k.getNad("app", "net-new"))?.metadata.name).toBe("net-new");
    // Missing for real: undefined for a NAD (B28), code 3 for a pod — authoritative, no fallback.
    expect(await k.getNad("app", "nope")).toBeUndefined();
    await expect(k.getPod("app", "ghost")).rejects.toMatchObject({ code: Code.UnknownContainer });
    expect(k.fallbackReason).toBeUndefined();
  });

  it("dropped watches resume; 410 Expired relists; the cache ends right without live reads", async () => {
    const c = await cluster();
    await daemon(c);
    await ready(c.socket);
    // Pods, NADs, and this node's ResourceSlices (ResourceClaims are read by name, never watched).
    await expect.poll(() => c.s.watchCount()).toBe(3);
    c.s.dropWatches();
    c.s.addPod({
      metadata: { name: "after-drop", namespace: "app" },
      spec: { nodeName: "node-1" },
    });
    const metric = async (name: string) =>
      Number(
        new RegExp(`^${name.replace(/[{}"]/g, "\\$&")} (\\d+)`, "m").exec(
          (await daemonGet(c.socket, "/metrics")).text,
        )?.[1] ?? NaN,
      );
    await expect
      .poll(() => metric('plexus_daemon_cache_objects{kind="pod"}'), { timeout: 5000 })
      .toBe(2);

    c.s.compactHistory();
    c.s.dropWatches();
    c.s.deletePod("app", "after-drop");
    c.s.deleteNad("app", "net-a");
    c.s.addNad({ metadata: { name: "net-b", namespace: "app" }, spec: { config: NAD_CONF } });
    await expect
      .poll(() => metric('plexus_daemon_watch_lists_total{kind="nad"}'), { timeout: 5000 })
      .toBe(2);
    await expect
      .poll(() => metric('plexus_daemon_cache_objects{kind="pod"}'), { timeout: 5000 })
      .toBe(1);
    const k = client(c.socket);
    const before = reads(c.s);
    expect((await k.getNad("app", "net-b"))?.metadata.name).toBe("net-b");
    expect(reads(c.s) - before).toBe(0);
  });

  it("a watch that fails (500) is restarted with backoff and the cache recovers", async () => {
    const c = await cluster();
    c.s.inject({ path: "/api/v1/pods", watch: true, times: 2 }, { kind: "status", code: 500 });
    await daemon(c);
    await ready(c.socket);
    c.s.addPod({ metadata: { name: "late", namespace: "app" }, spec: { nodeName: "node-1" } });
    const k = client(c.socket);
    await expect
      .poll(async () => (await daemonGet(c.socket, "/metrics")).text, { timeout: 8000 })
      .toContain('plexus_daemon_cache_objects{kind="pod"} 2');
    const before = reads(c.s);
    expect((await k.getPod("app", "late")).metadata.name).toBe("late");
    expect(reads(c.s) - before).toBe(0);
  });
});

/** A request to the --health-address listener (plain HTTP over TCP). */
async function tcpRequest(
  addr: { host: string; port: number },
  path: string,
  method = "GET",
  body?: string,
): Promise<{ status: number; text: string }> {
  const { request } = await import("node:http");
  return new Promise((resolve, reject) => {
    const req = request({ host: addr.host, port: addr.port, path, method, agent: false }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("plexus daemon --health-address: health and metrics over TCP, the /v1 API only on the socket", () => {
  it("/healthz, /readyz and /metrics answer on TCP; /v1/* is 404 there (no API read, no write) while the socket still serves it", async () => {
    const c = await cluster();
    const d = await daemon(c, "127.0.0.1:0");
    const addr = d.healthAddress!;
    expect(addr.host).toBe("127.0.0.1");
    expect(addr.port).toBeGreaterThan(0);
    expect(await tcpRequest(addr, "/healthz")).toEqual({ status: 200, text: '{"ok":true}' });
    await expect
      .poll(async () => (await tcpRequest(addr, "/readyz")).status, { timeout: 5000 })
      .toBe(200);
    const metrics = await tcpRequest(addr, "/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain("plexus_daemon_cache_synced 1");
    expect(metrics.text).toContain('plexus_daemon_cache_objects{kind="nad"} 1');

    const before = c.s.requests.length;
    for (const [method, path, body] of [
      ["GET", "/v1/pod?namespace=app&name=web"],
      ["GET", "/v1/nad?namespace=app&name=net-a"],
      [
        "POST",
        "/v1/network-status",
        JSON.stringify({ namespace: "app", name: "web", status: "[]" }),
      ],
      [
        "POST",
        "/v1/event",
        JSON.stringify({
          namespace: "app",
          name: "web",
          event: { type: "Normal", reason: "X", message: "y" },
        }),
      ],
      ["GET", "/"],
    ] as const) {
      const r = await tcpRequest(addr, path, method, body);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.text, `${method} ${path}`).not.toContain("web");
      // Not a daemon bug (999): a route not served here, as for a CNI binary of another version
      // (1).
      expect(JSON.parse(r.text).error.code, `${method} ${path}`).toBe(Code.IncompatibleVersion);
    }
    expect(
      c.s.requests.slice(before).filter((r) => !new URLSearchParams(r.query).has("watch")),
    ).toEqual([]);
    expect(
      (c.s.getPod("app", "web")!.metadata.annotations as Record<string, string>)[
        NETWORK_STATUS_ANNOTATION
      ],
    ).toBeUndefined();
    // The same route on the root-only socket answers.
    expect((await daemonGet(c.socket, "/v1/pod?namespace=app&name=web")).status).toBe(200);
  });

  it("as deploy/ runs it, bound to 0.0.0.0: /metrics answers on the node's own non-loopback address (an in-cluster Prometheus) and the probes' 127.0.0.1, /v1/* is 404 on both", async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === "IPv4" && !a.internal)?.address;
    expect(external, "this test needs a non-loopback IPv4 address on the host").toBeDefined();
    const c = await cluster();
    const d = await daemon(c, "0.0.0.0:0");
    expect(d.healthAddress!.host).toBe("0.0.0.0");
    const port = d.healthAddress!.port;
    for (const host of [external!, "127.0.0.1"]) {
      await expect
        .poll(async () => (await tcpRequest({ host, port }, "/readyz")).status, { timeout: 5000 })
        .toBe(200);
      expect((await tcpRequest({ host, port }, "/healthz")).status, host).toBe(200);
      const metrics = await tcpRequest({ host, port }, "/metrics");
      expect(metrics.status, host).toBe(200);
      expect(metrics.text, host).toContain('plexus_daemon_cache_objects{kind="pod"} 1');
      for (const path of [
        "/v1/pod?namespace=app&name=web",
        "/v1/nad?namespace=app&name=net-a",
        "/v1/pod-devices",
      ]) {
        const r = await tcpRequest({ host, port }, path);
        expect(r.status, `${host} ${path}`).toBe(404);
        expect(r.text, `${host} ${path}`).not.toContain("uid-web");
      }
      const post = await tcpRequest(
        { host, port },
        "/v1/network-status",
        "POST",
        JSON.stringify({ namespace: "app", name: "web", status: "[]" }),
      );
      expect(post.status, host).toBe(404);
    }
    expect(
      (c.s.getPod("app", "web")!.metadata.annotations as Record<string, string>)[
        NETWORK_STATUS_ANNOTATION
      ],
    ).toBeUndefined();
  });

  it("a request-target the URL parser rejects gets 400 on TCP and on the socket, and the daemon keeps serving", async () => {
    const c = await cluster();
    const d = await daemon(c, "127.0.0.1:0");
    const raw = (opts: { port: number; host: string } | { path: string }) =>
      new Promise<string>((resolve, reject) => {
        const s = netConnect(opts as never, () =>
          s.write("GET http://[ HTTP/1.1\r\nHost: x\r\n\r\n"),
        );
        let text = "";
        s.on("data", (b) => (text += b));
        s.on("end", () => resolve(text));
        s.on("error", reject);
      });
    expect(await raw({ host: "127.0.0.1", port: d.healthAddress!.port })).toMatch(
      /^HTTP\/1\.1 400 /,
    );
    expect(await raw({ path: c.socket })).toMatch(/^HTTP\/1\.1 400 /);
    expect(await raw({ path: c.socket })).toContain(`"code":${Code.Decoding}`);
    expect((await tcpRequest(d.healthAddress!, "/healthz")).status).toBe(200);
    expect((await daemonGet(c.socket, "/healthz")).status).toBe(200);
  });

  it("stop() closes the TCP listener with the socket; an address in use fails the start and leaves no socket behind", async () => {
    const c = await cluster();
    const d = await daemon(c, "127.0.0.1:0");
    const addr = d.healthAddress!;
    expect((await tcpRequest(addr, "/healthz")).status).toBe(200);
    await d.stop();
    await expect(tcpRequest(addr, "/healthz")).rejects.toMatchObject({ code: "ECONNREFUSED" });

    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => blocker.close(() => r())));
    const port = (blocker.address() as { port: number }).port;
    await expect(daemon(c, `127.0.0.1:${port}`)).rejects.toThrow(
      new RegExp(`health address 127\\.0\\.0\\.1:${port}: cannot listen: EADDRINUSE`),
    );
    expect(() => statSync(c.socket)).toThrow(/ENOENT/);
  });

  it("--socket PATH removes only a stale socket: a regular file, a directory or a live daemon's socket there is refused, untouched", async () => {
    const c = await cluster();
    writeFileSync(c.socket, "someone's data");
    await expect(daemon(c)).rejects.toThrow(
      new RegExp(
        `daemon socket ${c.socket}: a file that is not a socket is there; refusing to remove it`,
      ),
    );
    expect(readFileSync(c.socket, "utf8")).toBe("someone's data");
    rmSync(c.socket);
    mkdirSync(c.socket);
    await expect(daemon(c)).rejects.toThrow(/a directory is there; refusing to remove it/);
    rmSync(c.socket, { recursive: true });
    // A socket nobody answers on (a killed daemon's) is stale: removed, and the daemon starts.
    execFileSync("python3", [
      "-c",
      "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
      c.socket,
    ]);
    expect(statSync(c.socket).isSocket()).toBe(true);
    const d = await daemon(c);
    await ready(c.socket);
    expect(statSync(c.socket).mode & 0o777).toBe(0o600);
    // Its own socket is live: a second daemon is refused and the first keeps serving.
    await expect(daemon(c)).rejects.toThrow(/is in use by another process/);
    expect((await daemonGet(c.socket, "/healthz")).status).toBe(200);
    // Bound in a private directory and renamed into place: nothing of that is left beside it.
    expect(readdirSync(c.dir).filter((n) => n.startsWith(".plexus-socket-"))).toEqual([]);
    await d.stop();
  });

  it("numeric flags: abc, '' or 0 seconds are a usage error (2) before anything starts", async () => {
    for (const [flag, value] of [
      ["--api-request-timeout", "abc"],
      ["--api-total-timeout", ""],
      ["--missing-networks-grace", "0"],
    ]) {
      const r = await runPlexus({
        args: ["daemon", "--socket", "/nonexistent/x.sock", flag!, value!],
        env: {},
      });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(
        `plexus daemon: ${flag} ${JSON.stringify(value)}: expected a number of seconds greater ` +
          `than 0`,
      );
    }
  });

  it("stop() is bounded: a step that never finishes is left behind with a warning", async () => {
    const log = recordingLogger();
    const started = Date.now();
    await bounded(() => new Promise<void>(() => {}), log, 100);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(log.text()).toMatch(/^warn the daemon did not stop within its bound/m);
  });

  it("a malformed --health-address is refused before anything starts", async () => {
    expect(parseHealthAddress("127.0.0.1:9405")).toEqual({ host: "127.0.0.1", port: 9405 });
    expect(parseHealthAddress("[::1]:9405")).toEqual({ host: "::1", port: 9405 });
    const c = await cluster();
    for (const bad of [
      "",
      "9405",
      ":9405",
      "127.0.0.1",
      "127.0.0.1:http",
      "127.0.0.1:70000",
      "::1:9405",
      "[nope]:9405",
    ]) {
      await expect(daemon(c, bad), bad).rejects.toThrow(/--health-address .*expected HOST:PORT/);
    }
    expect(c.s.requests).toEqual([]);
    expect(() => statSync(c.socket)).toThrow(/ENOENT/);
  });
});

describe("the CNI side falls back to the API server when the daemon cannot answer", () => {
  async function withDirect() {
    const c = await cluster();
    const log = recordingLogger();
    let built = 0;
    const direct = kubeFactory({ kubeconfig: c.kubeconfig }, { client: FAST });
    cleanups.push(() => direct.close());
    return { c, log, direct: () => (built++, direct()), built: () => built };
  }

  async function fakeDaemon(
    socket: string,
    handler: Parameters<typeof createServer>[1],
  ): Promise<Server> {
    const srv = createServer(handler);
    await new Promise<void>((r) => srv.listen(socket, r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          srv.closeAllConnections();
          srv.close(() => r());
        }),
    );
    return srv;
  }

  const cases: Array<[string, (socket: string) => Promise<void>]> = [
    [
      "a socket file nobody listens on (daemon died)",
      async (socket) => void writeFileSync(socket, ""),
    ],
    ["a daemon that hangs", async (socket) => void (await fakeDaemon(socket, () => {}))],
    [
      "a daemon answering garbage",
      async (socket) =>
        void (await fakeDaemon(socket, (_q, r) => {
          r.writeHead(200, { "content-type": "text/html" });
          r.end("<html>oops</html>");
        })),
    ],
    [
      "a daemon answering JSON of the wrong shape",
      async (socket) =>
        void (await fakeDaemon(socket, (_q, r) => {
          r.writeHead(200, { "content-type": "application/json" });
          r.end('{"pod":{"kind":"Secret"}}');
        })),
    ],
    [
      "a daemon failing (HTTP 500)",
      async (socket) =>
        void (await fakeDaemon(socket, (_q, r) => {
          r.writeHead(500, { "content-type": "application/json" });
          r.end("{}");
        })),
    ],
    [
      "a daemon whose own API access fails (422, code 104)",
      async (socket) =>
        void (await fakeDaemon(socket, (_q, r) => {
          r.writeHead(422, { "content-type": "application/json" });
          r.end('{"error":{"code":104,"msg":"401 from the API"}}');
        })),
    ],
  ];
  for (const [what, make] of cases) {
    it(`${what}: the read goes to the API server, logged, within the bounded wait`, async () => {
      const { c, log, direct, built } = await withDirect();
      await make(c.socket);
      const k = client(c.socket, direct, log, 200);
      const t0 = performance.now();
      expect((await k.getPod("app", "web", "uid-web")).metadata.uid).toBe("uid-web");
      expect(performance.now() - t0).toBeLessThan(1500);
      expect(await k.getNad("app", "net-a")).toBeDefined();
      await k.setNetworkStatus({ namespace: "app", name: "web" }, "[]");
      expect(built()).toBe(1);
      expect(k.fallbackReason).toBeTruthy();
      expect(k.requestCount).toBe(3);
      expect(
        log.lines.filter((l) => l.level === "warn" && /daemon unavailable/.test(l.msg)),
      ).toHaveLength(1);
    });
  }

  it("kubeFactory: no socket file → the direct client at once; a live daemon → DaemonKube", async () => {
    const c = await cluster();
    const none = kubeFactory(
      { kubeconfig: c.kubeconfig, daemonSocket: c.socket },
      { client: FAST },
    );
    cleanups.push(() => none.close());
    expect((await none())?.constructor.name).toBe("RestKube");
    await daemon(c);
    const via = kubeFactory({ kubeconfig: c.kubeconfig, daemonSocket: c.socket }, { client: FAST });
    cleanups.push(() => via.close());
    const k = await via();
    expect(k?.constructor.name).toBe("DaemonKube");
    expect((await k!.getPod("app", "web")).metadata.name).toBe("web");
  });
});

/** `dist/plexus daemon` (the Bun executable, as the DaemonSet runs it); stopped after the test. */
async function binaryDaemon(
  paths: { kubeconfig: string; socket: string },
  extra: string[] = [],
): Promise<{ daemon: ChildProcess; stderr: () => string }> {
  const args = ["daemon", "--kubeconfig", paths.kubeconfig, "--node-name", "node-1"];
  args.push("--socket", paths.socket);
  const daemon = spawn(PLEXUS_BIN, [...args, "--pod-resources-socket", "", ...extra], {
    cwd: "/",
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  daemon.stderr!.on("data", (b: Buffer) => (stderr += b.toString()));
  cleanups.push(async () => {
    if (daemon.exitCode !== null || daemon.signalCode !== null) return;
    const exited = new Promise((r) => daemon.once("exit", r));
    daemon.kill("SIGTERM");
    await exited;
  });
  await expect
    .poll(() => unixSocketStatus(paths.socket, "/healthz"), { timeout: 15_000, interval: 20 })
    .toBe(200);
  return { daemon, stderr: () => stderr };
}

describe("the daemon accepts the kubeconfigs the CNI binary accepts (one loader)", () => {
  it("M1 a plain-http kubeconfig: the watches start, /readyz is 200, pods and NADs come from the cache", async () => {
    const s = await startFakeApiServer({ tls: false });
    cleanups.push(() => s.close());
    const dir = mkdtempSync(join(tmpdir(), "plx-daemon-http-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    s.addPod({
      metadata: { name: "web", namespace: "app", uid: "uid-web" },
      spec: { nodeName: "node-1" },
    });
    s.addNad({ metadata: { name: "net-a", namespace: "app" }, spec: { config: NAD_CONF } });
    const c = {
      kubeconfig: writeKubeconfig(s, { dir, tokenFile: true }),
      socket: join(dir, "plexus.sock"),
    };
    const d = await binaryDaemon(c);
    await expect
      .poll(() => unixSocketStatus(c.socket, "/readyz"), { timeout: 10_000, interval: 50 })
      .toBe(200);
    const watches = s.requests.filter((r) => new URLSearchParams(r.query).get("watch") === "true");
    const watched = watches.map((r) => r.path);
    expect(watched).toEqual(
      expect.arrayContaining([
        "/api/v1/pods",
        "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions",
      ]),
    );
    expect(
      JSON.parse((await daemonGet(c.socket, "/v1/pod?namespace=app&name=web")).text).source,
    ).toBe("cache");
    expect(
      JSON.parse((await daemonGet(c.socket, "/v1/nad?namespace=app&name=net-a")).text).source,
    ).toBe("cache");
    // The watches carried the kubeconfig's token, as the REST client's requests do.
    expect(s.requests.every((r) => r.user !== undefined)).toBe(true);
    expect(d.stderr()).not.toMatch(/HTTP protocol is not allowed/);
  });
});

describe("the health port bounds its connections: idle ones starve neither probes nor socket", () => {
  it("B36 B85 100 stalled connections: the longest idle go past 64, probes and socket answer, the rest close", async () => {
    const c = await cluster();
    const d = await binaryDaemon(c, ["--health-address", "127.0.0.1:0"]);
    const listening = () =>
      d
        .stderr()
        .split("\n")
        .find((l) => l.includes("daemon health and metrics listening"));
    await expect.poll(listening, { timeout: 5000 }).toBeTruthy();
    const port = Number(JSON.parse(listening()!).port);
    await ready(c.socket);
    expect(port).toBeGreaterThan(0);
    const idle: Socket[] = [];
    let closedByServer = 0;
    for (let i = 0; i < 100; i++) {
      const sock = netConnect({ host: "127.0.0.1", port });
      sock.on("error", () => {});
      sock.on("close", () => closedByServer++);
      await new Promise<void>((r) => sock.once("connect", () => r()));
      // Headers never finished (a slow client, or one that stalls on purpose): the connection is
      // held open; one that sends nothing at all Bun closes itself after its own idle timeout.
      sock.write(i % 2 ? "GET /healthz HTTP/1.1\r\nHost: x\r\n" : "G");
      idle.push(sock);
    }
    cleanups.push(() => {
      for (const sock of idle) sock.destroy();
    });
    const t0 = performance.now();
    expect((await tcpRequest({ host: "127.0.0.1", port }, "/healthz")).status).toBe(200);
    expect((await tcpRequest({ host: "127.0.0.1", port }, "/readyz")).status).toBe(200);
    expect((await daemonGet(c.socket, "/v1/pod?namespace=app&name=web")).status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(2000);
    // At most 64 open at once: the oldest idle ones made room for the probes.
    await expect.poll(() => closedByServer, { timeout: 2000 }).toBeGreaterThanOrEqual(100 - 64);
    // The others are closed once idle past the bound.
    await expect.poll(() => closedByServer, { timeout: 9000, interval: 100 }).toBe(100);
  });
});
