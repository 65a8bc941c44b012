/**
 * The one escape for text from outside on its way to a person (src/cni/quote.ts, B98), on
 * generated input (fast-check, fixed seed): no control, separator or bidi character survives raw,
 * printable text of any script passes unchanged, and a quoted value is still JSON for its value.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeLines, escapeText, quote } from "../../../src/cni/quote";
import { propertyRuns } from "../../support/property";

const SEED = 20261128;

/** Written out here, not taken from the module: the classes the requirement names. */
function isDangerous(code: number): boolean {
  return (
    code <= 0x1f || // the controls below space
    (code >= 0x7f && code <= 0x9f) || // DEL, U+0080–U+009F (U+009B is CSI, U+009D is OSC)
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x061c ||
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

const DANGEROUS = Array.from({ length: 0x206a }, (_, code) => code).filter(isDangerous);

function dangerousIn(text: string): number[] {
  return [...text].map((c) => c.codePointAt(0)!).filter(isDangerous);
}

/** Any text, weighted towards the dangerous characters so that every run meets several. */
const anyText = fc
  .array(
    fc.oneof(
      fc.constantFrom(...DANGEROUS.map((code) => String.fromCharCode(code))),
      fc.string({ unit: "binary", maxLength: 6 }),
      fc.constantFrom("é", "日本", "→", "\\", '"', "\\u009b", "ß", "🙂"),
    ),
    { maxLength: 30 },
  )
  .map((parts) => parts.join(""));

/** Printable text of any script: what a NAD's name or a message holds when nobody is hostile. */
const printable = fc
  .string({ unit: "binary", maxLength: 40 })
  .map((s) => [...s].filter((c) => !isDangerous(c.codePointAt(0)!)).join(""));

describe("escapeText, escapeLines and quote (B98)", () => {
  it("B98 no control, U+2028/2029 or bidi control survives raw in generated text", () => {
    let met = 0;
    fc.assert(
      fc.property(anyText, (text) => {
        met += dangerousIn(text).length;
        expect(dangerousIn(escapeText(text))).toEqual([]);
        expect(dangerousIn(quote(text))).toEqual([]);
        const lines = escapeLines(text);
        expect(dangerousIn(lines).filter((code) => code !== 0x0a)).toEqual([]);
        expect(lines.split("\n")).toHaveLength(text.split("\n").length);
      }),
      propertyRuns({ seed: SEED, numRuns: 500 }),
    );
    expect(met).toBeGreaterThan(500);
  });

  it("B98 printable text of any script (é, 日本, emoji) is unchanged; quote is JSON.stringify on it", () => {
    fc.assert(
      fc.property(printable, (text) => {
        expect(escapeText(text)).toBe(text);
        expect(escapeLines(text)).toBe(text);
        expect(quote(text)).toBe(JSON.stringify(text));
      }),
      propertyRuns({ seed: SEED + 1, numRuns: 500 }),
    );
    expect(escapeText("café 日本 → ok")).toBe("café 日本 → ok");
  });

  it("B98 a quoted value is JSON that reads back as the value, every dangerous one as \\u00XX", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(JSON.parse(quote(text))).toBe(text);
      }),
      propertyRuns({ seed: SEED + 2, numRuns: 500 }),
    );
    for (const code of DANGEROUS) {
      const hex = code.toString(16).padStart(4, "0");
      expect(escapeText(`a${String.fromCharCode(code)}b`)).toBe(`a\\u${hex}b`);
    }
    expect(quote("br\u009b1A\u009b2K\u202eidge")).toBe('"br\\u009b1A\\u009b2K\\u202eidge"');
    expect(quote({ type: "x\u009dy" })).toBe('{"type":"x\\u009dy"}');
  });
});
