/**
 * The `k8s.v1.cni.cncf.io/networks` pod annotation (N4.1) in both formats: comma-separated
 * references (N4.1.1, with Multus's `@ifname`) and a JSON list of selection objects (N4.1.2, with
 * Multus's keys, M4).
 *
 * N4.1.x: the spec says an invalid annotation "shall be ignored", but attaching a half-understood
 * request is worse than failing, so any invalid part fails the ADD with code 7 naming the item,
 * the key and the value.
 */
import { Address4, Address6 } from "ip-address";
import { CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";
import { interfaceNameProblem } from "../cni/validate";
import { dns1123LabelProblem } from "./dns1123";
import type { NetworkSelection } from "./types";

export interface ParseAnnotationOptions {
  /** B25: more selections than this is refused before any further work. */
  maxSelections?: number;
  /** The default network's interface (CNI_IFNAME, normally eth0): no selection may take it. */
  reservedIfName?: string;
}

export const DEFAULT_MAX_SELECTIONS = 32;

function fail(item: string, msg: string): never {
  throw new CniError(Code.InvalidNetworkConfig, `networks annotation ${item}: ${msg}`);
}

function show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}

export function parseNetworksAnnotation(value: string, podNamespace: string, opts: ParseAnnotationOptions = {}): NetworkSelection[] {
  const text = value.trim();
  if (text === "") return [];
  const max = opts.maxSelections ?? DEFAULT_MAX_SELECTIONS;
  const selections = text.startsWith("[") || text.startsWith("{") ? parseJsonForm(text, podNamespace, max) : parseCommaForm(text, podNamespace, max);
  for (const [i, sel] of selections.entries()) {
    if (sel.interfaceRequest !== undefined && sel.interfaceRequest === opts.reservedIfName) {
      fail(`item ${i + 1} (${sel.namespace}/${sel.name})`, `interface ${JSON.stringify(sel.interfaceRequest)} is the default network's; pick another name`);
    }
  }
  return selections;
}

function checkCount(n: number, max: number): void {
  if (n > max) {
    throw new CniError(Code.InvalidNetworkConfig, `networks annotation requests ${n} networks; at most ${max} are allowed per pod (config "maxNetworks")`);
  }
}

function checkName(item: string, key: string, v: string): void {
  const problem = dns1123LabelProblem(v);
  if (problem) fail(item, `${key} ${show(v)} is not a valid DNS-1123 label: ${problem}`);
}

/**
 * N4.1.1: `name`, `ns/name`, `name@ifname`, `ns/name@ifname`, separated by commas; whitespace
 * around an item is ignored, whitespace inside one is an error (it is no valid name or interface).
 */
function parseCommaForm(text: string, podNamespace: string, max: number): NetworkSelection[] {
  const items = text.split(",");
  checkCount(items.length, max);
  return items.map((raw, i) => {
    const ref = raw.trim();
    const item = `item ${i + 1} (${show(ref)})`;
    if (ref === "") fail(item, "is empty; expected name, namespace/name or name@interface");
    const at = ref.split("@");
    if (at.length > 2) fail(item, "has more than one '@'");
    const [path = "", ifName] = at;
    const parts = path.split("/");
    if (parts.length > 2) fail(item, "has more than one '/'; expected namespace/name");
    const [nsOrName = "", maybeName] = parts;
    const namespace = maybeName === undefined ? podNamespace : nsOrName;
    const name = maybeName === undefined ? nsOrName : maybeName;
    checkName(item, "namespace", namespace);
    checkName(item, "name", name);
    const sel: NetworkSelection = { name, namespace };
    if (ifName !== undefined) {
      const problem = interfaceNameProblem(ifName);
      if (problem) fail(item, `interface ${show(ifName)} is invalid: ${problem}`);
      sel.interfaceRequest = ifName;
    }
    return sel;
  });
}

