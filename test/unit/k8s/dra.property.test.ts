/**
 * The DRA decoders (M10, B76) on generated input (fast-check, fixed seed): trimming a
 * ResourceClaim or ResourceSlice (src/k8s/dra.ts) gives a well-formed shape or nothing, never an
 * exception; a pod's claimed devices (src/k8s/dra-devices.ts) over generated claims and slices are
 * well-formed device IDs or a CniError of code 7 or 11. Attribute values with '/', '..', control
 * characters or overlong are refused (7); a device that two slices of one pool and generation list
 * is refused (7) whatever the order of the list.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors";
import { isPlainObject } from "../../../src/cni/json";
import { trimResourceClaim, trimResourceSlice } from "../../../src/k8s/dra";
import { type DraReader, type PodClaimDevices, podClaimDevices } from "../../../src/k8s/dra-devices";
import { silentLogger } from "../../../src/log/logger";
import { deviceTextProblem } from "../../../src/npwg/device-id";
import type { Pod } from "../../../src/npwg/types";

const SEED = 20261126;
const BOUND_MS = 2000;
const DRIVER = "sriov.example.com";
const RESOURCE = "example.com/netdra";
const CLAIM = "web-net";
const POD: Pod = {
  metadata: { name: "web", namespace: "app" },
  spec: { nodeName: "node-1", resourceClaims: [{ name: "net", resourceClaimName: CLAIM }] },
};

/** Objects near the real shapes, with any field replaced by junk now and then. */
const junk = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.string({ unit: "binary", maxLength: 20 }));
const maybe = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: a }, { weight: 1, arbitrary: junk });
const str = fc.oneof(fc.constantFrom("node-1", "vf-1", "vf-2", DRIVER, ""), fc.string({ maxLength: 12 }));
const attr = maybe(fc.record({ string: maybe(str) }, { requiredKeys: [] }));

const rawClaim = fc.record(
  {
    kind: maybe(fc.constant("ResourceClaim")),
    metadata: maybe(fc.record({ name: maybe(str), namespace: maybe(str), uid: maybe(str) }, { requiredKeys: [] })),
    status: maybe(
      fc.record({
        allocation: maybe(
          fc.record({
            devices: maybe(
              fc.record({
                results: maybe(
                  fc.array(
                    maybe(fc.record({ driver: maybe(str), pool: maybe(str), device: maybe(str), request: str })),
                    {
                      maxLength: 5,
                    },
                  ),
                ),
              }),
            ),
          }),
        ),
      }),
    ),
  },
  { requiredKeys: [] },
);

