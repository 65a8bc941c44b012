/**
 * The one rule for device IDs and DRA attribute values (M10, src/npwg/device-id.ts): examples, and
 * generated input (fast-check, fixed seed) for what it refuses and what it lets through.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors";
import {
  deviceTextProblem,
  MAX_DEVICE_ID_LENGTH,
  MAX_RESOURCE_NAME_LENGTH,
  validateDeviceText,
} from "../../../src/npwg/device-id";
import { propertyRuns } from "../../support/property";

const SEED = 20261126;
/** Visible ASCII (0x21 to 0x7e) but '/' and '\\'. */
const VISIBLE = Array.from({ length: 0x7e - 0x20 }, (_, i) => String.fromCharCode(0x21 + i)).filter(
  (c) => c !== "/" && c !== "\\",
);
/** One visible ASCII character that is neither a path separator nor a dot. */
const plainChar = fc.constantFrom(...VISIBLE.filter((c) => c !== "."));
const plainId = fc
  .array(plainChar, { minLength: 1, maxLength: MAX_DEVICE_ID_LENGTH })
  .map((cs) => cs.join(""))
  .filter((s) => !s.startsWith("-"));
/** Control, DEL, space, Latin-1, bidi, look-alikes, astral characters. */
const badChar = fc.oneof(
  fc.integer({ min: 0, max: 0x20 }).map((c) => String.fromCharCode(c)),
  fc.constantFrom("\u007f", "\u00a0", "\u202e", "\u200b", "\u0430", "\u2215", "\u{1f600}"),
  fc.integer({ min: 0x80, max: 0xffff }).map((c) => String.fromCharCode(c)),
);

function insertAt(text: string, at: number, what: string): string {
  const i = at % (text.length + 1);
  return text.slice(0, i) + what + text.slice(i);
}

describe("M10 the device ID rule", () => {
  it("M10 PCI addresses and device names pass; paths, options, blanks, overlong do not", () => {
    for (const ok of ["0000:3b:02.1", "mlx5_core.sf.4", "mlx5_0", "vfio-12", "GPU-8f8a"])
      expect(deviceTextProblem(ok), ok).toBeUndefined();
    const paths = ["", ".", "..", "../x", "a/b", "a\\b", "-rf"];
    const bad = [...paths, "a b", "0000:3b:02.1\n", "\u202e1.20:b3"];
    for (const b of bad) expect(deviceTextProblem(b), JSON.stringify(b)).toBeDefined();
    expect(deviceTextProblem("x".repeat(MAX_DEVICE_ID_LENGTH))).toBeUndefined();
    expect(deviceTextProblem("x".repeat(MAX_DEVICE_ID_LENGTH + 1))).toMatch(/more than 128/);
    expect(deviceTextProblem(7)).toBe("must be a string");
  });

  it("M10 a resource name has exactly one '/' between its domain and its name", () => {
    expect(deviceTextProblem("intel.com/sriov_netdevice", "resourceName")).toBeUndefined();
    for (const bad of ["sriov", "/a", "a/", "a/b/c", "a/../b", "a /b"])
      expect(deviceTextProblem(bad, "resourceName"), bad).toBeDefined();
    const long = `a/${"x".repeat(MAX_RESOURCE_NAME_LENGTH)}`;
    expect(deviceTextProblem(long, "resourceName")).toMatch(/more than/);
  });

  it("M10 validateDeviceText: a CniError 7 naming the source, the value and the problem", () => {
    expect(validateDeviceText("0000:3b:02.1", { what: "x" })).toBe("0000:3b:02.1");
    let err: unknown;
    try {
      validateDeviceText("a/b", { what: 'network app/x: key "deviceID"' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CniError);
    expect(err).toMatchObject({
      code: 7,
      message:
        `network app/x: key "deviceID" "a/b" is not a valid device ID: ` +
        "has a '/': a device ID is one name, never a path",
    });
  });

  it("M10 generated IDs of visible ASCII without '/', '\\' or '..' pass", () => {
    const char = fc.oneof(plainChar, fc.constant("."));
    const withDots = fc
      .array(char, { minLength: 1, maxLength: MAX_DEVICE_ID_LENGTH })
      .map((cs) => cs.join(""))
      .filter((s) => !s.includes("..") && s !== "." && !s.startsWith("-"));
    fc.assert(
      fc.property(withDots, (id) => {
        expect(deviceTextProblem(id)).toBeUndefined();
      }),
      propertyRuns({ seed: SEED, numRuns: 300 }),
    );
  });

  it("M10 B78 generated IDs with a path, a control or non-ASCII character, or overlong", () => {
    const poisoned = fc.tuple(plainId, fc.nat()).chain(([id, at]) =>
      fc.oneof(
        fc.constantFrom("/", "\\", "..", "/../", "../").map((p) => insertAt(id, at, p)),
        badChar.map((c) => insertAt(id, at, c)),
        fc
          .integer({ min: MAX_DEVICE_ID_LENGTH + 1, max: 4096 })
          .map((n) => id.repeat(Math.ceil(n / id.length)).slice(0, n)),
      ),
    );
    fc.assert(
      fc.property(poisoned, (value) => {
        expect(deviceTextProblem(value)).toBeDefined();
        const refused = expect.objectContaining({ code: 7 });
        expect(() => validateDeviceText(value, { what: "x" })).toThrow(refused);
      }),
      propertyRuns({ seed: SEED, numRuns: 500 }),
    );
  });

  it("M10 any string: a problem or a value that stays one file name inside its directory", () => {
    const binary = fc.string({ unit: "binary", maxLength: 300 });
    const any = fc.oneof(binary, fc.string({ maxLength: 99 }));
    fc.assert(
      fc.property(any, (value) => {
        if (deviceTextProblem(value) !== undefined) return;
        const visible = [...value].every((c) => VISIBLE.includes(c));
        expect(visible && !value.includes("..")).toBe(true);
        expect(value.length).toBeLessThanOrEqual(MAX_DEVICE_ID_LENGTH);
      }),
      propertyRuns({ seed: SEED, numRuns: 1000 }),
    );
  });
});
