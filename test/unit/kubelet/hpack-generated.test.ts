/**
 * HPACK from generated input (M10), fixed seeds: header lists written in every representation
 * by a test encoder read back as they were written, block after block on one table; arbitrary
 * and mutated bytes end in a decoded list within the caps or an HpackError, never another
 * error, a list past the cap or a table past its size.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HpackDecoder, HpackError } from "../../../src/kubelet/hpack";
import { PeerLimits } from "../../../src/kubelet/peer-limits";
import * as encoding from "../../support/hpack-encoder";
import { propertyRuns } from "../../support/property";

type EncodedField = encoding.EncodedField;
type Representation = encoding.Representation;
const { TestHpackEncoder } = encoding;

const SEED = 20261126;
const octet = fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c));
const latin1 = fc.string({ unit: octet, maxLength: 60 });
const name = fc.oneof(
  fc.constantFrom(":status", ":path", "content-type", "grpc-status", "grpc-message"),
  fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/),
);
const field: fc.Arbitrary<EncodedField> = fc.record({
  name,
  value: latin1,
  as: fc.constantFrom<Representation>("indexed", "incremental", "without", "never"),
  huffmanName: fc.boolean(),
  huffmanValue: fc.boolean(),
  indexName: fc.boolean(),
});
const block = fc.record({
  fields: fc.array(field, { maxLength: 12 }),
  sizeUpdate: fc.option(fc.integer({ min: 0, max: 4096 }), { nil: undefined }),
});

/** RFC 7541's size of a header list. */
const fieldBytes = ([k, v]: [string, string]) => k.length + v.length + 32;
const listBytes = (fields: [string, string][]) => fields.reduce((n, f) => n + fieldBytes(f), 0);

/** Decodes, and holds the outcome to the contract: fields within the cap, or an HpackError. */
function decodeWithin(
  decoder: HpackDecoder,
  bytes: Uint8Array,
  maxList = PeerLimits.maxHeaderListBytes,
) {
  try {
    const fields = decoder.decode(bytes);
    expect(listBytes(fields)).toBeLessThanOrEqual(maxList);
  } catch (err) {
    expect(err).toBeInstanceOf(HpackError);
  }
  expect(decoder.tableBytes).toBeLessThanOrEqual(PeerLimits.maxDynamicTableBytes);
}

describe("M10 HPACK from generated input", () => {
  it("M10 encode → decode: every representation, Huffman or not, one table across blocks", () => {
    fc.assert(
      fc.property(fc.array(block, { minLength: 1, maxLength: 6 }), (blocks) => {
        const encoder = new TestHpackEncoder();
        const decoder = new HpackDecoder();
        for (const b of blocks) {
          const bytes = encoder.encode(b.fields, b.sizeUpdate);
          expect(decoder.decode(bytes)).toEqual(b.fields.map((f) => [f.name, f.value]));
        }
      }),
      propertyRuns({ seed: SEED, numRuns: 300 }),
    );
  });

  it("M10 arbitrary bytes: fields within the cap or an HpackError, the table within size", () => {
    const blocks = fc.array(fc.uint8Array({ maxLength: 400 }), { minLength: 1, maxLength: 5 });
    fc.assert(
      fc.property(blocks, (blocks) => {
        const d = new HpackDecoder();
        for (const bytes of blocks) decodeWithin(d, bytes);
      }),
      propertyRuns({ seed: SEED, numRuns: 500 }),
    );
  });

  it("M10 valid blocks with bytes changed: the same contract, deeper in the decoder", () => {
    const change = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }));
    const mutation = fc.array(change, { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(block, mutation, (b, changes) => {
        const bytes = new TestHpackEncoder().encode(b.fields, b.sizeUpdate);
        if (bytes.length === 0) return;
        for (const [at, value] of changes) bytes[at % bytes.length] = value;
        decodeWithin(new HpackDecoder(), bytes);
      }),
      propertyRuns({ seed: SEED, numRuns: 500 }),
    );
  });

  it("M10 a small header list cap: a list past it is refused naming the limit", () => {
    fc.assert(
      fc.property(block, (b) => {
        const d = new HpackDecoder({ maxHeaderListBytes: 200 });
        const bytes = new TestHpackEncoder().encode(b.fields, b.sizeUpdate);
        const wanted = b.fields.map((f): [string, string] => [f.name, f.value]);
        if (listBytes(wanted) <= 200) return void expect(d.decode(bytes)).toEqual(wanted);
        const limit = expect.objectContaining({ limit: "maxHeaderListBytes" });
        expect(() => d.decode(bytes)).toThrow(limit);
      }),
      propertyRuns({ seed: SEED, numRuns: 300 }),
    );
  });
});
