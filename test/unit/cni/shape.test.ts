/**
 * The shape checks behind every config and result Plexus parses (C2.3: a bad value is named with
 * its key path): bounds, literals, unions tried in isolation, objects that keep unnamed keys.
 */
import { describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import { parseWithSchema } from "../../../src/cni/schema-error";
import * as z from "../../../src/cni/shape";

const conf = z.object({
  name: z.string({ nonEmpty: true }),
  timeout: z.optional(z.number({ positive: true, max: 60 })),
  count: z.optional(z.number({ int: true, nonnegative: true })),
  flag: z.optional(z.literal(true, false, "true", "false")),
  names: z.optional(z.union([z.string(), z.array(z.string())], "a string or a list of strings")),
  caps: z.optional(z.record(z.boolean())),
  list: z.optional(z.array(z.unknown(), { min: 1, message: "needs a plugin" })),
  gone: z.optional(z.nullable(z.array(z.string()))),
});

const problems = (value: unknown) => {
  const r = z.check(conf, value);
  return r.ok ? [] : r.problems.map((p) => `${p.path.join(".")}: ${p.message}`);
};

describe("C2.3 shapes", () => {
  it("C2.3 a valid object comes back as a copy with its unnamed keys kept", () => {
    const input = {
      name: "n",
      timeout: 1.5,
      count: 0,
      flag: "true",
      names: ["a"],
      caps: { x: true },
      own: { deep: 1 },
    };
    const r = z.check(conf, input);
    expect(r).toEqual({ ok: true, value: input });
    if (r.ok) expect(r.value).not.toBe(input);
  });

  it("C2.3 each bound and type is a problem at its key path", () => {
    expect(
      problems({
        name: "",
        timeout: 0,
        count: 1.5,
        flag: "yes",
        names: 3,
        caps: { x: 1 },
        list: [],
        gone: null,
      }),
    ).toEqual([
      "name: expected a non-empty string",
      "timeout: expected a number greater than 0",
      "count: expected a whole number",
      'flag: expected true or false or "true" or "false"',
      "names: expected a string or a list of strings",
      "caps.x: expected a boolean",
      "list: needs a plugin",
    ]);
    expect(problems({ name: "n", timeout: 61, count: -1 })).toEqual([
      "timeout: expected a number of at most 60",
      "count: expected a number of 0 or more",
    ]);
    expect(problems({ timeout: "1" })).toEqual([
      "name: expected a non-empty string",
      "timeout: expected a number",
    ]);
    expect(problems([])).toEqual([": expected an object"]);
  });

  it("C2.3 a union's failed branch leaves no problem behind when another branch fits", () => {
    expect(problems({ name: "n", names: "a" })).toEqual([]);
    expect(problems({ name: "n", names: ["a", 1] })).toEqual([
      "names: expected a string or a list of strings",
    ]);
  });

  it("C2.3 parseWithSchema names the key, the problem and the value found, with the code asked for", () => {
    expect(() =>
      parseWithSchema(conf, { name: "n", caps: { x: "yes" } }, "stdin config", Code.InvalidResult),
    ).toThrow(
      expect.objectContaining({
        code: Code.InvalidResult,
        message: 'stdin config is invalid: key "caps.x": expected a boolean (found "yes")',
      }),
    );
  });
});
