/**
 * The `k8s.v1.cni.cncf.io/network-status` entries (N5, M6): one per attachment, the default
 * network's marked `default: true`, built from each delegate's result by the spec's rules.
 */
import { CniError, Code } from "../cni/errors";
import { toResult } from "../cni/result/convert";
import { isPlainObject } from "../cni/json";
import {
  familyOf,
  type AnyResult,
  type Interface,
  type IpConfig,
  type Result,
} from "../cni/result/types";
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

/**
 * An address without its prefix (N5.3.3: network-status lists bare addresses, as Multus writes
 * them).
 */
const withoutPrefix = (ip: IpConfig) => ip.address.split("/")[0]!;
const isIpConfig = (ip: unknown): ip is IpConfig =>
  typeof ip === "object" && ip !== null && typeof (ip as IpConfig).address === "string";
const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((x): x is string => typeof x === "string") : [];

/**
 * One attachment's entry. B59: a result without `interfaces`, without a `sandbox`, with an
 * `ips[].interface` out of range or with fields of the wrong type gives a smaller entry (at least
 * name, interface, default), never an exception: the attachment is up, only its description is
 * thin.
 *
 * For results ≥ 0.3.0 without a sandbox interface, `interface` stays the CNI_IFNAME the delegate
 * was given (the spec names none for that case; the name the pod sees is the best there is).
 */
export function buildNetworkStatus(input: StatusInput): NetworkStatus {
  const status: NetworkStatus = {
    name: input.name,
    interface: input.ifName,
    default: input.isDefault,
  };
  const extras = () => {
    if (input.gateway?.length) status.gateway = [...input.gateway];
    if (input.deviceInfo) status["device-info"] = input.deviceInfo;
    return status;
  };
  if (!input.result) return extras();
  let r: Result;
  try {
    r = toResult(input.result);
  } catch {
    return extras();
  }
  const ips = Array.isArray(r.ips) ? r.ips.filter(isIpConfig) : [];
  if (familyOf(String(input.result.cniVersion)) === "020") {
    // N5.3.2, N5.3.3: results before 0.3.0 have no interfaces: the CNI_IFNAME used, ip4 and ip6.
    if (ips.length) status.ips = ips.map(withoutPrefix);
  } else {
    addSandboxInterface(status, { result: r, ips });
  }
  // N5.3.6: nameservers, domain, search (not options, which the spec does not list).
  if (isPlainObject(r.dns)) {
    const nameservers = strings(r.dns.nameservers);
    const search = strings(r.dns.search);
    const domain = typeof r.dns.domain === "string" ? r.dns.domain : "";
    if (nameservers.length || domain || search.length) {
      status.dns = {
        ...(nameservers.length ? { nameservers } : {}),
        ...(domain ? { domain } : {}),
        ...(search.length ? { search } : {}),
      };
    }
  }
  return extras();
}

/** A result ≥ 0.3.0: the pod's interface (name, mac, mtu) and its IPs. */
function addSandboxInterface(
  status: NetworkStatus,
  { result, ips }: { result: Result; ips: IpConfig[] },
): void {
  // N5.1.1, N5.3.2: the first interface with a sandbox.
  const ifaces: unknown[] = Array.isArray(result.interfaces) ? result.interfaces : [];
  const k = ifaces.findIndex(
    (i) =>
      isPlainObject(i) &&
      typeof i.sandbox === "string" &&
      i.sandbox !== "" &&
      typeof i.name === "string",
  );
  const iface = k >= 0 ? (ifaces[k] as Interface) : undefined;
  // N5.3.3: that interface's IPs; with no sandbox interface, the IPs that name no interface.
  const own = iface
    ? ips.filter((ip) => ip.interface === k)
    : ips.filter(
        (ip) =>
          ip.interface === undefined || (typeof ip.interface === "number" && ip.interface < 0),
      );
  if (iface) {
    status.interface = iface.name;
    // N5.3.4: a mac only with its interface, which is always set here.
    if (typeof iface.mac === "string" && iface.mac !== "") status.mac = iface.mac;
    if (Number.isInteger(iface.mtu) && iface.mtu! > 0) status.mtu = iface.mtu!;
  }
  if (own.length) status.ips = own.map(withoutPrefix);
}

