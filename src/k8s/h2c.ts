/**
 * HTTP/2 over cleartext on a unix socket (RFC 9113, "prior knowledge"), as much as a client of
 * unary gRPC calls needs: the preface and SETTINGS, one stream per request (HEADERS, then DATA
 * ending the stream), the server's HEADERS (with CONTINUATION), DATA and trailers, SETTINGS and
 * PING acknowledged, flow-control credit returned as data arrives, RST_STREAM and GOAWAY. No
 * priorities, no push (turned off), no padding sent.
 *
 * Why not `node:http2`: in the executable, loading it (with `node:net` and Node's streams) costs a
 * CNI call ~11 ms before its first byte, more than the whole exchange (docs/benchmarks.md). The
 * socket here is Bun's own (`Bun.connect`), or `node:net` under Node (development and tests).
 */
import { encodeHeaders, HpackDecoder } from "./hpack";

/** What the connection needs of a byte stream. */
export interface ByteSocket {
  write(bytes: Uint8Array): void;
  end(): void;
}

export interface SocketEvents {
  data(bytes: Uint8Array): void;
  /** The socket is gone (closed by the peer, failed to connect, or errored). */
  close(reason: string): void;
}

export type SocketOpener = (path: string, events: SocketEvents) => ByteSocket;

/** One request's view of its stream. */
export interface StreamEvents {
  headers(fields: [string, string][], endStream: boolean): void;
  data(bytes: Uint8Array, endStream: boolean): void;
  /** The stream ended without completing: reset by the server, GOAWAY, or the connection lost. */
  failed(reason: string): void;
}

const FRAME = {
  DATA: 0,
  HEADERS: 1,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
};
const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 };
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
/** A stream may receive this much before any credit is returned: more than any answer allowed. */
const STREAM_WINDOW = 2 ** 31 - 1;

function frame(type: number, flags: number, stream: number, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
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

/** SETTINGS: no push (2 = 0), every stream's window at its largest (4). */
function clientSettings(): Uint8Array {
  const out = new Uint8Array(12);
  const view = new DataView(out.buffer);
  view.setUint16(0, 2);
  view.setUint32(2, 0);
  view.setUint16(6, 4);
  view.setUint32(8, STREAM_WINDOW);
  return out;
}

export class H2Connection {
  private readonly socket: ByteSocket;
  private readonly streams = new Map<number, StreamEvents>();
  private readonly decoder = new HpackDecoder();
  private buffered: Uint8Array = new Uint8Array(0);
  private nextStream = 1;
  /** A header block arriving in HEADERS + CONTINUATION frames. */
  private headerBlock: { stream: number; endStream: boolean; parts: Uint8Array[] } | undefined;
  closed = false;
  private released = false;
  /** Why the connection closed (a connect error may come before any stream is opened). */
  private closedBecause = "connection closed";

  constructor(path: string, open: SocketOpener) {
    this.socket = open(path, { data: (b) => this.receive(b), close: (why) => this.lost(why) });
    this.socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, clientSettings())]));
  }

  /** Opens a stream: the request's header fields, then its body, ending the stream. */
  request(fields: readonly (readonly [string, string])[], body: Uint8Array, events: StreamEvents): number {
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
      Buffer.concat([frame(FRAME.HEADERS, FLAG.END_HEADERS, id, block), frame(FRAME.DATA, FLAG.END_STREAM, id, body)]),
    );
    return id;
  }

  /** Abandons a stream (its caller gave up): RST_STREAM with CANCEL (8). */
  cancel(id: number): void {
    if (!this.streams.delete(id) || this.closed) return;
    this.socket.write(frame(FRAME.RST_STREAM, 0, id, u32(8)));
  }

  close(): void {
    if (this.released) return;
    this.closed = true;
    this.released = true;
    this.socket.end();
    this.failAll("connection closed");
  }

  private lost(why: string): void {
    this.closed = true;
    this.closedBecause = why;
    this.failAll(why);
  }

  private failAll(why: string): void {
    const open = [...this.streams.values()];
    this.streams.clear();
    for (const s of open) s.failed(why);
  }

  /** Frames out of the bytes received so far; a protocol error ends the connection. */
  private receive(bytes: Uint8Array): void {
    this.buffered = this.buffered.length ? Buffer.concat([this.buffered, bytes]) : bytes;
    try {
      while (this.buffered.length >= 9) {
        const b = this.buffered;
        const length = (b[0]! << 16) | (b[1]! << 8) | b[2]!;
        if (b.length < 9 + length) return;
        const stream = new DataView(b.buffer, b.byteOffset + 5, 4).getUint32(0) & 0x7fffffff;
        this.buffered = b.subarray(9 + length);
        this.onFrame(b[3]!, b[4]!, stream, b.subarray(9, 9 + length));
      }
    } catch (err) {
      this.socket.end();
      this.lost(`HTTP/2 protocol error: ${(err as Error).message}`);
    }
  }

  private onFrame(type: number, flags: number, stream: number, payload: Uint8Array): void {
    if (this.headerBlock && type !== FRAME.CONTINUATION) throw new Error("a header block was interrupted");
    switch (type) {
      case FRAME.DATA:
        return this.onData(flags, stream, payload);
      case FRAME.HEADERS:
        return this.onHeaders(flags, stream, payload);
      case FRAME.CONTINUATION:
        return this.onContinuation(flags, stream, payload);
      case FRAME.SETTINGS:
        if (!(flags & FLAG.ACK)) this.socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
        return;
      case FRAME.PING:
        if (!(flags & FLAG.ACK)) this.socket.write(frame(FRAME.PING, FLAG.ACK, 0, payload));
        return;
      case FRAME.RST_STREAM:
        return this.endStream(stream, `stream reset by the server (HTTP/2 error ${readU32(payload)})`);
      case FRAME.GOAWAY:
        this.closed = true;
        this.goaway(payload);
        return this.releaseIfIdle();
      default:
      // PRIORITY, WINDOW_UPDATE (nothing here sends more than a window's worth) and unknown types.
    }
  }

  private onData(flags: number, stream: number, payload: Uint8Array): void {
    // Every byte received, padding included, is credit to return, on the connection and the stream.
    if (payload.length) {
      const credit = u32(payload.length);
      this.socket.write(frame(FRAME.WINDOW_UPDATE, 0, 0, credit));
    }
    const data = unpadded(flags, payload);
    const events = this.streams.get(stream);
    if (flags & FLAG.END_STREAM) this.streams.delete(stream);
    events?.data(data, (flags & FLAG.END_STREAM) !== 0);
    this.releaseIfIdle();
  }

  private onHeaders(flags: number, stream: number, payload: Uint8Array): void {
    let block = unpadded(flags, payload);
    if (flags & FLAG.PRIORITY) block = block.subarray(5);
    this.headerBlock = { stream, endStream: (flags & FLAG.END_STREAM) !== 0, parts: [block] };
    if (flags & FLAG.END_HEADERS) this.finishHeaders();
  }

  private onContinuation(flags: number, stream: number, payload: Uint8Array): void {
    if (!this.headerBlock || this.headerBlock.stream !== stream) throw new Error("CONTINUATION out of place");
    this.headerBlock.parts.push(payload);
    if (flags & FLAG.END_HEADERS) this.finishHeaders();
  }

  /** Decoded on the connection's table even for a stream already abandoned: the table must follow. */
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
  if (pad >= payload.length) throw new Error("padding longer than the frame");
  return payload.subarray(1, payload.length - pad);
}

