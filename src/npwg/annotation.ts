/**
 * The `k8s.v1.cni.cncf.io/networks` pod annotation (N4.1) in both formats: comma-separated
 * references (N4.1.1, with Multus's `@ifname`) and a JSON list of selection objects (N4.1.2, with
 * Multus's keys, M4).
 *
 * N4.1.x: the spec says an invalid annotation "shall be ignored", but attaching a half-understood
 * request is worse than failing, so any invalid part fails the ADD with code 7 naming the item
 * (1-based), the key and the value.
 */
import { showValue as show } from "../cni/json";
import { CniError, Code } from "../cni/errors";
import { decodeJson, isPlainObject } from "../cni/json";
import { interfaceNameProblem } from "../cni/validate";
import { dns1123LabelProblem } from "./dns1123";
import type { NetworkSelection } from "./types";
import { isIpText } from "../cni/ip-text";
import { deviceTextProblem } from "./device-id";

export interface ParseAnnotationOptions {
  /**
   * B25: more selections than this is refused before any further work (default 32, config
   * `maxNetworks`).
   */
  maxSelections?: number;
  /**
   * The default network's interface (CNI_IFNAME, normally eth0): no selection may request it (B23).
   */
  reservedIfName?: string;
}

export const DEFAULT_MAX_SELECTIONS = 32;
/**
 * The API server caps all of a pod's annotations together at 256 KiB, so one value is never larger.
 */
const MAX_ANNOTATION_BYTES = 256 * 1024;

function fail(item: string, msg: string): never {
  throw new CniError(Code.InvalidNetworkConfig, `networks annotation ${item}: ${msg}`);
}

/**
 * Parses the annotation into selections, in order (N4.2: the same network twice is two
 * selections). The format is JSON when the trimmed value starts with `[` or `{` (a `{…}` object
 * is refused, B21), else the comma form. An empty or blank value selects nothing.
 *
 * Whitespace: the whole value and each comma-separated item are trimmed (N4.1.1); whitespace
 * *inside* an item (`ns / net-a`, `net-a@ eth1`) is refused, since no DNS-1123 name and no
 * interface name may contain it; guessing what was meant would attach something the user did not
 * write. JSON values are taken as they are (`" net-a"` is refused the same way).
 */
export function parseNetworksAnnotation(
  value: string,
  podNamespace: string,
  opts: ParseAnnotationOptions = {},
): NetworkSelection[] {
  const text = value.trim();
  if (text === "") return [];
  const ctx: ItemContext = {
    podNamespace,
    reservedIfName: opts.reservedIfName,
    max: opts.maxSelections ?? DEFAULT_MAX_SELECTIONS,
  };
  return text.startsWith("[") || text.startsWith("{")
    ? parseJsonForm(text, ctx)
    : parseCommaForm(text, ctx);
}

interface ItemContext {
  podNamespace: string;
  reservedIfName: string | undefined;
  max: number;
}

/** B25: checked on the raw count, before names are validated or anything is looked up. */
function checkCount(count: number, max: number): void {
  if (count > max) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `networks annotation requests ${count} networks; at most ${max} are allowed per pod ` +
        `(config "maxNetworks")`,
    );
  }
}

function checkName(item: string, key: string, value: string): void {
  const problem = dns1123LabelProblem(value);
  if (problem) fail(item, `${key} ${show(value)} is not a valid DNS-1123 label: ${problem}`);
}

/** N4.1.2.1.5, B23: a valid Linux name, and not the default network's. */
function checkInterface(item: string, key: string, ifName: string, ctx: ItemContext): string {
  const problem = interfaceNameProblem(ifName);
  if (problem) fail(item, `${key} ${show(ifName)} is invalid: ${problem}`);
  if (ifName === ctx.reservedIfName)
    fail(
      item,
      `${key} ${show(ifName)} is the default network's interface (CNI_IFNAME); pick another name`,
    );
  return ifName;
}

/** M10: the one device-ID rule (device-id.ts): it reaches a delegate, and maybe a file name. */
function checkDeviceId(item: string, deviceID: string): string {
  const problem = deviceTextProblem(deviceID);
  if (problem) fail(item, `key "deviceID" ${show(deviceID)} is not a valid device ID: ${problem}`);
  return deviceID;
}

/** M19: a selection's resource name may reach a file name (the device plugin's device-info). */
function checkResourceName(item: string, resourceName: string): string {
  const problem = deviceTextProblem(resourceName, "resourceName");
  if (problem)
    fail(item, `key "resourceName" ${show(resourceName)} is not a valid resource name: ${problem}`);
  return resourceName;
}

