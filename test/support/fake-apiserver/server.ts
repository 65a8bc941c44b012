/**
 * The fake API server's assembly: its parts (store, watches, RBAC, admission, faults) wired into
 * a node:https (or node:http) server on 127.0.0.1:0, and the test controls over them. Every socket
 * gets TCP_NODELAY and every response is written in one piece with Content-Length, so benchmarks
 * do not measure delayed ACKs. `await using` (or `close()`) destroys every socket.
 */
import { rmSync } from "node:fs";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import { createFakeAdmission, type FakeAdmission } from "./admission.ts";
import { withCreatorOwnership } from "./claim-status.ts";
import { type Fault, type FaultMatcher, FaultRules } from "./faults.ts";
import { ownedTempDirs, SERVER_CERT, SERVER_KEY, TEST_CA_PEM } from "./kubeconfig.ts";
import {
  DEPLOY_DIR,
  kustomizationDocs,
  loadShippedRbac,
  serviceAccountUser,
  type UserInfo,
} from "./rbac.ts";
import { type DraResource, objectKey, RESOURCES, type Resource } from "./resources.ts";
import { onRequest, type ServerContext } from "./router.ts";
import { send, statusBody } from "./status.ts";
import { ObjectStore } from "./store.ts";
import type {
  FakeApiServer,
  FakeApiServerOptions,
  KubeObject,
  LoggedRequest,
  NadInput,
  PodInput,
} from "./types.ts";
import { WatchHub } from "./watch.ts";

/** The admission of `deploy/` (or `deployDir`); none with `admission: false`. */
function loadAdmission(opts: FakeApiServerOptions, user: UserInfo, store: ObjectStore) {
  // rbac: false (a test about something else than permissions) turns admission off unless asked
  // for.
  const off = opts.admission === false || (opts.rbac === false && opts.admission === undefined);
  const dir = off ? undefined : ((opts.admission || undefined)?.deployDir ?? DEPLOY_DIR);
  const docs = dir ? kustomizationDocs(dir) : [];
  return createFakeAdmission({ docs, user, pods: () => store.objects("pods").values() });
}

/** Timers the server clears on close (latency, delays, slow bodies). */
function timerSet(): { pending: Set<NodeJS.Timeout>; later: (ms: number) => Promise<void> } {
  const pending = new Set<NodeJS.Timeout>();
  const later = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        pending.delete(t);
        resolve();
      }, ms);
      pending.add(t);
    });
  return { pending, later };
}

/** The parts of a server, before it listens. */
function createContext(opts: FakeApiServerOptions) {
  const store = new ObjectStore({ historyLimit: opts.historyLimit });
  const { pending, later } = timerSet();
  const rbac = opts.rbac === false ? undefined : loadShippedRbac(opts.rbac?.deployDir);
  // The token is the shipped service account's (the DaemonSet's projected token, the installer's
  // kubeconfig).
  const saUser =
    (rbac ?? loadShippedRbac()).serviceAccounts[0] ?? serviceAccountUser("default", "default");
  const admission = loadAdmission(opts, saUser, store);
  // The DaemonSet's pod-bound token on the fixtures' node: a test-chosen `token` stands for it too.
  const ownToken = admission.issueToken({ node: opts.node ?? "node-1", pod: "plexus-fake" });
  const state = { token: opts.token || ownToken };
  const ctx: ServerContext = {
    store,
    watches: new WatchHub({
      store,
      expiredWatch: opts.expiredWatch,
      bookmarkIntervalMs: opts.bookmarkIntervalMs,
      later,
    }),
    admission,
    rbac,
    authn: {
      clientCertificates: Boolean(opts.clientCertificates),
      token: () => state.token,
      tokenUser: admission.authenticate(ownToken)!,
      boundToken: (token) => admission.authenticate(token),
    },
    faults: new FaultRules(),
    requests: [],
    sockets: new Set<Socket>(),
    started: performance.now(),
    latencyMs: opts.latencyMs,
    unserved: opts.unserved,
    draGranularStatusAuthorization: opts.draGranularStatusAuthorization,
    later,
  };
  return { ctx, state, pending };
}

