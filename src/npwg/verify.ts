/**
 * After ADD, what the annotation asked for must be what the delegate did (N4.1.2.1.3,
 * N4.1.2.1.4): requested IPs assigned to the attachment's sandbox interface, the requested MAC on
 * it. A delegate that ignores `args.cni` would otherwise succeed silently with other addresses.
 */
import { Address4, Address6 } from "ip-address";
import { CniError, Code } from "../cni/errors";
import type { Result } from "../cni/result/types";
import type { NetworkSelection } from "./types";

function normalise(ip: string): string {
  const bare = ip.split("/")[0]!;
  return bare.includes(":") ? new Address6(bare).correctForm() : new Address4(bare).correctForm();
}

/** The sandbox interface's index and MAC (the first interface with a sandbox, as N5.1.1). */
function sandboxInterface(result: Result, ifName: string): { index: number; mac?: string } {
  const ifaces = result.interfaces ?? [];
  let index = ifaces.findIndex((i) => i.sandbox && i.name === ifName);
  if (index < 0) index = ifaces.findIndex((i) => i.sandbox);
  const mac = index >= 0 ? ifaces[index]!.mac : undefined;
  return mac ? { index, mac } : { index };
}

export function verifyAttachment(result: Result, sel: NetworkSelection, ifName: string): void {
  const where = `network ${sel.namespace}/${sel.name} (${ifName})`;
  const { index, mac } = sandboxInterface(result, ifName);
  if (sel.ips?.length) {
    const assigned = (result.ips ?? []).filter((ip) => index < 0 || ip.interface === undefined || ip.interface === index).map((ip) => normalise(ip.address));
    const missing = sel.ips.filter((want) => !assigned.includes(normalise(want)));
    if (missing.length) {
      throw new CniError(
        Code.VerificationFailed,
        `${where}: requested IPs ${missing.join(", ")} were not assigned (got ${assigned.join(", ") || "none"}); does the delegate's IPAM honour "ips" (e.g. static with the ips capability)?`,
      );
    }
  }
  if (sel.mac && mac?.toLowerCase() !== sel.mac.toLowerCase().replaceAll("-", ":")) {
    throw new CniError(
      Code.VerificationFailed,
      `${where}: requested MAC ${sel.mac} was not set (got ${mac ?? "none"}); add a plugin that honours "mac" (e.g. tuning with the mac capability)`,
    );
  }
}
