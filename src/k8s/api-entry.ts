/**
 * What needs @kubernetes/client-node (~2 MB bundled, slow to initialise): imported dynamically
 * (src/k8s/index.ts), so only the calls where it earns its cost initialise it: a kubeconfig with
 * a credential plugin, and the node daemon's watch caches.
 */
export { pluginKubeSource } from "./client-node-auth";
export { WatchCaches } from "./watch-cache";
export { DraCaches } from "./dra-watch";
