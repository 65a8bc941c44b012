/**
 * The hand-written protobuf of the pod-resources messages (M10) against protobufjs (the fake
 * kubelet's codec): what protobufjs writes is read the same, fields Plexus skips are skipped, a
 * damaged message is a WireError, and the request is what protobufjs reads.
 */
import fc from "fast-check";
import * as protobuf from "protobufjs/light";
import { describe, expect, it } from "vitest";
import { PeerLimits } from "../../../src/kubelet/peer-limits";
import * as wire from "../../../src/kubelet/pod-resources-wire";
import { propertyRuns } from "../../support/property";

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
      fields: {
        resourceName: { type: "string", id: 1 },
        deviceIds: { rule: "repeated", type: "string", id: 2 },
      },
    },
    List: { fields: { podResources: { rule: "repeated", type: "PodResources", id: 1 } } },
    Get: { fields: { podResources: { type: "PodResources", id: 1 } } },
    GetRequest: {
      fields: { podName: { type: "string", id: 1 }, podNamespace: { type: "string", id: 2 } },
    },
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
    expect(
      decodeGetResponse(encode("Get", { podResources: pod("p", ["0000:3b:02.1", "ü-ïd"]) })),
    ).toEqual({
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
    // wire type 3 (a group)
    expect(() => decodeGetResponse(Uint8Array.from([0x0b]))).toThrow(WireError);
    // varint cut short
    expect(() => decodeGetResponse(Uint8Array.from([0x08, 0xff]))).toThrow(WireError);
  });
});

const SEED = 20261126;
const text = fc.string({ unit: "grapheme", maxLength: 12 });
const genDevice = fc.record({ resourceName: text, deviceIds: fc.array(text, { maxLength: 4 }) });
const genPod = fc.record({
  name: text,
  namespace: text,
  containers: fc.array(
    fc.record({
      name: text,
      devices: fc.array(genDevice, {
        maxLength: 3,
      }),
    }),
    { maxLength: 3 },
  ),
});

/** A decode either answers or throws a WireError; anything else fails the property. */
function wireErrorOrValue(read: () => unknown): void {
  try {
    read();
  } catch (err) {
    expect(err).toBeInstanceOf(WireError);
  }
}

describe("M10 pod-resources messages from generated input", () => {
  it("M10 pods written by protobufjs read back the same, by Get and by List", () => {
    fc.assert(
      fc.property(fc.array(genPod, { minLength: 1, maxLength: 5 }), (pods) => {
        for (const p of pods) {
          const got = decodeGetResponse(encode("Get", { podResources: p }));
          expect(got).toEqual({ podResources: p });
        }
        const list = encode("List", { podResources: pods });
        for (const p of pods) {
          const first = pods.find((q) => q.name === p.name && q.namespace === p.namespace);
          expect(findPodInList(list, p)).toEqual(first);
        }
      }),
      propertyRuns({ seed: SEED, numRuns: 300 }),
    );
  });

  it("M10 arbitrary and damaged bytes: an answer or a WireError, nothing else", () => {
    const change = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }));
    const changes = fc.array(change, { minLength: 1, maxLength: 3 });
    const damaged = fc.tuple(genPod, changes).map(([p, changes]) => {
      const bytes = Uint8Array.from(encode("List", { podResources: [p] }));
      for (const [at, v] of changes) bytes[at % bytes.length] = v;
      return { bytes, ref: p };
    });
    const nobody = { name: "", namespace: "" };
    const arbitrary = fc.uint8Array({ maxLength: 300 }).map((bytes) => ({ bytes, ref: nobody }));
    fc.assert(
      fc.property(fc.oneof(damaged, arbitrary), ({ bytes, ref }) => {
        wireErrorOrValue(() => decodeGetResponse(bytes));
        wireErrorOrValue(() => findPodInList(bytes, ref));
      }),
      propertyRuns({ seed: SEED, numRuns: 500 }),
    );
  });

  it("M10 a pod of more entries than allowed is refused naming the limit, not built", () => {
    // One container, one device, and empty device IDs: 2 bytes each on the wire.
    const ids = Buffer.alloc(2 * (PeerLimits.maxPodEntries + 1));
    for (let i = 0; i < ids.length; i += 2) ids[i] = 0x12;
    // ContainerResources { devices: [ContainerDevices { device_ids: ids }] }, in pod ns/p.
    const container = Buffer.concat([Buffer.from([0x12]), varint(ids.length), ids]);
    const head = Buffer.from([0x0a, 1, 0x70, 0x12, 2, 0x6e, 0x73, 0x1a]);
    const pod = Buffer.concat([head, varint(container.length), container]);
    const get = Buffer.concat([Buffer.from([0x0a]), varint(pod.length), pod]);
    const limit = expect.objectContaining({ limit: "maxPodEntries" });
    expect(() => decodeGetResponse(get)).toThrow(limit);
    expect(() => findPodInList(get, { namespace: "ns", name: "p" })).toThrow(WireError);
    // The other pods of a List are never decoded: a huge one that is not asked about costs nothing.
    expect(findPodInList(get, { namespace: "ns", name: "q" })).toBeUndefined();
  });
});

function varint(value: number): Buffer {
  const out: number[] = [];
  for (; value >= 128; value = Math.floor(value / 128)) out.push((value % 128) | 0x80);
  return Buffer.from([...out, value]);
}