/** N5.2: the annotation value; exactly one entry is the default network's. */
export function buildNetworkStatusAnnotation(entries: readonly NetworkStatus[]): string {
  const defaults = entries.filter((e) => e.default).length;
  if (defaults !== 1)
    throw new CniError(
      Code.Internal,
      `network-status must have exactly one default network entry, has ${defaults}`,
    );
  return JSON.stringify(entries);
}

/** The API server refuses an object whose annotations total more than 256 KiB (keys and values). */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

/**
 * B26, B27: the pod's annotations with network-status replaced (a value the user pre-set is
 * overwritten, so it does not count) must stay under the limit; otherwise a clear error, before
 * the API server answers with an opaque 422 after every delegate ran. The error says which part
 * made the total large: a delegate's result echoed into network-status (a NAD's `dns`, say) is
 * fixed in that network, not in the pod's annotations.
 */
export function checkAnnotationBudget(
  annotations: Readonly<Record<string, string>>,
  statusValue: string,
): void {
  const statusBytes = Buffer.byteLength(NETWORK_STATUS_ANNOTATION) + Buffer.byteLength(statusValue);
  let ownBytes = 0;
  let largestOwn = { key: "", bytes: 0 };
  for (const [k, v] of Object.entries(annotations)) {
    if (k === NETWORK_STATUS_ANNOTATION) continue;
    const bytes = Buffer.byteLength(k) + Buffer.byteLength(v);
    ownBytes += bytes;
    if (bytes > largestOwn.bytes) largestOwn = { key: k, bytes };
  }
  const total = statusBytes + ownBytes;
  if (total <= MAX_ANNOTATIONS_BYTES) return;
  const own =
    ownBytes === 0
      ? "the pod has no other annotations"
      : `the pod's other annotations take ${ownBytes} bytes, the largest, ` +
        `${JSON.stringify(largestOwn.key)}, ${largestOwn.bytes} bytes`;
  const fix =
    statusBytes >= ownBytes
      ? "network-status copies what each network's delegates returned: make the network of " +
        "the largest entry return less"
      : "shorten the pod's annotations";
  throw new CniError(
    Code.InvalidNetworkConfig,
    `the pod's annotations would total ${total} bytes, over the API server's ` +
      `${MAX_ANNOTATIONS_BYTES}-byte limit: the network-status value is ` +
      `${Buffer.byteLength(statusValue)} bytes (${largestEntry(statusValue)}); ${own}; ${fix}`,
  );
}

/** The largest entry of a network-status value: its network's name, its size and largest field. */
function largestEntry(statusValue: string): string {
  const sized = networkStatusEntries(statusValue).map((entry) => ({
    entry,
    bytes: Buffer.byteLength(JSON.stringify(entry)),
  }));
  const top = sized.reduce<(typeof sized)[number] | undefined>(
    (best, e) => (best && best.bytes >= e.bytes ? best : e),
    undefined,
  );
  if (!top) return "no entries";
  const field = Object.entries(top.entry)
    .map(([k, v]) => ({ key: k, bytes: Buffer.byteLength(JSON.stringify(v) ?? "") }))
    .reduce<{ key: string; bytes: number } | undefined>(
      (best, f) => (best && best.bytes >= f.bytes ? best : f),
      undefined,
    );
  const name = JSON.stringify(top.entry.name);
  return field
    ? `the largest entry is network ${name}'s, ${top.bytes} bytes, ` +
        `${field.bytes} of them its ${JSON.stringify(field.key)}`
    : `the largest entry is network ${name}'s, ${top.bytes} bytes`;
}

/**
 * The entries of a pod's network-status annotation as written (by Plexus, Multus or anyone with
 * the pod's write access): the objects of its list, each still to be checked field by field;
 * none when it is missing or not a JSON list.
 */
export function networkStatusEntries(value: string | undefined): Record<string, unknown>[] {
  if (!value) return [];
  try {
    const parsed = JSON.parse(value) as unknown;
    return Array.isArray(parsed) ? parsed.filter(isPlainObject) : [];
  } catch {
    return [];
  }
}
