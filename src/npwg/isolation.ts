/**
 * N7.4, M5, B24: with `namespaceIsolation`, a pod may use only NADs of its own namespace and of the
 * `globalNamespaces`. As in Multus, `globalNamespaces` unset (or empty) means `["default"]`
 * (Multus's `NonIsolatedNamespaces` default), and `multusNamespace` is NOT implicitly allowed for
 * the networks annotation: Multus refuses `kube-system/x` there unless listed, and Plexus must not
 * be more permissive.
 *
 * Applied to every reference a POD makes: each networks-annotation item and the
 * `v1.multus-cni.io/default-network` override (Multus forgets the override). For the override, a
 * NAD in `multusNamespace` is allowed as well (`allowMultusNamespace`): that is where the
 * override's bare name points (M5) and where Multus says default networks live, so the common form
 * keeps working; a cross-namespace `ns/name` elsewhere is refused. References from Plexus's own
 * config (`clusterNetwork`, `defaultNetworks`) are the administrator's and are not checked.
 */
import { CniError, Code } from "../cni/errors";

export interface IsolationConf {
  namespaceIsolation: boolean;
  globalNamespaces: readonly string[];
  multusNamespace: string;
}

/** Multus's default for an unset `globalNamespaces`. */
const DEFAULT_GLOBAL_NAMESPACES: readonly string[] = ["default"];

export function effectiveGlobalNamespaces(
  conf: Pick<IsolationConf, "globalNamespaces">,
): readonly string[] {
  return conf.globalNamespaces.length ? conf.globalNamespaces : DEFAULT_GLOBAL_NAMESPACES;
}

export interface NamespaceAccess {
  podNamespace: string;
  ref: { namespace: string; name: string };
  conf: IsolationConf;
  /** Names the reference in the message: "network", "default-network override (…)". */
  what?: string;
  /** The default-network override only: a NAD in multusNamespace is allowed too. */
  allowMultusNamespace?: boolean;
}

export function checkNamespaceAccess(access: NamespaceAccess): void {
  const { podNamespace, ref, conf } = access;
  if (!conf.namespaceIsolation) return;
  const globals = effectiveGlobalNamespaces(conf);
  if (ref.namespace === podNamespace || globals.includes(ref.namespace)) return;
  if (access.allowMultusNamespace && ref.namespace === conf.multusNamespace) return;
  const allowed = [
    `the pod's namespace`,
    ...(access.allowMultusNamespace ? [`multusNamespace ${conf.multusNamespace}`] : []),
    `globalNamespaces (${globals.join(", ")})`,
  ];
  throw new CniError(
    Code.InvalidNetworkConfig,
    `${access.what ?? "network"} ${ref.namespace}/${ref.name} is refused for a pod in namespace ` +
      `${podNamespace}: namespaceIsolation allows only ${allowed.join(", ")}`,
  );
}

/**
 * Under isolation, a NAD without `spec.config` names a config file in the node's CNI config
 * directory: the administrator's networks. Only a NAD the administrator controls may do that (one
 * in `globalNamespaces` or `multusNamespace`); a tenant's NAD named like the admin's network would
 * otherwise attach it (N3.4.1 is about where to look, not who may point there).
 */
export function nadMayUseConfDir(nadNamespace: string, conf: IsolationConf): boolean {
  return (
    !conf.namespaceIsolation ||
    nadNamespace === conf.multusNamespace ||
    effectiveGlobalNamespaces(conf).includes(nadNamespace)
  );
}

/** What the device check reads of Plexus's config. */
export interface DeviceChoiceConf {
  namespaceIsolation: boolean;
  allowUnallocatedDeviceIDs: boolean;
}

/**
 * M10: a `deviceID` in a pod's selection for a network whose NAD has no resourceName names
 * hardware no allocation backs (with host-device, any host interface): under namespaceIsolation a
 * tenant may not choose it, unless `allowUnallocatedDeviceIDs` says so. On a network with a
 * resourceName the allocation decides instead (planning/devices.ts).
 */
export function checkDeviceChoice(choice: {
  network: string;
  deviceID: string | undefined;
  hasResourceName: boolean;
  conf: DeviceChoiceConf;
  /** Where the value is (a NAD's own key); unset: the pod's selection. */
  key?: string;
}): void {
  const { conf, deviceID } = choice;
  if (!deviceID || choice.hasResourceName) return;
  if (!conf.namespaceIsolation || conf.allowUnallocatedDeviceIDs) return;
  const asks =
    choice.key === undefined || choice.key.startsWith("deviceID (the selection")
      ? "the pod's selection asks for deviceID"
      : `the network's config asks for a device with key ${JSON.stringify(choice.key)}:`;
  throw new CniError(
    Code.InvalidNetworkConfig,
    [
      `network ${choice.network}: ${asks}`,
      `${JSON.stringify(deviceID)}, but the network's NAD has no k8s.v1.cni.cncf.io/resourceName,`,
      "so no allocation gives the pod that device; under namespaceIsolation a pod may not choose",
      "hardware itself. Give the NAD a",
      "resourceName (the device then comes from the pod's allocation), or set",
      '"allowUnallocatedDeviceIDs": true in Plexus\'s config',
    ].join(" "),
  );
}
