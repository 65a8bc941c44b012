/**
 * A minimal gRPC client for unary calls over a unix socket (h2c, ./h2c): what kubelet's
 * pod-resources API needs and no more. One request is HEADERS (POST, the method's path,
 * `application/grpc`, `te: trailers`, `grpc-timeout`) and one DATA frame holding the
 * length-prefixed message; the answer is the DATA frames' message and the trailers'
 * `grpc-status`/`grpc-message`.
 *
 * Why not @grpc/grpc-js, nor `node:http2`: grpc-js runs on `node:http2`, whose load alone in the
 * Bun executable costs a CNI process that asks one question more than the question
 * (docs/benchmarks.md, "Levers, measured"), and grpc-js adds its own and its channel's set-up.
 * No compression is offered, so none comes back.
 */
import { openUnixSocket } from "../sys/unix-socket";
import { H2Code, H2Connection, type H2Error, type H2Peaks } from "./h2c";
import { type PeerLimit, PeerLimits } from "./peer-limits";

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

/**
 * A call's failure: the gRPC status code and the server's (or this client's) details. `peerFault`:
 * the server broke HTTP/2, gRPC's framing or one of the peer limits (`limit` names which).
 */
export class GrpcError extends Error {
  readonly code: number;
  readonly details: string;
  readonly peerFault: boolean;
  readonly limit: PeerLimit | undefined;
  constructor(code: number, details: string, fault?: { limit?: PeerLimit | undefined }) {
    super(`${code} ${grpcStatusName(code)}: ${details}`);
    this.code = code;
    this.details = details;
    this.peerFault = fault !== undefined;
    this.limit = fault?.limit;
  }
}

const unavailable = (why: string) => new GrpcError(GrpcStatus.UNAVAILABLE, why);

/** A connection error the server caused, as gRPC maps HTTP/2 errors to statuses. */
function faultStatus(why: string, fault: H2Error): GrpcError {
  const calm = fault.code === H2Code.ENHANCE_YOUR_CALM;
  return new GrpcError(calm ? GrpcStatus.RESOURCE_EXHAUSTED : GrpcStatus.INTERNAL, why, fault);
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
  private connection: H2Connection | undefined;
  private readonly socket: string;
  private readonly maxMessageBytes: number;

  constructor(options: { socket: string; maxMessageBytes?: number }) {
    this.socket = options.socket;
    this.maxMessageBytes = options.maxMessageBytes ?? PeerLimits.maxMessageBytes;
  }

  private connect(): H2Connection {
    if (this.connection && !this.connection.closed) return this.connection;
    this.connection = new H2Connection(this.socket, openUnixSocket);
    return this.connection;
  }

  /**
   * The answer's message bytes; a GrpcError for any status but OK, a dead connection or the
   * deadline.
   */
  unary(call: UnaryCall): Promise<Buffer> {
    const budget = call.deadline - Date.now();
    if (budget <= 0)
      return Promise.reject(new GrpcError(GrpcStatus.DEADLINE_EXCEEDED, "Deadline exceeded"));
    const connection = this.connect();
    return new Promise((resolve, reject) => {
      const answer = new Answer(this.maxMessageBytes);
      let done = false;
      const settle = (err: GrpcError | undefined, value?: Buffer) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (err) connection.cancel(stream);
        err ? reject(err) : resolve(value as Buffer);
      };
      const finish = () => {
        const result = answer.result();
        result instanceof GrpcError ? settle(result) : settle(undefined, result);
      };
      const timer = setTimeout(
        () => settle(new GrpcError(GrpcStatus.DEADLINE_EXCEEDED, "Deadline exceeded")),
        budget,
      );
      const stream = connection.request(requestHeaders(call.path, budget), frame(call.request), {
        headers: (fields, end) => {
          answer.headers(fields);
          if (end) finish();
        },
        data: (bytes, end) => {
          const tooLarge = answer.data(bytes);
          if (tooLarge) settle(tooLarge);
          else if (end) finish();
        },
        failed: (why, fault) => settle(fault ? faultStatus(why, fault) : unavailable(why)),
      });
    });
  }

  /** What the current connection has held at most (tests hold it to the peer limits). */
  get peaks(): H2Peaks | undefined {
    return this.connection?.peaks;
  }

  close(): void {
    this.connection?.close();
    this.connection = undefined;
  }
}

