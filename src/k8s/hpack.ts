/**
 * HPACK (RFC 7541), as much of it as a client of kubelet's pod-resources API needs: decoding any
 * header block a server sends (indexed fields, literals with or without indexing, the dynamic
 * table and its size updates, Huffman-coded strings), and encoding a request's few fields as
 * literals without indexing and without Huffman coding, which every decoder must accept.
 */

/** RFC 7541 Appendix A: the static table, index 1 first. */
const STATIC: readonly (readonly [string, string])[] = (
  ":authority|:method GET|:method POST|:path /|:path /index.html|:scheme http|:scheme https|:status 200|" +
  ":status 204|:status 206|:status 304|:status 400|:status 404|:status 500|accept-charset|" +
  "accept-encoding gzip, deflate|accept-language|accept-ranges|accept|access-control-allow-origin|age|allow|" +
  "authorization|cache-control|content-disposition|content-encoding|content-language|content-length|" +
  "content-location|content-range|content-type|cookie|date|etag|expect|expires|from|host|if-match|" +
  "if-modified-since|if-none-match|if-range|if-unmodified-since|last-modified|link|location|max-forwards|" +
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

/** The decoding map, `length:code` → symbol, built on first use. */
let huffmanSymbols: Map<string, number> | undefined;

function huffmanMap(): Map<string, number> {
  if (huffmanSymbols) return huffmanSymbols;
  const lengths = [...HUFFMAN_LENGTHS].map((c) => c.charCodeAt(0) - 97 + 5);
  const bySize = lengths.map((len, symbol) => ({ len, symbol })).sort((a, b) => a.len - b.len || a.symbol - b.symbol);
  const map = new Map<string, number>();
  let code = 0;
  let prev = bySize[0]!.len;
  bySize.forEach(({ len, symbol }, i) => {
    if (i > 0) code = (code + 1) * 2 ** (len - prev);
    prev = len;
    map.set(`${len}:${code}`, symbol);
  });
  huffmanSymbols = map;
  return map;
}

export class HpackError extends Error {
  override name = "HpackError";
}

function huffmanDecode(bytes: Uint8Array): string {
  const map = huffmanMap();
  const out: number[] = [];
  let code = 0;
  let len = 0;
  for (const byte of bytes)
    for (let bit = 7; bit >= 0; bit--) {
      code = code * 2 + ((byte >> bit) & 1);
      len++;
      const symbol = map.get(`${len}:${code}`);
      if (symbol !== undefined) {
        out.push(symbol);
        code = 0;
        len = 0;
      } else if (len > 30) throw new HpackError("invalid Huffman code");
    }
  // What is left must be padding: fewer than 8 bits, all ones (the EOS code's prefix).
  if (len >= 8 || code !== 2 ** len - 1) throw new HpackError("invalid Huffman padding");
  return Buffer.from(out).toString("latin1");
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

  string(): string {
    const huffman = (this.peek() & 0x80) !== 0;
    const length = this.integer(7);
    if (this.pos + length > this.bytes.length) throw new HpackError("string longer than the header block");
    const raw = this.bytes.subarray(this.pos, this.pos + length);
    this.pos += length;
    return huffman ? huffmanDecode(raw) : Buffer.from(raw).toString("latin1");
  }

  private byte(): number {
    if (this.done) throw new HpackError("header block cut short");
    return this.bytes[this.pos++]!;
  }
}

/** One connection's decoder: its dynamic table lives as long as the connection. */
export class HpackDecoder {
  private table: [string, string][] = [];
  private size = 0;
  private maxSize = 4096;

  decode(block: Uint8Array): [string, string][] {
    const r = new Reader(block);
    const fields: [string, string][] = [];
    while (!r.done) {
      const b = r.peek();
      if (b & 0x80) fields.push(this.entry(r.integer(7)));
      else if (b & 0x40) {
        const field = this.literal(r, 6);
        this.insert(field);
        fields.push(field);
      } else if (b & 0x20) this.resize(r.integer(5));
      else fields.push(this.literal(r, 4));
    }
    return fields;
  }

  private literal(r: Reader, prefixBits: number): [string, string] {
    const index = r.integer(prefixBits);
    const name = index === 0 ? r.string() : this.entry(index)[0];
    return [name, r.string()];
  }

  private entry(index: number): [string, string] {
    const found = index <= STATIC.length ? STATIC[index - 1] : this.table[index - STATIC.length - 1];
    if (!found || index === 0) throw new HpackError(`no header table entry ${index}`);
    return [found[0], found[1]];
  }

  private insert(field: [string, string]): void {
    this.table.unshift(field);
    this.size += field[0].length + field[1].length + 32;
    this.evict();
  }

  private resize(max: number): void {
    if (max > 4096) throw new HpackError(`dynamic table size ${max} over the 4096 allowed`);
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
