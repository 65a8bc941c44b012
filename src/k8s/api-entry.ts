/**
 * What needs @kubernetes/client-node (slow to initialise): imported dynamically
 * (src/k8s/index.ts), so only the calls where it earns its cost initialise it: a kubeconfig with
 * a credential plugin, and the node daemon's watch caches (pods, NADs, DRA).
 */
export { pluginKubeSource } from "./client-node-auth";
export { WatchCaches } from "./watch-cache";
export { DraCaches } from "./dra-watch";