/** N4.1.1: `name`, `ns/name`, `name@ifname`, `ns/name@ifname`, separated by commas. */
function parseCommaForm(text: string, ctx: ItemContext): NetworkSelection[] {
  const items = text.split(",");
  checkCount(items.length, ctx.max);
  return items.map((raw, i) => {
    const ref = raw.trim();
    const item = `item ${i + 1} (${show(ref)})`;
    if (ref === "") fail(item, "is empty; expected name, namespace/name or name@interface");
    const at = ref.split("@");
    if (at.length > 2) fail(item, "has more than one '@'; expected name@interface");
    const [path = "", ifName] = at;
    const parts = path.split("/");
    if (parts.length > 2) fail(item, "has more than one '/'; expected namespace/name");
    const [nsOrName = "", maybeName] = parts;
    const namespace = maybeName === undefined ? ctx.podNamespace : nsOrName;
    const name = maybeName === undefined ? nsOrName : maybeName;
    checkName(item, maybeName === undefined ? "namespace (the pod's)" : "namespace", namespace);
    checkName(item, "name", name);
    const sel: NetworkSelection = { name, namespace };
    if (ifName !== undefined) sel.interfaceRequest = checkInterface(item, "interface", ifName, ctx);
    return sel;
  });
}

/**
 * N4.1.2: a list of objects. Decoded with the shared bounded decoder (depth, prototype keys: B17).
 */
function parseJsonForm(text: string, ctx: ItemContext): NetworkSelection[] {
  const list = decodeJson(text, {
    what: "networks annotation",
    maxBytes: MAX_ANNOTATION_BYTES,
    code: Code.InvalidNetworkConfig,
  });
  if (!Array.isArray(list))
    throw new CniError(
      Code.InvalidNetworkConfig,
      `networks annotation in JSON form must be a list of objects, got ${show(list)}`,
    );
  checkCount(list.length, ctx.max);
  return list.map((el, i) => parseSelectionObject(el, i, ctx));
}

const STRING_KEYS = [
  "name",
  "namespace",
  "interface",
  "interfaceRequest",
  "mac",
  "infiniband-guid",
  "deviceID",
  "resourceName",
] as const;

/**
 * N4.1.2.1.x and M4. Unknown keys are ignored: those without a period are reserved by the spec
 * (a later version may define them), those with one are other implementations' (N4.1.2).
 */
function parseSelectionObject(el: unknown, index: number, ctx: ItemContext): NetworkSelection {
  let item = `item ${index + 1}`;
  if (!isPlainObject(el)) fail(item, `must be an object, got ${show(el)}`);
  const mustBeString = (key: (typeof STRING_KEYS)[number]) => {
    if (el[key] !== undefined && typeof el[key] !== "string")
      fail(item, `key "${key}" must be a string, got ${show(el[key])}`);
  };
  if (el.name === undefined) fail(item, 'key "name" is required');
  mustBeString("name");
  mustBeString("namespace");
  const name = el.name as string;
  const namespace =
    el.namespace === undefined || el.namespace === "" ? ctx.podNamespace : (el.namespace as string);
  item = `item ${index + 1} (${show(`${namespace}/${name}`)})`;
  for (const key of STRING_KEYS) mustBeString(key);
  checkName(item, el.namespace ? 'key "namespace"' : "namespace (the pod's)", namespace);
  checkName(item, 'key "name"', name);
  const sel: NetworkSelection = { name, namespace };

  // M4: `interfaceRequest` is the older name of `interface`; both may be given only if they agree.
  if (
    el.interface !== undefined &&
    el.interfaceRequest !== undefined &&
    el.interface !== el.interfaceRequest
  ) {
    fail(
      item,
      `keys "interface" (${show(el.interface)}) and "interfaceRequest" ` +
        `(${show(el.interfaceRequest)}) disagree`,
    );
  }
  const ifKey = el.interface !== undefined ? "interface" : "interfaceRequest";
  if (el[ifKey] !== undefined)
    sel.interfaceRequest = checkInterface(item, `key "${ifKey}"`, el[ifKey] as string, ctx);
  if (el.ips !== undefined) sel.ips = parseIps(item, el.ips);
  if (el.mac !== undefined) sel.mac = parseMac(item, el.mac as string);
  if (el["infiniband-guid"] !== undefined) sel.infinibandGuid = el["infiniband-guid"] as string;
  // An empty deviceID asks for nothing, as in Multus (Go's omitempty).
  if (el.deviceID !== undefined && el.deviceID !== "") {
    sel.deviceID = checkDeviceId(item, el.deviceID as string);
  }
  // M19: the device pool for this attachment; the NAD decides whether it may (devices.ts).
  if (el.resourceName !== undefined && el.resourceName !== "") {
    sel.resourceName = checkResourceName(item, el.resourceName as string);
  }
  readCapabilityKeys(el, sel, item);
  return sel;
}

