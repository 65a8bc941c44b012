/**
 * The CNI verbs' wiring: which executor, stores, Kubernetes access and namespace operations a verb
 * gets, and the modules only some calls need, loaded on first use: the annotation parser and
 * network-status publishing for a call with a pod of a cluster, the route code for a selection
 * with `default-route`. VERSION, STATUS, GC, a DEL from the record and an ADD without a pod load
 * none of them.
 */
import type { PlexusConf } from "../config/plugin-conf";
import { kubeFactory, type KubeFactory } from "../sources/kube-factory";
import { podDevicesLookup } from "../sources/pod-devices-lookup";
import { delegateRunLog, type DelegateRunLog } from "../daemon-client/delegate-runs";
import type { Logger } from "../log/logger";
import { assertNetnsUsable, isOwnNetns } from "../netns/check";
import type { NetnsOps } from "../netns/index";
import type { Deps, Loaders } from "../orchestrate/deps";
import { nodeDeps } from "../orchestrate/node-deps";

const lazyLoaders: Loaders = {
  annotation: () => import("../npwg/annotation"),
  publish: () => import("../orchestrate/publish"),
};

const lazyNetns: NetnsOps = {
  assertUsable: assertNetnsUsable,
  setDefaultRoutes: async (netns, routes) =>
    (await import("../netns/routes")).setDefaultRoutes(netns, routes),
  linkExists: async (netns, name) => (await import("../netns/links")).linkExists(netns, name),
  isOwn: isOwnNetns,
};

export function verbDeps(
  conf: PlexusConf,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
): Deps & { kube: KubeFactory; delegateRuns: DelegateRunLog } {
  const kube = kubeFactory(conf, {
    env,
    log,
    client: {
      retry: { requestTimeoutMs: conf.apiRequestTimeoutMs, totalTimeoutMs: conf.apiTotalTimeoutMs },
      // A CNI call exits after its few requests: in the executable Bun's fetch, which loads no
      // Node HTTP modules.
      shortLived: true,
      // One connection: the pod and its NADs are read one after the other on it. A second
      // connection's TCP + TLS handshake costs two round trips and CPU, more than the one round
      // trip it saves for K ≤ 3 networks (docs/benchmarks.md, "Levers, measured").
      maxSockets: 1,
    },
  });
  // M20: the delegates' runs, for the node daemon's metrics at the call's end (run-verb.ts).
  const delegateRuns = delegateRunLog(conf.daemonSocket);
  return {
    ...nodeDeps(conf, log, env),
    kube,
    observe: delegateRuns.observe,
    delegateRuns,
    netns: lazyNetns,
    load: lazyLoaders,
    podDevices: podDevicesLookup(conf, log),
  };
}
