/**
 * The pod-resources client (M10) against real and hostile peers, through dist/plexus: the Bun
 * executable's socket and the hand-framed HTTP/2 client are what ship, so a CNI ADD with a device
 * network drives them (test/integration/devices.test.ts sets the same stage with a grpc-js fake).
 *
 * - A real grpc-go server, written by us (test/support/go/podres-server), built offline in the
 *   test against the grpc-go and pod-resources v1 API vendored in the Multus source snapshot.
 *   That kubelet API has List only: grpc-go itself answers Get with UNIMPLEMENTED, and Plexus
 *   falls back to List, as with a kubelet before 1.27. Under CI=true a missing `go` fails.
 * - A hostile server on the socket: the ADD fails with 11 naming the limit, within
 *   podResourcesTimeoutSeconds plus a margin, whatever it sends. Endless frames that carry
 *   nothing (empty DATA or HEADERS after the answer's HEADERS) also keep the executable's peak
 *   RSS under a bound far below what storing each frame reached.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type FakeApiServer, startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import * as goServer from "../support/go-podres-server";
import * as hostile from "../support/hostile-pod-resources";
import { isCi } from "../support/netns";
import { cniError } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const RESOURCE = "example.com/nic";
const NETWORKS = "k8s.v1.cni.cncf.io/networks";
const RESOURCE_NAME = "k8s.v1.cni.cncf.io/resourceName";
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
const VF1 = "0000:3b:02.1";
const VF2 = "0000:3b:02.2";
const OTHER = "0000:af:00.1";
const TIMEOUT_SECONDS = 2;
/** Past podResourcesTimeoutSeconds: the executable's start, the API calls, the teardown. */
const MARGIN_MS = 3000;
/** Peak RSS allowed for the ADD against a flood: generous for the executable, far below a flood. */
const RSS_BOUND_KIB = 200 * 1024;

/** The API server with the pod and a device NAD, and a config asking `socket` for devices. */
interface Stage {
  api: FakeApiServer;
  conf: Record<string, unknown>;
}

async function stage(socket: string): Promise<Stage> {
  const { sb } = ctx;
  const api = await startFakeApiServer();
  onTestFinished(() => api.close());
  api.addPod({
    metadata: { namespace: "app", name: "web", uid: "uid-web", annotations: { [NETWORKS]: "nic" } },
    spec: { nodeName: "node-1" },
  });
  const nic = sb.delegate("nic", { type: "nic", extra: { capabilities: { deviceID: true } } });
  api.addNad({
    metadata: { namespace: "app", name: "nic", annotations: { [RESOURCE_NAME]: RESOURCE } },
    spec: { config: JSON.stringify(nic) },
  });
  const conf = sb.config([sb.delegate("net-a")], {
    kubeconfig: writeKubeconfig(api, { dir: sb.root }),
    apiRequestTimeoutSeconds: 2,
    podResourcesSocket: socket,
    podResourcesTimeoutSeconds: TIMEOUT_SECONDS,
    deviceInfoDir: join(sb.root, "devinfo"),
  });
  return { api, conf };
}

type Call = { command: string; network?: string | undefined };
const isNicAdd = (call: Call) => call.command === "ADD" && call.network === "nic";
const nicAdds = () => ctx.sb.invocations().filter(isNicAdd);

describe("M10 kubelet's pod-resources socket served by grpc-go (dist/plexus)", () => {
  const missing = goServer.goServerUnavailable();
  let binary = "";
  beforeAll(async () => {
    if (missing && isCi()) throw new Error(`the grpc-go server cannot be built: ${missing}`);
    if (!missing) binary = await goServer.buildGoPodResServer();
  }, 180_000);

  const title = "M10 grpc-go answers Get with UNIMPLEMENTED: List answers, the device is the pod's";
  it(title, async (t) => {
    if (missing) {
      console.warn(`*** SKIPPING the grpc-go pod-resources test: ${missing} ***`);
      t.skip(missing);
    }
    const dir = mkdtempSync(join(tmpdir(), "plx-gopodres-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const device = (deviceIds: string[]) => ({ resourceName: RESOURCE, deviceIds });
    const devices = (...ids: string[]) => [{ name: "c", devices: [device(ids)] }];
    const server = await goServer.startGoPodResServer({
      binary,
      dir,
      pods: [
        { namespace: "other", name: "web", containers: devices(OTHER) },
        { namespace: "app", name: "web", containers: devices(VF2, VF1) },
      ],
    });
    onTestFinished(() => server.close());
    const { conf } = await stage(server.socket);
    const r = await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect((nicAdds()[0]!.stdin as Record<string, unknown>).deviceID).toBe(VF1);
    expect(server.calls).toEqual(["List"]);
  });
});

describe("M10 a hostile pod-resources socket ends the ADD in time (dist/plexus, Bun)", () => {
  it.each([
    ["ping-flood", /maxQueuedWriteBytes/],
    ["hpack-bomb", /maxHeaderListBytes/],
    ["huffman-16mb-continuation", /maxHeaderBlockBytes/],
    ["oversized-frame", /maxFrameBytes/],
    ["length-prefix-1gb", /maxMessageBytes/],
  ] as const)(
    "M10 B82 %s: code 11 naming the limit, within the timeout + margin",
    async (h, limit) => {
      const dir = mkdtempSync(join(tmpdir(), "plx-hostile-"));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const server = await hostile.startHostilePodResources(join(dir, "kubelet.sock"), h);
      onTestFinished(() => server.close());
      const { conf } = await stage(server.socket);
      const r = await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
      const err = cniError(r);
      expect(err.code).toBe(11);
      expect(err.msg).toMatch(limit);
      expect(err.msg).toContain(server.socket);
      expect(r.durationMs).toBeLessThan(TIMEOUT_SECONDS * 1000 + MARGIN_MS);
      expect(nicAdds()).toEqual([]);
    },
  );
});

describe("B89 frames that carry nothing from the pod-resources socket (dist/plexus, Bun)", () => {
  it.each([
    ["empty-data-flood", /maxEmptyFrames \(HTTP\/2 ENHANCE_YOUR_CALM: .*empty DATA frame/],
    ["empty-headers-flood", /maxEmptyFrames \(HTTP\/2 ENHANCE_YOUR_CALM: .*empty HEADERS frame/],
  ] as const)(
    "B89 %s: code 11 naming the socket and the limit, peak RSS under 200 MiB",
    async (h, limit) => {
      const dir = mkdtempSync(join(tmpdir(), "plx-empty-frames-"));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const server = await hostile.startHostilePodResources(join(dir, "kubelet.sock"), h);
      onTestFinished(() => server.close());
      const { conf } = await stage(server.socket);
      const r = await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }, { sampleRss: true });
      const err = cniError(r);
      expect(err.code).toBe(11);
      expect(err.msg).toContain(`kubelet's pod-resources socket ${server.socket}`);
      expect(err.msg).toContain("pod app/web");
      expect(err.msg).toMatch(limit);
      expect(r.peakRssKiB).toBeDefined();
      expect(r.peakRssKiB!).toBeLessThan(RSS_BOUND_KIB);
      expect(r.durationMs).toBeLessThan(TIMEOUT_SECONDS * 1000 + MARGIN_MS);
      expect(nicAdds()).toEqual([]);
    },
  );
});
