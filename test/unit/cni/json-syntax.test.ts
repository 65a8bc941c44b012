/**
 * Messages about a file or input that failed to parse name the position and what was expected,
 * never a piece of the content (a config symlinked to a secret file must not put the secret into
 * a pod's events). Checked on examples and on generated text, against the engine's own verdict.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeJson } from "../../../src/cni/json";
import { describeJsonSyntaxError, describeYamlError } from "../../../src/cni/json-syntax";
import { propertyRuns } from "../../support/property";

const END = "the end of the input";

const message = (text: string): string => {
  try {
    decodeJson(text, { what: "config /etc/cni/net.d/x.conf" });
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("decoded");
};

describe("JSON syntax errors: position and expectation, no content", () => {
  it("B11 B80 a secret file in place of a config: the message names line and column, not the secret", () => {
    const msg = message("s3cr3t-t0ken-value\n");
    expect(msg).toBe(
      "config /etc/cni/net.d/x.conf is not valid JSON at line 1, column 1: expected a value (an " +
        "object, array, string, number, true, false or null), found a letter",
    );
    expect(msg).not.toContain("s3cr");
  });

  it.each([
    ['{"a": 1', `at line 1, column 8: expected ',' or '}' after a property value, found ${END}`],
    [
      '{\n  "a": 1,\n  b: 2\n}',
      "at line 3, column 3: expected a property name in double quotes, found a letter",
    ],
    ['{"a" 1}', "at line 1, column 6: expected ':' after a property name, found a digit"],
    ["[1, 2", `at line 1, column 6: expected ',' or ']' after an element, found ${END}`],
    ['{"a": "x\\q"}', "at line 1, column 10: expected an escape"],
    ['{"a": 1} x', "at line 1, column 10: expected the end of the document after its value"],
    ['"abc', `at line 1, column 5: expected the closing '"' of a string, found ${END}`],
    ["[]]", "at line 1, column 3: expected the end of the document after its value, found ']'"],
  ])("%j → %s", (text, where) => {
    expect(describeJsonSyntaxError(text)).toContain(where);
  });

  it("B11 generated broken text: never a crash, never 4 characters of the input in the message", () => {
    const units = fc.constantFrom(...'abcXYZ019_-+/=:{}[]," \n\\');
    const secretish = fc.string({ unit: units, maxLength: 60 });
    fc.assert(
      fc.property(secretish, (text) => {
        let parsed = true;
        try {
          JSON.parse(text);
        } catch {
          parsed = false;
        }
        fc.pre(!parsed);
        const msg = describeJsonSyntaxError(text);
        expect(msg).toMatch(/^at line \d+, column \d+: expected .+, found /);
        for (let i = 0; i + 4 <= text.length; i++) {
          const piece = text.slice(i, i + 4);
          if (/[A-Za-z0-9]{4}/.test(piece)) expect(msg).not.toContain(piece);
        }
      }),
      propertyRuns({ seed: 20261126, numRuns: 400 }),
    );
  });

  it("deep input does not overflow the stack", () => {
    expect(describeJsonSyntaxError(`${"[".repeat(200_000)}x`)).toContain("column 200001");
  });

  it("a YAML error gives its position, and its reason only when that is plain words", () => {
    const reason = "bad indentation of a mapping entry";
    expect(describeYamlError({ reason, mark: { line: 2, column: 4 } })).toBe(
      "at line 3, column 5: bad indentation of a mapping entry",
    );
    const quoting = "unknown tag !<tag:s3cret>";
    const start = { line: 0, column: 0 };
    expect(describeYamlError({ reason: quoting, mark: start })).toBe("at line 1, column 1");
  });
});
