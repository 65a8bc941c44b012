/**
 * The API client's transports: {@link HttpTransport}, node:http(s) with one keep-alive agent (the
 * daemon, and every process under Node), and in the Bun executable Bun's own fetch for a process
 * that makes a few requests and exits (see shortLivedTransport, socketTransport). Both hold the
 * same rules: a deadline per attempt (headers and body, as an AbortSignal), a response size cap
 * (B41), a check that a 2xx answer is a JSON object (B40), and a hung or trickling server leaves no
 * socket in use behind (B36).
 */
import type * as http from "node:http";
import { type BunFetch, bunFetch } from "../sys/runtime";

/** A transport-level failure: no HTTP answer to classify. */
export class TransportError extends Error {
  override name = "TransportError";
  readonly kind: "timeout" | "reset" | "refused" | "dns" | "too-large" | "tls" | "other";
  constructor(kind: TransportError["kind"], message: string, options?: ErrorOptions) {
    super(message, options);
    this.kind = kind;
  }
}

/** A 2xx answer that is not the JSON object asked for (B40). */
export class DecodeError extends Error {
  override name = "DecodeError";
}

export const RETRYABLE_TRANSPORT: ReadonlySet<TransportError["kind"]> = new Set([
  "timeout",
  "reset",
  "refused",
  "dns",
]);

function transportError(err: unknown): TransportError {
  if (err instanceof TransportError) return err;
  const e = err as NodeJS.ErrnoException;
  const code = e.code ?? "";
  const msg = `${code ? `${code}: ` : ""}${e.message}`;
  if (code === "ECONNREFUSED" || code === "ENOENT")
    return new TransportError("refused", msg, { cause: err });
  if (
    code === "ECONNRESET" ||
    code === "EPIPE" ||
    code === "ECONNABORTED" ||
    code === "ERR_STREAM_PREMATURE_CLOSE"
  )
    return new TransportError("reset", msg, { cause: err });
  if (code === "ENOTFOUND" || code === "EAI_AGAIN")
    return new TransportError("dns", msg, { cause: err });
  if (code === "ETIMEDOUT" || code === "EHOSTUNREACH" || code === "ENETUNREACH")
    return new TransportError("timeout", msg, { cause: err });
  if (code.startsWith("ERR_TLS") || code.includes("CERT") || code.startsWith("ERR_SSL"))
    return new TransportError("tls", msg, { cause: err });
  return new TransportError("other", msg, { cause: err });
}

export interface TlsMaterial {
  ca?: string | Buffer | undefined;
  cert?: string | Buffer | undefined;
  key?: string | Buffer | undefined;
  rejectUnauthorized?: boolean | undefined;
  servername?: string | undefined;
}

export interface HttpRequest {
  method: string;
  url: URL;
  headers?: Record<string, string> | undefined;
  body?: string | undefined;
  signal?: AbortSignal | undefined;
  /** Check that a 2xx answer is a JSON object (B40). Default true. */
  expectJson?: boolean | undefined;
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The parsed body of a 2xx answer (when `expectJson`). */
  json?: Record<string, unknown> | undefined;
}

export interface HttpTransportOptions {
  tls?: TlsMaterial | undefined;
  maxBytes: number;
  /** A unix socket to connect to instead of the URL's host (the daemon's API). */
  socketPath?: string | undefined;
  maxSockets?: number | undefined;
}

const https = () => process.getBuiltinModule("node:https");
const plainHttp = () => process.getBuiltinModule("node:http");

/** The TLS SNI name for a host: none for an IP literal (RFC 6066 §3), else the host name. */
function sniName(hostname: string): string {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname) ||
    hostname.startsWith("[") ||
    hostname.includes(":")
    ? ""
    : hostname;
}

export class HttpTransport {
  sent = 0;
  private readonly agent: http.Agent;
  private readonly maxBytes: number;
  private readonly socketPath: string | undefined;
  private readonly servername: string | undefined;

