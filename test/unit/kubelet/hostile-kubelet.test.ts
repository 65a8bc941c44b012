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

  const title =
    "M10 B82 %s: code 11 naming the limit, within the timeout, counters within the caps";
  it.each(CASES)(title, async (h, limit) => {
    const socket = join(dir, "kubelet.sock");
    server = await hostile.startHostilePodResources(socket, h);
    const client = new PodResourcesClient(socket);
    const rss = process.memoryUsage().rss;
    const started = Date.now();
    const query = { namespace: "ns", name: "p", timeoutMs: TIMEOUT_MS, resourceNames: ["x.io/d"] };
    const err = await client.devices(query).catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    const peaks = client.peaks;
    client.close();

    expect(err).toBeInstanceOf(CniError);
    expect((err as CniError).code).toBe(11);
    expect((err as CniError).message).toMatch(limit);
    expect((err as CniError).message).toContain("pod ns/p");
    expect(elapsed).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    expect(peaks).toBeDefined();
    expect(peaks!.bufferedBytes).toBeLessThanOrEqual(9 + PeerLimits.maxFrameBytes);
    expect(peaks!.headerBlockBytes).toBeLessThanOrEqual(PeerLimits.maxHeaderBlockBytes);
    expect(peaks!.queuedWriteBytes).toBeLessThanOrEqual(PeerLimits.maxQueuedWriteBytes);
    expect(process.memoryUsage().rss - rss).toBeLessThan(RSS_BOUND);
  });
});
