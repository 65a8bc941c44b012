/**
 * Result version conversion as one explicit table (C5.1), instead of libcni's `init()` registry:
 * every version family converts to and from the 1.x shape, so any → any is two steps.
 */
import { CniError, Code } from "../errors";
import { ALL_VERSIONS } from "../version";
import {
  familyOf,
  type AnyResult,
  type IpConfig,
  type Result,
  type Result020,
  type Result040,
  type Route,
  type VersionFamily,
} from "./types";

function ipFamily(cidrOrIp: string): 4 | 6 {
  return cidrOrIp.includes(":") ? 6 : 4;
}

function omitUndefined<T extends object>(value: T): T {
  for (const k of Object.keys(value) as (keyof T)[]) if (value[k] === undefined) delete value[k];
  return value;
}

const toCanonical: Record<VersionFamily, (r: AnyResult) => Result> = {
  "100": (r) => ({ ...(r as Result) }),
  "040": (r) => {
    const { ips, ...rest } = r as Result040;
    const out: Result = { ...rest, cniVersion: String(r.cniVersion) };
    if (ips) out.ips = ips.map(({ version: _v, ...ip }) => ip);
    return out;
  },
  "020": (r) => {
    const { ip4, ip6, ...rest } = r as Result020;
    const out: Result = { ...rest, cniVersion: String(r.cniVersion) };
    const ips: IpConfig[] = [];
    const routes: Route[] = [];
    for (const ip of [ip4, ip6]) {
      if (!ip) continue;
      ips.push(omitUndefined({ address: ip.ip, gateway: ip.gateway }));
      routes.push(...(ip.routes ?? []));
    }
    if (ips.length) out.ips = ips;
    if (routes.length) out.routes = routes;
    return out;
  },
};

const fromCanonical: Record<VersionFamily, (r: Result, version: string) => AnyResult> = {
  "100": (r, version) => ({ ...r, cniVersion: version }),
  "040": (r, version) => {
    const { ips, ...rest } = r;
    const out: Result040 = { ...rest, cniVersion: version };
    if (ips) {
      // The version comes from the address, as in libcni, never from a stray `version` key of a 1.x
      // IP.
      out.ips = ips.map(({ version: _stray, ...ip }: IpConfig & { version?: unknown }) => ({
        version: ipFamily(ip.address) === 4 ? "4" : "6",
        ...ip,
      }));
    }
    return out;
  },
  "020": (r, version) => {
    // libcni convertTo02x: the first IPv4 and the first IPv6, routes by destination family.
    const { ips, routes, interfaces: _i, ...rest } = r;
    const out: Result020 = { ...rest, cniVersion: version };
    for (const ip of ips ?? []) {
      const key = ipFamily(ip.address) === 4 ? "ip4" : "ip6";
      if (!out[key]) out[key] = omitUndefined({ ip: ip.address, gateway: ip.gateway });
    }
    if (!out.ip4 && !out.ip6) {
      throw new CniError(
        Code.IncompatibleVersion,
        `cannot convert the result to CNI ${version}: it has no IP address, and 0.1.0/0.2.0 ` +
          `results need one`,
      );
    }
    // A route of a family without an IP has nowhere to go in 0.2.0; libcni drops it, so do we.
    for (const route of routes ?? []) {
      const target = ipFamily(route.dst) === 4 ? out.ip4 : out.ip6;
      if (target) (target.routes ??= []).push(route);
    }
    return out;
  },
};

/** Brings any supported result to the 1.x shape (keeping its own `cniVersion`). */
export function toResult(result: AnyResult): Result {
  return toCanonical[familyOf(String(result.cniVersion))](result);
}

/** Converts a result of any version to `version` (C5.1). */
export function convertResult(result: AnyResult, version: string): AnyResult {
  if (!(ALL_VERSIONS as readonly string[]).includes(version)) {
    throw new CniError(
      Code.IncompatibleVersion,
      `cannot convert a result to unknown CNI version ${JSON.stringify(version)}; supported: ` +
        `${ALL_VERSIONS.join(", ")}`,
    );
  }
  return fromCanonical[familyOf(version)](toResult(result), version);
}
