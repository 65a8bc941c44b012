/**
 * D1 (KEP-4817): what Plexus reports in a ResourceClaim's `status.devices` for the attachments the
 * claim's devices back. Per device (keyed by driver, pool, device): `networkData`, read from the
 * delegate's result by network-status's rules (the first interface in the sandbox, its MAC, its
 * addresses, here with their prefix as the API wants them), and Plexus's own condition. Pure: the
 * writes are in nodestate/claim-status.ts.
 */
import { isPlainObject } from "../cni/json";
import { toResult } from "../cni/result/convert";
import { type AnyResult, familyOf, type IpConfig } from "../cni/result/types";
import {
  ATTACHED_CONDITION,
  type ClaimDeviceStatus,
  NETWORK_DATA_LIMITS,
  type NetworkDeviceData,
} from "../cluster/dra-objects";
import { canonicalIp } from "../cni/ip-text";

/** One attachment a claim's device backs, as the write reports it. */
export interface ClaimBacked {
  /** The claim (in the pod's namespace) and its allocated device. */
  claim: string;
  driver: string;
  pool: string;
  device: string;
  /** The network (NAD reference) and CNI_IFNAME of the attachment. */
  network: string;
  ifName: string;
  /** The delegate's result; undefined: only the condition is reported. */
  result?: AnyResult | undefined;
  /** When the attachment was made (the condition's lastTransitionTime), ISO time. */
  since: string;
}

/**
 * Plexus's entries per claim, in the order the claims and devices come; every claim named gets a
 * list, empty when none of its devices backs an attachment any more.
 */
export function claimDeviceStatuses(
  backed: readonly ClaimBacked[],
  scope: { pod: { namespace: string; name: string }; claims: Iterable<string> },
): Map<string, ClaimDeviceStatus[]> {
  const out = new Map<string, ClaimDeviceStatus[]>([...scope.claims].map((c) => [c, []]));
  for (const b of backed) {
    const entries = out.get(b.claim);
    if (!entries) continue;
    const networkData = b.result ? networkDataOf(b.ifName, b.result) : undefined;
    const pod = `${scope.pod.namespace}/${scope.pod.name}`;
    const entry: ClaimDeviceStatus = {
      driver: b.driver,
      pool: b.pool,
      device: b.device,
      ...(networkData ? { networkData } : {}),
      conditions: [
        {
          type: ATTACHED_CONDITION,
          status: "True",
          reason: "Attached",
          message:
            `attached to pod ${pod} as ${networkData?.interfaceName ?? b.ifName} ` +
            `(network ${b.network})`,
          lastTransitionTime: apiTime(b.since),
        },
      ],
    };
    // One device backs one attachment; should two name it, the first one's entry is the device's.
    if (!entries.some((e) => e.device === b.device && e.pool === b.pool && e.driver === b.driver))
      entries.push(entry);
  }
  return out;
}

/** metav1.Time's form: RFC 3339 in seconds. */
function apiTime(iso: string): string {
  const t = new Date(iso);
  return (Number.isNaN(t.getTime()) ? new Date() : t).toISOString().replace(/\.\d+Z$/, "Z");
}

/**
 * The interface the delegate put in the pod, as network-status names it: the first interface of
 * the result with a sandbox (its name, its MAC, the addresses that point at it); without one, the
 * CNI_IFNAME and the addresses that name no interface. Addresses in the canonical CIDR form the
 * API requires (others are left out), at most as many as it takes.
 */
export function networkDataOf(ifName: string, raw: AnyResult): NetworkDeviceData | undefined {
  let result: ReturnType<typeof toResult>;
  try {
    result = toResult(raw);
  } catch {
    return undefined;
  }
  const ips = (Array.isArray(result.ips) ? result.ips : []).filter(
    (ip): ip is IpConfig => isPlainObject(ip) && typeof ip.address === "string",
  );
  const ifaces: unknown[] = Array.isArray(result.interfaces) ? result.interfaces : [];
  const legacy = familyOf(String(raw.cniVersion)) === "020";
  const k = legacy
    ? -1
    : ifaces.findIndex(
        (i) =>
          isPlainObject(i) &&
          typeof i.sandbox === "string" &&
          i.sandbox !== "" &&
          typeof i.name === "string",
      );
  const iface = k >= 0 ? (ifaces[k] as { name: string; mac?: unknown }) : undefined;
  const own = legacy
    ? ips
    : ips.filter((ip) =>
        iface ? ip.interface === k : ip.interface === undefined || ip.interface < 0,
      );
  const cidrs = [...new Set(own.flatMap((ip) => canonicalCidr(ip.address) ?? []))];
  const name = (iface?.name ?? ifName).slice(0, NETWORK_DATA_LIMITS.interfaceName);
  const mac = typeof iface?.mac === "string" && iface.mac !== "" ? iface.mac : undefined;
  return {
    interfaceName: name,
    ips: cidrs.slice(0, NETWORK_DATA_LIMITS.ips),
    ...(mac && mac.length <= NETWORK_DATA_LIMITS.hardwareAddress ? { hardwareAddress: mac } : {}),
  };
}

/** `10.1.1.5/24` as the API's IsValidInterfaceAddress wants it (canonical address and prefix). */
function canonicalCidr(text: string): string | undefined {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  const address = canonicalIp(m[1]!);
  const bits = Number(m[2]);
  if (!address || bits > (address.includes(":") ? 128 : 32)) return undefined;
  return `${address}/${bits}`;
}