  constructor(options: HttpTransportOptions) {
    this.maxBytes = options.maxBytes;
    this.servername = options.tls?.servername;
    this.socketPath = options.socketPath;
    const maxSockets = options.maxSockets ?? 4;
    // node:https (tls, crypto) is loaded only for an HTTPS server: the daemon's socket needs none
    // of it.
    const tls = options.tls;
    // Verification is explicit: only the kubeconfig's insecure-skip-tls-verify turns it off, never
    // the environment (NODE_TLS_REJECT_UNAUTHORIZED=0 would send the token to an impostor).
    const verify = { rejectUnauthorized: tls?.rejectUnauthorized !== false };
    this.agent = tls
      ? new (https().Agent)({ ...tls, ...verify, keepAlive: true, maxSockets })
      : new (plainHttp().Agent)({ keepAlive: true, maxSockets });
  }

  /**
   * One request: open it, wait for the answer under the caller's signal, read the body within the
   * cap.
   */
  request(asked: HttpRequest): Promise<HttpAnswer> {
    this.sent++;
    return new Promise<HttpAnswer>((resolve, reject) => {
      const req = this.open(asked);
      const x = new Exchange(req, asked, resolve, reject);
      if (asked.signal?.aborted) return x.abort();
      asked.signal?.addEventListener("abort", x.abort, { once: true });
      req.on("error", (err) => x.fail(err));
      req.on("response", (res) => this.receive(res, asked, x));
      req.end(asked.body);
    });
  }

  /** The request on the keep-alive agent, headers set, not yet sent. */
  private open(request: HttpRequest): http.ClientRequest {
    const { url } = request;
    const lib = url.protocol === "https:" ? https() : plainHttp();
    const headers: Record<string, string> = { accept: "application/json", ...request.headers };
    if (request.body !== undefined)
      headers["content-length"] = String(Buffer.byteLength(request.body));
    const req = lib.request(url, {
      method: request.method,
      headers,
      agent: this.agent,
      // Always given (the kubeconfig's tls-server-name, else the URL's host name, none for an
      // IP): Node's own guess is not needed.
      servername:
        this.socketPath || url.protocol !== "https:"
          ? ""
          : (this.servername ?? sniName(url.hostname)),
      ...(this.socketPath ? { socketPath: this.socketPath } : {}),
    });
    req.setNoDelay(true);
    return req;
  }

