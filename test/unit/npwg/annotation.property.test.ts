/**
 * The networks annotation decoder (N4.1, src/npwg/annotation.ts) on generated input (fast-check,
 * fixed seed): both forms either give well-formed selections or refuse with a CniError of code 7
 * (never another exception), in bounded time; a generated bad deviceID is always refused (M10).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors";
import { interfaceNameProblem } from "../../../src/cni/validate";
import { DEFAULT_MAX_SELECTIONS, parseNetworksAnnotation } from "../../../src/npwg/annotation";
import { deviceTextProblem } from "../../../src/npwg/device-id";
import { dns1123LabelProblem } from "../../../src/npwg/dns1123";
import type { NetworkSelection } from "../../../src/npwg/types";
import { propertyRuns } from "../../support/property";

const SEED = 20261126;
/** Far above what one decode takes, far below a hang: the bound is what is asserted. */
const BOUND_MS = 2000;

/** The decoder's outcome: selections, or the CniError it refused with (anything else fails). */
function decode(value: string): NetworkSelection[] | CniError {
  const started = performance.now();
  try {
    return parseNetworksAnnotation(value, "pods", { reservedIfName: "eth0" });
  } catch (err) {
    if (!(err instanceof CniError)) throw err;
    return err;
  } finally {
    expect(performance.now() - started).toBeLessThan(BOUND_MS);
  }
}

/** How many generated values were accepted: a property that only ever refuses proves little. */
let accepted = 0;

function expectWellFormed(out: NetworkSelection[] | CniError): void {
  if (!(out instanceof CniError)) accepted++;
  if (out instanceof CniError) {
    expect(out.code).toBe(7);
    expect(out.message).toMatch(/^networks annotation/);
    return;
  }
  expect(out.length).toBeLessThanOrEqual(DEFAULT_MAX_SELECTIONS);
  for (const sel of out) {
    expect(dns1123LabelProblem(sel.name)).toBeUndefined();
    expect(dns1123LabelProblem(sel.namespace)).toBeUndefined();
    if (sel.interfaceRequest !== undefined) {
      expect(interfaceNameProblem(sel.interfaceRequest)).toBeUndefined();
      expect(sel.interfaceRequest).not.toBe("eth0");
    }
    if (sel.deviceID !== undefined) expect(deviceTextProblem(sel.deviceID)).toBeUndefined();
  }
}

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
/** Near misses as well as good values: what a tenant might type or an attacker might try. */
const junk = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.constantFrom("", " ", "eth0", "../x", "a/b", "A", "-a", "net1 ", "\u0000", "x".repeat(70)),
);
const nameLike = fc.oneof({ weight: 3, arbitrary: label }, { weight: 1, arbitrary: junk });

function commaRef([ns, name, ifName]: [string | null, string, string | null]): string {
  const prefix = ns === null ? "" : `${ns}/`;
  return ifName === null ? prefix + name : `${prefix}${name}@${ifName}`;
}
const commaItem = fc.tuple(fc.option(nameLike), nameLike, fc.option(nameLike)).map(commaRef);
const commaForm = fc
  .tuple(fc.array(commaItem, { minLength: 1, maxLength: 40 }), fc.constantFrom(",", ", ", " ,"))
  .map(([items, sep]) => items.join(sep));

/** A good deviceID, or one with a path separator, '..', a control character, or overlong. */
const deviceID = fc.oneof(
  fc.constantFrom("0000:3b:02.1", "mlx5_0", ""),
  fc.constantFrom("../../etc/passwd", "a/b", "0000:3b:02.1\n", "x\u0000", "\u202e1", "-x"),
  fc.string({ maxLength: 200 }),
);
const selectionObject = fc.record(
  {
    name: fc.oneof(nameLike, fc.integer(), fc.constant(null)),
    namespace: nameLike,
    interface: nameLike,
    interfaceRequest: nameLike,
    deviceID: fc.oneof(deviceID, fc.integer(), fc.constant({})),
    mac: fc.oneof(fc.constantFrom("02:00:00:00:00:01", "ff:ff:ff:ff:ff:ff"), junk),
    ips: fc.oneof(fc.constant(["10.0.0.1/24"]), fc.array(junk, { maxLength: 3 }), junk),
    "cni-args": fc.oneof(fc.dictionary(label, fc.jsonValue({ maxDepth: 2 })), junk),
    "default-route": fc.oneof(fc.constant(["10.0.0.1"]), fc.array(junk, { maxLength: 2 })),
  },
  { requiredKeys: ["name"] },
);
const jsonForm = fc.oneof(
  fc.array(fc.oneof({ weight: 5, arbitrary: selectionObject }, fc.jsonValue({ maxDepth: 3 })), {
    maxLength: 40,
  }),
  fc.jsonValue({ maxDepth: 4 }),
  fc.dictionary(label, selectionObject),
);

describe("N4.1 B21 B25 the networks annotation on generated input", () => {
  it("N4.1.1 B25 the comma form: well-formed selections or 7, never another exception", () => {
    accepted = 0;
    fc.assert(
      fc.property(commaForm, (value) => expectWellFormed(decode(value))),
      propertyRuns({ seed: SEED, numRuns: 400 }),
    );
    expect(accepted).toBeGreaterThan(20);
  });

  it("N4.1.2 B21 the JSON form: well-formed selections or 7, never another exception", () => {
    accepted = 0;
    fc.assert(
      fc.property(jsonForm, (v) => expectWellFormed(decode(JSON.stringify(v) ?? "null"))),
      propertyRuns({ seed: SEED, numRuns: 400 }),
    );
    expect(accepted).toBeGreaterThan(20);
  });

  it("N4.1 B21 any text, JSON-looking or not, cut anywhere: selections or 7", () => {
    const text = fc.oneof(
      fc.string({ unit: "binary", maxLength: 200 }),
      jsonForm.chain((v) => {
        const s = JSON.stringify(v) ?? "null";
        return fc.nat({ max: s.length }).map((cut) => s.slice(0, cut));
      }),
      fc.nat({ max: 20_000 }).map((depth) => `${"[".repeat(depth)}${"]".repeat(depth)}`),
    );
    fc.assert(
      fc.property(text, (value) => expectWellFormed(decode(value))),
      propertyRuns({ seed: SEED, numRuns: 400 }),
    );
  });

  it("M10 a deviceID with '/', '..', a control character, or overlong: 7 naming the key", () => {
    const part = fc.string({ maxLength: 10 });
    const bad = fc.oneof(
      fc.tuple(part, fc.constantFrom("/", "..", "\\"), part),
      fc.tuple(
        fc.string({ maxLength: 10 }),
        fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
        fc.string({ maxLength: 10 }),
      ),
      fc.tuple(fc.constant(""), fc.constant("x".repeat(129)), fc.string({ maxLength: 100 })),
    );
    fc.assert(
      fc.property(bad, label, ([before, poison, after], name) => {
        const value = JSON.stringify([{ name, deviceID: before + poison + after }]);
        const out = decode(value);
        expect(out).toBeInstanceOf(CniError);
        expect(out).toMatchObject({ code: 7, message: expect.stringContaining('key "deviceID"') });
      }),
      propertyRuns({ seed: SEED, numRuns: 300 }),
    );
  });
});
