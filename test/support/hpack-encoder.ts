/**
 * An HPACK encoder for generated tests (M10): every representation RFC 7541 has (indexed, literal
 * with incremental indexing, without indexing, never indexed; names indexed or literal; Huffman
 * or plain strings; table size updates), chosen per field by the caller, with its own copy of
 * the dynamic table. The client's decoder must read back whatever it writes.
 */
import { huffmanCodes } from "../../src/kubelet/hpack";

export type Representation = "indexed" | "incremental" | "without" | "never";

export interface EncodedField {
  name: string;
  value: string;
  as: Representation;
  huffmanName: boolean;
  huffmanValue: boolean;
  /** Refer to the name by its table index when one matches. */
  indexName: boolean;
}

/** The first names of RFC 7541's static table (index 1 first). */
const STATIC_NAMES = ":authority :method :method :path :path :scheme :scheme :status".split(" ");

/** Each literal's first byte and the bits of its name index (RFC 7541 section 6.2). */
const PREFIXES = { incremental: [6, 0x40], without: [4, 0x00], never: [4, 0x10] } as const;

function integer(value: number, prefixBits: number, first: number): number[] {
  const max = 2 ** prefixBits - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  let rest = value - max;
  for (; rest >= 128; rest = Math.floor(rest / 128)) out.push((rest % 128) | 0x80);
  return [...out, rest];
}

function huffman(bytes: Uint8Array): number[] {
  const codes = huffmanCodes();
  const out: number[] = [];
  let acc = 0n;
  let bits = 0;
  for (const b of bytes) {
    const { code, bits: n } = codes[b]!;
    acc = (acc << BigInt(n)) | BigInt(code);
    bits += n;
    while (bits >= 8) {
      bits -= 8;
      out.push(Number((acc >> BigInt(bits)) & 0xffn));
    }
    acc &= (1n << BigInt(bits)) - 1n;
  }
  // Padding: the most significant bits of EOS, all ones.
  const pad = BigInt(8 - bits);
  if (bits > 0) out.push(Number(((acc << pad) | ((1n << pad) - 1n)) & 0xffn));
  return out;
}

function string(text: string, useHuffman: boolean): number[] {
  const bytes = Buffer.from(text, "latin1");
  if (!useHuffman) return [...integer(bytes.length, 7, 0), ...bytes];
  const coded = huffman(bytes);
  return [...integer(coded.length, 7, 0x80), ...coded];
}

export class TestHpackEncoder {
  /** Newest first, as the decoder's. */
  private table: [string, string][] = [];
  private size = 0;
  private max = 4096;

  /** A block: an optional table size update first, then each field as it asks. */
  encode(fields: readonly EncodedField[], sizeUpdate?: number): Uint8Array {
    const out: number[] = [];
    if (sizeUpdate !== undefined) {
      out.push(...integer(sizeUpdate, 5, 0x20));
      this.max = sizeUpdate;
      this.evict();
    }
    for (const f of fields) out.push(...this.field(f));
    return Uint8Array.from(out);
  }

  private field(encoded: EncodedField): number[] {
    const exact = this.table.findIndex(([n, v]) => n === encoded.name && v === encoded.value);
    if (encoded.as === "indexed" && exact >= 0) return integer(62 + exact, 7, 0x80);
    const as = encoded.as === "indexed" ? "incremental" : encoded.as;
    const [prefix, first] = PREFIXES[as];
    const nameIndex = encoded.indexName ? this.nameIndex(encoded.name) : 0;
    const head = integer(nameIndex, prefix, first);
    const name = nameIndex ? [] : string(encoded.name, encoded.huffmanName);
    if (as === "incremental") this.insert(encoded.name, encoded.value);
    return [...head, ...name, ...string(encoded.value, encoded.huffmanValue)];
  }

  private nameIndex(name: string): number {
    const s = STATIC_NAMES.indexOf(name);
    if (s >= 0) return s + 1;
    const d = this.table.findIndex(([n]) => n === name);
    return d >= 0 ? 62 + d : 0;
  }

  private insert(name: string, value: string): void {
    this.table.unshift([name, value]);
    this.size += name.length + value.length + 32;
    this.evict();
  }

  private evict(): void {
    while (this.size > this.max && this.table.length) {
      const [n, v] = this.table.pop()!;
      this.size -= n.length + v.length + 32;
    }
  }
}
