/**
 * The one question the rest of Plexus asks kubelet (M10): which devices the device plugins
 * allocated to this pod, per resource name. Nothing else of this folder is imported from outside
 * it (.dependency-cruiser.cjs holds that): the pod-resources wire stack behind it (pod-resources.ts
 * over grpc-unary.ts, h2c.ts and hpack.ts) is imported on the first query, so a plain ADD never
 * loads it, and another transport (node:http2, say) could replace it here unseen by the callers.
 */
import type { PodResourcesClient } from "./pod-resources";

export interface PodDevicesQuery {
  namespace: string;
  name: string;
  /** For messages: the resource(s) the answer is wanted for. */
  resourceNames: readonly string[];
  /** The whole query's budget. */
  timeoutMs: number;
}

/** The pod's device IDs per resource name, across all its containers, sorted. */
export type PodDevices = Map<string, string[]>;

export interface KubeletDevices {
  devices(query: PodDevicesQuery): Promise<PodDevices>;
  close(): void;
}

/**
 * A channel to kubelet's pod-resources socket, opened on the first query: the daemon keeps one
 * for its life (reconnected on the next query after kubelet restarts).
 */
export function kubeletDevices(socket: string): KubeletDevices {
  let client: PodResourcesClient | undefined;
  return {
    async devices(query) {
      client ??= new (await import("./pod-resources")).PodResourcesClient(socket);
      return client.devices(query);
    },
    close: () => client?.close(),
  };
}

/** One query on a channel of its own (the CNI process: one ADD, one query). */
export async function podDeviceIds(
  query: PodDevicesQuery & { socket: string },
): Promise<PodDevices> {
  const kubelet = kubeletDevices(query.socket);
  try {
    return await kubelet.devices(query);
  } finally {
    kubelet.close();
  }
}
