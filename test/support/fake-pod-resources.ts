/**
 * A fake kubelet pod-resources server (M10): grpc-js on a unix socket serving
 * `v1.PodResourcesLister` List and Get from a table of pods, with switchable failures
 * (UNIMPLEMENTED Get, an error, a hang) and a count of the calls it got. Its messages go through
 * protobufjs from kubelet's api.proto field numbers, independent of Plexus's own hand-written
 * codec (src/kubelet/pod-resources-wire.ts), which they so test.
 */
import * as grpc from "@grpc/grpc-js";
import * as protobuf from "protobufjs/light";
import { PodResourcesPaths, type PodResources } from "../../src/kubelet/pod-resources";

const str = (id: number) => ({ type: "string", id });
const many = (type: string, id: number) => ({ rule: "repeated", type, id });

/**
 * kubelet's pkg/kubelet/apis/podresources/v1 api.proto, the messages of List and Get (and a field
 * Plexus skips).
 */
const root = protobuf.Root.fromJSON({
  nested: {
    v1: {
      nested: {
        ListPodResourcesRequest: { fields: {} },
        ListPodResourcesResponse: { fields: { podResources: many("PodResources", 1) } },
        GetPodResourcesRequest: { fields: { podName: str(1), podNamespace: str(2) } },
        GetPodResourcesResponse: { fields: { podResources: { type: "PodResources", id: 1 } } },
        PodResources: {
          fields: { name: str(1), namespace: str(2), containers: many("ContainerResources", 3) },
        },
        ContainerResources: {
          fields: {
            name: str(1),
            devices: many("ContainerDevices", 2),
            cpuIds: { rule: "repeated", type: "int64", id: 3 },
          },
        },
        ContainerDevices: { fields: { resourceName: str(1), deviceIds: many("string", 2) } },
      },
    },
  },
});
const type = (name: string) => root.lookupType(`v1.${name}`);
const PodResourcesMethods = {
  List: {
    path: PodResourcesPaths.List,
    request: type("ListPodResourcesRequest"),
    response: type("ListPodResourcesResponse"),
  },
  Get: {
    path: PodResourcesPaths.Get,
    request: type("GetPodResourcesRequest"),
    response: type("GetPodResourcesResponse"),
  },
};
type Type = protobuf.Type;

type FakeMode = "ok" | "get-unimplemented" | "error" | "hang";

export interface FakePodResources {
  socket: string;
  pods: PodResources[];
  mode: FakeMode;
  calls: Array<"List" | "Get">;
  close(): Promise<void>;
}

function method(spec: {
  path: string;
  request: Type;
  response: Type;
}): grpc.MethodDefinition<object, object> {
  return {
    path: spec.path,
    requestStream: false,
    responseStream: false,
    requestSerialize: (v: object) =>
      Buffer.from(spec.request.encode(spec.request.fromObject(v)).finish()),
    requestDeserialize: (b: Buffer) => spec.request.toObject(spec.request.decode(b)),
    responseSerialize: (v: object) =>
      Buffer.from(spec.response.encode(spec.response.fromObject(v)).finish()),
    responseDeserialize: (b: Buffer) => spec.response.toObject(spec.response.decode(b)),
  };
}

/** One pod's allocation: container name → resource name → device IDs. */
export function podWithDevices(
  namespace: string,
  name: string,
  containers: Record<string, Record<string, string[]>>,
): PodResources {
  return {
    namespace,
    name,
    containers: Object.entries(containers).map(([c, res]) => ({
      name: c,
      devices: Object.entries(res).map(([resourceName, deviceIds]) => ({
        resourceName,
        deviceIds,
      })),
      // A field kubelet sends that Plexus does not read: the client must skip it.
      cpuIds: [2, 3],
    })),
  };
}

export async function startFakePodResources(
  socket: string,
  pods: PodResources[] = [],
): Promise<FakePodResources> {
  const server = new grpc.Server();
  const hung: Array<() => void> = [];
  const fake: FakePodResources = {
    socket,
    pods,
    mode: "ok",
    calls: [],
    close: () =>
      new Promise((resolve) => {
        for (const h of hung) h();
        server.tryShutdown(() => resolve());
        setTimeout(() => server.forceShutdown(), 500).unref();
      }),
  };
  const answer =
    (name: "List" | "Get", reply: () => object) =>
    (_call: unknown, cb: grpc.sendUnaryData<object>) => {
      fake.calls.push(name);
      if (fake.mode === "hang")
        return void hung.push(() => cb({ code: grpc.status.CANCELLED, details: "fake closed" }));
      if (fake.mode === "error")
        return cb({ code: grpc.status.INTERNAL, details: "fake kubelet failure" });
      if (fake.mode === "get-unimplemented" && name === "Get")
        return cb({ code: grpc.status.UNIMPLEMENTED, details: "unknown method Get" });
      cb(null, reply());
    };
  server.addService(
    { List: method(PodResourcesMethods.List), Get: method(PodResourcesMethods.Get) },
    {
      List: answer("List", () => ({ podResources: fake.pods })),
      Get: (
        call: grpc.ServerUnaryCall<{ podName?: string; podNamespace?: string }, object>,
        cb: grpc.sendUnaryData<object>,
      ) =>
        answer("Get", () => {
          const pod = fake.pods.find(
            (p) => p.name === call.request.podName && p.namespace === call.request.podNamespace,
          );
          return pod ? { podResources: pod } : {};
        })(call, cb),
    },
  );
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  return fake;
}
