/**
 * HTTP/2 over cleartext on a unix socket (RFC 9113, "prior knowledge"), as much as a client of
 * unary gRPC calls needs: the preface and SETTINGS, one stream per request (HEADERS, then DATA
 * ending the stream), the server's HEADERS (with CONTINUATION), DATA and trailers, SETTINGS and
 * PING acknowledged, the connection's flow-control credit returned as data arrives (a stream's
 * window is opened to its largest at once), RST_STREAM and GOAWAY. No priorities, no push (turned
 * off), no padding sent; no send window is kept (see onFrame).
 *
 * The server is held to the peer limits (./peer-limits, M10): a frame longer than the size
 * advertised, a header block or list past its cap, answers it leaves unread past the write cap,
 * a run of frames that carry nothing (empty DATA, HEADERS, CONTINUATION, SETTINGS or unknown
 * frames), or a frame of the wrong shape ends the connection with a GOAWAY naming the error, as
 * nghttp2 and Go's net/http2 end it. Each chunk read is handled in a bounded number of steps, so
 * the call's deadline timer always gets its turn.
 *
 * Why not `node:http2`: in the executable, loading it (with `node:net` and Node's streams) costs a
 * CNI call more than the whole exchange (docs/benchmarks.md, "Levers, measured"). The socket here
 * is Bun's own (`Bun.connect`), or `node:net` under Node (development and tests).
 */
import { encodeHeaders, HpackDecoder, HpackError } from "./hpack";
import type { ByteSocket, SocketOpener } from "../sys/unix-socket";
import { type PeerLimit, PeerLimits } from "./peer-limits";

/** One request's view of its stream. */
export interface StreamEvents {
  headers(fields: [string, string][], endStream: boolean): void;
  data(bytes: Uint8Array, endStream: boolean): void;
  /**
   * The stream ended without completing: reset by the server, GOAWAY, the connection lost, or
   * (`fault`) the server broke the protocol or a peer limit.
   */
  failed(reason: string, fault?: H2Error): void;
}

/** HTTP/2 error codes (RFC 9113 section 7) this client sends. */
export const H2Code = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  FRAME_SIZE_ERROR: 6,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  ENHANCE_YOUR_CALM: 11,
} as const;

/** The server broke HTTP/2 (`code`), or went past one of the peer limits (`limit`). */
export class H2Error extends Error {
  override name = "H2Error";
  constructor(
    readonly code: number,
    message: string,
    readonly limit?: PeerLimit,
  ) {
    super(message);
  }

  get codeName(): string {
    return Object.entries(H2Code).find(([, c]) => c === this.code)?.[0] ?? `error ${this.code}`;
  }
}

/** What a connection has held at most, against the peer limits (for tests and diagnostics). */
export interface H2Peaks {
  /** Bytes of frames read but not yet complete. */
  bufferedBytes: number;
  /** An encoded header block being gathered from HEADERS and CONTINUATION frames. */
  headerBlockBytes: number;
  /** Bytes written and not yet taken by the socket, with the answers not yet written. */
  queuedWriteBytes: number;
  /** Frames in a row that carried nothing (PeerLimits.maxEmptyFrames). */
  emptyFrames: number;
}

const FRAME = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PUSH_PROMISE: 5,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
};
const FRAME_NAMES = Object.fromEntries(Object.entries(FRAME).map(([name, type]) => [type, name]));
/** Types that carry a stream's bytes: an empty one is counted where its useful bytes are known. */
const STREAM_BYTES = new Set([FRAME.DATA, FRAME.HEADERS, FRAME.CONTINUATION]);
const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 };
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
/** Each stream's receive window, never replenished: more than any answer allowed. */
const STREAM_WINDOW = 2 ** 31 - 1;

/**
 * Where each frame type may come (`stream`: on a stream, or on the connection) and its fixed
 * length. A frame that breaks it is a connection error (RFC 9113 section 6).
 */
