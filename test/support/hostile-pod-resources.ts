/**
 * A hostile "kubelet" on a unix socket (M10): raw HTTP/2 frames written by hand, each behaviour
 * one of the attacks the pod-resources client must survive in bounded time and memory: control
 * frame floods it never reads the answers to, an HPACK bomb, endless CONTINUATION, oversized
 * frames, a 16 MB Huffman literal, a gRPC length prefix of 1 GiB. Floods write only as fast as
 * the client takes them (drain), so this server's own memory stays flat.
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
  | "length-prefix-1gb";

export interface HostileServer {
  socket: string;
  /** Bytes written to clients so far. */
  sent: number;
  close(): Promise<void>;
}

const TYPE = { DATA: 0, HEADERS: 1, SETTINGS: 4, PING: 6, CONTINUATION: 9 };
const END_HEADERS = 0x4;
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

/** What each hostility sends after the server's SETTINGS: chunks, until undefined. */
function script(hostility: Hostility): () => Buffer | undefined {
  switch (hostility) {
    case "ping-flood":
      return forever(repeat(h2frame({ type: TYPE.PING, payload: new Uint8Array(8) }), 1000));
    case "settings-flood":
      return forever(repeat(h2frame({ type: TYPE.SETTINGS }), 1000));
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
      const ok = encodeHeaders([
        [":status", "200"],
        ["content-type", "application/grpc"],
      ]);
      const prefix = Buffer.from([0, 0x40, 0, 0, 0, 1, 2, 3]);
      return once(headers(ok), h2frame({ type: TYPE.DATA, stream: 1, payload: prefix }));
    }
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
