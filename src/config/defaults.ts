/**
 * Default paths and times named once: the plugin config (plugin-conf.ts), the daemon's flags and
 * their help (daemon/main.ts, cli/commands.ts), the installer and the in-cluster credentials read
 * them from here. No imports, so whatever reads a default (the command line's help among them)
 * pulls in nothing else with it.
 */

/** Plexus's state dir on the node: container records, cached results, locks. */
export const DEFAULT_CNI_DIR = "/var/lib/cni/plexus";
/** The node's CNI config dir, as runtimes default it. */
export const DEFAULT_CONF_DIR = "/etc/cni/net.d";
/** Where the installer container sees the node's / (deploy/daemonset.yaml mounts it there). */
export const DEFAULT_HOST_PREFIX = "/host";
/** The kubeconfig the installer writes, as a path on the node. */
export const DEFAULT_KUBECONFIG_FILE_HOST = "/etc/cni/net.d/plexus.d/plexus.kubeconfig";

/**
 * Where `plexus daemon` listens by default (deploy/daemonset.yaml mounts the host's /run/plexus).
 */
export const DEFAULT_DAEMON_SOCKET = "/run/plexus/plexus.sock";
/** M10: kubelet's pod-resources API. */
export const DEFAULT_POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock";
/** M10: the NPWG device-info specification's base directory. */
export const DEFAULT_DEVICE_INFO_DIR = "/var/run/k8s.cni.cncf.io/devinfo";
/** Where a pod's service-account token and CA are mounted (the in-cluster configuration). */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/**
 * One API request, and one API operation with its retries (the plugin's apiRequestTimeoutSeconds,
 * apiTotalTimeoutSeconds).
 */
export const DEFAULT_API_REQUEST_TIMEOUT_MS = 5_000;
export const DEFAULT_API_TOTAL_TIMEOUT_MS = 20_000;
/** How long the CNI process waits for `plexus daemon`'s answer (daemonTimeoutMilliseconds). */
export const DEFAULT_DAEMON_TIMEOUT_MS = 1_000;

/** `plexus daemon`'s time flags, in seconds. */
export const DAEMON_DEFAULT_SECONDS = {
  apiRequestTimeout: 10,
  apiTotalTimeout: 30,
  missingNetworksGrace: 30,
  housekeepingInterval: 30,
} as const;