function requestHeaders(path: string, budgetMs: number): [string, string][] {
  return [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", path],
    [":authority", "localhost"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    // The header takes at most 8 digits (gRPC over HTTP/2); the local timer bounds the call anyway.
    ["grpc-timeout", `${Math.min(Math.ceil(budgetMs), 99_999_999)}m`],
  ];
}

/** The 5-byte gRPC message prefix (not compressed, big-endian length) and the message. */
function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/**
 * One call's answer as it arrives: status headers (in the trailers, or alone), message bytes.
 * The message is kept in one buffer of the length its prefix declares (once it is within the
 * cap), as grpc-go reads one: however many DATA frames carry it, and however small, no frame is
 * kept apart, so memory follows the message's bytes and never the number of frames.
 */
class Answer {
  private readonly prefix = new Uint8Array(5);
  private prefixBytes = 0;
  private body: Buffer | undefined;
  private bodyBytes = 0;
  private httpStatus: number | undefined;
  private status: number | undefined;
  private message = "";
  private readonly maxMessageBytes: number;

  constructor(maxMessageBytes: number) {
    this.maxMessageBytes = maxMessageBytes;
  }

  headers(fields: readonly (readonly [string, string])[]): void {
    for (const [name, value] of fields) {
      if (name === ":status") this.httpStatus = Number(value);
      else if (name === "grpc-status") this.status = Number(value);
      else if (name === "grpc-message") this.message = percentDecoded(value);
    }
  }

  /**
   * Copied into the message's buffer; refused once the message says it is larger than allowed,
   * or bytes come past the one message a unary answer holds.
   */
  data(chunk: Uint8Array): GrpcError | undefined {
    let rest = chunk;
    if (!this.body) {
      const taken = Math.min(5 - this.prefixBytes, rest.length);
      this.prefix.set(rest.subarray(0, taken), this.prefixBytes);
      this.prefixBytes += taken;
      rest = rest.subarray(taken);
      if (this.prefixBytes < 5) return undefined;
      const declared = Buffer.from(this.prefix.buffer).readUInt32BE(1);
      if (declared > this.maxMessageBytes) return this.tooLarge();
      this.body = Buffer.alloc(declared);
    }
    if (rest.length > this.body.length - this.bodyBytes) {
      const why = "bytes past the one message of a unary answer";
      return new GrpcError(GrpcStatus.INTERNAL, why, {});
    }
    this.body.set(rest, this.bodyBytes);
    this.bodyBytes += rest.length;
    return undefined;
  }

  private tooLarge(): GrpcError {
    const why = `answer larger than ${this.maxMessageBytes} bytes`;
    return new GrpcError(GrpcStatus.RESOURCE_EXHAUSTED, why, { limit: "maxMessageBytes" });
  }

  result(): Buffer | GrpcError {
    if (this.status === undefined) {
      return this.httpStatus === undefined
        ? new GrpcError(GrpcStatus.UNAVAILABLE, "connection closed before an answer")
        : new GrpcError(GrpcStatus.UNKNOWN, `HTTP status ${this.httpStatus} without a grpc-status`);
    }
    if (this.status !== GrpcStatus.OK) return new GrpcError(this.status, this.message);
    if (!this.body) return new GrpcError(GrpcStatus.INTERNAL, "an OK answer without a message");
    if (this.prefix[0] !== 0)
      return new GrpcError(GrpcStatus.INTERNAL, "a compressed answer, though none was offered");
    if (this.bodyBytes < this.body.length)
      return new GrpcError(GrpcStatus.INTERNAL, "the answer's message is cut short");
    return this.body;
  }
}

function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
