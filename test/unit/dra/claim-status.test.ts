/**
 * What Plexus reports in a claim's status.devices (src/dra/claim-status.ts) and what the daemon
 * takes to write it (cluster/dra-objects.ts `trimClaimDeviceStatus`, daemon/dra-routes.ts): the
 * networkData of an attachment as network-status reads its result, with the API's CIDR form and
 * bounds, one entry per device, and the daemon's route answering the API server's refusal.
 */
import { describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors";
import type { AnyResult } from "../../../src/cni/result/types";
import {
  ATTACHED_CONDITION,
  type ClaimDeviceStatus,
  trimClaimDeviceStatus,
} from "../../../src/cluster/dra-objects";
import type { KubeApi } from "../../../src/cluster/kube-api";
import { postClaimStatusRoute } from "../../../src/daemon/dra-routes";
import {
  type ClaimBacked,
  claimDeviceStatuses,
  networkDataOf,
} from "../../../src/dra/claim-status";

const result = (over: Record<string, unknown> = {}): AnyResult =>
  ({
    cniVersion: "1.0.0",
    interfaces: [
      { name: "net1-host", mac: "aa:aa:aa:aa:aa:aa" },
      { name: "net1", mac: "0a:58:0a:38:00:0b", sandbox: "/var/run/netns/pod" },
    ],
    ips: [
      { address: "10.56.0.11/24", interface: 1 },
      { address: "FD00:56:0:0::b/64", interface: 1 },
      { address: "192.168.0.1/24", interface: 0 },
    ],
    ...over,
  }) as AnyResult;

describe("networkData from a delegate's result (as network-status reads it)", () => {
  it("D1 the sandbox interface, its MAC, its addresses as canonical CIDRs (not the host side's)", () => {
    expect(networkDataOf("net1", result())).toEqual({
      interfaceName: "net1",
      ips: ["10.56.0.11/24", "fd00:56::b/64"],
      hardwareAddress: "0a:58:0a:38:00:0b",
    });
  });

  it("D1 without a sandbox interface: CNI_IFNAME and the addresses that name none; no MAC", () => {
    const r = result({ interfaces: [], ips: [{ address: "10.56.0.12/24" }] });
    expect(networkDataOf("net2", r)).toEqual({ interfaceName: "net2", ips: ["10.56.0.12/24"] });
  });

  it("D1 a 0.2.0 result: its ip4 and ip6 on CNI_IFNAME", () => {
    const r = { cniVersion: "0.2.0", ip4: { ip: "10.56.0.13/24" } } as unknown as AnyResult;
    expect(networkDataOf("net3", r)).toEqual({ interfaceName: "net3", ips: ["10.56.0.13/24"] });
  });

  it("D1 what the API would refuse is left out: bad addresses, duplicates, more than 16, a MAC past 128 bytes", () => {
    const ips = [
      { address: "10.0.0.1", interface: 1 },
      { address: "10.0.0.1/33", interface: 1 },
      { address: "10.0.0.1/24", interface: 1 },
      { address: "10.0.0.1/24", interface: 1 },
      ...Array.from({ length: 20 }, (_, i) => ({ address: `10.0.1.${i}/24`, interface: 1 })),
    ];
    const mac = "x".repeat(129);
    const interfaces = [{}, { name: "net1", mac, sandbox: "/ns" }];
    const got = networkDataOf("net1", result({ ips, interfaces }))!;
    expect(got.ips).toHaveLength(16);
    expect(got.ips[0]).toBe("10.0.0.1/24");
    expect(new Set(got.ips).size).toBe(16);
    expect(got.hardwareAddress).toBeUndefined();
  });
});

describe("entries per claim", () => {
  const backed = (device: string, over: Partial<ClaimBacked> = {}): ClaimBacked => ({
    claim: "net",
    driver: "sriov.example.com",
    pool: "node-1",
    device,
    network: "app/netdra-a",
    ifName: "net1",
    result: result(),
    since: "2026-01-02T03:04:05.678Z",
    ...over,
  });
  const pod = { namespace: "app", name: "web" };

  it("D1 one entry per device with Plexus's condition; a claim with none left gets an empty list (its part taken out)", () => {
    const got = claimDeviceStatuses([backed("vf-1"), backed("vf-2", { result: undefined })], {
      pod,
      claims: ["net", "gone"],
    });
    expect(got.get("gone")).toEqual([]);
    const [one, two] = got.get("net")!;
    expect(one!.conditions).toEqual([
      {
        type: ATTACHED_CONDITION,
        status: "True",
        reason: "Attached",
        message: "attached to pod app/web as net1 (network app/netdra-a)",
        lastTransitionTime: "2026-01-02T03:04:05Z",
      },
    ]);
    expect(one!.networkData?.interfaceName).toBe("net1");
    // Without a result (its cache entry gone): the condition alone.
    expect(two).toEqual({ ...one, device: "vf-2", networkData: undefined });
    expect("networkData" in two!).toBe(false);
  });

  it("D1 only the claims asked for; a device named twice is one entry", () => {
    const got = claimDeviceStatuses(
      [backed("vf-1"), backed("vf-1"), backed("x", { claim: "other" })],
      {
        pod,
        claims: ["net"],
      },
    );
    expect([...got.keys()]).toEqual(["net"]);
    expect(got.get("net")).toHaveLength(1);
  });
});

describe("the daemon's claim status route", () => {
  const entry: ClaimDeviceStatus = {
    driver: "sriov.example.com",
    pool: "node-1",
    device: "vf-1",
    networkData: { interfaceName: "net1", ips: ["10.56.0.11/24"] },
    conditions: [
      {
        type: ATTACHED_CONDITION,
        status: "True",
        reason: "Attached",
        message: "m",
        lastTransitionTime: "2026-01-02T03:04:05Z",
      },
    ],
  };

  it("D1 takes well-formed entries only (trimClaimDeviceStatus)", () => {
    expect(trimClaimDeviceStatus(entry)).toEqual(entry);
    expect(trimClaimDeviceStatus({ ...entry, device: "" })).toBeUndefined();
    expect(trimClaimDeviceStatus({ ...entry, conditions: [{ type: "x" }] })).toBeUndefined();
    const long = { ...entry, networkData: { interfaceName: "n".repeat(257), ips: [] } };
    expect(trimClaimDeviceStatus(long)).toBeUndefined();
  });

  it("D1 writes through the daemon's client; the API server's refusal is the answer, not a daemon failure", async () => {
    const writes: unknown[] = [];
    const api = {
      applyClaimDeviceStatus: async (claim: unknown, devices: unknown) => {
        writes.push([claim, devices]);
        return "applied" as const;
      },
    } as unknown as KubeApi;
    const route = postClaimStatusRoute({ api });
    const ok = await route({ namespace: "app", name: "net", devices: [entry] });
    expect(ok).toEqual([200, { outcome: "applied" }]);
    expect(writes).toEqual([[{ namespace: "app", name: "net" }, [entry]]]);
    await expect(route({ namespace: "app", name: "net", devices: [{}] })).rejects.toMatchObject({
      code: 7,
    });
    const refusing = {
      applyClaimDeviceStatus: async () => {
        throw new CniError(104, "HTTP 403 Forbidden");
      },
    } as unknown as KubeApi;
    const refused = await postClaimStatusRoute({ api: refusing })({
      namespace: "app",
      name: "net",
      devices: [],
    });
    expect(refused).toEqual([200, { failed: { code: 104, msg: "HTTP 403 Forbidden" } }]);
  });
});
