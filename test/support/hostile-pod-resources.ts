/**
 * A hostile "kubelet" on a unix socket (M10): raw HTTP/2 frames written by hand, each behaviour
 * one of the attacks the pod-resources client must survive in bounded time and memory: control
 * frame floods it never reads the answers to, an HPACK bomb, endless CONTINUATION, oversized
 * frames, a 16 MB Huffman literal, a gRPC length prefix of 1 GiB, endless frames that carry
 * nothing (empty DATA, HEADERS, CONTINUATION, SETTINGS, frames of an unknown type), a message in
 * one-byte DATA frames (whole, or running on past its length). Floods write only as fast as the
 * client takes them (drain), so this server's own memory stays flat.
 */
import * as net from "node:net";
import { encodeHeaders } from "../../src/kubelet/hpack";

export type Hostility =
  | "ping-flood"
  | "settings-flood"
  | "hpack-bomb"
  | "continuation-flood"
  | "empty-continuation-flood"
  | "oversized-frame"
  | "huffman-16mb"
  | "huffman-16mb-continuation"
  | "length-prefix-1gb"
  | "empty-data-flood"
  | "padded-empty-data-flood"
  | "empty-headers-flood"
  | "empty-settings-flood"
  | "empty-unknown-flood"
  | "one-byte-frames"
  | "one-byte-data-flood";

export interface HostileServer {
  socket: string;
  /** Bytes written to clients so far. */
  sent: number;
  close(): Promise<void>;
}

const TYPE = { DATA: 0, HEADERS: 1, SETTINGS: 4, PING: 6, CONTINUATION: 9 };
/** A frame type no HTTP/2 extension uses here: a client ignores it, but must count it. */
const UNKNOWN_TYPE = 0x20;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const MB16 = 16 * 1024 * 1024;
/** The longest frame HTTP/2 can describe (a 24-bit length): 16 MB less one byte. */
const LONGEST = 2 ** 24 - 1;

/** One HTTP/2 frame; `length` may claim more than the payload (the rest is sent separately). */
interface FrameSpec {
  type: number;
  flags?: number;
  stream?: number;
  payload?: Uint8Array;
  length?: number;
}

function h2frame(spec: FrameSpec): Buffer {
  const payload = spec.payload ?? new Uint8Array(0);
  const head = Buffer.alloc(9);
  head.writeUIntBE(spec.length ?? payload.length, 0, 3);
  head[3] = spec.type;
  head[4] = spec.flags ?? 0;
  head.writeUInt32BE(spec.stream ?? 0, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK string length (7-bit prefix), `huffman` flagged in the first byte. */
function stringLength(length: number, huffman: boolean): number[] {
  const first = huffman ? 0x80 : 0;
  if (length < 127) return [first | length];
  const out = [first | 127];
  let rest = length - 127;
  for (; rest >= 128; rest = Math.floor(rest / 128)) out.push((rest % 128) | 0x80);
  return [...out, rest];
}

/** A literal field (new name "x", not indexed) up to its Huffman-coded value of `n` bytes. */
const huffmanLiteralHead = (length: number) =>
  Buffer.from([0x00, 0x01, 0x78, ...stringLength(length, true)]);

/** `head`, then zeros until `total` bytes of payload have followed it. */
function streamed(head: Buffer, total: number): () => Buffer | undefined {
  const zeros = Buffer.alloc(65_536);
  let left = -1;
  return () => {
    if (left < 0) {
      left = total;
      return head;
    }
    if (left <= 0) return undefined;
    left -= zeros.length;
    return zeros;
  };
}

/** Writes `next()` while the client takes it; stops when the connection ends. */
function pump(conn: net.Socket, next: () => Buffer | undefined, count: (n: number) => void): void {
  const go = () => {
    for (;;) {
      if (conn.destroyed) return;
      const chunk = next();
      if (!chunk) return;
      count(chunk.length);
      if (!conn.write(chunk)) return void conn.once("drain", go);
    }
  };
  go();
}

const repeat = (frame: Buffer, count: number) =>
  Buffer.concat(new Array<Buffer>(count).fill(frame));

const once =
  (...chunks: Buffer[]) =>
  () =>
    chunks.shift();
const forever = (chunk: Buffer) => () => chunk;
const headers = (block: Uint8Array, flags = END_HEADERS) =>
  h2frame({ type: TYPE.HEADERS, flags, stream: 1, payload: block });

/** `first` once, then `rest` for ever. */
function firstThen(first: Buffer, rest: Buffer): () => Buffer {
  let sent = false;
  return () => (sent ? rest : ((sent = true), first));
}

/** A 16 MiB Huffman literal in frames of the size the client allows: HEADERS, then CONTINUATION. */
function continuedLiteral(): () => Buffer | undefined {
  const payload = Buffer.alloc(16_384);
  const part = h2frame({ type: TYPE.CONTINUATION, stream: 1, payload });
  const last = h2frame({ type: TYPE.CONTINUATION, flags: END_HEADERS, stream: 1, payload });
  const frames = [headers(huffmanLiteralHead(MB16), 0)];
  for (let n = MB16 / 16_384; n > 1; n--) frames.push(part);
  frames.push(last);
  return () => frames.shift();
}

/** The answer's HEADERS: 200, a gRPC body follows. */
const okHeaders = () =>
  headers(
    encodeHeaders([
      [":status", "200"],
      ["content-type", "application/grpc"],
    ]),
  );

/** The device the answer in one-byte frames gives pod ns/p (resource, ID). */
export const ONE_BYTE_DEVICE = { resource: "x.io/d", id: "0000:3b:02.1" } as const;

/** A protobuf varint. */
function varint(value: number): number[] {
  const out: number[] = [];
  for (; value >= 128; value = Math.floor(value / 128)) out.push((value % 128) | 0x80);
  return [...out, value];
}

/** A length-delimited protobuf field. */
const field = (id: number, ...parts: (Buffer | string)[]) => {
  const body = Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p) : p)));
  return Buffer.concat([Buffer.from([...varint(id * 8 + 2), ...varint(body.length)]), body]);
};

