/**
 * A KubeApi whose requests are made in a Bun process by the executable's own API client and
 * transport (test/support/bun-kube-child.ts): the client's fault tests run on the path that
 * ships as well as on Node's. Methods and `requestCount` behave as the real client's; errors come
 * back as objects with the CNI error's code and message. `close()` ends the Bun process, as a CNI
 * call ends, which is what releases a Bun fetch connection.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { KubeApi } from "../../src/cluster/kube-api";
import type { KubeClientOptions } from "../../src/kubeapi/rest-kube";
// @ts-expect-error: a plain .mjs module without types
import { bunPath } from "../../scripts/bun-path.mjs";

const CHILD = fileURLToPath(new URL("./bun-kube-child.ts", import.meta.url));

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: { code?: number; message: string; name?: string };
  requestCount: number;
}

export async function bunKubeApi(kubeconfig: string, client: KubeClientOptions): Promise<KubeApi> {
  const child: ChildProcess = spawn(bunPath(), [CHILD], { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map<number, (r: Reply) => void>();
  let next = 0;
  let requestCount = 0;
  let exited = false;
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.once("exit", () => {
    exited = true;
    for (const w of waiting.values())
      w({ id: -1, ok: false, error: { message: "bun child exited" }, requestCount });
  });
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const r = JSON.parse(line) as Reply;
    requestCount = r.requestCount;
    waiting.get(r.id)?.(r);
    waiting.delete(r.id);
  });
  const ask = (body: Record<string, unknown>): Promise<unknown> => {
    if (exited) return Promise.reject(new Error("bun child exited"));
    const id = next++;
    const reply = new Promise<Reply>((resolve) => waiting.set(id, resolve));
    child.stdin!.write(`${JSON.stringify({ id, ...body })}\n`);
    return reply.then((r) => {
      if (r.ok) return r.value;
      throw Object.assign(new Error(r.error?.message), {
        code: r.error?.code,
        name: r.error?.name ?? "Error",
      });
    });
  };
  // Only plain data crosses the process boundary: no logger, no clock.
  const { log: _log, clock: _clock, ...plain } = client;
  await ask({ op: "open", kubeconfig, client: plain });
  const call =
    (method: string) =>
    (...args: unknown[]) =>
      ask({ op: "call", method, args });
  return {
    getPod: call("getPod") as KubeApi["getPod"],
    getNad: call("getNad") as KubeApi["getNad"],
    setNetworkStatus: call("setNetworkStatus") as KubeApi["setNetworkStatus"],
    recordEvent: call("recordEvent") as KubeApi["recordEvent"],
    getResourceClaim: call("getResourceClaim") as KubeApi["getResourceClaim"],
    listResourceSlices: call("listResourceSlices") as KubeApi["listResourceSlices"],
    get requestCount() {
      return requestCount;
    },
    close: async () => {
      child.stdin!.end();
      child.kill("SIGKILL");
      await gone;
    },
  };
}
