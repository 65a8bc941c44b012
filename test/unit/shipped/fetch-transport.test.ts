/**
 * The API client a CNI call of dist/plexus builds (`shortLived`: Bun's fetch, the FetchTransport
 * of kubeapi/http-transport.ts), run by Bun (test/support/bun-kube.ts) against the fake API server
 * over real HTTPS: what the transport itself guarantees, in the fast tier. The whole fault suite
 * of the client (resets, 5xx, hangs, 401/403, 404s, …) runs on this transport too, in
 * test/integration/k8s-client.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { Code } from "../../../src/cni/errors";
import type { KubeApi } from "../../../src/cluster/kube-api";
import type { KubeClientOptions } from "../../../src/kubeapi/rest-kube";
import { NETWORK_STATUS_ANNOTATION } from "../../../src/npwg/types";
import { bunKubeApi } from "../../support/bun-kube";
import {
  type FakeApiServer,
  otherCaPem,
  startFakeApiServer,
  writeKubeconfig,
} from "../../support/fake-apiserver";

const POD_PATH = "/api/v1/namespaces/ns1/pods/p1";
const FAST: KubeClientOptions = {
  retry: { requestTimeoutMs: 2000, totalTimeoutMs: 10_000, baseDelayMs: 10, maxDelayMs: 40 },
};

async function cluster(): Promise<FakeApiServer> {
  const server = await startFakeApiServer();
  onTestFinished(() => server.close());
  server.addPod({ metadata: { name: "p1", namespace: "ns1", uid: "uid-1" } });
  return server;
}

async function bunClient(kubeconfig: string, options = FAST): Promise<KubeApi> {
  const kube = await bunKubeApi(kubeconfig, options);
  onTestFinished(() => kube.close?.());
  return kube;
}

async function failure(pending: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await pending;
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error("expected a failure");
}

describe("the CNI call's API transport that ships (Bun's fetch), run by Bun", () => {
  it("N5 reads the pod and writes its network status over the kubeconfig's TLS", async () => {
    const s = await cluster();
    const kube = await bunClient(writeKubeconfig(s));
    const pod = await kube.getPod("ns1", "p1");
    expect(pod.metadata.uid).toBe("uid-1");
    const status = '[{"name":"ns1/net-a","interface":"net1"}]';
    await kube.setNetworkStatus({ namespace: "ns1", name: "p1", uid: "uid-1" }, status);
    const annotations = s.getPod("ns1", "p1")?.metadata.annotations as Record<string, string>;
    expect(annotations[NETWORK_STATUS_ANNOTATION]).toBe(status);
    expect(s.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `GET ${POD_PATH}`,
      `PATCH ${POD_PATH}/status`,
    ]);
  });

  it("the kubeconfig's CA is the only trust anchor: another CA is 104, no request", async () => {
    const s = await cluster();
    const dir = mkdtempSync(join(tmpdir(), "plx-shipped-ca-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const other = { url: s.url, token: s.token, caPem: otherCaPem(dir) };
    const kube = await bunClient(writeKubeconfig(other, { dir }));
    const err = await failure(kube.getPod("ns1", "p1"));
    expect(err.code).toBe(Code.ApiFailure);
    expect(err.message).toMatch(/certificate|self.signed|verify/i);
    expect(s.requests).toEqual([]);
  });

  it("B41 an answer over the size cap is refused, 104 naming the limit", async () => {
    const s = await cluster();
    s.inject({ path: POD_PATH }, { kind: "huge-body" });
    const kube = await bunClient(writeKubeconfig(s));
    const err = await failure(kube.getPod("ns1", "p1"));
    expect(err.code).toBe(Code.ApiFailure);
    expect(err.message).toMatch(/10485760 bytes exceeds the 4194304-byte limit/);
  });
});