  /**
   * The answer's body, within `maxBytes` (declared or streamed); a connection closed early is a
   * reset.
   */
  private receive(res: http.IncomingMessage, request: HttpRequest, exchange: Exchange): void {
    const declared = Number(res.headers["content-length"]);
    if (declared > this.maxBytes)
      return exchange.fail(
        new TransportError(
          "too-large",
          `response of ${declared} bytes exceeds the ${this.maxBytes}-byte limit`,
        ),
      );
    const chunks: Buffer[] = [];
    let size = 0;
    res.on("data", (c: Buffer) => {
      size += c.length;
      if (size > this.maxBytes)
        exchange.fail(
          new TransportError("too-large", `response exceeds the ${this.maxBytes}-byte limit`),
        );
      else chunks.push(c);
    });
    res.on("error", (err) => exchange.fail(err));
    res.on("close", () => {
      if (!res.complete)
        exchange.fail(
          new TransportError("reset", `connection closed after ${size} bytes of the answer`),
        );
    });
    res.on("end", () => exchange.finish(() => answerOf(res, Buffer.concat(chunks), request)));
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * One request in flight: settled once, by a failure or the answer; the abort signal released either
 * way.
 */
class Exchange {
  private settled = false;
  constructor(
    private readonly req: http.ClientRequest,
    private readonly request: HttpRequest,
    private readonly resolve: (a: HttpAnswer) => void,
    private readonly reject: (err: Error) => void,
  ) {}

  /** The caller's signal fired: no complete answer in time. */
  readonly abort = (): void => this.fail(requestTimedOut(this.request));

  /**
   * Fails the request (the first failure wins): the socket destroyed, the error as a
   * TransportError.
   */
  fail(err: unknown): void {
    this.release();
    if (this.settled) return;
    this.settled = true;
    this.req.destroy();
    this.reject(transportError(err));
  }

  /** Settles with the answer, or the error it is, unless a failure came first. */
  finish(outcome: () => HttpAnswer | Error): void {
    this.release();
    if (this.settled) return;
    this.settled = true;
    const o = outcome();
    if (o instanceof Error) this.reject(o);
    else this.resolve(o);
  }

  private release(): void {
    this.request.signal?.removeEventListener("abort", this.abort);
  }
}

/** The caller's signal fired before the whole answer was in (both transports say it so). */
function requestTimedOut(request: HttpRequest, cause?: unknown): TransportError {
  return new TransportError(
    "timeout",
    `no complete answer within the request timeout (${request.method} ${request.url.pathname})`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * The complete answer: headers flattened; a 2xx body parsed as a JSON object unless `expectJson` is
 * false.
 */
function answerOf(
  res: http.IncomingMessage,
  body: Buffer,
  request: HttpRequest,
): HttpAnswer | DecodeError {
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers))
    if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(", ") : v;
  return answerFrom({ status: res.statusCode ?? 0, headers: flat, body }, request);
}

function answerFrom(answer: HttpAnswer, request: HttpRequest): HttpAnswer | DecodeError {
  const { status, headers: flat, body } = answer;
  if (status >= 200 && status < 300 && request.expectJson !== false) {
    const parsed = parseJsonObject(flat["content-type"], body);
    if (typeof parsed === "string") return new DecodeError(`HTTP ${status} with ${parsed}`);
    return { status, headers: flat, body, json: parsed };
  }
  return { status, headers: flat, body };
}

/** The body as a JSON object, or what is wrong with it. */
function parseJsonObject(
  contentType: string | undefined,
  body: Buffer,
): Record<string, unknown> | string {
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (mediaType !== "application/json")
    return (
      `content-type ${JSON.stringify(contentType ?? "")} instead of application/json ` +
      `(${JSON.stringify(body.subarray(0, 60).toString("utf8"))}…)`
    );
  let v: unknown;
  try {
    v = JSON.parse(body.toString("utf8"));
  } catch (err) {
    return `a body that is not valid JSON (${body.length} bytes: ${(err as Error).message})`;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v))
    return "a JSON body that is not an object";
  return v as Record<string, unknown>;
}

/** What a client needs of a transport: one request, one complete answer. */
export interface ApiTransport {
  readonly sent: number;
  request(request: HttpRequest): Promise<HttpAnswer>;
  close(): void;
}

/**
 * A transport to a local unix socket (the daemon). In the Bun executable it is Bun's own fetch,
 * whose `unix` option connects to the socket natively, so the CNI process loads no `node:http`
 * (what that saves: docs/benchmarks.md, "Levers, measured"). Elsewhere (Node, the unit tests) it
 * is {@link HttpTransport}.
 */
export function socketTransport(options: { socketPath: string; maxBytes: number }): ApiTransport {
  const fetch = bunFetch();
  return fetch
    ? new FetchTransport(fetch, options)
    : new HttpTransport({ ...options, maxSockets: 1 });
}

/**
 * The API server's transport for a process that makes a few requests and exits (the CNI call): in
 * the Bun executable Bun's own fetch, which loads none of Node's HTTP, TLS and stream modules
 * (what that saves: docs/benchmarks.md, "Levers, measured") and keeps one connection for the
 * call's sequential requests. Its pooled connection cannot be closed on
 * demand, so a long-lived process (the daemon) keeps {@link HttpTransport}. Elsewhere (Node) it is
 * {@link HttpTransport} too.
 */
export function shortLivedTransport(options: HttpTransportOptions): ApiTransport {
  const fetch = bunFetch();
  return fetch ? new FetchTransport(fetch, options) : new HttpTransport(options);
}

/**
 * Bun's fetch with what {@link HttpTransport} guarantees: the kubeconfig's CA as the only trust
 * anchor and verification on unless the kubeconfig turns it off (never the environment), the SNI
 * name given, no proxy from the environment (as the Node transport: a cluster's HTTPS_PROXY is for
 * image pulls), no redirects followed, the size cap, the caller's deadline, and its errors mapped
 * to the same {@link TransportError} kinds (Bun's codes are Node's: ECONNREFUSED, ECONNRESET, …).
 */
class FetchTransport implements ApiTransport {
  sent = 0;
  private readonly socketPath: string | undefined;
  private readonly maxBytes: number;
  private readonly tls: Record<string, unknown> | undefined;
  private readonly oneAtATime: boolean;
  /** The request in flight, when they go one at a time. */
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly fetch: BunFetch,
    options: HttpTransportOptions,
  ) {
    this.socketPath = options.socketPath;
    this.maxBytes = options.maxBytes;
    // Bun's fetch opens a connection per concurrent request: with maxSockets 1 the requests wait
    // for each other instead, on one connection (one TLS handshake per call, as HttpTransport's
    // agent).
    this.oneAtATime = options.maxSockets === 1;
    const t = options.tls;
    this.tls = t && {
      ...(t.ca !== undefined ? { ca: t.ca } : {}),
      ...(t.cert !== undefined ? { cert: t.cert } : {}),
      ...(t.key !== undefined ? { key: t.key } : {}),
      ...(t.servername ? { serverName: t.servername } : {}),
      rejectUnauthorized: t.rejectUnauthorized !== false,
    };
  }

