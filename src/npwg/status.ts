/**
 * The `k8s.v1.cni.cncf.io/network-status` entries (N5, M6): one per attachment, the default
 * network's marked `default: true`, built from each delegate's result by the spec's rules.
 */
import { CniError, Code } from "../cni/errors";
import { toResult } from "../cni/result/convert";
import { familyOf, type AnyResult, type IpConfig } from "../cni/result/types";
import { NETWORK_STATUS_ANNOTATION, type NetworkStatus } from "./types";

export interface StatusInput {
  /** N5.3.1: the NAD reference (`namespace/name`) or the default network's name. */
  name: string;
  isDefault: boolean;
  /** CNI_IFNAME the delegate was given. */
  ifName: string;
  /** Undefined when the delegate returned no result (N5.1.1). */
  result?: AnyResult;
  /** M6: the gateways of the selection's `default-route`. */
  gateway?: string[];
  /** M6/M10: device information, passed through. */
  deviceInfo?: Record<string, unknown>;
}

const withoutPrefix = (ip: IpConfig) => ip.address.split("/")[0]!;

export function buildNetworkStatus(input: StatusInput): NetworkStatus {
  const status: NetworkStatus = { name: input.name, interface: input.ifName, default: input.isDefault };
  const extras = () => {
    if (input.gateway?.length) status.gateway = [...input.gateway];
    if (input.deviceInfo) status["device-info"] = input.deviceInfo;
    return status;
  };
  if (!input.result) return extras();
  const r = toResult(input.result);
  const ips = r.ips ?? [];
  if (familyOf(String(input.result.cniVersion)) === "020") {
    // N5.3.2, N5.3.3: results before 0.3.0 have no interfaces: the CNI_IFNAME used, ip4 and ip6.
    if (ips.length) status.ips = ips.map(withoutPrefix);
  } else {
    // N5.1.1, N5.3.2: the first interface with a sandbox; B59: missing or odd fields give a minimal entry.
    const k = (r.interfaces ?? []).findIndex((i) => typeof i.sandbox === "string" && i.sandbox !== "");
    const iface = k >= 0 ? r.interfaces![k]! : undefined;
    const own = iface ? ips.filter((ip) => ip.interface === k) : ips.filter((ip) => ip.interface === undefined || ip.interface < 0);
    if (iface) {
      status.interface = iface.name;
      // N5.3.4: a mac only with its interface, which is always set here.
      if (iface.mac) status.mac = iface.mac;
      if (typeof iface.mtu === "number" && iface.mtu > 0) status.mtu = iface.mtu;
    }
    if (own.length) status.ips = own.map(withoutPrefix);
  }
  const dns = r.dns;
  if (dns && (dns.nameservers?.length || dns.domain || dns.search?.length)) {
    status.dns = {
      ...(dns.nameservers?.length ? { nameservers: dns.nameservers } : {}),
      ...(dns.domain ? { domain: dns.domain } : {}),
      ...(dns.search?.length ? { search: dns.search } : {}),
    };
  }
  return extras();
}

/** N5.2: the annotation value; exactly one entry is the default network's. */
export function buildNetworkStatusAnnotation(entries: readonly NetworkStatus[]): string {
  const defaults = entries.filter((e) => e.default).length;
  if (defaults !== 1) throw new CniError(Code.Internal, `network-status must have exactly one default network entry, has ${defaults}`);
  return JSON.stringify(entries);
}

/** The API server refuses an object whose annotations total more than 256 KiB (keys and values). */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

/**
 * B26, B27: the pod's annotations with network-status replaced (a value the user pre-set is
 * overwritten, so it does not count) must stay under the limit; otherwise a clear error, before
 * the API server answers with an opaque 422 after every delegate ran.
 */
export function checkAnnotationBudget(annotations: Readonly<Record<string, string>>, statusValue: string): void {
  let total = Buffer.byteLength(NETWORK_STATUS_ANNOTATION) + Buffer.byteLength(statusValue);
  for (const [k, v] of Object.entries(annotations)) {
    if (k !== NETWORK_STATUS_ANNOTATION) total += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (total > MAX_ANNOTATIONS_BYTES) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `the pod's annotations would total ${total} bytes with the ${Buffer.byteLength(statusValue)}-byte network-status, over the API server's ${MAX_ANNOTATIONS_BYTES}-byte limit; shorten the pod's annotations`,
    );
  }
}
