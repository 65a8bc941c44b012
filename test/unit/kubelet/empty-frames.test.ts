/**
 * Frames that carry nothing (M10): a server that answers HEADERS and then empty frames of any
 * type is refused at PeerLimits.maxEmptyFrames in a row, with ENHANCE_YOUR_CALM on the wire and
 * the limit in the stream's fault, before anything of the frame past the cap is kept. A frame that
 * carries a byte of a message or header block, or ends a stream, starts the count again, so a
 * real server's few empty frames (its SETTINGS, the ACK) never add up. The connection runs over
 * an in-memory socket: the verdicts are counts of frames, not this machine's speed.
 */
import { describe, expect, it } from "vitest";
import * as h2c from "../../../src/kubelet/h2c";
import type { ByteSocket, SocketEvents } from "../../../src/sys/unix-socket";
import { encodeHeaders } from "../../../src/kubelet/hpack";
import { PeerLimits } from "../../../src/kubelet/peer-limits";

const TYPE = { DATA: 0, HEADERS: 1, SETTINGS: 4, GOAWAY: 7, CONTINUATION: 9, UNKNOWN: 0x20 };
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const MAX = PeerLimits.maxEmptyFrames;

interface Spec {
  type: number;
  flags?: number;
  stream?: number;
  payload?: Uint8Array;
}

function frame(spec: Spec): Buffer {
  const payload = spec.payload ?? new Uint8Array(0);
  const out = Buffer.alloc(9 + payload.length);
  out.writeUIntBE(payload.length, 0, 3);
  out[3] = spec.type;
  out[4] = spec.flags ?? 0;
  out.writeUInt32BE(spec.stream ?? 0, 5);
  out.set(payload, 9);
  return out;
}

const times = (spec: Spec, count: number) =>
  Buffer.concat(new Array<Buffer>(count).fill(frame(spec)));

const okBlock = encodeHeaders([
  [":status", "200"],
  ["content-type", "application/grpc"],
]);
const okHeaders = frame({ type: TYPE.HEADERS, flags: END_HEADERS, stream: 1, payload: okBlock });

/** A connection over memory with stream 1 open: what the stream got, and what was written. */
function connection() {
  let events: SocketEvents | undefined;
  const written: Buffer[] = [];
  const socket: ByteSocket = {
    write: (bytes) => written.push(Buffer.from(bytes)),
    end: () => {},
    destroy: () => events?.close("connection closed"),
    queuedBytes: () => 0,
  };
  const conn = new h2c.H2Connection("/run/kubelet.sock", (_path, e) => {
    events = e;
    return socket;
  });
  const got = { headers: 0, data: [] as Uint8Array[], ended: false };
  const failures: { why: string; fault: h2c.H2Error | undefined }[] = [];
  conn.request([[":path", "/v1.PodResourcesLister/Get"]], new Uint8Array(0), {
    headers: (_fields, end) => {
      got.headers++;
      got.ended ||= end;
    },
    data: (bytes, end) => {
      got.data.push(bytes);
      got.ended ||= end;
    },
    failed: (why, fault) => failures.push({ why, fault }),
  });
  const feed = (bytes: Uint8Array) => events!.data(bytes);
  /** The error code of the GOAWAY this client wrote, if any. */
  const goaway = () => {
    const all = Buffer.concat(written);
    // Past the connection preface (24 bytes), frames.
    for (let at = 24; at + 9 <= all.length; at += 9 + all.readUIntBE(at, 3))
      if (all[at + 3] === TYPE.GOAWAY) return all.readUInt32BE(at + 13);
    return undefined;
  };
  return { conn, feed, got, failures, goaway };
}

/** Ends at the frame past the cap: ENHANCE_YOUR_CALM, the limit, the frame's type named. */
function expectRefused(c: ReturnType<typeof connection>, named: RegExp): void {
  expect(c.failures).toHaveLength(1);
  const fault = c.failures[0]!.fault!;
  expect(fault).toBeInstanceOf(h2c.H2Error);
  expect(fault.code).toBe(h2c.H2Code.ENHANCE_YOUR_CALM);
  expect(fault.limit).toBe("maxEmptyFrames");
  expect(fault.message).toMatch(new RegExp(`over ${MAX} frames in a row that carry nothing`));
  expect(fault.message).toMatch(named);
  expect(c.failures[0]!.why).toMatch(/^HTTP\/2 ENHANCE_YOUR_CALM: /);
  expect(c.goaway()).toBe(h2c.H2Code.ENHANCE_YOUR_CALM);
  expect(c.conn.closed).toBe(true);
  expect(c.conn.peaks.emptyFrames).toBe(MAX);
}

