import { describe, expect, it } from "vitest";
import { Code, isCniError } from "../../../../src/cni/errors";
import { convertResult, toResult } from "../../../../src/cni/result/convert";
import {
  decodeResult,
  looksLikeCniError,
  MAX_RESULT_BYTES,
} from "../../../../src/cni/result/decode";
import { ALL_VERSIONS } from "../../../../src/cni/version";

const what = 'plugin type="bridge" name="net-a" (add)';

function errorOf(fn: () => unknown): { code: number; message: string; details?: string } {
  try {
    fn();
  } catch (err) {
    expect(isCniError(err)).toBe(true);
    return err as { code: number; message: string; details?: string };
  }
  throw new Error("expected an error");
}

describe("B55 output that is not a CNI result", () => {
  it.each([
    "garbage",
    "",
    "\n",
    '{"cniVersion":"1.0.0",',
    '{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}',
    "null",
    "[]",
    "5",
    '"ok"',
    '{"cniVersion":"1.0.0"} trailing',
    '{"cniVersion":"1.0.0"}\n{"cniVersion":"1.0.0"}',
    "<html>oops</html>",
  ])("B55 %j is code 100 naming the delegate", (out) => {
    expect(errorOf(() => decodeResult(out, "1.0.0", what))).toMatchObject({
      code: Code.InvalidResult,
      message: expect.stringContaining(what),
    });
  });

  it("B55 bytes are decoded like text", () => {
    expect(errorOf(() => decodeResult(Buffer.from("garbage"), "1.0.0", what)).code).toBe(
      Code.InvalidResult,
    );
    expect(
      decodeResult(
        Buffer.from('{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}]}'),
        "1.0.0",
        what,
      ),
    ).toEqual({
      cniVersion: "1.0.0",
      ips: [{ address: "10.0.0.2/24" }],
    });
  });

  it("B55 output over the result cap, or nested too deep, is 100 and not a crash", () => {
    const huge = `{"cniVersion":"1.0.0","x":"${"a".repeat(MAX_RESULT_BYTES)}"}`;
    expect(errorOf(() => decodeResult(huge, "1.0.0", what)).code).toBe(Code.InvalidResult);
    const deep = `{"cniVersion":"1.0.0","x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    expect(errorOf(() => decodeResult(deep, "1.0.0", what)).code).toBe(Code.InvalidResult);
  });

  it.each([
    ['{"cniVersion":"1.0.0","ips":[{"address":5}]}', "ips[0].address"],
    [
      '{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24","interface":"0"}]}',
      "ips[0].interface",
    ],
    ['{"cniVersion":"1.0.0","interfaces":{"name":"eth0"}}', "interfaces"],
    ['{"cniVersion":"1.0.0","interfaces":[{"mac":"aa:bb:cc:dd:ee:ff"}]}', "interfaces[0].name"],
    ['{"cniVersion":"1.1.0","routes":[{"gw":"10.0.0.1"}]}', "routes[0].dst"],
    ['{"cniVersion":"0.4.0","ips":[{"version":"5","address":"10.0.0.2/24"}]}', "ips[0].version"],
    ['{"cniVersion":"0.2.0","ip4":{"gateway":"10.0.0.1"}}', "ip4.ip"],
    ['{"cniVersion":"1.0.0","dns":{"nameservers":"10.0.0.1"}}', "dns.nameservers"],
  ])("B55 a result of the wrong shape %s is 100 naming %s", (out, path) => {
    expect(errorOf(() => decodeResult(out, "1.0.0", what))).toMatchObject({
      code: Code.InvalidResult,
      message: expect.stringContaining(path),
    });
  });
});

describe("B56 exit 0 with an error object", () => {
  it("B56 is that error: its code, its message (with the delegate named) and its details", () => {
    const e = errorOf(() =>
      decodeResult(
        '{"cniVersion":"1.0.0","code":11,"msg":"busy","details":"try later"}',
        "1.0.0",
        what,
      ),
    );
    expect(e).toMatchObject({ code: 11, details: "try later" });
    expect(e.message).toContain("busy");
    expect(e.message).toContain(what);
  });

  it("B56 an error object whose code is 0 (or not a positive integer) is reported as 100, never as code 0", () => {
    expect(
      errorOf(() => decodeResult('{"cniVersion":"1.0.0","code":0,"msg":"ok?"}', "1.0.0", what))
        .code,
    ).toBe(Code.InvalidResult);
    expect(
      errorOf(() => decodeResult('{"cniVersion":"1.0.0","code":-3,"msg":"x"}', "1.0.0", what)).code,
    ).toBe(Code.InvalidResult);
  });

  it("B56 an error object without cniVersion or msg is still an error with its code", () => {
    expect(errorOf(() => decodeResult('{"code":7}', "0.4.0", what)).code).toBe(7);
  });

  it("B56 a result that happens to carry a numeric `code` key next to ips or interfaces is a result", () => {
    expect(
      decodeResult(
        '{"cniVersion":"1.0.0","code":1,"ips":[{"address":"10.0.0.2/24"}]}',
        "1.0.0",
        what,
      ),
    ).toMatchObject({ code: 1 });
    expect(looksLikeCniError({ code: 1, interfaces: [] })).toBe(false);
    expect(looksLikeCniError({ code: 1, ip4: { ip: "10.0.0.2/24" } })).toBe(false);
    expect(looksLikeCniError({ code: "1", msg: "x" })).toBe(false);
    expect(looksLikeCniError({ code: 4, msg: "x" })).toBe(true);
  });
});

describe("B58 result versions", () => {
  it("B58 a result without cniVersion is read as the config's version (cni#895)", () => {
    expect(
      decodeResult('{"ips":[{"version":"4","address":"10.0.0.2/24"}]}', "0.4.0", what),
    ).toEqual({
      cniVersion: "0.4.0",
      ips: [{ version: "4", address: "10.0.0.2/24" }],
    });
    expect(decodeResult('{"ip4":{"ip":"10.0.0.2/24"}}', "0.2.0", what)).toEqual({
      cniVersion: "0.2.0",
      ip4: { ip: "10.0.0.2/24" },
    });
    expect(decodeResult('{"interfaces":[{"name":"eth0","mtu":1500}]}', "1.1.0", what)).toEqual({
      cniVersion: "1.1.0",
      interfaces: [{ name: "eth0", mtu: 1500 }],
    });
  });

  it("B58 an empty cniVersion is read as the config's version too", () => {
    expect(
      decodeResult('{"cniVersion":"","ip4":{"ip":"10.0.0.2/24"}}', "0.2.0", what).cniVersion,
    ).toBe("0.2.0");
  });

  it("B58 a 0.4.0-versioned IP without `version` decodes (libcni's 040 decoder does not require it) and converts", () => {
    const r = decodeResult('{"ips":[{"address":"fd00::2/64"}]}', "0.4.0", what);
    expect(convertResult(r, "0.4.0")).toEqual({
      cniVersion: "0.4.0",
      ips: [{ version: "6", address: "fd00::2/64" }],
    });
  });

  it("B58 a result in another supported version than the config's keeps its own and converts to the config's", () => {
    const r = decodeResult(
      '{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24","gateway":"10.0.0.1"}}',
      "1.0.0",
      what,
    );
    expect(r.cniVersion).toBe("0.2.0");
    expect(convertResult(r, "1.0.0")).toEqual({
      cniVersion: "1.0.0",
      ips: [{ address: "10.0.0.2/24", gateway: "10.0.0.1" }],
    });
  });

  it.each(["7.0.0", "1.0", "0.5.0", 1, null, true])(
    "B58 a result with unsupported cniVersion %j is 100 naming it",
    (v) => {
      const out = JSON.stringify({ cniVersion: v, ips: [{ address: "10.0.0.2/24" }] });
      expect(errorOf(() => decodeResult(out, "1.0.0", what))).toMatchObject({
        code: Code.InvalidResult,
        message: expect.stringContaining("cniVersion"),
      });
    },
  );

  it.each(ALL_VERSIONS)("B58 a minimal %s result decodes and converts to every version", (v) => {
    const out =
      v === "0.1.0" || v === "0.2.0"
        ? `{"cniVersion":"${v}","ip4":{"ip":"10.0.0.2/24"}}`
        : `{"cniVersion":"${v}","ips":[{"address":"10.0.0.2/24"}]}`;
    const r = decodeResult(out, "1.0.0", what);
    expect(r.cniVersion).toBe(v);
    for (const to of ALL_VERSIONS)
      expect(toResult(convertResult(r, to)).ips).toEqual([{ address: "10.0.0.2/24" }]);
  });
});

describe("B59 incomplete but valid results", () => {
  it("B59 a result with no interfaces, no sandbox or an out-of-range interface index still decodes, unchanged", () => {
    expect(
      decodeResult(
        '{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24","interface":7}]}',
        "1.0.0",
        what,
      ),
    ).toEqual({
      cniVersion: "1.0.0",
      ips: [{ address: "10.0.0.2/24", interface: 7 }],
    });
    expect(
      decodeResult(
        '{"cniVersion":"1.0.0","interfaces":[{"name":"eth0"}],"ips":[{"address":"10.0.0.2/24","interface":-1}]}',
        "1.0.0",
        what,
      ),
    ).toEqual({
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0" }],
      ips: [{ address: "10.0.0.2/24", interface: -1 }],
    });
    expect(decodeResult('{"cniVersion":"1.0.0"}', "1.0.0", what)).toEqual({ cniVersion: "1.0.0" });
  });

  it("B59 unknown keys a plugin adds are kept at every level", () => {
    const out =
      '{"cniVersion":"1.1.0","vendor":{"a":1},"interfaces":[{"name":"eth0","x":1}],"ips":[{"address":"10.0.0.2/24","y":2}],"routes":[{"dst":"0.0.0.0/0","z":3}]}';
    expect(decodeResult(out, "1.1.0", what)).toEqual(JSON.parse(out));
  });
});
