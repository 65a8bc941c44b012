/**
 * What ADD publishes once every attachment is up (src/orchestrate/publish.ts) over a FakeKube: the
 * network-status annotation (N5, M6), one AddedInterface event (M9), the annotation budget (B26),
 * and which failures are the pod's and which are not.
 */
import { describe, expect, it } from "vitest";
import { CniError, Code } from "../../../src/cni/errors";
import type { AnyResult } from "../../../src/cni/result/types";
import { silentLogger } from "../../../src/log/logger";
import type { Pod } from "../../../src/npwg/types";
import {
  publishNetworkStatus,
  verifySelection,
  type Attached,
} from "../../../src/orchestrate/publish";
import { FakeKube } from "../../fakes/fake-kube";

const log = silentLogger();
const pod = (annotations: Record<string, string> = {}): Pod => ({
  metadata: { namespace: "app", name: "web", uid: "uid-web", annotations },
});

function result(ifName: string, address: string, mac: string): AnyResult {
  return {
    cniVersion: "1.0.0",
    interfaces: [{ name: ifName, mac, sandbox: "/var/run/netns/x" }],
    ips: [{ address, interface: 0 }],
  } as AnyResult;
}

const attached: Attached[] = [
  {
    attachment: {
      network: "cbr0",
      ifName: "eth0",
      isDefault: true,
      conf: { cniVersion: "1.0.0", name: "cbr0", plugins: [{ type: "bridge" }] },
    },
    result: result("eth0", "10.0.0.2/24", "0a:58:0a:00:00:02"),
  },
  {
    attachment: {
      network: "app/net-a",
      ifName: "net1",
      isDefault: false,
      conf: { cniVersion: "1.0.0", name: "net-a", plugins: [{ type: "macvlan" }] },
      selection: { namespace: "app", name: "net-a", defaultRoute: ["10.1.0.1"] },
    },
    result: result("net1", "10.1.0.5/24", "02:00:00:00:01:05"),
  },
];

describe("publishNetworkStatus", () => {
  it("N5 N5.2 M6 M9 one status write with every attachment (the default first, gateway from default-route), then one event naming them all", async () => {
    const kube = new FakeKube().addPod("app", "web");
    await publishNetworkStatus(pod(), "uid-web", attached, kube, log);
    expect(kube.calls).toEqual([
      "setNetworkStatus app/web",
      "recordEvent app/web Normal AddedInterface",
    ]);
    expect(kube.statuses[0]!.pod).toEqual({ namespace: "app", name: "web", uid: "uid-web" });
    expect(JSON.parse(kube.statuses[0]!.value)).toEqual([
      {
        name: "cbr0",
        interface: "eth0",
        ips: ["10.0.0.2"],
        mac: "0a:58:0a:00:00:02",
        default: true,
      },
      {
        name: "app/net-a",
        interface: "net1",
        ips: ["10.1.0.5"],
        mac: "02:00:00:00:01:05",
        default: false,
        gateway: ["10.1.0.1"],
      },
    ]);
    expect(kube.events[0]!.message).toBe(
      "Add eth0 [10.0.0.2/24] from cbr0; Add net1 [10.1.0.5/24] from app/net-a",
    );
  });

  it("M9 the event is best effort: its failure does not fail the ADD", async () => {
    const kube = new FakeKube().addPod("app", "web").fail("recordEvent");
    await publishNetworkStatus(pod(), "uid-web", attached, kube, log);
    expect(kube.statuses).toHaveLength(1);
  });

  it("B42 B43 a status write that fails is the ADD's failure (the caller tears down), and no event is sent", async () => {
    const kube = new FakeKube()
      .addPod("app", "web")
      .fail("setNetworkStatus", new CniError(Code.ApiFailure, "409 conflict, retries exhausted"));
    await expect(publishNetworkStatus(pod(), "uid-web", attached, kube, log)).rejects.toMatchObject(
      { code: 104 },
    );
    expect(kube.events).toEqual([]);
  });

  it("M8 the UID precondition travels with the write: a recreated pod is not written", async () => {
    const kube = new FakeKube().addPod("app", "web", {}, "uid-other");
    await expect(publishNetworkStatus(pod(), "uid-web", attached, kube, log)).rejects.toMatchObject(
      { code: 3 },
    );
  });

  it("M8 without the runtime's K8S_POD_UID, the UID of the pod the ADD read guards the write", async () => {
    const kube = new FakeKube().addPod("app", "web", {}, "uid-other");
    await expect(publishNetworkStatus(pod(), undefined, attached, kube, log)).rejects.toMatchObject(
      { code: 3 },
    );
    expect(kube.statuses).toEqual([]);
  });

  it("B26 annotations that would pass the API server's 256 KiB limit fail before any write", async () => {
    const kube = new FakeKube().addPod("app", "web");
    await expect(
      publishNetworkStatus(pod({ big: "x".repeat(256 * 1024) }), "uid-web", attached, kube, log),
    ).rejects.toMatchObject({ code: 7, message: expect.stringContaining("262144-byte limit") });
    expect(kube.calls).toEqual([]);
  });

  it("B27 a network-status the user set is replaced, and does not count against the budget", async () => {
    const kube = new FakeKube().addPod("app", "web");
    await publishNetworkStatus(
      pod({ "k8s.v1.cni.cncf.io/network-status": "x".repeat(200 * 1024) }),
      "uid-web",
      attached,
      kube,
      log,
    );
    expect(JSON.parse(kube.statuses[0]!.value)).toHaveLength(2);
  });
});

describe("verifySelection", () => {
  it("N4.1.2.1.4 a requested MAC the result does not show fails with 103 naming network, interface, wanted and got", () => {
    const a = attached[1]!;
    expect(() =>
      verifySelection({
        ...a,
        attachment: {
          ...a.attachment,
          selection: { namespace: "app", name: "net-a", mac: "02:00:00:00:99:99" },
        },
      }),
    ).toThrow(
      expect.objectContaining({
        code: 103,
        message: expect.stringMatching(
          /net1.*02:00:00:00:99:99.*02:00:00:00:01:05|02:00:00:00:01:05.*02:00:00:00:99:99/,
        ),
      }),
    );
  });
});