const FLOODS: [string, Spec, RegExp][] = [
  ["DATA", { type: TYPE.DATA, stream: 1 }, /empty DATA frame on stream 1/],
  [
    "padded DATA with no data",
    { type: TYPE.DATA, flags: PADDED, stream: 1, payload: Buffer.of(0) },
    /empty DATA frame on stream 1/,
  ],
  ["HEADERS", { type: TYPE.HEADERS, flags: END_HEADERS, stream: 1 }, /empty HEADERS frame/],
  ["SETTINGS", { type: TYPE.SETTINGS }, /empty SETTINGS frame on stream 0/],
  ["a frame of an unknown type", { type: TYPE.UNKNOWN }, /empty frame of type 32 on stream 0/],
];

describe("B89 frames that carry nothing are counted and capped", () => {
  it.each(FLOODS)(
    "B89 empty %s after the answer's HEADERS: refused at the one past maxEmptyFrames",
    (_name, spec, named) => {
      const c = connection();
      c.feed(okHeaders);
      c.feed(times(spec, MAX));
      expect(c.failures).toEqual([]);
      c.feed(times(spec, 1000));
      expectRefused(c, named);
      // Nothing of the empty frames reached the stream past the cap; none after the end.
      expect(c.got.data.every((d) => d.length === 0)).toBe(true);
      expect(c.got.data.length).toBeLessThanOrEqual(MAX);
      const seen = c.got.data.length + c.got.headers;
      c.feed(times(spec, 1000));
      expect(c.got.data.length + c.got.headers).toBe(seen);
    },
  );

  it("B89 empty CONTINUATION frames count too (each block is also capped in frames)", () => {
    const c = connection();
    const data = { type: TYPE.DATA, stream: 1 };
    c.feed(Buffer.concat([okHeaders, times(data, MAX - 2)]));
    // An empty HEADERS opens a block: the 99th in a row; its CONTINUATION, the 100th and 101st.
    const open = frame({ type: TYPE.HEADERS, stream: 1 });
    const empty = frame({ type: TYPE.CONTINUATION, stream: 1 });
    c.feed(Buffer.concat([open, empty]));
    expect(c.failures).toEqual([]);
    c.feed(empty);
    expectRefused(c, /empty CONTINUATION frame on stream 1/);
  });

  it("B89 a CONTINUATION flood alone ends at maxContinuationFrames, the lower cap", () => {
    const c = connection();
    const open = frame({ type: TYPE.HEADERS, stream: 1, payload: okBlock });
    c.feed(Buffer.concat([open, times({ type: TYPE.CONTINUATION, stream: 1 }, MAX)]));
    expect(c.failures[0]?.fault?.limit).toBe("maxContinuationFrames");
    expect(PeerLimits.maxContinuationFrames).toBeLessThan(MAX);
  });

  it("B89 a byte of data, a header block or an end of stream starts the count again", () => {
    const c = connection();
    const empty = times({ type: TYPE.DATA, stream: 1 }, MAX);
    // A real server's SETTINGS and its ACK of ours: empty, before the answer.
    const ack = frame({ type: TYPE.SETTINGS, flags: 1 });
    const settings = Buffer.concat([frame({ type: TYPE.SETTINGS }), ack]);
    const byte = frame({ type: TYPE.DATA, stream: 1, payload: Buffer.of(0) });
    const trailers = encodeHeaders([["grpc-status", "0"]]);
    const end = frame({ type: TYPE.HEADERS, flags: END_HEADERS | END_STREAM, stream: 1 });
    c.feed(Buffer.concat([settings, okHeaders, empty, byte, empty, byte, empty]));
    c.feed(frame({ type: TYPE.HEADERS, flags: END_HEADERS, stream: 1, payload: trailers }));
    c.feed(Buffer.concat([empty.subarray(0, 9 * (MAX - 1)), end]));
    expect(c.failures).toEqual([]);
    expect(c.got.ended).toBe(true);
    expect(c.got.headers).toBe(3);
    expect(c.conn.peaks.emptyFrames).toBe(MAX);
    expect(c.goaway()).toBeUndefined();
  });

  it("B89 an empty DATA frame that ends the stream is an end, not nothing", () => {
    const c = connection();
    const last = frame({ type: TYPE.DATA, flags: END_STREAM, stream: 1 });
    c.feed(Buffer.concat([okHeaders, times({ type: TYPE.DATA, stream: 1 }, MAX), last]));
    expect(c.failures).toEqual([]);
    expect(c.got.ended).toBe(true);
  });
});
