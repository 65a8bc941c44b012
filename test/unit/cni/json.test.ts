import { describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import {
  assertNoCaseCollisions,
  decodeJson,
  isPlainObject,
  MAX_JSON_DEPTH,
  MAX_STDIN_BYTES,
} from "../../../src/cni/json";

const what = "stdin config";

function errorOf(fn: () => unknown): { code: number; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error("expected an error");
}

describe("B11 malformed stdin", () => {
  it.each([
    "",
    "   \n\t",
    '{"cniVersion":',
    "{",
    "nul",
    "{'a':1}",
    '{"a":1,}',
    '{"a":1} trailing',
    '{"a":1}{"b":2}',
    "\uFEFF{}",
  ])("B11 %j is code 6 naming the input", (text) => {
    expect(errorOf(() => decodeJson(text, { what }))).toMatchObject({
      code: Code.Decoding,
      message: expect.stringContaining(what),
    });
  });

  it('B11 valid JSON that is not an object (null, [], "str") decodes: the caller decides (plugin-conf makes it 6)', () => {
    expect(decodeJson("null", { what })).toBeNull();
    expect(decodeJson("[]", { what })).toEqual([]);
    expect(decodeJson('"str"', { what })).toBe("str");
  });

  it("B11 bytes and strings decode alike, including a view into a larger buffer", () => {
    const backing = Buffer.from('xx{"a":[1,{"b":null}]}yy');
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 2, backing.length - 4);
    expect(decodeJson(view, { what })).toEqual({ a: [1, { b: null }] });
    expect(decodeJson(new TextEncoder().encode('{"ü":"ß"}'), { what })).toEqual({ ü: "ß" });
  });

  it("B11 the caller's code replaces 6 for malformed input (100 for a delegate's output)", () => {
    expect(
      errorOf(() => decodeJson("garbage", { what: "result", code: Code.InvalidResult })).code,
    ).toBe(Code.InvalidResult);
    expect(errorOf(() => decodeJson("", { what: "result", code: Code.InvalidResult })).code).toBe(
      Code.InvalidResult,
    );
  });
});

describe("B12 oversized and deeply nested input", () => {
  it("B12 64 MiB is refused with 6 by size, before parsing, and quickly", () => {
    const big = Buffer.alloc(64 * 1024 * 1024, 0x20);
    const t0 = performance.now();
    const err = errorOf(() => decodeJson(big, { what }));
    expect(err).toMatchObject({
      code: Code.Decoding,
      message: expect.stringContaining(`${MAX_STDIN_BYTES}-byte limit`),
    });
    expect(performance.now() - t0).toBeLessThan(200);
  });

  it("B12 the cap is 1 MiB by default and counts bytes, not characters", () => {
    expect(MAX_STDIN_BYTES).toBe(1024 * 1024);
    const pad = (n: number) => `{"a":"${"x".repeat(n - 8)}"}`;
    expect(decodeJson(pad(MAX_STDIN_BYTES), { what })).toHaveProperty("a");
    expect(errorOf(() => decodeJson(pad(MAX_STDIN_BYTES + 1), { what })).code).toBe(Code.Decoding);
    // 600k two-byte characters: under the cap in characters, over it in bytes.
    expect(errorOf(() => decodeJson(`"${"é".repeat(600_000)}"`, { what })).code).toBe(
      Code.Decoding,
    );
  });

  it("B12 10^5-deep arrays and objects are code 6, not a stack overflow", () => {
    const arrays = "[".repeat(100_000) + "]".repeat(100_000);
    expect(errorOf(() => decodeJson(arrays, { what })).code).toBe(Code.Decoding);
    const objects = `${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}`;
    expect(errorOf(() => decodeJson(objects, { what, maxBytes: 1 << 21 })).code).toBe(
      Code.Decoding,
    );
  });

  it("B12 10^6-deep nesting (a 4 MiB delegate output) is refused with the caller's code, not a crash", () => {
    const deep = "[".repeat(1_000_000) + "]".repeat(1_000_000);
    expect(
      errorOf(() =>
        decodeJson(deep, { what: "result", maxBytes: 4 << 20, code: Code.InvalidResult }),
      ).code,
    ).toBe(Code.InvalidResult);
  });

  it("B12 nesting up to the depth limit is accepted; one more level is refused naming the limit", () => {
    const nest = (n: number) => "[".repeat(n) + "]".repeat(n);
    expect(decodeJson(nest(MAX_JSON_DEPTH), { what })).toBeDefined();
    expect(errorOf(() => decodeJson(nest(MAX_JSON_DEPTH + 1), { what })).message).toContain(
      `${MAX_JSON_DEPTH} levels`,
    );
  });
});

describe("B17 prototype keys and case collisions", () => {
  it.each([
    ['{"__proto__":{"polluted":1}}', "__proto__"],
    ['{"a":{"constructor":{"prototype":{"polluted":1}}}}', "constructor"],
    ['{"delegates":[{"type":"bridge","prototype":1}]}', "prototype"],
  ])("B17 %s is refused with 7 naming the key, and nothing is polluted", (text, key) => {
    expect(errorOf(() => decodeJson(text, { what }))).toMatchObject({
      code: Code.InvalidNetworkConfig,
      message: expect.stringContaining(key),
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((Object.prototype as unknown as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("B17 B55 in a delegate's output (caller's code 100) a prototype key is 100, not a config error", () => {
    expect(
      errorOf(() =>
        decodeJson('{"cniVersion":"1.0.0","__proto__":{}}', {
          what: "result",
          code: Code.InvalidResult,
        }),
      ).code,
    ).toBe(Code.InvalidResult);
  });

  it("B17 the message says where the key was", () => {
    expect(
      errorOf(() => decodeJson('{"delegates":[{"ipam":{"__proto__":{}}}]}', { what })).message,
    ).toContain("delegates[0].ipam");
  });

  it("B17 a prototype-looking value (not key) is fine", () => {
    expect(decodeJson('{"name":"__proto__"}', { what })).toEqual({ name: "__proto__" });
  });

  it("B17 keys differing only in case are refused with 7 naming both", () => {
    expect(() => assertNoCaseCollisions({ type: "a", Type: "b" }, "delegate 0")).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringMatching(/delegate 0.*"type".*"Type"/),
      }),
    );
    expect(() => assertNoCaseCollisions({ cniVersion: "1.0.0", CNIVERSION: "0.4.0" }, "x")).toThrow(
      expect.objectContaining({ code: 7 }),
    );
    expect(() => assertNoCaseCollisions({ type: "a", name: "b", Other: 1 }, "x")).not.toThrow();
  });

  it("isPlainObject is true only for non-null, non-array objects", () => {
    expect([{}, { a: 1 }].map(isPlainObject)).toEqual([true, true]);
    expect([null, [], "s", 1, undefined].map(isPlainObject)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
