/**
 * The HTTP/2 frame reader from generated input (M10), fixed seed: frames of every type, with
 * any flags, streams and payloads, lengths that lie, arbitrary bytes between them, cut into
 * chunks anywhere, fed to a connection over an in-memory socket. Whatever comes, reading never
 * throws, a failed stream's fault is the server's (an H2Error with a code other than
 * INTERNAL_ERROR, which only an unexpected exception in the reader produces), and the
 * connection's counters stay within the peer limits.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as h2c from "../../../src/kubelet/h2c";
import type { ByteSocket, SocketEvents } from "../../../src/sys/unix-socket";
import { encodeHeaders } from "../../../src/kubelet/hpack";
import { PeerLimits } from "../../../src/kubelet/peer-limits";
import { propertyRuns } from "../../support/property";

const SEED = 20261126;
const { H2Code, H2Connection, H2Error } = h2c;

/**
 * A connection whose socket is memory: `neverReads` makes everything written stay queued. Like
 * Bun's socket, it reports its close synchronously when destroyed.
 */
function fakeConnection(neverReads: boolean) {
  let events: SocketEvents | undefined;
  let written = 0;
  const socket: ByteSocket = {
    write: (bytes) => {
      written += bytes.length;
    },
    end: () => {},
    destroy: () => events?.close("connection closed"),
    queuedBytes: () => (neverReads ? written : 0),
  };
  const conn = new H2Connection("/fake", (_path, e) => {
    events = e;
    return socket;
  });
  const failures: { why: string; fault: h2c.H2Error | undefined }[] = [];
  for (let i = 0; i < 2; i++)
    conn.request([[":path", "/v1.PodResourcesLister/Get"]], new Uint8Array(0), {
      headers: () => {},
      data: () => {},
      failed: (why, fault) => failures.push({ why, fault }),
    });
  const feed = (bytes: Uint8Array) => events!.data(bytes);
  return { conn, feed, failures, written: () => written };
}

interface FrameSpec {
  type: number;
  flags: number;
  stream: number;
  payload: Uint8Array;
  /** A length field other than the payload's. */
  lie?: number | undefined;
}

function frame(spec: FrameSpec): Buffer {
  const out = Buffer.alloc(9 + spec.payload.length);
  out.writeUIntBE(spec.lie ?? spec.payload.length, 0, 3);
  out[3] = spec.type;
  out[4] = spec.flags;
  out.writeUInt32BE(spec.stream, 5);
  out.set(spec.payload, 9);
  return out;
}

const block = encodeHeaders([
  [":status", "200"],
  ["grpc-status", "0"],
]);
const payload = fc.oneof(
  fc.uint8Array({ maxLength: 64 }),
  fc.constant(block),
  fc.constant(new Uint8Array(8)),
  fc.integer({ min: 0, max: 20_000 }).map((n) => new Uint8Array(n)),
);
const genFrame = fc
  .record({
    type: fc.integer({ min: 0, max: 12 }),
    flags: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0, 1, 4, 5, 8, 0x20)),
    stream: fc.constantFrom(0, 1, 2, 3, 5, 0x7fffffff),
    payload,
    lie: fc.option(fc.integer({ min: 0, max: 2 ** 24 - 1 }), { nil: undefined, freq: 8 }),
  })
  .map(frame);
const junk = fc.uint8Array({ minLength: 1, maxLength: 40 }).map((b) => Buffer.from(b));
const piece = fc.oneof({ arbitrary: genFrame, weight: 6 }, { arbitrary: junk, weight: 1 });
const wire = fc.array(piece, {
  maxLength: 30,
});

/** The bytes cut at the given points (each taken modulo the length). */
function chunks(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    if (to > from) out.push(bytes.subarray(from, to));
    from = Math.max(from, to);
  }
  return out;
}

describe("M10 HTTP/2 frames from generated input", () => {
  it("M10 any frames, cut anywhere: no exception, the server's faults, within caps", () => {
    const cutsAt = fc.array(fc.nat(), { maxLength: 8 });
    fc.assert(
      fc.property(wire, cutsAt, fc.boolean(), (frames, cuts, neverReads) => {
        const c = fakeConnection(neverReads);
        for (const chunk of chunks(Buffer.concat(frames), cuts)) {
          expect(() => c.feed(chunk)).not.toThrow();
        }
        for (const f of c.failures) {
          if (!f.fault) continue;
          expect(f.fault).toBeInstanceOf(H2Error);
          expect(f.fault.code).not.toBe(H2Code.INTERNAL_ERROR);
        }
        expect(c.conn.peaks.bufferedBytes).toBeLessThanOrEqual(9 + PeerLimits.maxFrameBytes);
        expect(c.conn.peaks.headerBlockBytes).toBeLessThanOrEqual(PeerLimits.maxHeaderBlockBytes);
        expect(c.conn.peaks.queuedWriteBytes).toBeLessThanOrEqual(PeerLimits.maxQueuedWriteBytes);
        expect(c.conn.peaks.emptyFrames).toBeLessThanOrEqual(PeerLimits.maxEmptyFrames);
      }),
      propertyRuns({ seed: SEED, numRuns: 400 }),
    );
  });

  it("M10 control frames never read: the connection ends at the write cap, reads no more", () => {
    fc.assert(
      fc.property(fc.constantFrom(6, 4), fc.integer({ min: 1, max: 64 }), (type, perChunk) => {
        const c = fakeConnection(true);
        // SETTINGS with one entry (SETTINGS_MAX_CONCURRENT_STREAMS 100): an empty one would be
        // refused sooner, as a frame that carries nothing.
        const payload = type === 6 ? new Uint8Array(8) : Uint8Array.of(0, 3, 0, 0, 0, 100);
        const one = frame({ type, flags: 0, stream: 0, payload });
        const chunk = Buffer.concat(new Array<Buffer>(perChunk).fill(one));
        for (let i = 0; i < 20_000 && c.failures.length === 0; i++) c.feed(chunk);
        const limits = c.failures.map((f) => f.fault?.limit);
        expect(limits).toEqual(["maxQueuedWriteBytes", "maxQueuedWriteBytes"]);
        const written = c.written();
        c.feed(chunk);
        expect(c.written()).toBe(written);
        expect(written).toBeLessThanOrEqual(PeerLimits.maxQueuedWriteBytes + 200);
      }),
      propertyRuns({ seed: SEED, numRuns: 50 }),
    );
  });
});