/** Listens on 127.0.0.1:0; every connection gets TCP_NODELAY and is tracked for close(). */
async function listen(ctx: ServerContext, opts: FakeApiServerOptions): Promise<Server> {
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    onRequest(ctx, req, res).catch((err: unknown) => {
      if (!res.headersSent)
        send(res, 500, statusBody(500, `fake API server bug: ${(err as Error).message}`));
      else res.destroy();
    });
  };
  // As kube-apiserver with --client-ca-file: a certificate is asked for, not required; one that
  // does not verify authenticates nobody (the request then needs a token).
  const clientCa = opts.clientCertificates
    ? { requestCert: true, rejectUnauthorized: false, ca: [TEST_CA_PEM] }
    : {};
  const server: Server =
    (opts.tls ?? true)
      ? createHttpsServer({ cert: SERVER_CERT, key: SERVER_KEY, ...clientCa }, handler)
      : createHttpServer(handler);
  server.keepAliveTimeout = 30_000;
  const sockets = ctx.sockets as Set<Socket>;
  server.on("connection", (s: Socket) => {
    s.setNoDelay(true);
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return server;
}

export async function startFakeApiServer(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const { ctx, state, pending } = createContext(opts);
  const server = await listen(ctx, opts);
  return new RunningFakeApiServer({ ctx, state, pending, server, tls: opts.tls ?? true });
}

/** The test controls over a listening server. Plain fields: see store.ts. */
class RunningFakeApiServer implements FakeApiServer {
  readonly url: string;
  readonly port: number;
  readonly caPem = TEST_CA_PEM;
  readonly requests: LoggedRequest[];
  readonly user: UserInfo;
  readonly parts: {
    ctx: ServerContext;
    state: { token: string };
    pending: Set<NodeJS.Timeout>;
    server: Server;
  };
  closed: Promise<void> | undefined;

  constructor(parts: RunningFakeApiServer["parts"] & { tls: boolean }) {
    const { tls, ...rest } = parts;
    this.parts = rest;
    this.port = (parts.server.address() as { port: number }).port;
    this.url = `${tls ? "https" : "http"}://127.0.0.1:${this.port}`;
    this.requests = parts.ctx.requests;
    this.user = parts.ctx.authn.tokenUser;
  }

  get token(): string {
    return this.parts.state.token;
  }
  set token(token: string) {
    this.parts.state.token = token;
  }
  get store(): ObjectStore {
    return this.parts.ctx.store;
  }
  get admission(): FakeAdmission {
    return this.parts.ctx.admission;
  }

  addPod(pod: PodInput): KubeObject {
    return this.store.addPod(pod);
  }
  getPod(namespace: string, name: string): KubeObject | undefined {
    return this.store.objects("pods").get(objectKey(namespace, name));
  }
  deletePod(namespace: string, name: string): boolean {
    return this.store.remove("pods", namespace, name);
  }
  addNad(nad: NadInput): KubeObject {
    return this.addNads([nad])[0]!;
  }
  addNads(nads: NadInput[]): KubeObject[] {
    return this.store.addNads(nads);
  }
  deleteNad(namespace: string, name: string): boolean {
    return this.store.remove("nads", namespace, name);
  }
  addDra(resource: DraResource, obj: PodInput): KubeObject {
    // A claim comes with the managedFields of its creator, as one made through the API would.
    const owned = resource === "resourceclaims" ? withCreatorOwnership(obj) : obj;
    return this.store.addDra(resource, owned);
  }
  resourceVersion(): string {
    return String(this.store.resourceVersion);
  }
  dropWatches(options: { abort?: boolean } = {}): number {
    return this.parts.ctx.watches.dropAll(options.abort);
  }
  compactHistory(): void {
    const stored = RESOURCES.map((d) => d.key).filter((k): k is Resource => k !== "events");
    this.store.compact(stored);
  }
  watchCount(): number {
    return this.parts.ctx.watches.watchers.size;
  }
  events(): KubeObject[] {
    return [...this.store.events];
  }
  storageRetries(): number {
    return this.store.retries;
  }
  issueToken(binding: Parameters<FakeApiServer["issueToken"]>[0] = {}): string {
    return this.admission.issueToken(binding);
  }
  admissionAudit(): string[] {
    return this.admission.audit;
  }
  inject(match: FaultMatcher, fault: Fault): void {
    this.parts.ctx.faults.inject(match, fault);
  }
  clearFaults(): void {
    this.parts.ctx.faults.clear();
  }
  connectionCount(): number {
    return this.parts.ctx.sockets.size;
  }

  close(): Promise<void> {
    this.closed ??= this.shutDown();
    return this.closed;
  }

  /** Removes its kubeconfigs, stops its timers and watches, destroys every connection. */
  private async shutDown(): Promise<void> {
    const { ctx, pending, server } = this.parts;
    for (const d of ownedTempDirs.get(this) ?? []) rmSync(d, { recursive: true, force: true });
    for (const t of pending) clearTimeout(t);
    for (const w of [...ctx.watches.watchers]) ctx.watches.stop(w);
    const socketsClosed = [...ctx.sockets].map(
      (s) =>
        new Promise<void>((resolve) => (s.closed ? resolve() : s.once("close", () => resolve()))),
    );
    const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of ctx.sockets) s.destroy();
    server.closeAllConnections();
    await Promise.all([serverClosed, ...socketsClosed]);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
