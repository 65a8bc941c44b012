/**
 * The daemon's detector for pods that run without networks they asked for: a pod of this node
 * that is Running while its `network-status` lacks a network its `networks` annotation selects
 * (or has no network-status at all: created before Plexus was installed, or by a runtime whose
 * config put another plugin first). Each such pod gets one Warning event `NetworksMissing` per
 * UID and counts in `plexus_pods_missing_networks`. It reads only the daemon's watch cache.
 *
 * Not flagged: hostNetwork pods (no CNI at all), pods that are not Running or are being deleted,
 * pods whose annotation asks for nothing, and pods for a grace period after the daemon first sees
 * them lacking (the status write of an ADD that just finished may still be on its way). Only the
 * annotation's networks are checked, which apply in `systemNamespaces` too; the config's
 * `defaultNetworks` are not (the daemon does not read the plugin's config).
 */
import type { KubeApi } from "../cluster/kube-api";
import type { Logger } from "../log/logger";
import { parseNetworksAnnotation } from "../npwg/annotation";
import { networkStatusEntries } from "../npwg/status";
import { NETWORK_STATUS_ANNOTATION, NETWORKS_ANNOTATION, type Pod } from "../npwg/types";

/**
 * The networks a Running pod asked for and does not have (`namespace/name`, `@interface` when one
 * was requested); undefined when none.
 */
export function missingNetworks(pod: Pod): string[] | undefined {
  if (pod.spec?.hostNetwork || pod.status?.phase !== "Running" || pod.metadata.deletionTimestamp)
    return undefined;
  const wanted = pod.metadata.annotations?.[NETWORKS_ANNOTATION];
  if (!wanted?.trim()) return undefined;
  let selections;
  try {
    selections = parseNetworksAnnotation(wanted, pod.metadata.namespace, { maxSelections: 1024 });
  } catch {
    return [`every network of its unparsable annotation ${JSON.stringify(wanted.slice(0, 200))}`];
  }
  const have = networkStatusEntries(pod.metadata.annotations?.[NETWORK_STATUS_ANNOTATION]);
  const missing: string[] = [];
  for (const sel of selections) {
    const name = `${sel.namespace}/${sel.name}`;
    const i = have.findIndex(
      (e) => e.name === name && (!sel.interfaceRequest || e.interface === sel.interfaceRequest),
    );
    if (i >= 0) have.splice(i, 1);
    else missing.push(sel.interfaceRequest ? `${name}@${sel.interfaceRequest}` : name);
  }
  return missing.length ? missing : undefined;
}

export interface DetectorOptions {
  /** The watch cache's pods of this node. */
  pods(): Pod[];
  /** Where the events go (the daemon's API client). */
  api: Pick<KubeApi, "recordEvent">;
  log: Logger;
  /** How long a pod must stay Running without its networks before it is reported (default 30 s). */
  graceMs?: number;
  /** How often the cache is scanned (default: a third of the grace period, 1–10 s). */
  intervalMs?: number;
  now?: () => number;
}

export class MissingNetworksDetector {
  private readonly firstSeen = new Map<string, number>();
  private readonly reported = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Pods reported and still missing networks (the metric). */
  flagged = 0;

  constructor(private readonly options: DetectorOptions) {}

  private get graceMs(): number {
    return this.options.graceMs ?? 30_000;
  }

  /** One pass over the cache; events for pods past their grace period, once per UID. */
  async scan(): Promise<void> {
    const now = (this.options.now ?? Date.now)();
    const seen = new Set<string>();
    let flagged = 0;
    for (const pod of this.options.pods()) {
      const uid = pod.metadata.uid ?? `${pod.metadata.namespace}/${pod.metadata.name}`;
      const missing = missingNetworks(pod);
      if (!missing) continue;
      seen.add(uid);
      const since = this.firstSeen.get(uid) ?? now;
      this.firstSeen.set(uid, since);
      if (now - since < this.graceMs) continue;
      flagged++;
      // Marked only once the event is written: an API outage delays the event, never loses it.
      if (!this.reported.has(uid) && (await this.report(pod, missing))) this.reported.add(uid);
    }
    for (const uid of this.firstSeen.keys()) if (!seen.has(uid)) this.firstSeen.delete(uid);
    // A pod that is gone (or has its networks now) may be reported again only as a new UID.
    const live = new Set(
      this.options
        .pods()
        .map((p) => p.metadata.uid ?? `${p.metadata.namespace}/${p.metadata.name}`),
    );
    for (const uid of this.reported) if (!live.has(uid)) this.reported.delete(uid);
    this.flagged = flagged;
  }

  private async report(pod: Pod, missing: string[]): Promise<boolean> {
    const { namespace, name, uid } = pod.metadata;
    const status = pod.metadata.annotations?.[NETWORK_STATUS_ANNOTATION]
      ? "its network-status lacks them"
      : "it has no network-status at all";
    const message =
      `pod is Running without network(s) ${missing.join(", ")} that its ${NETWORKS_ANNOTATION} ` +
      `annotation asks for (${status}): its sandbox was set up without Plexus (created before ` +
      `Plexus was installed, or the runtime used another CNI config); recreate the pod, and run ` +
      `plexus doctor on the node`;
    this.options.log.warn(
      { pod: `${namespace}/${name}`, missing },
      "pod is running without networks it asked for",
    );
    try {
      await this.options.api.recordEvent(
        { namespace, name, ...(uid ? { uid } : {}) },
        { type: "Warning", reason: "NetworksMissing", message },
      );
      return true;
    } catch (err) {
      this.options.log.warn(
        { pod: `${namespace}/${name}`, err: err instanceof Error ? err.message : String(err) },
        "could not record the NetworksMissing event; retrying at the next scan",
      );
      return false;
    }
  }

  start(): void {
    const every = this.options.intervalMs ?? Math.min(10_000, Math.max(1000, this.graceMs / 3));
    this.timer = setInterval(() => {
      this.running ??= this.scan()
        .catch((err: unknown) =>
          this.options.log.error(
            { err: err instanceof Error ? err.message : String(err) },
            "missing-networks scan failed",
          ),
        )
        .finally(() => (this.running = undefined));
    }, every);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
