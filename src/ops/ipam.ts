/**
 * A sanity check of a plugin's `ipam` section, for `plexus validate`: subnets parse, ranges lie in
 * their subnet and are ordered, gateways are in their subnet; and the address ranges it hands out,
 * to find two networks on one bridge or master that would give the same address twice.
 * Understands host-local (`ranges`, or the older `subnet`/`rangeStart`/`rangeEnd`), whereabouts
 * (`range`, `range_start`, `range_end`) and static (`addresses`); other IPAM types are not checked.
 */
import { isIP } from "node:net";
import { isPlainObject } from "../cni/json";
import { quote } from "../cni/quote";

export interface AddressRange {
  family: 4 | 6;
  start: bigint;
  end: bigint;
  /** As written, for messages. */
  text: string;
}

export interface IpamCheck {
  errors: string[];
  ranges: AddressRange[];
}

function ipToBigInt(ip: string): { family: 4 | 6; value: bigint } | undefined {
  const family = isIP(ip);
  if (family === 4)
    return { family, value: ip.split(".").reduce((n, o) => (n << 8n) + BigInt(Number(o)), 0n) };
  if (family !== 6) return undefined;
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = ipToBigInt(v4[1]!)!.value;
    text = `${text.slice(0, -v4[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups =
    tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t];
  return { family: 6, value: groups.reduce((n, g) => (n << 16n) + BigInt(parseInt(g, 16)), 0n) };
}

export interface Cidr {
  family: 4 | 6;
  first: bigint;
  last: bigint;
}

export function parseCidr(text: string): Cidr | undefined {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  const ip = m ? ipToBigInt(m[1]!) : undefined;
  if (!m || !ip) return undefined;
  const bits = ip.family === 4 ? 32 : 128;
  const prefix = Number(m[2]);
  if (prefix > bits) return undefined;
  const host = (1n << BigInt(bits - prefix)) - 1n;
  return { family: ip.family, first: ip.value & ~host, last: (ip.value & ~host) | host };
}

const str = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);

interface RangeSpec {
  subnet?: string;
  start?: string;
  end?: string;
  gateway?: string;
}

function checkRange(range: RangeSpec, where: string, out: IpamCheck): void {
  if (!range.subnet) {
    out.errors.push(`${where}: no subnet`);
    return;
  }
  const cidr = parseCidr(range.subnet);
  if (!cidr) {
    out.errors.push(
      `${where}: subnet ${quote(range.subnet)} is not an address/prefix (e.g. 10.1.0.0/24)`,
    );
    return;
  }
  const point = (name: string, value: string | undefined): bigint | undefined => {
    if (value === undefined) return undefined;
    const ip = ipToBigInt(value);
    if (!ip || ip.family !== cidr.family)
      out.errors.push(`${where}: ${name} ${quote(value)} is not an IPv${cidr.family} address`);
    else if (ip.value < cidr.first || ip.value > cidr.last)
      out.errors.push(`${where}: ${name} ${value} is outside subnet ${range.subnet}`);
    else return ip.value;
    return undefined;
  };
  const start = point("rangeStart", range.start);
  const end = point("rangeEnd", range.end);
  point("gateway", range.gateway);
  if (start !== undefined && end !== undefined && start > end)
    out.errors.push(`${where}: rangeStart ${range.start} is after rangeEnd ${range.end}`);
  out.ranges.push({
    family: cidr.family,
    start: start ?? cidr.first,
    end: end ?? cidr.last,
    text:
      range.start || range.end
        ? `${range.start ?? "…"}-${range.end ?? "…"} in ${range.subnet}`
        : range.subnet,
  });
}

export function checkIpam(ipam: unknown, where: string): IpamCheck {
  const out: IpamCheck = { errors: [], ranges: [] };
  if (!isPlainObject(ipam)) return out;
  if (ipam.type === "host-local") checkHostLocal(ipam, where, out);
  else if (ipam.type === "whereabouts") checkWhereabouts(ipam, where, out);
  else if (ipam.type === "static" && Array.isArray(ipam.addresses)) {
    ipam.addresses.forEach((a, i) => {
      const address = isPlainObject(a) ? str(a.address) : undefined;
      if (!address || !parseCidr(address))
        out.errors.push(
          `${where}: ipam.addresses[${i}].address ${quote(address ?? null)} is not an ` +
            `address/prefix`,
        );
    });
  }
  return out;
}

/** host-local: `ranges` (a list of range sets), else the older single `subnet`. */
function checkHostLocal(ipam: Record<string, unknown>, where: string, out: IpamCheck): void {
  if (Array.isArray(ipam.ranges)) {
    ipam.ranges.forEach((set, i) => {
      if (!Array.isArray(set))
        return out.errors.push(`${where}: ipam.ranges[${i}] must be a list of ranges`);
      set.forEach((r, j) => {
        const o = isPlainObject(r) ? r : {};
        checkRange(
          {
            subnet: str(o.subnet),
            start: str(o.rangeStart),
            end: str(o.rangeEnd),
            gateway: str(o.gateway),
          },
          `${where}: ipam.ranges[${i}][${j}]`,
          out,
        );
      });
      return undefined;
    });
  } else
    checkRange(
      {
        subnet: str(ipam.subnet),
        start: str(ipam.rangeStart),
        end: str(ipam.rangeEnd),
        gateway: str(ipam.gateway),
      },
      `${where}: ipam`,
      out,
    );
}

function checkWhereabouts(ipam: Record<string, unknown>, where: string, out: IpamCheck): void {
  const range = str(ipam.range);
  // whereabouts also accepts "10.0.0.10-10.0.0.20/24"-style ranges: then the subnet is the
  // address before "-" with the prefix.
  const m = range ? /^([^-]+)-([^/]+)(\/\d+)$/.exec(range) : null;
  if (m)
    checkRange({ subnet: `${m[1]}${m[3]}`, start: m[1], end: m[2] }, `${where}: ipam.range`, out);
  else
    checkRange(
      {
        subnet: range,
        start: str(ipam.range_start),
        end: str(ipam.range_end),
        gateway: str(ipam.gateway),
      },
      `${where}: ipam`,
      out,
    );
}

export function overlaps(left: AddressRange, right: AddressRange): boolean {
  return left.family === right.family && left.start <= right.end && right.start <= left.end;
}