const SHAPES: Record<number, { stream?: boolean; length?: number; minLength?: number }> = {
  [FRAME.DATA]: { stream: true },
  [FRAME.HEADERS]: { stream: true },
  [FRAME.PRIORITY]: { stream: true, length: 5 },
  [FRAME.RST_STREAM]: { stream: true, length: 4 },
  [FRAME.SETTINGS]: { stream: false },
  [FRAME.PING]: { stream: false, length: 8 },
  [FRAME.GOAWAY]: { stream: false, minLength: 8 },
  [FRAME.WINDOW_UPDATE]: { length: 4 },
  [FRAME.CONTINUATION]: { stream: true },
};

interface FrameHead {
  type: number;
  flags: number;
  stream: number;
  length: number;
}

const protocolError = (why: string) => new H2Error(H2Code.PROTOCOL_ERROR, why);

function checkShape(head: FrameHead): void {
  const { type, flags, stream, length } = head;
  if (type === FRAME.PUSH_PROMISE) throw protocolError("PUSH_PROMISE though push is off");
  const shape = SHAPES[type];
  // Frames of unknown types are ignored (RFC 9113 section 5.5).
  if (!shape) return;
  if (shape.stream !== undefined && shape.stream !== (stream !== 0))
    throw protocolError(`a frame of type ${type} on stream ${stream}`);
  const settingsOk = type !== FRAME.SETTINGS || (length % 6 === 0 && !(flags & FLAG.ACK && length));
  const lengthOk = (shape.length ?? length) === length && length >= (shape.minLength ?? 0);
  if (!settingsOk || !lengthOk)
    throw new H2Error(H2Code.FRAME_SIZE_ERROR, `a frame of type ${type} with ${length} bytes`);
}

function frame(
  type: number,
  flags: number,
  stream: number,
  payload: Uint8Array = new Uint8Array(0),
): Uint8Array {
  const out = new Uint8Array(9 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length << 8);
  out[3] = type;
  out[4] = flags;
  view.setUint32(5, stream & 0x7fffffff);
  out.set(payload, 9);
  return out;
}

