/**
 * A minimal gRPC client for unary calls over a unix socket (h2c), on `node:http2`: what kubelet's
 * pod-resources API needs and no more. One request is HEADERS (POST, the method's path,
 * `application/grpc`, `te: trailers`, `grpc-timeout`) and one DATA frame holding the length-prefixed
 * message; the answer is the DATA frames' message and the trailers' `grpc-status`/`grpc-message`.
 *
 * Why not @grpc/grpc-js: in the Bun executable its module load and channel set-up (resolver,
 * load balancer, subchannel pool) cost a CNI process that asks one question far more than the
 * question (docs/benchmarks.md, "Levers, measured"). No compression is offered, so none comes back.
 */
import * as http2 from "node:http2";
import * as net from "node:net";

/** gRPC status codes (grpc/doc/statuscodes.md), by name and by number. */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export function grpcStatusName(code: number): string {
  return Object.entries(GrpcStatus).find(([, c]) => c === code)?.[0] ?? `status ${code}`;
}

/** A call's failure: the gRPC status code and the server's (or this client's) details. */
export class GrpcError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, details: string) {
    super(`${code} ${grpcStatusName(code)}: ${details}`);
    this.code = code;
    this.details = details;
  }
}

export interface UnaryCall {
  /** `/package.Service/Method`. */
  path: string;
  /** The encoded request message. */
  request: Uint8Array;
  /** Epoch ms by which the answer must be in. */
  deadline: number;
}

/**
 * One HTTP/2 connection to a unix socket, opened on the first call and again after it closes
 * (the daemon keeps one across kubelet restarts; a CNI process makes one and closes it).
 */
export class UnixGrpcChannel {
  private session: http2.ClientHttp2Session | undefined;
  private readonly socket: string;
  private readonly maxMessageBytes: number;

  constructor(options: { socket: string; maxMessageBytes: number }) {
    this.socket = options.socket;
    this.maxMessageBytes = options.maxMessageBytes;
  }

  private connect(): http2.ClientHttp2Session {
    const open = this.session;
    if (open && !open.closed && !open.destroyed) return open;
    const session = http2.connect("http://localhost", { createConnection: () => net.connect(this.socket) });
    // A connection error fails the calls on it (their own handlers); it must not crash the process.
    session.on("error", () => {});
    session.on("close", () => {
      if (this.session === session) this.session = undefined;
    });
    this.session = session;
    return session;
  }

  /** The answer's message bytes; a GrpcError for any status but OK, a dead connection or the deadline. */
  unary(call: UnaryCall): Promise<Buffer> {
    const budget = call.deadline - Date.now();
    if (budget <= 0) return Promise.reject(new GrpcError(GrpcStatus.DEADLINE_EXCEEDED, "Deadline exceeded"));
    const session = this.connect();
    return new Promise((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": call.path,
        "content-type": "application/grpc",
        te: "trailers",
        // The header takes at most 8 digits (gRPC over HTTP/2); the local timer bounds the call anyway.
        "grpc-timeout": `${Math.min(Math.ceil(budget), 99_999_999)}m`,
      });
      const answer = new Answer(this.maxMessageBytes);
      let done = false;
      const settle = (err: GrpcError | undefined, value?: Buffer) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        session.off("error", onSessionError);
        if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
        err ? reject(err) : resolve(value as Buffer);
      };
      const timer = setTimeout(() => settle(new GrpcError(GrpcStatus.DEADLINE_EXCEEDED, "Deadline exceeded")), budget);
      const onSessionError = (err: Error) => settle(new GrpcError(GrpcStatus.UNAVAILABLE, err.message));
      session.on("error", onSessionError);
      stream.on("error", (err: Error) => settle(new GrpcError(GrpcStatus.UNAVAILABLE, err.message)));
      stream.on("response", (headers) => answer.headers(headers));
      stream.on("trailers", (trailers) => answer.headers(trailers));
      stream.on("data", (chunk: Buffer) => {
        const tooLarge = answer.data(chunk);
        if (tooLarge) settle(tooLarge);
      });
      stream.on("close", () => {
        const result = answer.result();
        result instanceof GrpcError ? settle(result) : settle(undefined, result);
      });
      stream.end(frame(call.request));
    });
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }
}

/** The 5-byte gRPC message prefix (not compressed, big-endian length) and the message. */
function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** One call's answer as it arrives: status headers (in the trailers, or alone), message bytes. */
class Answer {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private httpStatus: number | undefined;
  private status: number | undefined;
  private message = "";
  private readonly maxMessageBytes: number;

  constructor(maxMessageBytes: number) {
    this.maxMessageBytes = maxMessageBytes;
  }

  headers(fields: http2.IncomingHttpHeaders): void {
    if (fields[":status"] !== undefined) this.httpStatus = Number(fields[":status"]);
    if (fields["grpc-status"] !== undefined) this.status = Number(fields["grpc-status"]);
    const msg = fields["grpc-message"];
    if (typeof msg === "string") this.message = percentDecoded(msg);
  }

  data(chunk: Buffer): GrpcError | undefined {
    this.bytes += chunk.length;
    this.chunks.push(chunk);
    if (this.bytes > this.maxMessageBytes + 5)
      return new GrpcError(GrpcStatus.RESOURCE_EXHAUSTED, `answer larger than ${this.maxMessageBytes} bytes`);
    return undefined;
  }

  result(): Buffer | GrpcError {
    if (this.status === undefined) {
      return this.httpStatus === undefined
        ? new GrpcError(GrpcStatus.UNAVAILABLE, "connection closed before an answer")
        : new GrpcError(GrpcStatus.UNKNOWN, `HTTP status ${this.httpStatus} without a grpc-status`);
    }
    if (this.status !== GrpcStatus.OK) return new GrpcError(this.status, this.message);
    const body = Buffer.concat(this.chunks);
    if (body.length < 5) return new GrpcError(GrpcStatus.INTERNAL, "an OK answer without a message");
    if (body[0] !== 0) return new GrpcError(GrpcStatus.INTERNAL, "a compressed answer, though none was offered");
    const length = body.readUInt32BE(1);
    if (body.length < 5 + length) return new GrpcError(GrpcStatus.INTERNAL, "the answer's message is cut short");
    return body.subarray(5, 5 + length);
  }
}

function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
