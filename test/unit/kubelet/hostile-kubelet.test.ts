/**
 * The pod-resources client (M10) against a hostile server on its socket
 * (test/support/hostile-pod-resources.ts): each attack ends the query with code 11 naming the
 * limit it broke, within the query's timeout plus a margin, and the connection's own counters
 * show it never held more than the peer limits allow (B36: no answer in time ends the call too).
 * The verdicts rest on those counters and on the error's kind, not on this machine's speed; the
 * time and RSS bounds are generous.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors";
import { PeerLimits } from "../../../src/kubelet/peer-limits";
import { PodResourcesClient } from "../../../src/kubelet/pod-resources";
import * as hostile from "../../support/hostile-pod-resources";

const TIMEOUT_MS = 1500;
/** Past the query's own timeout: the event loop's turn and the socket's teardown. */
const MARGIN_MS = 2000;
/** RSS growth allowed for one query: far below what the unbounded client reached. */
const RSS_BOUND = 256 * 1024 * 1024;

const CASES: [hostile.Hostility, RegExp][] = [
  ["ping-flood", /maxQueuedWriteBytes/],
  ["settings-flood", /maxQueuedWriteBytes/],
  ["hpack-bomb", /maxHeaderListBytes/],
  ["continuation-flood", /maxHeaderBlockBytes/],
  ["empty-continuation-flood", /maxContinuationFrames/],
  ["oversized-frame", /maxFrameBytes/],
  ["huffman-16mb", /maxFrameBytes/],
  ["huffman-16mb-continuation", /maxHeaderBlockBytes/],
  ["length-prefix-1gb", /maxMessageBytes/],
];

/** Frames that carry nothing, and one message in one-byte frames running on past its length. */
const EMPTY_CASES: [hostile.Hostility, RegExp][] = [
  ["empty-data-flood", /maxEmptyFrames.*empty DATA frame on stream 1/],
  ["padded-empty-data-flood", /maxEmptyFrames.*empty DATA frame on stream 1/],
  ["empty-headers-flood", /maxEmptyFrames.*empty HEADERS frame on stream 1/],
  ["empty-continuation-flood", /maxContinuationFrames/],
  ["empty-settings-flood", /maxEmptyFrames.*empty SETTINGS frame on stream 0/],
  ["empty-unknown-flood", /maxEmptyFrames.*empty frame of type 32 on stream 0/],
  ["one-byte-data-flood", /broke the protocol.*past the one message/],
];

describe("M10 a hostile pod-resources socket: bounded in time and memory", () => {
  let dir: string;
  let server: hostile.HostileServer | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-hostile-"));
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  /** One query of pod ns/p against `h`: its outcome, time, the connection's peaks, RSS growth. */
  const ask = async (h: hostile.Hostility) => {
    const socket = join(dir, "kubelet.sock");
    server = await hostile.startHostilePodResources(socket, h);
    const client = new PodResourcesClient(socket);
    const rss = process.memoryUsage().rss;
    const started = Date.now();
    const query = { namespace: "ns", name: "p", timeoutMs: TIMEOUT_MS, resourceNames: ["x.io/d"] };
    const outcome = await client.devices(query).catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    const peaks = client.peaks;
    client.close();
    return { outcome, elapsed, peaks, socket, rssGrowth: process.memoryUsage().rss - rss };
  };

  /** Code 11 naming the limit, the pod and the socket, in time, every counter within its cap. */
  const expectRefused = (asked: Awaited<ReturnType<typeof ask>>, limit: RegExp) => {
    const err = asked.outcome;
    expect(err).toBeInstanceOf(CniError);
    expect((err as CniError).code).toBe(11);
    expect((err as CniError).message).toMatch(limit);
    expect((err as CniError).message).toContain("pod ns/p");
    expect((err as CniError).message).toContain(`pod-resources socket ${asked.socket}`);
    expect(asked.elapsed).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    const peaks = asked.peaks;
    expect(peaks).toBeDefined();
    expect(peaks!.bufferedBytes).toBeLessThanOrEqual(9 + PeerLimits.maxFrameBytes);
    expect(peaks!.headerBlockBytes).toBeLessThanOrEqual(PeerLimits.maxHeaderBlockBytes);
    expect(peaks!.queuedWriteBytes).toBeLessThanOrEqual(PeerLimits.maxQueuedWriteBytes);
    expect(peaks!.emptyFrames).toBeLessThanOrEqual(PeerLimits.maxEmptyFrames);
    expect(asked.rssGrowth).toBeLessThan(RSS_BOUND);
  };

  const title =
    "M10 B82 %s: code 11 naming the limit, within the timeout, counters within the caps";
  it.each(CASES)(title, async (h, limit) => expectRefused(await ask(h), limit));

  const emptyTitle = "B89 %s: code 11 naming the limit and the frame, counters within the caps";
  it.each(EMPTY_CASES)(emptyTitle, async (h, limit) => expectRefused(await ask(h), limit));

  it("B89 a whole answer in one-byte DATA frames is read into one message", async () => {
    const asked = await ask("one-byte-frames");
    const { resource, id } = hostile.ONE_BYTE_DEVICE;
    expect(asked.outcome).toEqual(new Map([[resource, [id]]]));
    expect(asked.rssGrowth).toBeLessThan(RSS_BOUND);
  });
});
