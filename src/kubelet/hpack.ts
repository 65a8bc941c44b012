/**
 * HPACK (RFC 7541), as much of it as a client of kubelet's pod-resources API needs: decoding any
 * header block a server sends (indexed fields, literals with or without indexing, the dynamic
 * table and its size updates, Huffman-coded strings), and encoding a request's few fields as
 * literals without indexing and without Huffman coding, which every decoder must accept.
 */
import { type PeerLimit, PeerLimits } from "./peer-limits";

/** RFC 7541 Appendix A: the static table, index 1 first. */
const STATIC: readonly (readonly [string, string])[] = (
  ":authority|:method GET|:method POST|:path /|:path /index.html|:scheme http|:scheme https|" +
  ":status 200|:status 204|:status 206|:status 304|:status 400|:status 404|:status 500|" +
  "accept-charset|accept-encoding gzip, deflate|accept-language|accept-ranges|accept|" +
  "access-control-allow-origin|age|allow|authorization|cache-control|content-disposition|" +
  "content-encoding|content-language|content-length|content-location|content-range|" +
  "content-type|cookie|date|etag|expect|expires|from|host|if-match|if-modified-since|" +
  "if-none-match|if-range|if-unmodified-since|last-modified|link|location|max-forwards|" +
  "proxy-authenticate|proxy-authorization|range|referer|refresh|retry-after|server|set-cookie|" +
  "strict-transport-security|transfer-encoding|user-agent|vary|via|www-authenticate"
)
  .split("|")
  .map((e) => {
    const space = e.indexOf(" ");
    return space < 0 ? ([e, ""] as const) : ([e.slice(0, space), e.slice(space + 1)] as const);
  });

/**
 * RFC 7541 Appendix B: the Huffman code's length in bits for symbols 0–255, one letter each
 * (`a` = 5 bits … `z` = 30). The code is canonical (codes of one length are consecutive, in
 * symbol order, shorter lengths first), so the codes themselves follow from the lengths.
 */
const HUFFMAN_LENGTHS =
  "isxxxxxxxtzxxzxxxxxxxxzxxxxxxxxxbffhibdgffdgdbbbaaabbbbbbbcdkbhfibccccccccccccccccccccccdcdioijbkabababbbaccbbbabcbaabccccckgjixprpprrrsrssssststtrstssssqrsrsstrqprrssqsrrtqrssqqrqsrssprrrsrrsvvporsruvvvwwvtuoqvwwvwtqqvvxwwwptpqrqqsrruuttvsvwvvwwwwwxwwwwwv";

const EOS = 256;

/** Each symbol's code (0–256, EOS last), from the lengths: canonical, shorter lengths first. */
export function huffmanCodes(): { code: number; bits: number }[] {
  const lengths = [...HUFFMAN_LENGTHS].map((c) => c.charCodeAt(0) - 97 + 5);
  lengths.push(30); // EOS: the longest code, all ones
  const bySize = lengths
    .map((len, symbol) => ({ len, symbol }))
    .sort((a, b) => a.len - b.len || a.symbol - b.symbol);
  const codes: { code: number; bits: number }[] = [];
  let code = 0;
  let prev = bySize[0]!.len;
  bySize.forEach(({ len, symbol }, i) => {
    if (i > 0) code = (code + 1) * 2 ** (len - prev);
    prev = len;
    codes[symbol] = { code, bits: len };
  });
  return codes;
}

/**
 * The decoder as a state machine read 4 bits at a time (nghttp2's approach): a state is a node
 * of the code tree; `next[state * 16 + nibble]` holds the next state, the symbol completed on the
 * way (no code is shorter than 5 bits, so at most one) and whether EOS was met. A string costs
 * one lookup per half byte, whatever its codes.
 */
interface HuffmanMachine {
  next: Uint32Array;
  /** States where a string may end: the padding so far is fewer than 8 one-bits. */
  accepting: Uint8Array;
}
const EMITS = 1 << 16;
const FAILS = 1 << 17;
let machine: HuffmanMachine | undefined;

