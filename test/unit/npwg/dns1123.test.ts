import { describe, expect, it } from "vitest";
import {
  dns1123LabelProblem,
  MAX_LABEL_LENGTH,
  validateDns1123Label,
} from "../../../src/npwg/dns1123";

describe("N3.3 DNS-1123 labels", () => {
  it.each(["a", "net-a", "a1", "0", "1-2", "a--b", "x".repeat(63)])(
    "N3.3 %j is a valid label",
    (v) => {
      expect(dns1123LabelProblem(v)).toBeUndefined();
      expect(validateDns1123Label(v, "name")).toBe(v);
    },
  );

  it.each([
    ["", "empty"],
    ["A", "lower-case"],
    ["-a", "start and end"],
    ["a-", "start and end"],
    [".", "lower-case"],
    ["..", "lower-case"],
    ["%2e", "lower-case"],
    ["a.b", "lower-case"],
    ["a_b", "lower-case"],
    ["a b", "lower-case"],
    ["ä", "lower-case"],
    ["x".repeat(64), "64 characters long, more than 63"],
  ])("N3.3 B20 %j is refused with 7 and says why (%s)", (v, why) => {
    expect(dns1123LabelProblem(v)).toContain(why);
    expect(() => validateDns1123Label(v, "NetworkAttachmentDefinition name")).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringContaining(
          `NetworkAttachmentDefinition name ${JSON.stringify(v)} is not a valid DNS-1123 label`,
        ),
      }),
    );
  });

  it("N3.3 the limit is 63 characters", () => {
    expect(MAX_LABEL_LENGTH).toBe(63);
  });

  it("B20 a huge value is cut in the message, with its length", () => {
    const huge = "A".repeat(100_000);
    let message = "";
    try {
      validateDns1123Label(huge, "pod namespace");
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("(100000 characters)");
    expect(message.length).toBeLessThan(400);
  });

  it("B20 a value that is not a string (untyped JSON) is a problem, not a crash", () => {
    expect(dns1123LabelProblem(5 as unknown as string)).toContain("not a string");
    expect(() => validateDns1123Label(null as unknown as string, "name")).toThrow(
      expect.objectContaining({ code: 7 }),
    );
  });
});