function u32(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

/**
 * SETTINGS: the peer limits this client holds the server to (table size, frame size, header list
 * size), no push, and every stream's window at its largest.
 */
function clientSettings(): Uint8Array {
  const entries: [number, number][] = [
    [1, PeerLimits.maxDynamicTableBytes],
    [2, 0],
    [4, STREAM_WINDOW],
    [5, PeerLimits.maxFrameBytes],
    [6, PeerLimits.maxHeaderListBytes],
  ];
  const out = new Uint8Array(6 * entries.length);
  const view = new DataView(out.buffer);
  entries.forEach(([id, value], i) => {
    view.setUint16(6 * i, id);
    view.setUint32(6 * i + 2, value);
  });
  return out;
}

/** The server's SETTINGS: values outside RFC 9113's ranges are connection errors. */
function checkSettings(payload: Uint8Array): void {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  for (let at = 0; at + 6 <= payload.length; at += 6) {
    const id = view.getUint16(at);
    const value = view.getUint32(at + 2);
    if (id === 2 && value > 1) throw protocolError(`SETTINGS_ENABLE_PUSH ${value}`);
    if (id === 4 && value > STREAM_WINDOW)
      throw new H2Error(H2Code.FLOW_CONTROL_ERROR, `SETTINGS_INITIAL_WINDOW_SIZE ${value}`);
    const frameSizeOk = value >= 16_384 && value < 2 ** 24;
    if (id === 5 && !frameSizeOk) throw protocolError(`SETTINGS_MAX_FRAME_SIZE ${value}`);
  }
}

/** The server's fault as a connection error: HPACK's own errors are COMPRESSION_ERROR. */
function asFault(err: unknown): H2Error {
  if (err instanceof H2Error) return err;
  if (err instanceof HpackError) {
    const code = err.limit ? H2Code.ENHANCE_YOUR_CALM : H2Code.COMPRESSION_ERROR;
    return new H2Error(code, err.message, err.limit);
  }
  const why = `reading the server's frames failed: ${(err as Error).message}`;
  return new H2Error(H2Code.INTERNAL_ERROR, why);
}

interface HeaderBlock {
  stream: number;
  endStream: boolean;
  parts: Uint8Array[];
  bytes: number;
  continuations: number;
}

export class H2Connection {
  private readonly socket: ByteSocket;
  private readonly streams = new Map<number, StreamEvents>();
  private readonly decoder = new HpackDecoder();
  private buffered: Uint8Array = new Uint8Array(0);
  private nextStream = 1;
  /** A header block arriving in HEADERS + CONTINUATION frames. */
  private headerBlock: HeaderBlock | undefined;
  /** Frames answering the server (ACKs, credit), written once per chunk read. */
  private outbox: Uint8Array[] = [];
  private outboxBytes = 0;
  /** Connection credit owed for the DATA read in this chunk. */
  private credit = 0;
  /** Frames in a row that carried nothing, against PeerLimits.maxEmptyFrames. */
  private emptyFrames = 0;
  closed = false;
  private released = false;
  /** Nothing more is read: closed by this side, or the server broke the protocol. */
  private dead = false;
  /** Why the connection closed (a connect error may come before any stream is opened). */
  private closedBecause = "connection closed";
  readonly peaks: H2Peaks = {
    bufferedBytes: 0,
    headerBlockBytes: 0,
    queuedWriteBytes: 0,
    emptyFrames: 0,
  };

  constructor(path: string, open: SocketOpener) {
    this.socket = open(path, { data: (b) => this.receive(b), close: (why) => this.lost(why) });
    this.socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, clientSettings())]));
  }

  /** Opens a stream: the request's header fields, then its body, ending the stream. */
  request(
    fields: readonly (readonly [string, string])[],
    body: Uint8Array,
    events: StreamEvents,
  ): number {
    const id = this.nextStream;
    this.nextStream += 2;
    if (this.closed) {
      const why = this.closedBecause;
      queueMicrotask(() => events.failed(why));
      return id;
    }
    this.streams.set(id, events);
    const block = encodeHeaders(fields);
    this.socket.write(
      Buffer.concat([
        frame(FRAME.HEADERS, FLAG.END_HEADERS, id, block),
        frame(FRAME.DATA, FLAG.END_STREAM, id, body),
      ]),
    );
    return id;
  }

  /** Abandons a stream (its caller gave up): RST_STREAM with CANCEL. */
  cancel(id: number): void {
    if (!this.streams.delete(id) || this.closed) return;
    this.socket.write(frame(FRAME.RST_STREAM, 0, id, u32(H2Code.CANCEL)));
  }

  close(): void {
    this.dead = true;
    if (this.released) return;
    this.closed = true;
    this.released = true;
    this.socket.end();
    this.failAll("connection closed");
  }

  private lost(why: string): void {
    // After a connection error, its reason stands.
    if (this.dead) return;
    this.closed = true;
    this.closedBecause = why;
    this.failAll(why);
  }

  private failAll(why: string, fault?: H2Error): void {
    const open = [...this.streams.values()];
    this.streams.clear();
    for (const s of open) s.failed(why, fault);
  }

  /** Frames out of the bytes received so far; a protocol error ends the connection. */
  private receive(bytes: Uint8Array): void {
    if (this.dead) return;
    this.buffered = this.buffered.length ? Buffer.concat([this.buffered, bytes]) : bytes;
    try {
      this.readFrames();
      this.flush();
    } catch (err) {
      this.abort(asFault(err));
    }
  }

  private readFrames(): void {
    while (this.buffered.length >= 9 && !this.dead) {
      const b = this.buffered;
      const length = (b[0]! << 16) | (b[1]! << 8) | b[2]!;
      if (length > PeerLimits.maxFrameBytes)
        throw new H2Error(
          H2Code.FRAME_SIZE_ERROR,
          `a frame of ${length} bytes, over the ${PeerLimits.maxFrameBytes} advertised`,
          "maxFrameBytes",
        );
      if (b.length < 9 + length) break;
      const stream = new DataView(b.buffer, b.byteOffset + 5, 4).getUint32(0) & 0x7fffffff;
      this.buffered = b.subarray(9 + length);
      const head = { type: b[3]!, flags: b[4]!, stream, length };
      checkShape(head);
      this.onFrame(head, b.subarray(9, 9 + length));
    }
    this.peaks.bufferedBytes = Math.max(this.peaks.bufferedBytes, this.buffered.length);
  }

  /** Answers to the server wait for the end of the chunk, within the write cap. */
  private reply(bytes: Uint8Array): void {
    this.outbox.push(bytes);
    this.outboxBytes += bytes.length;
    const queued = this.outboxBytes + this.socket.queuedBytes();
    if (queued > PeerLimits.maxQueuedWriteBytes)
      throw new H2Error(
        H2Code.ENHANCE_YOUR_CALM,
        `the server left over ${queued} bytes of answers to its control frames unread`,
        "maxQueuedWriteBytes",
      );
    this.peaks.queuedWriteBytes = Math.max(this.peaks.queuedWriteBytes, queued);
  }

  private flush(): void {
    if (this.released) return;
    if (this.credit) this.reply(frame(FRAME.WINDOW_UPDATE, 0, 0, u32(this.credit)));
    this.credit = 0;
    if (this.outbox.length) this.socket.write(Buffer.concat(this.outbox));
    this.outbox = [];
    this.outboxBytes = 0;
  }

  /** A connection error: GOAWAY with its code (best effort), the socket closed, streams failed. */
  private abort(fault: H2Error): void {
    this.dead = true;
    this.closed = true;
    this.released = true;
    this.outbox = [];
    this.closedBecause = `HTTP/2 ${fault.codeName}: ${fault.message}`;
    // The streams learn the fault first: a socket may report its own close while destroyed.
    this.failAll(this.closedBecause, fault);
    this.socket.write(frame(FRAME.GOAWAY, 0, 0, Buffer.concat([u32(0), u32(fault.code)])));
    this.socket.destroy();
  }

  private onFrame(head: FrameHead, payload: Uint8Array): void {
    const { type, flags, stream } = head;
    const interrupted = this.headerBlock && type !== FRAME.CONTINUATION;
    if (interrupted) throw protocolError("a header block was interrupted");
    const opened = stream % 2 === 1 && stream < this.nextStream;
    if ((type === FRAME.DATA || type === FRAME.HEADERS) && !opened)
      throw protocolError(`a frame for stream ${stream}, which this client never opened`);
    // Other frames count when empty; with a payload (a PING, a SETTINGS entry) they neither
    // count nor restart the count, as they carry nothing of an answer.
    if (!STREAM_BYTES.has(type) && payload.length === 0) this.carried(head, false);
    switch (type) {
      case FRAME.DATA:
        return this.onData(head, payload);
      case FRAME.HEADERS:
        return this.onHeaders(head, payload);
      case FRAME.CONTINUATION:
        return this.onContinuation(head, payload);
      case FRAME.SETTINGS:
        if (flags & FLAG.ACK) return;
        checkSettings(payload);
        return this.reply(frame(FRAME.SETTINGS, FLAG.ACK, 0));
      case FRAME.PING:
        if (!(flags & FLAG.ACK)) this.reply(frame(FRAME.PING, FLAG.ACK, 0, payload));
        return;
      case FRAME.RST_STREAM:
        return this.endStream(
          stream,
          `stream reset by the server (HTTP/2 error ${readU32(payload)})`,
        );
      case FRAME.GOAWAY:
        this.closed = true;
        this.goaway(payload);
        return this.releaseIfIdle();
      default:
      // PRIORITY, WINDOW_UPDATE and unknown types are ignored. No send window is kept: a request
      // is one small DATA frame (a pod's namespace and name), sent whatever window the server
      // advertised; RFC 9113 §6.9.2 starts every window at 65,535 bytes.
    }
  }

  /**
   * Counts a frame that carried nothing (no useful byte, no end of a stream) and refuses the one
   * past the cap before anything of it is kept; a frame that carried something restarts the count.
   */
  private carried(head: FrameHead, something: boolean): void {
    if (something) {
      this.emptyFrames = 0;
      return;
    }
    const max = PeerLimits.maxEmptyFrames;
    if (++this.emptyFrames > max) {
      const name = FRAME_NAMES[head.type];
      const what = name ? `${name} frame` : `frame of type ${head.type}`;
      const last = `the last an empty ${what} on stream ${head.stream}`;
      const why = `over ${max} frames in a row that carry nothing, ${last}`;
      throw new H2Error(H2Code.ENHANCE_YOUR_CALM, why, "maxEmptyFrames");
    }
    this.peaks.emptyFrames = Math.max(this.peaks.emptyFrames, this.emptyFrames);
  }

  private onData(head: FrameHead, payload: Uint8Array): void {
    const { flags, stream } = head;
    // Every byte received, padding included, is credit to return on the connection.
    this.credit += payload.length;
    const data = unpadded(flags, payload);
    const endStream = (flags & FLAG.END_STREAM) !== 0;
    this.carried(head, data.length > 0 || endStream);
    const events = this.streams.get(stream);
    if (endStream) this.streams.delete(stream);
    events?.data(data, endStream);
    this.releaseIfIdle();
  }

  private onHeaders(head: FrameHead, payload: Uint8Array): void {
    const { flags, stream } = head;
    let block = unpadded(flags, payload);
    if (flags & FLAG.PRIORITY) {
      const why = "HEADERS short of its priority";
      if (block.length < 5) throw new H2Error(H2Code.FRAME_SIZE_ERROR, why);
      block = block.subarray(5);
    }
    const endStream = (flags & FLAG.END_STREAM) !== 0;
    this.carried(head, block.length > 0 || endStream);
    this.headerBlock = { stream, endStream, parts: [], bytes: 0, continuations: 0 };
    this.addToBlock(block);
    if (flags & FLAG.END_HEADERS) this.finishHeaders();
  }

  private onContinuation(head: FrameHead, payload: Uint8Array): void {
    const { flags, stream } = head;
    const block = this.headerBlock;
    if (block?.stream !== stream) throw protocolError("CONTINUATION out of place");
    const max = PeerLimits.maxContinuationFrames;
    if (++block.continuations > max) {
      const why = `over ${max} CONTINUATION frames`;
      throw new H2Error(H2Code.ENHANCE_YOUR_CALM, why, "maxContinuationFrames");
    }
    this.carried(head, payload.length > 0);
    this.addToBlock(payload);
    if (flags & FLAG.END_HEADERS) this.finishHeaders();
  }

  /** A part of the block, refused before it is kept once the block would pass its cap. */
  private addToBlock(part: Uint8Array): void {
    const block = this.headerBlock!;
    block.bytes += part.length;
    const max = PeerLimits.maxHeaderBlockBytes;
    if (block.bytes > max) {
      const why = `a header block over the ${max} bytes allowed`;
      throw new H2Error(H2Code.ENHANCE_YOUR_CALM, why, "maxHeaderBlockBytes");
    }
    this.peaks.headerBlockBytes = Math.max(this.peaks.headerBlockBytes, block.bytes);
    // Empty parts are counted (maxContinuationFrames, maxEmptyFrames), not kept.
    if (part.length) block.parts.push(part);
  }

  /**
   * Decoded on the connection's table even for a stream already abandoned: the table must follow.
   */
  private finishHeaders(): void {
    const { stream, endStream, parts } = this.headerBlock!;
    this.headerBlock = undefined;
    const fields = this.decoder.decode(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    const events = this.streams.get(stream);
    if (endStream) this.streams.delete(stream);
    events?.headers(fields, endStream);
    this.releaseIfIdle();
  }

  /** After GOAWAY the connection serves only the streams it has: it ends with the last of them. */
  private releaseIfIdle(): void {
    if (this.closed && !this.released && this.streams.size === 0) {
      this.released = true;
      this.dead = true;
      this.socket.end();
    }
  }

  private endStream(stream: number, why: string): void {
    const events = this.streams.get(stream);
    this.streams.delete(stream);
    events?.failed(why);
  }

  private goaway(payload: Uint8Array): void {
    const last = readU32(payload) & 0x7fffffff;
    const code = readU32(payload.subarray(4));
    for (const id of [...this.streams.keys()])
      if (id > last) this.endStream(id, `the server is going away (HTTP/2 error ${code})`);
  }
}

function readU32(bytes: Uint8Array): number {
  return bytes.length >= 4 ? new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0) : 0;
}

function unpadded(flags: number, payload: Uint8Array): Uint8Array {
  if (!(flags & FLAG.PADDED)) return payload;
  const pad = payload[0] ?? 0;
  if (pad >= payload.length) throw protocolError("padding longer than the frame");
  return payload.subarray(1, payload.length - pad);
}
