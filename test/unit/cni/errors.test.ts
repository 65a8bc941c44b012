import { describe, expect, it } from "vitest";
import {
  AggregateCniError,
  asCniError,
  CniError,
  Code,
  failIfAny,
  isCniError,
  oneError,
} from "../../../src/cni/errors";

describe("C2.3 error codes", () => {
  it("C2.3 the well-known codes are the spec's numbers", () => {
    expect(Code).toMatchObject({
      IncompatibleVersion: 1,
      UnsupportedField: 2,
      UnknownContainer: 3,
      InvalidEnv: 4,
      IoFailure: 5,
      Decoding: 6,
      InvalidNetworkConfig: 7,
      TryAgainLater: 11,
      PluginNotAvailable: 50,
      PluginLimited: 51,
    });
  });

  it("C2.3 every Plexus-specific code is 100 or above and codes are distinct", () => {
    const reserved = new Set([1, 2, 3, 4, 5, 6, 7, 11, 50, 51]);
    const values = Object.values(Code);
    expect(new Set(values).size).toBe(values.length);
    for (const c of values) if (!reserved.has(c)) expect(c).toBeGreaterThanOrEqual(100);
  });

  it("C2.2 toJSON is the CNI error object; empty details are left out", () => {
    expect(new CniError(7, "bad", "why").toJSON("1.0.0")).toEqual({
      cniVersion: "1.0.0",
      code: 7,
      msg: "bad",
      details: "why",
    });
    expect(JSON.stringify(new CniError(4, "bad").toJSON("0.4.0"))).toBe(
      '{"cniVersion":"0.4.0","code":4,"msg":"bad"}',
    );
  });

  it("C2.3 withContext keeps code and details and prefixes the message", () => {
    const e = new CniError(11, "busy", "d").withContext(
      'plugin type="bridge" name="a" failed (add)',
    );
    expect(e).toMatchObject({
      code: 11,
      details: "d",
      message: 'plugin type="bridge" name="a" failed (add): busy',
    });
  });

  it("C2.3 anything not a CniError becomes 999 keeping its message; a CniError passes through", () => {
    expect(asCniError(new TypeError("boom"))).toMatchObject({
      code: Code.Internal,
      message: "boom",
    });
    expect(asCniError("str")).toMatchObject({ code: Code.Internal, message: "str" });
    const own = new CniError(5, "x");
    expect(isCniError(own)).toBe(true);
    expect(asCniError(own)).toBe(own);
    expect(isCniError({ code: 5, message: "x" })).toBe(false);
  });

  it.each(["ENOSPC", "EDQUOT", "EIO", "EROFS", "EACCES", "EMFILE"])(
    "C2.3 B44 a file-system error (%s) on Plexus's state is an I/O error (5), never 999",
    (errno) => {
      const err = Object.assign(new Error(`${errno}: no luck, write`), {
        code: errno,
        syscall: "write",
      });
      expect(asCniError(err)).toMatchObject({
        code: Code.IoFailure,
        message: `${errno}: no luck, write`,
      });
      // Another errno is no state of the node's disks: it stays the catch-all.
      expect(asCniError(Object.assign(new Error("ENOENT: gone"), { code: "ENOENT" })).code).toBe(
        Code.Internal,
      );
    },
  );

  it("C2.9 an aggregate keeps the first failure's code, every message in order, and each error with its code and cause", () => {
    const first = new CniError(5, "a", "da", { cause: new Error("disk") });
    const e = oneError(
      [first, new CniError(7, "b"), new CniError(11, "c", "dc")],
      "DEL had 3 failures",
    );
    expect(e).toBeInstanceOf(AggregateCniError);
    expect(e).toMatchObject({ code: 5, message: "DEL had 3 failures: a; b; c", details: "da\ndc" });
    expect((e as AggregateCniError).errors.map((x) => x.code)).toEqual([5, 7, 11]);
    expect((e as AggregateCniError).errors[0]!.cause).toEqual(new Error("disk"));
    expect(new AggregateCniError([], "none").code).toBe(Code.Internal);
  });

  it("C2.9 one failure is that error itself, none is nothing; failIfAny throws it", () => {
    const only = new CniError(7, "bad");
    expect(oneError([only], "summary")).toBe(only);
    expect(oneError([], "summary")).toBeUndefined();
    expect(() => failIfAny([only], "summary")).toThrow(only);
    expect(() => failIfAny([], "summary")).not.toThrow();
  });

  it("N7.2 with a lead error (ADD's cause before its rollback failed): the lead's code, message and details, then the others", () => {
    const cause = new CniError(7, "add broke", "bridge said no");
    expect(oneError([], "rollback also failed", { lead: cause })).toBe(cause);
    const e = oneError(
      [new CniError(5, "del broke", "d2"), new CniError(11, "del 2 broke")],
      "rollback also failed",
      {
        lead: cause,
      },
    );
    expect(e).toMatchObject({
      code: 7,
      message: "add broke; rollback also failed: del broke; del 2 broke",
      details: "bridge said no",
    });
    expect((e as AggregateCniError).errors.map((x) => x.code)).toEqual([7, 5, 11]);
  });
});