  request(request: HttpRequest): Promise<HttpAnswer> {
    if (!this.oneAtATime) return this.exchange(request);
    // `last` never rejects: each request starts when the one before it has settled, either way.
    const mine = this.last.then(() => this.exchange(request));
    this.last = mine.catch(() => undefined);
    return mine;
  }

  private async exchange(request: HttpRequest): Promise<HttpAnswer> {
    this.sent++;
    try {
      const res = await this.fetch(request.url, {
        method: request.method,
        headers: { accept: "application/json", ...request.headers },
        ...(request.body !== undefined ? { body: request.body } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
        redirect: "manual",
        proxy: false,
        ...(this.socketPath ? { unix: this.socketPath } : {}),
        ...(this.tls && request.url.protocol === "https:" ? { tls: this.tls } : {}),
      });
      const body = await this.readCapped(res);
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => {
        headers[k] = v;
      });
      const a = answerFrom({ status: res.status, headers, body }, request);
      if (a instanceof Error) throw a;
      return a;
    } catch (err) {
      if (err instanceof TransportError || err instanceof DecodeError) throw err;
      throw request.signal?.aborted ? requestTimedOut(request, err) : transportError(err);
    }
  }

  /** The body within `maxBytes` (declared or streamed). */
  private async readCapped(res: Response): Promise<Buffer> {
    const declared = Number(res.headers.get("content-length"));
    // The messages are HttpTransport's, word for word.
    const tooLarge = (what: string) =>
      new TransportError("too-large", `response${what} exceeds the ${this.maxBytes}-byte limit`);
    if (declared > this.maxBytes) {
      await res.body?.cancel();
      throw tooLarge(` of ${declared} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = res.body?.getReader();
    for (;;) {
      const next = await reader?.read();
      if (!next || next.done) break;
      size += next.value.byteLength;
      if (size > this.maxBytes) {
        await reader?.cancel();
        throw tooLarge("");
      }
      chunks.push(next.value);
    }
    return Buffer.concat(chunks);
  }

  close(): void {
    // Bun's fetch pools its connections itself; the process that uses this transport exits soon.
  }
}
