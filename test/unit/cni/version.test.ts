import { describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import {
  ALL_VERSIONS,
  compareVersions,
  CURRENT_VERSION,
  isSupportedVersion,
  requireSupportedVersion,
  versionAtLeast,
  versionInfo,
} from "../../../src/cni/version";

describe("C2.7 VERSION", () => {
  it("C2.7 versionInfo lists all seven versions, 0.1.0 through 1.1.0, oldest first", () => {
    expect(versionInfo()).toEqual({
      cniVersion: "1.1.0",
      supportedVersions: ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"],
    });
    expect(CURRENT_VERSION).toBe("1.1.0");
  });

  it("C2.7 versionInfo answers in the version it is asked in, and returns a fresh list", () => {
    const a = versionInfo("0.4.0");
    expect(a.cniVersion).toBe("0.4.0");
    a.supportedVersions.pop();
    expect(versionInfo().supportedVersions).toHaveLength(7);
  });
});

describe("B13 cniVersion checks", () => {
  it.each([undefined, "", "9.9.9", "1.0", "1", "v1.0.0", " 1.0.0", "1.0.0 ", 1, null, ["1.0.0"]])(
    "B13 %j is code 1 listing the supported versions",
    (v) => {
      expect(isSupportedVersion(v)).toBe(false);
      expect(() => requireSupportedVersion(v, "stdin config")).toThrow(
        expect.objectContaining({
          code: Code.IncompatibleVersion,
          message: expect.stringContaining("0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0"),
        }),
      );
    },
  );

  it("B13 a missing version is reported as missing, naming where", () => {
    expect(() => requireSupportedVersion(undefined, "NAD ns/a")).toThrow(
      expect.objectContaining({ message: expect.stringMatching(/^NAD ns\/a: cniVersion missing/) }),
    );
  });

  it.each(ALL_VERSIONS)("C2.7 %s is accepted as is", (v) => {
    expect(requireSupportedVersion(v, "x")).toBe(v);
  });
});

describe("version ordering", () => {
  it("compares numerically, not as text", () => {
    expect(compareVersions("0.10.0", "0.4.0")).toBeGreaterThan(0);
    expect(compareVersions("0.3.1", "0.4.0")).toBeLessThan(0);
    expect(compareVersions("1.0", "1.0.0")).toBe(0);
    expect(versionAtLeast("0.4.0", "0.4.0")).toBe(true);
    expect(versionAtLeast("0.3.1", "0.4.0")).toBe(false);
    expect(versionAtLeast("1.1.0", "0.4.0")).toBe(true);
  });

  it("ALL_VERSIONS is sorted oldest first", () => {
    const sorted = [...ALL_VERSIONS].sort(compareVersions);
    expect(sorted).toEqual([...ALL_VERSIONS]);
  });
});
