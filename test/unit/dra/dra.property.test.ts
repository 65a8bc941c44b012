/**
 * The DRA decoders (M10, B76) on generated input (fast-check, fixed seed): trimming a ResourceClaim
 * or ResourceSlice (src/cluster/dra-objects.ts) gives a well-formed shape or nothing, never an
 * exception; a pod's claimed devices (src/dra/claim-devices.ts) over generated claims and slices
 * are well-formed device IDs or a CniError of code 7 or 11. Attribute values with '/', '..',
 * control characters or overlong are refused (7); a device that two slices of one pool and
 * generation list is refused (7) whatever the order of the list.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors";
import { isPlainObject } from "../../../src/cni/json";
import { trimResourceClaim, trimResourceSlice } from "../../../src/cluster/dra-objects";
import { type DraReader, podClaimDevices } from "../../../src/dra/claim-devices";
import type { PodClaimDevices } from "../../../src/dra/claim-devices";
import { silentLogger } from "../../../src/log/logger";
import { deviceTextProblem } from "../../../src/npwg/device-id";
import type { Pod } from "../../../src/npwg/types";
import { propertyRuns } from "../../support/property";

const SEED = 20261126;
const BOUND_MS = 2000;
const DRIVER = "sriov.example.com";
const RESOURCE = "example.com/netdra";
const CLAIM = "web-net";
type JsonObject = Record<string, unknown>;
const resourceNameOf = (parts: string[]) => `example.com/${parts.join("")}`;
const ID_ATTR = "k8s.cni.cncf.io/deviceID";
const RN_ATTR = "k8s.cni.cncf.io/resourceName";
const VF_A = "0000:07:00.1";
const VF_B = "0000:07:00.9";
const deviceNames = fc.constantFrom("vf-1", "vf-2", "vf-3", "gone");
const POD: Pod = {
  metadata: { name: "web", namespace: "app" },
  spec: { nodeName: "node-1", resourceClaims: [{ name: "net", resourceClaimName: CLAIM }] },
};

/** Objects near the real shapes, with any field replaced by junk now and then. */
const junk = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.string({ unit: "binary", maxLength: 20 }));
function maybe<T>(inner: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 4, arbitrary: inner }, { weight: 1, arbitrary: junk });
}
/** An object whose every key may be absent, or the whole of it junk. */
function obj(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  return maybe(fc.record(fields, { requiredKeys: [] }));
}
const names = fc.constantFrom("node-1", "vf-1", "vf-2", DRIVER, "");
const str = fc.oneof(names, fc.string({ maxLength: 12 }));
const attr = obj({ string: maybe(str) });

const result = obj({ driver: maybe(str), pool: maybe(str), device: maybe(str), request: str });
const results = maybe(fc.array(result, { maxLength: 5 }));
const rawClaim = obj({
  kind: maybe(fc.constant("ResourceClaim")),
  metadata: obj({ name: maybe(str), namespace: maybe(str), uid: maybe(str) }),
  status: obj({ allocation: obj({ devices: obj({ results }) }) }),
});

const rawDevice = obj({
  name: maybe(str),
  attributes: obj({ [ID_ATTR]: attr, [RN_ATTR]: attr, other: attr }),
});
const rawSlice = obj({
  kind: maybe(fc.constant("ResourceSlice")),
  metadata: obj({ name: maybe(str) }),
  spec: obj({
    driver: maybe(str),
    nodeName: maybe(str),
    pool: obj({ name: maybe(str), generation: maybe(fc.integer({ min: 0, max: 3 })) }),
    devices: maybe(fc.array(rawDevice, { maxLength: 6 })),
  }),
});

