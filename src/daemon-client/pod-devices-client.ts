/**
 * The CNI process asking `plexus daemon` for a pod's devices (M10): the daemon keeps one channel
 * to kubelet's pod-resources socket, so an ADD with a device network loads no gRPC client and
 * opens no connection to kubelet. Any failure of the daemon (missing, slow, refusing, kubelet
 * unreachable from it) is a DaemonUnavailable: the caller asks kubelet itself.
 */
import { socketTransport } from "../kubeapi/http-transport";
import { DaemonUnavailable } from "./client";
import { DAEMON_API } from "./protocol";

export interface DaemonDevicesQuery {
  socketPath: string;
  namespace: string;
  name: string;
  resourceNames: string[];
  /** kubelet's budget inside the daemon; the daemon gets a little more to answer. */
  timeoutMs: number;
}

export async function daemonPodDevices(query: DaemonDevicesQuery): Promise<Map<string, string[]>> {
  const http = socketTransport({ socketPath: query.socketPath, maxBytes: 1024 * 1024 });
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), query.timeoutMs + 500);
  try {
    const params = new URLSearchParams({
      namespace: query.namespace,
      name: query.name,
      resourceNames: query.resourceNames.join(","),
      timeoutMs: String(query.timeoutMs),
    });
    const answer = await http
      .request({
        method: "GET",
        url: new URL(`http://plexus${DAEMON_API.podDevices}?${params}`),
        signal: ac.signal,
      })
      .catch((err: unknown) => {
        throw new DaemonUnavailable(`${(err as Error).message} (${query.socketPath})`);
      });
    if (answer.status !== 200 || !answer.json)
      throw new DaemonUnavailable(
        `the daemon answered HTTP ${answer.status}: ${answer.body.toString("utf8").slice(0, 300)}`,
      );
    return devicesFrom(answer.json.devices);
  } finally {
    clearTimeout(timer);
    http.close();
  }
}

function devicesFrom(value: unknown): Map<string, string[]> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new DaemonUnavailable("the daemon answered a devices request without devices");
  const out = new Map<string, string[]>();
  for (const [k, ids] of Object.entries(value)) {
    if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string"))
      throw new DaemonUnavailable(`the daemon answered malformed devices for ${k}`);
    out.set(k, ids as string[]);
  }
  return out;
}
