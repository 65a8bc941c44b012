/**
 * An in-memory {@link KubeApi} for unit tests (the seam src/cluster/kube-api.ts defines): pods and
 * NADs in maps, every call recorded in order, per-method failures to inject. The integration tier
 * runs the real REST client against the fake API server instead; this one lets the planner and the
 * status publisher be tested without processes or sockets.
 */
import { CniError, Code } from "../../src/cni/errors";
import type { KubeApi, PodEvent } from "../../src/cluster/kube-api";
import type { Nad, Pod } from "../../src/npwg/types";

type PodRef = { namespace: string; name: string; uid?: string };
type Method = "getPod" | "getNad" | "setNetworkStatus" | "recordEvent";

export class FakeKube implements KubeApi {
  readonly pods = new Map<string, Pod>();
  readonly nads = new Map<string, Nad>();
  /**
   * `getPod app/web`, `getNad app/net-a`, `setNetworkStatus app/web`, `recordEvent app/web Warning
   * NoNetworkFound`, …
   */
  readonly calls: string[] = [];
  readonly statuses: Array<{ pod: PodRef; value: string }> = [];
  readonly events: Array<{ pod: PodRef } & PodEvent> = [];
  private readonly failures = new Map<Method, CniError>();

  get requestCount(): number {
    return this.calls.length;
  }

  addPod(
    namespace: string,
    name: string,
    annotations: Record<string, string> = {},
    uid = `uid-${name}`,
  ): this {
    this.pods.set(`${namespace}/${name}`, { metadata: { namespace, name, uid, annotations } });
    return this;
  }

  addNad(
    namespace: string,
    name: string,
    config?: unknown,
    annotations?: Record<string, string>,
  ): this {
    const nad: Nad = { metadata: { namespace, name, ...(annotations ? { annotations } : {}) } };
    if (config !== undefined)
      nad.spec = { config: typeof config === "string" ? config : JSON.stringify(config) };
    this.nads.set(`${namespace}/${name}`, nad);
    return this;
  }

  /** Every later call of `method` fails with this error (104 by default: the API is down). */
  fail(
    method: Method,
    err = new CniError(Code.ApiFailure, `${method}: the API server is unreachable`),
  ): this {
    this.failures.set(method, err);
    return this;
  }

  private call(method: Method, what: string): void {
    this.calls.push(`${method} ${what}`);
    const err = this.failures.get(method);
    if (err) throw err;
  }

  async getPod(namespace: string, name: string): Promise<Pod> {
    this.call("getPod", `${namespace}/${name}`);
    const pod = this.pods.get(`${namespace}/${name}`);
    if (!pod) throw new CniError(Code.UnknownContainer, `pod ${namespace}/${name} does not exist`);
    return structuredClone(pod);
  }

  async getNad(namespace: string, name: string): Promise<Nad | undefined> {
    this.call("getNad", `${namespace}/${name}`);
    const nad = this.nads.get(`${namespace}/${name}`);
    return nad && structuredClone(nad);
  }

  async setNetworkStatus(pod: PodRef, value: string): Promise<void> {
    this.call("setNetworkStatus", `${pod.namespace}/${pod.name}`);
    const current = this.pods.get(`${pod.namespace}/${pod.name}`);
    if (!current || (pod.uid && current.metadata.uid !== pod.uid))
      throw new CniError(Code.UnknownContainer, `pod ${pod.namespace}/${pod.name} is gone`);
    this.statuses.push({ pod, value });
  }

  async recordEvent(pod: PodRef, event: PodEvent): Promise<void> {
    this.call("recordEvent", `${pod.namespace}/${pod.name} ${event.type} ${event.reason}`);
    this.events.push({ pod, ...event });
  }
}