describe("M10 DRA objects on generated input: the trimmed shapes", () => {
  /** What every reader hands the decoders: a JSON object (each checks the rest). */
  const objects = (a: fc.Arbitrary<unknown>) =>
    fc.oneof(a, fc.dictionary(str, junk)).filter((v): v is JsonObject => isPlainObject(v));

  it("M10 a ResourceClaim: undefined or a well-formed claim, never an exception", () => {
    fc.assert(
      fc.property(objects(rawClaim), (raw) => {
        const claim = trimResourceClaim(raw, "app");
        if (claim === undefined) return;
        expect(typeof claim.metadata.name).toBe("string");
        expect(claim.metadata.name).not.toBe("");
        for (const r of claim.status?.allocation?.devices.results ?? [])
          for (const v of [r.driver, r.pool, r.device]) expect(v).toMatch(/./);
      }),
      propertyRuns({ seed: SEED, numRuns: 500 }),
    );
  });

  it("M10 a ResourceSlice: undefined or well-formed, only the two network attributes", () => {
    fc.assert(
      fc.property(objects(rawSlice), (raw) => {
        const slice = trimResourceSlice(raw);
        if (slice === undefined) return;
        expect(typeof slice.spec.pool.generation).toBe("number");
        for (const d of slice.spec.devices) {
          expect(d.name).toMatch(/./);
          for (const k of Object.keys(d.attributes ?? {})) expect([ID_ATTR, RN_ATTR]).toContain(k);
        }
      }),
      propertyRuns({ seed: SEED, numRuns: 500 }),
    );
  });
});

/** A reader over raw objects, each through the trimming decoder as every real reader does. */
function readerOf(claims: unknown[], slices: unknown[]): DraReader {
  return {
    async getResourceClaim(namespace, name) {
      const found = claims
        .filter(isPlainObject)
        .map((c) => trimResourceClaim(c, namespace))
        .find((c) => c?.metadata.name === name);
      return found;
    },
    async listResourceSlices(query) {
      return slices
        .filter(isPlainObject)
        .flatMap((s) => trimResourceSlice(s) ?? [])
        .filter((s) => s.spec.driver === query.driver);
    },
  };
}

async function claimed(claims: unknown[], slices: unknown[]): Promise<PodClaimDevices | CniError> {
  const started = performance.now();
  try {
    return await podClaimDevices(POD, readerOf(claims, slices), silentLogger());
  } catch (err) {
    if (!(err instanceof CniError)) throw err;
    return err;
  } finally {
    expect(performance.now() - started).toBeLessThan(BOUND_MS);
  }
}

const vf = (name: string, deviceID: unknown, resourceName: unknown = { string: RESOURCE }) => ({
  name,
  attributes: { [ID_ATTR]: deviceID, [RN_ATTR]: resourceName },
});
const slice = (
  name: string,
  fields: { pool?: string; generation?: number; devices: unknown[] },
) => ({
  kind: "ResourceSlice",
  metadata: { name },
  spec: {
    driver: DRIVER,
    nodeName: "node-1",
    pool: { name: fields.pool ?? "node-1", generation: fields.generation ?? 1 },
    devices: fields.devices,
  },
});
function allocated(device: string, pool: string) {
  return { driver: DRIVER, pool, device, request: "vfs" };
}
const claim = (devices: string[], pool = "node-1") => ({
  kind: "ResourceClaim",
  metadata: { name: CLAIM, namespace: "app" },
  status: {
    allocation: { devices: { results: devices.map((device) => allocated(device, pool)) } },
  },
});

/** A good deviceID, or one the device rule refuses. */
const idValue = fc.oneof(
  fc.constantFrom("0000:07:00.1", "0000:07:00.2", "mlx5_0"),
  fc.constantFrom("../x", "a/b", "x\u0000", "\u202ex", "-x", "..", "x".repeat(200)),
  fc.string({ unit: "binary", maxLength: 30 }),
);
const badRn = fc.constantFrom("a/b/c", "../x", "x", "example.com/net\n");
const rnValue = fc.oneof(fc.constant(RESOURCE), badRn, str);

