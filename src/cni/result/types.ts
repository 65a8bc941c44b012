/**
 * CNI result shapes (C5.1). Plexus works internally on the 1.x shape ({@link Result}) and converts
 * at the edges: when a delegate's result comes in and when a result goes out to the runtime.
 */

/** Routes and DNS are the same in every version; 1.1.0 adds route attributes. */
export interface Route {
  dst: string;
  gw?: string;
  mtu?: number;
  advmss?: number;
  priority?: number;
  table?: number;
  scope?: number;
}

interface Dns {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

export interface Interface {
  name: string;
  mac?: string;
  mtu?: number;
  sandbox?: string;
  socketPath?: string;
  pciID?: string;
}

export interface IpConfig {
  /** CIDR notation, e.g. `10.1.0.5/24`. */
  address: string;
  gateway?: string;
  /** Index into `interfaces`. */
  interface?: number;
}

/** 1.0.0 and 1.1.0 (libcni `types/100`). Unknown keys a plugin adds are kept. */
export interface Result {
  cniVersion: string;
  interfaces?: Interface[];
  ips?: IpConfig[];
  routes?: Route[];
  dns?: Dns;
  [extra: string]: unknown;
}

/** 0.3.0, 0.3.1, 0.4.0 (libcni `types/040`): as 1.x, with `version` on each IP. */
interface IpConfig040 extends IpConfig {
  version: "4" | "6";
}
export interface Result040 extends Omit<Result, "ips"> {
  ips?: IpConfig040[];
}

/** 0.1.0 and 0.2.0 (libcni `types/020`). */
interface Ip020 {
  ip: string;
  gateway?: string;
  routes?: Route[];
}
export interface Result020 {
  cniVersion: string;
  ip4?: Ip020;
  ip6?: Ip020;
  dns?: Dns;
  [extra: string]: unknown;
}

export type AnyResult = Result | Result040 | Result020;

export type VersionFamily = "020" | "040" | "100";

export function familyOf(version: string): VersionFamily {
  switch (version) {
    case "0.1.0":
    case "0.2.0":
      return "020";
    case "0.3.0":
    case "0.3.1":
    case "0.4.0":
      return "040";
    default:
      return "100";
  }
}
