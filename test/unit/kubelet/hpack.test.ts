/**
 * HPACK as the pod-resources client reads kubelet's answers (M10): RFC 7541's own examples
 * (Appendix C: integers, literals, the dynamic table across blocks, Huffman-coded strings), and
 * what the client encodes read back by Node's HTTP/2 decoder in h2c.test.ts.
 */
import { describe, expect, it } from "vitest";
import { encodeHeaders, HpackDecoder, HpackError, huffmanCodes } from "../../../src/kubelet/hpack";

const hex = (text: string) => Uint8Array.from(Buffer.from(text.replace(/\s+/g, ""), "hex"));

describe("M10 HPACK decoding: RFC 7541 Appendix C", () => {
  it("M10 C.2: a literal with indexing, one without, one never indexed, an indexed field", () => {
    const d = new HpackDecoder();
    expect(
      d.decode(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572")),
    ).toEqual([["custom-key", "custom-header"]]);
    expect(d.decode(hex("040c 2f73 616d 706c 652f 7061 7468"))).toEqual([
      [":path", "/sample/path"],
    ]);
    expect(d.decode(hex("1008 7061 7373 776f 7264 0673 6563 7265 74"))).toEqual([
      ["password", "secret"],
    ]);
    expect(d.decode(hex("82"))).toEqual([[":method", "GET"]]);
    // The first block's field went into the dynamic table: index 62.
    expect(d.decode(hex("be"))).toEqual([["custom-key", "custom-header"]]);
  });

  it("M10 C.4: requests with Huffman-coded strings, the dynamic table carried from block to block", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"))).toEqual([
      [":method", "GET"],
      [":scheme", "http"],
      [":path", "/"],
      [":authority", "www.example.com"],
    ]);
    expect(d.decode(hex("8286 84be 5886 a8eb 1064 9cbf"))).toEqual([
      [":method", "GET"],
      [":scheme", "http"],
      [":path", "/"],
      [":authority", "www.example.com"],
      ["cache-control", "no-cache"],
    ]);
    expect(d.decode(hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"))).toEqual([
      [":method", "GET"],
      [":scheme", "https"],
      [":path", "/index.html"],
      [":authority", "www.example.com"],
      ["custom-key", "custom-value"],
    ]);
  });

  it("M10 a table size update evicts; bad input is an HpackError, never a hang or a crash", () => {
    const d = new HpackDecoder();
    d.decode(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"));
    expect(() => d.decode(hex("20 be"))).toThrow(HpackError); // size 0: entry 62 is gone
    expect(() => new HpackDecoder().decode(hex("ff"))).toThrow(HpackError); // integer cut short
    // string past the end
    expect(() => new HpackDecoder().decode(hex("0085 ffff"))).toThrow(HpackError);
    // Huffman padding of zeros
    expect(() => new HpackDecoder().decode(hex("0081 00 00"))).toThrow(HpackError);
    // table bigger than 4096
    expect(() => new HpackDecoder().decode(hex("3fe2 1f"))).toThrow(HpackError);
  });

  it("M10 the client's own fields encode as literals a decoder reads back, long values included", () => {
    const fields: [string, string][] = [
      [":path", "/v1.PodResourcesLister/Get"],
      ["grpc-timeout", "1000m"],
      ["x-long", "v".repeat(300)],
    ];
    expect(new HpackDecoder().decode(encodeHeaders(fields))).toEqual(fields);
  });
});

/** Each block of an RFC 7541 example, what it decodes to, and the dynamic table's size after it. */
type Example = [hex: string, fields: [string, string][], tableBytes: number][];

const REQUEST_1: [string, string][] = [
  [":method", "GET"],
  [":scheme", "http"],
  [":path", "/"],
  [":authority", "www.example.com"],
];
const REQUEST_2: [string, string][] = [...REQUEST_1, ["cache-control", "no-cache"]];
const REQUEST_3: [string, string][] = [
  [":method", "GET"],
  [":scheme", "https"],
  [":path", "/index.html"],
  [":authority", "www.example.com"],
  ["custom-key", "custom-value"],
];
const DATE_1 = "Mon, 21 Oct 2013 20:13:21 GMT";
const RESPONSE_1: [string, string][] = [
  [":status", "302"],
  ["cache-control", "private"],
  ["date", DATE_1],
  ["location", "https://www.example.com"],
];
const RESPONSE_2: [string, string][] = [[":status", "307"], ...RESPONSE_1.slice(1)];
const RESPONSE_3: [string, string][] = [
  [":status", "200"],
  ["cache-control", "private"],
  ["date", "Mon, 21 Oct 2013 20:13:22 GMT"],
  ["location", "https://www.example.com"],
  ["content-encoding", "gzip"],
  ["set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"],
];

const C3: Example = [
  ["8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", REQUEST_1, 57],
  ["8286 84be 5808 6e6f 2d63 6163 6865", REQUEST_2, 110],
  ["8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65", REQUEST_3, 164],
];
const C4: Example = [
  ["8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", REQUEST_1, 57],
  ["8286 84be 5886 a8eb 1064 9cbf", REQUEST_2, 110],
  ["8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf", REQUEST_3, 164],
];
const C5: Example = [
  [
    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a " +
      "3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    RESPONSE_1,
    222,
  ],
  ["4803 3330 37c1 c0bf", RESPONSE_2, 222],
  [
    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 " +
      "677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 " +
      "553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
    RESPONSE_3,
    215,
  ],
];
const C6: Example = [
  [
    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e " +
      "919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
    RESPONSE_1,
    222,
  ],
  ["4883 640e ffc1 c0bf", RESPONSE_2, 222],
  [
    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 " +
      "821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed " +
      "4ee5 b106 3d50 07",
    RESPONSE_3,
    215,
  ],
];

describe("M10 HPACK: RFC 7541 Appendix C.3–C.6, block by block, with the table's size", () => {
  it.each([
    ["C.3 requests, plain strings", C3, 4096],
    ["C.4 requests, Huffman-coded", C4, 4096],
    ["C.5 responses, plain strings, a 256-byte table", C5, 256],
    ["C.6 responses, Huffman-coded, a 256-byte table", C6, 256],
  ] as const)("M10 %s", (_title, example, table) => {
    const d = new HpackDecoder({ maxDynamicTableBytes: table });
    for (const [block, fields, size] of example) {
      expect(d.decode(hex(block))).toEqual(fields);
      expect(d.tableBytes).toBe(size);
    }
  });

  it("M10 the Huffman code is RFC 7541's: EOS the 30 one-bits, no code shorter than 5", () => {
    const codes = huffmanCodes();
    expect(codes[256]).toEqual({ code: 0x3fffffff, bits: 30 });
    expect(codes[48]).toEqual({ code: 0x0, bits: 5 }); // '0'
    expect(codes[97]).toEqual({ code: 0x3, bits: 5 }); // 'a'
    expect(codes[0]).toEqual({ code: 0x1ff8, bits: 13 });
    expect(Math.min(...codes.map((c) => c.bits))).toBe(5);
  });
});
