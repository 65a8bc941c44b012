/**
 * kubelet's pod-resources API as a CNI call of dist/plexus asks it: the HTTP/2 and gRPC client of
 * kubelet/ over Bun's own unix socket (`Bun.connect`, kubelet/h2c.ts), run by Bun (pod-devices.ts)
 * against a grpc-js kubelet (test/support/fake-pod-resources.ts). test/unit/k8s runs the same
 * client on Node's `node:net`; this is the socket adapter that ships.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { Code } from "../../../src/cni/errors";
import {
  type FakePodResources,
  podWithDevices,
  startFakePodResources,
} from "../../support/fake-pod-resources";
import { runHarness } from "./bun-harness";

const RESOURCE = "intel.com/sriov";

async function kubelet(pods = [podWithDevices("ns", "p", { c: { [RESOURCE]: ["d2", "d1"] } })]) {
  const dir = mkdtempSync(join(tmpdir(), "plx-shipped-podres-"));
  const socket = join(dir, "kubelet.sock");
  const fake = await startFakePodResources(socket, pods);
  onTestFinished(async () => {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return fake;
}

function ask(fake: Pick<FakePodResources, "socket">, extra: { name?: string; timeoutMs?: number }) {
  return runHarness("pod-devices", {
    socket: fake.socket,
    namespace: "ns",
    name: "p",
    timeoutMs: 10_000,
    resourceNames: [RESOURCE],
    ...extra,
  });
}

describe("M10 kubelet's pod-resources over the socket that ships (Bun's), run by Bun", () => {
  it("M10 Get answers the pod's devices, sorted", async () => {
    const fake = await kubelet();
    expect(await ask(fake, {})).toEqual({ ok: true, devices: { [RESOURCE]: ["d1", "d2"] } });
    expect(fake.calls).toEqual(["Get"]);
  });

  it("M10 Get unimplemented: List answers over 64 KiB (many frames, flow control)", async () => {
    const many = Array.from({ length: 3000 }, (_, i) =>
      podWithDevices("ns", `other-${i}`, { c: { [RESOURCE]: [`0000:3b:${i}`] } }),
    );
    const fake = await kubelet([...many, podWithDevices("ns", "p", { c: { [RESOURCE]: ["d9"] } })]);
    fake.mode = "get-unimplemented";
    expect(await ask(fake, {})).toEqual({ ok: true, devices: { [RESOURCE]: ["d9"] } });
    expect(fake.calls).toEqual(["Get", "List"]);
  });

  it("M10 kubelet that never answers: 11 at the deadline, naming socket and pod", async () => {
    const fake = await kubelet();
    fake.mode = "hang";
    const reply = await ask(fake, { timeoutMs: 300 });
    expect(reply).toMatchObject({ ok: false, code: Code.TryAgainLater });
    expect(reply.message).toContain(`pod ns/p from kubelet's pod-resources socket ${fake.socket}`);
    expect(reply.message).toContain("no answer within 300 ms");
  });

  it("M10 no kubelet at the socket: 11, cannot connect", async () => {
    const socket = join(tmpdir(), `plx-shipped-absent-${process.pid}.sock`);
    const reply = await ask({ socket }, {});
    expect(reply).toMatchObject({ ok: false, code: Code.TryAgainLater });
    expect(reply.message).toMatch(/cannot connect \(.+\); is kubelet running/);
  });
});