/** The code tree: `children[node * 2 + bit]`, a node id (> 0), or a leaf as -(symbol + 1). */
function huffmanTree(): { children: Int32Array; nodes: number } {
  const children = new Int32Array(2 * 256);
  let nodes = 1;
  huffmanCodes().forEach(({ code, bits }, symbol) => {
    let node = 0;
    for (let i = bits - 1; i > 0; i--) {
      const slot = node * 2 + (Math.floor(code / 2 ** i) & 1);
      if (children[slot] === 0) children[slot] = nodes++;
      node = children[slot]!;
    }
    children[node * 2 + (code & 1)] = -(symbol + 1);
  });
  return { children, nodes };
}

function huffmanMachine(): HuffmanMachine {
  if (machine) return machine;
  const { children, nodes } = huffmanTree();
  const next = new Uint32Array(nodes * 16);
  for (let state = 0; state < nodes; state++)
    for (let nibble = 0; nibble < 16; nibble++) {
      next[state * 16 + nibble] = step(children, state, nibble);
    }
  const accepting = new Uint8Array(nodes);
  // The root and the all-ones path below it, up to 7 bits deep.
  for (let depth = 0, node = 0; depth < 8; depth++) {
    accepting[node] = 1;
    node = children[node * 2 + 1]!;
  }
  machine = { next, accepting };
  return machine;
}

/** From `state`, the 4 bits of `nibble`: the next state, with the symbol completed, or EOS met. */
function step(children: Int32Array, state: number, nibble: number): number {
  let node = state;
  let out = 0;
  for (let bit = 3; bit >= 0; bit--) {
    const child = children[node * 2 + ((nibble >> bit) & 1)]!;
    if (child > 0) node = child;
    else if (-child - 1 === EOS) return FAILS;
    else {
      out = EMITS | ((-child - 1) << 8);
      node = 0;
    }
  }
  return out | node;
}

/** A header block HPACK cannot read, or one past a limit (`limit` names which). */
export class HpackError extends Error {
  override name = "HpackError";
  constructor(
    message: string,
    readonly limit?: PeerLimit,
  ) {
    super(message);
  }
}

/** A Huffman-coded string, refused once it decodes past `maxBytes`. */
function huffmanDecode(bytes: Uint8Array, maxBytes: number): string {
  const { next, accepting } = huffmanMachine();
  // Every code is at least 5 bits: the string is no longer than this.
  const out = new Uint8Array(Math.floor((bytes.length * 8) / 5));
  let n = 0;
  let state = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    const high = next[(state << 4) | (byte >> 4)]!;
    if (high & EMITS) out[n++] = high >> 8;
    const low = next[((high & 0xff) << 4) | (byte & 15)]!;
    if (low & EMITS) out[n++] = low >> 8;
    if ((high | low) & FAILS) throw new HpackError("EOS inside a Huffman-coded string");
    state = low & 0xff;
  }
  // What is left must be padding: fewer than 8 bits, all ones (the EOS code's prefix).
  if (!accepting[state]) throw new HpackError("invalid Huffman padding");
  if (n > maxBytes) throw tooLong(n);
  return Buffer.from(out.buffer, 0, n).toString("latin1");
}

/** Reads HPACK's prefixed integers and strings from one header block. */
class Reader {
  pos = 0;
  constructor(private readonly bytes: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.bytes.length;
  }

  peek(): number {
    return this.bytes[this.pos] ?? 0;
  }

  integer(prefixBits: number): number {
    const max = 2 ** prefixBits - 1;
    let value = this.byte() & max;
    if (value < max) return value;
    for (let shift = 0; ; shift += 7) {
      const b = this.byte();
      value += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return value;
      if (shift > 28) throw new HpackError("integer too large");
    }
  }

  /** A string literal, refused once it is longer than `maxBytes` (decoded). */
  string(maxBytes: number): string {
    const huffman = (this.peek() & 0x80) !== 0;
    const length = this.integer(7);
    if (this.pos + length > this.bytes.length)
      throw new HpackError("string longer than the header block");
    const raw = this.bytes.subarray(this.pos, this.pos + length);
    this.pos += length;
    if (huffman) return huffmanDecode(raw, maxBytes);
    if (length > maxBytes) throw tooLong(length);
    return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("latin1");
  }

  private byte(): number {
    if (this.done) throw new HpackError("header block cut short");
    return this.bytes[this.pos++]!;
  }
}

const LIST = "maxHeaderListBytes";
const tooLong = (bytes: number) => new HpackError(`a header of ${bytes} bytes: past the cap`, LIST);

