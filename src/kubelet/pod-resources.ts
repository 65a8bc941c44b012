/**
 * kubelet's pod-resources API (M10): which devices the device plugins allocated to a pod, per
 * resource name, over the unix socket `podResourcesSocket` (`v1.PodResourcesLister`).
 *
 * `Get` (one pod; kubelet ≥ 1.27 with KubeletPodResourcesGet) is asked first, `List` (every pod of
 * the node) when kubelet answers UNIMPLEMENTED. Every call is bounded by one deadline.
 *
 * Loaded only for a NAD with `k8s.v1.cni.cncf.io/resourceName` (a dynamic import): the HTTP/2
 * client's start-up is not paid by a plain ADD. The calls go over a minimal gRPC unary client
 * (./grpc-unary), not @grpc/grpc-js, whose load and channel set-up cost the CNI process more, and
 * the few messages are written and read by hand (./pod-resources-wire), not by a protobuf
 * library. Fields Plexus does not need are skipped on decode.
 */
import { CniError, Code } from "../cni/errors";
import type { H2Peaks } from "./h2c";
import { type GrpcError, GrpcStatus, grpcStatusName, UnixGrpcChannel } from "./grpc-unary";
import {
  decodeGetResponse,
  findPodInList,
  encodeGetRequest,
  LIST_REQUEST,
  type PodResources,
  WireError,
} from "./pod-resources-wire";

export type { PodResources } from "./pod-resources-wire";

/** The two methods of `v1.PodResourcesLister` Plexus calls. */
export const PodResourcesPaths = {
  List: "/v1.PodResourcesLister/List",
  Get: "/v1.PodResourcesLister/Get",
} as const;

export interface PodResourcesQuery {
  socket: string;
  namespace: string;
  name: string;
  /** The whole query's budget (Get, and List after it). */
  timeoutMs: number;
  /** For messages: the resource(s) the answer is wanted for. */
  resourceNames: readonly string[];
}

/**
 * One channel to kubelet's socket: the CNI process makes one per query (pod-devices.ts), the
 * daemon keeps one for its life (reconnected on the next query after kubelet restarts).
 */
export class PodResourcesClient {
  readonly socket: string;
  private readonly channel: UnixGrpcChannel;
  /** Learnt once: kubelet without `Get` is asked with `List` from then on. */
  private getUnimplemented = false;

  constructor(socket: string) {
    this.socket = socket;
    this.channel = new UnixGrpcChannel({ socket });
  }

  /**
   * The pod's device IDs per resource name, across all its containers, sorted (as Multus orders
   * them).
   */
  async devices(query: Omit<PodResourcesQuery, "socket">): Promise<Map<string, string[]>> {
    const deadline = Date.now() + query.timeoutMs;
    try {
      if (!this.getUnimplemented) {
        try {
          const request = encodeGetRequest({ podName: query.name, podNamespace: query.namespace });
          const got = decodeGetResponse(await this.unary(PodResourcesPaths.Get, request, deadline));
          return devicesOf(got.podResources);
        } catch (err) {
          if ((err as GrpcError).code !== GrpcStatus.UNIMPLEMENTED) throw err;
          this.getUnimplemented = true;
        }
      }
      const all = await this.unary(PodResourcesPaths.List, LIST_REQUEST, deadline);
      return devicesOf(findPodInList(all, query));
    } catch (err) {
      throw failure({ ...query, socket: this.socket }, err);
    }
  }

  private unary(path: string, request: Uint8Array, deadline: number): Promise<Buffer> {
    return this.channel.unary({ path, request, deadline });
  }

  /** What the connection has held at most, against the peer limits (tests, diagnostics). */
  get peaks(): H2Peaks | undefined {
    return this.channel.peaks;
  }

  close(): void {
    this.channel.close();
  }
}

export function devicesOf(pod: PodResources | undefined): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const c of pod?.containers ?? []) {
    for (const d of c.devices ?? []) {
      if (!d.resourceName) continue;
      const set = out.get(d.resourceName) ?? new Set<string>();
      for (const id of d.deviceIds ?? []) set.add(id);
      out.set(d.resourceName, set);
    }
  }
  return new Map([...out].map(([k, v]) => [k, [...v].sort()]));
}

const NOT_MOUNTED = "is kubelet running and the socket mounted into the pod running Plexus?";

/** What went wrong, in words: a local deadline, no kubelet, a hostile answer, or kubelet's own. */
function reason(query: PodResourcesQuery, err: unknown): string {
  const e = err as Partial<GrpcError> & { limit?: string };
  if (e.peerFault || err instanceof WireError) {
    const what = e.details ?? e.message;
    const broke = e.limit ? `went past the limit ${e.limit}` : "broke the protocol";
    return `its answer ${broke} (${what}); is it kubelet that serves the socket?`;
  }
  if (e.code === GrpcStatus.DEADLINE_EXCEEDED) return `no answer within ${query.timeoutMs} ms`;
  const what = e.details || e.message;
  if (e.code === GrpcStatus.UNAVAILABLE) return `cannot connect (${what}); ${NOT_MOUNTED}`;
  const code = e.code !== undefined ? grpcStatusName(e.code) : "an error";
  return `kubelet answered ${code}: ${what || String(err)}`;
}

function failure(query: PodResourcesQuery, err: unknown): CniError {
  return new CniError(
    Code.TryAgainLater,
    `cannot learn the devices of resource ${query.resourceNames.join(", ")} allocated to pod ` +
      `${query.namespace}/${query.name} from kubelet's pod-resources socket ${query.socket} ` +
      `(podResourcesSocket): ${reason(query, err)}`,
  );
}
