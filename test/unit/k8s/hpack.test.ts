/**
 * HPACK as the pod-resources client reads kubelet's answers (M10): RFC 7541's own examples
 * (Appendix C: integers, literals, the dynamic table across blocks, Huffman-coded strings), and
 * what the client encodes read back by Node's HTTP/2 decoder in h2c.test.ts.
 */
import { describe, expect, it } from "vitest";
import { encodeHeaders, HpackDecoder, HpackError } from "../../../src/k8s/hpack";

const hex = (s: string) => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ""), "hex"));

describe("M10 HPACK decoding: RFC 7541 Appendix C", () => {
  it("M10 C.2: a literal with indexing, one without, one never indexed, an indexed field", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"))).toEqual([
      ["custom-key", "custom-header"],
    ]);
    expect(d.decode(hex("040c 2f73 616d 706c 652f 7061 7468"))).toEqual([[":path", "/sample/path"]]);
    expect(d.decode(hex("1008 7061 7373 776f 7264 0673 6563 7265 74"))).toEqual([["password", "secret"]]);
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
    expect(() => new HpackDecoder().decode(hex("0085 ffff"))).toThrow(HpackError); // string past the end
    expect(() => new HpackDecoder().decode(hex("0081 00 00"))).toThrow(HpackError); // Huffman padding of zeros
    expect(() => new HpackDecoder().decode(hex("3fe2 1f"))).toThrow(HpackError); // table bigger than 4096
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
