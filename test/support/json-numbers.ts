/**
 * JSON number literals, as the grammar allows them (RFC 8259 §6): a sign, an integer part without
 * leading zeros, a fraction, an exponent in either case with or without its sign. Integers up to
 * 31 digits and exponents up to 3 (beyond float64 either way) are included (B92).
 */
import fc from "fast-check";

const digits = (minLength: number, maxLength: number) =>
  fc.array(fc.integer({ min: 0, max: 9 }), { minLength, maxLength }).map((d) => d.join(""));

const whole = fc.oneof(
  fc.constant("0"),
  fc.tuple(fc.integer({ min: 1, max: 9 }), digits(0, 30)).map(([head, tail]) => `${head}${tail}`),
);
const exponent = fc
  .tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), digits(1, 3))
  .map((parts) => parts.join(""));

export const numberLiteral = fc
  .tuple(fc.boolean(), whole, fc.option(digits(1, 20)), fc.option(exponent))
  .map(([negative, int, fraction, exp]) => {
    const sign = negative ? "-" : "";
    return `${sign}${int}${fraction === null ? "" : `.${fraction}`}${exp ?? ""}`;
  });
