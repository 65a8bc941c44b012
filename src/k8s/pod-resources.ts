/**
 * kubelet's pod-resources API (M10): which devices the device plugins allocated to a pod, per
 * resource name, over the unix socket `podResourcesSocket` (`v1.PodResourcesLister`).
 *
 * `Get` (one pod; kubelet ≥ 1.27 with KubeletPodResourcesGet) is asked first, `List` (every pod of
 * the node) when kubelet answers UNIMPLEMENTED. Every call is bounded by one deadline.
 *
 * Loaded only for a NAD with `k8s.v1.cni.cncf.io/resourceName` (a dynamic import): the HTTP/2
 * client's start-up is not paid by a plain ADD. The calls go over a minimal gRPC unary client
 * (./grpc-unary), not @grpc/grpc-js, whose load and channel set-up cost the CNI process more.
 * The few messages needed are a static protobuf descriptor (field
 * numbers of kubelet's pkg/kubelet/apis/podresources/v1 api.proto): nothing is read from disk,
 * so it works inside the single executable. Fields Plexus does not need are skipped on decode.
 */
import * as protobuf from "protobufjs/light";
import { CniError, Code } from "../cni/errors";
import { type GrpcError, GrpcStatus, grpcStatusName, UnixGrpcChannel } from "./grpc-unary";

const str = (id: number) => ({ type: "string", id });
const many = (type: string, id: number) => ({ rule: "repeated", type, id });

const root = protobuf.Root.fromJSON({
  nested: {
    v1: {
      nested: {
        ListPodResourcesRequest: { fields: {} },
        ListPodResourcesResponse: { fields: { podResources: many("PodResources", 1) } },
        GetPodResourcesRequest: { fields: { podName: str(1), podNamespace: str(2) } },
        GetPodResourcesResponse: { fields: { podResources: { type: "PodResources", id: 1 } } },
        PodResources: { fields: { name: str(1), namespace: str(2), containers: many("ContainerResources", 3) } },
        ContainerResources: { fields: { name: str(1), devices: many("ContainerDevices", 2) } },
        ContainerDevices: { fields: { resourceName: str(1), deviceIds: many("string", 2) } },
      },
    },
  },
});

export interface ContainerDevices {
  resourceName?: string;
  deviceIds?: string[];
}
export interface PodResources {
  name?: string;
  namespace?: string;
  containers?: Array<{ name?: string; devices?: ContainerDevices[] }>;
}

const type = (name: string) => root.lookupType(`v1.${name}`);
const codec = (req: string, res: string) => {
  const reqType = type(req);
  const resType = type(res);
  return {
    serialize: (v: object) => Buffer.from(reqType.encode(reqType.fromObject(v)).finish()),
    deserialize: (b: Buffer) => resType.toObject(resType.decode(b), { arrays: true, defaults: false }),
  };
};
/** Both directions, also for the fake kubelet in the tests. */
export const PodResourcesMethods = {
  List: {
    path: "/v1.PodResourcesLister/List",
    ...codec("ListPodResourcesRequest", "ListPodResourcesResponse"),
    request: type("ListPodResourcesRequest"),
    response: type("ListPodResourcesResponse"),
  },
  Get: {
    path: "/v1.PodResourcesLister/Get",
    ...codec("GetPodResourcesRequest", "GetPodResourcesResponse"),
    request: type("GetPodResourcesRequest"),
    response: type("GetPodResourcesResponse"),
  },
};

export interface PodResourcesQuery {
  socket: string;
  namespace: string;
  name: string;
  /** The whole query's budget (Get, and List after it). */
  timeoutMs: number;
  /** For messages: the resource(s) the answer is wanted for. */
  resourceNames: readonly string[];
}

/** Kubelet's answers are at most this large (Multus allows 16 MiB too). */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * One channel to kubelet's socket: the CNI process makes one per query (podDeviceIds), the daemon
 * keeps one for its life (reconnected on the next query after kubelet restarts).
 */
export class PodResourcesClient {
  readonly socket: string;
  private readonly channel: UnixGrpcChannel;
  /** Learnt once: kubelet without `Get` is asked with `List` from then on. */
  private getUnimplemented = false;

  constructor(socket: string) {
    this.socket = socket;
    this.channel = new UnixGrpcChannel({ socket, maxMessageBytes: MAX_MESSAGE_BYTES });
  }

  /** The pod's device IDs per resource name, across all its containers, sorted (as Multus orders them). */
  async devices(query: Omit<PodResourcesQuery, "socket">): Promise<Map<string, string[]>> {
    const deadline = Date.now() + query.timeoutMs;
    try {
      if (!this.getUnimplemented) {
        try {
          const got = (await this.unary("Get", { podName: query.name, podNamespace: query.namespace }, deadline)) as {
            podResources?: PodResources;
          };
          return devicesOf(got.podResources);
        } catch (err) {
          if ((err as GrpcError).code !== GrpcStatus.UNIMPLEMENTED) throw err;
          this.getUnimplemented = true;
        }
      }
      const all = (await this.unary("List", {}, deadline)) as { podResources?: PodResources[] };
      return devicesOf((all.podResources ?? []).find((p) => p.name === query.name && p.namespace === query.namespace));
    } catch (err) {
      throw failure({ ...query, socket: this.socket }, err);
    }
  }

  private async unary(method: keyof typeof PodResourcesMethods, arg: object, deadline: number): Promise<unknown> {
    const m = PodResourcesMethods[method];
    const answer = await this.channel.unary({ path: m.path, request: m.serialize(arg), deadline });
    return m.deserialize(answer);
  }

  close(): void {
    this.channel.close();
  }
}

/** One query on a channel of its own (the CNI process: one ADD, one query). */
export async function podDeviceIds(query: PodResourcesQuery): Promise<Map<string, string[]>> {
  const client = new PodResourcesClient(query.socket);
  try {
    return await client.devices(query);
  } finally {
    client.close();
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

function failure(q: PodResourcesQuery, err: unknown): CniError {
  const e = err as Partial<GrpcError>;
  const why =
    e.code === GrpcStatus.DEADLINE_EXCEEDED
      ? `no answer within ${q.timeoutMs} ms`
      : e.code === GrpcStatus.UNAVAILABLE
        ? `cannot connect (${e.details || e.message}); is kubelet running and the socket mounted into the pod running Plexus?`
        : `kubelet answered ${e.code !== undefined ? grpcStatusName(e.code) : "an error"}: ${e.details || e.message || String(err)}`;
  return new CniError(
    Code.TryAgainLater,
    `cannot learn the devices of resource ${q.resourceNames.join(", ")} allocated to pod ${q.namespace}/${q.name} from kubelet's pod-resources socket ${q.socket} (podResourcesSocket): ${why}`,
  );
}
