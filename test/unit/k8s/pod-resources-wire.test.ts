/**
 * The hand-written protobuf of the pod-resources messages (M10) against protobufjs (the fake
 * kubelet's codec): what protobufjs writes is read the same, fields Plexus skips are skipped, a
 * damaged message is a WireError, and the request is what protobufjs reads.
 */
import * as protobuf from "protobufjs/light";
import { describe, expect, it } from "vitest";
import * as wire from "../../../src/k8s/pod-resources-wire";

const { decodeGetResponse, findPodInList, encodeGetRequest, WireError } = wire;

const root = protobuf.Root.fromJSON({
  nested: {
    PodResources: {
      fields: {
        name: { type: "string", id: 1 },
        namespace: { type: "string", id: 2 },
        containers: { rule: "repeated", type: "ContainerResources", id: 3 },
      },
    },
    ContainerResources: {
      fields: {
        name: { type: "string", id: 1 },
        devices: { rule: "repeated", type: "ContainerDevices", id: 2 },
        cpuIds: { rule: "repeated", type: "int64", id: 3 },
        memory: { rule: "repeated", type: "bytes", id: 4 },
        topology: { type: "fixed64", id: 9 },
        weight: { type: "fixed32", id: 10 },
      },
    },
    ContainerDevices: {
      fields: { resourceName: { type: "string", id: 1 }, deviceIds: { rule: "repeated", type: "string", id: 2 } },
    },
    List: { fields: { podResources: { rule: "repeated", type: "PodResources", id: 1 } } },
    Get: { fields: { podResources: { type: "PodResources", id: 1 } } },
    GetRequest: { fields: { podName: { type: "string", id: 1 }, podNamespace: { type: "string", id: 2 } } },
  },
});
const encode = (type: string, value: object) => {
  const t = root.lookupType(type);
  return t.encode(t.fromObject(value)).finish();
};

const pod = (name: string, ids: string[]) => ({
  name,
  namespace: "ns",
  containers: [
    {
      name: "c",
      devices: [{ resourceName: "intel.com/sriov", deviceIds: ids }],
      cpuIds: [1, 2 ** 40],
      memory: [Buffer.from("skip me")],
      topology: 7,
      weight: 3,
    },
  ],
});
const plain = (name: string, ids: string[]) => ({
  name,
  namespace: "ns",
  containers: [{ name: "c", devices: [{ resourceName: "intel.com/sriov", deviceIds: ids }] }],
});

describe("M10 pod-resources messages by hand", () => {
  it("M10 Get and List answers written by protobufjs read the same, with the fields Plexus does not use skipped", () => {
    expect(decodeGetResponse(encode("Get", { podResources: pod("p", ["0000:3b:02.1", "ü-ïd"]) }))).toEqual({
      podResources: plain("p", ["0000:3b:02.1", "ü-ïd"]),
    });
    expect(decodeGetResponse(encode("Get", {}))).toEqual({});
    const many = Array.from({ length: 300 }, (_, i) => pod(`p${i}`, [`id-${i}`]));
    const list = encode("List", { podResources: many });
    for (const i of [0, 150, 299]) {
      const name = `p${i}`;
      expect(findPodInList(list, { namespace: "ns", name })).toEqual(plain(name, [`id-${i}`]));
    }
    expect(findPodInList(list, { namespace: "other", name: "p1" })).toBeUndefined();
  });

  it("M10 the Get request is what protobufjs reads, a 200-byte name included", () => {
    const t = root.lookupType("GetRequest");
    const long = "n".repeat(200);
    expect(t.toObject(t.decode(encodeGetRequest({ podName: long, podNamespace: "ns" })))).toEqual({
      podName: long,
      podNamespace: "ns",
    });
  });

  it("M10 a damaged answer is a WireError, never a crash or a wrong list", () => {
    const good = encode("Get", { podResources: pod("p", ["a"]) });
    expect(() => decodeGetResponse(good.subarray(0, good.length - 3))).toThrow(WireError);
    expect(() => decodeGetResponse(Uint8Array.from([0x0b]))).toThrow(WireError); // wire type 3 (a group)
    expect(() => decodeGetResponse(Uint8Array.from([0x08, 0xff]))).toThrow(WireError); // varint cut short
  });
});
