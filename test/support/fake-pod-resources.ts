/**
 * A fake kubelet pod-resources server (M10): grpc-js on a unix socket serving
 * `v1.PodResourcesLister` List and Get from a table of pods, with switchable failures
 * (UNIMPLEMENTED Get, an error, a hang) and a count of the calls it got.
 */
import * as grpc from "@grpc/grpc-js";
import type { Type } from "protobufjs/light";
import { PodResourcesMethods, type PodResources } from "../../src/k8s/pod-resources";

export type FakeMode = "ok" | "get-unimplemented" | "error" | "hang";

export interface FakePodResources {
  socket: string;
  pods: PodResources[];
  mode: FakeMode;
  calls: Array<"List" | "Get">;
  close(): Promise<void>;
}

function method(m: { path: string; request: Type; response: Type }): grpc.MethodDefinition<object, object> {
  return {
    path: m.path,
    requestStream: false,
    responseStream: false,
    requestSerialize: (v: object) => Buffer.from(m.request.encode(m.request.fromObject(v)).finish()),
    requestDeserialize: (b: Buffer) => m.request.toObject(m.request.decode(b)),
    responseSerialize: (v: object) => Buffer.from(m.response.encode(m.response.fromObject(v)).finish()),
    responseDeserialize: (b: Buffer) => m.response.toObject(m.response.decode(b)),
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
      devices: Object.entries(res).map(([resourceName, deviceIds]) => ({ resourceName, deviceIds })),
    })),
  };
}

export async function startFakePodResources(socket: string, pods: PodResources[] = []): Promise<FakePodResources> {
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
  const answer = (name: "List" | "Get", reply: () => object) => (_call: unknown, cb: grpc.sendUnaryData<object>) => {
    fake.calls.push(name);
    if (fake.mode === "hang") return void hung.push(() => cb({ code: grpc.status.CANCELLED, details: "fake closed" }));
    if (fake.mode === "error") return cb({ code: grpc.status.INTERNAL, details: "fake kubelet failure" });
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
