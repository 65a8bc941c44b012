/**
 * What the installer says loudly about Multus (M18): each change once in its log (not once per
 * pass), and, when it can reach the API server and knows its own pod (the DaemonSet passes
 * POD_NAME and POD_NAMESPACE), as a Kubernetes Event on that pod, which `kubectl describe`,
 * `kubectl get events` and an event exporter show beside the node's other events. The Event is best
 * effort: a failure to record it is logged and changes nothing on the node.
 */
import { createHash } from "node:crypto";
import type { PodEvent } from "../cluster/kube-api";
import { readCredentialFile, type KubeSource } from "../kubeapi/kubeconfig";
import type { Logger } from "../log/logger";
import type { InstallOptions } from "./options";

/** One thing worth an Event on the install pod. */
export type Alert = PodEvent;

/** Keys of what was said already: a message is repeated only when what it is about changed. */
export type Said = Set<string>;

/** Runs `say` unless `key` was said already; true when it ran. */
export function sayOnce(said: Said, key: string, say: () => void): boolean {
  if (said.has(key)) return false;
  said.add(key);
  say();
  return true;
}

/** A short digest of a file's text, to key "once per change". */
export function digestOf(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

export interface AlertSink {
  post(alerts: readonly Alert[]): Promise<void>;
}

/** Requests give up fast: a pass must not wait on an Event. */
const EVENT_TIMEOUT_MS = 5_000;

/** The installer's own credentials, as it copies them for the plugin (options.ts). */
function installerSource(options: InstallOptions, server: string): KubeSource {
  return {
    credentials: `the installer's service-account token ${options.sourceTokenFile}`,
    server,
    tls: { ca: readCredentialFile(options.sourceCaFile) },
    auth: {
      headers: async () => {
        const token = readCredentialFile(options.sourceTokenFile).toString("utf8").trim();
        return { authorization: `Bearer ${token}` };
      },
    },
  };
}

/** Events on the install pod, or only the log when the pod or the API server is unknown. */
export function alertSink(options: InstallOptions, log: Logger): AlertSink {
  const pod = options.installPod;
  const server = options.apiServer;
  if (!pod || !server || options.withoutKubernetes) {
    log.debug("no Events: POD_NAME, POD_NAMESPACE or the API server is not known");
    return { post: async () => {} };
  }
  return {
    async post(alerts) {
      if (alerts.length === 0) return;
      try {
        const { RestKube } = await import("../kubeapi/rest-kube");
        const api = new RestKube(installerSource(options, server), {
          retry: { requestTimeoutMs: EVENT_TIMEOUT_MS, totalTimeoutMs: EVENT_TIMEOUT_MS },
          userAgent: "plexus-install",
        });
        try {
          for (const alert of alerts) await api.recordEvent(pod, alert);
        } finally {
          await api.close();
        }
      } catch (err) {
        log.warn(
          { pod: `${pod.namespace}/${pod.name}`, err: (err as Error).message },
          "could not record the installer's Event (the log above says the same)",
        );
      }
    },
  };
}