/** The keys passed on to delegates: `cni-args` and the capability args, each checked for shape. */
function readCapabilityKeys(
  el: Record<string, unknown>,
  sel: NetworkSelection,
  item: string,
): void {
  if (el["cni-args"] !== undefined) {
    if (!isPlainObject(el["cni-args"]))
      fail(item, `key "cni-args" must be an object, got ${show(el["cni-args"])}`);
    sel.cniArgs = el["cni-args"];
  }
  if (el.portMappings !== undefined) {
    if (!Array.isArray(el.portMappings))
      fail(item, `key "portMappings" must be a list, got ${show(el.portMappings)}`);
    sel.portMappings = el.portMappings;
  }
  if (el.bandwidth !== undefined) {
    if (!isPlainObject(el.bandwidth))
      fail(item, `key "bandwidth" must be an object, got ${show(el.bandwidth)}`);
    sel.bandwidth = el.bandwidth;
  }
  if (el["default-route"] !== undefined) {
    const gws = el["default-route"];
    if (!Array.isArray(gws) || gws.some((g) => typeof g !== "string" || !isIp(g, false))) {
      fail(item, `key "default-route" must be a list of gateway IP addresses, got ${show(gws)}`);
    }
    sel.defaultRoute = gws as string[];
  }
}

/** A prefix length in plain decimal: `/24`, not `/024` or `/+24`. */
const PREFIX = /^(0|[1-9][0-9]{0,2})$/;

/**
 * An IPv4 or IPv6 address as Go's `net.ParseIP`/`net.ParseCIDR` would take it (what delegates
 * parse `args.cni.ips` with): no zone (`fe80::1%eth0`), no leading zeros, a prefix only where
 * allowed and in range for the family.
 */
function isIp(text: string, allowPrefix: boolean): boolean {
  const slash = text.indexOf("/");
  if (slash >= 0 && (!allowPrefix || !PREFIX.test(text.slice(slash + 1)))) return false;
  const addr = slash >= 0 ? text.slice(0, slash) : text;
  if (addr.includes("%") || !isIpText(addr)) return false;
  return slash < 0 || Number(text.slice(slash + 1)) <= (addr.includes(":") ? 128 : 32);
}

/**
 * N4.1.2.1.3: a non-empty list of IPv4/IPv6 addresses, a CIDR suffix allowed (as Multus accepts).
 */
function parseIps(item: string, ips: unknown): string[] {
  if (!Array.isArray(ips) || ips.length === 0)
    fail(item, `key "ips" must be a non-empty list of IP addresses, got ${show(ips)}`);
  for (const ip of ips) {
    if (typeof ip !== "string" || !isIp(ip, true))
      fail(
        item,
        `key "ips" has ${show(ip)}, which is not an IPv4 or IPv6 address (a /prefix is allowed)`,
      );
  }
  return ips as string[];
}

/**
 * The bytes of a hardware address written as hex pairs with one separator (`:` or `-`), as Go's
 * `net.ParseMAC`.
 */
function macBytes(mac: string): number[] | undefined {
  const sep = mac[2];
  if (sep !== ":" && sep !== "-") return undefined;
  const parts = mac.split(sep);
  if (!parts.every((p) => /^[0-9a-fA-F]{2}$/.test(p))) return undefined;
  return parts.map((p) => parseInt(p, 16));
}

/**
 * N4.1.2.1.4: a 6-byte Ethernet or a 20-byte IP-over-InfiniBand address. An Ethernet address must
 * also be one the kernel lets an interface have (not all zeros, not multicast or broadcast), so
 * the failure names the annotation instead of surfacing later as a delegate's EADDRNOTAVAIL.
 */
function parseMac(item: string, mac: string): string {
  const bytes = macBytes(mac);
  if (!bytes || (bytes.length !== 6 && bytes.length !== 20)) {
    fail(
      item,
      `key "mac" ${show(mac)} is not a 6-byte Ethernet or 20-byte InfiniBand hardware address ` +
        `(hex pairs separated by ':' or '-')`,
    );
  }
  if (bytes.length === 6 && (bytes.every((b) => b === 0) || (bytes[0]! & 1) === 1)) {
    fail(
      item,
      `key "mac" ${show(mac)} is not a unicast Ethernet address (all zeros, multicast and ` +
        `broadcast cannot be set on an interface)`,
    );
  }
  return mac;
}
