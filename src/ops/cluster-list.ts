/**
 * Whole-cluster lists for `plexus validate` (every NAD, this node's pods): the manifest directory
 * (fileClusterDir) or the API server, paged like the daemon's lists. The CNI path never lists.
 */
import type { PlexusConf } from "../config/plugin-conf";
import { loadKubeApi } from "../kubeapi/index";
import { NAD_GROUP, NAD_PLURAL, NAD_VERSION, trimNad, trimPod } from "../cluster/objects";
import type { Logger } from "../log/logger";
import {
  DRA_GROUP,
  DRA_VERSION,
  type ResourceSlice,
  trimResourceSlice,
} from "../cluster/dra-objects";
import type { Nad, Pod } from "../npwg/types";

export interface ClusterLists {
  nads(): Promise<Nad[]>;
  /** Pods of `nodeName` (all pods of a manifest directory). */
  pods(nodeName: string): Promise<Pod[]>;
  /** M10, DRA: the ResourceSlices of `nodeName`. */
  slices?(nodeName: string): Promise<ResourceSlice[]>;
  close(): Promise<void>;
}

export async function clusterLists(
  conf: PlexusConf,
  env: Readonly<Record<string, string | undefined>>,
  log: Logger,
): Promise<ClusterLists | undefined> {
  if (conf.fileClusterDir) {
    const { FileCluster } = await import("../cluster/file-cluster");
    const fc = new FileCluster(conf.fileClusterDir);
    return {
      nads: () => fc.listNads(),
      pods: () => fc.listPods(),
      slices: (nodeName) => fc.listNodeSlices(nodeName),
      close: async () => {},
    };
  }
  const api = await loadKubeApi(conf, {
    env,
    log,
    client: {
      retry: { requestTimeoutMs: conf.apiRequestTimeoutMs, totalTimeoutMs: conf.apiTotalTimeoutMs },
      maxResponseBytes: 64 * 1024 * 1024,
    },
  });
  if (!api) return undefined;
  const all = async <T>(
    path: string,
    query: Record<string, string>,
    trim: (o: Record<string, unknown>) => T | undefined,
  ): Promise<T[]> => {
    const out: T[] = [];
    let cont: string | undefined;
    do {
      const page = await api.list(path, {
        ...query,
        limit: "500",
        ...(cont ? { continue: cont } : {}),
      });
      for (const item of Array.isArray(page.items) ? page.items : []) {
        const t = trim(item as Record<string, unknown>);
        if (t) out.push(t);
      }
      const meta = (page.metadata ?? {}) as Record<string, unknown>;
      cont = typeof meta.continue === "string" && meta.continue ? meta.continue : undefined;
    } while (cont);
    return out;
  };
  return {
    nads: () => all(`/apis/${NAD_GROUP}/${NAD_VERSION}/${NAD_PLURAL}`, {}, (o) => trimNad(o, "")),
    pods: (nodeName) =>
      all("/api/v1/pods", { fieldSelector: `spec.nodeName=${nodeName}` }, (o) => trimPod(o, "")),
    slices: (nodeName) =>
      all(
        `/apis/${DRA_GROUP}/${DRA_VERSION}/resourceslices`,
        { fieldSelector: `spec.nodeName=${nodeName}` },
        (o) => trimResourceSlice(o),
      ),
    close: () => api.close(),
  };
}