/** The fields decoded so far, sized as RFC 7541 sizes them (name + value + 32) against the cap. */
class HeaderList {
  readonly fields: [string, string][] = [];
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}

  /** What a field's name and value may still take. */
  get room(): number {
    return this.maxBytes - this.bytes - 32;
  }

  add(field: [string, string]): void {
    this.bytes += field[0].length + field[1].length + 32;
    if (this.bytes > this.maxBytes)
      throw new HpackError(
        `a header list over the ${this.maxBytes} bytes allowed (${this.fields.length} fields)`,
        LIST,
      );
    this.fields.push(field);
  }
}

type HpackLimit = "maxHeaderBlockBytes" | "maxHeaderListBytes" | "maxDynamicTableBytes";
/** The peer limits a decoder holds its blocks to (tests give smaller ones). */
export type HpackLimits = Record<HpackLimit, number>;

/**
 * One connection's decoder: its dynamic table lives as long as the connection. Every block is
 * held to the peer limits (./peer-limits): its length, its decoded size, the table's size.
 */
export class HpackDecoder {
  private table: [string, string][] = [];
  private size = 0;
  private readonly limits: HpackLimits;
  private maxSize: number;

  constructor(limits: Partial<HpackLimits> = {}) {
    this.limits = { ...PeerLimits, ...limits };
    this.maxSize = this.limits.maxDynamicTableBytes;
  }

  /** The bytes the dynamic table holds, as RFC 7541 counts them. */
  get tableBytes(): number {
    return this.size;
  }

  decode(block: Uint8Array): [string, string][] {
    const max = this.limits.maxHeaderBlockBytes;
    const why = `a header block over the ${max} bytes allowed`;
    if (block.length > max) throw new HpackError(why, "maxHeaderBlockBytes");
    const r = new Reader(block);
    const list = new HeaderList(this.limits.maxHeaderListBytes);
    while (!r.done) {
      const b = r.peek();
      if (b & 0x80) list.add(this.entry(r.integer(7)));
      else if (b & 0x40) {
        const field = this.literal(r, 6, list.room);
        this.insert(field);
        list.add(field);
      } else if (b & 0x20) {
        // RFC 7541 4.2: a size update comes first in a block, before any field.
        if (list.fields.length) throw new HpackError("a table size update after a header field");
        this.resize(r.integer(5));
      } else list.add(this.literal(r, 4, list.room));
    }
    return list.fields;
  }

  private literal(reader: Reader, prefixBits: number, room: number): [string, string] {
    const index = reader.integer(prefixBits);
    const name = index === 0 ? reader.string(room) : this.entry(index)[0];
    return [name, reader.string(room - name.length)];
  }

  private entry(index: number): [string, string] {
    const found =
      index <= STATIC.length ? STATIC[index - 1] : this.table[index - STATIC.length - 1];
    if (!found || index === 0) throw new HpackError(`no header table entry ${index}`);
    return [found[0], found[1]];
  }

  private insert(field: [string, string]): void {
    this.table.unshift(field);
    this.size += field[0].length + field[1].length + 32;
    this.evict();
  }

  private resize(max: number): void {
    const allowed = this.limits.maxDynamicTableBytes;
    const why = `table size ${max} over the ${allowed} allowed`;
    if (max > allowed) throw new HpackError(why, "maxDynamicTableBytes");
    this.maxSize = max;
    this.evict();
  }

  private evict(): void {
    while (this.size > this.maxSize) {
      const last = this.table.pop();
      if (!last) break;
      this.size -= last[0].length + last[1].length + 32;
    }
  }
}

function integer(value: number, prefixBits: number, firstByte: number): number[] {
  const max = 2 ** prefixBits - 1;
  if (value < max) return [firstByte | value];
  const out = [firstByte | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

/** A header block of literal fields without indexing, names and values as plain octets. */
export function encodeHeaders(fields: readonly (readonly [string, string])[]): Uint8Array {
  const out: number[] = [];
  for (const [name, value] of fields) {
    out.push(0x00);
    for (const s of [name, value]) {
      const bytes = Buffer.from(s, "latin1");
      out.push(...integer(bytes.length, 7, 0x00), ...bytes);
    }
  }
  return Uint8Array.from(out);
}