/**
 * GetPodResourcesResponse for pod ns/p with ONE_BYTE_DEVICE, and 50,000 bytes of a field the
 * client skips, so the message takes that many frames; with its 5-byte gRPC prefix.
 */
function oneByteMessage(): Buffer {
  const devices = field(2, field(1, ONE_BYTE_DEVICE.resource), field(2, ONE_BYTE_DEVICE.id));
  const pod = field(1, field(1, "p"), field(2, "ns"), field(3, field(1, "c"), devices));
  const message = Buffer.concat([pod, field(9, Buffer.alloc(50_000, 0x61))]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** Each byte of `bytes` in a DATA frame of its own, in chunks of 1000 frames. */
function oneByteFrames(bytes: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 1000) {
    const part = [...bytes.subarray(at, at + 1000)];
    const frames = part.map((b) => h2frame({ type: TYPE.DATA, stream: 1, payload: Buffer.of(b) }));
    chunks.push(Buffer.concat(frames));
  }
  return chunks;
}

/** `chunks` in order, then `rest` for ever (if any). */
function thenForever(chunks: Buffer[], rest?: Buffer): () => Buffer | undefined {
  return () => chunks.shift() ?? rest;
}

/** The answer's HEADERS, then `frame` (which carries nothing) for ever. */
const afterOk = (frame: Buffer) => thenForever([okHeaders()], repeat(frame, 1000));

/** Floods of frames that carry nothing, and answers in one-byte DATA frames. */
function emptyScript(hostility: Hostility): (() => Buffer | undefined) | undefined {
  const empty = (type: number, flags = 0, stream = 1) => h2frame({ type, flags, stream });
  switch (hostility) {
    case "empty-data-flood":
      return afterOk(empty(TYPE.DATA));
    case "padded-empty-data-flood":
      // One byte of payload (the padding's length, zero): no byte of data.
      return afterOk(h2frame({ type: TYPE.DATA, flags: PADDED, stream: 1, payload: Buffer.of(0) }));
    case "empty-headers-flood":
      return afterOk(empty(TYPE.HEADERS, END_HEADERS));
    case "empty-settings-flood":
      return forever(repeat(empty(TYPE.SETTINGS, 0, 0), 1000));
    case "empty-unknown-flood":
      return forever(repeat(empty(UNKNOWN_TYPE, 0, 0), 1000));
    case "one-byte-frames": {
      const trailers = encodeHeaders([["grpc-status", "0"]]);
      const end = headers(trailers, END_HEADERS | END_STREAM);
      return thenForever([okHeaders(), ...oneByteFrames(oneByteMessage()), end]);
    }
    case "one-byte-data-flood": {
      // A message of 1000 bytes, then one-byte DATA frames that never end.
      const prefix = Buffer.from([0, 0, 0, 0x03, 0xe8]);
      const byte = h2frame({ type: TYPE.DATA, stream: 1, payload: Buffer.of(0x61) });
      return thenForever([okHeaders(), ...oneByteFrames(prefix)], repeat(byte, 1000));
    }
    default:
      return undefined;
  }
}

/** What each hostility sends after the server's SETTINGS: chunks, until undefined. */
function script(hostility: Hostility): () => Buffer | undefined {
  const quiet = emptyScript(hostility);
  if (quiet) return quiet;
  switch (hostility) {
    case "ping-flood":
      return forever(repeat(h2frame({ type: TYPE.PING, payload: new Uint8Array(8) }), 1000));
    case "settings-flood": {
      // SETTINGS_MAX_CONCURRENT_STREAMS 100: not empty, so only the write cap stops it.
      const payload = Buffer.from([0, 3, 0, 0, 0, 100]);
      return forever(repeat(h2frame({ type: TYPE.SETTINGS, payload }), 1000));
    }
    case "hpack-bomb": {
      // One 4000-byte field into the dynamic table, then 12,000 one-byte references to it.
      const name = [...Buffer.from("x-bomb")];
      const insert = Buffer.from([0x40, 0x06, ...name, ...stringLength(4000, false)]);
      const block = Buffer.concat([insert, Buffer.alloc(4000, 0x61), Buffer.alloc(12_000, 0xbe)]);
      return once(headers(block));
    }
    case "continuation-flood": {
      const payload = Buffer.alloc(16_384, 0x61);
      const filler = h2frame({ type: TYPE.CONTINUATION, stream: 1, payload });
      return firstThen(headers(Buffer.alloc(100, 0x61), 0), filler);
    }
    case "empty-continuation-flood": {
      const empty = repeat(h2frame({ type: TYPE.CONTINUATION, stream: 1 }), 1000);
      return firstThen(headers(encodeHeaders([[":status", "200"]]), 0), empty);
    }
    case "oversized-frame":
      return streamed(h2frame({ type: TYPE.DATA, stream: 1, length: LONGEST }), LONGEST);
    case "huffman-16mb": {
      const value = LONGEST - 16;
      const literal = huffmanLiteralHead(value);
      const length = literal.length + value;
      const flags = END_HEADERS;
      const head = h2frame({ type: TYPE.HEADERS, flags, stream: 1, length, payload: literal });
      return streamed(head, value);
    }
    case "huffman-16mb-continuation":
      return continuedLiteral();
    case "length-prefix-1gb": {
      const prefix = Buffer.from([0, 0x40, 0, 0, 0, 1, 2, 3]);
      return once(okHeaders(), h2frame({ type: TYPE.DATA, stream: 1, payload: prefix }));
    }
    default:
      throw new Error(`no script for ${hostility}`);
  }
}

/** Floods of control frames never read what the client answers: its writes pile up. */
const NEVER_READS: ReadonlySet<Hostility> = new Set(["ping-flood", "settings-flood"]);

export async function startHostilePodResources(socket: string, hostility: Hostility) {
  const conns = new Set<net.Socket>();
  const server: HostileServer = {
    socket,
    sent: 0,
    close: () =>
      new Promise((resolve) => {
        for (const c of conns) c.destroy();
        srv.close(() => resolve());
      }),
  };
  const srv = net.createServer((conn) => {
    conns.add(conn);
    conn.on("close", () => conns.delete(conn));
    conn.on("error", () => {});
    if (NEVER_READS.has(hostility)) conn.pause();
    else conn.on("data", () => {});
    conn.write(h2frame({ type: TYPE.SETTINGS }));
    pump(conn, script(hostility), (n) => {
      server.sent += n;
    });
  });
  await new Promise<void>((resolve) => srv.listen(socket, resolve));
  return server;
}
