/**
 * Entry of the Kubernetes API bundle (dist/plexus-k8s.cjs): @kubernetes/client-node is ~2 MB and
 * ~130 ms to initialise, so it lives in its own bundle, loaded only where it earns its cost: a
 * kubeconfig with a credential plugin, and the node daemon's watch caches.
 */
export { pluginKubeSource } from "./client-node-auth";
export { WatchCaches } from "./watch-cache";
// The daemon's metrics (prom-client) travel here too: the daemon loads this bundle anyway, a CNI call never needs them.
export { DaemonMetrics } from "../daemon/metrics";
