/**
 * The rules of the delegate gate (gate.ts): what a tenant's network may make Plexus run. A tenant's
 * network is one a pod's annotations chose (a selection, or the default-network override); the
 * administrator's own networks (`clusterNetwork`, `delegates`, `defaultNetworks`, the auxiliary
 * chain) are trusted. Each refusal is code 7 naming the network, what it has and the key that
 * changes it.
 */
import type { ConfList } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";
import { foldKey } from "../cni/keys";
import type { PlexusConf } from "../config/plugin-conf";
import { checkDeviceChoice, checkNamespaceAccess } from "../npwg/isolation";
import { checkPluginTypes } from "../npwg/policy";

/** What the gate reads of Plexus's config. */
export type GatePolicy = Pick<
  PlexusConf,
  | "allowedPluginTypes"
  | "namespaceIsolation"
  | "globalNamespaces"
  | "multusNamespace"
  | "allowUnallocatedDeviceIDs"
  | "allowHostPorts"
>;

/** One network run for a pod: an attachment as the planner made it or the record keeps it. */
export interface GateSubject {
  network: string;
  ifName: string;
  isDefault: boolean;
  conf: ConfList;
  /** The annotation element that chose it: a tenant's network. */
  selection?: { namespace: string; name: string; deviceID?: string | undefined };
  /** The pod's default-network override chose it: a tenant's network too. */
  chosenByPod?: true;
  capabilityArgs?: Record<string, unknown>;
  /** The allocated device it was given (kubelet or a ResourceClaim): the only one it may name. */
  device?: { deviceID: string };
}

function isTenantNetwork(subject: Pick<GateSubject, "selection" | "chosenByPod">): boolean {
  return subject.selection !== undefined || subject.chosenByPod === true;
}

/** Every rule, for every verb: throws 7 on the first that refuses. */
export function checkPolicy(
  subject: GateSubject,
  ctx: { policy: GatePolicy; podNamespace?: string | undefined },
): void {
  if (!isTenantNetwork(subject)) return;
  const { policy } = ctx;
  checkPluginTypes(subject.conf, policy.allowedPluginTypes, subject.network);
  if (subject.selection && ctx.podNamespace !== undefined)
    checkNamespaceAccess({ podNamespace: ctx.podNamespace, ref: subject.selection, conf: policy });
  checkDevices(subject, policy);
  checkHostPorts(subject, policy);
}

const DEVICE_KEYS = new Set(["deviceID", "pciBusID"].map(foldKey));
const RUNTIME_CONFIG = foldKey("runtimeConfig");

/**
 * Device keys a tenant's network carries, in any spelling a Go plugin reads as the same field:
 * every plugin's top-level `deviceID` and `pciBusID`, its `runtimeConfig.deviceID`, and the
 * selection's `deviceID` capability value.
 */
function deviceValues(subject: GateSubject): Array<{ key: string; value: unknown }> {
  const found: Array<{ key: string; value: unknown }> = [];
  const scan = (obj: Record<string, unknown>, where: string) => {
    for (const [key, value] of Object.entries(obj))
      if (DEVICE_KEYS.has(foldKey(key))) found.push({ key: `${where}${key}`, value });
  };
  for (const plugin of subject.conf.plugins) {
    scan(plugin, "");
    for (const [key, value] of Object.entries(plugin))
      if (foldKey(key) === RUNTIME_CONFIG && isPlainObject(value)) scan(value, `${key}.`);
  }
  const cap = subject.capabilityArgs?.deviceID;
  if (cap !== undefined) found.push({ key: "deviceID (the selection's)", value: cap });
  return found;
}

/**
 * A device a tenant's network names must be the one its allocation gave it; with no allocation,
 * under namespaceIsolation, none at all unless `allowUnallocatedDeviceIDs` says so (a NAD's own
 * `deviceID` is hardware the tenant chose, exactly as a selection's is).
 */
function checkDevices(subject: GateSubject, policy: GatePolicy): void {
  const allocated = subject.device?.deviceID;
  for (const { key, value } of deviceValues(subject)) {
    if (allocated !== undefined) {
      if (value === allocated) continue;
      throw new CniError(
        Code.InvalidNetworkConfig,
        `network ${subject.network}: key ${JSON.stringify(key)} names device ` +
          `${JSON.stringify(value)}, but the pod was allocated ${JSON.stringify(allocated)} for ` +
          "this network; the allocated device wins: remove the key from the NAD or the selection",
      );
    }
    const deviceID = typeof value === "string" ? value : JSON.stringify(value);
    checkDeviceChoice({
      network: subject.network,
      deviceID,
      hasResourceName: false,
      conf: policy,
      key,
    });
  }
}

/** A `hostPort` opens a port on the node itself: under isolation, only where the admin allows. */
function checkHostPorts(subject: GateSubject, policy: GatePolicy): void {
  if (!policy.namespaceIsolation || policy.allowHostPorts) return;
  const mappings = subject.capabilityArgs?.portMappings;
  if (!Array.isArray(mappings)) return;
  const withHostPort = mappings.find(
    (m) => isPlainObject(m) && Object.keys(m).some((k) => foldKey(k) === HOST_PORT),
  );
  if (withHostPort === undefined) return;
  throw new CniError(
    Code.InvalidNetworkConfig,
    `network ${subject.network}: the pod's selection asks for portMappings with a hostPort ` +
      `(${JSON.stringify(withHostPort)}), which opens a port on the node; under ` +
      'namespaceIsolation a pod may not do that unless "allowHostPorts": true is set in ' +
      "Plexus's config",
  );
}

const HOST_PORT = foldKey("hostPort");
