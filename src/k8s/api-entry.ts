/**
 * Entry of the Kubernetes API bundle (dist/plexus-k8s.cjs): @kubernetes/client-node is ~2 MB and
 * ~130 ms to initialise, so it lives in its own bundle, loaded only when a pod needs the API
 * server; every other call keeps the small core.
 */
export { createClientNodeKube } from "./client-node";
export { loadKubeSource } from "./kubeconfig";
