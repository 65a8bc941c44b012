/**
 * Which networks a container gets, in order (N6.2, N4.2): without Kubernetes, the inline
 * `delegates`, the first being the default network on CNI_IFNAME and the others on net1, net2, …
 * (Multus's naming). The Kubernetes path extends this with the pod's selections.
 */
import type { PlexusConf } from "../config/plugin-conf";
import type { Attachment } from "../nodestate/record";

export function planFromDelegates(conf: PlexusConf, ifName: string): Attachment[] {
  return conf.delegates.map((d, i) => ({
    network: d.name,
    ifName: i === 0 ? ifName : `net${i}`,
    isDefault: i === 0,
    conf: d,
  }));
}
