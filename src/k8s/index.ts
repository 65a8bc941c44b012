/**
 * Which Kubernetes a CNI call talks to, built only when a pod needs it (VERSION, STATUS and a DEL
 * served from the record never load any of it): a directory of manifests (`fileClusterDir`,
 * the embedded default), or none.
 */
import { CniError, Code } from "../cni/errors";
import type { KubeApi } from "./kube-api";

export interface KubeConfigKeys {
  fileClusterDir?: string | undefined;
  kubeconfig?: string | undefined;
}

export function kubeFactory(conf: KubeConfigKeys): () => Promise<KubeApi | undefined> {
  let built: Promise<KubeApi | undefined> | undefined;
  return () => (built ??= build(conf));
}

async function build(conf: KubeConfigKeys): Promise<KubeApi | undefined> {
  if (conf.fileClusterDir) {
    const { FileCluster } = await import("./file-cluster");
    return new FileCluster(conf.fileClusterDir);
  }
  if (conf.kubeconfig) {
    // The API-server client (@kubernetes/client-node) is the next step; until it lands a pod must
    // not be attached to its default network only, as if it had no annotation.
    throw new CniError(
      Code.InvalidNetworkConfig,
      `"kubeconfig" (${conf.kubeconfig}) is set, but this build of Plexus does not talk to an API server yet; use "fileClusterDir" or drop "kubeconfig" to attach the default network(s) only`,
    );
  }
  return undefined;
}
