/**
 * `plexus validate` for device networks through DRA (M10): whether a driver on this node
 * publishes devices with the NAD's resourceName (the `k8s.cni.cncf.io/resourceName` attribute of
 * a ResourceSlice's devices), the attribute Plexus matches a pod's claimed devices against.
 */
import { RESOURCE_NAME_ATTRIBUTE, type ResourceSlice } from "../cluster/dra-objects";
import { stringAttribute } from "../dra/pod-claims";
import type { Nad } from "../npwg/types";
import { resourceNameOf } from "../planning/devices";

export interface DraFinding {
  level: "ok" | "warning";
  msg: string;
}

/** Undefined: the NAD has no resourceName, or the node's slices are unknown (a note says why). */
export function checkResourceName(
  nad: Nad,
  slices: readonly ResourceSlice[] | undefined,
  nodeName: string,
): DraFinding | undefined {
  const resourceName = resourceNameOf(nad);
  if (!resourceName || !slices) return undefined;
  const drivers = new Map<string, number>();
  for (const s of slices)
    for (const d of s.spec.devices) {
      const a = stringAttribute(d, RESOURCE_NAME_ATTRIBUTE);
      if (a.state === "found" && a.value === resourceName)
        drivers.set(s.spec.driver, (drivers.get(s.spec.driver) ?? 0) + 1);
    }
  if (drivers.size === 0)
    return {
      level: "warning",
      msg:
        `resourceName ${resourceName}: no DRA driver on node ${nodeName} publishes a device with ` +
        `${RESOURCE_NAME_ATTRIBUTE}=${resourceName} in its ResourceSlices; pods need a device ` +
        `plugin of that name (kubelet) or such a driver`,
    };
  const list = [...drivers].map(([d, n]) => `${d} (${n} device(s))`).join(", ");
  return {
    level: "ok",
    msg: `resourceName ${resourceName}: published on node ${nodeName} by ${list}`,
  };
}