function parseJsonForm(text: string, podNamespace: string, max: number): NetworkSelection[] {
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch (err) {
    throw new CniError(Code.InvalidNetworkConfig, `networks annotation is not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(list)) throw new CniError(Code.InvalidNetworkConfig, "networks annotation in JSON form must be a list of objects, got an object");
  checkCount(list.length, max);
  return list.map((el, i) => parseSelectionObject(el, i, podNamespace));
}

const STRING_KEYS = ["name", "namespace", "interface", "interfaceRequest", "mac", "infiniband-guid", "deviceID"] as const;

/** N4.1.2.1.x and M4; unknown keys are ignored (reserved ones and reverse-domain ones alike). */
function parseSelectionObject(el: unknown, i: number, podNamespace: string): NetworkSelection {
  let item = `item ${i + 1}`;
  if (!isPlainObject(el)) fail(item, `must be an object, got ${show(el)}`);
  for (const key of STRING_KEYS) {
    if (el[key] !== undefined && typeof el[key] !== "string") fail(item, `key "${key}" must be a string, got ${show(el[key])}`);
  }
  if (el.name === undefined) fail(item, 'key "name" is required');
  const name = el.name as string;
  const namespace = el.namespace === undefined || el.namespace === "" ? podNamespace : (el.namespace as string);
  item = `item ${i + 1} (${namespace}/${name})`;
  checkName(item, 'key "namespace"', namespace);
  checkName(item, 'key "name"', name);
  const sel: NetworkSelection = { name, namespace };

  const iface = el.interface ?? el.interfaceRequest;
  if (el.interface !== undefined && el.interfaceRequest !== undefined && el.interface !== el.interfaceRequest) {
    fail(item, `keys "interface" (${show(el.interface)}) and "interfaceRequest" (${show(el.interfaceRequest)}) disagree`);
  }
  if (iface !== undefined) {
    const problem = interfaceNameProblem(iface as string);
    if (problem) fail(item, `key "interface" ${show(iface)} is invalid: ${problem}`);
    sel.interfaceRequest = iface as string;
  }
  if (el.ips !== undefined) sel.ips = parseIps(item, el.ips);
  if (el.mac !== undefined) sel.mac = parseMac(item, el.mac as string);
  if (el["infiniband-guid"] !== undefined) sel.infinibandGuid = el["infiniband-guid"] as string;
  if (el.deviceID !== undefined) sel.deviceID = el.deviceID as string;
  if (el["cni-args"] !== undefined) {
    if (!isPlainObject(el["cni-args"])) fail(item, `key "cni-args" must be an object, got ${show(el["cni-args"])}`);
    sel.cniArgs = el["cni-args"];
  }
  if (el.portMappings !== undefined) {
    if (!Array.isArray(el.portMappings)) fail(item, `key "portMappings" must be a list, got ${show(el.portMappings)}`);
    sel.portMappings = el.portMappings;
  }
  if (el.bandwidth !== undefined) {
    if (!isPlainObject(el.bandwidth)) fail(item, `key "bandwidth" must be an object, got ${show(el.bandwidth)}`);
    sel.bandwidth = el.bandwidth;
  }
  if (el["default-route"] !== undefined) {
    const gws = el["default-route"];
    if (!Array.isArray(gws) || gws.some((g) => typeof g !== "string" || !isIp(g, false))) {
      fail(item, `key "default-route" must be a list of gateway IP addresses, got ${show(gws)}`);
    }
    sel.defaultRoute = gws as string[];
  }
  return sel;
}

function isIp(v: string, allowPrefix: boolean): boolean {
  if (!allowPrefix && v.includes("/")) return false;
  return v.includes(":") ? Address6.isValid(v) : Address4.isValid(v);
}

/** N4.1.2.1.3: a non-empty list of IPv4/IPv6 addresses, a CIDR suffix allowed (as Multus accepts). */
function parseIps(item: string, ips: unknown): string[] {
  if (!Array.isArray(ips) || ips.length === 0) fail(item, `key "ips" must be a non-empty list of IP addresses, got ${show(ips)}`);
  for (const ip of ips) {
    if (typeof ip !== "string" || !isIp(ip, true)) fail(item, `key "ips" has ${show(ip)}, which is not an IPv4 or IPv6 address (a /prefix is allowed)`);
  }
  return ips as string[];
}

const MAC_6 = /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/;
const MAC_20 = /^([0-9a-fA-F]{2}[:-]){19}[0-9a-fA-F]{2}$/;

/** N4.1.2.1.4: a 6-byte Ethernet or a 20-byte IP-over-InfiniBand address. */
function parseMac(item: string, mac: string): string {
  if (!MAC_6.test(mac) && !MAC_20.test(mac)) fail(item, `key "mac" ${show(mac)} is not a 6-byte Ethernet or 20-byte InfiniBand hardware address`);
  return mac;
}