describe("M10 B76 a pod's claimed devices over generated claims and slices", () => {
  it("M10 B76 well-formed device IDs and resource names, or 7 / 11; nothing else", async () => {
    const scenario = fc.record({
      allocated: fc.array(deviceNames, { minLength: 1, maxLength: 3 }),
      slices: fc.array(
        fc.record({
          generation: fc.integer({ min: 1, max: 2 }),
          devices: fc.array(
            fc.tuple(
              fc.constantFrom("vf-1", "vf-2", "vf-3"),
              maybe(fc.record({ string: idValue })),
              maybe(fc.record({ string: rnValue })),
            ),
            { maxLength: 4 },
          ),
        }),
        { maxLength: 3 },
      ),
    });
    await fc.assert(
      fc.asyncProperty(scenario, async (sc) => {
        const slices = sc.slices.map((s, i) =>
          slice(`s${i}`, { generation: s.generation, devices: s.devices.map((d) => vf(...d)) }),
        );
        const got = await claimed([claim(sc.allocated)], slices);
        if (got instanceof CniError) {
          expect([7, 11]).toContain(got.code);
          return;
        }
        for (const [resourceName, devices] of got.byResource) {
          expect(deviceTextProblem(resourceName, "resourceName")).toBeUndefined();
          for (const d of devices) expect(deviceTextProblem(d.deviceID)).toBeUndefined();
        }
      }),
      propertyRuns({ seed: SEED, numRuns: 300 }),
    );
  });

  it("M10 B76 an attribute value the device rule refuses: 7 naming it", async () => {
    const bad = fc.oneof(
      fc
        .tuple(
          fc.string({ maxLength: 8 }),
          fc.constantFrom("/", "..", "\\", "\u0000", "\u001f", "\n"),
          fc.string({ maxLength: 8 }),
        )
        .map(([a, p, b]) => ({ which: "deviceID" as const, value: a + p + b })),
      fc.nat({ max: 300 }).map((n) => ({ which: "deviceID" as const, value: "x".repeat(129 + n) })),
      fc
        .tuple(
          fc.string({ maxLength: 8 }),
          fc.constantFrom("..", "\u0000", "\u202e", "//"),
          fc.string({ maxLength: 8 }),
        )
        .map((parts) => ({ which: "resourceName" as const, value: resourceNameOf(parts) })),
    );
    await fc.assert(
      fc.asyncProperty(bad, async ({ which, value }) => {
        const device =
          which === "deviceID"
            ? vf("vf-1", { string: value })
            : vf("vf-1", { string: "0000:07:00.1" }, { string: value });
        const got = await claimed([claim(["vf-1"])], [slice("s0", { devices: [device] })]);
        expect(got).toBeInstanceOf(CniError);
        expect(got).toMatchObject({
          code: 7,
          message: expect.stringContaining(`attribute k8s.cni.cncf.io/${which}`),
        });
      }),
      propertyRuns({ seed: SEED, numRuns: 300 }),
    );
  });

  it("M10 B76 B78 a device twice in one pool and generation: 7, in any order", async () => {
    const permutation = <T>(items: T[]) =>
      fc.shuffledSubarray(items, { minLength: items.length, maxLength: items.length });
    const layout = fc
      .record({
        copies: fc.integer({ min: 2, max: 3 }),
        sameSlice: fc.boolean(),
        others: fc.array(fc.constantFrom("vf-2", "vf-3"), { maxLength: 2 }),
        ids: fc.array(fc.constantFrom(VF_A, VF_B), { minLength: 3, maxLength: 3 }),
      })
      .chain((l) => {
        const copies = l.ids.slice(0, l.copies).map((id) => vf("vf-1", { string: id }));
        const others = l.others.map((o) => vf(o, { string: "0000:07:00.5" }));
        const dup = l.sameSlice
          ? [slice("dup", { generation: 2, devices: [...copies, ...others] })]
          : copies.map((c, i) => slice(`dup-${i}`, { generation: 2, devices: [c] }));
        const rest = [
          slice("old", { generation: 1, devices: [vf("vf-1", { string: "0000:99:00.1" })] }),
          slice("p2", { pool: "node-2", generation: 2, devices: [vf("vf-1", { string: VF_B })] }),
        ];
        const once = slice("once", { generation: 2, devices: [copies[0], ...others] });
        return fc.record({
          first: fc.constant(l.ids[0]!),
          twice: permutation([...dup, ...rest]),
          once: permutation([once, ...rest]),
        });
      });
    await fc.assert(
      fc.asyncProperty(layout, async ({ first, twice, once }) => {
        const got = await claimed([claim(["vf-1"])], twice);
        expect(got).toBeInstanceOf(CniError);
        expect(got).toMatchObject({
          code: 7,
          message: expect.stringMatching(/^device vf-1 \(.*, generation 2\): .*must be unique/),
        });
        const ok = await claimed([claim(["vf-1"])], once);
        expect(ok).not.toBeInstanceOf(CniError);
        const ids = (ok as PodClaimDevices).byResource.get(RESOURCE)?.map((d) => d.deviceID);
        expect(ids).toEqual([first]);
      }),
      propertyRuns({ seed: SEED, numRuns: 200 }),
    );
  });
});