const rawDevice = fc.record(
  {
    name: maybe(str),
    attributes: maybe(
      fc.record(
        { "k8s.cni.cncf.io/deviceID": attr, "k8s.cni.cncf.io/resourceName": attr, other: attr },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);
const rawSlice = fc.record(
  {
    kind: maybe(fc.constant("ResourceSlice")),
    metadata: maybe(fc.record({ name: maybe(str) }, { requiredKeys: [] })),
    spec: maybe(
      fc.record(
        {
          driver: maybe(str),
          nodeName: maybe(str),
          pool: maybe(fc.record({ name: maybe(str), generation: maybe(fc.integer({ min: 0, max: 3 })) })),
          devices: maybe(fc.array(maybe(rawDevice), { maxLength: 6 })),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);

describe("M10 DRA objects on generated input: the trimmed shapes", () => {
  it("M10 a ResourceClaim: undefined or a well-formed claim, never an exception", () => {
    fc.assert(
      fc.property(fc.oneof(rawClaim, fc.dictionary(str, junk)), (obj) => {
        const claim = trimResourceClaim(obj as Record<string, unknown>, "app");
        if (claim === undefined) return;
        expect(typeof claim.metadata.name).toBe("string");
        expect(claim.metadata.name).not.toBe("");
        for (const r of claim.status?.allocation?.devices.results ?? [])
          for (const v of [r.driver, r.pool, r.device]) expect(v).toMatch(/./);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it("M10 a ResourceSlice: undefined or a well-formed slice keeping only the two network attributes", () => {
    fc.assert(
      fc.property(fc.oneof(rawSlice, fc.dictionary(str, junk)), (obj) => {
        const slice = trimResourceSlice(obj as Record<string, unknown>);
        if (slice === undefined) return;
        expect(typeof slice.spec.pool.generation).toBe("number");
        for (const d of slice.spec.devices) {
          expect(d.name).toMatch(/./);
          for (const k of Object.keys(d.attributes ?? {}))
            expect(["k8s.cni.cncf.io/deviceID", "k8s.cni.cncf.io/resourceName"]).toContain(k);
        }
      }),
      { seed: SEED, numRuns: 500 },
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
    async listResourceSlices(q) {
      return slices
        .filter(isPlainObject)
        .flatMap((s) => trimResourceSlice(s) ?? [])
        .filter((s) => s.spec.driver === q.driver);
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
  attributes: { "k8s.cni.cncf.io/deviceID": deviceID, "k8s.cni.cncf.io/resourceName": resourceName },
});
const slice = (name: string, o: { pool?: string; generation?: number; devices: unknown[] }) => ({
  kind: "ResourceSlice",
  metadata: { name },
  spec: {
    driver: DRIVER,
    nodeName: "node-1",
    pool: { name: o.pool ?? "node-1", generation: o.generation ?? 1 },
    devices: o.devices,
  },
});
const claim = (devices: string[], pool = "node-1") => ({
  kind: "ResourceClaim",
  metadata: { name: CLAIM, namespace: "app" },
  status: {
    allocation: { devices: { results: devices.map((device) => ({ driver: DRIVER, pool, device, request: "vfs" })) } },
  },
});

/** A good deviceID, or one the device rule refuses. */
const idValue = fc.oneof(
  fc.constantFrom("0000:07:00.1", "0000:07:00.2", "mlx5_0"),
  fc.constantFrom("../x", "a/b", "x\u0000", "\u202ex", "-x", "..", "x".repeat(200)),
  fc.string({ unit: "binary", maxLength: 30 }),
);
const rnValue = fc.oneof(fc.constant(RESOURCE), fc.constantFrom("a/b/c", "../x", "x", "example.com/net\n"), str);

describe("M10 B76 a pod's claimed devices over generated claims and slices", () => {
  it("M10 B76 well-formed device IDs and resource names, or 7 / 11; never another exception", async () => {
    const scenario = fc.record({
      allocated: fc.array(fc.constantFrom("vf-1", "vf-2", "vf-3", "gone"), { minLength: 1, maxLength: 3 }),
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
          slice(`s${i}`, { generation: s.generation, devices: s.devices.map(([n, id, rn]) => vf(n, id, rn)) }),
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
      { seed: SEED, numRuns: 300 },
    );
  });

  it("M10 B76 an allocated device whose deviceID or resourceName attribute fails the device rule: 7 naming the attribute", async () => {
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
        .map(([a, p, b]) => ({ which: "resourceName" as const, value: `example.com/${a}${p}${b}` })),
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
      { seed: SEED, numRuns: 300 },
    );
  });

  it("M10 B76 a device listed twice in one pool and generation is refused (7) whatever the order of the slices; once per pool and generation it is found", async () => {
    const permutation = <T>(items: T[]) =>
      fc.shuffledSubarray(items, { minLength: items.length, maxLength: items.length });
    const layout = fc
      .record({
        copies: fc.integer({ min: 2, max: 3 }),
        sameSlice: fc.boolean(),
        others: fc.array(fc.constantFrom("vf-2", "vf-3"), { maxLength: 2 }),
        ids: fc.array(fc.constantFrom("0000:07:00.1", "0000:07:00.9"), { minLength: 3, maxLength: 3 }),
      })
      .chain((l) => {
        const copies = Array.from({ length: l.copies }, (_, i) => vf("vf-1", { string: l.ids[i]! }));
        const others = l.others.map((o) => vf(o, { string: "0000:07:00.5" }));
        const dup = l.sameSlice
          ? [slice("dup", { generation: 2, devices: [...copies, ...others] })]
          : copies.map((c, i) => slice(`dup-${i}`, { generation: 2, devices: [c] }));
        const rest = [
          slice("old", { generation: 1, devices: [vf("vf-1", { string: "0000:99:00.1" })] }),
          slice("p2", { pool: "node-2", generation: 2, devices: [vf("vf-1", { string: "0000:08:00.1" })] }),
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
          message: expect.stringMatching(/^device vf-1 \(driver .*, generation 2\): .*must be unique/),
        });
        const ok = await claimed([claim(["vf-1"])], once);
        expect(ok).not.toBeInstanceOf(CniError);
        expect((ok as PodClaimDevices).byResource.get(RESOURCE)?.map((d) => d.deviceID)).toEqual([first]);
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});
