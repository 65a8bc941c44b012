/**
 * The pod-resources client (M10) against a real grpc-js server (the fake kubelet): the minimal
 * HTTP/2 gRPC client must speak the wire grpc-js speaks, fall back from Get to List, name the
 * failure, and reconnect the daemon's long-lived channel after kubelet restarts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors";
import { podDeviceIds } from "../../../src/kubelet/pod-devices";
import { PodResourcesClient } from "../../../src/kubelet/pod-resources";
import {
  type FakePodResources,
  podWithDevices,
  startFakePodResources,
} from "../../support/fake-pod-resources";

const RESOURCE = "intel.com/sriov";
const PODS = [
  podWithDevices("ns", "p", {
    a: { [RESOURCE]: ["0000:3b:02.2", "0000:3b:02.1"] },
    b: { "x.io/gpu": ["g0"] },
  }),
  podWithDevices("ns", "other", { a: { [RESOURCE]: ["0000:3b:02.3"] } }),
];

describe("M10 pod-resources client over HTTP/2 against a grpc-js kubelet", () => {
  let dir: string;
  let socket: string;
  let kubelet: FakePodResources | undefined;
  const query = { namespace: "ns", name: "p", timeoutMs: 1000, resourceNames: [RESOURCE] };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "plx-podres-"));
    socket = join(dir, "kubelet.sock");
    kubelet = await startFakePodResources(socket, PODS);
  });
  afterEach(async () => {
    await kubelet?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("M10 Get answers the pod's devices per resource, across containers, sorted", async () => {
    const got = await podDeviceIds({ socket, ...query });
    expect(Object.fromEntries(got)).toEqual({
      [RESOURCE]: ["0000:3b:02.1", "0000:3b:02.2"],
      "x.io/gpu": ["g0"],
    });
    expect(kubelet?.calls).toEqual(["Get"]);
  });

  it("M10 a pod kubelet does not know has no devices", async () => {
    expect((await podDeviceIds({ socket, ...query, name: "gone" })).size).toBe(0);
  });

  it("M10 UNIMPLEMENTED Get falls back to List, and the client remembers it", async () => {
    if (kubelet) kubelet.mode = "get-unimplemented";
    const client = new PodResourcesClient(socket);
    try {
      expect((await client.devices(query)).get(RESOURCE)).toEqual(["0000:3b:02.1", "0000:3b:02.2"]);
      expect((await client.devices({ ...query, name: "other" })).get(RESOURCE)).toEqual([
        "0000:3b:02.3",
      ]);
    } finally {
      client.close();
    }
    expect(kubelet?.calls).toEqual(["Get", "List", "List"]);
  });

  it.each([
    ["error", /kubelet answered INTERNAL: fake kubelet failure/],
    ["hang", /no answer within 300 ms/],
    ["missing", /cannot connect \(.+\); is kubelet running/],
  ])("M10 kubelet %s: code 11 naming the socket, the pod and the resource", async (mode, why) => {
    if (mode === "missing") {
      await kubelet?.close();
      kubelet = undefined;
    } else if (kubelet) kubelet.mode = mode as "error" | "hang";
    const started = Date.now();
    const err = await podDeviceIds({ socket, ...query, timeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CniError);
    expect((err as CniError).code).toBe(11);
    expect((err as CniError).message).toContain(socket);
    expect((err as CniError).message).toContain("pod ns/p");
    expect((err as CniError).message).toContain(RESOURCE);
    expect((err as CniError).message).toMatch(why);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("M10 the daemon's long-lived client reconnects after kubelet restarts", async () => {
    const client = new PodResourcesClient(socket);
    try {
      expect((await client.devices(query)).size).toBe(2);
      await kubelet?.close();
      await expect(client.devices(query)).rejects.toThrow(/cannot connect/);
      kubelet = await startFakePodResources(socket, PODS);
      expect((await client.devices(query)).size).toBe(2);
    } finally {
      client.close();
    }
  });
});