interface BunSocketLike {
  write(bytes: Uint8Array): number;
  end(): void;
}
interface BunLike {
  connect(options: {
    unix: string;
    socket: {
      open(s: BunSocketLike): void;
      data(s: BunSocketLike, d: Uint8Array): void;
      drain(s: BunSocketLike): void;
      close(s: BunSocketLike): void;
      end(s: BunSocketLike): void;
      error(s: BunSocketLike, e: Error): void;
      connectError(s: BunSocketLike, e: Error): void;
    };
  }): Promise<unknown>;
}

/** The unix socket at `path`: Bun's own socket in the executable, `node:net` under Node. */
export const openUnixSocket: SocketOpener = (path, events) => {
  const bun = (globalThis as { Bun?: BunLike }).Bun;
  return bun ? bunSocket(bun, path, events) : nodeSocket(path, events);
};

function bunSocket(bun: BunLike, path: string, events: SocketEvents): ByteSocket {
  let socket: BunSocketLike | undefined;
  const pending: Uint8Array[] = [];
  let ending = false;
  let gone = false;
  const fail = (why: string) => {
    if (gone) return;
    gone = true;
    events.close(why);
  };
  // Bun's write may take part of the bytes when the socket's buffer is full: the rest waits for drain.
  const flush = () => {
    while (socket && pending.length) {
      const next = pending[0]!;
      const n = socket.write(next);
      if (n < next.length) {
        pending[0] = next.subarray(Math.max(n, 0));
        return;
      }
      pending.shift();
    }
    if (socket && ending) socket.end();
  };
  const connectFailed = (e: Error) =>
    fail(`cannot connect to ${path}: ${(e as NodeJS.ErrnoException).code ?? e.message}`);
  bun
    .connect({
      unix: path,
      socket: {
        open: (s) => {
          socket = s;
          flush();
        },
        // Copied: the connection keeps partial frames across reads.
        data: (_s, d) => events.data(new Uint8Array(d)),
        drain: () => flush(),
        close: () => fail("connection closed"),
        end: () => fail("connection closed by the server"),
        error: (_s, e) => fail(e.message),
        connectError: (_s, e) => connectFailed(e),
      },
    })
    .catch(connectFailed);
  return {
    write: (bytes) => {
      if (gone) return;
      pending.push(bytes);
      flush();
    },
    end: () => {
      ending = true;
      flush();
    },
  };
}

function nodeSocket(path: string, events: SocketEvents): ByteSocket {
  const net = process.getBuiltinModule("node:net");
  const socket = net.connect(path);
  let gone = false;
  const fail = (why: string) => {
    if (gone) return;
    gone = true;
    events.close(why);
  };
  socket.on("data", (d: Buffer) => events.data(d));
  socket.on("error", (e: NodeJS.ErrnoException) =>
    fail(e.syscall === "connect" ? `cannot connect to ${path}: ${e.code ?? e.message}` : e.message),
  );
  socket.on("close", () => fail("connection closed"));
  return {
    write: (bytes) => {
      if (!gone) socket.write(bytes);
    },
    end: () => socket.end(),
  };
}
