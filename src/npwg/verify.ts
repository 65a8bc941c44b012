/**
 * After ADD, what the annotation asked for must be what the delegate did (N4.1.2.1.3,
 * N4.1.2.1.4): requested IPs assigned to the attachment's sandbox interface, the requested MAC on
 * it. A delegate that ignores `args.cni` would otherwise succeed silently with other addresses.
 */
import { CniError, Code } from "../cni/errors";
import type { Result } from "../cni/result/types";
import { canonicalIp } from "../cni/ip-text";
import type { NetworkSelection } from "./types";

interface ParsedIp {
  /** Canonical text (IPv6 compressed, lower case), so `fd00::0005` equals `FD00::5`. */
  addr: string;
  prefix?: number;
}

/**
 * Undefined for anything that is not an address: a delegate's odd output must not crash the check.
 */
function parseIp(text: unknown): ParsedIp | undefined {
  if (typeof text !== "string") return undefined;
  const [bare = "", prefix, extra] = text.split("/");
  if (extra !== undefined || (prefix !== undefined && !/^[0-9]{1,3}$/.test(prefix)))
    return undefined;
  const addr = canonicalIp(bare);
  if (addr === undefined) return undefined;
  return prefix === undefined ? { addr } : { addr, prefix: Number(prefix) };
}

/** A request without a prefix matches the address alone; with one, the prefix must match too. */
function matches(want: ParsedIp, got: ParsedIp): boolean {
  return want.addr === got.addr && (want.prefix === undefined || want.prefix === got.prefix);
}

const normaliseMac = (mac: string) => mac.toLowerCase().replaceAll("-", ":");

/**
 * The attachment's interface in the result: the sandbox interface named `ifName`, else the first
 * with a sandbox (as N5.1.1), else one named `ifName` (a plugin that leaves `sandbox` out); -1 if
 * none.
 */
function attachmentInterface(result: Result, ifName: string): number {
  const ifaces = Array.isArray(result.interfaces) ? result.interfaces : [];
  const named = (i: { name?: unknown }) => i?.name === ifName;
  const inSandbox = (i: { sandbox?: unknown }) =>
    typeof i?.sandbox === "string" && i.sandbox !== "";
  let index = ifaces.findIndex((i) => inSandbox(i) && named(i));
  if (index < 0) index = ifaces.findIndex(inSandbox);
  if (index < 0) index = ifaces.findIndex(named);
  return index;
}

/**
 * Throws VerificationFailed (103) naming the network, the interface, what was wanted and what the
 * delegate gave. IPs count when their `interface` index is the attachment's interface, or when they
 * name no interface (or a negative one, N5.3.3): a plugin that omits the index still gets credit,
 * an address on a host-side interface does not.
 */
export function verifyAttachment(result: Result, sel: NetworkSelection, ifName: string): void {
  const where = `network ${sel.namespace}/${sel.name} (${ifName})`;
  const index = attachmentInterface(result, ifName);
  if (sel.ips?.length) {
    const ips = (Array.isArray(result.ips) ? result.ips : []).filter(
      (ip) =>
        ip &&
        (ip.interface === undefined || ip.interface < 0 || (index >= 0 && ip.interface === index)),
    );
    const assigned = ips
      .map((ip) => parseIp(ip.address))
      .filter((p): p is ParsedIp => p !== undefined);
    const missing = sel.ips.filter((want) => {
      const w = parseIp(want);
      return !w || !assigned.some((got) => matches(w, got));
    });
    if (missing.length) {
      const got = ips.map((ip) => String(ip.address)).join(", ") || "none";
      throw new CniError(
        Code.VerificationFailed,
        `${where}: requested IPs ${missing.join(", ")} were not assigned (got ${got}); does the ` +
          `delegate's IPAM honour "ips" (e.g. static with the ips capability)?`,
      );
    }
  }
  if (sel.mac) {
    const mac = index >= 0 ? result.interfaces![index]!.mac : undefined;
    if (typeof mac !== "string" || normaliseMac(mac) !== normaliseMac(sel.mac)) {
      throw new CniError(
        Code.VerificationFailed,
        `${where}: requested MAC ${sel.mac} was not set (got ` +
          `${typeof mac === "string" ? mac : "none"}); add a plugin that honours "mac" (e.g. ` +
          `tuning with the mac capability)`,
      );
    }
  }
}
