/**
 * M10: where a call learns the pod's devices: the node's `plexus daemon` first when its socket is
 * there (one channel to kubelet, no gRPC start-up in the CNI process), else or on its failure
 * kubelet's pod-resources socket, through the gRPC client loaded only then (a plain ADD never pays
 * for it).
 */
import type { PlexusConf } from "../config/plugin-conf";
import { podDeviceIds } from "../kubelet/pod-devices";
import type { Logger } from "../log/logger";
import type { PodDevicesLookup } from "../planning/devices";

type LookupConf = Pick<PlexusConf, "podResourcesSocket" | "podResourcesTimeoutMs" | "daemonSocket">;

export function podDevicesLookup(conf: LookupConf, log: Logger): PodDevicesLookup {
  return async (q) => {
    const { daemonSocketPresent, DaemonUnavailable } = await import("../daemon-client/client");
    if (daemonSocketPresent(conf.daemonSocket)) {
      try {
        return await (await import("../daemon-client/pod-devices-client")).daemonPodDevices({
          socketPath: conf.daemonSocket,
          timeoutMs: conf.podResourcesTimeoutMs,
          ...q,
        });
      } catch (err) {
        if (!(err instanceof DaemonUnavailable)) throw err;
        log.warn(
          { socket: conf.daemonSocket, why: err.message },
          "plexus daemon could not give the pod's devices; asking kubelet directly",
        );
      }
    }
    return podDeviceIds({
      socket: conf.podResourcesSocket,
      timeoutMs: conf.podResourcesTimeoutMs,
      ...q,
    });
  };
}
