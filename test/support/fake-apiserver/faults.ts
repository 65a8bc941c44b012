/**
 * Faults a test injects per route: what a matching request gets instead of (or before) the
 * answer kube-apiserver would give, and the writing of answers they alter.
 */
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { send, statusBody } from "./status.ts";

/** What a matching request gets instead of (or before) normal handling. */
export type Fault =
  | {
      kind: "status";
      code: number;
      reason?: string;
      message?: string;
      retryAfter?: string;
      details?: Record<string, unknown>;
    }
  /**
   * Another client writes the object between this request's read and its write (etcd's
   * compare-and-swap fails): the fake re-reads and re-applies the update, as GuaranteedUpdate does.
   */
  | { kind: "racing-write" }
  /** Close the connection without an answer (RST). */
  | { kind: "reset" }
  /** Never answer; the socket stays open until the client gives up. */
  | { kind: "hang" }
  /** Send the headers (Content-Length of a real answer), then nothing. */
  | { kind: "hang-after-headers" }
  /**
   * Send headers, then the real answer a few bytes at a time (`chunked`: without Content-Length).
   */
  | { kind: "slow-body"; chunkBytes?: number; intervalMs?: number; chunked?: boolean }
  /** 200 with a JSON body of `bytes` (default 10 MiB). */
  | { kind: "huge-body"; bytes?: number }
  /** 200 text/html, as a captive portal or a proxy error page. */
  | { kind: "html" }
  /** 200 application/json whose body is the first half of the real answer (consistent framing). */
  | { kind: "truncated" }
  /** 200 with a List where an object was asked for. */
  | { kind: "wrong-kind" }
  /** Wait, then handle normally. */
  | { kind: "delay"; ms: number };

export interface FaultMatcher {
  method?: string;
  /** Exact pathname, or a RegExp tested against it. */
  path?: string | RegExp;
  /** Tested against the query string (`?a=b&…`). */
  query?: RegExp;
  /** How many matching requests get the fault (default: all). */
  times?: number;
  /** Only watch requests (`true`) or only non-watch requests (`false`); default both. */
  watch?: boolean;
}

interface Rule {
  match: FaultMatcher;
  fault: Fault;
  left: number;
}

interface FaultRequest {
  method: string;
  path: string;
  isWatch: boolean;
  query: string;
}

function matches(match: FaultMatcher, request: FaultRequest): boolean {
  if (match.watch !== undefined && match.watch !== request.isWatch) return false;
  if (match.method && match.method.toUpperCase() !== request.method) return false;
  if (match.query && !match.query.test(request.query)) return false;
  if (match.path === undefined) return true;
  return typeof match.path === "string"
    ? match.path === request.path
    : match.path.test(request.path);
}

/** The injected faults, in order: every matching delay, then at most one other fault. */
export class FaultRules {
  readonly rules: Rule[] = [];

  inject(match: FaultMatcher, fault: Fault): void {
    this.rules.push({ match, fault, left: match.times ?? Number.POSITIVE_INFINITY });
  }

  clear(): void {
    this.rules.length = 0;
  }

  take(request: FaultRequest): Fault[] {
    const out: Fault[] = [];
    for (const r of this.rules) {
      if (r.left <= 0 || !matches(r.match, request)) continue;
      r.left--;
      out.push(r.fault);
      if (r.fault.kind !== "delay") break;
    }
    return out;
  }
}

const HTML =
  "<!DOCTYPE html><html><head><title>Proxy Login</title></head><body>Please log in</body></html>";

function sendHugeBody(res: ServerResponse, bytes: number): void {
  const buf = Buffer.alloc(bytes, 0x20);
  buf.write('{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"},"pad":"', 0);
  buf.write('"}', bytes - 2);
  res.writeHead(200, { "content-type": "application/json", "content-length": String(bytes) });
  res.end(buf);
}

/**
 * A fault that replaces the answer before routing (status, reset, hang, html, huge-body,
 * wrong-kind): true when it answered (or deliberately did not). `sockets` are the raw TCP
 * sockets: on TLS the reset goes to the one underneath.
 */
export function playFault(
  res: ServerResponse,
  fault: Fault | undefined,
  sockets: ReadonlySet<Socket>,
): boolean {
  if (!fault) return false;
  const code = fault.kind === "status" ? fault.code : 0;
  if (fault.kind === "status") {
    const message = fault.message ?? `injected ${code}`;
    const headers: Record<string, string> = fault.retryAfter
      ? { "retry-after": fault.retryAfter }
      : {};
    send(res, code, statusBody(code, message, fault.reason, fault.details), headers);
  } else if (fault.kind === "reset") {
    // RST, not FIN: on TLS the reset goes to the TCP socket underneath.
    const port = res.req.socket.remotePort;
    const raw = [...sockets].find((s) => s.remotePort === port) ?? res.req.socket;
    raw.resetAndDestroy();
  } else if (fault.kind === "html") {
    const html = Buffer.from(HTML);
    res.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "content-length": String(html.length),
    });
    res.end(html);
  } else if (fault.kind === "huge-body") sendHugeBody(res, fault.bytes ?? 10 * 1024 * 1024);
  else if (fault.kind === "wrong-kind")
    send(res, 200, { apiVersion: "v1", kind: "List", metadata: {}, items: [] });
  else return fault.kind === "hang";
  return true;
}

/** The answer a handler gave, as its fault alters it (truncated, headers only, slowly). */
export async function writeAnswer(
  res: ServerResponse,
  answer: { code: number; body: unknown; warnings: string[] | undefined; fault: Fault | undefined },
  later: (ms: number) => Promise<void>,
): Promise<void> {
  const { code, fault } = answer;
  const buf = Buffer.from(JSON.stringify(answer.body));
  if (fault?.kind === "truncated") {
    const half = buf.subarray(0, Math.floor(buf.length / 2));
    res.writeHead(200, {
      "content-type": "application/json",
      "content-length": String(half.length),
    });
    return void res.end(half);
  }
  if (fault?.kind === "hang-after-headers" || fault?.kind === "slow-body") {
    const chunked = fault.kind === "slow-body" && fault.chunked;
    res.writeHead(code, {
      "content-type": "application/json",
      ...(chunked ? {} : { "content-length": String(buf.length) }),
    });
    res.flushHeaders();
    if (fault.kind === "hang-after-headers") return;
    const step = fault.chunkBytes ?? 1;
    for (let i = 0; i < buf.length && !res.destroyed; i += step) {
      await later(fault.intervalMs ?? 50);
      if (res.destroyed) return;
      res.write(buf.subarray(i, i + step));
    }
    return void res.end();
  }
  const headers: Record<string, string | string[]> = {
    "content-type": "application/json",
    "content-length": String(buf.length),
  };
  if (answer.warnings) headers.warning = answer.warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  res.writeHead(code, headers);
  res.end(buf);
}
